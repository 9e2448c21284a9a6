"""Per-ACK rules of the CCA language (``on_ack``, ``on_loss``): what a step means, how a sender
runs it, and the per-step constraints derived from it.

**A step** (step t, state s = the state at t - 1, k = ``newly_acked`` / alpha ACKs):

1. the step's k ACKs arrive one at a time, each applying every ``on_ack`` rule to the state the
   ACKs before it left (a fraction f of an ACK, in fluid mode, makes f times a whole ACK's
   change); somewhere among them, after j of the k (0 <= j <= k),
2. the loss event, if the step has one (a detection beyond the recovery point ``recover``:
   ``lost > recover``), applies every ``on_loss`` rule to the state at that moment, all at once;
   ``recover`` and ``recover_sent`` are the language's own (RFC 6582's recovery point, in the
   loss order and in the bytes sent), set there to ``loss_point`` and ``sent``; a step without a
   loss event has j = k;
3. the per-step ``rule`` of every state variable reads the state steps 1 and 2 left.

An ``on_ack`` rule reads its own state as the earlier ACKs left it, every state without an
``on_ack`` rule (constant between the loss event's sides), the step's observations, the
parameters and ``in_recovery`` (``acked + lost < recover_sent``: bytes sent before the last loss
event are neither ACKed nor detected lost yet, so NewReno's fast recovery holds its window).

**Derived constraints.** For a state x with ``on_ack`` x -> f(x), d(x) = f(x) - x has one sign
(:func:`direction` proves it): each side of the loss event (w bytes of ACKs: w / alpha ACKs)
moves x monotonically from its start a to its end b, through states within [a, b] (either
order), and b - a is the sum of the ACKs' weights times d at the states they met: between
(w / alpha) * d(xi_lo) and (w / alpha) * d(xi_hi) for some states xi_lo, xi_hi met, so within
[a, b] (:func:`step_conditions`). The encoding leaves j (in bytes, ``loss_acked``), the value
at the loss event (``<x>_at_loss``), the end (``<x>_acked``) and the four xi's to the solver;
a trace records them and the exact check evaluates the same conditions on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import z3

from ccac.encode import nonlinear

from ccac.core.errors import CcacError
from ccac.encode.encoding import as_real, is_symbolic, term_context
from ccac.encode.rules import OBSERVATIONS, RECOVER, Definition, StateRule, constants

#: the bytes of the step's ACKs that arrived before its loss event
LOSS_ACKED = "loss_acked"
#: the weight of the step's ACKs in the compiled fallback of a non-linear change
_WEIGHT = "_acked_bytes"


@dataclass(frozen=True)
class Series:
    """One value a step's per-ACK run records, and what it is."""

    name: str
    description: str
    state: str | None   # the state whose value it is (None: loss_acked)


def series(d: Definition) -> list[Series]:
    """The values a trace records for the per-ACK rules (none without them)."""
    ticking = [s for s in d.state if s.on_ack is not None]
    if not ticking and not d.has_loss:
        return []
    out = [Series(LOSS_ACKED, "bytes of the step's ACKs that arrived before its loss event (all without one)", None)]
    for s in ticking:
        x = s.name
        out += [Series(f"{x}_xi_lo0", f"a value of {x} met before the loss event where its per-ACK change is "
                                      "smallest", x),
                Series(f"{x}_xi_hi0", f"a value of {x} met before the loss event where its change is largest", x),
                Series(f"{x}_at_loss", f"{x} when the loss event came (after the step's ACKs, without one)", x),
                Series(f"{x}_xi_lo1", f"a value of {x} met after the loss event where its change is smallest", x),
                Series(f"{x}_xi_hi1", f"a value of {x} met after the loss event where its change is largest", x),
                Series(f"{x}_acked", f"{x} after the step's ACKs and loss event (what its rule reads)", x)]
    return out


# ---------------------------------------------------------------------- logic over numbers or terms
def _all(*conditions: Any) -> Any:
    if all(isinstance(c, bool) for c in conditions):
        return all(conditions)
    return z3.And(*(z3.BoolVal(c, term_context()) if isinstance(c, bool) else c for c in conditions))


def _any(*conditions: Any) -> Any:
    if all(isinstance(c, bool) for c in conditions):
        return any(conditions)
    return z3.Or(*(z3.BoolVal(c, term_context()) if isinstance(c, bool) else c for c in conditions))


def _ite(condition: Any, yes: Any, no: Any) -> Any:
    if isinstance(condition, bool):
        return yes if condition else no
    return z3.If(condition, as_real(yes), as_real(no))


def within(x: Any, a: Any, b: Any) -> Any:
    """x lies between a and b, in either order."""
    return _all(_any(a <= x, b <= x), _any(x <= a, x <= b))


