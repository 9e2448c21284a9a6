"""``ccac export``: write the path of a counterexample for a testbed (:mod:`ccac.testbed.export`)
or as a standalone ns-3 script (:func:`ccac.testbed.ns3_replay.script`). Mahimahi and the CSV
schedule serve the trace's fixed delivery schedule; the ns-3 script serves its token bucket,
the default server of ``ccac replay``.

    ccac export RESULT.json --format mahimahi --out DIR [--step-ms MS] [--packet B]
    ccac export RESULT.json --format csv --out DIR [--step-ms MS] [--packet B]
    ccac export RESULT.json --format ns3 [--out FILE] [--step-ms MS] [--packet B] [--periods K]
"""

from __future__ import annotations

from pathlib import Path

import click

from ccac.core.errors import CcacError
from ccac.testbed.export import FORMATS, csv_schedule, mahimahi
from ccac.core.params import to_fraction
from ccac.testbed.ns3_replay import script
from ccac.testbed.replay import load_result

STEP_MS = 10  # the default step of the mahimahi and csv exports


@click.command("export")
@click.argument("result_file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(FORMATS + ("ns3",)), required=True,
              help="mahimahi: mm-link traces and the mm-delay/mm-link command; csv: the per-packet schedule; "
                   "ns3: a standalone Python script that runs the path in ns-3 with ns-3's own TCP, served by "
                   "the trace's token bucket as `ccac replay --engine ns3` is by default "
                   "(python FILE; needs pip install '.[ns3]').")
@click.option("--out", "-o", "out_path", type=click.Path(), default=None,
              help="Directory to write into (mahimahi, csv); the script's file for ns3 (default: QUERY_ns3.py).")
@click.option("--step-ms", type=int, default=None,
              help=f"Milliseconds one step lasts (default: {STEP_MS}; ns3: 40 ms / R, a minimum RTT of 40 ms).")
@click.option("--packet", default=None, metavar="BYTES",
              help="Trace bytes per 1500-byte packet (default: the trace's MSS alpha; ns3: per 1448-byte segment).")
@click.option("--periods", type=int, default=3, show_default=True,
              help="ns3: how many times a periodic trace's path is repeated.")
def export_cmd(result_file: str, fmt: str, out_path: str | None, step_ms: int | None, packet: str | None,
               periods: int) -> None:
    """Write the path of the counterexample in RESULT_FILE (from `ccac query ... --json`) for
    Mahimahi, as a CSV schedule, or as an ns-3 script."""
    query, trace = load_result(result_file)
    size = to_fraction(packet, "--packet") if packet is not None else None
    if fmt != "ns3" and out_path is None:
        raise CcacError(f"--format {fmt} writes several files: name a directory with --out DIR", "--out")
    out = Path(out_path if out_path is not None else f"{query.name}_ns3.py")
    try:
        if fmt == "mahimahi":
            written = mahimahi(trace, out, step_ms if step_ms is not None else STEP_MS, size)
        elif fmt == "csv":
            written = csv_schedule(trace, out, step_ms if step_ms is not None else STEP_MS, size)
        else:
            out.write_text(script(query, trace, step_ms, size, periods))
            written = [out]
    except OSError as e:
        raise CcacError(f"cannot write there: {e.strerror}", "--out")
    for path in written:
        click.echo(f"wrote {path}")
    if fmt == "mahimahi":
        click.echo(f"run: {out / 'command.sh'} <sender command>   (see {out / 'path.json'} for what is not exported)")
    elif fmt == "ns3":
        click.echo(f"run: python {out}")
