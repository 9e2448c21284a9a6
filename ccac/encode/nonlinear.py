"""Non-linear nodes of the expression language: products, quotients and integer powers of solver
quantities, and the constraints that give each node's fresh value its meaning.

The compiler (:mod:`ccac.encode.expr`) turns ``a * b`` (both solver quantities), ``a / b`` (b
one) and ``x ** n`` (x one, n a whole number) into a fresh real, a :class:`Node`, collected by
the build under way (:func:`collecting`). What the fresh value is allowed to be is chosen per
solve (:data:`MODES`):

* ``exact``: the exact relation in z3's non-linear real arithmetic: ``z == a * b``;
  ``b * z == a`` where ``b != 0`` (z free where b is 0); ``z == x * ... * x``. z3 may answer
  unknown, which is reported as unknown.
* ``enclose``: linear bounds on pieces of one operand's range (the *split* operand: x of a
  product or a power, the divisor of a quotient), each piece's bounds containing every exact
  value there (:func:`product_piece`, :func:`quotient_piece`, :func:`power_piece`). A trace may
  satisfy the bounds and not the exact relation: :mod:`ccac.solving.refine` then pins such
  nodes' operands to the trace's values (:func:`pinned`) to find a trace with every node exact,
  or adds breakpoints near the operand values the trace shows and solves again. At a breakpoint
  both adjacent pieces apply, and their bounds meet at the exact value, so a refined node is
  exact there.

A node outside any build (a static check of a CCA file) is made and dropped: its value is then
unconstrained, which over-approximates.

Rational powers ``x ** (p/q)`` are not nodes: in a CCA rule they are open choices (:mod:`ccac.encode.rules`)
whose value y >= 0 satisfies :func:`root_band`, a band on the integer powers ``y ** q`` and
``x ** p``, both nodes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import z3

from ccac.encode.encoding import num, term_context, terms_in

#: the per-solve choice of what a non-linear node's value is allowed to be
MODES = ("exact", "enclose")
#: the mode a solve uses unless told: chosen by measurement (docs/performance.md)
DEFAULT_MODE = "enclose"
#: the relative tolerance of a rational power's value: y is a value of ``x ** (p/q)`` when
#: ``y >= 0`` and ``y ** q`` lies between ``x**p (1 - tol)**q`` and ``x**p (1 + tol)**q``
ROOT_TOLERANCE = Fraction(1, 2**20)
#: the largest |n| of an integer power x ** n of a solver quantity
MAX_EXPONENT = 8
#: the largest q of a rational power x ** (p/q)
MAX_ROOT_DEGREE = 8
#: the breakpoints every node's split operand starts with: the sign split at 0 (every piece's
#: envelope is then one-signed, and a quotient's pieces keep away from 0) and +-1, one unit of
#: the quantities rules combine (an MSS-scaled window when alpha = 1, one BDP when C = R = 1)
INITIAL_BREAKPOINTS = (Fraction(-1), Fraction(0), Fraction(1))

KINDS = ("mul", "div", "pow")


@dataclass(eq=False)
class Node:
    """One non-linear use: ``value`` stands for ``split * other`` (mul), ``other / split`` (div)
    or ``split ** exponent`` (pow). ``breakpoints`` are the split operand's piece ends."""

    kind: str
    split: z3.ArithRef
    other: Any                 # the other factor or the numerator (a term or a number); None for pow
    exponent: int
    value: z3.ArithRef
    where: str
    text: str
    breakpoints: list[Fraction] = field(default_factory=lambda: list(INITIAL_BREAKPOINTS))
    #: a product's other factor's piece ends, once it is split too (:func:`refine_other`); None before
    other_breakpoints: list[Fraction] | None = None

    def label(self) -> str:
        return f"{self.where}: `{self.text}`"


_NODES: ContextVar[list[Node] | None] = ContextVar("non-linear nodes of the build under way", default=None)
_FREE = itertools.count()


@contextmanager
def collecting() -> Iterator[list[Node]]:
    """Collect the nodes made inside (for this thread) into the list yielded."""
    nodes: list[Node] = []
    token = _NODES.set(nodes)
    try:
        yield nodes
    finally:
        _NODES.reset(token)


