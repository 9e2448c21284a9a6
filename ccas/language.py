"""CCAs written in the CCA language (:mod:`ccac.encode.rules`): the encoding and the check both
derived from the file's one definition, and its concrete sender (:mod:`ccac.senders.language`).

**Encoding.** Every state variable is a solver series (``cwnd`` and ``rate`` are the model's
own window and pacing rate). Before the first step at which every observation the rules read
exists (:meth:`~ccac.encode.rules.Definition.first_rule_step`: R for ACKs, R + 1 for the ACKs
of the step before, 1 for the state of the step before) the state is history: any value its
``initial`` condition allows, as a trace starts "from any state". From that step on each state
variable equals its rule, the rule compiled with the previous state, the step's observations and
the parameters bound to solver terms; there is no approximation for piecewise-linear rules (the
expression compiler refuses products of two unknowns). A rule that needs a power of the
whole-step delay reading is compiled once per whole value the reading can take at that step
(0 .. t - R) and the cases joined on the reading: exact, since the reading is one of them. Each
open choice is a solver series constrained to its values (``choose``) or its interval
(``between``). The recorded observations are series too: ``loss_point`` anywhere in
[L_f[t-1], L_f[t]] and ``delay`` anywhere in the model's delay range, closed at both ends (the
true value lies in the half-open range; closing it only adds values), so a move is allowed when
some value allows it; ``delay_steps``/``delay_known`` equal the curves' whole-step reading at
trace steps, and ``qdel_steps`` (the newest sample) equals that reading at a step whose ACKs
grew and the previous sample otherwise; the beliefs follow their updates exactly from the step
the sender has seen enough readings. Before that (and a sample before the trace shows one), a
value from the sender's unknown past: any value >= 0 (whole for a sample), which every update
of the belief yields from some past (its candidates are ACKed or sent bytes over positive
windows, or its previous value), so the history only adds runs.
A rate-only CCA (no window) sets the model's window to its bytes in flight plus the step's rate,
so that the pacing rate is what limits it, as ETC's encoding does.

Per-ACK rules (``on_ack``, ``on_loss``) act before the rules, which read the state they leave:
their per-step constraints, and why they admit every order of a step's ACKs and every place of
its loss event, are :func:`ccac.encode.per_ack.step_conditions`'s.

**Check.** The same rules evaluated exactly on the trace's values (the choices and ranged
observations the trace recorded, each checked to be allowed), step by step.

Soundness: the encoding's constraints at step t are the rule's value at t, for exactly the
values the sender's rule can take (every choice, every point of a range); before the rules
apply nothing is assumed beyond ``initial``. So every run of the algorithm the file states
satisfies them.
"""

from __future__ import annotations

import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, cast

import z3

from ccac.ccas.interface import CCA, FlowContext, FlowValues, StateVar
from ccac.core.errors import CcacError
from ccac.core.params import resolve
from ccac.encode.encoding import maximum, minimum, truth, whole
from ccac.encode import per_ack
from ccac.encode.beliefs import (bq_after, exact_and, exact_not, exact_or, lambda_after, lambda_candidates,
                                 max_c_after, max_c_candidates, min_c_after, min_c_candidates, used_steps)
from ccac.encode import nonlinear
from ccac.encode.nonlinear import root_band
from ccac.encode.rules import (FINITE, JITTER, MEMORY, OBSERVATIONS, SENDS, Choice, Definition, choice_allows,
                               constants, interval, parse_definition)
from ccac.senders.interface import ConcreteSender, SenderStart

#: bundled CCA files
LIBRARY = Path(__file__).resolve().parent / "rules"

START_OBSERVATIONS: dict[str, Any] = {
    **{name: Fraction(0) for name in ("acked", "newly_acked", "lost", "newly_lost", "sent", "inflight", "loss_point",
                                      "min_c", "max_c", "min_c_lambda", "bq_belief", "qdel_steps", "delay_steps")},
    "timeout": False, "delay_known": False,
}
"""What a connection observes before its first ACK: nothing sent, ACKed or lost, no timeout, no
delay sample, and every belief at 0 (the concrete sender's start, ``senders/language.py``)."""


