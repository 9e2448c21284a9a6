"""PCC (Dong et al., "PCC: Re-architecting Congestion Control for Consistent High Performance",
the paper later called PCC Allegro), written again from the paper alone as a concrete sender.

Source: the seed text ``pcc-allegro.md`` (the short version of the paper: sections 2.2 and 3 are
the whole algorithm), plus the one sentence of the PCC Vivace paper (NSDI 2018, section 2) that
describes how PCC in general measures a monitor interval. Section numbers below are the Allegro
text's unless marked "Vivace".

Rules implemented
=================

R1. Rate-based sending, no window (s3): "There is no notion of congestion window in PCC's
    design: the Sending Module continuously transmits data at a rate selected by control
    module". Every step sends the rate of the current monitor interval (MI) or, while the
    sender waits for results, its waiting rate (R15); ``cwnd = inflight + rate`` so the window
    never limits.
R2. The monitor period is the control period (s3): "periodically combines the observed
    packet-level events into performance metrics ... This period of performance observation,
    called the monitor period, is also the period of the control cycle." One (rate, utility)
    pair per MI; every MI tests one rate, fixed when it starts (Vivace s2: "Time is divided
    into consecutive intervals, called Monitor Intervals (MIs), each devoted to "testing" the
    implications for performance of sending at a certain rate").
R3. MI length (s3): "we set it to the maximum of (a) the time to send 10 data packets and (b)
    1.7 RTTs with 0.5 RTT uniform-random variance." d = max(10 * MSS / rate, u * RTT), u drawn
    afresh for every MI (``mi_draw``) from the range the reading ``mi_spread`` gives; MSS is
    the path's packet size ``start.alpha``. The MI lasts max(1, ceil(d)) whole steps (the
    brief's time model).
R4. Per-MI measurements (s2.1, s3: "throughput, loss rate, RTT, etc."; Vivace s2: "PCC
    aggregates selective ACKs for packets sent in a MI into the above-mentioned meaningful
    performance metrics"). Reading ``mi_feedback`` = 0 (send-time): the MI's metrics are the
    fates of the bytes it sent, known once every byte sent up to its last step is ACKed or
    detected lost (fb.known_through reaches its last step): sending rate x = bytes sent /
    duration, loss rate L = bytes of it detected lost / bytes sent, throughput T = bytes of it
    delivered / duration (= x (1 - L), the paper's T_i = x_i (1 - L)).
R5. Utility, the "safe" one every experiment used (s2.2, s4.1: "all experiments use the "safe"
    utility function of s2.2"): u = T * Sigmoid(L - 0.05) - x * L with Sigmoid(y) =
    1 / (1 + e^(alpha y)). T and x in Mbps (rate r bytes/step is r * link_mbps / C Mbps);
    ``alpha`` (sigmoid steepness) and ``loss_cap`` (the 0.05) from ``start.params``. The
    exponential is computed to 50 digits with ``decimal``.
R6. alpha (s2.2): "When alpha >= max{2.2(n-1), 100} ... in practice alpha can be set to a large
    value." The value used is not stated; default 100 (the bound), ``params["alpha"]`` overrides.
R7. Starting state, initial rate (s3): "PCC starts at rate 2 * MSS/RTT like TCP" (only with the
    constructor flag ``slow_start``; a rate in ``start.values`` overrides it).
R8. Starting state, growth (s3): "also uses exponential rate increase at each monitor period";
    the factor is 2, from "(i.e., half the rate)" in R9: each new MI sends twice the rate of the
    previous one.
R9. Starting state, exit (s3): "When the utility function value decreases, PCC exits the
    starting state by returning to the previous rate which had higher utility (i.e., half the
    rate) and enters the Decision Making State." Exit on the first MI whose utility is strictly
    below the previous MI's; the new rate per ``start_exit``.
R10. Decision making, trials (s3): "it attempts a slightly higher rate r(1+eps) and slightly lower
    rate r(1-eps), each for one monitor period, in random order. ... PCC conducts a second such
    experiment-pair, resulting in a total of four utility measurements, U1+, U1-, U2+, U2-."
    Two pairs of MIs, one after the other, each pair in an order drawn by ``trial_order``.
R11. Decision (s3): "If the higher rate consistently has higher utility (U_i^+ > U_i^- for all
    i, j), then PCC adjusts its sending rate to r_new = r(1+eps); and if the lower rate
    consistently has higher utility then PCC picks r_new = r(1-eps)." Strict comparisons (a tie
    is not "higher"); which pairs are compared per ``conclusive``. The step uses the current eps.
R12. Inconclusive round (s3): "PCC stays at its current rate r and re-enters the Decision Making
    State with larger experiment granularity: eps = eps + eps_min. ... will increase up to
    eps_max if the process continues to be inconclusive. ... eps_min = 0.01 and eps_max = 0.05."
    eps <- min(eps + eps_min, eps_max), then a new round of two pairs at the same r.
R13. eps at entry (s3): "The granularity starts from eps_min when it enters the decision making
    system for the first time"; when it resets is the reading ``eps_reset``.
R14. Rate adjusting (s3, eq. 1): "After making a decision, the control system will enter the
    Rate Adjusting State. Assume the new rate after Decision Making is r_0 and dir = +-1 ... In
    each monitor period, PCC adjusts its rate in that direction faster and faster, setting the
    new rate r_n as: r_n = r_{n-1} (1 + n eps_min dir)", one new rate per MI (n = 1, 2, ...).
R15. Rate adjusting, stop (s3): "However, if Utility(r_n) < Utility(r_{n-1}), PCC decreases its
    rate to r_{n-1} and enters the Decision Making State." Compared when MI n's utility is
    known; the rate goes back to r_{n-1} (also when that is an increase, dir = -1) and a
    decision round starts at base r_{n-1}. What Utility(r_0) is: reading ``adjust_first``.
R16. While results are outstanding (not in the text, see ``pipeline``/``wait_rate``/``react``):
    with pipelining (reading 0) the next MI starts as soon as the previous one ends whenever
    its rate does not depend on the outstanding results (starting state: doubling; the four
    trials; rate adjusting: eq. 1); when the next rate does depend on them (after the fourth
    trial), the sender keeps sending at its waiting rate, outside any MI, until they are known.
    MIs started under a plan that a result has since overturned (the starting state's doubling
    past the exit, adjusting steps past the stop) are not used: their results are discarded.

Construction: ``AllegroPaperSender(start, slow_start=False, choose=None)``. By default the flow
starts in the decision-making state (eps = eps_min, a fresh round of two pairs) at base rate
``start.values["base"]`` or ``["rate"]``, else C/2; ``slow_start=True`` starts in the starting
state (R7-R9) instead. Parameters from ``start.params``: ``alpha`` (default 100), ``loss_cap``
(0.05), ``eps_min`` (0.01), ``eps_max`` (0.05), ``link_mbps`` (default 100, the bottleneck of the
paper's s4.2 experiments; comparisons do not depend on it). ``state()`` reports the rate, the
phase ("start", "decision", "adjust"), the base rate, eps, the current MI's index and length,
whether the sender is waiting, and the adjusting direction; ``log`` keeps every MI started.

Readings (the paper is open; ``choose(what, n)``, alternative 0 the default)
=========================================================================

``mi_feedback`` (2): which events make up an MI's metrics.
    0 the fates of the packets sent in the MI (Vivace s2, quoted in R4; it is also what "each
      devoted to testing ... sending at a certain rate" needs);
    1 the events observed during the MI (Allegro s3 literally: "combines the observed
      packet-level events ... This period of performance observation"): T = bytes ACKed
      during the MI / duration, L = bytes detected lost during it / (those + bytes ACKed during
      it), x = bytes sent during it / duration. Results are then known at the MI's end and
      nothing is ever outstanding (``pipeline``, ``react`` make no difference).
``pipeline`` (2): 0 MIs are back to back ("continuously transmits", "Time is divided into
    consecutive intervals", "exponential rate increase at each monitor period", "In each
    monitor period, PCC adjusts its rate"), see R16; 1 no MI starts while an earlier MI's
    result is outstanding: after every MI the sender waits (sending the waiting rate) for its
    result.
``react`` (2): when a result overturns the plan (starting-state exit, adjusting stop) while an
    MI of the old plan is being sent: 0 that MI runs to its planned end and the new plan starts
    at the next MI boundary (the monitor period "is also the period of the control cycle"); 1
    it is cut at once and the new plan's first MI starts at the next step.
``wait_rate`` (2): what is sent outside MIs while waiting for results: 0 the current rate of the
    state (decision making: the base r, "PCC stays at its current rate r"; starting and
    adjusting: the rate of the last MI); 1 the rate of the last MI in every state (decision
    making: the last trial rate).
``mi_rtt`` (3): the RTT in R3 (the paper says "RTTs" only): 0 the latest RTT sample; 1 a smoothed
    RTT (srtt <- 7/8 srtt + 1/8 sample per ACK, the TCP-like estimator of the UDT skeleton the
    prototype is built on); 2 the minimum RTT sample so far. Before any sample: the path's
    handshake RTT, ``fb.R``.
``mi_spread`` (3): "1.7 RTTs with 0.5 RTT uniform-random variance": 0 u uniform in [1.2, 2.2]
    (+-0.5); 1 u in [1.45, 1.95] (a range 0.5 wide); 2 u in [1.7, 2.2] (1.7 plus up to 0.5).
    (Reading "variance" as a statistical variance of 0.5 RTT^2 is dimensionally odd; not
    offered.)
``mi_draw`` (11, drawn for every MI): where in the range u falls, on an 11-point grid (the MI's
    length depends on u only through ceil(u * RTT)); alternative 0 is 1.7 (the nominal value),
    then alternately below and above (spread 2: 1.7 + 0.05 k).
``floor_rate`` (2): the rate of "the time to send 10 data packets": 0 the MI's own rate; 1 the
    base rate r of the decision round (same as 0 outside decision making).
``trial_order`` (2, drawn for every pair): 0 r(1+eps) first, 1 r(1-eps) first ("in random
    order"; the two pairs are drawn independently, which includes mirrored pairs).
``conclusive`` (2): 0 within each pair, U_i^+ > U_i^- for i = 1, 2 (the formula as written); 1
    across pairs, U_i^+ > U_j^- for all i, j (the stray "for all i, j").
``eps_reset`` (2): 0 eps restarts at eps_min whenever decision making is entered from another
    state ("enters" as against an inconclusive round's "re-enters"); 1 eps is eps_min only on
    the very first entry and never resets ("for the first time").
``adjust_first`` (4): what Utility(r_0) is in R15's first comparison: 0 an MI is sent at r_0
    first and measured ("the new rate after Decision Making is r_0": the sender moves to r_0),
    then r_1, r_2, ...; 1 no MI at r_0, Utility(r_0) is the later decision trial at r_0
    (U_2 in direction dir); 2 no MI at r_0, the mean of the two trials at r_0; 3 no MI at r_0
    and no comparison at n = 1 (the first comparison is Utility(r_2) < Utility(r_1)).
``start_exit`` (2): the rate after leaving the starting state: 0 the rate of the MI before the
    one whose utility decreased ("the previous rate which had higher utility"); 1 half the rate
    being sent when the decrease is learned ("(i.e., half the rate)"; differs from 0 only when
    pipelining has moved on).

Also readings, with no alternative offered: the loss rate counts bytes (the paper's "per-packet
loss probability" with equal packets); a lost byte is assigned to the step it was sent in
(``DetectedLoss.sent_at``); comparisons of utilities are strict; eps stays at eps_max once
there; the starting state is left once and never re-entered.

Not implemented (not in the paper, or outside this interface): retransmission (s3; the
transport below the sender does it); the latency utility "Allegro-Latency" (named by Vivace,
formula given nowhere); a timeout for MIs whose results never come (Allegro has none; Vivace's
MI timeout is Vivace's). Guard beyond the paper: if eq. 1's factor 1 + n eps_min dir would be
<= 0 (n >= 100 decreasing steps), the rate is held instead.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ccac.senders.interface import Choose, ConcreteSender, Decision, Feedback, SenderStart, exact

F = Fraction

#: The ``choose`` points: name -> number of alternatives (see the module docstring).
CHOICES: dict[str, int] = {
    "mi_feedback": 2, "pipeline": 2, "react": 2, "wait_rate": 2, "mi_rtt": 3, "mi_spread": 3,
    "mi_draw": 11, "floor_rate": 2, "trial_order": 2, "conclusive": 2, "eps_reset": 2,
    "adjust_first": 4, "start_exit": 2,
}

#: The MI length factor u (times RTT) by reading ``mi_spread``: (centre, half-width) or one-sided.
_SPREADS = {0: (F(17, 10), F(1, 2)), 1: (F(17, 10), F(1, 4))}
_GRID = [0, -1, 1, -2, 2, -3, 3, -4, 4, -5, 5]   # alternative -> fifths of the half-width


def _exp(x: Fraction) -> Fraction:
    """e**x to 50 digits, as a Fraction."""
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        ctx.Emax = decimal.MAX_EMAX
        ctx.Emin = decimal.MIN_EMIN
        d = (decimal.Decimal(x.numerator) / decimal.Decimal(x.denominator)).exp()
        return Fraction(d)


@dataclass
class MI:
    """One monitor interval: steps s0 .. s0 + steps - 1 (the interval (s0 - 1, s0 + steps - 1])."""

    idx: int
    s0: int
    steps: int
    rate: Fraction
    role: tuple[Any, ...]
    epoch: int
    rtt: Fraction
    u: Fraction
    floor: Fraction
    cut: bool = False
    acked_obs: Fraction = F(0)      # receive-time reading: bytes ACKed during the MI
    lost_obs: Fraction = F(0)       # receive-time reading: bytes detected lost during it
    utility: Fraction | None = None
    known_at: int | None = None     # the decision time its utility was computed
    used: bool = False              # its utility reached the controller (same plan)
    metrics: dict[str, Fraction] = field(default_factory=dict)

    @property
    def last(self) -> int:
        return self.s0 + self.steps - 1


@dataclass
class Wait:
    """Sending outside any MI while results are outstanding (R16)."""

    rate: Fraction
    s0: int


class AllegroPaperSender(ConcreteSender):
    """PCC (Allegro) per the paper: monitor intervals, the sigmoid loss utility, starting state,
    decision making with two randomised pairs, rate adjusting (module docstring: R1-R16)."""

    def __init__(self, start: SenderStart, slow_start: bool = False, choose: Choose | None = None) -> None:
        self._choose: Choose = choose if choose is not None else (lambda what, n: 0)
        p = start.params
        self.sig_alpha = exact(p.get("alpha", 100))
        self.loss_cap = exact(p.get("loss_cap", F(1, 20)))
        self.eps_min = exact(p.get("eps_min", F(1, 100)))
        self.eps_max = exact(p.get("eps_max", F(1, 20)))
        self.link_mbps = exact(p.get("link_mbps", 100))
        self.C = exact(start.C)
        self.mss = exact(start.alpha)
        # readings, fixed for the flow
        self.r_feedback = self._pick("mi_feedback")
        self.r_pipeline = self._pick("pipeline")
        self.r_react = self._pick("react")
        self.r_wait = self._pick("wait_rate")
        self.r_rtt = self._pick("mi_rtt")
        self.r_spread = self._pick("mi_spread")
        self.r_floor = self._pick("floor_rate")
        self.r_conclusive = self._pick("conclusive")
        self.r_eps_reset = self._pick("eps_reset")
        self.r_adjust_first = self._pick("adjust_first")
        self.r_start_exit = self._pick("start_exit")
        given = start.value("base", None)
        if given is None:
            given = start.value("rate", None)
        given_rate = exact(given) if given is not None else None
        # RTT estimates (R3)
        self.rtt_latest: Fraction | None = None
        self.srtt: Fraction | None = None
        self.rtt_min: Fraction | None = None
        # bookkeeping
        self.lost_by_step: dict[int, Fraction] = {}
        self.prev_acked: Fraction | None = None
        self.prev_lost: Fraction | None = None
        self.cur: MI | Wait | None = None
        self.outstanding: list[MI] = []
        self.log: list[MI] = []           # every MI started, in order
        self.epoch = 0
        self.last_rate: Fraction | None = None
        self.rate: Fraction | None = None
        self.eps = self.eps_min
        self.entered_decision = False
        # starting state
        self.start_next: Fraction | None = None
        self.start_prev: tuple[Fraction, Fraction] | None = None   # (rate, utility) of the last start MI
        # decision making
        self.base: Fraction = given_rate if given_rate is not None else self.C / 2
        self.order: list[tuple[int, int]] = []
        self.launched = 0
        self.trials: dict[tuple[int, int], Fraction] = {}
        # rate adjusting
        self.dir = 0
        self.adj_rates: dict[int, Fraction] = {}
        self.adj_util: dict[int, Fraction] = {}
        self.adj_n: int | None = None    # index of the last adjusting MI started
        if slow_start:
            self.phase = "start"
            self.start_next = given_rate   # None: 2 MSS / RTT at the first decision (R7)
        else:
            self._enter_decision(self.base)

    # ------------------------------------------------------------------ helpers
    def _pick(self, what: str) -> int:
        n = CHOICES[what]
        k = self._choose(what, n)
        if not 0 <= k < n:
            raise ValueError(f"choose({what!r}, {n}) gave {k}")
        return k

    def _rtt(self, R: int) -> Fraction:
        est = (self.rtt_latest, self.srtt, self.rtt_min)[self.r_rtt]
        return est if est is not None else F(R)

    def _mbps(self, bytes_per_step: Fraction) -> Fraction:
        return bytes_per_step * self.link_mbps / self.C

    def utility(self, x: Fraction, T: Fraction, L: Fraction) -> Fraction:
        """R5: u = T * Sigmoid(L - loss_cap) - x * L, Sigmoid(y) = 1/(1 + e^(alpha y)); x, T in Mbps."""
        sig = 1 / (1 + _exp(self.sig_alpha * (L - self.loss_cap)))
        return T * sig - x * L

    def mi_factor_range(self) -> tuple[Fraction, Fraction]:
        """The range of u (R3) under this flow's ``mi_spread`` reading."""
        if self.r_spread == 2:
            return F(17, 10), F(11, 5)
        c, h = _SPREADS[self.r_spread]
        return c - h, c + h

    def _draw_u(self) -> Fraction:
        k = self._pick("mi_draw")
        if self.r_spread == 2:
            return F(17, 10) + F(1, 20) * k
        c, h = _SPREADS[self.r_spread]
        return c + h * F(_GRID[k], 5)

    # ------------------------------------------------------------------ state transitions
    def _enter_decision(self, base: Fraction, from_outside: bool = True) -> None:
        self.phase = "decision"
        self.base = base
        if not self.entered_decision or (from_outside and self.r_eps_reset == 0):
            self.eps = self.eps_min
        self.entered_decision = True
        self._new_round()

    def _new_round(self) -> None:
        self.epoch += 1
        self.order = []
        self.launched = 0
        self.trials = {}

    def _enter_adjust(self, direction: int) -> None:
        self.epoch += 1
        self.phase = "adjust"
        self.dir = direction
        r0 = self.base * (1 + direction * self.eps)
        self.adj_rates = {0: r0}
        self.adj_util = {}
        self.adj_n = None
        later, earlier = self.trials[(2, direction)], self.trials[(1, direction)]
        if self.r_adjust_first == 1:
            self.adj_util[0] = later
        elif self.r_adjust_first == 2:
            self.adj_util[0] = (later + earlier) / 2
        if self.r_adjust_first != 0:
            self.adj_n = 0          # r_0 counts as done: the first MI sends r_1

    def _decide_round(self) -> None:
        """R11/R12 once the four trial utilities are known."""
        U = self.trials

        def consistent(s: int) -> bool:
            if self.r_conclusive == 0:
                return all(U[(i, s)] > U[(i, -s)] for i in (1, 2))
            return all(U[(i, s)] > U[(j, -s)] for i in (1, 2) for j in (1, 2))

        if consistent(+1):
            self._enter_adjust(+1)
        elif consistent(-1):
            self._enter_adjust(-1)
        else:
            self.eps = min(self.eps + self.eps_min, self.eps_max)
            self._new_round()

    def _on_result(self, mi: MI) -> None:
        """The controller gets MI ``mi``'s (rate, utility) pair (R2)."""
        if mi.epoch != self.epoch:
            return              # sent under a plan since overturned (R16)
        mi.used = True
        u = mi.utility
        assert u is not None
        if self.phase == "start":
            if self.start_prev is not None and u < self.start_prev[1]:      # R9
                assert self.last_rate is not None   # set by the MI that gave start_prev
                rate = self.start_prev[0] if self.r_start_exit == 0 else self.last_rate / 2
                self._enter_decision(rate)
            else:
                self.start_prev = (mi.rate, u)
        elif self.phase == "decision":
            self.trials[mi.role[1:]] = u
            if len(self.trials) == 4:
                self._decide_round()
        else:
            n = mi.role[1]
            self.adj_util[n] = u
            if n - 1 in self.adj_util and u < self.adj_util[n - 1]:        # R15
                self._enter_decision(self.adj_rates[n - 1])

    def _pending(self) -> bool:
        return any(m.epoch == self.epoch for m in self.outstanding)

    def _next(self, t: int, R: int) -> MI | Wait:
        """What to send from step t: the next MI of the plan, or a wait (R16)."""
        waiting = self.r_pipeline == 1 and self._pending()
        if self.phase == "start":
            if waiting:
                assert self.last_rate is not None   # set by the pending MI
                return Wait(self.last_rate, t)
            rate = self.start_next
            assert rate is not None   # set before the first plan (decide, R7)
            self.start_next = 2 * rate                                     # R8
            return self._mi(t, R, rate, ("start",))
        if self.phase == "decision":
            wait_rate = self.base if self.r_wait == 0 else (self.last_rate or self.base)
            if waiting or self.launched == 4:
                return Wait(wait_rate, t)
            if self.launched % 2 == 0:                                     # a new pair (R10)
                pair = self.launched // 2 + 1
                first = +1 if self._pick("trial_order") == 0 else -1
                self.order += [(pair, first), (pair, -first)]
            key = self.order[self.launched]
            self.launched += 1
            return self._mi(t, R, self.base * (1 + key[1] * self.eps), ("trial",) + key)
        # rate adjusting (R14)
        if waiting:
            assert self.last_rate is not None   # set by the pending MI
            return Wait(self.last_rate, t)
        if self.adj_n is None:
            n = 0
        else:
            n = self.adj_n + 1
            factor = 1 + n * self.eps_min * self.dir
            if factor <= 0:
                factor = F(1)     # guard beyond the paper (module docstring)
            self.adj_rates[n] = self.adj_rates[n - 1] * factor
        self.adj_n = n
        return self._mi(t, R, self.adj_rates[n], ("adjust", n))

    def _mi(self, t: int, R: int, rate: Fraction, role: tuple[Any, ...]) -> MI:
        """A new MI from step t (R3)."""
        rtt = self._rtt(R)
        u = self._draw_u()
        floor_rate = self.base if (self.r_floor == 1 and self.phase == "decision") else rate
        floor = 10 * self.mss / floor_rate
        d = max(floor, u * rtt)
        steps = max(1, math.ceil(d))
        mi = MI(len(self.log), t, steps, rate, role, self.epoch, rtt, u, floor)
        self.log.append(mi)
        self.last_rate = rate
        return mi

    def _finish(self, mi: MI, fb: Feedback) -> None:
        """R4/R5: the MI's metrics and utility."""
        sent = fb.outcome.sent[mi.last] - fb.outcome.sent[mi.s0 - 1]
        dur = F(mi.steps)
        if self.r_feedback == 0:
            lost = sum((self.lost_by_step.get(s, F(0)) for s in range(mi.s0, mi.last + 1)), F(0))
            lost = min(lost, sent)
            L = lost / sent if sent > 0 else F(0)
            T = (sent - lost) / dur
        else:
            events = mi.acked_obs + mi.lost_obs
            L = mi.lost_obs / events if events > 0 else F(0)
            T = mi.acked_obs / dur
        x = sent / dur
        mi.metrics = {"x": x, "T": T, "L": L}
        mi.known_at = fb.t
        mi.utility = self.utility(self._mbps(x), self._mbps(T), L)

    # ------------------------------------------------------------------ the step
    def decide(self, fb: Feedback) -> Decision:
        t = fb.t
        for a in fb.acks:                                  # RTT samples (R3)
            s = F(a.acked_at) - F(a.sent_at)
            self.rtt_latest = s
            self.srtt = s if self.srtt is None else F(7, 8) * self.srtt + F(1, 8) * s
            self.rtt_min = s if self.rtt_min is None else min(self.rtt_min, s)
        for loss in fb.losses:                             # lost bytes by send step (R4)
            step = math.ceil(F(loss.sent_at))
            self.lost_by_step[step] = self.lost_by_step.get(step, F(0)) + F(loss.size)
        if self.prev_acked is None:
            d_acked = sum((F(a.size) for a in fb.acks), F(0))
            d_lost = sum((F(loss.size) for loss in fb.losses), F(0))
        else:
            assert self.prev_lost is not None   # set with prev_acked
            d_acked, d_lost = fb.acked - self.prev_acked, fb.lost - self.prev_lost
        self.prev_acked, self.prev_lost = fb.acked, fb.lost
        if self.phase == "start" and self.start_next is None:
            self.start_next = 2 * self.mss / self._rtt(fb.R)               # R7

        # the current MI ends after its last step
        if isinstance(self.cur, MI) and t > self.cur.last:
            self._close(self.cur, fb)
            self.cur = None
        # results whose fate is known, oldest first (send-time reading)
        while self.outstanding:
            mi = self.outstanding[0]
            if fb.known_through < mi.last:
                break
            self.outstanding.pop(0)
            self._finish(mi, fb)
            self._on_result(mi)
        # what to send from this step on
        if self.cur is None or isinstance(self.cur, Wait):
            self.cur = self._next(t, fb.R)
        elif self.r_react == 1 and self.cur.epoch != self.epoch:
            self.cur.cut = True                            # cut at once, its result unused
            self.cur.steps = t - self.cur.s0
            self.cur = self._next(t, fb.R)
        if isinstance(self.cur, MI):                       # receive-time reading: events of this step
            self.cur.acked_obs += d_acked
            self.cur.lost_obs += d_lost
        self.rate = self.cur.rate
        return Decision(fb.inflight + self.rate, self.rate)

    def _close(self, mi: MI, fb: Feedback) -> None:
        if self.r_feedback == 1:
            self._finish(mi, fb)
            self._on_result(mi)
        else:
            self.outstanding.append(mi)

    def adopt(self, decision: Decision) -> None:
        """The transport sent ``decision.rate``: take it as the current rate, drop the plan in
        progress (its MIs no longer test what they were planned to) and start afresh from it."""
        if decision.rate is None:
            return
        rate = F(decision.rate)
        self.rate = self.last_rate = rate
        self.cur = None
        if self.phase == "start":
            self.epoch += 1
            self.start_next = rate
            self.start_prev = None
        else:
            self._enter_decision(rate, from_outside=False)

    def state(self) -> dict[str, Any]:
        cur = self.cur
        return {
            "rate": self.rate,
            "phase": self.phase,
            "base": self.base if self.phase == "decision" else self.last_rate,
            "eps": self.eps,
            "mi": cur.idx if isinstance(cur, MI) else None,
            "mi_len": cur.steps if isinstance(cur, MI) else None,
            "waiting": isinstance(cur, Wait),
            "dir": self.dir if self.phase == "adjust" else 0,
        }
