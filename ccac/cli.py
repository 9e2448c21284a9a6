"""The ``ccac`` command line: a thin layer over the Python API.

Exit codes: 0 answered (and matched the expected answer, if one was given), 1 answered
differently from the expectation, 2 bad input, 3 unknown (a time limit, or the solver gave up),
4 a sat trace failed independent validation (a bug in ccac or the solver, never ignored).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ccac import limits
from ccac.backends import SOLVER_HELP
from ccac.bench import bench
from ccac.frontier import STYLES
from ccac.bound import bound
from ccac.sweep import sweep
from ccac.errors import CcacError

EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_UNKNOWN, EXIT_INVALID_TRACE = 1, 2, 3, 4


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
@click.option("--quiet", "-q", is_flag=True, help="Print only the answer line.")
def query(file_or_name: str, overrides: tuple[str, ...], timeout: float | None, expect: str | None,
          json_path: str | None, csv_path: str | None, plot_path: str | None, solver: str,
          smtlib_path: str | None, encoding: str, quiet: bool) -> None:
    """Answer a query FILE_OR_NAME (a .toml file, or the name of a bundled query)."""
    from ccac.query import load_query
    from ccac.solve import solve

    limits.check_seconds(timeout)
    limits.show_progress(not quiet)
    q = load_query(file_or_name, list(overrides))
    if expect is not None:
        q.expect = expect
    if plot_path is not None:
        from ccac.plot import check_format

        check_format(plot_path)
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
    if result.answer == "unknown":
        sys.exit(EXIT_UNKNOWN)
    if q.expect is not None:
        verdict = "as expected" if result.answer == q.expect else f"EXPECTED {q.expect}"
        click.echo(f"expected: {q.expect} ({verdict})")
        if result.answer != q.expect:
            sys.exit(EXIT_MISMATCH)


def echo_validation(validated: bool | None, violations: list[str] | None) -> None:
    """Say whether a trace passed the independent checker; list what it violates if not."""
    if validated:
        click.echo("validated: yes (independent exact-rational check of every model, CCA and query constraint)")
    else:
        click.echo("validated: NO - the solver's trace violates:", err=True)
        for v in violations or []:
            click.echo(f"  {v}", err=True)


def answer_line(answer: str, timeout: float | None, reason: str | None) -> str:
    if answer == "sat":
        return "sat: counterexample found"
    if answer == "unsat":
        return "unsat: no trace of the model satisfies the query"
    if reason and reason.startswith("timeout:"):  # the time limit ran out outside the solver
        return f"unknown: {reason}"
    limit = f" after {timeout:g} s" if timeout is not None else ""
    why = f" ({reason})" if reason and reason != "timeout" else ""
    return f"unknown: solver timed out{limit}{why}" if reason in (None, "timeout", "canceled") \
        else f"unknown: solver gave up{why}"


def describe_query(q: Any) -> str:
    net = q.network
    buffer = "infinite" if net.buffer == "inf" else "solver-chosen" if net.buffer == "any" else f"{float(net.buffer):g} BDP"
    lines = [f"query: {q.name} ({q.source})"]
    if q.description:
        lines.append("  " + q.description.splitlines()[0])
    lines.append(f"model: {net.model_name} path-server, T={net.T} R={net.R} D={net.D} C={float(net.C):g} "
                 f"buffer={buffer}, {net.flows} flow(s)")
    for n, f in enumerate(q.flows):
        params = ", ".join(f"{k}={_show(v)}" for k, v in f.params.items())
        path = net.paths[n] if net.paths else None
        own = f"; its path: own jitter box D={path.D}, eta={_show(path.eta)}, R={path.R}" if path else ""
        lines.append(f"cca[{n}]: {f.cca.name}" + (f" ({params})" if params else "") + own)
    return "\n".join(lines)


def statement(q: Any, answer: str) -> str:
    """What exactly was checked, with its quantifiers."""
    net = q.network
    if q.periodic:
        scope = (f"periodic runs of the {net.model_name} model (steps 0..{net.T - 1} repeated forever, "
                 f"period {net.T - 1}; every rule holds at every step, reading the earlier periods)")
    else:
        history = max(net.path(n).R for n in range(net.flows))
        scope = (f"traces of the {net.model_name} model over steps 0..{net.T - 1} (steps 0..{history - 1} "
                 f"are free history; any initial state)")
    conds = [f"assume {a}" for a in q.assume] + ([f"find {q.find}"] if q.find else [])
    body = "; ".join(conds) or "no conditions"
    if answer == "sat":
        return f"checked: there EXISTS one of the {scope} with: {body}"
    if answer == "unsat":
        return f"checked: NO one of the {scope} has: {body}"
    return f"checked: undecided whether any of the {scope} has: {body}"


def _show(v: Any) -> str:
    from fractions import Fraction

    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, Fraction):
        return f"{float(v):g}"
    return str(v)


@cli.command()
@click.argument("file_or_name")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a value of the proof's shared sections, e.g. network.buffer=2, steady_state.T=12.")
@click.option("--timeout", type=float, default=None, metavar="S",
              help="Per SMT check: building, solving and validating it (also: compiling the proof when "
                   "it is read); a timeout is 'unknown'.")
@click.option("--solver", default="z3", show_default=True, help=SOLVER_HELP)
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default=None,
              help="Directory for counterexample traces (JSON, CSV, PNG) [default: counterexamples/PROOF].")
@click.option("--verbose", "-v", is_flag=True, help="Also print what each check states.")
def prove(file_or_name: str, overrides: tuple[str, ...], timeout: float | None, solver: str,
          save_dir: str | None, verbose: bool) -> None:
    """Check a proof FILE_OR_NAME: its lemmas and, if it has one, its steady-state theorem.

    Exit code 0 only if every check is proved; 1 if any is refuted or vacuous, 3 if any is
    unknown (timeout), 4 if a trace failed independent validation."""
    from ccac.proof import check_proof, load_proof

    limits.check_seconds(timeout)
    limits.show_progress(True)
    with limits.time_limit(timeout, "building the proof's formulas to check its expressions"):
        proof = load_proof(file_or_name, list(overrides))
    click.echo(f"proof: {proof.name} ({proof.source})")
    if proof.description:
        click.echo("  " + proof.description.splitlines()[0])
    report = check_proof(proof, solver=solver, timeout=timeout)
    out = Path(save_dir) if save_dir else Path("counterexamples") / proof.name
    for check in report.checks:
        mark = {"proved": "proved", "refuted": "REFUTED", "vacuous": "VACUOUS", "unknown": "UNKNOWN",
                "invalid": "INVALID TRACE"}[check.verdict]
        click.echo(f"  [{check.kind}] {check.name}: {mark} ({check.seconds:.2f} s)"
                   + (f" - {check.detail}" if check.detail else ""))
        if verbose or check.verdict != "proved":
            click.echo(f"      checked: {check.statement}")
        for culprit in check.culprits:
            click.echo(f"      violated: {culprit}")
        if check.result is not None and check.result.trace is not None and check.verdict != "proved":
            out.mkdir(parents=True, exist_ok=True)
            stem = out / "".join(ch if ch.isalnum() else "_" for ch in f"{check.kind}_{check.name}")
            Path(f"{stem}.json").write_text(json.dumps(check.result.to_json(), indent=1))
            check.result.trace.write_csv(f"{stem}.csv")
            check.result.plot(f"{stem}.png")
            validated = "validated" if check.result.validated else "FAILED validation"
            click.echo(f"      counterexample ({validated}): {stem}.json, .csv, .png")
    verdict = report.verdict
    if report.theorem:
        click.echo(f"THEOREM: {report.theorem}")
    click.echo(f"{verdict}: {sum(c.verdict == 'proved' for c in report.checks)}/{len(report.checks)} checks "
               f"proved in {report.seconds:.1f} s ({solver})")
    if proof.expect is not None:
        click.echo(f"expected: {proof.expect} ({'as expected' if verdict == proof.expect else 'DIFFERENT'})")
    codes = {"proved": 0, "refuted": EXIT_MISMATCH, "vacuous": EXIT_MISMATCH, "unknown": EXIT_UNKNOWN,
             "invalid": EXIT_INVALID_TRACE}
    if codes[verdict]:
        sys.exit(codes[verdict])


@cli.command("list")
def list_cmd() -> None:
    """Show the models, the CCAs with their parameters, and the bundled queries."""
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