class LanguageCCA(CCA):
    """A CCA from a CCA file."""

    def __init__(self, definition: Definition) -> None:
        self.definition = definition
        self.name = definition.name
        self.summary = definition.summary
        self.params = definition.params
        self.dupacks_default = definition.dupacks
        own = [StateVar(s.name, s.description, s.unit, axis=s.axis) for s in definition.state if s.name not in SENDS]
        choices = [StateVar(c.series, f"the value {s.name}'s rule took for its open choice {c.kind}"
                            f"({', '.join(c.args)})", s.unit, axis=s.axis)
                   for s in definition.state for c in s.choices]
        recorded = [StateVar(o, OBSERVATIONS[o].description, OBSERVATIONS[o].unit, OBSERVATIONS[o].kind,
                             plotted=OBSERVATIONS[o].belief, axis=OBSERVATIONS[o].axis)
                    for o in definition.recorded()]
        axes = {s.name: s.axis for s in definition.state}
        acks = [StateVar(r.name, r.description, axis=axes[r.state] if r.state else None)
                for r in per_ack.series(definition)]
        taken = sorted({v.name for v in acks} & {v.name for v in own + choices + recorded}
                       | {v.name for v in acks} & set(definition.definitions))
        if taken:
            raise CcacError(f"{taken[0]!r} names a value the per-ACK rules record: name the state differently",
                            definition.source)
        self.state = tuple(own + choices + recorded + acks)
        self._directions(resolve(definition.params, {}, definition.source))

    def _directions(self, params: dict[str, Any]) -> None:
        """Each ``on_ack`` rule's change keeps one sign with these parameters (z3 proves it, or
        the file is refused): what the derived per-step encoding rests on."""
        for s in self.definition.state:
            if s.on_ack is not None:
                per_ack.direction(self.definition, s, params)

    @property
    def source(self) -> str:
        return self.definition.source

    def paced(self, params: dict[str, Any]) -> bool:
        d = self.definition
        if d.rate is None:
            return False
        return d.rate_when is None or bool(d.condition(d.rate_when, dict(params), f"{d.source}: send.rate_when"))

    def lookback(self, params: dict[str, Any], R: int) -> int:
        return max(R + 1, self.definition.first_rule_step(R, params))

    opens_late = True

    def start_state(self, params: dict[str, Any], C: Fraction, R: int, alpha: Fraction) -> dict[str, Fraction]:
        """Each state variable's ``start`` expression (0 without one, as the concrete sender
        starts it) on a connection's first observations: nothing sent, ACKed or lost, no timeout."""
        d = self.definition
        values: dict[str, Any] = {**constants(d.params, dict(params), C, R, alpha), **START_OBSERVATIONS}
        out: dict[str, Fraction] = {}
        for s in d.state:
            if s.start is not None:
                out[s.name] = Fraction(d.number(s.start, {**values, **out}, f"{d.source}: state.{s.name}.start"))
            else:
                out[s.name] = Fraction(0)
        return out

    def first_rule_step(self, params: dict[str, Any], R: int) -> int:
        """Rules that read an observation first known later than step R (``newly_acked`` reads
        the ACKs of two steps, a belief its window) start there: the whole state before is free."""
        return max(R, self.definition.first_rule_step(R, params))

    # ------------------------------------------------------------------ observations
    @staticmethod
    def _observed(S: Any, Ld: Any, A: Any, timeout: Any, R: int, t: int, recorded: dict[str, Any]) -> dict[str, Any]:
        """What the sender observes at step t, from the flow's curves (solver terms when
        encoding, numbers when checking) and the values the trace records at t."""
        out: dict[str, Any] = {"timeout": timeout[t], "lost": Ld[t], **recorded}
        if t >= R:
            out["acked"] = S[t - R]
        if t >= R + 1:
            out["newly_acked"] = S[t - R] - S[t - R - 1]
        if t >= 1:
            out["newly_lost"] = Ld[t] - Ld[t - 1]
            out["sent"] = A[t - 1]
            if t >= R:
                out["inflight"] = A[t - 1] - S[t - R] - Ld[t]
        return out

    # ------------------------------------------------------------------ encoding
    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        d, p = self.definition, ctx.params
        paced = self.paced(p)
        series: dict[str, list[Any]] = {}
        for s in d.state:
            if s.name == "cwnd":
                series["cwnd"] = ctx.cwnd
            elif s.name == "rate":
                if not paced:
                    raise CcacError(f"{d.name}: the state rate is the pacing rate, but rate_when is false",
                                    d.source)
                series["rate"] = ctx.rate
            else:
                series[s.name] = ctx.series(s.name, axis=s.axis)
        choices = {c.series: ctx.series(c.series, axis=s.axis) for s in d.state for c in s.choices}
        recorded = {o: ctx.series(o, OBSERVATIONS[o].kind, axis=OBSERVATIONS[o].axis) for o in d.recorded()}
        axes = {s.name: s.axis for s in d.state}
        acks = {r.name: ctx.series(r.name, axis=axes[r.state] if r.state else None) for r in per_ack.series(d)}
        self._directions(dict(p))
        first = max(d.first_rule_step(ctx.R, p), ctx.opens or 0)   # a connection opening later starts there
        fixed = constants(d.params, dict(p), ctx.C, ctx.R, ctx.alpha)
        for t in range(ctx.T):
            if "loss_point" in recorded:
                point = recorded["loss_point"][t]
                ctx.add(point <= ctx.L[t], *([point >= ctx.L[t - 1]] if t >= 1 else []))
            if "delay" in recorded:
                ctx.add(*self._delay_reading(ctx, t, recorded["delay"][t]))

            # the reading at trace steps only: a periodic query's wrapped steps are a later period's,
            # where the reading sees further back than the wrapped timeline shows
            if {"delay_steps", "delay_known"} & set(recorded) and t >= max(ctx.R, ctx.enc.timeline.history):
                steps, known = self._delay_bracket(ctx, t)
                ctx.add(*([recorded["delay_steps"][t] == steps] if "delay_steps" in recorded else []),
                        *([recorded["delay_known"][t] == known] if "delay_known" in recorded else []))
            if "qdel_steps" in recorded:
                ctx.add(*self._qdel_sample(ctx, t, recorded["qdel_steps"], recorded["delay_steps"]))
            if "min_c" in recorded:
                ctx.add(*self._min_c(ctx, t, first, recorded["min_c"]))
            if "max_c" in recorded:
                ctx.add(*self._max_c(ctx, t, first, recorded["max_c"], recorded["qdel_steps"]))
            if "min_c_lambda" in recorded:
                ctx.add(*self._min_c_lambda(ctx, t, first, recorded["min_c_lambda"]))
            if "bq_belief" in recorded:
                ctx.add(*self._bq_belief(ctx, t, first, recorded["bq_belief"], recorded["min_c_lambda"]))
            seen = self._observed(ctx.S, ctx.Ld, ctx.A, ctx.timeout, ctx.R, t, {o: v[t] for o, v in recorded.items()})
            now = {name: series[name][t] for name in series}
            for name, held in d.finite.items():   # a finite state holds one of its values, history included
                ctx.add(z3.Or(*(series[name][t] == v for v in held)))
            if t < first:
                # before the rules apply; in a periodic query's wrapped history these are a later
                # period's steps, where the rules hold instead of the initial condition
                for s in d.state if t >= ctx.enc.timeline.history else ():
                    if s.initial is not None:
                        ctx.add(d.condition(s.initial, {**fixed, **seen, **now}, f"{d.source}: state.{s.name}.initial"))
            else:
                before = {name: series[name][t - 1] for name in series}
                after = self._acks_and_loss(before, {**fixed, **seen}, {k: v[t] for k, v in acks.items()})
                ctx.add(*(truth(c) if isinstance(c, bool) else c for _, c in after[0]))
                values = {**fixed, **seen, **after[1], **{k: v[t] for k, v in choices.items()}}
                # the whole-step reading's largest value: this step's (t - R) at a trace step; at
                # a periodic query's wrapped step it is that of the trace step it stands for
                timeline = ctx.enc.timeline
                top = (t if t >= timeline.history else timeline.wrap(t)[0] + timeline.history) - ctx.R
                finite = {**{o: tuple(range(max(top, 0) + 1)) for o in FINITE if o in d.observed}, **d.finite}
                for s in d.state:
                    where = f"{d.source}: state.{s.name}.rule"
                    for c in s.choices:
                        ctx.add(self._choice(c, choices[c.series][t], values, where))
                    ctx.add(*equal_by_cases(series[s.name][t], d.number(s.rule, values, where, finite)))
            self._encode_send(ctx, t, {**fixed, **seen, **now}, paced)
        return {k: v for k, v in {**series, **choices, **recorded, **acks}.items() if k not in SENDS}

    def _acks_and_loss(self, before: dict[str, Any], values: dict[str, Any],
                       recorded: dict[str, Any]) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
        """The conditions on the step's per-ACK values and the state its ACKs and loss event leave
        (:func:`ccac.encode.per_ack.step_conditions`); the state itself for a file without per-ACK rules."""
        if not recorded:
            return [], before
        return per_ack.step_conditions(self.definition, before, values, recorded)

    @staticmethod
    def _min_c(ctx: FlowContext, t: int, first: int, min_c: list[Any]) -> list[Any]:
        """The belief min_c (:func:`ccac.encode.beliefs.min_c_candidates`): before the sender has
        ``memory`` steps of ACK readings in the trace it is history (any value >= 0); after, the
        largest of its previous value and the last windows' ACK rates over (window + jitter),
        as at least each of them and equal to one."""
        if t < first:
            return [min_c[t] >= 0]
        acked = [ctx.S[t - ctx.R - k] for k in range(int(ctx.params[MEMORY]), -1, -1)]
        candidates = [min_c[t - 1], *min_c_candidates(acked, ctx.params[JITTER])]
        return [*(min_c[t] >= c for c in candidates), z3.Or(*(min_c[t] == c for c in candidates))]

    @staticmethod
    def _max_c(ctx: FlowContext, t: int, first: int, max_c: list[Any], qdel_steps: list[Any]) -> list[Any]:
        """The belief max_c (:func:`ccac.encode.beliefs.max_c_candidates`): history (any value >= 0)
        until the sender has seen ``memory`` steps of its own; after, at most its previous value
        and every candidate whose window was used throughout, and equal to one of them."""
        if t < first:
            return [max_c[t] >= 0]
        memory, jitter, R = int(ctx.params[MEMORY]), ctx.params[JITTER], ctx.R
        s = t - R
        acked = [ctx.S[s - k] for k in range(memory, -1, -1)]
        used = used_steps(qdel_steps, ctx.A, ctx.Ld, s, memory, R, jitter, z3.And, z3.Or)
        candidates = [(z3.And(*steps), value) for steps, value in max_c_candidates(acked, used, jitter)]
        return [max_c[t] <= max_c[t - 1], *(z3.Implies(c, max_c[t] <= v) for c, v in candidates),
                z3.Or(max_c[t] == max_c[t - 1], *(z3.And(c, max_c[t] == v) for c, v in candidates))]

    @staticmethod
    def _qdel_sample(ctx: FlowContext, t: int, sample: list[Any], delay_steps: list[Any]) -> list[Any]:
        """The newest RTT sample's whole-step delay (:data:`~ccac.encode.rules.OBSERVATIONS`
        ``qdel_steps``): the step's reading when its ACK reading grew, else the previous sample.
        Where the reading or the step before is not on the trace (the first R + 1 steps, a
        periodic query's wrapped steps), a sample from the unknown past: any whole value >= 0."""
        s = t - ctx.R
        if s < 1 or t - 1 < max(ctx.R, ctx.enc.timeline.history):
            return [sample[t] >= 0, z3.IsInt(sample[t])]
        moved = ctx.S[s] > ctx.S[s - 1]
        return [z3.Implies(moved, sample[t] == delay_steps[t]), z3.Implies(z3.Not(moved), sample[t] == sample[t - 1])]

    @staticmethod
    def _min_c_lambda(ctx: FlowContext, t: int, first: int, belief: list[Any]) -> list[Any]:
        """The belief min_c_lambda (:func:`ccac.encode.beliefs.lambda_candidates`): history (any
        value >= 0) until the sender has seen its windows and the sending before them; after, at
        least its previous value and every valid candidate, and equal to one of them."""
        if t < first:
            return [belief[t] >= 0]
        candidates = lambda_candidates(ctx.S, ctx.A, ctx.L, ctx.Ld, t - ctx.R, t, int(ctx.params[MEMORY]),
                                       int(ctx.params[JITTER]), z3.And, z3.Not)
        return [belief[t] >= belief[t - 1], *(z3.Implies(c, belief[t] >= v) for c, v in candidates),
                z3.Or(belief[t] == belief[t - 1], *(z3.And(c, belief[t] == v) for c, v in candidates))]

    @staticmethod
    def _bq_belief(ctx: FlowContext, t: int, first: int, belief: list[Any], lam: list[Any]) -> list[Any]:
        """The belief bq_belief (:func:`ccac.encode.beliefs.bq_after`): history (any value >= 0)
        before min_c_lambda's first reading; after, exactly its update."""
        if t < first:
            return [belief[t] >= 0]
        inflight = ctx.A[t - 1] - ctx.S[t - ctx.R] - ctx.Ld[t]
        return equal_by_cases(belief[t], bq_after(belief[t - 1], inflight, ctx.A[t - 1] - ctx.A[t - 2], lam[t],
                                                         minimum, maximum))

    @staticmethod
    def _delay_bracket(ctx: FlowContext, t: int) -> tuple[Any, Any]:
        """(delay_steps, delay_known) at step t: the number of k = 1..s (s = t - R) for which the
        newest ACKed byte had been admitted by s - k (the readings are monotone in k), and
        whether some k bounds it (it was admitted after some step of the trace)."""
        s = t - ctx.R
        if s < 1:
            return whole(0), truth(False)
        waited = [z3.Not(ctx.v.served_past(s, k)) for k in range(1, s + 1)]
        return z3.Sum(*(z3.If(w, 1, 0) for w in waited)), z3.Not(z3.And(*waited))

    @staticmethod
    def _delay_reading(ctx: FlowContext, t: int, delay: Any) -> list[Any]:
        """The newest ACKed byte's queueing delay, as the model reads it at service step
        s = t - R (thesis figure 5-1B, as Copa's encoding reads it): at least k steps if that
        byte was admitted by s - k, at most k if it was admitted after. Closed at both ends (the
        true value is in the half-open range; closing it only adds values). Before the ACKs of
        step 0 arrive, any delay."""
        s = t - ctx.R
        out = [delay >= 0]
        for k in range(1, s + 1) if s >= 1 else ():
            past = ctx.v.served_past(s, k)
            out += [z3.Implies(z3.Not(past), delay >= k), z3.Implies(past, delay <= k)]
        return out

    def _choice(self, c: Choice, v: Any, values: dict[str, Any], where: str) -> Any:
        """The values open choice ``c`` may take: one of its arguments, a point of its interval
        (its ends in either order, :func:`~ccac.encode.rules.interval`), or a value of its
        rational power (:func:`ccac.encode.nonlinear.root_band`)."""
        d = self.definition
        if c.kind == "root":
            base, p, q = c.args
            return root_band(v, d.number(base, values, where), int(p), int(q),
                             lambda x, n: _power(x, n, where, f"{base} ** (1/{q})"))
        args = [d.number(a, values, where) for a in c.args]
        if c.kind == "choose":
            return z3.Or(*(v == a for a in args))
        args = list(interval(*args))
        return z3.And(args[0] <= v, v <= args[1])

    def _encode_send(self, ctx: FlowContext, t: int, values: dict[str, Any], paced: bool) -> None:
        d = self.definition
        if d.window is not None and "cwnd" not in d.state_names:
            ctx.add(ctx.cwnd[t] == d.number(d.window, values, f"{d.source}: send.window", d.finite))
        if paced and "rate" not in d.state_names:
            assert d.rate is not None  # paced() is false without a [send] rate
            ctx.add(ctx.rate[t] == d.number(d.rate, values, f"{d.source}: send.rate", d.finite))
        if d.window is None and t >= ctx.R:   # rate only: the pacing rate limits the sender
            ctx.add(ctx.cwnd[t] == ctx.A[t - 1] + ctx.rate[t] - ctx.S[t - ctx.R] - ctx.Ld[t])

    # ------------------------------------------------------------------ check
    def check(self, f: FlowValues) -> list[str]:
        d, problems = self.definition, []
        paced = f.rate is not None
        series = self._series(f)
        first = self._first_step(f)
        known = self._known(f)
        for t in range(f.T):
            now = {name: series[name][t] for name in series}
            if "loss_point" in f.state:
                point = f.state["loss_point"][t]
                if point > f.L[t] or (t >= 1 and point < f.L[t - 1]):
                    problems.append(f"step {t}: loss_point {point} outside [L_f[t-1], L_f[t]]")
            if "delay" in f.state:
                delay = f.state["delay"][t]
                lo, hi = f.delay_range(t - f.R) if t - f.R >= 1 else (0, None)
                if delay < lo or (hi is not None and delay > hi):
                    problems.append(f"step {t}: delay {delay} outside the model's reading [{lo}, {hi}]")
            if t >= f.R and ("delay_steps" in f.state or "delay_known" in f.state):
                problems += self._check_bracket(f, t)
            if "qdel_steps" in f.state:
                problems += self._check_qdel_sample(f, t)
            for belief, update in BELIEF_CHECKS.items():
                if belief in f.state:
                    problems += _check_belief(f, belief, t, first, update)
            if t < first:
                for s in d.state:
                    if s.initial is not None and not d.condition(s.initial, {**known[t], **now}, s.name):
                        problems.append(f"step {t}: {s.name} = {now[s.name]} breaks its initial condition "
                                        f"`{s.initial}`")
            else:
                conditions, values = self._rule_values(f, t, series, known[t])
                problems += [f"step {t}: {what}" for what, holds in conditions if not holds]
                for s in d.state:
                    for c in s.choices:
                        if not choice_allows(d, c, f.state[c.series][t], values, s.name):
                            problems.append(f"step {t}: {c.series} = {f.state[c.series][t]} is not a value "
                                            f"{c.kind}({', '.join(c.args)}) allows")
                    try:
                        expected = d.number(s.rule, values, s.name)
                    except CcacError as e:   # a division by 0: the sender's rule has no value
                        problems.append(f"step {t}: rule {s.name} has no value: {e}")
                        continue
                    if now[s.name] != expected:
                        problems.append(f"step {t}: rule {s.name} gives {expected}, the trace has {now[s.name]}")
            values = {**known[t], **now}
            if d.window is not None and "cwnd" not in d.state_names \
                    and f.cwnd[t] != d.number(d.window, values, "window"):
                problems.append(f"step {t}: window {f.cwnd[t]} is not [send] window `{d.window}`")
            if paced and "rate" not in d.state_names:
                # the trace has a rate only for a paced flow, and paced() is false without a [send] rate
                assert f.rate is not None and d.rate is not None
                if f.rate[t] != d.number(d.rate, values, "rate"):
                    problems.append(f"step {t}: rate {f.rate[t]} is not [send] rate `{d.rate}`")
            if d.window is None and t >= f.R and f.rate is not None and \
                    f.cwnd[t] != f.A[t - 1] + f.rate[t] - f.S[t - f.R] - f.Ld[t]:
                problems.append(f"step {t}: a rate-only CCA's window must be its bytes in flight plus its rate")
        return problems

    def _series(self, f: FlowValues) -> dict[str, list[Any]]:
        """Each state's values on the trace (the window and the rate are the trace's own)."""
        # a state rate is the pacing rate, which encode() refuses unless paced: then the trace has f.rate
        return {s.name: (f.cwnd if s.name == "cwnd" else cast(list[Any], f.rate) if s.name == "rate"
                         else f.state[s.name]) for s in self.definition.state}

    def _first_step(self, f: FlowValues) -> int:
        """The first step the rules apply at on ``f`` (a connection opening later starts there)."""
        return max(self.definition.first_rule_step(f.R, f.params), f.opens or 0)

    def _known(self, f: FlowValues) -> list[dict[str, Any]]:
        """What the rules know at each step of ``f``: the parameters and the step's observations."""
        d = self.definition
        fixed = constants(d.params, dict(f.params), f.C, f.R, f.alpha)
        return [{**fixed, **self._observed(f.S, f.Ld, f.A, f.timeout, f.R, t, {o: f.state[o][t] for o in d.recorded()})}
                for t in range(f.T)]

    def _rule_values(self, f: FlowValues, t: int, series: dict[str, list[Any]], known: dict[str, Any]
                     ) -> tuple[list[tuple[str, bool]], dict[str, Any]]:
        """At a step ``t`` where the rules apply: the per-ACK conditions of the step (each with
        whether it holds) and the values the state rules read (``known``: the parameters and
        the observations; with the state before the step, the step's ACK and loss quantities
        and each open choice's value)."""
        d = self.definition
        before = {name: series[name][t - 1] for name in series}
        conditions, after = self._acks_and_loss(before, known, {r.name: f.state[r.name][t] for r in per_ack.series(d)})
        return conditions, {**known, **after, **{c.series: f.state[c.series][t] for s in d.state for c in s.choices}}

    def step_rules(self, f: FlowValues) -> dict[int, list[str]]:
        """At each step the rules apply, each state's branch: ``cwnd: loss_now > 0``."""
        d = self.definition
        series, known = self._series(f), self._known(f)
        out: dict[int, list[str]] = {}
        for t in range(self._first_step(f), f.T):
            values = self._rule_values(f, t, series, known[t])[1]
            taken = [(s.name, d.branch(s.rule, values, s.name)) for s in d.state]
            out[t] = [f"{name}: {branch}" for name, branch in taken if branch is not None]
        return out

    @staticmethod
    def _check_qdel_sample(f: FlowValues, t: int) -> list[str]:
        sample, s = f.state["qdel_steps"], t - f.R
        if s < 1 or t - 1 < f.R:
            return [f"step {t}: qdel_steps {sample[t]} is not a whole number >= 0"] \
                if sample[t] < 0 or Fraction(sample[t]).denominator != 1 else []
        expected = f.state["delay_steps"][t] if f.S[s] > f.S[s - 1] else sample[t - 1]
        if sample[t] == expected:
            return []
        return [f"step {t}: qdel_steps is {sample[t]}, the newest sample gives {expected}"]

    @staticmethod
    def _check_bracket(f: FlowValues, t: int) -> list[str]:
        """The recorded whole-step reading against the curves: exact when they bound the delay;
        when they do not (the byte was admitted before step 0), any reading from their lower end
        up, bounded or not, is one some past gives (a periodic trace's encoding reads the
        previous period there)."""
        lo, hi = f.delay_range(t - f.R)
        steps = f.state["delay_steps"][t] if "delay_steps" in f.state else lo
        known = f.state["delay_known"][t] if "delay_known" in f.state else hi is not None
        if hi is not None and (steps != lo or not known):
            return [f"step {t}: delay reading ({steps}, known {known}) but the curves give {lo} steps, bounded"]
        if hi is None and (Fraction(steps).denominator != 1 or steps < lo):
            return [f"step {t}: delay reading {steps} steps, below the curves' {lo} or not whole"]
        return []

    def concrete(self, start: SenderStart, choose: Callable[[str, int], int] | None = None) -> ConcreteSender:
        from ccac.senders.language import LanguageSender

        return LanguageSender(self.definition, start, self.paced(start.params), choose)


