"""Benchmark: every bundled query (or the given ones) at several horizons, one table row each.

    python -m ccac.commands.bench [--horizons 10,15] [--timeout S] [--solver z3] [QUERY ...]

Without --horizons each query runs at its own ``horizons`` (a query whose meaning constrains
T states them), else at T = 10 and 15.

Build (formula construction) and solve are timed separately; for a backend other than z3,
solve time includes the conversion to that solver. A horizon a query cannot take (e.g. too
small for its expressions) is reported in the table, not raised. The exit status is 1 when a
definite answer contradicts the query's ``expect`` or a trace fails validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from ccac.solving.backends import SOLVER_HELP, backend
from ccac.core.errors import CcacError
from ccac.encode.frontier import STYLES
from ccac.core.limits import check_seconds
from ccac.problems.query import bundled_queries, load_query, locate
from ccac.analysis.scaling import (BUILD_HORIZONS, CASES, Case, Measured, finer_horizon, measure, measure_build,
                          overrides, plot)
from ccac.solving.solve import solve

__all__ = ["bench"]

COLUMNS = ("query", "T", "answer", "expected", "validated", "build s", "solve s", "note")


@dataclass
class Row:
    query: str
    T: str
    answer: str
    expected: str = "-"
    validated: str = "-"
    build: str = "-"
    solve: str = "-"
    note: str = ""
    failed: bool = False  # a definite answer against expectation, or a trace that fails validation

    def cells(self) -> tuple[str, ...]:
        return (self.query, self.T, self.answer, self.expected, self.validated, self.build,
                self.solve, self.note)


def run(name: str, T: int, solver: str, timeout: float | None, sets: tuple[str, ...] = (),
        resolution: int | None = None, encoding: str = "pairs") -> Row:
    label = Path(name).stem
    try:
        scaled = overrides(name, T, resolution) if resolution is not None else [f"network.T={T}"]
        result = solve(load_query(name, overrides=[*sets, *scaled]), solver, timeout, encoding=encoding)
    except CcacError as e:
        return Row(label, str(T), "invalid", note=str(e))
    validated = {True: "yes", False: "NO", None: "-"}[result.validated]
    return Row(label, str(T), result.answer, result.query.expect or "-", validated,
               f"{result.build_seconds:.3f}", f"{result.solve_seconds:.3f}",
               result.reason or "; ".join(result.violations or []),
               failed=(result.matches_expectation is False and result.answer != "unknown")
               or result.validated is False)


DEFAULT_HORIZONS = [10, 15]


def horizons_of(name: str, resolution: int | None = None) -> list[int]:
    """The horizons a query states for benchmarking, else the defaults; at another resolution,
    its own horizon scaled to it."""
    try:
        if resolution is not None:
            return [finer_horizon(name, resolution)]
        return load_query(name).horizons or DEFAULT_HORIZONS
    except CcacError:
        return DEFAULT_HORIZONS  # the row for each horizon reports the error


def parse_horizons(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        horizons = [int(h) for h in value.split(",") if h.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None
    if not horizons:
        raise click.BadParameter("give at least one horizon")
    return horizons


@click.command("bench")
@click.option("--horizons", default=None, callback=parse_horizons,
              help="Comma-separated values of network.T to run every query at "
                   "[default: each query's own `horizons`, else 10,15].")
@click.option("--timeout", type=float, default=None,
              help="Per query and horizon: seconds of building, solving and validating.")
@click.option("--solver", default="z3", show_default=True, help=SOLVER_HELP)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a value in every query, as for `ccac query`, e.g. network.R=3.")
@click.option("--resolution", type=click.IntRange(1, 64), default=None, metavar="R",
              help="Run every query at R steps per RTT: its jitter bounds, RTTs, timeout clock and "
                   "MSS scaled with R, and (without --horizons) its horizon too, the same number "
                   "of RTTs.")
@click.option("--encoding", type=click.Choice(STYLES), default="pairs", show_default=True,
              help="How frontiers are encoded (see `ccac query --help`).")
@click.option("--scaling", is_flag=True,
              help="Instead: the scaling yardstick, a fixed set of queries at growing T (R grown "
                   "with T where the question depends on it), with a fitted growth exponent each.")
@click.option("--build-only", is_flag=True,
              help=f"With --scaling: only build each case, at its own R, at T = "
                   f"{', '.join(map(str, BUILD_HORIZONS))} (--timeout bounds each build).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="With --scaling: draw time against T (log-log) to this file (.png, .svg, .pdf).")
@click.argument("queries", nargs=-1)
def bench(horizons: list[int] | None, timeout: float | None, solver: str, sets: tuple[str, ...],
          resolution: int | None, encoding: str, scaling: bool, build_only: bool,
          plot_path: str | None, queries: tuple[str, ...]) -> None:
    """Time build and solve of QUERIES (bundled names or files; default: all bundled)."""
    check_seconds(timeout)
    backend(solver)  # an unknown solver is bad input, not one invalid row per query
    if scaling:
        if queries or horizons or sets or resolution:
            raise click.UsageError("--scaling runs its own fixed set of queries and horizons")
        bench_scaling(timeout, solver, plot_path, encoding=encoding, build_only=build_only)
        return
    if build_only:
        raise click.UsageError("--build-only goes with --scaling")
    if plot_path is not None:
        raise click.UsageError("--plot goes with --scaling")
    names = list(queries) or sorted(bundled_queries())
    if not names:
        raise click.UsageError("no bundled queries yet: give query names or files")
    widths = [len(c) for c in COLUMNS]
    widths[0] = max(widths[0], *(len(Path(n).stem) for n in names))
    plan = {name: horizons or horizons_of(name, resolution) for name in names}
    widths[1] = max(widths[1], *(len(str(T)) for Ts in plan.values() for T in Ts))
    widths[2:7] = [max(w, 8) for w in widths[2:7]]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    click.echo(line(COLUMNS))
    click.echo(line(tuple("-" * w for w in widths[:-1]) + ("-" * 4,)))
    failures = 0
    for name in names:
        try:
            locate(name)
        except CcacError as e:  # one row, not one per horizon
            click.echo(line(Row(Path(name).stem, "-", "invalid", note=str(e)).cells()))
            continue
        for T in plan[name]:
            row = run(name, T, solver, timeout, sets, resolution, encoding)
            failures += row.failed
            click.echo(line(row.cells()))
    runs = sum(len(Ts) for Ts in plan.values())
    click.echo(f"\n{len(names)} queries, {runs} runs with {solver}; "
               f"{failures} failed (answer against expectation or trace not validated)")
    if failures:
        raise SystemExit(1)


def bench_scaling(timeout: float | None, solver: str, plot_path: str | None,
                  cases: tuple[Case, ...] = CASES, encoding: str = "pairs",
                  build_only: bool = False) -> list[Measured]:
    """Run the scaling yardstick (``ccac.analysis.scaling``) and print one row per point, then the
    fitted exponents."""
    if plot_path is not None:
        from ccac.report.plot import check_format

        check_format(plot_path)
    click.echo(f"{'query':36}  {'T':>4}  {'R':>2}  {'answer':8}  {'build s':>8}  {'solve s':>8}")
    results = []
    for case in cases:
        measured = (measure_build(case, timeout, encoding) if build_only
                    else measure(case, timeout, solver, encoding=encoding))
        for p in measured.points:
            R = "-" if p.R is None else p.R
            click.echo(f"{case.name:36}  {p.T:>4}  {R:>2}  {p.answer:8}  {p.build:8.3f}  {p.solve:8.3f}"
                       + (f"  {p.note}" if p.note else ""))
        results.append(measured)
    click.echo("\ngrowth exponent k (time ~ T^k, least squares; solve: answered points, build: every "
               "point built):")
    for m in results:
        ks = [m.exponent(which) for which in ("build", "solve")]
        shown = ["-" if k is None else f"{k:.2f}" for k in ks]
        click.echo(f"  {m.case.name:36}  build {shown[0]:>5}  solve {shown[1]:>5}   {m.case.what}")
    if plot_path is not None:
        plot(results, plot_path)
        click.echo(f"plot: {plot_path}")
    return results


if __name__ == "__main__":
    bench()
