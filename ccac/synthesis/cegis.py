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
from pathlib import Path
from typing import Any, Callable

from ccac.core.errors import CcacError
from ccac.encode.trace import Trace
from ccac.solving.solve import solve
from ccac.solving.validate import check_query, validate
from ccac.synthesis.spec import Goal, Spec, load_spec
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


Runner = Callable[[Callable[[Any], Any], list[Any]], list[Any]]


def in_process(fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
    """Run the tasks here, one after another."""
    return [fn(task) for task in tasks]


def synthesize(spec: Spec, timeout: float | None = None, report: Callable[[str], None] = lambda _: None,
               limit: int | None = None, run: Runner = in_process, batch: int = 1) -> Outcome:
    """Search ``spec``'s template (see the module doc). ``timeout``: seconds per verifier call
    (one goal of one candidate); ``limit``: stop after this many verifier iterations. ``run``
    maps a task function over tasks (here, on a process pool or on a Dask cluster; the tasks
    name the synthesis file, so every worker reads it itself); each iteration verifies the
    first ``batch`` candidates left at once and splits the pruning into ``batch`` parts."""
    _SPECS[spec.source] = spec
    out = Outcome(None, spec.template.size)
    alive = list(range(out.size))
    while alive:
        if limit is not None and out.iterations >= limit:
            report(f"stopped after {limit} iterations with {len(alive)} candidates left")
            break
        out.iterations += 1
        chosen, alive = alive[:batch], alive[batch:]
        started = time.monotonic()
        verdicts = run(_verify_task, [(spec.source, c, timeout) for c in chosen])
        spent = time.monotonic() - started
        out.verifier_seconds += spent
        new: list[Counterexample] = []
        for candidate, (verdict, detail, goal_index) in zip(chosen, verdicts):
            described = spec.template.describe(spec.assignment(candidate))
            goal = spec.goals[goal_index]
            if verdict == "unsat" and out.found is None:
                out.found = candidate
                report(f"iteration {out.iterations}: {described}: every goal unsat ({spent:.2f} s)")
            elif verdict == "unknown":
                out.unknown[candidate] = detail
                report(f"iteration {out.iterations}: {described}: unknown on {goal.name} ({detail})")
            elif verdict == "sat":
                trace = Trace.from_json(detail, spec.query(goal, candidate).network, [spec.cca_name])
                out.refuted[candidate] = len(out.counterexamples) + len(new)
                new.append(Counterexample(goal, trace, candidate))
                report(f"iteration {out.iterations}: {described}: counterexample on {goal.name} (verifier {spent:.2f} s)")
        if out.found is not None:
            break
        for cex in new:
            out.counterexamples.append(cex)
            index = len(out.counterexamples) - 1
            started = time.monotonic()
            pool = alive + list(out.unknown)   # a candidate without an answer may still fail here
            parts = [pool[i::batch] for i in range(batch) if pool[i::batch]]
            tasks = [(spec.source, spec.goals.index(cex.goal), cex.trace.to_json(), part) for part in parts]
            failing = {c for found in run(_prune_task, tasks) for c in found}
            for candidate in failing:
                out.pruned[candidate] = index
                out.unknown.pop(candidate, None)
            alive = [c for c in alive if c not in failing]
            out.generator_seconds += time.monotonic() - started
            report(f"  {len(failing)} more pruned on its path ({time.monotonic() - started:.2f} s); {len(alive)} left")
    return out


_SPECS: dict[str, Spec] = {}


def _spec(source: str) -> Spec:
    """The synthesis file, read once per process."""
    if source not in _SPECS:
        _SPECS[source] = load_spec(Path(source))
    return _SPECS[source]


def _verify_task(task: tuple[str, int, float | None]) -> tuple[str, Any, int]:
    """("unsat", None, last goal) if every goal is unsat; ("sat", trace as JSON, goal) for the
    first goal with a validated counterexample; ("unknown", reason, goal) if a goal had no
    answer."""
    source, candidate, timeout = task
    spec = _spec(source)
    for i, goal in enumerate(spec.goals):
        result = solve(spec.query(goal, candidate), timeout=timeout)
        if result.answer == "sat":
            if not result.validated:
                raise CcacError(f"candidate {candidate}: the solver's trace on {goal.name} did not validate "
                                f"({'; '.join(result.violations[:2])}): an encoding error, not an answer")
            return "sat", result.trace.to_json(), i
        if result.answer != "unsat":
            return "unknown", result.reason, i
    return "unsat", None, len(spec.goals) - 1


def _prune_task(task: tuple[str, int, dict[str, Any], list[int]]) -> list[int]:
    """The candidates among ``task``'s that fail its goal on its trace's path when played."""
    source, goal_index, trace_json, candidates = task
    spec = _spec(source)
    goal = spec.goals[goal_index]
    trace = Trace.from_json(trace_json, spec.query(goal, candidates[0]).network, [spec.cca_name])
    return [c for c in candidates if fails_when_played(spec, goal, trace, c)]


def fails_when_played(spec: Spec, goal: Goal, trace: Trace, candidate: int) -> bool:
    """Whether ``candidate`` fails ``goal`` on ``trace``'s path: its played run (from the step
    its rules start) validates as a counterexample of the goal's query."""
    query = spec.query(goal, candidate)
    cca = query.flows[0].cca
    takeover = cca.definition.first_rule_step(query.network.path(0).R, query.flows[0].params)
    played = play(query, trace, takeover)
    # the query's own conditions first: most played runs do not fail, and those are cheap to read
    return played is not None and not check_query(query, played, []) and not validate(query, played)
