"""Proofs: lemma verdicts (proved, refuted, vacuous), steady-state theorems, and the stitching
checks that make them sound."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ccac.solving.solvers import solve_z3
from ccac.core.errors import CcacError
from ccac.analysis.proof import check_proof
from ccac.analysis.proof_file import bundled_proofs, load_proof, parse_proof
from ccac.problems.query import parse_query
from ccac.analysis.window import window_is_trace, windows

CONST = {"network": {"T": 8, "R": 1, "D": 1, "buffer": "inf"}, "cca": {"name": "const"},
         "definitions": {"queue": "A[t] - L[t] - S[t]"}}


def lemma_proof(**lemma: object) -> dict:
    return {**CONST, "lemma": [{"name": "l", **lemma}]}


def verdicts(report) -> dict[str, str]:
    return {f"{c.kind}:{c.name}": c.verdict for c in report.checks}


def test_true_lemma_is_proved_and_checked_for_vacuity() -> None:
    report = check_proof(parse_proof(lemma_proof(assume=["queue[R-1] <= cwnd[0][R-1]"],
                                                 show="all(queue[t] <= cwnd[0][t] for t in range(R, T))")))
    assert report.verdict == "proved"
    assert "assumptions satisfiable" in report.checks[0].detail


def test_false_lemma_is_refuted_with_a_validated_counterexample() -> None:
    report = check_proof(parse_proof(lemma_proof(show="queue[T-1] <= 0")))
    check = report.checks[0]
    assert report.verdict == "refuted" and check.verdict == "refuted"
    assert check.result is not None and check.result.validated
    assert check.result.trace.total("A")[-1] - check.result.trace.total("S")[-1] > 0


def test_contradictory_assumptions_are_vacuous_not_proved() -> None:
    report = check_proof(parse_proof(lemma_proof(assume=["S[T-1] > C*T + 1000"], show="queue[T-1] < 0")))
    assert report.verdict == "vacuous"


def test_exists_lemma_needs_a_witness() -> None:
    found = check_proof(parse_proof(lemma_proof(exists="queue[T-1] > 0")))
    assert found.verdict == "proved" and found.checks[0].result.validated
    missing = check_proof(parse_proof(lemma_proof(exists="S[T-1] - S[0] > C*T")))
    assert missing.verdict == "refuted"


def test_lemma_overrides_change_the_model() -> None:
    base = lemma_proof(show="T == 6 and D == 2", T=6, network={"D": 2})
    report = check_proof(parse_proof(base))
    assert report.verdict == "proved"
    assert "T=6" in report.checks[0].statement


def steady(region: list[str], progress: list[dict] | None = None, **extra: object) -> dict:
    return {**CONST, "steady_state": {"name": "s", "region": region, "progress": progress or [], **extra}}


DRAIN = {"name": "drain", "when": "queue[t] > cwnd[0][t]", "rank": "queue[t]", "decrease": "C", "bound": "0"}


def test_steady_state_theorem_is_stated_only_when_every_check_holds() -> None:
    report = check_proof(parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN])))
    assert report.verdict == "proved", verdicts(report)
    assert report.theorem and "infinite horizon" in report.theorem
    kinds = {c.kind for c in report.checks}
    assert kinds == {"closure", "cover", "bounded", "progress", "decrease", "stitching"}


def test_a_premise_two_checks_share_is_solved_once(monkeypatch) -> None:
    """cover and decrease assume the same premise, as do a case's bounded and progress checks:
    each is solved once, and each check still reports it (a vacuous premise makes both vacuous)."""
    import ccac.analysis.obligation as obligation
    solved: list[list[str]] = []
    real = obligation.query_premise

    def counted(query, **kwargs):  # type: ignore[no-untyped-def]
        solved.append(list(query.assume))
        return real(query, **kwargs)

    monkeypatch.setattr(obligation, "query_premise", counted)
    report = check_proof(parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN])))
    assert report.verdict == "proved", verdicts(report)
    assert len(solved) == len({tuple(a) for a in solved}) == 3  # closure, cover = decrease, bounded = progress
    solved.clear()
    report = check_proof(parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN], assume=["C < 0"])))
    assert {c.kind: c.verdict for c in report.checks if c.kind in ("cover", "decrease")} == \
        {"cover": "vacuous", "decrease": "vacuous"}
    assert len(solved) == 3


def test_missing_progress_case_fails_cover() -> None:
    report = check_proof(parse_proof(steady(["queue[t] <= cwnd[0][t]"])))
    assert verdicts(report)["cover:the region and the progress cases cover every state"] == "refuted"
    assert report.theorem is None


def test_region_that_is_not_closed_is_refuted() -> None:
    report = check_proof(parse_proof(steady(["queue[t] <= cwnd[0][t] / 2"], [
        {**DRAIN, "when": "queue[t] > cwnd[0][t] / 2"}])))
    assert verdicts(report)["closure:the region is never left"] == "refuted"
    assert report.theorem is None


def test_progress_that_does_not_progress_is_refuted() -> None:
    slow = {**DRAIN, "decrease": "100*C*T"}
    report = check_proof(parse_proof(steady(["queue[t] <= cwnd[0][t]"], [slow])))
    assert verdicts(report)["progress:drain"] == "refuted"


def test_region_reading_absolute_positions_fails_stitching() -> None:
    """S[t] alone depends on where a window's byte axis starts: it cannot be stitched."""
    report = check_proof(parse_proof(steady(["S[t] <= 3"], [
        {"name": "big", "when": "S[t] > 3", "rank": "S[t]", "decrease": "1", "bound": "0"}])))
    failed = [c.name for c in report.checks if c.kind == "stitching" and c.verdict == "refuted"]
    assert any(name.startswith("the region reads the same") for name in failed), failed
    assert report.theorem is None


