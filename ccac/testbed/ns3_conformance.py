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
the query never forces a timeout (``rto`` = T). A retransmission the sender loses again is not
revealed by duplicate ACKs (RFC 6675 marks a segment lost once; ns-3 has no RACK), so the query
sets ``retransmissions = true``; each run starts with the connection, outside loss recovery,
which that rule assumes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import z3

from ccac.core.errors import CcacError
from ccac.problems.query import Query, parse_query
from ccac.solving.solve import Pipeline
from ccac.testbed import ns3_sim
from ccac.testbed.ns3_replay import MIN_QUEUE, MIN_RTT_MS, MSS, PACED, flow_run, socket_buffer
from ccac.testbed.ns3_stacks import DEFAULT_STREAM, Stack, stack

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
    slow-start threshold of ``initial_ssthresh`` packets; a stack that draws a random number
    (TcpBbr's first ProbeBW phase) draws it from ns-3's stream ``stream``."""

    T: int
    R: int
    D: int
    per_step: int
    queue: int
    tokens: int
    lag: tuple[Fraction, ...]
    initial_cwnd: int
    initial_ssthresh: int
    stream: int = DEFAULT_STREAM  # ns-3's random-number stream for TcpBbr's ProbeBW phase

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
    """The query's ``[network]`` for ``path`` (module doc): whole packets, buffers in BDP, lost
    retransmissions revealed by timeouts only."""
    bdp = path.per_step * path.R  # packets
    return {"T": path.T, "R": path.R, "D": path.D, "C": 1, "packets": True, "bdp_packets": bdp,
            "buffer": Fraction(path.queue, bdp), "buffer_min": Fraction(path.buffer_min, bdp),
            "dupacks": DUPACKS, "rto": path.T, "retransmissions": True}


def step_ns(path: ModelPath) -> int:
    """How long one step lasts in ns-3: a minimum RTT of :data:`MIN_RTT_MS`."""
    return MIN_RTT_MS * 1_000_000 // path.R


def scenario(path: ModelPath, tcp: Stack) -> dict[str, Any]:
    """The scenario :func:`ccac.testbed.ns3_sim.simulate` runs for one flow of the stack ``tcp``
    on ``path``: the token bucket wastes tokens only beyond the segments queued (no margin)."""
    server = {"rate": float(path.per_step), "tokens": float(path.tokens),
              "lag": [float(x) for x in path.lag], "margin": [0.0] * path.T}
    most = path.per_step * path.R + path.queue  # segments: a BDP and a full queue
    return {"step_ns": step_ns(path), "steps": path.T, "segment": MSS, "server": server,
            "queue_packets": path.queue, "socket_buffer": socket_buffer(most),
            "flows": [tcp.flow(path.stream) | {"rtt_ns": path.R * step_ns(path), "initial_cwnd": path.initial_cwnd,
                                        "initial_ssthresh": path.initial_ssthresh}]}


@dataclass
class TcpRun:
    """One flow's ns-3 run on ``path`` as the model's curves, by step, in the model's bytes
    (module doc); ``rate`` is None for a TCP that does not pace; ``ssthresh`` is the slow-start
    threshold (ns-3 keeps it for BBR too, and sets cwnd to it on the ACK that ends a recovery)."""

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
    ssthresh: list[Fraction]

    @staticmethod
    def from_record(record: dict[str, Any]) -> "TcpRun":
        """A run saved as JSON (exact fractions as strings, None where a step was not read;
        ``rate`` absent or None for a TCP that does not pace): how tests keep ns-3's runs."""
        def exact(name: str) -> Any:
            values = record.get(name)
            return None if values is None else [None if x is None else Fraction(x) for x in values]
        path = ModelPath(**{**record["path"], "lag": tuple(Fraction(x) for x in record["path"]["lag"])})
        return TcpRun(path=path, tcp=record["tcp"], A=exact("A"), S=exact("S"), L=exact("L"), Ld=exact("Ld"),
                      W=exact("W"), timeout=list(record["timeout"]), cwnd=exact("cwnd"), rate=exact("rate"),
                      ssthresh=exact("ssthresh"))

    def to_record(self) -> dict[str, Any]:
        """The run as JSON-ready data that :meth:`from_record` reads back exactly (fractions as
        strings, None kept): how a test keeps one of ns-3's runs."""
        def text(values: list[Any] | None) -> list[str | None] | None:
            return None if values is None else [None if x is None else str(x) for x in values]
        path = {**vars(self.path), "lag": [str(x) for x in self.path.lag]}
        return {"path": path, "tcp": self.tcp, "timeout": list(self.timeout),
                **{name: text(getattr(self, name)) for name in ("A", "S", "L", "Ld", "W", "cwnd", "rate", "ssthresh")}}

    def describe(self) -> str:
        """The run's curves in packets, one line."""
        packets = lambda xs: [x / self.path.alpha if x is not None else None for x in xs]  # noqa: E731
        text = " ".join(f"{name}={[f'{float(x):g}' if x is not None else '-' for x in packets(getattr(self, name))]}"
                        for name in ("A", "S", "L", "Ld", "W", "cwnd", "ssthresh"))
        return f"{self.tcp[5:]} in packets: {text} timeouts at {[t for t, x in enumerate(self.timeout) if x]}"


def run_tcp(path: ModelPath, tcp: str | Stack) -> TcpRun:
    """Run ns-3's stack ``tcp`` (a :class:`Stack`, or a name :func:`stack` knows) on ``path`` and
    read the model's curves off the samples, their byte axes starting where the model's do
    (:func:`rebased`)."""
    config = tcp if isinstance(tcp, Stack) else stack(tcp)
    samples, line = ns3_sim.simulate(scenario(path, config))
    paced = config.tcp in PACED
    flow = flow_run(samples[0], path.alpha, step_ns(path), paced)
    tokens = [Fraction(x).limit_denominator(1_000_000) * path.alpha for x in line]
    rate = [r for r in flow.rate if r is not None] if paced else None
    marked = [Fraction(b, MSS) * path.alpha for b in samples[0]["marked"]]
    ssthresh = [Fraction(b, MSS) * path.alpha for b in samples[0]["ssthresh"]]
    return rebased(TcpRun(path, config.tcp, flow.A, flow.S, flow.L, detected(marked, path.R),
                          [t - x for t, x in enumerate(tokens)], flow.timeout, flow.cwnd, rate, ssthresh))


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


def query(path: ModelPath, cca: str | Path, params: dict[str, Any] | None = None) -> Query:
    """The query of ``path``'s network with one flow of ``cca``: a CCA's name, or the path of a
    CCA file in the CCA language, with its parameters ``params`` (its defaults otherwise)."""
    table = {"file": str(cca)} if isinstance(cca, Path) else {"name": cca}
    return parse_query({"network": network(path), "cca": table | (params or {})}, name=f"ns3-conformance-{table}")


@dataclass
class Admission:
    """Whether an encoding admits a run: ``admitted`` (None: the solver gave no answer), and
    on rejection the pinned values an unsat core names, first steps first."""

    admitted: bool | None
    culprits: list[str] = field(default_factory=list)


PATH_CURVES = ("A", "S", "L", "W")
TCP_STATE = ("cwnd", "ssthresh", "rate")  # the TCP's own quantities, pinned from step R on
#: a CCA file's state that holds the TCP's pacing rate when it is not the rate the model's sender
#: sends at (a file whose ``[send] rate`` widens it: ns-3 changes the rate at every ACK within a
#: step); without one, the TCP's rate is pinned to the model's (the file's state ``rate``)
PACING_STATE = "pacing_rate"
MODEL_CURVES = PATH_CURVES + ("timeout",)
DETECTED = MODEL_CURVES + ("Ld",)


def admission(run: TcpRun, cca: str | Path, pin_cwnd: bool = False, curves: tuple[str, ...] = MODEL_CURVES,
              timeout: float = SOLVE_SECONDS, state: tuple[str, ...] = (),
              params: dict[str, Any] | None = None, constant: dict[str, Fraction] | None = None) -> Admission:
    """Whether the encoding of ``cca`` (with its parameters ``params``) on the run's network
    admits ``run`` with its ``curves`` pinned at every step (and, with ``pin_cwnd``, its window,
    and the TCP's ``state`` (cwnd, ssthresh, rate) from step R on, where the CCA decides): the
    superset property on one run of the real implementation. ``constant`` holds CCA states at a
    value the TCP is known to keep through the run, history included (CUBIC's w_max at 0 before
    a connection's first loss)."""
    pipeline = Pipeline(query(run.path, cca, params))
    problem = pipeline.build()
    held = curves + (("cwnd",) if pin_cwnd else ()) + tuple(x for x in state if not (x == "cwnd" and pin_cwnd))
    pins = pinned(problem.vars, run, held, problem.states[0])
    for name, value in (constant or {}).items():
        if name not in problem.states[0]:
            raise CcacError(f"the CCA has no state {name!r} to hold at {value}", "cca")
        pins += [(problem.states[0][name][t] == value, f"{name}[{t}] = {value}") for t in range(run.path.T)]
    outcome = pipeline.answer(timeout, [fact for fact, _ in pins])
    if outcome.answer != "unsat":
        return Admission(True if outcome.answer == "sat" else None)
    core = pipeline.culprits([fact for fact, _ in pins], timeout) or []
    return Admission(False, [pins[i][1] for i in core])


def path_admitted(run: TcpRun, timeout: float = SOLVE_SECONDS) -> Admission:
    """The harness's own check: the run's path curves (A, S, L, W) are a run of the model, any
    sender (the CCA ``any``) being free to explain them."""
    return admission(run, "any", curves=PATH_CURVES, timeout=timeout)


def pinned(v: Any, run: TcpRun, curves: tuple[str, ...],
           states: dict[str, list[Any]] | None = None) -> list[tuple[z3.BoolRef, str]]:
    """Facts fixing the model variables ``v`` of flow 0 to ``run``'s ``curves``, each with its
    name and value (packets for byte curves; a pacing rate in packets per step): every step,
    but the TCP's own state (its window, and ``ssthresh`` and ``rate``, the CCA's state
    variables of those names in ``states``; the rate the state :data:`PACING_STATE` when the
    CCA declares one, else the model's pacing rate) only from step R on (before it the state is the
    run's history, not the CCA's decision; so is Ld, which the run does not read there). The
    TCP's window is the CCA's state ``cwnd`` where it has one (a file's ``[send] window`` may be
    another expression of its state), else the model's window."""
    window = states["cwnd"] if states is not None and "cwnd" in states else v.cwnd[0]
    terms: dict[str, Callable[[int], Any]] = {
        "A": lambda t: v.A_f[0][t], "S": lambda t: v.S_f[0][t], "L": lambda t: v.L_f[0][t],
        "Ld": lambda t: v.Ld_f[0][t], "W": lambda t: v.W[t], "timeout": lambda t: v.timeout[0][t],
        "cwnd": window.__getitem__}
    for name in set(curves) & set(TCP_STATE):
        own = PACING_STATE if name == "rate" and states is not None and PACING_STATE in states else name
        if name == "rate" and own == name and v.rate[0] is not None:
            terms[name] = v.rate[0].__getitem__   # the file's state rate is the model's pacing rate
        elif name not in terms:
            if states is None or own not in states:
                raise CcacError(f"the CCA has no state {name!r} to pin the TCP's {name} to", "cca")
            terms[name] = states[own].__getitem__
    facts = []
    for name in curves:
        values = getattr(run, name)
        if values is None:
            raise CcacError(f"{run.tcp} does not pace: its run has no {name} to pin", "cca")
        for t in range(run.path.R if name in TCP_STATE else 0, run.path.T):
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
#: the CCA under test, whether the TCP's window is pinned, whether the stack's state is: its
#: window and ssthresh or pacing rate, :attr:`Stack.state`)
READINGS: dict[str, tuple[tuple[str, ...], str | None, bool, bool]] = {
    "path": (PATH_CURVES, "any", False, False),     # the harness: the path's curves, any sender
    "sender": (MODEL_CURVES, "any", False, False),  # the model's ACK-clocked sender, any window
    "sender+Ld": (DETECTED, "any", False, False),   # ... and its loss detection, as the TCP detects
    "cca": (MODEL_CURVES, None, False, False),      # the CCA's encoding
    "cca+Ld": (DETECTED, None, False, False),
    "cca+cwnd": (MODEL_CURVES, None, True, False),
    "cca+state": (MODEL_CURVES, None, True, True),  # a CCA file with the stack's state variables
}


def default_readings(cca: str | Path) -> tuple[str, ...]:
    """The readings :func:`measure` takes by default: all, but cca+state only for a CCA file (a
    built-in CCA has no ssthresh)."""
    return tuple(name for name in READINGS if name != "cca+state" or isinstance(cca, Path))


def reading(run: TcpRun, name: str, cca: str | Path, config: Stack) -> Admission:
    """The answer of the reading ``name`` of :data:`READINGS` on ``run`` of the stack ``config``,
    ``cca`` being the CCA under test."""
    curves, who, pin_cwnd, pin_state = READINGS[name]
    return admission(run, cca if who is None else who, pin_cwnd, curves, state=config.state if pin_state else ())


def measure(cca: str | Path, tcp: str | Stack, paths: int, seed: int = 0, T: int = 15,
            report: Callable[[int, TcpRun, dict[str, Admission]], None] | None = None,
            readings: tuple[str, ...] | None = None) -> dict[str, int]:
    """How many of ``paths`` random paths (:func:`random_path`, seeded; path i draws from ns-3's
    random-number stream i) give a run of ns-3's stack ``tcp`` that each of ``readings`` (of
    :data:`READINGS`; by default :func:`default_readings`) admits, with ``cca`` as the CCA under
    test; ``report`` sees each run and its answers."""
    config = tcp if isinstance(tcp, Stack) else stack(tcp)
    chosen = default_readings(cca) if readings is None else readings
    unknown = [name for name in chosen if name not in READINGS]
    if unknown:
        raise CcacError(f"unknown reading {unknown[0]!r}: one of {', '.join(READINGS)}", "--readings")
    rng = random.Random(seed)
    counts = dict.fromkeys(chosen, 0)
    for i in range(paths):
        run = run_tcp(replace(random_path(rng, T), stream=i), config)
        answers = {name: reading(run, name, cca, config) for name in chosen}
        for name, answer in answers.items():
            counts[name] += answer.admitted is True
        if report is not None:
            report(i, run, answers)
    return counts


def main(argv: list[str]) -> None:
    """``python -m ccac.testbed.ns3_conformance CCA TCP PATHS [SEED] [--readings a,b]``:
    :func:`measure` of the stack TCP (a name of :data:`STACKS` or an ns-3 TypeId), its
    configuration first, one line per rejected run (its first culprits) and the counts."""
    chosen = None
    if "--readings" in argv:
        at = argv.index("--readings")
        chosen = tuple(argv[at + 1].split(","))
        argv = argv[:at] + argv[at + 2:]
    cca, tcp, paths = argv[0], stack(argv[1]), int(argv[2])
    seed = int(argv[3]) if len(argv) > 3 else 0
    print(tcp.describe(), flush=True)

    def show(i: int, run: TcpRun, answers: dict[str, Admission]) -> None:
        rejected = {name: a.culprits[:4] for name, a in answers.items() if a.admitted is not True}
        print(f"path {i}: {run.path.per_step} packets/step, R={run.path.R}, D={run.path.D}, queue {run.path.queue}, "
              f"{run.L[-1] / run.path.alpha} packets lost; rejected by {rejected or 'none'}", flush=True)

    counts = measure(Path(cca) if cca.endswith(".toml") else cca, tcp, paths, seed, report=show, readings=chosen)
    print(f"{cca} against {tcp.name} on {paths} random paths (seed {seed}): "
          + ", ".join(f"{name} admits {n}" for name, n in counts.items()))


if __name__ == "__main__":
    import sys

    with ns3_sim.quiet_stderr():
        ns3_sim.load_ns3()
    main(sys.argv[1:])
