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

RTT samples, per-MI measurements, the rate controller
------------------------------------------------------
What a sender's per-packet RTT samples can be between the model's steps, and the enclosures of
an MI's RTT gradient and deviation they give, are in :mod:`ccac.ccas.pcc.rtt`; Vivace's rate
controller (MIs of one RTT, probe pairs, the MI timeout, the decision) in
:mod:`ccac.ccas.pcc.gradient`, with its independent check in
:mod:`ccac.ccas.pcc.gradient_check`; Allegro's in ``ccas/allegro.py``. Bytes sent and lost per
MI come from the curves: a = A_end - A_start (pacing binds, so a = rate * M for an MI of M
steps) and l = L_f[end] - L_f[start - 1] (bytes are lost on arrival, so these are the MI's),
so the papers' ``x * L`` (rate times loss rate) is ``(link_mbps / C) * l / M``: linear for a
given M.

Non-linear terms and their enclosures
-------------------------------------
* ``x^t`` (concave for 0 < t < 1) and ``x^(t-1)`` (convex, decreasing) are enclosed on a
  geometric grid of rates ``x_i`` (:func:`power_table`; parameters ``grid_lo``, ``grid_hi``
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import Any, Sequence

import z3

from ccac.ccas.interface import FlowContext
from ccac.encode.encoding import Cond, Term
from ccac.core.errors import CcacError
from ccac.core.params import POSITIVE, Param



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
    if p == 0 or p == 1:   # x**p is a line: exact in every bin of the grid
        exact = Line(Fraction(0), Fraction(1)) if p == 0 else Line(Fraction(1), Fraction(0))
        edges = (Fraction(0),) + points
        return tuple(Bin(lo, hi, (exact,), (exact,)) for lo, hi in zip(edges, points + (None,)))
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
        assert b.hi is not None  # an inner bin: only the last bin is unbounded
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


# ====================================================================== encoding helpers
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


def power_interval(p: Fraction, points: Sequence[Fraction], b: int,
                   x: Fraction) -> tuple[Fraction | None, Fraction | None]:
    bin_ = power_table(p, tuple(points))[b]
    lo = max((line.at(x) for line in bin_.lower), default=None)
    hi = min((line.at(x) for line in bin_.upper), default=None)
    return lo, hi


def quotient_interval(lo: Fraction, hi: Fraction | None, h: Fraction) -> tuple[Fraction | None, Fraction | None]:
    """h/x for x in [lo, hi] (lo may be 0: unbounded)."""
    a = (h / hi) if hi is not None else Fraction(0)
    b = (h / lo) if lo > 0 else None
    if h >= 0:
        return a, b
    return b, a


def within(v: Fraction, lo: Fraction | None, hi: Fraction | None) -> bool:
    return (lo is None or v >= lo) and (hi is None or v <= hi)

