"""The one door to every solver: a solver's name is read once (:func:`parse_solver`), and
:func:`backend` turns it into a function from z3 formulas and a time limit to an
:class:`~ccac.solving.solvers.Outcome`, whether the name is one solver
(:mod:`ccac.solving.solvers`) or a portfolio of them racing (:mod:`ccac.solving.portfolio`);
:func:`solver_version` says which version answers. Unknown names are bad input."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

import z3

from ccac.core.errors import CcacError
from ccac.solving.portfolio import DEFAULT_PORTFOLIO, MAX_MEMBERS, solve_portfolio
from ccac.solving.solvers import ENGINE_VERSIONS, SOLVERS, Outcome, solve_z3

SOLVER_HELP = ("z3; cvc5 (through SMT-LIB and pysmt) or yices (its binary, on SMT-LIB; the fastest "
               "on whole-packet formulas); z3#N (z3 with random seed N); portfolio (z3 and cvc5 at once, "
               "the first definitive answer wins); or portfolio:A,B,... "
               "(those solvers at once, e.g. portfolio:z3,z3#1).")


@dataclass(frozen=True)
class SolverName:
    """A ``--solver`` value, read once: one engine (``z3``, ``cvc5``, ``yices``; ``z3#N`` is z3
    with random seed N), or a portfolio of such racing (``members``)."""

    text: str
    engine: str | None = None
    seed: int | None = None
    members: tuple["SolverName", ...] = ()


def parse_solver(name: str) -> SolverName:
    """``name`` read (see :data:`SOLVER_HELP`); an unknown name is bad input."""
    if name == "portfolio" or name.startswith("portfolio:"):
        listed = (DEFAULT_PORTFOLIO if name == "portfolio"
                  else tuple(m.strip() for m in name.removeprefix("portfolio:").split(",")))
        if not 2 <= len(listed) <= MAX_MEMBERS or any(not m or m.startswith("portfolio") for m in listed):
            raise CcacError(f"a portfolio names 2 to {MAX_MEMBERS} solvers other than portfolios, got {name!r}",
                            "--solver")
        return SolverName(name, members=tuple(_engine(m) for m in listed))
    return _engine(name)


def _engine(name: str) -> SolverName:
    if name in SOLVERS:
        return SolverName(name, engine=name)
    seeded = re.fullmatch(r"z3#(\d{1,9})", name)
    if seeded:
        return SolverName(name, engine="z3", seed=int(seeded.group(1)))
    raise CcacError(f"unknown solver {name!r}: use {SOLVER_HELP}", "--solver")


def backend(name: str) -> Callable[[list[z3.BoolRef], float | None], Outcome]:
    """The solver called ``name`` (see :data:`SOLVER_HELP`)."""
    return _solve(parse_solver(name))


def _solve(solver: SolverName) -> Callable[[list[z3.BoolRef], float | None], Outcome]:
    if solver.members:
        racing = {m.text: _solve(m) for m in solver.members}
        return lambda formulas, timeout: solve_portfolio(formulas, timeout, racing)
    if solver.seed is not None:
        seed = solver.seed
        return lambda formulas, timeout: replace(solve_z3(formulas, timeout, seed), solver=solver.text)
    return SOLVERS[solver.engine or ""]


def solver_version(name: str) -> str:
    """The version of solver ``name`` in this process (a portfolio's: its members')."""
    solver = parse_solver(name)
    if solver.members:
        return " + ".join(f"{m.text} {solver_version(m.text)}" for m in solver.members)
    version = ENGINE_VERSIONS.get(solver.engine or "")
    return version() if version is not None else "unknown"
