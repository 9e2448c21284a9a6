"""Windows of a longer run: the checks that make stitching finite lemmas sound.

A lemma is proved over every trace of the model over T steps whose first steps are free
history. A steady-state theorem applies such lemmas to windows of one long run placed
``shift`` steps apart, so that the end of window j is the start of window j+1. That is sound
only if

1. every window cut out of a longer run, with its byte curves re-based to start at 0, is itself
   a trace of the T-step model (so the lemmas apply to it); and
2. the quantities the theorem talks about (the region, the progress cases, the ranks) read the
   same at the end of window j as at the start of window j+1, even though the two windows
   re-base the curves differently.

Both are checked here by SMT, for the actual encoding of the model and the CCA, rather than
argued: :func:`window_is_trace` shows that the (T+shift)-step model implies the T-step model
on its last T steps (and on its first T steps), and :func:`same_reading` that a quantity read at
the two places agrees in every such run.

The re-basing ("the window as its own trace") maps each per-step variable of the short model to
the long run's value ``shift`` steps later, minus the long run's value at the window start on
the variable's byte axis (:class:`ccac.encode.encoding.Slot`): service-axis values subtract
``S_f[n][shift]``, loss-axis values ``L_f[n][shift]``, arrival-axis values both (so queues,
undetected losses and in-flight bytes are unchanged) and the wasted-token curve moves so that
the token line ``C*t - W`` keeps its distance from the service curve. Variables that are not per
step (alpha, a solver-chosen buffer) are the same in every window. A whole-packet count of the
window (:meth:`ccac.encode.encoding.Encoding.whole_count`) is its re-based value in packets.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import z3

from ccac.solving.solvers import Outcome, evaluate
from ccac.encode.encoding import Slot, as_real, truth
from ccac.problems.problem import Problem
from ccac.problems.query import Query
from ccac.solving.solve import Pipeline


def windows(short: Query, long: Query, solver: str = "z3") -> tuple[Problem, Problem]:
    """The window's problem and the longer run's, built in one z3 context (one solve's
    :class:`ccac.solving.solve.Pipeline`): the window is read in the run's terms."""
    pipeline = Pipeline(short, solver)
    return pipeline.build(), pipeline.build(long)


def rebase(short: Problem, long: Problem, shift: int) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """(short variable, long-run term) pairs: the window starting at ``shift`` as a trace."""
    if short.ctx != long.ctx:
        raise ValueError("the window and the longer run must be built in one z3 context (windows)")
    v = long.vars
    anchors: dict[tuple[str, int | None], Any] = {}
    for n in range(v.net.flows):
        anchors["S", n] = v.S_f[n][shift]
        anchors["L", n] = v.L_f[n][shift]
        anchors["A", n] = v.S_f[n][shift] + v.L_f[n][shift]
    anchors["W", None] = v.net.C * shift - v.S[shift]
    pairs = []
    for name, slot in short.enc.slots.items():
        target = _long_variable(long, slot, shift)
        if slot.axis is not None:
            target = target - anchors[slot.axis, slot.flow]
        pairs.append((slot.at(slot.step, short.ctx), target))
    # A whole-number count (packets) of the window counts the window's value: the long run's
    # value re-based, over the unit. Both the long run's value and its anchor are whole numbers
    # of the unit there, so this is the exact count, and to_int (floor) only states it as an integer.
    for count, value, unit in short.enc.counts:
        pairs.append((count, z3.ToInt(z3.substitute(value, *pairs) / unit)))
    return pairs


def _long_variable(long: Problem, slot: Slot, shift: int) -> z3.ExprRef:
    var = slot.at(slot.step + shift, long.ctx)
    if var.decl().name() not in long.enc.slots:
        raise ValueError(f"the long run has no {var} for {slot}")
    return var


@dataclass
class WindowCheck:
    """The outcome of one soundness check, with the culprits when it fails."""

    what: str
    outcome: Outcome
    culprits: list[str]


