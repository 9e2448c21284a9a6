"""Automatic strengthening: the largest subset of candidate invariants that, added to a
steady-state region, makes it closed.

A region such as "cwnd <= bound" is often not closed on its own: some state inside it (a
stale ACK count, a loss mark far behind) leaves it. Adding facts about that state (linear
predicates over the network and the CCA's declared state at step t) can close it.
:func:`strengthen` takes the proof's region and a list of candidates and runs the classic
fixpoint (Houdini):

1. check closure (``ccac.analysis.steady_state.check_closure``, with the proof's k) of the region plus
   every candidate still kept;
2. if it is refuted, the counterexample is a validated trace that starts with the region and
   every kept candidate holding, so every kept candidate false at a later step of it is false
   in *any* closed subset that contains it (the same trace refutes that subset): drop them all
   and repeat;
3. if it is vacuous (the kept candidates contradict each other or the region, so "closed"
   would hold of nothing), drop every kept candidate false on a validated trace in which the
   region alone holds for a whole window (:func:`region_sample`), and repeat;
4. stop when closure is proved (the region plus the kept candidates is closed and non-empty),
   or when a refuting trace violates none of the candidates (then the region itself leaves
   with every subset: no subset closes it), or when a check is unknown or its trace invalid.

Only validated traces drop candidates. Without vacuous rounds the result is the largest closed
subset (nothing dropped in step 2 belongs to any closed subset); after one, the largest among
the subsets that hold on the region's sample trace. The strengthened region is a new region:
:meth:`Strengthening.data` gives the proof file data with it, which ``ccac prove`` checks in
full on its own (cover and progress must now reach the smaller region).

:func:`propose` writes candidates from the model and the CCA's declared state: for every state
variable that is a position on a byte curve (``StateVar.axis``), its order against that
curve's readings at step t, and that it trails them by at most one window.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any, Callable

from ccac.core.errors import CcacError
from ccac.encode.expr import compile_condition
from ccac.analysis.obligation import Check
from ccac.problems.problem import declared_symbols
from ccac.analysis.proof_file import Proof, steady_query
from ccac.solving.solve import solve
from ccac.analysis.steady_state import check_closure

AXIS_CURVES = {"S": ("S_f[{n}][t]", "S_f[{n}][t-R]"), "L": ("L_f[{n}][t]", "Ld_f[{n}][t]"), "A": ("A_f[{n}][t]",)}


@dataclass
class Round:
    """One closure check of the region plus the candidates kept at that point."""

    kept: list[str]
    check: Check
    dropped: list[str]


@dataclass
class Strengthening:
    proof: Proof
    candidates: list[str]
    kept: list[str]
    rounds: list[Round]
    seconds: float

    @property
    def closed(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].check.verdict == "proved"

    @property
    def outcome(self) -> str:
        """Why the search stopped, in words."""
        last = self.rounds[-1]
        if self.closed:
            return (f"closed: the region plus {len(self.kept)} of {len(self.candidates)} candidates "
                    f"is never left")
        if last.check.verdict == "refuted":
            return ("not closable with these candidates: a validated trace leaves the region while "
                    "every kept candidate holds throughout, so no subset of them closes it")
        return f"stopped: the closure check was {last.check.verdict} ({last.check.detail or 'see the check'})"

    def data(self) -> dict[str, Any]:
        """The proof file's data with the strengthened region (its predicates, then the kept
        candidates, none of which repeats one of them)."""
        assert self.proof.steady is not None
        out = copy.deepcopy(self.proof.raw)
        out["steady_state"]["region"] = self.proof.steady.region + self.kept
        return out


def strengthen(proof: Proof, candidates: list[str], solver: str = "z3", timeout: float | None = None,
               log: Callable[[Round], None] | None = None) -> Strengthening:
    """Keep the largest subset of ``candidates`` that closes ``proof``'s region (see the module
    docstring); ``timeout`` bounds each closure check."""
    s = proof.steady
    if s is None:
        raise CcacError("strengthening needs a [steady_state] region", "--candidate")
    if not candidates:
        raise CcacError("no candidates to strengthen with (give --candidate EXPR or --propose)", "--candidate")
    check_candidates(proof, candidates)
    start = time.perf_counter()
    kept = [c for c in dict.fromkeys(candidates) if c not in s.region]
    rounds: list[Round] = []
    while True:
        check = check_closure(proof, solver, timeout, region=s.region + kept)
        round_ = Round(list(kept), check, [])
        rounds.append(round_)
        trace, first = None, s.start + 1
        if check.verdict == "refuted" and check.result is not None and check.result.trace is not None:
            trace = check.result.trace
        elif check.verdict == "vacuous":  # the kept candidates contradict each other or the region
            trace, first = region_sample(proof, solver, timeout), s.start - s.k + 1
        if trace is not None:
            round_.dropped = [c for c in kept if not holds_on(c, trace, first, s.T)]
            kept = [c for c in kept if c not in round_.dropped]
        if log is not None:
            log(round_)
        if not round_.dropped:
            return Strengthening(proof, list(candidates), kept, rounds, time.perf_counter() - start)


def holds_on(candidate: str, trace: Any, first: int, end: int) -> bool:
    """Does ``candidate`` hold at steps first..end-1 of ``trace`` (exactly, by the expression
    evaluator on the trace's numbers)?"""
    return compile_condition(f"all(({candidate}) for t in range({first}, {end}))", trace.symbols,
                             "candidate") is True


def region_sample(proof: Proof, solver: str, timeout: float | None) -> Any:
    """A validated trace in which the proof's own region holds at every step of the window, or
    None. Candidates it violates exclude states of the region that the model reaches for a
    whole window; a vacuous round drops them (the candidates kept must admit some state)."""
    s = proof.steady
    assert s is not None
    q = steady_query(proof, [f"all(region_now[t] for t in range({s.start - s.k + 1}, T))"])
    result = solve(q, solver=solver, timeout=timeout)
    return result.trace if result.answer == "sat" and result.validated else None


def check_candidates(proof: Proof, candidates: list[str], strict: bool = True) -> list[str]:
    """The candidates that compile at every step of the window where the region is read; with
    ``strict`` any other is bad input, named."""
    s = proof.steady
    assert s is not None
    symbols, _ = declared_symbols(steady_query(proof, []))
    readable = []
    for i, c in enumerate(candidates):
        try:
            compile_condition(f"all(({c}) for t in range({s.start - s.k + 1}, {s.T}))", symbols,
                              f"candidate[{i}] `{c}`")
        except CcacError:
            if strict:
                raise
            continue  # e.g. S_f[n][t-R] before step R: not readable at the region's first step
        readable.append(c)
    return readable


def propose(proof: Proof) -> list[str]:
    """Candidate invariants from the model and the CCA's declared state (module docstring),
    keeping those that can be read at every step of the window's region."""
    s = proof.steady
    if s is None:
        raise CcacError("proposing candidates needs a [steady_state] region", "--propose")
    query = steady_query(proof, [])
    out: list[str] = []
    for n, flow in enumerate(query.flows):
        for sv in flow.cca.state:
            if sv.kind != "real":
                continue
            x = f"{sv.name}[{n}][t]"
            if sv.axis is None:
                out.append(f"{x} >= 0")
                continue
            for curve in AXIS_CURVES[sv.axis]:
                c = curve.format(n=n)
                out += [f"{x} <= {c}", f"{x} >= {c}", f"{c} - {x} <= cwnd[{n}][t]"]
        out += [f"L_f[{n}][t] - Ld_f[{n}][t] <= cwnd[{n}][t]", f"cwnd[{n}][t] >= alpha"]
    return check_candidates(proof, [c for c in dict.fromkeys(out) if c not in s.region], strict=False)
