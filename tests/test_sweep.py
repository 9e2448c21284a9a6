"""`ccac sweep`: grids, the result store (reuse, --fresh, resume after a kill), Dask, errors."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccac.solving.store import Store, reusable
from ccac.analysis.grid import parse_grid

# sat exactly when slack = 0: the link's full capacity is reachable, never more
SLACK = """
[network]
T = 6
buffer = "inf"
[cca]
name = "const"
cwnd = 4
[params]
slack = 0
[query]
find = "S[T-1] - S[0] >= C * (T - 1 + D) + slack"
expect = "sat"
"""
COLUMNS = ["network.T", "params.slack", "answer", "validated", "seconds", "cached", "note"]


@pytest.fixture
def store_dir(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("CCAC_CACHE_DIR", str(path))
    return path


@pytest.fixture
def slack_file(tmp_path) -> Path:
    path = tmp_path / "slack.toml"
    path.write_text(SLACK)
    return path


def rows(text: str) -> list[list[str]]:
    """The table's data rows, split into cells (the note column may hold spaces)."""
    lines = text.split("\n\n")[0].splitlines()[2:]
    return [line.split(None, 6) for line in lines]


def by_point(table: list[list[str]]) -> dict[tuple[str, str], list[str]]:
    return {(r[0], r[1]): r for r in table}


def test_local_sweep_answers_each_point_and_writes_csv(cli, store_dir, slack_file, tmp_path) -> None:
    out = tmp_path / "results.csv"
    code, stdout, err = cli("sweep", str(slack_file), "--grid", "network.T=5,6", "--grid", "params.slack=0,0.5",
                            "--workers", "2", "--out", str(out))
    assert code == 0, err  # the file's expect = "sat" is not checked: unsat points are answers too
    table = rows(stdout)
    assert [(r[0], r[1]) for r in table] == [("5", "0"), ("5", "0.5"), ("6", "0"), ("6", "0.5")]  # grid order
    for r in table:
        assert r[2] == ("sat" if r[1] == "0" else "unsat")
        assert r[3] == ("yes" if r[1] == "0" else "-") and r[5] == "no"
    assert "4 points: 2 sat, 2 unsat, 0 unknown, 0 errors; 0 reused from the store" in stdout
    with out.open() as f:
        written = list(csv.reader(f))
    assert written[0] == COLUMNS
    assert [r[:4] + r[5:6] for r in written[1:]] == [r[:4] + r[5:6] for r in table]
    assert (store_dir / "results.sqlite").is_file()


def test_rerun_reuses_the_store_and_fresh_recomputes(cli, store_dir, slack_file, tmp_path) -> None:
    args = ("sweep", str(slack_file), "--grid", "network.T=5,6", "--grid", "params.slack=0,0.5", "--workers", "2")
    first = cli(*args)
    assert first[0] == 0, first[2]
    out = tmp_path / "again.json"
    code, stdout, _ = cli(*args, "--out", str(out))
    assert code == 0 and "4 reused from the store" in stdout
    assert all(r[5] == "yes" for r in rows(stdout))
    assert [r[2] for r in rows(stdout)] == [r[2] for r in rows(first[1])]
    data = json.loads(out.read_text())
    assert data[1] == {"network.T": 5, "params.slack": 0.5, "answer": "unsat", "validated": None,
                       "seconds": data[1]["seconds"], "cached": True, "error": None,
                       "reason": None}
    code, stdout, _ = cli(*args, "--fresh")
    assert code == 0 and "0 reused from the store" in stdout
    assert all(r[5] == "no" for r in rows(stdout))


def test_a_stored_unknown_is_reused_only_within_its_timeout(store_dir) -> None:
    with Store() as store:
        result = {"answer": "unknown", "validated": None, "seconds": 5.0, "reason": "timeout",
                  "solver_version": "v", "ccac_version": "v"}
        store.put("k", "query", {"q": 1}, result, 5.0, "z3")
        row = store.get("k")
    assert row["answer"] == "unknown" and row["timeout"] == 5.0
    assert reusable(row, 5.0) and reusable(row, 1.0)
    assert not reusable(row, 10.0) and not reusable(row, None)
    assert reusable({**row, "timeout": None}, None)
    assert reusable({**row, "answer": "unsat"}, None)


