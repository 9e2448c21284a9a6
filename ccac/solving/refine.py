"""Refining enclosed non-linear uses until a sat trace is exact (:mod:`ccac.encode.nonlinear`).

In the ``enclose`` mode each non-linear use's value is only bounded, so a sat answer may be a
trace whose node values are not the exact products, quotients or powers of its operands. Such
a trace is never reported: :func:`refined` reads each sat answer back, and when it fails the
independent validation and some node's value differs from the exact value of its operands in
the trace, cuts that node's piece at the operand's value (:func:`ccac.encode.nonlinear.refine`:
both new pieces' bounds hold on their pieces, so this only removes values no exact trace has,
and the node is exact at that value) and asks again. It stops at a validated trace (or one
whose failure is no node's), at unsat (sound: every enclosure contains the exact values), or
after :data:`MAX_ROUNDS` rounds, as unknown naming the node still wrong.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable

from ccac.encode import nonlinear
from ccac.solving.solvers import Outcome, evaluate

#: the most refinement rounds one answer may take before it is unknown
MAX_ROUNDS = 40


def wrong_nodes(nodes: list[nonlinear.Node], assignment: dict[str, Any]) -> list[tuple[nonlinear.Node, Fraction]]:
    """The nodes whose value in ``assignment`` is not the exact value of their operands there,
    each with its split operand's value (where to cut)."""
    memo: dict[int, Any] = {}

    def value_of(term: Any) -> Any:
        return evaluate(term, assignment, memo)

    wrong = []
    for node in nodes:
        exact = nonlinear.exact_value(node, value_of)
        if exact is not None and Fraction(value_of(node.value)) != exact:
            wrong.append((node, Fraction(value_of(node.split))))
    return wrong


#: the largest denominator of a breakpoint near a trace's value (exact values keep growing otherwise)
BREAKPOINT_DENOMINATOR = 1024


def _near(at: Fraction, breakpoints: list[Fraction]) -> Fraction:
    """Where to cut for a wrong value at ``at``: the simplest nearby rational, unless it is a
    breakpoint already (then ``at`` itself, where the refined node is exact). Any cut is sound."""
    simple = at.limit_denominator(BREAKPOINT_DENOMINATOR)
    return at if simple in breakpoints else simple


def refined(nodes: list[nonlinear.Node], ask: Callable[[list[Any]], Outcome],
            validated: Callable[[Outcome], bool], rounds: int = MAX_ROUNDS) -> Outcome:
    """The answer of ``ask(added)`` (``added``: the refinement constraints so far, a growing
    list) once no node needs refining, with the rounds taken; unknown after ``rounds`` rounds."""
    added: list[Any] = []
    done = 0
    outcome = ask(added)
    while outcome.answer == "sat":
        wrong = wrong_nodes(nodes, outcome.assignment or {})
        if not wrong or validated(outcome):
            break
        if done >= rounds:
            node, at = wrong[0]
            reason = (f"non-linear enclosure still inexact after {done} refinement rounds (the limit): "
                      f"{node.label()} with its operand at {at}")
            return replace(outcome, answer="unknown", reason=reason, assignment=None, refinements=done)
        for node, at in wrong:
            added += nonlinear.refine(node, _near(at, node.breakpoints))
        done += 1
        outcome = ask(added)
    return replace(outcome, refinements=done)
