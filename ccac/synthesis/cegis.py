"""Counterexample-guided search of a template (:mod:`ccac.synthesis.spec`).

The **verifier** is ccac's own solve: for a candidate it asks every goal's query; unsat for all
is success, a sat answer comes with a validated trace, a counterexample. The **generator** keeps
the candidates that meet the goal on every counterexample collected so far: when a
counterexample is found, every remaining candidate is played on its path with the path's
choices kept and the candidate's own response recomputed, many at once
(:func:`ccac.synthesis.sieve.sieve`); those whose played run meets the goal's ``find`` are set
aside as suspects. When no candidate is left but suspects, each is checked on its own
(:func:`ccac.synthesis.sieve.confirm`): confirmed, it is pruned; not, it is a candidate again.
The next candidate verified is the first one left, in the template's order.

What a "none" answer claims: every candidate of the template was refuted by the verifier (sat,
validated) or pruned for a validated trace of the model on which it, with its own rules, fails
a goal. Candidates whose verification ended without an answer (``unknown``: a timeout) are
neither: they are listed, and then the answer is not "none". A "found" answer rests on the
verifier alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ccac.ccas.language import LanguageCCA
from ccac.core.errors import CcacError
from ccac.encode.trace import Trace
from ccac.solving.solve import solve
from ccac.solving.validate import check_query, validate
from ccac.synthesis.spec import Goal, Spec, load_spec
from ccac.synthesis.sieve import confirm, sieve
from ccac.synthesis.fluid_player import play


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
    # candidates set aside on a played run and not checked on their own (the search ended first)
    suspected: int = 0
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
    suspected: dict[int, list[int]] = {}   # suspect group -> its candidates not yet confirmed
    groups: list[tuple[int, int, dict[str, Any]]] = []   # suspect group -> (goal, counterexample, run)
    while alive or suspected:
        if not alive:   # every candidate is refuted, pruned or suspected: check each suspect on its own
            alive = _confirm(spec, out, suspected, groups, run, batch, report)
            continue
        if limit is not None and out.iterations >= limit:
            report(f"stopped after {limit} iterations with {len(alive)} candidates left "
                   f"and {sum(map(len, suspected.values()))} suspected")
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
                report(f"iteration {out.iterations}: {described}: counterexample on {goal.name} "
                       f"(verifier {spent:.2f} s)")
        if out.found is not None:
            break
        for cex in new:
            out.counterexamples.append(cex)
            index = len(out.counterexamples) - 1
            started = time.monotonic()
            goal_index, trace_json = spec.goals.index(cex.goal), cex.trace.to_json()
            parts = [list(part) for part in _chunks(alive, batch)]
            tasks = [(spec.source, goal_index, trace_json, part) for part in parts]
            found = run(_prune_task, tasks)
            tasks = [(spec.source, goal_index, trace_json, list(out.unknown))] if out.unknown else []
            failing = {c for part in in_process(_play_each_task, tasks) for c in part}   # no answer yet: alone
            held: set[int] = set()
            for exact, suspects in found:
                failing.update(exact)
                for members, played in suspects:
                    suspected[len(groups)] = members
                    groups.append((goal_index, index, played))
                    held.update(members)
            for candidate in failing:
                out.pruned[candidate] = index
                out.unknown.pop(candidate, None)
            alive = [c for c in alive if c not in failing and c not in held]
            out.generator_seconds += time.monotonic() - started
            report(f"  on its path: {len(held)} suspected" + (f", {len(failing)} pruned" if failing else "")
                   + f" ({time.monotonic() - started:.2f} s); {len(alive)} left")
    out.suspected = sum(map(len, suspected.values()))
    return out


def _confirm(spec: Spec, out: Outcome, suspected: dict[int, list[int]], groups: list[tuple[int, int, dict[str, Any]]],
             run: Runner, batch: int, report: Callable[[str], None]) -> list[int]:
    """Check every suspect on its own (:func:`ccac.synthesis.sieve.confirm`): the confirmed are
    pruned, the rest (whose own run differs from their group's) are candidates again, returned
    in the template's order; ``suspected`` is emptied."""
    started = time.monotonic()
    tasks: list[tuple[str, int, dict[str, Any], list[int], int]] = []
    for k, members in suspected.items():
        goal_index, _, played = groups[k]
        tasks.extend((spec.source, goal_index, played, list(part), k) for part in _chunks(members, batch))
    back: list[int] = []
    for (_, _, _, members, k), confirmed in zip(tasks, run(_confirm_task, tasks)):
        for candidate in confirmed:
            out.pruned[candidate] = groups[k][1]
        back.extend(set(members) - set(confirmed))
    total = sum(map(len, suspected.values()))
    suspected.clear()
    out.generator_seconds += time.monotonic() - started
    report(f"confirmed {total - len(back)} of {total} suspects, each on its own run "
           f"({time.monotonic() - started:.2f} s); {len(back)} are candidates again")
    return sorted(back)


def _chunks(items: list[int], n: int) -> list[list[int]]:
    """``items`` in at most ``n`` contiguous parts (a part's candidates are neighbours in the
    template, and mostly decide alike)."""
    size = -(-len(items) // max(n, 1))
    return [items[i:i + size] for i in range(0, len(items), size)] if items else []


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
            assert result.trace is not None and result.violations is not None   # a sat answer is checked (solve)
            if not result.validated:
                raise CcacError(f"candidate {candidate}: the solver's trace on {goal.name} did not validate "
                                f"({'; '.join(result.violations[:2])}): an encoding error, not an answer")
            return "sat", result.trace.to_json(), i
        if result.answer != "unsat":
            return "unknown", result.reason, i
    return "unsat", None, len(spec.goals) - 1


def _prune_task(task: tuple[str, int, dict[str, Any], list[int]]
                ) -> tuple[list[int], list[tuple[list[int], dict[str, Any]]]]:
    """``task``'s candidates played on its trace's path (:func:`ccac.synthesis.sieve.sieve`):
    those found to fail its goal one by one, and the suspect groups (their candidates, and their
    run as JSON)."""
    spec, goal, trace, candidates = _read_task(*task)
    suspects, alone = sieve(spec, goal, trace, candidates)
    exact = [c for c in alone if fails_when_played(spec, goal, trace, c)]
    return exact, [(s.members, s.trace.to_json()) for s in suspects]


def _play_each_task(task: tuple[str, int, dict[str, Any], list[int]]) -> list[int]:
    """The candidates among ``task``'s that fail its goal on its trace's path, each played alone."""
    spec, goal, trace, candidates = _read_task(*task)
    return [c for c in candidates if fails_when_played(spec, goal, trace, c)]


def _confirm_task(task: tuple[str, int, dict[str, Any], list[int], int]) -> list[int]:
    """The suspects among ``task``'s whose own check passes on their group's run."""
    spec, goal, played, candidates = _read_task(*task[:4])
    return confirm(spec, goal, played, candidates)


def _read_task(source: str, goal_index: int, trace_json: dict[str, Any],
               candidates: list[int]) -> tuple[Spec, Goal, Trace, list[int]]:
    """A worker's task read back: the synthesis file, the goal, the trace, the candidates."""
    spec = _spec(source)
    goal = spec.goals[goal_index]
    trace = Trace.from_json(trace_json, spec.query(goal, candidates[0]).network, [spec.cca_name])
    return spec, goal, trace, candidates


def fails_when_played(spec: Spec, goal: Goal, trace: Trace, candidate: int) -> bool:
    """Whether ``candidate`` fails ``goal`` on ``trace``'s path: its played run (from the step
    its rules start) validates as a counterexample of the goal's query."""
    query = spec.query(goal, candidate)
    cca = query.flows[0].cca
    assert isinstance(cca, LanguageCCA)   # the goal's flow runs the candidate (Spec.query)
    takeover = cca.definition.first_rule_step(query.network.path(0).R, query.flows[0].params)
    played = play(query, trace, takeover)
    # the query's own conditions first: most played runs do not fail, and those are cheap to read
    return played is not None and not check_query(query, played, []) and not validate(query, played)
