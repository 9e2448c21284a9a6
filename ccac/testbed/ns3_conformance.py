"""Does a CCA's encoding admit the runs of the real implementation? ns-3's TCP on random paths
of the model, each run pinned into the encoding (the superset property against a reference).

A CCA in ccac claims that its encoding admits every run of the algorithm on every path of the
model. This module asks that of ns-3's own TCP (``ns3::TcpNewReno``, ``ns3::TcpBbr``, ...):

1. :func:`random_path` draws a path the model admits, in whole packets: a link of C packets per
   step, a minimum RTT of R steps, jitter up to D steps, a drop-tail buffer, and a token-bucket
   server (:mod:`ccac.testbed.ns3_sim`) whose service trails its token line by a random lag of
   0 .. D steps at each step (the model's C*t - W[t] - C*D <= S[t] <= C*t - W[t]) and wastes
   tokens only when its queue is empty.
2. :func:`run_tcp` runs ns-3's TCP on it and reads, at the step boundaries, the model's curves
   of the one flow in bytes (C = 1 byte per step, one packet of alpha = 1/C_packets bytes):
   A (bytes that reached the bottleneck, retransmissions included), S (served), L (dropped),
   Ld (the losses the sender has detected: the segments its scoreboard has ever marked lost,
   :func:`detected`), W (tokens wasted: C*t less the
   server's token line), timeouts, and the TCP's window and pacing rate.
3. :func:`admission` builds the query of the same network (whole packets) with the CCA under
   test, pins the run's model curves (and with ``pin_cwnd`` the window), and answers whether
   the encoding admits it, naming the pinned values an unsat core rejects.
4. :func:`path_admitted` checks the harness itself: the run's path curves alone (A, S, L, W),
   pinned with the CCA ``any`` (any window, any rate), must be a run of the model: a harness
   that mis-sampled its path would make every encoding look wrong.

**The network the query states.** ns-3's bottleneck holds ``queue`` packets in all (its queue
disc, the device's queue and the segment on the wire), whether they wait for tokens or for the
jitter's lag; the model's buffer counts only the bytes beyond the token line. So the query's
buffer (the loss-forced threshold) is ``queue`` packets, and its loss-allowed threshold
``buffer_min`` is ``queue`` less the most the lag can hold back (C*D packets) and the packet
on the wire. Losses are detected after 3 packets are ACKed beyond them (``dupacks = 3``, ns-3's
duplicate-ACK threshold); ns-3's retransmission timer (at least 1 s) outlasts every run, so
the query never forces a timeout (``rto`` = T).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import z3

from ccac.problems.query import Query, parse_query
from ccac.solving.solve import Pipeline
from ccac.testbed import ns3_sim
from ccac.testbed.ns3_replay import MIN_QUEUE, MIN_RTT_MS, MSS, PACED, flow_run, socket_buffer

DUPACKS = 3          # ns-3's duplicate-ACK threshold (segments)
NO_SSTHRESH = 10_000  # packets: a slow-start threshold no run reaches
SOLVE_SECONDS = 60.0  # the most one admission check may take


@dataclass(frozen=True)
class ModelPath:
    """One path of the model in whole packets: the link serves ``per_step`` packets per step
    (the model's C), the minimum RTT is ``R`` steps, the server's service trails its token line
    by ``lag[t]`` steps at step t (at most the jitter bound ``D``), the bottleneck holds
    ``queue`` packets in all, the server holds ``tokens`` packets' worth of tokens at step 0,
    and the TCP starts with a window of ``initial_cwnd`` packets, sent before step 0, and a
    slow-start threshold of ``initial_ssthresh`` packets."""

    T: int
    R: int
    D: int
    per_step: int
    queue: int
    tokens: int
    lag: tuple[Fraction, ...]
    initial_cwnd: int
    initial_ssthresh: int

    @property
    def alpha(self) -> Fraction:
        """One packet in the model's bytes (the link serves C = 1 byte per step)."""
        return Fraction(1, self.per_step)

    @property
    def buffer_min(self) -> int:
        """The loss-allowed threshold in packets: the queue less what the lag can hold back
        (C*D packets) and the packet on the wire. It may be below the tightest threshold, never
        above it: a lower loss-allowed threshold only lets the model drop at more queue levels,
        so every drop ns-3's queue makes is among the model's (a wider class of paths)."""
        return max(self.queue - self.per_step * self.D - 1, 0)


def random_path(rng: random.Random, T: int = 15) -> ModelPath:
    """A random path of ``T`` steps (module doc): R 1..2, D 0..2, 2..5 packets per step, a
    queue of 3 .. 2 BDP + 3 packets, a lag of 0 .. D steps in quarter steps at each step, and
    up to C*D tokens held at step 0 (no more than the queue and the TCP's initial window of
    1..10 packets hold: tokens beyond the packets are wasted, not held);
    half the TCPs start in slow start (a threshold of :data:`NO_SSTHRESH` packets), half in
    congestion avoidance."""
    R, D, per_step = rng.randint(1, 2), rng.randint(0, 2), rng.randint(2, 5)
    initial_cwnd = rng.randint(1, 10)
    ssthresh = rng.choice([initial_cwnd, NO_SSTHRESH])
    queue = rng.randint(MIN_QUEUE, 2 * per_step * R + MIN_QUEUE)
    return ModelPath(T=T, R=R, D=D, per_step=per_step, queue=queue,
                     tokens=rng.randint(0, min(per_step * D, initial_cwnd, queue)),
                     lag=tuple(Fraction(rng.randint(0, 4 * D), 4) for _ in range(T)), initial_cwnd=initial_cwnd,
                     initial_ssthresh=ssthresh)


def network(path: ModelPath) -> dict[str, Any]:
    """The query's ``[network]`` for ``path`` (module doc): whole packets, buffers in BDP."""
    bdp = path.per_step * path.R  # packets
    return {"T": path.T, "R": path.R, "D": path.D, "C": 1, "packets": True, "bdp_packets": bdp,
            "buffer": Fraction(path.queue, bdp), "buffer_min": Fraction(path.buffer_min, bdp),
            "dupacks": DUPACKS, "rto": path.T}


def step_ns(path: ModelPath) -> int:
    """How long one step lasts in ns-3: a minimum RTT of :data:`MIN_RTT_MS`."""
    return MIN_RTT_MS * 1_000_000 // path.R


def scenario(path: ModelPath, tcp: str) -> dict[str, Any]:
    """The scenario :func:`ccac.testbed.ns3_sim.simulate` runs for one ``tcp`` flow on ``path``:
    the token bucket wastes tokens only beyond the segments queued (no margin)."""
    server = {"rate": float(path.per_step), "tokens": float(path.tokens),
              "lag": [float(x) for x in path.lag], "margin": [0.0] * path.T}
    most = path.per_step * path.R + path.queue  # segments: a BDP and a full queue
    return {"step_ns": step_ns(path), "steps": path.T, "segment": MSS, "server": server,
            "queue_packets": path.queue, "socket_buffer": socket_buffer(most),
            "flows": [{"tcp": tcp, "rtt_ns": path.R * step_ns(path), "initial_cwnd": path.initial_cwnd,
                       "initial_ssthresh": path.initial_ssthresh}]}


@dataclass
class TcpRun:
    """One flow's ns-3 run on ``path`` as the model's curves, by step, in the model's bytes
    (module doc); ``rate`` is None for a TCP that does not pace."""

    path: ModelPath
    tcp: str
    A: list[Fraction]
    S: list[Fraction]
    L: list[Fraction]
    Ld: list[Fraction | None]  # None before step R: the history's, not read
    W: list[Fraction]
    timeout: list[bool]
    cwnd: list[Fraction]
    rate: list[Fraction] | None

    def describe(self) -> str:
        """The run's curves in packets, one line."""
        packets = lambda xs: [x / self.path.alpha if x is not None else None for x in xs]  # noqa: E731
        text = " ".join(f"{name}={[f'{float(x):g}' if x is not None else '-' for x in packets(getattr(self, name))]}"
                        for name in ("A", "S", "L", "Ld", "W", "cwnd"))
        return f"{self.tcp[5:]} in packets: {text} timeouts at {[t for t, x in enumerate(self.timeout) if x]}"


def run_tcp(path: ModelPath, tcp: str) -> TcpRun:
    """Run ns-3's ``tcp`` on ``path`` and read the model's curves off the samples, their byte
    axes starting where the model's do (:func:`rebased`)."""
    samples, line = ns3_sim.simulate(scenario(path, tcp))
    flow = flow_run(samples[0], path.alpha, step_ns(path), tcp in PACED)
    tokens = [Fraction(x).limit_denominator(1_000_000) * path.alpha for x in line]
    rate = [r for r in flow.rate if r is not None] if tcp in PACED else None
    marked = [Fraction(b, MSS) * path.alpha for b in samples[0]["marked"]]
    return rebased(TcpRun(path, tcp, flow.A, flow.S, flow.L, detected(marked, path.R),
                          [t - x for t, x in enumerate(tokens)], flow.timeout, flow.cwnd, rate))


def detected(marked: list[Fraction], R: int) -> list[Fraction | None]:
    """The losses a TCP sender has detected by each step t >= R: the bytes of the segments its
    scoreboard has marked lost by then (``marked``, :mod:`ccac.testbed.ns3_sim`), each counted
    once, whether it has since been retransmitted, SACKed or ACKed. Not what it sent less what
    the ACKs covered and its bytes in flight: ns-3's pipe keeps counting a retransmission once it
    is SACKed (its retransmitted mark stays until the cumulative ACK passes it, where its lost
    mark goes), so that difference falls back while such a segment waits. Before step R: None
    (history)."""
    return [x if t >= R else None for t, x in enumerate(marked)]


def rebased(run: TcpRun) -> TcpRun:
    """``run`` with its byte axes at the model's origin, S[0] = L[0] = 0: the service axis (S,
    A, the token line C*t - W) moved down by what was served before step 0, the loss axis (L,
    Ld, A) by what was lost before it (the initial window's drops). The model's rules are
    invariant under both shifts (``models/path_server.py``, ``monotone``); Ld below 0 means
    losses from before step 0 still undetected."""
    served, lost = run.S[0], run.L[0]
    return replace(run, A=[a - served - lost for a in run.A], S=[s - served for s in run.S],
                   L=[x - lost for x in run.L], Ld=[x - lost if x is not None else None for x in run.Ld],
                   W=[w + served for w in run.W])


def query(path: ModelPath, cca: str | Path) -> Query:
    """The query of ``path``'s network with one flow of ``cca``: a CCA's name, or the path of a
    CCA file in the CCA language."""
    table = {"file": str(cca)} if isinstance(cca, Path) else {"name": cca}
    return parse_query({"network": network(path), "cca": table}, name=f"ns3-conformance-{table}")


@dataclass
class Admission:
    """Whether an encoding admits a run: ``admitted`` (None: the solver gave no answer), and
    on rejection the pinned values an unsat core names, first steps first."""

    admitted: bool | None
    culprits: list[str] = field(default_factory=list)


PATH_CURVES = ("A", "S", "L", "W")
MODEL_CURVES = PATH_CURVES + ("timeout",)
DETECTED = MODEL_CURVES + ("Ld",)


def admission(run: TcpRun, cca: str | Path, pin_cwnd: bool = False, curves: tuple[str, ...] = MODEL_CURVES,
              timeout: float = SOLVE_SECONDS) -> Admission:
    """Whether the encoding of ``cca`` on the run's network admits ``run`` with its ``curves``
    pinned at every step (and, with ``pin_cwnd``, its window from step R on, where the CCA
    decides): the superset property on one run of the real implementation."""
    pipeline = Pipeline(query(run.path, cca))
    problem = pipeline.build()
    pins = pinned(problem.vars, run, curves + (("cwnd",) if pin_cwnd else ()))
    outcome = pipeline.answer(timeout, [fact for fact, _ in pins])
    if outcome.answer != "unsat":
        return Admission(True if outcome.answer == "sat" else None)
    core = pipeline.culprits([fact for fact, _ in pins], timeout) or []
    return Admission(False, [pins[i][1] for i in core])


def path_admitted(run: TcpRun, timeout: float = SOLVE_SECONDS) -> Admission:
    """The harness's own check: the run's path curves (A, S, L, W) are a run of the model, any
    sender (the CCA ``any``) being free to explain them."""
    return admission(run, "any", curves=PATH_CURVES, timeout=timeout)


def pinned(v: Any, run: TcpRun, curves: tuple[str, ...]) -> list[tuple[z3.BoolRef, str]]:
    """Facts fixing the model variables ``v`` of flow 0 to ``run``'s ``curves``, each with its
    name and value (packets for byte curves): every step, but a window only from step R on
    (before it the window is the run's history, not the CCA's decision; so is Ld, which the
    run does not read there)."""
    terms: dict[str, Callable[[int], Any]] = {
        "A": lambda t: v.A_f[0][t], "S": lambda t: v.S_f[0][t], "L": lambda t: v.L_f[0][t],
        "Ld": lambda t: v.Ld_f[0][t], "W": lambda t: v.W[t], "timeout": lambda t: v.timeout[0][t],
        "cwnd": lambda t: v.cwnd[0][t]}
    facts = []
    for name in curves:
        values = getattr(run, name)
        for t in range(run.path.R if name == "cwnd" else 0, run.path.T):
            term, value = terms[name](t), values[t]
            if value is None:
                continue
            if isinstance(value, bool):
                facts.append((term == value, f"{name}[{t}] = {value}"))
            else:
                shown = value if name == "W" else value / run.path.alpha
                facts.append((term == value, f"{name}[{t}] = {float(shown):g}" + (" packets" if name != "W" else "")))
    return facts


#: the readings :func:`measure` counts, each (what is pinned, the CCA it is pinned into: None for
#: the CCA under test)
READINGS: dict[str, tuple[tuple[str, ...], str | None, bool]] = {
    "path": (PATH_CURVES, "any", False),         # the harness: the path's curves, any sender
    "sender": (MODEL_CURVES, "any", False),      # the model's ACK-clocked sender, any window
    "sender+Ld": (DETECTED, "any", False),       # ... and its loss detection, as the TCP detects
    "cca": (MODEL_CURVES, None, False),          # the CCA's encoding
    "cca+Ld": (DETECTED, None, False),
    "cca+cwnd": (MODEL_CURVES, None, True),
}


def measure(cca: str | Path, tcp: str, paths: int, seed: int = 0, T: int = 15,
            report: Callable[[int, TcpRun, dict[str, Admission]], None] | None = None) -> dict[str, int]:
    """How many of ``paths`` random paths (:func:`random_path`, seeded) give a run of ns-3's
    ``tcp`` that each reading of :data:`READINGS` admits, with ``cca`` as the CCA under test;
    ``report`` sees each run and its answers."""
    rng = random.Random(seed)
    counts = dict.fromkeys(READINGS, 0)
    for i in range(paths):
        run = run_tcp(random_path(rng, T), tcp)
        answers = {name: admission(run, cca if who is None else who, pin_cwnd, curves)
                   for name, (curves, who, pin_cwnd) in READINGS.items()}
        for name, answer in answers.items():
            counts[name] += answer.admitted is True
        if report is not None:
            report(i, run, answers)
    return counts


def main(argv: list[str]) -> None:
    """``python -m ccac.testbed.ns3_conformance CCA TCP PATHS [SEED]``: :func:`measure`, one
    line per rejected run (its first culprits) and the counts."""
    cca, tcp, paths = argv[0], argv[1], int(argv[2])
    seed = int(argv[3]) if len(argv) > 3 else 0

    def show(i: int, run: TcpRun, answers: dict[str, Admission]) -> None:
        rejected = {name: a.culprits[:4] for name, a in answers.items() if a.admitted is not True}
        print(f"path {i}: {run.path.per_step} packets/step, R={run.path.R}, D={run.path.D}, queue {run.path.queue}, "
              f"{run.L[-1] / run.path.alpha} packets lost; rejected by {rejected or 'none'}", flush=True)

    counts = measure(Path(cca) if cca.endswith(".toml") else cca, tcp, paths, seed, report=show)
    print(f"{cca} against {tcp} on {paths} random paths (seed {seed}): "
          + ", ".join(f"{name} admits {n}" for name, n in counts.items()))


if __name__ == "__main__":
    import sys

    with ns3_sim.quiet_stderr():
        ns3_sim.load_ns3()
    main(sys.argv[1:])
