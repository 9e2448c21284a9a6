"""Shared machinery of the PCC family (Allegro, Vivace, Proteus): no ``ALGORITHM`` here.

PCC senders are rate-based learners. Time is cut into *monitor intervals* (MIs); the sender
sends at a fixed rate during an MI, turns what it observes about that MI's packets (bytes
sent, bytes lost, RTT samples) into a number, the *utility*, and moves its rate in the
direction that empirically had the higher utility. This module holds what the three
algorithms share, each piece with the argument why it over-approximates (every run of the
real algorithm satisfies the constraints):

Scale (the papers' constants have units)
----------------------------------------
The model's link serves C bytes per step; the papers' utilities take rates in Mbps and RTT
deviations in seconds. Two parameters give the constants their meaning: ``link_mbps`` is the
Mbps value of the rate C (so a rate r bytes/step is ``x = r * link_mbps / C`` Mbps) and
``step_seconds`` is the length of a step (R steps are one min RTT). Vivace's c = 11.35 means
"tolerate 5% random loss" only at x = 100 Mbps (c = t x^(t-1) / p), and b = 900 assumes
1000 Mbps (b = t n^(2-t) C^(t-1) with n = 1000): without a scale the constants mean nothing.

Sending
-------
PCC has no congestion window (Allegro section 3: "There is no notion of congestion window"):
the sender is paced and always backlogged. The model's sender is
``A_f[t] = min(max(S_f[t-R] + Ld_f[t] + cwnd[t], A_f[t-1]), A_f[t-1] + rate[t])``; the encodings
set ``cwnd[t] = A_f[t-1] + rate[t] - S_f[t-R] - Ld_f[t]`` from step R on (the bytes in flight
after this step's sends), the smallest window that never binds, so ``A_f[t] = A_f[t-1] +
rate[t]`` exactly. (It is >= rate > 0 because S_f[t-R] + Ld_f[t] <= A_f[t-1] in the model.)
Before step R the window is history (free).

RTT samples (one per step, the thesis' discretization)
------------------------------------------------------
The real sender gets one RTT sample per ACK and attributes it to the MI in which the packet
was *sent*. The model has one sample per step: ``rtt[t]``, the queueing delay (steps) of a
byte sent at the end of step t (the pacer spreads a step's bytes evenly, so one is sent at
time t). In the path-server (thesis 4.2) a byte admitted at time t with ``B`` bytes of the
bottleneck queue ahead of it, ``B = max(0, (A-L)[t] - (C*t - W[t]))`` (all flows: the queue is
FIFO), waits until the token line ``C*t - W`` reaches it -- exactly B/C, since no token is
wasted while the queue is non-empty -- and is then served within D steps (S(t) >= C*(t-D) -
W(t-D)). So its queueing delay lies in ``[B/C, B/C + D]``: the state ``rtt_min[t] = B/C`` and
``rtt_min[t] <= rtt[t] <= rtt_min[t] + D``, exact in continuous time. Successive samples are
treated as independent inside their bands (the real ones are correlated by FIFO order): a
superset. A lost byte's would-be delay is still in the band, so samples exist at every step.
The RTT itself is R + rtt (the propagation part is constant and cancels in every gradient and
deviation below).

Per-MI measurements
-------------------
* bytes sent ``a = A_end - A_start`` (the rate is constant in an MI and pacing binds, so
  ``a = rate * M`` for an MI of M steps), bytes lost ``l = L_f[end] - L_f[start - 1]`` (bytes
  are lost on arrival in the model, so these are exactly the MI's lost bytes; the sender knows
  them once their fate is known, see "waiting" below). The loss rate is l / a, and the papers'
  ``x * L`` (rate times loss rate) is ``(link_mbps / C) * l / M``: linear.
* RTT gradient: the least-squares slope of the MI's M samples against their send times
  (Vivace 4.3), a fixed linear combination ``sum_j w_j rtt_j`` with
  ``w_j = (j - (M-1)/2) / sum_k (k - (M-1)/2)^2`` (:func:`slope_weights`), in steps per step
  (= seconds per second, the unit of d(RTT)/dt). M = 2: ``y2 - y1``; M = 3: ``(y3 - y1)/2``.
* RTT deviation (Proteus 4.2): the population standard deviation of the MI's samples,
  ``||d||_2 / sqrt(M)`` with ``d_j = y_j - mean``. A 2-norm is not linear; it is bounded
  between the 1- and infinity-norms, ``max(||d||_1/sqrt(M), ||d||_inf) <= ||d||_2 <=
  min(||d||_1, sqrt(M) ||d||_inf)`` (:func:`norm2_bounds`; sqrt(M) rounded outward to a
  rational). Exact for M = 2 (``|y2 - y1| / 2``). The same bounds give Proteus' regression
  error (the RMS of the regression residuals, themselves linear in the samples).

Non-linear terms and their enclosures
-------------------------------------
* ``x^t`` (concave for 0 < t < 1) and ``x^(t-1)`` (convex, decreasing) are enclosed on a
  geometric grid of rates ``x_i`` (:class:`PowerTable`; parameters ``grid_lo``, ``grid_hi``
  in multiples of C and the ratio ``grid`` between neighbours, the resolution). In a bin
  ``[x_i, x_(i+1)]`` the chord through the endpoints (values rounded outward) and a tangent at
  the bin's midpoint (with an exactly computed intercept, rounded outward) enclose the power;
  below the grid and above it the bounds that hold on the unbounded bins are used (a tangent,
  the chord from 0, a constant). The gap between chord and tangent, relative to the value, is
  at most about ``p (1 - p) (grid - 1)^2 / 8`` for x^p: 0.06% for t = 0.9 at grid = 1.25
  (:func:`power_gap` computes it exactly per table). Every rounding is outward, so the
  enclosure contains the true value (the reference implementations compute x^t to 40 digits
  and the conformance tests check that it falls inside).
* Products of a rate and a signal (``x * H`` with H the latency penalty per unit rate, and
  ``loss / x``) are enclosed per bin with a sign split: in ``[x_i, x_(i+1)]``, ``x*H`` lies
  between ``x_i*H`` and ``x_(i+1)*H`` (the order depends on the sign of H). Relative error up
  to ``grid - 1`` when the signal is non-zero; exact when it is 0.
* The bin is chosen by the solver among those containing the rate (booleans; at a grid point
  both neighbours are allowed): one selection per step, shared by every enclosure of that step.

Utility comparisons of a probe pair
-----------------------------------
For the Vivace-family utility ``u(x) = x^t - x*H(x) - c*x*L`` probed at ``x(1+eps)`` and
``x(1-eps)``: ``du = u+ - u- = kappa * x^t - x * H_pair - c * (link_mbps/C) * (l+ - l-) / M``
with ``kappa = (1+eps)^t - (1-eps)^t`` (a constant, enclosed to 40 digits) and the gradient
``gamma = du / (2 eps x) = (kappa x^(t-1) - H_pair - c (link_mbps/C) (l+ - l-) / (M x)) / (2 eps)``.
The encoding keeps both: ``du`` with the product ``x*H`` enclosed (exact without a latency
signal) and ``gamma`` with ``loss/x`` enclosed (exact without loss), tied by their common sign.
So the direction is exact up to the power enclosure when only one signal is present, and a
superset when both are.

Waiting for fate, decisions and history
---------------------------------------
An MI's utility exists only when the fate of all its packets is known (Proteus 3: "calculates
the utility for each MI when all packets sent in that MI are acknowledged or lost"). In the
model the sender knows at step t the ACKs of bytes served by t-R and the detected losses
``Ld_f[t]``; the fate of an MI ending at step e is known at t iff ``S_f[t-R] >= (A_f-L_f)[e]``
and ``Ld_f[t] >= L_f[e]``. Until then the sender keeps sending (at the central rate, like the
public PCC code; ``wait = "band"`` lets the solver pick any rate between the probe rates).
The rate control therefore runs as a per-step state machine whose phase, position in the MI
and registers (the samples and losses of each MI of the round) are solver variables, so MIs
and rounds can start at any step. Everything before the first decision is free history: the
state at step 0 is any state (registers included), and until step R the "fate known" test is
a solver choice (it reads ACKs from before the trace). Every constraint reads only the current
and the previous step, so a window cut from a longer run satisfies it (tests check this with
``ccac.window.window_is_trace``).

Engine note: ``ccac`` plots cwnd and the pacing rate per flow, not CCA state; the PCC state
variables are in the trace table, CSV/JSON and queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import Any, Sequence

import z3

from ccac.cca import FlowContext
from ccac.encoding import Cond, Term
from ccac.errors import CcacError
from ccac.params import NONNEG, POSITIVE, Param



# ====================================================================== parameters
def scale_params(step_seconds: bool = True) -> tuple[Param, ...]:
    """The scale every PCC utility needs: the Mbps value of C, and (for RTT deviations) the step."""
    out = [Param("link_mbps", 100, "the link rate C in Mbps (scales the utility's rates: "
                 "x = rate * link_mbps / C)", "Mbps", **POSITIVE)]
    if step_seconds:
        out.append(Param("step_seconds", Fraction(15, 1000), "length of one step (R steps are one "
                         "min RTT; default: a 30 ms RTT at R = 2)", "s", **POSITIVE))
    return tuple(out)


def grid_params() -> tuple[Param, ...]:
    """Resolution of the rate grid the non-linear enclosures use."""
    return (
        Param("grid", Fraction(5, 4), "ratio between neighbouring rates of the enclosure grid "
              "(resolution: the x^t gap is about t(1-t)(grid-1)^2/8, products up to grid-1)",
              minimum=Fraction(1), exclusive_minimum=True),
        Param("grid_lo", Fraction(1, 8), "lowest rate of the enclosure grid", "C", **POSITIVE),
        Param("grid_hi", Fraction(4), "highest rate of the enclosure grid (beyond: looser "
              "one-sided bounds)", "C", **POSITIVE),
    )


def mi_steps(params: dict[str, Any], R: int) -> int:
    """MI length in steps: ``mi`` if given, else one min RTT (R steps)."""
    return int(params["mi"]) if params.get("mi") is not None else R


# ====================================================================== exact numerics
def _decimal(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


def pow_value(x: Fraction, p: Fraction, digits: int = 60) -> Fraction:
    """x**p to about ``digits`` significant digits (Python's decimal: correctly rounded
    ln/exp, so the relative error is below 10**-(digits - 5))."""
    if x <= 0:
        raise ValueError("pow_value needs x > 0")
    if p.denominator == 1 and abs(p.numerator) <= 64:
        return x ** p.numerator
    with localcontext() as ctx:
        ctx.prec = digits
        return Fraction(_decimal(x) ** _decimal(p))


def _round(v: Fraction, up: bool, digits: int = 12) -> Fraction:
    """v rounded outward (up or down) to about ``digits`` significant digits: a short rational."""
    if v == 0:
        return v
    exponent = math.floor(math.log10(abs(float(v)))) - digits
    unit = Fraction(10) ** exponent
    q = v / unit
    n = math.ceil(q) if up else math.floor(q)
    return n * unit


def pow_bound(x: Fraction, p: Fraction, up: bool) -> Fraction:
    """A short rational >= x**p (up) or <= x**p (down)."""
    v = pow_value(x, p)
    if v == x ** 0 or (p.denominator == 1 and abs(p.numerator) <= 64):
        return v
    margin = v / 10 ** 40
    return _round(v + margin if up else v - margin, up)


@dataclass(frozen=True)
class Line:
    """y = slope * x + intercept."""

    slope: Fraction
    intercept: Fraction

    def at(self, x: Any) -> Any:
        return self.slope * x + self.intercept


@dataclass(frozen=True)
class Bin:
    """A rate interval [lo, hi] (hi None = unbounded) with the lines bounding a function on it."""

    lo: Fraction
    hi: Fraction | None
    lower: tuple[Line, ...]
    upper: tuple[Line, ...]

    def contains(self, x: Fraction) -> bool:
        return self.lo <= x and (self.hi is None or x <= self.hi)


def grid_points(lo: Fraction, hi: Fraction, ratio: Fraction) -> list[Fraction]:
    """lo, lo*ratio, ... up to the first point >= hi; each rounded to a short rational."""
    if not (0 < lo < hi) or ratio <= 1:
        raise CcacError("the enclosure grid needs 0 < grid_lo < grid_hi and grid > 1")
    points = [lo]
    while points[-1] < hi:
        nxt = _round(points[-1] * ratio, up=True, digits=6)
        points.append(max(nxt, points[-1] * ratio))
        if len(points) > 400:
            raise CcacError("the enclosure grid has more than 400 points; raise grid or narrow it")
    return points


def tangent(p: Fraction, at: Fraction, upper: bool) -> Line:
    """A line touching x**p near ``at`` that bounds it for every x > 0 (above for concave p in
    (0,1), below for convex p < 0 or p > 1): slope s = p*at^(p-1) rounded to a short rational,
    intercept max/min over x of (x^p - s x) = (1 - p) (s/p)^(p/(p-1)), rounded outward."""
    s = _round(p * pow_value(at, p - 1), up=True, digits=8)
    ratio = s / p
    intercept = (1 - p) * pow_value(ratio, p / (p - 1))
    margin = abs(intercept) / 10 ** 40 + Fraction(1, 10 ** 30)
    intercept = _round(intercept + margin if upper else intercept - margin, up=upper)
    return Line(s, intercept)


def chord(p: Fraction, a: Fraction, b: Fraction, upper: bool) -> Line:
    """The chord of x**p over [a, b] through endpoint values rounded outward."""
    fa, fb = pow_bound(a, p, upper), pow_bound(b, p, upper)
    slope = (fb - fa) / (b - a)
    return Line(slope, fa - slope * a)


@lru_cache(maxsize=64)
def power_table(p: Fraction, points: tuple[Fraction, ...]) -> tuple[Bin, ...]:
    """Bins covering (0, inf) with lines enclosing x**p: below the grid, between neighbours,
    above it. Concave (0 < p < 1): chords below, tangents above. Convex decreasing (p < 0):
    tangents below, chords above."""
    if p == 0 or p == 1:
        exact = Line(Fraction(0), Fraction(1)) if p == 0 else Line(Fraction(1), Fraction(0))
        return (Bin(Fraction(0), None, (exact,), (exact,)),)
    concave = 0 < p < 1
    if not (concave or p < 0):
        raise CcacError(f"power enclosure needs p < 1, got {p}")
    bins = []
    x0, xn = points[0], points[-1]
    if concave:
        bins.append(Bin(Fraction(0), x0, (Line(pow_bound(x0, p, False) / x0, Fraction(0)),),
                        (tangent(p, x0, True),)))
        for a, b in zip(points, points[1:]):
            bins.append(Bin(a, b, (chord(p, a, b, False),), (tangent(p, (a + b) / 2, True),)))
        bins.append(Bin(xn, None, (Line(Fraction(0), pow_bound(xn, p, False)),), (tangent(p, xn, True),)))
    else:
        bins.append(Bin(Fraction(0), x0, (tangent(p, x0, False),), ()))
        for a, b in zip(points, points[1:]):
            bins.append(Bin(a, b, (tangent(p, (a + b) / 2, False),), (chord(p, a, b, True),)))
        bins.append(Bin(xn, None, (tangent(p, xn, False), Line(Fraction(0), Fraction(0))),
                        (Line(Fraction(0), pow_bound(xn, p, True)),)))
    return tuple(bins)


def power_gap(p: Fraction, points: Sequence[Fraction]) -> float:
    """The largest relative gap (upper - lower) / x^p over the grid's inner bins, sampled."""
    worst = 0.0
    for b in power_table(p, tuple(points))[1:-1]:
        for k in range(1, 16):
            x = b.lo + (b.hi - b.lo) * k / 16
            up = min(float(line.at(x)) for line in b.upper)
            lo = max(float(line.at(x)) for line in b.lower)
            worst = max(worst, (up - lo) / float(x) ** float(p))
    return worst


