"""Non-linear uses (ccac.encode.nonlinear): every enclosure contains the exact values (the
containment argument, tested on random points of random pieces), exact and enclosed solves agree
on small language CCAs, a spurious enclosed answer is refined into a validated trace, the round
limit ends as unknown, and bad exponents are refused naming the place."""

from __future__ import annotations

import time

from fractions import Fraction
from pathlib import Path

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from ccac import CcacError, parse_query, solve
from ccac.core.limits import MAX_NUMBER_BITS, number_bits
from ccac.encode import nonlinear
from ccac.encode.nonlinear import (ROOT_TOLERANCE, exact_root, in_root_band, power_piece, product_piece,
                                   quotient_piece, root_band)
from ccac.problems.query import load_query
from ccac.solving import refine
from ccac.solving import solve as solving
from ccac.solving.solve import premise
from ccac.solving.solvers import check_solver

from test_bench import SQUARING, SQUARING_QUERY

CHECKS = settings(derandomize=True, max_examples=300, deadline=None)
numbers = st.fractions(min_value=-50, max_value=50, max_denominator=64)
positive = st.fractions(min_value=Fraction(1, 64), max_value=50, max_denominator=64)
anywhere = st.one_of(numbers, st.fractions(min_value=-2, max_value=2, max_denominator=64))


def holds(constraint: z3.BoolRef, values: dict[z3.ArithRef, Fraction]) -> bool:
    """``constraint`` with exact values put in, simplified."""
    pairs = [(v, z3.RealVal(f"{x.numerator}/{x.denominator}")) for v, x in values.items()]
    return z3.is_true(z3.simplify(z3.substitute(constraint, *pairs)))


X, Y, Z = z3.Reals("x y z")


@st.composite
def piece_and_point(draw: st.DrawFn, side: int = 0) -> tuple[Fraction | None, Fraction | None, Fraction]:
    """A piece [lo, hi] (an end may be missing: a tail) and a point in it; ``side`` +1 / -1 keeps
    the piece at or above / at or below 0."""
    a, b = sorted([draw(positive), draw(positive)]) if side else sorted([draw(numbers), draw(numbers)])
    if side < 0:
        a, b = -b, -a
    if side > 0 and draw(st.booleans()):
        a = Fraction(0)
    if side < 0 and draw(st.booleans()):
        b = Fraction(0)
    # a grid holds 0, so a piece on one side of it has its end towards 0
    lo = None if side <= 0 and draw(st.integers(0, 3)) == 0 else a
    hi = None if side >= 0 and draw(st.integers(0, 3)) == 0 else b
    t = draw(st.fractions(min_value=0, max_value=1, max_denominator=32))
    low = lo if lo is not None else (hi - 20 if hi is not None else Fraction(-20))
    high = hi if hi is not None else low + 20
    x = low + t * (high - low)
    if x == 0 and (lo == 0 or hi == 0):   # a quotient's piece excludes 0
        x = (low + high) / 2 if low + high != 0 else high
    return lo, hi, x


@CHECKS
@given(piece_and_point(), numbers)
def test_the_product_enclosure_contains_every_exact_product(piece: tuple, y: Fraction) -> None:
    lo, hi, x = piece
    assert holds(product_piece(X, Y, Z, lo, hi), {X: x, Y: y, Z: x * y})


@CHECKS
@given(st.sampled_from([1, -1]).flatmap(piece_and_point), numbers)
def test_the_quotient_enclosure_contains_every_exact_quotient(piece: tuple, a: Fraction) -> None:
    lo, hi, b = piece
    if b == 0:
        return
    assert holds(quotient_piece(Y, X, Z, lo, hi), {X: b, Y: a, Z: a / b})


@CHECKS
@given(st.sampled_from([1, -1]).flatmap(piece_and_point), st.integers(2, 8))
def test_the_power_enclosure_contains_every_exact_power(piece: tuple, n: int) -> None:
    lo, hi, x = piece
    assert holds(power_piece(X, n, Z, lo, hi), {X: x, Z: x ** n})


