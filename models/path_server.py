"""The CCAC path-server (thesis chapter 4.2, appendix A.1 and A.3) over discrete time.

The path is one non-deterministic server: a generalized token bucket. Tokens arrive at C bytes
per step; the server may hold an admitted token for at most D steps (the jitter bound), may
waste tokens only when its packet queue cannot use them, and drops bytes only when the
bottleneck queue (packets minus tokens) exceeds the buffer. All curves are cumulative and
sampled at the steps t = 0 .. T-1:

    A  arrivals        S  service          L  losses (congestive + non-congestive)
    W  wasted tokens   Ld losses the sender has detected

Per flow n there are A_f, S_f, L_f, Ld_f, the CCA's cwnd and pacing rate, and a timeout flag.
The totals A, S, L are sums over flows.

Flows may differ in their own part of the path (``[[flow]]`` tables; thesis figure 7-1): flow n's
feedback passes its own jitter box bounded by D_n after the shared bottleneck, so its sender
observes So_f[n] (:meth:`PathServer.boxes`) instead of S_f[n]; it has its own minimum RTT R_n
and non-congestive loss rate eta_n. A flow without a box observes S_f[n] itself, and with every
D_n = 0 (and the network's R and eta) the constraints are exactly those of the shared model.

Superset property (thesis 5): every constraint below is implied by the continuous-time model
at the sample points, so every continuous behaviour has a discrete trace and "unsat" in the
discrete model is a proof about the continuous one. Where a constraint relates two curves
between samples, it uses the slackest sample (e.g. W at t-1 in the loss rule).

Whole-packet mode (``[network] packets = true``, :meth:`PathServer.whole_packets`): the MSS
alpha is a number, and every byte curve of a flow (sent, served, acked, lost, detected lost)
moves in whole packets. The rules that change say so in their docstrings: the sender sends
whole packets (:meth:`PathServer.sender`), the link may be part-way through one
(:meth:`PathServer.service`), and a packet is dropped when it does not fit whole
(:meth:`PathServer.loss`). The service and loss rules are the fluid ones loosened by less than
a packet, so they over-approximate a packet link; the sender's rule is a TCP sender's exactly
(whole packets, never less than one in flight); loss detection is the fluid rule, which does
not assume a step's drops are the tail of its arrivals (:meth:`PathServer.loss_detection`). So
every packet run of a drop-tail path is a trace of this mode (``tests/test_packets.py`` checks
it on simulated runs, ``tests/test_loss_detection.py`` on a recorded ns-3 run).

Model variants differ only in when tokens may be wasted; each is one small file next to this
one (``composing.py``, ``single_box.py``) overriding :meth:`PathServer.waste_allowed`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from ccac.encode.encoding import Cond, Encoding, Term, as_real, maximum, minimum, truth
from ccac.encode.frontier import Frontier, Lookups
from ccac.encode.network import Network


@dataclass
class FlowSetup:
    """What the model needs to know about the sender of one flow before building."""

    paced: bool
    dupacks_default: Fraction | None = None  # in units of alpha


@dataclass
class PathVars:
    """The model's variables. Lists are indexed [t] (totals) or [n][t] (per flow)."""

    net: Network
    W: list[z3.ArithRef]
    A_f: list[list[z3.ArithRef]]
    S_f: list[list[z3.ArithRef]]
    L_f: list[list[z3.ArithRef]]
    Ld_f: list[list[z3.ArithRef]]
    Lnc_f: list[list[z3.ArithRef]] | None
    So_f: list[list[z3.ArithRef]]  # what flow n's sender observes: S_f[n] itself without a box
    cwnd: list[list[z3.ArithRef]]
    rate: list[list[z3.ArithRef] | None]
    timeout: list[list[z3.BoolRef]]
    alpha: Term
    dupacks: Term
    buffer: Term | None       # loss-forced threshold in bytes; None = infinite buffer
    buffer_min: Term | None   # loss-allowed threshold in bytes
    first: int = 0  # the trace's first step on the timeline (after a periodic query's history)
    A: list[Term] = field(default_factory=list)
    S: list[Term] = field(default_factory=list)
    L: list[Term] = field(default_factory=list)
    lookups: Lookups | None = None  # curves read at solver-chosen steps (index-style frontiers)
    _curves: dict[str, list[Term]] = field(default_factory=dict)
    _frontiers: dict[tuple[int | None, int, bool], Frontier] = field(default_factory=dict)

    def admitted_f(self, n: int, t: int) -> Term:
        """Bytes of flow n that entered the queue by step t (arrived and not dropped)."""
        return self.admitted_curve(n)[t]

    def admitted(self, t: int) -> Term:
        return self.admitted_curve(None)[t]

    def admitted_curve(self, n: int | None) -> list[Term]:
        """Flow n's admitted bytes at every step (n None: all flows'), built once."""
        name = "admitted" if n is None else f"admitted_{n}"
        if name not in self._curves:
            self._curves[name] = ([self.A[t] - self.L[t] for t in range(self.net.T)] if n is None else
                                  [self.A_f[n][t] - self.L_f[n][t] for t in range(self.net.T)])
        return self._curves[name]

    def token_line(self, t: int) -> Term:
        """C*t - W[t]: the most the server can have served by t (the upper service bound).
        Time counts from the trace's first step, so a periodic query's history steps have
        negative times."""
        return self.net.C * (t - self.first) - self.W[t]

    def reach(self, t: int, strict: bool, n: int | None = None) -> Frontier:
        """How far the service at t has reached along the admitted curve (:mod:`ccac.encode.frontier`):
        step s is reached if ``(A-L)[s] < S[t]`` (strict: the byte after s's last was served,
        so every byte admitted by s was) or ``(A-L)[s] <= S[t]``. With ``n``, flow n's own
        curves as its sender sees them (``So_f[n]`` through its box). Built on demand, once."""
        key = (n, t, strict)
        if key not in self._frontiers:
            name = "admitted" if n is None else f"admitted_{n}"
            probe = self.S[t] if n is None else self.So_f[n][t]
            label = f"{'lt' if strict else 'le'}_{'all' if n is None else n}_{t}"
            assert self.lookups is not None, "PathVars are built with their lookups (PathServer.declare)"
            self._frontiers[key] = Frontier(self.lookups.enc, self.lookups, name,
                                            self.admitted_curve(n), probe, t, strict, label)
        return self._frontiers[key]

    def served_past(self, t: int, k: int) -> Cond:
        """S[t] > (A-L)[t-k]: every byte admitted by step t-k was served by step t.

        This is how queueing delay is read off the curves (thesis figure 5-1B): the byte at the
        head of the service curve at t has waited less than k steps if this holds and at least k
        steps if it does not."""
        return self.reach(t, strict=True).reached(t - k)

    def observed_past(self, n: int, t: int, k: int) -> Cond:
        """The delay reading of flow n's sender: :meth:`served_past` without a jitter box of its
        own; with one, So_f[n][t] > (A_f-L_f)[n][t-k]: every byte of flow n admitted by t-k has
        reached its sender by t. This is the same reading as the shared one, taken on the
        flow's own curves: the last byte the sender has seen at t was admitted after t-k if
        this holds (its delay, queueing plus box, is under k steps) and at or before t-k if
        not, so it bounds exactly the delay this sender experiences, box included."""
        if self.net.path(n).D == 0:
            return self.served_past(t, k)
        return self.reach(t, strict=True, n=n).reached(t - k)


