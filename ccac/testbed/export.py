"""Take a counterexample to a testbed: Mahimahi's mm-link/mm-delay, or a CSV schedule.

The exported path is the packet path of :mod:`ccac.testbed.packet_path`, in real units: one step lasts
``step_ms`` milliseconds and a packet of ``packet`` trace bytes (the trace's MSS alpha by
default) is one 1500-byte packet (mm-link's delivery opportunity is always 1500 bytes), so
the link rate is C/packet packets per step.

``mahimahi`` writes (see docs/replay.md):

* ``uplink.trace``: mm-link's delivery opportunities, one line per 1500-byte packet, each the
  millisecond it may leave. The opportunities of step t (floor(S[t]/packet) - floor(S[t-1]/packet):
  the trace's service curve, jitter and bursts included) are spread evenly over the step's
  interval ((t-1)*step_ms, t*step_ms]. mm-link repeats the file when it ends: for a periodic
  trace that is the run it claims; otherwise the path after the trace is a repetition.
* ``downlink.trace``: the ACK path, fast enough never to queue (the model's ACKs only wait in
  the flows' jitter boxes, which mm-link cannot express: their holding is not exported).
* ``command.sh``: the mm-delay / mm-loss / mm-link command line: one-way delay R*step_ms/2
  (the minimum RTT), non-congestive loss rate eta, and a drop-tail queue of the buffer plus
  the largest backlog of tokens the trace's server held (the model drops only beyond the token
  line plus the buffer; mm-link's queue also holds what the server delays).

``csv`` writes ``schedule.csv`` (one row per delivery opportunity: step and millisecond) and
``packets.csv`` (the trace's own decisions replayed packet by packet on that schedule: each
packet's flow, number, the milliseconds it was sent, served and ACKed, and whether it was
dropped), for ns-3 or other simulators.
"""

from __future__ import annotations

import csv
import json
from fractions import Fraction
from math import ceil, floor
from pathlib import Path

from ccac.core.errors import CcacError
from ccac.testbed.packet_path import PacketPath, TraceFlow, check_packet, delivery_schedule, run_packets
from ccac.senders.interface import ConcreteSender, Scripted
from ccac.encode.trace import Trace

FORMATS = ("mahimahi", "csv")
MTU = 1500  # bytes one mm-link delivery opportunity carries
MAX_STEP_MS = 60_000
ACK_OPPORTUNITIES_PER_MS = 100  # the exported ACK path: far above any trace's ACK rate


def schedule(trace: Trace, packet: Fraction | None = None) -> tuple[Fraction, list[int]]:
    """The packet size, and the delivery opportunities of each step: the packets the trace's
    service curve completes in it."""
    p = check_packet(trace, packet)
    return p, delivery_schedule(trace, p)


def spread(opportunities: list[int], step_ms: int) -> list[int]:
    """The millisecond of every delivery opportunity: step t's evenly over ((t-1), t] * step_ms."""
    times: list[int] = []
    for t, count in enumerate(opportunities):
        start = (t - 1) * step_ms
        times += [max(start + ceil(Fraction((k + 1) * step_ms, count)), 0) for k in range(count)]
    return times


def steps_of(times: list[int], step_ms: int, T: int) -> list[int]:
    """Opportunities per step, read back from millisecond times (the inverse of :func:`spread`)."""
    counts = [0] * T
    for ms in times:
        counts[max(ceil(Fraction(ms, step_ms)), 0)] += 1
    return counts


def queue_bytes(trace: Trace) -> Fraction | None:
    """The drop-tail queue a testbed needs for the trace's buffer (None: unbounded): the buffer
    plus the largest backlog of tokens the trace's server held (the model drops only beyond
    the token line plus the buffer; a testbed's queue also holds what the server delays)."""
    buffer = trace.constant("buffer")
    if buffer is None:
        return None
    W, S = trace.total("W"), trace.total("S")
    return buffer + max(trace.network.C * t - W[t] - S[t] for t in range(trace.T))


