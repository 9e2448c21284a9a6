"""``ccac query FILE_OR_NAME``: answer one query, print (and optionally write) the answer,
its validated trace and a replay of it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ccac.commands.replay import run_and_report
from ccac.core import limits, progress
from ccac.core.errors import CcacError
from ccac.encode.frontier import STYLES
from ccac.encode.nonlinear import DEFAULT_MODE, MODES
from ccac.report.presentation import (EXIT_INVALID_TRACE, EXIT_MISMATCH, EXIT_UNKNOWN, answer_line, case_lines,
                                      describe_query, echo_validation, expected_line, nonlinear_line, plot_line,
                                      solver_line, statement)
from ccac.solving.backends import SOLVER_HELP

if TYPE_CHECKING:
    from ccac.analysis.cubes import CubeRun
    from ccac.problems.query import Query


@click.command("query")
@click.argument("file_or_name")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a query value, e.g. network.T=15, cca.pacing=true, params.util=0.1.")
@click.option("--timeout", type=float, default=None, metavar="S",
              help="Give up after S seconds of building, solving and validating together (answer: unknown).")
@click.option("--expect", type=click.Choice(["sat", "unsat"]), default=None,
              help="Expected answer (overrides the file's); exit 1 if the answer differs.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Write the result as JSON.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, help="Write the trace as CSV.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write the answer as one self-contained interactive page (.html): linked, zoomable plots "
                   "of the trace with every variable at the step under the pointer; opens offline.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Draw the trace (.png, .svg or .pdf).")
@click.option("--solver", default="z3", show_default=True, help=SOLVER_HELP)
@click.option("--smtlib", "smtlib_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the problem as an SMT-LIB 2 script.")
@click.option("--encoding", type=click.Choice(STYLES), default="pairs", show_default=True,
              help="How loss detection, FIFO and delay readings are encoded: one comparison per pair "
                   "of steps (fastest to solve) or an integer frontier per step (linear size, for "
                   "long horizons). The answer does not depend on it.")
@click.option("--replay", "do_replay", is_flag=True,
              help="Replay a sat trace with the CCAs' concrete algorithms on its packet path "
                   "(as `ccac replay`; exit 1 if the finding does not reproduce).")
@click.option("--replay-plot", "replay_plot", type=click.Path(dir_okay=False), default=None,
              help="With --replay: draw the trace and the packet run on one figure.")
@click.option("--nonlinear", type=click.Choice(MODES), default=None,
              help="What non-linear uses (products, quotients, powers of solver quantities) may be: exact "
                   f"(z3's non-linear arithmetic) or enclose (linear bounds, refined); default: the query's, "
                   f"else {DEFAULT_MODE}.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the answer line.")
@click.option("--cubes", type=click.IntRange(1, 1024), default=None, metavar="N",
              help="Split the query into about N cases (z3's lookahead cubes) solved apart: the first sat "
                   "case answers, every case unsat answers unsat. --timeout then bounds each case. Prints "
                   "each case's time and the time the answer would take on 1 to 128 workers.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --cubes: solve N cases at once in a local process pool (default: the CPUs).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="With --cubes: solve the cases on this Dask scheduler (e.g. tcp://host:8786); its "
                   "workers need ccac installed.")
@click.option("--window", type=click.IntRange(min=1), default=None, metavar="W",
              help="Find the trace window by window, W new steps each, the steps before fixed (for long "
                   "traces: cost grows with T); sat with a trace validated over the whole run, or unknown, "
                   "never unsat. Default: the query's [query] window, else one solve of the whole trace.")
def query(file_or_name: str, overrides: tuple[str, ...], timeout: float | None, expect: str | None,
          json_path: str | None, csv_path: str | None, html_path: str | None, plot_path: str | None, solver: str,
          smtlib_path: str | None, encoding: str, do_replay: bool, replay_plot: str | None,
          nonlinear: str | None, quiet: bool, cubes: int | None, workers: int | None,
          scheduler: str | None, window: int | None) -> None:
    """Answer a query FILE_OR_NAME (a .toml file, or the name of a bundled query)."""
    from ccac.problems.query import load_query
    from ccac.solving.solve import solve

    limits.check_seconds(timeout)
    progress.show_progress(not quiet)
    q = load_query(file_or_name, list(overrides))
    if expect is not None:
        q.expect = expect
    if replay_plot is not None and not do_replay:
        raise CcacError("--replay-plot needs --replay")
    for figure, where in ((plot_path, "--plot"), (replay_plot, "--replay-plot")):
        if figure is not None:
            from ccac.report.plot import check_format

            check_format(figure, where)
    if html_path is not None:
        from ccac.report.html_page import check_html

        check_html(html_path)
    window = window if window is not None else q.window
    if window is not None:
        if cubes is not None or smtlib_path is not None:
            raise CcacError("--window searches window by window: it goes without --cubes and --smtlib")
        result = _by_windows(q, window, solver, timeout, quiet)
        split = None
    elif cubes is None:
        if workers is not None or scheduler is not None:
            raise CcacError("--workers and --scheduler go with --cubes")
        result = solve(q, solver=solver, timeout=timeout, smtlib=smtlib_path, encoding=encoding, nonlinear=nonlinear)
        split = None
    else:
        if solver != "z3" or smtlib_path is not None:
            raise CcacError("--cubes solves with z3 and writes no --smtlib")
        split = solve_cases(q, cubes, workers, scheduler, timeout, encoding)
        result = split.result
    if not quiet:
        click.echo(describe_query(q))
        if split is not None:
            from ccac.analysis.cubes import PROJECTED

            for line in case_lines(split, PROJECTED):
                click.echo(line)
    click.echo(answer_line(result.answer, timeout, result.reason))
    if not quiet:
        stopped = (result.reason or "").startswith("timeout: building")
        click.echo(solver_line(result.solver, result.solver_version, result.build_seconds,
                               None if stopped else result.solve_seconds))
        if result.nonlinear is not None:
            click.echo(nonlinear_line(result.nonlinear, result.refinements, result.repaired))
        if not stopped:
            click.echo(statement(q, result.answer))
    if result.trace is not None:
        echo_validation(result.validated, result.violations)
        if not quiet:
            click.echo(result.trace.table())
    vacuous = False
    output = result.to_json()
    if result.answer == "unsat":
        from ccac.solving.solve import premise_verdict

        output["premise"], line = premise_verdict(q, solver, timeout, encoding, nonlinear)
        vacuous = output["premise"] == "vacuous"
        if not quiet or output["premise"] != "satisfiable":
            click.echo(line)
    if json_path:
        Path(json_path).write_text(json.dumps(output, indent=1))
    if csv_path and result.trace is not None:
        result.trace.write_csv(csv_path)
    if html_path:
        result.write_html(html_path)
        if not quiet:
            click.echo(f"page: {html_path}")
    if plot_path and result.trace is not None:
        result.plot(plot_path)
        if not quiet:
            click.echo(plot_line(plot_path))
    if result.trace is not None and not result.validated:
        sys.exit(EXIT_INVALID_TRACE)
    if do_replay and result.trace is not None:
        click.echo("")
        run_and_report(q, result.trace, None, 3, None, replay_plot, None, quiet)
    if result.answer == "unknown":
        sys.exit(EXIT_UNKNOWN)
    if q.expect is not None:
        click.echo(expected_line(q.expect, result.answer))
        if result.answer != q.expect:
            sys.exit(EXIT_MISMATCH)
    if vacuous:
        sys.exit(EXIT_MISMATCH)


def solve_cases(q: Query, cubes: int, workers: int | None, scheduler: str | None, timeout: float | None,
                encoding: str) -> CubeRun:
    """``q`` split into cases solved on a local pool or a Dask cluster (:mod:`ccac.analysis.cubes`)."""
    from ccac.analysis.cubes import solve_in_cubes
    from ccac.analysis.executors import executor

    with executor(workers, scheduler) as where:
        return solve_in_cubes(q, cubes, where.run, timeout, encoding)


def _by_windows(q: Any, window: int, solver: str, timeout: float | None, quiet: bool) -> Any:
    """The query answered window by window, each window's outcome on stderr as it comes."""
    from ccac.analysis.window_search import search_windows, window_line

    return search_windows(q, window, solver, timeout,
                          None if quiet else lambda report: click.echo(window_line(report), err=True))
