"""How far one cumulative curve has reached along another: the question behind loss detection,
FIFO service and queueing-delay readings, in two encodings.

Each of those rules compares a *probe* (what has been served, or acked, by step t) with the
admitted-bytes curve of every earlier step s: a byte admitted by s has been served by t iff
``keys[s] <= probe`` (or ``<``). The keys never decrease in s, so the steps reached form a
prefix ``0 .. p`` of the steps looked at: the *frontier* p. Rules then say things like "the
detected losses are at least the losses of every reached step and at most those of every
step not reached", which depend only on p.

Two encodings of the same constraints (a query's answer does not depend on the choice):

``pairs`` (the default)
    One comparison per (t, s) pair, each rule stated for every s. Quadratic in T, and what
    the solver handles best: every comparison is an atom it can decide and learn from.
``index``
    An integer frontier ``p`` per probe, pinned by two comparisons, ``keys[p] <= probe <
    keys[p+1]``, and every rule stated once, at p and p + 1. Looking a curve up at a
    solver-chosen step uses an uninterpreted function defined at every step (``f(s) =
    curve[s]``). Linear in T: what makes horizons in the thousands buildable at all.

The ``index`` style is exact, not an approximation: p is the unique step with
``keys[p] <= probe < keys[p+1]`` (``-1`` if none is reached, the last step looked at if all
are), and because both the keys and the curves a rule bounds are non-decreasing, a bound at p
(or p + 1) implies the bound at every earlier (later) step; ``tests/test_frontier.py`` checks
that both styles give the same answers on the library. ``ccac bench --encoding`` measures them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import z3

from ccac.encode.encoding import Cond, Encoding, Term, as_real, maximum

STYLES = ("pairs", "index")


@dataclass
class Lookups:
    """Curves that can be read at a solver-chosen step (``index`` style): one uninterpreted
    function per curve, equal to the curve at every step of the timeline."""

    enc: Encoding
    group: str
    _functions: dict[str, z3.FuncDeclRef] = field(default_factory=dict)

    def function(self, name: str, curve: Sequence[Term]) -> z3.FuncDeclRef:
        if name not in self._functions:
            f = z3.Function(self.enc.fresh_name(f"at_{name}"), z3.IntSort(self.enc.ctx), z3.RealSort(self.enc.ctx))
            self.enc.add(self.group, *(f(s) == as_real(value) for s, value in enumerate(curve)))
            self._functions[name] = f
        return self._functions[name]


class Frontier:
    """The steps s in 0 .. top whose key the probe has reached (``keys[s] <= probe``, or
    ``<`` when ``strict``): a prefix, since the keys never decrease."""

    def __init__(self, enc: Encoding, lookups: Lookups, keys_name: str, keys: Sequence[Term],
                 probe: Term, top: int, strict: bool, label: str) -> None:
        self.enc, self.lookups = enc, lookups
        self.keys_name, self.keys = keys_name, keys
        self.probe, self.top, self.strict = probe, top, strict
        self.group = lookups.group
        self._reached: dict[int, Cond] = {}
        self.p: z3.ArithRef | None = None
        if enc.style == "index" and top >= 0:
            self.p = enc.integer(f"reach_{label}")
            key = lookups.function(keys_name, keys)
            enc.add(self.group, self.p >= -1, self.p <= top,
                    z3.Implies(self.p >= 0, self._below(key(self.p))),
                    z3.Implies(self.p < top, z3.Not(self._below(key(self.p + 1)))))

    def _below(self, key: Term) -> Cond:
        return key < self.probe if self.strict else key <= self.probe

    def reached(self, s: int) -> Cond:
        """Whether step s (0 <= s <= top) is reached (built once per step)."""
        if s not in self._reached:
            self._reached[s] = self._below(self.keys[s]) if self.p is None else self.p >= s
        return self._reached[s]

    def at_least(self, x: Term, name: str, curve: Sequence[Term], guard: Cond = True) -> list[Cond]:
        """x >= curve[s] for every reached step s (curve non-decreasing), under ``guard``."""
        if self.p is None:
            return [z3.Implies(z3.And(guard, self.reached(s)), x >= curve[s]) for s in range(self.top + 1)]
        if self.top < 0:
            return []
        f = self.lookups.function(name, curve)
        return [z3.Implies(z3.And(guard, self.p >= 0), x >= f(self.p))]

    def at_least_each(self, x: Term, name: str, curve: Sequence[Term], guard: Cond = True) -> list[Cond]:
        """x >= curve[s] for every reached step s, for a curve that may fall: the pairs style
        states it at each step; the index style looks up the curve's running maximum (the most
        of curve[0 .. p]), which is non-decreasing and bounds x exactly when every reached
        step's value does."""
        if self.p is None:
            return self.at_least(x, name, curve, guard)
        peak = list(curve[:1])
        for value in curve[1:]:
            peak.append(maximum(peak[-1], value))
        return self.at_least(x, f"peak_{name}", peak, guard)

    def at_most(self, x: Term, name: str, curve: Sequence[Term], guard: Cond = True) -> list[Cond]:
        """x <= curve[s] for every step s not reached (curve non-decreasing), under ``guard``."""
        if self.p is None:
            return [z3.Implies(z3.And(guard, z3.Not(self.reached(s))), x <= curve[s])
                    for s in range(self.top + 1)]
        if self.top < 0:
            return []
        f = self.lookups.function(name, curve)
        return [z3.Implies(z3.And(guard, self.p < self.top), x <= f(self.p + 1))]

    def next_at(self, later: "Frontier") -> list[Cond]:
        """An implied fact for the solver: a later probe of the same keys that is no smaller
        reaches at least as far (``index`` style; the pairs style needs none)."""
        if self.p is None or later.p is None:
            return []
        return [later.p >= self.p]
