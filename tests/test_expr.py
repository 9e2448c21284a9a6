"""The query-expression compiler: linear terms, quantifiers, indices, and clear rejections."""

from __future__ import annotations

from fractions import Fraction

import pytest
import z3

from ccac.core.errors import CcacError
from ccac.encode.expr import Series, Symbols, compile_condition, compile_number


@pytest.fixture
def sym() -> Symbols:
    s = Symbols()
    s.constants.update({"C": 1, "R": 2, "T": 5, "alpha": z3.Real("alpha"), "util": Fraction(1, 10)})
    s.series["S"] = Series("S", [z3.Real(f"S_{t}") for t in range(5)], 1)
    s.series["cwnd"] = Series("cwnd", [[z3.Real(f"c_{n}_{t}") for t in range(5)] for n in range(2)], 2, {})
    s.series["rate"] = Series("rate", [None, [z3.Real(f"r_1_{t}") for t in range(5)]], 2,
                              {0: "flow 0's CCA (aimd) does not pace"})
    s.unavailable["buffer"] = "the buffer is infinite"
    return s


def equivalent(a: z3.ExprRef, b: z3.ExprRef) -> bool:
    solver = z3.Solver()
    solver.add(a != b)
    return solver.check() == z3.unsat


def test_linear_arithmetic_and_comparison(sym: Symbols) -> None:
    c = compile_condition("S[T-1] - S[0] < util * C * (T - 1)", sym, "find")
    S = sym.series["S"].values
    assert equivalent(c, S[4] - S[0] < Fraction(4, 10))


def test_any_and_all_are_disjunction_and_conjunction(sym: Symbols) -> None:
    S = sym.series["S"].values
    c = compile_condition("any(S[t] > S[t-1] for t in range(1, T))", sym, "find")
    assert equivalent(c, z3.Or(*[S[t] > S[t - 1] for t in range(1, 5)]))
    c = compile_condition("all(S[t] >= S[t-1] for t in range(1, T))", sym, "find")
    assert equivalent(c, z3.And(*[S[t] >= S[t - 1] for t in range(1, 5)]))


def test_empty_quantifiers(sym: Symbols) -> None:
    assert compile_condition("any(S[t] > 0 for t in range(3, 3))", sym, "find") is False
    assert compile_condition("all(S[t] > 0 for t in range(3, 3))", sym, "find") is True


def test_min_max_abs_sum_implies(sym: Symbols) -> None:
    S = sym.series["S"].values
    c = compile_condition("max(S[t] for t in range(T)) - min(S[0], S[1]) <= abs(S[2]) + sum(S[t] for t in range(2))",
                          sym, "find")
    solver = z3.Solver()
    solver.add(c, S[0] == 1, S[1] == 2, S[2] == -3, S[3] == 0, S[4] == 8)
    assert solver.check() == z3.unsat  # 8 - 1 <= 3 + (1 + 2) is false
    imp = compile_condition("implies(S[0] > 1, S[1] > 1)", sym, "find")
    assert equivalent(imp, z3.Or(z3.Not(S[0] > 1), S[1] > 1))


def test_per_flow_series_and_negative_constant_index(sym: Symbols) -> None:
    cw = sym.series["cwnd"].values
    c = compile_condition("cwnd[1][-1] >= 2 * alpha", sym, "find")
    assert equivalent(c, cw[1][4] >= 2 * sym.constants["alpha"])


def test_exact_evaluation_with_numbers() -> None:
    s = Symbols()
    s.constants.update({"T": 3})
    s.series["S"] = Series("S", [Fraction(0), Fraction(1, 3), Fraction(2, 3)], 1)
    assert compile_condition("S[2] - S[0] == 2/3", s, "find") is True
    assert compile_condition("all(S[t] - S[t-1] == 1/3 for t in range(1, T))", s, "find") is True
    assert compile_number("S[1] * 3", s, "x") == 1


@pytest.mark.parametrize("text, message", [
    ("S[1] ** 9 > 1", "exponent 9 of a solver quantity is beyond +-8"),
    ("S[1] ** (1/3) > 1", "a rational power of a solver quantity is irrational in general"),
    ("2 ** S[1] > 1", "non-linear: an exponent must be a number known before solving"),
    ("Q[1] > 0", "unknown name `Q`"),
    ("buffer > 0", "`buffer` is not available: the buffer is infinite"),
    ("rate[0][1] > 0", "does not exist: flow 0's CCA (aimd) does not pace"),
    ("any(S[t-1] > 0 for t in range(T))", "index -1 out of range 0..4 at t=0"),
    ("S[7] > 0", "index 7 out of range"),
    ("S[1.5] > 0", "whole number"),
    ("S[1] >", "syntax error"),
    ("S[1] + 1", "is a number, not a condition"),
    ("S > 1", "needs an index"),
    ("any(S[t] > 0 for t in range(alpha))", "range bounds must be whole numbers known before solving"),
    ("__import__('os').system('true')", "only any, all, sum, min, max, abs, floor and implies"),
    ("S[1] > 0 and 3", "expected a condition"),
    ("S[1] // 2 > 0", "non-linear: // and % need numbers known before solving"),
    ("[x for x in S]", "unsupported syntax"),
])
def test_rejections_name_the_problem(sym: Symbols, text: str, message: str) -> None:
    with pytest.raises(CcacError) as e:
        compile_condition(text, sym, "query.find")
    assert message in str(e.value)
    assert str(e.value).startswith("query.find:")


def test_floor_is_exact_on_numbers_and_on_solver_quantities() -> None:
    """floor(x): the greatest whole number at most x, for known numbers and in the solver."""
    import z3
    symbols = Symbols()
    assert compile_number("floor(7/2)", symbols, "q") == 3
    assert compile_number("floor(-1/2)", symbols, "q") == -1
    x = z3.Real("x")
    symbols.constants["x"] = x
    term = compile_number("floor(1448 * x) / 1448", symbols, "q")
    for value, floored in ((Fraction(7, 2), Fraction(7, 2)), (Fraction(1, 3), Fraction(482, 1448)),
                           (Fraction(-1, 2896), Fraction(-1, 1448))):
        solver = z3.Solver()
        solver.add(x == value, term != floored)
        assert solver.check() == z3.unsat, value
    with pytest.raises(CcacError, match="floor takes one number"):
        compile_number("floor(1, 2)", symbols, "q")
