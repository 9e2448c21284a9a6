"""Cube and conquer: one query split into cases, solved apart on a local pool or a Dask cluster.

z3's lookahead cuber splits the query's formula on ``depth`` of its case distinctions (whether a
rate exceeds its bound, a loss happens at a step, a phase is taken: whatever its lookahead finds
most decisive) into at most 2^depth **cubes**, conjunctions of those literals. Should the cubes
leave out a branch (one the lookahead refuted), one more case, the negation of their
disjunction, stands for it; :func:`split` checks that the cases cover every assignment, so the
formula is unsat exactly when every case is. Each case is solved in a worker
from SMT-LIB text (``ccac.solving.solvers.solve_z3_text``).

The answer, exactly as the cases give it:

* **sat**: a case is sat. Its assignment is read back and validated here, as every sat answer
  is (:meth:`ccac.solving.solve.Pipeline.read_back`), and the other cases are cancelled.
* **unsat**: every case is unsat.
* **unknown**: otherwise (a case ran out of time, or failed), with the cases that did.

A periodic query is split twice, as :func:`ccac.solving.solve.solve_periodic` solves it twice:
sat needs a sat case of the settled formula, unsat needs every case of the formula without the
settling conditions to be unsat.

Each case's time is kept, and :meth:`CubeRun.projected` turns them into the time the answer would
take on 1, 2, 8, 32 or 128 workers (the cases taken in order by the first free worker). A case
cancelled once the answer was known has no time; a projection that depends on one is a lower
bound, and says so.

Imports: z3, :mod:`ccac.problems`, :mod:`ccac.solving`, :mod:`ccac.analysis.executors`.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import z3

from ccac.core.errors import CcacError
from ccac.problems.query import Query
from ccac.solving.solve import Pipeline, Result, periodic_answer
from ccac.solving.solvers import Outcome, solve_z3_text
from ccac.solving.backends import solver_version

#: the most cases one query is split into, per formula
MAX_CUBES = 1024
#: the worker counts a projection is given for
PROJECTED = (1, 2, 8, 32, 128)


@dataclass
class Case:
    """One case's outcome: which formula ("whole", or a periodic query's "settled" and
    "loose"), its index, its answer and its solve time (None: cancelled)."""

    formula: str
    index: int
    literals: str
    answer: str = "cancelled"
    seconds: float | None = None
    reason: str | None = None


@dataclass
class CubeRun:
    result: Result
    cases: list[Case]
    split_seconds: float
    deciding: list[int] = field(default_factory=list)   # the cases the answer rests on

    def projected(self, workers: int) -> tuple[float, bool] | None:
        """The time from the split to the answer on ``workers`` workers taking the cases in
        order, and whether it is exact (False: a lower bound, a case it waits for was
        cancelled); None if there is no answer."""
        if self.result.answer == "unknown" or not self.deciding:
            return None
        free = [0.0] * min(workers, len(self.cases))
        heapq.heapify(free)
        finish, exact = {}, True
        for i, case in enumerate(self.cases):
            start = heapq.heappop(free)
            finish[i] = start + (case.seconds or 0.0)
            heapq.heappush(free, finish[i])
        if self.result.answer == "sat":
            i = min(self.deciding, key=lambda k: finish[k])
            exact = all(self.cases[k].seconds is not None for k in range(i + 1))
            return finish[i], exact
        return max(finish[k] for k in self.deciding), exact


Runner = Callable[[Callable[[Any], Any], list[Any], Callable[[int, Any], None]], None]


class _Decided(Exception):
    """The answer is known: the remaining cases are cancelled."""


def split(formulas: list[z3.BoolRef], cubes: int) -> list[z3.BoolRef]:
    """At most ``cubes`` + 1 cases whose disjunction every assignment satisfies (checked): z3's
    lookahead cubes at depth ceil(log2 cubes), and the negation of their disjunction where that
    is satisfiable on its own (the branches the lookahead refuted)."""
    if not 1 <= cubes <= MAX_CUBES:
        raise CcacError(f"--cubes is 1 to {MAX_CUBES}, got {cubes}", "--cubes")
    if cubes == 1:
        return [z3.BoolVal(True, formulas[0].ctx)]
    solver = z3.Solver(ctx=formulas[0].ctx)
    solver.set("cube_depth", max(1, math.ceil(math.log2(cubes))))
    solver.add(*formulas)
    found = [z3.And(*cube) if len(cube) != 1 else cube[0] for cube in solver.cube()]
    if not found:   # the cuber found the formula unsat: one case, the formula itself
        return [z3.BoolVal(True, formulas[0].ctx)]
    rest = z3.Not(z3.Or(*found))   # what no cube covers, on the cubes' literals alone
    cover = z3.Solver(ctx=formulas[0].ctx)
    cover.add(rest)
    if cover.check() != z3.unsat:
        found.append(rest)
    return found


def solve_case(task: tuple[str, str, float | None]) -> tuple[str, str | None, dict[str, Any] | None, float]:
    """One case in a worker: (answer, reason, assignment if sat, seconds)."""
    text, literals, timeout = task
    outcome = solve_z3_text(f"{text}\n(assert {literals})\n", timeout)
    return outcome.answer, outcome.reason, outcome.assignment, outcome.seconds


def solve_in_cubes(query: Query, cubes: int, run: Runner, timeout: float | None = None,
                   encoding: str = "pairs") -> CubeRun:
    """``query`` answered case by case (see the module doc); ``run(fn, tasks, done)`` runs the
    cases (``ccac.analysis.executors``); ``timeout`` bounds each case."""
    started = time.perf_counter()
    pipeline = Pipeline(query, "z3", encoding)
    problem = pipeline.build()
    build_seconds = time.perf_counter() - started
    sets = {"settled": problem.formulas(), "loose": problem.formulas(settled=False)} \
        if query.periodic else {"whole": problem.formulas()}
    started = time.perf_counter()
    cases, tasks = [], []
    texts = {name: _assertions(formulas) for name, formulas in sets.items()}
    splits = {name: split(formulas, cubes) for name, formulas in sets.items()}
    for k in range(max(len(s) for s in splits.values())):   # the formulas' cases interleaved
        for name, found in splits.items():
            if k < len(found):
                cases.append(Case(name, k, found[k].sexpr()))
                tasks.append((texts[name], cases[-1].literals, timeout))
    split_seconds = time.perf_counter() - started
    deciding: list[int] = []
    won: dict[str, Any] = {}

    def done(i: int, outcome: Any) -> None:
        case = cases[i]
        if isinstance(outcome, Exception):
            case.answer, case.reason = "unknown", f"the worker failed: {type(outcome).__name__}: {outcome}"
            return
        case.answer, case.reason, assignment, case.seconds = outcome
        if case.answer == "sat":
            won.setdefault(case.formula, (i, assignment))
        answer = _answer(cases, won, periodic=query.periodic)
        if answer is not None and answer.answer in ("sat", "unsat"):
            if answer.answer == "sat":
                deciding.append(won["settled" if query.periodic else "whole"][0])
                won["answer"] = answer
            else:
                deciding.extend(k for k, c in enumerate(cases) if c.formula == ("loose" if query.periodic else "whole"))
            raise _Decided

    solving = time.perf_counter()
    try:
        run(solve_case, tasks, done)
    except _Decided:
        pass
    solve_seconds = time.perf_counter() - solving
    version = solver_version("z3")
    if "answer" in won:
        trace, violations = pipeline.read_back(won["answer"])
        result = Result(query, "sat", None, trace, violations, "z3 (cubes)", version, build_seconds, solve_seconds)
    elif deciding:
        result = Result(query, "unsat", None, None, None, "z3 (cubes)", version, build_seconds, solve_seconds)
    else:
        open_cases = [f"{c.formula} {c.index}: {c.answer}" + (f" ({c.reason})" if c.reason else "")
                      for c in cases if c.answer not in ("unsat", "sat")]
        reason = "cases without an answer: " + "; ".join(open_cases[:4]) + (" ..." if len(open_cases) > 4 else "")
        if query.periodic and not open_cases:
            reason = ("every case of the settled formula is unsat but not every case without the settling "
                      "conditions is: as a whole solve, no periodic trace settles within one period")
        result = Result(query, "unknown", reason, None, None, "z3 (cubes)", version, build_seconds, solve_seconds)
    return CubeRun(result, cases, split_seconds, deciding)


def _answer(cases: list[Case], sat_cases: dict[str, tuple[int, Any]], periodic: bool) -> Outcome | None:
    """The query's answer from its cases so far (None: not decided yet): a periodic query's by
    :func:`ccac.solving.solve.periodic_answer` from its two formulas' outcomes."""
    outcomes = {name: _formula_outcome([c for c in cases if c.formula == name], sat_cases.get(name))
                for name in {c.formula for c in cases}}
    if periodic:
        return periodic_answer(outcomes["settled"], outcomes["loose"])
    return outcomes["whole"]


def _formula_outcome(own: list[Case], sat_case: tuple[int, Any] | None) -> Outcome | None:
    """One formula's outcome from its cases: sat once a case is (with its assignment), unsat
    once every case is (they cover every assignment), unknown once every case has answered
    otherwise, None before."""
    if sat_case is not None:
        return Outcome("sat", None, sat_case[1], "z3 (cubes)", "", 0.0)
    if all(c.answer == "unsat" for c in own):
        return Outcome("unsat", None, None, "z3 (cubes)", "", 0.0)
    if all(c.answer != "cancelled" for c in own):
        return Outcome("unknown", "a case without an answer", None, "z3 (cubes)", "", 0.0)
    return None


def _assertions(formulas: list[z3.BoolRef]) -> str:
    """The formulas as SMT-LIB 2 declarations and assertions (no check-sat)."""
    solver = z3.Solver(ctx=formulas[0].ctx)
    solver.add(*formulas)
    return solver.to_smt2().replace("(check-sat)\n", "")


__all__ = ["Case", "CubeRun", "MAX_CUBES", "PROJECTED", "solve_in_cubes", "split"]
