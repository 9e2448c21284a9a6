"""Replay a sat finding in ns-3 with ns-3's own TCP (``ccac replay --engine ns3``), and write
the same run as a standalone script (``ccac export --format ns3``).

The packet replay (:mod:`ccac.testbed.replay`) runs ccac's own concrete senders; this module
asks a second, independent implementation: ns-3's TCP, on the trace's path built in ns-3
(:mod:`ccac.testbed.ns3_sim`, which imports ns-3 only when it runs, so no other command pays
its start-up of several seconds). Each flow whose CCA is ``aimd`` runs ``TcpLinuxReno`` with
classic recovery (:data:`ccac.testbed.ns3_stacks.AIMD_STACK`: one segment per window of ACKs, as
the thesis' AIMD grows), each ``bbr`` flow ``TcpBbr``, with ns-3's own parameters (not the
query's); a flow of a CCA file that models a real stack (``newreno``, ``cubic``, ``vegas``,
``bbr1``) runs that stack as the conformance harness does
(:data:`ccac.testbed.ns3_stacks.STACKS`: classic recovery, CUBIC without HyStart, ...). ns-3
has no Copa, Vivace, Allegro, Proteus, ETC or the other CCAs, and a trace with one of them is
refused.

**Units.** One step of the trace lasts ``step_ms`` (default: 40 ms / R, a minimum RTT of 40
ms), and one segment of :data:`MSS` = 1448 payload bytes is ``packet`` trace bytes (default:
the trace's MSS alpha), so the link's C trace bytes per step are C/packet segments per step.

**The bottleneck** is, by default, the trace's token bucket, as the packet replay's default
server (:func:`ccac.testbed.packet_path.token_bucket`): tokens arrive at C per step, the
bottleneck delivers a segment once its token line, as many steps behind as the trace's server
was (the lag, straight between steps), has reached it, and tokens are wasted only beyond the
queue and the margin the trace kept. For the trace's own arrivals this is the trace's
service; a sender that sends more is served more, up to the link's C. With ``fixed`` it is
the trace's fixed delivery schedule: step t offers floor(S[t]/packet) - floor(S[t-1]/packet)
segments (S: the trace's service curve, jitter and bursts included), spread evenly over the
step; an opportunity no segment waits for is lost. That is what ``ccac export --format
mahimahi`` gives mm-link and what ``ccac replay --schedule`` replays in packets; a sender is
never served more than the trace's sender got, so a finding of low utilization is capped by
the trace's own (the report prints the schedule's offer). Either way each segment is
delivered exactly when its server lets it go: the link's DataRate is set per segment, as it
starts its transmission, so that it ends then (:mod:`ccac.testbed.ns3_sim`; a DataRate per
step would need a rate of 0 in steps that serve nothing, and ns-3's ``TbfQueueDisc`` would
serve at C without the trace's lag).

**A connection's start.** A flow the trace starts cold (``start = "cold"``: its connection opens
at step ``opens``, nothing of it sent before) runs from a fresh ns-3 connection: its handshake is
done before step 0 (as every flow's, so that no queue delays it) and its first segment leaves a
hundredth of a step after step opens - 1 ends, so that it reaches the bottleneck in step opens;
its TCP is configured as a fresh connection of the CCA starts: its initial window and slow-start
threshold (ns-3's ``InitialCwnd`` and ``InitialSlowStartThreshold``) are the CCA's start state
(the window; its ``ssthresh`` if it has one, else the window, no slow start, as the thesis' AIMD
starts), and nothing of the trace is forced on it: from there ns-3's own TCP decides. Any other
flow starts as the trace's history cannot be replayed: its connection opens before step 0 and
sends its whole initial window, the trace's cwnd at step 0 (nearest segment), at once.

**Each flow's jitter box** holds the flow's ACKs as the trace's box did: a segment the bottleneck
serves in step s passes the box ``box_lags[s]`` steps later (the first d with So_f[s+d] >=
S_f[s], :func:`ccac.testbed.packet_path.box_lags`), and its ACK reaches the sender R steps after
that. ns-3 holds the segment on the flow's egress link (the receiver ACKs every segment at once,
so the sender sees its ACK exactly as late as if the ACK were held), in order: a segment never
passes one served before it. Exact at the step's grain for the trace's own service; two
approximations: every byte served in step s is held as long as the last byte the trace's box
let through from that step (the trace may release part of a step's bytes a step earlier), and
the hold is the trace's for that step whatever ns-3's sender sent (a sender that sends more or
less than the trace's has its service held as the trace's was). The run's So_f is what passed
the box.

What the run does NOT reproduce: the trace's history before step 0 for a flow that is not
cold, non-congestive losses, and the CCA's state variables (ns-3 does not report them:
conditions on them cannot be read).

**The buffer** is, on the token bucket, the model's, as the packet replay's
(:func:`ccac.testbed.packet_path.loss_cap`): a segment arriving in step t is admitted only while
the segments admitted stay within the buffer beyond the most step t's tokens reach (A - L <=
C t - W + buffer: the model's loss-forced threshold, however far the server trails its token
line) and, in a step where the trace lost bytes, within what the trace admitted then (how much a
step loses depends on how its arrivals and tokens interleave, which the trace chose); so a
sender that sends as the trace's loses as it did. A queue of fixed size cannot say this: the
queue disc behind the rule holds up to floor((buffer + the largest backlog of tokens the trace's
server held)/packet) packets (at least 3), and on the fixed schedule that fixed size is the
buffer (as for Mahimahi). **Delays**: each flow's
minimum RTT R_n steps. A periodic trace is run ``periods`` times and its conditions are read
on the last period, as the packet replay reads them (:func:`ccac.testbed.replay.read_conditions`).
Per step and flow the run gives the bytes sent to, dropped by and served by the bottleneck,
the bytes retransmitted (read as the losses the sender detected, at most those lost), RTOs
(timeouts), the window and the pacing rate, converted back to trace units.
"""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass, replace
from fractions import Fraction
from math import ceil, floor
from typing import Any

