"""Play another sender on a counterexample's path, in the model's own fluid terms.

A sat trace is one path of the model and one run of a CCA on it. :func:`play` keeps the path
and changes the CCA: up to the ``takeover`` step the trace is copied (the history, which no CCA
rule constrains; only tokens the played run cannot use are wasted there), and from there a
concrete sender decides on what it observes while the path makes every choice the model leaves
it as the trace's path made it (:class:`PathChoices`), clamped into what the model allows the
played run:

* **Tokens.** A step brings the tokens the trace's brought (C less what it wasted), but tokens
  the played queue could use are never wasted, and tokens the played run cannot use within D
  steps (nothing admitted to serve by then) are wasted when they came (:func:`waste_unusable`).
* **Losses.** A step drops the non-congestive bytes the trace's dropped, within eta of what the
  played sender has sent (eta > 0), and the congestive bytes it dropped, at least what the
  buffer cannot hold and none unless the queue reached the loss threshold.
* **Service.** The server lags its token line by what the trace's server lagged at that step,
  within the model's bounds: never below the tokens of D steps ago, never beyond the token line
  or what was admitted.
* **ACKs.** The flow's box holds its ACKs as the trace's box did, within its bound.
* **Loss detection** (:func:`dupack_detection`, the one place the player's detection rule
  lives; :func:`oracle_detection` under the loss oracle, ``loss_detection = "oracle"``): the
  sender has detected as far along the loss steps as the trace's had (all of the
  losses of the steps before the one it was detecting, and the same share of that step's), but
  at least the losses its duplicate ACKs reveal and none they do not; it times out where the
  trace's did if everything in flight is then known lost, and wherever the model forces it.
* **Readings.** Where the model knows a sender's reading only as a range (its delay sample;
  where its bytes stand in the loss order, between the losses before its step and after it),
  the sender reads the trace's reading, within the played run's range (:meth:`Run.take`).

So when the played sender decides at every step as the trace's did, every clamp is the identity
and the played run is the trace: a CCA refuted on a counterexample fails when played on its
path. The result is a trace of the model only if :func:`ccac.solving.validate.validate` says
so: the choices above are built to be one (for one flow on the composing model), and
validation, not this module, is what a caller relies on. So a candidate CCA that violates a
query on a played trace that validates has a genuine counterexample, found without a solver:
this is how ``ccac synthesize`` prunes a template against the counterexamples it has collected.

Played: one flow, the composing model, fluid bytes, traces that are not periodic; :func:`play`
returns None otherwise.
"""

from __future__ import annotations

import copy
from bisect import bisect_left
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Callable

from ccac.encode.expr import Series, Symbols
from ccac.encode.trace import Trace, delay_range
from ccac.problems.query import Query
from ccac.senders.interface import Decision, Feedback, FlowRecord, SenderStart, fate_known_through
from ccac.testbed.packet_path import all_in_flight_lost, detectable_losses, detected

CURVES = ("A_f", "S_f", "L_f", "Ld_f", "cwnd", "rate", "timeout")
Respond = Callable[[Any, Feedback], Decision]   # a run's sender's response to its feedback


def play(query: Query, trace: Trace, takeover: int) -> Trace | None:
    """``query``'s flow-0 CCA run on ``trace``'s path from step ``takeover`` on (see the
    module doc): the played trace, not yet validated, or None where playing is not defined."""
    run = Run.start(query, trace, takeover)
    if run is None:
        return None
    for t in range(run.takeover, trace.T):
        run = run.take(t, run.detect(t), lambda sender, feedback: sender.decide(feedback))
    return run.finish()