def test_window_check_catches_a_history_constraint_a_long_run_breaks() -> None:
    q = parse_query({**CONST, "query": {}})
    short, long = windows(q, parse_query({**CONST, "network": {**CONST["network"], "T": 15}, "query": {}}))
    assert window_is_trace(short, long, 7, solve_z3, 60).outcome.answer == "unsat"
    short.enc.add("model.too_strong", short.vars.S_f[0][1] == short.vars.S_f[0][0])
    check = window_is_trace(short, long, 7, solve_z3, 60)
    assert check.outcome.answer == "sat"
    assert any(c.startswith("model.too_strong") for c in check.culprits)


def test_window_check_is_unknown_when_one_rule_group_is() -> None:
    """The window check asks one rule group at a time: a group the solver leaves unknown makes
    the whole check unknown, never proved, even when every other group is proved."""
    short, long = windows(parse_query({**CONST, "query": {}}),
                          parse_query({**CONST, "network": {**CONST["network"], "T": 15}, "query": {}}))
    asked: list[int] = []

    def gives_up_once(formulas, timeout):  # type: ignore[no-untyped-def]
        asked.append(len(formulas))
        outcome = solve_z3(formulas, timeout)
        return replace(outcome, answer="unknown", reason="gave up") if len(asked) == 2 else outcome

    check = window_is_trace(short, long, 7, gives_up_once, 60)
    groups = {group for group, _ in short.enc.constraints}
    assert len(asked) == len(groups) > 2
    assert check.outcome.answer == "unknown" and check.outcome.reason == "gave up"


def test_a_window_of_a_whole_packet_run_is_a_trace_with_its_own_packet_counts() -> None:
    """Whole packets tie every byte value to an integer count. A window re-bases the byte axes,
    so its counts are the long run's counts re-based: the window check must give them those
    values (it once left them free, and refuted every whole-packet stitching)."""
    network = {**CONST["network"], "T": 6, "buffer": 1, "packets": True, "dupacks": 3}
    aimd = {**CONST, "network": network, "cca": {"name": "aimd"}, "query": {}}
    short, long = windows(parse_query(aimd), parse_query({**aimd, "network": {**network, "T": 9}}))
    assert short.enc.counts
    assert window_is_trace(short, long, 3, solve_z3, 120).outcome.answer == "unsat"
    # and the counts are still checked: a window whose curve is off the packet lattice is caught
    short.enc.add("model.too_strong", short.vars.A_f[0][5] == short.vars.A_f[0][4] + short.vars.alpha / 2)
    check = window_is_trace(short, long, 3, solve_z3, 120)
    assert check.outcome.answer == "sat" and any(c.startswith("model.too_strong") for c in check.culprits)


