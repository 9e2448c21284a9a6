"""``ccac export``: write the path of a counterexample for a testbed (:mod:`ccac.testbed.export`).

    ccac export RESULT.json --format mahimahi --out DIR [--step-ms MS] [--packet B]
    ccac export RESULT.json --format csv --out DIR [--step-ms MS] [--packet B]
"""

from __future__ import annotations

from pathlib import Path

import click

from ccac.core.errors import CcacError
from ccac.testbed.export import FORMATS, csv_schedule, mahimahi
from ccac.core.params import to_fraction
from ccac.testbed.replay import load_result


@click.command("export")
@click.argument("result_file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True,
              help="mahimahi: mm-link traces and the mm-delay/mm-link command; csv: the per-packet schedule.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Directory to write into.")
@click.option("--step-ms", type=int, default=10, show_default=True, help="Milliseconds one step lasts.")
@click.option("--packet", default=None, metavar="BYTES",
              help="Trace bytes per 1500-byte packet (default: the trace's MSS alpha).")
def export_cmd(result_file: str, fmt: str, out_dir: str, step_ms: int, packet: str | None) -> None:
    """Write the path of the counterexample in RESULT_FILE (from `ccac query ... --json`) for
    Mahimahi or as a CSV schedule."""
    _, trace = load_result(result_file)
    size = to_fraction(packet, "--packet") if packet is not None else None
    out = Path(out_dir)
    try:
        if fmt == "mahimahi":
            written = mahimahi(trace, out, step_ms, size)
        else:
            written = csv_schedule(trace, out, step_ms, size)
    except OSError as e:
        raise CcacError(f"cannot write there: {e.strerror}", "--out")
    for path in written:
        click.echo(f"wrote {path}")
    if fmt == "mahimahi":
        click.echo(f"run: {out / 'command.sh'} <sender command>   (see {out / 'path.json'} for what is not exported)")
