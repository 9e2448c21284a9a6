"""The command line as a user runs it: answers, files written, exit codes, error lines."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SANITY_SAT = "const_service_at_capacity"
SANITY_UNSAT = "const_service_above_capacity"


def test_sat_query_prints_answer_table_and_validation(cli, tmp_path) -> None:
    out_json, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
    code, out, err = cli("query", SANITY_SAT, "--set", "network.T=6", "--json", str(out_json), "--csv", str(out_csv))
    assert code == 0, err
    assert "sat: counterexample found" in out and "validated: yes" in out
    assert "checked: there EXISTS" in out and "expected: sat (as expected)" in out
    data = json.loads(out_json.read_text())
    assert data["answer"] == "sat" and data["validated"] is True
    assert data["query"]["network"]["T"] == 6
    assert data["solver"]["name"] == "z3" and data["solver"]["seconds"] >= 0
    first = data["trace"]["series"]["S"][-1]
    assert set(first) == {"exact", "float"}
    header = out_csv.read_text().splitlines()[0]
    assert header.startswith("t,") and "cwnd[0]" in header


def test_unsat_query(cli, tmp_path) -> None:
    out_json = tmp_path / "r.json"
    code, out, _ = cli("query", SANITY_UNSAT, "--set", "network.T=6", "--json", str(out_json))
    assert code == 0
    assert "unsat: no trace of the model satisfies the query" in out and "checked: NO one" in out
    data = json.loads(out_json.read_text())
    assert data["answer"] == "unsat" and data["validated"] is None and data["trace"] is None
    assert "premise: the assumptions alone admit a validated trace" in out and data["premise"] == "satisfiable"


def test_an_unsat_whose_assumptions_admit_no_trace_is_vacuous(cli, tmp_path) -> None:
    """Whole packets of 0.1 bytes against an assumption of packets of at most 0.05: nothing
    meets the assumptions, so the unsat says nothing (exit 1, whatever was expected)."""
    out_json = tmp_path / "r.json"
    code, out, _ = cli("query", SANITY_UNSAT, "--set", "network.T=6", "--set", "network.packets=true",
                       "--set", "query.assume=['alpha <= 0.05 * C * R']", "--json", str(out_json))
    assert code == 1
    assert "unsat" in out and "VACUOUS: the assumptions alone admit no trace" in out
    assert json.loads(out_json.read_text())["premise"] == "vacuous"


def test_expectation_mismatch_exits_1(cli) -> None:
    code, out, _ = cli("query", SANITY_UNSAT, "--set", "network.T=6", "--expect", "sat")
    assert code == 1 and "EXPECTED sat" in out


def test_timeout_is_unknown_exit_3(cli, tmp_path) -> None:
    q = tmp_path / "hard.toml"
    q.write_text('[network]\nT = 10\nbuffer = 2\n[cca]\nname = "aimd"\n[query]\n'
                 'find = "any(L[t] > L[t-1] and cwnd[0][t] < buffer + alpha for t in range(2, T))"\n')
    code, out, _ = cli("query", str(q), "--timeout", "0.001", "-q")
    # --timeout covers building too, and building this formula takes longer than 1 ms
    assert code == 3 and out.startswith("unknown: timeout: building the formula took more than 0.001 s "
                                        "(reached step ")


@pytest.mark.parametrize("args, message", [
    (["query", "no_such_query"], "no bundled query named 'no_such_query'"),
    (["query", "missing/file.toml"], "no such query file: missing/file.toml"),
    (["query", SANITY_SAT, "--set", "network.R=0"], "network.R: must be >= 1"),
    (["query", SANITY_SAT, "--set", "cca.name=tahoe"], "unknown CCA 'tahoe'"),
    (["query", SANITY_SAT, "--set", "query.find=S[1] ** 9 > 0"], "exponent 9 of a solver quantity is beyond +-8"),
    (["query", SANITY_SAT, "--set", "query.find=Q[1] > 0"], "unknown name `Q`"),
    (["query", SANITY_SAT, "--set", "nonsense"], "--set expects SECTION.KEY=VALUE"),
    (["query", SANITY_SAT, "--plot", "x.gif"], "unsupported plot format"),
    (["query", SANITY_SAT, "--solver", "mathsat"], "unknown solver 'mathsat'"),
    (["query", SANITY_SAT, "--expect", "maybe"], "Invalid value for '--expect'"),
    (["frobnicate"], "No such command"),
])
def test_bad_input_exits_2_with_one_line(cli, args, message) -> None:
    code, out, err = cli(*args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert "Traceback" not in err + out


def test_malformed_file_exits_2(cli, tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[query]\nfind = ")
    code, _, err = cli("query", str(bad))
    assert code == 2 and "malformed TOML" in err and str(bad) in err


def test_list_shows_models_ccas_parameters_and_queries(cli) -> None:
    code, out, _ = cli("list")
    assert code == 0
    for text in ("composing", "single-box", "aimd", "pacing_gain", "const", "any", "aimd_premature_loss",
                 "buffer", "dupacks", "const_queue_bounded", "expect proved"):
        assert text in out


def test_console_script_runs_as_installed() -> None:
    proc = subprocess.run([sys.executable, "-m", "ccac.commands.cli", "query", SANITY_UNSAT, "--set", "network.T=5", "-q"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("unsat")


def test_version_is_the_installed_package_s() -> None:
    """One version: the package metadata pip installed (what the result store keys on too)."""
    from importlib import metadata

    from conftest import run_cli

    import ccac

    code, out, _ = run_cli("--version")
    assert code == 0 and out.strip() == f"ccac {metadata.version('ccac')}"
    assert ccac.__version__ == metadata.version("ccac")


def test_a_query_s_description_is_printed_whole(tmp_path) -> None:
    from conftest import run_cli

    (tmp_path / "q.toml").write_text('[network]\nT = 5\n[cca]\nname = "aimd"\n[query]\nfind = "True"\n'
                                     'description = """A first line that stops\nmid-sentence, and a second."""\n')
    code, out, _ = run_cli("query", str(tmp_path / "q.toml"))
    assert code == 0 and "  A first line that stops\n  mid-sentence, and a second.\n" in out, out