def kappa_bounds(eps: Fraction, t: Fraction) -> tuple[Fraction, Fraction]:
    """Rational bounds of (1+eps)^t - (1-eps)^t."""
    return (pow_bound(1 + eps, t, False) - pow_bound(1 - eps, t, True),
            pow_bound(1 + eps, t, True) - pow_bound(1 - eps, t, False))


def slope_weights(M: int) -> list[Fraction]:
    """Least-squares slope of M samples at unit spacing: slope = sum_j w_j y_j."""
    mean = Fraction(M - 1, 2)
    denom = sum((j - mean) ** 2 for j in range(M))
    if denom == 0:
        raise CcacError("an RTT gradient needs at least 2 samples per MI (MI of >= 2 steps)")
    return [(j - mean) / denom for j in range(M)]


def residual_rows(M: int) -> list[list[Fraction]]:
    """Regression residuals e = y - (mean + slope*(j - mean_j)) as rows of coefficients on y."""
    w = slope_weights(M)
    mean = Fraction(M - 1, 2)
    rows = []
    for i in range(M):
        rows.append([(1 if j == i else 0) - Fraction(1, M) - w[j] * (i - mean) for j in range(M)])
    return rows


def deviation_rows(M: int) -> list[list[Fraction]]:
    """d = y - mean(y) as rows of coefficients on y."""
    return [[(1 if j == i else 0) - Fraction(1, M) for j in range(M)] for i in range(M)]


