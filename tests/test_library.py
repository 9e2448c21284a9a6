"""Every bundled query answers as its file states, with a validated trace when sat."""

from __future__ import annotations

import pytest

from ccac.problems.query import bundled_queries, load_query
from ccac.solving.solve import solve


def library(names: list[str]) -> list[object]:
    """The queries, those stated ``slow`` (T > 10, or minutes to solve) marked ``slow``: the
    default test run skips them (``pytest -m slow`` runs them; ``ccac bench`` always does)."""
    return [pytest.param(n, marks=pytest.mark.slow) if load_query(n).slow else n for n in names]


@pytest.mark.parametrize("name", library(sorted(bundled_queries())))
def test_bundled_query_answers_as_stated(name: str) -> None:
    q = load_query(name)
    result = solve(q, timeout=600)
    assert result.answer == q.expect, f"{name}: {result.answer} ({result.reason})"
    if result.answer == "sat":
        assert result.validated, result.violations


@pytest.mark.parametrize("name", library(sorted(n for n in bundled_queries() if load_query(n).expect == "unsat")))
def test_unsat_queries_are_not_vacuous(name: str) -> None:
    """An unsat answer means something only if the assumptions alone admit a trace."""
    q = load_query(name)
    q.find = None
    assert solve(q, timeout=600).answer == "sat", f"{name}: assumptions (with periodicity) are unsatisfiable"
