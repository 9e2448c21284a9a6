"""What ``ccac sweep`` prints: the plan, the table of points, the summary, and the exit code of
the answers found. The analysis room is above this one, so a point is read through
:class:`PointView`."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Protocol, Sequence

from ccac.report.presentation import (EXIT_BAD_INPUT, EXIT_INVALID_TRACE, EXIT_MISMATCH, EXIT_UNKNOWN, answer_line,
                                      validated_text)

COLUMNS = ("answer", "validated", "seconds", "cached", "note")  # note: an error, or a proof's failed checks
ORDER = {"query": ("sat", "unsat", "unknown", "error"),
         "proof": ("proved", "refuted", "vacuous", "unknown", "error")}  # other answers follow


class PointView(Protocol):
    """One point of the grid (:class:`ccac.analysis.sweep.Point`): its values as shown, its
    result (the stored JSON of a query's answer or a proof's verdict) and whether the store had it."""

    @property
    def shown(self) -> tuple[str, ...]: ...
    @property
    def result(self) -> Mapping[str, Any]: ...
    @property
    def cached(self) -> bool: ...
    @property
    def answer(self) -> str: ...


def plan_line(points: int, stored: int, store: str, groups: int, families: int | None, where: str | None) -> str:
    """How many points there are, how many the store has, and where the rest are computed
    (``families``: tasks that share a solver each, None when none do)."""
    return (f"sweep: {plural(points, 'point')}, {stored} in the store ({store}), {groups} to compute"
            + (f" in {families} {'family' if families == 1 else 'families'} sharing a solver each"
               if families is not None else "")
            + (f" on {where}" if where else ""))


def interrupted_line(stored: int, points: int) -> str:
    return f"interrupted: {stored} of {points} points are stored; run the same command again to resume"


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns under the header and a rule."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [header, tuple("-" * w for w in widths), *rows]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


def cells(point: PointView) -> tuple[str, ...]:
    """A point's row: its values, then :data:`COLUMNS`."""
    r = point.result
    return point.shown + (point.answer, validated_text(r.get("validated")), f"{r.get('seconds', 0.0):.3f}",
                          "yes" if point.cached else "no",
                          (r.get("error") or (r.get("reason") if point.answer != "unknown" else "") or "")
                          .replace("\n", " "))


def summary_line(kind: str, points: Sequence[PointView], seconds: float) -> str:
    """The answers counted, the points reused, and the time computed (points with the same query
    share one result) against the time in all."""
    counts = Counter(p.answer for p in points)
    summary = ", ".join(plural(counts[a], a) if a == "error" else f"{counts[a]} {a}"
                        for a in answer_order(kind, counts))
    reused = sum(p.cached for p in points)
    computed = sum(float(r.get("seconds", 0.0))
                   for r in {id(p.result): p.result for p in points if not p.cached}.values())
    return (f"\n{plural(len(points), 'point')}: {summary}; {reused} reused from the store; "
            f"{computed:.1f} s of computation, {seconds:.1f} s in all")


def errors_line(errors: int, points: int) -> str:
    return f"error: {errors} of {points} points could not be run (see the note column)"


def exit_code(points: Sequence[PointView]) -> int:
    """4 a trace failed validation; 1 a proof refuted, or a proof or query point vacuous; 2 errors;
    3 unknowns; else 0."""
    answers = {p.answer for p in points}
    if any(p.result.get("validated") is False or p.answer == "invalid" for p in points):
        return EXIT_INVALID_TRACE
    if answers & {"refuted", "vacuous"}:
        return EXIT_MISMATCH
    if "error" in answers:
        return EXIT_BAD_INPUT
    if "unknown" in answers:
        return EXIT_UNKNOWN
    return 0


def answer_order(kind: str, counts: Counter) -> tuple[str, ...]:
    """The kind's answers in their order, then any other answer counted."""
    return ORDER[kind] + tuple(sorted(set(counts) - set(ORDER[kind])))


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def untraced_note(point: PointView) -> str:
    """Why a sat point's trace is not on the page ("" for a point that has none to show)."""
    if point.answer != "sat":
        return ""
    if point.result.get("validated") is False:
        return "the trace failed validation: not shown"
    return "" if point.result.get("trace") else \
        "trace not stored (answered before the store kept traces): rerun with --fresh"


def point_lines(overrides: Sequence[str], point: PointView, timeout: float | None) -> list[str]:
    """The lines above a point's trace on the page: its overrides, its answer, and why it has no trace."""
    r = point.result
    answer = (answer_line(point.answer, timeout, r.get("reason")) if point.answer in ("sat", "unsat", "unknown")
              else point.answer)
    note = r.get("error") or (r.get("reason") if point.answer != "unknown" else None)
    return ([f"--set {o}" for o in overrides] + [answer]
            + [f"validated: {validated_text(r.get('validated'))}; {float(r.get('seconds', 0.0)):.3f} s"
               + ("; from the store" if point.cached else "")]
            + [line for line in (note, untraced_note(point)) if line])
