"""Answer a query: build, solve, read back an exact trace, validate it independently.

This is the Python API the CLI is a thin layer over::

    from ccac import load_query, solve
    result = solve(load_query("aimd_premature_loss"))
    result.answer        # "sat", "unsat" or "unknown", exactly as the solver said
    result.trace         # a Trace (sat only); result.trace.to_pandas()
    result.validated     # True / False, or None when there is no trace
    result.plot("trace.png")
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence, overload

import z3

from ccac.core import deadline, machine
from ccac.encode.encoding import is_symbolic, num
from ccac.solving.backends import backend
from ccac.solving.refine import MAX_ROUNDS, Ask, refined
from ccac.solving.solvers import Outcome, check_solver, evaluate, to_smtlib
from ccac.core.errors import CcacError
from ccac.problems.problem import Problem, build, nonlinear_mode, symbols_for
from ccac.problems.query import Query
from ccac.solving.backends import solver_version
from ccac.encode.trace import Trace
from ccac.solving.validate import step_notes, unrolled, validate


@dataclass
class Result:
    query: Query
    answer: str
    reason: str | None
    trace: Trace | None
    violations: list[str] | None
    solver: str
    solver_version: str
    build_seconds: float
    solve_seconds: float
    nonlinear: str | None = None   # the non-linear mode, when the formula has non-linear uses
    refinements: int = 0           # enclosure refinement rounds before the answer (ccac.solving.refine)
    repaired: bool = False         # the trace was found with non-linear operands pinned (ccac.solving.refine)

    @property
    def validated(self) -> bool | None:
        """True if the trace passed the independent checker, False if not, None if no trace."""
        return None if self.violations is None else not self.violations

    @property
    def matches_expectation(self) -> bool | None:
        return None if self.query.expect is None else self.answer == self.query.expect

    def plot(self, path: str | Path | None = None) -> Any:
        if self.trace is None:
            raise CcacError(f"nothing to plot: the answer is {self.answer}, not sat")
        from ccac.report.plot import plot_trace

        shown = self.shown_trace()
        assert shown is not None   # there is a trace
        if not self.query.periodic:
            return plot_trace(shown, path, title=self.query.name)
        return plot_trace(shown, path, title=f"{self.query.name} (2 periods)", period=self.trace.T - 1)

    def shown_trace(self) -> Trace | None:
        """The trace as it is drawn: a periodic trace as the run it claims, two periods, the
        second the first repeated (byte curves shifted by one period's growth)."""
        if self.trace is None or not self.query.periodic:
            return self.trace
        return replace(unrolled(self.query, self.trace, 2), periodic=True)

    def text(self) -> list[str]:
        """The answer as ``ccac query`` states it: the query and model, the answer line, what
        exactly was checked and, for a trace, whether it was validated."""
        from ccac.report.presentation import VALIDATED, answer_line, describe_query, statement

        lines = describe_query(self.query).splitlines() + [answer_line(self.answer, None, self.reason),
                                                           statement(self.query, self.answer)]
        if self.trace is not None:
            lines.append(VALIDATED if self.validated else f"validated: NO ({'; '.join(self.violations or [])})")
            if self.query.periodic:
                lines.append(f"drawn as two periods: the second repeats steps 1..{self.trace.T - 1}")
        return lines

    def section(self, heading: Sequence[str] = ()) -> Any:
        """The answer as a part of a page (:class:`ccac.report.html_page.Section`): ``heading``,
        :meth:`text`, and the trace as drawn with, on a validated trace, what holds at each step
        (:func:`ccac.solving.validate.step_notes`)."""
        from ccac.report.html_page import Section

        shown = self.shown_trace()
        notes = step_notes(self.query, shown) if shown is not None and self.validated else {}
        return Section([*heading, *self.text()], shown, None, notes)

    def write_html(self, path: str | Path) -> None:
        """The answer as one self-contained page (:mod:`ccac.report.html_page`): the text of
        :meth:`text`, and for a trace its linked plots with every variable, and which query
        conditions and CCA rules hold, on hover."""
        from ccac.report.html_page import write_sections

        write_sections(path, self.query.name, [self.section()])

    def _repr_html_(self) -> str:
        """A notebook shows the answer's text and, for a trace, its interactive plots."""
        from ccac.report.html_page import sections_fragment

        return sections_fragment([self.section()])

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "reason": self.reason,
            "validated": self.validated,
            "violations": self.violations,
            "query": self.query.resolved(),
            "solver": {"name": self.solver, "version": self.solver_version,
                       "seconds": round(self.solve_seconds, 4),
                       "build_seconds": round(self.build_seconds, 4)},
            "trace": self.trace.to_json() if self.trace is not None else None,
            **({"nonlinear": {"mode": self.nonlinear, "refinements": self.refinements, "repaired": self.repaired}}
               if self.nonlinear else {}),
        }


