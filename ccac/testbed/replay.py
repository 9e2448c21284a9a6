"""Replay a counterexample with the algorithms themselves on the packet path it describes.

A sat trace shows what the *encoding* of a CCA allows on one path. :func:`replay` builds that
path for packets (:class:`ccac.testbed.packet_path.PacketPath`), runs each flow's concrete sender on it
(:meth:`ccac.ccas.interface.CCA.concrete`; a flow whose CCA has no algorithm, ``any``, replays the
trace's own decisions), and reads the packet run with the query's own vocabulary, so the
query's ``find`` condition (and its assumptions) can be evaluated on it exactly.

Each flow's sender starts at its step R with the state the trace had at step R - 1 (its
window, rate and declared state variables); before that the flow sends what the trace sent.
A periodic trace claims a run that repeats forever, so it is replayed over ``periods``
repetitions and its conditions are read on the last one (re-based, as a window of a longer
run: :mod:`ccac.analysis.window`). Its first period is a warm-up: the senders see their feedback and
decide, but the trace's windows and rates apply (and the senders adopt them), so that when
their own decisions take over they have the RTT samples, filters and clocks of a run already
in the trace's steady state, which the trace's first steps leave to the unknown past.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccac.core.errors import CcacError
from ccac.encode.expr import Series, Symbols, compile_condition
from ccac.testbed.packet_path import FlowRun, PacketPath, PacketRun, TraceFlow, first_decision, run_packets
from ccac.core.params import rounded_text
from ccac.problems.query import Query, parse_resolved
from ccac.senders.interface import ConcreteSender, Scripted, SenderStart
from ccac.encode.trace import Trace
from ccac.solving.validate import unrolled

MAX_PERIODS = 20


@dataclass
class Condition:
    """A query condition read on the concrete run: True, False, or None with the reason it
    cannot be read there (it names something the concrete run does not have)."""

    text: str
    holds: bool | None
    note: str = ""


@dataclass
class Reading:
    """A concrete run of a trace's path, read with the query's own vocabulary."""

    query: Query
    trace: Trace             # the abstract trace (a periodic one repeated ``periods`` times)
    concrete: Trace          # the concrete run, as a trace with the same names
    senders: list[str]       # per flow: which sender replayed it
    find: Condition | None
    assume: list[Condition]
    window: tuple[int, int]  # the steps the conditions were read on (first, last)
    notes: list[str]         # where and why the concrete run departs from the trace

    @property
    def reproduced(self) -> bool | None:
        """Whether the finding holds on the concrete run (None: no find, or not readable)."""
        return None if self.find is None else self.find.holds


@dataclass
class Replay(Reading):
    """The packet run of :func:`replay`."""

    run: PacketRun


def load_result(path: str | Path) -> tuple[Query, Trace]:
    """The query and the sat trace of a result file (``ccac query ... --json FILE``)."""
    where = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise CcacError(f"cannot read the result file: {e.strerror}", where)
    except json.JSONDecodeError as e:
        raise CcacError(f"not JSON (line {e.lineno}): {e.msg}", where)
    if not isinstance(data, dict) or "query" not in data or "answer" not in data:
        raise CcacError("not a ccac result (write one with `ccac query ... --json FILE`)", where)
    if data.get("trace") is None:
        raise CcacError(f"the result has no trace to replay (its answer is {data['answer']})", where)
    query = parse_resolved(data["query"], where)
    try:
        trace = Trace.from_json(data["trace"], query.network, [f.cca.name for f in query.flows])
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        raise CcacError(f"the trace is malformed ({e!r})", where)
    if trace.flows != query.network.flows or trace.T < 2:
        raise CcacError("the trace does not match its query (flows or steps)", where)
    return query, trace


def replay(query: Query, trace: Trace, packet: Fraction | None = None, periods: int = 3,
           warmup: int | None = None, fixed: bool = False) -> Replay:
    """Run the concrete senders over the packet path of ``trace`` (see the module doc).
    ``warmup``: steps during which the senders learn but the trace's decisions apply (default:
    one period of a periodic trace, none otherwise). ``fixed``: serve the trace's delivery
    schedule (what ``ccac export`` gives Mahimahi) instead of its token bucket."""
    if not 1 <= periods <= MAX_PERIODS:
        raise CcacError(f"periods must be 1 .. {MAX_PERIODS}, got {periods}", "--periods")
    base = trace
    if trace.periodic:
        trace = replace(unrolled(query, trace, periods), periodic=False)
    if warmup is None:
        warmup = base.T - 1 if base.periodic and periods > 1 else 0
    if not 0 <= warmup < trace.T:
        raise CcacError(f"the warm-up must be 0 .. {trace.T - 1} steps, got {warmup}", "--warmup")
    path = PacketPath.from_trace(trace, packet, fixed)
    senders, names = [], []
    for n in range(trace.flows):
        sender, name = _sender(query, trace, n)
        senders.append(sender)
        names.append(name)
    run = run_packets(path, senders, [TraceFlow.of(trace, n, warmup) for n in range(trace.flows)])
    concrete = run_as_trace(query, trace, run.flows, run.tokens)
    find, assume, window = read_conditions(query, base, concrete, periods)
    return Replay(query, trace, concrete, names, find, assume, window, departures(trace, concrete, path.packet),
                  run)


def read_conditions(query: Query, base: Trace, concrete: Trace, periods: int
                    ) -> tuple[Condition | None, list[Condition], tuple[int, int]]:
    """The query's find and assumptions read on a concrete run of ``base``'s path, and the
    steps they were read on: all of them, or for a periodic trace (run ``periods`` times) the
    last period, re-based as a trace of its own."""
    first = (periods - 1) * (base.T - 1) if base.periodic else 0
    window = _window(query, concrete, first, base.T) if base.periodic else concrete
    find = _read(query.find, window, query.definitions) if query.find is not None else None
    assume = [_read(text, window, query.definitions) for text in query.assume]
    return find, assume, (first, first + base.T - 1)


def departures(trace: Trace, concrete: Trace, packet: Fraction, who: str = "the concrete sender") -> list[str]:
    """Why a packet run can differ from its trace: windows below one packet (a packet sender
    sends at least one packet when nothing is in flight), steps that send or lose a fraction
    of a packet (packets come whole), and the first step each flow's concrete sender (``who``)
    decides differently from the trace's (for a cold flow, from its start state on)."""
    notes = []
    for n in range(trace.flows):
        cwnd = trace.flow("cwnd", n)
        small = [t for t, c in enumerate(cwnd) if c < packet]
        if small:
            notes.append(f"flow {n}: the trace's window is below one packet "
                         f"({rounded_text(min(cwnd))} < {rounded_text(packet)} bytes) at {len(small)} step(s) "
                         f"from step {small[0]}; a packet sender cannot keep so little in flight")
        for name, what in (("A_f", "sends"), ("L_f", "loses")):
            curve = trace.recorded(name, n)
            partial = [t for t in range(1, trace.T) if (curve[t] - curve[t - 1]) % packet]
            if partial:
                notes.append(f"flow {n}: the trace {what} a fraction of a packet at {len(partial)} step(s) "
                             f"from step {partial[0]}")
        mine, theirs = concrete.flow("cwnd", n), cwnd
        decided = max((trace.network.path(n).opens or 1) - 1, 0)  # a cold flow's window is free before its start
        differ = next((t for t in range(decided, trace.T) if mine[t] != theirs[t]), None)
        if differ is not None:
            notes.append(f"flow {n}: {who}'s window first differs from the trace's at step "
                         f"{differ} ({rounded_text(mine[differ])} vs {rounded_text(theirs[differ])} bytes)")
    return notes


