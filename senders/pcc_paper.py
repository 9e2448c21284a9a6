"""PCC Vivace (NSDI 2018) and PCC Proteus (SIGCOMM 2020) as concrete senders, written from the
two papers' text only (``/work/shared/seeds/pcc-vivace-nsdi2018.md``, "V" below, and
``/work/shared/seeds/pcc-proteus-sigcomm2020.md``, "P" below).

:class:`VivacePaperSender` (``mode`` "latency" or "loss") and :class:`ProteusPaperSender`
(``mode`` "P", "S" or "H") share the PCC machinery (monitor intervals, per-packet measurements,
probing, the gradient step, the MI timeout, slow start); each adds what its paper adds.

Units and time
==============
Time is in steps (``start.R`` steps make one minimum RTT); rates are in bytes per step. The
utility functions take rates in Mbps (``x = r * link_mbps / C``) and RTT deviations in seconds
(``steps * step_seconds``); RTT gradients and regression errors are seconds per second, the same
in steps per step. The gradient gamma is in utility per Mbps, the step ``theta0 * m * gamma`` in
Mbps, converted back to bytes/step. A decision happens at each integer time t and fixes the rate
of step t (the interval (t-1, t]); an MI that starts at decision s0 and lasts n steps sends in
steps s0 .. s0+n-1 (times (s0-1, s0+n-1]) and ends at decision s0+n, where the next MI starts.
All state is exact (``Fraction``); powers and square roots are computed with ``decimal`` to 50
digits.

Parameters (``start.params``, else the paper's value)
======================================================
``t`` 0.9, ``b`` 900 (0 in Vivace's loss mode), ``c`` 11.35 (V 5, P 4.1, P 6); ``eps`` 0.05,
``theta0`` 1, ``omega0`` 0.05, ``delta`` 0.1, ``flt`` 0.01, ``mi_timeout`` 4 (RTTs) (V Table 1);
``link_mbps`` 100 for Vivace (V 5.1.1, 5.1.3: "100 Mbps bandwidth") and 50 for Proteus (P 6:
"we use Emulab tests with a 50 Mbps bandwidth"); ``step_seconds`` 0.015 (the brief's default);
Vivace: ``mode`` "latency", ``double_check`` True; Proteus: ``d`` 1500 (P 6),
``threshold`` (Proteus-H, in units of C; the paper sets it from the application, see
``threshold_default`` below), ``regression_tolerance`` True, ``trending`` "free" ("off": no
trending tolerance), ``ack_filter`` True. Fixed from the paper: k = 6 MIs, G1 = 2, G2 = 4
(P 5), ACK-interval ratio 50 (P 5), three probe pairs per Proteus decision (P 5), the EWMA gains
1/8 (average) and 1/4 (deviation) of "how smoothed RTT and RTT deviation are updated in the Linux
kernel" (P 5; the gains are the Linux/RFC 6298 ones, a reading of "similar to").

Rules implemented
=================
Shared (Vivace's rate control, which Proteus adopts: P 3 "allowing these utility functions to
share the same rate control algorithm (e.g., the gradient-based rate control in PCC Vivace
[17])", P 4.3 "Since we adopt the rate control algorithm from PCC Vivace")

1. Consecutive monitor intervals, one rate each (V 2: "Time is divided into consecutive
   intervals, called Monitor Intervals (MIs), each devoted to “testing” the implications for
   performance of sending at a certain rate"; P 3: "The sender uses different sending rates in
   consecutive time intervals called monitor intervals (MIs)"). MIs tile time; the rate changes
   only at MI boundaries (except an immediate MI-timeout halving, rule 13).
2. MI duration one RTT (V Table 1: "MI duration 1 RTT"; P A.1: "Proteus ... employs an
   RTT-long monitor interval"): n = ceil(RTT) steps (at least 1), the RTT estimate per
   ``mi_rtt``, fixed when the MI starts or re-read at each boundary per ``mi_end``. Before the
   first RTT sample the estimate is ``start.R`` (reading: the connection's handshake sample on
   an empty path; the papers are silent).
3. Per-MI statistics from the packets sent in it, once their fate is known (V 2: "PCC
   aggregates selective ACKs for packets sent in a MI"; P 3: "calculates the utility for each MI
   when all packets sent in that MI are acknowledged or lost"). An ACK or a detected loss
   belongs to the MI whose steps hold its send time; an MI is complete when
   ``fb.known_through >= its last step`` (each of its packets ACKed or detected lost). Packets
   sent before the first decision belong to no MI (their ACKs still feed the RTT estimates and
   the ACK filter).
4. RTT gradient by least-squares regression (V 4.3: "Vivace assembles the 2-dimensional data
   set of (sampled packet RTT, time of sampling) for the packets in a MI, and uses the
   linear-regression-generated slope (the “ β coefficient”) as the RTT gradient"); x axis per
   ``regression_x`` (Vivace's "time of sampling" = ACK arrival; Proteus' regression error uses
   "sent_time_i", i.e. send time). Fewer than two samples (or one x value): gradient 0
   (reading; the papers are silent).
5. Loss rate L = bytes detected lost / bytes sent, of the MI (P 4.1: "L is the observed loss
   rate"; the unit, bytes, is a reading: the harness counts bytes).
6. Utility rate x_i per ``utility_rate`` (P 4.1: "x_i is the sending rate of sender i"), in
   Mbps.
7. Probe pairs (V 4.2: "Suppose the current sending rate is r . Then, in the next two MIs, the
   sender will test the rates r(1 + eps) and r(1 - eps)"); Vivace's order per ``probe_order``,
   Proteus' order random per pair (P 5: "Vivace tries a pair of sending rates (in random order)"),
   drawn with ``choose("probe_first", 2)``. The probe MIs of one decision are sent back to back.
8. What is sent while a decision waits for its results (the papers are silent): further MIs, at
   the rate ``wait_rate`` says; their utilities do not enter the decision. The next decision
   starts at the first MI boundary after the results are in.
9. Gradient (V 4.2: "estimate the gradient of the utility function to be
   gamma = (u1 - u2) / (2 eps r)"), r the base rate in Mbps.
10. Rate step with the confidence amplifier (V 4.2: "After a sender makes tau consecutive
    decisions to change the rate in the same direction, theta is set to m(tau) theta0 (and so
    the rate is changed by Delta_r = m(tau) theta0 gamma)"; "Setting m(0) = 1"; "When the
    direction ... is reversed ..., tau is set back to 0"; Table 1: "m(tau) tau (tau <= 3)
    2 tau - 3 (tau > 3)"); the text-vs-table conflict on m(0) per ``amplifier``. A decision with
    gamma = 0 (or no direction) changes nothing, tau and k included (reading).
11. Dynamic change boundary (V 4.2: "Whenever Vivace’s computed rate change (Delta_r) exceeds
    omega r , the effective rate change is capped at omega r"; "omega is updated to
    omega = omega0 + k delta following k consecutive rate adjustments in which the gradient-based
    rate-change Delta_r exceeded the dynamic change boundary"; "Whenever Delta_r <= r omega,
    Vivace recalibrates the value of k ... to be the smallest value for which Delta_r <= r
    omega"; "k is reset to 0 when the direction of rate adjustment changes"). Readings:
    ``boundary_cmp``, ``boundary_raise``. The paper gives no minimum rate: the new rate is kept at
    least ``start.alpha / start.R`` (one MSS per minimum RTT; not from the paper), so a rate stays
    positive.
12. Slow start, behind the constructor flag ``slow_start`` (V 4: "the sender doubles sending
    rate every MI and permanently exits slow start when its empirically-derived utility value
    decreases for the first time. It then enters the online learning phase"); the rate it
    continues from per ``ss_exit``. By default the sender starts in online learning.
13. MI timeout (V 4.3: "if Vivace has not learned the fate of all packets sent in an MI when a
    certain timeout T_timeout (a certain number of RTTs) expires, Vivace halves the sending rate";
    "The measurements Vivace did before the sudden change are no longer meaningful"; Table 1:
    "MI timeout T_timeout 4 RTT"). On expiry: the rate is halved (``timeout_rate``), every MI
    in flight and the decision in progress are abandoned (their results ignored; reading of "no
    longer meaningful"), and a new decision starts (``timeout_when``); tau, k per
    ``timeout_state``. The timer's start and RTT: ``timeout_start``, ``timeout_rtt``. In slow
    start the current rate is halved and doubling goes on from it. Applied to Proteus too
    (inherited rate control).

The transport's own retransmission timeout (``fb.timeout``) is ignored: neither paper has the
CCA react to it (PCC's reaction to missing feedback is rule 13). ``state()`` reports ``rate``
(sent this step), ``base`` (r), ``phase`` ("online" or "slow_start"), ``mi``, ``mi_kind``
("probe", "wait", "ss"), ``tau``, ``k`` and ``omega``.

Vivace only

14. Utility, Eq. 1 (its display is lost in the markdown; V 3's surviving text: "reward increase
    in throughput (via x_i^t), and penalize increase in both latency (b x_i d(RTT_i)/dT) and loss
    (c x_i x L_i)"; P 4.1 calls Proteus-P "the PCC Vivace utility function [17] with a minor
    modification – negative RTT gradient is ignored"):
    u = x^t - b x g - c x L, the gradient not clipped.
15. Modes (V 5: "evaluating Vivace when the latency penalty coefficient is b = 0 ... “Vivace-Loss”
    ... “Vivace-Latency”"): ``mode`` "loss" forces b = 0.
16. Low-pass filter (V 4.3: "treats latency gradient measurement smaller than flt_latency as 0";
    Table 1: 0.01), per ``lowpass``.
17. Double check (V 4.3: "We address the specific case that sending faster results in lower
    loss. ... Vivace “double checks” by re-running the same pair of rates. If this produces the
    same outcome in terms of which rate has higher utility, Vivace averages the
    utility-gradients; otherwise it throws out the original abnormal measurement"), when
    ``double_check``: trigger L(r(1+eps)) < L(r(1-eps)) strictly; one re-run at most per
    decision; "same outcome" = same sign of u1 - u2; disagreement per ``double_check_disagree``.
    Only in the one-pair reading of ``vivace_pairs``.

Proteus only

18. Proteus-P utility, Eq. 1: u_P = x^t - b x max{0, g} - c x L (P 4.1).
19. RTT deviation (P 4.2: "sigma(RTT) = sqrt(1/n sum_j (RTT_j - mean RTT)^2), where n is the
    number of RTT samples in the corresponding MI"), in seconds (P 6: "with RTT deviation in
    units of seconds"), over the MI's samples kept by rule 21.
20. Proteus-S utility, Eq. 2: u_S = u_P - d x sigma (P 4.3); Proteus-H, Eq. 3: u_P if
    x_i < threshold, else u_S (P 4.4: "there is no explicit switch in the control algorithm; it
    happens implicitly, simply by comparing utility values of different sending rates"), the rate
    compared per ``h_rate``. The threshold and the mode can be changed while running
    (:meth:`ProteusPaperSender.set_threshold`, :meth:`set_mode`; P 3: "The application may select
    or re-select a utility function in real-time"); an MI is scored with the function in force
    when it completes (reading). :func:`video_threshold` is P 4.4's video policy ("Sufficient
    rate rule: threshold <= G bitrate_max. We set G = 1.5"; "Buffer limit rule: threshold <=
    1/(2-f) bitrate_current ... applies when f < 2"; "Emergency rule: threshold = infinity").
21. Per-ACK RTT sample filter, when ``ack_filter`` (P 5: "we use the “ACK interval” (the time
    between reception of two consecutive ACKs) to filter out abnormal RTT samples, when the ratio
    between two consecutive ACK intervals exceeds a threshold (set to 50 in our implementation).
    All RTT samples are then ignored until an RTT is observed that is below the exponentially
    weighted moving RTT average"). The filter only removes RTT samples (not bytes from the loss
    rate or the rate). Readings: ``ack_ratio``, ``ack_zero``, ``ack_filter_trigger``,
    ``ack_filter_end``, ``ack_ewma`` (gain 1/8, started at the first sample; compared before the
    sample is folded in).
22. Regression-error tolerance, when ``regression_tolerance`` (P 5: "RTT_i* = avg(RTT_i) +
    rtt_gradient (sent_time_i - avg(sent_time_i))"; "regression_error = sqrt(1/n sum_i (RTT_i -
    RTT_i*)^2) 1/MI_duration"; "if the calculated RTT gradient’s magnitude is less than
    regression_error, we treat both the RTT gradient and the RTT deviation as 0"). MI_duration
    per ``regression_duration``.
23. Trending tolerance, when ``trending`` is "free" (P 5: "a sender maintains the RTT deviation
    and average RTT of the most recent k MIs (e.g., k = 6 ...)"; trending_gradient = the
    least-squares slope of the stored average RTTs against j = 1..k; trending_deviation = the
    population standard deviation of the stored deviations; "we also maintain the exponentially
    weighted moving average and per-sample deviation for both trending metrics"; the pseudocode
    "if |trending_gradient - avg_trend_grad| < G1 * dev_trend_grad : rtt_gradient <- 0; if
    trending_deviation - avg_trend_dev < G2 * dev_trend_dev : rtt_deviations <- 0", G1 = 2,
    G2 = 4). Stored values are the MI's raw mean RTT and deviation (seconds), before any
    zeroing; an MI without samples is not stored. Readings: ``trend_mis``, ``trend_warmup``,
    ``trend_update``, ``trend_init``, and how it combines with rule 22: ``combine``.
24. Majority rule (P 5: "we let Proteus senders try each pair of sending rates three times
    (instead of twice), and change the sending rate based on the majority decision from the
    three pairs of trials"): three pairs per decision, each pair votes sign(gamma_j); readings
    ``majority``, ``majority_step``. No double check in Proteus (reading: P never mentions it;
    the majority replaces Vivace's repeated pairs).
25. Vivace's fixed low-pass threshold in Proteus: per ``proteus_lowpass`` (P 5: "a fixed
    tolerance threshold for RTT gradient is used by PCC Vivace [17] (any RTT gradient with a
    smaller magnitude is ignored). But a fixed threshold is ineffective ... We therefore design
    more robust mechanisms").

Readings (``choose(what, n)``; alternative 0 is the default)
=============================================================
Called once, at construction, unless marked "per event".

* ``mi_rtt`` (4): the RTT that sets an MI's length (and the timeout): 0 the latest RTT sample;
  1 the smoothed RTT (EWMA, gain 1/8, of all samples); 2 the minimum sample; 3 the mean RTT of
  the most recently completed MI (before one: the latest sample).
* ``mi_end`` (2): 0 the MI's length ceil(RTT) is fixed when it starts; 1 it ends at the first
  boundary where its elapsed steps reach the current RTT estimate.
* ``regression_x`` (2): 0 the paper's own x axis (Vivace: the time of sampling, the ACK's
  arrival; Proteus: the send time, as its regression error uses); 1 the other one.
* ``utility_rate`` (3): x_i is 0 the MI's chosen sending rate; 1 its measured sending rate
  (bytes sent / MI length); 2 its goodput ((bytes sent - bytes lost) / MI length; V 2 lists
  "achieved goodput").
* ``probe_order`` (Vivace, 2): 0 as written, r(1+eps) then r(1-eps); 1 random per pair (P 5's
  account of Vivace). ``probe_first`` (2, per event, per pair when random): 0 r(1+eps) first,
  1 r(1-eps) first.
* ``vivace_pairs`` (2): 0 one pair per decision, plus the double check (V 4.2, 4.3); 1 two
  pairs, the rate changing only if both give the same direction, by their mean gamma (P 5's
  account: "tries a pair of sending rates (in random order) twice, and changes sending rate only
  if they imply a consistent rate change direction").
* ``lowpass`` (Vivace, 2): 0 a gradient g < flt is taken as 0 (literal "smaller than", so
  negative gradients are zeroed too); 1 |g| < flt (P 5's account: "smaller magnitude").
* ``proteus_lowpass`` (2): 0 Proteus does not apply flt (replaced by rules 21-23); 1 it also
  zeroes |g| < flt, after rules 22-23.
* ``amplifier`` (3): 0 m(0) = 1 (text) and Table 1 for tau >= 1, tau = the number of earlier
  consecutive decisions in the current decision's direction (steps m = 1, 1, 2, 3, 5, 7, ...);
  1 tau counts the current decision too (m = 1, 2, 3, 5, ...); 2 Table 1 literally, m(0) = 0,
  tau as in 0 (m = 0, 1, 2, 3, 5, ...).
* ``boundary_cmp`` (2): 0 the size |Delta_r| is compared with omega r and capped (a "rate
  change" read as a size; the cap is "at omega r"); 1 signed: only increases exceed and are
  capped, the recalibration uses the signed Delta_r.
* ``boundary_raise`` (2): 0 an exceeding step is capped by the boundary it exceeded, then
  k += 1; 1 k += 1 first, the step capped by the raised boundary.
* ``double_check_disagree`` (2): 0 the re-run pair's gamma is used; 1 both pairs are discarded
  and a new decision probes around the same rate.
* ``wait_rate`` (2): while waiting for a decision's results send 0 the base rate r ("the
  current sending rate is r"); 1 the last probe rate.
* ``timeout_start`` (3): the MI timer starts 0 when the MI starts sending; 1 when it ends; 2 at
  the send time of its earliest byte whose fate is unknown (a per-packet timer).
* ``timeout_rtt`` (2): 0 T_timeout uses the RTT estimate at the check; 1 the one the MI
  started with.
* ``timeout_rate`` (2): halve 0 the base rate r; 1 the rate being sent (then the base).
* ``timeout_when`` (2): the halved rate starts 0 at once (the current MI is cut); 1 at the
  next MI boundary.
* ``timeout_state`` (2): 0 tau and k are kept; 1 they are reset to 0 (omega = omega0).
* ``ss_exit`` (2, with slow start): online learning starts from 0 the rate being sent when the
  decrease is seen; 1 the rate of the MI with the higher utility.
* ``h_rate`` (Proteus-H, 2): the threshold is compared with 0 the MI's x_i (Eq. 3); 1 the base
  rate r.
* ``threshold_default`` (Proteus-H without a ``threshold`` parameter, 3): 0 C/2; 1 C/4;
  2 infinity (always u_P). The paper sets it from the application (G bitrate_max, ...).
* ``ack_ratio`` (2): the filter triggers when 0 I_n / I_{n-1} > 50 (a gap after short
  intervals); 1 either ratio of the two consecutive intervals > 50.
* ``ack_zero`` (2): a zero interval in the ratio's denominator (ACKs at the same instant) with a
  positive numerator 0 is an infinite ratio and triggers; 1 never triggers.
* ``ack_filter_trigger`` (2): the sample whose ACK triggers the filter is 0 ignored; 1 kept.
* ``ack_filter_end`` (2): the first sample below the average 0 is kept; 1 is ignored too.
* ``ack_ewma`` (2): the moving RTT average the filter compares with is 0 the EWMA of all
  samples; 1 the EWMA of the samples the filter kept.
* ``regression_duration`` (3): MI_duration is 0 the MI's length in steps; 1 the RTT estimate
  that set it; 2 the span of its acknowledged packets' send times (its length if 0).
* ``combine`` (3): 0 sequential: the per-MI tolerance zeroes, then the trending check zeroes
  (both as written); 1 the per-MI zeroing holds only where the trend is also normal (the
  trending check un-hides a trend: "The above per-MI error tolerance may hide a slow but
  persistent RTT increase ... To avoid such late reaction"); 2 the trending check replaces the
  per-MI one once it has a verdict.
* ``trend_mis`` (2): the history stores 0 every completed MI; 1 probe MIs only.
* ``trend_warmup`` (2): before k MIs are stored the trending check 0 gives no verdict; 1 is
  computed over the j >= 2 stored MIs.
* ``trend_update`` (2): a new trending sample is compared with 0 the averages before it is
  folded in; 1 the averages after ("the updated trending gradient").
* ``trend_init`` (2): the first sample x starts 0 avg = x, dev = |x|/2 (RFC 6298 / Linux);
  1 avg = x, dev = 0.
* ``majority`` (2): a direction wins with 0 at least two of the three votes; 1 more votes than
  the other direction (a pair with gamma = 0 abstains).
* ``majority_step`` (2): gamma is 0 the mean of the winning pairs' gammas; 1 the mean of all
  three (no change if its sign is not the majority's).

Not implemented
===============
* V 3.3's loss-only utility (Eq. 3) for set bandwidth shares, and V 5.2.1's "initial
  ignorance" start-up experiment: variants the paper evaluates, not the default sender.
* P 4.4's threshold policy needs the application's video state; it is provided as
  :func:`video_threshold` for a caller to feed :meth:`ProteusPaperSender.set_threshold`.
* Vivace's footnote 6 (an automatically adjusted flt_latency) is future work in the paper.

Why one long file: Vivace and Proteus share one numbered list of rules, quoted from both
papers (the docstring above is a quarter of the file), and one machinery; splitting the two
senders would split the list a reader holds against the papers.
"""