from ccac.core.errors import CcacError
from ccac.core.params import rounded_text
from ccac.encode.trace import Trace
from ccac.problems.query import Query
from ccac.problems.problem import start_values
from ccac.solving.validate import unrolled
from ccac.testbed import ns3_sim
from ccac.testbed.export import queue_bytes
from ccac.testbed.ns3_stacks import AIMD_STACK, STACKS, Stack, stack
from ccac.testbed.packet_path import FlowRun, box_lags, check_packet, delivery_schedule, loss_cap, token_bucket
from ccac.testbed.replay import MAX_PERIODS, Reading, departures, read_conditions, run_as_trace

MSS = 1448                 # real payload bytes of one segment
MIN_RTT_MS = 40            # the default real length of the trace's minimum RTT (R steps)
#: Each CCA ns-3 implements, and the stack that runs it: the thesis' cores (aimd on TcpLinuxReno with
#: classic recovery, bbr on TcpBbr) with ns-3's own parameters, the CCA files that model real stacks
#: configured as the conformance harness runs them
TCPS: dict[str, Stack] = {"aimd": AIMD_STACK, "bbr": stack("ns3::TcpBbr"), **STACKS}
PACED = {"ns3::TcpBbr"}    # the TCPs whose pacing rate is the flow's rate
MIN_QUEUE = 3              # packets ns-3's bottleneck holds at least: queue disc, device queue, wire
SOCKET_BDPS = 4            # socket buffers: this many times the most a flow can have in flight
MIN_SOCKET_BUFFER = 64 * 1024
NOT_INSTALLED = "ns-3 is not installed: pip install '.[ns3]'"
WHO = "the ns-3 TCP"


@dataclass
class Ns3Replay(Reading):
    """The ns-3 run of :func:`replay_ns3`, read with the query's vocabulary."""

    mapping: list[str]       # how the trace's units and path became ns-3's, one line each
    offered: Fraction | None  # the utilization the fixed schedule allows over the window read
                              # (None: the token bucket, which allows the link's capacity)


@dataclass
class Scenario:
    """A trace's path in ns-3 (``data``: the scenario :func:`ccac.testbed.ns3_sim.simulate`
    runs) and how its units map: ``trace`` is the trace run (a periodic one repeated)."""

    trace: Trace
    packet: Fraction       # trace bytes per segment
    step_ns: int           # one step
    data: dict[str, Any]


def tcp_variants(query: Query) -> list[Stack]:
    """Each flow's ns-3 TCP stack; a CCA ns-3 does not implement is bad input."""
    for n, flow in enumerate(query.flows):
        if flow.cca.name not in TCPS:
            raise CcacError(f"ns-3 has no implementation of {flow.cca.name} (flow {n}); the ns-3 engine replays "
                            f"{', '.join(f'{c} ({t.tcp[5:]})' for c, t in TCPS.items())} only: use the packet "
                            f"replay (the default engine)", "--engine")
    return [TCPS[flow.cca.name] for flow in query.flows]


def check_installed() -> None:
    """ns-3's Python bindings are importable (without importing them: that takes seconds)."""
    if importlib.util.find_spec("ns") is None:
        raise CcacError(NOT_INSTALLED)


