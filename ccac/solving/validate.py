"""Independent validation of a counterexample trace, in exact rational arithmetic.

Nothing here touches the solver or the encoding. The path-server rules are re-stated from the
thesis (chapter 4.2, appendix A.1/A.3) in their token-bucket form (tokens, packet queue,
bottleneck queue) and checked on the trace's exact values; each CCA checks its own rules with
its :meth:`~ccac.ccas.interface.CCA.check`; the query's conditions are evaluated exactly. Every violated
rule is reported with its step and flow, so a trace is either validated or fails loudly.

A periodic trace claims more: that it can be repeated forever. It is validated by doing that:
:func:`unrolled` repeats it for :data:`PERIODS` periods (byte curves shifted by each period's
growth, everything else repeated), and the repetition must pass every model and CCA check as
an ordinary trace, whose first steps read an unknown past like any other trace. A trace whose
second period is not the continuation of its first (a loss its own later ACKs would reveal, a
delay reading that differs once the past is the trace itself) fails there.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Any

from ccac.ccas.interface import FlowValues
from ccac.encode.expr import Series, Symbols, compile_condition, step_parts
from ccac.problems.problem import FLOW_SERIES, start_values
from ccac.problems.query import Query
from ccac.encode.trace import Trace, repeat_period


def validate(query: Query, trace: Trace, periodic_pairs: list[tuple[str, Any, Any]] | None = None) -> list[str]:
    """All violations found in ``trace`` (empty when it is a genuine answer to ``query``).

    ``periodic_pairs`` are the exact (label, start, end) values of the encoding's periodic
    conditions (the model's and every CCA variable's); the model's are also recomputed here from
    the trace (:func:`check_periodic`), and a periodic trace is checked by repeating it.
    """
    if query.periodic:
        problems = [f"repeated {PERIODS} times: {p}" for p in check_trace(query, unrolled(query, trace, PERIODS))]
    else:
        problems = check_trace(query, trace)
    problems += check_query(query, trace, periodic_pairs or [])
    return problems


def validate_alike(queries: list[Query], trace: Trace) -> list[bool]:
    """For queries that differ only in their flows' CCAs (one template's candidates on one run),
    whether ``trace`` is a genuine answer to each: :func:`validate`'s checks, with the path and
    the query's conditions (the same for all of them) checked once and each query's CCA rules
    on their own. Not for periodic queries."""
    if not queries:
        return []
    first = queries[0]
    if any(q.periodic or (q.assume, q.find, q.definitions) != (first.assume, first.find, first.definitions)
           for q in queries):
        raise ValueError("validate_alike: the queries differ in more than their CCAs")
    if check_path(trace) or check_query(first, trace, []):
        return [False] * len(queries)
    return [not check_ccas(q, trace) for q in queries]


PERIODS = 3  # how many periods a periodic trace is repeated for its validation

# Series that are byte positions: repeating a trace shifts them by one period's growth.
CUMULATIVE = frozenset({"A", "S", "L", "W", "A_f", "S_f", "L_f", "Ld_f", "Lnc_f", "So_f"})


def check_trace(query: Query, trace: Trace) -> list[str]:
    """Every model rule and every flow's CCA rules (not the query's own conditions)."""
    return check_path(trace) + check_start(query, trace) + check_ccas(query, trace)


def check_start(query: Query, trace: Trace) -> list[str]:
    """A cold start on ``trace``: each cold flow sent nothing before its connection opened (so
    nothing of it was served, lost or detected lost, and no timer fired), and its CCA was in its
    start state one step before (:func:`ccac.problems.problem.start_values`)."""
    out: list[str] = []
    for n in range(query.network.flows):
        start = start_values(query, n)
        if start is None:
            continue
        step, values = start
        for t in range(step + 1):
            silent = [name for name in ("A_f", "S_f", "L_f", "Ld_f") if trace.flow(name, n)[t] != 0]
            if silent or trace.flow("timeout", n)[t]:
                out.append(f"flow {n}: step {t}: before its connection opens at step {step + 1}, "
                           f"{', '.join(silent) or 'timeout'} is not nothing")
        for name, value in values.items():
            row = trace.flow(name, n)
            if row is not None and row[step] != value:
                out.append(f"flow {n}: step {step}: {name} = {row[step]}, not its start value {value}")
    return out


def check_ccas(query: Query, trace: Trace) -> list[str]:
    """Every flow's CCA rules on ``trace``, each on the service its own ACKs report."""
    problems = []
    for n, flow in enumerate(query.flows):
        values = flow_values(trace, n, flow.params)
        problems += [f"flow {n} ({flow.cca.name}): {p}" for p in flow.cca.check(values)]
    return problems


