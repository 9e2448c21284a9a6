"""Find where a query's answer flips as one of its ``[params]`` numbers moves.

    ccac bound FILE_OR_NAME --param NAME --lo X --hi Y [--tol E] [--timeout S] ...

A query such as "is there a path on which utilization stays below ``util``?" is unsat for a
small enough ``util`` and sat for a large enough one; the threshold between them is the
performance bound the CCA guarantees on every path of the model. :func:`find_bound` brackets
it by bisection over exact rationals (:mod:`ccac.bisection`: unknown probes are never taken
for either answer, and the search probes around them).

What the result means: every probe is an exact fact at its value (sat: a trace of the model
exists; unsat: none does), so the two ends of the final bracket enclose at least one flip.
That the flip is *the* threshold assumes the answer is monotone in the parameter, which holds
when the parameter only loosens or tightens the query's conditions (e.g.
``S[T-1] - S[0] < util * C * (T - 1)``); bisection does not check it.

Solving: the formula is built once with the parameter as a solver constant p, and each probe
solves it plus ``p == value`` in a fresh solver (so any backend works). With ``--reuse`` every
probe is instead a check of one z3 solver under assumptions (:mod:`ccac.incremental`), a
periodic probe's re-check without the settling conditions included; measured against fresh
solvers it is no faster on the library's bounds (README, "Reusing one solver"), so fresh is
the default. If the parameter cannot be a solver constant (a product with a solver quantity,
a range bound, ...), the formula is rebuilt with the number for each probe instead.

The sat end of the bracket (the counterexample closest to the threshold) is read back exactly
and validated independently, as :func:`ccac.solve.solve` does, against the query with the
parameter set to that number.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import click
import z3

from ccac import limits
from ccac.bisection import bisect, search_range
from ccac.params import exact_text as show
from ccac.backends import SOLVER_HELP, Assignment, backend, fresh_context
from ccac.encoding import num
from ccac.errors import CcacError
from ccac.presentation import EXIT_INVALID_TRACE, EXIT_MISMATCH, EXIT_UNKNOWN, describe_query, echo_validation
from ccac.problem import Problem, build
from ccac.query import Query, load_query
from ccac.incremental import Incremental
from ccac.solve import checked_trace, solve_periodic
from ccac.trace import Trace

__all__ = ["BoundResult", "Probe", "bound", "find_bound"]

MONOTONE_CAVEAT = ("each probe is an exact answer at its value; that a's answer holds for every "
                   "value below a, and b's above b, assumes the answer is monotone in the parameter")


@dataclass
class Probe:
    """The solver's answer for the query with the parameter at one exact value."""

    value: Fraction
    answer: str  # "sat" | "unsat" | "unknown"
    seconds: float
    reason: str | None = None  # why the solver said unknown

    def to_json(self) -> dict[str, Any]:
        return {"value": str(self.value), "float": float(self.value), "answer": self.answer,
                "seconds": round(self.seconds, 4), "reason": self.reason}


