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
trace (``ccac.analysis.window.window_is_trace`` tests it).

Why one file over 500 lines: the rate controller is one state machine stepped once per step;
its MI bookkeeping, the signals of an MI and the decision share the same per-step registers,
which :class:`GradientEncoding` holds, with one method per rule.
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
from ccac.encode.encoding import any_of

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
#: the values of ``event`` a page names at the step they happen (:meth:`ccac.ccas.interface.CCA.step_rules`)
STATE_LABELS = {"event": ((1, "rate decision"), (2, "double-check rerun"), (3, "MI timeout (rate halved)"))}


def pair_names(pairs: int) -> list[tuple[str, str]]:
    return [(f"du{'' if pairs == 1 else k + 1}", f"gamma{'' if pairs == 1 else k + 1}") for k in range(pairs)]


def pcc_state(pairs: int, double_check: bool) -> tuple[StateVar, ...]:
    names = ["base", "phase", "pos", "mlen", "order", "rtt_lo", "rtt_hi", "qdelay", "event", "dir", "tau",
             "omega_k", "gamma_used", "mi_grad", "mi_dev"]
    out = [StateVar(n, *STATE_DOC[n], plotted=n in PLOTTED, labels=STATE_LABELS.get(n, ())) for n in names]
    for k, (dn, gn) in enumerate(pair_names(pairs)):
        out.append(StateVar(dn, f"pair {k + 1}: u(r(1+eps)) - u(r(1-eps)) at a decision (0 elsewhere)", "utility",
                            "real"))
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
        """The state machine of the module docstring, step by step: what holds at every step
        (domains, the rate, the RTT samples' band, the MI's registers and, where an MI ends, its
        signals), then the transition from the step before (the MI timer, when a decision is
        taken, the pairs' gradients, their combination and the rate step)."""
        rules = GradientEncoding(self, ctx)
        for t in range(ctx.T):
            rules.domains(t)
            rules.probe_rates(t)
            rules.pacing(t)
            rules.rtt_sample_band(t)
            rules.rate_powers(t)
            rules.mi_registers(t)
            rules.mi_signals(t)
            g_eff, s_eff = rules.effective_signals(t)
            rules.round_registers(t, g_eff, s_eff)
            if t == 0:
                rules.decision_history(t)
                continue
            rules.round_fate(t)
            rules.mi_timeout(t)
            rules.decision_timing(t)
            rules.pair_gradients(t)
            rules.majority(t)
            rules.double_check(t)
            rules.rate_step(t)
        return rules.state()


