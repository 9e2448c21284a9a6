"""``ccac bound FILE_OR_NAME --param NAME --lo X --hi Y [--tol E] [--timeout S] ...``: the
command over :func:`ccac.analysis.bound.find_bound`; its lines are composed in
:mod:`ccac.report.bound_lines`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ccac.analysis.bound import BoundResult, find_bound
from ccac.core import progress
from ccac.problems.query import Query, load_query
from ccac.report import bound_lines as lines
from ccac.report.html_page import check_html
from ccac.report.presentation import describe_query, echo_validation, plot_line
from ccac.solving.backends import SOLVER_HELP, backend


@click.command("bound")
@click.argument("file_or_name")
@click.option("--param", "name", required=True, metavar="NAME",
              help="The [params] number to move (params.NAME works too), or a numeric [network] "
                   "setting as network.NAME (network.buffer, network.bdp_packets: whole numbers "
                   "are searched over whole numbers).")
@click.option("--lo", required=True, metavar="X", help="Low end of the search (exact: 0.1 is 1/10; 1/3 works).")
@click.option("--hi", required=True, metavar="Y", help="High end of the search.")
@click.option("--tol", default=None, metavar="E",
              help="Stop when the bracket is at most E wide [default: (hi - lo) / 100].")
@click.option("--timeout", type=float, default=None, metavar="S",
              help="Give up on one probe after S seconds of building and solving (answer: unknown).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a query value, e.g. network.T=15, params.util=0 (to add a parameter).")
@click.option("--solver", default="z3", show_default=True, help=SOLVER_HELP)
@click.option("--reuse/--fresh", default=False, show_default=True,
              help="Answer every probe with one z3 solver (checks under assumptions), or each "
                   "with a fresh solver; see docs/bounds-and-sweeps.md for measurements.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Draw the boundary counterexample (.png, .svg or .pdf).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write every probe, the bracket and the boundary trace as JSON.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write the probes as one self-contained interactive page (.html; opens offline), the "
                   "bracket marked; tapping a sat probe shows its validated trace (every sat probe's trace "
                   "is then read back and validated).")
def bound(file_or_name: str, name: str, lo: str, hi: str, tol: str | None, timeout: float | None,
          overrides: tuple[str, ...], solver: str, reuse: bool, plot_path: str | None,
          json_path: str | None, html_path: str | None) -> None:
    """Find where the answer to FILE_OR_NAME flips between unsat and sat as params.NAME goes
    from --lo to --hi, by bisection over exact values.

    Prints one line per probe, then the bracket [a, b]: a decisive answer at a, the other one
    at b, and any unknown (timed-out) probes inside it, which the search probes around. Each
    probe is an exact fact at its value; that the bracket holds THE threshold (the answer at a
    holds for every value on a's side, likewise b) assumes the answer is monotone in NAME.
    The counterexample at the bracket's sat end is validated independently and printed.

    Exit codes: 0 bracketed to within --tol; 1 no flip: the same answer at --lo and --hi;
    2 bad input; 3 unknown at --lo or --hi, or unknown probes kept the bracket wider than
    --tol; 4 the boundary counterexample failed validation.
    """
    from ccac.report.plot import check_format

    if plot_path is not None:
        check_format(plot_path)
    if html_path is not None:
        check_html(html_path)
    progress.show_progress(True)
    backend(solver)  # bad input stops before anything is printed
    q = load_query(file_or_name, list(overrides))
    click.echo(describe_query(q))
    r = find_bound(q, name, lo, hi, tol, timeout, solver, log=click.echo, reuse=reuse, traces=html_path is not None)
    summary = [lines.solver_line(r), *lines.result_lines(r)]
    for line in summary:
        click.echo(line)
    boundary = r.boundary_value
    if r.trace is not None:
        assert boundary is not None   # the trace is the bracket's sat end
        click.echo(lines.boundary_line(r.key, boundary))
        echo_validation(r.validated, r.violations)
        click.echo(r.trace.table())
    if json_path:
        Path(json_path).write_text(json.dumps(r.to_json(), indent=1))
    if html_path:
        write_page(html_path, q, r, timeout, [describe_query(q), *summary])
        click.echo(f"page: {html_path}")
    if plot_path and r.trace is not None:
        from ccac.report.plot import plot_trace

        assert boundary is not None   # the trace is the bracket's sat end
        plot_trace(r.trace, plot_path, title=lines.plot_title(q.name, r.key, boundary))
        click.echo(plot_line(plot_path))
    code = lines.exit_code(r, r.trace is not None)
    if code:
        sys.exit(code)


def write_page(path: str, q: Query, r: BoundResult, timeout: float | None, text: list[str]) -> None:
    """The probes as an interactive page (:meth:`BoundResult.layout`)."""
    from ccac.report.html_page import write_layout

    write_layout(path, f"ccac bound {q.name} {r.key}", r.layout(text, timeout))
