"""What ``ccac replay`` (and ``ccac query --replay``) print: a trace beside a concrete run of
it (the packet run of the senders, or ns-3's own TCP), their summary readings, whether the
query's conditions hold on the run, and both runs step by step. The testbed room is above this
one, so a replay is read through :class:`ReadingView`."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Protocol, Sequence

from ccac.core.params import rounded_text
from ccac.encode.trace import Trace
from ccac.problems.query import Query


class ConditionView(Protocol):
    """A query condition read on a concrete run (:class:`ccac.testbed.replay.Condition`)."""

    @property
    def text(self) -> str: ...
    @property
    def holds(self) -> bool | None: ...  # None: it cannot be read there
    @property
    def note(self) -> str: ...


class ReadingView(Protocol):
    """A trace beside a concrete run of it (:class:`ccac.testbed.replay.Reading`)."""

    @property
    def query(self) -> Query: ...
    @property
    def trace(self) -> Trace: ...
    @property
    def concrete(self) -> Trace: ...
    @property
    def senders(self) -> Sequence[str]: ...
    @property
    def find(self) -> ConditionView | None: ...
    @property
    def assume(self) -> Sequence[ConditionView]: ...
    @property
    def window(self) -> tuple[int, int]: ...
    @property
    def notes(self) -> Sequence[str]: ...
    @property
    def reproduced(self) -> bool | None: ...


def readings(trace: Trace, first: int, last: int) -> dict[str, Fraction]:
    """Utilization, bytes lost and the largest queueing delay over steps first .. last."""
    S, L = trace.total("S"), trace.total("L")
    steps = last - first
    delays = [trace.delay_range(t)[0] for t in range(first, last + 1)]
    return {"utilization": (S[last] - S[first]) / (trace.network.C * steps) if steps else Fraction(0),
            "lost": L[last] - L[first], "delay": Fraction(max(delays))}


def server_name(fixed: bool) -> str:
    """What serves a replay's bottleneck: the trace's fixed delivery schedule or its token bucket."""
    return "the trace's delivery schedule" if fixed else "the trace's token bucket"


def summary(result: ReadingView, packet: Fraction, scheduled: bool) -> str:
    """The packet run's heading (packets of ``packet`` bytes, served by the trace's schedule or
    its token bucket), then the comparison."""
    lines = [f"replay: {result.query.name}, {result.trace.T} steps, packets of {_num(packet)} bytes "
             f"({float(packet / result.trace.network.C):.3g} of a step's service), served by {server_name(scheduled)}"]
    return "\n".join(lines + comparison(result, "the packet run", "the concrete senders", "replay"))


def ns3_summary(result: ReadingView, mapping: Sequence[str], offered: Fraction | None) -> str:
    """The ns-3 run's heading (``mapping``: how the trace became ns-3's; ``offered``: the
    utilization a fixed schedule allows, None for the token bucket), then the comparison."""
    first, last = result.window
    lines = [f"replay in ns-3: {result.query.name}, {result.trace.T} steps, ns-3's own TCP on "
             f"{server_name(offered is not None)}", *mapping]
    if offered is not None:
        lines.append(f"the schedule allows at most {float(offered):.1%} utilization in steps {first}..{last}")
    return "\n".join(lines + comparison(result, "the ns-3 run", "ns-3's TCP", "ns-3"))


def comparison(result: ReadingView, run: str, who: str, column: str) -> list[str]:
    """The trace beside a concrete run (``run``, its senders ``who``, its column ``column``):
    the summary readings over the window read, and the assumptions and find on the run."""
    first, last = result.window
    lines = []
    if result.trace.T != last - first + 1:
        lines.append(f"periodic trace repeated {(result.trace.T - 1) // (last - first)} times; "
                     f"conditions read on steps {first}..{last}")
    for n, name in enumerate(result.senders):
        lines.append(f"flow {n}: {name}")
    ours, theirs = readings(result.trace, first, last), readings(result.concrete, first, last)
    lines.append(f"{'':28}{'trace':>10}{column:>10}")
    for key, label in (("utilization", "utilization"), ("lost", "bytes lost"),
                       ("delay", "max queueing delay (steps)")):
        lines.append(f"{label:28}{_num(ours[key]):>10}{_num(theirs[key]):>10}")
    for n in range(result.trace.flows):
        mine = [result.trace.flow("S_f", n), result.concrete.flow("S_f", n)]
        lines.append(f"{'bytes served, flow ' + str(n):28}" + "".join(f"{_num(c[last] - c[first]):>10}" for c in mine))
    for cond in result.assume:
        lines.append(f"assumption {_short(cond.text)}: {_verdict(cond, run)}")
    lines += [f"note: {note}" for note in result.notes]
    if result.find is None:
        lines.append("find: the query has none")
    else:
        lines.append(f"find {_short(result.find.text)}: {_verdict(result.find, run)}")
        lines.append(f"finding reproduced by {who}" if result.reproduced else f"finding NOT reproduced by {who}")
    return lines


def side_by_side(result: ReadingView, run: str = "the packet run") -> str:
    """Per step and flow: cwnd, pacing rate (paced flows), bytes sent, served and lost in the
    step; then the least queueing delay of the byte served. Trace | concrete ``run`` (primed)."""
    tr, co = result.trace, result.concrete
    headers = ["t"]
    columns: list[list[str]] = [[str(t) for t in range(tr.T)]]
    for n in range(tr.flows):
        # the rate rows are shown where both runs pace (a concrete run that does not pace, e.g. an
        # ns-3 NewReno replay of a paced AIMD trace, has no rate row at all)
        played_rate = co.flow("rate", n)
        paced = tr.flow("rate", n) is not None and played_rate is not None \
            and all(r is not None for r in played_rate)
        for name, label, step in (("cwnd", "cwnd", False), ("rate", "rate", False), ("A_f", "sent", True),
                                  ("S_f", "served", True), ("L_f", "lost", True)):
            if name == "rate" and not paced:
                continue
            for side, trace in (("", tr), ("'", co)):
                values = trace.recorded(name, n)   # rate only where both paced (above)
                headers.append(f"{label}{side}[{n}]")
                columns.append([_num(values[t] - (values[t - 1] if step and t else 0)) if not step or t else "-"
                                for t in range(tr.T)])
    for side, trace in (("", tr), ("'", co)):
        headers.append(f"delay{side}")
        columns.append([str(trace.delay_range(t)[0]) for t in range(tr.T)])
    widths = [max(len(h), *(len(c) for c in col)) for h, col in zip(headers, columns)]
    lines = [f"per step (primed: {run})",
             "  ".join(h.rjust(w) for h, w in zip(headers, widths))]
    for t in range(tr.T):
        lines.append("  ".join(col[t].rjust(w) for col, w in zip(columns, widths)))
    return "\n".join(lines)


def _verdict(cond: ConditionView, run: str) -> str:
    if cond.holds is None:
        return f"cannot be read on {run} ({cond.note})"
    return f"holds on {run}" if cond.holds else f"does NOT hold on {run}"


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return f"`{flat}`" if len(flat) <= 70 else f"`{flat[:67]}...`"


def _num(v: Any) -> str:
    return rounded_text(v) if isinstance(v, Fraction) else str(v)