def make(kind: str, split: z3.ArithRef, other: Any, exponent: int, where: str, text: str) -> z3.ArithRef:
    """A fresh real standing for one non-linear use, registered with the build under way."""
    nodes = _NODES.get()
    name = f"nl!{len(nodes)}" if nodes is not None else f"nl!free{next(_FREE)}"
    value = z3.Real(name, split.ctx if z3.is_expr(split) else term_context())
    if nodes is not None:
        nodes.append(Node(kind, split, other, exponent, value, where, text))
    return value


# ---------------------------------------------------------------------- exact values
def exact_value(node: Node, value_of: Callable[[Any], Any]) -> Fraction | None:
    """The exact value of the node's operation on its operands' values (``value_of`` reads a
    term's value); None for a quotient by 0 (any value is allowed there)."""
    x = Fraction(value_of(node.split))
    if node.kind == "pow":
        return x ** node.exponent
    other = Fraction(value_of(node.other))
    if node.kind == "mul":
        return x * other
    return None if x == 0 else other / x


def exact_relation(node: Node) -> z3.BoolRef:
    """The node's exact meaning, in z3's non-linear real arithmetic."""
    x, z = node.split, node.value
    if node.kind == "mul":
        return z == x * node.other
    if node.kind == "div":
        return z3.Implies(x != 0, x * z == node.other)
    product = x
    for _ in range(node.exponent - 1):
        product = product * x
    return z == product


# ---------------------------------------------------------------------- enclosures
def pieces(breakpoints: list[Fraction]) -> list[tuple[Fraction | None, Fraction | None]]:
    """The pieces a sorted list of breakpoints cuts the line into, tails included (None: no end)."""
    ends: list[Fraction | None] = [None, *breakpoints, None]
    return list(zip(ends[:-1], ends[1:]))


def _inside(x: Any, lo: Fraction | None, hi: Fraction | None, open_at_zero: bool = False) -> Any:
    """``lo <= x <= hi`` (a missing end is no bound); an end at 0 excluded if ``open_at_zero``."""
    parts = []
    if lo is not None:
        parts.append(x > 0 if open_at_zero and lo == 0 else x >= num(lo))
    if hi is not None:
        parts.append(x < 0 if open_at_zero and hi == 0 else x <= num(hi))
    return z3.And(*parts)


def product_piece(x: Any, y: Any, z: Any, lo: Fraction | None, hi: Fraction | None) -> z3.BoolRef:
    """z = x * y for x in [lo, hi]. For y >= 0, x * y is a convex combination of lo * y and
    hi * y, so it lies between them; for y <= 0 the order turns. A missing end (a tail piece)
    drops the bound it would give, keeping the one that holds."""
    above_zero = [z >= num(lo) * y] if lo is not None else []
    above_zero += [z <= num(hi) * y] if hi is not None else []
    below_zero = [z <= num(lo) * y] if lo is not None else []
    below_zero += [z >= num(hi) * y] if hi is not None else []
    return z3.Implies(_inside(x, lo, hi), z3.And(z3.Implies(y >= 0, z3.And(*above_zero)),
                                                 z3.Implies(y <= 0, z3.And(*below_zero))))


def quotient_piece(a: Any, b: Any, z: Any, lo: Fraction | None, hi: Fraction | None) -> z3.BoolRef:
    """z = a / b for b in [lo, hi], a piece on one side of 0 (0 may be an end, excluded). For
    a >= 0, a / b falls as b grows on each side of 0, so it lies between a / hi and a / lo; a
    piece that ends at 0 keeps only the bound at its other end (a / b is unbounded towards 0);
    a tail keeps the bound at its end and the sign (a / b tends to 0). For a <= 0 the order turns."""
    low: list[Any] = []    # bounds z >= ... when a >= 0
    high: list[Any] = []   # bounds z <= ... when a >= 0
    if hi is not None and hi != 0:
        low.append(a / num(hi))
    if lo is not None and lo != 0:
        high.append(a / num(lo))
    if hi is None:
        low.append(num(0))
    if lo is None:
        high.append(num(0))
    above_zero = [z >= v for v in low] + [z <= v for v in high]
    below_zero = [z <= v for v in low] + [z >= v for v in high]
    return z3.Implies(_inside(b, lo, hi, open_at_zero=True), z3.And(z3.Implies(a >= 0, z3.And(*above_zero)),
                                                                    z3.Implies(a <= 0, z3.And(*below_zero))))


