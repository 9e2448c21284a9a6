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
    net = trace.network
    if trace.periodic or net.flows != 1 or not net.compose or net.lossy or query.periodic:
        return None
    flow, path = query.flows[0], net.path(0)
    R, C, D, T = path.R, net.C, net.D, trace.T
    takeover = max(takeover, R)
    if takeover >= T:
        return None
    curve = {name: list(trace.flow(name, 0) or [None] * trace.T) for name in CURVES}
    S_trace, So_trace = curve["S_f"][:], list(trace.flow("So_f", 0) or curve["S_f"])
    tokens = [C * t - w for t, w in enumerate(trace.total("W"))]
    A, S, L, Ld, So = (curve["A_f"][:takeover], curve["S_f"][:takeover], curve["L_f"][:takeover],
                       curve["Ld_f"][:takeover], So_trace[:takeover])
    cwnd, rate, timeout = curve["cwnd"][:takeover], curve["rate"][:takeover], curve["timeout"][:takeover]
    line = tokens[:takeover]
    buffer = trace.constant("buffer") if net.finite_buffer else None
    dupacks, alpha = trace.constant("dupacks"), trace.constant("alpha")
    names = [sv.name for sv in flow.cca.state]
    start_values = {name: trace.flow(name, 0)[R - 1] for name in (*CURVES[:-1], *names)
                    if trace.flow(name, 0) is not None}
    sender = flow.cca.concrete(SenderStart(R, D + path.D, C, alpha, flow.params, start_values, []))
    if sender is None or not hasattr(sender, "resume"):
        return None
    states: list[dict[str, Any]] = [{} for _ in range(R)]
    record = FlowRecord(sent=A[:R], lost=L[:R], rtt=[None] * R)
    loss_log = [(L[t - 1], L[t], Fraction(t)) for t in range(1, takeover) if L[t] > L[t - 1]]
    admitted = [a - l for a, l in zip(A, L)]   # kept as A and L grow

    def feedback(t: int) -> Feedback:
        low, high = delay_range(So, admitted, t - R)
        return Feedback(t, R, So[t - R], Ld[t], timeout[t], A[t - 1], Fraction(R + low), (low, high), record, (),
                        detected(loss_log, Ld[t - 1], Ld[t]), fate_known_through(So[t - R], Ld[t], admitted, L, t - 1))

    for t in range(R, T):
        if t >= takeover:   # the path's loss detection and timeout at t, from what it has served
            fired = all_in_flight_lost(A, admitted, L, Ld, So[t - R], t, R)
            timeout.append(fired)
            Ld.append(L[t - R] if fired else max([Ld[t - 1]] + detectable_losses(admitted, L, So[t - R], dupacks, t - R)))
        decision = sender.decide(feedback(t))
        if t < takeover:   # warm-up: the sender sees the history and takes the trace's decisions
            sender.adopt(Decision(cwnd[t], rate[t]))
            states.append(sender.state())
            if t == takeover - 1:
                sender.resume({n: trace.flow(n, 0)[t] for n in names if trace.flow(n, 0) is not None})
        else:
            cwnd.append(decision.cwnd)
            rate.append(decision.rate)
            states.append(sender.state())
            window = max(So[t - R] + Ld[t] + decision.cwnd, A[t - 1])
            A.append(window if decision.rate is None else min(window, A[t - 1] + decision.rate))
            _serve(A, S, L, So, line, S_trace, So_trace, tokens, t, C, D, path.D, buffer)
            admitted.append(A[t] - L[t])
            if L[t] > L[t - 1]:
                loss_log.append((L[t - 1], L[t], Fraction(t)))
        if t >= len(record.sent):
            record.sent.append(A[t])
            record.lost.append(L[t])
            record.rtt.append(None)
        learn_rtts(A, L, So, record, t, R)
    return _as_trace(query, trace, A, S, L, Ld, So, cwnd, rate, timeout, line, states, takeover, names)


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
