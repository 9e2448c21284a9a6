"""Making enclosed non-linear uses exact in a sat trace (:mod:`ccac.encode.nonlinear`): repair,
then refinement.

In the ``enclose`` mode each non-linear use's value is only bounded, so a sat answer may be a
trace whose node values are not the exact products, quotients or powers of their operands.
Such a trace is never reported. :func:`refined` reads each sat answer back and, when it fails
the independent validation and some node's value differs from the exact value of its operands:

1. **Repairs** it (:func:`repaired`): wrong nodes' split operands are pinned to their values
   in the trace and the nodes' values to the exact operation with them
   (:func:`ccac.encode.nonlinear.pinned`: linear in the other operand), and the formula is
   solved again under these pins (for these solves only). A sat answer there is a trace of the
   unpinned formula too; nodes it gets wrong are pinned in turn, up to :data:`REPAIR_SOLVES`
   solves. A trace with every node exact is the answer (validated as any other). z3 tends to
   move an operand just off each new breakpoint, so refinement alone rarely ends on a free
   run; a pinned operand cannot move.
2. Else **refines**: cuts each wrong node's piece near the operand's value
   (:func:`ccac.encode.nonlinear.refine`: both new pieces' bounds hold on their pieces, so this
   only removes values no exact trace has) and asks again. The cut is a rational of few bits
   near the value (:func:`_cut`): cutting at the trace's own values would put their ever
   longer numerators and denominators into the formula and into z3's next answer. A product
   wrong in more than :data:`BOXES_AFTER` rounds is cut on its other factor too (:func:`_boxes`).

It stops at a trace with every node exact (or one whose failure is no node's), at unsat (sound:
every enclosure contains the exact values; an unsat under pins is not an answer), or after
:data:`MAX_ROUNDS` refinement rounds, as unknown naming the node still wrong.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable

from ccac.core.limits import number_bits
from ccac.encode import nonlinear
from ccac.solving.solvers import Outcome, evaluate

#: the most refinement rounds one answer may take before it is unknown
MAX_ROUNDS = 40
#: the most solves one repair may take (:func:`repaired`)
REPAIR_SOLVES = 24

#: ``ask(added, pins)``: the answer on the formula, the refinement constraints ``added`` so far (a
#: growing list) and ``pins`` (constraints for this solve only)
Ask = Callable[[list[Any], list[Any]], Outcome]


def wrong_nodes(nodes: list[nonlinear.Node], assignment: dict[str, Any]) -> list[tuple[nonlinear.Node, Fraction]]:
    """The nodes whose value in ``assignment`` is not the exact value of their operands there,
    each with its split operand's value (where to cut, or pin)."""
    memo: dict[int, Any] = {}

    def value_of(term: Any) -> Any:
        return evaluate(term, assignment, memo)

    wrong = []
    for node in nodes:
        exact = nonlinear.exact_value(node, value_of)
        if exact is not None and Fraction(value_of(node.value)) != exact:
            wrong.append((node, Fraction(value_of(node.split))))
    return wrong


#: the largest denominator of the first cut tried near a trace's value
SIMPLE_DENOMINATOR = 1024
#: the most bits of a cut (numerator plus denominator, for the trace's value itself) and the
#: finest grid a cut is put on: multiples of 2 ** -CUT_BITS
CUT_BITS = 64


def _cut(at: Fraction, breakpoints: list[Fraction]) -> Fraction | None:
    """Where to cut for a wrong value at ``at`` (inside a piece: a node is exact at its
    breakpoints), the first of these strictly inside its piece: the simplest rational near
    ``at`` (denominator at most :data:`SIMPLE_DENOMINATOR`); ``at`` itself (the node is then
    exact there) if it has at most :data:`CUT_BITS` bits; the multiple of 2 ** -k nearest ``at``
    for k = 8, 16, ..., CUT_BITS. None if the piece is narrower than that grid. The formula's
    constants so keep few bits; any cut is sound."""
    lo = max((b for b in breakpoints if b < at), default=None)
    hi = min((b for b in breakpoints if b > at), default=None)
    candidates = [at.limit_denominator(SIMPLE_DENOMINATOR)] + ([at] if number_bits(at) <= CUT_BITS else [])
    for k in range(8, CUT_BITS + 1, 8):
        scaled = at * 2 ** k
        candidates += sorted((Fraction(math.floor(scaled), 2 ** k), Fraction(math.ceil(scaled), 2 ** k)),
                             key=lambda c: abs(c - at))
    return next((c for c in candidates if (lo is None or c > lo) and (hi is None or c < hi)), None)


