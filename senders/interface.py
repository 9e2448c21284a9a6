"""Concrete senders: each CCA's algorithm itself, run step by step on concrete feedback.

An encoding in ``ccas/`` describes a CCA by constraints that over-approximate it; the concrete
sender in ``senders/`` *is* the algorithm, written again in plain Python over exact fractions
(the few non-linear functions to 50 digits), sharing no code with the encoding. Two things
use it:

* the conformance tests run it on paths the model allows and require the encoding to admit
  every run (the superset property, tested for every CCA);
* ``ccac replay`` runs it on the packet-level path a counterexample describes
  (:mod:`ccac.testbed.replay`), to see whether the algorithm itself, not only its over-approximation,
  falls into the hole the trace found.

The contract is the model's (thesis 4.2.2): at each step t from the flow's first decision on,
the sender is told what it has observed (:class:`Feedback`) and answers with its congestion
window and, if it paces, its pacing rate (:class:`Decision`). The transport below it (the
model, or the packet path) turns the decision into bytes sent, detects losses and times out;
the sender only decides. Where a CCA's paper leaves a choice open, its sender takes the most
literal reading and its docstring says so.

A CCA offers its sender through :meth:`ccac.ccas.interface.CCA.concrete`, started from a
:class:`SenderStart` (the path, and the values the run had when the sender took over), so that
nothing outside ``ccas/`` and ``senders/`` names a CCA.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable


@dataclass(frozen=True)
class AckedPacket:
    """The ACK of one packet reached its sender. Times are in steps on the model's clock, where
    step t is the time interval (t-1, t]: ``sent_at`` is when the packet left the sender,
    ``acked_at`` when its ACK arrived, so ``acked_at - sent_at`` is its RTT sample (at least the
    flow's R). On the packet path (:mod:`ccac.testbed.packet_path`) both are whole steps (a packet sent
    in step t has ``sent_at`` t); on the conformance harness (``tests/fluid_path.py``) they are
    exact real times, the sample of a byte sent at ``sent_at``."""

    sent_at: Fraction
    acked_at: Fraction
    size: Fraction


@dataclass(frozen=True)
class DetectedLoss:
    """Bytes the sender has just learned were lost (by duplicate ACKs or a timeout), and when
    they were sent (a time in their send step, as in :class:`AckedPacket`)."""

    sent_at: Fraction
    size: Fraction


@dataclass(frozen=True)
class Feedback:
    """What flow n's sender knows at the start of step t (thesis 4.2.2), in bytes and steps.

    ``acked`` is what its ACKs report: every byte served by t - R (through its own jitter box,
    if it has one); ``lost`` the bytes it has detected lost; ``timeout`` whether its
    retransmission timer fired at t; ``sent`` the bytes it had sent by t - 1. ``rtt`` is its
    newest RTT sample in steps (R plus the queueing and box delay of the newest ACKed byte;
    None before the first ACK); ``delay`` is the model's integer reading of that queueing delay
    (:func:`ccac.encode.trace.delay_range`: at least ``delay[0]`` steps, at most ``delay[1]``, None =
    unbounded). ``outcome`` is the flow's per-step record so far (:class:`FlowRecord`), for
    senders whose decisions aggregate what happened to the bytes of earlier steps (PCC's
    monitor intervals).

    Per packet: ``acks`` are the ACKs that arrived since the previous step (arrival times in
    (t-1, t], in arrival order), each with its send time and RTT sample (:class:`AckedPacket`);
    ``losses`` the bytes newly detected lost at t (:class:`DetectedLoss`); ``known_through`` the
    last step s such that every byte the sender sent by s has been ACKed or detected lost (-1:
    none; a packet-level sender knows each packet's fate, which byte counts alone do not tell:
    later ACKs can make up for undetected losses). A sender written from a paper that measures
    per packet (PCC's monitor intervals and RTT regressions) reads these; the paths that cannot
    give them leave them empty.

    ``loss_point``: where the bytes the sender sends at t stand in its loss order, when the path
    says (the model knows it between the bytes lost by t - 1 and by t; a path that replays a
    trace's reading gives it); None: the bytes lost by t - 1."""

    t: int
    R: int
    acked: Fraction
    lost: Fraction
    timeout: bool
    sent: Fraction
    rtt: Fraction | None
    delay: tuple[int, int | None]
    outcome: FlowRecord
    acks: tuple[AckedPacket, ...] = ()
    losses: tuple[DetectedLoss, ...] = ()
    known_through: int = -1
    loss_point: Fraction | None = None

    @property
    def inflight(self) -> Fraction:
        """Bytes sent and neither ACKed nor detected lost."""
        return self.sent - self.acked - self.lost


def fate_known_through(acked: Fraction, detected: Fraction, admitted: list[Fraction], lost: list[Fraction],
                       last: int) -> int:
    """The last step s <= ``last`` by which every byte sent has been ACKed (``acked`` reaches its
    admitted bytes, served in order) or detected lost (``detected`` reaches its losses, detected
    in the order they happened); -1 if none."""
    s = last
    while s >= 0 and not (acked >= admitted[s] and detected >= lost[s]):
        s -= 1
    return s


@dataclass
class FlowRecord:
    """One flow's run so far, by step: ``sent[s]`` (cumulative bytes sent by s), ``lost[s]``
    (cumulative bytes of it lost by s) and ``rtt[s]`` (the RTT, in steps, the bytes sent at s
    met, once they were ACKed; None until then). A sender at step t may read ``sent`` and
    ``lost`` up to t - 1 and the RTT of bytes whose ACKs it has (``rtt[s]`` is not None)."""

    sent: list[Fraction] = field(default_factory=list)
    lost: list[Fraction] = field(default_factory=list)
    rtt: list[Fraction | None] = field(default_factory=list)


@dataclass(frozen=True)
class Decision:
    """A sender's answer at one step: its congestion window in bytes (> 0) and, if it paces,
    its pacing rate in bytes per step (> 0); None = not paced. ``bursts``: bytes of the step's
    rate the sender sends back to back at the step's start, burst by burst (ETC's micro-bursts);
    the rest is paced evenly. Only a path that times packets within a step reads it (the
    conformance harness); the model and the packet path see the step's bytes."""

    cwnd: Fraction
    rate: Fraction | None = None
    bursts: tuple[Fraction, ...] = ()


@dataclass(frozen=True)
class SenderStart:
    """Where a concrete sender starts: its flow's path (R, the jitter D its feedback may carry,
    C, the MSS ``alpha``), its CCA's resolved parameters, and ``values``: what the run it takes
    over had at the last step before its first decision (step R - 1), by the names a query
    uses: the flow's curves ``A_f``, ``S_f``, ``L_f``, ``Ld_f``, its ``cwnd`` and ``rate``, and
    each of its CCA's declared state variables. A missing name means unknown: the sender starts
    that part of its state at its algorithm's own initial value. ``acked`` holds the
    ACK readings its sender had before the first decision, oldest first, where they are known
    (for senders that read their ACK history, like BBR's filter); a model trace begins with
    them unknown (they are service before step 0), so it is usually empty."""

    R: int
    D: int
    C: Fraction
    alpha: Fraction
    params: dict[str, Any]
    values: dict[str, Any] = field(default_factory=dict)
    acked: list[Fraction] = field(default_factory=list)

    def value(self, name: str, default: Any) -> Any:
        """``values[name]`` if the run had it, else ``default``."""
        found = self.values.get(name)
        return default if found is None else found


Choose = Callable[[str, int], int]
"""``choose(what, n)``: the index (0 .. n - 1) a sender takes at an open choice named ``what``
(one its algorithm leaves to chance, to the path or to a reading of its paper); the tests draw it
at random, a replay takes alternative 0."""


def exact(value: Any) -> Fraction:
    """A parameter as an exact number for a concrete sender: floats by their decimal text (0.1 is
    1/10, not the binary float's value), everything else as Fraction reads it."""
    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


def to_decimal(x: Fraction) -> Decimal:
    """``x`` as a Decimal in the current context's precision (for powers and logarithms)."""
    return Decimal(x.numerator) / Decimal(x.denominator)


class ConcreteSender(ABC):
    """A CCA's algorithm over exact numbers. One object runs one flow, step by step."""

    @abstractmethod
    def decide(self, fb: Feedback) -> Decision:
        """The window (and pacing rate) for step ``fb.t``, updating the sender's state."""

    def adopt(self, decision: Decision) -> None:
        """The transport applied ``decision`` instead of this sender's own (a replay's warm-up
        follows the trace's decisions while the sender learns): make it the sender's own, so
        that its next decision starts from it. Senders whose decisions follow from their
        measurements alone (no window or rate carried from step to step) need nothing."""

    def state(self) -> dict[str, Any]:
        """The sender's state after its last decision, named as its CCA's declared state
        variables where it has them (for tables and plots; empty if it reports none)."""
        return {}


class Scripted(ConcreteSender):
    """Replays given windows and rates step by step: the decisions of a trace's own sender.

    For a flow whose CCA has no concrete algorithm (``any``: the solver chose every window),
    replaying the trace's decisions on the packet path shows what packetization alone changes.
    Step t of the script is ``cwnd[t]``, ``rate[t]``; past its end the last values hold."""

    def __init__(self, cwnd: list[Fraction], rate: list[Fraction] | None) -> None:
        if not cwnd:
            raise ValueError("a script needs at least one step")
        self.cwnd, self.rate = cwnd, rate

    def decide(self, fb: Feedback) -> Decision:
        t = min(fb.t, len(self.cwnd) - 1)
        return Decision(self.cwnd[t], self.rate[t] if self.rate is not None else None)
