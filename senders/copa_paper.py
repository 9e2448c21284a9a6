"""Copa (Arun and Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
Internet", NSDI 2018), written again from the paper alone as a concrete sender, per ACK.

Section numbers below are the paper's. Units: time in steps of the model, windows and rates in
packets of the path's MSS ``alpha`` (``start.alpha`` bytes); the decision is given in bytes.

Rules implemented
=================

R1. Target rate (s2, eq. 1): "lambda_t = 1 / (delta * d_q)", in packets per unit of time (here
    per step), "where d_q is the (measured) queueing delay". d_q = 0 makes the target infinite.
R2. Queueing delay (s2.1, eq. 2): "d_q = RTTstanding - RTTmin".
R3. RTTstanding (s2.1): "the smallest RTT observed over a recent time-window, tau. We use
    tau = srtt/2, where srtt is the current value of the standard smoothed RTT estimate": the
    smallest sample among the ACKs that arrived in [now - srtt/2, now], the current one included.
R4. srtt (s2.1, update rule step 1: "the standard TCP exponentially weighted moving average
    estimator"): srtt <- 7/8 srtt + 1/8 sample per ACK, the first sample taken as it is.
R5. RTTmin (s2.1): "the smallest RTT observed over a long period of time. We use the smaller of
    10 seconds and the time since the flow started for this period". In steps: with the
    parameter ``step_seconds`` (seconds per step) the window is 10 / step_seconds steps; without
    it, the time since the flow started (a run of the model is far shorter than 10 s at any
    RTT of a wide-area path: T steps of at most one RTT each).
R6. The window update, per ACK (s2.1, steps 2-3): "If lambda = cwnd/RTTstanding <= lambda_t,
    then cwnd = cwnd + v/(delta * cwnd) ... Otherwise, cwnd = cwnd - v/(delta * cwnd)". The
    comparison is exact (cwnd * d_q <= RTTstanding / delta); the change v/(delta cwnd) is
    rounded toward zero to a multiple of ``GRAIN`` packets (see "Arithmetic").
R7. Velocity (s2.1, step 4): "It is initialized to 1. Once per window, the sender compares the
    current cwnd to the cwnd value at the time that the latest acknowledged packet was sent
    (i.e., cwnd at the start of the current window). If the current cwnd is larger, then set
    direction to "up"; if it is smaller, then set direction to "down". Now, if the direction is
    the same as in the previous window, then double v. If not, then reset v to 1. However,
    start doubling v only after the direction has remained the same for three RTTs."
    A window starts with the next packet to be sent (its last byte: the bytes sent so far plus
    one MSS) and ends at the ACK at which the bytes ACKed plus the bytes detected lost reach
    it; the comparison is with the cwnd at its start; a new window starts there. When doubling
    starts: reading ``doubling_start``; a window whose cwnd did not move: reading ``tie``.
R8. Slow start (s2.1): "When a flow starts, Copa performs slow-start where cwnd doubles once
    per RTT until lambda exceeds lambda_t." While in slow start R6 is not applied; per ACK the
    sender checks R1 against lambda = cwnd / RTTstanding, and at the first ACK with
    lambda > lambda_t it leaves slow start for good (that ACK does not change cwnd; v = 1 and
    the direction is forgotten, so R7 counts afresh). How the doubling is spread: reading
    ``ss_growth``. Without slow start (constructor ``slow_start=False``) the flow starts in R6.
R9. Pacing (s2.1): "the sender paces packets at a rate of 2 * cwnd/RTTstanding packets per
    second": rate = 2 cwnd / RTTstanding per step, with the RTTstanding of the step's last ACK
    (before any sample: the path's handshake RTT ``fb.R``).
R10. Default mode (s2.1, s2.2): delta = 0.5 ("Copa's default mode"; parameter ``delta``).
R11. Mode switch (s2.2, paraphrased, not quoted): all-Copa flows see the queue "nearly empty"
    at least once every five RTTs; a sender that has not seen it in that long assumes a
    buffer-filling competitor and turns competitive. "Nearly empty": the queueing delay d_q is
    at most a tenth of the largest queueing delay seen over the last four RTTs, RTTmax - RTTmin
    (RTTmax the largest sample in that time; "at most", not "less than", so that a path with no
    delay variation reads empty; the 10% and the four RTTs are the paper's numbers as this
    reader recalls them). Evaluated at every ACK; an RTT is srtt. The flow starts in default
    mode and is competitive at an ACK when no ACK of the last 5 srtt found the queue nearly
    empty.
R12. Competitive mode (s2.2): "the sender varies 1/delta according to whatever buffer-filling
    algorithm one wishes to emulate ... we perform AIMD on 1/delta based on packet success or
    loss ... In competitive mode, delta <= 0.5. When Copa switches from competitive mode to
    default mode, it resets delta to 0.5." Additive increase by one per RTT (how: reading
    ``ai``); multiplicative decrease: 1/delta halved at a step that detects new losses, at most
    once per window (TCP's once per RTT), and never below 2 (delta <= 0.5).
R13. Loss (s2.2, s5): Copa's default mode does not use loss as a signal: its window and
    velocity ignore losses and timeouts (retransmission is the transport's). Losses act only
    through R12 in competitive mode.

How a step becomes ACKs
=======================

The step's newly ACKed bytes (``fb.acked`` since the previous step) arrive as packets of alpha
bytes: packet j (counting from the flow's first byte) is ACKed once the ACKed bytes reach
j * alpha; the bytes of a packet not yet complete carry over to the next step. The first step
has no baseline (what was ACKed before it is history): its ACKs are not acted on. Each ACK is
acted on in turn (R3-R8, R11, R12). Its RTT sample is read from the model's delay reading of
the step (``fb.delay``: the newest ACKed byte waited at least delay[0] and at most delay[1]
steps in the queue, delay[1] None when unbounded): R + d, d drawn per ACK (``ack_rtt``) among
five evenly spaced points of [delay[0], delay[1]] ([delay[0], delay[0] + R] when unbounded: a
restriction of an unbounded range to finitely many draws). Every sample is one the model
allows for the step's newest byte; the earlier bytes of a step share its reading.

Arithmetic
==========

Comparisons, the RTT filters and the velocity are exact (fractions). Three quantities are
rounded down to a multiple of ``GRAIN`` = 2^-32 (packets or steps), because exact fractions
would double their denominators' length at every ACK (cwnd + v/(delta cwnd)) or grow them
without bound (the EWMA): the window change of R6 (toward zero, so cwnd moves by less than
2^-32 packets less than the paper's real arithmetic would), srtt (R4) and the per-ACK increase
of 1/delta (R12). Guard beyond the paper: cwnd never falls below ``min_cwnd`` packets (default
2: a window of doubling velocity would otherwise turn negative).

Readings (the paper is open; ``choose(what, n)``, alternative 0 the default)
=========================================================================

``ack_rtt`` (5, drawn for every ACK): the RTT sample, R + delay[0] + k/4 (delay[1] - delay[0])
    for alternative k (see "How a step becomes ACKs").
``ack_time`` (2): when the step's ACKs arrive, for the time windows of R3, R5, R11: 0 all at
    the step's end t; 1 spread evenly over the step, the k-th of n at t - 1 + k/n.
``tie`` (2): a window at whose end cwnd equals its value at the start (neither "larger" nor
    "smaller"): 0 nothing is set, v and the count of R7 unchanged; 1 the direction becomes
    "neither", v = 1 and the count restarts.
``doubling_start`` (2): "start doubling v only after the direction has remained the same for
    three RTTs": 0 v doubles at the end of the third consecutive window in one direction and
    of every one after it; 1 from the end of the fourth on.
``ss_growth`` (2): how slow start doubles cwnd once per RTT: 0 cwnd += 1 packet per ACKed
    packet (a window's ACKs double it); 1 cwnd doubles at each window's end (R7's windows).
``ai`` (2): R12's additive increase of 1/delta by one per RTT: 0 1/delta += 1/cwnd per ACK; 1
    1/delta += 1 at each window's end.

Construction: ``CopaPaperSender(start, slow_start=True, choose=None)``. The first cwnd is
``start.values["cwnd"]`` (bytes) if given, else ``init_cwnd`` packets (default 10, "a larger
initial cwnd, like many deployed TCP implementations"). Parameters from ``start.params``:
``delta`` (0.5), ``init_cwnd`` (10), ``min_cwnd`` (2), ``step_seconds`` (none), ``competitive``
(true: R11-R12 on; false: default mode only). Every choice drawn is logged in ``picks``
(name, step, alternative), every ACK acted on in ``acks`` (:class:`AckRecord`) and every window
ended in ``windows`` (:class:`WindowRecord`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ccac.senders.interface import Choose, ConcreteSender, Decision, Feedback, SenderStart, exact

F = Fraction

#: The ``choose`` points: name -> number of alternatives (see the module docstring).
CHOICES: dict[str, int] = {"ack_rtt": 5, "ack_time": 2, "tie": 2, "doubling_start": 2, "ss_growth": 2, "ai": 2}

#: The rounding quantum of the window change, srtt and 1/delta's increase (module docstring).
GRAIN = F(1, 2**32)


def grain_floor(x: Fraction) -> Fraction:
    """``x`` rounded down to a multiple of GRAIN."""
    return F(math.floor(x / GRAIN)) * GRAIN


@dataclass(frozen=True)
class AckRecord:
    """One ACK acted on: the step it arrived in and its arrival time, its RTT sample and the
    ``ack_rtt`` alternative that gave it, the filters after it (R3-R5), whether R1's comparison
    said increase, whether it was acted on in slow start (R8; the ACK that ends slow start was),
    and the state after it: cwnd (packets) before and after, v, 1/delta, mode."""

    t: int
    time: Fraction
    rtt: Fraction
    pick: int
    srtt: Fraction
    standing: Fraction
    rtt_min: Fraction
    increase: bool
    cwnd_before: Fraction
    cwnd: Fraction
    v: int
    inv_delta: Fraction
    competitive: bool
    slow_start: bool


@dataclass(frozen=True)
class WindowRecord:
    """One window of R7 ended at an ACK of step ``t``: cwnd (packets) at its start and end, the
    direction it set (+1 up, -1 down, 0 neither, None: cwnd did not move and nothing was set),
    the count of consecutive windows in that direction, and v after it."""

    t: int
    cwnd_start: Fraction
    cwnd_end: Fraction
    direction: int | None
    same: int
    v: int
    slow_start: bool


class CopaPaperSender(ConcreteSender):
    """Copa per the paper, acting per ACK (module docstring: R1-R13)."""

    def __init__(self, start: SenderStart, slow_start: bool = True, choose: Choose | None = None) -> None:
        self._choose: Choose = choose if choose is not None else (lambda what, n: 0)
        p = start.params
        self.alpha = exact(start.alpha)
        self.delta0 = exact(p.get("delta", F(1, 2)))
        self.min_cwnd = exact(p.get("min_cwnd", 2))
        self.competitive_on = bool(p.get("competitive", True))
        step_seconds = p.get("step_seconds")
        self.min_window = F(10) / exact(step_seconds) if step_seconds is not None else None
        self.picks: list[tuple[str, int, int]] = []
        self.r_time = self._pick("ack_time", -1)
        self.r_tie = self._pick("tie", -1)
        self.r_doubling = self._pick("doubling_start", -1)
        self.r_ss = self._pick("ss_growth", -1)
        self.r_ai = self._pick("ai", -1)
        given = start.value("cwnd", None)
        self.cwnd = exact(given) / self.alpha if given is not None else exact(p.get("init_cwnd", 10))
        self.cwnd = max(self.cwnd, self.min_cwnd)
        self.slow_start = slow_start
        self.v = 1
        self.direction: int | None = None
        self.same = 0
        self.inv_delta = 1 / self.delta0
        self.competitive = False
        self.srtt: Fraction | None = None
        self.standing: Fraction | None = None
        self.rtt_min: Fraction | None = None
        self.samples: deque[tuple[Fraction, Fraction]] = deque()    # (arrival time, RTT), recent
        self.minima: deque[tuple[Fraction, Fraction]] = deque()     # RTTmin's window (R5, step_seconds)
        self.last_empty: Fraction | None = None                     # last ACK that found the queue nearly empty
        self.prev_acked: Fraction | None = None
        self.prev_lost: Fraction | None = None
        self.marker: Fraction | None = None      # the byte that ends the current window (R7)
        self.window_cwnd = self.cwnd
        self.halved_in_window = False
        self.acks: list[AckRecord] = []
        self.windows: list[WindowRecord] = []

    # ------------------------------------------------------------------ helpers
    def _pick(self, what: str, t: int) -> int:
        n = CHOICES[what]
        k = self._choose(what, n)
        if not 0 <= k < n:
            raise ValueError(f"choose({what!r}, {n}) gave {k}")
        self.picks.append((what, t, k))
        return k

    def _rtt_sample(self, fb: Feedback) -> tuple[Fraction, int]:
        """An RTT sample for one ACK of step ``fb.t`` from the model's delay reading."""
        low, high = fb.delay
        top = F(high) if high is not None else F(low + fb.R)
        k = self._pick("ack_rtt", fb.t)
        return fb.R + low + (top - low) * F(k, 4), k

    def _filters(self, now: Fraction, rtt: Fraction) -> None:
        """R3-R5 after a sample ``rtt`` arriving at ``now``."""
        self.srtt = rtt if self.srtt is None else grain_floor(F(7, 8) * self.srtt + rtt / 8)
        self.samples.append((now, rtt))
        keep = max(self.srtt / 2, 4 * self.srtt)
        while self.samples[0][0] < now - keep:
            self.samples.popleft()
        if self.min_window is None:
            self.rtt_min = rtt if self.rtt_min is None else min(self.rtt_min, rtt)
        else:
            while self.minima and self.minima[-1][1] >= rtt:     # a sliding-window minimum
                self.minima.pop()
            self.minima.append((now, rtt))
            while self.minima[0][0] < now - self.min_window:
                self.minima.popleft()
            self.rtt_min = self.minima[0][1]
        self.standing = min(r for at, r in self.samples if at >= now - self.srtt / 2)

    def _mode(self, now: Fraction) -> None:
        """R11 at an ACK arriving at ``now`` (R3-R5 already updated); R12's reset on leaving."""
        assert self.srtt is not None and self.standing is not None and self.rtt_min is not None
        rtt_max = max(r for at, r in self.samples if at >= now - 4 * self.srtt)
        if self.standing - self.rtt_min <= (rtt_max - self.rtt_min) / 10:
            self.last_empty = now
        was = self.competitive
        self.competitive = (self.competitive_on and self.last_empty is not None
                            and now - self.last_empty > 5 * self.srtt)
        if was and not self.competitive:
            self.inv_delta = 1 / self.delta0

    def _window_end(self, t: int) -> None:
        """R7 (and R8's, R12's once-per-window parts) at the end of a window."""
        recorded: int | None = None
        if self.slow_start:
            if self.r_ss == 1:
                self.cwnd = 2 * self.cwnd
        else:
            moved = (self.cwnd > self.window_cwnd) - (self.cwnd < self.window_cwnd)
            if moved != 0 or self.r_tie == 1:
                recorded = moved
                self._velocity(moved)
            if self.competitive and self.r_ai == 1:
                self.inv_delta += 1
        self.windows.append(WindowRecord(t, self.window_cwnd, self.cwnd, recorded, self.same, self.v,
                                         self.slow_start))
        self.window_cwnd = self.cwnd
        self.halved_in_window = False

    def _velocity(self, moved: int) -> None:
        """R7: a window that moved cwnd up (+1), down (-1) or, under ``tie`` 1, neither (0)."""
        if moved != 0 and moved == self.direction:
            self.same += 1
            if self.same >= 3 + self.r_doubling:
                self.v *= 2
        else:
            self.direction, self.same, self.v = moved, 1, 1

    def _on_ack(self, fb: Feedback, now: Fraction, position: Fraction) -> None:
        """One ACK: its last byte is the ``position``-th byte ACKed, it arrives at ``now``."""
        rtt, k = self._rtt_sample(fb)
        self._filters(now, rtt)
        self._mode(now)
        assert self.standing is not None and self.rtt_min is not None and self.srtt is not None
        before, in_slow_start = self.cwnd, self.slow_start
        if self.competitive and self.r_ai == 0:
            self.inv_delta += grain_floor(1 / self.cwnd)
        increase = self.cwnd * (self.standing - self.rtt_min) <= self.inv_delta * self.standing     # R1, R6
        if self.slow_start:
            if not increase:                                       # R8: lambda > lambda_t
                self.slow_start = False
                self.v, self.direction, self.same = 1, None, 0
            elif self.r_ss == 0:
                self.cwnd += 1
        else:
            change = grain_floor(self.v * self.inv_delta / self.cwnd)
            self.cwnd = self.cwnd + change if increase else max(self.cwnd - change, self.min_cwnd)
        self.acks.append(AckRecord(fb.t, now, rtt, k, self.srtt, self.standing, self.rtt_min, increase, before,
                                   self.cwnd, self.v, self.inv_delta, self.competitive, in_slow_start))
        assert self.marker is not None
        if position + fb.lost >= self.marker:
            self._window_end(fb.t)
            self.marker = fb.sent + self.alpha

    # ------------------------------------------------------------------ the step
    def decide(self, fb: Feedback) -> Decision:
        if self.marker is None:
            self.marker = fb.sent + self.alpha
        if self.prev_acked is not None:
            assert self.prev_lost is not None
            if fb.lost > self.prev_lost and self.competitive and not self.halved_in_window:     # R12
                self.inv_delta = max(self.inv_delta / 2, 1 / self.delta0)
                self.halved_in_window = True
            first = math.floor(self.prev_acked / self.alpha) + 1
            last = math.floor(fb.acked / self.alpha)
            n = last - first + 1
            for i, j in enumerate(range(first, last + 1), start=1):
                now = F(fb.t) if self.r_time == 0 else fb.t - 1 + F(i, n)
                self._on_ack(fb, now, j * self.alpha)
        self.prev_acked, self.prev_lost = fb.acked, fb.lost
        return Decision(self.cwnd * self.alpha, 2 * self.cwnd * self.alpha / self.pacing_rtt(fb.R))

    def pacing_rtt(self, R: int) -> Fraction:
        """RTTstanding of the latest ACK, or the handshake RTT ``R`` before any (R9)."""
        return self.standing if self.standing is not None else F(R)

    def adopt(self, decision: Decision) -> None:
        """The transport applied ``decision``: its window becomes this sender's cwnd."""
        self.cwnd = max(F(decision.cwnd) / self.alpha, self.min_cwnd)

    def state(self) -> dict[str, Any]:
        return {
            "cwnd": self.cwnd * self.alpha,
            "cwnd_packets": self.cwnd,
            "v": self.v,
            "inv_delta": self.inv_delta,
            "competitive": self.competitive,
            "slow_start": self.slow_start,
            "srtt": self.srtt,
            "standing": self.standing,
            "rtt_min": self.rtt_min,
            "direction": self.direction,
        }
