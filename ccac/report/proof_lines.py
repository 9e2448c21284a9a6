"""What ``ccac prove`` (and ``ccac synthesize --prove``) print about a proof: its checks line by
line, strengthening and tightening as they go, the verdict, and the exit code of each verdict.

The analysis room is above this one, so its objects are read through the small protocols here:
only the fields a line shows.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Protocol, Sequence

from ccac.core.params import exact_text as show
from ccac.report.presentation import EXIT_INVALID_TRACE, EXIT_MISMATCH, EXIT_UNKNOWN, ProbedValue, failure_code

# A verdict as its check's line shows it, and as the exit code of a run whose worst verdict it is.
MARKS = {"proved": "proved", "refuted": "REFUTED", "vacuous": "VACUOUS", "unknown": "UNKNOWN",
         "invalid": "INVALID TRACE"}
CODES = {"proved": 0, "refuted": EXIT_MISMATCH, "vacuous": EXIT_MISMATCH, "unknown": EXIT_UNKNOWN,
         "invalid": EXIT_INVALID_TRACE}


class CheckView(Protocol):
    """One SMT obligation of a proof and its verdict (:class:`ccac.analysis.obligation.Check`)."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def verdict(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def statement(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def culprits(self) -> Sequence[str]: ...


class ReportView(Protocol):
    """A proof's checks summed up (:class:`ccac.analysis.proof.ProofReport`)."""

    @property
    def verdict(self) -> str: ...
    @property
    def tally(self) -> str: ...  # "proved/all" checks
    @property
    def seconds(self) -> float: ...
    @property
    def theorem(self) -> str | None: ...


class RoundView(Protocol):
    """One closure check while strengthening (:class:`ccac.analysis.strengthen.Round`)."""

    @property
    def kept(self) -> Sequence[str]: ...
    @property
    def dropped(self) -> Sequence[str]: ...
    @property
    def check(self) -> CheckView: ...


class ProbeView(ProbedValue, Protocol):
    """The whole proof checked at one value of a constant ("holds", "fails" or "unknown";
    :class:`ccac.analysis.tighten.TightenProbe`)."""

    @property
    def report(self) -> ReportView: ...


class SearchView(Protocol):
    """A bisection's probes, its bracket and the unknown probes inside it."""

    @property
    def probes(self) -> Sequence[ProbeView]: ...
    @property
    def bracket(self) -> tuple[ProbeView, ProbeView] | None: ...
    @property
    def unknown(self) -> Sequence[ProbeView]: ...


class TighteningView(Protocol):
    """A tightened constant (:class:`ccac.analysis.tighten.Tightening`)."""

    @property
    def name(self) -> str: ...
    @property
    def direction(self) -> str: ...  # "min" or "max"
    @property
    def lo(self) -> Fraction: ...
    @property
    def hi(self) -> Fraction: ...
    @property
    def tol(self) -> Fraction: ...
    @property
    def search(self) -> SearchView: ...
    @property
    def best(self) -> ProbeView | None: ...
    @property
    def failing(self) -> ProbeView | None: ...
    @property
    def wrong_way(self) -> bool: ...


def header_lines(name: str, source: str, description: str) -> list[str]:
    """The proof's name, where it was read from, and its description indented."""
    return [f"proof: {name} ({source})"] + ["  " + line for line in description.splitlines()]


def check_lines(check: CheckView, verbose: bool) -> list[str]:
    """One check on its line; with ``verbose`` or when it failed, what it states; what it violated."""
    lines = [f"  [{check.kind}] {check.name}: {MARKS[check.verdict]} ({check.seconds:.2f} s)"
             + (f" - {check.detail}" if check.detail else "")]
    if verbose or check.verdict != "proved":
        lines.append(f"      checked: {check.statement}")
    return lines + [f"      violated: {culprit}" for culprit in check.culprits]


def counterexample_line(validated: bool | None, stem: str) -> str:
    """Where a failed check's counterexample was saved, and whether it passed validation."""
    return f"      counterexample ({'validated' if validated else 'FAILED validation'}): {stem}.json, .csv, .png"


