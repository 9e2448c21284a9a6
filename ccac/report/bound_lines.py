"""What ``ccac bound`` prints after its probes: how the formula was solved, the bracket in words
with what it relies on, the boundary counterexample's heading, and the exit code. The analysis
room is above this one, so a bound is read through :class:`BoundView`."""

from __future__ import annotations

from fractions import Fraction
from typing import Protocol, Sequence

from ccac.core.params import exact_text as show
from ccac.report.presentation import EXIT_INVALID_TRACE, EXIT_MISMATCH, EXIT_UNKNOWN, ProbedValue, answer_line


MONOTONE_CAVEAT = ("each probe is an exact answer at its value; that a's answer holds for every "
                   "value below a, and b's above b, assumes the answer is monotone in the parameter")


class ProbeView(ProbedValue, Protocol):
    """The query's answer ("sat", "unsat" or "unknown") at one exact value, and why if unknown."""

    @property
    def reason(self) -> str | None: ...


def rebuild_note(key: str, why: str) -> str:
    """Said before the probes when the parameter cannot be a solver constant."""
    return f"note: {key} cannot be a solver constant ({why}); rebuilding the formula for each probe"


def probe_line(key: str, p: ProbeView) -> str:
    """One probe as it is answered."""
    why = f" ({p.reason})" if p.reason and p.answer == "unknown" else ""
    return f"probe {key} = {show(p.value)}: {p.answer}{why}, {p.seconds:.2f} s"


class BoundView(Protocol):
    """A bisection for the flip of an answer (:class:`ccac.analysis.bound.BoundResult`)."""

    @property
    def key(self) -> str: ...  # the moved number as --set names it
    @property
    def lo(self) -> Fraction: ...
    @property
    def hi(self) -> Fraction: ...
    @property
    def tol(self) -> Fraction: ...
    @property
    def probes(self) -> Sequence[ProbeView]: ...
    @property
    def bracket(self) -> tuple[ProbeView, ProbeView] | None: ...
    @property
    def unknown(self) -> Sequence[ProbeView]: ...
    @property
    def status(self) -> str: ...  # "flip", "no flip" or "unknown"
    @property
    def width(self) -> Fraction | None: ...
    @property
    def premise(self) -> str | None: ...  # at the unsat end: "satisfiable", "vacuous" or "unknown"
    @property
    def solver(self) -> str: ...
    @property
    def solver_version(self) -> str: ...
    @property
    def rebuilt(self) -> str | None: ...
    @property
    def reused(self) -> bool: ...
    @property
    def validated(self) -> bool | None: ...


def solver_line(r: BoundView) -> str:
    """The solver, and whether the formula was built once and the solver shared."""
    return (f"solver: {r.solver} {r.solver_version}; formula "
            + ("rebuilt for each probe" if r.rebuilt else "built once, parameter as a solver constant")
            + ("; one solver reused across probes" if r.reused else ""))


def result_lines(r: BoundView) -> list[str]:
    """The verdict, in words, with what it relies on (the monotonicity it assumes)."""
    if r.bracket is None:
        lo, hi = r.probes[0], r.probes[1]
        if r.status == "unknown":
            return [f"bound: no bracket: the answer is unknown at "
                    f"{' and '.join(show(p.value) for p in (lo, hi) if p.answer == 'unknown')} "
                    "(raise --timeout or move --lo / --hi)"]
        return [f"bound: no flip in [{show(r.lo)}, {show(r.hi)}]: {lo.answer} at both ends "
                "(if the answer is monotone in the parameter there is none inside; widen --lo / --hi)"]
    a, b = r.bracket
    width = r.width
    assert width is not None   # there is a bracket
    unknown = ", ".join(show(u.value) for u in r.unknown) or "-"
    unsat_end = a if a.answer == "unsat" else b
    premise = {"satisfiable": f"  premise at {show(unsat_end.value)}: the assumptions alone admit a validated trace",
               "vacuous": f"  VACUOUS at {show(unsat_end.value)}: the assumptions alone admit no trace there, "
                          "so the flip is where the assumptions stop having traces, not the find",
               "unknown": f"  premise at {show(unsat_end.value)}: not checked (unknown within its time)"}
    return [f"bound: {r.key} flips between {show(a.value)} ({a.answer}) and "
            f"{show(b.value)} ({b.answer}); unknown at: {unknown}",
            premise[r.premise or "unknown"],
            f"  width {show(width)} ({'<=' if width <= r.tol else 'ABOVE'} tol {show(r.tol)}"
            f"{'' if width <= r.tol else ': unknown probes split it into gaps <= tol'}); "
            f"{len(r.probes)} probes",
            f"  {MONOTONE_CAVEAT.replace('the parameter', r.key)}"]


def boundary_line(key: str, value: Fraction) -> str:
    return f"boundary counterexample (the sat probe closest to the flip): {key} = {show(value)}"


def plot_title(query: str, key: str, value: Fraction) -> str:
    return f"{query}: {key} = {show(value)}"


def exit_code(r: BoundView, traced: bool) -> int:
    """4 the boundary trace (``traced``) failed validation; 3 unknown at an end or a bracket wider
    than tol; 1 no flip, or a vacuous premise at the unsat end; else 0."""
    if traced and not r.validated:
        return EXIT_INVALID_TRACE
    if r.status == "unknown" or (r.width is not None and r.width > r.tol):
        return EXIT_UNKNOWN
    if r.status == "no flip" or r.premise == "vacuous":
        return EXIT_MISMATCH
    return 0


def probe_lines(key: str, p: ProbeView, boundary: bool, timeout: float | None) -> list[str]:
    """The lines above a probe's trace on the page (``boundary``: the bracket's sat end)."""
    return [f"{key} = {show(p.value)}" + (" (the bracket's sat end: the boundary counterexample)" if boundary else ""),
            answer_line(p.answer, timeout, p.reason), f"{p.seconds:.2f} s"]


def untraced_probe_note(p: ProbeView, violations: list[str] | None) -> str:
    """Why a probe has no trace on the page, or its unknown's reason ("" when there is nothing to say)."""
    if p.answer == "sat" and violations:
        return "the trace failed validation: not shown"
    if p.answer == "sat" and violations is None:
        return "trace not kept: find_bound(..., traces=True) keeps each sat probe's"
    return p.reason or ""
