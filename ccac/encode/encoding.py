"""A growing set of labelled linear SMT constraints, built with the z3 Python API.

Every constraint carries a group label ("model.service", "cca.aimd", "query.find", ...), which
the SMT-LIB export writes as comments and which names the culprit when something is unsat for a
reason worth explaining (e.g. vacuous assumptions).

Construction path: formulas are built directly as z3 terms. ``ccac.commands.bench`` measures building
against solving; other solvers receive the same formula through SMT-LIB 2 (see
``ccac.solving.backends``), so there is one construction path for every solver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Union

import z3

from ccac.core import deadline
from ccac.encode.terms import is_variable, subterms
Term = Union[z3.ArithRef, Fraction, int]
Cond = Union[z3.BoolRef, bool]


_BUILDING: ContextVar[z3.Context | None] = ContextVar("z3 context of the build under way", default=None)


def term_context() -> z3.Context:
    """The z3 context new terms are made in: the one of the build under way
    (:func:`terms_in`), else z3's default context.

    Every solve owns a ``z3.Context`` of its own (:class:`ccac.solving.solve.Pipeline`): z3's
    search follows the internal ids of terms, which depend on every term made before in the
    same context, so one context per solve makes an answer's cost depend only on its query.
    Terms made from variables take their variables' context; only constants and variables made
    from Python values ask this function for theirs."""
    return _BUILDING.get() or z3.main_ctx()


def build_context() -> z3.Context | None:
    """The z3 context of the build under way (:func:`terms_in`), None outside one."""
    return _BUILDING.get()


@contextmanager
def terms_in(ctx: z3.Context | None) -> Iterator[None]:
    """Make the terms of what runs inside in ``ctx`` (for this thread), then restore the one
    before; None leaves the context as it is."""
    if ctx is None:
        yield
        return
    token = _BUILDING.set(ctx)
    try:
        yield
    finally:
        _BUILDING.reset(token)


def num(value: Fraction | int, ctx: z3.Context | None = None) -> z3.RatNumRef:
    """An exact z3 rational constant (in ``ctx``, else in :func:`term_context`)."""
    value = Fraction(value)
    return z3.RealVal(f"{value.numerator}/{value.denominator}", ctx or term_context())


def truth(value: bool, ctx: z3.Context | None = None) -> z3.BoolRef:
    """A z3 Boolean constant (in ``ctx``, else in :func:`term_context`)."""
    return z3.BoolVal(value, ctx or term_context())


def all_of(*conditions: Cond) -> z3.BoolRef:
    """``z3.And`` of ``conditions`` made in :func:`term_context`: also when there are none (true)
    or every one is a Python bool, where ``z3.And`` alone would choose z3's default context."""
    return z3.And(*conditions, term_context())


def any_of(*conditions: Cond) -> z3.BoolRef:
    """``z3.Or`` of ``conditions`` made in :func:`term_context` (none: false); see :func:`all_of`."""
    return z3.Or(*conditions, term_context())


def negated(condition: Cond) -> z3.BoolRef:
    """``z3.Not(condition)`` made in :func:`term_context` (also for a Python bool)."""
    return z3.Not(condition, term_context())


def whole(value: int, ctx: z3.Context | None = None) -> z3.IntNumRef:
    """A z3 integer constant (in ``ctx``, else in :func:`term_context`)."""
    return z3.IntVal(value, ctx or term_context())


def is_symbolic(value: object) -> bool:
    return isinstance(value, z3.ExprRef)


def minimum(a: Term, b: Term) -> Term:
    if not is_symbolic(a) and not is_symbolic(b):
        return min(a, b)
    return z3.If(as_real(a) <= as_real(b), as_real(a), as_real(b))


def maximum(a: Term, b: Term) -> Term:
    if not is_symbolic(a) and not is_symbolic(b):
        return max(a, b)
    return z3.If(as_real(a) >= as_real(b), as_real(a), as_real(b))


