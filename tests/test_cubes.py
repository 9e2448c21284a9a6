"""``ccac query --cubes`` (ccac.analysis.cubes): one query split into cases solved apart.

* the cases cover every assignment (their disjunction is valid), and the formula is sat exactly
  when one of its cases is;
* sat, unsat and periodic queries give the answers they give whole, a sat one with a validated
  trace; a case that runs out of time leaves the answer unknown, never unsat;
* the cases run on a local pool and on a Dask cluster alike;
* the projection to more workers schedules the measured times correctly;
* bad input is one line and exit 2.
"""

from __future__ import annotations

import pytest
import z3

from conftest import run_cli

from ccac.analysis.cubes import Case, CubeRun, solve_in_cubes, split
from ccac.analysis.executors import run_local
from ccac.problems.problem import build
from ccac.problems.query import load_query
from ccac.solving.solve import Result, solve


def local(fn, tasks, done) -> None:
    run_local(fn, tasks, 2, done)


@pytest.mark.parametrize("name", ["aimd_premature_loss", "aimd_no_loss_below_buffer"])
def test_the_cases_cover_every_assignment_and_agree_with_the_whole(name: str) -> None:
    formulas = build(load_query(name), "pairs").enc.formulas()
    cases = split(formulas, 8)
    assert 2 <= len(cases) <= 9
    cover = z3.Solver(ctx=formulas[0].ctx)
    cover.add(z3.Not(z3.Or(*cases)))
    assert cover.check() == z3.unsat
    answers = []
    for case in cases:
        s = z3.Solver(ctx=formulas[0].ctx)
        s.add(*formulas, case)
        answers.append(s.check())
    whole = z3.Solver(ctx=formulas[0].ctx)
    whole.add(*formulas)
    assert (whole.check() == z3.sat) == (z3.sat in answers)


@pytest.mark.parametrize("name, overrides, answer", [
    ("aimd_premature_loss", [], "sat"),
    ("aimd_no_loss_below_buffer", [], "unsat"),
    ("bbr_low_utilization", [], "sat"),
    ("expdelay_ideal_efficiency", [], "unsat"),
])
def test_a_query_split_answers_as_it_does_whole(name: str, overrides: list[str], answer: str | None) -> None:
    query = load_query(name, overrides)
    whole = solve(query, timeout=120)
    run = solve_in_cubes(query, 4, local, timeout=120)
    assert run.result.answer == whole.answer and whole.answer in ("sat", "unsat")
    assert answer is None or whole.answer == answer
    if run.result.answer == "sat":
        assert run.result.validated is True
        assert any(run.cases[i].answer == "sat" for i in run.deciding)
    else:
        assert run.deciding and all(run.cases[i].answer == "unsat" for i in run.deciding)


def test_a_case_out_of_time_leaves_the_answer_unknown() -> None:
    """One millisecond per case: no case answers, so the query is unknown, not unsat."""
    query = load_query("aimd_no_loss_below_buffer", ["network.T=14"])
    run = solve_in_cubes(query, 4, local, timeout=0.001)
    if run.result.answer != "unknown":   # a case may still be decided by propagation alone
        assert run.result.answer == "unsat" and all(run.cases[i].answer == "unsat" for i in run.deciding)
    else:
        assert "cases without an answer" in (run.result.reason or "")


def test_the_cases_run_on_a_dask_cluster(cli) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        code, out, err = cli("query", "aimd_premature_loss", "--cubes", "4", "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert "sat: counterexample found" in out and "validated: yes" in out and "cases: " in out
    assert "time from the split to the answer on N workers: 1: " in out


def test_the_projection_schedules_the_cases_in_order() -> None:
    """Cases of 4, 1, 1, 2 s on 1 worker end at 4, 5, 6, 8; on 2 at 4, 1, 2, 4; on 8 at their
    own times. An unsat waits for all; a sat for its case."""
    cases = [Case("whole", i, "", "unsat", seconds) for i, seconds in enumerate([4.0, 1.0, 1.0, 2.0])]
    unsat = CubeRun(Result(None, "unsat", None, None, None, "z3", "", 0, 0), cases, 0.0, [0, 1, 2, 3])
    assert [unsat.projected(w) for w in (1, 2, 8)] == [(8.0, True), (4.0, True), (4.0, True)]
    sat_cases = [*cases[:3], Case("whole", 3, "", "sat", 2.0)]
    sat = CubeRun(Result(None, "sat", None, None, None, "z3", "", 0, 0), sat_cases, 0.0, [3])
    assert [sat.projected(w) for w in (1, 2, 8)] == [(8.0, True), (4.0, True), (2.0, True)]
    sat_cases[1] = Case("whole", 1, "", "cancelled", None)
    assert sat.projected(1) == (7.0, False)


@pytest.mark.parametrize("args, message", [
    (["--workers", "2"], "--workers and --scheduler go with --cubes"),
    (["--cubes", "4", "--solver", "cvc5"], "--cubes solves with z3"),
])
def test_bad_cube_options_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, out, err = run_cli("query", "aimd_premature_loss", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (out, err)