def _sender(query: Query, trace: Trace, n: int) -> tuple[ConcreteSender, str]:
    """Flow n's concrete sender, started from the trace's values the step before its first
    decision (R - 1, or for a cold flow the step before its opening: its CCA's start state)."""
    flow, path = query.flows[n], trace.network.path(n)
    last = first_decision(trace, n) - 1
    values: dict[str, Any] = {}
    for name in ("A_f", "S_f", "L_f", "Ld_f", "cwnd", "rate", *(sv.name for sv in flow.cca.state)):
        row = trace.flow(name, n)
        if row is not None:
            values[name] = row[last]
    start = SenderStart(path.R, trace.network.D + path.D, trace.network.C, Fraction(trace.constant("alpha")),
                        flow.params, values, [])
    sender = flow.cca.concrete(start)
    if sender is not None:
        return sender, f"concrete {flow.cca.name}"
    return (Scripted(trace.flow("cwnd", n), trace.flow("rate", n)),
            f"{flow.cca.name}: no algorithm to run; the trace's own windows and rates, replayed")


def run_as_trace(query: Query, trace: Trace, flows: list[FlowRun], tokens: list[Fraction],
                 who: str = "the concrete sender") -> Trace:
    """A concrete run of ``trace``'s path in the query's vocabulary: its flows' curves, and
    its server's token line (C*t - W: its wasted tokens are its own server's). A CCA state
    variable the flow's sender (``who``) does not report cannot be read on it."""
    N, T = trace.flows, trace.T
    sym = Symbols()
    sym.constants.update(trace.symbols.constants)
    sym.constants["T"] = T
    sym.unavailable.update(trace.symbols.unavailable)

    def per_flow(name: str, rows: list[list[Any] | None]) -> None:
        missing = {n: f"flow {n} has no {name}" for n, r in enumerate(rows) if r is None}
        sym.series[name] = Series(name, rows, 2, missing)

    per_flow("A_f", [f.A for f in flows])
    per_flow("S_f", [f.S for f in flows])
    per_flow("L_f", [f.L for f in flows])
    per_flow("Ld_f", [f.Ld for f in flows])
    per_flow("cwnd", [f.cwnd for f in flows])
    per_flow("rate", [f.rate if all(r is not None for r in f.rate) else None for f in flows])
    per_flow("timeout", [f.timeout for f in flows])
    if "So_f" in trace.symbols.series:
        per_flow("So_f", [f.So for f in flows])
    if "Lnc_f" in trace.symbols.series:
        per_flow("Lnc_f", [f.Lnc for f in flows])
    total = lambda rows: [sum((r[t] for r in rows), Fraction(0)) for t in range(T)]  # noqa: E731
    sym.series["A"] = Series("A", total([f.A for f in flows]), 1)
    sym.series["S"] = Series("S", total([f.S for f in flows]), 1)
    sym.series["L"] = Series("L", total([f.L for f in flows]), 1)
    sym.series["W"] = Series("W", [trace.network.C * t - tokens[t] for t in range(T)], 1)
    for n, flow in enumerate(query.flows):
        R = trace.network.path(n).R
        for sv in flow.cca.state:
            series = sym.series.setdefault(sv.name, Series(sv.name, [None] * N, 2, {}))
            assert series.missing is not None   # every per-flow series here is made with one
            recorded = trace.flow(sv.name, n)
            reported = [s.get(sv.name) for s in flows[n].state[R:]]
            if recorded is None or any(v is None for v in reported):
                series.missing[n] = f"{who} of flow {n} does not report {sv.name}"
                continue
            series.values[n] = list(recorded[:R]) + reported
    for name, series in sym.series.items():
        if series.dims == 2:
            assert series.missing is not None   # every per-flow series here is made with one
            for n, row in enumerate(series.values):
                if row is None and n not in series.missing:
                    series.missing[n] = f"flow {n} has no {name}"
    return Trace(trace.network, trace.ccas, sym)


