"""``ccac replay``: a counterexample replayed by the concrete senders on its packet path, or
by ns-3's own TCP in ns-3.

    ccac replay RESULT.json [--packet BYTES] [--periods K] [--warmup STEPS] [--schedule]
                [--plot FILE] [--json OUT] [-q]
    ccac replay RESULT.json --engine ns3 [--packet BYTES] [--periods K] [--step-ms MS] [--schedule]
                [--json OUT] [-q]

RESULT.json is what ``ccac query ... --json`` writes for a sat answer; ``ccac query ...
--replay`` does the same without the file. The output puts the two runs side by side (the
trace the solver found, and the packet run of the algorithms themselves, :mod:`ccac.testbed.replay`,
or the ns-3 run, :mod:`ccac.testbed.ns3_replay`): the summary readings, whether the query's
find condition holds on the run, and the per-step windows, sending, service and losses of
every flow.

Exit code: 0 when the finding reproduces (the find condition holds on the run), 1 when it does
not or cannot be read there, 2 on bad input (ns-3 not installed included).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import click

from ccac.core.errors import CcacError
from ccac.core.params import rounded_text, to_fraction
from ccac.report.presentation import EXIT_MISMATCH
from ccac.testbed.ns3_replay import Ns3Replay, replay_ns3
from ccac.testbed.replay import Reading, Replay, load_result, replay
from ccac.encode.trace import Trace


@click.command("replay")
@click.argument("result_file", type=click.Path(dir_okay=False))
@click.option("--engine", type=click.Choice(["packet", "ns3"]), default="packet", show_default=True,
              help="packet: ccac's concrete senders on its packet path; ns3: ns-3's own TCP (TcpNewReno for "
                   "aimd, TcpBbr for bbr) on the same path built in ns-3 (needs pip install '.[ns3]').")
@click.option("--packet", default=None, metavar="BYTES",
              help="Packet size in the trace's byte units (default: the trace's MSS alpha; with --engine ns3: "
                   "the trace bytes one 1448-byte segment stands for).")
@click.option("--periods", type=int, default=3, show_default=True,
              help="How many times a periodic trace is repeated; its conditions are read on the last.")
@click.option("--warmup", type=int, default=None, metavar="STEPS",
              help="Steps in which the senders learn but the trace's decisions apply "
                   "(default: one period of a periodic trace, else 0).")
@click.option("--schedule", "fixed", is_flag=True,
              help="Serve the trace's fixed delivery schedule, as the Mahimahi export does, instead of "
                   "its token bucket (which serves a sender that sends more, up to the link); both engines.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Draw the trace and the packet run on one figure (.png, .svg or .pdf).")
@click.option("--step-ms", type=float, default=None, metavar="MS",
              help="With --engine ns3: milliseconds one step lasts (default: 40 ms / R, a minimum RTT of 40 ms).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the concrete run (and the comparison) as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary and the verdict.")
def replay_cmd(result_file: str, engine: str, packet: str | None, periods: int, warmup: int | None, fixed: bool,
               plot_path: str | None, step_ms: float | None, json_path: str | None, quiet: bool) -> None:
    """Replay the counterexample in RESULT_FILE (written by `ccac query ... --json`) with the
    CCAs' concrete algorithms on the packet-level path it describes, or (--engine ns3) with
    ns-3's own TCP on the path built in ns-3."""
    query, trace = load_result(result_file)
    if engine == "ns3":
        for flag, given in (("--warmup", warmup is not None), ("--plot", plot_path is not None)):
            if given:
                raise CcacError(f"{flag} is for the packet engine only (ns-3's TCP decides from step 0; the plot "
                                f"draws packet runs)", "--engine ns3")
        ns3_report(query, trace, packet, periods, step_ms, json_path, quiet, fixed)
    elif step_ms is not None:
        raise CcacError("--step-ms is for --engine ns3 only", "--step-ms")
    else:
        run_and_report(query, trace, packet, periods, warmup, plot_path, json_path, quiet, fixed)


