"""``expdelay``: the thesis' exponential rate-delay CCA (Algorithm 1, section 9.3), linearly.

Source: ``../shared/seeds/arun-thesis-performance-verification.md``, section 9.3 ("Avoiding
starvation in a bounded rate range"). The design goal: a delay-convergent CCA that stays
*s-fair* (no flow gets more than s times another's throughput) when the flows' delay
measurements differ by up to D of non-congestive jitter, as long as the right rate lies in a
known range ``[mu_-, mu_+]``. It maps rates that differ by a factor s to queueing delays that
differ by D (Eq. 9.2): the target rate for a measured queueing delay q is

    target(q) = mu_- * s ** ((R_max - q) / D),        q = d - R_m  (d the latest RTT),

so target(R_max) = mu_-, and mu_+ = target(D) = mu_- * s ** ((R_max - D) / D): D is the least
queueing delay that keeps the link busy under jitter D (Lemma 1). Algorithm 1, run once per
R_m: ``if mu < target(q): mu <- mu + a  else: mu <- b * mu`` (additive increase,
multiplicative decrease; the thesis says CCAC taught it AIMD rather than AIAD, and a change of
the same size every RTT whatever the number of ACKs).

The algorithm as modelled
-------------------------
Time is in steps, R steps per minimum RTT (R_m = R exactly: the thesis' Algorithm 1 has no
R_m estimation and assumes it known, as BBR and Copa do here). Parameters, with the units used:

* ``s`` (> 1): the fairness ratio the curve is designed for (thesis example: 2 or 4);
* ``jitter``: the thesis' D, the non-congestive delay the curve is designed for, in steps
  (a CCA parameter, not the path's: the same curve runs on every flow whatever its path);
* ``qmax``: R_max, the queueing delay (steps) at which the target is mu_-;
* ``mu_min``: mu_-, in units of the link rate C (bytes/step = mu_min * C);
* ``a``: the additive increase per update, in units of C; ``b`` in (0, 1): the decrease factor.

The derived top of the range is ``mu_max = mu_min * s ** ((qmax - jitter) / jitter)`` (x C).
Defaults: s = 2, jitter = 1, qmax = 5, mu_min = 1/8, so the range is [C/8, 2C] (a factor
s^4 = 16, with the link in its middle); a = 1/8 and b = 7/8 (the thesis gives no values for
a and b; these let the AIMD cycle around C repeat within the model's short horizons: a
periodic single-flow trace exists at T = 9, and none with b = 1/2 below T = 11).

At every step t >= R that is an update step (below), with mu = ``mu[t-1]``:

* **the delay sample.** "d is the latest measured RTT": the ACK arriving in step t is that of
  the byte at the head of the flow's service curve at step t-R (thesis figure 5-1B, the reading
  Copa and ETC use here), whose queueing delay q the model knows as the integer range
  ``[q_lo, q_hi]`` of ``ccac.encode.trace.delay_range``: q >= k iff ``not served_past(t-R, k)``, and
  q <= k if ``served_past(t-R, k)``. Since ``served_past(u, k)`` is monotone in k (the admitted
  curve never decreases), ``q_hi = q_lo + 1``, or unbounded when no k <= t-R bounds it. Behind
  a per-flow jitter box the reading is the flow's own (``FlowContext``: its box's delay added).
* **the decision.** Increase iff mu < target(q), else decrease. target is strictly decreasing
  in q, and the true q lies in [q_lo, q_hi], so *some* q in the range allows an increase iff
  ``mu < target(q_lo)``, and a decrease iff ``mu >= target(q)`` for some q in the range, which
  implies ``mu >= target(q_hi)`` (always true when q_hi is unbounded: target -> 0). The
  encoding allows exactly the moves these weaker tests allow, so every move the true q makes
  is allowed: a superset. Both moves are allowed when mu lies in the band
  [target(q_hi), target(q_lo)), a factor s^(1/jitter) wide: the step grid's delay resolution
  (1 step) acts like one more step of jitter.
* **the update.** ``mu[t] = mu + a*C`` (increase) or ``mu[t] = b * mu`` (decrease): exact.
* **sending.** The flow is paced at mu with no window ("it does not have a cwnd cap"):
  ``rate[t] = mu[t]`` and, from step R on, ``cwnd[t] = A_f[t-1] + rate[t] - S_f[t-R] -
  Ld_f[t]`` (the bytes in flight after sending), the smallest window that never binds, so
  ``A_f[t] = A_f[t-1] + mu[t]`` exactly (as ETC and the PCC family do). Losses and timeouts
  change nothing (Algorithm 1 has no loss reaction: "It does not ... handle short buffers").

The update schedule: "run every R_m". The flag ``update[t]`` marks the steps at which the
timer fires: exactly one in every ``every`` consecutive steps (default R) and
``update[t] == update[t - every]``, so the solver picks the timer's offset (every offset is
covered). From step R on, mu holds between updates; flags of history steps constrain nothing
else (a window of a longer run keeps its flags).

The exponential, linearly
-------------------------
The only non-linear term is target(q). Because the decision depends on q only through the
integer ends of its reading, target is needed only at integers k = 0 .. T: the constants
``target(k) = mu_min * C * s ** ((qmax - k) / jitter)``. Each is enclosed by two rationals,
rounded outward (``ccac.ccas.pcc.pow_bound``: 60-digit decimal powers, then about 12
significant digits rounded away from the true value; exact when the exponent is an integer,
e.g. jitter = 1): the increase test uses the upper bound (``mu < target_up(q_lo)``), the
decrease test the lower bound (``mu >= target_down(q_hi)``), so rounding only ever allows more
moves. The decision is then linear in mu: a case split over the integer value of q_lo (as
Copa's encoding does for its products). Tangents or chords over a continuous q are not needed:
q is never a solver-chosen real here, only the bracket around it is, and at the bracket's ends
the enclosure is a band of relative width about 1e-12, far tighter than any grid of chords.

Readings of what the thesis leaves open (each a parameter or a solver choice)
-----------------------------------------------------------------------------
* Equation 9.2 is written with d - R_m in Algorithm 1 but with d in the text; Algorithm 1's
  form (queueing delay) is the one encoded, so ``qmax`` is a queueing delay.
* Whether the target is capped at mu_+ for q < D (the text: "This function never increases its
  rate beyond mu_+", which holds for Eq. 9.2 only on d >= R_m + D): ``cap`` (default false,
  Algorithm 1 as printed: the target keeps growing to mu_- s^(R_max/D) at q = 0); with
  ``cap = true`` the target is min(target(q), mu_+), still non-increasing in q, so the same
  endpoint argument holds.
* The timer's offset: solver-chosen. The update interval: ``every`` (default R, "every R_m").
* a and b: parameters (no values in the thesis); mu_- and R_max likewise.
* "the latest measured RTT": the sample of the ACK arriving at the update step (above).

What is abstracted
------------------
* The delay sample is the model's integer bracket (both moves allowed inside the band, see
  above); the history before step 0 is free: mu at steps < R is any positive value, and
  readings near step 0 that cannot bound q above allow a decrease (any past is covered).
* At a step whose ACKs are none the sample is still the bracket of the head byte at t-R (the
  model's one-sample-per-step convention, thesis figure 5-1B, as for Copa and ETC).
* Pacing is fluid at step resolution (a step sends exactly mu).
* Slow start, R_m estimation, a window cap and loss reaction are not part of Algorithm 1 and
  are not modelled (the thesis lists them as missing).

State (usable in queries, ``name[n][t]``): ``mu`` (the rate, bytes/step, plotted), ``q_lo`` /
``q_hi`` (the delay bracket of the latest sample, steps, plotted; ``q_hi == T`` means
unbounded; during the history the bracket is [0, T]), ``tgt_hi`` / ``tgt_lo`` (the target
rates at the bracket's ends, outward rounded: an increase needs mu below ``tgt_hi``, a
decrease mu at least ``tgt_lo``; plotted; ``tgt_lo`` is 0 when q_hi is unbounded), ``update`` (bool: Algorithm 1 ran
at t) and
``move`` (int: 1 increase, -1 decrease, 0 no update, plotted).

Steady state: mu is the only memory (the bracket is read off the curves), plus the timer:
a periodic trace needs a period (T - 1) that is a multiple of ``every`` so that the update
steps repeat (:meth:`ExpDelay.period_divisor`; another T is an error). Readings at the trace's
first steps read the previous periods of the same run (``ccac.encode.periodic``).

What the model says (queries/expdelay_*.toml): one flow with the link inside the range and
jitter D keeps the link at least 15/16 busy in every repeating run, not fully (the AIMD cycle
between C and bC); two flows whose delay samples differ by up to D are *not* s-fair: the
AIMD step carries a ratio just under s past it (also with exact delays: tests/test_expdelay.py).
Tests: the encoding admits every run of an independent reference implementation on generated
paths, the target bounds contain the true value, a window of a longer run is a trace, and the
check catches corrupted traces.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import Any

import z3

from ccac.ccas.interface import CCA, FlowContext, FlowValues, StateVar
from ccac.ccas.pcc.shared import pow_bound
from ccac.encode.encoding import all_of, first_case, num, whole
from ccac.core.errors import CcacError
from ccac.core.params import POSITIVE, Param
from ccac.senders.interface import ConcreteSender, SenderStart

INCREASE, DECREASE, NONE = 1, -1, 0
# The check's tolerance for the encoding's outward rounding (pow_bound keeps ~12 digits).
_CHECK_TOLERANCE = Fraction(1, 10 ** 9)


@lru_cache(maxsize=256)
def _targets(s: Fraction, jitter: Fraction, qmax: Fraction, mu_min: Fraction, cap: bool,
             top: int) -> tuple[tuple[Fraction, Fraction], ...]:
    """(lower, upper) rational bounds of target(k) / C for k = 0 .. top (see the docstring)."""
    out = []
    for k in range(top + 1):
        e = (qmax - k) / jitter
        lo, hi = mu_min * pow_bound(s, e, False), mu_min * pow_bound(s, e, True)
        if cap:
            e_top = (qmax - jitter) / jitter
            lo = min(lo, mu_min * pow_bound(s, e_top, False))
            hi = min(hi, mu_min * pow_bound(s, e_top, True))
        out.append((lo, hi))
    return tuple(out)


def targets(p: dict[str, Any], top: int) -> tuple[tuple[Fraction, Fraction], ...]:
    return _targets(Fraction(p["s"]), Fraction(p["jitter"]), Fraction(p["qmax"]), Fraction(p["mu_min"]),
                    bool(p["cap"]), top)


def _bracket(served_past: Any, top: int) -> tuple[dict[int, Any], list[tuple[Any, int]]]:
    """The delay bracket of one sample as cases: ``lo_is[k]`` says q_lo == k (q >= k, i.e. not
    ``served_past(k)``, and q < k + 1), for k = 0 .. top; ``bounded`` lists (case, k) for the
    cases with a finite upper end q_hi = k + 1 (k < top: at k = top nothing bounds q above).
    ``served_past(k)`` is monotone in k, so exactly one case holds."""
    lo_is = {k: all_of(z3.Not(served_past(k)) if k >= 1 else True,
                       served_past(k + 1) if k + 1 <= top else True)
             for k in range(top + 1)}
    return lo_is, [(c, k) for k, c in lo_is.items() if k < top]


def _allowed(lo_is: dict[int, Any], bounded: list[tuple[Any, int]], prev: Any,
             tg: tuple[tuple[Fraction, Fraction], ...], C: Fraction) -> tuple[Any, Any]:
    """(may increase, may decrease) for rate ``prev`` and the bracket: some delay in it puts
    prev below the target (upper bound at q_lo), resp. at or above it (lower bound at q_hi;
    always when q_hi is unbounded)."""
    top = max(lo_is)
    may_increase = z3.Or(*(z3.And(c, prev < tg[k][1] * C) for k, c in lo_is.items()))
    may_decrease = z3.Or(lo_is[top], *(z3.And(c, prev >= tg[k + 1][0] * C) for c, k in bounded))
    return may_increase, may_decrease


class ExpDelay(CCA):
    name = "expdelay"
    summary = ("thesis 9.3 Algorithm 1: every R_m, mu += a if mu < mu_- s^((R_max - q)/D) "
               "(q the latest queueing delay), else mu *= b; paced at mu, no window")
    params = (
        Param("s", 2, "fairness ratio of the design: the target rate grows s-fold per `jitter` "
              "steps less delay", minimum=Fraction(1), exclusive_minimum=True),
        Param("jitter", 1, "D of Eq. 9.2: the non-congestive delay the curve is designed for",
              "steps", **POSITIVE),
        Param("qmax", 5, "R_max: the queueing delay at which the target is mu_min", "steps", **POSITIVE),
        Param("mu_min", Fraction(1, 8), "mu_-: the bottom of the design range (the top is "
              "mu_min * s^((qmax - jitter)/jitter))", "C", **POSITIVE),
        Param("a", Fraction(1, 8), "additive increase per update", "C", **POSITIVE),
        Param("b", Fraction(7, 8), "multiplicative decrease factor, 0 < b < 1", "",
              maximum=Fraction(1), **POSITIVE),
        Param("cap", False, "cap the target at mu_max (the text's 'never beyond mu_+'); "
              "Algorithm 1 as printed has no cap", kind="bool"),
        Param("every", None, "update interval (default R: 'run every R_m')", "steps", "int",
              minimum=Fraction(1)),
    )
    state = (
        StateVar("mu", "the sending rate", "bytes/step", plotted=True),
        StateVar("q_lo", "queueing delay of the latest sample, lower end", "steps", "int", plotted=True),
        StateVar("q_hi", "queueing delay of the latest sample, upper end (T = unbounded)", "steps", "int",
                 plotted=True),
        StateVar("tgt_hi", "target rate at q_lo (rounded up): an increase needs mu below it",
                 "bytes/step", plotted=True),
        StateVar("tgt_lo", "target rate at q_hi (rounded down, 0 if unbounded): a decrease needs "
                 "mu at least it", "bytes/step", plotted=True),
        StateVar("update", "Algorithm 1 ran at step t", "", "bool"),
        StateVar("move", "1 increase, -1 decrease, 0 no update", "", "int", plotted=True,
                 labels=((1, "increase"), (-1, "decrease"))),
    )

    def paced(self, params: dict[str, Any]) -> bool:
        return True

    @staticmethod
    def every(params: dict[str, Any], R: int) -> int:
        return params["every"] if params["every"] is not None else R

    @staticmethod
    def _validate(p: dict[str, Any]) -> None:
        if p["b"] >= 1:
            raise CcacError(f"b = {p['b']} must be below 1 (a decrease)", "cca.b")

    # ------------------------------------------------------------------ encoding
    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        p, R, T, C, v = ctx.params, ctx.R, ctx.T, ctx.C, ctx.v
        self._validate(p)
        every = self.every(p, R)
        tg = targets(p, T)
        mu = ctx.series("mu")
        update = ctx.series("update", "bool")
        for t in range(T):  # the timer: exactly one update in every `every` consecutive steps
            if t >= every:
                ctx.add(update[t] == update[t - every])
            if t + every <= T:
                flags = [z3.If(update[u], 1, 0) for u in range(t, t + every)]
                ctx.add(z3.Sum(*flags) == 1)
        q_lo: list[Any] = []
        q_hi: list[Any] = []
        tgt_hi: list[Any] = []
        tgt_lo: list[Any] = []
        move: list[Any] = []
        for t in range(T):
            ctx.add(mu[t] > 0, ctx.rate[t] == mu[t])
            if t < R:
                q_lo.append(whole(0))
                q_hi.append(whole(T))
                tgt_hi.append(num(tg[0][1] * C))
                tgt_lo.append(num(0))
                move.append(whole(NONE))
                continue
            u = t - R
            lo_is, bounded = _bracket(lambda k: v.served_past(u, k), u)
            q_lo.append(first_case([(c, whole(k)) for k, c in lo_is.items()], whole(0)))
            q_hi.append(first_case([(c, whole(k + 1)) for c, k in bounded], whole(T)))
            tgt_hi.append(first_case([(c, num(tg[k][1] * C)) for k, c in lo_is.items()], num(0)))
            tgt_lo.append(first_case([(c, num(tg[k + 1][0] * C)) for c, k in bounded], num(0)))
            prev = mu[t - 1]
            may_increase, may_decrease = _allowed(lo_is, bounded, prev, tg, C)
            up = z3.And(mu[t] == prev + p["a"] * C, may_increase)
            down = z3.And(mu[t] == p["b"] * prev, may_decrease)
            ctx.add(z3.If(update[t], z3.Or(up, down), mu[t] == prev),
                    ctx.cwnd[t] == ctx.A[t - 1] + ctx.rate[t] - ctx.S[t - R] - ctx.Ld[t])
            move.append(z3.If(update[t], z3.If(mu[t] > prev, INCREASE, DECREASE), NONE))
        return {"mu": mu, "q_lo": q_lo, "q_hi": q_hi, "tgt_hi": tgt_hi, "tgt_lo": tgt_lo,
                "update": update, "move": move}

    def lookback(self, params: dict[str, Any], R: int) -> int:
        """The delay bracket of the sample R steps back, mu at t-1, and the update timer (one
        update in every ``every`` consecutive steps)."""
        return max(R + 1, self.every(params, R))

    def period_divisor(self, params: dict[str, Any], R: int) -> int:
        """The update timer repeats only after whole intervals."""
        return self.every(params, R)

    # ------------------------------------------------------------------ independent check
    def check(self, f: FlowValues) -> list[str]:
        """Algorithm 1's rules on exact values; the target computed here to 50 digits."""
        p, R, T, C = f.params, f.R, f.T, f.C
        every = self.every(p, R)
        st = f.state
        mu, update, move = st["mu"], st["update"], st["move"]
        out: list[str] = []

        def bad(t: int, msg: str) -> None:
            out.append(f"step {t}: {msg}")

        def target(q: int) -> tuple[Fraction, Fraction]:
            """target(q) as an interval: exact for an integer exponent, else the 50-digit value
            widened by the encoding's outward rounding (a relative 10^-9)."""
            e = Fraction(p["qmax"] - q) / p["jitter"]
            if p["cap"]:
                e = min(e, Fraction(p["qmax"] - p["jitter"]) / p["jitter"])
            scale = p["mu_min"] * C
            if e.denominator == 1:
                exact = scale * Fraction(p["s"]) ** e.numerator
                return exact, exact
            with localcontext() as dc:
                dc.prec = 50
                base = Fraction(p["s"])
                power = ((Decimal(base.numerator) / Decimal(base.denominator)).ln()
                         * (Decimal(e.numerator) / Decimal(e.denominator))).exp()
                value = scale * Fraction(power)
            return value * (1 - _CHECK_TOLERANCE), value * (1 + _CHECK_TOLERANCE)

        for t in range(T):
            if t >= every and update[t] != update[t - every]:
                bad(t, f"update flag differs from step {t - every}'s: the timer fires every {every} steps")
            if t + every <= T and sum(1 for u in range(t, t + every) if update[u]) != 1:
                bad(t, f"not exactly one update in steps {t} .. {t + every - 1}")
        for t in range(T):
            if mu[t] <= 0:
                bad(t, f"rate {mu[t]} not positive")
            if f.rate is None or f.rate[t] != mu[t]:
                bad(t, "the pacing rate is not mu")
            if t < R:
                continue
            lo, hi = f.delay_range(t - R)
            shown_lo, shown_hi = st["q_lo"][t], (None if st["q_hi"][t] == T else st["q_hi"][t])
            # A byte admitted before step 0 waited at least lo steps, how long is unknown: any
            # bracket [q, q + 1] with q >= lo, or an unbounded one, is what some past gives.
            possible = (shown_lo == lo and shown_hi == hi) if hi is not None else (
                shown_lo >= lo and (shown_hi is None or shown_hi == shown_lo + 1))
            if not possible:
                bad(t, f"delay bracket [{st['q_lo'][t]}, {st['q_hi'][t]}] but the curves give [{lo}, {hi}]")
            lo, hi = shown_lo, shown_hi
            if not target(lo)[0] <= st["tgt_hi"][t] <= target(lo)[1] or not (
                    target(hi)[0] <= st["tgt_lo"][t] <= target(hi)[1] if hi is not None else st["tgt_lo"][t] == 0):
                bad(t, "tgt_hi / tgt_lo are not the target at the bracket's ends")
            if f.cwnd[t] != f.A[t - 1] + mu[t] - f.S[t - R] - f.Ld[t]:
                bad(t, "cwnd is not the bytes in flight after sending")
            prev = mu[t - 1]
            if not update[t]:
                if mu[t] != prev or move[t] != NONE:
                    bad(t, f"rate changed from {prev} to {mu[t]} without an update")
            elif mu[t] == prev + p["a"] * C and move[t] == INCREASE:
                if not prev < target(lo)[1]:
                    bad(t, f"increased, but rate {float(prev):.6g} is not below the target "
                           f"{float(target(lo)[1]):.6g} for the least delay {lo} of the sample")
            elif mu[t] == p["b"] * prev and move[t] == DECREASE:
                if hi is not None and not prev >= target(hi)[0]:
                    bad(t, f"decreased, but rate {float(prev):.6g} is below the target "
                           f"{float(target(hi)[0]):.6g} for the largest delay {hi} of the sample")
            else:
                bad(t, f"rate {mu[t]} (move {move[t]}) is neither {prev} + a*C nor b * {prev}")
        return out

    def concrete(self, start: SenderStart) -> ConcreteSender:
        from ccac.senders.expdelay import ExpDelaySender

        return ExpDelaySender(start)


ALGORITHM = ExpDelay()