def power_piece(x: Any, n: int, z: Any, lo: Fraction | None, hi: Fraction | None) -> z3.BoolRef:
    """z = x ** n (n >= 2) for x in [lo, hi], a piece on one side of 0. x ** n is convex there
    when n is even or the piece is at or above 0, concave otherwise (odd n below 0). A convex
    function lies below its secant over the piece and above its tangent at any point; a concave
    one the other way. So: the secant on one side, the tangents at both ends and the middle on
    the other; a tail has no secant and its end's tangent only."""
    convex = n % 2 == 0 or (lo is not None and lo >= 0)
    ends = [c for c in (lo, hi) if c is not None]
    touch = ends + ([(lo + hi) / 2] if lo is not None and hi is not None else [])
    tangents = [num(c ** n) + num(n * c ** (n - 1)) * (x - num(c)) for c in touch]
    bounds = [z >= tangent if convex else z <= tangent for tangent in tangents]
    if lo is not None and hi is not None and lo != hi:
        secant = num(lo ** n) + num((hi ** n - lo ** n) / (hi - lo)) * (x - num(lo))
        bounds.append(z <= secant if convex else z >= secant)
    return z3.Implies(_inside(x, lo, hi), z3.And(*bounds))


def piece(node: Node, lo: Fraction | None, hi: Fraction | None) -> z3.BoolRef:
    """The node's bounds where its split operand lies in [lo, hi] (None: no end), made in its context."""
    with terms_in(node.value.ctx):
        if node.kind == "mul":
            return product_piece(node.split, node.other, node.value, lo, hi)
        if node.kind == "div":
            return quotient_piece(node.other, node.split, node.value, lo, hi)
        return power_piece(node.split, node.exponent, node.value, lo, hi)


def enclosure(node: Node, breakpoints: list[Fraction]) -> list[z3.BoolRef]:
    """The node's bounds on the pieces ``breakpoints`` (sorted, 0 among them) cut its split
    operand's range into; a quotient is free at 0 (no piece contains it)."""
    return [piece(node, lo, hi) for lo, hi in pieces(breakpoints)]


def constraints(nodes: list[Node], mode: str) -> list[z3.BoolRef]:
    """What the nodes' values are allowed to be in ``mode``."""
    if mode == "exact":
        return [exact_relation(n) for n in nodes]
    return [c for n in nodes for c in enclosure(n, n.breakpoints)]


def refine(node: Node, at: Fraction) -> list[z3.BoolRef]:
    """Cut the piece of ``node`` that holds ``at`` there: the two new pieces' bounds (each valid on
    its piece, so adding them only tightens what holds already); none if ``at`` is a breakpoint."""
    lo, hi = _cut(node.breakpoints, at)
    if lo is False:
        return []
    node.breakpoints = sorted([*node.breakpoints, at])
    return [piece(node, lo, at), piece(node, at, hi)]


def refine_other(node: Node, at: Fraction) -> list[z3.BoolRef]:
    """A product's other factor split too, its piece holding ``at`` cut there: McCormick-like
    boxes, each product bounded on a piece of both factors' ranges. The first time, the bounds
    on the other factor's :data:`INITIAL_BREAKPOINTS` pieces come with the cut. Each bound is
    :func:`product_piece` with the factors' roles swapped (z = y x for y on its piece), valid
    on its piece, so adding them only tightens what holds already."""
    assert node.kind == "mul", "only a product has two factors to split"
    added: list[z3.BoolRef] = []
    if node.other_breakpoints is None:
        node.other_breakpoints = list(INITIAL_BREAKPOINTS)
        added += [_other_piece(node, lo, hi) for lo, hi in pieces(node.other_breakpoints)]
    lo, hi = _cut(node.other_breakpoints, at)
    if lo is False:
        return added
    node.other_breakpoints = sorted([*node.other_breakpoints, at])
    return added + [_other_piece(node, lo, at), _other_piece(node, at, hi)]


def _cut(breakpoints: list[Fraction], at: Fraction) -> tuple[Any, Fraction | None]:
    """The ends of the piece ``at`` falls in (None: no end); (False, None) if ``at`` is an end."""
    if at in breakpoints:
        return False, None
    below = [b for b in breakpoints if b < at]
    above = [b for b in breakpoints if b > at]
    return (below[-1] if below else None), (above[0] if above else None)