CORE_LABEL = "pinned!"  # the names of the labels :meth:`Pipeline.culprits` tracks facts by


class Pipeline:
    """One solve's way through ccac, owned in one place: a z3 context of its own, the build, the
    answer (a periodic query's from its two formulas by :func:`periodic_answer`, the one rule),
    and a sat answer's exact read-back and independent validation. Every caller that builds or
    solves a query goes through it: :func:`solve`, families and bounds (one build, many answers
    under assumptions), a query split into cubes, proofs' windows, the synthesis recheck and the
    scaling yardstick.

    Its context is a new ``z3.Context`` (z3's public API): z3's search follows the internal ids
    of terms, which depend on every term built before in the same context. In one shared
    context the same query took ten times longer after three others (8 s alone, 72 s after);
    with one context per solve, an answer's cost depends only on its query."""

    def __init__(self, query: Query, solver: str = "z3", encoding: str = "pairs", nonlinear: str | None = None,
                 rounds: int = MAX_ROUNDS) -> None:
        backend(solver)  # an unknown name is bad input before anything is built
        self.query, self.solver, self.encoding = query, solver, encoding
        self.mode = nonlinear_mode(query, nonlinear)   # an unknown mode is bad input too
        self.rounds = rounds   # the most refinement rounds of an enclosed answer (ccac.solving.refine)
        self.ctx = z3.Context()
        self._problem: Problem | None = None

    def parameter(self, name: str) -> z3.ArithRef:
        """A solver constant named ``name`` in this solve's context: a parameter left to the
        solver so that one build serves many values (families, bounds)."""
        return z3.Real(name, self.ctx)

    def value(self, number: Fraction | int) -> z3.ArithRef:
        """An exact constant in this solve's context (a parameter's value, as a fact)."""
        return num(number, self.ctx)

    def build(self, query: Query | None = None) -> Problem:
        """Encode ``query`` (the pipeline's own if None) in this solve's context. A non-linear use
        in a query with a parameter left to the solver (:meth:`parameter`) is refused: families
        and bounds then solve each value on its own, where the use may be linear."""
        problem = build(query or self.query, self.encoding, self.ctx, self.mode)
        if problem.nodes and any(is_symbolic(v) for v in problem.query.params.values()):
            raise CcacError(f"non-linear: {problem.nodes[0].label()} with a parameter left to the solver")
        self._problem = problem
        return problem

    @property
    def problem(self) -> Problem:
        assert self._problem is not None, "a pipeline answers only after it has built"
        return self._problem

    def answer(self, timeout: float | None, extra: Sequence[Any] = ()) -> Outcome:
        """The solver's answer on the built formula and ``extra`` (e.g. a parameter's value); with
        enclosed non-linear uses, repaired or refined until a sat trace is exact
        (:func:`ccac.solving.refine.refined`)."""
        problem = self.problem
        if problem.nonlinear != "enclose" or not problem.nodes:
            return self._ask(timeout, extra, [])
        if self.solver == "z3" and not problem.query.periodic:
            ask = _within(timeout, self.solver, self._incremental(extra))
        else:
            ask = _within(timeout, self.solver, lambda seconds, added, pins: self._ask(seconds, extra, [*added, *pins]))
        return refined(problem.nodes, ask, self._validated, self.rounds)

    def _ask(self, timeout: float | None, extra: Sequence[Any], added: list[Any]) -> Outcome:
        """One answer from the chosen solver, on the formula, ``extra`` and ``added``."""
        if self.problem.query.periodic:
            return solve_periodic(self.problem, self.solver, timeout, [*extra, *added])
        return backend(self.solver)([*self.problem.formulas(), *extra, *added], timeout)

    def _incremental(self, extra: Sequence[Any]) -> TimedAsk:
        """Answers from one z3 solver that keeps the formula: each call, within its ``seconds``,
        adds what ``added`` gained, and ``pins`` in a scope of their own, dropped after the call."""
        solver = z3.Solver(ctx=self.ctx)
        solver.add(*self.problem.formulas(), *extra)
        sent = 0

        def ask(seconds: float | None, added: list[Any], pins: list[Any]) -> Outcome:
            nonlocal sent
            if seconds is not None:
                solver.set("timeout", max(1, int(seconds * 1000)))
            solver.add(*added[sent:])
            sent = len(added)
            if not pins:
                return check_solver(solver)
            solver.push()
            try:
                solver.add(*pins)
                return check_solver(solver)
            finally:
                solver.pop()
        return ask

    def _validated(self, outcome: Outcome) -> bool:
        return not checked_trace(self.problem, outcome.assignment or {})[1]

    def culprits(self, extra: Sequence[z3.BoolRef], timeout: float | None) -> list[int] | None:
        """Which of ``extra`` (facts about the built formula's terms, e.g. a concrete run's
        values) an unsat core of the formula with them names: their indices, in order; None if
        z3 finds no core within ``timeout`` (sat or unknown). A periodic query's settled formula."""
        solver = z3.Solver(ctx=self.ctx)
        if timeout is not None:
            solver.set("timeout", max(1, int(timeout * 1000)))
        solver.add(*self.problem.formulas())
        for i, fact in enumerate(extra):
            solver.assert_and_track(fact, z3.Bool(f"{CORE_LABEL}{i}", self.ctx))
        if solver.check() != z3.unsat:
            return None
        return sorted(int(str(label).removeprefix(CORE_LABEL)) for label in solver.unsat_core())

    def read_back(self, outcome: Outcome, query: Query | None = None) -> tuple[Trace | None, list[str] | None]:
        """A sat outcome's exact trace and what the validator finds wrong with it, against
        ``query`` (the built one if None: a family member or a probed value); (None, None) else."""
        if outcome.answer != "sat":
            return None, None
        problem = self.problem if query is None else replace(self.problem, query=query)
        return checked_trace(problem, outcome.assignment or {})

    def run(self, clock: deadline.Clock, smtlib: str | Path | None = None) -> Result:
        """Build, solve with what the clock leaves, read back and validate: the whole of a query."""
        start = time.perf_counter()
        problem = self.build()
        build_seconds = time.perf_counter() - start
        if smtlib is not None:
            Path(smtlib).write_text(to_smtlib(problem.formulas(), smtlib_comments(problem)))
        outcome = self.answer(_time_to_solve(clock, build_seconds))
        if outcome.answer == "sat":
            _validating(clock, build_seconds, outcome.seconds)
        trace, violations = self.read_back(outcome)
        return Result(self.query, outcome.answer, outcome.reason, trace, violations, outcome.solver,
                      outcome.version, build_seconds, outcome.seconds,
                      problem.nonlinear if problem.nodes else None, outcome.refinements, outcome.repaired)