def _check_belief(f: FlowValues, name: str, t: int, first: int,
                  update: Callable[[FlowValues, int], Fraction]) -> list[str]:
    """A recorded belief against its update: any value >= 0 before the sender has seen enough to
    update it (history), its update from the step before after."""
    value = f.state[name][t]
    if t < first:
        return [f"step {t}: {name} {value} is negative"] if value < 0 else []
    expected = update(f, t)
    return [] if value == expected else [f"step {t}: {name} is {value}, its update gives {expected}"]


def _min_c_update(f: FlowValues, t: int) -> Fraction:
    acked = [f.S[t - f.R - k] for k in range(int(f.params[MEMORY]), -1, -1)]
    return min_c_after(f.state["min_c"][t - 1], acked, f.params[JITTER])


def _max_c_update(f: FlowValues, t: int) -> Fraction:
    memory, jitter, R = int(f.params[MEMORY]), f.params[JITTER], f.R
    s = t - R
    acked = [f.S[s - k] for k in range(memory, -1, -1)]
    used = used_steps(f.state["qdel_steps"], f.A, f.Ld, s, memory, R, jitter, exact_and, exact_or)
    return max_c_after(f.state["max_c"][t - 1], acked, used, jitter)


def _min_c_lambda_update(f: FlowValues, t: int) -> Fraction:
    candidates = lambda_candidates(f.S, f.A, f.L, f.Ld, t - f.R, t, int(f.params[MEMORY]), int(f.params[JITTER]),
                                   exact_and, exact_not)
    return lambda_after(f.state["min_c_lambda"][t - 1], candidates)


