"""``ccac replay``: a counterexample replayed by the concrete senders on its packet path, or
by ns-3's own TCP in ns-3.

    ccac replay RESULT.json [--packet BYTES] [--periods K] [--warmup STEPS] [--schedule]
                [--plot FILE] [--html FILE] [--json OUT] [-q]
    ccac replay RESULT.json --engine ns3 [--packet BYTES] [--periods K] [--step-ms MS] [--schedule]
                [--html FILE] [--json OUT] [-q]

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
from ccac.core.params import to_fraction
from ccac.report import replay_lines as lines
from ccac.report.presentation import EXIT_MISMATCH, plot_line
from ccac.testbed.ns3_replay import replay_ns3
from ccac.testbed.replay import Reading, Replay, load_result, replay
from ccac.encode.trace import Trace


@click.command("replay")
@click.argument("result_file", type=click.Path(dir_okay=False))
@click.option("--engine", type=click.Choice(["packet", "ns3"]), default="packet", show_default=True,
              help="packet: ccac's concrete senders on its packet path; ns3: ns-3's own TCP (TcpLinuxReno for "
                   "aimd, TcpNewReno for newreno, TcpCubic for cubic, TcpVegas for vegas, TcpBbr for bbr and bbr1) on "
                   "the same path built in ns-3, a cold flow from a fresh connection (needs pip install "
                   "'.[ns3]').")
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
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write the trace beside the replayed run as one self-contained interactive page (.html).")
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary and the verdict.")
def replay_cmd(result_file: str, engine: str, packet: str | None, periods: int, warmup: int | None, fixed: bool,
               plot_path: str | None, step_ms: float | None, json_path: str | None, html_path: str | None,
               quiet: bool) -> None:
    """Replay the counterexample in RESULT_FILE (written by `ccac query ... --json`) with the
    CCAs' concrete algorithms on the packet-level path it describes, or (--engine ns3) with
    ns-3's own TCP on the path built in ns-3."""
    if html_path is not None:
        from ccac.report.html_page import check_html

        check_html(html_path)
    query, trace = load_result(result_file)
    if engine == "ns3":
        for flag, given in (("--warmup", warmup is not None), ("--plot", plot_path is not None)):
            if given:
                raise CcacError(f"{flag} is for the packet engine only (ns-3's TCP decides from step 0; the plot "
                                f"draws packet runs)", "--engine ns3")
        ns3_report(query, trace, packet, periods, step_ms, json_path, quiet, fixed, html_path)
    elif step_ms is not None:
        raise CcacError("--step-ms is for --engine ns3 only", "--step-ms")
    else:
        run_and_report(query, trace, packet, periods, warmup, plot_path, json_path, quiet, fixed, html_path)


def run_and_report(query: Any, trace: Trace, packet: str | None, periods: int, warmup: int | None,
                   plot_path: str | None, json_path: str | None, quiet: bool, fixed: bool = False,
                   html_path: str | None = None) -> None:
    """Replay, print the comparison, write the plot, page and JSON, and exit with the verdict."""
    if plot_path is not None:
        from ccac.report.plot import check_format

        check_format(plot_path)
    size = to_fraction(packet, "--packet") if packet is not None else None
    result = replay(query, trace, size, periods, warmup, fixed)
    heading = lines.summary(result, result.run.path.packet, result.run.path.schedule is not None)
    click.echo(heading)
    if not quiet:
        click.echo(lines.side_by_side(result))
    _page(html_path, result, heading)
    if plot_path is not None:
        from ccac.report.plot import plot_replay

        plot_replay(result, plot_path)
        click.echo(plot_line(plot_path))
    if json_path is not None:
        Path(json_path).write_text(json.dumps(to_json(result), indent=1))
    if result.reproduced is not True and result.find is not None:
        sys.exit(EXIT_MISMATCH)


def ns3_report(query: Any, trace: Trace, packet: str | None, periods: int, step_ms: float | None,
               json_path: str | None, quiet: bool, fixed: bool = False, html_path: str | None = None) -> None:
    """Replay in ns-3, print the comparison, write the page and JSON, and exit with the verdict."""
    size = to_fraction(packet, "--packet") if packet is not None else None
    result = replay_ns3(query, trace, step_ms, size, periods, fixed)
    heading = lines.ns3_summary(result, result.mapping, result.offered)
    click.echo(heading)
    if not quiet:
        click.echo(lines.side_by_side(result, "the ns-3 run"))
    _page(html_path, result, heading)
    if json_path is not None:
        Path(json_path).write_text(json.dumps({**reading_json(result), "engine": "ns3", "mapping": result.mapping},
                                              indent=1))
    if result.reproduced is not True and result.find is not None:
        sys.exit(EXIT_MISMATCH)


def _page(path: str | None, result: Any, heading: str) -> None:
    """The trace beside the replayed run (primed) on one interactive page, under the heading; on
    a trace that passes validation, the hover also says what holds at each of its steps."""
    if path is None:
        return
    from ccac.report.html_page import Section, write_sections
    from ccac.solving.validate import step_notes, validate

    valid = not validate(result.query, result.trace)   # a file read back is checked before it is annotated
    notes = step_notes(result.query, result.trace) if valid else {}
    write_sections(path, f"{result.query.name}: replayed",
                   [Section(heading.splitlines(), result.trace, result.concrete, notes)])
    click.echo(f"page: {path}")


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
        "readings": {side: {k: str(v) for k, v in lines.readings(tr, first, last).items()}
                     for side, tr in (("trace", result.trace), ("replay", result.concrete))},
        "replay": result.concrete.to_json(),
    }