@dataclass(frozen=True)
class PathChoices:
    """What the trace's path chose at each step, read as the player keeps it: the curves of
    flow 0 and the token line (C*t - W)."""

    tokens: list[Fraction]
    served: list[Fraction]
    observed: list[Fraction]             # what the sender saw ACKed (S_f without a box)
    lost: list[Fraction]
    noncongestive: list[Fraction] | None  # eta > 0 only
    detected: list[Fraction]
    timeout: list[bool]
    delay: list[Fraction] | None        # the sender's delay reading, where its CCA records one
    loss_point: list[Fraction] | None   # where its bytes stood in the loss order, likewise

    @classmethod
    def of(cls, trace: Trace) -> PathChoices:
        served = trace.flow("S_f", 0)
        return cls([trace.network.C * t - w for t, w in enumerate(trace.total("W"))], served,
                   trace.flow("So_f", 0) or served, trace.flow("L_f", 0), trace.flow("Lnc_f", 0),
                   trace.flow("Ld_f", 0), trace.flow("timeout", 0), trace.flow("delay", 0), trace.flow("loss_point", 0))

    def tokens_arrived(self, t: int) -> Fraction:
        """Tokens that entered the bucket in step t: C less what the path wasted."""
        return self.tokens[t] - self.tokens[t - 1]

    def lag(self, t: int) -> Fraction:
        """How far the service at t trailed the token line: tokens held, waiting."""
        return self.tokens[t] - self.served[t]

    def held(self, t: int) -> Fraction:
        """ACKs the box held at t: served, not yet seen by the sender."""
        return self.served[t] - self.observed[t]

    def dropped(self, t: int) -> tuple[Fraction, Fraction]:
        """Bytes lost in step t: (non-congestive, congestive)."""
        noncongestive = self.noncongestive[t] - self.noncongestive[t - 1] if self.noncongestive else Fraction(0)
        return noncongestive, self.lost[t] - self.lost[t - 1] - noncongestive

    def detected_along(self, lost: list[Fraction], t: int) -> Fraction:
        """The trace's detected losses at t carried over to the loss curve ``lost``: the losses
        of every step before the one whose losses the trace was detecting, and the same share of
        that step's. Losses from before step 0 (history the played run shares) stay as they are."""
        mark = self.detected[t]
        s = bisect_left(self.lost, mark)   # the first step whose losses reach the mark
        if s == 0:
            return mark
        share = (mark - self.lost[s - 1]) / (self.lost[s] - self.lost[s - 1])
        return lost[s - 1] + share * (lost[s] - lost[s - 1])

    def delay_within(self, t: int, low: int, high: int | None) -> Fraction:
        """The sender's delay reading at t: the trace's, within the played run's [low, high]
        (high None: unbounded); the low end where the trace records none."""
        if self.delay is None or self.delay[t] is None:
            return Fraction(low)
        reading = max(self.delay[t], Fraction(low))
        return reading if high is None else min(reading, Fraction(high))

    def loss_point_after(self, lost_before: Fraction, t: int) -> Fraction | None:
        """Where the trace's sender read its step-t bytes in the loss order, as the bytes lost
        by t - 1 (``lost_before`` on the played run) plus the bytes of the step's losses the trace
        placed before them; None where the trace records no reading or read the low end."""
        if self.loss_point is None or self.loss_point[t] is None or self.loss_point[t] == self.lost[t - 1]:
            return None
        return lost_before + self.loss_point[t] - self.lost[t - 1]


def clamp(value: Fraction, low: Fraction, high: Fraction) -> Fraction:
    """``value`` moved into [low, high] (low <= high): the nearest value there."""
    return min(max(value, low), high)