def scenario(query: Query, trace: Trace, step_ms: float | None = None, packet: Fraction | None = None,
             periods: int = 3, fixed: bool = False) -> Scenario:
    """The ns-3 scenario of ``trace``'s path (module doc): a periodic trace repeated ``periods``
    times, one step of ``step_ms`` (default: 40 ms / R), segments of ``packet`` trace bytes,
    served by its token bucket or (``fixed``) its delivery schedule."""
    tcps = tcp_variants(query)
    if not 1 <= periods <= MAX_PERIODS:
        raise CcacError(f"periods must be 1 .. {MAX_PERIODS}, got {periods}", "--periods")
    net = trace.network
    step_ns = round((step_ms if step_ms is not None else MIN_RTT_MS / net.R) * 1_000_000)
    if not 1_000_000 <= step_ns <= 60_000_000_000:
        raise CcacError(f"the step length must be 1 .. 60000 ms, got {step_ns / 1e6:g}", "--step-ms")
    if trace.periodic:
        trace = replace(unrolled(query, trace, periods), periodic=False)
    p = check_packet(trace, packet)
    limit = queue_bytes(trace)
    queue = None if limit is None else max(floor(limit / p), MIN_QUEUE)
    most = max([net.C * max(net.path(n).R for n in range(net.flows)) + (limit or 0)]
               + [c for n in range(net.flows) for c in trace.flow("cwnd", n)])
    flows = [tcp.flow() | {"rtt_ns": net.path(n).R * step_ns} | _start(query, trace, n, p) | _box(trace, n)
             for n, tcp in enumerate(tcps)]
    data = {"step_ns": step_ns, "steps": trace.T, "segment": MSS,
            "server": {"opportunities": delivery_schedule(trace, p)} if fixed else _bucket(trace, p),
            "queue_packets": queue, "socket_buffer": socket_buffer(ceil(most / p)),
            "flows": flows}
    return Scenario(trace, p, step_ns, data)


def _start(query: Query, trace: Trace, n: int, packet: Fraction) -> dict[str, int]:
    """How flow n's connection starts: a cold flow's opens at its trace step (``open_step``) with
    its CCA's start state as the stack's initial window and slow-start threshold (ns-3's
    ``InitialCwnd`` and ``InitialSlowStartThreshold``, what a fresh connection is configured
    with: the CCA's ``ssthresh`` if it has one, else the window itself, no slow start, as the
    thesis' AIMD starts), or ns-3's own where the start state names no window; any other's
    before step 0, with the trace's window at step 0 (to the nearest segment, at least one) as
    its initial window, all of it sent at once."""
    opens = trace.network.path(n).opens
    if opens is None:
        return {"initial_cwnd": _segments(trace.flow("cwnd", n)[0], packet)}
    start = start_values(query, n)
    values = start[1] if start is not None else {}
    if "cwnd" not in values:
        return {"open_step": opens}
    window = _segments(values["cwnd"], packet)
    threshold = _segments(values["ssthresh"], packet) if "ssthresh" in values else window
    return {"open_step": opens, "initial_cwnd": window, "initial_ssthresh": min(threshold, MAX_SSTHRESH)}


MAX_SSTHRESH = 2 ** 31 // MSS
"""The largest initial slow-start threshold in segments ns-3's 32-bit byte count holds ("none")."""


def _segments(bytes_: Fraction, packet: Fraction) -> int:
    """A window in trace bytes to the nearest whole segment of ``packet`` bytes, at least one."""
    return max(floor(bytes_ / packet + Fraction(1, 2)), 1)


def _box(trace: Trace, n: int) -> dict[str, list[int]]:
    """Flow n's jitter box, if it has one: by service step, how many steps it holds the ACKs of
    what the bottleneck served then (:func:`ccac.testbed.packet_path.box_lags`)."""
    return {"hold": box_lags(trace, n)} if trace.network.path(n).D > 0 else {}


def socket_buffer(in_flight: int) -> int:
    """Each socket's send and receive buffer (bytes) for a flow that can have at most
    ``in_flight`` segments in flight: a few times that, so the buffers never limit the TCP
    but stay small enough for ns-3 to run fast."""
    return max(SOCKET_BDPS * in_flight * MSS, MIN_SOCKET_BUFFER)