from __future__ import annotations

import decimal
from abc import abstractmethod
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ccac.senders.interface import Choose, ConcreteSender, Decision, Feedback, SenderStart, exact, to_decimal

F = Fraction

TREND_K = 6            # P 5: "k = 6 in our experiments"
G1, G2 = F(2), F(4)    # P 5: "we conservatively select G1 = 2 and G2 = 4"
ACK_RATIO = F(50)      # P 5: "(set to 50 in our implementation)"
PROTEUS_PAIRS = 3      # P 5: "three times (instead of twice)"
EWMA_GAIN, DEV_GAIN = F(1, 8), F(1, 4)  # P 5: "similar to ... the Linux kernel"


def power(x: Fraction, e: Fraction) -> Fraction:
    """x ** e for x >= 0, to 50 digits."""
    if x <= 0:
        return F(0)
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        return F(to_decimal(x) ** to_decimal(e))


def sqrt(x: Fraction) -> Fraction:
    if x <= 0:
        return F(0)
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        return F(to_decimal(x).sqrt())


def _ceil(x: Fraction) -> int:
    return -((-x.numerator) // x.denominator)


def _sign(x: Fraction) -> int:
    return (x > 0) - (x < 0)


def slope(xs: list[Fraction], ys: list[Fraction]) -> Fraction:
    """Least-squares slope of ys against xs (0 with fewer than two distinct xs)."""
    n = len(xs)
    if n < 2:
        return F(0)
    mx, my = sum(xs, F(0)) / n, sum(ys, F(0)) / n
    sxx = sum(((x - mx) ** 2 for x in xs), F(0))
    if sxx == 0:
        return F(0)
    return sum(((x - mx) * (y - my) for x, y in zip(xs, ys)), F(0)) / sxx


def pstdev(ys: list[Fraction]) -> Fraction:
    """Population standard deviation (divide by n)."""
    if not ys:
        return F(0)
    m = sum(ys, F(0)) / len(ys)
    return sqrt(sum(((y - m) ** 2 for y in ys), F(0)) / len(ys))


def video_threshold(bitrate_max: Fraction, bitrate_current: Fraction, free_chunks: Fraction,
                    rebuffering: bool, G: Fraction = F(3, 2)) -> Fraction | None:
    """P 4.4's switching threshold for video (None = infinity): the largest value with
    threshold <= G bitrate_max and, when f < 2, threshold <= bitrate_current / (2 - f); the
    emergency rule (infinity) while rebuffering."""
    if rebuffering:
        return None
    th = G * bitrate_max
    if free_chunks < 2:
        th = min(th, bitrate_current / (2 - free_chunks))
    return th


@dataclass(eq=False)
class MI:
    """One monitor interval: sends in steps start .. start + steps - 1."""

    idx: int
    start: int
    rate: Fraction
    kind: str                          # "probe", "wait", "ss"
    rtt0: Fraction                     # the RTT estimate when it started
    length: int | None = None          # fixed length (mi_end 0)
    end: int | None = None             # its last step, once it has ended
    sign: int = 0                      # probe: +1 for r(1+eps), -1 for r(1-eps)
    pair: Any = None
    samples: list[tuple[Fraction, Fraction, Fraction]] = field(default_factory=list)  # sent, acked, rtt
    lost: Fraction = F(0)
    done: bool = False
    cut: bool = False                  # ended early by an MI timeout (timeout_when 0)
    abandoned: bool = False            # its results are not used (MI timeout, slow start exit)
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Pair:
    base: Fraction
    order: list[int]
    mis: dict[int, MI] = field(default_factory=dict)
    round: Any = None

    def complete(self) -> bool:
        return len(self.mis) == 2 and all(m.done for m in self.mis.values())

    def gamma(self, eps: Fraction, to_mbps: Fraction) -> Fraction:
        u1, u2 = self.mis[1].metrics["u"], self.mis[-1].metrics["u"]
        return (u1 - u2) / (2 * eps * self.base * to_mbps)

    def outcome(self) -> int:
        return _sign(self.mis[1].metrics["u"] - self.mis[-1].metrics["u"])


@dataclass(eq=False)
class Round:
    """One rate-control decision: its probe pairs around the base rate."""

    base: Fraction
    pairs: list[Pair] = field(default_factory=list)
    rechecked: bool = False


class _PCCPaper(ConcreteSender):
    """What Vivace and Proteus share (rules 1-13)."""

    name = "pcc"
    default_link_mbps = F(100)

    def __init__(self, start: SenderStart, choose: Choose | None = None, slow_start: bool = False) -> None:
        self.start = start
        self.choose: Choose = choose if choose is not None else (lambda what, n: 0)
        p = start.params
        get = lambda k, d: exact(p[k]) if p.get(k) is not None else F(d)  # noqa: E731
        self.t_exp, self.b, self.c = get("t", F(9, 10)), get("b", 900), get("c", F(1135, 100))
        self.eps, self.theta0 = get("eps", F(5, 100)), get("theta0", 1)
        self.omega0, self.delta = get("omega0", F(5, 100)), get("delta", F(1, 10))
        self.flt, self.timeout_rtts = get("flt", F(1, 100)), get("mi_timeout", 4)
        self.link_mbps = get("link_mbps", self.default_link_mbps)
        self.step_seconds = get("step_seconds", F(15, 1000))
        self.C = F(start.C)
        self.to_mbps = self.link_mbps / self.C        # Mbps per (byte/step)
        ch = self.choose
        self.r_mi_rtt = ch("mi_rtt", 4)
        self.r_mi_end = ch("mi_end", 2)
        self.r_regx = ch("regression_x", 2)
        self.r_urate = ch("utility_rate", 3)
        self.r_amp = ch("amplifier", 3)
        self.r_bcmp = ch("boundary_cmp", 2)
        self.r_braise = ch("boundary_raise", 2)
        self.r_wait = ch("wait_rate", 2)
        self.r_to_start = ch("timeout_start", 3)
        self.r_to_rtt = ch("timeout_rtt", 2)
        self.r_to_rate = ch("timeout_rate", 2)
        self.r_to_when = ch("timeout_when", 2)
        self.r_to_state = ch("timeout_state", 2)
        self.slow_start = slow_start
        self.r_ss_exit = ch("ss_exit", 2) if slow_start else 0
        init = start.value("base", None)
        if init is None:
            init = start.value("rate", None)
        self.base = F(init) if init is not None and F(init) > 0 else self.C / 2
        # RTT estimates (steps); before any sample, the handshake's (start.R)
        self.latest: Fraction | None = None
        self.srtt: Fraction | None = None
        self.min_rtt: Fraction | None = None
        self.last_mi_rtt: Fraction | None = None
        # rate control
        self.phase = "slow_start" if slow_start else "online"
        self.tau, self.k = 0, 0
        self.last_dir = 0
        self.round: Round | None = None
        self.round_done = True            # no decision in progress: start one at the next boundary
        self.queue: list[tuple[Pair, int]] = []  # probe MIs still to send
        self.last_probe_rate: Fraction | None = None
        self.ss_prev_u: tuple[Fraction, Fraction] | None = None  # (utility, rate) of the previous ss MI
        self.ss_rate: Fraction | None = None
        self.cur: MI | None = None
        self.open: list[MI] = []          # MIs not yet complete nor abandoned, in order
        self.mi_count = 0
        self.log: list[MI] = []           # completed MIs (for tests and plots)
        self.mis: list[MI] = []           # every MI started (for tests and plots)
        self.timeouts = 0
        self.decisions = 0
        self.steps: list[tuple[Fraction, Fraction, Fraction, int]] = []  # (r, Delta_r, omega cap, m)

    # ---------------------------------------------------------------- RTT estimate
    def rtt(self) -> Fraction:
        R = F(self.start.R)
        if self.latest is None:
            return R
        if self.r_mi_rtt == 1:
            return self.srtt  # type: ignore[return-value]
        if self.r_mi_rtt == 2:
            return self.min_rtt  # type: ignore[return-value]
        if self.r_mi_rtt == 3 and self.last_mi_rtt is not None:
            return self.last_mi_rtt
        return self.latest

    # ---------------------------------------------------------------- the step
    def decide(self, fb: Feedback) -> Decision:
        t = fb.t
        self._ingest(fb)
        self._complete(fb)
        self._timeouts(fb)
        self._boundary(t)
        assert self.cur is not None
        rate = self.cur.rate
        return Decision(fb.inflight + rate, rate)

    def adopt(self, decision: Decision) -> None:
        if decision.rate is not None and decision.rate > 0 and self.cur is not None:
            self.cur.rate = F(decision.rate)

    def state(self) -> dict[str, Any]:
        cur = self.cur
        return {"rate": cur.rate if cur else self.base, "base": self.base, "phase": self.phase,
                "mi": cur.idx if cur else -1, "mi_kind": cur.kind if cur else "", "tau": self.tau,
                "k": self.k, "omega": self.omega0 + self.k * self.delta}

    # ---------------------------------------------------------------- feedback
    def _keep_sample(self, acked_at: Fraction, rtt: Fraction) -> bool:
        """Proteus' per-ACK filter (rule 21); Vivace keeps every sample."""
        return True

    def _owner(self, sent_at: Fraction) -> MI | None:
        step = _ceil(F(sent_at))
        for mi in self.open:
            if mi.start <= step and (mi.end is None or step <= mi.end):
                return mi
        return None

    def _ingest(self, fb: Feedback) -> None:
        for ack in fb.acks:
            rtt = F(ack.acked_at) - F(ack.sent_at)
            keep = self._keep_sample(F(ack.acked_at), rtt)
            self.latest = rtt
            self.srtt = rtt if self.srtt is None else self.srtt + EWMA_GAIN * (rtt - self.srtt)
            self.min_rtt = rtt if self.min_rtt is None else min(self.min_rtt, rtt)
            mi = self._owner(ack.sent_at)
            if keep and mi is not None:
                mi.samples.append((F(ack.sent_at), F(ack.acked_at), rtt))
        for loss in fb.losses:
            mi = self._owner(loss.sent_at)
            if mi is not None:
                mi.lost += F(loss.size)

    def _complete(self, fb: Feedback) -> None:
        while self.open and self.open[0].end is not None and fb.known_through >= self.open[0].end:
            mi = self.open.pop(0)
            mi.done = True
            self._measure(mi, fb)
            self.log.append(mi)
            if "mean_rtt" in mi.metrics:
                self.last_mi_rtt = mi.metrics["mean_rtt"]
            self._on_complete(mi)

    # ---------------------------------------------------------------- per-MI measurement
    def _measure(self, mi: MI, fb: Feedback) -> None:
        assert mi.end is not None
        steps = mi.end - mi.start + 1
        sent = fb.outcome.sent[mi.end] - fb.outcome.sent[mi.start - 1]
        L = mi.lost / sent if sent > 0 else F(0)
        L = min(L, F(1))
        if self.r_urate == 0:
            x = mi.rate
        elif self.r_urate == 1:
            x = sent / steps
        else:
            x = max(F(0), sent - mi.lost) / steps
        st = [s for s, _, _ in mi.samples]
        at = [a for _, a, _ in mi.samples]
        rtts = [r for _, _, r in mi.samples]
        xs = self._regression_axis(st, at)
        g = slope(xs, rtts)
        m = mi.metrics
        m.update(steps=steps, sent=sent, L=L, x=x, n=len(rtts), g_raw=g, g=g, send_times=st, rtts=rtts)
        if rtts:
            m["mean_rtt"] = sum(rtts, F(0)) / len(rtts)
        self._tolerate(mi)
        m["u"] = self.utility(mi)

    @abstractmethod
    def _regression_axis(self, sent: list[Fraction], acked: list[Fraction]) -> list[Fraction]:
        """The x axis of the MI's RTT regression: Vivace's time of sampling, Proteus' send time."""

    @abstractmethod
    def _tolerate(self, mi: MI) -> None:
        """Apply the paper's noise tolerances to the MI's metrics (Vivace's filter, Proteus' 5)."""

    @abstractmethod
    def utility(self, mi: MI) -> Fraction:
        """The MI's utility by the paper's function."""

    # ---------------------------------------------------------------- MI boundaries
    def _ended(self, t: int) -> bool:
        cur = self.cur
        assert cur is not None
        if self.r_mi_end == 0:
            assert cur.length is not None
            return t >= cur.start + cur.length
        return t - cur.start >= self.rtt()

    def _boundary(self, t: int) -> None:
        if self.cur is not None and not self._ended(t):
            return
        if self.cur is not None:
            self.cur.end = t - 1
        self._start_mi(t)

    def _start_mi(self, t: int) -> None:
        rtt = self.rtt()
        if self.phase == "slow_start":
            rate = self.base if self.ss_rate is None else 2 * self.ss_rate
            self.ss_rate = rate
            kind, pair, sign = "ss", None, 0
        else:
            if not self.queue and self.round_done:
                self._new_round()
            if self.queue:
                pair, sign = self.queue.pop(0)
                rate = pair.base * (1 + sign * self.eps)
                kind = "probe"
                self.last_probe_rate = rate
            else:
                pair, sign, kind = None, 0, "wait"
                rate = self.last_probe_rate if (self.r_wait == 1 and self.last_probe_rate) else self.base
        mi = MI(self.mi_count, t, rate, kind, rtt, sign=sign, pair=pair)
        if self.r_mi_end == 0:
            mi.length = max(1, _ceil(rtt))
        if pair is not None:
            pair.mis[sign] = mi
        self.mi_count += 1
        self.mis.append(mi)
        self.cur = mi
        self.open.append(mi)

    # ---------------------------------------------------------------- rate control
    def _probe_order(self) -> list[int]:
        return [1, -1] if self.choose("probe_first", 2) == 0 else [-1, 1]

    @abstractmethod
    def _pairs_per_round(self) -> int:
        """Probe pairs per decision: one or two for Vivace (a reading), three for Proteus."""

    def _new_round(self) -> None:
        self.round = Round(self.base)
        self.round_done = False
        for _ in range(self._pairs_per_round()):
            self._add_pair()

    def _add_pair(self) -> None:
        assert self.round is not None
        pair = Pair(self.round.base, self._probe_order(), round=self.round)
        self.round.pairs.append(pair)
        self.queue.extend((pair, s) for s in pair.order)

    def _on_complete(self, mi: MI) -> None:
        if mi.kind == "ss":
            self._slow_start_result(mi)
        elif mi.kind == "probe" and self.round is not None and any(p is mi.pair for p in self.round.pairs):
            if all(p.complete() for p in self.round.pairs):
                self._decide_round(self.round)

    @abstractmethod
    def _decide_round(self, rnd: Round) -> None:
        """The decision on a complete round: Vivace's gradient (with its double check), Proteus' majority."""

    def _finish_round(self, gamma: Fraction | None) -> None:
        """The decision is taken: move the base rate by gamma (None or 0: no change)."""
        self.round, self.round_done = None, True
        self.decisions += 1
        if gamma is None or gamma == 0:
            return
        self._step(gamma)

    def _m(self, tau: int) -> int:
        if tau == 0:
            return 0 if self.r_amp == 2 else 1
        return tau if tau <= 3 else 2 * tau - 3

    def _step(self, gamma: Fraction) -> None:
        """Rules 10 and 11: the confidence amplifier and the dynamic change boundary."""
        direction = _sign(gamma)
        if direction != self.last_dir:
            self.tau, self.k = 0, 0
        if self.r_amp == 1:
            self.tau += 1
            m = self._m(self.tau)
        else:
            m = self._m(self.tau)
            self.tau += 1
        r = self.base
        delta = m * self.theta0 * gamma / self.to_mbps          # Mbps -> bytes/step
        size = abs(delta) if self.r_bcmp == 0 else delta
        omega = self.omega0 + self.k * self.delta
        if size > omega * r:
            if self.r_braise == 1:
                self.k += 1
                omega = self.omega0 + self.k * self.delta
            else:
                self.k += 1
            delta = direction * omega * r if self.r_bcmp == 0 else omega * r
        else:
            need = (size / r - self.omega0) / self.delta
            self.k = max(0, _ceil(need))
        # the papers give no floor: a step to a rate <= 0 (only possible once omega >= 1) halves it
        self.base = r + delta if r + delta > 0 else r / 2
        self.last_dir = direction
        self.steps.append((r, delta, omega, m))

    # ---------------------------------------------------------------- slow start
    def _slow_start_result(self, mi: MI) -> None:
        if self.phase != "slow_start":
            return
        u = mi.metrics["u"]
        prev = self.ss_prev_u
        self.ss_prev_u = (u, mi.rate)
        if prev is not None and u < prev[0]:
            self.phase = "online"          # permanently
            assert self.cur is not None
            self.base = self.cur.rate if self.r_ss_exit == 0 else prev[1]
            self._abandon()
            self.round_done = True

    # ---------------------------------------------------------------- MI timeout
    def _timer_start(self, mi: MI, fb: Feedback) -> Fraction | None:
        if self.r_to_start == 0:
            return F(mi.start - 1)
        if self.r_to_start == 1:
            return None if mi.end is None else F(mi.end)
        sent = fb.outcome.sent
        last = mi.end if mi.end is not None else fb.t - 1
        if last < mi.start:
            return None
        p = max(fb.acked + fb.lost, sent[mi.start - 1])
        for s in range(mi.start, last + 1):
            if sent[s] > p:
                return (s - 1) + (p - sent[s - 1]) / (sent[s] - sent[s - 1])
        return None

    def _timeouts(self, fb: Feedback) -> None:
        for mi in self.open:
            start = self._timer_start(mi, fb)
            if start is None:
                continue
            rtt = self.rtt() if self.r_to_rtt == 0 else mi.rtt0
            if fb.t - start >= self.timeout_rtts * rtt:
                self._timeout(fb.t)
                return

    def _abandon(self) -> None:
        """Every MI in flight (the current one too) and the decision in progress are dropped:
        their results are no longer used."""
        for mi in self.open:
            mi.abandoned = True
        if self.cur is not None:
            self.cur.abandoned = True
        self.open = []
        self.queue = []
        self.round = None

    def _timeout(self, t: int) -> None:
        self.timeouts += 1
        assert self.cur is not None
        if self.phase == "slow_start":
            self.ss_rate = self.cur.rate / 2 / 2   # the next ss MI doubles it back to cur/2
            self.ss_prev_u = None
        else:
            halved = (self.base if self.r_to_rate == 0 else self.cur.rate) / 2
            self.base = halved
            self.round_done = True
            if self.r_to_state == 1:
                self.tau, self.k = 0, 0
        self._abandon()
        if self.r_to_when == 0:
            self.cur.end, self.cur.cut = t - 1, True
            self.cur = None                      # _boundary starts the new MI at t
        # timeout_when 1: the current MI runs to its end, the new decision starts after it


class VivacePaperSender(_PCCPaper):
    """PCC Vivace (NSDI 2018), latency mode (b from the parameters) or loss mode (b = 0)."""

    name = "vivace"
    default_link_mbps = F(100)

    def __init__(self, start: SenderStart, mode: str | None = None, choose: Choose | None = None,
                 slow_start: bool = False) -> None:
        super().__init__(start, choose, slow_start)
        p = start.params
        self.mode = str(mode or p.get("mode") or "latency")
        if self.mode not in ("latency", "loss"):
            raise ValueError(f"Vivace mode must be latency or loss, not {self.mode!r}")
        if self.mode == "loss":
            self.b = F(0)
        dc = p.get("double_check")
        self.double_check = True if dc is None else bool(dc)
        self.r_order = self.choose("probe_order", 2)
        self.r_pairs = self.choose("vivace_pairs", 2)
        self.r_lowpass = self.choose("lowpass", 2)
        self.r_dc = self.choose("double_check_disagree", 2)

    def _probe_order(self) -> list[int]:
        return [1, -1] if self.r_order == 0 else super()._probe_order()

    def _pairs_per_round(self) -> int:
        return 1 if self.r_pairs == 0 else 2

    def _regression_axis(self, sent: list[Fraction], acked: list[Fraction]) -> list[Fraction]:
        return acked if self.r_regx == 0 else sent       # "time of sampling"

    def _tolerate(self, mi: MI) -> None:
        g = mi.metrics["g"]
        low = g < self.flt if self.r_lowpass == 0 else abs(g) < self.flt
        if low:
            mi.metrics["g"] = F(0)

    def utility(self, mi: MI) -> Fraction:
        m = mi.metrics
        x = m["x"] * self.to_mbps
        return power(x, self.t_exp) - self.b * x * m["g"] - self.c * x * m["L"]

    def _decide_round(self, rnd: Round) -> None:
        gammas = [p.gamma(self.eps, self.to_mbps) for p in rnd.pairs]
        if self.r_pairs == 1:                       # P 5's account: two pairs, consistent
            d = {_sign(g) for g in gammas}
            self._finish_round(sum(gammas, F(0)) / 2 if len(d) == 1 else None)
            return
        first = rnd.pairs[0]
        if not rnd.rechecked and self.double_check and first.mis[1].metrics["L"] < first.mis[-1].metrics["L"]:
            rnd.rechecked = True                    # "re-running the same pair of rates"
            self._add_pair()
            return
        if len(rnd.pairs) == 1:
            self._finish_round(gammas[0])
            return
        if rnd.pairs[0].outcome() == rnd.pairs[1].outcome():
            self._finish_round((gammas[0] + gammas[1]) / 2)
        elif self.r_dc == 0:
            self._finish_round(gammas[1])           # the original measurement is thrown out
        else:
            self._finish_round(None)                # both thrown out: probe r again


class ProteusPaperSender(_PCCPaper):
    """PCC Proteus (SIGCOMM 2020): Proteus-P, Proteus-S or Proteus-H."""

    name = "proteus"
    default_link_mbps = F(50)

    def __init__(self, start: SenderStart, mode: str | None = None, choose: Choose | None = None,
                 slow_start: bool = False) -> None:
        super().__init__(start, choose, slow_start)
        p = start.params
        self.mode = str(mode or p.get("mode") or "P").upper()
        if self.mode not in ("P", "S", "H"):
            raise ValueError(f"Proteus mode must be P, S or H, not {self.mode!r}")
        self.d = exact(p["d"]) if p.get("d") is not None else F(1500)
        rt, tr, af = p.get("regression_tolerance"), p.get("trending"), p.get("ack_filter")
        self.regression_tolerance = True if rt is None else bool(rt)
        self.trending = (tr or "free") != "off"
        self.ack_filter = True if af is None else bool(af)
        ch = self.choose
        self.threshold: Fraction | None
        if p.get("threshold") is not None:
            th = p["threshold"]
            self.threshold = None if th in ("inf", float("inf")) else exact(th) * self.C
        elif self.mode == "H":
            self.threshold = [self.C / 2, self.C / 4, None][ch("threshold_default", 3)]
        else:
            self.threshold = self.C / 2
        self.r_h_rate = ch("h_rate", 2) if self.mode == "H" else 0
        self.r_plow = ch("proteus_lowpass", 2)
        self.r_ack_ratio = ch("ack_ratio", 2)
        self.r_ack_zero = ch("ack_zero", 2)
        self.r_ack_trig = ch("ack_filter_trigger", 2)
        self.r_ack_end = ch("ack_filter_end", 2)
        self.r_ack_ewma = ch("ack_ewma", 2)
        self.r_rdur = ch("regression_duration", 3)
        self.r_combine = ch("combine", 3)
        self.r_tmis = ch("trend_mis", 2)
        self.r_twarm = ch("trend_warmup", 2)
        self.r_tupd = ch("trend_update", 2)
        self.r_tinit = ch("trend_init", 2)
        self.r_major = ch("majority", 2)
        self.r_mstep = ch("majority_step", 2)
        # per-ACK filter state
        self.last_ack: Fraction | None = None
        self.last_interval: Fraction | None = None
        self.ignoring = False
        self.kept_ewma: Fraction | None = None
        self.filtered = 0
        # trending state
        self.history: list[tuple[Fraction, Fraction]] = []   # (mean RTT, deviation), seconds
        self.trend: dict[str, Fraction | None] = {"avg_g": None, "dev_g": None, "avg_d": None, "dev_d": None}

    # P 3: the application may switch the utility function or the threshold while running
    def set_mode(self, mode: str) -> None:
        if mode.upper() not in ("P", "S", "H"):
            raise ValueError(mode)
        self.mode = mode.upper()

    def set_threshold(self, threshold: Fraction | None) -> None:
        """Proteus-H's threshold in bytes/step (None = infinity)."""
        self.threshold = threshold

    def _pairs_per_round(self) -> int:
        return PROTEUS_PAIRS

    def _regression_axis(self, sent: list[Fraction], acked: list[Fraction]) -> list[Fraction]:
        return sent if self.r_regx == 0 else acked

    # ---------------------------------------------------------------- rule 21
    def _keep_sample(self, acked_at: Fraction, rtt: Fraction) -> bool:
        if not self.ack_filter:
            return True
        trigger = False
        if self.last_ack is not None:
            new = acked_at - self.last_ack
            old = self.last_interval
            if old is not None:
                trigger = self._ratio_exceeds(new, old) or (self.r_ack_ratio == 1 and self._ratio_exceeds(old, new))
            self.last_interval = new
        self.last_ack = acked_at
        avg = self.srtt if self.r_ack_ewma == 0 else self.kept_ewma
        if trigger:
            self.ignoring = True
            keep = self.r_ack_trig == 1
        elif self.ignoring:
            if avg is not None and rtt < avg:
                self.ignoring = False
                keep = self.r_ack_end == 0
            else:
                keep = False
        else:
            keep = True
        if keep:
            self.kept_ewma = rtt if self.kept_ewma is None else self.kept_ewma + EWMA_GAIN * (rtt - self.kept_ewma)
        else:
            self.filtered += 1
        return keep

    def _ratio_exceeds(self, num: Fraction, den: Fraction) -> bool:
        if den == 0:
            return num > 0 and self.r_ack_zero == 0
        return num / den > ACK_RATIO

    # ---------------------------------------------------------------- rules 19, 22, 23, 25
    def _trend_verdict(self, mi: MI) -> tuple[bool, bool] | None:
        """Store the MI and return (gradient normal, deviation normal), None without a verdict."""
        if not self.trending or "mean_rtt" not in mi.metrics:
            return None
        if self.r_tmis == 1 and mi.kind != "probe":
            return None
        ss = self.step_seconds
        self.history.append((mi.metrics["mean_rtt"] * ss, mi.metrics["sigma_raw"] * ss))
        self.history = self.history[-TREND_K:]
        j = len(self.history)
        if j < TREND_K and (self.r_twarm == 0 or j < 2):
            return None
        tg = slope([F(i) for i in range(1, j + 1)], [h[0] for h in self.history])
        td = pstdev([h[1] for h in self.history])
        tr = self.trend
        if self.r_tupd == 1:
            self._fold(tg, td)
        verdict = None
        if tr["avg_g"] is not None:
            assert tr["dev_g"] is not None and tr["avg_d"] is not None and tr["dev_d"] is not None
            verdict = (abs(tg - tr["avg_g"]) < G1 * tr["dev_g"], td - tr["avg_d"] < G2 * tr["dev_d"])
        if self.r_tupd == 0:
            self._fold(tg, td)
        mi.metrics.update(trend_g=tg, trend_d=td)
        return verdict

    def _fold(self, tg: Fraction, td: Fraction) -> None:
        tr = self.trend
        for x, a, d in ((tg, "avg_g", "dev_g"), (td, "avg_d", "dev_d")):
            if tr[a] is None:
                tr[a], tr[d] = x, (abs(x) / 2 if self.r_tinit == 0 else F(0))
            else:
                avg, dev = tr[a], tr[d]
                assert avg is not None and dev is not None
                tr[d] = dev + DEV_GAIN * (abs(x - avg) - dev)
                tr[a] = avg + EWMA_GAIN * (x - avg)

    def _tolerate(self, mi: MI) -> None:
        m = mi.metrics
        st, rtts, g = m["send_times"], m["rtts"], m["g_raw"]
        sigma = pstdev(rtts)
        m["sigma_raw"] = sigma
        n = len(rtts)
        re = None
        if self.regression_tolerance and n:
            ms, mr = sum(st, F(0)) / n, sum(rtts, F(0)) / n
            resid = sum(((r - (mr + g * (s - ms))) ** 2 for s, r in zip(st, rtts)), F(0)) / n
            if self.r_rdur == 0:
                dur = F(m["steps"])
            elif self.r_rdur == 1:
                dur = mi.rtt0
            else:
                dur = (max(st) - min(st)) or F(m["steps"])
            re = sqrt(resid) / dur
        m["regression_error"] = re
        within = re is not None and abs(g) < re
        verdict = self._trend_verdict(mi)
        m["trend_verdict"] = verdict
        zero_g = zero_s = False
        if self.r_combine == 0 or verdict is None:
            if within:
                zero_g = zero_s = True
            if verdict is not None and verdict[0]:
                zero_g = True
                zero_s = zero_s or verdict[1]
        elif self.r_combine == 1:
            if self.regression_tolerance:
                if within and verdict[0]:
                    zero_g, zero_s = True, verdict[1]
            elif verdict[0]:
                zero_g, zero_s = True, verdict[1]
        else:
            if verdict[0]:
                zero_g, zero_s = True, verdict[1]
        if zero_g:
            g = F(0)
        if zero_s:
            sigma = F(0)
        if self.r_plow == 1 and abs(g) < self.flt:
            g = F(0)
        m["g"], m["sigma"] = g, sigma

    # ---------------------------------------------------------------- rules 18, 20
    def utility(self, mi: MI) -> Fraction:
        m = mi.metrics
        x = m["x"] * self.to_mbps
        u_p = power(x, self.t_exp) - self.b * x * max(F(0), m["g"]) - self.c * x * m["L"]
        u_s = u_p - self.d * x * m["sigma"] * self.step_seconds
        if self.mode == "P":
            return u_p
        if self.mode == "S":
            return u_s
        th = self.threshold
        rate = m["x"] if self.r_h_rate == 0 else (mi.pair.base if mi.pair is not None else self.base)
        return u_p if th is not None and rate < th else u_s

    # ---------------------------------------------------------------- rule 24
    def _decide_round(self, rnd: Round) -> None:
        gammas = [p.gamma(self.eps, self.to_mbps) for p in rnd.pairs]
        ups = sum(1 for g in gammas if g > 0)
        downs = sum(1 for g in gammas if g < 0)
        if self.r_major == 0:
            direction = 1 if ups >= 2 else -1 if downs >= 2 else 0
        else:
            direction = 1 if ups > downs else -1 if downs > ups else 0
        if direction == 0:
            self._finish_round(None)
            return
        if self.r_mstep == 0:
            agree = [g for g in gammas if _sign(g) == direction]
            gamma = sum(agree, F(0)) / len(agree)
        else:
            gamma = sum(gammas, F(0)) / len(gammas)
            if _sign(gamma) != direction:
                gamma = F(0)
        self._finish_round(gamma)
