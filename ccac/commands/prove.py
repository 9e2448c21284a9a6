"""``ccac prove``: check a proof, or strengthen or tighten it first and check the result.

    ccac prove FILE_OR_NAME [--set K=V] [--timeout S] [--solver NAME]
    ccac prove FILE_OR_NAME --candidate EXPR ... [--propose] [--write OUT.toml]
    ccac prove FILE_OR_NAME --tighten NAME --lo X --hi Y [--tol E] [--maximize] [--write OUT.toml]
    ccac prove FILE_OR_NAME --unbounded [--window N] [--timeout S]

Every run ends with the full check of one proof (``ccac.analysis.proof.check_proof``) printed check by
check, with the validated counterexample of each check that fails. Strengthening
(``ccac.analysis.strengthen``) and tightening (``ccac.analysis.tighten``) only choose which proof that is; the
file ``--write`` saves is that proof, and ``ccac prove OUT.toml`` checks it again on its own.
``--unbounded`` (``ccac.analysis.unbounded``) asks z3's Spacer whether the steady state's region,
once held at its k steps, is ever left, and checks the invariant it finds with the same
obligations.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ccac.core import deadline, limits, progress
from ccac.solving.backends import SOLVER_HELP
from ccac.core.errors import CcacError
from ccac.commands.run_page import RunPage
from ccac.report import proof_lines as lines

if TYPE_CHECKING:
    from ccac.analysis.obligation import Check
    from ccac.analysis.proof_file import Proof


@click.command("prove")
@click.argument("file_or_name")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a value of the proof's shared sections, e.g. network.buffer=2, steady_state.T=12.")
@click.option("--timeout", type=float, default=None, metavar="S",
              help="Per SMT check: building, solving and validating it (also: compiling the proof when "
                   "it is read); a timeout is 'unknown'.")
@click.option("--solver", default=None, help=SOLVER_HELP + " [default: the proof file's `solver`, else z3]")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default=None,
              help="Directory for counterexample traces (JSON, CSV, PNG) [default: counterexamples/PROOF].")
@click.option("--candidate", "candidates", multiple=True, metavar="EXPR",
              help="Strengthen the steady-state region: a candidate invariant at step t (repeatable); "
                   "the largest subset that closes the region is kept.")
@click.option("--propose", is_flag=True,
              help="Strengthen with candidates ccac writes from the model and the CCA's declared state.")
@click.option("--tighten", "tighten_name", default=None, metavar="NAME",
              help="Tighten the [definitions] constant NAME: the smallest value (or with --maximize the "
                   "largest) in [--lo, --hi] at which the whole proof holds, by bisection.")
@click.option("--lo", default=None, metavar="X", help="With --tighten: low end (exact: 0.1 is 1/10).")
@click.option("--hi", default=None, metavar="Y", help="With --tighten: high end.")
@click.option("--tol", default=None, metavar="E",
              help="With --tighten: stop at a bracket E wide [default: (hi - lo) / 100].")
@click.option("--maximize", is_flag=True, help="With --tighten: the largest value that holds, not the smallest.")
@click.option("--write", "write_path", type=click.Path(dir_okay=False), default=None,
              help="Write the strengthened or tightened proof as a proof file.")
@click.option("--unbounded", is_flag=True,
              help="Infinite-horizon closure by z3's Spacer (constrained Horn clauses): once the region has "
                   "held at its k steps, is it ever left? An invariant it finds is checked by ccac's own "
                   "obligations; --timeout bounds Spacer and each check.")
@click.option("--window", type=int, default=None, metavar="N",
              help="With --unbounded: the steps of the state [default: the model's look-back, at least k].")
@click.option("--verbose", "-v", is_flag=True, help="Also print what each check states.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the run as one self-contained interactive page (.html): every check, and each "
                   "refuted check's counterexample as linked, zoomable plots.")
def prove(file_or_name: str, overrides: tuple[str, ...], timeout: float | None, solver: str | None,
          save_dir: str | None, candidates: tuple[str, ...], propose: bool, tighten_name: str | None,
          lo: str | None, hi: str | None, tol: str | None, maximize: bool, write_path: str | None,
          unbounded: bool, window: int | None, verbose: bool, html_path: str | None) -> None:
    """Check a proof FILE_OR_NAME: its lemmas and, if it has one, its steady-state theorem.

    With --candidate/--propose, first strengthen its region; with --tighten, first find the
    tightest value of one constant. Either way the proof that results is checked in full.

    Exit code 0 only if every check is proved; 1 if any is refuted or vacuous, 3 if any is
    unknown (timeout), 4 if a trace failed independent validation."""
    from ccac.solving.backends import backend
    from ccac.analysis.proof import check_proof
    from ccac.analysis.proof_file import READING, load_proof, parse_proof, proof_text

    limits.check_seconds(timeout)
    page = RunPage(html_path)
    if solver is not None:
        backend(solver)  # bad input stops before the proof is read
    strengthening = bool(candidates) or propose
    if strengthening and tighten_name:
        raise CcacError("strengthen (--candidate, --propose) or tighten (--tighten), not both in one run")
    if tighten_name is None and (lo or hi or tol or maximize):
        raise CcacError("--lo, --hi, --tol and --maximize go with --tighten NAME")
    if tighten_name is not None and (lo is None or hi is None):
        raise CcacError("--tighten needs --lo and --hi")
    if unbounded and (strengthening or tighten_name or write_path):
        raise CcacError("--unbounded checks the proof's region as it is: not with --candidate, --propose, "
                        "--tighten or --write")
    if window is not None and not unbounded:
        raise CcacError("--window goes with --unbounded")
    if write_path and not (strengthening or tighten_name):
        raise CcacError("--write saves a strengthened or tightened proof: add --candidate/--propose or --tighten")
    progress.show_progress(True)
    with deadline.time_limit(timeout, READING):
        proof = load_proof(file_or_name, list(overrides))
    solver = solver or proof.solver
    out = Path(save_dir) if save_dir else Path("counterexamples") / proof.name

    def report_check(check: Check) -> None:  # each check on its line as soon as it is decided
        echo_check(check, out, verbose)
        page.check(check)

    page.title = proof.name
    page.echo(*lines.header_lines(proof.name, proof.source, proof.description))
    if unbounded:
        prove_unbounded(proof, window, solver, timeout, out, verbose, page)
        return
    if strengthening:
        from ccac.analysis.strengthen import propose as proposals, strengthen

        pool = list(candidates) + (proposals(proof) if propose else [])
        page.echo(*lines.candidate_lines(pool))
        result = strengthen(proof, pool, solver, timeout, log=lambda r: click.echo(lines.round_line(r)))
        page.echo(*lines.strengthened_lines(result.outcome, result.kept))
        data = result.data()
        proof = parse_proof(data, proof.name, proof.source)
        report = check_proof(proof, solver=solver, timeout=timeout, on_check=report_check)
        header = [lines.strengthened_header(proof.name, result.outcome)]
    elif tighten_name is not None:
        from ccac.analysis.tighten import tighten

        page.echo(lines.tighten_intro(tighten_name, maximize, str(lo), str(hi)))
        t = tighten(proof, tighten_name, lo, hi, tol, "max" if maximize else "min", solver, timeout,
                    log=lambda p: click.echo(lines.probe_line(tighten_name, p)))
        page.echo(*lines.tighten_lines(t))
        best = t.best
        if best is None:
            page.write()
            sys.exit(lines.untightened_code(t))
        report = best.report
        for check in report.checks:
            report_check(check)
        data = t.data_at(best.value)
        before, comment = lines.tightened_lines(proof.name, t, best.value)
        page.echo(before)
        header = [comment]
    else:
        report = check_proof(proof, solver=solver, timeout=timeout, on_check=report_check)
    verdict = report.verdict
    page.echo(*lines.verdict_lines(report, solver))
    if write_path:
        Path(write_path).write_text(proof_text(data, header, verdict))
        page.echo(lines.written_line(write_path))
    elif proof.expect is not None and not (strengthening or tighten_name):
        page.echo(lines.expected_line(proof.expect, verdict))
    page.write()
    if lines.CODES[verdict]:
        sys.exit(lines.CODES[verdict])


def prove_unbounded(proof: Proof, window: int | None, solver: str, timeout: float | None, out: Path,
                    verbose: bool, page: RunPage) -> None:
    """``--unbounded``: Spacer's answer, the invariant and ccac's checks of it, or the validated
    counterexample; exits with the answer's code."""
    from ccac.analysis.unbounded import from_proof, prove_unbounded as ask

    question = from_proof(proof, window)
    page.echo(lines.unbounded_intro(question.window, question.statement))
    answer = ask(question, timeout, solver, timeout)
    page.echo(*lines.unbounded_lines(answer.spacer, answer.spacer_seconds, answer.sizes, answer.invariant,
                                     answer.reason))
    checks = list(answer.checks)
    if answer.counterexample is not None:
        from ccac.analysis.obligation import Check

        checks.append(Check("unbounded", "closure", answer.answer, answer.counterexample.solve_seconds,
                            answer.reason, result=answer.counterexample))
    for check in checks:
        echo_check(check, out, verbose)
        page.check(check)
    page.echo(lines.unbounded_verdict(answer.answer))
    page.write()
    if lines.CODES[answer.answer]:
        sys.exit(lines.CODES[answer.answer])


def echo_lines(shown: list[str]) -> None:
    for line in shown:
        click.echo(line)


def echo_check(check: Check, out: Path, verbose: bool) -> None:
    """One check on its line; a failed check's statement and its validated counterexample, saved
    under ``out`` as JSON, CSV and PNG."""
    echo_lines(lines.check_lines(check, verbose))
    if check.result is not None and check.result.trace is not None and check.verdict != "proved":
        out.mkdir(parents=True, exist_ok=True)
        stem = out / "".join(ch if ch.isalnum() else "_" for ch in f"{check.kind}_{check.name}")
        Path(f"{stem}.json").write_text(json.dumps(check.result.to_json(), indent=1))
        check.result.trace.write_csv(f"{stem}.csv")
        check.result.plot(f"{stem}.png")
        click.echo(lines.counterexample_line(check.result.validated, str(stem)))