def _bucket(trace: Trace, packet: Fraction) -> dict[str, Any]:
    """The trace's token bucket in segments of ``packet`` trace bytes, its token line (and what the
    trace admitted where it lost, ``cap``) counted from what the trace served at step 0 (ns-3's
    path starts empty), and its buffer."""
    bucket, served0, buffer = token_bucket(trace), trace.total("S")[0], trace.constant("buffer")
    return {"rate": float(trace.network.C / packet), "tokens": float((bucket.line[0] - served0) / packet),
            "lag": [float(d) for d in bucket.lag], "margin": [float(m / packet) for m in bucket.margin],
            "buffer": None if buffer is None else float(buffer / packet),
            "cap": [-1.0 if cap is None else float((cap - served0) / packet) for cap in loss_cap(trace)]}


def describe(query: Query, sc: Scenario) -> list[str]:
    """The unit mapping and the path, one line each (what the report and the script state)."""
    net, data = sc.trace.network, sc.data
    ms = sc.step_ns / 1e6
    rate = float(net.C / sc.packet) * MSS * 8 / (sc.step_ns / 1e9) / 1e6
    queue, server = data["queue_packets"], data["server"]
    if "opportunities" in server:
        bottleneck = (f"the trace's delivery schedule ({sum(server['opportunities'][1:])} segments in "
                      f"{sc.trace.T - 1} steps)")
    else:
        lag = max(server["lag"])
        bottleneck = (f"the trace's token bucket (tokens at C per step, up to the link's capacity; service up to "
                      f"{lag:.3g} step{'s' * (lag != 1)} behind the token line, as the trace's server was)")
    lines = [f"one step = {ms:g} ms (minimum RTT R = {net.R} step{'s' * (net.R != 1)} = {net.R * ms:g} ms); "
             f"one segment of {MSS} "
             f"bytes = {rounded_text(sc.packet)} trace bytes; link C = {rounded_text(net.C / sc.packet)} segments "
             f"per step = {rate:.3g} Mbit/s",
             f"bottleneck: {bottleneck}, " + _buffer_text(server, queue)]
    for n, (flow, spec) in enumerate(zip(query.flows, data["flows"])):
        changed = {p.name: flow.params[p.name] for p in flow.cca.params if flow.params.get(p.name) != p.default}
        settings = [f"recovery {spec['recovery'][5:]}"] + [f"{k} = {v}" for k, v in spec["attributes"].items()]
        start = (f"initial window {spec['initial_cwnd']} segments" if "initial_cwnd" in spec
                 else "ns-3's own initial window")
        if "open_step" in spec:
            start = (f"connection opens at step {spec['open_step']} with {start}"
                     + (f" and slow-start threshold {spec['initial_ssthresh']} segments (its CCA's start state)"
                        if "initial_ssthresh" in spec else ""))
        held = max(spec.get("hold", [0]))
        lines.append(f"flow {n}: {spec['tcp']} ({', '.join(settings)}; ns-3's defaults otherwise"
                     + (f", not the query's {', '.join(f'{k}={rounded_text(v)}' for k, v in changed.items())}"
                        + (" beyond its start state" if "open_step" in spec and "initial_cwnd" in spec else "")
                        if changed else "")
                     + f"), minimum RTT {spec['rtt_ns'] / 1e6:g} ms, {start}"
                     + (f", ACKs held by its jitter box as the trace's were (up to {held} step{'s' * (held != 1)})"
                        if "hold" in spec else ""))
    return lines


def _buffer_text(server: dict[str, Any], queue: int | None) -> str:
    """The bottleneck's buffer, as :func:`describe` states it."""
    if queue is None:
        return "a queue of unbounded size"
    if server.get("buffer") is None:
        return f"drop-tail queue of {queue} packets"
    return (f"the model's buffer of {server['buffer']:.4g} segments beyond the token line (the trace's losses "
            f"where it lost), in a queue of up to {queue} packets")


def replay_ns3(query: Query, trace: Trace, step_ms: float | None = None, packet: Fraction | None = None,
               periods: int = 3, fixed: bool = False) -> Ns3Replay:
    """Run ``trace``'s path in ns-3 with ns-3's TCP and read the query's find and assumptions
    on the run (module doc); ``fixed``: serve the trace's delivery schedule, not its token bucket."""
    sc = scenario(query, trace, step_ms, packet, periods, fixed)
    check_installed()
    samples, line = ns3_sim.simulate(sc.data)
    flows = [flow_run(sample, sc.packet, sc.step_ns, spec["tcp"] in PACED)
             for sample, spec in zip(samples, sc.data["flows"])]
    tokens = [Fraction(segments) * sc.packet for segments in line]
    concrete = run_as_trace(query, sc.trace, flows, tokens, WHO)
    find, assume, window = read_conditions(query, trace, concrete, periods)
    first, last = window
    steps = last - first
    notes = departures(sc.trace, concrete, sc.packet, WHO) + _not_reproduced(sc)
    senders = [f"ns-3 {spec['tcp'][5:]}" + _opening(sample, spec) for sample, spec in zip(samples, sc.data["flows"])]
    return Ns3Replay(query, sc.trace, concrete, senders, find, assume, window, notes, describe(query, sc),
                     (tokens[last] - tokens[first]) / (trace.network.C * max(steps, 1)) if fixed else None)


