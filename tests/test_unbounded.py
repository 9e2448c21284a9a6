"""``ccac prove --unbounded``: Spacer's invariants, checked by ccac's own obligations, and its
counterexamples, found again as validated traces. Each case is small (a constant window, R = D = 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ccac.analysis.proof_file import load_proof, parse_proof
from ccac.analysis.steady_state import check_closure
from ccac.analysis.unbounded import from_proof, from_query, invariant_proof, prove_unbounded
from ccac.commands.cli import cli
from ccac.core.errors import CcacError
from ccac.problems.query import parse_query

CONST = {"network": {"T": 8, "R": 1, "D": 1, "buffer": "inf"}, "cca": {"name": "const"},
         "definitions": {"queue": "A[t] - L[t] - S[t]"}}
QUEUE_LAST = "queue[T-1] <= cwnd[0][T-1]"


def const_proof(region: str, k: int = 1):
    return parse_proof({**CONST, "steady_state": {"region": [region], "k": k}}, "const")


def test_bundled_theorem_closure_is_proved_and_its_invariant_checked() -> None:
    answer = prove_unbounded(from_proof(load_proof("const_queue_bounded")), timeout=60)
    assert answer.spacer == "unsat" and answer.answer == "proved"
    kinds = [c.kind for c in answer.checks]
    assert kinds.count("lemma") == 2 and "closure" in kinds and kinds.count("stitching") == 3
    assert all(c.verdict == "proved" for c in answer.checks)
    # the invariant is stated relative to the window's first step (it reads the same in any window)
    assert answer.invariant is not None and "S_f[0][t - 2]" in answer.invariant


def test_a_region_that_leaks_is_refuted_with_a_validated_trace() -> None:
    answer = prove_unbounded(from_proof(const_proof("queue[t] <= cwnd[0][t] / 2")), timeout=60)
    assert answer.spacer == "sat" and answer.answer == "refuted"
    trace = answer.counterexample
    assert trace is not None and trace.validated
    assert trace.query.network.T > answer.question.window   # the leak takes a step past the first window


def test_an_invariant_that_is_not_inductive_fails_ccac_s_closure_check() -> None:
    question = from_proof(const_proof("queue[t] <= cwnd[0][t]"))
    proof = invariant_proof(question, "(A_f[0][t - 0] - (S_f[0][t - 2] + L_f[0][t - 2])) <= 2 * cwnd[0][t]")
    assert check_closure(proof, "z3", 30).verdict == "refuted"


def query(assume: list[str], find: str):
    return parse_query({**CONST, "query": {"assume": assume, "find": find}}, "q")


def test_query_never_met_from_a_start_is_proved() -> None:
    answer = prove_unbounded(from_query(query([QUEUE_LAST], "queue[T-1] > cwnd[0][T-1]")), timeout=60)
    assert answer.answer == "proved"


def test_query_met_from_any_start_is_refuted() -> None:
    answer = prove_unbounded(from_query(query([], "queue[T-1] > cwnd[0][T-1]")), timeout=60)
    assert answer.answer == "refuted" and answer.counterexample is not None
    assert answer.counterexample.validated


def test_bad_input_is_one_clear_error() -> None:
    with pytest.raises(CcacError, match="at least 2 steps"):
        from_proof(const_proof("queue[t] <= cwnd[0][t]", k=2), window=1)
    assert from_proof(const_proof("queue[t] <= cwnd[0][t]", k=4)).window == 4   # start R-1+k-1 = 3
    result = CliRunner().invoke(cli, ["prove", "const_queue_bounded", "--window", "3"])
    assert isinstance(result.exception, CcacError) and "--window goes with --unbounded" in str(result.exception)


def test_cli_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    proved = runner.invoke(cli, ["prove", "const_queue_bounded", "--unbounded", "--timeout", "60"])
    assert proved.exit_code == 0, proved.output
    assert "invariant" in proved.output and "proved (unbounded)" in proved.output
    leaks = runner.invoke(cli, ["prove", "const_queue_bounded", "--unbounded", "--save", str(tmp_path),
                                 "--set", 'steady_state.region=["queue[t] <= cwnd[0][t] / 2"]'])
    assert leaks.exit_code == 1 and "REFUTED (unbounded)" in leaks.output
    assert (tmp_path / "unbounded_closure.json").exists()