# ---------------------------------------------------------------------- the step
def loss_event(d: Definition, before: dict[str, Any], seen: dict[str, Any]) -> Any:
    """Whether the step has a loss event: a detection beyond the recovery point the state keeps
    (RFC 6582's ``recover``); never, for a file without ``on_loss`` rules."""
    return seen["lost"] > before[RECOVER] if d.has_loss else False


def after_loss(d: Definition, state: dict[str, Any], values: dict[str, Any], event: Any) -> dict[str, Any]:
    """The state after the loss event (if ``event``): every ``on_loss`` rule evaluated on the
    state at that moment, all at once."""
    where = f"{d.source}: state"
    moved = {s.name: _ite(event, d.number(s.on_loss, {**values, **state}, f"{where}.{s.name}.on_loss"),
                          state[s.name])
             for s in d.state if s.on_loss is not None}
    return {**state, **moved}


def change(d: Definition, s: StateRule, values: dict[str, Any], xi: Any, weight: Any) -> Any:
    """(weight / alpha) * d(xi): the change of ``weight`` bytes of ACKs that each met state xi,
    d(x) = on_ack(x) - x with the other names bound by ``values``. The product is formed branch
    by branch of d's conditions; a branch whose d is a constant multiple c of alpha is c *
    weight (linear); any other is compiled as text through the expression compiler (which
    refuses a product of two solver quantities, naming the rule)."""
    where = f"{d.source}: state.{s.name}.on_ack"
    assert s.on_ack is not None
    bound = {**values, s.name: xi}
    linear = _times(weight, d.number(s.on_ack, bound, where), xi, values["alpha"])
    if linear is not None:
        return linear
    return d.number(f"{_WEIGHT} / alpha * (({s.on_ack}) - {s.name})", {**bound, _WEIGHT: weight}, where)


def _times(weight: Any, value: Any, xi: Any, alpha: Any) -> Any | None:
    """weight * (value - xi) / alpha, pushed into the conditional branches of value and of the
    difference (an identity); None when a branch is not a known multiple of alpha (a product
    the caller compiles)."""
    if is_symbolic(value) and z3.is_app_of(value, z3.Z3_OP_ITE):
        condition, yes, no = value.children()
        a, b = _times(weight, yes, xi, alpha), _times(weight, no, xi, alpha)
        return None if a is None or b is None else _ite(condition, a, b)
    diff = value - xi
    if not is_symbolic(diff):
        if diff == 0:
            return Fraction(0)
        return weight * (Fraction(diff) / Fraction(alpha)) if not is_symbolic(alpha) else None
    diff = z3.simplify(diff)
    if z3.is_app_of(diff, z3.Z3_OP_ITE):
        return _times(weight, diff, Fraction(0), alpha)
    if z3.is_rational_value(diff):
        return _times(weight, Fraction(diff.as_fraction()), Fraction(0), alpha)
    if is_symbolic(alpha):
        c = z3.simplify(z3.substitute(diff, (alpha, z3.RealVal(1, diff.ctx))))
        if z3.is_rational_value(c) and z3.is_true(z3.simplify(diff == c * alpha)):
            return weight * Fraction(c.as_fraction())
    return None


def step_conditions(d: Definition, before: dict[str, Any], values: dict[str, Any],
                    recorded: dict[str, Any]) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """The conditions a step's recorded per-ACK values must meet (each with what it says), and
    the state the step's ACKs and loss event leave (what the per-step rules read).

    Sound: take any run of the step (any order, the loss event after any j of the k ACKs).
    ``loss_acked`` = j alpha lies in [0, newly_acked], and is all of it without a loss event.
    On each side of the loss event d keeps one sign (:func:`direction`), so the states the ACKs
    meet lie between that side's start and end, and the end minus the start, the weighted sum
    of d at those states, is between the total weight times the smallest and the largest of
    them: the states where they are taken are xi_lo, xi_hi. So the run's values satisfy every
    condition: the conditions admit it."""
    acked = values["newly_acked"]
    event = loss_event(d, before, values)
    j = recorded[LOSS_ACKED]
    out: list[tuple[str, Any]] = [
        (f"{LOSS_ACKED} outside [0, newly_acked] (all of it without a loss event)",
         _all(0 <= j, j <= acked, _any(event, j == acked)))]
    state = dict(before)
    for side, weight in ((0, j), (1, acked - j)):
        if side == 1:
            state = after_loss(d, state, values, event)
        ends: dict[str, Any] = {}
        for s in (s for s in d.state if s.on_ack is not None):
            x = s.name
            start, end = state[x], recorded[f"{x}_at_loss" if side == 0 else f"{x}_acked"]
            lo, hi = recorded[f"{x}_xi_lo{side}"], recorded[f"{x}_xi_hi{side}"]
            out.append((f"{x}_xi_lo{side} or {x}_xi_hi{side} outside the values from {start} to {end}",
                        _all(within(lo, start, end), within(hi, start, end))))
            bound = {**values, **state}
            out.append((f"{x} moved from {start} to {end}, outside what {weight} bytes of ACKs allow",
                        _all(change(d, s, bound, lo, weight) <= end - start,
                             end - start <= change(d, s, bound, hi, weight))))
            ends[x] = end
        state.update(ends)
    return out, state


