"""The CCA found, written as a CCA file and verified again as written.

A "found" of :func:`ccac.synthesis.cegis.synthesize` rests on the verifier's unsat answers for
the candidate as the search read it (the template filled in memory, named by the template's
name). What a user takes away is the file. So the claim ``ccac synthesize`` prints is made of
the file: :func:`write` writes it (the template with its holes filled and the goals' settings of
its parameters as their defaults, :meth:`ccac.synthesis.spec.Spec.filled`), and :func:`recheck`
reads every goal again with its CCA read from that file, as ``ccac query`` would read a query
whose ``[cca]`` names it, solves it, and checks that the goal's premise (its model, CCAs and
assumptions without its ``find``) admits a validated trace: an unsat whose premise admits no
trace says nothing about the CCA (:func:`ccac.solving.solve.premise_verdict`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import tomli_w

from ccac.problems.query import Query, parse_query
from ccac.solving.solve import Pipeline, premise_verdict, solve
from ccac.synthesis.spec import Goal, Spec


@dataclass
class Recheck:
    """One goal asked again of the written file: the solver's answer and, after an unsat, the
    premise's verdict ("satisfiable", "vacuous" or "unknown")."""

    goal: str
    answer: str
    premise: str
    line: str
    seconds: float

    @property
    def holds(self) -> bool:
        """The file meets this goal: unsat, and not for want of any trace."""
        return self.answer == "unsat" and self.premise == "satisfiable"


def write(spec: Spec, candidate: int, target: Path) -> None:
    """Write candidate ``candidate`` as a CCA file to ``target``, with a header naming where it
    comes from and the goals it is checked against."""
    head = (f"# Synthesized by `ccac synthesize {Path(spec.source).name}` from {Path(spec.template.source).name}:\n"
            f"# {spec.template.describe(spec.assignment(candidate))}; every goal unsat:\n"
            + "".join(f"#   {g.name}: {g.data['query']['find']}\n" for g in spec.goals))
    target.write_text(head + tomli_w.dumps(spec.filled(candidate)), encoding="utf-8")


def recheck(spec: Spec, written: Path, timeout: float | None = None, solver: str = "z3",
            proved: int | None = None) -> Iterator[Recheck]:
    """Every goal of ``spec`` asked again with its candidate's CCA read from the file
    ``written`` (see the module doc), one :class:`Recheck` per goal as it is decided.

    ``proved``: the candidate the search's verifier answered unsat on every goal. Where the
    formula read from the file is, as SMT-LIB text, the very formula the verifier proved unsat
    for it, that unsat is this formula's (the same assertions have the same answer) and is not
    solved again; a formula that differs in any character is solved. The premise is solved
    either way."""
    for goal in spec.goals:
        started = time.monotonic()
        query = parse_query(_reading(goal, spec.cca_name, written), goal.name, goal.source)
        if proved is not None and _formula(query) == _formula(spec.query(goal, proved)):
            premise, line = premise_verdict(query, solver, timeout)
            yield Recheck(goal.name, "unsat", premise, "the file's formula is the one the verifier proved unsat "
                          f"(identical SMT-LIB); {line}", time.monotonic() - started)
            continue
        result = solve(query, solver=solver, timeout=timeout)
        if result.answer == "sat":
            assert result.violations is not None   # a sat answer is checked (solve)
            premise, line = "", ("a validated counterexample: the file does not meet this goal" if result.validated
                                 else f"sat, but the trace did not validate ({'; '.join(result.violations[:2])})")
        elif result.answer == "unsat":
            premise, line = premise_verdict(query, solver, timeout)
        else:
            premise, line = "", f"no answer ({result.reason})"
        yield Recheck(goal.name, result.answer, premise, line, time.monotonic() - started)


def _formula(query: Query) -> tuple[str, str]:
    """The query's formulas as SMT-LIB text (their assertions, in the order they are built): the
    whole one, and the one without a periodic query's settling conditions, which its unsat needs
    too (:func:`ccac.solving.solve.periodic_answer`)."""
    problem = Pipeline(query).build()
    whole, loose = ("\n".join(f.sexpr() for f in problem.formulas(settled)) for settled in (True, False))
    return whole, loose


def _reading(goal: Goal, cca_name: str, written: Path) -> dict[str, Any]:
    """``goal``'s query data with the candidate's CCA, named by the template's name, read from
    the file ``written`` instead (its ``[cca]`` table and the ``[[flow]]`` tables that name it)."""
    data = {**goal.data, "cca": {"file": str(written.resolve())}}
    if isinstance(goal.data.get("flow"), list):
        data["flow"] = [{**{k: v for k, v in table.items() if k != "name"}, "file": str(written.resolve())}
                        if isinstance(table, dict) and table.get("name") == cca_name else table
                        for table in goal.data["flow"]]
    return data
