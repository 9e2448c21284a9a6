"""``ccac sweep``: the command over :class:`ccac.analysis.sweep.Sweep`: its options and help, the
progress line, the table of points and its summary, ``--out`` and the exit code.

    ccac sweep FILE_OR_NAME --grid KEY=V1,V2,... [--set K=V] [--workers N | --scheduler ADDRESS]
               [--out FILE.csv|.json] [--html FILE.html] [--fresh] [--timeout S] [--solver NAME] [--reuse]
"""

from __future__ import annotations

import csv
import io
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import click

from ccac.solving.backends import SOLVER_HELP
from ccac.core.errors import CcacError
from ccac.analysis.executors import Executor
from ccac.analysis.grid import Axis, grid_points, option_keys, parse_grid
from ccac.core.limits import check_seconds
from ccac.report import sweep_lines as lines
from ccac.report.html_page import check_html
from ccac.report.presentation import EXIT_BAD_INPUT
from ccac.solving.store import Store
from ccac.analysis.sweep import Point, Sweep

__all__ = ["sweep"]

HELP = """Run FILE_OR_NAME (a query or a proof) at every point of a grid of values.

\b
The grid is the cartesian product of the --grid options. KEY is a --set key
(network.R, cca.pacing, params.util, ...); each value is a TOML value or a
range START:STOP[:STEP] in exact decimals, STOP included when it lands on the
grid:
  --grid network.R=1,2 --grid network.buffer=0.5,1,2
  --grid params.util=0.1:0.5:0.1     (0.1, 0.2, 0.3, 0.4, 0.5 exactly)

\b
A FILE with a top-level `lemma` or `steady_state` is a proof; its rows show
the verdict (proved, refuted, vacuous, unknown).

\b
Points run in a local process pool (--workers), or on a Dask cluster with
--scheduler: its workers need ccac installed and FILE at the same absolute
path, and solve one point at a time per process (start them with
`--nthreads 1 --nworkers N`).

\b
Every answer is committed at once to a SQLite store in the user cache
directory ($CCAC_CACHE_DIR overrides it), keyed by the resolved query, the
solver and its version and the ccac version: a rerun or an interrupted sweep
reuses what is stored (column `cached`); a stored unknown is reused only for
a timeout no longer than it had. Errors are not stored. --fresh recomputes
and overwrites.

\b
Bad input stops the sweep before it runs (exit 2, one line): a malformed
--grid, a key no point accepts (network.nosuch), a bad file, or a grid where
no point is a valid query. A value invalid only at some points (network.T=2
with R + D + 1 = 3) gives those points an `error` row, and the rest run.

\b
Prints one row per point, in grid order, and a summary; --out writes the rows
as .csv or .json; --html writes the grid as an interactive page (tap a point
to see its trace; the store keeps each sat point's trace with its answer).
A sweep explores: a query's `expect` is not checked.
An unsat point's premise is checked (its assumptions alone must admit a trace,
up to 30 s): where they admit none the row says `vacuous`.
Exit: 4 a sat trace failed validation; 1 a proof refuted, or a proof or query
point vacuous; 2 some points had errors; 3 some unknown; else 0 (all answered or proved)."""


@click.command("sweep", help=HELP)
@click.argument("file_or_name")
@click.option("--grid", "grids", multiple=True, metavar="KEY=V1,V2,...",
              help="A grid axis: values, or ranges START:STOP[:STEP]. Repeat for more axes.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a value at every point, as in `ccac query`.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Local worker processes [default: the number of CPUs].")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on this Dask scheduler (e.g. tcp://host:8786) instead of locally.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the rows to a .csv or .json file.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the grid as one self-contained interactive page (.html; opens offline): "
                   "each point coloured by its answer; tapping a sat point shows its validated trace.")
@click.option("--fresh", is_flag=True, help="Ignore stored results; recompute and overwrite them.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="S",
              help="Per point: seconds of building, solving and validating (per check for a proof; "
                   "answer: unknown).")
@click.option("--solver", default=None, help=SOLVER_HELP + " [default: a proof file's `solver`, else z3]")
@click.option("--reuse", is_flag=True,
              help="Points whose queries differ only in [params] values share one z3 solver per "
                   "worker (checks under assumptions) instead of a fresh solve each.")
