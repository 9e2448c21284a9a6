"""``ccac prove``: check a proof, or strengthen or tighten it first and check the result.

    ccac prove FILE_OR_NAME [--set K=V] [--timeout S] [--solver NAME]
    ccac prove FILE_OR_NAME --candidate EXPR ... [--propose] [--write OUT.toml]
    ccac prove FILE_OR_NAME --tighten NAME --lo X --hi Y [--tol E] [--maximize] [--write OUT.toml]

Every run ends with the full check of one proof (``ccac.analysis.proof.check_proof``) printed check by
check, with the validated counterexample of each check that fails. Strengthening
(``ccac.analysis.strengthen``) and tightening (``ccac.analysis.tighten``) only choose which proof that is; the
file ``--write`` saves is that proof, and ``ccac prove OUT.toml`` checks it again on its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ccac.core import deadline, limits, progress
from ccac.solving.backends import SOLVER_HELP
from ccac.core.params import exact_text as show
from ccac.core.errors import CcacError
from ccac.report.presentation import EXIT_INVALID_TRACE, EXIT_MISMATCH, EXIT_UNKNOWN

if TYPE_CHECKING:
    from ccac.analysis.obligation import Check
    from ccac.analysis.tighten import Tightening

MARKS = {"proved": "proved", "refuted": "REFUTED", "vacuous": "VACUOUS", "unknown": "UNKNOWN",
         "invalid": "INVALID TRACE"}
CODES = {"proved": 0, "refuted": EXIT_MISMATCH, "vacuous": EXIT_MISMATCH, "unknown": EXIT_UNKNOWN,
         "invalid": EXIT_INVALID_TRACE}


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
@click.option("--verbose", "-v", is_flag=True, help="Also print what each check states.")
def prove(file_or_name: str, overrides: tuple[str, ...], timeout: float | None, solver: str | None,
          save_dir: str | None, candidates: tuple[str, ...], propose: bool, tighten_name: str | None,
          lo: str | None, hi: str | None, tol: str | None, maximize: bool, write_path: str | None,
          verbose: bool) -> None:
    """Check a proof FILE_OR_NAME: its lemmas and, if it has one, its steady-state theorem.

    With --candidate/--propose, first strengthen its region; with --tighten, first find the
    tightest value of one constant. Either way the proof that results is checked in full.

    Exit code 0 only if every check is proved; 1 if any is refuted or vacuous, 3 if any is
    unknown (timeout), 4 if a trace failed independent validation."""
    from ccac.solving.backends import backend
    from ccac.analysis.proof import check_proof
    from ccac.analysis.proof_file import READING, load_proof, parse_proof, proof_text

    limits.check_seconds(timeout)
    if solver is not None:
        backend(solver)  # bad input stops before the proof is read
    strengthening = bool(candidates) or propose
    if strengthening and tighten_name:
        raise CcacError("strengthen (--candidate, --propose) or tighten (--tighten), not both in one run")
    if tighten_name is None and (lo or hi or tol or maximize):
        raise CcacError("--lo, --hi, --tol and --maximize go with --tighten NAME")
    if tighten_name is not None and (lo is None or hi is None):
        raise CcacError("--tighten needs --lo and --hi")
    if write_path and not (strengthening or tighten_name):
        raise CcacError("--write saves a strengthened or tightened proof: add --candidate/--propose or --tighten")
    progress.show_progress(True)
    with deadline.time_limit(timeout, READING):
        proof = load_proof(file_or_name, list(overrides))
    solver = solver or proof.solver
    out = Path(save_dir) if save_dir else Path("counterexamples") / proof.name

    def report_check(check: Check) -> None:  # each check on its line as soon as it is decided
        echo_check(check, out, verbose)

    click.echo(f"proof: {proof.name} ({proof.source})")
    if proof.description:
        click.echo("\n".join("  " + line for line in proof.description.splitlines()))
    if strengthening:
        from ccac.analysis.strengthen import propose as proposals, strengthen

        pool = list(candidates) + (proposals(proof) if propose else [])
        click.echo(f"strengthen: {len(pool)} candidates")
        for c in pool:
            click.echo(f"  candidate: {c}")
        result = strengthen(proof, pool, solver, timeout, log=lambda r: click.echo(
            f"  closure with {len(r.kept)} candidates: {r.check.verdict} ({r.check.seconds:.2f} s)"
            + (f"; dropped (false on its validated trace): {'; '.join(r.dropped)}" if r.dropped else "")))
        click.echo(f"strengthen: {result.outcome}")
        for c in result.kept:
            click.echo(f"  kept: {c}")
        data = result.data()
        proof = parse_proof(data, proof.name, proof.source)
        click.echo("the strengthened proof, checked in full:")
        report = check_proof(proof, solver=solver, timeout=timeout, on_check=report_check)
        header = [f"{proof.name}, strengthened by `ccac prove --candidate/--propose`: {result.outcome}"]
    elif tighten_name is not None:
        from ccac.analysis.tighten import tighten

        direction = "max" if maximize else "min"
        click.echo(f"tighten: definitions.{tighten_name}, the {'largest' if maximize else 'smallest'} value "
                   f"in [{lo}, {hi}] at which the whole proof holds")
        t = tighten(proof, tighten_name, lo, hi, tol, direction, solver, timeout, log=lambda p: click.echo(
            f"  probe {tighten_name} = {show(p.value)}: {p.answer} ({p.report.verdict}: "
            f"{p.report.tally} checks, {p.seconds:.1f} s)"))
        for line in tighten_lines(t):
            click.echo(line)
        best = t.best
        if best is None:
            sys.exit(EXIT_UNKNOWN if any(p.answer == "unknown" for p in t.search.probes) else EXIT_MISMATCH)
        report = best.report
        for check in report.checks:
            report_check(check)
        data = t.data_at(best.value)
        click.echo(f"the proof at {tighten_name} = {show(best.value)}, checked in full:")
        header = [f"{proof.name}, tightened by `ccac prove --tighten {tighten_name}`: "
                  f"{tighten_lines(t)[0].removeprefix('tighten: ')}"]
    else:
        report = check_proof(proof, solver=solver, timeout=timeout, on_check=report_check)
    verdict = report.verdict
    if report.theorem:
        click.echo(f"THEOREM: {report.theorem}")
    click.echo(f"{verdict}: {report.tally} checks "
               f"proved in {report.seconds:.1f} s ({solver})")
    if write_path:
        Path(write_path).write_text(proof_text(data, header, verdict))
        click.echo(f"wrote {write_path} (check it with: ccac prove {write_path})")
    elif proof.expect is not None and not (strengthening or tighten_name):
        click.echo(f"expected: {proof.expect} ({'as expected' if verdict == proof.expect else 'DIFFERENT'})")
    if CODES[verdict]:
        sys.exit(CODES[verdict])


def echo_check(check: Check, out: Path, verbose: bool) -> None:
    """One check on its line; a failed check's statement and its validated counterexample, saved
    under ``out`` as JSON, CSV and PNG."""
    click.echo(f"  [{check.kind}] {check.name}: {MARKS[check.verdict]} ({check.seconds:.2f} s)"
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


def tighten_lines(t: Tightening) -> list[str]:
    """The tightening's verdict in words, with what it relies on."""
    name, best, failing = t.name, t.best, t.failing
    if t.search.bracket is None:
        lo, hi = t.search.probes[0], t.search.probes[1]
        if best is None:
            return [f"tighten: the proof holds at neither end ({name} = {show(lo.value)}: {lo.answer}, "
                    f"{show(hi.value)}: {hi.answer}); widen --lo/--hi or raise --timeout"]
        return [f"tighten: the proof holds at both ends of [{show(t.lo)}, {show(t.hi)}]; "
                f"{'lower --lo' if t.direction == 'min' else 'raise --hi'} to find where it stops"]
    assert best is not None and failing is not None
    unknown = ", ".join(show(u.value) for u in t.search.unknown) or "-"
    lines = [f"tighten: {name} = {show(best.value)} holds, {show(failing.value)} fails; unknown at: {unknown}",
             f"  bracket width {show(abs(best.value - failing.value))} (tol {show(t.tol)}); "
             f"{len(t.search.probes)} probes; every probe checked the whole proof",
             "  that every value beyond the holding end holds too assumes the verdict is monotone in "
             f"{name} (bisection does not check it)"]
    if t.wrong_way:
        end, flag = ("low", "--maximize") if t.direction == "min" else ("high", "without --maximize")
        lines.append(f"  note: the proof holds at the {end} end: {name} tightens the other way (try {flag})")
    return lines