def first_case(cases: Iterable[tuple[Cond, Any]], otherwise: Any,
               term: Callable[[Any], Any] = lambda x: x) -> Any:
    """The value of the first (condition, value) case whose condition holds, else ``otherwise``:
    a chain of ``If``s, each value made a term by ``term`` (e.g. ``z3.IntVal``) as the chain is
    built from the last case up. Conditions that are plain True or False are decided here."""
    cases = list(cases)
    result = term(otherwise)
    for cond, value in reversed(cases):
        if cond is True:
            result = term(value)
        elif cond is not False:
            result = z3.If(cond, term(value), result)
    return result


def as_real(value: Term, ctx: z3.Context | None = None) -> z3.ArithRef:
    """A z3 real term for a number (in ``ctx``, else in :func:`term_context`) or a term."""
    return value if isinstance(value, z3.ArithRef) else num(value, ctx)


AXES = ("A", "S", "L", "W")
STEP_SCAN = 400   # subterms of the latest constraint searched for its step (progress and timeouts)


@dataclass(frozen=True)
class Slot:
    """Where a per-step variable sits in a run: its series, flow, step, and byte axis.

    ``axis`` says how the variable moves when a window is cut out of a longer run and its byte
    curves are re-based to start at 0 (see ``ccac.analysis.window``): ``"S"`` values live on the flow's
    service (ACK) axis and shift with ``S_f[n]``, ``"L"`` on its loss axis, ``"A"`` on its
    arrival axis (which shifts by both), ``"W"`` is the wasted-token curve; ``None`` means the
    value is not a position on a byte axis (a window, a rate, a flag, a delay) and does not
    shift.
    """

    series: str
    flow: int | None
    step: int
    axis: str | None
    kind: str = "real"  # "real", "int" or "bool"

    def name(self, step: int) -> str:
        """The name of this series' variable (same flow) at ``step``."""
        return f"{self.series}_{step}" if self.flow is None else f"{self.series}_{self.flow}_{step}"

    def at(self, step: int, ctx: z3.Context) -> z3.ExprRef:
        """The variable of this series (same flow) at another step, in any encoding whose
        variables live in ``ctx``."""
        return {"real": z3.Real, "int": z3.Int, "bool": z3.Bool}[self.kind](self.name(step), ctx)