def sweep(file_or_name: str, grids: tuple[str, ...], overrides: tuple[str, ...], workers: int | None,
          scheduler: str | None, out_path: str | None, html_path: str | None, fresh: bool, timeout: float | None,
          solver: str | None, reuse: bool) -> None:
    started = time.perf_counter()
    check_seconds(timeout)
    if html_path is not None:
        check_html(html_path)
    axes = [parse_grid(g) for g in grids]
    indexes = grid_points(axes)
    keys = option_keys(axes, overrides)
    if out_path and Path(out_path).suffix.lower() not in (".csv", ".json"):
        raise CcacError(f"unsupported format {Path(out_path).suffix or '(none)'!r}; use .csv or .json", "--out")
    job = Sweep(file_or_name, axes, indexes, overrides, keys, solver, timeout)
    points = job.points
    counts: Counter = Counter()
    bars: list[Any] = []

    def begin(store: Store, where: Executor) -> None:   # the plan is made: say where it runs
        tasks = job.tasks
        click.echo(lines.plan_line(len(points), sum(p.cached for p in points), str(store.path), len(job.groups),
                                   len(tasks) if job.shared else None,
                                   where.describe(len(tasks)) if tasks else None), err=True)
        counts.update(p.answer for p in points if p.result)
        bars.append(_progress(len(tasks)))
        bars[0].set_postfix(_postfix(job.kind, counts), refresh=False)

    def progress(answers: list[str]) -> None:
        counts.update(answers)
        bars[0].set_postfix(_postfix(job.kind, counts), refresh=False)
        bars[0].update(1)

    try:
        job.execute(workers, scheduler, fresh, reuse, begin, progress)
    except KeyboardInterrupt:
        stored = sum(1 for p in points if p.result and p.answer != "error")
        for bar in bars:
            bar.close()
        click.echo(lines.interrupted_line(stored, len(points)), err=True)
        raise
    finally:
        for bar in bars:
            bar.close()
    report(job, axes, out_path, html_path, time.perf_counter() - started)


def report(job: Sweep, axes: list[Axis], out_path: str | None, html_path: str | None, seconds: float) -> None:
    """The table, the summary, --out, --html, and the exit code."""
    points = job.points
    header = tuple(a.key for a in axes) + lines.COLUMNS
    click.echo(lines.table(header, [lines.cells(p) for p in points]))
    summary = lines.summary_line(job.kind, points, seconds)
    click.echo(summary)
    if out_path:
        write_out(Path(out_path), axes, header, points)
    if html_path:
        write_page(html_path, job, summary.strip())
        click.echo(f"page: {html_path}")
    code = lines.exit_code(points)
    if code == EXIT_BAD_INPUT:
        click.echo(lines.errors_line(sum(p.answer == "error" for p in points), len(points)), err=True)
    if code:
        raise SystemExit(code)


def write_out(path: Path, axes: list[Axis], header: tuple[str, ...], points: list[Point]) -> None:
    """The rows as CSV (the table's cells) or JSON (the axes' values and each result)."""
    if path.suffix.lower() == ".csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(lines.cells(p) for p in points)
        path.write_text(buffer.getvalue())
        return
    rows = []
    for point in points:
        row = {a.key: a.value(i) for a, i in zip(axes, point.index)}
        row.update(answer=point.answer, validated=point.result.get("validated"),
                   seconds=round(float(point.result.get("seconds", 0.0)), 4), cached=point.cached,
                   error=point.result.get("error"), reason=point.result.get("reason"))
        rows.append(row)
    path.write_text(json.dumps(rows, indent=1) + "\n")


def write_page(path: str, job: Sweep, summary: str) -> None:
    """The grid as an interactive page (:meth:`Sweep.layout`), each validated sat point with its trace."""
    from ccac.report.html_page import write_layout

    write_layout(path, f"ccac sweep {Path(job.target).stem}", job.layout([summary]))


def _progress(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="pt", desc="sweep", dynamic_ncols=True,
                disable=True if total == 0 else None)  # None: on a terminal only


def _postfix(kind: str, counts: Counter) -> dict[str, int]:
    return {a: counts[a] for a in lines.answer_order(kind, counts)}