def step_notes(query: Query, trace: Trace) -> dict[str, list[str]]:
    """What holds at each step of a validated ``trace``, for a page's hover: the query's per-step
    conditions (:func:`ccac.encode.expr.step_parts`, the parts of each ``any``/``all`` over
    ``t``) that hold and that fail there, and each flow's CCA rule taken there
    (:meth:`~ccac.ccas.interface.CCA.step_rules`; empty for a CCA that does not name them)."""
    symbols = trace.symbols.with_definitions(query.definitions)
    labelled = [(f"assume[{i}]", text) for i, text in enumerate(query.assume)]
    labelled += [("find", query.find)] if query.find is not None else []
    holds: list[list[str]] = [[] for _ in range(trace.T)]
    fails: list[list[str]] = [[] for _ in range(trace.T)]
    for label, text in labelled:
        for part in step_parts(text, symbols, f"query.{label}"):
            for t, value in part.holds.items():
                if 0 <= t < trace.T:
                    (holds if value else fails)[t].append(f"{label}: {part.text}")
    notes = {"query holds": ["; ".join(x) for x in holds], "query fails": ["; ".join(x) for x in fails]}
    for n, flow in enumerate(query.flows):
        taken = flow.cca.step_rules(flow_values(trace, n, flow.params))
        if taken:
            notes[f"rules[{n}]"] = ["; ".join(taken.get(t, [])) for t in range(trace.T)]
    return notes


def unrolled(query: Query, trace: Trace, periods: int) -> Trace:
    """``trace`` (period P = T - 1) repeated ``periods`` times: a trace of periods * P + 1 steps
    whose step t + j*P is step t of the original, every byte position (the model's curves and
    CCA state declared on a byte axis) plus j times its growth over the period."""
    P = trace.T - 1
    shifting = set(CUMULATIVE) | {sv.name for f in query.flows for sv in f.cca.state if sv.axis}

    def repeat(values: list[Any], shifts: bool) -> list[Any]:
        return repeat_period(values, 0, periods - 1, shifts)

    symbols = Symbols()
    symbols.constants.update(trace.symbols.constants)
    symbols.constants["T"] = periods * P + 1
    for name, series in trace.symbols.series.items():
        shifts = name in shifting
        if series.dims == 1:
            values: list[Any] = repeat(series.values, shifts)
        else:
            values = [repeat(row, shifts) if row is not None else None for row in series.values]
        symbols.series[name] = Series(name, values, series.dims, series.missing)
    network = replace(trace.network, T=periods * P + 1)
    return Trace(network, trace.ccas, symbols)


def flow_values(trace: Trace, n: int, params: dict[str, Any]) -> FlowValues:
    """Flow n's trace as its CCA sees it: the service its ACKs report (through its own box, if
    any), its own R, the jitter its feedback may carry, and its delay reading's curves."""
    state_names = [name for name, s in trace.symbols.series.items()
                   if s.dims == 2 and name not in FLOW_SERIES]
    S, A, L = trace.total("S"), trace.total("A"), trace.total("L")
    net, path = trace.network, trace.network.path(n)
    admitted = [a - lost for a, lost in zip(A, L)]
    observed = observed_service(trace, n)
    own_admitted = [a - lost for a, lost in zip(trace.flow("A_f", n), trace.flow("L_f", n))]
    return FlowValues(
        n=n, T=trace.T, R=path.R, D=net.D + path.D, C=net.C,
        alpha=trace.constant("alpha"), dupacks=trace.constant("dupacks"), params=params,
        A=trace.flow("A_f", n), S=observed, L=trace.flow("L_f", n), Ld=trace.flow("Ld_f", n),
        cwnd=trace.flow("cwnd", n), rate=trace.flow("rate", n), timeout=trace.flow("timeout", n),
        state={name: values for name in state_names if (values := trace.flow(name, n)) is not None},
        total_S=S, total_admitted=admitted,
        delay_S=observed if path.D > 0 else S, delay_admitted=own_admitted if path.D > 0 else admitted,
        tokens=[net.C * t - w for t, w in enumerate(trace.total("W"))], flows=net.flows, opens=path.opens,
        lossy=net.lossy, buffer=net.buffer_bytes(),
    )