class Run:
    """A played run in progress: the path's curves so far and the sender (see the module doc).
    :meth:`start` copies the trace up to the takeover; then, step by step, :meth:`detect` gives
    the sender its feedback and :meth:`take` carries out its response. :meth:`fork` copies a run,
    sender included, so runs that agreed so far can go on differently."""

    def __init__(self, query: Query, trace: Trace, takeover: int, sender: Any) -> None:
        net = trace.network
        flow, path = query.flows[0], net.path(0)
        self.query, self.trace, self.takeover, self.sender = query, trace, takeover, sender
        self.R, self.C, self.D, self.box, self.rto, self.eta = path.R, net.C, net.D, path.D, net.rto, path.eta
        self.path = PathChoices.of(trace)
        curve = {name: list(trace.flow(name, 0) or [None] * trace.T) for name in CURVES}
        self.A, self.S, self.L = curve["A_f"][:takeover], curve["S_f"][:takeover], curve["L_f"][:takeover]
        self.Ld, self.So = curve["Ld_f"][:takeover], self.path.observed[:takeover]
        self.Lnc = self.path.noncongestive[:takeover] if self.path.noncongestive else None
        self.cwnd, self.rate = curve["cwnd"][:takeover], curve["rate"][:takeover]
        self.timeout, self.line = curve["timeout"][:takeover], self.path.tokens[:takeover]
        self.buffer = trace.constant("buffer") if net.finite_buffer else None
        self.buffer_min = net.buffer_min_bytes() if net.buffer_min is not None else self.buffer
        self.dupacks = trace.constant("dupacks")
        self.names = [sv.name for sv in flow.cca.state]   # the CCA's state variables
        self.states: list[dict[str, Any]] = [{} for _ in range(self.R)]
        self.record = FlowRecord(sent=self.A[:self.R], lost=self.L[:self.R], rtt=[None] * self.R)
        self.loss_log = [(self.L[t - 1], self.L[t], Fraction(t)) for t in range(1, takeover)
                         if self.L[t] > self.L[t - 1]]
        self.admitted = [a - lost for a, lost in zip(self.A, self.L)]   # kept as A and L grow

    @classmethod
    def start(cls, query: Query, trace: Trace, takeover: int) -> "Run | None":
        """``query``'s flow-0 CCA on ``trace``'s path, warmed up on the trace's history through
        step ``takeover - 1``; None where playing is not defined (see the module doc)."""
        net = trace.network
        if trace.periodic or net.flows != 1 or not net.compose or net.any_packets or query.periodic:
            return None
        flow, path = query.flows[0], net.path(0)
        R, T = path.R, trace.T
        takeover = max(takeover, R)
        if takeover >= T:
            return None
        names = [sv.name for sv in flow.cca.state]
        start_values = {name: row[R - 1] for name in (*CURVES[:-1], *names)
                        if (row := trace.flow(name, 0)) is not None}
        sender = flow.cca.concrete(SenderStart(R, net.D + path.D, net.C, trace.constant("alpha"), flow.params,
                                               start_values, []))
        if sender is None or not (hasattr(sender, "resume") and hasattr(sender, "fork")):
            return None   # a sender that cannot take over a run's state, or be copied mid-run
        run = cls(query, trace, takeover, sender)
        cwnd, rate = list(trace.flow("cwnd", 0) or [None] * T), list(trace.flow("rate", 0) or [None] * T)
        for t in range(R, takeover):   # warm-up: the sender sees the history and takes the trace's decisions
            sender.decide(run.feedback(t))
            sender.adopt(Decision(cwnd[t], rate[t]))
            run.states.append(sender.state())
            run.learn(t)
        if takeover > R:
            sender.resume({n: row[takeover - 1] for n in names if (row := trace.flow(n, 0)) is not None})
        return run

    def fork(self) -> "Run":
        """A copy of this run that goes on separately (its sender too)."""
        twin = copy.copy(self)
        for name in ("A", "S", "L", "Ld", "So", "cwnd", "rate", "timeout", "line", "states", "loss_log", "admitted"):
            setattr(twin, name, list(getattr(self, name)))
        if self.Lnc is not None:
            twin.Lnc = list(self.Lnc)
        twin.record = FlowRecord(list(self.record.sent), list(self.record.lost), list(self.record.rtt))
        twin.sender = self.sender.fork()
        return twin

    def feedback(self, t: int) -> Feedback:
        """What the sender knows at step t; its readings (delay, place in the loss order) are
        the trace's, within the played run's ranges (:class:`PathChoices`)."""
        R, So, Ld = self.R, self.So, self.Ld
        low, high = delay_range(So, self.admitted, t - R)
        rtt = R + self.path.delay_within(t, low, high)
        return Feedback(t, R, So[t - R], Ld[t], self.timeout[t], self.A[t - 1], rtt, (low, high),
                        self.record, (), detected(self.loss_log, Ld[t - 1], Ld[t]),
                        fate_known_through(So[t - R], Ld[t], self.admitted, self.L, t - 1),
                        self.path.loss_point_after(self.L[t - 1], t))

    def detect(self, t: int) -> Feedback:
        """The path's loss detection and timeout at step t (:func:`dupack_detection`); the
        feedback the sender reads then."""
        lost, fired = (oracle_detection if self.trace.network.loss_detection == "oracle" else dupack_detection)(self, t)
        self.Ld.append(lost)
        self.timeout.append(fired)
        return self.feedback(t)

    def take(self, t: int, feedback: Feedback, respond: Respond) -> "Run":
        """Step t: the sender's response to ``feedback`` carried out (:meth:`act`); the run it
        leaves, this one or a copy that took the step again. The feedback may place the
        sender's bytes in the loss order where the trace's reading placed them, which the model
        allows only if the step loses at least that many bytes, and what it loses follows from
        what the sender sends. Where the played step loses fewer, the step is taken again
        reading the most it lost, and if the sender then sends otherwise and loses fewer again,
        reading the bytes lost before the step (always allowed)."""
        low, wanted = self.L[t - 1], feedback.loss_point
        if wanted is None or wanted <= low:
            self.act(t, respond(self.sender, feedback))
            return self
        spare = self.fork()
        self.act(t, respond(self.sender, feedback))
        if self.L[t] >= wanted:
            return self
        nearest = self.L[t]
        if nearest > low:
            again, spare = spare, spare.fork()
            again.act(t, respond(again.sender, replace(feedback, loss_point=nearest)))
            if again.L[t] >= nearest:
                return again
        spare.act(t, respond(spare.sender, replace(feedback, loss_point=low)))
        return spare

    def act(self, t: int, decision: Decision) -> None:
        """The sender's ``decision`` at step t carried out: bytes sent, lost, served and ACKed."""
        A = self.A
        self.cwnd.append(decision.cwnd)
        self.rate.append(decision.rate)
        self.states.append(self.sender.state())
        window = max(self.So[t - self.R] + self.Ld[t] + decision.cwnd, A[t - 1])
        A.append(window if decision.rate is None else min(window, A[t - 1] + decision.rate))
        self.drop(t)
        self.line.append(self.tokens(t))
        waste_unusable(self.line, self.admitted[t], t, self.D, self.C)
        self.S.append(self.service(t))
        self.So.append(self.acks(t))
        if self.L[t] > self.L[t - 1]:
            self.loss_log.append((self.L[t - 1], self.L[t], Fraction(t)))
        self.learn(t)

    def drop(self, t: int) -> None:
        """The losses of step t: the trace's non-congestive drop, within eta of the bytes sent
        since step 0 and the step's arrivals; then its congestive drop, at least what the
        buffer cannot hold even with a full step of tokens, and nothing unless the queue
        (what the step admits, against the tokens before it) reaches the loss threshold."""
        A, L, line = self.A, self.L, self.line
        wanted_noncongestive, wanted_congestive = self.path.dropped(t)
        arrived = A[t] - A[t - 1]
        noncongestive = Fraction(0)
        if self.Lnc is not None:
            budget = self.eta * (A[t] - A[0]) - (self.Lnc[t - 1] - self.Lnc[0])
            noncongestive = clamp(wanted_noncongestive, Fraction(0), min(budget, arrived))
            self.Lnc.append(self.Lnc[t - 1] + noncongestive)
        congestive = Fraction(0)
        if self.buffer is not None:
            waiting = A[t] - L[t - 1] - noncongestive
            overflow = waiting - (line[t - 1] + self.C) - self.buffer
            most = min(arrived - noncongestive, waiting - line[t - 1] - self.buffer_min)
            congestive = clamp(wanted_congestive, max(overflow, Fraction(0)), max(most, Fraction(0)))
        L.append(L[t - 1] + noncongestive + congestive)
        self.admitted.append(A[t] - L[t])

    def tokens(self, t: int) -> Fraction:
        """The token line at t: the trace's step of tokens, within [none, C], and never fewer
        than the admitted bytes can use (tokens are wasted only while the queue cannot use
        them)."""
        before = self.line[t - 1]
        full = before + self.C
        return clamp(before + self.path.tokens_arrived(t), max(before, min(self.admitted[t], full)), full)

    def service(self, t: int) -> Fraction:
        """Bytes served by t: the token line less the trace's lag at t, at least every token of
        D steps ago (and what was served before), at most the token line and what was admitted."""
        oldest = self.line[max(t - self.D, 0)] - self.C * max(self.D - t, 0)
        return clamp(self.line[t] - self.path.lag(t), max(self.S[t - 1], oldest), min(self.admitted[t], self.line[t]))

    def acks(self, t: int) -> Fraction:
        """Bytes whose ACKs have left the flow's box by t: what the trace's box held, at most
        what was served and at least what was served ``box`` steps ago."""
        if self.box == 0:
            return self.S[t]
        oldest = self.S[t - self.box] if t >= self.box else self.So[t - 1]
        return clamp(self.S[t] - self.path.held(t), max(self.So[t - 1], oldest), self.S[t])

    def learn(self, t: int) -> None:
        if t >= len(self.record.sent):
            self.record.sent.append(self.A[t])
            self.record.lost.append(self.L[t])
            self.record.rtt.append(None)
        learn_rtts(self.A, self.L, self.So, self.record, t, self.R)

    def finish(self) -> Trace:
        """The played run as a trace (once every step is played)."""
        return _as_trace(self)


def waste_unusable(line: list[Fraction], admitted: Fraction, t: int, D: int, C: Fraction) -> None:
    """Tokens the run cannot use within D steps are wasted when they came: the server must
    have served every token older than D steps by t (S[t] >= C*(t-D) - W[t-D]) and cannot
    serve beyond what was admitted, so the token line D steps ago is lowered to ``admitted``
    (the bytes admitted by t) where it was above, and the steps after it keep at most C tokens
    each. The queue was empty wherever this wastes (it never held more than ``admitted``), so
    the model allows it, and the service already chosen at those steps stays below the line."""
    j = max(t - D, 0)
    cap = admitted + C * max(D - t, 0)   # before step 0, W[0] stands for the waste D steps ago
    if line[j] <= cap:
        return
    line[j] = cap
    for k in range(j + 1, t + 1):
        line[k] = min(line[k], line[k - 1] + C)


def dupack_detection(run: Run, t: int) -> tuple[Fraction, bool]:
    """The model's loss detection at step t (:meth:`models.path_server.PathServer.loss_detection`)
    on the played run, with the trace's choices: (the losses detected by t, whether the sender
    times out at t).

    A timeout fires where the trace's did if every byte in flight is known lost (the model's
    condition), and wherever that condition has held for ``rto`` steps (the model forces it);
    it detects every outstanding loss. Otherwise the sender has detected as far along the loss
    steps as the trace's had (:meth:`PathChoices.detected_along`), but at least every loss its
    duplicate ACKs reveal (``dupacks`` bytes admitted after it ACKed) and no loss they do not
    (beyond what it had detected before). This is the one place the player's detection rule
    lives: a path that detects losses otherwise replaces this function."""
    R, L, Ld, acked = run.R, run.L, run.Ld, run.So[t - run.R]
    stalled = [all_in_flight_lost(run.A, run.admitted, L, Ld, run.So[k - R], k, R)
               for k in range(max(t - run.rto + 1, R), t + 1)]
    forced = t - run.rto + 1 >= R and all(stalled)
    if stalled[-1] and (run.path.timeout[t] or forced):
        return L[t - R], True
    revealed = detectable_losses(run.admitted, L, acked, run.dupacks, t - R)
    hidden = len(revealed)   # the first step whose loss is not revealed (the revealed ones are a prefix)
    most = max(Ld[t - 1], L[hidden]) if hidden <= t - R else L[t - R]
    return clamp(run.path.detected_along(L, t), max([Ld[t - 1], *revealed]), most), False


