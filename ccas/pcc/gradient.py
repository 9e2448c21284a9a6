"""The Vivace rate controller as a per-step state machine, shared by Vivace and Proteus (no
``ALGORITHM``): its encoding here, its independent check in :mod:`ccac.ccas.pcc.gradient_check`.

A round is ``pairs`` probe pairs back to back: 2*pairs monitor intervals (MIs) at r(1+eps) and
r(1-eps) around the base rate r, each pair in a solver-chosen order (the papers' random order).
When the fate of every byte of the round is known (ACKed by ``S_f[t-R]`` or detected lost by
``Ld_f[t]``; Proteus 3: the utility of an MI exists "when all packets sent in that MI are
acknowledged or lost") the sender decides; until then it sends at r (``wait``).

**MI lengths** (Vivace table 1: "MI duration 1 RTT"). The sender acts at step boundaries, the
model's clock, so an MI is a whole number of steps: the first step boundary at least one RTT
estimate after it began. Every estimate a sender forms from its samples (the latest, a
smoothed or a windowed one) lies between R (no sample is shorter) and the longest RTT the
path can give, ``R + buffer/C + D`` with a finite buffer. So each MI's length is the
solver's, any whole number in ``[R, mi_max]`` with ``mi_max = R + ceil(buffer/C) + D`` by
default: no restriction with a finite buffer. With an infinite (or solver-chosen) buffer the
path bounds no sample: MIs up to ``2R + D`` steps are measured step by step, and longer ones
are allowed too, with coarser bounds on their gradient (:func:`long_lattice`) and their loss:
no restriction either. A given ``mi_max`` is a **restriction** (RTT estimates above it are not
covered), and ``mi`` fixes the length (a variant: a sender whose "RTT" is a fixed number of
steps).

**Per-MI measurements.** At the step an MI ends its signals are fixed from what the path allows
for its per-packet samples (:mod:`ccac.ccas.pcc.rtt`): the RTT gradient within the enclosure
of its per-step sample bands ((A) FIFO, (B) a lossless paced interval's lattice weights,
(C) a clean path's queue slope), the RTT deviation within Popoviciu's bound, Proteus'
regression-error tolerance allowed only where the residual can exceed the gradient
(``|g| * M < sigma``), the trending tolerance (a solver choice, nested: the deviation is zeroed
only with the gradient), Vivace's filter and Proteus-P's max(0, g), and the loss per step.
The round keeps, per MI: its effective gradient and deviation, its lost bytes per step, where
it ended (for its fate) and its timer.

**The MI timeout** (Vivace 4.3: if "Vivace has not learned the fate of all packets sent in an
MI when a certain timeout T_timeout (a certain number of RTTs) expires, Vivace halves the
sending rate"). The paper names neither the timer's start nor the RTT: the earliest any
reading fires is ``mi_timeout`` min RTTs after the MI *began*, so the encoding lets the rate
halve at any step at which some MI of the round has begun that long ago and its fate is still
unknown -- during the probes too -- and never forces it (a longer RTT estimate fires later).
"The sending rate" is read as the base rate or the rate sent at that moment (a probe's); the
new round starts at half of either, with the confidence counters left to the solver.

**The decision** (Vivace 4.2): per pair, ``gamma = (u(r(1+eps)) - u(r(1-eps))) / (2 eps x)``
and ``du = u+ - u-``, both enclosed (x^t on the rate grid, x*H and loss/x per bin with a sign
split), tied by their sign; one pair: its gamma (with Vivace's double check), several: the
majority direction and any gradient between the majority's (Proteus 5); then the amplified
step, capped by the dynamic change boundary (``ccas/pcc/shared.py`` holds the shared enclosures).

Everything before step 0 is history: the state at step 0 (registers included) is any state,
and until step R the "fate known" test reads ACKs from before the trace (a solver choice).
Every rule reads only the current and the previous step, so a window of a longer run is a
trace (``ccac.solving.window.window_is_trace`` tests it).

Why one file over 500 lines: the rate controller is one state machine stepped once per step;
its MI bookkeeping, the signals of an MI and the decision share the same per-step registers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import z3

from ccac.ccas.interface import FlowContext, StateVar
from ccac.ccas.pcc.shared import RateGrid, grid_params, grid_points, kappa_bounds, scale_params
from ccac.ccas.pcc.rtt import band_terms, lattice_lower_terms, lattice_upper_terms, plus
from ccac.core.errors import CcacError
from ccac.core.params import NONNEG, POSITIVE, Param

WAIT_CHOICES = ("either", "base", "last", "band")


def gradient_params(eps: Fraction, step_seconds: bool = False) -> tuple[Param, ...]:
    """Rate-control parameters shared by Vivace and Proteus (Vivace table 1 and section 5);
    ``step_seconds`` only where an RTT deviation (in seconds) enters the utility."""
    return (
        Param("t", Fraction(9, 10), "utility exponent: x^t rewards throughput (0 < t < 1)", **POSITIVE,
              maximum=Fraction(1)),
        Param("b", 900, "latency coefficient: b * x * dRTT/dt", **NONNEG),
        Param("c", Fraction(1135, 100), "loss coefficient: c * x * L", **NONNEG),
        Param("eps", eps, "probing step: probe rates r(1+eps) and r(1-eps)", **POSITIVE, maximum=Fraction(1, 2)),
        Param("theta0", 1, "initial conversion factor from gradient to rate change", "Mbps^2/utility", **POSITIVE),
        Param("omega0", Fraction(5, 100), "initial dynamic change boundary (fraction of the rate)", **POSITIVE),
        Param("delta", Fraction(1, 10), "dynamic change boundary increment", **POSITIVE),
        Param("tau_cap", 6, "confidence-amplifier counter tau is tracked up to this value; at it, "
              "m(tau) is any value >= m(tau_cap) (sound for any longer history)", "", "int",
              minimum=Fraction(1)),
        Param("k_cap", 6, "change-boundary counter k is tracked up to this value; at it, omega is "
              "any value >= omega0 + k_cap*delta", "", "int", minimum=Fraction(1)),
        Param("mi", None, "fixed monitor-interval length (a variant); default: any length from R "
              "to mi_max, one RTT as the sender estimates it (Vivace table 1)", "steps", "int",
              minimum=Fraction(1)),
        Param("mi_max", None, "longest monitor interval measured step by step: default R + ceil(buffer/C) "
              "+ D, the longest RTT the path gives (so the longest MI); with an infinite buffer 2R + D, "
              "and longer MIs are covered with coarser bounds on their gradient; given: the longest MI "
              "(a restriction: RTT estimates above it are not covered)", "steps", "int", minimum=Fraction(1)),
        Param("mi_timeout", 4, "MI timeout: once an MI of the round began this many min RTTs ago and "
              "its fate is unknown the rate may be halved (Vivace 4.3; the earliest any timer start "
              "and RTT estimate allow; never forced)", "RTTs", "int", minimum=Fraction(1)),
        Param("wait", "either", "rate while waiting for the round's fate (the papers do not say): "
              "either = the base rate r or the last probe's rate (the readings); base or last = one of "
              "them (a restriction); band = anything between the probe rates", kind="choice",
              choices=WAIT_CHOICES),
    ) + scale_params(step_seconds) + grid_params()


def amplifier(tau: int) -> Fraction:
    """Vivace's confidence amplifier m(tau): table 1 says tau for tau <= 3 and 2*tau - 3 above,
    section 4.2 says m(0) = 1; this is m(tau) = max(1, tau) for tau <= 3. The encoding admits
    m(tau), m(tau + 1) and table 1's m(0) = 0 at each decision (the readings' union)."""
    return Fraction(max(1, tau)) if tau <= 3 else Fraction(2 * tau - 3)


def mi_bounds(params: dict[str, Any], R: int, D: int, C: Fraction, buffer: Any) -> tuple[int, int, bool]:
    """(shortest MI, the length up to which MIs are measured step by step, whether that is also
    the longest), in steps (module docstring). With a finite buffer no RTT exceeds
    R + buffer/C + D, so neither does any estimate a sender forms from its samples; without one
    the path bounds no RTT, and longer MIs get the coarser bounds (:func:`long_lattice`)."""
    if params.get("mi") is not None:
        return int(params["mi"]), int(params["mi"]), True
    if params.get("mi_max") is not None:
        top, bounded = int(params["mi_max"]), True
    elif isinstance(buffer, Fraction):
        top, bounded = R + math.ceil(buffer / C) + D, True
    else:
        top, bounded = 2 * R + D, False
    if top < R:
        raise CcacError(f"mi_max = {top} is below the minimum RTT R = {R}: no MI is that short", "cca.mi_max")
    return R, top, bounded


def long_lattice(cap: int) -> Fraction:
    """The total positive (and negative) least-squares weight of any lattice of packets over an
    interval of more than ``cap`` steps is at most 3/(cap+1) (two packets at least a third of
    the interval apart are the worst case: weight 1/h with h > M/3), so its slope lies within
    that times the span of its samples (:mod:`ccac.ccas.pcc.rtt`, (B), coarsely)."""
    return Fraction(3, cap + 1)


def mi_steps(params: dict[str, Any], R: int) -> int:
    """The MI length of a sender whose RTT estimate is the min RTT: ``mi`` if given, else R."""
    return int(params["mi"]) if params.get("mi") is not None else R


@dataclass
class Variant:
    """How one member of the Vivace/Proteus family measures and decides."""

    pairs: int                 # probe pairs per round (Vivace 1, Proteus 3: majority rule)
    b: Fraction                # latency coefficient (0 in Vivace's loss mode)
    flt: Fraction              # |gradient| below this counts as 0 (Vivace's low-pass filter)
    positive_only: bool        # Proteus: negative gradients are ignored (max(0, g))
    dev_coeff: Fraction        # d (per second) of the RTT-deviation penalty, 0 = none
    threshold: Fraction | None  # Proteus-H: rates >= threshold (bytes/step) use the scavenger utility
    regression_tolerance: bool  # Proteus 5: |g| < regression error -> g = sigma = 0
    trending: str              # "free": the trending tolerance may zero g (and then sigma); "off"
    double_check: bool         # Vivace 4.3: rerun the pair when the faster probe lost less
    ack_filter: bool           # Proteus 5: the per-ACK filter may drop any run of samples


STATE_DOC = {
    "base": ("central (base) rate r of the current round", "bytes/step", "real"),
    "phase": ("probe MI index 0 .. 2*pairs-1, or 2*pairs while waiting for the round's fate", "", "int"),
    "pos": ("step within the MI (0 .. mlen-1); while waiting, within the sender's current MI", "steps", "int"),
    "mlen": ("length of the MI running at t (one RTT as the sender estimates it); while waiting, the "
             "sender's MIs go on and a decision may wait for the next one's start", "steps", "int"),
    "order": ("bit k set: pair k probes r(1+eps) first (solver-chosen per round)", "", "int"),
    "rtt_lo": ("every RTT sample (less R) of a byte sent in step t is at least this", "steps", "real"),
    "rtt_hi": ("... and at most this (within the path's band for the step)", "steps", "real"),
    "qdelay": ("bottleneck queue at the end of step t over C: the wait of a byte sent then", "steps", "real"),
    "event": ("0 none, 1 rate decision, 2 double-check rerun, 3 MI timeout (rate halved)", "", "int"),
    "dir": ("direction of the last decision (+1 / -1)", "", "int"),
    "tau": ("consecutive same-direction decisions (confidence amplifier m(tau))", "", "int"),
    "omega_k": ("change-boundary counter k: omega = omega0 + k*delta", "", "int"),
    "gamma_used": ("utility gradient applied at a rate decision (0 elsewhere)", "utility/Mbps", "real"),
    "mi_grad": ("effective RTT gradient of the MI ending at t, as its utility uses it (0 elsewhere)", "s/s", "real"),
    "mi_dev": ("effective RTT deviation of the MI ending at t, as its utility uses it (0 elsewhere)", "steps", "real"),
}
PLOTTED = ("base", "rtt_hi", "gamma_used")   # the rate, what it reacts to, and the step taken


def pair_names(pairs: int) -> list[tuple[str, str]]:
    return [(f"du{'' if pairs == 1 else k + 1}", f"gamma{'' if pairs == 1 else k + 1}") for k in range(pairs)]


def pcc_state(pairs: int, double_check: bool) -> tuple[StateVar, ...]:
    names = ["base", "phase", "pos", "mlen", "order", "rtt_lo", "rtt_hi", "qdelay", "event", "dir", "tau",
             "omega_k", "gamma_used", "mi_grad", "mi_dev"]
    out = [StateVar(n, *STATE_DOC[n], plotted=n in PLOTTED) for n in names]
    for k, (dn, gn) in enumerate(pair_names(pairs)):
        out.append(StateVar(dn, f"pair {k + 1}: u(r(1+eps)) - u(r(1-eps)) at a decision (0 elsewhere)", "utility", "real"))
        out.append(StateVar(gn, f"pair {k + 1}: utility gradient du / (2 eps x) at a decision", "utility/Mbps", "real"))
    if double_check:
        out.append(StateVar("rerun", "1 while re-running a pair to double-check an abnormal one", "", "int"))
    return tuple(out)


def _min(a: Any, b: Any) -> Any:
    return z3.If(a <= b, a, b)


def _max(a: Any, b: Any) -> Any:
    return z3.If(a >= b, a, b)


def _abs(x: Any) -> Any:
    return z3.If(x >= 0, x, -x)


class GradientPCC:
    """Vivace and Proteus: the state machine of the module docstring. Subclasses (which are
    also :class:`ccac.ccas.interface.CCA`) provide ``variant``."""

    def variant(self, p: dict[str, Any], C: Fraction) -> Variant:  # pragma: no cover - abstract
        raise NotImplementedError

    pair_names = staticmethod(pair_names)

    @staticmethod
    def even_queue(ctx: FlowContext) -> bool:
        """One flow and no random loss: its paced arrivals are even within a step, so the queue
        is monotone between two steps (:mod:`ccac.ccas.pcc.rtt`, 1)."""
        return ctx.v.net.flows == 1 and not ctx.v.net.lossy

    def encode_gradient(self, ctx: FlowContext) -> dict[str, list[Any]]:
        p, R, T, C = ctx.params, ctx.R, ctx.T, ctx.C
        var = self.variant(p, C)
        K, W = var.pairs, 2 * var.pairs
        M_lo, M_hi, bounded = mi_bounds(p, R, ctx.D, C, ctx.v.buffer)
        # an MI's timer may fire once mi_timeout RTTs have passed since it began sending, at the
        # start of its first step s: at a step t >= s + TO
        TO = int(p["mi_timeout"]) * R - 1
        eps, t_exp = p["eps"], p["t"]
        scale = p["link_mbps"] / C                     # Mbps per byte/step
        kap_lo, kap_hi = kappa_bounds(eps, t_exp)
        cK = p["c"] * scale
        tau_cap, k_cap = int(p["tau_cap"]), int(p["k_cap"])
        even = self.even_queue(ctx)
        clean = even and ctx.D == 0                    # no jitter either: (C), the queue's slope
        lattice = not var.ack_filter or clean          # (B) needs every sample of the MI
        v = ctx.v

        base = ctx.series("base")
        phase, pos, mlen = ctx.series("phase", "int"), ctx.series("pos", "int"), ctx.series("mlen", "int")
        obit = [ctx.series(f"pcc_order{k}", "bool") for k in range(K)]
        order = [z3.Sum(*(z3.If(obit[k][t], 2 ** k, 0) for k in range(K))) if K > 1
                 else z3.If(obit[0][t], 1, 0) for t in range(T)]
        event, dirn = ctx.series("event", "int"), ctx.series("dir", "int")
        tau, kk = ctx.series("tau", "int"), ctx.series("omega_k", "int")
        gamma_used = ctx.series("gamma_used")
        du = [ctx.series(d) for d, _ in pair_names(K)]
        gam = [ctx.series(g) for _, g in pair_names(K)]
        declares_rerun = any(sv.name == "rerun" for sv in getattr(self, "state", ()))
        rerun = ctx.series("rerun", "int") if declares_rerun else None
        gamma_first = ctx.series("pcc_gamma_first") if declares_rerun else None
        if rerun is not None and not var.double_check:
            ctx.add(*(rerun[t] == 0 for t in range(T)))
        rtt_lo, rtt_hi = ctx.series("rtt_lo"), ctx.series("rtt_hi")
        # registers of the current MI: its steps' bands by position, their hull, its queue's
        # slope range (clean paths) and its lost bytes
        band_lo = [ctx.series(f"pcc_bl{j}") for j in range(M_hi)]
        band_hi = [ctx.series(f"pcc_bh{j}") for j in range(M_hi)]
        hull_lo, hull_hi = ctx.series("pcc_hull_lo"), ctx.series("pcc_hull_hi")
        rise_lo, rise_hi = (ctx.series("pcc_rise_lo"), ctx.series("pcc_rise_hi")) if clean else (None, None)
        cur_lost = ctx.series("pcc_cur_lost")
        # registers per MI of the round
        ge = [ctx.series(f"pcc_ge{i}") for i in range(W)]        # effective gradient
        se = [ctx.series(f"pcc_se{i}") for i in range(W)]        # effective deviation (steps)
        lm = [ctx.series(f"pcc_lm{i}") for i in range(W)]        # lost bytes per step of the MI
        mark_adm = [ctx.series(f"pcc_adm{i}", axis="S") for i in range(W)]
        mark_L = [ctx.series(f"pcc_L{i}", axis="L") for i in range(W)]
        # the signals of the MI ending at t
        g_raw, s_raw, lm_now = ctx.series("pcc_g"), ctx.series("pcc_s"), ctx.series("pcc_lm_now")
        tol = ctx.series("pcc_tol", "bool") if var.regression_tolerance else None
        trend_g = ctx.series("pcc_tg", "bool") if var.trending == "free" else None
        trend_s = ctx.series("pcc_ts", "bool") if var.trending == "free" else None
        mi_grad, mi_dev = ctx.series("mi_grad"), ctx.series("mi_dev")
        fate_var = ctx.series("pcc_fate", "bool")
        defer = ctx.series("pcc_defer", "bool")   # the fate was known at the last MI boundary
        fired = ctx.series("pcc_fired", "bool")   # an MI timer fired in this MI, to act at its end
        votes = [ctx.series(f"pcc_vote{k}", "bool") for k in range(K)]
        agree = ctx.series("pcc_agree", "bool") if var.double_check else None
        power, inverse = ctx.series("pcc_xt"), ctx.series("pcc_xt1")       # ~ x^t, x^(t-1)
        zprod = [ctx.series(f"pcc_xh{k}") for k in range(K)]                # ~ x * H_k
        yquot = [ctx.series(f"pcc_lx{k}") for k in range(K)]                # ~ Lambda_k / x
        q_move = ctx.series("pcc_q")                                       # unclipped rate change
        clip = ctx.series("pcc_clip", "bool")

        x_mbps = [base[t] * scale for t in range(T)]
        points = grid_points(p["grid_lo"] * p["link_mbps"], p["grid_hi"] * p["link_mbps"], p["grid"])
        grid = RateGrid(ctx, x_mbps, points, "pcc_x")

        adm_f = [ctx.A[t] - ctx.L[t] for t in range(T)]
        queue = [v.admitted(t) - v.token_line(t) for t in range(T)]
        qdelay = [plus(queue[t]) / C for t in range(T)]

        def probe_rate(i: int, t: int) -> Any:
            k, first = i // 2, i % 2 == 0
            high = obit[k][t] if first else z3.Not(obit[k][t])
            return z3.If(high, (1 + eps) * base[t], (1 - eps) * base[t])

        for t in range(T):
            # ---- domains and per-step rules
            ctx.add(base[t] > 0, phase[t] >= 0, phase[t] <= W, mlen[t] >= M_lo, mlen[t] <= M_hi if bounded else True,
                    z3.Or(dirn[t] == 1, dirn[t] == -1), tau[t] >= 0, tau[t] <= tau_cap,
                    kk[t] >= 0, kk[t] <= k_cap, event[t] >= 0, event[t] <= 3,
                    pos[t] >= 0, pos[t] <= mlen[t] - 1,
                    *(se[i][t] >= 0 for i in range(W)), *(lm[i][t] >= 0 for i in range(W)))
            if rerun is not None:
                ctx.add(z3.Or(rerun[t] == 0, rerun[t] == 1))
            for i in range(W):
                ctx.add(z3.Implies(phase[t] == i, ctx.rate[t] == probe_rate(i, t)))
            last_probe = probe_rate(W - 1, t)
            waiting = {"base": ctx.rate[t] == base[t], "last": ctx.rate[t] == last_probe,
                       "either": z3.Or(ctx.rate[t] == base[t], ctx.rate[t] == last_probe),
                       "band": z3.And(ctx.rate[t] >= (1 - eps) * base[t], ctx.rate[t] <= (1 + eps) * base[t])}
            ctx.add(z3.Implies(phase[t] == W, waiting[p["wait"]]))
            if t >= R:
                ctx.add(ctx.cwnd[t] == ctx.A[t - 1] + ctx.rate[t] - ctx.S[t - R] - ctx.Ld[t])
            elif t >= 1:  # before its first decision the flow was PCC too: paced, evenly
                ctx.add(ctx.A[t] - ctx.A[t - 1] == ctx.rate[t])
            # the step's per-packet samples lie in the path's band (pcc.rtt, 1)
            ctx.add(rtt_lo[t] <= rtt_hi[t], rtt_lo[t] >= 0)
            if even:  # the queue's direction in the step is the pace's (step 0: only that is known)
                ctx.add(z3.Implies(ctx.rate[t] <= C, rtt_lo[t] >= qdelay[t]),
                        z3.Implies(ctx.rate[t] >= C, rtt_hi[t] <= qdelay[t] + ctx.D))
            if t > 0:
                lo, hi = band_terms(C, ctx.D, even, queue[t - 1], queue[t], v.admitted(t) - v.admitted(t - 1))
                ctx.add(rtt_lo[t] >= lo, rtt_hi[t] <= hi)
            # enclosures of the base rate's powers (valid at every step)
            ctx.add(*grid.power(t, x_mbps[t], power[t], t_exp))
            ctx.add(*grid.power(t, x_mbps[t], inverse[t], t_exp - 1))

            # ---- the registers of the current MI
            in_probe = phase[t] < W
            rise = (ctx.rate[t] if t == 0 else ctx.A[t] - ctx.A[t - 1]) / C - 1  # the pace, as C's excess
            if t == 0:
                # history: what came before is free, except that step 0 itself is the MI's step at
                # its position (its band and pace); on a path that never loses bytes none was lost
                if v.buffer is None and v.net.path(ctx.n).eta == 0:
                    ctx.add(cur_lost[t] == 0, *(lm[i][t] == 0 for i in range(W)))
                ctx.add(cur_lost[t] >= 0, hull_lo[t] <= rtt_lo[t], hull_hi[t] >= rtt_hi[t],
                        *(z3.Implies(z3.And(in_probe, pos[t] == j),
                                     z3.And(band_lo[j][t] == rtt_lo[t], band_hi[j][t] == rtt_hi[t]))
                          for j in range(M_hi)),
                        z3.Implies(pos[t] == 0, z3.And(hull_lo[t] == rtt_lo[t], hull_hi[t] == rtt_hi[t])))
                if clean:
                    ctx.add(rise_lo[t] <= rise, rise_hi[t] >= rise,
                            z3.Implies(pos[t] == 0, z3.And(rise_lo[t] == rise, rise_hi[t] == rise)))
            else:
                dl = ctx.L[t] - ctx.L[t - 1]
                ctx.add(cur_lost[t] == z3.If(pos[t] == 0, dl, cur_lost[t - 1] + dl))
                for j in range(M_hi):
                    here = z3.And(in_probe, pos[t] == j)
                    ctx.add(band_lo[j][t] == z3.If(here, rtt_lo[t], band_lo[j][t - 1]),
                            band_hi[j][t] == z3.If(here, rtt_hi[t], band_hi[j][t - 1]))
                first = pos[t] == 0
                ctx.add(hull_lo[t] == z3.If(first, rtt_lo[t], _min(hull_lo[t - 1], rtt_lo[t])),
                        hull_hi[t] == z3.If(first, rtt_hi[t], _max(hull_hi[t - 1], rtt_hi[t])))
                if clean:
                    ctx.add(rise_lo[t] == z3.If(first, rise, _min(rise_lo[t - 1], rise)),
                            rise_hi[t] == z3.If(first, rise, _max(rise_hi[t - 1], rise)))

            # ---- the signals of the MI ending at t (pcc.rtt, 2 and 3)
            ends = z3.And(in_probe, pos[t] == mlen[t] - 1)
            lossless = cur_lost[t] == 0
            signal = [g_raw[t] >= -1, s_raw[t] >= 0, s_raw[t] <= (hull_hi[t] - hull_lo[t]) / 2]
            # (D): samples that all lie on one value have a flat fit, whichever of them are kept
            signal.append(z3.Implies(hull_hi[t] == hull_lo[t], g_raw[t] == 0))
            for M in range(M_lo, M_hi + 1):
                is_M = mlen[t] == M
                signal.append(z3.Implies(is_M, lm_now[t] * M == cur_lost[t]))
                if lattice:
                    lows = [band_lo[j][t] for j in range(M)]
                    highs = [band_hi[j][t] for j in range(M)]
                    signal.append(z3.Implies(z3.And(is_M, lossless), z3.And(
                        *(g_raw[t] <= u for u in lattice_upper_terms(M, lows, highs)),
                        *(g_raw[t] >= d for d in lattice_lower_terms(M, lows, highs)))))
                if tol is not None:
                    signal.append(z3.Implies(z3.And(is_M, tol[t]), _abs(g_raw[t]) * M < s_raw[t]))
            if not bounded:
                # longer MIs: the lattice bound on the hull of their bands; their loss per step and
                # the tolerance exactly while the MI fits in the trace (longer ones began before
                # it: their loss is history), a bound beyond
                longer = mlen[t] > M_hi
                spread = long_lattice(M_hi) * (hull_hi[t] - hull_lo[t])
                beyond = max(M_hi, T) + 1
                signal.append(z3.Implies(longer, z3.And(
                    *([z3.Implies(lossless, z3.And(g_raw[t] <= spread, g_raw[t] >= -spread))] if lattice else []),
                    z3.Implies(mlen[t] >= beyond, z3.And(lm_now[t] >= 0, lm_now[t] * beyond <= cur_lost[t])),
                    *([z3.Implies(z3.And(mlen[t] >= beyond, tol[t]), _abs(g_raw[t]) * beyond < s_raw[t])]
                      if tol is not None else []))))
                for M in range(M_hi + 1, beyond):
                    signal.append(z3.Implies(mlen[t] == M, lm_now[t] * M == cur_lost[t]))
                    if tol is not None:
                        signal.append(z3.Implies(z3.And(mlen[t] == M, tol[t]), _abs(g_raw[t]) * M < s_raw[t]))
            if clean:
                signal += [g_raw[t] <= _max(rise_hi[t], 0), g_raw[t] >= _min(rise_lo[t], 0)]
            if trend_g is not None:
                signal.append(z3.Implies(trend_s[t], trend_g[t]))
            ctx.add(z3.Implies(ends, z3.And(*signal)))
            zero_g = z3.Or(*([tol[t]] if tol is not None else []), *([trend_g[t]] if trend_g is not None else []))
            zero_s = z3.Or(*([tol[t]] if tol is not None else []), *([trend_s[t]] if trend_s is not None else []))
            g_eff: Any = z3.If(zero_g, 0, g_raw[t]) if (tol is not None or trend_g is not None) else g_raw[t]
            if var.flt > 0:
                g_eff = z3.If(_abs(g_eff) >= var.flt, g_eff, 0)
            if var.positive_only:
                g_eff = _max(g_eff, 0)
            s_eff: Any = z3.If(zero_s, 0, s_raw[t]) if (tol is not None or trend_s is not None) else s_raw[t]
            ctx.add(mi_grad[t] == z3.If(ends, g_eff, 0), mi_dev[t] == z3.If(ends, s_eff, 0))
            for i in range(W):
                ends_i = z3.And(phase[t] == i, pos[t] == mlen[t] - 1)
                if t == 0:  # history: the round's registers hold whatever the past left
                    ctx.add(z3.Implies(ends_i, z3.And(mark_adm[i][t] == adm_f[t], mark_L[i][t] == ctx.L[t])),
                            mark_adm[i][t] <= adm_f[t], mark_L[i][t] <= ctx.L[t])
                    continue
                ctx.add(ge[i][t] == z3.If(ends_i, g_eff, ge[i][t - 1]),
                        se[i][t] == z3.If(ends_i, s_eff, se[i][t - 1]),
                        lm[i][t] == z3.If(ends_i, lm_now[t], lm[i][t - 1]),
                        mark_adm[i][t] == z3.If(ends_i, adm_f[t], mark_adm[i][t - 1]),
                        mark_L[i][t] == z3.If(ends_i, ctx.L[t], mark_L[i][t - 1]))
            if t == 0:
                # history: a decision may have happened just now (a window can start at one)
                ctx.add(z3.Implies(z3.And(event[t] != 1, event[t] != 2),
                                   z3.And(*(du[k][t] == 0 for k in range(K)), *(gam[k][t] == 0 for k in range(K)))),
                        z3.Implies(event[t] != 1, gamma_used[t] == 0))
                continue

            # ---- transitions from t-1 to t
            pp, ps, pm = phase[t - 1], pos[t - 1], mlen[t - 1]
            keep = [base[t] == base[t - 1], *(obit[k][t] == obit[k][t - 1] for k in range(K)), tau[t] == tau[t - 1],
                    kk[t] == kk[t - 1], dirn[t] == dirn[t - 1], event[t] == 0]
            if rerun is not None:
                keep += [rerun[t] == rerun[t - 1], gamma_first[t] == gamma_first[t - 1]]
            in_mi = z3.And(ps < pm - 1)                          # the MI (probe or wait) goes on ...
            next_probe = z3.And(pp < W - 1, ps == pm - 1)         # ... or the next probe MI begins
            boundary = z3.And(pp >= W - 1, ps == pm - 1)          # the probes are done and an MI just ended
            ready = z3.Or(boundary, pp == W)
            if t >= R:
                ctx.add(fate_var[t] == z3.And(ctx.S[t - R] >= mark_adm[W - 1][t - 1], ctx.Ld[t] >= mark_L[W - 1][t - 1]))
            fate = fate_var[t]
            decide = z3.Or(event[t] == 1, event[t] == 2)
            # the MI timer: some MI began mi_timeout RTTs ago and the fate of a packet sent in it is
            # unknown (any MI: of this round, an earlier one, one the sender waited in). Fates are
            # learned in sending order, so it suffices that some step's bytes are unresolved and
            # that step's MI began that long ago; bytes from before the trace, an MI of unknown start
            unresolved = [z3.Or(ctx.S[t - R] < adm_f[u], ctx.Ld[t] < ctx.L[u]) if t >= R else True
                          for u in range(t)]
            expired = [z3.And(unresolved[u], u - pos[u] <= t - TO) for u in range(t)] + [unresolved[0]]
            new_round = [phase[t] == 0, pos[t] == 0]
            halved = z3.Or(base[t] * 2 == base[t - 1], base[t] * 2 == ctx.rate[t - 1])
            # the rate halves when the timer fires, or at the end of the MI it fired in (a reading)
            fires_now = z3.Or(*expired)
            ctx.add(z3.Implies(event[t] == 3, z3.And(z3.Or(fires_now, z3.And(fired[t - 1], ps == pm - 1)), halved,
                                                     *new_round, *([rerun[t] == 0] if rerun is not None else []))),
                    z3.Implies(fired[t], z3.And(event[t] == 0, z3.Or(fires_now, z3.And(fired[t - 1], ps < pm - 1)))))
            # a decision needs the round's fate. It is taken at once, or at an MI boundary (the
            # readings differ on whether a sender waits in MIs), at the latest at the second boundary
            # after the fate is known: a sender that chooses a step's rate at its start has not yet
            # seen the step's ACKs, which the model's fate test reads, so it may start one more MI
            carry_on = event[t] == 0
            ctx.add(z3.Implies(decide, z3.And(ready, fate)),
                    z3.Implies(z3.And(boundary, fate, defer[t - 1]), decide),
                    z3.Implies(z3.And(boundary, carry_on), defer[t] == fate),
                    z3.Implies(z3.And(in_mi, pp == W, carry_on), defer[t] == defer[t - 1]),
                    z3.Implies(z3.Or(phase[t] < W, event[t] != 0), z3.Not(defer[t])),
                    z3.Implies(z3.And(in_mi, carry_on), z3.And(phase[t] == pp, pos[t] == ps + 1, mlen[t] == pm, *keep)),
                    z3.Implies(z3.And(next_probe, carry_on), z3.And(phase[t] == pp + 1, pos[t] == 0, *keep)),
                    z3.Implies(z3.And(boundary, carry_on), z3.And(phase[t] == W, pos[t] == 0, *keep)))
            ctx.add(z3.Implies(z3.Not(decide), z3.And(*(du[k][t] == 0 for k in range(K)),
                                                      *(gam[k][t] == 0 for k in range(K)))))
            ctx.add(z3.Implies(z3.Not(z3.And(decide, event[t] == 1)), gamma_used[t] == 0))

            # ---- per pair: du and gamma (both enclosed, tied by sign), from the round's registers
            d_dev = var.dev_coeff * p.get("step_seconds", 0)
            r_prev = base[t - 1]
            for k in range(K):
                a_, b_ = 2 * k, 2 * k + 1

                def pair_h(hi_i: int, lo_i: int) -> Any:
                    h = var.b * ((1 + eps) * ge[hi_i][t - 1] - (1 - eps) * ge[lo_i][t - 1])
                    if d_dev:
                        def dev(slot: int, factor: Fraction) -> Any:
                            if var.threshold is None:
                                return factor * se[slot][t - 1]
                            return z3.If(factor * r_prev >= var.threshold, factor * se[slot][t - 1], 0)
                        h = h + d_dev * (dev(hi_i, 1 + eps) - dev(lo_i, 1 - eps))
                    return h

                first_high = obit[k][t - 1]
                H = z3.If(first_high, pair_h(a_, b_), pair_h(b_, a_))
                lam = z3.If(first_high, lm[a_][t - 1] - lm[b_][t - 1], lm[b_][t - 1] - lm[a_][t - 1])
                ctx.add(z3.Implies(decide, z3.And(
                    *grid.product(t - 1, zprod[k][t], H), *grid.quotient(t - 1, yquot[k][t], lam),
                    du[k][t] >= kap_lo * power[t - 1] - zprod[k][t] - cK * lam,
                    du[k][t] <= kap_hi * power[t - 1] - zprod[k][t] - cK * lam,
                    gam[k][t] * 2 * eps >= kap_lo * inverse[t - 1] - H - cK * yquot[k][t],
                    gam[k][t] * 2 * eps <= kap_hi * inverse[t - 1] - H - cK * yquot[k][t])))
                ctx.add(z3.Implies(decide, z3.And(
                    z3.Implies(du[k][t] > 0, gam[k][t] >= 0), z3.Implies(du[k][t] < 0, gam[k][t] <= 0),
                    z3.Implies(gam[k][t] > 0, du[k][t] >= 0), z3.Implies(gam[k][t] < 0, du[k][t] <= 0),
                    z3.Implies(votes[k][t], gam[k][t] >= 0), z3.Implies(z3.Not(votes[k][t]), gam[k][t] <= 0))))

            # ---- combining the pairs: the direction and the gradient applied
            up = dirn[t] == 1
            rate_decision = z3.And(decide, event[t] == 1)
            if K == 1:
                combined = gam[0][t]
                ctx.add(z3.Implies(rate_decision, votes[0][t] == up))
            else:
                count = z3.Sum(*(z3.If(votes[k][t], 1, 0) for k in range(K)))
                ctx.add(z3.Implies(rate_decision, up == (count * 2 > K)))
                # the step: the mean of the majority's gradients or of all (the readings), so any
                # value between the pairs' gradients, with the majority's sign (below)
                ctx.add(z3.Implies(rate_decision, z3.And(
                    z3.Or(*(gamma_used[t] >= gam[k][t] for k in range(K))),
                    z3.Or(*(gamma_used[t] <= gam[k][t] for k in range(K))))))
                combined = gamma_used[t]
            if var.double_check:
                # abnormal: the faster probe lost a smaller fraction (l+/a+ < l-/a-, a = r(1+-eps)M)
                abnormal = z3.If(obit[0][t - 1], lm[0][t - 1] * (1 - eps) < lm[1][t - 1] * (1 + eps),
                                 lm[1][t - 1] * (1 - eps) < lm[0][t - 1] * (1 + eps))
                first_run = rerun[t - 1] == 0
                ctx.add(z3.Implies(decide, z3.If(z3.And(first_run, abnormal), event[t] == 2, event[t] == 1)))
                ctx.add(z3.Implies(z3.And(decide, event[t] == 2), z3.And(
                    *new_round, rerun[t] == 1, gamma_first[t] == gam[0][t], base[t] == base[t - 1],
                    tau[t] == tau[t - 1], kk[t] == kk[t - 1], dirn[t] == dirn[t - 1])))
                # second run: same sign as the first -> average; else the first is thrown out
                g1 = gamma_first[t - 1]
                same = z3.Or(z3.And(gam[0][t] >= 0, g1 >= 0), z3.And(gam[0][t] <= 0, g1 <= 0))
                differ = z3.Or(z3.And(gam[0][t] >= 0, g1 <= 0), z3.And(gam[0][t] <= 0, g1 >= 0))
                ctx.add(z3.Implies(rate_decision, z3.And(
                    rerun[t] == 0, z3.Implies(first_run, gamma_used[t] == gam[0][t]),
                    z3.Implies(z3.Not(first_run), z3.And(
                        z3.Implies(agree[t], z3.And(same, gamma_used[t] == (gam[0][t] + g1) / 2)),
                        z3.Implies(z3.Not(agree[t]), z3.And(differ, gamma_used[t] == gam[0][t])))))))
                combined = gamma_used[t]
                ctx.add(z3.Implies(z3.Not(decide), z3.Implies(event[t] != 3, z3.And(
                    rerun[t] == rerun[t - 1], gamma_first[t] == gamma_first[t - 1]))))
            else:
                ctx.add(z3.Implies(decide, event[t] == 1))
                if K == 1:
                    ctx.add(z3.Implies(rate_decision, gamma_used[t] == gam[0][t]))
            ctx.add(z3.Implies(rate_decision, z3.And(
                z3.Implies(up, combined >= 0), z3.Implies(z3.Not(up), combined <= 0))))
            step = self._step(p, t, base, tau, kk, dirn, gamma_used, q_move, clip, scale, tau_cap, k_cap)
            # a zero gradient points nowhere: one reading moves nothing, counters included
            idle = z3.And(gamma_used[t] == 0, base[t] == base[t - 1], tau[t] == tau[t - 1], kk[t] == kk[t - 1],
                          dirn[t] == dirn[t - 1])
            ctx.add(z3.Implies(rate_decision, z3.And(*new_round, z3.Or(z3.And(*step), idle),
                                                     *([rerun[t] == 0] if rerun is not None else []))))
        state = {"base": base, "phase": phase, "pos": pos, "mlen": mlen, "order": order, "rtt_lo": rtt_lo,
                 "rtt_hi": rtt_hi, "qdelay": qdelay, "event": event, "dir": dirn, "tau": tau, "omega_k": kk,
                 "gamma_used": gamma_used, "mi_grad": mi_grad, "mi_dev": mi_dev}
        for k, (dn, gn) in enumerate(pair_names(K)):
            state[dn], state[gn] = du[k], gam[k]
        if rerun is not None:
            state["rerun"] = rerun
        return state

    @staticmethod
    def _step(p: dict[str, Any], t: int, base: list[Any], tau: list[Any], kk: list[Any], dirn: list[Any],
              gamma_used: list[Any], q_move: list[Any], clip: list[Any], scale: Fraction, tau_cap: int,
              k_cap: int) -> list[Any]:
        """Vivace 4.2's step at a rate decision: the confidence amplifier, the dynamic change
        boundary and the new base rate."""
        theta0, omega0, delta = p["theta0"], p["omega0"], p["delta"]
        r = base[t - 1]
        up = dirn[t] == 1
        same_dir = dirn[t] == dirn[t - 1]
        step = [tau[t] == z3.If(same_dir, z3.If(tau[t - 1] + 1 >= tau_cap, tau_cap, tau[t - 1] + 1), 0)]
        for j in range(tau_cap + 1):
            m = amplifier(j) * theta0 / scale
            if j < tau_cap:
                # m(tau) with tau the earlier same-direction decisions, or counting this one too,
                # or Table 1 literally (m(0) = 0): the paper's readings
                ms = {amplifier(j), amplifier(j + 1)} | ({Fraction(0)} if j == 0 else set())
                step.append(z3.Implies(tau[t] == j, z3.Or(*(q_move[t] == m_ * theta0 / scale * gamma_used[t]
                                                            for m_ in sorted(ms)))))
            else:
                step.append(z3.Implies(tau[t] == j, z3.And(
                    z3.Implies(gamma_used[t] >= 0, q_move[t] >= m * gamma_used[t]),
                    z3.Implies(gamma_used[t] <= 0, q_move[t] <= m * gamma_used[t]))))
        k0 = z3.If(same_dir, kk[t - 1], 0)
        for j in range(k_cap + 1):
            om = omega0 + j * delta
            big = z3.Or(q_move[t] > om * r, q_move[t] < -om * r)
            if j < k_cap:
                # capped at omega r, with omega before or after k is raised (the readings)
                clipped_rule = [big, kk[t] == j + 1 if j + 1 <= k_cap else kk[t] == k_cap]
                om2 = om + delta
                up_base = z3.Or(base[t] == (1 + om) * r, base[t] == (1 + om2) * r)
                down_base = z3.Or(*(base[t] == (1 - w) * r for w in (om, om2) if w < 1),
                                  *([z3.And(base[t] > 0, base[t] <= r)] if om2 >= 1 else []))
            else:
                clipped_rule = [big, kk[t] == k_cap]
                up_base = base[t] >= (1 + om) * r
                # omega may be 1 or more here: the paper has no floor, so (0, r]
                down_base = z3.And(base[t] > 0, base[t] <= r)
            unclipped = [z3.Not(big) if j < k_cap else True, base[t] == r + q_move[t]]
            step.append(z3.Implies(k0 == j, z3.If(
                clip[t],
                z3.And(*clipped_rule, z3.Implies(up, up_base), z3.Implies(z3.Not(up), down_base)),
                z3.And(*unclipped))))
        # after an unclipped move, k is recalibrated: the smallest k with |dr| <= r*(omega0 + k*delta)
        for j in range(k_cap + 1):
            def fits(level: int) -> Any:
                om = omega0 + level * delta
                return z3.And(q_move[t] <= om * r, q_move[t] >= -om * r)
            if j == 0:
                step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == 0), fits(0)))
            elif j < k_cap:
                step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == j), z3.And(fits(j), z3.Not(fits(j - 1)))))
            else:
                step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == j), z3.Not(fits(j - 1))))
        return step