def run_and_report(query: Any, trace: Trace, packet: str | None, periods: int, warmup: int | None,
                   plot_path: str | None, json_path: str | None, quiet: bool, fixed: bool = False) -> None:
    """Replay, print the comparison, write the plot and JSON, and exit with the verdict."""
    if plot_path is not None:
        from ccac.report.plot import check_format

        check_format(plot_path)
    size = to_fraction(packet, "--packet") if packet is not None else None
    result = replay(query, trace, size, periods, warmup, fixed)
    click.echo(summary(result))
    if not quiet:
        click.echo(side_by_side(result))
    if plot_path is not None:
        from ccac.report.plot import plot_replay

        plot_replay(result, plot_path)
        click.echo(f"plot: {plot_path}")
    if json_path is not None:
        Path(json_path).write_text(json.dumps(to_json(result), indent=1))
    if result.reproduced is not True and result.find is not None:
        sys.exit(EXIT_MISMATCH)


def ns3_report(query: Any, trace: Trace, packet: str | None, periods: int, step_ms: float | None,
               json_path: str | None, quiet: bool, fixed: bool = False) -> None:
    """Replay in ns-3, print the comparison, write the JSON, and exit with the verdict."""
    size = to_fraction(packet, "--packet") if packet is not None else None
    result = replay_ns3(query, trace, step_ms, size, periods, fixed)
    click.echo(ns3_summary(result))
    if not quiet:
        click.echo(side_by_side(result, "the ns-3 run"))
    if json_path is not None:
        Path(json_path).write_text(json.dumps({**reading_json(result), "engine": "ns3", "mapping": result.mapping},
                                              indent=1))
    if result.reproduced is not True and result.find is not None:
        sys.exit(EXIT_MISMATCH)


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


def summary(result: Replay) -> str:
    path = result.run.path
    server = server_name(path.schedule is not None)
    lines = [f"replay: {result.query.name}, {result.trace.T} steps, packets of {_num(path.packet)} bytes "
             f"({float(path.packet / result.trace.network.C):.3g} of a step's service), served by {server}"]
    return "\n".join(lines + comparison(result, "the packet run", "the concrete senders", "replay"))


def ns3_summary(result: Ns3Replay) -> str:
    first, last = result.window
    lines = [f"replay in ns-3: {result.query.name}, {result.trace.T} steps, ns-3's own TCP on "
             f"{server_name(result.offered is not None)}", *result.mapping]
    if result.offered is not None:
        lines.append(f"the schedule allows at most {float(result.offered):.1%} utilization in steps {first}..{last}")
    return "\n".join(lines + comparison(result, "the ns-3 run", "ns-3's TCP", "ns-3"))


def comparison(result: Reading, run: str, who: str, column: str) -> list[str]:
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


def side_by_side(result: Reading, run: str = "the packet run") -> str:
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


def to_json(result: Replay) -> dict[str, Any]:
    return {**reading_json(result), "packet": str(result.run.path.packet),
            "packets": [{k: str(v) if isinstance(v, Fraction) else v for k, v in vars(p).items()}
                        for p in result.run.packets]}


def reading_json(result: Reading) -> dict[str, Any]:
    """The comparison of any concrete run with its trace, as JSON."""
    first, last = result.window
    return {
        "query": result.query.name, "senders": result.senders, "window": [first, last], "notes": result.notes,
        "find": None if result.find is None else {"text": result.find.text, "holds": result.find.holds,
                                                    "note": result.find.note},
        "assume": [{"text": c.text, "holds": c.holds, "note": c.note} for c in result.assume],
        "readings": {side: {k: str(v) for k, v in readings(tr, first, last).items()}
                     for side, tr in (("trace", result.trace), ("replay", result.concrete))},
        "replay": result.concrete.to_json(),
    }


def _verdict(cond: Any, run: str) -> str:
    if cond.holds is None:
        return f"cannot be read on {run} ({cond.note})"
    return f"holds on {run}" if cond.holds else f"does NOT hold on {run}"


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return f"`{flat}`" if len(flat) <= 70 else f"`{flat[:67]}...`"


def _num(v: Any) -> str:
    return rounded_text(v) if isinstance(v, Fraction) else str(v)