def sqrt_bounds(M: int) -> tuple[Fraction, Fraction]:
    """Rational bounds lo <= sqrt(M) <= hi."""
    r = math.isqrt(M)
    if r * r == M:
        return Fraction(r), Fraction(r)
    with localcontext() as ctx:
        ctx.prec = 40
        s = Fraction(Decimal(M).sqrt())
    lo, hi = _round(s - Fraction(1, 10 ** 30), False), _round(s + Fraction(1, 10 ** 30), True)
    return lo, hi


def rms_bounds_numbers(values: Sequence[Fraction]) -> tuple[Fraction, Fraction]:
    """Rational bounds of sqrt(sum v^2 / n) from the 1- and infinity-norms (as the encoding).
    The vectors used here (deviations from the mean, regression residuals) sum to 0, so with
    n = 2 both entries have the same magnitude and the value is exactly that magnitude."""
    n = len(values)
    s_lo, s_hi = sqrt_bounds(n)
    n1 = sum((abs(v) for v in values), Fraction(0))
    ninf = max((abs(v) for v in values), default=Fraction(0))
    if n == 2:
        return ninf, ninf
    lo = max(n1 / s_hi, ninf) / s_hi
    hi = min(n1, s_hi * ninf) / s_lo
    return lo, hi


# ====================================================================== encoding helpers
def absolute(x: Term) -> Term:
    return z3.If(x >= 0, x, -x)


def rms_bounds_terms(terms: Sequence[Term]) -> tuple[Term, Term]:
    """Linear terms lo <= sqrt(sum x^2 / n) <= hi for a zero-sum vector (module docstring)."""
    n = len(terms)
    s_lo, s_hi = sqrt_bounds(n)
    abs_terms = [absolute(x) for x in terms]
    n1 = z3.Sum(*abs_terms) if n > 1 else abs_terms[0]
    ninf = abs_terms[0]
    for a in abs_terms[1:]:
        ninf = z3.If(a >= ninf, a, ninf)
    if n == 2:  # zero-sum vectors: |x0| = |x1| (see rms_bounds_numbers)
        return ninf, ninf
    lo = z3.If(n1 / s_hi >= ninf, n1 / s_hi, ninf) / s_hi
    hi = z3.If(n1 <= s_hi * ninf, n1, s_hi * ninf) / s_lo
    return lo, hi


def linear(coefficients: Sequence[Fraction], xs: Sequence[Term]) -> Term:
    parts = [c * x for c, x in zip(coefficients, xs) if c != 0]
    return z3.Sum(*parts) if len(parts) > 1 else (parts[0] if parts else z3.RealVal(0))


class RateGrid:
    """The bins of the enclosure grid (in Mbps) and one selection per step of each flow.

    ``select(t)`` returns booleans, one per bin, each implying that the rate ``x`` of step t
    lies in its bin; at least one holds. Every enclosure of step t uses these same booleans."""

    def __init__(self, ctx: FlowContext, x: Sequence[Term], points_mbps: Sequence[Fraction], name: str):
        self.ctx = ctx
        self.points = tuple(points_mbps)
        self.ranges = [(Fraction(0), self.points[0])] + list(zip(self.points, self.points[1:])) + \
            [(self.points[-1], None)]
        self.sel = [[ctx.enc.step("bool", f"{name}_bin{b}", t, ctx.n) for t in range(ctx.T)]
                    for b in range(len(self.ranges))]
        for t in range(ctx.T):
            ctx.add(z3.Or(*(self.sel[b][t] for b in range(len(self.ranges)))))
            for b, (lo, hi) in enumerate(self.ranges):
                ctx.add(z3.Implies(self.sel[b][t], z3.And(x[t] >= lo, *( [x[t] <= hi] if hi is not None else []))))

    def power(self, t: int, x: Term, value: Term, p: Fraction) -> list[Cond]:
        """Constraints enclosing ``value`` ~ x**p under step t's bin selection."""
        table = power_table(p, self.points)
        out = []
        for b, bin_ in enumerate(table):
            bounds = [value >= line.at(x) for line in bin_.lower] + [value <= line.at(x) for line in bin_.upper]
            out.append(z3.Implies(self.sel[b][t], z3.And(*bounds)))
        return out

    def product(self, t: int, value: Term, h: Term) -> list[Cond]:
        """``value`` ~ x * h under step t's bin selection (sign split on h)."""
        out = []
        for b, (lo, hi) in enumerate(self.ranges):
            pos = [value >= lo * h] + ([value <= hi * h] if hi is not None else [])
            neg = [value <= lo * h] + ([value >= hi * h] if hi is not None else [])
            out.append(z3.Implies(self.sel[b][t], z3.And(z3.Implies(h >= 0, z3.And(*pos)),
                                                          z3.Implies(h < 0, z3.And(*neg)))))
        out.append(z3.Implies(h == 0, value == 0))  # exact where an unbounded bin would not be
        return out

    def quotient(self, t: int, value: Term, h: Term) -> list[Cond]:
        """``value`` ~ h / x under step t's bin selection (sign split on h)."""
        out = []
        for b, (lo, hi) in enumerate(self.ranges):
            pos = ([value >= h / hi] if hi is not None else [value >= 0]) + ([value <= h / lo] if lo > 0 else [])
            neg = ([value <= h / hi] if hi is not None else [value <= 0]) + ([value >= h / lo] if lo > 0 else [])
            out.append(z3.Implies(self.sel[b][t], z3.And(z3.Implies(h >= 0, z3.And(*pos)),
                                                          z3.Implies(h < 0, z3.And(*neg)))))
        out.append(z3.Implies(h == 0, value == 0))
        return out


# ====================================================================== checking helpers
# Independent of the z3 helpers above: plain interval arithmetic on exact numbers, used by the
# CCAs' check() methods. They share only the grid points and the line tables (pure numbers
# that define the enclosure).
def bins_containing(points: Sequence[Fraction], x: Fraction) -> list[tuple[int, Fraction, Fraction | None]]:
    ranges = [(Fraction(0), points[0])] + list(zip(points, points[1:])) + [(points[-1], None)]
    return [(b, lo, hi) for b, (lo, hi) in enumerate(ranges) if lo <= x and (hi is None or x <= hi)]


def power_interval(p: Fraction, points: Sequence[Fraction], b: int, x: Fraction) -> tuple[Fraction | None, Fraction | None]:
    bin_ = power_table(p, tuple(points))[b]
    lo = max((line.at(x) for line in bin_.lower), default=None)
    hi = min((line.at(x) for line in bin_.upper), default=None)
    return lo, hi


def product_interval(lo: Fraction, hi: Fraction | None, h: Fraction) -> tuple[Fraction | None, Fraction | None]:
    """x*h for x in [lo, hi]."""
    if h >= 0:
        return lo * h, (hi * h if hi is not None else None)
    return (hi * h if hi is not None else None), lo * h


def quotient_interval(lo: Fraction, hi: Fraction | None, h: Fraction) -> tuple[Fraction | None, Fraction | None]:
    """h/x for x in [lo, hi] (lo may be 0: unbounded)."""
    a = (h / hi) if hi is not None else Fraction(0)
    b = (h / lo) if lo > 0 else None
    if h >= 0:
        return a, b
    return b, a