def _window(query: Query, trace: Trace, first: int, T: int) -> Trace:
    """Steps first .. first+T-1 of ``trace`` as a trace of their own: byte curves re-based so
    each flow's service and loss start at 0 (arrival-axis values move with both), and the
    token line keeps its distance from the service curve (as :mod:`ccac.analysis.window` re-bases)."""
    axes = {"S_f": "S", "So_f": "S", "L_f": "L", "Ld_f": "L", "Lnc_f": "L", "A_f": "A"}
    for flow in query.flows:
        axes.update({sv.name: sv.axis for sv in flow.cca.state if sv.axis})
    anchor = {}
    for n in range(trace.flows):
        s, lost = trace.flow("S_f", n)[first], trace.flow("L_f", n)[first]
        anchor["S", n], anchor["L", n], anchor["A", n] = s, lost, s + lost
    sym = Symbols()
    sym.constants.update(trace.symbols.constants)
    sym.constants["T"] = T
    sym.unavailable.update(trace.symbols.unavailable)
    for name, series in trace.symbols.series.items():
        if series.dims == 2:
            rows = [None if row is None else
                    [x - anchor[axes[name], n] if name in axes else x for x in row[first:first + T]]
                    for n, row in enumerate(series.values)]
            sym.series[name] = Series(name, rows, 2, series.missing)
    for name, axis in (("A", "A"), ("S", "S"), ("L", "L")):
        values = trace.total(name)[first:first + T]
        shift = sum((anchor[axis, n] for n in range(trace.flows)), Fraction(0))
        sym.series[name] = Series(name, [x - shift for x in values], 1)
    served = trace.total("S")[first]
    W = trace.total("W")
    sym.series["W"] = Series("W", [W[first + t] - (trace.network.C * first - served) for t in range(T)], 1)
    return Trace(replace(trace.network, T=T), trace.ccas, sym)


def _read(text: str, trace: Trace, definitions: dict[str, str]) -> Condition:
    symbols = trace.symbols.with_definitions(definitions)
    try:
        return Condition(text, compile_condition(text, symbols, "query") is True)
    except CcacError as e:
        return Condition(text, None, str(e))