class GradientEncoding:
    """Vivace's rate controller (shared by Proteus) over one flow: one method per rule of the
    module docstring, each adding its constraints for step t (:meth:`GradientPCC.encode_gradient`
    calls them in order)."""

    def __init__(self, cca: GradientPCC, ctx: FlowContext) -> None:
        p, R, T, C = ctx.params, ctx.R, ctx.T, ctx.C
        self.ctx, self.p, self.R, self.T, self.C, self.v = ctx, p, R, T, C, ctx.v
        var = self.var = cca.variant(p, C)
        self.K, self.W = var.pairs, 2 * var.pairs
        self.M_lo, self.M_hi, self.bounded = mi_bounds(p, R, ctx.D, C, ctx.v.buffer)
        # an MI's timer may fire once mi_timeout RTTs have passed since it began sending, at the
        # start of its first step s: at a step t >= s + TO
        self.TO = int(p["mi_timeout"]) * R - 1
        self.eps, self.t_exp = p["eps"], p["t"]
        self.scale = p["link_mbps"] / C                     # Mbps per byte/step
        self.kap_lo, self.kap_hi = kappa_bounds(self.eps, self.t_exp)
        self.cK = p["c"] * self.scale
        self.tau_cap, self.k_cap = int(p["tau_cap"]), int(p["k_cap"])
        self.even = cca.even_queue(ctx)
        self.clean = self.even and ctx.D == 0                # no jitter either: (C), the queue's slope
        self.lattice = not var.ack_filter or self.clean      # (B) needs every sample of the MI
        self.declare_state(cca)
        self.declare_registers()
        x_mbps = self.x_mbps = [self.base[t] * self.scale for t in range(T)]
        points = grid_points(p["grid_lo"] * p["link_mbps"], p["grid_hi"] * p["link_mbps"], p["grid"])
        self.grid = RateGrid(ctx, x_mbps, points, "pcc_x")
        v = ctx.v
        self.adm_f = [ctx.A[t] - ctx.L[t] for t in range(T)]
        self.queue = [v.admitted(t) - v.token_line(t) for t in range(T)]
        self.qdelay = [plus(self.queue[t]) / C for t in range(T)]

    def declare_state(self, cca: GradientPCC) -> None:
        """The state a query reads (:data:`STATE_DOC`; ``mi_grad`` and ``mi_dev`` with the MI's
        signals), and ``rerun`` where the CCA declares it (Vivace; fixed at 0 without the double
        check). Declared in the order a periodic query's start-equals-end conditions list them."""
        ctx, T, K = self.ctx, self.T, self.K
        self.base = ctx.series("base")
        self.phase, self.pos = ctx.series("phase", "int"), ctx.series("pos", "int")
        self.mlen = ctx.series("mlen", "int")
        obit = self.obit = [ctx.series(f"pcc_order{k}", "bool") for k in range(K)]
        self.order = [z3.Sum(*(z3.If(obit[k][t], 2 ** k, 0) for k in range(K))) if K > 1
                      else z3.If(obit[0][t], 1, 0) for t in range(T)]
        self.event, self.dirn = ctx.series("event", "int"), ctx.series("dir", "int")
        self.tau, self.kk = ctx.series("tau", "int"), ctx.series("omega_k", "int")
        self.gamma_used = ctx.series("gamma_used")
        self.du = [ctx.series(d) for d, _ in pair_names(K)]
        self.gam = [ctx.series(g) for _, g in pair_names(K)]
        declares_rerun = any(sv.name == "rerun" for sv in getattr(cca, "state", ()))
        self.rerun = ctx.series("rerun", "int") if declares_rerun else None
        self.gamma_first = ctx.series("pcc_gamma_first") if declares_rerun else None
        if self.rerun is not None and not self.var.double_check:
            ctx.add(*(self.rerun[t] == 0 for t in range(T)))
        self.rtt_lo, self.rtt_hi = ctx.series("rtt_lo"), ctx.series("rtt_hi")

    def declare_registers(self) -> None:
        """The registers: of the current MI, of each MI of the round, of the MI ending now, and
        the decision's auxiliaries."""
        ctx, var, K, W, M_hi, clean = self.ctx, self.var, self.K, self.W, self.M_hi, self.clean
        # the current MI: its steps' bands by position, their hull, its queue's slope range
        # (clean paths) and its lost bytes
        self.band_lo = [ctx.series(f"pcc_bl{j}") for j in range(M_hi)]
        self.band_hi = [ctx.series(f"pcc_bh{j}") for j in range(M_hi)]
        self.hull_lo, self.hull_hi = ctx.series("pcc_hull_lo"), ctx.series("pcc_hull_hi")
        self.rise_lo: list[Any] | None
        self.rise_hi: list[Any] | None
        self.rise_lo, self.rise_hi = (ctx.series("pcc_rise_lo"), ctx.series("pcc_rise_hi")) if clean else (None, None)
        self.cur_lost = ctx.series("pcc_cur_lost")
        # per MI of the round
        self.ge = [ctx.series(f"pcc_ge{i}") for i in range(W)]        # effective gradient
        self.se = [ctx.series(f"pcc_se{i}") for i in range(W)]        # effective deviation (steps)
        self.lm = [ctx.series(f"pcc_lm{i}") for i in range(W)]        # lost bytes per step of the MI
        self.mark_adm = [ctx.series(f"pcc_adm{i}", axis="S") for i in range(W)]
        self.mark_L = [ctx.series(f"pcc_L{i}", axis="L") for i in range(W)]
        # the signals of the MI ending at t
        self.g_raw, self.s_raw, self.lm_now = ctx.series("pcc_g"), ctx.series("pcc_s"), ctx.series("pcc_lm_now")
        self.tol = ctx.series("pcc_tol", "bool") if var.regression_tolerance else None
        self.trend_g = ctx.series("pcc_tg", "bool") if var.trending == "free" else None
        self.trend_s = ctx.series("pcc_ts", "bool") if var.trending == "free" else None
        self.mi_grad, self.mi_dev = ctx.series("mi_grad"), ctx.series("mi_dev")
        self.fate_var = ctx.series("pcc_fate", "bool")
        self.defer = ctx.series("pcc_defer", "bool")   # the fate was known at the last MI boundary
        self.fired = ctx.series("pcc_fired", "bool")   # an MI timer fired in this MI, to act at its end
        self.votes = [ctx.series(f"pcc_vote{k}", "bool") for k in range(K)]
        self.agree = ctx.series("pcc_agree", "bool") if var.double_check else None
        self.power, self.inverse = ctx.series("pcc_xt"), ctx.series("pcc_xt1")       # ~ x^t, x^(t-1)
        self.zprod = [ctx.series(f"pcc_xh{k}") for k in range(K)]                # ~ x * H_k
        self.yquot = [ctx.series(f"pcc_lx{k}") for k in range(K)]                # ~ Lambda_k / x
        self.q_move = ctx.series("pcc_q")                                       # unclipped rate change
        self.clip = ctx.series("pcc_clip", "bool")

    def state(self) -> dict[str, list[Any]]:
        state = {"base": self.base, "phase": self.phase, "pos": self.pos, "mlen": self.mlen, "order": self.order,
                 "rtt_lo": self.rtt_lo, "rtt_hi": self.rtt_hi, "qdelay": self.qdelay, "event": self.event,
                 "dir": self.dirn, "tau": self.tau, "omega_k": self.kk, "gamma_used": self.gamma_used,
                 "mi_grad": self.mi_grad, "mi_dev": self.mi_dev}
        for k, (dn, gn) in enumerate(pair_names(self.K)):
            state[dn], state[gn] = self.du[k], self.gam[k]
        if self.rerun is not None:
            state["rerun"] = self.rerun
        return state

    # ---------------------------------------------------------------- terms
    def probe_rate(self, i: int, t: int) -> Any:
        """The rate of probe MI i: r(1+eps) or r(1-eps) by its pair's order."""
        k, first = i // 2, i % 2 == 0
        high = self.obit[k][t] if first else z3.Not(self.obit[k][t])
        return z3.If(high, (1 + self.eps) * self.base[t], (1 - self.eps) * self.base[t])

    def kept(self, t: int) -> list[Any]:
        """The round's state (rate, orders, counters, direction, rerun) unchanged, no event."""
        base, obit, tau, kk, dirn = self.base, self.obit, self.tau, self.kk, self.dirn
        keep = [base[t] == base[t - 1], *(obit[k][t] == obit[k][t - 1] for k in range(self.K)), tau[t] == tau[t - 1],
                kk[t] == kk[t - 1], dirn[t] == dirn[t - 1], self.event[t] == 0]
        if self.rerun is not None:
            assert self.gamma_first is not None  # declared with rerun (declares_rerun)
            keep += [self.rerun[t] == self.rerun[t - 1], self.gamma_first[t] == self.gamma_first[t - 1]]
        return keep

    def decides(self, t: int) -> Any:
        """A decision at t: a rate decision (event 1) or a double-check rerun (event 2)."""
        return z3.Or(self.event[t] == 1, self.event[t] == 2)

    def rate_decision(self, t: int) -> Any:
        return z3.And(self.decides(t), self.event[t] == 1)

    def new_round(self, t: int) -> list[Any]:
        return [self.phase[t] == 0, self.pos[t] == 0]

    def no_rerun(self, t: int) -> list[Any]:
        return [self.rerun[t] == 0] if self.rerun is not None else []

    # ---------------------------------------------------------------- every step
    def domains(self, t: int) -> None:
        """Domains: positive rate, phases 0..2*pairs (the last: waiting), MI lengths in
        ``[mi_lo, mi_max]`` (no top when longer MIs are covered coarsely), counters up to their
        caps, positions within the MI."""
        ctx, phase, pos, mlen, W = self.ctx, self.phase, self.pos, self.mlen, self.W
        ctx.add(self.base[t] > 0, phase[t] >= 0, phase[t] <= W, mlen[t] >= self.M_lo,
                mlen[t] <= self.M_hi if self.bounded else True,
                z3.Or(self.dirn[t] == 1, self.dirn[t] == -1), self.tau[t] >= 0, self.tau[t] <= self.tau_cap,
                self.kk[t] >= 0, self.kk[t] <= self.k_cap, self.event[t] >= 0, self.event[t] <= 3,
                pos[t] >= 0, pos[t] <= mlen[t] - 1,
                *(self.se[i][t] >= 0 for i in range(W)), *(self.lm[i][t] >= 0 for i in range(W)))
        if self.rerun is not None:
            ctx.add(z3.Or(self.rerun[t] == 0, self.rerun[t] == 1))

    def probe_rates(self, t: int) -> None:
        """Vivace 4.1: each probe MI sends at r(1+eps) or r(1-eps) by its pair's solver-chosen
        order (the papers' random order); waiting for the round's fate, by ``wait`` (the papers
        do not say): r or the last probe's rate (``either``, the readings' union), one of them,
        or anything between the probe rates."""
        ctx, p, eps, base, rate, W = self.ctx, self.p, self.eps, self.base, self.ctx.rate, self.W
        phase = self.phase
        for i in range(W):
            ctx.add(z3.Implies(phase[t] == i, ctx.rate[t] == self.probe_rate(i, t)))
        last_probe = self.probe_rate(W - 1, t)
        waiting = {"base": rate[t] == base[t], "last": rate[t] == last_probe,
                   "either": z3.Or(rate[t] == base[t], rate[t] == last_probe),
                   "band": z3.And(rate[t] >= (1 - eps) * base[t], rate[t] <= (1 + eps) * base[t])}
        ctx.add(z3.Implies(phase[t] == W, waiting[p["wait"]]))

    def pacing(self, t: int) -> None:
        """PCC has no window: from step R the model's window is the bytes in flight after the
        step's sends, so pacing binds (``ccas/pcc/shared.py``, Sending); before R the flow was
        PCC too, so it sends at its rate, evenly."""
        ctx, R = self.ctx, self.R
        if t >= R:
            ctx.add(ctx.cwnd[t] == ctx.A[t - 1] + ctx.rate[t] - ctx.S[t - R] - ctx.Ld[t])
        elif t >= 1:
            ctx.add(ctx.A[t] - ctx.A[t - 1] == ctx.rate[t])

    def rtt_sample_band(self, t: int) -> None:
        """The step's per-packet RTT samples (less R) lie in the path's band (:mod:`ccac.ccas.pcc.rtt`,
        1): between the queue's delays at the step's ends, plus the jitter D. On an even queue
        the queue's direction in the step is the pace's (at step 0 only that is known)."""
        ctx, C, D, v, queue = self.ctx, self.C, self.ctx.D, self.v, self.queue
        rtt_lo, rtt_hi, qdelay = self.rtt_lo, self.rtt_hi, self.qdelay
        ctx.add(rtt_lo[t] <= rtt_hi[t], rtt_lo[t] >= 0)
        if self.even:
            ctx.add(z3.Implies(ctx.rate[t] <= C, rtt_lo[t] >= qdelay[t]),
                    z3.Implies(ctx.rate[t] >= C, rtt_hi[t] <= qdelay[t] + D))
        if t > 0:
            lo, hi = band_terms(C, D, self.even, queue[t - 1], queue[t], v.admitted(t) - v.admitted(t - 1))
            ctx.add(rtt_lo[t] >= lo, rtt_hi[t] <= hi)

    def rate_powers(self, t: int) -> None:
        """The enclosures of x^t and x^(t-1) at the base rate (``ccas/pcc/shared.py``: chords and
        tangents on the rate grid, rounded outward), valid at every step."""
        self.ctx.add(*self.grid.power(t, self.x_mbps[t], self.power[t], self.t_exp))
        self.ctx.add(*self.grid.power(t, self.x_mbps[t], self.inverse[t], self.t_exp - 1))

    def mi_registers(self, t: int) -> None:
        """The current MI's registers: its lost bytes, each step's sample band by position, the
        bands' hull and (clean paths) the range of the pace's excess over C. At step 0 what came
        before is history, except that step 0 is the MI's step at its position (on a path that
        never loses bytes, none was lost)."""
        ctx, C, pos, M_hi, clean = self.ctx, self.C, self.pos, self.M_hi, self.clean
        rtt_lo, rtt_hi, hull_lo, hull_hi, rise_lo, rise_hi = (self.rtt_lo, self.rtt_hi, self.hull_lo, self.hull_hi,
                                                              self.rise_lo, self.rise_hi)
        band_lo, band_hi, cur_lost = self.band_lo, self.band_hi, self.cur_lost
        in_probe = self.phase[t] < self.W
        rise = (ctx.rate[t] if t == 0 else ctx.A[t] - ctx.A[t - 1]) / C - 1  # the pace, as C's excess
        if t == 0:
            if self.v.buffer is None and self.v.net.path(ctx.n).eta == 0:
                ctx.add(cur_lost[t] == 0, *(self.lm[i][t] == 0 for i in range(self.W)))
            ctx.add(cur_lost[t] >= 0, hull_lo[t] <= rtt_lo[t], hull_hi[t] >= rtt_hi[t],
                    *(z3.Implies(z3.And(in_probe, pos[t] == j),
                                 z3.And(band_lo[j][t] == rtt_lo[t], band_hi[j][t] == rtt_hi[t]))
                      for j in range(M_hi)),
                    z3.Implies(pos[t] == 0, z3.And(hull_lo[t] == rtt_lo[t], hull_hi[t] == rtt_hi[t])))
            if clean:
                assert rise_lo is not None and rise_hi is not None  # declared on clean paths (declare_registers)
                ctx.add(rise_lo[t] <= rise, rise_hi[t] >= rise,
                        z3.Implies(pos[t] == 0, z3.And(rise_lo[t] == rise, rise_hi[t] == rise)))
            return
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
            assert rise_lo is not None and rise_hi is not None  # declared on clean paths (declare_registers)
            ctx.add(rise_lo[t] == z3.If(first, rise, _min(rise_lo[t - 1], rise)),
                    rise_hi[t] == z3.If(first, rise, _max(rise_hi[t - 1], rise)))

    def mi_ends(self, t: int) -> Any:
        return z3.And(self.phase[t] < self.W, self.pos[t] == self.mlen[t] - 1)

    def per_length_signals(self, t: int, M: int) -> list[Any]:
        """An MI of M steps: its loss per step; lossless, the lattice bounds on its gradient
        ((B): every sample kept, :mod:`ccac.ccas.pcc.rtt`); Proteus' regression tolerance only
        where the residual can exceed the gradient (``|g| M < sigma``)."""
        g_raw, s_raw, lm_now, cur_lost, tol = self.g_raw, self.s_raw, self.lm_now, self.cur_lost, self.tol
        is_M, lossless = self.mlen[t] == M, cur_lost[t] == 0
        signal = [z3.Implies(is_M, lm_now[t] * M == cur_lost[t])]
        if self.lattice:
            lows = [self.band_lo[j][t] for j in range(M)]
            highs = [self.band_hi[j][t] for j in range(M)]
            signal.append(z3.Implies(z3.And(is_M, lossless), z3.And(
                *(g_raw[t] <= u for u in lattice_upper_terms(M, lows, highs)),
                *(g_raw[t] >= d for d in lattice_lower_terms(M, lows, highs)))))
        if tol is not None:
            signal.append(z3.Implies(z3.And(is_M, tol[t]), _abs(g_raw[t]) * M < s_raw[t]))
        return signal

    def long_mi_signals(self, t: int) -> list[Any]:
        """MIs longer than ``mi_max`` (only with an unbounded path): the coarse lattice bound on
        the hull of their bands (:func:`long_lattice`); their loss per step and the tolerance
        exactly while the MI fits in the trace, a bound beyond (longer ones began before it:
        their loss is history)."""
        g_raw, s_raw, lm_now, cur_lost, tol = self.g_raw, self.s_raw, self.lm_now, self.cur_lost, self.tol
        mlen = self.mlen
        M_hi, hull_lo, hull_hi = self.M_hi, self.hull_lo, self.hull_hi
        lossless = cur_lost[t] == 0
        signal = []
        longer = mlen[t] > M_hi
        spread = long_lattice(M_hi) * (hull_hi[t] - hull_lo[t])
        beyond = max(M_hi, self.T) + 1
        signal.append(z3.Implies(longer, z3.And(
            *([z3.Implies(lossless, z3.And(g_raw[t] <= spread, g_raw[t] >= -spread))] if self.lattice else []),
            z3.Implies(mlen[t] >= beyond, z3.And(lm_now[t] >= 0, lm_now[t] * beyond <= cur_lost[t])),
            *([z3.Implies(z3.And(mlen[t] >= beyond, tol[t]), _abs(g_raw[t]) * beyond < s_raw[t])]
              if tol is not None else []))))
        for M in range(M_hi + 1, beyond):
            signal.append(z3.Implies(mlen[t] == M, lm_now[t] * M == cur_lost[t]))
            if tol is not None:
                signal.append(z3.Implies(z3.And(mlen[t] == M, tol[t]), _abs(g_raw[t]) * M < s_raw[t]))
        return signal

    def mi_signals(self, t: int) -> None:
        """The signals of the MI ending at t (:mod:`ccac.ccas.pcc.rtt`, 2 and 3): (A) FIFO, the
        gradient is at least -1; the deviation within Popoviciu's bound (half the samples'
        span); (D) samples on one value have a flat fit; the per-length bounds; on a clean path
        (C) the queue's slope range; the trending tolerance nested (the deviation is zeroed only
        with the gradient)."""
        g_raw, s_raw, hull_lo, hull_hi = self.g_raw, self.s_raw, self.hull_lo, self.hull_hi
        signal = [g_raw[t] >= -1, s_raw[t] >= 0, s_raw[t] <= (hull_hi[t] - hull_lo[t]) / 2]
        signal.append(z3.Implies(hull_hi[t] == hull_lo[t], g_raw[t] == 0))
        for M in range(self.M_lo, self.M_hi + 1):
            signal += self.per_length_signals(t, M)
        if not self.bounded:
            signal += self.long_mi_signals(t)
        if self.clean:
            assert self.rise_lo is not None and self.rise_hi is not None  # declared on clean paths
            signal += [g_raw[t] <= _max(self.rise_hi[t], 0), g_raw[t] >= _min(self.rise_lo[t], 0)]
        if self.trend_g is not None:
            assert self.trend_s is not None  # declared with trend_g (trending "free")
            signal.append(z3.Implies(self.trend_s[t], self.trend_g[t]))
        self.ctx.add(z3.Implies(self.mi_ends(t), z3.And(*signal)))

    def effective_signals(self, t: int) -> tuple[Any, Any]:
        """The gradient and deviation the utility uses: zeroed by a tolerance, Vivace's filter
        (|g| below ``flt`` counts as 0), Proteus-P's max(0, g); recorded where an MI ends."""
        var, tol, trend_g, trend_s = self.var, self.tol, self.trend_g, self.trend_s
        g_raw, s_raw = self.g_raw, self.s_raw
        zero_g = any_of(*([tol[t]] if tol is not None else []), *([trend_g[t]] if trend_g is not None else []))
        zero_s = any_of(*([tol[t]] if tol is not None else []), *([trend_s[t]] if trend_s is not None else []))
        g_eff: Any = z3.If(zero_g, 0, g_raw[t]) if (tol is not None or trend_g is not None) else g_raw[t]
        if var.flt > 0:
            g_eff = z3.If(_abs(g_eff) >= var.flt, g_eff, 0)
        if var.positive_only:
            g_eff = _max(g_eff, 0)
        s_eff: Any = z3.If(zero_s, 0, s_raw[t]) if (tol is not None or trend_s is not None) else s_raw[t]
        ends = self.mi_ends(t)
        self.ctx.add(self.mi_grad[t] == z3.If(ends, g_eff, 0), self.mi_dev[t] == z3.If(ends, s_eff, 0))
        return g_eff, s_eff

    def round_registers(self, t: int, g_eff: Any, s_eff: Any) -> None:
        """Per MI of the round: its effective gradient and deviation, loss per step, and where it
        ended (for the round's fate), set when it ends and held (history at step 0)."""
        ctx, phase, pos, mlen, adm_f = self.ctx, self.phase, self.pos, self.mlen, self.adm_f
        ge, se, lm, mark_adm, mark_L = self.ge, self.se, self.lm, self.mark_adm, self.mark_L
        for i in range(self.W):
            ends_i = z3.And(phase[t] == i, pos[t] == mlen[t] - 1)
            if t == 0:
                ctx.add(z3.Implies(ends_i, z3.And(mark_adm[i][t] == adm_f[t], mark_L[i][t] == ctx.L[t])),
                        mark_adm[i][t] <= adm_f[t], mark_L[i][t] <= ctx.L[t])
                continue
            ctx.add(ge[i][t] == z3.If(ends_i, g_eff, ge[i][t - 1]),
                    se[i][t] == z3.If(ends_i, s_eff, se[i][t - 1]),
                    lm[i][t] == z3.If(ends_i, self.lm_now[t], lm[i][t - 1]),
                    mark_adm[i][t] == z3.If(ends_i, adm_f[t], mark_adm[i][t - 1]),
                    mark_L[i][t] == z3.If(ends_i, ctx.L[t], mark_L[i][t - 1]))

    def decision_history(self, t: int) -> None:
        """Step 0 is history: a decision may have happened just now (a window can start at one)."""
        event, du, gam, K = self.event, self.du, self.gam, self.K
        self.ctx.add(z3.Implies(z3.And(event[t] != 1, event[t] != 2),
                                z3.And(*(du[k][t] == 0 for k in range(K)), *(gam[k][t] == 0 for k in range(K)))),
                     z3.Implies(event[t] != 1, self.gamma_used[t] == 0))

    # ---------------------------------------------------------------- transitions from t-1 to t
    def round_fate(self, t: int) -> None:
        """The fate of the round (Proteus 3: an MI's utility exists "when all packets sent in
        that MI are acknowledged or lost"): every byte of its last MI ACKed (served by t-R) or
        detected lost, exact on the curves; before step R it reads ACKs from before the trace
        (free: history)."""
        ctx, R, W = self.ctx, self.R, self.W
        if t >= R:
            ctx.add(self.fate_var[t] == z3.And(ctx.S[t - R] >= self.mark_adm[W - 1][t - 1],
                                               ctx.Ld[t] >= self.mark_L[W - 1][t - 1]))

    def mi_timeout(self, t: int) -> None:
        """Vivace 4.3's MI timeout: the rate may halve (the base rate or the rate being sent)
        at any step at which some MI began ``mi_timeout`` RTTs ago and the fate of a packet sent
        in it is unknown (any MI: fates are learned in sending order, so it suffices that some
        step's bytes are unresolved and that step's MI began that long ago; bytes from before
        the trace belong to an MI of unknown start), or at the end of the MI it fired in (a
        reading). Never forced: a longer RTT estimate fires later."""
        ctx, R, TO, pos, base, event, fired = self.ctx, self.R, self.TO, self.pos, self.base, self.event, self.fired
        adm_f, ps, pm = self.adm_f, pos[t - 1], self.mlen[t - 1]
        unresolved = [z3.Or(ctx.S[t - R] < adm_f[u], ctx.Ld[t] < ctx.L[u]) if t >= R else True
                      for u in range(t)]
        expired = [z3.And(unresolved[u], u - pos[u] <= t - TO) for u in range(t)] + [unresolved[0]]
        halved = z3.Or(base[t] * 2 == base[t - 1], base[t] * 2 == ctx.rate[t - 1])
        fires_now = z3.Or(*expired)
        ctx.add(z3.Implies(event[t] == 3, z3.And(z3.Or(fires_now, z3.And(fired[t - 1], ps == pm - 1)), halved,
                                                 *self.new_round(t), *self.no_rerun(t))),
                z3.Implies(fired[t], z3.And(event[t] == 0, z3.Or(fires_now, z3.And(fired[t - 1], ps < pm - 1)))))

    def decision_timing(self, t: int) -> None:
        """The round's MIs in order, and when its decision comes. A decision needs the round's
        fate (:meth:`round_fate`) and is taken at once or at an MI boundary (the readings differ on whether a sender
        waits in MIs), at the latest at the second boundary after the fate is known: a sender
        that chooses a step's rate at its start has not yet seen the step's ACKs, which the
        fate test reads, so it may start one more MI. Otherwise the MI goes on, the next probe
        starts, or the sender waits in MIs at the waiting rate."""
        ctx, W, phase, pos, mlen = self.ctx, self.W, self.phase, self.pos, self.mlen
        event, defer = self.event, self.defer
        pp, ps, pm = phase[t - 1], pos[t - 1], mlen[t - 1]
        keep = self.kept(t)
        in_mi = z3.And(ps < pm - 1)                          # the MI (probe or wait) goes on ...
        next_probe = z3.And(pp < W - 1, ps == pm - 1)         # ... or the next probe MI begins
        boundary = z3.And(pp >= W - 1, ps == pm - 1)          # the probes are done and an MI just ended
        ready = z3.Or(boundary, pp == W)
        fate = self.fate_var[t]
        decide = self.decides(t)
        carry_on = event[t] == 0
        ctx.add(z3.Implies(decide, z3.And(ready, fate)),
                z3.Implies(z3.And(boundary, fate, defer[t - 1]), decide),
                z3.Implies(z3.And(boundary, carry_on), defer[t] == fate),
                z3.Implies(z3.And(in_mi, pp == W, carry_on), defer[t] == defer[t - 1]),
                z3.Implies(z3.Or(phase[t] < W, event[t] != 0), z3.Not(defer[t])),
                z3.Implies(z3.And(in_mi, carry_on), z3.And(phase[t] == pp, pos[t] == ps + 1, mlen[t] == pm, *keep)),
                z3.Implies(z3.And(next_probe, carry_on), z3.And(phase[t] == pp + 1, pos[t] == 0, *keep)),
                z3.Implies(z3.And(boundary, carry_on), z3.And(phase[t] == W, pos[t] == 0, *keep)))
        ctx.add(z3.Implies(z3.Not(decide), z3.And(*(self.du[k][t] == 0 for k in range(self.K)),
                                                  *(self.gam[k][t] == 0 for k in range(self.K)))))
        ctx.add(z3.Implies(z3.Not(z3.And(decide, event[t] == 1)), self.gamma_used[t] == 0))

    def pair_latency_term(self, t: int, hi_i: int, lo_i: int) -> Any:
        """H of a pair (its faster probe MI hi_i, slower lo_i): the latency penalty per unit
        rate, ``b`` times the rate-weighted gradient difference, plus Proteus-S's deviation
        penalty (Proteus-H: only at probe rates at or above its threshold)."""
        var, eps, ge, se, r_prev = self.var, self.eps, self.ge, self.se, self.base[t - 1]
        d_dev = var.dev_coeff * self.p.get("step_seconds", 0)
        h = var.b * ((1 + eps) * ge[hi_i][t - 1] - (1 - eps) * ge[lo_i][t - 1])
        if d_dev:
            def dev(slot: int, factor: Fraction) -> Any:
                if var.threshold is None:
                    return factor * se[slot][t - 1]
                return z3.If(factor * r_prev >= var.threshold, factor * se[slot][t - 1], 0)
            h = h + d_dev * (dev(hi_i, 1 + eps) - dev(lo_i, 1 - eps))
        return h

    def pair_gradients(self, t: int) -> None:
        """Vivace 4.2, per pair: ``du = u+ - u-`` and ``gamma = du / (2 eps x)``, both enclosed
        (x^t on the rate grid, x*H and loss/x per bin with a sign split, ``ccas/pcc/shared.py``)
        and tied by their sign; a pair votes with its gradient's sign."""
        ctx, grid, lm, obit, K, eps, cK = self.ctx, self.grid, self.lm, self.obit, self.K, self.eps, self.cK
        du, gam, zprod, yquot, votes = self.du, self.gam, self.zprod, self.yquot, self.votes
        kap_lo, kap_hi, power, inverse = self.kap_lo, self.kap_hi, self.power, self.inverse
        decide = self.decides(t)
        for k in range(K):
            a_, b_ = 2 * k, 2 * k + 1
            first_high = obit[k][t - 1]
            H = z3.If(first_high, self.pair_latency_term(t, a_, b_), self.pair_latency_term(t, b_, a_))
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

    def majority(self, t: int) -> None:
        """Combining the pairs (Proteus 5): one pair gives the direction by its vote; several,
        the majority direction, and the step uses the mean of the majority's gradients or of
        all (the readings), so any value between the pairs' gradients, with the majority's
        sign (:meth:`rate_step`)."""
        ctx, K, votes, gam, gamma_used = self.ctx, self.K, self.votes, self.gam, self.gamma_used
        up, rate_decision = self.dirn[t] == 1, self.rate_decision(t)
        if K == 1:
            ctx.add(z3.Implies(rate_decision, votes[0][t] == up))
            return
        count = z3.Sum(*(z3.If(votes[k][t], 1, 0) for k in range(K)))
        ctx.add(z3.Implies(rate_decision, up == (count * 2 > K)))
        ctx.add(z3.Implies(rate_decision, z3.And(
            z3.Or(*(gamma_used[t] >= gam[k][t] for k in range(K))),
            z3.Or(*(gamma_used[t] <= gam[k][t] for k in range(K))))))

    def double_check(self, t: int) -> None:
        """Vivace 4.3's double check: a pair whose faster probe lost a smaller fraction
        (l+/a+ < l-/a-) is abnormal and re-run once (event 2, the state kept); the second run's
        gradient is averaged with the first when their signs agree, else the first is thrown
        out. Without it every decision is a rate decision."""
        ctx, eps, lm, obit, event = self.ctx, self.eps, self.lm, self.obit, self.event
        gam, gamma_used = self.gam, self.gamma_used
        decide, rate_decision, rerun, gamma_first = self.decides(t), self.rate_decision(t), self.rerun, self.gamma_first
        if not self.var.double_check:
            ctx.add(z3.Implies(decide, event[t] == 1))
            if self.K == 1:
                ctx.add(z3.Implies(rate_decision, gamma_used[t] == gam[0][t]))
            return
        # double_check is Vivace's, whose state declares rerun (pcc_state(1, True)): rerun and gamma_first
        # exist, and agree is declared whenever double_check is on
        assert rerun is not None and gamma_first is not None and self.agree is not None
        abnormal = z3.If(obit[0][t - 1], lm[0][t - 1] * (1 - eps) < lm[1][t - 1] * (1 + eps),
                         lm[1][t - 1] * (1 - eps) < lm[0][t - 1] * (1 + eps))
        first_run = rerun[t - 1] == 0
        ctx.add(z3.Implies(decide, z3.If(z3.And(first_run, abnormal), event[t] == 2, event[t] == 1)))
        ctx.add(z3.Implies(z3.And(decide, event[t] == 2), z3.And(
            *self.new_round(t), rerun[t] == 1, gamma_first[t] == gam[0][t], self.base[t] == self.base[t - 1],
            self.tau[t] == self.tau[t - 1], self.kk[t] == self.kk[t - 1], self.dirn[t] == self.dirn[t - 1])))
        g1 = gamma_first[t - 1]
        same = z3.Or(z3.And(gam[0][t] >= 0, g1 >= 0), z3.And(gam[0][t] <= 0, g1 <= 0))
        differ = z3.Or(z3.And(gam[0][t] >= 0, g1 <= 0), z3.And(gam[0][t] <= 0, g1 >= 0))
        ctx.add(z3.Implies(rate_decision, z3.And(
            rerun[t] == 0, z3.Implies(first_run, gamma_used[t] == gam[0][t]),
            z3.Implies(z3.Not(first_run), z3.And(
                z3.Implies(self.agree[t], z3.And(same, gamma_used[t] == (gam[0][t] + g1) / 2)),
                z3.Implies(z3.Not(self.agree[t]), z3.And(differ, gamma_used[t] == gam[0][t])))))))
        ctx.add(z3.Implies(z3.Not(decide), z3.Implies(event[t] != 3, z3.And(
            rerun[t] == rerun[t - 1], gamma_first[t] == gamma_first[t - 1]))))

    def rate_step(self, t: int) -> None:
        """At a rate decision the direction has the applied gradient's sign, a new round starts,
        and the rate moves by Vivace 4.2's step (:meth:`step_rules`), or, a zero gradient
        pointing nowhere, by one reading nothing moves, counters included."""
        base, tau, kk, dirn, gamma_used = self.base, self.tau, self.kk, self.dirn, self.gamma_used
        up, rate_decision = dirn[t] == 1, self.rate_decision(t)
        combined = self.gam[0][t] if self.K == 1 and not self.var.double_check else gamma_used[t]
        self.ctx.add(z3.Implies(rate_decision, z3.And(
            z3.Implies(up, combined >= 0), z3.Implies(z3.Not(up), combined <= 0))))
        step = self.step_rules(t)
        idle = z3.And(gamma_used[t] == 0, base[t] == base[t - 1], tau[t] == tau[t - 1], kk[t] == kk[t - 1],
                      dirn[t] == dirn[t - 1])
        self.ctx.add(z3.Implies(rate_decision, z3.And(*self.new_round(t), z3.Or(z3.And(*step), idle),
                                                      *self.no_rerun(t))))

    def step_rules(self, t: int) -> list[Any]:
        """Vivace 4.2's step at a rate decision: the confidence amplifier, the dynamic change
        boundary and the new base rate."""
        return (self.confidence_amplifier(t) + self.change_boundary(t)
                + self.boundary_recalibration(t))

    def confidence_amplifier(self, t: int) -> list[Any]:
        """The unclipped move ``q = m(tau) theta0 gamma``: tau counts consecutive same-direction
        decisions (up to ``tau_cap``), and m(tau), m(tau + 1) and table 1's m(0) = 0 are all
        admitted (the paper's readings); at the cap any m at least m(tau_cap), sound for any
        longer history."""
        p, tau, q_move, gamma_used = self.p, self.tau, self.q_move, self.gamma_used
        dirn, tau_cap = self.dirn, self.tau_cap
        theta0, scale = p["theta0"], self.scale
        same_dir = dirn[t] == dirn[t - 1]
        step = [tau[t] == z3.If(same_dir, z3.If(tau[t - 1] + 1 >= tau_cap, tau_cap, tau[t - 1] + 1), 0)]
        for j in range(tau_cap + 1):
            m = amplifier(j) * theta0 / scale
            if j < tau_cap:
                ms = {amplifier(j), amplifier(j + 1)} | ({Fraction(0)} if j == 0 else set())
                step.append(z3.Implies(tau[t] == j, z3.Or(*(q_move[t] == m_ * theta0 / scale * gamma_used[t]
                                                            for m_ in sorted(ms)))))
            else:
                step.append(z3.Implies(tau[t] == j, z3.And(
                    z3.Implies(gamma_used[t] >= 0, q_move[t] >= m * gamma_used[t]),
                    z3.Implies(gamma_used[t] <= 0, q_move[t] <= m * gamma_used[t]))))
        return step

    def change_boundary(self, t: int) -> list[Any]:
        """The dynamic change boundary: a move beyond ``omega r`` (omega = omega0 + k delta,
        k counting the same-direction clipped moves) is clipped to it, with omega before or
        after k is raised (the readings), and k raised; at ``k_cap`` any omega beyond (a
        decrease may then reach anything in (0, r]: the paper has no floor); otherwise the
        rate moves by q."""
        p, base, kk, q_move, clip = self.p, self.base, self.kk, self.q_move, self.clip
        dirn, k_cap = self.dirn, self.k_cap
        omega0, delta = p["omega0"], p["delta"]
        r, up, same_dir = base[t - 1], dirn[t] == 1, dirn[t] == dirn[t - 1]
        step = []
        k0 = z3.If(same_dir, kk[t - 1], 0)
        for j in range(k_cap + 1):
            om = omega0 + j * delta
            big = z3.Or(q_move[t] > om * r, q_move[t] < -om * r)
            if j < k_cap:
                clipped_rule = [big, kk[t] == j + 1 if j + 1 <= k_cap else kk[t] == k_cap]
                om2 = om + delta
                up_base = z3.Or(base[t] == (1 + om) * r, base[t] == (1 + om2) * r)
                down_base = z3.Or(*(base[t] == (1 - w) * r for w in (om, om2) if w < 1),
                                  *([z3.And(base[t] > 0, base[t] <= r)] if om2 >= 1 else []))
            else:
                clipped_rule = [big, kk[t] == k_cap]
                up_base = base[t] >= (1 + om) * r
                down_base = z3.And(base[t] > 0, base[t] <= r)
            unclipped = [z3.Not(big) if j < k_cap else True, base[t] == r + q_move[t]]
            step.append(z3.Implies(k0 == j, z3.If(
                clip[t],
                z3.And(*clipped_rule, z3.Implies(up, up_base), z3.Implies(z3.Not(up), down_base)),
                z3.And(*unclipped))))
        return step

    def boundary_recalibration(self, t: int) -> list[Any]:
        """After an unclipped move k is recalibrated: the smallest k with |dr| <= r (omega0 + k
        delta)."""
        p, kk, q_move, clip, r = self.p, self.kk, self.q_move, self.clip, self.base[t - 1]
        omega0, delta = p["omega0"], p["delta"]

        def fits(level: int) -> Any:
            om = omega0 + level * delta
            return z3.And(q_move[t] <= om * r, q_move[t] >= -om * r)
        step = []
        for j in range(self.k_cap + 1):
            if j == 0:
                step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == 0), fits(0)))
            elif j < self.k_cap:
                step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == j), z3.And(fits(j), z3.Not(fits(j - 1)))))
            else:
                step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == j), z3.Not(fits(j - 1))))
        return step