@CHECKS
@given(piece_and_point(), anywhere, anywhere)
def test_a_piece_holds_at_every_exact_point_outside_it_too(piece: tuple, x: Fraction, y: Fraction) -> None:
    """Every piece is asserted for every value of its operand, so outside its range it must
    let every exact value be (product, quotient and power alike); the other operand's sign
    decides the order of the bounds, so values near 0 are drawn often."""
    lo, hi, _ = piece
    assert holds(product_piece(X, Y, Z, lo, hi), {X: x, Y: y, Z: x * y})
    assert holds(power_piece(X, 3, Z, lo, hi), {X: x, Z: x ** 3}) or not _one_sided(lo, hi)
    if x != 0 and _one_sided(lo, hi):
        assert holds(quotient_piece(Y, X, Z, lo, hi), {X: x, Y: y, Z: y / x})


def _one_sided(lo: Fraction | None, hi: Fraction | None) -> bool:
    """A piece on one side of 0 (0 may be an end): the pieces a quotient's and a power's breakpoints cut."""
    return (lo is not None and lo >= 0) or (hi is not None and hi <= 0)


@CHECKS
@given(st.lists(anywhere, min_size=1, max_size=4), anywhere, anywhere)
def test_a_product_split_on_both_factors_holds_every_exact_product(cuts: list[Fraction], x: Fraction,
                                                                    y: Fraction) -> None:
    """McCormick-like boxes: a product's other factor split too (its initial pieces and cuts),
    every bound holds at every exact product."""
    node = nonlinear.Node("mul", X, Y, 0, Z, "here", "x * y")
    bounds = [c for cut in cuts for c in nonlinear.refine_other(node, cut)]
    assert node.other_breakpoints is not None and set(cuts) <= set(node.other_breakpoints)
    assert all(holds(b, {X: x, Y: y, Z: x * y}) for b in bounds)


@CHECKS
@given(st.sampled_from([1, -1]).flatmap(piece_and_point), numbers, numbers)
def test_a_quotient_by_zero_is_free_in_every_piece(piece: tuple, a: Fraction, z: Fraction) -> None:
    """a / 0 may be any value (the exact relation leaves it free): no piece, even one ending at
    0, bounds it."""
    lo, hi, _ = piece
    assert holds(quotient_piece(Y, X, Z, lo, hi), {X: Fraction(0), Y: a, Z: z})


@CHECKS
@given(st.fractions(min_value=0, max_value=20, max_denominator=16), st.integers(2, 8), st.sampled_from([-1, 0, 1]))
def test_the_root_band_holds_both_edges_and_the_computed_root(r: Fraction, q: int, edge: int) -> None:
    """x = r ** q has the rational root r: r (1 +- tol) lies exactly on the band's edges, and the
    sender's computed root inside; the encoding's band (powers as exact values) holds there."""
    x = r ** q
    y = r * (1 + edge * ROOT_TOLERANCE) if edge else exact_root(x, 1, q)
    assert in_root_band(y, x, 1, q)
    top = z3.Real("top")
    band = root_band(Y, X, 1, q, lambda term, n: term if n == 1 else top)
    assert holds(band, {X: x, Y: y, top: y ** q})


@CHECKS
@given(st.fractions(min_value=0, max_value=20, max_denominator=16), st.integers(1, 8), st.integers(2, 8))
def test_the_computed_root_is_within_the_tolerance(x: Fraction, p: int, q: int) -> None:
    assert in_root_band(exact_root(x, p, q), x, p, q)


# ---------------------------------------------------------------------- solves
CCA = """name = "nl-grow"
summary = "grows by alpha * alpha / cwnd when ACKed, halves on loss"
[state.cwnd]
initial = "cwnd >= alpha"
start = "alpha"
rule = "{rule}"
"""
QUERY = """[network]
T = {T}
R = 1
D = 1
buffer = 2
[cca]
file = "{cca}"
[query]
assume = [{assume}]
find = "{find}"
"""


def query(tmp_path: Path, rule: str, find: str, assume: str = "", T: int = 6) -> object:
    cca = tmp_path / "cca.toml"
    cca.write_text(CCA.format(rule=rule))
    import tomllib
    return parse_query(tomllib.loads(QUERY.format(T=T, cca=cca, assume=assume, find=find)), "nl", str(tmp_path))


GROW = "cwnd / 2 if newly_lost > 0 else (cwnd + alpha * alpha / cwnd if newly_acked > 0 else cwnd)"