@dataclass
class BoundResult:
    """Where the answer to ``query`` flips as ``params.<name>`` goes from ``lo`` to ``hi``.

    ``bracket`` is (a, b) with a.value < b.value and different decisive answers, or None when
    lo and hi did not give two different decisive answers. ``unknown`` lists the unknown probes
    inside the bracket. ``trace`` is the counterexample at the bracket's sat end, checked
    against the query with the parameter at that value (``violations`` empty when valid).
    """

    query: Query
    name: str
    lo: Fraction
    hi: Fraction
    tol: Fraction
    probes: list[Probe]
    bracket: tuple[Probe, Probe] | None
    unknown: list[Probe]
    solver: str
    solver_version: str
    rebuilt: str | None = None  # why the formula was rebuilt per probe (None: built once)
    reused: bool = False  # every probe a check of one shared z3 solver
    trace: Trace | None = None
    violations: list[str] | None = None
    boundary_query: Query | None = field(default=None, repr=False)

    @property
    def status(self) -> str:
        """One of "flip" (bracketed), "no flip" (the same decisive answer at lo and hi) and
        "unknown" (an endpoint was unknown)."""
        if self.bracket is not None:
            return "flip"
        return "unknown" if any(p.answer == "unknown" for p in self.probes[:2]) else "no flip"

    @property
    def width(self) -> Fraction | None:
        return None if self.bracket is None else self.bracket[1].value - self.bracket[0].value

    @property
    def validated(self) -> bool | None:
        return None if self.violations is None else not self.violations

    def to_json(self) -> dict[str, Any]:
        return {
            "param": self.name, "lo": str(self.lo), "hi": str(self.hi), "tol": str(self.tol),
            "status": self.status,
            "bracket": None if self.bracket is None else [p.to_json() for p in self.bracket],
            "unknown_inside": [p.to_json() for p in self.unknown],
            "assumes": MONOTONE_CAVEAT,
            "rebuilt_per_probe": self.rebuilt,
            "solver_reused": self.reused,
            "probes": [p.to_json() for p in self.probes],
            "validated": self.validated, "violations": self.violations,
            "query": self.query.resolved(),
            "solver": {"name": self.solver, "version": self.solver_version},
            "trace": None if self.trace is None else self.trace.to_json(),
        }


class _Prober:
    """Answers the query at any value of one parameter, building the formula once if it can."""

    def __init__(self, query: Query, name: str, solver: str, timeout: float | None,
                 reuse: bool = False) -> None:
        self.query, self.name, self.solver, self.timeout = query, name, solver, timeout
        fresh_context()
        self.symbol = z3.Real("__bound_" + name)
        self.rebuilt: str | None = None
        self.version = ""
        self.problem: Problem | None = None
        self.formulas: list[z3.BoolRef] = []
        try:  # a TimeLimit escapes: no probe can be answered if the formula cannot be built in time
            with limits.time_limit(timeout, "building the formula (once, for every probe)"):
                self.problem = build(dataclasses.replace(query, params={**query.params, name: self.symbol}))
                self.formulas = self.problem.enc.formulas()
        except CcacError as e:  # e.g. the parameter multiplies a solver quantity
            self.rebuilt = str(e)
        self.incremental: Incremental | None = None
        if reuse and solver == "z3" and self.problem is not None:
            self.incremental = Incremental.for_problem(self.problem)

    def at(self, value: Fraction) -> Query:
        """The query with the parameter set to ``value``."""
        return dataclasses.replace(self.query, params={**self.query.params, self.name: value})

    def probe(self, value: Fraction) -> tuple[Probe, Problem | None, Assignment | None]:
        """Solve at ``value``; return the probe and what reads its trace back (sat only).
        The timeout bounds the probe: building its formula (when rebuilt) and solving."""
        start = time.perf_counter()
        try:
            with limits.time_limit(self.timeout) as clock:
                if self.problem is None:
                    problem = build(self.at(value))
                    formulas = problem.enc.formulas()
                else:
                    problem = dataclasses.replace(self.problem, query=self.at(value))
                    formulas = [*self.formulas, self.symbol == num(value)]
                limits.set_phase("solving")
                left = clock.remaining()
                if self.incremental is not None:
                    return self._reused(value, problem, clock, start)
                budget = None if left is None else max(left, 0.001)
                if problem.query.periodic:
                    fixed = [] if self.problem is None else [self.symbol == num(value)]
                    outcome = solve_periodic(problem, self.solver, budget, fixed)
                else:
                    outcome = backend(self.solver)(formulas, budget)
        except limits.TimeLimit as e:
            return Probe(value, "unknown", time.perf_counter() - start, e.reason), self.problem, None
        self.version = outcome.version
        return Probe(value, outcome.answer, outcome.seconds, outcome.reason), problem, outcome.assignment


    def _reused(self, value: Fraction, problem: Problem, clock: limits.Clock,
                start: float) -> tuple[Probe, Problem | None, Assignment | None]:
        """The probe as a check of the one shared solver under ``p == value`` (and, for a
        periodic unsat, again without the settling conditions)."""
        assert self.incremental is not None
        fact = [self.symbol == num(value)]

        def left() -> float | None:
            remaining = clock.remaining()
            return None if remaining is None else max(remaining, 0.001)

        outcome = self.incremental.answer(fact, problem.query.periodic, left)
        self.version = outcome.version
        return Probe(value, outcome.answer, outcome.seconds, outcome.reason), problem, outcome.assignment


