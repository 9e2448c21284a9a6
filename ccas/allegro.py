"""``allegro``: PCC Allegro (Dong et al., NSDI 2015, "PCC: Re-architecting Congestion Control").

The paper calls it PCC; the name "Allegro" comes from the Vivace paper. Section numbers below
are those of the short paper text (``../shared/seeds/pcc-allegro.md``). Its readings are the
named ``choose`` points of the paper-faithful sender ``senders/allegro_paper.py``, against which
``tests/test_allegro.py`` checks this encoding (``test_encoding_admits_every_run_of_the_paper_sender``).

The paper's rules, and how the encoding treats each
---------------------------------------------------
Marks: *exact* (the rule as written); *enclosure* (over-approximated: every run the rule makes is
admitted, and some it does not make); *RESTRICTION* (the encoding excludes runs the paper's
algorithm makes: an unsat answer then holds only for senders whose reading is the covered one;
sat answers stay real runs of the covered readings).

1. Rate-based sending, one rate per MI [3] -- exact: paced, always backlogged (``ccas/pcc/shared.py``),
   ``cwnd`` is the bytes in flight plus the step's rate.
2. Utility [2.2, 4.1: the "safe" one]: ``u = T Sig(L - loss_cap) - x L``,
   ``Sig(y) = 1/(1 + e^(alpha y))`` -- enclosure: the sigmoid is bounded in loss-fraction
   bands (below); exact (to 1e-12) without loss. Loss counted in bytes (the paper's per-packet
   probability with equal packets).
3. Per-MI metrics [3; Vivace 2: "selective ACKs for packets sent in a MI"] -- exact for the
   send-time reading (``mi_feedback`` = 0: the fates of the bytes the MI sent; its result exists
   once every one of them is ACKed or detected lost). RESTRICTION: the receive-time reading
   (``mi_feedback`` = 1: the events observed during the MI, known at its end, no wait) is not
   encoded (its utility is a ratio of two measured sums and its decisions need no fate). The
   free MI boundaries absorb many such runs, not all: on the lossy path (T 12, R 1, buffer 1,
   eta 0.1) a starting state that doubles on receive-time utilities where no split of the
   bytes into send-time MIs allows it is excluded. An unsat answer holds for send-time senders
   only.
4. MI length [3]: "max of (a) the time to send 10 data packets and (b) 1.7 RTTs with 0.5 RTT
   uniform-random variance" -- enclosure within ``[floor(mi_lo R), ceil(mi_hi R)]`` steps, a
   solver choice per MI (covers every ``mi_spread``/``mi_draw`` when the RTT is R).
   RESTRICTION at the defaults (mi_lo 1.7, mi_hi 2.2): MIs outside that range are excluded: the
   spread reading 1.7 +- 0.5 at R >= 3 (ceil(1.2 R) < floor(1.7 R)); an RTT estimate
   (``mi_rtt``: latest, smoothed or minimum sample) above R, which queueing and jitter give;
   the 10-packet floor (``floor_rate``) at rates below 10 packets per ~2 RTTs. Parameter-covered:
   lower ``mi_lo`` / raise ``mi_hi`` to the path's RTT range (the paper-sender test uses
   mi_hi = 8 at R = 1, 5 at R = 2); with the defaults an unsat answer holds for senders whose
   MIs stay in the range.
5. Starting state [3]: double the rate every MI; exit when the utility decreases (strictly) to
   the previous rate, i.e. half the rate, into decision making with eps_min -- exact when the
   sender waits for each starting MI's result before the next doubling (``pipeline`` = 1, where
   both ``start_exit`` readings give r/2). RESTRICTION: pipelined doubling (``pipeline`` = 0:
   the next MI starts while the previous result is pending, the exit jumps back over MIs
   already sent) is not covered; an unsat answer about runs through the starting state holds
   for waiting senders only. The initial rate 2 MSS/RTT: history (any state at step 0).
6. Decision making, trials [3]: two pairs of r(1+eps), r(1-eps) "in random order" -- exact:
   each pair's order a solver choice (``trial_order``). Back to back (``pipeline`` = 0) or each
   trial after the previous one's result (``pipeline`` = 1: a gap, ``next_mi``, until its fate
   is known) -- enclosure: both readings, mixed freely within a run.
7. Waiting for results [not in the paper] -- enclosure: while waiting in decision making the
   rate is the base r or the rate of the trial that just ended (``wait_rate`` 0 and 1); in the
   other states the rate of the last MI. An MI timeout (Vivace 4.3, not Allegro's) may halve
   the rate after ``mi_timeout`` RTTs without a result: only adds runs.
8. Decision [3]: "If the higher rate consistently has higher utility (U_i^+ > U_i^- for all
   i, j)": up to r(1+eps); the lower: r(1-eps); else stay -- exact for both readings of the
   stray "j" (``conclusive``): within each pair (U_i^+ > U_i^-) or across pairs (U_i^+ > U_j^-),
   a solver choice per decision (``allegro_across``); strict comparisons (ties stay). (The two
   differ only when the four utilities interleave, which the random conformance runs did not
   produce: the mutant dropping the across alternative survives them.)
9. Inconclusive round [3]: eps <- min(eps + eps_min, eps_max), same r -- exact.
10. eps on (re-)entry [3]: eps_min the first time; after a rate-adjusting stop a solver choice
    in the eps levels (covers ``eps_reset`` 0 and 1) -- enclosure.
11. Rate adjusting [3, eq. 1]: r_n = r_(n-1)(1 + n eps_min dir) -- exact up to ``adjust_cap``,
    then enclosure (any factor beyond 1 +- adjust_cap eps_min). What U(r_0) is
    (``adjust_first``): an MI at r_0 first (0), or no MI at r_0 and U(r_0) a trial's utility,
    the mean of two, or no comparison at n = 1 (1-3): the move may go straight to r_1 with r_0
    to return to and U(r_0) a free value (``allegro_skip_r0``) -- enclosure covering all four.
    RESTRICTION (not a rule of the paper): a sender that holds the rate once 1 - n eps_min <= 0
    (the paper sender's guard, n >= 100 decreasing steps) is excluded there; unreachable at
    these horizons, so no answer changes.
12. Stop [3]: U(r_n) < U(r_(n-1)): back to r_(n-1), decision making -- exact, when the sender
    waits for each adjusting MI's result. RESTRICTION, as in 5: pipelined adjusting MIs
    (``pipeline`` = 0, the ``react`` readings) are admitted only where the free MI lengths
    absorb them (an MI ending so that its fate is known when the pipelined sender switches);
    the conformance runs found no excluded one, but the rule is not encoded, so an unsat
    answer about rate adjusting holds for senders that wait for each adjusting MI's result.

Readings checked against the paper sender (``tests/test_allegro.py``, ALLEGRO_RESTRICTIONS):
covered ``pipeline`` (decision making: both; starting state: 1), ``react``, ``wait_rate``,
``mi_rtt``/``mi_spread``/``mi_draw``/``floor_rate`` (with mi_hi raised, rule 4),
``trial_order``, ``conclusive``, ``eps_reset``, ``adjust_first``, ``start_exit``; pinned to the
covered reading: ``mi_feedback`` = 0 (rule 3), and ``pipeline`` = 1 in runs through the
starting state (rule 5).

The sigmoid enclosure (rule 2)
------------------------------
For an MI of M steps that sent a bytes and lost l of them, ``x = (a / M) * link_mbps / C`` and
``u * M = (link_mbps / C) * ((a - l) Sig(l/a - loss_cap) - l)``: linear except the product
``(a - l) * Sig``, enclosed as follows. ``alpha`` = 100 (2.2: Theorem 1 needs alpha >=
max(2.2(n-1), 100); the public code uses 1000: a parameter), ``loss_cap`` = 0.05.

* The sigmoid: the loss fraction ``l/a`` is cut into bands (``l >= lo*a and l <= hi*a``: linear):
  the exact point ``l = 0``, bands of width ``sig_band`` up to ``sig_top``, and ``[sig_top,
  inf)``. Sigmoid is decreasing, so in a band ``Sig(hi - cap) <= Sig <= Sig(lo - cap)``; the
  bounds are computed to 60 digits (Python's decimal exp) and rounded outward to short
  rationals, and the last band uses 0 as the lower bound. ``a - l`` is >= 0 in the bands below
  1 and sign-split in the last one, so ``(a - l) Sig`` lies between ``(a - l)`` times the two
  bounds: linear, because the bounds are constants. Bands share their end points (closed), so a
  loss fraction on a boundary satisfies both bands' bounds, and every (a, l) lies in some band.
  Error: in a band the sigmoid moves by at most ``alpha * sig_band / 4`` (its largest slope,
  at the cap; :func:`sigmoid_gap` computes the actual worst gap: 0.12 at the defaults, near the
  cap only; up to 2% loss under 0.02) times the throughput term; exact (to 1e-12) without loss.
* ``u * M`` is enclosed as one variable; with the MI length M a solver choice, ``u`` follows by one
  case per possible M (exact).

Not modelled
------------
Retransmissions and SACK details of the UDT prototype; per-packet loss events (bytes are
counted); the latency utility "Allegro-Latency" (named by Vivace, given nowhere). The 10-packet
floor of the MI and the RTT estimate enter only through the MI range (rule 4).

Left to the solver: the history (every state variable and register at step 0), each MI's
length, each decision round's probe order, and the free choices listed above (gaps, the skip
of r_0's MI, the comparison reading, eps on re-entry, U(r_0), the waiting rate, timer firing,
the counter past its cap).

State (queries, trace): ``base`` (the current rate r), ``mode`` (0 starting, 1 decision making,
2 rate adjusting), ``phase``, ``pos``, ``mlen``, ``order``, ``eps``, ``dir``, ``adj_n``,
``event``, ``util``, ``u_prev``, ``prev_base``, ``next_mi``. Plotted: base, util, mode.

Why one file over 500 lines: the numbered rules above, each with its coverage mark and the
effect of each restriction, are a third of it, and the encoding and its independent check
follow them in the same order, one method per rule (:class:`AllegroEncoding`,
:class:`AllegroCheck`).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import z3

from ccac.ccas.interface import CCA, FlowContext, FlowValues, StateVar
from ccac.encode.encoding import num
from ccac.core.errors import CcacError
from ccac.core.params import POSITIVE, Param
from ccac.senders.interface import ConcreteSender, SenderStart
from ccac.ccas.pcc.shared import _round, scale_params

if TYPE_CHECKING:
    from ccac.senders.pcc import Choose

START, DECIDE, ADJUST = 0, 1, 2
WAIT = 4          # the phase while waiting for the fate of the experiment's last MI (or, a gap, a trial's)
NO_EVENT, RULE, TIMEOUT = 0, 1, 2


# ====================================================================== the sigmoid enclosure
def sigmoid_bound(y: Fraction, alpha: Fraction, up: bool) -> Fraction:
    """A short rational >= (up) or <= 1/(1 + e^(alpha*y)), from a 60-digit evaluation."""
    with localcontext() as ctx:
        ctx.prec = 60
        z = Decimal(alpha.numerator) * Decimal(y.numerator) / (Decimal(alpha.denominator) * Decimal(y.denominator))
        v = Fraction(1 / (1 + z.exp()))
    margin = v / 10 ** 40 + Fraction(1, 10 ** 45)
    return _round(v + margin if up else max(v - margin, Fraction(0)), up)


@lru_cache(maxsize=32)
def sigmoid_bands(alpha: Fraction, cap: Fraction, width: Fraction,
                  top: Fraction) -> tuple[tuple[Fraction, Fraction | None, Fraction, Fraction], ...]:
    """(lo, hi, s_lo, s_hi): for a loss fraction in [lo, hi] (hi None: unbounded),
    s_lo <= Sigmoid(fraction - cap) <= s_hi. The first band is the point 0."""
    if width <= 0 or top <= 0:
        raise CcacError("sig_band and sig_top must be positive")
    count = math.ceil(top / width)
    if count > 400:
        raise CcacError("the sigmoid enclosure has more than 400 bands; raise sig_band or lower sig_top")
    zero = (Fraction(0), Fraction(0), sigmoid_bound(-cap, alpha, False), sigmoid_bound(-cap, alpha, True))
    bands: list[tuple[Fraction, Fraction | None, Fraction, Fraction]] = [zero]
    for k in range(count):
        lo, hi = k * width, (k + 1) * width
        bands.append((lo, hi, sigmoid_bound(hi - cap, alpha, False), sigmoid_bound(lo - cap, alpha, True)))
    last = count * width
    bands.append((last, None, Fraction(0), sigmoid_bound(last - cap, alpha, True)))
    return tuple(bands)


def sigmoid_gap(alpha: Fraction, cap: Fraction, width: Fraction, top: Fraction) -> float:
    """The largest s_hi - s_lo over the bounded bands (the enclosure's resolution)."""
    return max(float(hi_s - lo_s) for lo, hi, lo_s, hi_s in sigmoid_bands(alpha, cap, width, top) if hi is not None)


def utility_interval(a: Fraction, lost: Fraction, M: int, scale: Fraction,
                     bands: tuple) -> list[tuple[Fraction, Fraction]]:
    """For the checker: the utility intervals of an MI (one per band containing lost/a)."""
    out = []
    for lo, hi, s_lo, s_hi in bands:
        if not (lost >= lo * a and (hi is None or lost <= hi * a)):
            continue
        ends = [(a - lost) * s_lo - lost, (a - lost) * s_hi - lost]
        out.append((scale * min(ends) / M, scale * max(ends) / M))
    return out


# ====================================================================== parameters
def mi_range(p: dict[str, Any], R: int) -> tuple[int, int]:
    """The MI lengths (steps) a solver may choose: [floor(mi_lo R), ceil(mi_hi R)], at least 1."""
    lo, hi = max(1, math.floor(p["mi_lo"] * R)), max(1, math.ceil(p["mi_hi"] * R))
    if lo > hi:
        raise CcacError("allegro: mi_lo must not exceed mi_hi", "cca.mi_lo")
    return lo, hi


def eps_levels(p: dict[str, Any]) -> list[Fraction]:
    """eps_min, 2 eps_min, ... capped at eps_max: the probing steps of the decision state."""
    e_min, e_max = p["eps_min"], p["eps_max"]
    if e_max < e_min:
        raise CcacError("allegro: eps_max must be at least eps_min", "cca.eps_max")
    n = math.ceil(e_max / e_min)
    return [min(k * e_min, e_max) for k in range(1, n + 1)]


class Allegro(CCA):
    name = "allegro"
    summary = ("PCC Allegro: starting state (double per MI), decision making over two r(1+-eps) pairs, "
               "rate adjusting r_n = r_(n-1)(1 + n eps_min dir); sigmoid loss utility")
    params = (
        Param("alpha", 100, "sigmoid steepness: Sigmoid(y) = 1/(1 + e^(alpha*y)) (2.2)", **POSITIVE),
        Param("loss_cap", Fraction(1, 20), "loss rate at which the sigmoid cuts the utility off (2.2)",
              **POSITIVE, maximum=Fraction(1)),
        Param("eps_min", Fraction(1, 100), "initial probing step and its increment (3)", **POSITIVE,
              maximum=Fraction(1, 2)),
        Param("eps_max", Fraction(1, 20), "largest probing step (3)", **POSITIVE, maximum=Fraction(1, 2)),
        Param("mi_lo", Fraction(17, 10), "shortest MI (3: 1.7 RTTs, plus up to 0.5 RTT at random)", "RTTs",
              **POSITIVE),
        Param("mi_hi", Fraction(11, 5), "longest MI", "RTTs", **POSITIVE),
        Param("mi_timeout", 4, "once the fate of an experiment's last MI has been unknown this long the "
              "rate may be halved (not in Allegro's paper; Vivace 4.3: allowing it only adds runs)",
              "RTTs", "int", minimum=Fraction(1)),
        Param("adjust_cap", 8, "the rate-adjusting counter n is tracked up to this value; at it, the step "
              "factor is any value beyond 1 +- adjust_cap*eps_min", "", "int", minimum=Fraction(1)),
        Param("sig_band", Fraction(1, 200), "width of the loss-fraction bands of the sigmoid enclosure "
              "(resolution: the sigmoid moves by at most alpha*sig_band/4 in a band)", **POSITIVE),
        Param("sig_top", Fraction(3, 20), "loss fraction from which one band [sig_top, inf) is used",
              **POSITIVE),
    ) + scale_params(step_seconds=False)
    state = (
        StateVar("base", "current rate r (starting/rate-adjusting: the MI's rate; decision making: "
                 "the central rate)", "bytes/step", plotted=True),
        StateVar("mode", "0 starting, 1 decision making, 2 rate adjusting", "", "int", plotted=True,
                 labels=((0, "starting"), (1, "decision making"), (2, "rate adjusting"))),
        StateVar("phase", "MI index of the experiment (decision making: 0..3; else 0), 4 while waiting "
                 "for the last MI's fate (or, in a gap before trial next_mi, the previous trial's)", "", "int"),
        StateVar("pos", "step within the MI (0..mlen-1), or steps since the last MI ended while waiting",
                 "steps", "int"),
        StateVar("mlen", "length of the current MI (solver-chosen in the randomized range)", "steps", "int"),
        StateVar("order", "bit k set: decision pair k probes r(1+eps) first", "", "int"),
        StateVar("eps", "probing step of the decision-making state", "", "real"),
        StateVar("dir", "direction of the last decision (+1 / -1)", "", "int"),
        StateVar("adj_n", "rate-adjusting counter n (0: the MI at r_0)", "", "int"),
        StateVar("event", "0 none, 1 a rule applied (the experiment's utilities known), 2 MI timeout",
                 "", "int", labels=((1, "a rule applied"), (2, "MI timeout"))),
        StateVar("util", "utility of the MI that ends at this step (0 elsewhere)", "Mbps", plotted=True),
        StateVar("u_prev", "utility of the previous MI (starting / rate-adjusting comparisons)", "Mbps"),
        StateVar("prev_base", "rate r_(n-1) to return to in the rate-adjusting state", "bytes/step"),
        StateVar("next_mi", "while waiting in decision making: the trial MI that follows the wait (1..3), "
                 "4 the rule (elsewhere 4)", "", "int"),
    )

    def paced(self, params: dict[str, Any]) -> bool:
        return True

    # ------------------------------------------------------------------ encoding
    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        """The numbered rules of the module docstring, step by step: what holds at every step
        (domains, the rate, the MI's measurements, its utility), then the transition from the
        step before (the MI goes on, the next one starts, a wait, a timeout, or a rule)."""
        rules = AllegroEncoding(ctx)
        for t in range(ctx.T):
            rules.domains(t)
            rules.rate_per_mi(t)
            rules.pacing(t)
            rules.mi_measurements(t)
            rules.mi_utility(t)
            rules.last_mi_end(t)
            if t == 0:
                continue
            rules.mi_progress(t)
            rules.wait_or_timeout(t)
            rules.starting_state(t)
            rules.decision_making(t)
            rules.rate_adjusting(t)
        return rules.state()

    # ------------------------------------------------------------------ independent check
    def check(self, f: FlowValues) -> list[str]:
        """Re-check the rules on exact values, without the solver. MIs and utilities that reach
        before the trace (history) are not checked, only what follows from them."""
        rules = AllegroCheck(f)
        for t in range(f.T):
            if not rules.in_domain(t):
                rules.bad(t, "an Allegro state variable is out of its domain")
                continue
            rules.step_state(t)
            rules.rate_per_mi(t)
            rules.mi_utility(t)
            if t > 0:
                rules.transition(t)
        return rules.out

    def concrete(self, start: SenderStart, choose: Choose | None = None) -> ConcreteSender:
        """The algorithm itself (``senders/allegro.py``); ``choose`` takes its open choices."""
        from ccac.senders.allegro import AllegroConfig, AllegroSender

        p, F = start.params, Fraction
        m_lo, m_hi = mi_range(p, start.R)
        cfg = AllegroConfig(
            m_lo=m_lo, m_hi=m_hi, timeout_steps=int(p["mi_timeout"]) * start.R, alpha=F(p["alpha"]),
            loss_cap=F(p["loss_cap"]), eps_min=F(p["eps_min"]), eps_max=F(p["eps_max"]),
            link_mbps=F(p["link_mbps"]), adjust_cap=int(p["adjust_cap"]))
        return AllegroSender(cfg, start, choose)


class AllegroEncoding:
    """Allegro's rules over one flow, one method per numbered rule of the module docstring,
    each adding its constraints for step t (:meth:`Allegro.encode` calls them in order)."""

    def __init__(self, ctx: FlowContext) -> None:
        p, R, T, C, v = ctx.params, ctx.R, ctx.T, ctx.C, ctx.v
        self.ctx, self.R = ctx, R
        self.m_lo, self.m_hi = mi_range(p, R)
        self.levels = eps_levels(p)
        self.e_min = p["eps_min"]
        self.ncap = int(p["adjust_cap"])
        if self.ncap * self.e_min >= 1:
            raise CcacError("allegro: adjust_cap * eps_min must be below 1", "cca.adjust_cap")
        self.TO = int(p["mi_timeout"]) * R
        self.scale = p["link_mbps"] / C
        self.bands = sigmoid_bands(p["alpha"], p["loss_cap"], p["sig_band"], p["sig_top"])
        E = len(self.levels)
        self.base, self.mode = ctx.series("base"), ctx.series("mode", "int")
        self.phase, self.pos = ctx.series("phase", "int"), ctx.series("pos", "int")
        self.mlen = ctx.series("mlen", "int")
        self.obit = [ctx.series(f"allegro_order{k}", "bool") for k in range(2)]
        self.order = [z3.If(self.obit[0][t], 1, 0) + z3.If(self.obit[1][t], 2, 0) for t in range(T)]
        self.epsk = ctx.series("allegro_epsk", "int")       # eps = levels[epsk - 1]
        self.eps = [z3.Sum(*(z3.If(self.epsk[t] == k + 1, num(self.levels[k]), num(0)) for k in range(E)))
                    for t in range(T)]
        self.dirn, self.adj = ctx.series("dir", "int"), ctx.series("adj_n", "int")
        self.event, self.util = ctx.series("event", "int"), ctx.series("util")
        self.util_m = ctx.series("allegro_util_m")                      # util * MI length
        self.u_prev, self.prev_base = ctx.series("u_prev"), ctx.series("prev_base")
        self.reg = [ctx.series(f"allegro_u{i}") for i in range(4)]        # utility of decision MI i
        self.acc_a, self.acc_l = ctx.series("allegro_sent"), ctx.series("allegro_lost")
        self.mark_adm, self.mark_L = ctx.series("allegro_mark_adm", axis="S"), ctx.series("allegro_mark_L", axis="L")
        self.fate = ctx.series("allegro_fate", "bool")
        self.skip0 = ctx.series("allegro_skip_r0", "bool")   # a decision's move skips r_0's MI
        self.across = ctx.series("allegro_across", "bool")   # a decision compares across the pairs
        self.nxt = ctx.series("next_mi", "int")      # while waiting: the decision MI that follows, 4 the rule
        self.no_loss = v.buffer is None and not v.net.lossy

    def state(self) -> dict[str, list[Any]]:
        state = {"base": self.base, "mode": self.mode, "phase": self.phase, "pos": self.pos, "mlen": self.mlen,
                 "order": self.order, "eps": self.eps, "dir": self.dirn, "adj_n": self.adj, "event": self.event,
                 "util": self.util, "u_prev": self.u_prev, "prev_base": self.prev_base, "next_mi": self.nxt}
        state.update({"_reg": self.reg, "_epsk": self.epsk, "_acc_a": self.acc_a, "_acc_l": self.acc_l,
                      "_mark_adm": self.mark_adm, "_mark_L": self.mark_L})
        return state

    # ---------------------------------------------------------------- terms
    def ends(self, t: int) -> Any:
        """An MI ends at step t (its last step)."""
        return z3.And(self.phase[t] < WAIT, self.pos[t] == self.mlen[t] - 1)

    def probe_high(self, t: int, i: int) -> Any:
        """Whether decision MI i at step t probes r(1+eps) (pair i // 2's order)."""
        obit = self.obit
        return obit[i // 2][t] if i % 2 == 0 else z3.Not(obit[i // 2][t])

    def kept(self, t: int) -> list[Any]:
        """The experiment's state (rate, mode, eps, direction, counter, comparison values, pair
        orders) unchanged from t-1."""
        base, mode, epsk, dirn, adj = self.base, self.mode, self.epsk, self.dirn, self.adj
        u_prev, prev_base, obit = self.u_prev, self.prev_base, self.obit
        return [base[t] == base[t - 1], mode[t] == mode[t - 1], epsk[t] == epsk[t - 1],
                dirn[t] == dirn[t - 1], adj[t] == adj[t - 1], u_prev[t] == u_prev[t - 1],
                prev_base[t] == prev_base[t - 1], *(obit[k][t] == obit[k][t - 1] for k in range(2))]

    def last_mi(self, t: int) -> Any:
        """The index of the experiment's last MI: 3 in decision making (two pairs), else 0."""
        return z3.If(self.mode[t - 1] == DECIDE, 3, 0)

    def rule_ready(self, t: int) -> Any:
        """At t the experiment's last MI has ended (now or while waiting): a rule may apply once
        its fate is known."""
        pp, ps, mlen = self.phase[t - 1], self.pos[t - 1], self.mlen
        return z3.Or(z3.And(pp == WAIT, self.nxt[t - 1] == WAIT), z3.And(pp == self.last_mi(t), ps == mlen[t - 1] - 1))

    def in_gap(self, t: int) -> Any:
        """At t-1 the sender waits between decision trials for the previous trial's fate."""
        return z3.And(self.phase[t - 1] == WAIT, self.nxt[t - 1] < WAIT)

    def decides(self, t: int) -> Any:
        """A rule applies at t: the experiment's last MI has ended and its fate is known."""
        return z3.And(self.rule_ready(t), self.fate[t])

    # ---------------------------------------------------------------- every step
    def domains(self, t: int) -> None:
        """The state's domains: modes, phases (0..3 in decision making, WAIT while waiting),
        positions within the MI or the wait (at most the timeout), MI lengths in the range of
        rule 4, eps levels, the adjusting counter up to its cap, positive rates."""
        ctx, phase, pos, mlen, mode, nxt = self.ctx, self.phase, self.pos, self.mlen, self.mode, self.nxt
        ctx.add(self.base[t] > 0, mode[t] >= START, mode[t] <= ADJUST, phase[t] >= 0, phase[t] <= WAIT,
                z3.Implies(mode[t] != DECIDE, z3.Or(phase[t] == 0, phase[t] == WAIT)),
                mlen[t] >= self.m_lo, mlen[t] <= self.m_hi,
                z3.Implies(phase[t] < WAIT, z3.And(pos[t] >= 0, pos[t] <= mlen[t] - 1)),
                z3.Implies(phase[t] == WAIT, z3.And(pos[t] >= 1, pos[t] <= self.TO)),
                nxt[t] >= 1, nxt[t] <= WAIT, z3.Implies(z3.Or(phase[t] < WAIT, mode[t] != DECIDE), nxt[t] == WAIT),
                self.epsk[t] >= 1, self.epsk[t] <= len(self.levels), z3.Or(self.dirn[t] == 1, self.dirn[t] == -1),
                self.adj[t] >= 0, self.adj[t] <= self.ncap, self.event[t] >= NO_EVENT, self.event[t] <= TIMEOUT,
                self.prev_base[t] > 0, self.acc_a[t] >= 0, self.acc_l[t] >= 0)

    def rate_per_mi(self, t: int) -> None:
        """Rules 1, 6 and 7: one rate per MI. Outside decision making the rate is r; a decision
        trial sends r(1+eps) or r(1-eps) by its pair's order; waiting in decision making, r or
        the rate of the trial that just ended (rule 7's enclosure). The rate is bilinear in r
        and eps, so one case per eps level."""
        ctx, mode, phase, epsk, base, rate = self.ctx, self.mode, self.phase, self.epsk, self.base, self.ctx.rate
        ctx.add(z3.Implies(mode[t] != DECIDE, rate[t] == base[t]))
        for k, e in enumerate(self.levels):
            for i in range(4):
                probe = z3.If(self.probe_high(t, i), (1 + e) * base[t], (1 - e) * base[t])
                ctx.add(z3.Implies(z3.And(mode[t] == DECIDE, phase[t] == i, epsk[t] == k + 1),
                                   rate[t] == probe))
                ctx.add(z3.Implies(z3.And(mode[t] == DECIDE, phase[t] == WAIT, self.nxt[t] == i + 1,
                                          epsk[t] == k + 1),
                                   z3.Or(rate[t] == base[t], rate[t] == probe)))

    def pacing(self, t: int) -> None:
        """Rule 1: no congestion window; the model's window is the bytes in flight after the
        step's sends, so pacing binds (``ccas/pcc/shared.py``, Sending). Before R: history."""
        ctx, R = self.ctx, self.R
        if t >= R:
            ctx.add(ctx.cwnd[t] == ctx.A[t - 1] + ctx.rate[t] - ctx.S[t - R] - ctx.Ld[t])

    def mi_measurements(self, t: int) -> None:
        """Rule 3: the bytes the MI has sent and lost so far, summed from its first step; a wait
        adds nothing. At step 0 they are history (nothing lost on a path that loses nothing)."""
        ctx, phase, pos, acc_a, acc_l = self.ctx, self.phase, self.pos, self.acc_a, self.acc_l
        if t == 0:
            if self.no_loss:
                ctx.add(acc_l[t] == 0)
            return
        first = pos[t] == 0
        ctx.add(z3.Implies(phase[t] < WAIT, z3.And(
            acc_a[t] == z3.If(first, 0, acc_a[t - 1]) + ctx.A[t] - ctx.A[t - 1],
            acc_l[t] == z3.If(first, 0, acc_l[t - 1]) + ctx.L[t] - ctx.L[t - 1])))
        ctx.add(z3.Implies(phase[t] == WAIT, z3.And(acc_a[t] == acc_a[t - 1], acc_l[t] == acc_l[t - 1])))

    def utility_enclosure(self, t: int) -> list[Any]:
        """Rule 2: util[t] for the MI of M steps ending at t. ``util * M`` (``util_m``) lies within
        the sigmoid band of the MI's loss fraction (module docstring: every (a, l) lies in some
        closed band, and there the product is between ``(a - l)`` times the band's two bounds,
        sign-split where ``a - l`` may be negative); then one exact case per possible M."""
        a, lost, um, util, mlen = self.acc_a[t], self.acc_l[t], self.util_m[t], self.util, self.mlen
        scale = self.scale
        cases = []
        for lo, hi, s_lo, s_hi in self.bands:
            inside = z3.And(lost >= lo * a, lost <= hi * a) if hi is not None else lost >= lo * a
            low, high = scale * ((a - lost) * s_lo - lost), scale * ((a - lost) * s_hi - lost)
            if hi is not None and hi <= 1:      # a - lost >= 0 here
                cases.append(z3.Implies(inside, z3.And(um >= low, um <= high)))
            else:                               # sign split on a - lost
                cases.append(z3.Implies(inside, z3.If(a >= lost, z3.And(um >= low, um <= high),
                                                      z3.And(um <= low, um >= high))))
        out = [z3.Implies(self.ends(t), z3.And(*cases))]
        out += [z3.Implies(z3.And(self.ends(t), mlen[t] == m), util[t] * m == um)
                for m in range(self.m_lo, self.m_hi + 1)]
        return out

    def mi_utility(self, t: int) -> None:
        """Rule 2 at the end of an MI (:meth:`utility_enclosure`), 0 elsewhere; a decision MI's
        utility is kept in its register until the rule reads it (history at step 0)."""
        ctx, util, reg = self.ctx, self.util, self.reg
        ctx.add(*self.utility_enclosure(t), z3.Implies(z3.Not(self.ends(t)), util[t] == 0))
        for i in range(4):
            here = z3.And(self.ends(t), self.phase[t] == i)
            if t == 0:
                ctx.add(z3.Implies(here, reg[i][t] == util[t]))
            else:
                ctx.add(reg[i][t] == z3.If(here, util[t], reg[i][t - 1]))

    def last_mi_end(self, t: int) -> None:
        """Rule 3's fate test needs where the experiment's last MI ended: the admitted bytes and
        losses at its last step, held while waiting (at step 0, while waiting, any earlier
        point: history)."""
        ctx, phase, mark_adm, mark_L = self.ctx, self.phase, self.mark_adm, self.mark_L
        ctx.add(z3.Implies(phase[t] < WAIT, z3.And(mark_adm[t] == ctx.A[t] - ctx.L[t], mark_L[t] == ctx.L[t])))
        if t == 0:
            ctx.add(z3.Implies(phase[t] == WAIT, z3.And(mark_adm[t] <= ctx.A[t] - ctx.L[t], mark_L[t] <= ctx.L[t])))
            return
        ctx.add(z3.Implies(phase[t] == WAIT, z3.And(mark_adm[t] == mark_adm[t - 1], mark_L[t] == mark_L[t - 1])))

    # ---------------------------------------------------------------- transitions from t-1 to t
    def mi_progress(self, t: int) -> None:
        """Rules 4 and 6: an MI goes on with the state unchanged until its chosen length; then
        the experiment's next MI starts at once (pipeline 0) or, in decision making, after a
        gap until the trial's fate is known (pipeline 1; both readings, rule 6's enclosure).
        The fate of the last MI: every byte it sent ACKed (served by t-R) or detected lost."""
        ctx, phase, pos, mlen = self.ctx, self.phase, self.pos, self.mlen
        event, fate, nxt = self.event, self.fate, self.nxt
        pp, ps, R = phase[t - 1], pos[t - 1], self.R
        keep = self.kept(t)
        in_mi = z3.And(pp < WAIT, ps < mlen[t - 1] - 1)
        next_mi = z3.And(pp < self.last_mi(t), ps == mlen[t - 1] - 1)
        ctx.add(z3.Implies(in_mi, z3.And(phase[t] == pp, pos[t] == ps + 1, mlen[t] == mlen[t - 1],
                                          event[t] == NO_EVENT, *keep)))
        ctx.add(z3.Implies(next_mi, z3.And(event[t] == NO_EVENT, *keep, z3.Or(
            z3.And(phase[t] == pp + 1, pos[t] == 0),
            z3.And(z3.Not(fate[t]), phase[t] == WAIT, nxt[t] == pp + 1, pos[t] == 1, mlen[t] == mlen[t - 1])))))
        ctx.add(z3.Implies(z3.And(self.in_gap(t), fate[t]), z3.And(phase[t] == nxt[t - 1], pos[t] == 0,
                                                                  event[t] == NO_EVENT, *keep)))
        if t >= R:
            ctx.add(fate[t] == z3.And(ctx.S[t - R] >= self.mark_adm[t - 1], ctx.Ld[t] >= self.mark_L[t - 1]))

    def wait_or_timeout(self, t: int) -> None:
        """Rule 7: until the fate is known the sender waits with its state unchanged; once it
        has waited ``mi_timeout`` RTTs it may instead halve the rate and restart decision
        making at eps_min (Vivace 4.3's timeout, not Allegro's: allowed, never forced, so it
        only adds runs). When the fate is known a rule applies and a new experiment starts."""
        ctx, phase, pos, mlen = self.ctx, self.phase, self.pos, self.mlen
        event, nxt, base = self.event, self.nxt, self.base
        pp, ps, TO = phase[t - 1], pos[t - 1], self.TO
        waited = z3.If(pp == WAIT, ps + 1, 1)
        new_experiment = [phase[t] == 0, pos[t] == 0]
        ctx.add(z3.Implies(z3.And(z3.Or(self.rule_ready(t), self.in_gap(t)), z3.Not(self.fate[t])), z3.Or(
            z3.And(phase[t] == WAIT, pos[t] == z3.If(waited >= TO, TO, waited), mlen[t] == mlen[t - 1],
                   nxt[t] == z3.If(pp == WAIT, nxt[t - 1], WAIT),
                   event[t] == NO_EVENT, *self.kept(t)),
            z3.And(waited >= TO, event[t] == TIMEOUT, base[t] * 2 == base[t - 1], self.mode[t] == DECIDE,
                   self.epsk[t] == 1, self.dirn[t] == self.dirn[t - 1], self.adj[t] == self.adj[t - 1],
                   self.u_prev[t] == self.u_prev[t - 1], self.prev_base[t] == self.prev_base[t - 1],
                   *new_experiment))))
        ctx.add(z3.Implies(self.decides(t), z3.And(event[t] == RULE, *new_experiment)))

    def starting_state(self, t: int) -> None:
        """Rule 5: in the starting state the rate doubles after every MI whose utility did not
        fall; when it fell (strictly), back to the previous rate r/2, into decision making at
        eps_min."""
        base, mode, epsk, dirn, adj, u_prev, prev_base = (self.base, self.mode, self.epsk, self.dirn, self.adj,
                                                          self.u_prev, self.prev_base)
        r, u0, up_ = base[t - 1], self.reg[0][t - 1], u_prev[t - 1]
        self.ctx.add(z3.Implies(z3.And(self.decides(t), mode[t - 1] == START), z3.If(
            u0 < up_,
            z3.And(base[t] * 2 == r, mode[t] == DECIDE, epsk[t] == 1, dirn[t] == dirn[t - 1],
                   adj[t] == adj[t - 1], u_prev[t] == up_, prev_base[t] == prev_base[t - 1]),
            z3.And(base[t] == 2 * r, mode[t] == START, epsk[t] == epsk[t - 1], dirn[t] == dirn[t - 1],
                   adj[t] == adj[t - 1], u_prev[t] == u0, prev_base[t] == r))))

    def trial_verdict(self, t: int) -> tuple[Any, Any]:
        """Rule 8: (up, down) from the two pairs' utilities by their order: the higher rate
        consistently better, within each pair (U_i^+ > U_i^-) or across pairs (U_i^+ > U_j^-
        for all i, j), the decision's reading a solver choice; strict, so ties stay."""
        obit, reg, across = self.obit, self.reg, self.across
        plus = [z3.If(obit[k][t - 1], reg[2 * k][t - 1], reg[2 * k + 1][t - 1]) for k in range(2)]
        minus = [z3.If(obit[k][t - 1], reg[2 * k + 1][t - 1], reg[2 * k][t - 1]) for k in range(2)]
        go_up = z3.If(across[t], z3.And(*(plus[i] > minus[j] for i in range(2) for j in range(2))),
                      z3.And(plus[0] > minus[0], plus[1] > minus[1]))
        go_down = z3.If(across[t], z3.And(*(minus[i] > plus[j] for i in range(2) for j in range(2))),
                        z3.And(minus[0] > plus[0], minus[1] > plus[1]))
        return go_up, go_down

    def decision_making(self, t: int) -> None:
        """Rules 8-11 at the end of the randomized controlled trials: a consistent verdict moves
        to r_0 = r(1 +- eps) (an MI at r_0 first) or, skipping r_0's MI (rule 11's
        ``adjust_first`` readings), to r_1 = r_0 (1 +- eps_min) with r_0 to return to and
        U(r_0) any value; then rate adjusting. An inconclusive round keeps r and raises eps by
        eps_min up to eps_max (rule 9)."""
        ctx, base, mode, epsk = self.ctx, self.base, self.mode, self.epsk
        dirn, adj, skip0 = self.dirn, self.adj, self.skip0
        u_prev, prev_base, e_min, E = self.u_prev, self.prev_base, self.e_min, len(self.levels)
        decide, in_decision = self.decides(t), mode[t - 1] == DECIDE
        r, up_ = base[t - 1], u_prev[t - 1]
        go_up, go_down = self.trial_verdict(t)
        for k, e in enumerate(self.levels):
            ctx.add(z3.Implies(z3.And(decide, in_decision, epsk[t - 1] == k + 1), z3.If(
                go_up, z3.And(dirn[t] == 1, z3.If(
                    skip0[t], z3.And(base[t] == (1 + e) * (1 + e_min) * r, prev_base[t] == (1 + e) * r),
                    base[t] == (1 + e) * r)),
                z3.If(go_down, z3.And(dirn[t] == -1, z3.If(
                    skip0[t], z3.And(base[t] == (1 - e) * (1 - e_min) * r, prev_base[t] == (1 - e) * r),
                    base[t] == (1 - e) * r)),
                      z3.And(base[t] == r, dirn[t] == dirn[t - 1])))))
        moved = z3.Or(go_up, go_down)
        ctx.add(z3.Implies(z3.And(decide, in_decision), z3.If(
            z3.And(moved, skip0[t]), z3.And(mode[t] == ADJUST, adj[t] == 1, epsk[t] == epsk[t - 1]),
            z3.And(u_prev[t] == up_, prev_base[t] == prev_base[t - 1],
                   z3.If(moved, z3.And(mode[t] == ADJUST, adj[t] == 0, epsk[t] == epsk[t - 1]),
                         z3.And(mode[t] == DECIDE, adj[t] == adj[t - 1],
                                epsk[t] == z3.If(epsk[t - 1] >= E, E, epsk[t - 1] + 1)))))))

    def rate_adjusting(self, t: int) -> None:
        """Rules 11 and 12: r_n = r_(n-1)(1 + n eps_min dir) while the utility does not fall
        (exact up to ``adjust_cap``; at the cap any factor beyond it, an enclosure of every
        longer run); when U(r_n) < U(r_(n-1)), back to r_(n-1) and decision making."""
        ctx, base, mode, dirn, adj, u_prev, prev_base = (self.ctx, self.base, self.mode, self.dirn, self.adj,
                                                         self.u_prev, self.prev_base)
        decide, adjusting, ncap, e_min = self.decides(t), mode[t - 1] == ADJUST, self.ncap, self.e_min
        r, u0, up_ = base[t - 1], self.reg[0][t - 1], u_prev[t - 1]
        n0, d = adj[t - 1], dirn[t - 1]
        epsk = self.epsk
        advance = [mode[t] == ADJUST, u_prev[t] == u0, prev_base[t] == r, dirn[t] == d, epsk[t] == epsk[t - 1],
                   adj[t] == z3.If(n0 >= ncap, ncap, n0 + 1)]
        for n in range(1, ncap + 1):
            f_up, f_down = 1 + n * e_min, 1 - n * e_min
            if n < ncap:
                step = z3.If(d == 1, base[t] == f_up * r, base[t] == f_down * r)
            else:
                step = z3.If(d == 1, base[t] >= f_up * r, base[t] <= f_down * r)
            ctx.add(z3.Implies(z3.And(decide, adjusting, adj[t] == n, z3.Or(n0 == 0, z3.Not(u0 < up_))),
                               step))
        ctx.add(z3.Implies(z3.And(decide, adjusting), z3.If(
            z3.And(n0 > 0, u0 < up_),
            z3.And(base[t] == prev_base[t - 1], mode[t] == DECIDE, dirn[t] == d, adj[t] == n0,
                   u_prev[t] == up_, prev_base[t] == prev_base[t - 1]),
            z3.And(*advance))))


class AllegroCheck:
    """One flow's trace and the problems found so far: the rules of the module docstring
    re-checked on exact values, one method per rule (the encoding's of the same number)."""

    def __init__(self, f: FlowValues) -> None:
        p = f.params
        self.f, self.R = f, f.R
        self.m_lo, self.m_hi = mi_range(p, f.R)
        self.levels = eps_levels(p)
        self.e_min, self.ncap = p["eps_min"], int(p["adjust_cap"])
        self.TO = int(p["mi_timeout"]) * f.R
        self.scale = p["link_mbps"] / f.C
        self.bands = sigmoid_bands(p["alpha"], p["loss_cap"], p["sig_band"], p["sig_top"])
        st = f.state
        self.base, self.mode, self.phase = st["base"], st["mode"], st["phase"]
        self.pos, self.mlen = st["pos"], st["mlen"]
        self.order = [int(o) for o in st["order"]]
        self.eps, self.dirn, self.adj, self.event = st["eps"], st["dir"], st["adj_n"], st["event"]
        self.util, self.u_prev, self.prev_base = st["util"], st["u_prev"], st["prev_base"]
        self.nxt = st["next_mi"]
        self.out: list[str] = []

    def bad(self, t: int, msg: str) -> None:
        self.out.append(f"step {t}: {msg}")

    # ---------------------------------------------------------------- reading the trace
    def mi_end(self, t: int) -> bool:
        return self.phase[t] < WAIT and self.pos[t] == self.mlen[t] - 1

    def mi_start(self, e: int) -> int | None:
        """The first step of the MI ending at e, None if it began before the trace."""
        s = e - self.pos[e]
        return s if s >= 1 else None

    def last_utility(self, t: int, i: int) -> Fraction | None:
        """The utility of MI i of the experiment that ends at t-1 (None: not in the trace)."""
        for e in range(t - 1, -1, -1):
            if self.mi_end(e) and self.phase[e] == i:
                return self.util[e] if self.mi_start(e) is not None else None
            if self.event[e] != NO_EVENT:      # the experiment started at e
                return None
        return None

    @staticmethod
    def probe_high(o: int, i: int) -> bool:
        return bool((o >> (i // 2)) & 1) == (i % 2 == 0)

    def fate_known(self, t: int) -> bool | None:
        """Every byte of the last MI before t (the wait skipped) ACKed or detected lost at t
        (None: before step R, history)."""
        f, R, phase = self.f, self.R, self.phase
        if t < R:
            return None
        e = t - 1
        while e >= 0 and phase[e] == WAIT:
            e -= 1
        return f.S[t - R] >= f.A[e] - f.L[e] and f.Ld[t] >= f.L[e] if e >= 0 else None

    def unchanged(self, t: int) -> bool:
        """The experiment's state (rate, mode, eps, direction, counter, comparison values, pair
        order) as at t-1, and no event."""
        names = (self.base, self.mode, self.eps, self.dirn, self.adj, self.u_prev, self.prev_base, self.order)
        return all(x[t] == x[t - 1] for x in names) and self.event[t] == NO_EVENT

    # ---------------------------------------------------------------- every step
    def in_domain(self, t: int) -> bool:
        mode, phase, nxt = self.mode, self.phase, self.nxt
        return not (mode[t] not in (START, DECIDE, ADJUST) or not 0 <= phase[t] <= WAIT
                    or self.dirn[t] not in (1, -1) or not self.m_lo <= self.mlen[t] <= self.m_hi
                    or self.eps[t] not in self.levels or not 0 <= self.adj[t] <= self.ncap
                    or self.event[t] not in (NO_EVENT, RULE, TIMEOUT) or not 0 <= self.order[t] <= 3
                    or not 1 <= nxt[t] <= WAIT or (nxt[t] != WAIT and (phase[t] != WAIT or mode[t] != DECIDE)))

    def step_state(self, t: int) -> None:
        """Positive rates; phases only in decision making; a position within the MI or the wait."""
        phase, pos = self.phase, self.pos
        if self.base[t] <= 0 or self.prev_base[t] <= 0:
            self.bad(t, "a rate is not positive")
        if self.mode[t] != DECIDE and phase[t] not in (0, WAIT):
            self.bad(t, f"phase {phase[t]} outside the decision-making state")
        if (phase[t] < WAIT and not 0 <= pos[t] < self.mlen[t]) or (phase[t] == WAIT and not 1 <= pos[t] <= self.TO):
            self.bad(t, f"position {pos[t]} impossible in phase {phase[t]}")

    def rate_per_mi(self, t: int) -> None:
        """Rules 1, 6, 7: the step's rate, and the window that makes pacing bind."""
        f, R, base, phase = self.f, self.R, self.base, self.phase
        want = [base[t]]
        if self.mode[t] == DECIDE:       # a trial's rate; waiting: also the rate of the trial that just ended
            i = phase[t] if phase[t] < WAIT else self.nxt[t] - 1
            probe = base[t] * (1 + self.eps[t] if self.probe_high(self.order[t], i) else 1 - self.eps[t])
            want = [probe] if phase[t] < WAIT else [base[t], probe]
        assert f.rate is not None  # Allegro is paced (Allegro.paced), so the trace has its rate
        if f.rate[t] not in want:
            self.bad(t, f"rate {f.rate[t]} is not {' or '.join(map(str, want))}")
        if t >= R and f.cwnd[t] != f.A[t - 1] + f.rate[t] - f.S[t - R] - f.Ld[t]:
            self.bad(t, "cwnd is not the bytes in flight after this step's sends")

    def mi_utility(self, t: int) -> None:
        """Rules 2 and 3: an MI's utility within the sigmoid enclosure of its bytes sent and lost."""
        f, util, mlen = self.f, self.util, self.mlen
        if not self.mi_end(t):
            if util[t] != 0:
                self.bad(t, "util set at a step where no MI ends")
            return
        s = self.mi_start(t)
        if s is None:
            return
        a, lost = f.A[t] - f.A[s - 1], f.L[t] - f.L[s - 1]
        ivs = utility_interval(a, lost, mlen[t], self.scale, self.bands)
        if not any(lo <= util[t] <= hi for lo, hi in ivs):
            self.bad(t, f"utility {util[t]} outside the enclosure for {a} bytes sent, {lost} lost in {mlen[t]} steps")

    # ---------------------------------------------------------------- transitions from t-1 to t
    def transition(self, t: int) -> None:
        """Rules 4, 6, 7 then 5, 8-12: the MI goes on, the next trial starts (at once or after a
        gap), the sender waits or times out, or, the fate known, a rule applies."""
        phase, pos, mlen, nxt = self.phase, self.pos, self.mlen, self.nxt
        pp, ps = phase[t - 1], pos[t - 1]
        last_mi = 3 if self.mode[t - 1] == DECIDE else 0
        fate = self.fate_known(t)
        kept = self.unchanged(t)
        if pp < WAIT and ps < mlen[t - 1] - 1:
            if (phase[t], pos[t], mlen[t]) != (pp, ps + 1, mlen[t - 1]) or not kept:
                self.bad(t, "the MI should continue unchanged")
        elif pp < last_mi:        # the next trial now, or a gap until this one's fate is known
            now = (phase[t], pos[t]) == (pp + 1, 0)
            gap = (phase[t], pos[t], nxt[t], mlen[t]) == (WAIT, 1, pp + 1, mlen[t - 1]) and not fate
            if not (now or gap) or not kept:
                self.bad(t, "the next MI of the experiment should start with the state unchanged")
        elif pp == WAIT and nxt[t - 1] < WAIT and phase[t] < WAIT and self.event[t] == NO_EVENT:
            if (phase[t], pos[t]) != (nxt[t - 1], 0) or not kept or fate is False:
                self.bad(t, "a gap ends when its MI's fate is known: the next trial starts, the state unchanged")
        elif self.event[t] == NO_EVENT:
            self.waiting(t, fate, kept)
        else:
            self.new_experiment(t, fate)

    def waiting(self, t: int, fate: bool | None, kept: bool) -> None:
        """Rule 7: waiting for the fate of the last MI, the state unchanged, only while unknown."""
        pp, ps, nxt = self.phase[t - 1], self.pos[t - 1], self.nxt
        waited = ps + 1 if pp == WAIT else 1
        want_next = nxt[t - 1] if pp == WAIT else WAIT
        if (self.phase[t], self.pos[t], nxt[t]) != (WAIT, min(waited, self.TO), want_next) or not kept:
            self.bad(t, "should wait for the fate of the last MI with the state unchanged")
        if fate:
            self.bad(t, "the fate of the experiment's MIs is known but the sender keeps waiting")

    def new_experiment(self, t: int, fate: bool | None) -> None:
        """An MI timeout (rule 7: half the rate, decision making at eps_min, once the timeout
        expired with the fate unknown) or a rule (its fate known, not in a gap)."""
        pp, ps, base = self.phase[t - 1], self.pos[t - 1], self.base
        if (self.phase[t], self.pos[t]) != (0, 0):
            self.bad(t, "a rule or a timeout starts a new experiment (phase 0, position 0)")
        if self.event[t] == TIMEOUT:
            waited = ps + 1 if pp == WAIT else 1
            if fate or waited < self.TO:
                self.bad(t, "MI timeout before the timeout expired or with the fate known")
            if base[t] * 2 != base[t - 1] or self.mode[t] != DECIDE or self.eps[t] != self.levels[0]:
                self.bad(t, "an MI timeout halves the rate and restarts decision making at eps_min")
            return
        if fate is False:
            self.bad(t, "a rule applied before the fate of the experiment's MIs was known")
        if pp == WAIT and self.nxt[t - 1] < WAIT:
            self.bad(t, "a rule applied in a gap between decision MIs")
        rule = {START: self.starting_state, DECIDE: self.decision_making, ADJUST: self.rate_adjusting}
        rule[self.mode[t - 1]](t)

    # ---------------------------------------------------------------- the rules
    def starting_state(self, t: int) -> None:
        """Rule 5: double while the utility does not fall; else r/2 and decision making at eps_min."""
        base, mode, eps, u_prev, prev_base = self.base, self.mode, self.eps, self.u_prev, self.prev_base
        r, up_ = base[t - 1], u_prev[t - 1]
        u = self.last_utility(t, 0)
        kept = self.dirn[t] == self.dirn[t - 1] and self.adj[t] == self.adj[t - 1]
        stop = (base[t] * 2 == r and mode[t] == DECIDE and eps[t] == self.levels[0] and u_prev[t] == up_
                and prev_base[t] == prev_base[t - 1] and kept)
        go = (base[t] == 2 * r and mode[t] == START and prev_base[t] == r and eps[t] == eps[t - 1] and kept
              and (u is None or u_prev[t] == u))
        if u is not None:
            stop, go = stop and u < up_, go and not u < up_
        if not (stop or go):
            self.bad(t, f"starting state: utility {u} vs previous {up_} does not give rate {base[t]} "
                        f"in mode {mode[t]} (from {r})")

    def verdicts(self, t: int) -> list[int]:
        """Rule 8: the directions the four trials' utilities allow (+1 up, -1 down, 0 stay), by
        both readings (within each pair, across pairs); any when one is before the trace."""
        maybe = [self.last_utility(t, i) for i in range(4)]
        if any(u is None for u in maybe):
            return [1, -1, 0]
        us = [u for u in maybe if u is not None]  # all four (none is None here)
        o = self.order[t - 1]
        hi = [us[0] if o & 1 else us[1], us[2] if o & 2 else us[3]]
        lo = [us[1] if o & 1 else us[0], us[3] if o & 2 else us[2]]
        within = 1 if all(h > x for h, x in zip(hi, lo)) else -1 if all(x > h for h, x in zip(hi, lo)) else 0
        across = 1 if min(hi) > max(lo) else -1 if min(lo) > max(hi) else 0
        return [within, across]

    def decision_making(self, t: int) -> None:
        """Rules 8-11: a verdict moves to r(1 +- eps) (or straight on to r_1, r_0's MI skipped)
        into rate adjusting; an inconclusive round keeps r and raises eps."""
        base, mode, eps, dirn, adj, prev_base, levels = (self.base, self.mode, self.eps, self.dirn, self.adj,
                                                         self.prev_base, self.levels)
        r, e = base[t - 1], eps[t - 1]
        moves = {1: (r * (1 + e), ADJUST), -1: (r * (1 - e), ADJUST), 0: (r, DECIDE)}
        ok = False
        for v_ in self.verdicts(t):
            rate, m = moves[v_]
            if v_ != 0 and mode[t] == m and adj[t] == 1 and dirn[t] == v_ and eps[t] == e \
                    and prev_base[t] == rate and base[t] == rate * (1 + v_ * self.e_min):
                ok = True       # r_0's MI skipped: on to r_1, U(r_0) any value
                break
            if base[t] != rate or mode[t] != m:
                continue
            if v_ != 0:
                ok = dirn[t] == v_ and adj[t] == 0 and eps[t] == e
            else:
                ok = eps[t] == levels[min(levels.index(e) + 1, len(levels) - 1)] and dirn[t] == dirn[t - 1]
            if ok:
                break
        if not ok:
            us = [self.last_utility(t, i) for i in range(4)]
            self.bad(t, f"decision making: utilities {us} (order {self.order[t - 1]}, eps {e}) do not give rate "
                        f"{base[t]} in mode {mode[t]} (from {r})")

    def rate_adjusting(self, t: int) -> None:
        """Rules 11 and 12: on by r_n = r_(n-1)(1 + n eps_min dir) (beyond it at the cap) while
        the utility does not fall, else back to r_(n-1) and decision making."""
        base, mode, dirn, adj = self.base, self.mode, self.dirn, self.adj
        u_prev, prev_base, ncap = self.u_prev, self.prev_base, self.ncap
        r, up_ = base[t - 1], u_prev[t - 1]
        u = self.last_utility(t, 0)
        n0, d = adj[t - 1], dirn[t - 1]
        revert = (n0 > 0 and base[t] == prev_base[t - 1] and mode[t] == DECIDE and dirn[t] == d
                  and adj[t] == n0 and u_prev[t] == up_)
        n1 = min(n0 + 1, ncap)
        factor = 1 + n1 * self.e_min * d
        moved = base[t] == factor * r if n1 < ncap else (base[t] >= factor * r if d == 1 else base[t] <= factor * r)
        advance = (mode[t] == ADJUST and adj[t] == n1 and moved and prev_base[t] == r and dirn[t] == d
                   and self.eps[t] == self.eps[t - 1] and (u is None or u_prev[t] == u))
        if u is not None:
            worse = n0 > 0 and u < up_
            revert, advance = revert and worse, advance and not worse
        if not (revert or advance):
            self.bad(t, f"rate adjusting: utility {u} vs previous {up_} (n = {n0}) does not give rate "
                        f"{base[t]} in mode {mode[t]} (from {r})")


ALGORITHM = Allegro()
