"""Counterexample-guided search of a template (:mod:`ccac.synthesis.spec`).

The **verifier** is ccac's own solve: for a candidate it asks every goal's query; unsat for all
is success, a sat answer comes with a validated trace, a counterexample. The **generator** keeps
the candidates that meet the goal on every counterexample collected so far: when a
counterexample is found, every remaining candidate is run on its path with the path's choices
kept and the candidate's own response recomputed (:func:`ccac.testbed.fluid_player.play`), and a
candidate whose played run validates as a trace of the model on which the goal's ``find`` holds
is dropped. The next candidate verified is the first one left, in the template's order.

What a "none" answer claims: every candidate of the template was dropped for a validated trace
of the model on which it fails a goal, either the verifier's (sat, validated) or a played one
(validated by the same exact check). Candidates whose verification ended without an answer
(``unknown``: a timeout) are neither: they are listed, and then the answer is not "none".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ccac.core.errors import CcacError
from ccac.encode.trace import Trace
from ccac.solving.solve import solve
from ccac.solving.validate import validate
from ccac.synthesis.spec import Goal, Spec
from ccac.testbed.fluid_player import play


@dataclass
class Counterexample:
    """A goal's trace on which a candidate failed."""

    goal: Goal
    trace: Trace
    candidate: int


@dataclass
class Outcome:
    found: int | None                       # the candidate that meets the goal, if any
    size: int                               # candidates in the template
    refuted: dict[int, int] = field(default_factory=dict)    # candidate -> counterexample (verifier)
    pruned: dict[int, int] = field(default_factory=dict)     # candidate -> counterexample it fails when played
    unknown: dict[int, str] = field(default_factory=dict)    # candidate -> why the verifier had no answer
    counterexamples: list[Counterexample] = field(default_factory=list)
    iterations: int = 0
    verifier_seconds: float = 0.0
    generator_seconds: float = 0.0

    @property
    def exhausted(self) -> bool:
        """No candidate meets the goal: each was refuted or pruned with a validated trace."""
        return self.found is None and not self.unknown and len(self.refuted) + len(self.pruned) == self.size


def synthesize(spec: Spec, timeout: float | None = None, report: Callable[[str], None] = lambda _: None,
               limit: int | None = None) -> Outcome:
    """Search ``spec``'s template (see the module doc). ``timeout``: seconds per verifier call
    (one goal of one candidate); ``limit``: stop after this many verifier iterations."""
    out = Outcome(None, spec.template.size)
    alive = list(range(out.size))
    while alive:
        if limit is not None and out.iterations >= limit:
            report(f"stopped after {limit} iterations with {len(alive)} candidates left")
            break
        out.iterations += 1
        candidate = alive.pop(0)
        described = spec.template.describe(spec.assignment(candidate))
        started = time.monotonic()
        verdict, trace, goal = _verify(spec, candidate, timeout)
        out.verifier_seconds += time.monotonic() - started
        if verdict == "unsat":
            out.found = candidate
            report(f"iteration {out.iterations}: {described}: every goal unsat ({time.monotonic() - started:.2f} s)")
            break
        if verdict == "unknown":
            out.unknown[candidate] = trace
            report(f"iteration {out.iterations}: {described}: unknown on {goal.name} ({trace})")
            continue
        out.refuted[candidate] = len(out.counterexamples)
        out.counterexamples.append(Counterexample(goal, trace, candidate))
        spent = time.monotonic() - started
        started = time.monotonic()
        survivors = []
        for other in alive + list(out.unknown):   # a candidate without an answer may still fail here
            if _fails_when_played(spec, goal, trace, other):
                out.pruned[other] = len(out.counterexamples) - 1
                out.unknown.pop(other, None)
            elif other not in out.unknown:
                survivors.append(other)
        pruned = len(alive) - len(survivors)
        alive = survivors
        out.generator_seconds += time.monotonic() - started
        report(f"iteration {out.iterations}: {described}: counterexample on {goal.name} (verifier {spent:.2f} s); "
               f"{pruned} more pruned on its path ({time.monotonic() - started:.2f} s); {len(alive)} left")
    return out


def _verify(spec: Spec, candidate: int, timeout: float | None) -> tuple[str, Any, Goal]:
    """("unsat", None, last goal) if every goal is unsat; ("sat", trace, goal) for the first
    goal with a validated counterexample; ("unknown", reason, goal) if a goal had no answer."""
    for goal in spec.goals:
        result = solve(spec.query(goal, candidate), timeout=timeout)
        if result.answer == "sat":
            if not result.validated:
                raise CcacError(f"candidate {candidate}: the solver's trace on {goal.name} did not validate "
                                f"({'; '.join(result.violations[:2])}): an encoding error, not an answer")
            return "sat", result.trace, goal
        if result.answer != "unsat":
            return "unknown", result.reason, goal
    return "unsat", None, spec.goals[-1]


def _fails_when_played(spec: Spec, goal: Goal, trace: Trace, candidate: int) -> bool:
    """Whether ``candidate`` fails ``goal`` on ``trace``'s path: its played run (from the step
    its rules start) validates as a counterexample of the goal's query."""
    query = spec.query(goal, candidate)
    cca = query.flows[0].cca
    takeover = cca.definition.first_rule_step(query.network.path(0).R, query.flows[0].params)
    played = play(query, trace, takeover)
    return played is not None and not validate(query, played)
