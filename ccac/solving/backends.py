"""The one door to every solver: :func:`backend` turns a name into a function from z3
formulas and a time limit to an :class:`~ccac.solving.solvers.Outcome`, whether the name is
one solver (:mod:`ccac.solving.solvers`) or a portfolio of them racing
(:mod:`ccac.solving.portfolio`). Unknown names are bad input."""

from __future__ import annotations

from typing import Callable

import z3

from ccac.core.errors import CcacError
from ccac.solving.portfolio import members_of, solve_portfolio
from ccac.solving.solvers import Outcome, single

SOLVER_HELP = ("z3; cvc5 (through SMT-LIB and pysmt) or yices (its binary, on SMT-LIB; the fastest "
               "on whole-packet formulas); z3#N (z3 with random seed N); portfolio (z3 and cvc5 at once, the first definitive answer wins); or portfolio:A,B,... "
               "(those solvers at once, e.g. portfolio:z3,z3#1).")


def backend(name: str) -> Callable[[list[z3.BoolRef], float | None], Outcome]:
    """The solver called ``name`` (see :data:`SOLVER_HELP`)."""
    solve = single(name)
    if solve is not None:
        return solve
    if name == "portfolio" or name.startswith("portfolio:"):
        members = members_of(name)
        unknown = [m for m in members if single(m) is None]
        if unknown:
            raise CcacError(f"unknown solver {unknown[0]!r}: use {SOLVER_HELP}", "--solver")
        return lambda formulas, timeout: solve_portfolio(formulas, timeout, members)
    raise CcacError(f"unknown solver {name!r}: use {SOLVER_HELP}", "--solver")
