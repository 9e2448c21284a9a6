"""Conformance of concrete senders: run one on a random path of the model, pin the run in the
CCA's encoding, and require sat (the encoding admits the run: the superset property, tested).

:func:`simulate` plays the path-server model with concrete choices, step by step (thesis 4.2,
the composing model): tokens arrive at C per step and are wasted only while the queue cannot
use them; the bottleneck serves anywhere between the token line of D steps ago and the token
line; bytes beyond the buffer are lost; non-congestive loss takes at most eta of what was sent;
losses are detected as soon as ``dupacks`` bytes after them are ACKed, and a timeout fires as
soon as everything in flight is known lost (under the loss oracle, ``PathConfig.oracle``, every
loss is known exactly R steps after it happens and nothing times out). The first R steps are history (free arrivals);
from step R on the sender decides (:class:`ccac.senders.interface.ConcreteSender`) and sends exactly
what its window and pacing allow. Its RTT sample lies anywhere in the model's delay reading.

:func:`admits` pins every model variable (arrivals, service, losses, detections, waste,
windows, rates, timeouts) and leaves the CCA's own state to the solver: there must be a state
under which the encoding produces exactly these decisions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import z3

from conftest import assert_admits, make_query
from ccac.synthesis.fluid_player import learn_rtts
from ccac.testbed.packet_path import all_in_flight_lost, detectable_losses, detected
from ccac.problems.problem import build
from ccac.senders.interface import AckedPacket, ConcreteSender, Feedback, FlowRecord, SenderStart, fate_known_through
from substep import Inside, Probes
from ccac.encode.trace import delay_range

F = Fraction


@dataclass
class PathConfig:
    T: int
    R: int
    D: int
    C: Fraction = F(1)
    buffer: Fraction | None = None      # bytes; None = infinite
    eta: Fraction = F(0)
    alpha: Fraction = F(1, 10)
    dupacks: Fraction = F(1)            # in alpha
    rto: int = 1
    packets: bool = False               # whole-packet mode (the run must then move whole packets)
    oracle: bool = False                # CCmatic's loss oracle: losses known exactly R steps later, no timeouts
    cold: bool = False                  # a connection's start: nothing sent before step R, the sender's own start

    def network(self) -> dict[str, Any]:
        return {"T": self.T, "R": self.R, "D": self.D, "C": self.C, "alpha": self.alpha,
                "dupacks": self.dupacks, "eta": self.eta, "rto": self.rto, "packets": self.packets,
                "buffer": "inf" if self.buffer is None else self.buffer / (self.C * self.R),
                "loss_detection": "oracle" if self.oracle else "acks", "start": "cold" if self.cold else "any"}


@dataclass
class Run:
    """Every model curve of one flow's run, the sender's decisions and its reported state."""

    cfg: PathConfig
    A: list[Fraction] = field(default_factory=list)
    S: list[Fraction] = field(default_factory=list)
    L: list[Fraction] = field(default_factory=list)
    Lnc: list[Fraction] = field(default_factory=list)
    Ld: list[Fraction] = field(default_factory=list)
    W: list[Fraction] = field(default_factory=list)
    cwnd: list[Fraction] = field(default_factory=list)
    rate: list[Fraction] = field(default_factory=list)
    timeout: list[bool] = field(default_factory=list)
    state: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        show = lambda xs: [str(x) for x in xs]  # noqa: E731
        return (f"A={show(self.A)} S={show(self.S)} L={show(self.L)} Ld={show(self.Ld)} "
                f"cwnd={show(self.cwnd)} rate={show(self.rate)} timeout={self.timeout}")


def simulate(cfg: PathConfig, start: Callable[[SenderStart], ConcreteSender], params: dict[str, Any],
             rng: random.Random, values: dict[str, Any] | None = None, paced: bool = False,
             history_rate: Fraction | dict[int, Fraction] | None = None, probes: Probes | None = None) -> Run:
    """Run the sender ``start`` makes on one random path of the model (see the module doc).

    ``values`` are the state the sender takes over at step R (:class:`SenderStart`); the
    history steps send ``history_rate`` bytes each (by step if a dict; random where it gives
    none; a paced flow sends something in every step). With ``probes`` (one flow,
    paced), the path is also built inside each step (:mod:`substep`) and the sender gets every
    packet's ACK with its exact send time and RTT (``Feedback.acks``) and the lost bytes it
    detects (``Feedback.losses``)."""
    run = Run(cfg)
    inside = Inside(cfg.C, cfg.D, cfg.R, cfg.buffer, probes, rng) if probes is not None else None
    loss_log: list[tuple[Fraction, Fraction, Fraction]] = []
    T, R, D, C = cfg.T, cfg.R, cfg.D, cfg.C
    dupacks = cfg.dupacks * cfg.alpha
    record = FlowRecord()
    tokens: list[Fraction] = []  # the token line C*t - W[t]
    sender: ConcreteSender | None = None
    for t in range(T):
        admitted = [a - l for a, l in zip(run.A, run.L)]
        if t < R:
            run.Ld.append(F(0))
            run.timeout.append(False)
        elif cfg.oracle:
            run.Ld.append(run.L[t - R])
            run.timeout.append(False)
        else:
            stalled = all_in_flight_lost(run.A, admitted, run.L, run.Ld, run.S[t - R], t, R)
            run.timeout.append(stalled)
            if stalled:
                run.Ld.append(run.L[t - R])
            else:
                run.Ld.append(max([run.Ld[t - 1]] + detectable_losses(admitted, run.L, run.S[t - R], dupacks, t - R)))
        if t < R:
            given = history_rate.get(t) if isinstance(history_rate, dict) else history_rate
            step = given if given is not None else C * F(rng.randint(1 if paced else 0, 8), 4)
            if cfg.cold:   # a connection's start: nothing sent before its first decision
                step = F(0)
            cwnd, rate, bursts = F(1), step if paced else F(1), ()
            queued = F(rng.randint(0, 8), 4) if not cfg.cold else F(0)  # the queue the run starts with
            if cfg.buffer is not None:
                queued = min(queued, cfg.buffer)
            sent = (run.A[t - 1] + step) if t else queued
            run.state.append({})
        else:
            if sender is None:
                sender = start(SenderStart(R, D, C, cfg.alpha, params, dict(values or {})))
            low, high = delay_range(run.S, admitted, t - R)
            top = F(high) if high is not None else F(low + 2)
            rtt = R + low + F(rng.randint(0, 4), 4) * (top - low)
            acks: tuple[AckedPacket, ...] = ()
            if inside is not None:
                acks = tuple(AckedPacket(x.sent_at, x.served_at + R, x.size) for x in inside.acks_between(F(t - 1), F(t)))
            fb = Feedback(t, R, run.S[t - R], run.Ld[t], run.timeout[t], run.A[t - 1], rtt, (low, high), record,
                          acks, detected(loss_log, run.Ld[t - 1], run.Ld[t]),
                          fate_known_through(run.S[t - R], run.Ld[t], admitted, run.L, t - 1))
            decision = sender.decide(fb)
            cwnd, rate, bursts = decision.cwnd, decision.rate, decision.bursts
            window = max(run.S[t - R] + run.Ld[t] + cwnd, run.A[t - 1])
            sent = window if rate is None else min(window, run.A[t - 1] + rate)
            run.state.append(sender.state())
            if rate is None:
                rate = F(1)
        run.cwnd.append(cwnd)
        run.rate.append(rate)
        run.A.append(sent)
        if t == 0:
            run.L.append(F(0))
            run.Lnc.append(F(0))
            tokens.append(F(0))
            run.S.append(F(0))
        else:
            arrived = sent - run.A[t - 1]
            nc = arrived * cfg.eta * F(rng.randint(0, 8), 4)
            nc = max(F(0), min(nc, cfg.eta * (run.A[t] - run.A[0]) - run.Lnc[t - 1]))
            pending = run.A[t] - run.L[t - 1] - nc
            if inside is not None:  # inside the step: bursts may fill the buffer before the end
                admitted_now, line = inside.admit(t, run.A[t - 1] - run.L[t - 1], tokens[t - 1], arrived, nc,
                                                  bursts, cfg.alpha)
                congestive = pending - admitted_now
            else:
                line = tokens[t - 1] + C if pending > tokens[t - 1] + C else pending
                congestive = F(0)
                if cfg.buffer is not None and pending - line > cfg.buffer:
                    congestive = pending - line - cfg.buffer
            run.Lnc.append(run.Lnc[t - 1] + nc)
            run.L.append(run.L[t - 1] + nc + congestive)
            tokens.append(line)
            low_s = max(run.S[t - 1], tokens[t - D] if t >= D else tokens[0] - C * (D - t))
            high_s = min(line, run.A[t] - run.L[t])
            run.S.append(low_s + (high_s - low_s) * F(rng.randint(0, 4), 4))
        run.W.append(C * t - tokens[t])
        if t and run.L[t] > run.L[t - 1]:
            loss_log.append((run.L[t - 1], run.L[t], F(t)))
        if inside is not None and t:
            inside.serve(t, (run.S[t - 1], run.S[t]), tokens[0])
        record.sent.append(run.A[t])
        record.lost.append(run.L[t])
        record.rtt.append(None)
        learn_rtts(run.A, run.L, run.S, record, t, R)
    return run


def admits(cca: dict[str, Any], run: Run, fix_state: tuple[str, ...] = (), mode: str | None = None) -> None:
    """Fail unless the encoding of ``cca`` on ``run.cfg`` admits ``run`` with every model
    variable pinned (the named state variables too, from the sender's reports at steps >= R,
    where it reports a value: None, a filter before its first sample, stays free; the rest of its
    state is the solver's); ``mode``: what non-linear uses' values may be
    (:func:`ccac.problems.problem.build`)."""
    cfg = run.cfg
    problem = build(make_query(cfg.network(), cca), mode=mode)
    v, states = problem.vars, problem.states[0]
    fixed: list[Any] = []

    def pin(term: Any, value: Any) -> None:
        if not isinstance(term, z3.ExprRef):
            return
        if z3.is_bool(term):
            fixed.append(term == bool(value))
        elif z3.is_int(term):
            fixed.append(term == int(value))
        else:
            fixed.append(term == Fraction(value))

    for t in range(cfg.T):
        pin(v.A_f[0][t], run.A[t])
        pin(v.S_f[0][t], run.S[t])
        pin(v.L_f[0][t], run.L[t])
        pin(v.Ld_f[0][t], run.Ld[t])
        pin(v.W[t], run.W[t])
        if v.Lnc_f is not None:
            pin(v.Lnc_f[0][t], run.Lnc[t])
        if t >= cfg.R:
            pin(v.cwnd[0][t], run.cwnd[t])
            pin(v.timeout[0][t], run.timeout[t])
            if v.rate[0] is not None:
                pin(v.rate[0][t], run.rate[t])
            for name in fix_state:
                if run.state[t][name] is not None:
                    pin(states[name][t], run.state[t][name])
    assert_admits(problem.enc.formulas(), fixed, run.describe())
