"""Solver backends: z3, cvc5 and yices agree, their traces validate, SMT-LIB export round-trips, and a
timeout is "unknown", never a proof."""

from __future__ import annotations

from fractions import Fraction

import pytest
import z3

import ccac
from ccac.solving.solvers import SOLVERS, evaluate, solve_cvc5, solve_yices, to_smtlib
CONST = {"network": {"T": 6, "buffer": 1}, "cca": {"name": "const", "cwnd": 2}}
MORE_THAN_LINK = "S[T-1] - S[0] > C*(T-1+D)"  # the link cannot serve more than C per step
FULL_LINK = "S[T-1] - S[0] == C*(T-1+D)"
AIMD_LOSS = {"network": {"T": 10, "buffer": 2}, "cca": {"name": "aimd"},
             "query": {"find": "any(L[t] > L[t-1] for t in range(2, T))"}}


def query(base: dict, find: str | None = None) -> ccac.Query:
    data = {**base, "query": {"find": find}} if find is not None else base
    return ccac.parse_query(data)


CASES = [
    (query(CONST, MORE_THAN_LINK), "unsat"),
    (query(CONST, FULL_LINK), "sat"),
    (query({"network": {"T": 6, "buffer": 1}, "cca": {"name": "aimd"}},
           "any(L[t] > L[t-1] for t in range(2, T))"), "sat"),
    # an infinite buffer loses nothing during the trace (L[0] is history and may be > 0)
    (query({"network": {"T": 6}, "cca": {"name": "const", "cwnd": 1}}, "L[T-1] > L[0]"), "unsat"),
]


def test_cvc5_is_registered():
    assert SOLVERS["cvc5"] is solve_cvc5


@pytest.mark.parametrize("q,expected", CASES)
def test_z3_cvc5_and_yices_agree(q, expected):
    results = {name: ccac.solve(q, solver=name) for name in ("z3", "cvc5", "yices")}
    assert {name: r.answer for name, r in results.items()} == dict.fromkeys(results, expected)
    for r in results.values():
        assert r.validated is (True if expected == "sat" else None), r.violations
    assert results["cvc5"].solver == "cvc5" and results["cvc5"].solver_version
    assert results["yices"].solver == "yices" and results["yices"].solver_version[0].isdigit()


@pytest.mark.parametrize("backend", [solve_cvc5, solve_yices])
def test_smtlib_assignment_is_exact_and_named_like_z3(backend):
    # Integers (QF_LIRA), booleans, rationals and names SMT-LIB must quote.
    n, b, x, y = z3.Int("n"), z3.Bool("flag"), z3.Real("a b"), z3.Real("c.d!")
    m, z = z3.Int("m"), z3.Real("z")  # negative values: (- 7), (/ (- 1) 3) or (- (/ 1 3))
    formulas = [x > Fraction(1, 3), y == 2 * x, z3.ToReal(n) > x, b == (n > 2), x < Fraction(1, 2),
                m == -7, z == -x]
    outcome = backend(formulas, None)
    assert outcome.answer == "sat"
    assert set(outcome.assignment) == {"n", "flag", "a b", "c.d!", "m", "z"}
    assert outcome.assignment["m"] == -7 and outcome.assignment["z"] == -outcome.assignment["a b"]
    assert isinstance(outcome.assignment["a b"], Fraction)
    assert isinstance(outcome.assignment["n"], int) and isinstance(outcome.assignment["flag"], bool)
    assert all(evaluate(f, outcome.assignment) is True for f in formulas)


@pytest.mark.parametrize("q,expected", CASES[:2])
def test_smtlib_export_reparses_in_z3(q, expected, tmp_path):
    path = tmp_path / "query.smt2"
    assert ccac.solve(q, smtlib=path).answer == expected
    solver = z3.Solver()
    solver.add(z3.parse_smt2_file(str(path)))
    assert str(solver.check()) == expected


@pytest.mark.parametrize("solver", ["z3", "cvc5", "yices"])
def test_timeout_is_unknown_never_unsat(solver):
    result = ccac.solve(query(AIMD_LOSS), solver=solver, timeout=0.001)
    assert result.answer != "unsat"  # the query is sat: a timeout must never read as a proof
    if result.answer == "sat":
        pytest.skip(f"{solver} finished the query within 1 ms; the timeout path was not exercised")
    assert result.answer == "unknown"
    assert result.reason and "timeout" in result.reason
    assert result.trace is None and result.validated is None


def test_an_answer_does_not_depend_on_what_the_process_solved_before() -> None:
    """Each problem gets a fresh z3 context: the same query returns the same trace after other
    queries (with one shared context, z3's term ids, and so its search, drift)."""
    from ccac import load_query, solve

    first = solve(load_query("copa_starvation_unequal_jitter"))
    solve(load_query("aimd_premature_loss"))
    solve(load_query("etc_standing_queue"))
    again = solve(load_query("copa_starvation_unequal_jitter"))
    assert first.answer == again.answer == "sat"
    assert first.trace.to_json() == again.trace.to_json()


def test_yices_writes_nothing_where_ccac_runs(tmp_path, monkeypatch):
    """yices runs beside ccac and leaves no file where ccac runs (through pysmt it once wrote its
    diagnostics to a file named "stdout")."""
    monkeypatch.chdir(tmp_path)
    assert ccac.solve(CASES[1][0], solver="yices").answer == "sat"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", [solve_cvc5, solve_yices])
def test_an_empty_conjunction_is_written_as_smtlib(backend):
    """z3 prints And() as a bare `and`, which is not SMT-LIB (yices rejected
    etc_pulling_above_link_jitter for it): the script says true (and false for Or())."""
    ack, x, quoted = z3.Bool("ack"), z3.Bool("x"), z3.Bool("p and q")  # a name's words stay words
    formulas = [z3.If(ack, z3.And(), x), z3.Or(z3.Not(ack), z3.Or()) == z3.Not(ack), z3.Not(x), quoted]
    outcome = backend(formulas, None)
    assert outcome.answer == "sat" and all(evaluate(f, outcome.assignment) is True for f in formulas)


def logic_of(formulas: list[z3.BoolRef]) -> str:
    script = to_smtlib(formulas)
    return script.split("(set-logic ", 1)[1].split(")", 1)[0]


def test_the_script_names_the_logic_its_formulas_need() -> None:
    """Integers (an Int constant, to_int, is_int) and functions with arguments are read from
    z3's text, and a quoted name that spells either counts as neither."""
    ctx = z3.Context()
    x, y = z3.Real("x", ctx), z3.Real("the Int (to_int x) (is_int x) name", ctx)
    n = z3.Int("n", ctx)
    f = z3.Function("f", z3.RealSort(ctx), z3.RealSort(ctx))
    assert logic_of([x + y > 1]) == "QF_LRA"
    assert logic_of([x + n > 1]) == "QF_LIRA"
    assert logic_of([z3.ToReal(z3.ToInt(x)) < x]) == "QF_LIRA"
    assert logic_of([z3.IsInt(x)]) == "QF_LIRA"
    assert logic_of([f(x) > y]) == "QF_UFLRA"
    assert logic_of([f(x) > n]) == "QF_UFLIRA"
    for formulas in ([x + y > 1], [x + n > 1], [f(x) > y]):
        assert solve_yices(formulas, 10).answer == "sat"
