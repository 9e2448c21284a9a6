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
  ``window`` RTTs, i.e. over the steps ``t - window*R + 1 .. t``; when every sample there is 0
  (no ACK for a whole filter window, or none yet at a connection's start) it is the floor
  ``4 * alpha / (cwnd_gain * R)``, which makes cwnd Linux's 4-packet minimum (plus the quanta)
  and keeps the sender sending, as the concrete sender (``ccac.senders.bbr``) does. This is
  the sender's rule, so every run of the sender satisfies it. The max alone would make bw = 0
  there, which the model's cwnd > 0 and rate > 0 exclude; so the floor removes no trace the
  max alone admits and adds those whose filter window saw no ACK.
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
  one choice of the free samples, so every real run satisfies the constraints. (A partial
  window may still hold the floor: the unknown samples may all have been 0; ``bw`` at least the
  known part covers that too, as every known sample is then 0.)
* **Cold start.** With ``[network] start = "cold"`` the connection opens within the trace and
  nothing of it was sent, so nothing was ACKed before step 0 either: ``S_f`` before step 0 is
  exactly 0, a sample reading it is exact (0 before step R, ``S_f[t'-R] / R`` up to 2R), and
  the filter is exact at every step, the floor included. One step before the opening the
  estimate is therefore the floor and cwnd ``4 * alpha + quanta * alpha``: the start state
  (:meth:`BBR.start_state`), a consequence of the rules there, which apply at every step. The
  cycle position stays free.
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
accounts detected losses); Linux's 4-packet minimum for a small non-zero estimate (the floor
applies only when every sample is 0, as in the concrete sender). Delivery-rate samples are
taken once per step over exactly one min RTT, not per ACK over the ACK's own interval (the
thesis' discretization).

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

    @staticmethod
    def floor(params: dict[str, Any], R: int, alpha: Any) -> Any:
        """The estimate when every sample in the filter is 0: the bytes/step that make cwnd
        Linux's 4-packet minimum, 4 * alpha = cwnd_gain * floor * R."""
        return 4 * alpha / (params["cwnd_gain"] * R)

    def start_state(self, params: dict[str, Any], C: Fraction, R: int, alpha: Fraction) -> dict[str, Fraction]:
        """A connection's start: no ACK yet, so every sample is 0 and the estimate is the floor;
        cwnd follows the window rule from it (4 packets plus the quanta). The cycle position is
        left free: the concrete sender starts the cycle at its first decision, BBRv1 at a random
        phase."""
        bw = self.floor(params, R, alpha)
        return {"bw": bw, "cwnd": params["cwnd_gain"] * bw * R + params["quanta"] * alpha}

    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        p, R, T, S = ctx.params, ctx.R, ctx.T, ctx.S
        period = p["cycle"] * R
        bw = ctx.series("bw")
        phase = ctx.series("phase", "int")
        pos = ctx.series("cycle_pos", "int")
        pos0 = pos[0]
        floor = self.floor(p, R, ctx.alpha)
        cold = ctx.opens is not None

        # Per-step sample information: exact value (t' >= 2R) or partial lower bound (R <= t' < 2R).
        # With a cold start nothing was ACKed before step 0, so every sample is exact: those of
        # steps before R are 0 (left out: a max and an all-zero test do not need them) and those
        # of R .. 2R-1 count everything ACKed so far.
        exact = {u: (S[u - R] - (S[u - 2 * R] if u >= 2 * R else 0)) / R for u in range(R if cold else 2 * R, T)}
        lower = {} if cold else {u: (S[u - R] - S[0]) / R for u in range(R, min(2 * R, T))}

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
            known = [x for u, x in exact.items() if first <= u <= t]
            bounds = [x for u, x in lower.items() if first <= u <= t]
            ctx.add(*(bw[t] >= x for x in known + bounds))
            if cold or first >= 2 * R:  # every sample of the window is known: the max, or the floor
                ctx.add(self._max_or_floor(bw[t], known, floor))

            window = p["cwnd_gain"] * R * bw[t]
            ctx.add(ctx.cwnd[t] == (window + p["quanta"] * ctx.alpha if p["quanta"] else window))
        return {"bw": bw, "phase": phase, "cycle_pos": pos}

    @staticmethod
    def _max_or_floor(bw: z3.ArithRef, samples: list[z3.ArithRef], floor: Any) -> z3.BoolRef:
        """The estimate of a filter window whose every sample is known (``samples``, those that
        are not 0 by construction): the largest sample, or the floor if every one is 0."""
        if not samples:
            return bw == floor
        return z3.If(z3.And(*(x == 0 for x in samples)), bw == floor, z3.Or(*(bw == x for x in samples)))

    def lookback(self, params: dict[str, Any], R: int) -> int:
        """The filter at t holds samples of steps t - window*R + 1 .. t, each reading the ACKs
        of one min RTT ending R steps earlier."""
        return params["window"] * R + 2 * R

    def period_divisor(self, params: dict[str, Any], R: int) -> int:
        """The probing cycle repeats only after whole cycles."""
        return params["cycle"] * R

    def check(self, f: FlowValues) -> list[str]:
        p, R, T = f.params, f.R, f.T
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

        floor = self.floor(p, R, f.alpha)
        for t in range(T):
            samples, partial = self._filter(f, t)
            if partial:
                need = max(samples, default=None)
                if need is not None and bw[t] < need:
                    problems.append(f"step {t}: bw {bw[t]} below the largest known sample {need}")
            else:
                want_bw = max(samples) if max(samples) != 0 else floor
                if bw[t] != want_bw:
                    problems.append(f"step {t}: bw {bw[t]} != max delivery-rate sample, or the floor "
                                    f"if every one is 0: {want_bw}")

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

    def step_rules(self, f: FlowValues) -> dict[int, list[str]]:
        """At each step, the phase of the gain cycle with its pacing gain, and where the
        bandwidth estimate came from (the largest sample in the filter window, the floor, or a
        window reaching before the trace), as :meth:`check` reads them."""
        phase, out = f.state["phase"], {}
        for t in range(f.T):
            samples, partial = self._filter(f, t)
            source = ("bw: at least every known sample (the window reaches before the trace)" if partial
                      else "bw: the floor (every sample in the window is 0)" if max(samples) == 0
                      else "bw: the largest delivery-rate sample in the window")
            out[t] = [f"pacing: phase {phase[t]}, gain {self.gain(f.params, phase[t])}", source]
        return out

    @staticmethod
    def _filter(f: FlowValues, t: int) -> tuple[list[Fraction], bool]:
        """The samples in step t's filter window, and whether some were unknown: then the list
        holds the known ones and, for a sample whose RTT starts before step 0, what was ACKed
        since step 0 (S before step 0 is at most S[0]). With a cold start nothing was ACKed
        before step 0, so every sample is known."""
        p, R, S = f.params, f.R, f.S

        def acked(u: int) -> Fraction | None:
            return S[u] if u >= 0 else Fraction(0) if f.opens is not None else None

        samples: list[Fraction] = []
        partial = False
        for u in range(t - p["window"] * R + 1, t + 1):
            end, start = acked(u - R), acked(u - 2 * R)
            if end is None:
                partial = True
            elif start is None:
                partial = True
                samples.append((end - S[0]) / R)
            else:
                samples.append((end - start) / R)
        return samples, partial

    def concrete(self, start: SenderStart) -> ConcreteSender:
        from ccac.senders.bbr import BBRSender

        return BBRSender(start)


ALGORITHM = BBR()
