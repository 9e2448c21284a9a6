"""The ``ccac`` command line: a thin layer over the Python API, one module per command here.

Exit codes: 0 answered (and matched the expected answer, if one was given), 1 answered
differently from the expectation, 2 bad input, 3 unknown (a time limit, or the solver gave up),
4 a sat trace failed independent validation (a bug in ccac or the solver, never ignored).
"""

from __future__ import annotations

import sys

import click

from ccac.commands.bench import bench
from ccac.commands.bound import bound
from ccac.commands.export import export_cmd
from ccac.commands.listing import list_cmd
from ccac.commands.prove import prove
from ccac.commands.query import query
from ccac.commands.replay import replay_cmd
from ccac.commands.sweep import sweep
from ccac.commands.synthesize import synthesize_cmd
from ccac.core import VERSION, deadline
from ccac.core.errors import CcacError
from ccac.report.presentation import EXIT_BAD_INPUT, EXIT_UNKNOWN


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, "--version", prog_name="ccac", message="%(prog)s %(version)s")
def cli() -> None:
    """ccac: prove how a congestion control algorithm behaves on every path of the CCAC model,
    or get a validated counterexample trace."""


cli.add_command(query, "query")
cli.add_command(list_cmd, "list")
cli.add_command(bench, "bench")
cli.add_command(bound, "bound")
cli.add_command(prove, "prove")
cli.add_command(replay_cmd, "replay")
cli.add_command(export_cmd, "export")
cli.add_command(sweep, "sweep")
cli.add_command(synthesize_cmd, "synthesize")


def main(argv: list[str] | None = None) -> None:
    """Entry point: bad input of any kind is one line on stderr and exit code 2."""
    try:
        cli.main(args=argv, prog_name="ccac", standalone_mode=False)
    except CcacError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except deadline.TimeLimit as e:  # a time limit that ran out outside an SMT check
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
