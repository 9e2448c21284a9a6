"""Proofs: finite-horizon lemmas, and steady-state theorems stitched from them by induction.

:func:`check_proof` checks a proof (read by :mod:`ccac.analysis.proof_file`, which describes the file
format): each lemma (:func:`check_lemma`), then its steady-state theorem
(:mod:`ccac.analysis.steady_state`), and states the theorem only if all of those checks hold. Each
check is one SMT obligation (:mod:`ccac.analysis.obligation`: a universal claim is proved only if it is
not vacuous); :class:`ProofReport` gathers them into one verdict.

This module is the proof API: ``load_proof``, ``parse_proof`` and ``bundled_proofs`` are
importable from it too.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Callable

from ccac.analysis.obligation import Check, prove_claim, scope_text
from ccac.analysis.proof_file import Lemma, Proof, bundled_proofs, lemma_query, load_proof, parse_proof
from ccac.solving.solve import solve
from ccac.analysis.steady_state import check_steady_state, state_theorem

__all__ = ["ProofReport", "bundled_proofs", "check_lemma", "check_proof", "load_proof", "parse_proof"]


# ---------------------------------------------------------------------- the report
@dataclass
class ProofReport:
    """Every check of one proof, and the theorem if it was stated; the verdict is the worst
    check's."""

    proof: Proof
    checks: list[Check]
    theorem: str | None
    seconds: float

    @property
    def verdict(self) -> str:
        verdicts = {c.verdict for c in self.checks}
        for v in ("invalid", "refuted", "vacuous", "unknown"):
            if v in verdicts:
                return v
        return "proved"

    @property
    def tally(self) -> str:
        """"proved/all" checks, e.g. "12/15"."""
        return f"{sum(c.verdict == 'proved' for c in self.checks)}/{len(self.checks)}"

    @property
    def validated(self) -> bool | None:
        values = [c.validated for c in self.checks if c.validated is not None]
        return None if not values else all(values)

    def sections(self) -> list[Any]:
        """The report on a page: the proof, each check (:meth:`Check.section`, a refuted one with
        its counterexample's plots) and the verdict."""
        from ccac.report.html_page import Section
        from ccac.report.proof_lines import header_lines, verdict_lines

        proof = self.proof
        return [Section(header_lines(proof.name, proof.source, proof.description)),
                *(c.section() for c in self.checks), Section(verdict_lines(self))]

    def _repr_html_(self) -> str:
        """A notebook shows the report as ``ccac prove --html`` writes it."""
        from ccac.report.html_page import sections_fragment

        return sections_fragment(self.sections())


# ---------------------------------------------------------------------- lemmas
def check_lemma(lemma: Lemma, solver: str, timeout: float | None) -> Check:
    """A ``show`` lemma by :func:`prove_claim` (unsat and not vacuous); an ``exists`` lemma by a
    validated witness trace."""
    if lemma.show is not None:
        q = lemma_query(lemma, None, False)
        statement = (f"for {scope_text(q)}: if {' and '.join(lemma.assume) or 'true'} then {lemma.show}")
        return prove_claim("lemma", lemma.name, q, lemma.show, solver, timeout, statement)
    q = lemma_query(lemma, lemma.exists, False)
    statement = f"there EXISTS one of {scope_text(q)} with {' and '.join(lemma.assume + [lemma.exists or ''])}"
    start = time.perf_counter()
    result = solve(q, solver=solver, timeout=timeout)
    verdict = {"sat": "proved" if result.validated else "invalid", "unsat": "refuted",
               "unknown": "unknown"}[result.answer]
    return Check("lemma", lemma.name, verdict, time.perf_counter() - start, statement,
                 result=result if result.answer == "sat" else None,
                 detail="validated witness trace" if verdict == "proved" else "")


# ---------------------------------------------------------------------- the whole proof
def check_proof(proof: Proof, solver: str = "z3", timeout: float | None = None,
                on_check: Callable[[Check], None] | None = None) -> ProofReport:
    """Check every lemma and the steady-state theorem; the theorem is stated only if all hold.
    ``on_check`` receives each check as it is decided (a long proof reports as it goes)."""
    start = time.perf_counter()
    lemmas = (check_lemma(lemma, solver, timeout) for lemma in proof.lemmas)
    steady = check_steady_state(proof, solver, timeout) if proof.steady is not None else iter(())
    checks = []
    for check in itertools.chain(lemmas, steady):
        checks.append(check)
        if on_check is not None:
            on_check(check)
    steady_checks = checks[len(proof.lemmas):]
    proved = proof.steady is not None and all(c.verdict == "proved" for c in steady_checks)
    theorem = state_theorem(proof) if proved else None
    return ProofReport(proof, checks, theorem, time.perf_counter() - start)