def find_bound(query: Query, name: str, lo: Any, hi: Any, tol: Any = None,
               timeout: float | None = None, solver: str = "z3",
               log: Callable[[str], None] | None = None, reuse: bool = False) -> BoundResult:
    """Bracket the value of ``params.<name>`` in [lo, hi] where the answer flips.

    ``tol`` defaults to (hi - lo) / 100; ``timeout`` bounds each probe (seconds). ``log``
    receives one line per probe as it is answered. See the module docstring for what the
    result claims.
    """
    name = name.removeprefix("params.")
    if name not in query.params:
        known = ", ".join(sorted(query.params)) or "none; add one with --set params.NAME=VALUE"
        raise CcacError(f"unknown parameter {name!r} (params: {known})", "--param")
    lo, hi, tol = search_range(lo, hi, tol)
    backend(solver)  # an unknown name is bad input before anything is built
    timeout = limits.check_seconds(timeout)
    say = log or (lambda line: None)
    prober = _Prober(query, name, solver, timeout, reuse)
    if prober.rebuilt:
        say(f"note: params.{name} cannot be a solver constant ({prober.rebuilt}); "
            "rebuilding the formula for each probe")
    witness: tuple[Problem, Assignment] | None = None  # always the latest sat probe

    def probe(value: Fraction) -> Probe:
        nonlocal witness
        p, problem, assignment = prober.probe(value)
        if p.answer == "sat":
            witness = (problem, assignment or {})
        say(probe_line(name, p))
        return p

    search = bisect(probe, lo, hi, tol)
    result = BoundResult(query, name, lo, hi, tol, search.probes, search.bracket, search.unknown, solver,
                         prober.version, prober.rebuilt, prober.incremental is not None)
    if search.bracket is not None:
        assert witness is not None  # one end of the bracket is sat, and it was the last sat probe
        check_boundary(result, *witness)
    return result


def check_boundary(result: BoundResult, problem: Problem, assignment: Assignment) -> None:
    """Read the sat end's trace back exactly and validate it as :func:`ccac.solve.solve` does,
    against the query with the parameter at that number (``problem.query``)."""
    result.boundary_query = problem.query
    result.trace, result.violations = checked_trace(problem, assignment)


def probe_line(name: str, p: Probe) -> str:
    why = f" ({p.reason})" if p.reason and p.answer == "unknown" else ""
    return f"probe params.{name} = {show(p.value)}: {p.answer}{why}, {p.seconds:.2f} s"


def result_lines(r: BoundResult) -> list[str]:
    """The verdict, in words, with what it relies on."""
    if r.bracket is None:
        lo, hi = r.probes[0], r.probes[1]
        if r.status == "unknown":
            return [f"bound: no bracket: the answer is unknown at "
                    f"{' and '.join(show(p.value) for p in (lo, hi) if p.answer == 'unknown')} "
                    "(raise --timeout or move --lo / --hi)"]
        return [f"bound: no flip in [{show(r.lo)}, {show(r.hi)}]: {lo.answer} at both ends "
                "(if the answer is monotone in the parameter there is none inside; widen --lo / --hi)"]
    a, b = r.bracket
    unknown = ", ".join(show(u.value) for u in r.unknown) or "-"
    return [f"bound: params.{r.name} flips between {show(a.value)} ({a.answer}) and "
             f"{show(b.value)} ({b.answer}); unknown at: {unknown}",
             f"  width {show(r.width)} ({'<=' if r.width <= r.tol else 'ABOVE'} tol {show(r.tol)}"
             f"{'' if r.width <= r.tol else ': unknown probes split it into gaps <= tol'}); "
             f"{len(r.probes)} probes",
             f"  {MONOTONE_CAVEAT.replace('the parameter', f'params.{r.name}')}"]


