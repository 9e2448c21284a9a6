"""Many candidates played on one counterexample's path at once.

:func:`ccac.synthesis.fluid_player.play` plays one CCA on a counterexample's path. A template's
candidates mostly decide alike on a given path (a condition that never holds there makes every
value of the branch it guards irrelevant), so the sieve plays them in groups: candidates whose
rules read the same observations from the same step on (whatever expressions they chose) start
as one group, which reads its feedback once and updates its beliefs once; at each step the
group's rules are evaluated for all its candidates together (:mod:`ccac.synthesis.vector`), and
the group splits where their decisions differ.
Each group's run is the exact played run of its first candidate (its representative); the
others went along because their floating-point decisions matched.

What it returns is a **suspicion**, not a claim: the candidates of every group whose
representative's played run meets the goal's ``find`` (and its assumptions). Nothing is pruned
on it until :func:`confirm` has checked each candidate's own claim exactly: the group's run
validated as a trace of the model on which that candidate's own rules hold at every step.

Imports: numpy, :mod:`ccac.solving.validate`, :mod:`ccac.synthesis.fluid_player`,
:mod:`ccac.synthesis` (spec, vector).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ccac.ccas.language import LanguageCCA
from ccac.encode.trace import Trace
from ccac.solving.validate import check_query, validate_alike
from ccac.synthesis.spec import Goal, Spec
from ccac.synthesis.vector import Unsupported, VectorRules
from ccac.synthesis.fluid_player import Run

#: decisions that agree to this many decimals go on as one group (the split is a heuristic: runs
#: are exact, and each candidate is checked on its own before a claim rests on it)
DECIMALS = 9


@dataclass
class Suspect:
    """Candidates that went along with ``representative`` on the path, whose played run meets
    the goal's ``find``: theirs is the same run if their decisions were indeed the same."""

    representative: int
    members: list[int]
    trace: Trace


def sieve(spec: Spec, goal: Goal, trace: Trace, candidates: list[int]) -> tuple[list[Suspect], list[int]]:
    """Play ``candidates`` on ``trace``'s path in groups (see the module doc): the groups whose
    run meets ``goal``'s ``find`` there (suspects), and the candidates the sieve cannot group
    (their template uses syntax :mod:`ccac.synthesis.vector` does not evaluate, or their path
    cannot be played), for the caller to play one by one."""
    chosen = spec.choice_indices(np.asarray(candidates, dtype=np.int64))
    expression_holes = [h.name for h in spec.template.holes if h.options]
    shape_of = np.column_stack([chosen[n] for n in expression_holes]) if expression_holes \
        else np.zeros((len(candidates), 1), dtype=np.int64)
    _, shape_label = np.unique(shape_of, axis=0, return_inverse=True)
    shape_label = shape_label.reshape(-1)
    # shapes whose rules read the same observations from the same step on play as one run
    kind_of_shape: dict[int, tuple[frozenset[str], int]] = {}
    for k in np.unique(shape_label):
        first = candidates[int(np.flatnonzero(shape_label == k)[0])]
        flow = spec.query(goal, first).flows[0]
        assert isinstance(flow.cca, LanguageCCA)   # the goal's flow runs the candidate (Spec.query)
        d = flow.cca.definition
        kind_of_shape[int(k)] = (d.observed, d.first_rule_step(trace.network.path(0).R, flow.params))
    kinds = sorted(set(kind_of_shape.values()), key=lambda kind: (sorted(kind[0]), kind[1]))
    kind_label = np.array([kinds.index(kind_of_shape[int(k)]) for k in shape_label], dtype=np.int64)
    everyone = np.asarray(candidates, dtype=np.int64)
    suspects: list[Suspect] = []
    alone: list[int] = []
    for k, (_, takeover) in enumerate(kinds):
        rows = np.flatnonzero(kind_label == k)
        members = everyone[rows].tolist()
        found = _sieve_kind(spec, goal, trace, members, {n: v[rows] for n, v in chosen.items()}, takeover)
        if found is None:
            alone.extend(members)
        else:
            suspects.extend(found)
    return suspects, alone


def _sieve_kind(spec: Spec, goal: Goal, trace: Trace, members: list[int], indices: dict[str, np.ndarray],
                takeover: int) -> list[Suspect] | None:
    """Candidates that read the same observations from step ``takeover`` on (``members``, their
    holes' choice ``indices``) played in groups."""
    first = members[0]
    query = spec.query(goal, first)
    flow = query.flows[0]
    run = Run.start(query, trace, takeover)
    if run is None:
        return None
    assert isinstance(flow.cca, LanguageCCA)   # the goal's flow runs the candidate (Spec.query)
    try:
        rules = VectorRules(spec.template, flow.cca.definition)
        holes = rules.hole_arrays(indices, trace.network.C, query.network.path(0).R)
    except Unsupported:
        return None
    groups = [(run, np.arange(len(members)), first)]
    for t in range(run.takeover, trace.T):
        next_groups = []
        for run, rows, representative in groups:
            feedback = run.detect(t)
            sender = run.sender
            seen = sender.observe(feedback)
            context = {**sender.constants, **seen, **sender.start_state(seen)}
            try:
                decided = rules.decide(context, {k: v[rows] for k, v in holes.items()}, sender.paced, feedback.inflight)
            except Unsupported:
                return None
            _, label = np.unique(np.round(decided, DECIMALS), axis=0, return_inverse=True)
            label = label.reshape(-1)
            parts = [rows[label == k] for k in np.unique(label)]
            runs = [run] + [run.fork() for _ in parts[1:]]
            for part_run, part in zip(runs, parts):
                chosen = members[int(part[0])]
                if chosen != representative:
                    cca = spec.query(goal, chosen).flows[0]
                    assert isinstance(cca.cca, LanguageCCA)   # the goal's flow runs the candidate (Spec.query)
                    part_run.sender.become(cca.cca.definition, cca.params)
                taken = part_run.take(t, feedback, lambda sender, fb: sender.respond(fb, seen))
                next_groups.append((taken, part, chosen))
        groups = next_groups
    out = []
    for run, rows, representative in groups:
        played = run.finish()
        if not check_query(spec.query(goal, representative), played, []):   # the goal's find holds there
            out.append(Suspect(representative, [members[int(r)] for r in rows], played))
    return out


def confirm(spec: Spec, goal: Goal, trace: Trace, candidates: list[int]) -> list[int]:
    """The ``candidates`` for which ``trace`` (a suspect group's run) is a validated
    counterexample of ``goal``: the model's rules, each candidate's own rules at every step, and
    the goal's conditions, checked exactly (:func:`ccac.solving.validate.validate_alike`)."""
    verdicts = validate_alike([spec.query(goal, c) for c in candidates], trace)
    return [c for c, ok in zip(candidates, verdicts) if ok]
