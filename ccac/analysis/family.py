"""Queries that differ only in ``[params]`` values, answered by one shared z3 solver.

A sweep over ``params.*`` axes asks the same formula at many values. :func:`solve_family` builds
it once with every varying parameter as a solver constant and answers each query as a check of
one :class:`~ccac.analysis.incremental.Incremental` solver under the assumption ``p == value`` (a
periodic query's settling conditions behind their own literal, so the unsat re-check runs in
the same solver). Each answer is exactly what :func:`ccac.solving.solve.solve` would say: a sat trace is
read back against that query (its own parameter values) and validated independently.

If a parameter cannot be a solver constant (it multiplies a solver quantity, bounds a range,
...), building raises and every query is solved on its own instead.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from ccac.core import deadline
from ccac.core.errors import CcacError
from ccac.analysis.incremental import Incremental
from ccac.problems.query import Query
from ccac.solving.solve import Pipeline, Result, solve

def only_params_differ(resolved: list[dict[str, Any]]) -> bool:
    """Whether resolved queries (``Query.resolved()``) differ in nothing but their [params]."""
    rest = [{k: v for k, v in r.items() if k != "params"} for r in resolved]
    return all(r == rest[0] for r in rest)

def varying(queries: list[Query]) -> list[str] | None:
    """The parameters whose values differ, if the queries differ in nothing else; else None."""
    if not only_params_differ([q.resolved() for q in queries]):
        return None
    names = set().union(*(q.params for q in queries))
    return sorted(n for n in names if len({str(q.params.get(n)) for q in queries}) > 1)

def solve_family(queries: list[Query], timeout: float | None = None) -> list[Result]:
    """Answer every query with z3 (one solver when they differ only in parameter values)."""
    names = varying(queries)
    if not queries or names is None:
        raise CcacError("a family of queries must differ only in [params] values")
    start = time.perf_counter()
    base = queries[0]
    pipeline = Pipeline(base, "z3")
    symbols = {name: pipeline.parameter(f"__family_{name}") for name in names}
    try:
        with deadline.time_limit(timeout, "building the formula (once, for every point)"):
            problem = pipeline.build(dataclasses.replace(base, params={**base.params, **symbols}))
    except CcacError:  # a parameter cannot be a solver constant: each query on its own
        return [solve(q, "z3", timeout) for q in queries]
    build_seconds = time.perf_counter() - start
    shared = Incremental.for_problem(problem)
    results = []
    for q in queries:
        facts = [symbols[n] == pipeline.value(q.params[n]) for n in names]
        outcome = shared.answer(facts, q.periodic, lambda: timeout)
        trace, violations = pipeline.read_back(outcome, q)
        results.append(Result(q, outcome.answer, outcome.reason, trace, violations, "z3",
                              outcome.version, build_seconds, outcome.seconds))
        build_seconds = 0.0  # built once: the first answer carries it
    return results