def within(v: Fraction, lo: Fraction | None, hi: Fraction | None) -> bool:
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def add_intervals(*parts: tuple[Fraction | None, Fraction | None]) -> tuple[Fraction | None, Fraction | None]:
    lo: Fraction | None = Fraction(0)
    hi: Fraction | None = Fraction(0)
    for a, b in parts:
        lo = None if (lo is None or a is None) else lo + a
        hi = None if (hi is None or b is None) else hi + b
    return lo, hi


def scale_interval(k: Fraction, iv: tuple[Fraction | None, Fraction | None]) -> tuple[Fraction | None, Fraction | None]:
    a, b = iv
    if k >= 0:
        return (None if a is None else k * a), (None if b is None else k * b)
    return (None if b is None else k * b), (None if a is None else k * a)


# ====================================================================== the Vivace / Proteus engine
WAIT_CHOICES = ("base", "band")


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
        Param("mi", None, "monitor interval length (default R: one min RTT, Vivace table 1)", "steps",
              "int", minimum=Fraction(1)),
        Param("mi_timeout", 4, "MI timeout: once the fate of the round's last MI has been unknown for "
              "this long after it ended the rate may be halved (Vivace 4.3; measured in min RTTs, so "
              "any longer timer of a real sender is covered)", "RTTs", "int", minimum=Fraction(1)),
        Param("wait", "base", "rate while waiting for the last probe's fate: base = the central rate "
              "(as the public PCC code); band = anything between the probe rates", kind="choice",
              choices=WAIT_CHOICES),
    ) + scale_params(step_seconds) + grid_params()


def amplifier(tau: int) -> Fraction:
    """Vivace's confidence amplifier m(tau): table 1 says tau for tau <= 3 and 2*tau - 3 above,
    section 4.2 says m(0) = 1; this reading takes m(tau) = max(1, tau) for tau <= 3."""
    return Fraction(max(1, tau)) if tau <= 3 else Fraction(2 * tau - 3)


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