def observed_service(trace: Trace, n: int) -> list[Fraction]:
    """What flow n's sender has seen acked: So_f through its own box, else S_f itself."""
    return trace.recorded("So_f", n) if trace.network.path(n).D > 0 else trace.flow("S_f", n)


def check_path(tr: Trace) -> list[str]:
    net = tr.network
    T, D, C, N = net.T, net.D, net.C, net.flows
    W = tr.total("W")
    A = [tr.flow("A_f", n) for n in range(N)]
    S = [tr.flow("S_f", n) for n in range(N)]
    L = [tr.flow("L_f", n) for n in range(N)]
    Ld = [tr.flow("Ld_f", n) for n in range(N)]
    So = [observed_service(tr, n) for n in range(N)]
    Lnc = [tr.recorded("Lnc_f", n) for n in range(N)] if net.lossy else None
    cwnd = [tr.flow("cwnd", n) for n in range(N)]
    rate = [tr.flow("rate", n) for n in range(N)]
    timeout = [tr.flow("timeout", n) for n in range(N)]
    alpha, dupacks = tr.constant("alpha"), tr.constant("dupacks")
    buffer = tr.constant("buffer")
    buffer_min = net.buffer_min_bytes() if net.buffer_min is not None else buffer
    tot = lambda series, t: sum((series[n][t] for n in range(N)), Fraction(0))  # noqa: E731
    admitted = [tot(A, t) - tot(L, t) for t in range(T)]
    served = [tot(S, t) for t in range(T)]
    tokens_arrived = [C * t - W[t] for t in range(T)]  # tokens that entered the bucket by t
    out: list[str] = []

    def bad(t: int, rule: str, detail: str = "") -> None:
        out.append(f"step {t}: {rule}" + (f" ({detail})" if detail else ""))

    if alpha <= 0:
        out.append(f"alpha = {alpha} is not positive")
    # Whole packets (network or flow packets): the link may be part-way through one packet,
    # and a packet is dropped when it does not fit whole, so both bounds give up to a packet.
    packet = alpha if net.any_packets else Fraction(0)
    if net.any_packets:
        out += check_whole_packets(tr, alpha)
    if dupacks < 0:
        out.append(f"dupacks = {dupacks} is negative")
    if buffer is not None and buffer < 0:
        out.append(f"buffer = {buffer} is negative")
    for n in range(N):
        if S[n][0] != 0 or L[n][0] != 0:
            bad(0, f"flow {n}: S_f[0] and L_f[0] must be 0 (origin of the byte axis)")
    for t in range(T):
        # The token bucket: tokens held = arrived - used >= 0; none older than D steps.
        if served[t] > tokens_arrived[t]:
            bad(t, "served more than the tokens that arrived", f"S = {served[t]} > C*t - W = {tokens_arrived[t]}")
        oldest_allowed = C * (t - D) - W[max(t - D, 0)]
        if short_of(oldest_allowed, served[t], packet):
            bad(t, f"a token was held longer than D = {D} steps", f"S = {served[t]} < {oldest_allowed}"
                + (" by a whole packet or more" if net.any_packets else ""))
        for n in range(N):
            if S[n][t] > A[n][t] - L[n][t]:
                bad(t, f"flow {n}: served bytes that were never admitted")
            if cwnd[n][t] <= 0:
                bad(t, f"flow {n}: cwnd is not positive")
            flow_rate = rate[n]
            if flow_rate is not None and flow_rate[t] <= 0:
                bad(t, f"flow {n}: pacing rate is not positive")
        # The bottleneck queue is what the packet queue holds beyond the available tokens.
        bottleneck = admitted[t] - tokens_arrived[t]
        if buffer is not None and bottleneck > buffer:
            bad(t, "bottleneck queue above the buffer", f"{bottleneck} > {buffer}")
        if t == 0:
            continue
        for n in range(N):
            for name, series in (("A", A), ("S", S), ("L", L), ("Ld", Ld)):
                if series[n][t] < series[n][t - 1]:
                    bad(t, f"flow {n}: cumulative {name} decreased")
            if A[n][t] - L[n][t] < A[n][t - 1] - L[n][t - 1]:
                bad(t, f"flow {n}: more bytes lost than arrived in the step")
        if W[t] < W[t - 1]:
            bad(t, "cumulative waste decreased")
        if tokens_arrived[t] < tokens_arrived[t - 1]:
            bad(t, "more than C tokens wasted in one step")
        if W[t] > W[t - 1]:
            if net.compose and not admitted[t] <= tokens_arrived[t]:
                bad(t, "tokens wasted while the packet queue could use them",
                    f"A-L = {admitted[t]} > C*t - W = {tokens_arrived[t]}")
            if not net.compose and not admitted[t] <= served[t] + net.epsilon:
                bad(t, "tokens wasted while the single box's queue was not (nearly) empty")
        congestive_now = admitted_loss(L, Lnc, t, N)
        if buffer is None and congestive_now != admitted_loss(L, Lnc, 0, N):
            bad(t, "congestive loss with an infinite buffer")
        if buffer is not None and congestive_now > admitted_loss(L, Lnc, t - 1, N):
            assert buffer_min is not None   # a finite buffer's loss-allowed threshold (the buffer itself by default)
            if short_of(tokens_arrived[t - 1] + buffer_min, admitted[t], packet):
                bad(t, "loss while the bottleneck queue never exceeded the buffer"
                    + (" less a packet" if net.any_packets else ""))
    if Lnc is not None:
        for n in range(N):
            for t in range(T):
                if Lnc[n][t] - Lnc[n][0] > net.path(n).eta * (A[n][t] - A[n][0]):
                    bad(t, f"flow {n}: non-congestive loss above eta of the bytes sent")
                if t and (Lnc[n][t] < Lnc[n][t - 1] or L[n][t] - Lnc[n][t] < L[n][t - 1] - Lnc[n][t - 1]):
                    bad(t, f"flow {n}: a loss curve decreased")
    for n in range(N):
        out += [f"flow {n}: {p}" for p in check_box(S[n], So[n], net.path(n).D)]
        out += [f"flow {n}: {p}" for p in check_sender(A[n], So[n], L[n], Ld[n], cwnd[n], rate[n],
                                                         timeout[n], dupacks, net.path(n).R, net.rto,
                                                         alpha if net.path(n).packets else None,
                                                         net.loss_detection == "oracle", net.retransmissions,
                                                         net.path(n).opens)]
    if N > 1:
        for t in range(T):
            for s in range(t):
                for n in range(N):
                    if served[t] >= admitted[s] and S[n][t] < A[n][s] - L[n][s]:
                        bad(t, f"flow {n}: FIFO broken: bytes admitted at {s} overtaken")
                    if served[t] <= admitted[s] and S[n][t] > A[n][s] - L[n][s]:
                        bad(t, f"flow {n}: FIFO broken: served bytes admitted after step {s}")
    return out


