"""Shared helpers for the tests: solve small queries and run the CLI in-process."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import z3

from ccac import parse_query, solve
from ccac.solving.solvers import solve_z3
from ccac.core.params import resolve


@pytest.fixture(autouse=True)
def own_result_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets a result store of its own (``CCAC_CACHE_DIR``), so no test reads what
    another wrote, whatever the order or the worker: the suite shares no files."""
    monkeypatch.setenv("CCAC_CACHE_DIR", str(tmp_path_factory.mktemp("store")))


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