def _other_piece(node: Node, lo: Fraction | None, hi: Fraction | None) -> z3.BoolRef:
    """A product's bounds where its other factor lies in [lo, hi], made in its context."""
    with terms_in(node.value.ctx):
        return product_piece(node.other, node.split, node.value, lo, hi)


def pinned(node: Node, at: Fraction) -> list[z3.BoolRef]:
    """The node made exact and linear: its split operand fixed at ``at`` and its value the exact
    operation with that operand (``at * other``, ``other / at``, ``at ** n``: linear in the
    other operand, which stays free); a quotient by 0 is left free, as in :func:`exact_relation`.
    Only a repair (:mod:`ccac.solving.refine`) adds these, for one solve: they narrow the
    formula to traces in which the node is exact, so a trace found under them is a real one,
    and an unsat under them proves nothing."""
    with terms_in(node.value.ctx):
        x, z, fixed = node.split, node.value, num(at)
        if node.kind == "mul":
            return [x == fixed, z == fixed * node.other]
        if node.kind == "div":
            return [x == fixed] + ([z == node.other / fixed] if at != 0 else [])
        return [x == fixed, z == num(at ** node.exponent)]


# ---------------------------------------------------------------------- rational powers
def root_band(y: Any, x: Any, p: int, q: int, power: Callable[[Any, int], Any]) -> Any:
    """y is a value of ``x ** (p/q)`` (p >= 1, q >= 2) for x >= 0: y >= 0 and y ** q between
    x ** p (1 - tol) ** q and x ** p (1 + tol) ** q (:data:`ROOT_TOLERANCE`); for x < 0 any
    value. ``power(term, n)`` is the term's n-th power (a node for a solver quantity)."""
    lo, hi = (1 - ROOT_TOLERANCE) ** q, (1 + ROOT_TOLERANCE) ** q
    base = power(x, p)
    top = power(y, q)
    return z3.Implies(x >= 0 if z3.is_expr(x) else z3.BoolVal(x >= 0, term_context()),
                      z3.And(y >= 0, top >= num(lo) * base, top <= num(hi) * base))


def in_root_band(y: Fraction, x: Fraction, p: int, q: int) -> bool:
    """Exactly: is ``y`` a value of ``x ** (p/q)`` (any value is, for x < 0)."""
    if x < 0:
        return True
    return y >= 0 and x ** p * (1 - ROOT_TOLERANCE) ** q <= y ** q <= x ** p * (1 + ROOT_TOLERANCE) ** q


#: the most bits the number under a root may have for :func:`exact_root` (bounded work)
MAX_ROOT_BITS = 4096


def exact_root(x: Fraction, p: int, q: int) -> Fraction:
    """A value of ``x ** (p/q)`` (x >= 0, p >= 1) as an exact rational within the tolerance: the
    integer q-th root of x ** p scaled by 2 ** (q k), over 2 ** k, with k large enough that the
    step 2 ** -k is below the tolerance times the root. Raises ValueError for a negative or
    absurdly large x."""
    if x < 0:
        raise ValueError(f"a rational power of a negative number ({x}) has no real value")
    v = Fraction(x) ** p
    if v == 0:
        return Fraction(0)
    if max(v.numerator.bit_length(), v.denominator.bit_length()) > MAX_ROOT_BITS:
        raise ValueError(f"the number under the root has more than {MAX_ROOT_BITS} bits")
    # 2 ** magnitude is within a factor 2 of v ** (1/q); the step must be below tol times the root
    magnitude = (v.numerator.bit_length() - v.denominator.bit_length()) // q - 1
    k = max(0, ROOT_TOLERANCE.denominator.bit_length() + 1 - magnitude)
    scaled = v * 2 ** (q * k)
    y = Fraction(_integer_root(scaled.numerator // scaled.denominator, q), 2 ** k)
    assert in_root_band(y, Fraction(x), p, q), "the scale makes the integer root's error below the tolerance"
    return y


def _integer_root(n: int, q: int) -> int:
    """The largest integer r with r ** q <= n (n >= 0), by Newton's method from above."""
    if n < 2:
        return n
    r = 1 << -(-n.bit_length() // q)   # 2 ** ceil(bits / q) >= the root
    while True:
        smaller = ((q - 1) * r + n // r ** (q - 1)) // q
        if smaller >= r:
            return r
        r = smaller
