"""The concrete sender of a CCA written in the CCA language (:mod:`ccac.encode.rules`).

It runs the file's rules themselves over exact numbers: at each step it reads its observations
from the feedback, evaluates every rule on its previous state, and sends the new ``cwnd`` (and
``rate``). Open choices are taken from one deterministic hook, ``choose(what, n)`` (an index
among n options; the default takes the first): ``choose(...)`` offers its values, ``between(lo,
hi)`` offers lo, the midpoint and hi. Detections before the run are taken as none when the
run does not say (``newly_lost`` at the first step is everything detected so far).
A rational power ``x ** (p/q)`` takes the exact rational root within the
tolerance (:func:`ccac.encode.nonlinear.exact_root`); a negative base is an error.
``loss_point`` is the feedback's reading where the path gives one, else the loss order of the
bytes sent before this step (the flow's loss curve at t - 1, the low end of the model's range).

Before the rules apply (the first steps of a run, while an observation they read does not exist
yet) the state holds. At the start, each state variable takes the run's value if the run has
one, else its ``start`` expression evaluated on the first step's observations, else 0.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from ccac.encode.beliefs import (bq_after, exact_and, exact_not, exact_or, lambda_after, lambda_candidates,
                                 max_c_after, min_c_after, used_steps)
from ccac.encode import per_ack
from ccac.core.errors import CcacError
from ccac.encode.nonlinear import exact_root
from ccac.encode.rules import JITTER, MEMORY, Definition, constants
from ccac.senders.interface import Choose, ConcreteSender, Decision, Feedback, SenderStart


class LanguageSender(ConcreteSender):
    def __init__(self, definition: Definition, start: SenderStart, paced: bool,
                 choose: Choose | None = None) -> None:
        self.d, self.start, self.paced = definition, start, paced
        self.choose: Choose = choose or (lambda what, n: 0)
        self.constants = constants(definition.params, dict(start.params), start.C, start.R, start.alpha)
        self.values: dict[str, Fraction] | None = None   # the state, once started
        # the values the open choices took at the last step the rules ran (0 before: unused)
        self.taken: dict[str, Fraction] = {c.series: Fraction(0) for s in definition.state for c in s.choices}
        # the values the per-ACK rules recorded at the last step the rules ran (0 before: unused)
        self.acks: dict[str, Fraction] = {r.name: Fraction(0) for r in per_ack.series(definition)}
        self.previous_acked: Fraction | None = start.acked[-1] if start.acked else None
        self.previous_lost: Fraction = Fraction(start.value("Ld_f", 0))
        self.readings: list[Fraction] = list(start.acked)   # ACK readings, oldest first
        self.min_c: Fraction = Fraction(start.value("min_c", 0))
        self.max_c: Fraction = Fraction(start.value("max_c", 0))
        self.min_c_lambda: Fraction = Fraction(start.value("min_c_lambda", 0))
        self.bq_belief: Fraction = Fraction(start.value("bq_belief", 0))
        self.qdel_steps: Fraction = Fraction(start.value("qdel_steps", 0))   # the newest sample's whole-step delay
        # what the sender saw at each step since it started, by step: ACK reading, whole-step
        # delay sample, bytes detected lost (max_c's windows read them)
        self.seen_at: dict[int, tuple[Fraction, Fraction, Fraction]] = {}

    def _observations(self, fb: Feedback) -> dict[str, Any]:
        out: dict[str, Any] = {"acked": fb.acked, "lost": fb.lost, "timeout": fb.timeout, "sent": fb.sent,
                               "inflight": fb.inflight}
        if self.previous_acked is not None:
            out["newly_acked"] = fb.acked - self.previous_acked
        out["newly_lost"] = fb.lost - self.previous_lost
        if "min_c" in self.d.observed:
            out["min_c"] = self.min_c
        if "max_c" in self.d.observed:
            out["max_c"] = self.max_c
        if "min_c_lambda" in self.d.observed:
            out["min_c_lambda"] = self.min_c_lambda
        if "bq_belief" in self.d.observed:
            out["bq_belief"] = self.bq_belief
        # the model's whole-step reading of the newest ACKed byte, and of the newest sample (the
        # reading of the last step whose ACKs grew)
        out["delay_steps"], out["delay_known"] = Fraction(fb.delay[0]), fb.delay[1] is not None
        out["qdel_steps"] = self.qdel_steps
        if "delay" in self.d.observed:   # the newest sample's queueing delay (box included)
            out["delay"] = fb.rtt - fb.R if fb.rtt is not None else Fraction(fb.delay[0])
        if "loss_point" in self.d.observed:
            out["loss_point"] = self._loss_point(fb)
        return out

    def decide(self, fb: Feedback) -> Decision:
        return self.respond(fb, self.observe(fb))

    def observe(self, fb: Feedback) -> dict[str, Any]:
        """Step ``fb.t``'s observations, the beliefs updated on what ``fb`` shows (the half of a
        decision that does not depend on the rules' constants)."""
        if self.previous_acked is None or fb.acked > self.previous_acked:
            self.qdel_steps = Fraction(fb.delay[0])
        self.readings.append(fb.acked)
        first = self.d.first_rule_step(fb.R, self.start.params)
        if "min_c" in self.d.observed and fb.t >= first:
            memory = int(self.start.params[MEMORY])
            self.min_c = min_c_after(self.min_c, self.readings[-memory - 1:], self.start.params[JITTER])
        self.seen_at[fb.t] = (fb.acked, self.qdel_steps, fb.lost)
        if "max_c" in self.d.observed and fb.t >= first:
            self.max_c = self._max_c(fb)
        if "min_c_lambda" in self.d.observed and fb.t >= first:
            self._probe_beliefs(fb)
        seen = self._observations(fb)
        self.previous_acked, self.previous_lost = fb.acked, fb.lost
        return seen

    def respond(self, fb: Feedback, seen: dict[str, Any]) -> Decision:
        """The rules run on step ``fb.t``'s observations ``seen`` (:meth:`observe`): the new
        state, and what is sent. A step taken again with the sender's bytes placed elsewhere in
        the loss order (``fb.loss_point``) reads that place."""
        if fb.loss_point is not None and "loss_point" in seen:
            seen = {**seen, "loss_point": self._loss_point(fb)}
        first = self.d.first_rule_step(fb.R, self.start.params)
        self.start_state(seen)
        assert self.values is not None   # started just now
        if fb.t >= first and all(o in seen for o in self.d.observed):
            context = {**self.constants, **seen, **self._acks_and_loss({**self.constants, **seen})}
            for s in self.d.state:
                for i, c in enumerate(s.choices):
                    if c.kind == "root":
                        context[c.series] = self.taken[c.series] = self._root(c.args, context, s.name)
                        continue
                    args = [Fraction(self.d.number(a, context, s.name)) for a in c.args]
                    options = args if c.kind == "choose" else [args[0], (args[0] + args[1]) / 2, args[1]]
                    chosen = options[self.choose(f"{s.name} choice {i}", len(options))]
                    context[c.series] = self.taken[c.series] = chosen
            self.values = {s.name: Fraction(self.d.number(s.rule, context, s.name)) for s in self.d.state}
        self.seen = seen
        now = {**self.constants, **seen, **self.values}
        rate: Fraction | None = None
        if self.paced:
            assert self.d.rate is not None   # a definition paces only with a send.rate (LanguageCCA.paced)
            rate = Fraction(self.d.number(self.d.rate, now, "rate"))
        if self.d.window is not None:
            cwnd = Fraction(self.d.number(self.d.window, now, "window"))
        else:
            cwnd = fb.inflight + (rate or Fraction(0))
        return Decision(cwnd, rate)

    def _acks_and_loss(self, values: dict[str, Any]) -> dict[str, Fraction]:
        """The state after the step's ACKs, one at a time, and its loss event, placed among them
        by the hook (``choose("loss event position", n)``: after that many ACKs; the default,
        before the first) (:func:`ccac.encode.per_ack.run`)."""
        assert self.values is not None
        if not self.acks:
            return dict(self.values)
        position = self.choose("loss event position", per_ack.positions(self.d, values))
        after, self.acks = per_ack.run(self.d, self.values, values, position)
        return after

    def _root(self, args: tuple[str, ...], context: dict[str, Any], where: str) -> Fraction:
        """A rational power's value (:func:`ccac.encode.nonlinear.exact_root`); an error for a
        negative base, as the language gives it no value."""
        base, p, q = args
        x = Fraction(self.d.number(base, context, where))
        try:
            return exact_root(x, int(p), int(q))
        except ValueError as e:
            raise CcacError(f"`({base}) ** ({p}/{q})`: {e}", where) from None

    @staticmethod
    def _loss_point(fb: Feedback) -> Fraction:
        """Where the bytes sent at ``fb.t`` stand in the loss order: the path's reading if it
        gives one, else the bytes lost before the step (the low end of the model's range)."""
        if fb.loss_point is not None:
            return fb.loss_point
        return fb.outcome.lost[fb.t - 1] if fb.t >= 1 and fb.outcome.lost else Fraction(0)

    def start_state(self, seen: dict[str, Any]) -> dict[str, Fraction]:
        """The state, started on the first step's observations ``seen`` if it has not started:
        each variable the run's value if it has one, else its ``start`` expression, else 0."""
        if self.values is None:
            self.values = {}
            for s in self.d.state:
                given = self.start.value(s.name, None)
                if given is None and s.start is not None:
                    given = self.d.number(s.start, {**self.constants, **seen, **self.values}, f"{s.name}.start")
                self.values[s.name] = Fraction(given if given is not None else 0)
        return self.values

    def fork(self) -> "LanguageSender":
        """A copy that goes on separately (the definition and constants are shared: never changed)."""
        twin = copy.copy(self)
        twin.values = dict(self.values) if self.values is not None else None
        twin.taken, twin.readings, twin.seen_at = dict(self.taken), list(self.readings), dict(self.seen_at)
        twin.acks = dict(self.acks)
        return twin

    def become(self, definition: Definition, params: dict[str, Any]) -> None:
        """Run another CCA's rules from here on, with the beliefs, readings and state seen so
        far (``ccac synthesize`` plays a template's candidates that agreed so far as one):
        ``definition`` must read the same observations and state as this sender's."""
        self.d = definition
        self.start = SenderStart(self.start.R, self.start.D, self.start.C, self.start.alpha, params,
                                 self.start.values, self.start.acked)
        self.constants = constants(definition.params, dict(params), self.start.C, self.start.R, self.start.alpha)

    def _max_c(self, fb: Feedback) -> Fraction:
        """max_c's update (:func:`ccac.encode.beliefs.max_c_after`) from what the sender saw: the
        ACK reading of service step u arrived at step u + R, with the delay sample of that step;
        the bytes it sent by u are its record's."""
        memory, jitter, R = int(self.start.params[MEMORY]), self.start.params[JITTER], fb.R
        s = fb.t - R
        acked = [self.seen_at[s - k + R][0] for k in range(memory, -1, -1)]
        delay_at = {t: seen[1] for t, seen in self.seen_at.items()}
        lost_at = {t: seen[2] for t, seen in self.seen_at.items()}
        used = used_steps(delay_at, fb.outcome.sent, lost_at, s, memory, R, jitter, exact_and, exact_or)
        return max_c_after(self.max_c, acked, used, jitter)

    def _probe_beliefs(self, fb: Feedback) -> None:
        """min_c_lambda's and bq_belief's updates (:func:`ccac.encode.beliefs.lambda_candidates`,
        :func:`~ccac.encode.beliefs.bq_after`) from what the sender saw: the ACK reading of
        service step u arrived at step u + R; the bytes it sent and lost by each step are its
        record's."""
        R, sent, lost = fb.R, fb.outcome.sent, fb.outcome.lost
        acked = {t - R: seen[0] for t, seen in self.seen_at.items()}
        lost_at = {t: seen[2] for t, seen in self.seen_at.items()}
        candidates = lambda_candidates(acked, sent, lost, lost_at, fb.t - R, fb.t, int(self.start.params[MEMORY]),
                                       int(self.start.params[JITTER]), exact_and, exact_not)
        self.min_c_lambda = lambda_after(self.min_c_lambda, candidates)
        if "bq_belief" in self.d.observed:
            self.bq_belief = bq_after(self.bq_belief, fb.inflight, sent[fb.t - 1] - sent[fb.t - 2], self.min_c_lambda)

    def resume(self, values: dict[str, Any]) -> None:
        """Take over a run's state: its state variables and beliefs as ``values`` gives them (a
        history the sender did not choose, as a model trace's first steps are)."""
        if self.values is not None:
            self.values.update({s.name: Fraction(values[s.name]) for s in self.d.state if s.name in values})
        for belief in ("min_c", "max_c", "min_c_lambda", "bq_belief", "qdel_steps"):
            if belief in values:
                setattr(self, belief, Fraction(values[belief]))

    def adopt(self, decision: Decision) -> None:
        if self.values is not None:
            if "cwnd" in self.values:
                self.values["cwnd"] = decision.cwnd
            if "rate" in self.values and decision.rate is not None:
                self.values["rate"] = decision.rate

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: v for k, v in (self.values or {}).items() if k not in ("cwnd", "rate")}
        out.update(self.taken)
        out.update(self.acks)
        out.update({o: self.seen.get(o) for o in self.d.recorded()})
        return out
