"""ETC's elastic update (Eq. 1), ``s' = s * log_base(Rp/s + base - 1)``, enclosed linearly for
:mod:`ccac.ccas.etc`: the breakpoints, the outward-rounded tangent and chord coefficients, the
documented per-cell error, and the 60-digit re-check the independent check applies to every
acceleration (pure arithmetic: no z3, no model).

The elastic update, linearly (the one non-linear term)
------------------------------------------------------
With x = Rp/s and g(x) = log_base(x + base - 1), the update is ``s' = s * g(Rp/s)``, the
perspective of the concave increasing g, hence jointly concave in (s, Rp) for s > 0. At a step
that accelerates, with ``s = srate[t-1]``, ``Rp = Rp[t]`` and ``s' = srate[t]``:

* **above**: every tangent plane, at every breakpoint x_j:
  ``s' <= (g(x_j) - x_j g'(x_j)) * s + g'(x_j) * Rp`` (a tangent of a concave function lies
  above it everywhere; multiply by s > 0);
* **below**: the chord of the cell holding x: ``x_j * s <= Rp < x_{j+1} * s ->
  s' >= s * chord_j(Rp/s)`` (a chord lies below a concave function on its interval), and
  past the last breakpoint monotonicity, ``Rp >= x_K * s -> s' >= g(x_K) * s``. The cell
  guards are the atoms ``Rp >= x_j * s``, with the (valid) implications
  ``Rp >= x_{j+1} s -> Rp >= x_j s`` stated too so that the SAT layer sees their order.

Breakpoints (a partition of [0, inf)): 0, then ``grid`` rational points per doubling of x
from 1/8 up to ``ratio_max`` (128). Coefficients are computed with 60-digit decimals and
rounded *outward* (upper bounds up, lower bounds down, to the simplest rational within a
relative 2^-20; s and Rp are non-negative), so the enclosure contains the true value. In a
cell [a, b] the enclosure is at most ``delta_cell * s`` wide, where ``delta_cell`` is the gap
between the two end tangents' meeting point and the chord (a concave piecewise-linear
function minus a line peaks at its kink). For base e, ``grid = 2``: ``delta_cell / g`` <=
0.95 % on every cell up to x = 128 (the largest absolute gap, 0.029 s, is near x = 128 where
s' is about 4.9 s); ``grid = 1``: 4.0 %; ``grid = 4``: 0.23 %. Beyond ``ratio_max`` only
monotonicity bounds s' below (raise ``ratio_max`` for huge Rp/s). :meth:`ETC.check` re-checks
every acceleration against this documented bound, computing g(x) directly to 60 digits.
Everything else is linear as it stands: the deceleration, the drain (a ``max(0, .)`` by
``If``), products of a parameter and a variable, and counters compared with
``force_after * rtt``.

Solver cost, measured (z3 5.4): 60-digit coefficients (2^-40 denominators) made even
"find any trace" take minutes at T = 10, small-denominator coefficients seconds; stating the
enclosure only under the acceleration condition (rather than for a helper variable at every
step) and the ordered cell guards each cut the start-up proof (etc_startup_85) by about 10x.
A base below 2 is rejected: there g(0) < 0 and an "acceleration" with Rp/s < 2 - base sets a
negative rate (the conformance test found it at base 3/2).
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

_DIGITS = 60
_TOLERANCE = Fraction(1, 2 ** 20)


# ---------------------------------------------------------------------------------- the log
class _Log:
    """g(x) = log_base(x + base - 1) and g'(x), to 60 digits (base "e" or a rational > 1)."""

    def __init__(self, base: Any) -> None:
        self.dc = decimal.Context(prec=_DIGITS)
        if base == "e":
            self.b1 = self.dc.exp(decimal.Decimal(1)) - 1
            self.lnb = decimal.Decimal(1)
        else:
            b = Fraction(base)
            bd = self.dc.divide(decimal.Decimal(b.numerator), decimal.Decimal(b.denominator))
            self.b1 = bd - 1
            self.lnb = self.dc.ln(bd)

    def dec(self, x: Fraction) -> decimal.Decimal:
        return self.dc.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator))

    def g(self, x: Fraction) -> decimal.Decimal:
        return self.dc.divide(self.dc.ln(self.dec(x) + self.b1), self.lnb)

    def dg(self, x: Fraction) -> decimal.Decimal:
        return self.dc.divide(decimal.Decimal(1), (self.dec(x) + self.b1) * self.lnb)


def _simplest(lo: Fraction, hi: Fraction) -> Fraction:
    """The rational with the smallest denominator in [lo, hi] (continued fractions)."""
    if lo < 0:
        return -_simplest(-hi, -lo) if hi <= 0 else Fraction(0)
    n = lo.numerator // lo.denominator
    if n == lo or n + 1 <= hi:
        return Fraction(n) if n == lo else Fraction(n + 1)
    return n + 1 / _simplest(1 / (hi - n), 1 / (lo - n))