@pytest.mark.parametrize("find, assume, expect", [
    ("cwnd[0][T-1] > cwnd[0][T-2] + alpha and cwnd[0][T-2] >= alpha", '"alpha == 1/10"', "unsat"),
    ("cwnd[0][T-1] > cwnd[0][T-2]", '"alpha == 1/10", "cwnd[0][1] == 1/2"', "sat"),
])
def test_exact_and_enclose_agree_and_every_sat_trace_is_validated(tmp_path: Path, find: str, assume: str,
                                                                   expect: str) -> None:
    q = query(tmp_path, GROW, find, assume)
    for mode in ("exact", "enclose"):
        result = solve(q, nonlinear=mode, timeout=60)
        assert result.answer == expect, (mode, result.reason)
        assert result.nonlinear == mode
        if expect == "sat":
            assert result.validated is True


def test_a_spurious_enclosed_answer_is_repaired_into_a_validated_trace(tmp_path: Path) -> None:
    """A sat trace squares 1/2 inexactly; pinning the operands to a trace's values gives one with
    every square exact."""
    q = query(tmp_path, "cwnd * cwnd", "cwnd[0][2] >= 0", '"cwnd[0][0] == 1/2"', T=3)
    result = solve(q, nonlinear="enclose", timeout=60)
    assert result.answer == "sat" and result.validated is True
    assert result.repaired
    assert result.trace is not None and result.trace.flow("cwnd", 0)[2] == Fraction(1, 16)


def test_without_repair_a_spurious_enclosed_answer_is_refined_into_a_validated_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refine, "REPAIR_SOLVES", 0)
    q = query(tmp_path, "cwnd * cwnd", "cwnd[0][2] >= 0", '"cwnd[0][0] == 1/2"', T=3)
    result = solve(q, nonlinear="enclose", timeout=60)
    assert result.answer == "sat" and result.validated is True
    assert result.refinements >= 1 and not result.repaired
    assert result.trace is not None and result.trace.flow("cwnd", 0)[2] == Fraction(1, 16)


def test_the_round_limit_ends_as_unknown_naming_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refine, "REPAIR_SOLVES", 0)
    q = query(tmp_path, "cwnd * cwnd", "cwnd[0][2] >= 0", '"cwnd[0][0] == 1/2"', T=3)
    result = solve(q, nonlinear="enclose", timeout=60, rounds=0)
    assert result.answer == "unknown"
    assert "refinement rounds" in (result.reason or "") and "cwnd * cwnd" in (result.reason or "")


def test_the_premise_of_a_free_run_is_repaired_into_a_validated_trace(tmp_path: Path) -> None:
    """The premise (no find) of the loss-below-buffer question at T = 8: z3 moves the operands
    off every breakpoint, and exact values double their digits per ACKing step; pinning them
    gives a validated trace at once."""
    q = query(tmp_path, GROW, "True", '"alpha <= 0.1 * C * R"', T=8)
    result = premise(q, nonlinear="enclose", timeout=60)
    assert result.answer == "sat" and result.validated is True and result.repaired


def test_cuts_near_a_breakpoint_are_rationals_of_few_bits_closing_in() -> None:
    """A value a hair off a breakpoint (a long number, as z3 gives) is cut at rationals of at
    most CUT_BITS bits, each inside its piece, the piece around it narrowing to the finest grid;
    a piece narrower than that is not cut."""
    at = Fraction(1, 3) + Fraction(1, 10**40)
    breakpoints = [Fraction(0), Fraction(1, 3), Fraction(1)]
    while (cut := refine._cut(at, breakpoints)) is not None:
        assert Fraction(1, 3) < cut < min(b for b in breakpoints if b > at)
        assert number_bits(cut) <= 2 * refine.CUT_BITS
        breakpoints.append(cut)
    assert min(b for b in breakpoints if b > at) - at < Fraction(1, 2**(refine.CUT_BITS - 1))
    assert len(breakpoints) <= 3 + refine.CUT_BITS // 8 * 2
    assert refine._cut(Fraction(1, 2**70), [Fraction(0), Fraction(1, 2**64)]) is None


