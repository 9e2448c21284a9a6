"""ccac.analysis.family: queries that differ only in [params] values, answered by one shared solver, say
what fresh solves say."""

from __future__ import annotations

import pytest

from ccac.core.errors import CcacError
from ccac.analysis.family import solve_family, varying
from ccac.problems.query import load_query
from ccac.solving.solve import solve


def test_shared_solver_answers_as_fresh_solves() -> None:
    queries = [load_query("copa_steady_utilization", [f"params.util={u}"]) for u in ("0.3", "0.48", "0.5", "0.7")]
    assert varying(queries) == ["util"]
    shared = solve_family(queries, 120)
    fresh = [solve(q, timeout=120) for q in queries]
    assert [r.answer for r in shared] == [r.answer for r in fresh] == ["unsat", "unsat", "sat", "sat"]
    assert all(r.validated for r in shared if r.answer == "sat")
    # each trace is read back against its own query: the parameter is that point's value
    assert [r.trace.constant("util") for r in shared if r.trace] == [r.query.params["util"] for r in shared[2:]]


def test_a_family_differs_only_in_params() -> None:
    queries = [load_query("copa_steady_utilization", [f"network.D={d}"]) for d in (1, 2)]
    assert varying(queries) is None
    with pytest.raises(CcacError):
        solve_family(queries, 10)


def test_a_parameter_that_cannot_be_a_solver_constant_solves_each_point_on_its_own() -> None:
    """A parameter used as a range bound rebuilds per point (as ccac bound does)."""
    queries = [load_query("aimd_premature_loss", ["params.k=2", "query.find=any(L[t] > L[t-1] for t in range(2, k + 2))"]),
               load_query("aimd_premature_loss", ["params.k=3", "query.find=any(L[t] > L[t-1] for t in range(2, k + 2))"])]
    results = solve_family(queries, 60)
    assert [r.answer for r in results] == [solve(q, timeout=60).answer for q in queries]
