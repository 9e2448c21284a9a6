"""ETC, Elastic Transmission Control (Han et al., USENIX ATC 2024), as a concrete sender.

One decision per step, in the order of Alg. 1's ``NewACK``: the receiving rate r (ACKed bytes
per step over ``recv_window`` steps, default R) and rmax (the largest r of the last
``rmax_window`` RTTs) are read; on a new ACK the sender takes a new RTT sample (without one it
keeps the latest), updates its RTT estimators (the update gate's, the 8-RTT timer's and its
minimum RTT), and the pulling rate Rp takes the step's sample (by ``pulling``: a micro-burst's
receipt rate, the step's receipt rate over ``burst_steps``, Eq. 5's ideal value, or
``fallback_gain`` x rmax) through the ``filter``; then, if not draining, the gate's RTT has
passed since the last update and an ACK came, the RateUpdate: accelerate
``s <- s * log_base(Rp/s + base - 1)`` (Eq. 1) if dRTT = rtt - (the sample ``drtt_lag`` steps
earlier) is negative (or zero with ``accel_on_equal``) or ``force_after`` RTTs (the timer's
estimate) passed since the last update (or increase: ``force_from``); else decelerate
``s <- (s + r) / 2`` if dRTT >= theta, and with ``drain`` withhold the bytes in flight beyond
s * RTT_min, sending eta * s per step until they are withheld (3.4). With ``pacing = bursts``
it runs Alg. 1's Send() over the step: the pending bytes (carried over, re-valued at the new
rate after a rate change, plus the step's paced bytes) go out in whole micro-bursts of N MSS,
or all of them when the 10 ms timer flushes; what accrued after the step's last send event is
carried. Its window never binds: the bytes in flight plus what it sends. Losses and timeouts
change nothing.

The paper's open choices per step are a :class:`Choices` (fixed, or a function of the step's
feedback); the defaults are the most literal reading: Rp is the latest sample (``weight`` 1),
not floored at rmax (``lift``), the stable stage's cap not applied (``stable``), a
micro-burst arrives at the link rate C (``burst_rate``), the gate and the timer use the latest
RTT sample, RTT_min is the minimum of every sample, no clamping, and the pacer sends whole
bursts at the step's end. The starting state is the run's (``srate``, ``Rp``, ``since``,
``since_inc``, ``drain``, ``rtt``, ``rtt_gate``, ``rtt_force``, ``carry``); unknown: 10
packets per RTT (6.1), Rp = s, no drain, the last update at the start, RTT samples and
estimates of R, nothing carried, and nothing ACKed before ``SenderStart.acked``. The logarithm
is computed to 50 digits.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from ccac.senders.interface import ConcreteSender, Decision, Feedback, SenderStart

HOLD, ACCELERATE, DECELERATE, DRAIN = 0, 1, 2, 3
ESTIMATORS = ("latest", "ewma", "min", "max", "mean", "median")


@dataclass(frozen=True)
class Choices:
    """What the paper leaves open at one step.

    Pulling rate: ``weight``: the new sample's weight in Rp (``filter = hull``; 1: Rp is the
    latest sample, below 1 an EWMA); ``mean``: Rp is instead the mean of the samples of the
    last ``rp_window`` steps with an ACK (``drop_outlier``: without the one farthest from
    their mean, appendix F's outlier removal); ``lift``: floor Rp at rmax, the "correction by
    the maximum average receiving rate"; ``stable``: the stable-convergence stage's cap
    Rp = min(k * rmax, Rp) applies (with ``stable = true``); ``burst_rate``: the receipt rate
    of the step's micro-burst (``pulling = burst`` and ``ideal``; None: C); ``fallback``: the
    step's sample is the sparse-feedback fallback fallback_gain * rmax (4.3; ``pulling =
    burst`` with ``sparse_fallback``).

    RTT estimators (:data:`ESTIMATORS`): ``gate`` for ``now - t_update >= RTT``, ``force`` for
    the 8-RTT timer, each the latest sample, an EWMA of gain ``gain``, or the min, max, mean or
    median of the samples of the last ``rtt_window`` steps; ``min_window``: RTT_min is the
    smallest sample of this many steps (None: of all).

    ``clamp``: the clamping readings (O14: Eq. 1 with Rp < s keeps s; O17: a deceleration with
    r > s keeps s; needs ``clamp = true``).

    Pacing (``pacing = bursts``): ``flush``: the 10 ms timer sends every pending byte at the
    step's last send event; ``lag``: the step's last send event is this fraction of a tick
    before the step's end (what accrued since is carried); ``retro``: at a rate change, the
    pending bytes accrued over this fraction of the longest possible interval (two ticks, and
    no more than they hold) are re-valued at the new rate (Alg. 1 l. 3 runs after RateUpdate)."""

    weight: Fraction = Fraction(1)
    mean: bool = False
    drop_outlier: bool = False
    lift: bool = False
    stable: bool = False
    burst_rate: Fraction | None = None
    fallback: bool = False
    gate: str = "latest"
    force: str = "latest"
    gain: Fraction = Fraction(1, 8)
    min_window: int | None = None
    clamp: bool = False
    flush: bool = True
    lag: Fraction = Fraction(0)
    retro: Fraction = Fraction(0)


class ETCSender(ConcreteSender):
    def __init__(self, start: SenderStart, choices: Choices | Callable[[Feedback], Choices] = Choices()) -> None:
        self.p, self.R, self.C = start.params, start.R, start.C
        self.choices = choices
        self.s = Fraction(start.value("srate", 10 * start.alpha / start.R))
        self.rp = Fraction(start.value("Rp", self.s))
        self.since, self.since_inc = int(start.value("since", 0)), int(start.value("since_inc", 0))
        self.drain = Fraction(start.value("drain", 0))
        self.burst = self.p["burst"] * Fraction(start.alpha)
        self.tick = Fraction(self.p["tick"]) if self.p["tick"] is not None else Fraction(start.R, 4)
        self.carry = Fraction(start.value("carry", 0)) if self.p["pacing"] == "bursts" else Fraction(0)
        self.pace = self.s  # the pacing rate in force at the end of the last step
        # The latest RTT sample of every step so far, oldest first (history: R, then the start's).
        rtt0 = Fraction(start.value("rtt", start.R))
        self.rtt_window = self.p["rtt_window"] or start.R
        self.rp_window = self.p["rp_window"] or start.R
        self.rtts = [Fraction(start.R)] * (max(self.p["drtt_lag"], self.rtt_window) - 1) + [rtt0]
        self.est = {"gate": Fraction(start.value("rtt_gate", rtt0)), "force": Fraction(start.value("rtt_force", rtt0))}
        self.acked = [Fraction(a) for a in start.acked]
        self.readings: list[Fraction] = []
        self.samples: list[Fraction | None] = []  # the pulling sample of each step with an ACK
        self.last: dict[str, Any] = {}

    def _log_gain(self, ratio: Fraction) -> Fraction:
        """log_base(ratio + base - 1), Eq. 1."""
        with decimal.localcontext() as c:
            c.prec = 50
            if self.p["base"] == "e":
                ln_base, shift = decimal.Decimal(1), decimal.Decimal(1).exp() - 1
            else:
                base = Fraction(self.p["base"])
                b = decimal.Decimal(base.numerator) / base.denominator
                ln_base, shift = b.ln(), b - 1
            x = decimal.Decimal(ratio.numerator) / ratio.denominator
            return Fraction((x + shift).ln() / ln_base)

    def _rate_over(self, steps: int) -> Fraction:
        """ACKed bytes per step over the last ``steps`` steps (nothing was ACKed before)."""
        then = self.acked[-1 - steps] if len(self.acked) > steps else Fraction(0)
        return (self.acked[-1] - then) / steps

    def _sample(self, choice: Choices, rmax: Fraction) -> Fraction:
        """The step's pulling-rate sample, by ``pulling``."""
        mode = self.p["pulling"]
        if mode == "coarse":
            return self._rate_over(self.p["burst_steps"])
        if mode == "fallback" or (mode == "burst" and choice.fallback and self.p["sparse_fallback"]):
            return self.p["fallback_gain"] * rmax
        return Fraction(choice.burst_rate) if choice.burst_rate is not None else self.C

    def _pulling_rate(self, choice: Choices, sample: Fraction, rmax: Fraction) -> Fraction:
        """Rp after a new ACK, by ``filter`` (fallback: the sample itself)."""
        p = self.p
        if p["pulling"] == "fallback":
            return sample
        if p["filter"] == "latest":
            rp = sample
        elif p["filter"] == "floor":
            rp = max(sample, rmax)
        else:
            if choice.mean:  # a sliding mean of the window's samples (appendix F's filtered mean)
                recent = [x for x in self.samples[-self.rp_window:] if x is not None]
                if choice.drop_outlier and len(recent) > 2:
                    centre = sum(recent, Fraction(0)) / len(recent)
                    recent.remove(max(recent, key=lambda x: abs(x - centre)))
                rp = sum(recent, Fraction(0)) / len(recent)
            else:
                rp = self.rp + choice.weight * (sample - self.rp)
            if choice.lift:
                rp = max(rp, rmax)
        return min(p["k"] * rmax, rp) if choice.stable and p["stable"] else rp

    def _estimate(self, kind: str, old: Fraction, choice: Choices, fresh: bool) -> Fraction:
        """An RTT estimator after this step's sample (held without a new one)."""
        window = self.rtts[-self.rtt_window:]
        if kind == "latest":
            return self.rtts[-1]
        if kind == "ewma":
            return old + choice.gain * (self.rtts[-1] - old) if fresh else old
        if kind == "min":
            return min(window)
        if kind == "max":
            return max(window)
        if kind == "mean":
            return sum(window, Fraction(0)) / len(window)
        ordered = sorted(window)
        return ordered[len(ordered) // 2]

    def decide(self, fb: Feedback) -> Decision:
        p, R = self.p, self.R
        choice = self.choices(fb) if callable(self.choices) else self.choices
        got_ack = bool(self.acked) and fb.acked > self.acked[-1]
        self.acked.append(fb.acked)
        rtt = fb.rtt if got_ack and fb.rtt is not None else self.rtts[-1]
        self.rtts.append(rtt)
        for name, kind in (("gate", choice.gate), ("force", choice.force)):
            self.est[name] = self._estimate(kind, self.est[name], choice, got_ack)
        seen = self.rtts if choice.min_window is None else self.rtts[-choice.min_window:]
        rtt_min = max(Fraction(R), min(seen))
        r = self._rate_over(p["recv_window"] or R)
        self.readings.append(r)
        rmax = max(self.readings[-p["rmax_window"] * R:])
        sample = self._sample(choice, rmax)
        self.samples.append(sample if got_ack else None)
        if got_ack:
            self.rp = self._pulling_rate(choice, sample, rmax)

        old_pace = self.pace
        if self.drain > 0:  # draining: hold the rate, withhold what is left to drain
            action = DRAIN
            withhold = min(self.drain, (1 - p["eta"]) * self.s)
            self.drain -= withhold
            paced = self.s - withhold
            self.since = 0
            self.since_inc += 1
        else:
            elapsed, elapsed_inc = self.since + 1, self.since_inc + 1
            timer = elapsed if p["force_from"] == "update" else elapsed_inc
            gradient = rtt - self.rtts[-1 - p["drtt_lag"]]
            falling = gradient <= 0 if p["accel_on_equal"] else gradient < 0
            action = HOLD
            if got_ack and elapsed >= self.est["gate"]:
                if falling or timer >= p["force_after"] * self.est["force"]:
                    action = ACCELERATE
                elif gradient >= p["theta"]:
                    action = DECELERATE
            clamp = choice.clamp and p["clamp"]
            if action == ACCELERATE:
                if not (clamp and self.rp < self.s):
                    self.s *= self._log_gain(self.rp / self.s)
                self.since, self.since_inc = 0, 0
            elif action == DECELERATE:
                if not (clamp and r > self.s):
                    self.s = (self.s + r) / 2
                self.since, self.since_inc = 0, elapsed_inc
                excess = fb.inflight - self.s * rtt_min
                self.drain = excess if p["drain"] and excess > 0 else Fraction(0)
            else:
                self.since, self.since_inc = elapsed, elapsed_inc
            paced = self.s
        self.pace = p["eta"] * self.s if self.drain > 0 else self.s

        sent, revalue = paced, Fraction(0)
        if p["pacing"] == "bursts":
            if action != HOLD and old_pace > 0:  # Send() after RateUpdate re-values the pending bytes
                start_pace = p["eta"] * self.s if action in (DRAIN, DECELERATE) and self.drain > 0 else self.s
                interval = choice.retro * min(2 * self.tick, self.carry / old_pace)
                revalue = (start_pace - old_pace) * interval
            pending = self.carry + revalue + paced
            late = min(choice.lag * self.tick * self.pace, pending)
            ready = pending - late
            sent = ready if choice.flush else (ready // self.burst) * self.burst
            if sent <= 0:  # the timer flushes a step that formed no burst
                sent = ready if ready > 0 else pending
            self.carry = pending - sent
        self.last = {"srate": self.s, "Rp": self.rp, "sample": sample, "recv": r, "rmax": rmax, "rtt": rtt,
                     "rtt_gate": self.est["gate"], "rtt_force": self.est["force"], "bdp": self.s * rtt_min,
                     "drain": self.drain, "carry": self.carry, "revalue": revalue, "since": self.since,
                     "since_inc": self.since_inc, "ack": got_ack, "action": action}
        return Decision(fb.inflight + sent, sent)

    def adopt(self, decision: Decision) -> None:
        if decision.rate is not None and self.drain == 0:
            self.s = self.pace = decision.rate
            self.carry = Fraction(0)

    def state(self) -> dict[str, Any]:
        return dict(self.last)