def short_of(bound: Fraction, value: Fraction, packet: Fraction) -> bool:
    """Whether ``value`` falls short of ``bound`` by more than the rule allows: at all in the
    fluid model (``packet`` 0), by a whole packet or more in whole packets."""
    return bound - value > 0 if packet == 0 else bound - value >= packet


def admitted_loss(L: list[list[Fraction]], Lnc: list[list[Fraction]] | None, t: int, N: int) -> Fraction:
    """Cumulative congestive loss over all flows at step t."""
    return sum((L[n][t] - (Lnc[n][t] if Lnc else 0) for n in range(N)), Fraction(0))


def check_box(served: list[Fraction], observed: list[Fraction], D: int) -> list[str]:
    """A flow's own jitter box: its sender sees a byte's ACK no earlier than the bottleneck
    served it and at most D steps later, in order (nothing to check without a box)."""
    out: list[str] = []
    if D == 0:
        return out
    for t in range(len(served)):
        if observed[t] > served[t]:
            out.append(f"step {t}: the box delivered ACKs for bytes not yet served "
                       f"({observed[t]} > S_f = {served[t]})")
        if t and observed[t] < observed[t - 1]:
            out.append(f"step {t}: the box's output decreased")
        if t >= D and observed[t] < served[t - D]:
            out.append(f"step {t}: the box held an ACK longer than D = {D} steps "
                       f"({observed[t]} < S_f[{t - D}] = {served[t - D]})")
    return out