class GradientPCC:
    """The Vivace rate controller (section 4) as a per-step state machine, for Vivace and Proteus.

    A round is ``pairs`` probe pairs back to back (2*pairs MIs of M steps; each pair's order is a
    solver choice), then waiting until the fate of the last MI is known, then a decision (or an
    MI timeout: halve). Subclasses (which are also :class:`ccac.cca.CCA`) provide ``variant``.
    """

    def variant(self, p: dict[str, Any], ctx_C: Fraction) -> Variant:  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------------ shared declarations
    STATE_DOC = {
        "base": ("central (base) rate r of the current round", "bytes/step", "real"),
        "phase": ("probe MI index 0 .. 2*pairs-1, or 2*pairs while waiting for the last MI's fate", "", "int"),
        "pos": ("step within the MI (0 .. M-1), or steps since the last MI ended while waiting", "steps", "int"),
        "order": ("bit k set: pair k probes r(1+eps) first (solver-chosen per round)", "", "int"),
        "rtt": ("queueing-delay part of the RTT sample of a byte sent at the end of step t", "steps", "real"),
        "rtt_min": ("its lower end: bottleneck backlog / C (the sample lies in [rtt_min, rtt_min + D])", "steps", "real"),
        "event": ("0 none, 1 rate decision, 2 double-check rerun, 3 MI timeout (rate halved)", "", "int"),
        "dir": ("direction of the last decision (+1 / -1)", "", "int"),
        "tau": ("consecutive same-direction decisions (confidence amplifier m(tau))", "", "int"),
        "omega_k": ("change-boundary counter k: omega = omega0 + k*delta", "", "int"),
        "gamma_used": ("utility gradient applied at a rate decision (0 elsewhere)", "utility/Mbps", "real"),
    }

    PLOTTED = ("base", "rtt", "gamma_used")   # the rate, what it reacts to, and the step taken

    def pcc_state(self, pairs: int, double_check: bool) -> tuple:
        from ccac.cca import StateVar

        names = ["base", "phase", "pos", "order", "rtt", "rtt_min", "event", "dir", "tau", "omega_k", "gamma_used"]
        out = [StateVar(n, *self.STATE_DOC[n], plotted=n in self.PLOTTED) for n in names]
        for k in range(pairs):
            suffix = "" if pairs == 1 else str(k + 1)
            out.append(StateVar(f"du{suffix}", f"pair {k + 1}: u(r(1+eps)) - u(r(1-eps)) at a decision (0 elsewhere)",
                                "utility", "real"))
            out.append(StateVar(f"gamma{suffix}", f"pair {k + 1}: utility gradient du / (2 eps x) at a decision",
                                "utility/Mbps", "real"))
        if double_check:
            out.append(StateVar("rerun", "1 while re-running a pair to double-check an abnormal one", "", "int"))
        return tuple(out)

    @staticmethod
    def weights(var: Variant, M: int) -> list[Fraction]:
        """RTT-slope weights; an MI of one step has no gradient, allowed only without latency terms."""
        if M < 2:
            if var.b != 0 or var.dev_coeff != 0:
                raise CcacError("RTT gradients and deviations need MIs of at least 2 steps: set cca.mi "
                                "(or R >= 2), or use a loss-only utility")
            return [Fraction(0)] * M
        return slope_weights(M)

    @staticmethod
    def pair_names(pairs: int) -> list[tuple[str, str]]:
        return [(f"du{'' if pairs == 1 else k + 1}", f"gamma{'' if pairs == 1 else k + 1}") for k in range(pairs)]

    # ------------------------------------------------------------------ encoding
    def encode_gradient(self, ctx: FlowContext) -> dict[str, list[Any]]:
        p, R, T, C = ctx.params, ctx.R, ctx.T, ctx.C
        var = self.variant(p, C)
        K = var.pairs
        W = 2 * K
        M = mi_steps(p, R)
        TO = int(p["mi_timeout"]) * R
        eps, t_exp = p["eps"], p["t"]
        scale = p["link_mbps"] / C                     # Mbps per byte/step
        kap_lo, kap_hi = kappa_bounds(eps, t_exp)
        cK = p["c"] * scale
        theta0, omega0, delta = p["theta0"], p["omega0"], p["delta"]
        tau_cap, k_cap = int(p["tau_cap"]), int(p["k_cap"])
        weights = self.weights(var, M)
        v = ctx.v

        base = ctx.series("base")
        phase, pos = ctx.series("phase", "int"), ctx.series("pos", "int")
        obit = [ctx.series(f"pcc_order{k}", "bool") for k in range(K)]
        order = [z3.Sum(*(z3.If(obit[k][t], 2 ** k, 0) for k in range(K))) if K > 1
                 else z3.If(obit[0][t], 1, 0) for t in range(T)]
        event, dirn = ctx.series("event", "int"), ctx.series("dir", "int")
        tau, kk = ctx.series("tau", "int"), ctx.series("omega_k", "int")
        rtt, gamma_used = ctx.series("rtt"), ctx.series("gamma_used")
        du = [ctx.series(d) for d, _ in self.pair_names(K)]
        gam = [ctx.series(g) for _, g in self.pair_names(K)]
        declares_rerun = any(sv.name == "rerun" for sv in getattr(self, "state", ()))
        rerun = ctx.series("rerun", "int") if declares_rerun else None
        gamma_first = ctx.series("pcc_gamma_first") if declares_rerun else None
        if rerun is not None and not var.double_check:
            ctx.add(*(rerun[t] == 0 for t in range(T)))
        reg = [[ctx.series(f"pcc_y{i}_{j}") for j in range(M)] for i in range(W)]
        lost = [ctx.series(f"pcc_lost{i}") for i in range(W)]
        mark_adm, mark_L = ctx.series("pcc_mark_adm", axis="S"), ctx.series("pcc_mark_L", axis="L")
        fate_var = ctx.series("pcc_fate", "bool")
        votes = [ctx.series(f"pcc_vote{k}", "bool") for k in range(K)]
        agree = ctx.series("pcc_agree", "bool") if var.double_check else None
        power, inverse = ctx.series("pcc_xt"), ctx.series("pcc_xt1")       # ~ x^t, x^(t-1)
        zprod = [ctx.series(f"pcc_xh{k}") for k in range(K)]                # ~ x * H_k
        yquot = [ctx.series(f"pcc_lx{k}") for k in range(K)]                # ~ Lambda_k / x
        q_move = ctx.series("pcc_q")                                       # unclipped rate change
        clip = ctx.series("pcc_clip", "bool")
        needs_sigma = var.dev_coeff > 0
        sigma = [ctx.series(f"pcc_sigma{i}") for i in range(W)] if needs_sigma else None
        tol = [ctx.series(f"pcc_tol{i}", "bool") for i in range(W)] if var.regression_tolerance and M >= 3 else None
        trend_g = [ctx.series(f"pcc_tg{i}", "bool") for i in range(W)] if var.trending == "free" else None
        trend_s = [ctx.series(f"pcc_ts{i}", "bool") for i in range(W)] if var.trending == "free" else None

        x_mbps = [base[t] * scale for t in range(T)]
        points = grid_points(p["grid_lo"] * p["link_mbps"], p["grid_hi"] * p["link_mbps"], p["grid"])
        grid = RateGrid(ctx, x_mbps, points, "pcc_x")

        adm_f = [ctx.A[t] - ctx.L[t] for t in range(T)]
        rtt_min = [z3.If(v.admitted(t) > v.token_line(t), (v.admitted(t) - v.token_line(t)) / C, 0) for t in range(T)]

        def pick(k: int, t: int, first_high: Any, second_high: Any) -> Any:
            """A term of pair k at step t: ``first_high`` if its first MI probed r(1+eps)."""
            return z3.If(obit[k][t], first_high, second_high)

        for t in range(T):
            # ---- domains and per-step rules
            ctx.add(base[t] > 0, phase[t] >= 0, phase[t] <= W,
                    z3.Or(dirn[t] == 1, dirn[t] == -1), tau[t] >= 0, tau[t] <= tau_cap,
                    kk[t] >= 0, kk[t] <= k_cap, event[t] >= 0, event[t] <= 3,
                    z3.Implies(phase[t] < W, z3.And(pos[t] >= 0, pos[t] <= M - 1)),
                    z3.Implies(phase[t] == W, z3.And(pos[t] >= 1, pos[t] <= TO)))
            if rerun is not None:
                ctx.add(z3.Or(rerun[t] == 0, rerun[t] == 1))
            ctx.add(rtt[t] >= rtt_min[t], rtt[t] <= rtt_min[t] + ctx.D)
            for i in range(W):
                k, first = i // 2, i % 2 == 0
                high = obit[k][t] if first else z3.Not(obit[k][t])
                ctx.add(z3.Implies(phase[t] == i, ctx.rate[t] == z3.If(high, (1 + eps) * base[t], (1 - eps) * base[t])))
            if p["wait"] == "base":
                ctx.add(z3.Implies(phase[t] == W, ctx.rate[t] == base[t]))
            else:
                ctx.add(z3.Implies(phase[t] == W, z3.And(ctx.rate[t] >= (1 - eps) * base[t],
                                                         ctx.rate[t] <= (1 + eps) * base[t])))
            if t >= R:
                ctx.add(ctx.cwnd[t] == ctx.A[t - 1] + ctx.rate[t] - ctx.S[t - R] - ctx.Ld[t])
            # registers of the MI running at t
            for i in range(W):
                for j in range(M):
                    here = z3.And(phase[t] == i, pos[t] == j)
                    if t == 0:
                        ctx.add(z3.Implies(here, reg[i][j][t] == rtt[t]))
                    else:
                        ctx.add(reg[i][j][t] == z3.If(here, rtt[t], reg[i][j][t - 1]))
                if t == 0:
                    # history; on a path that never loses bytes (infinite buffer, eta = 0) nothing
                    # was lost before the trace either
                    ctx.add(lost[i][t] == 0 if (v.buffer is None and v.net.eta == 0) else lost[i][t] >= 0)
                else:
                    dl = ctx.L[t] - ctx.L[t - 1]
                    ctx.add(lost[i][t] == z3.If(phase[t] == i, z3.If(pos[t] == 0, dl, lost[i][t - 1] + dl),
                                                lost[i][t - 1]))
            # the end of the last probe MI, for the fate test
            ctx.add(z3.Implies(phase[t] < W, z3.And(mark_adm[t] == adm_f[t], mark_L[t] == ctx.L[t])))
            if t == 0:
                ctx.add(z3.Implies(phase[t] == W, z3.And(mark_adm[t] <= adm_f[t], mark_L[t] <= ctx.L[t])))
            else:
                ctx.add(z3.Implies(phase[t] == W, z3.And(mark_adm[t] == mark_adm[t - 1], mark_L[t] == mark_L[t - 1])))
            # enclosures of the base rate's powers (valid at every step)
            ctx.add(*grid.power(t, x_mbps[t], power[t], t_exp))
            ctx.add(*grid.power(t, x_mbps[t], inverse[t], t_exp - 1))
            if t == 0:
                # history: a decision may have happened just now (a window can start at one)
                ctx.add(z3.Implies(z3.And(event[t] != 1, event[t] != 2),
                                   z3.And(*(du[k][t] == 0 for k in range(K)), *(gam[k][t] == 0 for k in range(K)))),
                        z3.Implies(event[t] != 1, gamma_used[t] == 0))
                continue

            # ---- transitions from t-1 to t
            pp, ps = phase[t - 1], pos[t - 1]
            keep = [base[t] == base[t - 1], *(obit[k][t] == obit[k][t - 1] for k in range(K)), tau[t] == tau[t - 1],
                    kk[t] == kk[t - 1], dirn[t] == dirn[t - 1], event[t] == 0]
            if rerun is not None:
                keep += [rerun[t] == rerun[t - 1], gamma_first[t] == gamma_first[t - 1]]
            for i in range(W):
                for j in range(M):
                    if i == W - 1 and j == M - 1:
                        continue
                    nxt = (i, j + 1) if j < M - 1 else (i + 1, 0)
                    ctx.add(z3.Implies(z3.And(pp == i, ps == j),
                                       z3.And(phase[t] == nxt[0], pos[t] == nxt[1], *keep)))
            ready = z3.Or(pp == W, z3.And(pp == W - 1, ps == M - 1))
            if t >= R:
                ctx.add(fate_var[t] == z3.And(ctx.S[t - R] >= mark_adm[t - 1], ctx.Ld[t] >= mark_L[t - 1]))
            fate = fate_var[t]
            waited = z3.If(pp == W, ps + 1, 1)
            new_round = [phase[t] == 0, pos[t] == 0]
            # not known yet: wait; after the MI timeout the rate may be halved (never forced: the
            # real timer runs on the sender's RTT estimate, at least R)
            ctx.add(z3.Implies(z3.And(ready, z3.Not(fate)), z3.Or(
                z3.And(phase[t] == W, pos[t] == z3.If(waited >= TO, TO, waited), *keep),
                z3.And(waited >= TO, event[t] == 3, base[t] * 2 == base[t - 1], *new_round,
                       *([rerun[t] == 0] if rerun is not None else [])))))
            decide = z3.And(ready, fate)
            ctx.add(z3.Implies(z3.Not(decide), z3.And(*(du[k][t] == 0 for k in range(K)),
                                                      *(gam[k][t] == 0 for k in range(K)))))
            ctx.add(z3.Implies(z3.Not(z3.And(decide, event[t] == 1)), gamma_used[t] == 0))
            ctx.add(z3.Implies(decide, z3.Or(event[t] == 1, event[t] == 2)))

            # ---- per-MI signals from the registers at t-1
            g_eff, s_eff = [], []
            for i in range(W):
                ys = [reg[i][j][t - 1] for j in range(M)]
                g = linear(weights, ys)
                zero_g: Any = False
                zero_s: Any = False
                if tol is not None:
                    e_lo, e_hi = rms_bounds_terms([linear(row, ys) for row in residual_rows(M)])
                    ctx.add(z3.Implies(decide, z3.And(z3.Implies(tol[i][t], absolute(g) * M < e_hi),
                                                      z3.Implies(z3.Not(tol[i][t]), absolute(g) * M >= e_lo))))
                    zero_g, zero_s = tol[i][t], tol[i][t]
                if trend_g is not None:
                    ctx.add(z3.Implies(decide, z3.Implies(trend_s[i][t], trend_g[i][t])))
                    zero_g, zero_s = z3.Or(zero_g, trend_g[i][t]), z3.Or(zero_s, trend_s[i][t])
                ge = z3.If(zero_g, 0, g) if zero_g is not False else g
                if var.flt > 0:
                    ge = z3.If(absolute(ge) >= var.flt, ge, 0)
                if var.positive_only:
                    ge = z3.If(ge >= 0, ge, 0)
                g_eff.append(ge)
                if sigma is not None:
                    d_lo, d_hi = rms_bounds_terms([linear(row, ys) for row in deviation_rows(M)])
                    inside = z3.And(sigma[i][t] >= d_lo, sigma[i][t] <= d_hi)
                    ctx.add(z3.Implies(decide, inside if zero_s is False else z3.If(zero_s, sigma[i][t] == 0, inside)))
                    s_eff.append(sigma[i][t])

            # ---- per pair: du and gamma (both enclosed, tied by sign)
            b_lat, d_dev = var.b, var.dev_coeff * p.get("step_seconds", 0)
            for k in range(K):
                a_, b_ = 2 * k, 2 * k + 1

                def pair_h(hi_i: int, lo_i: int) -> Any:
                    h = b_lat * ((1 + eps) * g_eff[hi_i] - (1 - eps) * g_eff[lo_i])
                    if s_eff:
                        def dev(slot: int, factor: Fraction) -> Any:
                            if var.threshold is None:
                                return factor * s_eff[slot]
                            return z3.If(factor * base[t - 1] >= var.threshold, factor * s_eff[slot], 0)
                        h = h + d_dev * (dev(hi_i, 1 + eps) - dev(lo_i, 1 - eps))
                    return h

                H = pick(k, t - 1, pair_h(a_, b_), pair_h(b_, a_))
                lam = pick(k, t - 1, lost[a_][t - 1] - lost[b_][t - 1], lost[b_][t - 1] - lost[a_][t - 1]) / M
                # the enclosures are only needed when deciding
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
            if K == 1:
                combined = gam[0][t]
                ctx.add(z3.Implies(z3.And(decide, event[t] == 1), votes[0][t] == up))
            else:
                count = z3.Sum(*(z3.If(votes[k][t], 1, 0) for k in range(K)))
                ctx.add(z3.Implies(z3.And(decide, event[t] == 1), up == (count * 2 > K)))
                ctx.add(z3.Implies(z3.And(decide, event[t] == 1), z3.And(
                    z3.Or(*(z3.And(votes[k][t] == up, gamma_used[t] >= gam[k][t]) for k in range(K))),
                    z3.Or(*(z3.And(votes[k][t] == up, gamma_used[t] <= gam[k][t]) for k in range(K))))))
                combined = gamma_used[t]
            if var.double_check:
                # abnormal: the faster probe lost a smaller fraction (l+/a+ < l-/a-, a = r(1+-eps)M)
                abnormal = pick(0, t - 1, lost[0][t - 1] * (1 - eps) < lost[1][t - 1] * (1 + eps),
                                lost[1][t - 1] * (1 - eps) < lost[0][t - 1] * (1 + eps))
                first = rerun[t - 1] == 0
                ctx.add(z3.Implies(decide, z3.If(z3.And(first, abnormal), event[t] == 2, event[t] == 1)))
                ctx.add(z3.Implies(z3.And(decide, event[t] == 2), z3.And(
                    *new_round, rerun[t] == 1, gamma_first[t] == gam[0][t], base[t] == base[t - 1],
                    tau[t] == tau[t - 1], kk[t] == kk[t - 1], dirn[t] == dirn[t - 1])))
                # second run: same sign as the first -> average; else the first is thrown out
                g1 = gamma_first[t - 1]
                same = z3.Or(z3.And(gam[0][t] >= 0, g1 >= 0), z3.And(gam[0][t] <= 0, g1 <= 0))
                differ = z3.Or(z3.And(gam[0][t] >= 0, g1 <= 0), z3.And(gam[0][t] <= 0, g1 >= 0))
                ctx.add(z3.Implies(z3.And(decide, event[t] == 1), z3.And(
                    rerun[t] == 0, z3.Implies(first, gamma_used[t] == gam[0][t]),
                    z3.Implies(z3.Not(first), z3.And(
                        z3.Implies(agree[t], z3.And(same, gamma_used[t] == (gam[0][t] + g1) / 2)),
                        z3.Implies(z3.Not(agree[t]), z3.And(differ, gamma_used[t] == gam[0][t])))))))
                combined = gamma_used[t]
                ctx.add(z3.Implies(z3.Not(decide), z3.Implies(event[t] != 3, z3.And(
                    rerun[t] == rerun[t - 1], gamma_first[t] == gamma_first[t - 1]))))
            else:
                ctx.add(z3.Implies(decide, event[t] == 1))
                if K == 1:
                    ctx.add(z3.Implies(z3.And(decide, event[t] == 1), gamma_used[t] == gam[0][t]))
            ctx.add(z3.Implies(z3.And(decide, event[t] == 1), z3.And(
                z3.Implies(up, combined >= 0), z3.Implies(z3.Not(up), combined <= 0))))

            # ---- the step (Vivace 4.2): amplifier, dynamic boundary, new base
            r = base[t - 1]
            same_dir = dirn[t] == dirn[t - 1]
            step = []
            step.append(tau[t] == z3.If(same_dir, z3.If(tau[t - 1] + 1 >= tau_cap, tau_cap, tau[t - 1] + 1), 0))
            for j in range(tau_cap + 1):
                m = amplifier(j) * theta0 / scale
                if j < tau_cap:
                    step.append(z3.Implies(tau[t] == j, q_move[t] == m * gamma_used[t]))
                else:
                    step.append(z3.Implies(tau[t] == j, z3.And(
                        z3.Implies(gamma_used[t] >= 0, q_move[t] >= m * gamma_used[t]),
                        z3.Implies(gamma_used[t] <= 0, q_move[t] <= m * gamma_used[t]))))
            k0 = z3.If(same_dir, kk[t - 1], 0)
            for j in range(k_cap + 1):
                om = omega0 + j * delta
                big = z3.Or(q_move[t] > om * r, q_move[t] < -om * r)
                if j < k_cap:
                    clipped_rule = [big, kk[t] == j + 1 if j + 1 <= k_cap else kk[t] == k_cap]
                    up_base = base[t] == (1 + om) * r
                    down_base = base[t] == (1 - om) * r if om < 1 else z3.And(base[t] > 0, base[t] <= r)
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
                fits = z3.And(q_move[t] <= (omega0 + j * delta) * r, q_move[t] >= -(omega0 + j * delta) * r)
                if j == 0:
                    step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == 0), fits))
                elif j < k_cap:
                    step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == j),
                                           z3.And(fits, z3.Not(z3.And(q_move[t] <= (omega0 + (j - 1) * delta) * r,
                                                                      q_move[t] >= -(omega0 + (j - 1) * delta) * r)))))
                else:
                    step.append(z3.Implies(z3.And(z3.Not(clip[t]), kk[t] == j),
                                           z3.Not(z3.And(q_move[t] <= (omega0 + (j - 1) * delta) * r,
                                                         q_move[t] >= -(omega0 + (j - 1) * delta) * r))))
            ctx.add(z3.Implies(z3.And(decide, event[t] == 1), z3.And(*new_round, *step,
                                                                      *([rerun[t] == 0] if rerun is not None else []))))
        state = {"base": base, "phase": phase, "pos": pos, "order": order, "rtt": rtt, "rtt_min": rtt_min,
                 "event": event, "dir": dirn, "tau": tau, "omega_k": kk, "gamma_used": gamma_used}
        for k, (dn, gn) in enumerate(self.pair_names(K)):
            state[dn], state[gn] = du[k], gam[k]
        if rerun is not None:
            state["rerun"] = rerun
        state.update({"_reg": reg, "_lost": lost, "_mark_adm": mark_adm, "_mark_L": mark_L,
                      "_gamma_first": gamma_first, "_obit": obit})
        return state

    # ------------------------------------------------------------------ independent check
    def check_gradient(self, f: Any) -> list[str]:
        """Re-check a trace against the rules above, in exact arithmetic, without the solver.

        Non-linear quantities are checked against the documented enclosures (the grid's line
        tables are shared data); measurements that reach before the trace (history) are not
        checked, only what follows from them."""
        p, R, T, C, D = f.params, f.R, f.T, f.C, f.D
        var = self.variant(p, C)
        K, M = var.pairs, mi_steps(p, R)
        W, TO = 2 * K, int(p["mi_timeout"]) * R
        eps, t_exp = p["eps"], p["t"]
        scale = p["link_mbps"] / C
        cK = p["c"] * scale
        tau_cap, k_cap = int(p["tau_cap"]), int(p["k_cap"])
        st = f.state
        base, phase, pos = st["base"], st["phase"], st["pos"]
        order = [int(o) for o in st["order"]]
        rtt, rtt_min, event, dirn = st["rtt"], st["rtt_min"], st["event"], st["dir"]
        tau, kk, gu = st["tau"], st["omega_k"], st["gamma_used"]
        du = [st[dn] for dn, _ in self.pair_names(K)]
        gam = [st[gn] for _, gn in self.pair_names(K)]
        rerun = st.get("rerun")
        adm_f = [a - l for a, l in zip(f.A, f.L)]
        out: list[str] = []

        def bad(t: int, msg: str) -> None:
            out.append(f"step {t}: {msg}")

        def high(i: int, o: int) -> bool:
            return bool((o >> (i // 2)) & 1) == (i % 2 == 0)

        for t in range(T):
            if not (0 <= phase[t] <= W) or event[t] not in (0, 1, 2, 3) or dirn[t] not in (1, -1) \
                    or not (0 <= tau[t] <= tau_cap) or not (0 <= kk[t] <= k_cap) or not (0 <= order[t] < 2 ** K):
                bad(t, "a PCC state variable is out of its domain")
                continue
            if base[t] <= 0:
                bad(t, f"base rate {base[t]} is not positive")
            if (phase[t] < W and not 0 <= pos[t] <= M - 1) or (phase[t] == W and not 1 <= pos[t] <= TO):
                bad(t, f"position {pos[t]} impossible in phase {phase[t]}")
            if phase[t] < W:
                want = base[t] * (1 + eps if high(phase[t], order[t]) else 1 - eps)
                if f.rate[t] != want:
                    bad(t, f"rate {f.rate[t]} is not the probe rate {want}")
            elif p["wait"] == "base" and f.rate[t] != base[t]:
                bad(t, f"rate {f.rate[t]} while waiting is not the base rate {base[t]}")
            elif p["wait"] == "band" and not (1 - eps) * base[t] <= f.rate[t] <= (1 + eps) * base[t]:
                bad(t, f"rate {f.rate[t]} while waiting is outside the probe band")
            if not rtt_min[t] <= rtt[t] <= rtt_min[t] + D:
                bad(t, f"RTT sample {rtt[t]} outside [{rtt_min[t]}, {rtt_min[t] + D}]")
            # the backlog B = (A-L) - (C*t - W) is at most (A-L) - S (service is below the token
            # line) and at least (A-L)[t] - S[t+D] (tokens are used within D steps)
            backlog_hi = max(Fraction(0), f.total_admitted[t] - f.total_S[t])
            if rtt_min[t] < 0 or rtt_min[t] * C > backlog_hi:
                bad(t, f"rtt_min {rtt_min[t]} is not a backlog of at most {backlog_hi} bytes / C")
            if t + D < T and rtt_min[t] * C < f.total_admitted[t] - f.total_S[t + D]:
                bad(t, f"rtt_min {rtt_min[t]} is below the backlog the service {D} steps later proves")
            if t >= R and f.cwnd[t] != f.A[t - 1] + f.rate[t] - f.S[t - R] - f.Ld[t]:
                bad(t, "cwnd is not the bytes in flight after this step's sends")
            decision = event[t] in (1, 2)
            if not decision and any(d[t] != 0 for d in du + gam):
                bad(t, "du/gamma set outside a decision")
            if event[t] != 1 and gu[t] != 0:
                bad(t, "gamma_used set outside a rate decision")
            if t == 0:
                continue
            pp, ps = phase[t - 1], pos[t - 1]
            same = (base[t] == base[t - 1] and order[t] == order[t - 1] and tau[t] == tau[t - 1]
                    and kk[t] == kk[t - 1] and dirn[t] == dirn[t - 1]
                    and (rerun is None or rerun[t] == rerun[t - 1]))
            ready = pp == W or (pp == W - 1 and ps == M - 1)
            if not ready:
                nxt = (pp, ps + 1) if ps < M - 1 else (pp + 1, 0)
                if (phase[t], pos[t]) != nxt or not same or event[t] != 0:
                    bad(t, f"the MI schedule should continue to phase {nxt[0]}, position {nxt[1]} unchanged")
                continue
            fate = None
            if t >= R:
                e = t - 1
                while e >= 0 and phase[e] == W:
                    e -= 1
                if e >= 0:
                    fate = f.S[t - R] >= adm_f[e] and f.Ld[t] >= f.L[e]
            waited = ps + 1 if pp == W else 1
            if event[t] == 0:
                if phase[t] != W or pos[t] != min(waited, TO) or not same:
                    bad(t, "should wait for the fate of the last MI with its state unchanged")
                if fate:
                    bad(t, "the fate of the round's MIs is known but the sender keeps waiting")
            elif event[t] == 3:
                if fate or waited < TO:
                    bad(t, "MI timeout before the timeout expired or with the fate known")
                if base[t] * 2 != base[t - 1] or (phase[t], pos[t]) != (0, 0) or (rerun is not None and rerun[t] != 0):
                    bad(t, "an MI timeout halves the rate and starts a new round")
            else:
                if fate is False:
                    bad(t, "decided before the fate of the round's MIs was known")
                out += [f"step {t}: {m}" for m in self._check_decision(f, t, var, M, W, eps, t_exp, scale, cK, tau_cap, k_cap)]
        return out

    def _check_decision(self, f: Any, t: int, var: Variant, M: int, W: int, eps: Fraction, t_exp: Fraction,
                        scale: Fraction, cK: Fraction, tau_cap: int, k_cap: int) -> list[str]:
        p, st, K = f.params, f.state, var.pairs
        base, phase, event, dirn = st["base"], st["phase"], st["event"], st["dir"]
        order = [int(o) for o in st["order"]]
        tau, kk, gu = st["tau"], st["omega_k"], st["gamma_used"]
        du = [st[dn] for dn, _ in self.pair_names(K)]
        gam = [st[gn] for _, gn in self.pair_names(K)]
        rerun = st.get("rerun")
        out: list[str] = []
        r = base[t - 1]
        o = order[t - 1]
        if (phase[t], st["pos"][t]) != (0, 0):
            out.append("a decision starts a new round (phase 0, position 0)")
        # ---- the round's MIs: the last W*M probe steps before the wait
        e = t - 1
        while e >= 0 and phase[e] == W:
            e -= 1
        first = e - W * M + 1
        steps = [[first + i * M + j for j in range(M)] for i in range(W)] if first >= 1 else None
        lost = None
        if steps is not None:
            ys = [[st["rtt"][s] for s in slot] for slot in steps]
            lost = [f.L[slot[-1]] - f.L[slot[0] - 1] for slot in steps]
            opts = [self._signal_options(var, M, y) for y in ys]

            def pair_h(k: int) -> tuple[Fraction, Fraction, Fraction]:
                a, b = 2 * k, 2 * k + 1
                hi_i, lo_i = (a, b) if (o >> k) & 1 else (b, a)
                d = var.dev_coeff * p.get("step_seconds", 0)
                lows, highs = [], []
                for g1, s1lo, s1hi in opts[hi_i]:
                    for g2, s2lo, s2hi in opts[lo_i]:
                        gate1 = var.threshold is None or (1 + eps) * r >= var.threshold
                        gate2 = var.threshold is None or (1 - eps) * r >= var.threshold
                        dev_lo = ((1 + eps) * s1lo if gate1 else 0) - ((1 - eps) * s2hi if gate2 else 0)
                        dev_hi = ((1 + eps) * s1hi if gate1 else 0) - ((1 - eps) * s2lo if gate2 else 0)
                        h = var.b * ((1 + eps) * g1 - (1 - eps) * g2)
                        lows.append(h + d * dev_lo)
                        highs.append(h + d * dev_hi)
                lam = (lost[hi_i] - lost[lo_i]) / M
                return min(lows), max(highs), lam

            pairs = [pair_h(k) for k in range(K)]
            kap_lo, kap_hi = kappa_bounds(eps, t_exp)
            x = scale * r
            points = grid_points(p["grid_lo"] * p["link_mbps"], p["grid_hi"] * p["link_mbps"], p["grid"])
            fits_some_bin = False
            for b, lo, hi in bins_containing(points, x):
                p_lo, p_hi = power_interval(t_exp, points, b, x)
                e_lo, e_hi = power_interval(t_exp - 1, points, b, x)
                ok = True
                for k, (h_lo, h_hi, lam) in enumerate(pairs):
                    corners = [lo * h_lo, lo * h_hi] + ([hi * h_lo, hi * h_hi] if hi is not None else [])
                    z_lo = None if (hi is None and h_lo < 0) else min(corners)
                    z_hi = None if (hi is None and h_hi > 0) else max(corners)
                    y_lo, y_hi = quotient_interval(lo, hi, lam) if lam != 0 else (Fraction(0), Fraction(0))
                    du_lo = None if (p_lo is None or z_hi is None) else kap_lo * p_lo - z_hi - cK * lam
                    du_hi = None if (p_hi is None or z_lo is None) else kap_hi * p_hi - z_lo - cK * lam
                    g_lo = None if (e_lo is None or y_hi is None) else (kap_lo * e_lo - h_hi - cK * y_hi) / (2 * eps)
                    g_hi = None if (e_hi is None or y_lo is None) else (kap_hi * e_hi - h_lo - cK * y_lo) / (2 * eps)
                    ok = ok and within(du[k][t], du_lo, du_hi) and within(gam[k][t], g_lo, g_hi)
                fits_some_bin = fits_some_bin or ok
            if not fits_some_bin:
                out.append(f"du/gamma {[d[t] for d in du]}/{[g[t] for g in gam]} outside the utility enclosure "
                           f"of the round's measurements at base rate {r}")
        for k in range(K):
            d, g = du[k][t], gam[k][t]
            if (d > 0 and g < 0) or (d < 0 and g > 0):
                out.append(f"pair {k + 1}: du {d} and gamma {g} have opposite signs")
        # ---- double check (Vivace 4.3)
        if rerun is not None:
            if var.double_check and lost is not None and rerun[t - 1] == 0:
                hi_i, lo_i = (0, 1) if o & 1 else (1, 0)
                abnormal = lost[hi_i] * (1 - eps) < lost[lo_i] * (1 + eps)
                if abnormal != (event[t] == 2):
                    out.append("double-check rerun iff the faster probe lost a smaller fraction (first run)")
            if (not var.double_check or rerun[t - 1] == 1) and event[t] == 2:
                out.append("a second double-check rerun")
            if event[t] == 2:
                if rerun[t] != 1 or base[t] != r or tau[t] != tau[t - 1] or kk[t] != kk[t - 1] or dirn[t] != dirn[t - 1]:
                    out.append("a rerun repeats the pair at the same rate with the state unchanged")
                return out
            if rerun[t] != 0:
                out.append("a rate decision ends the double check")
        elif event[t] == 2:
            out.append("a double-check rerun in a variant without double checks")
            return out
        # ---- the direction and the gradient applied
        d = dirn[t]
        g_used = gu[t]
        if K == 1:
            first_run = rerun is None or rerun[t - 1] == 0
            if first_run and g_used != gam[0][t]:
                out.append("gamma_used is the pair's gradient")
            if not first_run:
                s = t - 1
                while s >= 0 and event[s] != 2:
                    s -= 1
                if s >= 0:
                    g1, g2 = gam[0][s], gam[0][t]
                    same_sign = (g1 >= 0 and g2 >= 0) or (g1 <= 0 and g2 <= 0)
                    opposite = (g1 >= 0 and g2 <= 0) or (g1 <= 0 and g2 >= 0)
                    if not ((same_sign and g_used == (g1 + g2) / 2) or (opposite and g_used == g2)):
                        out.append("double check: same sign -> average the gradients, else keep the second")
        else:
            agreeing = [gam[k][t] for k in range(K) if gam[k][t] * d >= 0]
            if len(agreeing) * 2 <= K:
                out.append(f"direction {d} is not the majority of the pairs' gradients")
            elif not min(agreeing) <= g_used <= max(agreeing):
                out.append("gamma_used is not between the majority pairs' gradients")
        if g_used * d < 0:
            out.append(f"direction {d} against the gradient {g_used}")
        same_dir = d == dirn[t - 1]
        if tau[t] != (min(tau[t - 1] + 1, tau_cap) if same_dir else 0):
            out.append(f"tau {tau[t]} does not follow the confidence rule")
        k0 = kk[t - 1] if same_dir else 0
        theta0, omega0, delta = p["theta0"], p["omega0"], p["delta"]
        m = amplifier(tau[t]) * theta0 / scale
        q_lo: Fraction | None = m * g_used
        q_hi: Fraction | None = m * g_used
        if tau[t] == tau_cap:
            if g_used > 0:
                q_hi = None
            elif g_used < 0:
                q_lo = None
        om = omega0 + k0 * delta

        def recal(q: Fraction) -> int:
            for j in range(k_cap):
                if abs(q) <= (omega0 + j * delta) * r:
                    return j
            return k_cap

        change = base[t] - r
        unclipped = within(change, q_lo, q_hi) and (k0 == k_cap or abs(change) <= om * r) and kk[t] == recal(change)
        can_clip = (q_hi is None or q_hi > om * r) if d == 1 else (q_lo is None or q_lo < -om * r)
        clipped = False
        if can_clip and kk[t] == min(k0 + 1, k_cap):
            if k0 < k_cap:
                if d == 1:
                    clipped = base[t] == (1 + om) * r
                else:
                    clipped = base[t] == (1 - om) * r if om < 1 else 0 < base[t] <= r
            else:
                if d == 1:
                    clipped = base[t] >= (1 + om) * r
                else:
                    clipped = 0 < base[t] <= r
        if not (unclipped or clipped):
            out.append(f"new base rate {base[t]} (from {r}) does not follow the gradient step "
                       f"(gamma {g_used}, m(tau) {amplifier(tau[t])}, omega {om})")
        return out

    @staticmethod
    def _signal_options(var: Variant, M: int, ys: list[Fraction]) -> list[tuple[Fraction, Fraction, Fraction]]:
        """(effective gradient, deviation lo, deviation hi) an MI may yield under the tolerances."""
        w = GradientPCC.weights(var, M)
        g = sum((wi * y for wi, y in zip(w, ys)), Fraction(0))
        combos = set()
        tol_options = [False]
        if var.regression_tolerance and M >= 3:
            res = [sum((c * y for c, y in zip(row, ys)), Fraction(0)) for row in residual_rows(M)]
            e_lo, e_hi = rms_bounds_numbers(res)
            tol_options = [v for v, feasible in ((True, abs(g) * M < e_hi), (False, abs(g) * M >= e_lo)) if feasible]
        trends = [(False, False), (True, False), (True, True)] if var.trending == "free" else [(False, False)]
        for tol in tol_options:
            for tg, ts in trends:
                combos.add((tol or tg, tol or ts))
        dev = [sum((c * y for c, y in zip(row, ys)), Fraction(0)) for row in deviation_rows(M)]
        s_lo, s_hi = rms_bounds_numbers(dev)
        options = []
        for zero_g, zero_s in combos:
            ge = Fraction(0) if zero_g else g
            if var.flt > 0 and abs(ge) < var.flt:
                ge = Fraction(0)
            if var.positive_only:
                ge = max(ge, Fraction(0))
            options.append((ge, Fraction(0), Fraction(0)) if zero_s else (ge, s_lo, s_hi))
        return options