def _outward(d: decimal.Decimal, up: bool) -> Fraction:
    """A rational with a small denominator on the safe side of d (>= d when ``up``, else <= d),
    within a relative 2^-20 of it. Small denominators keep the solver's arithmetic cheap
    (60-digit coefficients made even satisfiable queries take minutes)."""
    exact = Fraction(d)
    tol = max(abs(exact), Fraction(1, 2 ** 10)) * _TOLERANCE
    return _simplest(exact, exact + tol) if up else _simplest(exact - tol, exact)


def _up(d: decimal.Decimal) -> Fraction:
    return _outward(d, True)


def _down(d: decimal.Decimal) -> Fraction:
    return _outward(d, False)


def breakpoints(grid: int, ratio_max: Fraction) -> list[Fraction]:
    """0, then ``grid`` rational points per doubling of Rp/s from 1/8 up to ``ratio_max``."""
    points = [Fraction(0)]
    j = -3 * grid
    while True:
        exact = 2.0 ** (j / grid)
        x = Fraction(2) ** (j // grid) if j % grid == 0 else Fraction(exact).limit_denominator(32)
        if x >= ratio_max:
            break
        if x > points[-1]:
            points.append(x)
        j += 1
    points.append(Fraction(ratio_max))
    return points


@dataclass(frozen=True)
class Enclosure:
    """Outward-rounded linear bounds on s' = s * g(Rp/s) (see the module docstring)."""

    points: tuple[Fraction, ...]
    tangents: tuple[tuple[Fraction, Fraction], ...]           # s' <= a*s + b*Rp
    chords: tuple[tuple[Fraction, Fraction], ...]              # s' >= min(a*s + b*Rp, ..., tail*s)
    tail: Fraction


@lru_cache(maxsize=None)
def enclosure(base: Any, grid: int, ratio_max: Fraction) -> Enclosure:
    log = _Log(base)
    pts = breakpoints(grid, ratio_max)
    g = {x: log.g(x) for x in pts}
    tangents = tuple((_up(g[x] - log.dec(x) * log.dg(x)), _up(log.dg(x))) for x in pts)
    chords = []
    for a, b in zip(pts, pts[1:]):
        m = (g[b] - g[a]) / log.dec(b - a)
        chords.append((_down(g[a] - m * log.dec(a)), _down(m)))
    return Enclosure(tuple(pts), tangents, tuple(chords), _down(g[pts[-1]]))


@lru_cache(maxsize=None)
def cell_gaps(base: Any, grid: int, ratio_max: Fraction) -> tuple[tuple[Fraction, Fraction, Fraction], ...]:
    """(a, b, delta) per cell: the enclosure is at most delta * s wide for Rp/s in [a, b]
    (the two end tangents meet at x*; the gap to the chord is largest there). Rounded up."""
    log = _Log(base)
    out = []
    points = breakpoints(grid, ratio_max)
    for a, b in zip(points, points[1:]):
        ga, gb, da, db = log.g(a), log.g(b), log.dg(a), log.dg(b)
        xa, xb = log.dec(a), log.dec(b)
        meet = (gb - ga + da * xa - db * xb) / (da - db)
        tangent = ga + da * (meet - xa)
        chord = ga + (gb - ga) / (xb - xa) * (meet - xa)
        out.append((a, b, _up(tangent - chord)))
    return tuple(out)


def check_elastic(p: dict[str, Any], prev: Fraction, rp: Fraction, new: Fraction) -> list[str]:
    """An accelerated rate must be within the documented error of s * g(Rp/s) (60 digits)."""
    log = _Log(p["base"])
    x = rp / prev
    slack = log.dec((prev + rp) * Fraction(1, 2 ** 16))  # outward rounding of the coefficients
    if x <= p["ratio_max"]:
        delta = next(d for a, b, d in cell_gaps(p["base"], p["grid"], p["ratio_max"]) if a <= x <= b)
        true = log.dec(prev) * log.g(x)
        low, high = true - log.dec(delta * prev), true + log.dec(delta * prev)
    else:  # beyond the grid: monotone below, the last tangent above
        top = Fraction(p["ratio_max"])
        low = log.dec(prev) * log.g(top)
        high = log.dec(prev) * (log.g(top) + log.dg(top) * log.dec(x - top))
    if low - slack <= log.dec(new) <= high + slack:
        return []
    return [f"accelerated to {float(new):.6g}, outside the documented enclosure "
            f"[{float(low):.6g}, {float(high):.6g}] of s*g(Rp/s) for s = {float(prev):.6g}, Rp = {float(rp):.6g}"]
