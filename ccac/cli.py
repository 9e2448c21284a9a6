"""The ``ccac`` command line: a thin layer over the Python API.

Exit codes: 0 answered (and matched the expected answer, if one was given), 1 answered
differently from the expectation, 2 bad input, 3 unknown (a time limit, or the solver gave up),
4 a sat trace failed independent validation (a bug in ccac or the solver, never ignored).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ccac import limits
from ccac.backends import SOLVER_HELP
from ccac.bench import bench
from ccac.frontier import STYLES
from ccac.bound import bound
from ccac.export_command import export_cmd
from ccac.prove_command import prove
from ccac.replay_command import replay_cmd, run_and_report
from ccac.sweep_command import sweep
from ccac.errors import CcacError

from ccac.presentation import (EXIT_BAD_INPUT, EXIT_INVALID_TRACE, EXIT_MISMATCH, EXIT_UNKNOWN, answer_line,
                               describe_query, echo_validation, statement)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """ccac: prove how a congestion control algorithm behaves on every path of the CCAC model,
    or get a validated counterexample trace."""


@cli.command()
@click.argument("file_or_name")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a query value, e.g. network.T=15, cca.pacing=true, params.util=0.1.")
@click.option("--timeout", type=float, default=None, metavar="S",
              help="Give up after S seconds of building, solving and validating together (answer: unknown).")
@click.option("--expect", type=click.Choice(["sat", "unsat"]), default=None,
              help="Expected answer (overrides the file's); exit 1 if the answer differs.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Write the result as JSON.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, help="Write the trace as CSV.")
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
@click.option("--quiet", "-q", is_flag=True, help="Print only the answer line.")
def query(file_or_name: str, overrides: tuple[str, ...], timeout: float | None, expect: str | None,
          json_path: str | None, csv_path: str | None, plot_path: str | None, solver: str,
          smtlib_path: str | None, encoding: str, do_replay: bool, replay_plot: str | None,
          quiet: bool) -> None:
    """Answer a query FILE_OR_NAME (a .toml file, or the name of a bundled query)."""
    from ccac.query import load_query
    from ccac.solve import solve

    limits.check_seconds(timeout)
    limits.show_progress(not quiet)
    q = load_query(file_or_name, list(overrides))
    if expect is not None:
        q.expect = expect
    if replay_plot is not None and not do_replay:
        raise CcacError("--replay-plot needs --replay")
    for figure, where in ((plot_path, "--plot"), (replay_plot, "--replay-plot")):
        if figure is not None:
            from ccac.plot import check_format

            check_format(figure, where)
    result = solve(q, solver=solver, timeout=timeout, smtlib=smtlib_path, encoding=encoding)
    if not quiet:
        click.echo(describe_query(q))
    click.echo(answer_line(result.answer, timeout, result.reason))
    if not quiet and (result.reason or "").startswith("timeout: building"):
        click.echo(f"solver: {result.solver} {result.solver_version}, not run (building stopped after "
                   f"{result.build_seconds:.2f} s)")
    elif not quiet:
        click.echo(f"solver: {result.solver} {result.solver_version}, {result.solve_seconds:.2f} s "
                   f"(formula built in {result.build_seconds:.2f} s)")
        click.echo(statement(q, result.answer))
    if result.trace is not None:
        echo_validation(result.validated, result.violations)
        if not quiet:
            click.echo(result.trace.table())
    if json_path:
        Path(json_path).write_text(json.dumps(result.to_json(), indent=1))
    if csv_path and result.trace is not None:
        result.trace.write_csv(csv_path)
    if plot_path and result.trace is not None:
        result.plot(plot_path)
        if not quiet:
            click.echo(f"plot: {plot_path}")
    if result.trace is not None and not result.validated:
        sys.exit(EXIT_INVALID_TRACE)
    if do_replay and result.trace is not None:
        click.echo("")
        run_and_report(q, result.trace, None, 3, None, replay_plot, None, quiet)
    if result.answer == "unknown":
        sys.exit(EXIT_UNKNOWN)
    if q.expect is not None:
        verdict = "as expected" if result.answer == q.expect else f"EXPECTED {q.expect}"
        click.echo(f"expected: {q.expect} ({verdict})")
        if result.answer != q.expect:
            sys.exit(EXIT_MISMATCH)


@cli.command("list")
def list_cmd() -> None:
    """Show the models, the CCAs with their parameters, and the bundled queries."""
    from ccac.cca import CCA
    from ccac.ccas import CCAS
    from ccac.models import MODELS
    from ccac.network import FLOW_PATH_PARAMS, NETWORK_PARAMS
    from ccac.proof import bundled_proofs, load_proof
    from ccac.query import bundled_queries, load_query

    click.echo("Models ([network] compose = true/false):")
    for m in MODELS.values():
        click.echo(f"  {m.name:12} {m.summary}")
    click.echo("\nNetwork parameters ([network]):")
    for p in NETWORK_PARAMS:
        click.echo(f"  {p.name:11} default {p.describe_default():6} {p.unit:16} {p.description}")
    click.echo("\nPer-flow paths ([[flow]] tables: name = CCA and its parameters, default [cca]; and):")
    for p in FLOW_PATH_PARAMS:
        click.echo(f"  {p.name:11} default {p.describe_default():6} {p.unit:16} {p.description}")
    click.echo("\nCCAs ([cca] name = ...):")
    for cca in CCAS.values():
        click.echo(f"  {cca.name:8} {cca.summary}")
        for p in cca.params:
            click.echo(f"           {p.name} = {p.describe_default()} {('(' + p.unit + ')') if p.unit else ''}: {p.description}")
        if cca.state:
            click.echo(f"           state: {', '.join(s.name for s in cca.state)}")
        has_sender = type(cca).concrete is not CCA.concrete
        click.echo(f"           concrete sender (ccac replay): {'yes' if has_sender else 'no (replays the trace)'}")
    click.echo("\nBundled queries (ccac query NAME):")
    for name, path in sorted(bundled_queries().items()):
        q = load_query(str(path))
        summary = q.description.splitlines()[0] if q.description else ""
        click.echo(f"  {name:34} expect {q.expect or '-':5}  {summary}")
    click.echo("\nBundled proofs (ccac prove NAME):")
    for name, path in sorted(bundled_proofs().items()):
        proof = load_proof(str(path))
        click.echo(f"  {name:34} expect {proof.expect or '-':7}  {proof.description}")


cli.add_command(bench, "bench")
cli.add_command(bound, "bound")
cli.add_command(prove, "prove")
cli.add_command(replay_cmd, "replay")
cli.add_command(export_cmd, "export")
cli.add_command(sweep, "sweep")


def main(argv: list[str] | None = None) -> None:
    """Entry point: bad input of any kind is one line on stderr and exit code 2."""
    try:
        cli.main(args=argv, prog_name="ccac", standalone_mode=False)
    except CcacError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except limits.TimeLimit as e:  # a time limit that ran out outside an SMT check
        click.echo(f"unknown: {e.reason}")
        sys.exit(EXIT_UNKNOWN)
    except OSError as e:  # a file named on the command line cannot be written or read
        click.echo(f"error: {e.filename or 'file'}: {e.strerror or e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except MemoryError:
        click.echo("error: out of memory: the problem is too large for the memory this process may use "
                   "(make T, the number of flows or the expressions smaller)", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help() if e.ctx else str(e))
        sys.exit(0)
    except click.UsageError as e:
        click.echo(f"error: {e.format_message()}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)


if __name__ == "__main__":
    main()