@pytest.mark.parametrize("bad, message", [
    (steady(["queue[t] <= cwnd[0][t]"], assume=["S[3] > 0"]), "depends on the trace's steps"),
    (steady(["queue[t] <= cwnd[0][t]"], [{**DRAIN, "bound": "S[2]"}]), "depends on the trace's steps"),
    (steady(["queue[t] <= cwnd[0][t]"], start=7), "start must leave"),
    (steady([]), "needs a region"),
    (lemma_proof(show="x > 0", exists="x > 0"), "exactly one of"),
    (lemma_proof(show="nosuch[t] > 0"), "unknown name"),
    (lemma_proof(shows="A[0] > 0"), "unknown key"),
    ({**CONST}, "needs [[lemma]]"),
    ({**lemma_proof(show="S[T-1] >= S[0]"), "solver": "nosuch"}, "solver: unknown solver"),
    ({**lemma_proof(show="S[T-1] >= S[0]"), "slow": "yes"}, "slow must be true or false"),
])
def test_bad_proofs_are_rejected_clearly(bad: dict, message: str) -> None:
    with pytest.raises(CcacError, match=message.replace("[", r"\[")):
        parse_proof(bad)


def test_each_check_is_reported_as_it_is_decided() -> None:
    """A long proof reports as it goes: on_check gets every check, in the report's order."""
    seen: list = []
    report = check_proof(load_proof("const_queue_bounded"), on_check=seen.append)
    assert seen == report.checks and len(seen) >= 6
    assert [c.kind for c in seen][:2] == ["closure", "cover"] and seen[-1].kind == "stitching"


def test_a_proof_file_names_its_solver_and_the_command_line_overrides_it(cli, tmp_path: Path) -> None:
    path = tmp_path / "served.toml"
    path.write_text('solver = "yices"\n[network]\nT = 6\n[cca]\nname = "const"\n[[lemma]]\nname = "served"\n'
                    'show = "S[T-1] >= S[0]"\n')
    code, out, _ = cli("prove", str(path))
    assert code == 0 and "checks proved in" in out and "(yices)" in out
    code, out, _ = cli("prove", str(path), "--solver", "z3")
    assert code == 0 and "(z3)" in out


def test_cli_states_the_theorem_and_exit_codes(cli, tmp_path: Path) -> None:
    code, out, _ = cli("prove", "const_queue_bounded")
    assert code == 0 and "THEOREM:" in out and "expected: proved (as expected)" in out
    bad = tmp_path / "false.toml"
    bad.write_text('[network]\nT = 6\n[cca]\nname = "const"\n[[lemma]]\nname = "empty queue"\n'
                   'show = "A[T-1] - S[T-1] <= 0"\n')
    code, out, _ = cli("prove", str(bad), "--save", str(tmp_path / "cex"))
    assert code == 1 and "REFUTED" in out and "THEOREM" not in out
    assert {p.suffix for p in (tmp_path / "cex").iterdir()} == {".json", ".csv", ".png"}
    code, _, err = cli("prove", str(tmp_path / "missing.toml"))
    assert code == 2 and err.count("\n") == 1


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if load_proof(n).slow else n
                                  for n in sorted(bundled_proofs())])
def test_bundled_proofs_get_their_recorded_verdicts(name: str) -> None:
    """Each with the solver its file names (yices for whole packets)."""
    proof = load_proof(name)
    assert proof.expect is not None, f"{name} should record the verdict it gets"
    report = check_proof(proof, solver=proof.solver, timeout=300)
    assert report.verdict == proof.expect, verdicts(report)
    assert report.validated in (None, True)
