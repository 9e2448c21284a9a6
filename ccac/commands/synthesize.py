"""``ccac synthesize FILE [--timeout S] [--out PATH] [--limit N]``: search a template for a CCA
that meets a goal (:mod:`ccac.synthesis`), with its progress on the terminal, and write the CCA
found as a CCA file."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ccac.analysis.executors import executor
from ccac.analysis.proof import check_proof
from ccac.analysis.proof_file import load_proof
from ccac.commands.prove import echo_check
from ccac.commands.run_page import RunPage
from ccac.core.errors import CcacError
from ccac.report import proof_lines, synthesis_lines as lines
from ccac.report.html_page import Section
from ccac.report.presentation import failure_code
from ccac.synthesis import written
from ccac.solving.validate import step_notes
from ccac.synthesis.cegis import Counterexample, synthesize
from ccac.synthesis.spec import Spec, load_spec

if TYPE_CHECKING:
    from ccac.analysis.obligation import Check


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
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the search as one self-contained interactive page (.html): its log, each "
                   "counterexample that refuted a candidate as linked, zoomable plots, and the CCA found.")
def synthesize_cmd(file: str, timeout: float, out_path: str | None, limit: int | None, workers: int | None,
                   scheduler: str | None, proof_path: str | None, html_path: str | None) -> None:
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
    page = RunPage(html_path, f"synthesize: {path.name}")
    spec = load_spec(path)
    page.echo(*lines.header_lines(
        str(path), spec.description.strip(), _relative(spec.template.source), spec.template.size,
        [(h.name, len(h.choices)) for h in spec.template.holes],
        [(g.name, g.label, g.data["query"]["find"]) for g in spec.goals], spec.settings))
    log: list[str] = []

    def echo(line: str) -> None:   # the search's progress, on the terminal and kept for the page
        click.echo(line)
        log.append(line)

    started = time.monotonic()
    with executor(workers or (None if scheduler else 1), scheduler) as where:
        out = synthesize(spec, timeout, echo, limit, where.map, where.workers)
    page.add(Section(log))
    for k, cex in enumerate(out.counterexamples, 1):
        page.add(counterexample_section(spec, k, cex))
    found = None if out.found is None else spec.template.describe(spec.assignment(out.found))
    page.echo(lines.summary(out, found, time.monotonic() - started))
    if out.found is not None:
        target = Path(out_path) if out_path else path.parent / f"{spec.cca_name}_synthesized.toml"
        written.write(spec, out.found, target)
        click.echo(lines.written_line(str(target)))
        try:
            confirm_written(spec, target, timeout, out.found, page)
            if proof_path is not None:
                prove_found(Path(proof_path), timeout, page)
        finally:
            page.add(Section([f"the CCA found, as {target} holds it:", "", target.read_text()] if target.exists()
                             else [f"{target} was removed: the CCA read from it did not meet every goal"]))
            page.write()
        return
    page.write()
    sys.exit(failure_code(decided=out.exhausted))


def counterexample_section(spec: Spec, k: int, cex: Counterexample) -> Section:
    """Counterexample ``k`` of the search on a page: which candidate failed which goal, and the
    validated trace, with what holds at each step (:func:`ccac.solving.validate.step_notes`)."""
    query = spec.query(cex.goal, cex.candidate)
    heading = [f"counterexample {k}: goal {cex.goal.name} ({cex.goal.label}), find: {query.find}",
               f"candidate {cex.candidate}: {spec.template.describe(spec.assignment(cex.candidate))} meets the find "
               f"on this trace (validated)"]
    return Section(heading, cex.trace, None, step_notes(query, cex.trace))


def prove_found(proof_path: Path, timeout: float, page: RunPage) -> None:
    """Check the proof file about the CCA just written, as ``ccac prove`` does; exit as it would
    if the proof does not hold."""
    proof = load_proof(str(proof_path))
    page.echo(lines.proving_line(str(proof_path)))
    out = Path("counterexamples") / proof.name

    def report_check(check: Check) -> None:
        echo_check(check, out, False)
        page.check(check)

    report = check_proof(proof, proof.solver, timeout, report_check)
    page.echo(*proof_lines.verdict_lines(report))
    if proof_lines.CODES[report.verdict]:
        sys.exit(proof_lines.CODES[report.verdict])


def _relative(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def confirm_written(spec: Spec, target: Path, timeout: float, proved: int, page: RunPage) -> None:
    """Ask every goal again of the file just written, as written (:func:`ccac.synthesis.written.recheck`:
    the unsat of candidate ``proved`` carries over where the file's formula is the one proved),
    printing each as it is decided. If one does not hold, the file is removed and the command
    exits 1 (a counterexample, or a goal whose premise admits no trace) or 3 (no answer)."""
    page.echo(lines.recheck_intro(str(target)))
    failed = []
    for check in written.recheck(spec, target, timeout, proved=proved):
        page.echo(lines.recheck_line(check.goal, check.answer, check.line, check.seconds))
        if not check.holds:
            failed.append(check)
    if not failed:
        page.echo(lines.confirmed_line(str(target)))
        return
    target.unlink()
    page.echo(lines.unconfirmed_line(str(target), [check.goal for check in failed]))
    sys.exit(failure_code(decided=all(check.answer == "sat" or check.premise == "vacuous" for check in failed)))
