"""``ccac synthesize FILE [--timeout S] [--out PATH] [--limit N]``: search a template for a CCA
that meets a goal (:mod:`ccac.synthesis`), with its progress on the terminal, and write the CCA
found as a CCA file."""

from __future__ import annotations

import sys
import time
from pathlib import Path


import click

from ccac.analysis.executors import executor
from ccac.analysis.proof import check_proof
from ccac.analysis.proof_file import load_proof
from ccac.commands.prove import CODES, echo_check
from ccac.core.errors import CcacError
from ccac.report.presentation import EXIT_MISMATCH, EXIT_UNKNOWN
from ccac.synthesis import written
from ccac.synthesis.cegis import Outcome, synthesize
from ccac.synthesis.spec import Spec, load_spec


@click.command("synthesize")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--timeout", type=float, default=600, show_default=True, metavar="S",
              help="Seconds for one verifier call (one goal of one candidate); beyond it that candidate is unknown.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Where to write the CCA found [default: NAME_synthesized.toml beside FILE].")
@click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop after N verifier iterations.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Verify N candidates at once and prune in N parts, in a local process pool [default: 1; "
                   "with --scheduler, the cluster's workers].")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run the verifier and the pruning on this Dask scheduler (e.g. tcp://host:8786); its workers "
                   "need ccac installed and FILE and its template at the same absolute paths.")
@click.option("--prove", "proof_path", type=click.Path(dir_okay=False), default=None, metavar="PROOF",
              help="Once the CCA is written, check this proof file about it (its [cca] names the file --out "
                   "writes), as `ccac prove PROOF` does: lemmas and steady-state theorems.")
def synthesize_cmd(file: str, timeout: float, out_path: str | None, limit: int | None, workers: int | None,
                   scheduler: str | None, proof_path: str | None) -> None:
    """Find a CCA in FILE's template whose every goal query is unsat, or show that none is.

    FILE is a synthesis file: [synthesize] template = "a CCA file with [holes]" and [[goal]]
    tables, each a query (by name, file or written out) whose find the CCA must never meet.
    Exit 0: found (written to --out); 1: no candidate meets the goal (each refuted by a
    validated trace); 3: undecided (verifier timeouts or --limit)."""
    path = Path(file)
    if not path.is_file():
        raise CcacError(f"no such synthesis file: {file}")
    if proof_path is not None and not Path(proof_path).is_file():
        raise CcacError(f"no such proof file: {proof_path}", "--prove")
    spec = load_spec(path)
    holes = "; ".join(f"{h.name}: {len(h.choices)}" for h in spec.template.holes) or "none"
    description = spec.description.strip()
    click.echo(f"synthesize: {path} ({description})" if description else f"synthesize: {path}")
    click.echo(f"template: {_relative(spec.template.source)}, {spec.template.size} candidates (holes {holes})")
    for goal in spec.goals:
        click.echo(f"goal {goal.name} ({goal.label}): never {goal.data['query']['find']}")
    if spec.settings:
        click.echo("the goals set the CCA's " + ", ".join(f"{k} = {v}" for k, v in spec.settings.items())
                   + ": every candidate is verified with them, and the file written carries them")
    started = time.monotonic()
    with executor(workers or (None if scheduler else 1), scheduler) as where:
        out = synthesize(spec, timeout, lambda line: click.echo(line), limit, where.map, where.workers)
    click.echo(summary(spec, out, time.monotonic() - started))
    if out.found is not None:
        target = Path(out_path) if out_path else path.parent / f"{spec.cca_name}_synthesized.toml"
        written.write(spec, out.found, target)
        click.echo(f"wrote: {target}")
        confirm_written(spec, target, timeout, out.found)
        if proof_path is not None:
            prove_found(Path(proof_path), timeout)
        return
    sys.exit(EXIT_MISMATCH if out.exhausted else EXIT_UNKNOWN)


def prove_found(proof_path: Path, timeout: float) -> None:
    """Check the proof file about the CCA just written, as ``ccac prove`` does; exit as it would
    if the proof does not hold."""
    proof = load_proof(str(proof_path))
    click.echo(f"prove: {proof_path}")
    out = Path("counterexamples") / proof.name
    report = check_proof(proof, proof.solver, timeout, lambda check: echo_check(check, out, False))
    if report.theorem:
        click.echo(f"THEOREM: {report.theorem}")
    click.echo(f"{report.verdict}: {report.tally} checks proved in {report.seconds:.1f} s")
    if CODES[report.verdict]:
        sys.exit(CODES[report.verdict])


def _relative(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def summary(spec: Spec, out: Outcome, seconds: float) -> str:
    counts = (f"{out.iterations} iterations, {len(out.counterexamples)} counterexamples, {len(out.refuted)} candidates "
              f"refuted by the verifier, {len(out.pruned)} pruned on a counterexample's path, "
              + (f"{out.suspected} suspected there and not checked on their own, " if out.suspected else "")
              + f"{len(out.unknown)} unknown; {seconds:.1f} s (verifier {out.verifier_seconds:.1f} s, generator "
              f"{out.generator_seconds:.1f} s)\n  {pruning(out)}")
    if out.found is not None:
        return f"found: {spec.template.describe(spec.assignment(out.found))}\n  {counts}"
    if out.exhausted:
        return (f"none: no CCA in this template meets the goal: each of its {out.size} candidates fails a goal on a "
                f"validated trace of the model\n  {counts}")
    return (f"undecided: {out.size - len(out.refuted) - len(out.pruned)} candidates neither found to meet the goal "
            f"nor refuted\n  {counts}")


def pruning(out: Outcome) -> str:
    """How much the counterexamples' paths spared the verifier: the candidates set aside there
    (pruned, or suspected and not yet checked), of those the verifier did not ask itself."""
    spared = len(out.pruned) + out.suspected
    unasked = out.size - len(out.refuted) - len(out.unknown) - (out.found is not None)
    share = f" ({100 * spared / unasked:.0f}%)" if unasked else ""
    rest = "; the search ended before the others" if out.found is not None and spared < unasked else ""
    return (f"pruning: {spared} of the {unasked} candidates the verifier did not ask were set aside on "
            f"counterexamples' paths{share}{rest}")


def confirm_written(spec: Spec, target: Path, timeout: float, proved: int) -> None:
    """Ask every goal again of the file just written, as written (:func:`ccac.synthesis.written.recheck`:
    the unsat of candidate ``proved`` carries over where the file's formula is the one proved),
    printing each as it is decided. If one does not hold, the file is removed and the command
    exits 1 (a counterexample, or a goal whose premise admits no trace) or 3 (no answer)."""
    click.echo(f"re-checking every goal with the CCA read from {target}:")
    failed = []
    for check in written.recheck(spec, target, timeout, proved=proved):
        click.echo(f"  goal {check.goal}: {check.answer}; {check.line} ({check.seconds:.2f} s)")
        if not check.holds:
            failed.append(check)
    if not failed:
        click.echo(f"confirmed: {target}, queried as written, answers every goal unsat with its premise satisfiable")
        return
    target.unlink()
    names = ", ".join(check.goal for check in failed)
    click.echo(f"NOT confirmed: {target} does not meet goal {names} as written; removed it")
    decided = all(check.answer == "sat" or check.premise == "vacuous" for check in failed)
    sys.exit(EXIT_MISMATCH if decided else EXIT_UNKNOWN)