def window_is_trace(short: Problem, long: Problem, shift: int,
                    solve: Callable[[list[z3.BoolRef], float | None], Outcome],
                    timeout: float | None) -> WindowCheck:
    """Does every run of ``long`` (model, CCA and the parameter assumptions) contain, at steps
    ``shift .. shift+T-1``, a trace of ``short``? Unsat of "long and not short(window)" is yes.

    It is asked one rule group of the short model at a time ("long and not the window's
    loss-detection rules", ...): the long run implies every group's rules if and only if it
    implies them all, and the separate questions are far easier for the solver, which otherwise
    works on one disjunction of every negated rule. AIMD's whole-packet steady state at a buffer
    of 3 BDP (a 49-step window of a 78-step run): unknown after 2400 s asked at once, proved in
    484 s group by group (yices; docs/proofs.md). ``timeout`` bounds the whole check; the first
    group a run violates refutes it, with that group's culprits."""
    pairs = rebase(short, long, shift) if shift else []
    groups: dict[str, list[tuple[z3.BoolRef, z3.BoolRef]]] = {}
    for group, c in short.enc.constraints:
        if not group.startswith("query.find"):
            groups.setdefault(group, []).append((c, z3.substitute(c, *pairs) if pairs else c))
    premises = [c for group, c in long.enc.constraints if not group.startswith("query.find")]
    what = (f"a window at steps {shift}..{shift + short.query.network.T - 1} of a "
            f"{long.query.network.T}-step run is a trace")
    deadline = None if timeout is None else time.monotonic() + timeout
    outcomes: list[Outcome] = []
    unasked = ""
    for group, window in groups.items():
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0 and outcomes:
            unasked = f"the time limit ran out before {group} was asked"
            break
        outcome = solve(premises + [z3.Not(z3.And(*[moved for _, moved in window]))], left)
        outcomes.append(outcome)
        if outcome.answer == "sat":
            memo: dict[int, Any] = {}
            culprits = [f"{group}: {original}" for original, moved in window
                        if not evaluate(moved, outcome.assignment or {}, memo)]
            return WindowCheck(what, _combined(outcomes, "sat", None), culprits)
    reasons = [str(o.reason) for o in outcomes if o.answer == "unknown"] + ([unasked] if unasked else [])
    return WindowCheck(what, _combined(outcomes, "unknown" if reasons else "unsat", "; ".join(reasons) or None), [])


def _combined(outcomes: list[Outcome], answer: str, reason: str | None) -> Outcome:
    """One outcome for a check asked in parts: the last part's assignment and solver, and the
    time of all of them."""
    return replace(outcomes[-1], answer=answer, reason=reason, seconds=sum(o.seconds for o in outcomes))


def same_reading(short: Problem, long: Problem, shift: int, short_value: Any, long_value: Any,
                 label: str, solve: Callable[[list[z3.BoolRef], float | None], Outcome],
                 timeout: float | None) -> WindowCheck:
    """Is ``short_value`` (a quantity of the short model, read in the window at ``shift``) equal
    to ``long_value`` (read directly in the long run) in every run of ``long``?"""
    pairs = rebase(short, long, shift)
    moved = z3.substitute(_as_z3(short_value, long.ctx), *pairs)
    premises = [c for group, c in long.enc.constraints if not group.startswith("query.find")]
    outcome = solve(premises + [moved != _as_z3(long_value, long.ctx)], timeout)
    culprits = []
    if outcome.answer == "sat":
        memo: dict[int, Any] = {}
        culprits.append(f"{label}: {evaluate(moved, outcome.assignment or {}, memo)} at the start of "
                        f"the next window, {evaluate(_as_z3(long_value, long.ctx), outcome.assignment or {}, memo)} "
                        f"at the end of this one")
    return WindowCheck(f"{label} reads the same at a window's end and the next window's start",
                       outcome, culprits)


def _as_z3(value: Any, ctx: z3.Context) -> z3.ExprRef:
    """``value`` (a compiled quantity: a plain number or truth value, or a term) as a term in ``ctx``."""
    if isinstance(value, bool):
        return truth(value, ctx)
    return value if isinstance(value, z3.BoolRef) else as_real(value, ctx)
