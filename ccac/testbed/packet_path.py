"""The packet-level path a counterexample describes, and concrete senders run over it.

A sat trace fixes one path of the model: when the bottleneck served (the service curve S), how
far its tokens had come (the token line C*t - W), which bytes the buffer or the link dropped,
how long each flow's own jitter box held its ACKs. :meth:`PacketPath.from_trace` turns that
into a path for packets of ``packet`` bytes (the trace's MSS alpha by default):

* **The server.** The trace's token bucket, replayed for whatever the senders send: tokens
  arrive at C per step, the server serves at step t up to where its token line stood
  ``lag[t]`` steps earlier, as far behind as the trace's server was (the jitter, ACK holding
  and bursts the trace used, kept in time: a byte waits as long for its token), and tokens
  are wasted only beyond the queue and the margin the trace kept above its own. For the
  trace's own arrivals this is the trace's service curve exactly; a sender that sends more is
  served more, up to the link's capacity, as on the model's path. (A fixed delivery schedule
  like mm-link's would cap every sender at what the trace's sender got; that is what
  ``ccac export`` writes, :mod:`ccac.testbed.export`, and what ``fixed=True`` replays.)
* **Buffer.** A packet arriving at step t is dropped if the bytes admitted to the queue would
  pass the token line plus the buffer (the model's loss-forced threshold, thesis 4.2); at a
  step where the trace lost bytes, if they would pass what the trace admitted then (the trace
  chose how that step's arrivals and tokens interleaved).
* **Non-congestive loss.** Flow n's packets are dropped on arrival while its non-congestive
  drops are behind the trace's ``Lnc_f[n]`` (in whole packets).
* **Feedback.** The ACK of a packet served at step s reaches its sender R_n steps later, plus
  the time the trace's box held what was served at s (the first d with So_f[n][s+d] >=
  S_f[n][s]); ACKs stay in order.

:func:`run_packets` plays it step by step (the model's clock): at step t each sender learns
its ACKs, losses are detected as the model detects them (once ``dupacks`` bytes admitted after
them are ACKed; a timeout once everything in flight is known lost for ``rto`` steps, the
latest the model allows), the sender decides (:mod:`ccac.senders.interface`), its transport sends whole
packets (never more than the window allows, except one packet when nothing is in flight, and
within a pacing credit of at most one packet beyond the rate), the queue drops what the buffer
cannot hold, and the bottleneck serves in FIFO order. Queueing delays are
in whole steps, as the model samples them: at step t the senders send, then the bottleneck
serves, so a packet sent and served at step t waited 0 steps (the model's
S[t] may include the bytes that arrived at t). An RTT sample is the steps from a packet's
sending to its ACK; the queue a trace starts with is dated as if it had built up at the link
rate before step 0 (:func:`_date_first_queue`), so its samples can be fractions of a step.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction
from math import floor
from typing import NamedTuple

from ccac.core.errors import CcacError
from ccac.senders.interface import (AckedPacket, ConcreteSender, Decision, DetectedLoss, Feedback, FlowRecord,
                         fate_known_through)
from ccac.encode.trace import Trace, delay_range
from ccac.solving.validate import observed_service

MAX_PACKETS = 200_000  # packets a replay may send in all (bounded work for any input)


@dataclass
class Packet:
    flow: int
    seq: int                 # the flow's packet number, from 0
    sent: int                # step it reached the bottleneck (0 for the queue the trace starts with)
    born: Fraction = Fraction(0)  # when it was sent: ``sent``, or earlier for that first queue
    served: int | None = None     # the step it was served
    ack: int | None = None        # the step its ACK reached the sender
    dropped: str | None = None  # "buffer" or "link" (non-congestive)

    @property
    def acked_at(self) -> int:
        """``ack`` of a served packet (every packet in a flow's ``delivered`` list has one)."""
        assert self.ack is not None, "the packet has not been served"
        return self.ack


@dataclass
class FlowPathInfo:
    R: int
    box: bool                # whether the flow has a jitter box of its own
    box_lag: list[int]       # by service step: how long the flow's box holds its ACKs
    noncongestive: list[int]  # by step: packets of the flow the link drops by then (cumulative)


@dataclass
class PacketPath:
    """The path of one trace for packets of ``packet`` bytes (see the module doc)."""

    T: int
    C: Fraction
    packet: Fraction
    tokens0: Fraction                 # the token line at step 0 (-W[0])
    lag: list[Fraction]               # by step: how many steps the server's service trails its token line
    margin: list[Fraction]            # by step: tokens the trace kept above its queue when short of bytes
    buffer: Fraction | None           # bytes; None = infinite
    loss_cap: list[Fraction | None]   # by step: what the trace admitted, at steps it lost bytes
    dupacks: Fraction                 # bytes
    rto: int
    flows: list[FlowPathInfo]
    schedule: list[int] | None = None  # a fixed delivery schedule (packets per step) instead

    @classmethod
    def from_trace(cls, trace: Trace, packet: Fraction | None = None, fixed: bool = False) -> PacketPath:
        """The path of ``trace``; with ``fixed``, its server is the trace's delivery schedule
        (:func:`delivery_schedule`, mm-link's semantics) instead of its token bucket."""
        p = check_packet(trace, packet)
        net, T = trace.network, trace.T
        flows = []
        for n in range(net.flows):
            Lnc = trace.flow("Lnc_f", n)
            nc = [floor(x / p) for x in Lnc] if Lnc is not None else [0] * T
            flows.append(FlowPathInfo(net.path(n).R, net.path(n).D > 0, box_lags(trace, n), nc))
        bucket = token_bucket(trace)
        return cls(T, net.C, p, bucket.line[0], bucket.lag, bucket.margin, trace.constant("buffer"), loss_cap(trace),
                   Fraction(trace.constant("dupacks")), net.rto, flows,
                   delivery_schedule(trace, p) if fixed else None)


class TokenBucket(NamedTuple):
    """The trace's server as a token bucket, by step (trace bytes, steps)."""

    line: list[Fraction]    # its token line, C*t - W
    lag: list[Fraction]     # how many steps its service trails that line (:func:`_lag`)
    margin: list[Fraction]  # tokens it kept above the bytes admitted: a replay wastes tokens only beyond


def token_bucket(trace: Trace) -> TokenBucket:
    """The token bucket of ``trace``'s server (the default server of a replay, module doc)."""
    S, A, L = (trace.total(x) for x in "SAL")
    C = trace.network.C
    line = trace.service_bounds()[0]
    return TokenBucket(line, [_lag(line, C, S[t], t) for t in range(trace.T)],
                       [max(line[t] - (A[t] - L[t]), Fraction(0)) for t in range(trace.T)])


def delivery_schedule(trace: Trace, packet: Fraction) -> list[int]:
    """Packets the trace's service curve completes at each step: floor(S[t]/packet) in all by
    step t. As a server (mm-link's delivery opportunities) it gives every sender exactly the
    service the trace's own sender got, an opportunity no packet waits for being lost."""
    whole = [floor(s / packet) for s in trace.total("S")]
    return [whole[0]] + [whole[t] - whole[t - 1] for t in range(1, trace.T)]


def token_line_at(tokens: list[Fraction], C: Fraction, x: Fraction) -> Fraction:
    """The token line at time x, between the steps: linear between samples, and before step
    0 tokens arriving at C (the model's service bound reads C*(t-D) - W[0] there)."""
    if x <= 0:
        return tokens[0] + C * x
    j = floor(x)
    return tokens[j] if j == x else tokens[j] + (x - j) * (tokens[j + 1] - tokens[j])


def _lag(tokens: list[Fraction], C: Fraction, served: Fraction, t: int) -> Fraction:
    """How far behind its token line the trace's server was at step t, in steps: the least d
    with the token line at t - d no higher than the service S[t] (at most D: the model's
    S[t] >= C*(t-D) - W[t-D]). Replaying this lag in time, not in bytes, keeps the jitter the
    trace used (a byte waits d steps for its token) whatever the senders send."""
    if served >= tokens[t]:
        return Fraction(0)
    k = 1
    while token_line_at(tokens, C, Fraction(t - k)) > served:
        k += 1
    low, high = token_line_at(tokens, C, Fraction(t - k)), token_line_at(tokens, C, Fraction(t - k + 1))
    return k - (served - low) / (high - low)


def box_lags(trace: Trace, n: int) -> list[int]:
    """By service step s: how many steps flow n's own jitter box held the ACKs of what the
    bottleneck served by s (the first d with So_f[n][s+d] >= S_f[n][s]; its bound D_n when the
    trace ends first). The box may let part of a step's bytes through earlier: this is when the
    last of them passed, so every byte served at s is held as long as the trace's latest one."""
    S_f, So_f, D_n = trace.flow("S_f", n), observed_service(trace, n), trace.network.path(n).D
    return [next((d for d in range(D_n + 1) if s + d < trace.T and So_f[s + d] >= S_f[s]), D_n)
            for s in range(trace.T)]


def check_packet(trace: Trace, packet: Fraction | None) -> Fraction:
    """The packet size (the trace's MSS by default): positive, and small enough that the most
    the path can serve is at most :data:`MAX_PACKETS` packets."""
    p = Fraction(packet) if packet is not None else Fraction(trace.constant("alpha"))
    if p <= 0:
        raise CcacError(f"the packet size must be positive, got {p}", "--packet")
    most = trace.network.C * trace.T + max(trace.total("A")[0], Fraction(0))
    if most / p > MAX_PACKETS:
        raise CcacError(f"the path serves up to {floor(most / p)} packets of {p} bytes, more than the "
                        f"{MAX_PACKETS} a replay may simulate; choose a larger --packet", "--packet")
    return p


def loss_cap(trace: Trace) -> list[Fraction | None]:
    """At each step where the trace lost bytes congestively, what it admitted (None elsewhere).
    The model drops bytes only once the bottleneck queue passed the loss-allowed threshold at
    some instant of the step, and never lets it pass the loss-forced one (thesis 4.2): how much
    a step loses depends on how its arrivals and tokens interleave, which the trace chose. So
    at such a step the queue takes no more than the trace admitted (its own arrivals lose what
    it lost)."""
    net = trace.network
    noncongestive = [trace.recorded("Lnc_f", n) for n in range(net.flows)] if net.lossy else None
    A, L = trace.total("A"), trace.total("L")
    congestive = [L[t] - (sum(row[t] for row in noncongestive) if noncongestive else 0) for t in range(trace.T)]
    return [A[t] - L[t] if t and congestive[t] > congestive[t - 1] else None for t in range(trace.T)]


@dataclass
class FlowRun:
    """One flow of a packet run, by step (cumulative bytes, like the model's curves)."""

    A: list[Fraction] = field(default_factory=list)
    S: list[Fraction] = field(default_factory=list)
    So: list[Fraction] = field(default_factory=list)
    L: list[Fraction] = field(default_factory=list)
    Lnc: list[Fraction] = field(default_factory=list)
    Ld: list[Fraction] = field(default_factory=list)
    cwnd: list[Fraction] = field(default_factory=list)
    rate: list[Fraction | None] = field(default_factory=list)
    timeout: list[bool] = field(default_factory=list)
    state: list[dict[str, object]] = field(default_factory=list)


@dataclass
class PacketRun:
    path: PacketPath
    flows: list[FlowRun]
    packets: list[Packet]
    tokens: list[Fraction]  # by step: the server's token line, C*t - W (the schedule's offer with one)


@dataclass
class TraceFlow:
    """Flow n of the trace being replayed: its arrivals, detected losses, windows and rates.

    Before its first decision (step R, or a cold flow's opening ``opens`` if later) the flow sends
    what the trace sent: its unknown past, or nothing before its connection opens. From there to
    ``takeover`` (a warm-up) its concrete sender sees its feedback and decides, but the trace's
    window and rate are applied, and the sender adopts them (:meth:`ConcreteSender.adopt`);
    from ``takeover`` on the sender's own decisions apply. ``Ld`` is below 0 while bytes lost
    before step 0 are undetected: those losses (the trace's unknown past) are detected when the
    trace detected them."""

    A: list[Fraction]
    Ld: list[Fraction]
    cwnd: list[Fraction]
    rate: list[Fraction] | None
    takeover: int
    first: int   # the sender's first decision

    @classmethod
    def of(cls, trace: Trace, n: int, takeover: int = 0) -> TraceFlow:
        first = first_decision(trace, n)
        return cls(trace.flow("A_f", n), trace.flow("Ld_f", n), trace.flow("cwnd", n), trace.flow("rate", n),
                   max(takeover, first), first)


def first_decision(trace: Trace, n: int) -> int:
    """The step flow n's sender first decides at: R, or a cold flow's opening if later (the
    model's sender rule applies from there, :meth:`models.path_server.PathServer.sender`)."""
    path = trace.network.path(n)
    return max(path.R, path.opens or 0)


def all_in_flight_lost(A: list[Fraction], admitted: list[Fraction], L: list[Fraction], Ld: list[Fraction],
                       acked: Fraction, t: int, R: int) -> bool:
    """The model's timeout condition at step t (thesis 4.2.2): nothing sent in the last R - 1
    steps, everything admitted by t - R ACKed, and losses still undetected."""
    return A[t - 1] == A[t - R] and acked >= admitted[t - R] and L[t - R] > Ld[t - 1]


def detectable_losses(admitted: list[Fraction], L: list[Fraction], acked: Fraction, dupacks: Fraction,
                      last: int) -> list[Fraction]:
    """The cumulative losses of the steps up to ``last`` that ``acked`` reveals (appendix A.3):
    a loss at step s is detectable once ``dupacks`` bytes admitted after it are ACKed."""
    return [L[s] for s in range(last + 1) if admitted[s] + dupacks <= acked]


class _Transport:
    """One flow's sending side: its packets, pacing credit, ACK and loss bookkeeping."""

    def __init__(self, n: int, path: PacketPath, sender: ConcreteSender, history: TraceFlow) -> None:
        self.n, self.path, self.sender, self.history = n, path, sender, history
        self.info = path.flows[n]
        self.packets: list[Packet] = []
        self.delivered: list[Packet] = []   # served packets, in service order (ACKs in order)
        self.seen = 0                       # how many of them the sender has ACKs for
        self.out_of_box = 0                 # how many of them have left the flow's box
        self.run = FlowRun()
        self.record = FlowRecord()
        self.credit = Fraction(0)
        self.stalled = 0
        self.link_drops = 0
        self.sent_before = 0                # packets sent before the current step
        self.unacked_by_step: dict[int, int] = {}  # send step -> its packets not yet ACKed
        self.loss_log: list[tuple[Fraction, Fraction, Fraction]] = []  # dropped: (L from, L to, sent at)

    def admitted(self, s: int) -> Fraction:
        return self.run.A[s] - self.run.L[s]

    def learn(self, t: int, shared: tuple[list[Fraction], list[Fraction]]) -> Feedback | None:
        """Take in the ACKs of step t, detect losses, time out, and tell the sender what it
        knows (None before its first decision). ``shared`` is the bottleneck's (service, admitted)
        curves, the delay reading of a flow without a box of its own."""
        run, R, p = self.run, self.info.R, self.path.packet
        acks: list[AckedPacket] = []
        while self.seen < len(self.delivered) and self.delivered[self.seen].acked_at <= t:
            pkt = self.delivered[self.seen]
            self.seen += 1
            acks.append(AckedPacket(pkt.born, Fraction(pkt.acked_at), p))
            self.unacked_by_step[pkt.sent] -= 1
            if self.unacked_by_step[pkt.sent] == 0:
                self.record.rtt[pkt.sent] = pkt.acked_at - pkt.born
        if t < self.history.first:
            run.Ld.append(self.history.Ld[t])
            run.timeout.append(False)
            return None
        acked = p * self.seen
        admitted = [self.admitted(s) for s in range(t)]
        self.stalled = self.stalled + 1 if all_in_flight_lost(run.A, admitted, run.L, run.Ld, acked, t, R) else 0
        fire = self.stalled >= self.path.rto
        if fire:
            run.Ld.append(run.L[t - R])
            self.stalled = 0
        else:
            found = detectable_losses(admitted, run.L, acked, self.path.dupacks, t - R)
            run.Ld.append(max([run.Ld[t - 1], min(self.history.Ld[t], Fraction(0))] + found))
        run.timeout.append(fire)
        newest = self.delivered[self.seen - 1] if self.seen else None
        rtt = None if newest is None else Fraction(newest.acked_at - newest.born)
        u = t - R
        if self.info.box:
            delay = delay_range(run.So[:u + 1], [self.admitted(s) for s in range(u + 1)], u)
        else:
            delay = delay_range(shared[0][:u + 1], shared[1][:u + 1], u)
        return Feedback(t, R, acked, run.Ld[t], fire, run.A[t - 1], rtt, delay, self.record,
                        tuple(acks), detected(self.loss_log, run.Ld[t - 1], run.Ld[t]),
                        fate_known_through(acked, run.Ld[t], admitted, run.L, t - 1))

    def send(self, t: int, fb: Feedback | None) -> int:
        """How many packets the flow sends at step t (its decision recorded)."""
        run, p = self.run, self.path.packet
        traced = Decision(self.history.cwnd[t], self.history.rate[t] if self.history.rate else None)
        if fb is None:  # history: the trace's own arrivals, in whole packets
            run.cwnd.append(traced.cwnd)
            run.rate.append(traced.rate)
            run.state.append({})
            return max(floor(self.history.A[t] / p) - len(self.packets), 0)
        decision = self.sender.decide(fb)
        if t < self.history.takeover:
            self.sender.adopt(traced)
            decision = traced
        run.cwnd.append(decision.cwnd)
        run.rate.append(decision.rate)
        run.state.append(dict(self.sender.state()))
        allowed = fb.acked + fb.lost + decision.cwnd - len(self.packets) * p
        count = floor(allowed / p) if allowed > 0 else 0
        if count == 0 and allowed > 0 and fb.inflight <= 0:
            count = 1  # an open window with nothing in flight sends one packet
        if decision.rate is not None:
            self.credit = min(self.credit + decision.rate, decision.rate + p)
            count = min(count, floor(self.credit / p))
            self.credit -= count * p
        return count

    def close_step(self, t: int) -> None:
        """The flow's curves at the end of step t, and its per-step record for the sender."""
        p, run = self.path.packet, self.run
        sent_now = [q for q in self.packets[self.sent_before:] if q.sent == t]
        self.sent_before = len(self.packets)
        dropped = [q for q in sent_now if q.dropped]
        before = run.L[-1] if run.L else Fraction(0)
        self.loss_log += [(before + k * p, before + (k + 1) * p, q.born) for k, q in enumerate(dropped)]
        run.A.append(p * len(self.packets))
        run.L.append((run.L[-1] if run.L else 0) + p * len(dropped))
        run.Lnc.append((run.Lnc[-1] if run.Lnc else 0) + p * sum(1 for q in dropped if q.dropped == "link"))
        run.S.append(p * len(self.delivered))
        while self.out_of_box < len(self.delivered) and self.delivered[self.out_of_box].acked_at - self.info.R <= t:
            self.out_of_box += 1
        run.So.append(p * self.out_of_box)
        self.record.sent.append(run.A[t])
        self.record.lost.append(run.L[t])
        self.record.rtt.append(None)
        self.unacked_by_step[t] = len(sent_now) - len(dropped)


def detected(log: list[tuple[Fraction, Fraction, Fraction]], before: Fraction,
             now: Fraction) -> tuple[DetectedLoss, ...]:
    """The lost bytes a sender learns of when its detected losses grow from ``before`` to ``now``
    (positions on its loss curve): the part of each logged loss ``(from, to, sent_at)`` in
    (before, now]. Losses are detected in the order they happened, so this is what the
    sender's duplicate ACKs or timeout revealed."""
    out = []
    for start, end, sent_at in log:
        size = min(end, now) - max(start, before)
        if size > 0:
            out.append(DetectedLoss(sent_at, size))
    return tuple(out)


def _date_first_queue(queue: list[Packet], path: PacketPath) -> None:
    """The queue a trace starts with was sent before step 0, at times the trace leaves open
    (its delay readings there are unbounded above). Read it as a standing queue that built up
    at the link rate: the packet k places from the tail was sent k*packet/C steps before step 0,
    so the first RTT samples see the delay that queue implies."""
    for k, pkt in enumerate(reversed(queue)):
        pkt.born = -k * path.packet / path.C


def _serve(queue: deque[Packet], flows: list[_Transport], t: int, count: int) -> None:
    """Serve ``count`` queued packets at step t, in FIFO order. A packet's ACK reaches its
    sender R steps after it was served, plus what its flow's box held at step t, never before
    an earlier packet's."""
    for _ in range(count):
        pkt = queue.popleft()
        f = flows[pkt.flow]
        pkt.served = t
        last = f.delivered[-1].acked_at if f.delivered else 0
        pkt.ack = max(t + f.info.box_lag[t] + f.info.R, last)
        f.delivered.append(pkt)


def run_packets(path: PacketPath, senders: list[ConcreteSender], histories: list[TraceFlow]) -> PacketRun:
    """Play ``senders`` (one per flow) over ``path`` for its T steps (see the module doc)."""
    flows = [_Transport(n, path, s, h) for n, (s, h) in enumerate(zip(senders, histories))]
    queue: deque[Packet] = deque()
    packets: list[Packet] = []
    admitted, served = Fraction(0), Fraction(0)
    tokens = path.tokens0  # this run's token line
    history: list[Fraction] = []  # ... at every step so far
    shared: tuple[list[Fraction], list[Fraction]] = ([], [])
    for t in range(path.T):
        line = tokens + path.C if t else tokens  # the token line at t if no token is wasted
        counts = [f.send(t, f.learn(t, shared)) for f in flows]
        if sum(counts) + len(packets) > MAX_PACKETS:
            raise CcacError(f"the replay would send more than {MAX_PACKETS} packets of {path.packet} "
                            f"bytes; choose a larger --packet", "--packet")
        for k in range(max(counts, default=0)):  # arrivals, interleaved across flows
            for f, count in zip(flows, counts):
                if k >= count:
                    continue
                pkt = Packet(f.n, len(f.packets), t, Fraction(t))
                f.packets.append(pkt)
                packets.append(pkt)
                if f.link_drops < f.info.noncongestive[t]:
                    pkt.dropped = "link"
                    f.link_drops += 1
                elif path.buffer is not None and admitted + path.packet > min(
                        line + path.buffer, cap if (cap := path.loss_cap[t]) is not None else line + path.buffer):
                    pkt.dropped = "buffer"
                else:
                    admitted += path.packet
                    queue.append(pkt)
        if t == 0:
            _date_first_queue(list(queue), path)
        if t:  # tokens beyond the queue and the trace's margin above it are wasted
            tokens = min(line, max(tokens, admitted + path.margin[t]))
        if path.schedule is not None:
            tokens = path.packet * sum(path.schedule[:t + 1])
        history.append(tokens)
        if path.schedule is not None:
            count = min(path.schedule[t], len(queue))
        else:
            can = min(admitted, token_line_at(history, path.C, t - path.lag[t])) - served
            count = min(max(floor(can / path.packet), 0), len(queue))
        _serve(queue, flows, t, count)
        served += count * path.packet
        for f in flows:
            f.close_step(t)
        shared[0].append(served)
        shared[1].append(admitted)
    return PacketRun(path, [f.run for f in flows], packets, history)