def solve(query: Query, solver: str = "z3", timeout: float | None = None,
          smtlib: str | Path | None = None, encoding: str = "pairs", nonlinear: str | None = None,
          rounds: int = MAX_ROUNDS) -> Result:
    """Build and solve ``query`` (a :class:`Pipeline` of its own); a sat answer comes with a
    validated exact trace.

    ``timeout`` (seconds) bounds the whole call: building the formula, solving (the solver gets
    what is left after building) and reading back and validating a trace. Running out is the
    answer ``unknown`` with a reason starting ``timeout:`` that says where the time went.
    ``nonlinear`` (``exact`` or ``enclose``; None: the query's, else the default) is what
    non-linear uses' values may be (:mod:`ccac.encode.nonlinear`); ``rounds`` bounds an enclosed
    answer's refinement rounds (:mod:`ccac.solving.refine`)."""
    pipeline = Pipeline(query, solver, encoding, nonlinear, rounds)
    try:
        with deadline.time_limit(timeout) as clock:
            return pipeline.run(clock, smtlib)
    except deadline.TimeLimit as e:
        spent = clock.spent()
        return Result(query, "unknown", e.reason, None, None, solver, solver_version(solver),
                      spent.get(deadline.BUILDING, 0.0), spent.get("solving", 0.0))


