"""ETC (Han et al., "ETC: An Elastic Transmission Control Using End-to-End Available Bandwidth
Perception", USENIX ATC 2024), written from the paper only (main text, Algorithm 1, appendices):
a concrete sender for the conformance harness (:mod:`ccac.senders.interface`).

Units: time in steps (now = the decision time t; ACK times are exact reals), rates in bytes per
step, sizes in bytes; the MSS (the paper's packet size L) is ``start.alpha``.

How the event-driven algorithm is mapped onto steps (interface, not the paper):
  * At decision time t the sender handles, in time order, the ACKs that arrived in (t-1, t]
    (``fb.acks``: one per packet, the kernel-style per-packet feedback 4.3 allows) and the
    10 ms timer expiries that fell in (t-1, t]; every handler runs with ``now = t`` (decisions
    only happen at integer times, so a duration d "has elapsed" at the first step boundary
    >= its start + d).
  * What Send() emits during the handling of step t is step t's sending: the micro-bursts go
    in ``Decision.bursts`` (the harness sends them back to back at the step's start at ten
    times C), a partial batch flushed by the timer branch is one shorter burst (reading
    ``flush`` 0) or paced over the step (``flush`` 1); ``rate`` is their total, ``cwnd =
    fb.inflight + rate`` (ETC has no window).
  * The harness's line rate limits a step's bursts to ``line * C`` bytes (param ``line``,
    default 10): a burst that does not fit waits, as bytes that are pending (interface limit).
  * The interface needs rate > 0 in every step. If the algorithm sends nothing in a step (only
    possible when the 10 ms timer is longer than a step, tick > 1), the sender paces a sliver
    ``idle_fraction * s`` (default s/1000) and counts it as sent (``remain`` decreases by it):
    an interface artefact, not the paper.
  * The sender knows which packets it sent in bursts and when (the harness's send times are
    exact: packet k of the step's back-to-back bytes leaves at t-1 + bytes/(line*C)), so it
    tells a burst's first and last packets' ACKs apart by their send times (the paper's
    unique packet numbers, 3.2).

Rules (section, quote):
 R1  (4.1, 6.1) micro-bursts are the pacing unit: "a micro-burst refers to a train of at least
     two packets"; "we set the size of micro-burst to 8" (param ``burst`` = N).
 R2  (Alg. 1 L2-4, 4.2) "It calculates the pending bytes according to the time interval from the
     last sending time and the current sending rate (line 3)": pending = s*(now - t_last) +
     remain, bytes_in_burst = N*MSS; the rate in force when Send() runs applies to the whole
     interval (L24 precedes L25).
 R3  (Alg. 1 L5-8) "If the pending bytes outweigh the size of a micro-burst, a micro-burst is
     sent and the remaining unsent bytes are recorded": if pending >= N*MSS: send N packets,
     remain = pending - N*MSS, t_last = now (one burst per call: ``send_loop``).
 R4  (Alg. 1 L9-11, 4.2) "If the pending bytes have been waiting for 10ms, these bytes are sent
     even if they cannot form a micro-burst": else if now - t_last >= 10 ms: send pending bytes,
     t_last = now (10 ms = ``tick`` steps: param ``tick``, else 0.01 s / ``step_seconds``, else
     1 step).
 R5  (Alg. 1 L20-27, 4.2) "The sender checks whether a micro-burst should be sent at every ACK
     arrival"; "The timer expiration triggers the Send() function": Send() after every ACK and
     at every timer expiry; RateUpdate only on ACKs.
 R6  (3.2) "we only regard the RTT of the first packet in each micro-burst as an effective
     sample": RTT samples (for dRTT, RTT_min and the RTT estimate) come only from the first
     packet of each micro-burst.
 R7  (3.2, 5.1 Eq. 5) "The pulling rate is set by the ETC sender as the instantaneous receipt
     rate of the acknowledged micro-bursts"; "we record the time interval from the arrival of
     the first packet until the last byte arrives (dt2), considering that N - 1 packets are
     received during this period"; Rp = (N-1) L / dt2: a sample is the bytes of packets 2..n of
     the burst over the time between the ACKs of its first and its last packet (the ACK arrival
     times stand for the receiver's arrival times; for a full burst, (N-1)*MSS).
 R8  (Alg. 1 L21) "update Rp" on every ACK, from the samples (``rp_filter``) and the correction
     (``rp_correct``).
 R9  (3.2) bandwidth detection stage: "When a flow is first established ... we refer to this
     first stage as the bandwidth detection stage": the sender starts in stage 1 (or in
     ``values["stage"]``).
 R10 (3.2) "Once the sender does not observe a significant increase (less than 1.1x or even no
     increase) in the corresponding receiving rate of the past 8 RTTs after a sending rate
     increase ... We refer to this as the stable convergence stage": 8 RTTs after a sending-
     rate increase made in stage 1, if r < 1.1 * (r at the increase), enter stage 2.
 R11 (3.2) "R_p = min(k x r_max, R_p), in which r_max is maintained as the maximum receiving
     rate": in stage 2 Rp is capped at k*r_max (param ``k``; the paper gives no value).
 R12 (3.2) "When the receiving rate exhibits a sharp increase again (more than 1.1x), ETC exits
     the stable convergence stage"; "r_max will only be updated when the rate increases by
     more than 1.1x": r > 1.1*r_max sets r_max = r and returns to stage 1.
 R13 (3.2) "When the receiving rate is far from r_max, we consider that a new flow joins in ...
     therefore r_max is sampled again": r far below r_max (``rmax_far``) sets r_max = r.
 R14 (4.3) "In cases where the feedback frequency of IACK is deemed insufficient to enable the
     calculation of the pulling rate ... we opt to set the pulling rate as 1.25x of the current
     max receiving rate" (param ``fallback_gain``; when it applies: ``fallback``).
 R15 (footnote, 3.1-3.2) r: "This is the average receipt rate within a past time window ... ETC
     adopts a time window of eight RTTs": r = bytes ACKed in (now - 8 RTT, now] / 8 RTT (the
     time observed so far if shorter), updated on every ACK (Alg. 1 L22).
 R16 (Alg. 1 L23) "if now - tupdate >= RTT then RateUpdate()".
 R17 (Alg. 1 L13, 3.3) "if dRTT < 0 || now - tupdate >= 8RTTs" accelerate ("when the RTT
     decreases or eight RTTs (by default) have passed from the last rate increase"; param
     ``accel_on_equal`` for 3.1's "When the RTT holds or decreases"; ``force_after`` = 8;
     ``force_from`` "update" (Alg.) or "increase" (3.3's text)).
 R18 (Alg. 1 L14, Eq. 1) s = s * log_alpha(Rp/s + alpha - 1), alpha = e ("The base of the log
     function is e", 6.1; param ``base``), then t_update = now.
 R19 (Alg. 1 L16-17, 3.4) "else if dRTT >= threshold": s = (s + r)/2 ("We reduce the sending
     rate to r + (s - r)/2"), t_update = now (param ``theta``, in steps; the paper gives no
     value).
 R20 (3.4) "We update the estimated BDP with the product of the new sending rate and the minimum
     delay. ETC then checks whether the inflight packets have exceeded one recalculated BDP; if
     so ... we flush the accumulated bytes with a sub-sending rate (eta*s)": if inflight >
     s*RTT_min, pace at eta*s (param ``eta`` = 0.3, 6.1) for t_d = (inflight - s*RTT_min) /
     ((1 - eta) s) (Eq. 2); "After consuming the queue, we resume the sending rate".
 R21 (6.1) "The initial sending rate is 10 packets per RTT": s0 = 10*MSS/RTT0, unless
     ``values`` gives "srate" or "rate".
 R22 (5.2) "ETC senders replace the traditional slow start and, instead, increase the sending
     rate according to Equation 1": no slow start; start-up is R17/R18 from R21.
 R23 (4.3, A.2) no rate reaction to loss is given; none to timeouts (not mentioned): losses and
     ``fb.timeout`` are ignored.

Readings where the paper is open (alternative 0 first; ``choose(what, n)`` picks the others,
each once at construction):
  rtt_est (3): the "RTT" of the update gate (L23), of "8RTTs" (L13) and of the 8-RTT windows:
      0 latest effective sample (R6); 1 RTT_min; 2 smoothed (EWMA, gain 1/8, of the samples).
  rtt_before (2): the RTT before the first effective sample (RTT0 of R21 too): 0 the path's
      propagation RTT R (the handshake's RTT on an idle path); 1 the latest RTT of any ACKed
      packet (R until one arrives).
  rtt_min (2): RTT_min's window (it must be able to rise, 6.4): 0 the samples of the last
      8 latest-RTTs; 1 all samples (lifetime minimum).
  drtt (2): dRTT: 0 the latest effective sample minus the one before it (consecutive
      micro-bursts); 1 the latest minus the one that was latest at the last rate update (the
      first sample before any update).
  rp_filter (4): Rp from its samples: 0 the latest sample; 1 the mean of the samples of the
      last 8 RTTs; 2 their maximum; 3 their mean after removing outliers beyond 3 sigma (App. F)
      (1-3 fall back to the latest sample if none is that recent).
  rp_correct (3): "constantly corrected by the maximum average receiving rate" (3.1): 0 only
      stage 2's cap min(k r_max, Rp) (3.2's formula); 1 that cap in both stages; 2 in stage 1
      Rp = max(Rp, r_max), in stage 2 the cap.
  sample_acks (2): a sample needs 0 the ACKs of the burst's first and last packets (Eq. 5);
      1 the first and last ACKed packets of the burst (bytes of the packets after the first
      ACKed one up to the last ACKed one), taken once the burst's fate is known.
  fallback (2): R14 applies 0 when a micro-burst's fate is known (``fb.known_through``) and it
      gave no sample (its feedback did not allow one): Rp sample = 1.25 r_max; 1 never (the
      harness ACKs every packet, so feedback is never too sparse).
  partial_batch (2): 0 a partial batch flushed by L10 and sent back to back with >= 2 packets
      is a micro-burst ("a train of at least two packets", 4.1) and gives RTT and Rp samples
      with its own size; 1 only N-packet bursts give samples.
  flush (2): L10's "send pending bytes": 0 at once (one shorter burst, packets of MSS, the last
      one short); 1 paced evenly over the step.
  flush_remain (2): after L10: 0 remain = 0 (4.2: remain holds "the remaining unsent bytes",
      and all were sent); 1 remain kept (Algorithm 1 as printed, which does not reset it).
  send_loop (2): L5: 0 "if" (at most one micro-burst per Send() call); 1 "while".
  timer (2): the 10 ms timer: 0 periodic (expiries every tick from the first decision);
      1 one-shot, armed at every send for t_last + 10 ms.
  clamp (2): Eq. 1 when Rp < s (f < 1): 0 as written (s decreases); 1 f clamped at 1.
  decel_clamp (2): L17 when r > s: 0 as written ((s + r)/2 > s); 1 s = min(s, (s + r)/2).
  drain_update (2): L19 and the drain: 0 as written (t_update = now at the decision; updates may
      fire during the drain; a new deceleration restarts or ends it, an acceleration keeps it
      at eta times the new s); 1 no update during the drain and t_update = the drain's end, so
      "the rate remains unchanged for at least an RTT" after it (3.4).
  r_window (2): r's window: 0 8 RTTs (the footnote); 1 one RTT ("current receiving rate", 3.1).
  rmax_stage1 (2): r_max in stage 1: 0 the same 1.1x rule (R12); 1 a plain running maximum.
  rmax_far (2): "far from r_max": 0 r < r_max/1.1 (the paper's only factor); 1 r < r_max/2.
  stable_entry (2): R10's check: 0 every increase in stage 1 is checked 8 RTTs after it; 1 only
      the latest increase (a new one restarts the 8 RTTs).
  rtt_lead (2): which micro-bursts give R6's RTT sample: 0 every one; 1 only the first one of
      each step (the harness sends a step's bursts back to back, so a later burst's first packet
      waits behind the earlier bursts, which in the paper are spaced by the ACKs that trigger
      them).
  no_rp (2): an acceleration before any Rp exists (Eq. 1 undefined): 0 the branch is taken with
      s unchanged (t_update = now); 1 nothing happens (t_update kept).
Readings without alternatives: now = t for every handler of step t; t_last, t_update and the
last increase start at R - 1 (the sender's take-over), remain at 0; the timer's phase starts at
R - 1; RTT_min before any effective sample is the RTT before samples; dRTT needs two samples
(one and a reference for ``drtt`` 1): before that only the forced acceleration can fire; the
drain's inflight is ``fb.inflight`` plus what this step already sent; the drain restores the new
s; r_max "sampled again" = set to the current r; the fallback value is added as a sample; the
3-sigma filter uses the population standard deviation.
Parameters (``start.params``; paper value or reading as default): burst 8, base "e", eta 3/10,
force_after 8, theta 1/10 (steps; reading), k 5/4 (reading: 4.3's 1.25), fallback_gain 5/4,
accel_on_equal False (Alg. 1), force_from "update" (Alg. 1), growth 11/10 (3.2's 1.1x), window 8
(RTTs), tick / step_seconds, line 10, idle_fraction 1/1000.
Not implemented: IACK thinning and the loss ACK's layout (4.3: the harness gives per-packet
ACKs, which 4.3 allows), retransmissions and packet numbering (the harness's transport), the
receiver side.

Why one file over 500 lines: Algorithm 1 and the paper's text are quoted rule by rule next to
the code that follows them, and every open reading is a named choice beside its rule.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from ccac.senders.interface import (AckedPacket, Choose, ConcreteSender, Decision, Feedback, SenderStart, exact,
                                    to_decimal)

F = Fraction

CHOICES: dict[str, int] = {
    "rtt_est": 3, "rtt_before": 2, "rtt_min": 2, "drtt": 2, "rp_filter": 4, "rp_correct": 3,
    "sample_acks": 2, "fallback": 2, "partial_batch": 2, "flush": 2, "flush_remain": 2,
    "send_loop": 2, "timer": 2, "clamp": 2, "decel_clamp": 2, "drain_update": 2, "r_window": 2,
    "rmax_stage1": 2, "rmax_far": 2, "stable_entry": 2, "no_rp": 2, "rtt_lead": 2,
}

PREC = 50


def eq1(rp: Fraction, s: Fraction, base: Fraction | None) -> tuple[Fraction, Fraction]:
    """Eq. 1: f = log_alpha(Rp/s + alpha - 1) (alpha = e when ``base`` is None), and s*f, both
    computed to 50 digits."""
    with localcontext() as ctx:
        ctx.prec = PREC
        a = Decimal(1).exp() if base is None else to_decimal(base)
        f = (to_decimal(rp / s) + a - 1).ln() / a.ln()
        return Fraction(f), Fraction(to_decimal(s) * f)


def fifty(x: Fraction) -> Fraction:
    """``x`` to 50 significant digits (the precision of the non-linear functions): the rate after
    a deceleration and the smoothed RTT are kept so, else their denominators grow without
    bound from the ACK timings they average."""
    with localcontext() as ctx:
        ctx.prec = PREC
        return Fraction(to_decimal(x))


def _sqrt(x: Fraction) -> Fraction:
    with localcontext() as ctx:
        ctx.prec = PREC
        return Fraction(to_decimal(x).sqrt())


@dataclass
class Burst:
    """Bytes sent back to back at a step's start: a micro-burst of N packets or a flushed
    partial batch. ``times``/``sizes``: its packets' send times and sizes."""

    step: int
    times: list[Fraction]
    sizes: list[Fraction]
    micro: bool                      # counts as a micro-burst (gives samples)
    full: bool                       # N packets of the MSS
    lead: bool = True                # the first bytes sent back to back in its step
    acked: dict[int, Fraction] = field(default_factory=dict)   # packet index -> ACK arrival
    rtt: Fraction | None = None
    sample: Fraction | None = None
    resolved: bool = False


