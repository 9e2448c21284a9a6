"""One SMT obligation of a proof: :class:`Check` (what the solver said about it) and
:func:`prove_claim` (a universal claim, proved only if it is unsat and not vacuous).

Every universal claim is also checked for vacuity: if its assumptions have no trace at all, it
is reported VACUOUS, not proved.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from typing import Any

from ccac.problems.query import Query
from ccac.solving.solve import Result, premise as query_premise, solve

VERDICTS = ("proved", "refuted", "vacuous", "unknown", "invalid")


@dataclass
class Check:
    """One SMT obligation of a proof and what the solver said about it."""

    kind: str          # "lemma", "closure", "progress", "cover", "stitching", ...
    name: str
    verdict: str       # one of VERDICTS
    seconds: float
    statement: str
    detail: str = ""
    result: Result | None = None  # a counterexample (refuted) or witness (exists lemma)
    culprits: list[str] = field(default_factory=list)

    @property
    def validated(self) -> bool | None:
        return None if self.result is None else self.result.validated

    def section(self) -> Any:
        """The check on a page (:class:`ccac.report.html_page.Section`), as ``ccac prove -v``
        prints it and, if it failed with a trace, the trace (:meth:`Result.section`)."""
        from ccac.report.html_page import Section
        from ccac.report.proof_lines import check_lines

        shown = check_lines(self, verbose=True)
        if self.result is not None and self.result.trace is not None and self.verdict != "proved":
            return self.result.section(shown)
        return Section(shown)


def scope_text(q: Query, start: int | None = None) -> str:
    """The traces a claim about ``q`` covers, in words (``start``: a steady-state window's
    first step, before which the history is free)."""
    net = q.network
    free = f"steps 0..{net.R - 1} free history" if start is None else f"steps 0..{start - 1} free history" \
        if start > 0 else "no history steps"
    return f"every trace of the {net.model_name} model, T={net.T} (steps 0..{net.T - 1}; {free}; any initial state)"


def prove_claim(kind: str, name: str, base: Query, claim: str, solver: str, timeout: float | None,
                statement: str, premises: dict[str, Result] | None = None) -> Check:
    """A universal claim: no trace of ``base`` (model, CCA, its assumptions) violates ``claim``.
    Proved only if that is unsat *and* the assumptions alone have a trace (else vacuous).
    ``premises`` keeps each premise check's result for the next claim over the same premise
    (a steady state's progress and bounded-rank checks share one, as do cover and decrease)."""
    start = time.perf_counter()
    refute = copy.copy(base)
    refute.find = f"not ({claim})"
    result = solve(refute, solver=solver, timeout=timeout)
    if result.answer == "sat":
        verdict = "refuted" if result.validated else "invalid"
        return Check(kind, name, verdict, time.perf_counter() - start, statement, result=result)
    if result.answer == "unknown":
        return Check(kind, name, "unknown", time.perf_counter() - start, statement,
                     detail=f"solver: {result.reason}")
    key = json.dumps(base.resolved(), sort_keys=True)
    premise = premises.get(key) if premises is not None else None
    if premise is None:
        premise = query_premise(base, solver=solver, timeout=timeout)
        if premises is not None:
            premises[key] = premise
    seconds = time.perf_counter() - start
    if premise.answer == "unsat":
        return Check(kind, name, "vacuous", seconds, statement,
                     detail="its assumptions have no trace at all: the claim holds for nothing")
    if premise.answer == "unknown":
        return Check(kind, name, "unknown", seconds, statement,
                     detail="the claim is unsat but the vacuity check (do the assumptions have a trace?) timed out")
    if not premise.validated:
        return Check(kind, name, "invalid", seconds, statement, result=premise)
    return Check(kind, name, "proved", seconds, statement,
                 detail=f"unsat in {result.solve_seconds:.2f} s; assumptions satisfiable")