def premise(query: Query, solver: str = "z3", timeout: float | None = None, encoding: str = "pairs",
            nonlinear: str | None = None) -> Result:
    """The query's premise: its model, CCAs and assumptions without its ``find``. An unsat
    answer means something only if this is sat: otherwise no trace meets the assumptions at
    all, and "no trace has the find" is vacuous (e.g. an assumption ``alpha <= 0.05 * C * R``
    against whole packets of 0.1)."""
    witness = copy.copy(query)
    witness.find = None
    return solve(witness, solver=solver, timeout=timeout, encoding=encoding, nonlinear=nonlinear)


PREMISE_SECONDS = 30.0  # the most an unsat's premise check may take (and at most its own timeout)


def premise_verdict(query: Query, solver: str = "z3", timeout: float | None = None,
                    encoding: str = "pairs", nonlinear: str | None = None) -> tuple[str, str]:
    """After an unsat of ``query``: its :func:`premise` solved within :data:`PREMISE_SECONDS`
    (and ``timeout``), as ("satisfiable" | "vacuous" | "unknown", one line saying so). Only a
    validated trace makes the premise satisfiable; "unknown" claims nothing either way."""
    budget = PREMISE_SECONDS if timeout is None else min(timeout, PREMISE_SECONDS)
    checked = premise(query, solver=solver, timeout=budget, encoding=encoding, nonlinear=nonlinear)
    if checked.answer == "unsat":
        return "vacuous", ("VACUOUS: the assumptions alone admit no trace of the model, so no trace has the "
                           "find for want of any trace: this unsat says nothing about the find")
    if checked.answer == "sat" and checked.validated:
        return "satisfiable", (f"premise: the assumptions alone admit a validated trace "
                               f"({checked.solve_seconds:.2f} s): the unsat is not vacuous")
    return "unknown", f"premise not checked (the assumptions alone: {checked.answer} within {budget:g} s)"


def solve_periodic(problem: Problem, solver: str, timeout: float | None,
                   extra: Sequence[Any] = ()) -> Outcome:
    """A periodic query's answer (:func:`periodic_answer`) from its two formulas, the settled
    one and the loose one without the settling conditions. With two or more CPUs both are
    solved at once (:func:`ccac.solving.portfolio.race`) and the answer comes as soon as the
    outcomes so far decide it; on one CPU the settled formula first, the loose one only if that
    does not decide. ``extra`` are formulas solved with the problem's own (e.g. a probed
    parameter's value)."""
    solve = backend(solver)
    start = time.perf_counter()
    jobs = {"settled": lambda: solve([*problem.formulas(), *extra], timeout),
            "loose": lambda: solve([*problem.formulas(settled=False), *extra], timeout)}

    def decide(done: dict[str, Outcome]) -> Outcome | None:
        answer = periodic_answer(done.get("settled"), done.get("loose"))
        return None if answer is None else replace(answer, seconds=time.perf_counter() - start)

    if machine.usable_cpus() >= 2:
        from ccac.solving.portfolio import race

        return race(jobs, decide)
    done = {"settled": jobs["settled"]()}
    if decide(done) is None:
        remaining = None if timeout is None else max(timeout - (time.perf_counter() - start), 0.001)
        done["loose"] = solve([*problem.formulas(settled=False), *extra], remaining)
    answer = decide(done)
    assert answer is not None, "both formulas answered decide a periodic query"
    return answer


@overload
def periodic_answer(settled: Outcome, loose: Outcome) -> Outcome: ...
@overload
def periodic_answer(settled: Outcome | None, loose: Outcome | None) -> Outcome | None: ...


