"""Find where a query's answer flips as one of its ``[params]`` numbers, or a number of its
``[network]`` (``network.buffer``, ``network.bdp_packets``, ...), moves (the command ``ccac bound``
is :mod:`ccac.commands.bound`).

A query such as "is there a path on which utilization stays below ``util``?" is unsat for a
small enough ``util`` and sat for a large enough one; the threshold between them is the
performance bound the CCA guarantees on every path of the model. :func:`find_bound` brackets
it by bisection over exact rationals (:mod:`ccac.analysis.bisection`: unknown probes are never taken
for either answer, and the search probes around them).

What the result means: every probe is an exact fact at its value (sat: a trace of the model
exists; unsat: none does), so the two ends of the final bracket enclose at least one flip.
That the flip is *the* threshold assumes the answer is monotone in the parameter, which holds
when the parameter only loosens or tightens the query's conditions (e.g.
``S[T-1] - S[0] < util * C * (T - 1)``); bisection does not check it.

Solving: the formula is built once with the parameter as a solver constant p, and each probe
solves it plus ``p == value`` in a fresh solver (so any backend works). With ``--reuse`` every
probe is instead a check of one z3 solver under assumptions (:mod:`ccac.analysis.incremental`), a
periodic probe's re-check without the settling conditions included; measured against fresh
solvers it is no faster on the library's bounds (docs/bounds-and-sweeps.md, the `--reuse` table), so fresh is
the default. If the parameter cannot be a solver constant (a product with a solver quantity,
a range bound, ...), the formula is rebuilt with the number for each probe instead. A
``[network]`` setting shapes the formula itself (its steps, its packet size), so each probe reads
the query again with the setting overridden, as ``--set network.NAME=VALUE`` would, and builds
it; a whole-number setting (T, R, D, bdp_packets, ...) is searched over whole numbers.

The sat end of the bracket (the counterexample closest to the threshold) is read back exactly
and validated independently, as :func:`ccac.solving.solve.solve` does, against the query with the
parameter set to that number.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Sequence

from ccac.core import deadline, limits
from ccac.analysis.bisection import bisect, search_range
from ccac.core.params import exact_text as show
from ccac.solving.backends import backend
from ccac.solving.solvers import Assignment
from ccac.core.errors import CcacError
from ccac.problems.problem import Problem
from ccac.problems.query import Query, apply_overrides, parse_query
from ccac.encode.network import NETWORK_PARAMS
from ccac.analysis.incremental import Incremental
from ccac.solving.solve import Pipeline, checked_trace, premise_verdict
from ccac.encode.trace import Trace
from ccac.report.bound_lines import MONOTONE_CAVEAT, probe_line, rebuild_note

__all__ = ["BoundResult", "Probe", "find_bound"]

@dataclass
class Probe:
    """The solver's answer for the query with the parameter at one exact value."""

    value: Fraction
    answer: str  # "sat" | "unsat" | "unknown"
    seconds: float
    reason: str | None = None  # why the solver said unknown
    trace: Trace | None = field(default=None, repr=False)  # a sat probe's, read back when asked (find_bound)
    violations: list[str] | None = field(default=None, repr=False)  # what the validator found wrong with it
    query: Query | None = field(default=None, repr=False)  # the query at this value, with its trace

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
    premise: str | None = None  # at the bracket's unsat end: "satisfiable", "vacuous" or "unknown"
    section: str = "params"  # or "network": where the moved number lives

    @property
    def key(self) -> str:
        """The moved number as ``--set`` names it: ``params.util``, ``network.bdp_packets``."""
        return f"{self.section}.{self.name}"

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
    def boundary_value(self) -> Fraction | None:
        """The value at the bracket's sat end, where the boundary counterexample was found."""
        return None if self.bracket is None else next(p.value for p in self.bracket if p.answer == "sat")

    @property
    def validated(self) -> bool | None:
        return None if self.violations is None else not self.violations

    def layout(self, text: Sequence[str] = (), timeout: float | None = None) -> Any:
        """The probes as an interactive Bokeh layout (:func:`ccac.report.grid_page.bound_layout`),
        the bracket marked, each sat probe whose trace was kept (``find_bound(traces=True)``;
        else the boundary's) linked to it, with what holds at each step."""
        from ccac.core.params import exact_text
        from ccac.report import bound_lines
        from ccac.report.grid_page import GridPoint, bound_layout
        from ccac.solving.validate import step_notes

        end = self.boundary_value
        points = []
        for p in self.probes:
            trace, query = (p.trace, p.query) if p.violations == [] else (None, None)
            if trace is None and end is not None and p.value == end and self.validated:
                trace, query = self.trace, self.boundary_query
            points.append(GridPoint((exact_text(p.value),), p.answer, p.seconds,
                                    "" if trace is not None else bound_lines.untraced_probe_note(p, p.violations),
                                    bound_lines.probe_lines(self.key, p, p.value == end, timeout), trace,
                                    step_notes(query, trace) if trace is not None and query is not None else {}))
        bracket = None if self.bracket is None else (float(self.bracket[0].value), float(self.bracket[1].value))
        return bound_layout(text, self.key, points, [float(p.value) for p in self.probes], bracket)

    def _repr_html_(self) -> str:
        """A notebook shows the probes over the parameter, each linked to its trace."""
        from ccac.report.html_page import layout_fragment

        return layout_fragment(self.layout([f"bound of {self.key} on {self.query.name}: {self.status}"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "param": self.key, "lo": str(self.lo), "hi": str(self.hi), "tol": str(self.tol),
            "status": self.status,
            "bracket": None if self.bracket is None else [p.to_json() for p in self.bracket],
            "unknown_inside": [p.to_json() for p in self.unknown],
            "assumes": MONOTONE_CAVEAT,
            "rebuilt_per_probe": self.rebuilt,
            "solver_reused": self.reused,
            "probes": [p.to_json() for p in self.probes],
            "validated": self.validated, "violations": self.violations, "premise": self.premise,
            "query": self.query.resolved(),
            "solver": {"name": self.solver, "version": self.solver_version},
            "trace": None if self.trace is None else self.trace.to_json(),
        }


class _Prober:
    """Answers the query at any value of one parameter, building the formula once if it can."""

    def __init__(self, query: Query, name: str, solver: str, timeout: float | None,
                 reuse: bool = False, section: str = "params") -> None:
        self.query, self.name, self.solver, self.timeout = query, name, solver, timeout
        self.section = section
        self.pipeline = Pipeline(query, solver)
        self.symbol = self.pipeline.parameter("__bound_" + name)
        self.rebuilt: str | None = None
        self.version = ""
        self.problem: Problem | None = None
        self.incremental: Incremental | None = None
        if section == "network":
            self.rebuilt = "a [network] setting shapes the formula"
            return
        try:  # a TimeLimit escapes: no probe can be answered if the formula cannot be built in time
            with deadline.time_limit(timeout, "building the formula (once, for every probe)"):
                symbolic = dataclasses.replace(query, params={**query.params, name: self.symbol})
                self.problem = self.pipeline.build(symbolic)
        except CcacError as e:  # e.g. the parameter multiplies a solver quantity
            self.rebuilt = str(e)
        if reuse and solver == "z3" and self.problem is not None:
            self.incremental = Incremental.for_problem(self.problem)

    def at(self, value: Fraction) -> Query:
        """The query with the parameter set to ``value`` (a [network] setting: the query read
        again with it overridden, so every rule of the section checks it)."""
        if self.section == "network":
            text = str(value.numerator) if value.denominator == 1 else f'"{value}"'
            data = apply_overrides(self.query.raw, [f"network.{self.name}={text}"])
            return parse_query(data, self.query.name, self.query.source)
        return dataclasses.replace(self.query, params={**self.query.params, self.name: value})

    def probe(self, value: Fraction) -> tuple[Probe, Problem | None, Assignment | None]:
        """Solve at ``value``; return the probe and what reads its trace back (sat only).
        The timeout bounds the probe: building its formula (when rebuilt) and solving."""
        start = time.perf_counter()
        try:
            with deadline.time_limit(self.timeout) as clock:
                if self.problem is None:
                    pipeline, facts = Pipeline(self.at(value), self.solver), []
                    problem = pipeline.build()
                else:
                    pipeline, facts = self.pipeline, [self.symbol == self.pipeline.value(value)]
                    problem = dataclasses.replace(self.problem, query=self.at(value))
                deadline.set_phase("solving")
                left = clock.remaining()
                if self.incremental is not None:
                    return self._reused(value, problem, clock, start)
                outcome = pipeline.answer(None if left is None else max(left, 0.001), facts)
        except deadline.TimeLimit as e:
            return Probe(value, "unknown", time.perf_counter() - start, e.reason), self.problem, None
        self.version = outcome.version
        return Probe(value, outcome.answer, outcome.seconds, outcome.reason), problem, outcome.assignment


    def _reused(self, value: Fraction, problem: Problem, clock: deadline.Clock,
                start: float) -> tuple[Probe, Problem | None, Assignment | None]:
        """The probe as a check of the one shared solver under ``p == value`` (and, for a
        periodic unsat, again without the settling conditions)."""
        assert self.incremental is not None
        fact = [self.symbol == self.pipeline.value(value)]

        def left() -> float | None:
            remaining = clock.remaining()
            return None if remaining is None else max(remaining, 0.001)

        outcome = self.incremental.answer(fact, problem.query.periodic, left)
        self.version = outcome.version
        return Probe(value, outcome.answer, outcome.seconds, outcome.reason), problem, outcome.assignment


def find_bound(query: Query, name: str, lo: Any, hi: Any, tol: Any = None,
               timeout: float | None = None, solver: str = "z3",
               log: Callable[[str], None] | None = None, reuse: bool = False,
               traces: bool = False) -> BoundResult:
    """Bracket the value of ``params.<name>`` in [lo, hi] where the answer flips.

    ``tol`` defaults to (hi - lo) / 100; ``timeout`` bounds each probe (seconds). ``log``
    receives one line per probe as it is answered. With ``traces``, every sat probe's trace is
    read back and validated as it is answered (``Probe.trace``, ``Probe.violations``; measured
    at 0.01-0.14 s a probe, 1-25% of its solve); without, only the bracket's sat end's is
    (``BoundResult.trace``). See the module docstring for what the result claims.
    """
    section, name, integer = _moved_number(query, name)
    lo, hi, tol = search_range(lo, hi, tol)
    if integer and (lo.denominator != 1 or hi.denominator != 1):
        raise CcacError(f"network.{name} is a whole number: --lo and --hi must be whole, got "
                        f"{show(lo)} and {show(hi)}", "--lo/--hi")
    if integer:
        tol = max(tol, Fraction(1))
    backend(solver)  # an unknown name is bad input before anything is built
    timeout = limits.check_seconds(timeout)
    say = log or (lambda line: None)
    prober = _Prober(query, name, solver, timeout, reuse, section)
    for end in (lo, hi):  # a value the section refuses is bad input before anything is solved
        prober.at(end)
    if prober.rebuilt:
        say(rebuild_note(f"{section}.{name}", prober.rebuilt))
    witness: tuple[Problem, Assignment] | None = None  # always the latest sat probe

    def probe(value: Fraction) -> Probe:
        nonlocal witness
        p, problem, assignment = prober.probe(value)
        if p.answer == "sat":
            assert problem is not None   # a decisive probe comes with its problem (_Prober.probe)
            witness = (problem, assignment or {})
            if traces:
                p.trace, p.violations = checked_trace(*witness)
                p.query = problem.query
        say(probe_line(f"{section}.{name}", p))
        return p

    search = bisect(probe, lo, hi, tol, integer)
    result = BoundResult(query, name, lo, hi, tol, search.probes, search.bracket, search.unknown, solver,
                         prober.version, prober.rebuilt, prober.incremental is not None, section=section)
    if search.bracket is not None:
        assert witness is not None  # one end of the bracket is sat, and it was the last sat probe
        check_boundary(result, *witness)
        unsat_end = next(p for p in search.bracket if p.answer == "unsat")
        # Vacuous there: the flip is where the assumptions stop having traces, not the find.
        result.premise, _ = premise_verdict(prober.at(unsat_end.value), solver, timeout)
    return result


def _moved_number(query: Query, name: str) -> tuple[str, str, bool]:
    """Where ``--param NAME`` lives: ("params", name, False) for a [params] number, or
    ("network", name, whole?) for a numeric [network] setting."""
    section, dot, rest = name.partition(".")
    if dot and section == "network":
        numeric = {p.name: p for p in NETWORK_PARAMS if p.kind in ("number", "int")}
        if rest not in numeric:
            raise CcacError(f"network.{rest} is not a numeric [network] setting (numeric: "
                            f"{', '.join(numeric)})", "--param")
        return "network", rest, numeric[rest].kind == "int"
    name = name.removeprefix("params.")
    if name not in query.params:
        known = ", ".join(sorted(query.params)) or "none; add one with --set params.NAME=VALUE"
        raise CcacError(f"unknown parameter {name!r} (params: {known}; or a [network] setting "
                        "as network.NAME)", "--param")
    return "params", name, False


def check_boundary(result: BoundResult, problem: Problem, assignment: Assignment) -> None:
    """Read the sat end's trace back exactly and validate it as :func:`ccac.solving.solve.solve` does,
    against the query with the parameter at that number (``problem.query``)."""
    result.boundary_query = problem.query
    result.trace, result.violations = checked_trace(problem, assignment)
