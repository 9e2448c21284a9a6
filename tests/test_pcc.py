"""The PCC machinery (ccas/pcc/shared.py, ccas/pcc/rtt.py): every enclosure contains the true value
(the concrete senders' numerics, themselves checked against mpmath at 50 digits), the
regression-weight tables bound every lattice of packets, the gradient range holds every
least-squares slope its bands allow, and the documented approximation errors hold."""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest
import z3
from hypothesis import assume, given, settings, strategies as st

from ccac.ccas import CCAS
from ccac.ccas.pcc.shared import bins_containing, grid_points, kappa_bounds, power_gap, power_interval, power_table
from ccac.ccas.pcc.rtt import (band_numbers, band_terms, gradient_range, lattice_lower_terms,
                               lattice_upper_terms, weight_bounds)
from ccac.senders.allegro import sigmoid
from ccac.senders.pcc import power, sqrt_fraction

mpmath.mp.dps = 50
POINTS = tuple(grid_points(F(25, 2), F(400), F(5, 4)))   # the default grid at link_mbps = 100
rationals = st.fractions(min_value=F(1, 1000), max_value=F(5000), max_denominator=10 ** 6)


def mp(x: F) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


@settings(max_examples=60, deadline=None)
@given(x=rationals, p=st.sampled_from([F(9, 10), F(-1, 10), F(1, 2), F(-1, 2), F(3)]))
def test_the_senders_numerics_agree_with_mpmath(x: F, p: F) -> None:
    """power, sqrt and the sigmoid of ccac.senders (Python's decimal) to 45 digits."""
    close = lambda ours, truth: abs(mp(ours) - truth) <= abs(truth) * mpmath.mpf(10) ** -45  # noqa: E731
    assert close(power(x, p), mpmath.power(mp(x), mp(p)))
    assert close(sqrt_fraction(x), mpmath.sqrt(mp(x)))
    y = x / 1000 - F(1, 20)
    assert close(sigmoid(y, F(100)), 1 / (1 + mpmath.exp(100 * mp(y))))


def test_no_pcc_machinery_is_registered_as_a_cca() -> None:
    """ccas/pcc/shared.py holds shared code only: discovery must not find an ALGORITHM there."""
    import ccac.ccas.pcc.shared as pcc

    assert not hasattr(pcc, "ALGORITHM")
    assert all(type(cca).__module__ != pcc.__name__ for cca in CCAS.values())


@pytest.mark.parametrize("p", [F(9, 10), F(-1, 10), F(1, 2), F(-1, 2)])
@settings(max_examples=60, deadline=None)
@given(x=rationals)
def test_power_enclosure_contains_the_true_power(p: F, x: F) -> None:
    truth = power(x, p)
    found = False
    for b, lo, hi in bins_containing(POINTS, x):
        low, high = power_interval(p, POINTS, b, x)
        assert low is None or low <= truth, (b, float(low), float(truth))
        assert high is None or truth <= high, (b, float(high), float(truth))
        found = True
    assert found


def test_power_enclosure_gap_is_as_documented() -> None:
    """About p(1-p)(grid-1)^2/8 relative: 0.0703% for t = 0.9 at grid 1.25 (rounded up)."""
    gap = power_gap(F(9, 10), POINTS)
    assert gap < 0.9 * 0.1 * 0.25 ** 2 / 8 * 1.1
    finer = grid_points(F(25, 2), F(400), F(21, 20))
    assert power_gap(F(9, 10), finer) < gap / 20


def test_power_table_bins_cover_every_rate() -> None:
    table = power_table(F(9, 10), POINTS)
    assert table[0].lo == 0 and table[-1].hi is None
    assert all(a.hi == b.lo for a, b in zip(table, table[1:]))


def test_kappa_bounds_contain_the_constant() -> None:
    lo, hi = kappa_bounds(F(1, 20), F(9, 10))
    truth = power(F(21, 20), F(9, 10)) - power(F(19, 20), F(9, 10))
    assert lo <= truth <= hi and hi - lo < F(1, 10 ** 9)
    assert abs(float(truth) - 0.0900) < 1e-4   # the notes' kappa_eps = 0.0900


def lattice(M: int, h: F, x0: F) -> list[F]:
    """Send times x0 + k h in (0, M] (a pacer's packets over an interval of M steps)."""
    xs, x = [], x0
    while x <= M:
        xs.append(x)
        x += h
    return xs


def slope(points: list[tuple[F, F]]) -> F:
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


@settings(max_examples=300, deadline=None)
@given(M=st.integers(1, 6), h=st.fractions(min_value=F(1, 50), max_value=6, max_denominator=97),
       phase=st.fractions(min_value=F(1, 1000), max_value=1, max_denominator=1000))
