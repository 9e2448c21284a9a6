"""Benchmark: every bundled query (or the given ones) at several horizons, one table row each.

    python -m ccac.commands.bench [--horizons 10,15] [--timeout S] [--solver z3] [QUERY ...]

Without --horizons each query runs at its own ``horizons`` (a query whose meaning constrains
T states them), else at T = 10 and 15.

Build (formula construction) and solve are timed separately; for a backend other than z3,
solve time includes the conversion to that solver. The rounds column is an enclosed answer's
refinement rounds (``repaired`` when pinned operands found its trace; ``ccac.solving.refine``),
``exact`` under ``--nonlinear exact``, ``-`` without non-linear uses or without an answer in
time. A horizon a query cannot take (e.g. too small for its expressions) is reported in the
table, not raised. The exit status is 1 when a definite answer contradicts the query's
``expect`` or a trace fails validation.
"""

from __future__ import annotations

from pathlib import Path

import click

from ccac.solving.backends import SOLVER_HELP, backend
from ccac.core.errors import CcacError
from ccac.encode.frontier import STYLES
from ccac.core.limits import check_seconds
from ccac.problems.query import bundled_queries, load_query, locate
from ccac.analysis.scaling import (BUILD_HORIZONS, CASES, Case, Measured, finer_horizon, measure, measure_build,
                          overrides, plot)
from ccac.encode.nonlinear import DEFAULT_MODE, MODES
from ccac.report.bench_lines import (EXPONENTS_HEADING, Row, Table, exponent_line, rounds_cell, scaling_heading,
                                     scaling_row, seconds_cell, totals_line)
from ccac.report.presentation import plot_line, validated_text
from ccac.analysis.window_search import answer

__all__ = ["bench"]

def run(name: str, T: int, solver: str, timeout: float | None, sets: tuple[str, ...] = (),
        resolution: int | None = None, encoding: str = "pairs", nonlinear: str | None = None) -> Row:
    label = Path(name).stem
    try:
        scaled = overrides(name, T, resolution) if resolution is not None else [f"network.T={T}"]
        result = answer(load_query(name, overrides=[*sets, *scaled]), solver, timeout, encoding=encoding,
                        nonlinear=nonlinear)
    except CcacError as e:
        return Row(label, str(T), "invalid", note=str(e))
    return Row(label, str(T), result.answer, result.query.expect or "-", validated_text(result.validated),
               seconds_cell(result.build_seconds), seconds_cell(result.solve_seconds),
               rounds_cell(result.nonlinear, result.refinements, result.repaired),
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
@click.option("--nonlinear", type=click.Choice(MODES), default=None,
              help="What non-linear uses' values may be in every query (see `ccac query --help`) "
                   f"[default: each query's own, else {DEFAULT_MODE}].")
@click.option("--scaling", is_flag=True,
              help="Instead: the scaling yardstick, a fixed set of queries at growing T (R grown "
                   "with T where the question depends on it), with a fitted growth exponent each; "
                   "QUERIES names some of its cases (default: all).")
@click.option("--build-only", is_flag=True,
              help=f"With --scaling: only build each case, at its own R, at T = "
                   f"{', '.join(map(str, BUILD_HORIZONS))} (--timeout bounds each build).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="With --scaling: draw time against T (log-log) to this file (.png, .svg, .pdf).")
@click.argument("queries", nargs=-1)
def bench(horizons: list[int] | None, timeout: float | None, solver: str, sets: tuple[str, ...],
          resolution: int | None, encoding: str, nonlinear: str | None, scaling: bool, build_only: bool,
          plot_path: str | None, queries: tuple[str, ...]) -> None:
    """Time build and solve of QUERIES (bundled names or files; default: all bundled)."""
    check_seconds(timeout)
    backend(solver)  # an unknown solver is bad input, not one invalid row per query
    if scaling:
        if horizons or sets or resolution or nonlinear:
            raise click.UsageError("--scaling runs its own fixed set of queries and horizons")
        bench_scaling(timeout, solver, plot_path, scaling_cases(queries), encoding=encoding, build_only=build_only)
        return
    if build_only:
        raise click.UsageError("--build-only goes with --scaling")
    if plot_path is not None:
        raise click.UsageError("--plot goes with --scaling")
    names = list(queries) or sorted(bundled_queries())
    if not names:
        raise click.UsageError("no bundled queries yet: give query names or files")
    plan = {name: horizons or horizons_of(name, resolution) for name in names}
    table = Table([Path(n).stem for n in names], [T for Ts in plan.values() for T in Ts])
    for line in table.heading():
        click.echo(line)
    failures = 0
    for name in names:
        try:
            locate(name)
        except CcacError as e:  # one row, not one per horizon
            click.echo(table.line(Row(Path(name).stem, "-", "invalid", note=str(e)).cells()))
            continue
        for T in plan[name]:
            row = run(name, T, solver, timeout, sets, resolution, encoding, nonlinear)
            failures += row.failed
            click.echo(table.line(row.cells()))
    runs = sum(len(Ts) for Ts in plan.values())
    click.echo(totals_line(len(names), runs, solver, failures))
    if failures:
        raise SystemExit(1)


def scaling_cases(names: tuple[str, ...]) -> tuple[Case, ...]:
    """The yardstick's cases named (all of them when none is): a name that is not a case is bad input."""
    if not names:
        return CASES
    known = {case.name: case for case in CASES}
    for name in names:
        if name not in known:
            raise click.UsageError(f"{name!r} is not a case of --scaling: one of {', '.join(known)}")
    return tuple(known[name] for name in names)


def bench_scaling(timeout: float | None, solver: str, plot_path: str | None,
                  cases: tuple[Case, ...] = CASES, encoding: str = "pairs",
                  build_only: bool = False) -> list[Measured]:
    """Run the scaling yardstick (``ccac.analysis.scaling``) and print one row per point, then the
    fitted exponents."""
    if plot_path is not None:
        from ccac.report.plot import check_format

        check_format(plot_path)
    click.echo(scaling_heading())
    results = []
    for case in cases:
        measured = (measure_build(case, timeout, encoding) if build_only
                    else measure(case, timeout, solver, encoding=encoding))
        for p in measured.points:
            click.echo(scaling_row(case.name, p.T, p.R, p.answer, p.build, p.solve, p.note))
        results.append(measured)
    click.echo(EXPONENTS_HEADING)
    for m in results:
        click.echo(exponent_line(m.case.name, m.exponent("build"), m.exponent("solve"), m.case.what))
    if plot_path is not None:
        plot(results, plot_path)
        click.echo(plot_line(plot_path))
    return results


if __name__ == "__main__":
    bench()