def stored_rows(path: Path) -> int:
    if not path.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_a_killed_sweep_resumes_where_it_stopped(store_dir, tmp_path) -> None:
    args = [sys.executable, "-m", "ccac.commands.cli", "sweep", "aimd_premature_loss", "--grid", "network.T=9,10",
            "--grid", "network.buffer=1,2,3", "--workers", "1"]
    env = {**os.environ, "CCAC_CACHE_DIR": str(store_dir)}
    process = subprocess.Popen(args, env=env, cwd=tmp_path, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    database = store_dir / "results.sqlite"
    try:
        deadline = time.monotonic() + 60
        while stored_rows(database) < 1 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the sweep and its pool workers
        process.wait()
    done = stored_rows(database)
    assert 1 <= done < 6, f"{done} of 6 points stored when killed"
    rerun = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    table = rows(rerun.stdout)
    assert len(table) == 6 and all(r[2] == "sat" and r[3] == "yes" for r in table)
    assert sum(r[5] == "yes" for r in table) == done
    assert f"{done} reused from the store" in rerun.stdout
    assert stored_rows(database) == 6


def test_dask_cluster_gives_the_same_answers(cli, store_dir, slack_file) -> None:
    distributed = pytest.importorskip("distributed")
    args = ("sweep", str(slack_file), "--grid", "network.T=5,6", "--grid", "params.slack=0,0.5")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        code, remote, err = cli(*args, "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert "on Dask scheduler" in err and "0 reused from the store" in remote
    code, local, _ = cli(*args, "--workers", "2")
    assert code == 0 and "4 reused from the store" in local  # same keys as the cluster's results
    assert [r[:4] for r in rows(remote)] == [r[:4] for r in rows(local)]
    assert [r[2] for r in rows(remote)] == ["sat", "unsat", "sat", "unsat"]


@pytest.mark.parametrize("grid, message", [
    ("network.T", "expected KEY=V1,V2"),
    ("network.nosuch=1,2", "unknown key 'nosuch' in [network]"),
    ("cca.nosuch=1", "unknown key 'nosuch' in [cca] of CCA const"),
    ("T=6,7", "KEY must be SECTION.NAME"),
    ("nosuch.T=6,7", "SECTION one of network, cca"),
    ("network.T=6,,7", "empty value"),
    ("network.buffer=1:3:0", "step must be positive"),
    ("network.buffer=3:1:1", "empty range"),
    ("network.buffer=a:b", "must be numbers"),
    ("network.T=1", "no point of the grid is valid"),
])
def test_bad_input_is_exit_2_with_one_line(cli, store_dir, slack_file, grid, message) -> None:
    code, out, err = cli("sweep", str(slack_file), "--grid", grid)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert not store_dir.exists()  # nothing ran


def test_bad_file_is_exit_2(cli, store_dir, tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[network\nT = 6\n")
    for target in (str(bad), str(tmp_path / "missing.toml")):
        code, out, err = cli("sweep", target, "--grid", "network.T=6,7")
        assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err


def test_a_point_with_an_invalid_value_is_an_error_row(cli, store_dir, slack_file) -> None:
    code, out, err = cli("sweep", str(slack_file), "--grid", "network.T=2,6", "--grid", "params.slack=0")
    assert code == 2  # some points could not be run; the rest are answered
    table = by_point(rows(out))
    assert table["2", "0"][2] == "error" and "T = 2 is too small" in table["2", "0"][6]
    assert table["6", "0"][2] == "sat"
    assert "1 sat, 0 unsat, 0 unknown, 1 error;" in out
    assert err.strip().endswith("1 of 2 points could not be run (see the note column)")


def test_ranges_are_exact_decimals() -> None:
    axis = parse_grid("network.buffer=0.1:4:0.1")
    assert len(axis.texts) == 40 and axis.texts[:3] == ["0.1", "0.2", "0.3"] and axis.texts[-1] == "4"
    assert parse_grid("network.T=6:10:2").texts == ["6", "8", "10"]
    assert parse_grid("params.x=0:1:1/3").texts == ["0", '"1/3"', '"2/3"', "1"]  # read back exactly
    axis = parse_grid('network.buffer=0.5,"inf",any,1:2')
    assert axis.texts == ["0.5", '"inf"', "any", "1", "2"] and axis.shown == ["0.5", "inf", "any", "1", "2"]


def test_a_proof_sweep_reports_verdicts_and_failed_checks(cli, store_dir) -> None:
    code, stdout, _ = cli("sweep", "aimd_loss_threshold_thesis", "--grid", "network.buffer=1,2", "--workers", "1")
    assert code == 1  # a refuted proof
    cells = rows(stdout)
    assert [r[1] for r in cells] == ["refuted", "refuted"]
    assert "loss just above the threshold: refuted" in " ".join(cells[0])
    assert "no loss below the threshold: refuted" in " ".join(cells[1])
    code, stdout, _ = cli("sweep", "const_queue_bounded", "--grid", "network.D=1,2", "--workers", "1")
    assert code == 0 and [r[1] for r in rows(stdout)] == ["proved", "proved"]


def test_reuse_answers_params_points_with_one_shared_solver(cli, store_dir) -> None:
    """--reuse: points that differ only in [params] values are one family per worker, each a
    check of one z3 solver; the answers (and validated traces) are those of fresh solves, and
    they are stored like any others. A grid over a network value is not a family: --reuse
    then changes nothing."""
    args = ("sweep", "copa_steady_utilization", "--grid", "params.util=0.2,0.45,0.5,0.9", "--workers", "1")
    code, fresh, err = cli(*args, "--fresh")
    assert code == 0 and "sharing a solver" not in err
    code, reused, err = cli(*args, "--fresh", "--reuse")
    assert code == 0 and "4 to compute in 1 family sharing a solver each" in err
    assert [r[:3] for r in rows(reused)] == [r[:3] for r in rows(fresh)]
    assert [r[1] for r in rows(reused)] == ["unsat", "unsat", "sat", "sat"]
    assert all(r[2] == "yes" for r in rows(reused) if r[1] == "sat")
    code, again, _ = cli(*args, "--reuse")
    assert code == 0 and "4 reused from the store" in again
    code, _, err = cli("sweep", "copa_steady_utilization", "--grid", "network.D=1,2", "--workers", "1",
                       "--fresh", "--reuse")
    assert code == 0 and "sharing a solver" not in err


def test_an_unsat_point_whose_assumptions_admit_no_trace_is_vacuous(cli) -> None:
    """Whole packets of 0.2 bytes (5 per BDP) contradict aimd_loss_burst's ``alpha <= 0.1 C R``:
    that point has no trace at all, so its row says vacuous (exit 1), not unsat."""
    code, out, err = cli("sweep", "aimd_loss_burst", "--set", "network.packets=true",
                         "--grid", "network.bdp_packets=5,10", "--workers", "1")
    assert code == 1, err
    table = rows(out)
    assert [(r[0], r[1]) for r in table] == [("5", "vacuous"), ("10", "sat")]
    assert "the assumptions alone admit no trace here" in out


def test_a_proof_sweep_uses_the_proof_files_solver_unless_told(tmp_path: Path) -> None:
    from ccac.analysis.grid import grid_points, option_keys
    from ccac.analysis.sweep import Sweep

    path = tmp_path / "served.toml"
    path.write_text('solver = "yices"\n[network]\nT = 6\n[cca]\nname = "const"\n[[lemma]]\nname = "served"\n'
                    'show = "S[T-1] >= S[0]"\n')
    axes = [parse_grid("network.T=5,6")]
    keys = option_keys(axes, ())
    assert Sweep(str(path), axes, grid_points(axes), (), keys, None, None).solver == "yices"
    assert Sweep(str(path), axes, grid_points(axes), (), keys, "z3", None).solver == "z3"
    query = tmp_path / "query.toml"
    query.write_text('[network]\nT = 6\n[cca]\nname = "const"\n[query]\nfind = "S[T-1] > S[0]"\n')
    assert Sweep(str(query), axes, grid_points(axes), (), keys, None, None).solver == "z3"
