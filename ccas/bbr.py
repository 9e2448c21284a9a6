"""``bbr``: the core of BBR as the thesis models it (section 6.1): max-filtered delivery rate,
cwnd = 2 x the BDP estimate, and pacing at the estimate scaled by an 8-RTT probing cycle.

What is modelled
----------------
Time is the model's step grid; R steps make one minimum RTT. At every step t:

* **Delivery-rate sample.** ``sample[t] = (S_f[t-R] - S_f[t-2R]) / R``: the bytes of this flow
  acknowledged during the last min RTT, per step. (The sender at t has the ACKs of everything
  served by t-R; the thesis: "(bytes ACKed in the last RTT) * (min RTT) / RTT", with the RTT
  estimate taken to be exact, R, as the thesis assumes for BBR and Copa.)
* **Bandwidth estimate.** ``bw[t]`` (bytes/step) is the maximum sample over the last
  ``window`` RTTs, i.e. over the steps ``t - window*R + 1 .. t``.
* **Window.** ``cwnd[t] = cwnd_gain * bw[t] * R + quanta * alpha`` (default gain 2: "twice the
  BDP estimate"; ``quanta``, default 0 as in the thesis' core, is the packets BBR adds to its
  window for the quanta the sender and receiver batch in, 3 in Linux's BBRv1: thesis 8.2
  names it as what keeps a cwnd-limited flow from starving).
* **Pacing.** ``rate[t] = pacing_gain * g(phase[t]) * bw[t]``. The probing cycle lasts
  ``cycle`` RTTs (default 8): g = ``probe_gain`` (1.25) in its first RTT, ``drain_gain``
  (0.75; the thesis says the drain is "significant", BBRv1 uses 1/1.25 = 0.8) in its second,
  and 1 in the others. ``pacing_gain = 2`` is the mvfst variant the thesis discusses (pace at
  twice the prescribed rate). BBR is always paced, and also ACK-clocked by its cwnd (the model
  sends min(window allowance, pacing allowance)).
* **Cycle position.** The phase advances by one every R steps. Where the cycle stands at t = 0
  is solver-chosen, at step resolution: ``pos0`` in ``0 .. cycle*R - 1`` (an int), and
  ``phase[t] = ((pos0 + t) mod (cycle*R)) // R``. This covers every starting phase *and*
  every alignment of the RTT-long phases to the step grid (with R > 1 a phase may begin in
  the middle of what the step counter calls an RTT).

What is abstracted (the encoding is a superset of the algorithm above)
-----------------------------------------------------------------------
* **History.** Samples need ``S_f`` two RTTs back. A sample at a step t' >= 2R is exact. At
  R <= t' < 2R only ``S_f[t'-R]`` is in the trace; ``S_f`` before step 0 is at most
  ``S_f[0]`` (cumulative curves never decrease), so the sample is at least
  ``(S_f[t'-R] - S_f[0]) / R`` and nothing more is known. At t' < R the sample is entirely
  unknown (any value >= 0). So while the filter window of step t reaches before step 2R,
  ``bw[t]`` is only bounded *below* by the known samples and the partial lower bounds: the
  unknown samples may have been anything, and the max of a set containing them is at least
  the max of the known part. Once the whole window lies in the trace, ``bw[t]`` equals the
  maximum exactly (``bw >= every sample`` and ``bw == some sample``). Every real history is
  one choice of the free samples, so every real run satisfies the constraints.
* **Phase.** Any start position is allowed (BBRv1 picks a random one, never the drain phase;
  allowing all of them is a superset), and so is any alignment to the grid.
* Everything else is exact and linear: the products involve the gains and R (constants) times
  one solver variable, and the phase is handled by a case split over the ``cycle`` values it
  can take (``phase == j  ->  rate == pacing_gain * g_j * bw``).

What is not modelled (the thesis' "core idea" of BBR, not the Linux code)
--------------------------------------------------------------------------
Startup, Drain and ProbeRTT; min-RTT estimation (R is known exactly); BBRv1's extra conditions
on leaving the probe and drain phases (inflight targets) -- here each phase lasts exactly one
RTT, as in the thesis; reaction to loss (BBRv1 mostly ignores it; the model's ACK clock still
accounts detected losses); the 4-packet minimum cwnd: the model requires cwnd > 0 and
rate > 0, so traces in which the estimate would collapse to 0 are excluded (a real BBR would
keep sending at its floor there). Delivery-rate samples are taken once per step over exactly
one min RTT, not per ACK over the ACK's own interval (the thesis' discretization).

Left to the solver: the cycle position at t = 0, the unknown history samples (through the
lower-bound-only ``bw`` at the start), and of course everything the path model leaves free.

Steady state (periodic queries)
-------------------------------
BBR's full state is the content of its max filter (the samples of the last ``window`` RTTs)
and the cycle position. In a periodic query the filter at the trace's first steps holds the
samples of the previous periods of the same run (``ccac.encode.periodic``: the history steps are the
trace's own, wrapped), so ``bw`` is exact at every step, and the cycle position repeats like
every other variable: the period T - 1 must be a whole number of cycles, a multiple of
cycle * R (:meth:`BBR.period_divisor`; another T is an error, not a vacuous unsat).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import z3

from ccac.ccas.interface import CCA, FlowContext, FlowValues, StateVar
from ccac.core.params import POSITIVE, Param
from ccac.senders.interface import ConcreteSender, SenderStart



class BBR(CCA):
    name = "bbr"
    summary = "BBR core: bw = max delivery rate over a window, cwnd = 2*bw*R, paced at gain(cycle)*bw"
    params = (
        Param("window", 10, "bandwidth filter length (max over this many RTTs of samples)", "RTTs",
              "int", minimum=Fraction(1)),
        Param("cycle", 8, "probing cycle length: probe for 1 RTT, drain for 1 RTT, cruise for the rest",
              "RTTs", "int", minimum=Fraction(2)),
        Param("cwnd_gain", 2, "cwnd as a multiple of the BDP estimate bw * R", **POSITIVE),
        Param("pacing_gain", 1, "overall pacing multiplier (the thesis' mvfst variant paces at 2x)",
              **POSITIVE),
        Param("probe_gain", Fraction(5, 4), "pacing gain in the first RTT of the cycle", **POSITIVE),
        Param("drain_gain", Fraction(3, 4), "pacing gain in the second RTT of the cycle", **POSITIVE),
        Param("quanta", 0, "packets added to cwnd (BBR's quanta term; Linux BBRv1: 3)", "alpha (MSS)",
              minimum=Fraction(0)),
    )
    state = (
        StateVar("bw", "bandwidth estimate: max delivery-rate sample over the filter window", "bytes/step",
                 plotted=True),
        StateVar("phase", "RTT of the probing cycle (0 = probe, 1 = drain, others cruise)", "", kind="int"),
        StateVar("cycle_pos", "step of the probing cycle, 0 .. cycle*R-1 (phase = cycle_pos // R)",
                 "steps", kind="int"),
    )

    def paced(self, params: dict[str, Any]) -> bool:
        return True

    @staticmethod
    def gain(params: dict[str, Any], phase: int) -> Fraction:
        """Pacing multiplier of bw in ``phase`` of the cycle (including pacing_gain)."""
        g = params["probe_gain"] if phase == 0 else params["drain_gain"] if phase == 1 else Fraction(1)
        return params["pacing_gain"] * g

    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        p, R, T, S = ctx.params, ctx.R, ctx.T, ctx.S
        period = p["cycle"] * R
        bw = ctx.series("bw")
        phase = ctx.series("phase", "int")
        pos = ctx.series("cycle_pos", "int")
        pos0 = pos[0]

        # Per-step sample information: exact value (t' >= 2R) or partial lower bound (R <= t' < 2R).
        exact = {u: (S[u - R] - S[u - 2 * R]) / R for u in range(2 * R, T)}
        lower = {u: (S[u - R] - S[0]) / R for u in range(R, min(2 * R, T))}

        ctx.add(pos0 >= 0, pos0 < period)
        for t in range(T):
            # Cycle position and phase: a case split over the solver-chosen start position.
            for p0 in range(period):
                here = (p0 + t) % period
                ctx.add(z3.Implies(pos0 == p0, z3.And(pos[t] == here, phase[t] == here // R)))
            for j in range(p["cycle"]):
                ctx.add(z3.Implies(phase[t] == j, ctx.rate[t] == self.gain(p, j) * bw[t]))

            # Bandwidth filter over steps first .. t.
            first = t - p["window"] * R + 1
            known = [exact[u] for u in range(max(first, 2 * R), t + 1)]
            bounds = [lower[u] for u in range(max(first, R), min(2 * R, t + 1))]
            ctx.add(*(bw[t] >= x for x in known + bounds))
            if first >= 2 * R:  # the whole window is in the trace: the max is exact
                ctx.add(z3.Or(*(bw[t] == x for x in known)))

            window = p["cwnd_gain"] * R * bw[t]
            ctx.add(ctx.cwnd[t] == (window + p["quanta"] * ctx.alpha if p["quanta"] else window))
        return {"bw": bw, "phase": phase, "cycle_pos": pos}

    def lookback(self, params: dict[str, Any], R: int) -> int:
        """The filter at t holds samples of steps t - window*R + 1 .. t, each reading the ACKs
        of one min RTT ending R steps earlier."""
        return params["window"] * R + 2 * R

    def period_divisor(self, params: dict[str, Any], R: int) -> int:
        """The probing cycle repeats only after whole cycles."""
        return params["cycle"] * R

    def check(self, f: FlowValues) -> list[str]:
        p, R, T, S = f.params, f.R, f.T, f.S
        bw, phase, pos = f.state["bw"], f.state["phase"], f.state["cycle_pos"]
        period = p["cycle"] * R
        problems: list[str] = []

        # Cycle: positions advance by one step at a time modulo the period; the phase is the RTT.
        if not 0 <= pos[0] < period:
            problems.append(f"step 0: cycle position {pos[0]} outside 0 .. {period - 1}")
        for t in range(T):
            if pos[t] != (pos[0] + t) % period:
                problems.append(f"step {t}: cycle position {pos[t]} does not follow {pos[0]} at step 0")
            if phase[t] != pos[t] // R:
                problems.append(f"step {t}: phase {phase[t]} != cycle position {pos[t]} // R")

        for t in range(T):
            # Samples visible at step t in the filter window; None marks an unknown one.
            lo_t = t - p["window"] * R + 1
            samples: list[Fraction] = []
            floors: list[Fraction] = []
            unknown = False
            for u in range(lo_t, t + 1):
                if u - 2 * R >= 0:
                    samples.append((S[u - R] - S[u - 2 * R]) / R)
                elif u - R >= 0:
                    floors.append((S[u - R] - S[0]) / R)  # S before step 0 is at most S[0]
                else:
                    unknown = True
            if unknown or floors:
                need = max(samples + floors, default=None)
                if need is not None and bw[t] < need:
                    problems.append(f"step {t}: bw {bw[t]} below the largest known sample {need}")
            elif bw[t] != max(samples):
                problems.append(f"step {t}: bw {bw[t]} != max delivery-rate sample {max(samples)}")

            want_cwnd = p["cwnd_gain"] * bw[t] * R + p["quanta"] * f.alpha
            if f.cwnd[t] != want_cwnd:
                problems.append(f"step {t}: cwnd {f.cwnd[t]} != cwnd_gain * bw * R + quanta * alpha = {want_cwnd}")
            if f.rate is None:
                problems.append(f"step {t}: BBR is paced but the trace has no pacing rate")
            else:
                want_rate = self.gain(p, phase[t]) * bw[t]
                if f.rate[t] != want_rate:
                    problems.append(f"step {t}: pacing rate {f.rate[t]} != gain(phase {phase[t]}) * bw = {want_rate}")
        return problems

    def concrete(self, start: SenderStart) -> ConcreteSender:
        from ccac.senders.bbr import BBRSender

        return BBRSender(start)


ALGORITHM = BBR()