def check_step(step_ms: int) -> None:
    if not 1 <= step_ms <= MAX_STEP_MS:
        raise CcacError(f"the step length must be 1 .. {MAX_STEP_MS} ms, got {step_ms}", "--step-ms")


def mahimahi(trace: Trace, out: Path, step_ms: int, packet: Fraction | None = None) -> list[Path]:
    """Write the Mahimahi files for ``trace`` into ``out`` (see the module doc)."""
    check_step(step_ms)
    p, opportunities = schedule(trace, packet)
    out.mkdir(parents=True, exist_ok=True)
    uplink = out / "uplink.trace"
    uplink.write_text("".join(f"{ms}\n" for ms in spread(opportunities, step_ms)) or "1\n")
    downlink = out / "downlink.trace"
    downlink.write_text("1\n" * ACK_OPPORTUNITIES_PER_MS)
    net = trace.network
    limit = queue_bytes(trace)
    queue = None if limit is None else floor(limit / p) * MTU
    rtt_ms = net.R * step_ms
    settings = {
        "step_ms": step_ms, "mtu": MTU, "packet_trace_bytes": str(p),
        "link_packets_per_step": str(net.C / p), "min_rtt_ms": rtt_ms,
        "one_way_delay_ms": rtt_ms // 2, "droptail_queue_bytes": queue,
        "loss_rate": str(net.eta), "steps": trace.T, "periodic": trace.periodic,
        "not_exported": [f"flow {n}'s jitter box (D = {net.path(n).D})" for n in range(net.flows)
                         if net.path(n).D > 0] + [f"flow {n}'s own minimum RTT (R = {net.path(n).R})"
                                                  for n in range(net.flows) if net.path(n).R != net.R],
    }
    (out / "path.json").write_text(json.dumps(settings, indent=1))
    shell = ["mm-delay", str(rtt_ms // 2)]
    if net.eta > 0:
        shell += ["mm-loss", "uplink", f"{float(net.eta):g}"]
    shell += ["mm-link", "uplink.trace", "downlink.trace"]
    if queue is not None:
        shell += ["--uplink-queue=droptail", f"--uplink-queue-args=bytes={queue}"]
    script = out / "command.sh"
    script.write_text("#!/bin/sh\n# Run a sender (e.g. iperf3 -c $MAHIMAHI_BASE) on the path of this trace:\n"
                      f"# one step = {step_ms} ms, one packet = {MTU} bytes, minimum RTT {rtt_ms} ms"
                      + (" (odd: mm-delay rounds the one-way delay down)" if rtt_ms % 2 else "") + "\n"
                      f"cd \"$(dirname \"$0\")\" && exec {' '.join(shell)} -- \"$@\"\n")
    script.chmod(0o755)
    return [uplink, downlink, out / "path.json", script]


def csv_schedule(trace: Trace, out: Path, step_ms: int, packet: Fraction | None = None) -> list[Path]:
    """Write ``schedule.csv`` and ``packets.csv`` for ``trace`` into ``out`` (module doc)."""
    check_step(step_ms)
    p, opportunities = schedule(trace, packet)
    out.mkdir(parents=True, exist_ok=True)
    table = out / "schedule.csv"
    with open(table, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["opportunity", "step", "ms"])
        k = 0
        for ms in spread(opportunities, step_ms):
            writer.writerow([k, max(ceil(Fraction(ms, step_ms)), 0), ms])
            k += 1
    senders: list[ConcreteSender] = [Scripted(trace.flow("cwnd", n), trace.flow("rate", n)) for n in range(trace.flows)]
    histories = [TraceFlow.of(trace, n) for n in range(trace.flows)]
    run = run_packets(PacketPath.from_trace(trace, p, fixed=True), senders, histories)
    packets = out / "packets.csv"
    with open(packets, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["flow", "packet", "sent_ms", "served_ms", "ack_ms", "dropped"])
        as_ms = lambda x: "" if x is None else f"{float(x * step_ms):g}"  # noqa: E731
        for pkt in run.packets:
            writer.writerow([pkt.flow, pkt.seq, as_ms(pkt.born), as_ms(pkt.served), as_ms(pkt.ack), pkt.dropped or ""])
    return [table, packets]