def repaired(nodes: list[nonlinear.Node], wrong: list[tuple[nonlinear.Node, Fraction]], ask: Ask,
             added: list[Any]) -> tuple[Outcome | None, float]:
    """A sat outcome in which every node is exact, found by pinning wrong nodes' operands
    (:func:`ccac.encode.nonlinear.pinned`), or None; and the seconds its solves took.

    Pinning every wrong node at once fails when one node's operand is computed from another's
    value (a window grown by ``alpha * alpha / cwnd`` is the next step's divisor): its pinned
    value is the old trace's, which the exact update no longer gives. So the wrong nodes are
    pinned earliest first (in the order the build made them, the order of the steps) in a
    batch that doubles after a sat solve (whose pins are kept: its trace is the next one read)
    and halves after an unsat one (whose pins are dropped); a node that cannot be pinned alone
    is passed over until the next sat solve. :data:`REPAIR_SOLVES` solves at most; the first
    batch is every wrong node."""
    order = {id(node): i for i, node in enumerate(nodes)}
    kept: list[Any] = []
    stuck: set[int] = set()   # nodes that cannot be pinned alone at their value in this trace
    batch, seconds = len(wrong), 0.0
    for _ in range(REPAIR_SOLVES):
        earliest = sorted((pair for pair in wrong if id(pair[0]) not in stuck),
                          key=lambda pair: order[id(pair[0])])[:batch]
        if not earliest:
            break
        trial = kept + [pin for node, at in earliest for pin in nonlinear.pinned(node, at)]
        outcome = ask(added, trial)
        seconds += outcome.seconds
        if outcome.answer == "sat":
            kept, batch, stuck = trial, batch * 2, set()
            wrong = wrong_nodes(nodes, outcome.assignment or {})
            if not wrong:
                return replace(outcome, repaired=True, seconds=seconds), seconds
        elif batch == 1:
            stuck.add(id(earliest[0][0]))
        else:
            batch //= 2
    return None, seconds


#: the refinement rounds a product may be wrong in, cut on its split factor alone, before its
#: other factor is split too (:func:`ccac.encode.nonlinear.refine_other`)
BOXES_AFTER = 2


def _boxes(wrong: list[tuple[nonlinear.Node, Fraction]], assignment: dict[str, Any],
           failures: dict[int, int]) -> list[Any]:
    """Count a refinement round against each wrong node; a product wrong in more than
    :data:`BOXES_AFTER` rounds is cut on its other factor too, near that factor's value
    (one operand's pieces alone keep failing when z3 moves the other)."""
    added: list[Any] = []
    memo: dict[int, Any] = {}
    for node, _ in wrong:
        failures[id(node)] = failures.get(id(node), 0) + 1
        if node.kind != "mul" or failures[id(node)] <= BOXES_AFTER:
            continue
        at = Fraction(evaluate(node.other, assignment, memo))
        cut = _cut(at, node.other_breakpoints or list(nonlinear.INITIAL_BREAKPOINTS))
        added += nonlinear.refine_other(node, cut) if cut is not None else []
    return added


def refined(nodes: list[nonlinear.Node], ask: Ask, validated: Callable[[Outcome], bool],
            rounds: int = MAX_ROUNDS) -> Outcome:
    """The answer of ``ask(added, [])`` once no node needs refining (repaired, or refined), with
    the refinement rounds taken and the seconds of all its solves; unknown after ``rounds`` rounds."""
    added: list[Any] = []
    failures: dict[int, int] = {}   # refinement rounds each node was wrong in
    done = 0
    outcome = ask(added, [])
    seconds = outcome.seconds
    while outcome.answer == "sat":
        wrong = wrong_nodes(nodes, outcome.assignment or {})
        if not wrong or validated(outcome):
            break
        repair, spent = repaired(nodes, wrong, ask, added)
        seconds += spent
        if repair is not None:
            outcome = repair
            break
        cuts = [(node, _cut(at, node.breakpoints)) for node, at in wrong]
        if done >= rounds or all(cut is None for _, cut in cuts):
            node, at = wrong[0]
            why = f"{done} refinement rounds (the limit)" if done >= rounds else \
                f"its pieces narrowed to 2^-{CUT_BITS} (ccac.solving.refine.CUT_BITS)"
            reason = f"non-linear enclosure still inexact after {why}: {node.label()} with its operand at {at}"
            return replace(outcome, answer="unknown", reason=reason, assignment=None, refinements=done,
                           seconds=seconds)
        for node, cut in cuts:
            added += nonlinear.refine(node, cut) if cut is not None else []
        added += _boxes(wrong, outcome.assignment or {}, failures)
        done += 1
        outcome = ask(added, [])
        seconds += outcome.seconds
    return replace(outcome, refinements=done, seconds=seconds)
