"""Long traces, window by window: a search whose cost grows with the horizon, not as a power of it.

Every rule of the model and of a CCA at step t reads a bounded past: the ACKs of R steps before,
the tokens of D steps before, the CCA's own state one step before and its declared look-back
(:meth:`ccac.ccas.interface.CCA.lookback`). So a long trace can be found a window at a time:
solve the steps ``a .. a+W-1`` as a short query over ``s .. a+W-1+M``, where the first ``a - s``
steps (the *overlap*, the look-back plus one) are fixed to the values already found, re-based as
a window of a longer run is (the byte curves less their values at step s; the convention of
:func:`ccac.analysis.window.rebase`), and the M steps after it (the model's own reach plus one)
are solved but not kept, so that what is kept has a continuation (the tokens a server holds and
the losses a sender will detect bind the steps after it); then fix the window's steps and go on.
When a window runs far longer than the others, it is solved again with another random seed (a
solver's time is heavy-tailed); when it has no continuation of the steps before it, it is solved
again together with the window before it, the steps of both free, up to a bounded width; beyond
that, or when the seeds are spent, the window before is solved again away from its previous
answer (a bounded number of times) before the search gives up.

The query's ``assume`` and ``find`` are asked on the last window, stated over the whole run
(the fixed steps as their values, the window's as its variables: :func:`whole_run_conditions`,
so they mean exactly what they say). Every other window first asks, within a short time, for
the find on the run cut at its own end (a find "at some step ..." that holds there holds on the
whole run; a find over the last steps then holds over the window's), so the search heads for it
as soon as the steps allow; and an optional ``[query] guide`` (a number over a window's steps) is
pushed as high as a few rounds of "guide >= better" allow on every other window (for example
one flow's share of the link falling).

Sound for sat, and never unsat: the trace found is read back whole and validated end to end
against the whole query (every model, CCA and query rule over all T steps, in exact rational
arithmetic), exactly as every trace is; a window's short query can be looser than the whole run
(its history is free) or stricter (rules that count from a trace's first step count from the
window's), so a window solution the whole trace does not admit is caught there and reported as
unknown, never as an answer. Nothing here proves the absence of a trace: a window without a
continuation, a failed validation or a timeout is ``unknown``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Callable

import z3

from ccac.core.errors import CcacError
from ccac.encode.encoding import Slot, num, terms_in, truth
from ccac.encode.expr import compile_number
from ccac.encode.periodic import lookback, model_reach
from ccac.encode.trace import Trace
from ccac.problems.problem import Problem, declared, query_conditions, symbols_for
from ccac.problems.query import Query
from ccac.solving.solve import Pipeline, Result, solve
from ccac.solving.solvers import Outcome, evaluate
from ccac.solving.backends import solver_version
from ccac.solving.validate import validate

GUIDE_ROUNDS = 4
"""Rounds a window spends pushing the guide up (each asks for a larger value than the last) ..."""
GUIDE_FLOOR = 5.0
"""... each given at least this many seconds."""
WIDEST = 3
"""A window that has no continuation of the steps before it is solved again together with the
window before it (their steps free again), as long as the two span at most this many windows."""
RESEEDS = 2
"""Times a window that ran out of its (capped) time is solved again with another random seed of z3."""
RETRIES = 2
"""Beyond that, times a window is solved again, away from its previous answer, when the next has
no continuation."""
FIND_FACTOR = 2
"""A window first asks for the query's find on the run so far, for this many median windows' time ..."""
FIND_FLOOR = 5.0
"""... and at least this many seconds."""
STUCK_FACTOR = 4
"""A window that may still move the one before it gets at most this many median windows' time."""
STUCK_FLOOR = 20.0
"""... and at least this many seconds."""

Values = dict[str, Any]   # a run's exact values by variable name (its slots' names at absolute steps)


@dataclass
class WindowReport:
    """One window's outcome, for progress lines and the result's reason."""

    index: int
    windows: int         # how many windows the search had then (a window widened joins the one before)
    first: int           # the window's first new step (absolute)
    last: int            # its last step (absolute)
    answer: str
    seconds: float
    guide: Fraction | None = None
    find_held: bool = False  # the query's find held on the run through this window