def direction(d: Definition, s: StateRule, params: dict[str, Any]) -> int:
    """+1 if ``s``'s per-ACK change on_ack(x) - x is >= 0 for every state, observation and MSS
    (alpha > 0) with these parameters, -1 if it is <= 0: z3 proves one of them, or the file is
    refused. What makes each side of a step's ACKs monotone, so that the states they pass
    through lie between its ends (:func:`step_conditions`)."""
    where = f"{d.source}: state.{s.name}.on_ack"
    assert s.on_ack is not None
    ctx = term_context()
    alpha = z3.Real("alpha", ctx)
    unknowns: dict[str, Any] = {n: z3.Bool(n, ctx) if o.kind == "bool" else z3.Real(n, ctx)
                                for n, o in OBSERVATIONS.items()}
    unknowns.update({x.name: z3.Real(x.name, ctx) for x in d.state})
    values = {**constants(d.params, params, z3.Real("C", ctx), 1, alpha), **unknowns}
    with nonlinear.collecting() as nodes:
        diff = d.number(s.on_ack, values, where) - unknowns[s.name]
    for sign, violated in ((1, diff < 0), (-1, diff > 0)):
        solver = z3.Solver(ctx=ctx)
        solver.add(alpha > 0, z3.Real("C", ctx) > 0, violated, *nonlinear.constraints(nodes, "exact"))
        if solver.check() == z3.unsat:
            return sign
    raise CcacError("the per-ACK change (on_ack's value minus the state) must keep one sign for every state "
                    "and observation, so that a step's ACKs move the state one way: z3 finds it both above and "
                    "below 0 here (bound it, e.g. with max(...) or min(...))", where)


def run(d: Definition, before: dict[str, Any], values: dict[str, Any],
        position: int) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    """A sender's step (steps 1 and 2 of the module's order), exactly: the ACKs one at a time
    (whole ones, then the fraction left), the loss event after ``position`` of them (if the
    step has one). Returns the state they leave and the values the trace records for them: the
    bytes before the loss event, each side's end and the states met where the change was
    smallest and largest (the start, on a side without ACKs)."""
    alpha = Fraction(values["alpha"])
    count = Fraction(values["newly_acked"]) / alpha
    weights = [Fraction(1)] * int(count) + ([count - int(count)] if count != int(count) else [])
    event = bool(loss_event(d, before, values))
    split = min(position, len(weights)) if event else len(weights)
    state = {k: Fraction(v) for k, v in before.items()}
    recorded: dict[str, Fraction] = {LOSS_ACKED: sum(weights[:split], Fraction(0)) * alpha}
    for side, side_weights in ((0, weights[:split]), (1, weights[split:])):
        if side == 1:
            state = {k: Fraction(v) for k, v in after_loss(d, state, values, event).items()}
        met: dict[str, list[tuple[Fraction, Fraction]]] = {}
        for w in side_weights:
            here = {**values, **state}
            steps = {s.name: Fraction(d.number(s.on_ack, here, s.name)) - state[s.name]
                     for s in d.state if s.on_ack is not None}
            for x, step in steps.items():
                met.setdefault(x, []).append((step, state[x]))
                state[x] += w * step
        for s in (s for s in d.state if s.on_ack is not None):
            seen = met.get(s.name) or [(Fraction(0), state[s.name])]
            recorded[f"{s.name}_xi_lo{side}"] = min(seen, key=lambda m: m[0])[1]
            recorded[f"{s.name}_xi_hi{side}"] = max(seen, key=lambda m: m[0])[1]
            recorded[f"{s.name}_at_loss" if side == 0 else f"{s.name}_acked"] = state[s.name]
    return state, recorded


def positions(d: Definition, values: dict[str, Any]) -> int:
    """How many places the loss event can take among the step's ACKs (before the first, ...,
    after the last, the fractional one counted)."""
    count = Fraction(values["newly_acked"]) / Fraction(values["alpha"])
    return int(count) + (1 if count != int(count) else 0) + 1
