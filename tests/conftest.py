"""Shared helpers for the tests: solve small queries and run the CLI in-process."""

from __future__ import annotations

import fcntl
import hashlib
import io
import pickle
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import z3

from ccac import load_query, parse_query, solve
from ccac.analysis.window_search import answer as answer_as_asked
from ccac.solving.solvers import solve_z3
from ccac.core.params import resolve


@pytest.fixture(autouse=True)
def own_result_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets a result store of its own (``CCAC_CACHE_DIR``), so no test reads what
    another wrote, whatever the order or the worker: the suite shares no files."""
    monkeypatch.setenv("CCAC_CACHE_DIR", str(tmp_path_factory.mktemp("store")))


#: where solved bundled queries are kept for the session (:func:`bundled`): the session's own
#: temporary folder, shared by its xdist workers; set by the fixture below
_SOLVED_DIR: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def shared_solves(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> None:
    """The folder :func:`bundled` keeps answers in: the session's base temporary folder (under
    xdist, the parent of each worker's, which is the run's own), so no answer outlives the run."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if hasattr(request.config, "workerinput") else base) / "solved"
    folder.mkdir(exist_ok=True)
    _SOLVED_DIR[:] = [folder]


def bundled(name: str, *overrides: str, timeout: float = 300) -> Any:
    """The answer to the bundled query ``name`` with ``--set``-style ``overrides``, solved once per
    test run (window by window when the file names a window, as ``ccac query`` answers it):
    several tests read the same finding (its stated answer, its replay, its page), and
    a solve's answer depends on its query alone (each solve owns its z3 context:
    tests/test_backends.py), so the first test to ask solves it and the others, in any worker,
    read a copy. A worker asking while another solves waits for it (a lock per query). Only
    sat and unsat answers are kept; a sat trace must validate."""
    key = hashlib.sha256(repr((name, overrides)).encode()).hexdigest()[:24]
    folder = _SOLVED_DIR[0]
    with open(folder / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = folder / f"{key}.pickle"
        if kept.exists():
            return pickle.loads(kept.read_bytes())
        result = answer_as_asked(load_query(name, list(overrides)), timeout=timeout)
        if result.answer == "sat":
            assert result.validated, result.violations
        if result.answer in ("sat", "unsat"):
            kept.write_bytes(pickle.dumps(result))
        return result


def make_query(network: dict[str, Any], cca: dict[str, Any] | None = None, find: str | None = None,
               assume: list[str] | None = None, periodic: bool = False) -> Any:
    """A Query from plain data (the CCA defaults to ``any``)."""
    query: dict[str, Any] = {"assume": assume or [], "periodic": periodic}
    if find is not None:
        query["find"] = find
    return parse_query({"network": network, "cca": cca or {"name": "any"}, "query": query})


def cca_params(cca: Any, **given: Any) -> dict[str, Any]:
    """``cca``'s parameters with its defaults, the given ones (None: the default) overriding."""
    return resolve(cca.params, {k: v for k, v in given.items() if v is not None}, "cca")


def answer(network: dict[str, Any], cca: dict[str, Any] | None = None, find: str | None = None,
           assume: list[str] | None = None, periodic: bool = False, timeout: float = 120) -> Any:
    """Solve a query given as plain data; fail the test if a sat trace is not validated."""
    result = solve(make_query(network, cca, find, assume, periodic), timeout=timeout)
    if result.answer == "sat":
        assert result.validated, result.violations
    return result


def assert_admits(formulas: list[Any], fixed: list[Any], run: str) -> None:
    """The encoding (``formulas``) with a concrete run pinned (``fixed``) is satisfiable: the
    superset property on one run. Otherwise fail, naming the pinned values the encoding rejects
    (an unsat core) and ``run``, a description of the run."""
    if solve_z3(formulas + fixed, 60).answer == "sat":
        return
    solver = z3.Solver(ctx=fixed[0].ctx)
    for i, c in enumerate(fixed):
        solver.assert_and_track(c, f"fixed{i}")
    solver.add(formulas)
    assert solver.check() != z3.sat
    core = [fixed[int(str(c)[5:])] for c in solver.unsat_core()]
    pytest.fail(f"the encoding rejects a run of the reference: {core[:8]} ({run})")


def doc_table(page: str, header: str) -> list[list[str]]:
    """The rows (cells stripped) of the table whose header line is ``header`` on the
    documentation page ``page`` (a file of docs/)."""
    lines = (Path(__file__).resolve().parent.parent / "docs" / page).read_text().splitlines()
    rows = []
    for line in lines[lines.index(header) + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run ``ccac ARGS`` in-process; return (exit code, stdout, stderr)."""
    from ccac.commands.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cli() -> Any:
    return run_cli


sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