@dataclass
class Search:
    """A window search of ``query`` (see the module docstring); :meth:`run` answers it."""

    query: Query
    window: int
    solver: str = "z3"
    timeout: float | None = None
    on_window: Callable[[WindowReport], None] = lambda report: None
    reports: list[WindowReport] = field(default_factory=list)

    def __post_init__(self) -> None:
        q = self.query
        if q.periodic:
            raise CcacError("a periodic query is one period solved whole: --window searches ordinary traces",
                            "--window")
        self.overlap = look_back(q)
        self.ahead = model_reach(q) + 1
        if self.window < 1:
            raise CcacError("a window needs at least one step", "--window")

    # ------------------------------------------------------------------ the search
    def run(self) -> Result:
        started = time.monotonic()
        ends = None if self.timeout is None else started + self.timeout
        T = self.query.network.T
        bounds = window_bounds(T, self.window)
        found: list[Values] = []     # the absolute values after each window (cumulative)
        avoid: list[list[Any]] = [[] for _ in bounds]   # per window: earlier answers to stay away from
        retries = [0] * len(bounds)
        k, seeds = 0, 0   # seeds: window k's tries so far with another random seed
        while k < len(bounds):
            left = None if ends is None else ends - time.monotonic()
            if left is not None and left <= 0:
                return self._unknown(f"timeout: the time limit ran out in window {k + 1} of {len(bounds)}", started)
            values = found[k - 1] if k else {}
            can_move = k > 0 and retries[k - 1] < RETRIES
            reseed = self.solver == "z3" and seeds < RESEEDS
            outcome, solved = self._window(k, bounds, values, avoid[k],
                                           self._budget(left, len(bounds) - k, can_move or reseed, seeds), seeds)
            if outcome.answer == "sat":
                assert solved is not None
                found[k:], k, seeds = [solved], k + 1, 0
                continue
            if reseed and _timed_out(outcome):   # the same window, another random seed, twice the time
                seeds += 1
                continue
            seeds = 0
            if outcome.answer == "unsat" and k > 0 and self._widens(bounds, k):   # window k with the one before
                bounds[k - 1:k + 1] = [(bounds[k - 1][0], bounds[k][1])]
                avoid[k - 1:k + 1], retries[k - 1:k + 1] = [[]], [0]
                found = found[:k - 1]
                k -= 1
                continue
            if k == 0 or retries[k - 1] >= RETRIES:
                timed_out = _timed_out(outcome)
                what = ("has no continuation of the steps before it" if outcome.answer == "unsat" else
                        "ran out of its time" if timed_out else f"was not solved ({outcome.reason})")
                return self._unknown(f"{'timeout: ' if timed_out else ''}window {k + 1} of {len(bounds)} (steps "
                                     f"{bounds[k][0]}..{bounds[k][1] - 1}) {what}; no trace was found, which "
                                     f"proves nothing", started)
            retries[k - 1] += 1
            avoid[k - 1].append(self._departure(found[k - 1], bounds, k - 1))
            avoid[k], retries[k] = [], 0   # window k starts afresh on the new steps before it
            found = found[:k - 1]
            k -= 1
        return self._answer(found[-1], started)

    def _widens(self, bounds: list[tuple[int, int]], k: int) -> bool:
        """Whether window k, without a continuation of the steps before it, may be solved again
        together with the window before it: while the two span at most :data:`WIDEST` windows."""
        return bounds[k][1] - bounds[k - 1][0] <= WIDEST * self.window

    def _budget(self, left: float | None, windows: int, can_move: bool, seeds: int) -> float | None:
        """A window's time: its share of what is left (:func:`share`), and while something else
        can still be tried (another random seed, or another answer for the window before), at
        most :data:`STUCK_FACTOR` times the median window so far (at least :data:`STUCK_FLOOR` s),
        doubled for each seed tried: a solver's time on one formula is heavy-tailed, and a window
        far slower than the others is sooner freed by a restart or by other steps before it than
        by more time."""
        limit = share(left, windows)
        if not can_move:
            return limit
        typical = self._median_window()
        cap = max(STUCK_FLOOR, STUCK_FACTOR * typical if typical is not None else 0.0) * 2 ** seeds
        return cap if limit is None else min(limit, cap)

    def _window(self, k: int, bounds: list[tuple[int, int]], values: Values, avoid: list[Any],
                timeout: float | None, seed: int = 0) -> tuple[Outcome, Values | None]:
        """Window k solved with the steps before it fixed: its outcome and, when sat, the run's
        values through its last step. A window before the last asks first, within part of its
        time, for the query's find on the run so far (:meth:`_find_so_far`)."""
        first, end = bounds[k]
        last = k == len(bounds) - 1
        start = max(0, first - self.overlap)
        # solved further than it keeps, so that what it keeps has a continuation: the model's
        # rules after its end read its last steps' promises (tokens held, losses pending)
        reach = min(end + self.ahead, self.query.network.T)
        pipeline = Pipeline(window_query(self.query, start, reach), f"z3#{seed}" if seed else self.solver)
        began = time.monotonic()
        problem = pipeline.build()
        fixed = pins(problem, values, start, first - start)
        if last:
            fixed += whole_run_conditions(self.query, problem, values, start)
        guard = [z3.Or(*[z3.Not(c) for c in earlier]) for earlier in self._moved(avoid, problem, start)]
        find_held = False
        heading = None if last or self.query.find is None else self._find_so_far(problem, values, start, end)
        if heading is not None:
            early = pipeline.answer(self._find_budget(timeout), [*fixed, *guard, *heading])
            find_held = early.answer == "sat"
        outcome = early if find_held else pipeline.answer(timeout, [*fixed, *guard])
        guide_value: Fraction | None = None
        if outcome.answer == "sat" and not last and self.query.guide is not None:
            outcome, guide_value = self._push_guide(pipeline, problem, [*fixed, *guard], outcome, began)
        report = WindowReport(k + 1, len(bounds), first, end - 1, outcome.answer, time.monotonic() - began,
                              guide_value, find_held)
        self.reports.append(report)
        self.on_window(report)
        if outcome.answer != "sat":
            return outcome, None
        return outcome, absolute(problem, outcome.assignment or {}, values, start, end)

    def _find_budget(self, timeout: float | None) -> float:
        """The time a window spends asking for the find first: :data:`FIND_FACTOR` median windows
        so far (at least :data:`FIND_FLOOR` s), within half the window's own."""
        typical = self._median_window(at_least=1)
        budget = max(FIND_FLOOR, FIND_FACTOR * typical) if typical is not None else FIND_FLOOR
        return budget if timeout is None else min(budget, timeout / 2)

    def _median_window(self, at_least: int = 2) -> float | None:
        """The median time of the windows answered so far (None with fewer than ``at_least``)."""
        solved = sorted(r.seconds for r in self.reports if r.answer == "sat")
        return solved[len(solved) // 2] if len(solved) >= at_least else None

    def _find_so_far(self, problem: Problem, values: Values, start: int, end: int) -> list[Any] | None:
        """The query's find stated on the run cut at ``end`` (its T the window's last kept step
        plus one; its assumptions left to the last window), on this window's variables: a
        heading, not a claim. A find of the form "at some step ..." that holds on the run so far
        holds on the whole run, and then the windows after need only continue it; any other find
        is still asked of the whole run by the last window, and the trace is validated whole.
        None where the find cannot be stated on so short a run (it reads steps before its start)."""
        cut = replace(self.query, network=replace(self.query.network, T=end), assume=[])
        try:
            return whole_run_conditions(cut, problem, values, start)
        except CcacError:
            return None

    def _push_guide(self, pipeline: Pipeline, problem: Problem, facts: list[Any], outcome: Outcome,
                    began: float) -> tuple[Outcome, Fraction]:
        """The window's answer with the guide pushed up: up to :data:`GUIDE_ROUNDS` asks for a value
        above the best so far (by a step that doubles on success), each within twice the time the
        window's own answer took (at least :data:`GUIDE_FLOOR` s; the window has answered, so the
        cap on a stuck window's time does not bound them)."""
        assert self.query.guide is not None
        guide = compile_number(self.query.guide, problem.symbols, "query.guide")
        best = Fraction(evaluate(guide, outcome.assignment or {}))
        step = max(abs(best) / 4, Fraction(1, 100))
        round_time = max(GUIDE_FLOOR, 2 * (time.monotonic() - began))
        for _ in range(GUIDE_ROUNDS):
            better = pipeline.answer(round_time, [*facts, guide >= best + step])
            if better.answer != "sat":
                step /= 4
                continue
            outcome, best = better, Fraction(evaluate(guide, better.assignment or {}))
            step *= 2
        return outcome, best

    def _departure(self, values: Values, bounds: list[tuple[int, int]], k: int) -> list[tuple[str, Any]]:
        """Window k's answer at its new steps, as (absolute variable, value) facts to stay away from."""
        first, end = bounds[k]
        return [(name, value) for name, value in values.items() if first <= _step_of(name) < end]

    @staticmethod
    def _moved(avoid: list[Any], problem: Problem, start: int) -> list[list[Any]]:
        """Earlier answers (absolute facts) as conditions on this window's variables: the
        senders' windows at each step, which decide what follows (and live on no byte axis, so
        they read the same in every window)."""
        out = []
        for facts in avoid:
            conditions = []
            for name, value in facts:
                series, flow, step = _parts(name)
                local = Slot(series, flow, step - start, None).name(step - start)
                slot = problem.enc.slots.get(local) if series == "cwnd" else None
                if slot is not None:
                    conditions.append(slot.at(slot.step, problem.ctx) == value)
            if conditions:
                out.append(conditions)
        return out

    # ------------------------------------------------------------------ answers
    def _answer(self, values: Values, started: float) -> Result:
        trace = whole_trace(self.query, values)
        violations = validate(self.query, trace)
        seconds = time.monotonic() - started
        return Result(self.query, "sat", None, trace, violations, self.solver, solver_version(self.solver),
                      0.0, seconds)

    def _unknown(self, reason: str, started: float) -> Result:
        return Result(self.query, "unknown", reason, None, None, self.solver, solver_version(self.solver),
                      0.0, time.monotonic() - started)


def _timed_out(outcome: Outcome) -> bool:
    return outcome.answer == "unknown" and str(outcome.reason).startswith(("timeout", "canceled"))


def search_windows(query: Query, window: int | None = None, solver: str = "z3", timeout: float | None = None,
                   on_window: Callable[[WindowReport], None] | None = None) -> Result:
    """``query`` answered window by window (``window`` new steps each; None: the query's own
    ``window``): sat with a trace validated over the whole run, or unknown; never unsat.
    ``on_window`` hears of each window as it is decided."""
    size = window if window is not None else query.window
    if size is None:
        raise CcacError("a window search needs a window size: --window W, or [query] window", "--window")
    search = Search(query, size, solver, timeout, on_window or (lambda report: None))
    return search.run()


def answer(query: Query, solver: str = "z3", timeout: float | None = None, encoding: str = "pairs",
           nonlinear: str | None = None) -> Result:
    """``query`` answered as its file asks: window by window when it names a ``window``
    (:func:`search_windows`), else one solve of the whole trace (:func:`ccac.solving.solve.solve`)."""
    if query.window is not None:
        return search_windows(query, None, solver, timeout)
    return solve(query, solver, timeout, encoding=encoding, nonlinear=nonlinear)


def window_line(report: WindowReport) -> str:
    """One window's progress, as ``ccac query --window`` prints it."""
    guide = f", guide {float(report.guide):.4g}" if report.guide is not None else ""
    return (f"window {report.index}/{report.windows} (steps {report.first}..{report.last}): {report.answer} "
            f"in {report.seconds:.1f} s{guide}{', the find holds' if report.find_held else ''}")


def share(left: float | None, windows: int) -> float | None:
    """A window's time: twice its even share of what is left (a hard window may take more than
    an easy one), so that one window cannot spend the whole limit while others wait."""
    return None if left is None else (left if windows <= 1 else 2 * left / windows)


def look_back(query: Query) -> int:
    """How many steps before a window's first new step its short query must see fixed: the
    longest reach of any rule (:func:`ccac.encode.periodic.lookback`), plus one."""
    return lookback(query) + 1


def window_bounds(T: int, window: int) -> list[tuple[int, int]]:
    """The windows' new steps, [first, end) each, covering 0 .. T-1 (the last may be shorter)."""
    return [(a, min(a + window, T)) for a in range(0, T, window)]


def window_query(query: Query, start: int, end: int) -> Query:
    """The short query over steps ``start .. end-1`` of ``query``'s run: T = end - start; a flow
    whose connection opened by ``start`` may start in any state (its opening is in the fixed
    steps); no assumption and no find (the last window states the whole run's,
    :func:`whole_run_conditions`)."""
    net = query.network
    paths = []
    for n in range(net.flows):
        path = net.path(n)
        opens = path.opens
        moved = None if opens is None or opens <= start else opens - start
        paths.append(replace(path, opens=moved, start="cold" if moved is not None else "any"))
    network = replace(net, T=end - start, paths=tuple(paths),
                      start="cold" if any(p.opens is not None for p in paths) else "any")
    return replace(query, network=network, assume=[], find=None, expect=None)


def whole_run_conditions(query: Query, problem: Problem, values: Values, start: int) -> list[Any]:
    """The query's assumptions and find over the whole run, stated on the last window's variables:
    compiled over the whole run's names (T the run's), each step before ``start`` its fixed value
    and each later one the window's variable moved back to the run's axes. So they mean exactly
    what the query says, whatever the window's length."""
    run = z3.Context()
    v, states, enc = declared(query, run)
    with terms_in(run):
        conditions = [c for _, c in query_conditions(query, symbols_for(query, v, states, lambda x: x))]
    anchors = _anchors(query, values, start)
    pairs = []
    for name, slot in enc.slots.items():
        whole = slot.at(slot.step, run).translate(problem.ctx)
        if slot.step < start:
            if name not in values:
                raise CcacError(f"the window search has no value of {name} for the query's conditions")
            pairs.append((whole, _constant(whole, values[name])))
            continue
        local = slot.at(slot.step - start, problem.ctx)
        pairs.append((whole, local + anchors[slot.axis, slot.flow] if slot.axis is not None else local))
    for name in ("alpha", "dupacks", "buffer"):
        term = getattr(v, name)
        if isinstance(term, z3.ExprRef):
            pairs.append((term.translate(problem.ctx), getattr(problem.vars, name)))
    stated = [truth(c, run) if isinstance(c, bool) else c for c in conditions]
    return [z3.substitute(c.translate(problem.ctx), *pairs) for c in stated]


def _constant(term: Any, value: Any) -> Any:
    """``value`` as an exact constant of ``term``'s sort, in its context (a Boolean, an integer
    state such as a phase counter, or a rational)."""
    if isinstance(value, bool):
        return truth(value, term.ctx)
    if term.sort() == z3.IntSort(term.ctx):
        return z3.IntVal(int(value), term.ctx)
    return num(value, term.ctx)


def pins(problem: Problem, values: Values, start: int, fixed: int) -> list[Any]:
    """The window's first ``fixed`` steps equal to the run's values at ``start ..``, re-based."""
    anchors = _anchors(problem.query, values, start)
    out: list[Any] = []
    for name, slot in problem.enc.slots.items():
        if slot.step >= fixed:
            continue
        value = values.get(slot.name(start + slot.step))
        if value is None:
            continue
        if slot.axis is not None:
            value = value - anchors[slot.axis, slot.flow]
        term = slot.at(slot.step, problem.ctx)
        out.append(term == _constant(term, value))
    for name in ("alpha", "dupacks", "buffer"):
        term = getattr(problem.vars, name)
        if isinstance(term, z3.ExprRef) and name in values:
            out.append(term == values[name])
    return out


def absolute(problem: Problem, assignment: dict[str, Any], before: Values, start: int, end: int) -> Values:
    """The run's values through step ``end - 1``: those before, and the window's own new steps
    moved back from the window's axes to the run's (re-based at ``start``)."""
    out = dict(before)
    anchors = _anchors(problem.query, before, start)
    memo: dict[int, Any] = {}
    for slot in problem.enc.slots.values():
        name = slot.name(start + slot.step)
        if name in before or start + slot.step >= end:
            continue
        value = evaluate(slot.at(slot.step, problem.ctx), assignment, memo)
        out[name] = value + anchors[slot.axis, slot.flow] if slot.axis is not None else value
    for name in ("alpha", "dupacks", "buffer"):
        term = getattr(problem.vars, name)
        if isinstance(term, z3.ExprRef) and name not in out:
            out[name] = evaluate(term, assignment, memo)
    return out


def _anchors(query: Query, values: Values, start: int) -> dict[tuple[str, int | None], Any]:
    """Each byte axis's value at step ``start`` of the run (what re-basing subtracts)."""
    net = query.network
    anchors: dict[tuple[str, int | None], Any] = {}
    served = Fraction(0)
    for n in range(net.flows):
        S, L = values.get(f"S_{n}_{start}", 0), values.get(f"L_{n}_{start}", 0)
        anchors["S", n], anchors["L", n], anchors["A", n] = S, L, S + L
        served += S
    anchors["W", None] = net.C * start - served
    return anchors


def whole_trace(query: Query, values: Values) -> Trace:
    """The run's values as a trace of the whole query (its variables declared, not constrained)."""
    v, states, _ = declared(query)
    memo: dict[int, Any] = {}
    symbols = symbols_for(query, v, states, lambda term: evaluate(term, values, memo))
    return Trace(query.network, [f.cca.name for f in query.flows], symbols)


def _parts(name: str) -> tuple[str, int | None, int]:
    """(series, flow, step) of a per-step variable's name (the inverse of :meth:`Slot.name`)."""
    head, _, step = name.rpartition("_")
    series, _, flow = head.rpartition("_")
    if series and flow.isdigit():
        return series, int(flow), int(step)
    return head, None, int(step)


def _step_of(name: str) -> int:
    tail = name.rpartition("_")[2]
    return int(tail) if tail.isdigit() else -1