def test_a_solver_value_beyond_the_number_bound_is_an_unknown_with_the_reason() -> None:
    """z3's values are read in binary (Python reads no decimal string of over 4300 digits), and
    one above MAX_NUMBER_BITS is refused as an unknown answer, not a crash."""
    x = z3.Real("x")
    for size, answer in ((MAX_NUMBER_BITS // 2 - 8, "sat"), (MAX_NUMBER_BITS, "unknown")):
        s = z3.Solver()
        s.add(x == z3.RealVal(f"-{2 ** size + 1}/{2 ** size + 3}"))
        outcome = check_solver(s)
        assert outcome.answer == answer, outcome.reason
        if answer == "sat":
            assert outcome.assignment == {"x": -Fraction(2 ** size + 1, 2 ** size + 3)}
        else:
            assert "MAX_NUMBER_BITS" in (outcome.reason or "")


def test_a_rational_power_is_a_recorded_choice_within_the_tolerance(tmp_path: Path) -> None:
    q = query(tmp_path, "(cwnd * alpha) ** (1/2)", "cwnd[0][2] > 0", '"alpha == 1", "cwnd[0][1] == 4"', T=3)
    result = solve(q, nonlinear="exact", timeout=60)
    assert result.answer == "sat" and result.validated is True
    assert result.trace is not None
    root = result.trace.flow("cwnd_choice0", 0)[2]
    assert in_root_band(root, Fraction(4), 1, 2)


def test_a_rational_power_in_a_definition_is_a_choice_of_the_rule_that_uses_it(tmp_path: Path) -> None:
    """A definition taking a root, used in a state's rule (through another definition too), is
    written out in the rule: the root is the rule's recorded choice, as if written there."""
    cca = tmp_path / "cca.toml"
    cca.write_text(CCA.format(rule="grown") + '[definitions]\nroot = "(cwnd * alpha) ** (1/2)"\ngrown = "root + 0"\n')
    import tomllib
    q = parse_query(tomllib.loads(QUERY.format(T=3, cca=cca, assume='"alpha == 1", "cwnd[0][1] == 4"',
                                               find="cwnd[0][2] > 0")), "nl", str(tmp_path))
    result = solve(q, nonlinear="exact", timeout=60)
    assert result.answer == "sat" and result.validated is True and result.trace is not None
    assert in_root_band(result.trace.flow("cwnd_choice0", 0)[2], Fraction(4), 1, 2)


def test_a_rational_power_in_a_query_is_refused_saying_why(tmp_path: Path) -> None:
    """A query's find cannot record the root it takes, and a root is irrational in general."""
    with pytest.raises(CcacError) as e:
        solve(query(tmp_path, GROW, "cwnd[0][2] ** (1/2) > 1"), timeout=60)
    assert "no trace series to record the root" in str(e.value) and "query.find" in str(e.value)


@pytest.mark.parametrize("rule, message", [
    ("cwnd ** 9", "exponent 9 of a solver quantity is beyond +-8"),
    ("cwnd ** -9", "exponent -9 of a solver quantity is beyond +-8"),
    ("cwnd ** (1/9)", "rational exponent 1/9"),
    ("cwnd ** (9/2)", "rational exponent 9/2"),
])
def test_bad_exponents_are_refused_naming_the_place(tmp_path: Path, rule: str, message: str) -> None:
    with pytest.raises(CcacError) as e:
        query(tmp_path, rule, "True")
    assert message in str(e.value) and "state.cwnd" in str(e.value)


def test_a_mode_is_one_of_the_modes(tmp_path: Path) -> None:
    with pytest.raises(CcacError) as e:
        solve(query(tmp_path, GROW, "True"), nonlinear="guess")
    assert "unknown non-linear mode 'guess'" in str(e.value)
    assert nonlinear.DEFAULT_MODE in nonlinear.MODES


@pytest.mark.parametrize("solver", ["z3", "cvc5"])
def test_an_enclosed_answers_solves_share_one_time_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          solver: str) -> None:
    """Repair and refinement solve again and again: each solve gets what is left of the
    answer's limit, not the whole limit anew; with nothing left the answer is unknown at once."""
    cca = tmp_path / "squaring.toml"
    cca.write_text(SQUARING)
    path = tmp_path / "square.toml"
    path.write_text(SQUARING_QUERY.format(cca=cca, find="cwnd[0][2] >= 0"))
    answers = []

    def twice(nodes: object, ask: refine.Ask, validated: object, rounds: int) -> object:
        answers.append(ask([], []))
        time.sleep(1.2)
        started = time.perf_counter()
        answers.append(ask([], []))
        assert time.perf_counter() - started < 0.5
        return answers[-1]

    monkeypatch.setattr(solving, "refined", twice)
    pipeline = solving.Pipeline(load_query(str(path)), solver, nonlinear="enclose")
    pipeline.build()
    pipeline.answer(1.0)
    assert answers[0].answer == "sat" and (answers[1].answer, answers[1].reason) == ("unknown", "timeout")