def check_whole_packets(tr: Trace, alpha: Fraction) -> list[str]:
    """Whole-packet mode: every byte count of every flow in whole packets is a whole number of
    packets."""
    out = []
    for name in ("A_f", "S_f", "So_f", "L_f", "Ld_f", "Lnc_f"):
        series = tr.symbols.series.get(name)
        if series is None:
            continue
        for n, row in enumerate(series.values):
            if not tr.network.path(n).packets:
                continue
            for t, value in enumerate(row or []):
                if value is not None and (value / alpha).denominator != 1:
                    out.append(f"step {t}: flow {n}: {name} = {value} is not a whole number of "
                               f"packets of {alpha}")
    return out


def check_sender(A: list[Fraction], S: list[Fraction], L: list[Fraction], Ld: list[Fraction],
                 cwnd: list[Fraction], rate: list[Fraction] | None, timeout: list[bool],
                 dupacks: Fraction, R: int, rto: int, packet: Fraction | None = None,
                 oracle: bool = False, retransmissions: bool = False, opens: int | None = None) -> list[str]:
    """Loss detection, timeouts and ACK clocking of one sender. With ``packet`` (whole-packet
    mode) the sender sends whole packets and its window is at least one packet. With ``oracle``
    (CCmatic's loss oracle) the sender knows at each step from R on exactly the losses of R
    steps before, and never times out. With ``retransmissions`` the sender may have resent what
    it detected lost since step 0, duplicate ACKs need not reveal those resent bytes lost
    again, and those held in flight may keep it below its window. With ``opens`` (a cold start)
    the sender decides from that step on (before it, it sent nothing: :func:`check_start`)."""
    out: list[str] = []
    T = len(A)
    all_lost = []
    for t in range(T):
        if t < R:
            all_lost.append(False)
            if Ld[t] > L[0]:
                out.append(f"step {t}: detected a loss that had not happened by step 0")
            continue  # whether the unknown past timed out here is unknown too: any flag
        acked = S[t - R]
        nothing_outstanding_but_losses = (A[t - 1] == A[t - R] and acked == A[t - R] - L[t - R]
                                          and L[t - R] > Ld[t - 1])
        all_lost.append(nothing_outstanding_but_losses)
        if oracle:
            if Ld[t] != L[t - R]:
                out.append(f"step {t}: the loss oracle reports the losses of step {t - R} ({L[t - R]}), not {Ld[t]}")
            if timeout[t]:
                out.append(f"step {t}: a timeout under the loss oracle")
        else:
            out += _detected_by_acks(A, L, Ld, timeout, all_lost, acked, dupacks, t, R, rto, retransmissions)
        if opens is not None and t < opens:
            continue
        window = cwnd[t] if packet is None else max(cwnd[t], packet)
        most = _send_target(A, acked + Ld[t], window, rate, t, packet)
        # with retransmissions the ones still held in flight (at most the detections since
        # step 0, none without a loss since it) may hold the sender back (models/path_server.py, sender)
        held = Ld[t] - Ld[0] if retransmissions and L[t] > L[0] else 0
        least = _send_target(A, acked + Ld[t], window - held, rate, t, packet)
        if not least <= A[t] <= most:
            allowed = f"exactly {most}" if least == most else f"from {least} to {most}"
            out.append(f"step {t}: sent {A[t]} but cwnd/pacing allow {allowed}")
    return out


def _send_target(A: list[Fraction], released: Fraction, window: Fraction, rate: list[Fraction] | None, t: int,
                 packet: Fraction | None) -> Fraction:
    """What a sender with ``window`` bytes beyond the ``released`` ones (ACKed or detected lost)
    has sent by step t: never less than before, at most ``rate`` more when it paces, whole
    packets with ``packet``."""
    target = max(released + window, A[t - 1])
    target = target if rate is None else min(target, A[t - 1] + rate[t])
    return target if packet is None else packet * math.floor(target / packet)


