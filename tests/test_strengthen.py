"""k-induction regions, automatic strengthening (ccac.analysis.strengthen) and tightening
(ccac.analysis.tighten), through the Python API and ``ccac prove``."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from ccac.core.errors import CcacError
from ccac.analysis.proof import check_proof
from ccac.analysis.proof_file import load_proof, parse_proof
from ccac.analysis.steady_state import check_closure
from ccac.analysis.strengthen import propose, strengthen
from ccac.analysis.tighten import tighten

CONST = {"network": {"T": 8, "R": 1, "D": 1, "buffer": "inf"}, "cca": {"name": "const"},
         "definitions": {"queue": "A[t] - L[t] - S[t]", "slack": "1"}}
DRAIN = {"name": "drain", "when": "queue[t] > cwnd[0][t]", "rank": "queue[t]", "decrease": "C", "bound": "0"}


def steady(region: list[str], progress: list[dict] | None = None, **extra: object) -> dict:
    return {**CONST, "steady_state": {"name": "s", "region": region, "progress": progress or [], **extra}}


def test_k_induction_closes_what_one_step_does_not() -> None:
    """AIMD's cwnd bound with the undetected-loss bound: from one step in the region a stale ACK
    count or a burst leaves it; from ten steps of history in it (k = 10) it is never left."""
    sets = ["definitions.max_cwnd=C*(R+D)+buffer+8*alpha", "definitions.max_undetected=C*(R+D)+buffer+2*alpha",
            "steady_state.T=12", "steady_state.start=10"]
    one = load_proof("aimd_steady_state_thesis", sets + ["steady_state.k=1"])
    ten = load_proof("aimd_steady_state_thesis", sets + ["steady_state.k=10"])
    assert check_closure(one, "z3", 120).verdict == "refuted"
    closed = check_closure(ten, "z3", 120)
    assert closed.verdict == "proved", closed.detail
    assert "each of the 10 steps 1..10" in closed.statement


def test_k_must_fit_before_the_start() -> None:
    with pytest.raises(CcacError, match="start must leave the region's k = 3 steps"):
        parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN], k=3, start=1))
    with pytest.raises(CcacError, match="k must be a whole number"):
        parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN], k=0))


def test_k_region_theorem_says_how_long_the_region_held() -> None:
    report = check_proof(parse_proof(steady(["queue[t] <= cwnd[0][t]"], [
        {**DRAIN, "when": "not region[t]", "rank": "max(queue[t-j] for j in range(2))"}], k=2, T=6)))
    assert report.verdict == "proved", [(c.name, c.verdict) for c in report.checks]
    assert report.theorem is not None and "(holding at 2 consecutive steps)" in report.theorem


def test_strengthening_keeps_the_closed_candidates_and_drops_the_rest() -> None:
    proof = parse_proof(steady(["queue[t] <= 2*cwnd[0][t]"], [DRAIN]))
    result = strengthen(proof, ["queue[t] <= cwnd[0][t] / 2", "queue[t] <= cwnd[0][t]"], timeout=60)
    assert result.closed, result.outcome
    assert result.kept == ["queue[t] <= cwnd[0][t]"]
    dropped = result.rounds[0]
    assert dropped.dropped == ["queue[t] <= cwnd[0][t] / 2"]
    assert dropped.check.verdict == "refuted" and dropped.check.validated
    assert result.data()["steady_state"]["region"] == ["queue[t] <= 2*cwnd[0][t]", "queue[t] <= cwnd[0][t]"]


def test_strengthening_never_calls_a_contradiction_closed() -> None:
    """Candidates that no state satisfies make closure vacuous: they are dropped by a trace of
    the region, not kept as a 'closed' region of nothing."""
    proof = parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN]))
    result = strengthen(proof, ["queue[t] < 0", "cwnd[0][t] >= alpha"], timeout=60)
    assert result.rounds[0].check.verdict == "vacuous"
    assert "queue[t] < 0" in result.rounds[0].dropped
    assert result.closed and "queue[t] < 0" not in result.kept


def test_strengthening_reports_a_region_no_subset_closes() -> None:
    proof = parse_proof(steady(["queue[t] <= cwnd[0][t] / 2"], [DRAIN]))
    result = strengthen(proof, ["cwnd[0][t] >= 0"], timeout=60)
    assert not result.closed and "no subset" in result.outcome
    assert result.kept == ["cwnd[0][t] >= 0"]


def test_proposed_candidates_are_readable_and_name_the_cca_state() -> None:
    proof = load_proof("aimd_steady_state_thesis", ["steady_state.k=2"])
    candidates = propose(proof)
    assert "ack_mark[0][t] <= S_f[0][t]" in candidates
    assert all("t-R" not in c for c in candidates)  # step 0 of the region has no S_f[0][t-R]
    later = propose(load_proof("aimd_steady_state_thesis", ["steady_state.start=2", "steady_state.T=5"]))
    assert "S_f[0][t-R] - ack_mark[0][t] <= cwnd[0][t]" in later


def test_tightening_finds_the_smallest_slack_that_holds() -> None:
    proof = parse_proof(steady(["queue[t] <= cwnd[0][t] + slack"], [DRAIN]))
    t = tighten(proof, "slack", -1, 1, Fraction(1, 8), timeout=60)
    assert t.best is not None and t.best.value == 0 and t.best.report.verdict == "proved"
    assert t.failing is not None and -Fraction(1, 8) <= t.failing.value < 0
    assert t.failing.report.verdict == "refuted"
    assert not t.wrong_way
    again = parse_proof(t.data_at(t.best.value))
    assert check_proof(again).verdict == "proved"


def test_tightening_rejects_what_it_cannot_move() -> None:
    proof = parse_proof(steady(["queue[t] <= cwnd[0][t] + slack"], [DRAIN]))
    with pytest.raises(CcacError, match="no definition 'nope'"):
        tighten(proof, "nope", 0, 1)
    with pytest.raises(CcacError, match="--lo must be below --hi"):
        tighten(proof, "slack", 1, 0)


def test_cli_strengthens_and_tightens_into_files_prove_checks(cli, tmp_path: Path) -> None:
    import tomli_w

    src = tmp_path / "p.toml"
    src.write_text(tomli_w.dumps(steady(["queue[t] <= 2*cwnd[0][t] + slack"], [DRAIN])))
    out = tmp_path / "strong.toml"
    code, text, _ = cli("prove", str(src), "--candidate", "queue[t] <= cwnd[0][t]", "--candidate",
                        "queue[t] <= cwnd[0][t] / 2", "--write", str(out))
    assert code == 0, text
    assert "dropped (false on its validated trace): queue[t] <= cwnd[0][t] / 2" in text
    assert "kept: queue[t] <= cwnd[0][t]" in text and "THEOREM" in text
    code, text, _ = cli("prove", str(out))
    assert code == 0 and "expected: proved (as expected)" in text
    tight = tmp_path / "tight.toml"
    code, text, _ = cli("prove", str(src), "--tighten", "slack", "--lo", "-2", "--hi", "1", "--tol", "0.25",
                        "--write", str(tight))
    assert code == 0 and "holds" in text and "fails" in text
    code, text, _ = cli("prove", str(tight))
    assert code == 0 and "THEOREM" in text


@pytest.mark.parametrize("args, message", [
    (["--tighten", "nope", "--lo", "0", "--hi", "1"], "no definition 'nope'"),
    (["--lo", "0"], "go with --tighten"),
    (["--tighten", "slack"], "needs --lo and --hi"),
    (["--tighten", "slack", "--lo", "0", "--hi", "1", "--candidate", "cwnd[0][t] > 0"], "not both"),
    (["--write", "x.toml"], "--write saves"),
    (["--candidate", "nosuch[t] > 0"], "unknown name"),
])
def test_cli_bad_strengthen_and_tighten_input_is_exit_2(cli, tmp_path: Path, args: list[str], message: str) -> None:
    import tomli_w

    src = tmp_path / "p.toml"
    src.write_text(tomli_w.dumps(steady(["queue[t] <= cwnd[0][t] + slack"], [DRAIN])))
    code, out, err = cli("prove", str(src), *args)
    assert code == 2 and message in err and err.count("\n") == 1, (out, err)


def test_window_sizes_may_be_formulas_of_the_path() -> None:
    proof = parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN], k="R + 1", T="2*(R+D) + 4"))
    assert (proof.steady.k, proof.steady.start, proof.steady.T) == (2, 1, 8)
    with pytest.raises(CcacError, match="steady_state.k: must be a whole number"):
        parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN], k="R / 2"))
    with pytest.raises(CcacError, match="unknown name"):
        parse_proof(steady(["queue[t] <= cwnd[0][t]"], [DRAIN], k="alpha"))


def test_aimd_theorem_holds_at_a_buffer_it_was_not_written_for() -> None:
    """The file is written at 1 BDP; its window sizes scale with the buffer."""
    report = check_proof(load_proof("aimd_steady_state", ["network.buffer=2"]), timeout=300)
    assert report.verdict == "proved", [(c.name, c.verdict) for c in report.checks]
    assert "buffer=2 BDP" in (report.theorem or "")


@pytest.mark.slow
@pytest.mark.parametrize("R, buffer", [(1, "0.5"), (1, "3"), (2, "0.5"), (2, "1"), (2, "2"), (2, "3")])
def test_aimd_theorem_1_at_every_published_buffer(R: int, buffer: str) -> None:
    report = check_proof(load_proof("aimd_steady_state", [f"network.R={R}", f"network.buffer={buffer}"]),
                         timeout=900)
    assert report.verdict == "proved", [(c.name, c.verdict) for c in report.checks]


@pytest.mark.parametrize("R, D, buffer", [(3, 2, "2.5"), (2, 3, "0.3"), (3, 1, "4")])
def test_aimd_theorem_2_holds_off_its_written_point(R: int, D: int, buffer: str) -> None:
    report = check_proof(load_proof("aimd_loss_threshold", [f"network.R={R}", f"network.D={D}",
                                                            f"network.buffer={buffer}"]), timeout=300)
    assert report.verdict == "proved", [(c.name, c.verdict) for c in report.checks]
    assert report.validated


@pytest.mark.slow
@pytest.mark.parametrize("R", [2, 3])
def test_copa_theorem_at_larger_R(R: int) -> None:
    """copa_steady_state is written at R = 1; its window sizes are formulas of R."""
    report = check_proof(load_proof("copa_steady_state", [f"network.R={R}", f"network.D={R}"]), timeout=900)
    assert report.verdict == "proved", [(c.name, c.verdict) for c in report.checks]
