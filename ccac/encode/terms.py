"""The one walk over z3 terms: a formula's distinct subterms, and which of them are variables.

Used where a formula is inspected rather than solved: how far a build has got (the step of the
latest constraint's variables), whether an expression reads the trace's steps, what theories a
formula needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import z3


def subterms(roots: Iterable[z3.ExprRef], limit: int | None = None) -> Iterator[z3.ExprRef]:
    """Each distinct subterm of ``roots`` (by z3's term id), depth first, the roots included;
    at most ``limit`` of them."""
    stack = list(roots)
    seen: set[int] = set()
    while stack and (limit is None or len(seen) < limit):
        term = stack.pop()
        if term.get_id() in seen:
            continue
        seen.add(term.get_id())
        yield term
        stack.extend(term.children())


def is_variable(term: z3.ExprRef) -> bool:
    """An uninterpreted constant: one of the formula's unknowns (a curve at a step, a CCA's
    state, a solver-chosen parameter)."""
    return z3.is_const(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED
