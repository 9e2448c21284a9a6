"""Play another sender on a counterexample's path, in the model's own fluid terms.

A sat trace is one path of the model and one run of a CCA on it. :func:`play` keeps the path
and changes the CCA: up to the ``takeover`` step the trace is copied (the history, which no CCA
rule constrains), and from there a concrete sender decides on what it observes while the path
answers the way the trace's path did, as far as a different sender lets it:

* **Tokens.** The bottleneck wastes tokens only while its queue is empty, down to the bytes
  admitted (the token line never runs ahead of the admitted curve); so it is a constant-rate
  link at C that idles when it has nothing to send.
* **Service.** The server lags its token line by what the trace's server lagged at that step,
  within the model's bounds: never below the tokens of D steps ago, never beyond the token line
  or what was admitted.
* **Losses.** Only what the buffer cannot hold is dropped; no non-congestive loss.
* **Feedback.** Each flow's box holds its ACKs as the trace's box did, within its bound; losses
  are detected as soon as the model allows, and a timeout fires at the first step it may.

The result is a trace of the model only if :func:`ccac.solving.validate.validate` says so: the
policy above is built to be one (for one flow on the composing model), and validation, not this
module, is what a caller relies on. So a candidate CCA that violates a query on a played trace
that validates has a genuine counterexample, found without a solver: this is how ``ccac
synthesize`` prunes a template against the counterexamples it has collected.

Played: one flow, the composing model, traces that are not periodic; :func:`play` returns None
otherwise.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from ccac.encode.expr import Series, Symbols
from ccac.encode.trace import Trace, delay_range
from ccac.problems.query import Query
from ccac.senders.interface import Decision, Feedback, FlowRecord, SenderStart, fate_known_through
from ccac.testbed.packet_path import all_in_flight_lost, detectable_losses, detected

CURVES = ("A_f", "S_f", "L_f", "Ld_f", "cwnd", "rate", "timeout")


def play(query: Query, trace: Trace, takeover: int) -> Trace | None:
    """``query``'s flow-0 CCA run on ``trace``'s path from step ``takeover`` on (see the
    module doc): the played trace, not yet validated, or None where playing is not defined."""
    run = Run.start(query, trace, takeover)
    if run is None:
        return None
    for t in range(run.takeover, trace.T):
        run.act(t, run.sender.decide(run.detect(t)))
    return run.finish()


class Run:
    """A played run in progress: the path's curves so far and the sender (see the module doc).
    :meth:`start` copies the trace up to the takeover; then, step by step, :meth:`detect` gives
    the sender its feedback and :meth:`act` carries out its decision. :meth:`fork` copies a run,
    sender included, so runs that agreed so far can go on differently."""

    def __init__(self, query: Query, trace: Trace, takeover: int, sender: Any) -> None:
        net = trace.network
        flow, path = query.flows[0], net.path(0)
        self.query, self.trace, self.takeover, self.sender = query, trace, takeover, sender
        self.R, self.C, self.D, self.box = path.R, net.C, net.D, path.D
        curve = {name: list(trace.flow(name, 0) or [None] * trace.T) for name in CURVES}
        self.S_trace = curve["S_f"][:]
        self.So_trace = list(trace.flow("So_f", 0) or curve["S_f"])
        self.tokens = [net.C * t - w for t, w in enumerate(trace.total("W"))]
        self.A, self.S, self.L = curve["A_f"][:takeover], curve["S_f"][:takeover], curve["L_f"][:takeover]
        self.Ld, self.So = curve["Ld_f"][:takeover], self.So_trace[:takeover]
        self.cwnd, self.rate = curve["cwnd"][:takeover], curve["rate"][:takeover]
        self.timeout, self.line = curve["timeout"][:takeover], self.tokens[:takeover]
        self.buffer = trace.constant("buffer") if net.finite_buffer else None
        self.dupacks = trace.constant("dupacks")
        self.names = [sv.name for sv in flow.cca.state]   # the CCA's state variables
        self.states: list[dict[str, Any]] = [{} for _ in range(self.R)]
        self.record = FlowRecord(sent=self.A[:self.R], lost=self.L[:self.R], rtt=[None] * self.R)
        self.loss_log = [(self.L[t - 1], self.L[t], Fraction(t)) for t in range(1, takeover) if self.L[t] > self.L[t - 1]]
        self.admitted = [a - l for a, l in zip(self.A, self.L)]   # kept as A and L grow

    @classmethod
    def start(cls, query: Query, trace: Trace, takeover: int) -> "Run | None":
        """``query``'s flow-0 CCA on ``trace``'s path, warmed up on the trace's history through
        step ``takeover - 1``; None where playing is not defined (see the module doc)."""
        net = trace.network
        if trace.periodic or net.flows != 1 or not net.compose or net.lossy or query.periodic:
            return None
        flow, path = query.flows[0], net.path(0)
        R, T = path.R, trace.T
        takeover = max(takeover, R)
        if takeover >= T:
            return None
        names = [sv.name for sv in flow.cca.state]
        start_values = {name: trace.flow(name, 0)[R - 1] for name in (*CURVES[:-1], *names)
                        if trace.flow(name, 0) is not None}
        sender = flow.cca.concrete(SenderStart(R, net.D + path.D, net.C, trace.constant("alpha"), flow.params,
                                               start_values, []))
        if sender is None or not all(hasattr(sender, m) for m in ("resume", "fork")):
            return None   # a sender that cannot take over a run's state, or be copied mid-run
        run = cls(query, trace, takeover, sender)
        cwnd, rate = list(trace.flow("cwnd", 0) or [None] * T), list(trace.flow("rate", 0) or [None] * T)
        for t in range(R, takeover):   # warm-up: the sender sees the history and takes the trace's decisions
            sender.decide(run.feedback(t))
            sender.adopt(Decision(cwnd[t], rate[t]))
            run.states.append(sender.state())
            run.learn(t)
        if takeover > R:
            sender.resume({n: trace.flow(n, 0)[takeover - 1] for n in names if trace.flow(n, 0) is not None})
        return run

    def fork(self) -> "Run":
        """A copy of this run that goes on separately (its sender too)."""
        twin = copy.copy(self)
        for name in ("A", "S", "L", "Ld", "So", "cwnd", "rate", "timeout", "line", "states", "loss_log", "admitted"):
            setattr(twin, name, list(getattr(self, name)))
        twin.record = FlowRecord(list(self.record.sent), list(self.record.lost), list(self.record.rtt))
        twin.sender = self.sender.fork()
        return twin

    def feedback(self, t: int) -> Feedback:
        R, So, Ld = self.R, self.So, self.Ld
        low, high = delay_range(So, self.admitted, t - R)
        return Feedback(t, R, So[t - R], Ld[t], self.timeout[t], self.A[t - 1], Fraction(R + low), (low, high),
                        self.record, (), detected(self.loss_log, Ld[t - 1], Ld[t]),
                        fate_known_through(So[t - R], Ld[t], self.admitted, self.L, t - 1))

    def detect(self, t: int) -> Feedback:
        """The path's loss detection and timeout at step t, from what it has served; the
        feedback the sender reads then."""
        A, L, Ld, R = self.A, self.L, self.Ld, self.R
        fired = all_in_flight_lost(A, self.admitted, L, Ld, self.So[t - R], t, R)
        self.timeout.append(fired)
        Ld.append(L[t - R] if fired else
                  max([Ld[t - 1]] + detectable_losses(self.admitted, L, self.So[t - R], self.dupacks, t - R)))
        return self.feedback(t)

    def act(self, t: int, decision: Decision) -> None:
        """The sender's ``decision`` at step t carried out: bytes sent, served, lost and ACKed."""
        A, L = self.A, self.L
        self.cwnd.append(decision.cwnd)
        self.rate.append(decision.rate)
        self.states.append(self.sender.state())
        window = max(self.So[t - self.R] + self.Ld[t] + decision.cwnd, A[t - 1])
        A.append(window if decision.rate is None else min(window, A[t - 1] + decision.rate))
        _serve(A, self.S, L, self.So, self.line, self.S_trace, self.So_trace, self.tokens, t, self.C, self.D,
               self.box, self.buffer)
        self.admitted.append(A[t] - L[t])
        if L[t] > L[t - 1]:
            self.loss_log.append((L[t - 1], L[t], Fraction(t)))
        self.learn(t)

    def learn(self, t: int) -> None:
        if t >= len(self.record.sent):
            self.record.sent.append(self.A[t])
            self.record.lost.append(self.L[t])
            self.record.rtt.append(None)
        learn_rtts(self.A, self.L, self.So, self.record, t, self.R)

    def finish(self) -> Trace:
        """The played run as a trace (once every step is played)."""
        return _as_trace(self.query, self.trace, self.A, self.S, self.L, self.Ld, self.So, self.cwnd, self.rate,
                         self.timeout, self.line, self.states, self.takeover, self.names)


def _serve(A: list[Fraction], S: list[Fraction], L: list[Fraction], So: list[Fraction], line: list[Fraction],
           S_trace: list[Fraction], So_trace: list[Fraction], tokens: list[Fraction], t: int, C: Fraction,
           D: int, box: int, buffer: Fraction | None) -> None:
    """The bottleneck and the flow's box at step t (see the module doc), given A[t]."""
    pending = A[t] - L[t - 1]
    line.append(min(line[t - 1] + C, max(line[t - 1], pending)))
    lost = pending - line[t] - buffer if buffer is not None and pending - line[t] > buffer else Fraction(0)
    L.append(L[t - 1] + lost)
    admitted = A[t] - L[t]
    floor = C * (t - D) - (C * max(t - D, 0) - line[max(t - D, 0)])
    lag = tokens[t] - S_trace[t]
    S.append(min(admitted, line[t], max(S[t - 1], floor, line[t] - lag)))
    if box == 0:
        So.append(S[t])
    else:
        held = S_trace[t] - So_trace[t]
        So.append(min(S[t], max(So[t - 1], S[t - box] if t >= box else So[t - 1], S[t] - held)))


def learn_rtts(A: list[Fraction], L: list[Fraction], So: list[Fraction], record: FlowRecord, t: int, R: int) -> None:
    """Bytes sent at step s met an RTT of R plus the steps until the last of them was served;
    the sender learns it once that service is R steps old."""
    if t < R:
        return
    u = t - R
    for s in range(min(u + 1, len(record.rtt))):
        if record.rtt[s] is None and So[u] >= A[s] - L[s]:
            record.rtt[s] = Fraction(R + u - s)


def _as_trace(query: Query, trace: Trace, A: list[Fraction], S: list[Fraction], L: list[Fraction],
              Ld: list[Fraction], So: list[Fraction], cwnd: list[Any], rate: list[Any], timeout: list[bool],
              line: list[Fraction], states: list[dict[str, Any]], takeover: int, names: list[str]) -> Trace:
    """The played run in the query's vocabulary; the CCA's state is the trace's before the
    takeover where the trace has it, else the sender's (0 before its first step)."""
    T, C = trace.T, trace.network.C
    sym = Symbols()
    sym.constants.update(trace.symbols.constants)
    sym.unavailable.update(trace.symbols.unavailable)
    for name, row in (("A_f", A), ("S_f", S), ("L_f", L), ("Ld_f", Ld), ("cwnd", cwnd), ("timeout", timeout)):
        sym.series[name] = Series(name, [row], 2, {})
    paced = all(r is not None for r in rate[takeover:])
    sym.series["rate"] = Series("rate", [rate if paced else None], 2, {} if paced else {0: "flow 0 has no rate"})
    if "So_f" in trace.symbols.series:
        sym.series["So_f"] = Series("So_f", [So], 2, {})
    for name in ("A", "S", "L"):
        sym.series[name] = Series(name, {"A": A, "S": S, "L": L}[name], 1)
    sym.series["W"] = Series("W", [C * t - line[t] for t in range(T)], 1)
    for name in names:
        recorded = trace.flow(name, 0)
        row = [recorded[t] if recorded is not None and t < takeover else states[t].get(name, 0) for t in range(T)]
        sym.series[name] = Series(name, [[x if x is not None else 0 for x in row]], 2, {})
    return Trace(trace.network, [f.cca.name for f in query.flows], sym)
