"""Bisection over exact rationals for a yes/no answer that may also be "unknown".

Shared by ``ccac bound`` (where a query flips between sat and unsat as a parameter moves) and
``ccac prove --tighten`` (where a proof stops holding as one of its constants moves):

* lo and hi are probed first; they must get different decisive answers.
* The bracket [a, b] always has one decisive answer at a and the other at b. "unknown" (a
  timeout) is an outcome of its own, never taken for either: an unknown point stays inside the
  bracket and the next probe is the midpoint of the widest gap between probed points, so the
  search probes around it. A decisive probe replaces the bracket end with the same answer;
  unknown points left outside the new bracket are dropped.
* The search stops when b - a <= tol, or when unknown points split the bracket into gaps all
  <= tol (the bracket is then wider than tol, and those points are reported).
* Over whole numbers (``integer=True``: a step count, packets per BDP) every probe is a whole
  number and tol is at least 1, so the narrowest bracket is two neighbours.

Every probe is an exact fact at its value, so the two ends always enclose at least one flip.
That it is *the* threshold assumes the answer is monotone in the value; bisection does not
check it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Generic, Protocol, TypeVar

from ccac.core.errors import CcacError
from ccac.core.params import exact_text as show, to_fraction


class Answered(Protocol):
    value: Fraction
    answer: str  # any decisive answer, or "unknown"


P = TypeVar("P", bound=Answered)


@dataclass
class Search(Generic[P]):
    """The probes in the order they were made, the final bracket (None if lo and hi did not
    get two different decisive answers) and the unknown probes inside it."""

    probes: list[P]
    bracket: tuple[P, P] | None = None
    unknown: list[P] = field(default_factory=list)


def search_range(lo: Any, hi: Any, tol: Any) -> tuple[Fraction, Fraction, Fraction]:
    """``--lo``, ``--hi`` and ``--tol`` read exactly and checked (tol defaults to (hi - lo) / 100)."""
    lo, hi = to_fraction(lo, "--lo"), to_fraction(hi, "--hi")
    if lo >= hi:
        raise CcacError(f"--lo must be below --hi, got {show(lo)} >= {show(hi)}")
    tol = (hi - lo) / 100 if tol is None else to_fraction(tol, "--tol")
    if tol <= 0:
        raise CcacError(f"--tol must be positive, got {show(tol)}")
    return lo, hi, tol


def bisect(probe: Callable[[Fraction], P], lo: Fraction, hi: Fraction, tol: Fraction,
           integer: bool = False) -> Search[P]:
    """Bracket the flip of ``probe(value).answer`` in [lo, hi] to within ``tol`` (over whole
    numbers when ``integer``: lo and hi must then be whole)."""
    if integer:
        tol = max(tol, Fraction(1))
    search: Search[P] = Search([])

    def ask(value: Fraction) -> P:
        p = probe(value)
        search.probes.append(p)
        return p

    a, b = ask(lo), ask(hi)
    if "unknown" in (a.answer, b.answer) or a.answer == b.answer:
        return search
    unknown: list[P] = []
    while b.value - a.value > tol:
        points = [a.value, *sorted(u.value for u in unknown), b.value]
        width, left = max((y - x, x) for x, y in zip(points, points[1:]))
        if width <= tol:
            break
        p = ask(left + (width // 2 if integer else width / 2))
        if p.answer == "unknown":
            unknown.append(p)
            continue
        if p.answer == a.answer:
            a = p
        else:
            b = p
        unknown = [u for u in unknown if a.value < u.value < b.value]
    search.bracket, search.unknown = (a, b), sorted(unknown, key=lambda u: u.value)
    return search