class PathServer(ABC):
    """Shared constraints of every path-server variant; subclasses define the waste rule."""

    name: str
    summary: str

    @abstractmethod
    def waste_allowed(self, v: PathVars, t: int) -> Cond:
        """Condition under which tokens may be wasted during step t."""

    # ---------------------------------------------------------------- variables
    def declare(self, enc: Encoding, net: Network, flows: list[FlowSetup]) -> PathVars:
        T, N = net.T, net.flows

        def per_flow(name: str, axis: str | None) -> list[list[z3.ArithRef]]:
            return [[enc.step("real", name, t, n, axis) for t in range(T)] for n in range(N)]

        alpha: Term = net.alpha if net.alpha is not None else enc.real("alpha")
        dupacks_units = net.dupacks
        if dupacks_units is None:
            defaults = {f.dupacks_default for f in flows}
            if len(defaults) == 1 and None not in defaults:
                dupacks_units = defaults.pop()
        dupacks: Term = dupacks_units * alpha if dupacks_units is not None else enc.real("dupacks")
        if net.buffer == "inf":
            buffer = buffer_min = None
        elif net.buffer == "any":
            buffer = buffer_min = enc.real("buffer")
        else:
            buffer, buffer_min = net.buffer_bytes(), net.buffer_min_bytes()
        v = PathVars(
            net=net,
            W=[enc.step("real", "W", t, axis="W") for t in range(T)],
            A_f=per_flow("A", "A"), S_f=per_flow("S", "S"), L_f=per_flow("L", "L"),
            Ld_f=per_flow("Ld", "L"), Lnc_f=per_flow("Lnc", "L") if net.lossy else None,
            So_f=[],
            cwnd=per_flow("cwnd", None),
            rate=[[enc.step("real", "rate", t, n) for t in range(T)] if f.paced else None
                  for n, f in enumerate(flows)],
            # Before step R a timeout is history the model does not track: nothing reads it.
            timeout=[[enc.step("bool", "timeout", t, n) if t >= net.path(n).R else truth(False)
                      for t in range(T)] for n in range(N)],
            alpha=alpha, dupacks=dupacks, buffer=buffer, buffer_min=buffer_min,
            first=enc.timeline.history, lookups=Lookups(enc, "model.frontier"),
        )
        v.So_f = [[enc.step("real", "So", t, n, "S") for t in range(T)] if net.path(n).D > 0 else v.S_f[n]
                  for n in range(N)]
        v.A = [_total(v.A_f, t) for t in range(T)]
        v.S = [_total(v.S_f, t) for t in range(T)]
        v.L = [_total(v.L_f, t) for t in range(T)]
        return v

    # ---------------------------------------------------------------- constraints
    def constrain(self, enc: Encoding, v: PathVars) -> None:
        self.parameters(enc, v)
        self.monotone(enc, v)
        self.service(enc, v)
        self.waste(enc, v)
        self.loss(enc, v)
        self.boxes(enc, v)
        self.loss_detection(enc, v)
        self.sender(enc, v)
        self.cold_start(enc, v)
        if v.net.flows > 1:
            self.fifo(enc, v)
        if v.net.any_packets:
            self.whole_packets(enc, v)

    def parameters(self, enc: Encoding, v: PathVars) -> None:
        """Solver-chosen parameters are positive (alpha) or non-negative (dupacks, buffer)."""
        enc.add("model.parameters",
                _positive(v.alpha), _nonnegative(v.dupacks),
                _nonnegative(v.buffer) if v.buffer is not None else True)

    def monotone(self, enc: Encoding, v: PathVars) -> None:
        """Cumulative curves never decrease; A-L (bytes admitted) never decreases, so a step
        cannot drop more bytes than arrived in it; C*t - W never decreases (at most C tokens
        are wasted per step, thesis 4.2). S_f[n][0] = 0 fixes the origin of each flow's byte
        axis: every constraint is invariant under shifting all of a flow's byte curves (and W)
        by a constant, so this normalization loses no behaviour. Likewise L_f[n][0] = 0: the
        constraints see losses only through A-L, through differences of L, and against Ld, so
        shifting A, L and Ld of a flow together changes nothing either. (The origin is the
        trace's first step, after a periodic query's wrapped history.)"""
        net = v.net
        for n in range(net.flows):
            enc.add("model.origin", v.S_f[n][v.first] == 0, v.L_f[n][v.first] == 0)
            for t in range(1, net.T):
                enc.add("model.monotone",
                        v.A_f[n][t] >= v.A_f[n][t - 1],
                        v.S_f[n][t] >= v.S_f[n][t - 1],
                        v.L_f[n][t] >= v.L_f[n][t - 1],
                        v.Ld_f[n][t] >= v.Ld_f[n][t - 1],
                        v.admitted_f(n, t) >= v.admitted_f(n, t - 1))
        for t in range(1, net.T):
            enc.add("model.monotone", v.W[t] >= v.W[t - 1],
                    v.token_line(t) >= v.token_line(t - 1))

    def service(self, enc: Encoding, v: PathVars) -> None:
        """Service bounds (thesis 4.2): nothing is served before it is admitted; the server uses
        at most the tokens that arrived (S <= C*t - W) and holds an admitted token at most D
        steps (S[t] >= C*(t-D) - W[t-D]). Before the trace starts, W[0] stands for W[t-D]:
        W is non-decreasing, so this is the slackest choice (the lower bound is lowest).

        In whole packets S counts packets delivered whole, and at any instant the link may be
        part-way through one: the tokens it has used by t go to the packets delivered and to
        less than one packet in transmission, so S[t] > C*(t-D) - W[t-D] - alpha."""
        net = v.net
        for t in range(net.T):
            for n in range(net.flows):
                enc.add("model.service", v.S_f[n][t] <= v.admitted_f(n, t))
            oldest = net.C * (t - net.D - v.first) - v.W[max(t - net.D, 0)]
            enc.add("model.service",
                    v.S[t] <= v.token_line(t),
                    v.S[t] > oldest - v.alpha if net.any_packets else v.S[t] >= oldest)

    def waste(self, enc: Encoding, v: PathVars) -> None:
        for t in range(1, v.net.T):
            enc.add("model.waste", z3.Implies(v.W[t] > v.W[t - 1], self.waste_allowed(v, t)))

    def loss(self, enc: Encoding, v: PathVars) -> None:
        """Congestive loss only when the bottleneck queue (A - L) - (C*t - W) exceeds the
        loss-allowed threshold at some instant of the step; the bottleneck queue never exceeds
        the loss-forced threshold. Non-congestive loss (eta > 0) is separate: cumulatively at
        most eta of the bytes sent since the trace began (thesis 4.3), with each flow's own eta. (For a
        periodic trace that is its first step: then every period loses at most eta of what it
        sends, and so does every stretch of the repetition that starts at a period's start.)

        In whole packets a drop-tail queue drops a packet that does not fit whole: the queue it
        arrived at held more than buffer_min - alpha, so a step that loses has
        A - L > (C*(t-1) - W[t-1]) + buffer_min - alpha."""
        net = v.net
        congestive = [[v.L_f[n][t] - (v.Lnc_f[n][t] if v.Lnc_f else 0) for t in range(net.T)]
                      for n in range(net.flows)]
        if v.Lnc_f is not None:
            for n in range(net.flows):
                for t in range(net.T):
                    start = min(t, v.first)
                    enc.add("model.noncongestive_loss",
                            v.Lnc_f[n][t] - v.Lnc_f[n][start] <= net.path(n).eta * (v.A_f[n][t] - v.A_f[n][start]))
                    if t > 0:
                        enc.add("model.noncongestive_loss",
                                v.Lnc_f[n][t] >= v.Lnc_f[n][t - 1],
                                congestive[n][t] >= congestive[n][t - 1])
        for t in range(net.T):
            lost_now = _total(congestive, t)
            if v.buffer is None:
                enc.add("model.buffer", *(congestive[n][t] == congestive[n][0] for n in range(net.flows)))
                continue
            enc.add("model.buffer", v.admitted(t) <= v.token_line(t) + v.buffer)
            if t > 0:
                lost_before = _total(congestive, t - 1)
                assert v.buffer_min is not None, "a finite buffer has its loss-allowed threshold too"
                full = v.token_line(t - 1) + v.buffer_min
                enc.add("model.buffer", z3.Implies(
                    lost_now > lost_before,
                    v.admitted(t) > full - v.alpha if net.any_packets else v.admitted(t) >= full))

    def boxes(self, enc: Encoding, v: PathVars) -> None:
        """Each flow's own jitter box (thesis figure 7-1): between the shared bottleneck and its
        sender, flow n's feedback may be held up to D_n steps, in order. So_f[n], the bytes of
        flow n whose ACKs have left the box, never decreases, never runs ahead of the
        bottleneck (So_f[n][t] <= S_f[n][t]) and lags it by at most D_n steps
        (So_f[n][t] >= S_f[n][t-D_n]); before step D_n the lag reaches into history, where the
        box may still hold anything served before step 0 (only the upper bound applies).

        In network terms the box is the rest of the flow's path after the bottleneck (its own
        links, ACK path, aggregation, delayed ACKs): it cannot deliver feedback early and
        cannot hold a byte longer than D_n. These constraints over-approximate the thesis'
        box, which holds every byte for a delay in [0, D_n]: any such box gives a curve
        satisfying them at the sample points (a byte served by t-D_n is out of the box by t, and
        nothing leaves before it was served), and they allow more, e.g. which byte sits at the
        box's head between samples is not tracked. Flows without a box have So_f = S_f."""
        for n in range(v.net.flows):
            D = v.net.path(n).D
            if D == 0:
                continue
            S, So = v.S_f[n], v.So_f[n]
            for t in range(v.net.T):
                enc.add("model.box", So[t] <= S[t])
                if t > 0:
                    enc.add("model.box", So[t] >= So[t - 1])
                if t >= D:
                    enc.add("model.box", So[t] >= S[t - D])

    def loss_detection(self, enc: Encoding, v: PathVars) -> None:
        """When the sender learns of losses (appendix A.3) and when it times out (thesis 4.2.2).

        At step t the sender has the ACKs of everything served by t-R (of what its own box let
        through by t-R, So_f, when it has one; R is the flow's own minimum RTT). A loss at step s is
        detectable once ACKs for `dupacks` bytes admitted after it have arrived:
        S_f[t-R] >= (A_f-L_f)[s] + dupacks. Detection is as early as possible: detectable losses
        are detected (all but lost retransmissions, below), undetectable ones are not. A
        timeout fires only when every byte in flight is known lost: the sender sent nothing in
        the last R-1 steps, everything it had admitted by t-R was served by then, and losses
        remain undetected. It may fire at the
        first such step and must fire once the condition has held for `rto` steps; it detects
        every outstanding loss. Before step R the detected-loss curve is history, bounded only
        by the losses that had happened by step 0.

        "Undetectable ones are not" holds for new detections only: a timeout detects every
        outstanding loss at once, and a step after it (with no timeout) keeps those detections
        even where too few duplicate ACKs have arrived to reveal them (in the step after a
        timeout the retransmitted window is not ACKed yet). So the rule is: without a timeout,
        Ld_f[t] <= max(Ld_f[t-1], L_f[s]) for every step s whose loss is not yet detectable.
        (Stated through :meth:`_no_new_detection`. Found by the conformance test of the
        concrete AIMD, tests/test_aimd.py: the previous rule, without the max, excluded every
        run with a non-timeout step right after a timeout that left a loss undetectable by
        duplicate ACKs, which real senders have.)

        The steps whose losses are detectable form a prefix (admitted bytes never decrease), so
        "detected exactly the detectable" is stated through the detection frontier
        (:mod:`ccac.encode.frontier`: all pairs, or an integer frontier with lookups); a flow that
        cannot lose needs only two comparisons (:meth:`_detected_without_loss`).

        The bound while step s is not yet detectable is L_f[s], in whole packets too: a step's
        drops need not be the tail of its arrivals. A sender's ACK clock spreads a step's
        packets over the step and the queue drains in between, so a packet admitted after a
        drop of the same step can be among the `dupacks` acked above it (ns-3's NewReno does
        this, docs/replay.md). L_f[s] is the slackest bound the dupack rule allows: whatever the
        order inside step s, no loss of a later step is detected before step s is.

        Retransmissions (``[network] retransmissions = true``). Duplicate ACKs do
        not reveal every loss: a TCP sender marks a segment lost once (RFC 6675), retransmits
        it, and if the retransmission is lost too, only the retransmission timer finds it. The
        model's A_f does not tell retransmissions from new bytes, so the rule bounds them: a
        sender retransmits only what it has detected lost, once per detection (a timeout's
        detections included), so the retransmissions that reached the bottleneck by step s, and
        among them those lost, are at most what it detected from the trace's first step on,
        Ld_f[s] - Ld_f[first]. Every other loss by step s is a first transmission, revealed once
        s is detectable, so "detectable => detected" is Ld_f[t] >= L_f[s] - (Ld_f[s] -
        Ld_f[first]) (and L_f[s] for s <= first). Its one assumption: the trace starts outside
        loss recovery (for a periodic query, each period does): at its first step no detected
        loss awaits its retransmission and no lost retransmission is still undetected. Without
        it that backlog would be free, every later loss could be a lost retransmission, and no
        loss would be forced detected before a timeout. The bound
        falls when detections catch up (it is L_f[s] less the losses still undetected at s,
        shifted), so it is stated at every detectable step (:meth:`Frontier.at_least_each`).
        It never binds more than Ld_f[t] >= L_f[s], which ``retransmissions = false`` (the
        default) keeps: the rule of a sender whose every loss duplicate ACKs reveal (one that
        never retransmits, as the thesis' fluid model, or one whose retransmissions are never
        lost), not sound for a TCP whose retransmissions are lost. It is not the default because
        its assumption is about the trace's first step, so a window of a longer run need not be
        a trace: ``ccac prove``'s stitching check refutes aimd_steady_state with it (and its
        closure and progress fail too: an undetected lost retransmission keeps the undetected
        loss above any bound until a timeout, which fires only once the sender stalls). Queries
        about a TCP whose retransmissions may be lost (the ns-3 conformance harness) set it. The
        upper bound and the timeouts are the same either way: a timeout detects every
        outstanding loss, lost retransmissions included.

        A periodic query's history steps (before ``v.first``) get none of these constraints:
        each would be a copy of one at a trace step, one or more periods later, that reads less
        of the past, so it is implied (and these are the model's largest groups, quadratic in T
        with the pairs encoding).
        """
        net = v.net
        if net.loss_detection == "oracle":
            self.loss_oracle(enc, v)
            return
        for n in range(net.flows):
            R = net.path(n).R
            A, S, L, Ld, tmo = v.A_f[n], v.So_f[n], v.L_f[n], v.Ld_f[n], v.timeout[n]
            # The least detected once step s is: its losses less the lost retransmissions
            # the detections since the trace's first step allow (docstring).
            revealed = ([L[s] - (Ld[max(s, v.first)] - Ld[v.first]) for s in range(net.T)]
                        if net.retransmissions else L)
            lossless = v.buffer is None and net.path(n).eta == 0
            stalled_all_lost: list[Cond] = []
            previous: Frontier | None = None
            timed_out: Cond = False  # a timeout fired at this or an earlier step
            for t in range(net.T):
                if t < R:
                    if t >= v.first:
                        enc.add("model.loss_detection", Ld[t] <= L[0])
                    stalled_all_lost.append(False)
                    continue
                cond = z3.And(A[t - 1] == A[t - R],
                              S[t - R] == v.admitted_f(n, t - R),
                              L[t - R] > Ld[t - 1])
                stalled_all_lost.append(cond)
                earlier = timed_out
                timed_out = tmo[t] if timed_out is False else z3.Or(timed_out, tmo[t])
                if t < v.first:
                    continue
                enc.add("model.loss_detection", Ld[t] <= L[t - R])
                enc.add("model.timeout", z3.Implies(tmo[t], cond),
                        z3.Implies(tmo[t], Ld[t] == L[t - R]))
                if t - net.rto + 1 >= R:
                    held = z3.And(*stalled_all_lost[t - net.rto + 1:t + 1])
                    enc.add("model.timeout", z3.Implies(held, tmo[t]))
                if lossless:
                    enc.add("model.loss_detection", *self._detected_without_loss(v, n, t))
                    continue
                # Detectable losses are detected; without a timeout, no undetectable loss is
                # newly detected (one an earlier timeout detected stays detected).
                assert v.lookups is not None, "PathVars are built with their lookups (PathServer.declare)"
                frontier = Frontier(enc, v.lookups, f"admitted_{n}", v.admitted_curve(n),
                                    S[t - R] - v.dupacks, t - R, False, f"detect_{n}_{t}")
                enc.add("model.loss_detection",
                        *frontier.at_least_each(Ld[t], f"revealed_{n}", revealed, z3.Not(tmo[t])),
                        *frontier.at_most(Ld[t], f"L_{n}", L,
                                          self._no_new_detection(tmo[t], earlier, Ld[t] > Ld[t - 1])),
                        *(previous.next_at(frontier) if previous is not None else []))
                previous = frontier

    @staticmethod
    def loss_oracle(enc: Encoding, v: PathVars) -> None:
        """CCmatic's loss oracle (``[network] loss_detection = "oracle"``; CCmatic's verifier
        states ``Ld_f[t] = L_f[t-1]`` at one step per RTT): from step R on, the sender knows
        exactly the losses that had happened R steps earlier, Ld_f[t] = L_f[t-R], and no timeout
        fires (with every loss known one RTT after it, the retransmission timer has nothing left
        to reveal; CCmatic's model has none). Before step R the detected-loss curve is history,
        at most the losses that had happened by step 0, as in :meth:`loss_detection`.

        A **restriction** of the model, not an over-approximation: of the detection schedules
        :meth:`loss_detection` admits it keeps one (losses detected one RTT after they happen
        need ACKs for later bytes within that RTT; the oracle assumes them even when nothing
        was sent after the loss), and it drops the timeouts. So an unsat under it holds only on
        paths whose senders learn of losses so; it is here to ask CCmatic's questions as CCmatic
        asks them. A periodic query's history steps (before ``v.first``) are left free, as in
        :meth:`loss_detection`."""
        for n in range(v.net.flows):
            R, L, Ld, tmo = v.net.path(n).R, v.L_f[n], v.Ld_f[n], v.timeout[n]
            for t in range(v.first, v.net.T):
                if t < R:
                    enc.add("model.loss_detection", Ld[t] <= L[0])
                else:
                    enc.add("model.loss_detection", Ld[t] == L[t - R])
                    enc.add("model.timeout", z3.Not(tmo[t]))

    @staticmethod
    def _no_new_detection(timeout: Cond, earlier: Cond, grew: Cond) -> Cond:
        """When "undetectable losses are not detected" binds at a step: without a timeout there,
        and, once some earlier step timed out (whose detections stay), only if the detected
        losses grew. Before any timeout the previous step's detections are themselves at most
        every undetectable step's losses (by induction from the history's Ld <= L[0]), so the
        plain rule is the same as the one with max(Ld[t-1], L[s]); stating it plainly there
        keeps the solver's work as it was (allegro_equal_loss_fair without its find: 219 s
        with the growth condition at every step, 7.8 s this way, 1.7 s with the old rule)."""
        if earlier is False:
            return z3.Not(timeout)
        return z3.And(z3.Not(timeout), z3.Or(z3.Not(earlier), grew))

    @staticmethod
    def _detected_without_loss(v: PathVars, n: int, t: int) -> list[Cond]:
        """Loss detection at step t for a flow that cannot lose (infinite buffer, eta = 0), so
        L_f[n] is constant: the detected-loss curve reaches L[0] once the first step's losses
        (there are none) are detectable, and stays at most L[0] while the last step's are not.
        Exactly the all-steps rule: a loss at step s is detectable only if one at step 0 is,
        and undetectable whenever one at step t-R is, and every L[s] equals L[0]. Two
        comparisons instead of t - R + 1."""
        R, S, L, Ld, tmo = v.net.path(n).R, v.So_f[n], v.L_f[n], v.Ld_f[n], v.timeout[n]

        def detectable(s: int) -> Cond:
            return v.admitted_f(n, s) + v.dupacks <= S[t - R]

        return [z3.Implies(z3.And(z3.Not(tmo[t]), detectable(0)), Ld[t] >= L[0]),
                z3.Implies(z3.And(z3.Not(tmo[t]), z3.Not(detectable(t - R))), Ld[t] <= L[0])]

    def sender(self, enc: Encoding, v: PathVars) -> None:
        """ACK clocking and pacing (thesis 4.2.2): from step R on, the sender keeps cwnd bytes
        beyond what was acked (S_f[t-R], or So_f[t-R] through its own box, with its own R) or
        detected lost (Ld_f[t]), never un-sends, and a paced
        sender adds at most `rate` bytes per step:
            A_f[t] = min(max(S_f[t-R] + Ld_f[t] + cwnd[t], A_f[t-1]), A_f[t-1] + rate[t]).
        The first R steps are history: arrivals there are free.

        Flows may have different minimum RTTs R_n: every flow's curves are indexed by the time
        its bytes reach the bottleneck, so flow n's sender acts at that time minus its forward
        propagation delay and sees the ACK of a byte served at s at s + R_n in the same clock.
        How R_n splits into forward and return delay does not matter, because a CCA's rules do
        not depend on the absolute time, only on what it has observed; so the constraints are
        the single-RTT ones with R_n in place of R (also for loss detection and timeouts).
        R_n is a whole number of steps, like R.

        In whole packets the sender sends a packet only when all of it fits in the window (and
        the pacing allowance): it sends the largest whole number of packets up to that target,
        A_f[t] <= target < A_f[t] + alpha (:meth:`whole_packets` makes A_f a multiple of
        alpha). A window is never less than one packet: a TCP sender may always have one
        packet in flight (RFC 5681's loss window; Linux keeps snd_cwnd >= 1), so a CCA's
        window below alpha acts as alpha.

        Retransmissions (``[network] retransmissions = true``) held in flight. A SACK sender's
        bytes in flight (RFC 6675's pipe; ns-3's ``BytesInFlight``) count a retransmitted
        segment until the cumulative ACK passes it, even once a SACK shows it delivered, so such
        a sender may send less than the window beyond S_f[t-R] + Ld_f[t]. A SACKed retransmission
        waits for the cumulative ACK only above a hole, and on a FIFO path the hole's own
        retransmission went first (the lowest marked segment is resent first, RFC 6675's
        NextSeg, and a lower segment has more SACKed above it, so it is marked no later): so it
        was lost, a loss within the trace. So the held bytes are at most the retransmissions
        sent, which are at most the detections since the trace's first step, Ld_f[t] -
        Ld_f[first] (one per detection, as in :meth:`loss_detection`, under the same assumption:
        the trace starts with no retransmission in flight), and none while the flow has lost
        nothing since its first step (L_f[t] = L_f[first]; a trace's history could otherwise
        invent lost bytes, detected later, to hold). Only the lower bound moves, to A_f[t] >
        target - alpha - held (fluid: A_f[t] >= target - held); the upper bound, what the window
        allows, stays. It never binds more than the rule without it, and it is the same rule
        when nothing has been detected lost."""
        net = v.net
        for n in range(net.flows):
            R = net.path(n).R
            for t in range(net.T):
                enc.add("model.sender", v.cwnd[n][t] > 0)
                rate = v.rate[n]
                if rate is not None:
                    enc.add("model.sender", rate[t] > 0)
                if t < max(R, net.path(n).opens or 0):
                    continue
                cwnd = maximum(v.cwnd[n][t], v.alpha) if net.path(n).packets else v.cwnd[n][t]
                target = self._send_target(v, n, t, cwnd)
                held = z3.If(v.L_f[n][t] > v.L_f[n][v.first], v.Ld_f[n][t] - v.Ld_f[n][v.first], 0) \
                    if net.retransmissions else None
                least = target if held is None else self._send_target(v, n, t, cwnd - held)
                if net.path(n).packets:
                    enc.add("model.sender", v.A_f[n][t] <= target, v.A_f[n][t] > least - v.alpha)
                elif held is None:
                    enc.add("model.sender", v.A_f[n][t] == target)
                else:
                    enc.add("model.sender", v.A_f[n][t] <= target, v.A_f[n][t] >= least)

    def cold_start(self, enc: Encoding, v: PathVars) -> None:
        """A connection's start (``[network] start = "cold"``, or a ``[[flow]]``'s): the flow's
        connection opens at step ``opens`` (its first decision); before it, it has sent nothing,
        so nothing of it is queued, served, lost or detected lost, and its sender has no timer to
        fire. The sender's rule (:meth:`sender`) applies from ``opens`` on. This is a restriction
        of the model (the trace starts where a connection starts), not an approximation: every
        constraint of the model still holds; the path's own state (the tokens its server holds,
        up to D steps of them) is as free as for any trace. The CCA's start state at ``opens - 1``
        is fixed with the CCA's rules (:func:`ccac.problems.problem.start_pins`)."""
        for n in range(v.net.flows):
            opens = v.net.path(n).opens
            if opens is None:
                continue
            for t in range(opens):
                enc.add("model.cold_start", v.A_f[n][t] == 0, v.S_f[n][t] == 0, v.L_f[n][t] == 0,
                        v.Ld_f[n][t] == 0, v.So_f[n][t] == 0, *([v.Lnc_f[n][t] == 0] if v.Lnc_f else []),
                        z3.Not(v.timeout[n][t]))

    @staticmethod
    def _send_target(v: PathVars, n: int, t: int, window: z3.ArithRef) -> z3.ArithRef:
        """What flow n's sender may have sent by step t with ``window`` bytes beyond what is ACKed
        or detected lost: never less than before, at most `rate` more when it paces."""
        target = maximum(v.So_f[n][t - v.net.path(n).R] + v.Ld_f[n][t] + window, v.A_f[n][t - 1])
        rate = v.rate[n]
        return target if rate is None else minimum(target, v.A_f[n][t - 1] + rate[t])

    def fifo(self, enc: Encoding, v: PathVars) -> None:
        """Per-flow service under a shared FIFO queue (appendix A.1), checked at sample points.

        Dropped bytes never enter the queue (A-L never decreases, so losses in a step are at
        most its arrivals). In FIFO order the first S[t] admitted bytes are served by t, so if
        S[t] >= (A-L)[s] every flow's bytes admitted by s were served by t, and if
        S[t] <= (A-L)[s] no flow has been served beyond what it had admitted by s. Both are
        consequences of FIFO at the samples and say nothing between them: a relaxation of FIFO
        (the appendix's own relaxation, "if the delay is dt then S_i[t] > A_i[t-dt]", follows
        from the first). Both are stated through the service frontier of step t
        (:meth:`PathVars.reach`), the second with the strict one (S[t] <= (A-L)[s] is "s not
        passed"); s = t is included, where both are implied. A periodic query's history steps
        are skipped, as in :meth:`loss_detection`."""
        net = v.net
        for t in range(v.first, net.T):
            reached, passed = v.reach(t, strict=False), v.reach(t, strict=True)
            for n in range(net.flows):
                curve = v.admitted_curve(n)
                enc.add("model.fifo",
                        *reached.at_least(v.S_f[n][t], f"admitted_{n}", curve),
                        *passed.at_most(v.S_f[n][t], f"admitted_{n}", curve))

    def whole_packets(self, enc: Encoding, v: PathVars) -> None:
        """Whole-packet mode: each such flow's bytes sent, served (and acked through its box), lost,
        non-congestively lost and detected lost are whole numbers of packets of alpha bytes at
        every step (byte axes start at 0, a whole number). Tokens stay bytes: the link's time
        is not quantized, only what it carries. A periodic query's history steps are trace
        steps shifted by whole periods, so they are whole packets too. Each value is tied to an
        integer packet count (:meth:`Encoding.whole_count`; z3 solves these faster than with
        ``IsInt``: aimd_premature_loss in packets 0.7 s against 2.9 s)."""
        net, size = v.net, as_real(v.alpha)
        for n in (n for n in range(net.flows) if net.path(n).packets):
            curves = {"A": v.A_f[n], "S": v.S_f[n], "L": v.L_f[n], "Ld": v.Ld_f[n]}
            if net.path(n).D > 0:
                curves["So"] = v.So_f[n]
            if v.Lnc_f is not None:
                curves["Lnc"] = v.Lnc_f[n]
            for name, curve in curves.items():
                enc.add("model.packets", *(enc.whole_count(f"packets_{name}_{n}_{t}", curve[t], size)
                                           for t in range(v.first, net.T)))

    # ---------------------------------------------------------------- steady state
    def periodic(self, v: PathVars) -> list[tuple[str, Term, Term]]:
        """Quantities whose end value must equal their start value for a repeatable trace
        (thesis 6.1): each flow's queue, undetected loss and (with a box) the bytes in its box,
        and the bottleneck queue. Together they make every byte curve of a flow grow by the same
        amount per period (A - L, S, So by what is served; L, Ld by what is lost), and the token
        line by what the bottleneck serves, which is what repeating the trace needs."""
        ends = (v.first, v.net.T - 1)
        pairs: list[tuple[str, Term, Term]] = []
        for n in range(v.net.flows):
            queue = [v.admitted_f(n, t) - v.S_f[n][t] for t in ends]
            undetected = [v.L_f[n][t] - v.Ld_f[n][t] for t in ends]
            pairs.append((f"queue of flow {n}", *queue))
            pairs.append((f"undetected loss of flow {n}", *undetected))
            if v.net.path(n).D > 0:
                pairs.append((f"bytes in flow {n}'s box", *(v.S_f[n][t] - v.So_f[n][t] for t in ends)))
        at_first, at_last = (v.admitted(t) - v.token_line(t) for t in ends)
        pairs.append(("bottleneck queue", at_first, at_last))
        return pairs


def _total(series: list[list[Term]], t: int) -> Term:
    if len(series) == 1:
        return series[0][t]
    return z3.Sum(*[s[t] for s in series])


def _positive(x: Term) -> Cond:
    return x > 0 if isinstance(x, z3.ExprRef) else True


def _nonnegative(x: Term) -> Cond:
    return x >= 0 if isinstance(x, z3.ExprRef) else True