@click.command("bound")
@click.argument("file_or_name")
@click.option("--param", "name", required=True, metavar="NAME",
              help="The [params] number to move (params.NAME works too).")
@click.option("--lo", required=True, metavar="X", help="Low end of the search (exact: 0.1 is 1/10; 1/3 works).")
@click.option("--hi", required=True, metavar="Y", help="High end of the search.")
@click.option("--tol", default=None, metavar="E", help="Stop when the bracket is at most E wide [default: (hi - lo) / 100].")
@click.option("--timeout", type=float, default=None, metavar="S",
              help="Give up on one probe after S seconds of building and solving (answer: unknown).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a query value, e.g. network.T=15, params.util=0 (to add a parameter).")
@click.option("--solver", default="z3", show_default=True, help=SOLVER_HELP)
@click.option("--reuse/--fresh", default=False, show_default=True,
              help="Answer every probe with one z3 solver (checks under assumptions), or each "
                   "with a fresh solver; see the README's measurements.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Draw the boundary counterexample (.png, .svg or .pdf).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write every probe, the bracket and the boundary trace as JSON.")
def bound(file_or_name: str, name: str, lo: str, hi: str, tol: str | None, timeout: float | None,
          overrides: tuple[str, ...], solver: str, reuse: bool, plot_path: str | None,
          json_path: str | None) -> None:
    """Find where the answer to FILE_OR_NAME flips between unsat and sat as params.NAME goes
    from --lo to --hi, by bisection over exact values.

    Prints one line per probe, then the bracket [a, b]: a decisive answer at a, the other one
    at b, and any unknown (timed-out) probes inside it, which the search probes around. Each
    probe is an exact fact at its value; that the bracket holds THE threshold (the answer at a
    holds for every value on a's side, likewise b) assumes the answer is monotone in NAME.
    The counterexample at the bracket's sat end is validated independently and printed.

    Exit codes: 0 bracketed to within --tol; 1 no flip: the same answer at --lo and --hi;
    2 bad input; 3 unknown at --lo or --hi, or unknown probes kept the bracket wider than
    --tol; 4 the boundary counterexample failed validation.
    """
    from ccac.plot import check_format

    if plot_path is not None:
        check_format(plot_path)
    limits.show_progress(True)
    backend(solver)  # bad input stops before anything is printed
    q = load_query(file_or_name, list(overrides))
    click.echo(describe_query(q))
    r = find_bound(q, name, lo, hi, tol, timeout, solver, log=click.echo, reuse=reuse)
    click.echo(f"solver: {r.solver} {r.solver_version}; formula "
               + ("rebuilt for each probe" if r.rebuilt else "built once, parameter as a solver constant")
               + ("; one solver reused across probes" if r.reused else ""))
    for line in result_lines(r):
        click.echo(line)
    if r.trace is not None:
        click.echo(f"boundary counterexample (the sat probe closest to the flip): "
                   f"params.{r.name} = {show(r.boundary_query.params[r.name])}")
        echo_validation(r.validated, r.violations)
        click.echo(r.trace.table())
    if json_path:
        Path(json_path).write_text(json.dumps(r.to_json(), indent=1))
    if plot_path and r.trace is not None:
        from ccac.plot import plot_trace

        plot_trace(r.trace, plot_path, title=f"{q.name}: params.{r.name} = "
                                             f"{show(r.boundary_query.params[r.name])}")
        click.echo(f"plot: {plot_path}")
    if r.trace is not None and not r.validated:
        sys.exit(EXIT_INVALID_TRACE)
    if r.status == "unknown" or (r.width is not None and r.width > r.tol):
        sys.exit(EXIT_UNKNOWN)
    if r.status == "no flip":
        sys.exit(EXIT_MISMATCH)