def oracle_detection(run: Run, t: int) -> tuple[Fraction, bool]:
    """Loss detection under CCmatic's loss oracle (:meth:`models.path_server.PathServer.loss_oracle`):
    at step t the sender knows exactly the played run's losses of step t - R, and never times
    out. There is no choice to keep from the trace: the oracle's schedule is the model's."""
    return run.L[t - run.R], False


def learn_rtts(A: list[Fraction], L: list[Fraction], So: list[Fraction], record: FlowRecord, t: int, R: int) -> None:
    """Bytes sent at step s met an RTT of R plus the steps until the last of them was served;
    the sender learns it once that service is R steps old."""
    if t < R:
        return
    u = t - R
    for s in range(min(u + 1, len(record.rtt))):
        if record.rtt[s] is None and So[u] >= A[s] - L[s]:
            record.rtt[s] = Fraction(R + u - s)


def _as_trace(run: Run) -> Trace:
    """The played run in the query's vocabulary; the CCA's state is the trace's before the
    takeover where the trace has it, else the sender's (0 before its first step)."""
    trace, takeover = run.trace, run.takeover
    T, C = trace.T, trace.network.C
    sym = Symbols()
    sym.constants.update(trace.symbols.constants)
    sym.unavailable.update(trace.symbols.unavailable)
    rows = {"A_f": run.A, "S_f": run.S, "L_f": run.L, "Ld_f": run.Ld, "cwnd": run.cwnd, "timeout": run.timeout}
    if run.Lnc is not None:
        rows["Lnc_f"] = run.Lnc
    if "So_f" in trace.symbols.series:
        rows["So_f"] = run.So
    for name, row in rows.items():
        sym.series[name] = Series(name, [row], 2, {})
    paced = all(r is not None for r in run.rate[takeover:])
    sym.series["rate"] = Series("rate", [run.rate if paced else None], 2, {} if paced else {0: "flow 0 has no rate"})
    for name, row in (("A", run.A), ("S", run.S), ("L", run.L)):
        sym.series[name] = Series(name, row, 1)
    sym.series["W"] = Series("W", [C * t - run.line[t] for t in range(T)], 1)
    for name in run.names:
        recorded = trace.flow(name, 0)
        row = [recorded[t] if recorded is not None and t < takeover else run.states[t].get(name, 0) for t in range(T)]
        sym.series[name] = Series(name, [[x if x is not None else 0 for x in row]], 2, {})
    return Trace(trace.network, [f.cca.name for f in run.query.flows], sym)
