"""The solver portfolio: the first definitive answer wins, the others are stopped, the
result names the member that answered, and no member's failure or silence becomes a proof."""

from __future__ import annotations

import time

import pytest
import z3

from ccac.solving import solvers
from ccac.solving.solvers import Outcome
from ccac.solving.backends import backend, parse_solver
from ccac.problems.query import load_query
from ccac.solving.solve import solve


def _formulas(sat: bool) -> list[z3.BoolRef]:
    x = z3.Real("x")
    return [x > 1, x < 3] if sat else [x > 1, x < 0]


def _sleepy(formulas, timeout):
    time.sleep(60)
    return Outcome("unknown", "slept", None, "sleepy", "0", 60.0)


def _broken(formulas, timeout):
    raise RuntimeError("no such solver")


def _gives_up(formulas, timeout):
    return Outcome("unknown", "incomplete", None, "gives_up", "1", 0.0)


@pytest.fixture
def members(monkeypatch):
    for name, backend in (("sleepy", _sleepy), ("broken", _broken), ("gives_up", _gives_up)):
        monkeypatch.setitem(solvers.SOLVERS, name, backend)


def test_portfolio_answers_sat_and_unsat_with_the_winner_named():
    sat = backend("portfolio")(_formulas(True), 10)
    assert sat.answer == "sat" and sat.solver.endswith("(portfolio)")
    assert 1 < sat.assignment["x"] < 3
    assert backend("portfolio")(_formulas(False), 10).answer == "unsat"


def test_the_first_definitive_answer_wins_and_a_slow_member_is_stopped(members):
    start = time.perf_counter()
    out = backend("portfolio:sleepy,z3")(_formulas(True), 60)
    assert out.answer == "sat" and out.solver == "z3 (portfolio)"
    assert time.perf_counter() - start < 10  # sleepy was killed, not waited for


def test_a_failing_member_is_that_members_unknown_not_the_races(members):
    assert backend("portfolio:broken,z3")(_formulas(False), 10).answer == "unsat"
    out = backend("portfolio:broken,gives_up")(_formulas(False), 10)
    assert out.answer == "unknown"
    assert "no such solver" in out.reason and "incomplete" in out.reason


def test_a_portfolio_query_is_validated_like_any_other():
    result = solve(load_query("aimd_premature_loss"), solver="portfolio", timeout=60)
    assert result.answer == "sat" and result.validated is True
    assert result.solver in ("z3 (portfolio)", "cvc5 (portfolio)")
    assert solve(load_query("aimd_no_loss_below_buffer"), solver="portfolio", timeout=60).answer == "unsat"


def test_solver_names_seeds_and_custom_portfolios():
    from ccac.core.errors import CcacError
    from ccac.solving.backends import solver_version

    assert backend("z3#3")(_formulas(True), 10).solver == "z3#3"
    assert [m.text for m in parse_solver("portfolio").members] == ["z3", "cvc5"]
    assert [m.text for m in parse_solver("portfolio:z3, z3#1").members] == ["z3", "z3#1"]
    assert parse_solver("z3#7").engine == "z3" and parse_solver("z3#7").seed == 7
    assert solver_version("portfolio:z3,z3#1") == f"z3 {z3.get_version_string()} + z3#1 {z3.get_version_string()}"
    out = backend("portfolio:z3#1,z3#2")(_formulas(False), 10)
    assert out.answer == "unsat" and out.solver in ("z3#1 (portfolio)", "z3#2 (portfolio)")
    for bad in ("bogus", "z3#", "portfolio:z3", "portfolio:z3,portfolio", "portfolio:z3,nope"):
        with pytest.raises(CcacError):
            backend(bad)


def test_cli_unknown_solver_is_bad_input(cli):
    for command in (["query", "aimd_premature_loss"], ["bench", "aimd_premature_loss"]):
        code, out, err = cli(*command, "--solver", "bogus")
        assert code == 2 and "unknown solver 'bogus'" in err and "Traceback" not in err