def _opening(sample: dict[str, list[int]], spec: dict[str, Any]) -> str:
    """When a cold flow's connection opened in the ns-3 run: the trace's opening step, the step
    its first segment reached the bottleneck, and ns-3's initial window (its window the step
    before, the handshake done and nothing sent); empty for a flow that starts before step 0."""
    if "open_step" not in spec:
        return ""
    opens = spec["open_step"]
    first = next((t for t, sent in enumerate(sample["sent"]) if sent > 0), None)
    return (f": connection opened at step {opens} (the trace's opening), "
            + (f"its first segment sent at step {first}" if first is not None else "nothing sent in the run")
            + f", initial window {sample['cwnd'][opens - 1] / MSS:g} segments")


def flow_run(sample: dict[str, list[int]], packet: Fraction, step_ns: int, paced: bool) -> FlowRun:
    """One flow's ns-3 samples (:func:`ccac.testbed.ns3_sim.simulate`) as the model's curves, in
    bytes of which one segment is ``packet``: bytes that reached the bottleneck (A), that it
    served (S) and dropped (L), that its flow's jitter box let through (So: the bytes whose ACKs
    the sender sees R steps later; S without a box), retransmitted bytes as the losses the sender detected (Ld, at
    most those lost), its window, its pacing rate (bytes per step of ``step_ns``; None for a
    TCP that does not pace) and the steps at which a retransmission timeout fired."""
    def units(name: str) -> list[Fraction]:
        return [Fraction(b, MSS) * packet for b in sample[name]]

    T = len(sample["sent"])
    sent, served, lost, resent = units("sent"), units("served"), units("lost"), units("resent")
    per_step = Fraction(step_ns, 8 * 10**9 * MSS) * packet  # bytes per step of 1 bit/s
    rate: list[Fraction | None] = [bps * per_step if paced else None for bps in sample["pacing"]]
    timeouts = sample["timeouts"]
    return FlowRun(A=sent, S=served, So=units("released"), L=lost, Lnc=[Fraction(0)] * T,
                   Ld=[min(r, dropped) for r, dropped in zip(resent, lost)], cwnd=units("cwnd"), rate=rate,
                   timeout=[t > 0 and timeouts[t] > timeouts[t - 1] for t in range(T)], state=[{}] * T)


def _not_reproduced(sc: Scenario) -> list[str]:
    """What of this trace's path the ns-3 run does not have."""
    net, notes = sc.trace.network, []
    if net.lossy:
        notes.append("the trace's non-congestive losses are not in ns-3")
    limit = queue_bytes(sc.trace)
    if limit is not None and floor(limit / sc.packet) < MIN_QUEUE:
        notes.append(f"the buffer holds {floor(limit / sc.packet)} packets; ns-3's bottleneck holds {MIN_QUEUE}")
    return notes


def script(query: Query, trace: Trace, step_ms: float | None = None, packet: Fraction | None = None,
           periods: int = 3) -> str:
    """A standalone Python script (ns-3's bindings only, no ccac) that runs ``trace``'s path,
    served by its token bucket as :func:`replay_ns3` is by default, with ns-3's TCP and prints
    what each flow sent, lost and got per step."""
    sc = scenario(query, trace, step_ms, packet, periods)
    header = "\n".join(f"# {line}" for line in describe(query, sc))
    source = inspect.getsource(ns3_sim)
    values = "".join(f"    {key!r}: {value!r},\n" for key, value in sc.data.items())
    return (f"#!/usr/bin/env python3\n# The path of ccac's counterexample {query.name}, replayed in ns-3 with ns-3's "
            f"TCP\n# (written by `ccac export --format ns3`; needs `pip install \"ns3>=3.44,<3.45\"`).\n{header}\n"
            f"# Run it: python THIS_FILE\n\n{source}\n\n"
            "# The scenario (see the docstring above): 'server' is the trace's token bucket at the bottleneck,\n"
            "# in segments and steps.\n"
            f"SCENARIO = {{\n{values}}}\n\n"
            "if __name__ == \"__main__\":\n    main(SCENARIO)\n")
