"""The PCC machinery (ccas/pcc.py): every enclosure contains the true value (the concrete
senders' numerics, themselves checked against mpmath at 50 digits), the fixed linear
combinations are the textbook formulas, and the documented approximation errors hold."""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest
import z3
from hypothesis import given, settings, strategies as st

from ccac.ccas import CCAS
from ccac.ccas.pcc import (bins_containing, deviation_rows, grid_points, kappa_bounds, power_gap,
                           power_interval, power_table, residual_rows, rms_bounds_numbers,
                           rms_bounds_terms, slope_weights, sqrt_bounds)
from ccac.senders.allegro import sigmoid
from ccac.senders.pcc import ls_slope, power, sqrt_fraction

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
    """ccas/pcc.py holds shared code only: discovery must not find an ALGORITHM there."""
    import ccac.ccas.pcc as pcc

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


@settings(max_examples=40, deadline=None)
@given(ys=st.lists(st.fractions(min_value=0, max_value=5, max_denominator=64), min_size=2, max_size=6))
def test_slope_weights_are_the_least_squares_slope(ys: list[F]) -> None:
    w = slope_weights(len(ys))
    assert sum(a * y for a, y in zip(w, ys)) == ls_slope(ys)


def test_slope_weights_match_the_notes() -> None:
    assert slope_weights(2) == [-1, 1]
    assert slope_weights(3) == [F(-1, 2), 0, F(1, 2)]
    assert slope_weights(4) == [F(-3, 10), F(-1, 10), F(1, 10), F(3, 10)]


@settings(max_examples=40, deadline=None)
@given(ys=st.lists(st.fractions(min_value=0, max_value=5, max_denominator=64), min_size=2, max_size=6))
def test_deviation_and_residual_bounds_contain_the_true_rms(ys: list[F]) -> None:
    n = len(ys)
    mean = sum(ys) / n
    dev = [sum(c * y for c, y in zip(row, ys)) for row in deviation_rows(n)]
    assert dev == [y - mean for y in ys]
    sigma = mpmath.sqrt(sum(mpmath.mpf(float(d)) ** 2 for d in dev) / n)
    lo, hi = rms_bounds_numbers(dev)
    assert float(lo) <= float(sigma) + 1e-12 and float(sigma) <= float(hi) + 1e-12
    if n == 2:  # exact for two samples: |y2 - y1| / 2
        assert lo == hi == abs(ys[1] - ys[0]) / 2
    slope = ls_slope(ys)
    res = [sum(c * y for c, y in zip(row, ys)) for row in residual_rows(n)]
    fit = [mean + slope * (j - F(n - 1, 2)) for j in range(n)]
    assert res == [y - f for y, f in zip(ys, fit)]


def test_rms_bounds_terms_agree_with_the_numbers() -> None:
    xs = [z3.Real(f"x{i}") for i in range(3)]
    lo, hi = rms_bounds_terms(xs)
    values = [F(1, 3), F(-2), F(5, 7)]
    sub = [(x, z3.RealVal(str(v))) for x, v in zip(xs, values)]
    lo_v = z3.simplify(z3.substitute(lo, *sub))
    hi_v = z3.simplify(z3.substitute(hi, *sub))
    want_lo, want_hi = rms_bounds_numbers(values)
    assert F(lo_v.as_fraction()) == want_lo and F(hi_v.as_fraction()) == want_hi


def test_sqrt_bounds_are_outward() -> None:
    for m in (2, 3, 5, 6):
        lo, hi = sqrt_bounds(m)
        assert lo * lo <= m <= hi * hi and hi - lo < F(1, 10 ** 9)
    assert sqrt_bounds(4) == (2, 2)