def _bq_belief_update(f: FlowValues, t: int) -> Fraction:
    inflight = f.A[t - 1] - f.S[t - f.R] - f.Ld[t]
    return bq_after(f.state["bq_belief"][t - 1], inflight, f.A[t - 1] - f.A[t - 2], f.state["min_c_lambda"][t])


#: each belief's exact update, for the check
BELIEF_CHECKS: dict[str, Callable[[FlowValues, int], Fraction]] = {
    "min_c": _min_c_update, "max_c": _max_c_update, "min_c_lambda": _min_c_lambda_update,
    "bq_belief": _bq_belief_update,
}


def equal_by_cases(target: Any, value: Any) -> list[Any]:
    """``target == value``, with a conditional value split into one implication per branch
    (``c -> target == a``, ``not c -> target == b``, recursively): the same constraint, in the
    form the hand-written encodings use, which z3 solves faster than an equation between
    nested if-then-else terms."""
    if z3.is_expr(value) and z3.is_app_of(value, z3.Z3_OP_ITE):
        condition_, yes, no = value.children()
        return [z3.Implies(condition_, z3.And(*equal_by_cases(target, yes))),
                z3.Implies(z3.Not(condition_), z3.And(*equal_by_cases(target, no)))]
    return [target == value]


def _power(x: Any, n: int, where: str, text: str) -> Any:
    """``x ** n`` (n >= 1): a number, or a non-linear node for a solver quantity."""
    if n == 1:
        return x
    if not z3.is_expr(x):
        return Fraction(x) ** n
    return nonlinear.make("pow", x, None, n, where, text)


def load_file(path: Path) -> LanguageCCA:
    """The CCA a CCA file defines; errors name the file and the key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise CcacError(f"cannot read the CCA file: {e.strerror or e}", str(path)) from None
    except tomllib.TOMLDecodeError as e:
        raise CcacError(f"not valid TOML: {e}", str(path)) from None
    return LanguageCCA(parse_definition(data, str(path)))


def bundled() -> list[LanguageCCA]:
    """The CCA files shipped in ``ccas/rules/``."""
    return [load_file(p) for p in sorted(LIBRARY.glob("*.toml"))]
