"""What ``ccac synthesize`` prints: the synthesis file's template and goals, the search's outcome
in words, and the re-check of the CCA written. The synthesis room is above this one, so its
outcome is read through :class:`OutcomeView`."""

from __future__ import annotations

from typing import Any, Collection, Protocol


class OutcomeView(Protocol):
    """A search's outcome (:class:`ccac.synthesis.cegis.Outcome`): candidates by what decided them."""

    @property
    def found(self) -> int | None: ...
    @property
    def size(self) -> int: ...
    @property
    def refuted(self) -> Collection[int]: ...
    @property
    def pruned(self) -> Collection[int]: ...
    @property
    def unknown(self) -> Collection[int]: ...
    @property
    def suspected(self) -> int: ...
    @property
    def counterexamples(self) -> Collection[Any]: ...
    @property
    def iterations(self) -> int: ...
    @property
    def verifier_seconds(self) -> float: ...
    @property
    def generator_seconds(self) -> float: ...
    @property
    def exhausted(self) -> bool: ...


def header_lines(path: str, description: str, template: str, size: int, holes: list[tuple[str, int]],
                 goals: list[tuple[str, str, str]], settings: dict[str, Any]) -> list[str]:
    """The file, its template (``holes``: each hole's name and number of choices), each goal
    (name, label, the find it must never meet) and the CCA settings the goals fix."""
    shown = "; ".join(f"{name}: {choices}" for name, choices in holes) or "none"
    lines = [f"synthesize: {path} ({description})" if description else f"synthesize: {path}",
             f"template: {template}, {size} candidates (holes {shown})"]
    lines += [f"goal {name} ({label}): never {find}" for name, label, find in goals]
    if settings:
        lines.append("the goals set the CCA's " + ", ".join(f"{k} = {v}" for k, v in settings.items())
                     + ": every candidate is verified with them, and the file written carries them")
    return lines


def summary(out: OutcomeView, found: str | None, seconds: float) -> str:
    """The outcome in words (``found``: the CCA found, described), with the search's counts."""
    counts = (f"{out.iterations} iterations, {len(out.counterexamples)} counterexamples, {len(out.refuted)} candidates "
              f"refuted by the verifier, {len(out.pruned)} pruned on a counterexample's path, "
              + (f"{out.suspected} suspected there and not checked on their own, " if out.suspected else "")
              + f"{len(out.unknown)} unknown; {seconds:.1f} s (verifier {out.verifier_seconds:.1f} s, generator "
              f"{out.generator_seconds:.1f} s)\n  {pruning(out)}")
    if found is not None:
        return f"found: {found}\n  {counts}"
    if out.exhausted:
        return (f"none: no CCA in this template meets the goal: each of its {out.size} candidates fails a goal on a "
                f"validated trace of the model\n  {counts}")
    return (f"undecided: {out.size - len(out.refuted) - len(out.pruned)} candidates neither found to meet the goal "
            f"nor refuted\n  {counts}")


def pruning(out: OutcomeView) -> str:
    """How much the counterexamples' paths spared the verifier: the candidates set aside there
    (pruned, or suspected and not yet checked), of those the verifier did not ask itself."""
    spared = len(out.pruned) + out.suspected
    unasked = out.size - len(out.refuted) - len(out.unknown) - (out.found is not None)
    share = f" ({100 * spared / unasked:.0f}%)" if unasked else ""
    rest = "; the search ended before the others" if out.found is not None and spared < unasked else ""
    return (f"pruning: {spared} of the {unasked} candidates the verifier did not ask were set aside on "
            f"counterexamples' paths{share}{rest}")


def written_line(target: str) -> str:
    return f"wrote: {target}"


def recheck_intro(target: str) -> str:
    return f"re-checking every goal with the CCA read from {target}:"


def recheck_line(goal: str, answer: str, line: str, seconds: float) -> str:
    """One goal asked again of the file written: its answer and what decided it."""
    return f"  goal {goal}: {answer}; {line} ({seconds:.2f} s)"


def confirmed_line(target: str) -> str:
    return f"confirmed: {target}, queried as written, answers every goal unsat with its premise satisfiable"


def unconfirmed_line(target: str, failed: list[str]) -> str:
    """The written file did not meet the goals ``failed``, and was removed."""
    return f"NOT confirmed: {target} does not meet goal {', '.join(failed)} as written; removed it"


def proving_line(proof: str) -> str:
    return f"prove: {proof}"