class ETCPaperSender(ConcreteSender):
    """ETC's sender (Algorithm 1 with 3.2-3.4 and 4), rate-based with micro-bursts."""

    def __init__(self, start: SenderStart, choose: Choose | None = None) -> None:
        pick = choose or (lambda what, n: 0)
        self.alt = {what: pick(what, n) for what, n in CHOICES.items()}
        p = {name: v for name, v in start.params.items() if v is not None}
        self.R, self.C, self.mss = start.R, exact(start.C), exact(start.alpha)
        self.N = int(p.get("burst", 8))
        base = p.get("base", "e")
        self.base = None if base in ("e", None) else exact(base)
        self.eta = exact(p.get("eta", F(3, 10)))
        self.force_after = exact(p.get("force_after", 8))
        self.theta = exact(p.get("theta", F(1, 10)))
        self.k = exact(p.get("k", F(5, 4)))
        self.fallback_gain = exact(p.get("fallback_gain", F(5, 4)))
        self.accel_on_equal = bool(p.get("accel_on_equal", False))
        self.force_from = str(p.get("force_from", "update"))
        self.growth = exact(p.get("growth", F(11, 10)))
        self.window = exact(p.get("window", 8))
        self.line = exact(p.get("line", 10))
        self.idle_fraction = exact(p.get("idle_fraction", F(1, 1000)))
        if p.get("tick") is not None:
            self.tick = exact(p["tick"])
        elif p.get("step_seconds") is not None:
            self.tick = F(1, 100) / exact(p["step_seconds"])
        else:
            self.tick = F(1)
        self.B = self.N * self.mss                      # bytes_in_burst (L4)
        t0 = F(start.R - 1)                             # the take-over instant
        self.t0 = t0
        # RTT measurements
        self.rtt_any: Fraction | None = None            # latest RTT of any packet
        self.rtts: list[tuple[Fraction, Fraction]] = []  # effective samples (arrival, rtt)
        self.srtt: Fraction | None = None
        self.rtt_ref: Fraction | None = None            # drtt 1: the sample at the last update
        # pulling rate and receiving rate
        self.samples: list[tuple[Fraction, Fraction]] = []   # (time, Rp sample)
        self.sample_log: list[dict[str, Any]] = []
        rp0 = start.value("rp", None)
        if rp0 is not None:
            self.samples.append((t0, exact(rp0)))
        self.ack_times: list[Fraction] = []
        self.ack_cum: list[Fraction] = [F(0)]           # prefix sums of ACKed sizes
        self.r = F(0)
        rmax0 = start.value("rmax", None)
        self.r_max: Fraction | None = None if rmax0 is None else exact(rmax0)
        self.stage = int(start.value("stage", 1))
        self.checks: list[tuple[Fraction, Fraction]] = []    # stage-1 increases (time, r then)
        # rate control
        rate0 = start.value("srate", None)
        if rate0 is None:
            rate0 = start.value("rate", None)
        self.s = exact(rate0) if rate0 is not None else 10 * self.mss / self._rtt_before()
        self.t_last = t0
        self.remain = exact(start.value("remain", 0))
        self.t_update = t0
        self.t_increase = t0
        self.draining = False
        self.drain_until = F(0)
        self.drtt_now: Fraction | None = None
        # sending bookkeeping
        self.bursts: list[Burst] = []                   # unresolved, by step
        self.by_time: dict[Fraction, tuple[Burst, int]] = {}
        self.now = F(start.R)
        self.step_bursts: list[Fraction] = []
        self.step_paced = F(0)
        self.step_inflight = F(0)
        # logs (for tests and plots)
        self.accels: list[dict[str, Any]] = []
        self.decels: list[dict[str, Any]] = []
        self.sent_log: dict[int, tuple[tuple[Fraction, ...], Fraction, str]] = {}
        self.decisions = 0

    # ------------------------------------------------------------------ RTT estimates
    def _rtt_before(self) -> Fraction:
        if self.alt["rtt_before"] == 1 and self.rtt_any is not None:
            return self.rtt_any
        return F(self.R)

    def rtt_min(self) -> Fraction:
        if not self.rtts:
            return self._rtt_before()
        if self.alt["rtt_min"] == 1:
            return min(v for _, v in self.rtts)
        lo = self.now - self.window * self.rtts[-1][1]
        return min([v for x, v in self.rtts if x > lo] + [self.rtts[-1][1]])

    def rtt(self) -> Fraction:
        """The RTT of the gate, the 8-RTT timers and windows (``rtt_est``)."""
        if not self.rtts:
            return self._rtt_before()
        if self.alt["rtt_est"] == 1:
            return self.rtt_min()
        if self.alt["rtt_est"] == 2:
            assert self.srtt is not None
            return self.srtt
        return self.rtts[-1][1]

    def drtt(self) -> Fraction | None:
        if self.alt["drtt"] == 0:
            return self.rtts[-1][1] - self.rtts[-2][1] if len(self.rtts) >= 2 else None
        if not self.rtts or self.rtt_ref is None:
            return None
        return self.rtts[-1][1] - self.rtt_ref

    def _effective_rtt(self, at: Fraction, sample: Fraction) -> None:
        self.rtts.append((at, sample))
        self.srtt = sample if self.srtt is None else fifty(self.srtt + (sample - self.srtt) / 8)
        if self.rtt_ref is None:
            self.rtt_ref = sample

    # ------------------------------------------------------------------ pulling rate
    def rp_base(self) -> Fraction | None:
        if not self.samples:
            return None
        mode = self.alt["rp_filter"]
        if mode == 0:
            return self.samples[-1][1]
        lo = self.now - self.window * self.rtt()
        vals = [v for x, v in self.samples if x > lo] or [self.samples[-1][1]]
        if mode == 2:
            return max(vals)
        mean = sum(vals, F(0)) / len(vals)
        if mode == 1:
            return mean
        sigma = _sqrt(sum(((v - mean) ** 2 for v in vals), F(0)) / len(vals))
        kept = [v for v in vals if abs(v - mean) <= 3 * sigma] or vals
        return sum(kept, F(0)) / len(kept)

    def rp(self) -> Fraction | None:
        """The pulling rate Eq. 1 uses (R8, R11, ``rp_correct``)."""
        base = self.rp_base()
        if base is None or self.r_max is None:
            return base
        mode = self.alt["rp_correct"]
        if self.stage == 2 or mode == 1:
            return min(self.k * self.r_max, base)
        if mode == 2:
            return max(base, self.r_max)
        return base

    def _add_sample(self, at: Fraction, value: Fraction, **info: Any) -> None:
        self.samples.append((at, value))
        self.sample_log.append(dict(info, at=at, value=value, step=int(self.now)))

    # ------------------------------------------------------------------ receiving rate
    def _update_r(self) -> None:
        """L22: r over the last window, then r_max and the stages (R10, R12, R13, R15)."""
        rtt = self.rtt()
        W = (self.window if self.alt["r_window"] == 0 else 1) * rtt
        lo = self.now - W
        i = bisect_right(self.ack_times, lo)
        span = min(W, self.now - self.t0)
        self.r = (self.ack_cum[-1] - self.ack_cum[i]) / span
        r = self.r
        if self.r_max is None:
            self.r_max = r
        elif r > self.growth * self.r_max:
            self.r_max = r
            if self.stage == 2:
                self.stage = 1
                self.checks = []
        elif self.alt["rmax_stage1"] == 1 and self.stage == 1 and r > self.r_max:
            self.r_max = r
        elif r * (self.growth if self.alt["rmax_far"] == 0 else 2) < self.r_max:
            self.r_max = r
        if self.stage == 1:
            due = [c for c in self.checks if self.now - c[0] >= self.window * rtt]
            for c in due:
                self.checks.remove(c)
                if r < self.growth * c[1]:
                    self.stage = 2
                    self.checks = []
                    break

    # ------------------------------------------------------------------ Algorithm 1
    def _pace(self) -> Fraction:
        return self.eta * self.s if self.draining else self.s

    def _emit(self, size: Fraction, micro: bool, full: bool) -> None:
        """Bytes sent back to back at the step's start, after the step's earlier bursts."""
        start, C = self.now - 1, self.C
        done = sum(self.step_bursts, F(0))
        times, sizes, k = [], [], F(0)
        while k < size:
            piece = min(self.mss, size - k)
            k += piece
            times.append(start + (done + k) / (self.line * C))
            sizes.append(piece)
        b = Burst(int(self.now), times, sizes, micro and len(sizes) >= 2, full, not self.step_bursts)
        self.bursts.append(b)
        if b.micro:
            for i, x in enumerate(times):
                self.by_time[x] = (b, i)
        self.step_bursts.append(size)

    def _fits(self, size: Fraction) -> bool:
        return not self.step_bursts or sum(self.step_bursts, F(0)) + size <= self.line * self.C

    def send(self) -> None:
        """Send() (L1-11)."""
        s = self._pace()
        pending = s * (self.now - self.t_last) + self.remain
        if pending >= self.B:
            while pending >= self.B and self._fits(self.B):
                self._emit(self.B, True, True)
                self.remain = pending - self.B
                self.t_last = self.now
                pending = self.remain
                if self.alt["send_loop"] == 0:
                    break
        elif self.now - self.t_last >= self.tick:
            if self.alt["flush"] == 0:
                self._emit(pending, self.alt["partial_batch"] == 0, False)
            else:
                self.step_paced += pending
            if self.alt["flush_remain"] == 0:
                self.remain = F(0)
            self.t_last = self.now

    def rate_update(self) -> None:
        """RateUpdate() (L12-19)."""
        if self.alt["drain_update"] == 1 and self.draining:
            return
        now, rtt = self.now, self.rtt()
        d = self.drtt()
        self.drtt_now = d
        since = self.t_update if self.force_from == "update" else self.t_increase
        falling = d is not None and (d < 0 or (self.accel_on_equal and d == 0))
        forced = now - since >= self.force_after * rtt
        if falling or forced:
            rp = self.rp()
            if rp is None:
                if self.alt["no_rp"] == 1:
                    return
                f, new = F(1), self.s
            else:
                f, new = eq1(rp, self.s, self.base)
                if self.alt["clamp"] == 1 and f < 1:
                    f, new = F(1), self.s
            old = self.s
            self.s = new
            self._updated()
            if new > old:
                self.t_increase = now
                if self.stage == 1:
                    if self.alt["stable_entry"] == 1:
                        self.checks = []
                    self.checks.append((now, self.r))
            self.accels.append({"t": int(now), "old": old, "new": new, "rp": rp, "f": f, "drtt": d,
                                "forced": not falling, "stage": self.stage})
        elif d is not None and d >= self.theta:
            old = self.s
            new = fifty((self.s + self.r) / 2)
            if self.alt["decel_clamp"] == 1:
                new = min(new, self.s)
            self.s = new
            inflight = self.step_inflight + sum(self.step_bursts, F(0)) + self.step_paced
            bdp = new * self.rtt_min()
            td = None
            if inflight > bdp:
                td = (inflight - bdp) / ((1 - self.eta) * new)
                self.draining, self.drain_until = True, now + td
            else:
                self.draining = False
            self._updated()
            self.decels.append({"t": int(now), "old": old, "new": new, "r": self.r, "drtt": d,
                                "inflight": inflight, "bdp": bdp, "td": td})

    def _updated(self) -> None:
        self.t_update = self.now
        if self.rtts:
            self.rtt_ref = self.rtts[-1][1]

    def new_ack(self, a: AckedPacket) -> None:
        """NewACK (L20-25), with the measurements it implies (R6, R7, R15)."""
        self.rtt_any = a.acked_at - a.sent_at
        self.ack_times.append(a.acked_at)
        self.ack_cum.append(self.ack_cum[-1] + a.size)
        hit = self.by_time.get(a.sent_at)
        if hit is not None:
            b, i = hit
            b.acked[i] = a.acked_at
            if i == 0 and (self.alt["rtt_lead"] == 0 or b.lead):
                b.rtt = a.acked_at - a.sent_at
                self._effective_rtt(a.acked_at, b.rtt)
            if i == len(b.times) - 1 and 0 in b.acked and b.sample is None:
                self._sample_from(b, 0, i)
        # L21 (Rp is recomputed from the samples where it is used), L22
        self._update_r()
        if self.now - self.t_update >= self.rtt():      # L23
            self.rate_update()
        self.send()                                      # L25

    def _sample_from(self, b: Burst, i: int, j: int) -> None:
        dt = b.acked[j] - b.acked[i]
        if dt > 0:
            bytes_ = sum(b.sizes[i + 1:j + 1], F(0))
            b.sample = bytes_ / dt
            self._add_sample(b.acked[j], b.sample, bytes=bytes_, dt=dt, first=b.acked[i], last=b.acked[j],
                             packets=len(b.sizes), full=b.full, sent=b.step)

    def _resolve(self, known_through: int) -> None:
        """Micro-bursts whose fate is known: the first/last-ACKed sample (``sample_acks`` 1),
        the sparse-feedback fallback (R14, ``fallback`` 0)."""
        keep = []
        for b in self.bursts:
            if b.step > known_through:
                keep.append(b)
                continue
            b.resolved = True
            if b.micro and b.sample is None:
                got = sorted(b.acked)
                if self.alt["sample_acks"] == 1 and len(got) >= 2:
                    self._sample_from(b, got[0], got[-1])
                if b.sample is None and self.alt["fallback"] == 0 and self.r_max is not None:
                    self._add_sample(self.now, self.fallback_gain * self.r_max, fallback=True, sent=b.step)
            for x in b.times:
                self.by_time.pop(x, None)
        self.bursts = keep

    # ------------------------------------------------------------------ the step
    def _timer_fires(self, t: int) -> list[Fraction]:
        if self.alt["timer"] == 0:
            lo, out = F(t - 1), []
            k = (lo - self.t0) // self.tick + 1
            x = self.t0 + k * self.tick
            while x <= t:
                out.append(x)
                x += self.tick
            return out
        x = self.t_last + self.tick
        return [x] if x <= t else []

    def decide(self, fb: Feedback) -> Decision:
        t = fb.t
        self.now = F(t)
        self.decisions += 1
        self.step_bursts, self.step_paced = [], F(0)
        self.step_inflight = fb.inflight
        if self.draining and self.now >= self.drain_until:          # R20: the drain is over
            self.draining = False
            if self.alt["drain_update"] == 1:
                self.t_update = self.now
        events: list[tuple[Fraction, int, AckedPacket | None]] = [(a.acked_at, 0, a) for a in fb.acks]
        events += [(x, 1, None) for x in self._timer_fires(t)]
        events.sort(key=lambda e: (e[0], e[1]))
        armed = self.t_last
        for _, _order, a in events:
            if a is not None:
                self.new_ack(a)
            elif self.alt["timer"] == 0 or self.t_last == armed:     # a one-shot timer re-arms at sends
                self.send()
        self._resolve(fb.known_through)
        rate = sum(self.step_bursts, F(0)) + self.step_paced
        kind = "bursts" if self.step_bursts else "paced"
        if rate == 0:                                                # interface: rate > 0
            sliver = self.idle_fraction * self._pace()
            self.step_paced = sliver
            self.remain -= sliver
            rate, kind = sliver, "idle"
        self.sent_log[t] = (tuple(self.step_bursts), self.step_paced, kind)
        return Decision(fb.inflight + rate, rate, tuple(self.step_bursts))

    def adopt(self, decision: Decision) -> None:
        """The transport sent ``decision`` at this step instead: its bytes are this step's
        sending (t_last = now, nothing pending), its bursts the step's bursts."""
        for b in [b for b in self.bursts if b.step == int(self.now)]:
            self.bursts.remove(b)
            for x in b.times:
                self.by_time.pop(x, None)
        self.step_bursts = []
        for size in decision.bursts:
            self._emit(size, True, size == self.B)
        self.t_last, self.remain = self.now, F(0)

    def state(self) -> dict[str, Any]:
        return {"rate": self.s, "pace": self._pace(), "rp": self.rp(), "r": self.r, "rmax": self.r_max,
                "stage": self.stage, "drain": self.draining, "remain": self.remain, "rtt": self.rtt(),
                "drtt": self.drtt_now, "t_update": self.t_update}