def verdict_lines(report: ReportView, solver: str | None = None) -> list[str]:
    """The theorem if it was stated, then the verdict with its tally and time (and ``solver``)."""
    theorem = [f"THEOREM: {report.theorem}"] if report.theorem else []
    used = f" ({solver})" if solver is not None else ""
    return theorem + [f"{report.verdict}: {report.tally} checks proved in {report.seconds:.1f} s{used}"]


def expected_line(expect: str, verdict: str) -> str:
    return f"expected: {expect} ({'as expected' if verdict == expect else 'DIFFERENT'})"


def written_line(path: str) -> str:
    return f"wrote {path} (check it with: ccac prove {path})"


# ---------------------------------------------------------------------- strengthening
def candidate_lines(pool: Sequence[str]) -> list[str]:
    return [f"strengthen: {len(pool)} candidates"] + [f"  candidate: {c}" for c in pool]


def round_line(r: RoundView) -> str:
    """One closure check while strengthening, and the candidates its trace dropped."""
    return (f"  closure with {len(r.kept)} candidates: {r.check.verdict} ({r.check.seconds:.2f} s)"
            + (f"; dropped (false on its validated trace): {'; '.join(r.dropped)}" if r.dropped else ""))


def strengthened_lines(outcome: str, kept: Sequence[str]) -> list[str]:
    return [f"strengthen: {outcome}"] + [f"  kept: {c}" for c in kept] + \
        ["the strengthened proof, checked in full:"]


def strengthened_header(name: str, outcome: str) -> str:
    """The comment heading a strengthened proof's file."""
    return f"{name}, strengthened by `ccac prove --candidate/--propose`: {outcome}"


# ---------------------------------------------------------------------- tightening
def tighten_intro(name: str, maximize: bool, lo: str, hi: str) -> str:
    return (f"tighten: definitions.{name}, the {'largest' if maximize else 'smallest'} value "
            f"in [{lo}, {hi}] at which the whole proof holds")


def probe_line(name: str, p: ProbeView) -> str:
    """One value of the constant tried: whether the whole proof holds there, and its checks."""
    return (f"  probe {name} = {show(p.value)}: {p.answer} ({p.report.verdict}: {p.report.tally} checks, "
            f"{p.seconds:.1f} s)")


def tighten_lines(t: TighteningView) -> list[str]:
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


def tightened_lines(proof: str, t: TighteningView, value: Fraction) -> tuple[str, str]:
    """The line before the full check of proof ``proof`` at ``value``, and the comment heading its file."""
    verdict = tighten_lines(t)[0].removeprefix("tighten: ")
    return (f"the proof at {t.name} = {show(value)}, checked in full:",
            f"{proof}, tightened by `ccac prove --tighten {t.name}`: {verdict}")


def untightened_code(t: TighteningView) -> int:
    """The exit code when no value holds: unknown if some probe was, else a mismatch."""
    return failure_code(decided=all(p.answer != "unknown" for p in t.search.probes))


def unbounded_intro(window: int, statement: str) -> str:
    return f"unbounded (Spacer, states are windows of {window} steps): {statement}"


def unbounded_lines(spacer: str, seconds: float, sizes: dict[str, int], invariant: str | None,
                    reason: str) -> list[str]:
    """What Spacer said, on how big a problem, and the invariant it found."""
    said = {"unsat": "never (an inductive invariant)", "sat": "reached (a counterexample over windows)",
            "unknown": "unknown"}[spacer]
    out = [f"  Spacer: {said} in {seconds:.2f} s ({', '.join(f'{k} {v}' for k, v in sizes.items())})"]
    if invariant is not None:
        out.append(f"  invariant (a region over steps t-{sizes['window'] - 1}..t, checked by ccac below):")
        out.append(f"    {invariant}")
    if reason:
        out.append(f"  {reason}")
    return out


def unbounded_verdict(verdict: str) -> str:
    meaning = {"proved": "the region, once held at its k steps, is never left (infinite horizon); "
                         "entering it is not part of this claim",
               "refuted": "the region can be left (validated counterexample)",
               "invalid": "a counterexample failed independent validation",
               "vacuous": "a check of the invariant is vacuous",
               "unknown": "no answer"}[verdict]
    return f"{MARKS[verdict]} (unbounded): {meaning}"
