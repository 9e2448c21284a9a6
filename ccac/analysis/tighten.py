"""Automatic tightening: the tightest value of one of a proof's constants for which the whole
proof holds.

A steady-state region is usually written with a constant the researcher would like as small
(or as large) as possible: the cwnd bound, the undetected-loss bound, a utilization floor.
:func:`tighten` takes one ``[definitions]`` entry of a proof, sets it to exact numbers, and
checks the *whole* proof (every lemma, closure, cover, progress, stitching) at each, bisecting
between a value where the proof fails and one where it holds (:mod:`ccac.analysis.bisection`). A probe
whose proof is proved "holds"; refuted or vacuous "fails"; unknown (a timeout) or an invalid
trace is "unknown", never taken for either, and the unknown interval is reported.

What the result claims: the proof was checked in full at the returned value and holds there
(that is a theorem, with every check of :func:`ccac.analysis.proof.check_proof` behind it); at the
other end of the bracket it was refuted, with a validated counterexample. That no value between
them also holds assumes the verdict is monotone in the constant, which a region bound need not
be (a larger bound is a weaker assumption *and* a harder goal); bisection does not check it.
:meth:`Tightening.data_at` gives the proof at the tightened value, which
:func:`ccac.analysis.proof_file.proof_text` writes as a file ``ccac prove`` checks on its own.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from ccac.solving.backends import backend
from ccac.analysis.bisection import Search, bisect, search_range
from ccac.core.errors import CcacError
from ccac.core.limits import check_seconds
from ccac.analysis.proof import ProofReport, check_proof
from ccac.analysis.proof_file import Proof, parse_proof

DIRECTIONS = ("min", "max")


@dataclass
class TightenProbe:
    """The whole proof checked with the constant at one exact value."""

    value: Fraction
    answer: str  # "holds", "fails" or "unknown"
    report: ProofReport

    @property
    def seconds(self) -> float:
        return self.report.seconds


@dataclass
class Tightening:
    proof: Proof
    name: str
    direction: str  # "min": the smallest value that holds; "max": the largest
    lo: Fraction
    hi: Fraction
    tol: Fraction
    search: Search[TightenProbe]

    @property
    def best(self) -> TightenProbe | None:
        """The tightest probe at which the whole proof holds (an end of the bracket)."""
        if self.search.bracket is None:  # the same answer at both ends (or an unknown end)
            holding = sorted((p for p in self.search.probes if p.answer == "holds"), key=lambda p: p.value)
            return None if not holding else holding[0] if self.direction == "min" else holding[-1]
        a, b = self.search.bracket
        return a if a.answer == "holds" else b

    @property
    def failing(self) -> TightenProbe | None:
        if self.search.bracket is None:
            return None
        a, b = self.search.bracket
        return a if a.answer == "fails" else b

    @property
    def wrong_way(self) -> bool:
        """The proof holds on the side this direction tightens towards: the constant is
        tightened the other way."""
        if self.search.bracket is None:
            return False
        a, _ = self.search.bracket
        return (a.answer == "holds") == (self.direction == "min")

    def data_at(self, value: Fraction) -> dict[str, Any]:
        return with_constant(self.proof.raw, self.name, value)


def with_constant(data: dict[str, Any], name: str, value: Fraction) -> dict[str, Any]:
    """A proof's data with definition ``name`` set to ``value`` (exact)."""
    out = copy.deepcopy(data)
    out["definitions"][name] = str(value)  # "7/8": read back exactly
    return out


def tighten(proof: Proof, name: str, lo: Any, hi: Any, tol: Any = None, direction: str = "min",
            solver: str = "z3", timeout: float | None = None,
            log: Callable[[TightenProbe], None] | None = None) -> Tightening:
    """Bisect definition ``name`` of ``proof`` in [lo, hi] for the tightest value (``direction``
    "min" or "max") at which every check of the proof holds. ``tol`` defaults to (hi - lo) / 100;
    ``timeout`` bounds each SMT check; ``log`` gets each probe as it is decided."""
    definitions = proof.raw.get("definitions", {})
    if name not in definitions:
        known = ", ".join(sorted(definitions)) or "none"
        raise CcacError(f"the proof has no definition {name!r} to tighten (definitions: {known})", "--tighten")
    if direction not in DIRECTIONS:
        raise CcacError(f"direction must be min or max, got {direction!r}")
    lo, hi, tol = search_range(lo, hi, tol)
    backend(solver)
    timeout = check_seconds(timeout)
    parse_proof(with_constant(proof.raw, name, lo), proof.name, proof.source)  # bad input before solving

    def probe(value: Fraction) -> TightenProbe:
        start = time.perf_counter()
        at = parse_proof(with_constant(proof.raw, name, value), proof.name, proof.source)
        report = check_proof(at, solver=solver, timeout=timeout)
        report.seconds = time.perf_counter() - start
        answer = {"proved": "holds", "refuted": "fails", "vacuous": "fails"}.get(report.verdict, "unknown")
        p = TightenProbe(value, answer, report)
        if log is not None:
            log(p)
        return p

    return Tightening(proof, name, direction, lo, hi, tol, bisect(probe, lo, hi, tol))