def test_weight_bounds_hold_for_every_lattice(M: int, h: F, phase: F) -> None:
    """No step of any lattice of two or more packets carries more positive (negative)
    least-squares weight than the table says."""
    xs = lattice(M, h, h * phase)
    if len(xs) < 2:
        return
    n = len(xs)
    mean = sum(xs) / n
    spread = sum((x - mean) ** 2 for x in xs)
    P, N = weight_bounds(M)
    for j in range(1, M + 1):
        here = [(x - mean) / spread for x in xs if j - 1 < x <= j]
        assert sum(w for w in here if w > 0) <= P[j - 1]
        assert -sum(w for w in here if w < 0) <= N[j - 1]


def test_weight_bounds_at_two_steps() -> None:
    """For M = 2 the worst lattice is two packets 2/3 of a step apart: 1.5, where many packets
    give 0.75 (the continuum's weight of a step); the first step carries no positive weight."""
    P, N = weight_bounds(2)
    assert P[1] == F(3, 2) and N[0] == F(3, 2)
    assert P[0] == 0 and N[1] == 0


def test_the_tail_bound_only_guards() -> None:
    """On intervals of up to 12 steps no lattice of 30 or more packets can outweigh the worst of
    fewer packets: the tail bound (kept for the proof's sake) never sets a table entry. This is
    why the mutation check has no mutant that drops the tail: dropping it excludes no run on
    these intervals. Should the tail start to bind (a smaller EXACT_UP_TO), this fails."""
    from ccac.ccas.pcc.rtt import EXACT_UP_TO, _lattice_sup
    for M in range(1, 13):
        P, _ = weight_bounds(M)
        assert P == tuple(max(_lattice_sup(M, j, n) for n in range(2, EXACT_UP_TO)) for j in range(1, M + 1))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), M=st.integers(1, 4), h=st.fractions(min_value=F(1, 9), max_value=2, max_denominator=9),
       phase=st.fractions(min_value=F(1, 8), max_value=1, max_denominator=8))
def test_gradient_range_holds_every_slope_in_the_bands(data, M: int, h: F, phase: F) -> None:
    """Samples of a lossless lattice anywhere in their steps' bands, in FIFO order, have a
    least-squares slope in the range."""
    xs = lattice(M, h, h * phase)
    cut = st.fractions(min_value=0, max_value=3, max_denominator=8)
    lows = [data.draw(cut) for _ in range(M)]
    highs = [lo + data.draw(cut) for lo in lows]
    ys: list[F] = []
    for k, x in enumerate(xs):  # in its step's band, and FIFO: a later byte never leaves earlier
        step = -(-x // 1) - 1
        u = data.draw(st.fractions(min_value=0, max_value=1, max_denominator=16))
        y = lows[step] + u * (highs[step] - lows[step])
        if k:
            y = max(y, ys[-1] - (x - xs[k - 1]))
        assume(y <= highs[step])
        ys.append(y)
    low, high = gradient_range(M, lows, highs, True, None)
    if len(xs) >= 2:
        g = slope(list(zip(xs, ys)))
        assert low <= g and (high is None or g <= high), (xs, ys, lows, highs)
    assert low <= 0 and (high is None or high >= 0)   # fewer than two samples: gradient 0


def test_the_lattice_bound_terms_match_the_numbers() -> None:
    """The encoding's bounds at every band end, evaluated, give gradient_range's interval."""
    lows, highs = [F(0), F(1, 3), F(1, 4)], [F(1, 2), F(2, 3), F(5, 4)]
    lo_vars = [z3.Real(f"lo{j}") for j in range(3)]
    hi_vars = [z3.Real(f"hi{j}") for j in range(3)]
    sub = [(v, z3.RealVal(str(x))) for v, x in zip(lo_vars + hi_vars, lows + highs)]

    def value(term: z3.ExprRef) -> F:
        return F(z3.simplify(z3.substitute(term, *sub)).as_fraction())

    uppers = [value(u) for u in lattice_upper_terms(3, lo_vars, hi_vars)]
    lowers = [value(d) for d in lattice_lower_terms(3, lo_vars, hi_vars)]
    low, high = gradient_range(3, lows, highs, True, None)
    assert min(uppers) == high and max(max(lowers), F(-1)) == low


@pytest.mark.parametrize("even", [True, False])
def test_band_terms_match_band_numbers(even: bool) -> None:
    q0, q1, x = z3.Reals("q0 q1 x")
    lo, hi = band_terms(F(1), 2, even, q0, q1, x)
    for values in [(F(1, 2), F(3, 2), F(1)), (F(-1, 3), F(1, 4), F(3, 4)), (F(2), F(0), F(1, 2))]:
        sub = [(q0, z3.RealVal(str(values[0]))), (q1, z3.RealVal(str(values[1]))), (x, z3.RealVal(str(values[2])))]
        got = tuple(F(z3.simplify(z3.substitute(t, *sub)).as_fraction()) for t in (lo, hi))
        assert got == band_numbers(F(1), 2, even, *values)


def test_sqrt_never_rounds_above_the_root() -> None:
    for v in (F(2), F(1, 3), F(10 ** 6 + 1, 7), F(49, 4)):
        root = sqrt_fraction(v)
        assert root * root <= v and v - root * root < v / 10 ** 45
