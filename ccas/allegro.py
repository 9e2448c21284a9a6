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
follow them in the same order.
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
    bands = [zero]
    for k in range(count):
        lo, hi = k * width, (k + 1) * width
        bands.append((lo, hi, sigmoid_bound(hi - cap, alpha, False), sigmoid_bound(lo - cap, alpha, True)))
    last = count * width
    bands.append((last, None, Fraction(0), sigmoid_bound(last - cap, alpha, True)))
    return tuple(bands)


def sigmoid_gap(alpha: Fraction, cap: Fraction, width: Fraction, top: Fraction) -> float:
    """The largest s_hi - s_lo over the bounded bands (the enclosure's resolution)."""
    return max(float(hi_s - lo_s) for lo, hi, lo_s, hi_s in sigmoid_bands(alpha, cap, width, top) if hi is not None)


def utility_interval(a: Fraction, l: Fraction, M: int, scale: Fraction,
                     bands: tuple) -> list[tuple[Fraction, Fraction]]:
    """For the checker: the utility intervals of an MI (one per band containing l/a)."""
    out = []
    for lo, hi, s_lo, s_hi in bands:
        if not (l >= lo * a and (hi is None or l <= hi * a)):
            continue
        ends = [(a - l) * s_lo - l, (a - l) * s_hi - l]
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
        StateVar("mode", "0 starting, 1 decision making, 2 rate adjusting", "", "int", plotted=True),
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
                 "", "int"),
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
        p, R, T, C, v = ctx.params, ctx.R, ctx.T, ctx.C, ctx.v
        m_lo, m_hi = mi_range(p, R)
        levels = eps_levels(p)
        E = len(levels)
        e_min = p["eps_min"]
        ncap = int(p["adjust_cap"])
        if ncap * e_min >= 1:
            raise CcacError("allegro: adjust_cap * eps_min must be below 1", "cca.adjust_cap")
        TO = int(p["mi_timeout"]) * R
        scale = p["link_mbps"] / C
        bands = sigmoid_bands(p["alpha"], p["loss_cap"], p["sig_band"], p["sig_top"])

        base, mode = ctx.series("base"), ctx.series("mode", "int")
        phase, pos, mlen = ctx.series("phase", "int"), ctx.series("pos", "int"), ctx.series("mlen", "int")
        obit = [ctx.series(f"allegro_order{k}", "bool") for k in range(2)]
        order = [z3.If(obit[0][t], 1, 0) + z3.If(obit[1][t], 2, 0) for t in range(T)]
        epsk = ctx.series("allegro_epsk", "int")       # eps = levels[epsk - 1]
        eps = [z3.Sum(*(z3.If(epsk[t] == k + 1, num(levels[k]), num(0)) for k in range(E))) for t in range(T)]
        dirn, adj = ctx.series("dir", "int"), ctx.series("adj_n", "int")
        event, util = ctx.series("event", "int"), ctx.series("util")
        util_m = ctx.series("allegro_util_m")                      # util * MI length
        u_prev, prev_base = ctx.series("u_prev"), ctx.series("prev_base")
        reg = [ctx.series(f"allegro_u{i}") for i in range(4)]        # utility of decision MI i
        acc_a, acc_l = ctx.series("allegro_sent"), ctx.series("allegro_lost")
        mark_adm, mark_L = ctx.series("allegro_mark_adm", axis="S"), ctx.series("allegro_mark_L", axis="L")
        fate = ctx.series("allegro_fate", "bool")
        skip0 = ctx.series("allegro_skip_r0", "bool")   # a decision's move skips r_0's MI
        across = ctx.series("allegro_across", "bool")   # a decision compares across the pairs
        nxt = ctx.series("next_mi", "int")      # while waiting: the decision MI that follows, 4 the rule
        no_loss = v.buffer is None and not v.net.lossy

        def ends(t: int) -> Any:
            return z3.And(phase[t] < WAIT, pos[t] == mlen[t] - 1)

        def probe_high(t: int, i: int) -> Any:
            """Whether decision MI i at step t probes r(1+eps) (pair i // 2's order)."""
            return obit[i // 2][t] if i % 2 == 0 else z3.Not(obit[i // 2][t])

        def enclosure(t: int) -> list[Any]:
            """util[t] for the MI of M steps ending at t: ``util * M`` (``util_m``) within the
            sigmoid bands, then one case per possible M."""
            a, l, um = acc_a[t], acc_l[t], util_m[t]
            cases = []
            for lo, hi, s_lo, s_hi in bands:
                inside = z3.And(l >= lo * a, l <= hi * a) if hi is not None else l >= lo * a
                low, high = scale * ((a - l) * s_lo - l), scale * ((a - l) * s_hi - l)
                if hi is not None and hi <= 1:      # a - l >= 0 here
                    cases.append(z3.Implies(inside, z3.And(um >= low, um <= high)))
                else:                               # sign split on a - l
                    cases.append(z3.Implies(inside, z3.If(a >= l, z3.And(um >= low, um <= high),
                                                          z3.And(um <= low, um >= high))))
            out = [z3.Implies(ends(t), z3.And(*cases))]
            out += [z3.Implies(z3.And(ends(t), mlen[t] == m), util[t] * m == um) for m in range(m_lo, m_hi + 1)]
            return out

        for t in range(T):
            # ---- domains and per-step rules
            ctx.add(base[t] > 0, mode[t] >= START, mode[t] <= ADJUST, phase[t] >= 0, phase[t] <= WAIT,
                    z3.Implies(mode[t] != DECIDE, z3.Or(phase[t] == 0, phase[t] == WAIT)),
                    mlen[t] >= m_lo, mlen[t] <= m_hi,
                    z3.Implies(phase[t] < WAIT, z3.And(pos[t] >= 0, pos[t] <= mlen[t] - 1)),
                    z3.Implies(phase[t] == WAIT, z3.And(pos[t] >= 1, pos[t] <= TO)),
                    nxt[t] >= 1, nxt[t] <= WAIT, z3.Implies(z3.Or(phase[t] < WAIT, mode[t] != DECIDE), nxt[t] == WAIT),
                    epsk[t] >= 1, epsk[t] <= E, z3.Or(dirn[t] == 1, dirn[t] == -1),
                    adj[t] >= 0, adj[t] <= ncap, event[t] >= NO_EVENT, event[t] <= TIMEOUT,
                    prev_base[t] > 0, acc_a[t] >= 0, acc_l[t] >= 0)
            # the rate is bilinear in base and eps: one case per eps level (and probe MI)
            # waiting in decision making: the base r or the rate of the trial that just ended
            ctx.add(z3.Implies(mode[t] != DECIDE, ctx.rate[t] == base[t]))
            for k, e in enumerate(levels):
                for i in range(4):
                    probe = z3.If(probe_high(t, i), (1 + e) * base[t], (1 - e) * base[t])
                    ctx.add(z3.Implies(z3.And(mode[t] == DECIDE, phase[t] == i, epsk[t] == k + 1),
                                       ctx.rate[t] == probe))
                    ctx.add(z3.Implies(z3.And(mode[t] == DECIDE, phase[t] == WAIT, nxt[t] == i + 1,
                                              epsk[t] == k + 1),
                                       z3.Or(ctx.rate[t] == base[t], ctx.rate[t] == probe)))
            if t >= R:
                ctx.add(ctx.cwnd[t] == ctx.A[t - 1] + ctx.rate[t] - ctx.S[t - R] - ctx.Ld[t])
            # the MI's bytes sent and lost so far (history at step 0)
            if t == 0:
                if no_loss:
                    ctx.add(acc_l[t] == 0)
            else:
                first = pos[t] == 0
                ctx.add(z3.Implies(phase[t] < WAIT, z3.And(
                    acc_a[t] == z3.If(first, 0, acc_a[t - 1]) + ctx.A[t] - ctx.A[t - 1],
                    acc_l[t] == z3.If(first, 0, acc_l[t - 1]) + ctx.L[t] - ctx.L[t - 1])))
                ctx.add(z3.Implies(phase[t] == WAIT, z3.And(acc_a[t] == acc_a[t - 1], acc_l[t] == acc_l[t - 1])))
            # the utility of an MI ending now, and the registers of the decision MIs
            ctx.add(*enclosure(t), z3.Implies(z3.Not(ends(t)), util[t] == 0))
            for i in range(4):
                here = z3.And(ends(t), phase[t] == i)
                if t == 0:
                    ctx.add(z3.Implies(here, reg[i][t] == util[t]))
                else:
                    ctx.add(reg[i][t] == z3.If(here, util[t], reg[i][t - 1]))
            # the end of the experiment's last MI, for the fate test
            ctx.add(z3.Implies(phase[t] < WAIT, z3.And(mark_adm[t] == ctx.A[t] - ctx.L[t], mark_L[t] == ctx.L[t])))
            if t == 0:
                ctx.add(z3.Implies(phase[t] == WAIT, z3.And(mark_adm[t] <= ctx.A[t] - ctx.L[t], mark_L[t] <= ctx.L[t])))
                continue
            ctx.add(z3.Implies(phase[t] == WAIT, z3.And(mark_adm[t] == mark_adm[t - 1], mark_L[t] == mark_L[t - 1])))

            # ---- transitions from t-1 to t
            pp, ps = phase[t - 1], pos[t - 1]
            keep = [base[t] == base[t - 1], mode[t] == mode[t - 1], epsk[t] == epsk[t - 1],
                    dirn[t] == dirn[t - 1], adj[t] == adj[t - 1], u_prev[t] == u_prev[t - 1],
                    prev_base[t] == prev_base[t - 1], *(obit[k][t] == obit[k][t - 1] for k in range(2))]
            last_mi = z3.If(mode[t - 1] == DECIDE, 3, 0)
            in_mi = z3.And(pp < WAIT, ps < mlen[t - 1] - 1)
            next_mi = z3.And(pp < last_mi, ps == mlen[t - 1] - 1)
            # the rule waits for the fate of the experiment's last MI; a gap (between decision
            # MIs) for the fate of the MI before it, then the next MI starts
            gap = z3.And(pp == WAIT, nxt[t - 1] < WAIT)
            ready = z3.Or(z3.And(pp == WAIT, nxt[t - 1] == WAIT), z3.And(pp == last_mi, ps == mlen[t - 1] - 1))
            ctx.add(z3.Implies(in_mi, z3.And(phase[t] == pp, pos[t] == ps + 1, mlen[t] == mlen[t - 1],
                                              event[t] == NO_EVENT, *keep)))
            ctx.add(z3.Implies(next_mi, z3.And(event[t] == NO_EVENT, *keep, z3.Or(
                z3.And(phase[t] == pp + 1, pos[t] == 0),
                z3.And(z3.Not(fate[t]), phase[t] == WAIT, nxt[t] == pp + 1, pos[t] == 1, mlen[t] == mlen[t - 1])))))
            ctx.add(z3.Implies(z3.And(gap, fate[t]), z3.And(phase[t] == nxt[t - 1], pos[t] == 0,
                                                            event[t] == NO_EVENT, *keep)))
            if t >= R:
                ctx.add(fate[t] == z3.And(ctx.S[t - R] >= mark_adm[t - 1], ctx.Ld[t] >= mark_L[t - 1]))
            waited = z3.If(pp == WAIT, ps + 1, 1)
            new_experiment = [phase[t] == 0, pos[t] == 0]
            ctx.add(z3.Implies(z3.And(z3.Or(ready, gap), z3.Not(fate[t])), z3.Or(
                z3.And(phase[t] == WAIT, pos[t] == z3.If(waited >= TO, TO, waited), mlen[t] == mlen[t - 1],
                       nxt[t] == z3.If(pp == WAIT, nxt[t - 1], WAIT),
                       event[t] == NO_EVENT, *keep),
                z3.And(waited >= TO, event[t] == TIMEOUT, base[t] * 2 == base[t - 1], mode[t] == DECIDE,
                       epsk[t] == 1, dirn[t] == dirn[t - 1], adj[t] == adj[t - 1], u_prev[t] == u_prev[t - 1],
                       prev_base[t] == prev_base[t - 1], *new_experiment))))
            decide = z3.And(ready, fate[t])
            ctx.add(z3.Implies(decide, z3.And(event[t] == RULE, *new_experiment)))
            r, m0 = base[t - 1], mode[t - 1]
            u0, up_ = reg[0][t - 1], u_prev[t - 1]
            # starting state
            ctx.add(z3.Implies(z3.And(decide, m0 == START), z3.If(
                u0 < up_,
                z3.And(base[t] * 2 == r, mode[t] == DECIDE, epsk[t] == 1, dirn[t] == dirn[t - 1],
                       adj[t] == adj[t - 1], u_prev[t] == up_, prev_base[t] == prev_base[t - 1]),
                z3.And(base[t] == 2 * r, mode[t] == START, epsk[t] == epsk[t - 1], dirn[t] == dirn[t - 1],
                       adj[t] == adj[t - 1], u_prev[t] == u0, prev_base[t] == r))))
            # decision-making state: the two pairs' utilities by their order
            plus = [z3.If(obit[k][t - 1], reg[2 * k][t - 1], reg[2 * k + 1][t - 1]) for k in range(2)]
            minus = [z3.If(obit[k][t - 1], reg[2 * k + 1][t - 1], reg[2 * k][t - 1]) for k in range(2)]
            # within each pair (U_i^+ > U_i^-), or across pairs ("for all i, j": U_i^+ > U_j^-)
            go_up = z3.If(across[t], z3.And(*(plus[i] > minus[j] for i in range(2) for j in range(2))),
                          z3.And(plus[0] > minus[0], plus[1] > minus[1]))
            go_down = z3.If(across[t], z3.And(*(minus[i] > plus[j] for i in range(2) for j in range(2))),
                            z3.And(minus[0] > plus[0], minus[1] > plus[1]))
            # a move goes to r_0 = r(1 +- eps) (an MI at r_0 first), or, skipping r_0's MI, to
            # r_1 = r_0 (1 +- eps_min) with r_0 to return to and U(r_0) any value (a trial's, or none)
            for k, e in enumerate(levels):
                ctx.add(z3.Implies(z3.And(decide, m0 == DECIDE, epsk[t - 1] == k + 1), z3.If(
                    go_up, z3.And(dirn[t] == 1, z3.If(
                        skip0[t], z3.And(base[t] == (1 + e) * (1 + e_min) * r, prev_base[t] == (1 + e) * r),
                        base[t] == (1 + e) * r)),
                    z3.If(go_down, z3.And(dirn[t] == -1, z3.If(
                        skip0[t], z3.And(base[t] == (1 - e) * (1 - e_min) * r, prev_base[t] == (1 - e) * r),
                        base[t] == (1 - e) * r)),
                          z3.And(base[t] == r, dirn[t] == dirn[t - 1])))))
            moved = z3.Or(go_up, go_down)
            ctx.add(z3.Implies(z3.And(decide, m0 == DECIDE), z3.If(
                z3.And(moved, skip0[t]), z3.And(mode[t] == ADJUST, adj[t] == 1, epsk[t] == epsk[t - 1]),
                z3.And(u_prev[t] == up_, prev_base[t] == prev_base[t - 1],
                       z3.If(moved, z3.And(mode[t] == ADJUST, adj[t] == 0, epsk[t] == epsk[t - 1]),
                             z3.And(mode[t] == DECIDE, adj[t] == adj[t - 1],
                                    epsk[t] == z3.If(epsk[t - 1] >= E, E, epsk[t - 1] + 1)))))))
            # rate-adjusting state
            n0, d = adj[t - 1], dirn[t - 1]
            advance = [mode[t] == ADJUST, u_prev[t] == u0, prev_base[t] == r, dirn[t] == d, epsk[t] == epsk[t - 1],
                       adj[t] == z3.If(n0 >= ncap, ncap, n0 + 1)]
            for n in range(1, ncap + 1):
                f_up, f_down = 1 + n * e_min, 1 - n * e_min
                if n < ncap:
                    step = z3.If(d == 1, base[t] == f_up * r, base[t] == f_down * r)
                else:
                    step = z3.If(d == 1, base[t] >= f_up * r, base[t] <= f_down * r)
                ctx.add(z3.Implies(z3.And(decide, m0 == ADJUST, adj[t] == n, z3.Or(n0 == 0, z3.Not(u0 < up_))),
                                   step))
            ctx.add(z3.Implies(z3.And(decide, m0 == ADJUST), z3.If(
                z3.And(n0 > 0, u0 < up_),
                z3.And(base[t] == prev_base[t - 1], mode[t] == DECIDE, dirn[t] == d, adj[t] == n0,
                       u_prev[t] == up_, prev_base[t] == prev_base[t - 1]),
                z3.And(*advance))))
        state = {"base": base, "mode": mode, "phase": phase, "pos": pos, "mlen": mlen, "order": order,
                 "eps": eps, "dir": dirn, "adj_n": adj, "event": event, "util": util, "u_prev": u_prev,
                 "prev_base": prev_base, "next_mi": nxt}
        state.update({"_reg": reg, "_epsk": epsk, "_acc_a": acc_a, "_acc_l": acc_l, "_mark_adm": mark_adm,
                      "_mark_L": mark_L})
        return state

    # ------------------------------------------------------------------ independent check
    def check(self, f: FlowValues) -> list[str]:
        """Re-check the rules on exact values, without the solver. MIs and utilities that reach
        before the trace (history) are not checked, only what follows from them."""
        p, R, T, C = f.params, f.R, f.T, f.C
        m_lo, m_hi = mi_range(p, R)
        levels = eps_levels(p)
        e_min, ncap = p["eps_min"], int(p["adjust_cap"])
        TO = int(p["mi_timeout"]) * R
        scale = p["link_mbps"] / C
        bands = sigmoid_bands(p["alpha"], p["loss_cap"], p["sig_band"], p["sig_top"])
        st = f.state
        base, mode, phase, pos, mlen = st["base"], st["mode"], st["phase"], st["pos"], st["mlen"]
        order = [int(o) for o in st["order"]]
        eps, dirn, adj, event = st["eps"], st["dir"], st["adj_n"], st["event"]
        util, u_prev, prev_base = st["util"], st["u_prev"], st["prev_base"]
        nxt = st["next_mi"]
        out: list[str] = []

        def bad(t: int, msg: str) -> None:
            out.append(f"step {t}: {msg}")

        def mi_end(t: int) -> bool:
            return phase[t] < WAIT and pos[t] == mlen[t] - 1

        def mi_start(e: int) -> int | None:
            """The first step of the MI ending at e, None if it began before the trace."""
            s = e - pos[e]
            return s if s >= 1 else None

        def last_utility(t: int, i: int) -> Fraction | None:
            """The utility of MI i of the experiment that ends at t-1 (None: not in the trace)."""
            for e in range(t - 1, -1, -1):
                if mi_end(e) and phase[e] == i:
                    return util[e] if mi_start(e) is not None else None
                if event[e] != NO_EVENT:      # the experiment started at e
                    return None
            return None

        def probe_high(o: int, i: int) -> bool:
            return bool((o >> (i // 2)) & 1) == (i % 2 == 0)

        for t in range(T):
            if mode[t] not in (START, DECIDE, ADJUST) or not 0 <= phase[t] <= WAIT or dirn[t] not in (1, -1) \
                    or not m_lo <= mlen[t] <= m_hi or eps[t] not in levels or not 0 <= adj[t] <= ncap \
                    or event[t] not in (NO_EVENT, RULE, TIMEOUT) or not 0 <= order[t] <= 3 \
                    or not 1 <= nxt[t] <= WAIT or (nxt[t] != WAIT and (phase[t] != WAIT or mode[t] != DECIDE)):
                bad(t, "an Allegro state variable is out of its domain")
                continue
            if base[t] <= 0 or prev_base[t] <= 0:
                bad(t, "a rate is not positive")
            if mode[t] != DECIDE and phase[t] not in (0, WAIT):
                bad(t, f"phase {phase[t]} outside the decision-making state")
            if (phase[t] < WAIT and not 0 <= pos[t] < mlen[t]) or (phase[t] == WAIT and not 1 <= pos[t] <= TO):
                bad(t, f"position {pos[t]} impossible in phase {phase[t]}")
            want = [base[t]]
            if mode[t] == DECIDE:       # a trial's rate; waiting: also the rate of the trial that just ended
                i = phase[t] if phase[t] < WAIT else nxt[t] - 1
                probe = base[t] * (1 + eps[t] if probe_high(order[t], i) else 1 - eps[t])
                want = [probe] if phase[t] < WAIT else [base[t], probe]
            if f.rate[t] not in want:
                bad(t, f"rate {f.rate[t]} is not {' or '.join(map(str, want))}")
            if t >= R and f.cwnd[t] != f.A[t - 1] + f.rate[t] - f.S[t - R] - f.Ld[t]:
                bad(t, "cwnd is not the bytes in flight after this step's sends")
            if mi_end(t):
                s = mi_start(t)
                if s is not None:
                    a, l = f.A[t] - f.A[s - 1], f.L[t] - f.L[s - 1]
                    ivs = utility_interval(a, l, mlen[t], scale, bands)
                    if not any(lo <= util[t] <= hi for lo, hi in ivs):
                        bad(t, f"utility {util[t]} outside the enclosure for {a} bytes sent, {l} lost "
                               f"in {mlen[t]} steps")
            elif util[t] != 0:
                bad(t, "util set at a step where no MI ends")
            if t == 0:
                continue
            pp, ps = phase[t - 1], pos[t - 1]
            same = (base[t], mode[t], eps[t], dirn[t], adj[t], u_prev[t], prev_base[t]) == \
                (base[t - 1], mode[t - 1], eps[t - 1], dirn[t - 1], adj[t - 1], u_prev[t - 1], prev_base[t - 1])
            last_mi = 3 if mode[t - 1] == DECIDE else 0
            if pp < WAIT and ps < mlen[t - 1] - 1:
                if (phase[t], pos[t], mlen[t]) != (pp, ps + 1, mlen[t - 1]) or not same or \
                        order[t] != order[t - 1] or event[t] != NO_EVENT:
                    bad(t, "the MI should continue unchanged")
                continue
            fate = None
            if t >= R:
                e = t - 1
                while e >= 0 and phase[e] == WAIT:
                    e -= 1
                if e >= 0:
                    fate = f.S[t - R] >= f.A[e] - f.L[e] and f.Ld[t] >= f.L[e]
            kept = same and order[t] == order[t - 1] and event[t] == NO_EVENT
            if pp < last_mi:        # the next trial now, or a gap until this one's fate is known
                now = (phase[t], pos[t]) == (pp + 1, 0)
                gap = (phase[t], pos[t], nxt[t], mlen[t]) == (WAIT, 1, pp + 1, mlen[t - 1]) and not fate
                if not (now or gap) or not kept:
                    bad(t, "the next MI of the experiment should start with the state unchanged")
                continue
            waited = ps + 1 if pp == WAIT else 1
            if pp == WAIT and nxt[t - 1] < WAIT and phase[t] < WAIT and event[t] == NO_EVENT:
                if (phase[t], pos[t]) != (nxt[t - 1], 0) or not kept or fate is False:
                    bad(t, "a gap ends when its MI's fate is known: the next trial starts, the state unchanged")
                continue
            if event[t] == NO_EVENT:
                want_next = nxt[t - 1] if pp == WAIT else WAIT
                if (phase[t], pos[t], nxt[t]) != (WAIT, min(waited, TO), want_next) or not kept:
                    bad(t, "should wait for the fate of the last MI with the state unchanged")
                if fate:
                    bad(t, "the fate of the experiment's MIs is known but the sender keeps waiting")
                continue
            if (phase[t], pos[t]) != (0, 0):
                bad(t, "a rule or a timeout starts a new experiment (phase 0, position 0)")
            if event[t] == TIMEOUT:
                if fate or waited < TO:
                    bad(t, "MI timeout before the timeout expired or with the fate known")
                if base[t] * 2 != base[t - 1] or mode[t] != DECIDE or eps[t] != levels[0]:
                    bad(t, "an MI timeout halves the rate and restarts decision making at eps_min")
                continue
            if fate is False:
                bad(t, "a rule applied before the fate of the experiment's MIs was known")
            if pp == WAIT and nxt[t - 1] < WAIT:
                bad(t, "a rule applied in a gap between decision MIs")
            out += [f"step {t}: {m}" for m in self._check_rule(f, t, levels, e_min, ncap, last_utility)]
        return out

    @staticmethod
    def _check_rule(f: FlowValues, t: int, levels: list[Fraction], e_min: Fraction, ncap: int,
                    last_utility: Any) -> list[str]:
        st = f.state
        base, mode, eps, dirn, adj = st["base"], st["mode"], st["eps"], st["dir"], st["adj_n"]
        u_prev, prev_base = st["u_prev"], st["prev_base"]
        order = [int(o) for o in st["order"]]
        r, m0, up_ = base[t - 1], mode[t - 1], u_prev[t - 1]
        out: list[str] = []
        if m0 == START:
            u = last_utility(t, 0)
            kept = dirn[t] == dirn[t - 1] and adj[t] == adj[t - 1]
            stop = (base[t] * 2 == r and mode[t] == DECIDE and eps[t] == levels[0] and u_prev[t] == up_
                    and prev_base[t] == prev_base[t - 1] and kept)
            go = (base[t] == 2 * r and mode[t] == START and prev_base[t] == r and eps[t] == eps[t - 1] and kept
                  and (u is None or u_prev[t] == u))
            if u is not None:
                stop, go = stop and u < up_, go and not u < up_
            if not (stop or go):
                out.append(f"starting state: utility {u} vs previous {up_} does not give rate {base[t]} "
                           f"in mode {mode[t]} (from {r})")
        elif m0 == DECIDE:
            us = [last_utility(t, i) for i in range(4)]
            e = eps[t - 1]
            o = order[t - 1]
            moves = {1: (r * (1 + e), ADJUST), -1: (r * (1 - e), ADJUST), 0: (r, DECIDE)}
            if all(u is not None for u in us):
                hi = [us[0] if o & 1 else us[1], us[2] if o & 2 else us[3]]
                lo = [us[1] if o & 1 else us[0], us[3] if o & 2 else us[2]]
                within = 1 if all(h > x for h, x in zip(hi, lo)) else -1 if all(x > h for h, x in zip(hi, lo)) else 0
                across = 1 if min(hi) > max(lo) else -1 if min(lo) > max(hi) else 0
                allowed = [within, across]
            else:
                allowed = [1, -1, 0]
            ok = False
            for v_ in allowed:
                rate, m = moves[v_]
                if v_ != 0 and mode[t] == m and adj[t] == 1 and dirn[t] == v_ and eps[t] == e \
                        and prev_base[t] == rate and base[t] == rate * (1 + v_ * e_min):
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
                out.append(f"decision making: utilities {us} (order {o}, eps {e}) do not give rate {base[t]} "
                           f"in mode {mode[t]} (from {r})")
        else:
            u = last_utility(t, 0)
            n0, d = adj[t - 1], dirn[t - 1]
            revert = (n0 > 0 and base[t] == prev_base[t - 1] and mode[t] == DECIDE and dirn[t] == d
                      and adj[t] == n0 and u_prev[t] == up_)
            n1 = min(n0 + 1, ncap)
            factor = 1 + n1 * e_min * d
            moved = base[t] == factor * r if n1 < ncap else (base[t] >= factor * r if d == 1 else base[t] <= factor * r)
            advance = (mode[t] == ADJUST and adj[t] == n1 and moved and prev_base[t] == r and dirn[t] == d
                       and eps[t] == eps[t - 1] and (u is None or u_prev[t] == u))
            if u is not None:
                worse = n0 > 0 and u < up_
                revert, advance = revert and worse, advance and not worse
            if not (revert or advance):
                out.append(f"rate adjusting: utility {u} vs previous {up_} (n = {n0}) does not give rate "
                           f"{base[t]} in mode {mode[t]} (from {r})")
        return out

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


ALGORITHM = Allegro()