@dataclass(frozen=True)
class Timeline:
    """Which steps of the encoded timeline are the trace and which are wrapped history.

    An ordinary query encodes the trace's steps 0 .. T-1 directly (``history = 0``). A periodic
    query encodes ``history`` more steps before them: the trace repeats with period
    ``period = T - 1`` (its last step is the next period's first), so a step before the trace is
    the trace's own step one or more periods later, every cumulative curve shifted down by the
    growth of those periods. Rules that look back in time (loss detection, delay readings,
    filters, monitor intervals) then read what a run that has always repeated the trace would
    have shown them, instead of a free history. Timeline step ``e`` is trace step ``e - history``.
    """

    history: int = 0
    period: int = 0

    def wrap(self, e: int) -> tuple[int, int]:
        """For timeline step ``e`` before the trace: (trace step, periods before it)."""
        tau = e - self.history
        periods = -(tau // self.period)  # ceil(-tau / period) for tau < 0
        return tau + periods * self.period, periods


class Encoding:
    """Named variables plus labelled constraints; the input to every solver backend."""

    def __init__(self, timeline: Timeline = Timeline(), style: str = "pairs",
                 ctx: z3.Context | None = None) -> None:
        self.ctx = ctx or term_context()  # every variable of the encoding lives in this z3 context
        self.constraints: list[tuple[str, z3.BoolRef]] = []
        self.style = style  # how frontiers are encoded: "pairs" or "index" (ccac.encode.frontier)
        self._names: set[str] = set()
        self.slots: dict[str, Slot] = {}
        # Integer counts with what each counts and in what unit (see whole_count).
        self.counts: list[tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef]] = []
        self.timeline = timeline
        self._adds = 0  # calls of add, for looking at the clock now and then

    def step(self, kind: str, series: str, e: int, flow: int | None = None,
             axis: str | None = None) -> z3.ExprRef:
        """The value at timeline step ``e`` of a per-step series (of flow ``flow``, if per flow):
        a fresh variable named by its trace step, or before the trace of a periodic query the
        wrapped term (:meth:`wrapped`)."""
        if axis is not None and axis not in AXES:
            raise ValueError(f"unknown axis {axis!r}")
        t = e - self.timeline.history
        slot = Slot(series, flow, t, axis, kind)
        if t < 0:
            return self.wrapped(slot)
        var = slot.at(t, self.ctx)
        self.fresh_name(var.decl().name())
        self.slots[var.decl().name()] = slot
        return var

    def wrapped(self, slot: Slot) -> z3.ExprRef:
        """A step before the trace of a periodic query, as the same step ``periods`` periods
        later: the same value for a value that is not a byte position, and for a cumulative
        curve (one with an axis) that value minus the curve's growth over those periods."""
        tl = self.timeline
        tau, periods = tl.wrap(slot.step + tl.history)
        later = slot.at(tau, self.ctx)
        if slot.axis is None:
            return later
        growth = slot.at(tl.period, self.ctx) - slot.at(0, self.ctx)
        return later - periods * growth

    def latest_step(self) -> int | None:
        """How far the build has got: the largest step among the variables of the latest
        constraint (the first :data:`STEP_SCAN` of its subterms), None before any."""
        if not self.constraints:
            return None
        steps = [self.slots[term.decl().name()].step for term in subterms([self.constraints[-1][1]], STEP_SCAN)
                 if is_variable(term) and term.decl().name() in self.slots]
        return max(steps, default=None)

    def real(self, name: str) -> z3.ArithRef:
        return z3.Real(self.fresh_name(name), self.ctx)

    def boolean(self, name: str) -> z3.BoolRef:
        return z3.Bool(self.fresh_name(name), self.ctx)

    def integer(self, name: str) -> z3.ArithRef:
        return z3.Int(self.fresh_name(name), self.ctx)

    def whole_count(self, name: str, value: z3.ArithRef, unit: z3.ArithRef) -> z3.BoolRef:
        """``value == unit * n`` for a fresh integer ``n`` named ``name``: value is a whole number
        of units (z3 solves this faster than ``IsInt(value / unit)``). The count is recorded with
        what it counts, so a window of a longer run (:mod:`ccac.analysis.window`) can give it its
        value there: the window's value over the unit, a whole number in the longer run too."""
        n = self.integer(name)
        self.counts.append((n, value, unit))
        return value == unit * z3.ToReal(n)

    def fresh_name(self, name: str) -> str:
        """``name``, registered: declaring the same name twice is an error."""
        if name in self._names:
            raise ValueError(f"variable {name} declared twice")
        self._names.add(name)
        return name

    def add(self, group: str, *constraints: Cond | Iterable[Cond]) -> None:
        """Add constraints under ``group``; Python ``True`` is dropped, ``False`` kept as false.

        Every :data:`ccac.core.deadline.CHECK_EVERY` calls, the current time limit (if any) is
        checked: past its deadline this raises :class:`ccac.core.deadline.TimeLimit`."""
        for c in constraints:
            if isinstance(c, (bool, z3.BoolRef)):
                self._add_one(group, c)
            else:
                for item in c:
                    self._add_one(group, item)
        self._adds += 1
        if not self._adds % deadline.CHECK_EVERY:
            deadline.checkpoint(self, group)

    def _add_one(self, group: str, c: Cond) -> None:
        if c is True:
            return
        self.constraints.append((group, truth(False, self.ctx) if c is False else c))

    def groups(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for group, _ in self.constraints:
            counts[group] = counts.get(group, 0) + 1
        return counts

    def formulas(self, skip: Iterable[str] = ()) -> list[z3.BoolRef]:
        skipped = tuple(skip)
        return [c for g, c in self.constraints if not (skipped and g.startswith(skipped))]
