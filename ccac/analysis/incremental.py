"""One z3 solver for a family of problems that share their formula and differ by a few facts.

``ccac bound`` probes one formula at many values of a parameter (``p == value``), and a
periodic probe that comes out unsat is solved again without the settling conditions. With
:class:`Incremental`, all of these are checks of one solver under assumptions: the shared
formula is added once, each probe's fact is guarded by a fresh literal, and the optional
group (the settling conditions) by one literal that a check assumes or leaves out. What the
solver learnt about the shared formula (lemmas, bounds) carries over to the next probe.

z3 answers a check under assumptions with its incremental core, which skips the one-shot
preprocessing a fresh solver runs first; on some problem families that is slower. Whether
reuse pays is therefore measured, not assumed: ``ccac bound --reuse/--fresh`` (docs/bounds-and-sweeps.md,
"Reusing one solver").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import time
from typing import Callable, Sequence

import z3

from ccac.solving.solvers import Outcome, z3_value

if TYPE_CHECKING:
    from ccac.problems.problem import Problem

GUARD = "__guard_"


class Incremental:
    """A z3 solver holding ``formulas`` for good and ``optional`` behind one literal."""

    def __init__(self, formulas: Sequence[z3.BoolRef], optional: Sequence[z3.BoolRef] = ()) -> None:
        ctx = formulas[0].ctx if formulas else None
        self.solver = z3.Solver(ctx=ctx) if ctx is not None else z3.Solver()
        self.solver.add(*formulas)
        self.optional = z3.Bool(f"{GUARD}optional", self.solver.ctx)
        self.solver.add(*(z3.Implies(self.optional, c) for c in optional))
        self._facts = 0

    @classmethod
    def for_problem(cls, problem: "Problem") -> "Incremental":
        """The solver for a built problem: its formula for good, a periodic query's settling
        conditions (:meth:`ccac.problems.problem.Problem.settling`) as the optional group."""
        return cls(problem.formulas(settled=False), problem.settling())

    def answer(self, facts: Sequence[z3.BoolRef], periodic: bool,
               budget: Callable[[], float | None]) -> Outcome:
        """The answer under ``facts`` as :func:`ccac.solving.solve.solve` gives it: for a periodic query,
        an unsat is checked again without the settling conditions (in this same solver).
        ``budget()`` is the time each check may take (None: no limit)."""
        from ccac.solving.solve import periodic_answer

        settled = self.check(facts, True, budget())
        if not periodic:
            return settled
        return periodic_answer(settled, None) or periodic_answer(settled, self.check(facts, False, budget()))

    def check(self, facts: Sequence[z3.BoolRef], optional: bool, timeout: float | None) -> Outcome:
        """Solve the formula plus ``facts`` (and the optional group if ``optional``)."""
        assumptions = []
        for fact in facts:
            literal = z3.Bool(f"{GUARD}{self._facts}", self.solver.ctx)
            self._facts += 1
            self.solver.add(z3.Implies(literal, fact))
            assumptions.append(literal)
        if optional:
            assumptions.append(self.optional)
        self.solver.set("timeout", 4294967295 if timeout is None else max(1, int(timeout * 1000)))
        start = time.perf_counter()
        result = self.solver.check(*assumptions)
        seconds = time.perf_counter() - start
        version = z3.get_version_string()
        if result == z3.sat:
            model = self.solver.model()
            assignment = {d.name(): z3_value(model[d]) for d in model.decls()
                          if d.arity() == 0 and not d.name().startswith(GUARD)}
            return Outcome("sat", None, assignment, "z3", version, seconds)
        if result == z3.unsat:
            return Outcome("unsat", None, None, "z3", version, seconds)
        return Outcome("unknown", self.solver.reason_unknown(), None, "z3", version, seconds)