def periodic_answer(settled: Outcome | None, loose: Outcome | None) -> Outcome | None:
    """The one rule for a periodic query's answer (:mod:`ccac.encode.periodic`), from the
    outcome of its settled formula and of its loose formula (without the settling conditions),
    each None while not known: None while they do not decide it yet.

    * The settled formula sat: sat (a periodic trace that settles within a period, exact).
    * The loose formula unsat: unsat (no periodic run at all, settled or not).
    * Both known otherwise: unknown. The settled formula unsat with the loose one sat leaves
      only runs in which some byte waits, or some loss stays undetected, for longer than a
      period, which the settled encoding cannot represent exactly: not ruled out, said so."""
    if settled is not None and settled.answer == "sat":
        return settled
    if loose is not None and loose.answer == "unsat":
        return replace(loose, seconds=loose.seconds + (settled.seconds if settled is not None else 0.0))
    if settled is None or loose is None:
        return None
    seconds = settled.seconds + loose.seconds
    if settled.answer != "unsat":
        return replace(settled, seconds=seconds)   # unknown, with the settled formula's reason
    reason = ("no periodic trace settles within one period, but the query without that condition "
              + ("is sat: a periodic run in which some byte waits, or some loss stays undetected, for "
                 "longer than a period (T - 1 steps) is not ruled out; a larger T settles over a longer period"
                 if loose.answer == "sat" else f"is unknown ({loose.reason})"))
    return Outcome("unknown", reason, None, settled.solver, settled.version, seconds)


def _time_to_solve(clock: deadline.Clock, build_seconds: float) -> float | None:
    """What is left of the time limit for the solver (None: no limit)."""
    left = clock.remaining()
    if left is not None and left <= 0:
        raise clock.timeout(f"it took {build_seconds:.2f} s, leaving no time to solve")
    clock.note = f"the formula was built in {build_seconds:.2f} s"
    deadline.set_phase("solving")
    return left


def _validating(clock: deadline.Clock, build_seconds: float, solve_seconds: float) -> None:
    """The time limit's remainder now goes to reading back and validating a trace."""
    clock.note = (f"the formula was built in {build_seconds:.2f} s, the solver answered sat in "
                  f"{solve_seconds:.2f} s; a trace is never reported unvalidated")
    deadline.set_phase("reading back and validating the trace")


def checked_trace(problem: Problem, assignment: dict[str, Any]) -> tuple[Trace, list[str]]:
    """The exact trace of a sat ``assignment`` and what the independent validator finds wrong
    with it, against ``problem.query`` (empty: validated)."""
    trace = read_trace(problem, assignment)
    memo: dict[int, Any] = {}
    cca_pairs = [(label, evaluate(a, assignment, memo), evaluate(b, assignment, memo))
                 for label, a, b in problem.periodic_pairs]
    return trace, validate(problem.query, trace, cca_pairs)


def read_trace(problem: Problem, assignment: dict[str, Any]) -> Trace:
    memo: dict[int, Any] = {}
    symbols = symbols_for(problem.query, problem.vars, problem.states,
                          lambda term: evaluate(term, assignment, memo))
    return Trace(problem.query.network, [f.cca.name for f in problem.query.flows], symbols,
                 periodic=problem.query.periodic)


def smtlib_comments(problem: Problem) -> list[str]:
    q = problem.query
    lines = [f"ccac query {q.name} ({q.source})"]
    lines += [f"  network: {k} = {v}" for k, v in q.resolved()["network"].items()]
    lines += [f"  cca[{n}]: {f.cca.name} {f.params}" for n, f in enumerate(q.flows)]
    lines += [f"  assume: {a}" for a in q.assume]
    if q.find:
        lines.append(f"  find: {q.find}")
    lines.append(f"  periodic: {q.periodic}")
    lines += [f"constraints in group {g}: {c}" for g, c in problem.enc.groups().items()]
    return lines


#: a solve given the seconds it may take (None: no limit), the formulas added and the pins
TimedAsk = Callable[[float | None, list[Any], list[Any]], Outcome]


def _within(timeout: float | None, solver: str, ask: TimedAsk) -> Ask:
    """``ask`` with what is left of ``timeout`` at each call: an answer that solves several times
    (repair, refinement) shares one limit; with nothing left the answer is unknown at once."""
    ends = None if timeout is None else time.monotonic() + timeout

    def timed(added: list[Any], pins: list[Any]) -> Outcome:
        seconds = None if ends is None else ends - time.monotonic()
        return _out_of_time(solver) if seconds is not None and seconds <= 0 else ask(seconds, added, pins)
    return timed


def _out_of_time(solver: str) -> Outcome:
    """The answer of a solve that has no time left: unknown, as the solver says on a timeout."""
    return Outcome("unknown", "timeout", None, solver, solver_version(solver), 0.0)