def _detected_by_acks(A: list[Fraction], L: list[Fraction], Ld: list[Fraction], timeout: list[bool],
                      all_lost: list[bool], acked: Fraction, dupacks: Fraction, t: int, R: int, rto: int,
                      retransmissions: bool) -> list[str]:
    """Loss detection at step t (from R on) by duplicate ACKs and timeouts: what the ACKs of
    ``acked`` bytes reveal is detected, nothing more, unless a timeout (allowed only once every
    byte in flight is known lost, forced after ``rto`` such steps) detects everything. With
    ``retransmissions``, of the losses by a step s the ACKs reveal all but as many as the
    sender detected in steps 1 .. s (each detection resent once, and that resent copy lost
    again, which only a timeout reveals)."""
    out: list[str] = []
    if Ld[t] > L[t - R]:
        out.append(f"step {t}: detected losses the ACKs cannot have revealed yet")
    if timeout[t]:
        if not all_lost[t]:
            out.append(f"step {t}: timeout while bytes were still in flight")
        if Ld[t] != L[t - R]:
            out.append(f"step {t}: a timeout must detect every outstanding loss")
        return out
    if t - rto + 1 >= R and all(all_lost[t - rto + 1:t + 1]):
        out.append(f"step {t}: every byte in flight known lost for {rto} steps without a timeout")
    # A loss at step s is detectable once dupacks bytes admitted after it are acked.
    detectable = [L[s] - (Ld[s] - Ld[0] if retransmissions else 0)
                  for s in range(t - R + 1) if A[s] - L[s] + dupacks <= acked]
    hidden = [L[s] for s in range(t - R + 1) if A[s] - L[s] + dupacks > acked]
    if detectable and Ld[t] < max(detectable):
        out.append(f"step {t}: a detectable loss went undetected")
    if hidden and Ld[t] > max(min(hidden), Ld[t - 1]):
        out.append(f"step {t}: detected a loss before enough duplicate ACKs arrived")
    return out


def check_query(query: Query, trace: Trace, periodic_pairs: list[tuple[str, Any, Any]]) -> list[str]:
    out: list[str] = []
    symbols = trace.symbols.with_definitions(query.definitions)   # its own names, on any trace
    for i, text in enumerate(query.assume):
        if compile_condition(text, symbols, f"query.assume[{i}]") is not True:
            out.append(f"assumption {text!r} does not hold on the trace")
    if query.find is not None and compile_condition(query.find, symbols, "query.find") is not True:
        out.append(f"find condition {query.find!r} does not hold on the trace")
    if query.periodic:
        out += check_periodic(trace)
        out += [f"periodic: {label} changed from {start} to {end}"
                for label, start, end in periodic_pairs if start != end]
    return out


def check_periodic(tr: Trace) -> list[str]:
    """The model's steady-state boundary: queues and undetected losses end as they started."""
    net, last = tr.network, tr.T - 1
    out = []
    for n in range(net.flows):
        A, S, L, Ld = (tr.flow(x, n) for x in ("A_f", "S_f", "L_f", "Ld_f"))
        queue = [A[t] - L[t] - S[t] for t in (0, last)]
        undetected = [L[t] - Ld[t] for t in (0, last)]
        if queue[0] != queue[1]:
            out.append(f"periodic: queue of flow {n} changed from {queue[0]} to {queue[1]}")
        if undetected[0] != undetected[1]:
            out.append(f"periodic: undetected loss of flow {n} changed from {undetected[0]} to {undetected[1]}")
        in_box = [S[t] - observed_service(tr, n)[t] for t in (0, last)]
        if in_box[0] != in_box[1]:
            out.append(f"periodic: bytes in flow {n}'s box changed from {in_box[0]} to {in_box[1]}")
    W, A, L = tr.total("W"), tr.total("A"), tr.total("L")
    bottleneck = [A[t] - L[t] - (net.C * t - W[t]) for t in (0, last)]
    if bottleneck[0] != bottleneck[1]:
        out.append(f"periodic: bottleneck queue changed from {bottleneck[0]} to {bottleneck[1]}")
    return out
