"""ETC, Elastic Transmission Control (Han et al., USENIX ATC 2024), as a concrete sender.

One decision per step, in the order of Alg. 1's ``NewACK``: the receiving rate r (ACKed bytes
per step over ``recv_window`` steps, default R) and rmax (the largest r of the last
``rmax_window`` RTTs) are read; on a new ACK the pulling rate Rp takes the step's sample (by
``pulling``: the step's receipt rate over ``burst_steps``, Eq. 5's ideal value, a micro-burst's
receipt rate, or ``fallback_gain`` x rmax) through the ``filter``; then, if not draining, an
RTT (the latest sample) has passed since the last update and an ACK came, the RateUpdate:
accelerate ``s <- s * log_base(Rp/s + base - 1)`` (Eq. 1) if dRTT = rtt - (the sample
``drtt_lag`` steps earlier) is negative (or zero with ``accel_on_equal``) or ``force_after``
RTTs passed since the last update (or increase: ``force_from``); else decelerate
``s <- (s + r) / 2`` if dRTT >= theta, and with ``drain`` withhold the bytes in flight beyond
s * R, sending eta * s per step until they are withheld (3.4). It sends s per step (less what
a drain withholds) with a window that never binds: the bytes in flight plus what it sends.
Losses and timeouts change nothing.

The paper's open choices per step are a :class:`Choices` (fixed, or a function of the step's
feedback); the defaults are the most literal reading: Rp is the latest sample (``weight`` 1),
not floored at rmax (``lift``), the stable stage's cap not applied (``stable``), and a
micro-burst arrives at the link rate C (``burst_rate``). The starting state is the run's
(``srate``, ``Rp``, ``since``, ``since_inc``, ``drain``, ``rtt``); unknown: 10 packets per RTT
(6.1), Rp = s, no drain, the last update at the start, RTT samples of R, and nothing ACKed
before ``SenderStart.acked``. A step without an RTT sample (before the first ACK) reuses the
latest one. The logarithm is computed to 50 digits.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from ccac.sender import ConcreteSender, Decision, Feedback, SenderStart

HOLD, ACCELERATE, DECELERATE, DRAIN = 0, 1, 2, 3


@dataclass(frozen=True)
class Choices:
    """What the paper leaves open at one step. ``weight``: the new pulling sample's weight in
    Rp (``filter = hull``; 1: Rp is the latest sample, below 1 an EWMA); ``lift``: floor Rp
    at rmax, the "correction by the maximum average receiving rate" (``hull``); ``stable``: the
    stable-convergence stage's cap Rp = min(k * rmax, Rp) applies (with ``stable = true``);
    ``burst_rate``: the receipt rate of the step's micro-burst, read with ``pulling = any``
    and ``ideal`` (None: C, capped at ``line_rate`` * C with ``any``; with cross traffic Eq. 8
    puts the ideal sample between C/2 and C)."""

    weight: Fraction = Fraction(1)
    lift: bool = False
    stable: bool = False
    burst_rate: Fraction | None = None


class ETCSender(ConcreteSender):
    def __init__(self, start: SenderStart, choices: Choices | Callable[[Feedback], Choices] = Choices()) -> None:
        self.p, self.R, self.C = start.params, start.R, start.C
        self.choices = choices
        self.s = Fraction(start.value("srate", 10 * start.alpha / start.R))
        self.rp = Fraction(start.value("Rp", self.s))
        self.since, self.since_inc = int(start.value("since", 0)), int(start.value("since_inc", 0))
        self.drain = Fraction(start.value("drain", 0))
        # RTT samples and the ACK curve so far, oldest first; receiving-rate readings so far.
        self.rtts = [Fraction(start.R)] * (self.p["drtt_lag"] - 1) + [Fraction(start.value("rtt", start.R))]
        self.acked = [Fraction(a) for a in start.acked]
        self.readings: list[Fraction] = []
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
        if mode == "fallback":
            return self.p["fallback_gain"] * rmax
        if choice.burst_rate is not None:
            return Fraction(choice.burst_rate)
        return min(self.C, self.p["line_rate"] * self.C) if mode == "any" else self.C

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
            rp = self.rp + choice.weight * (sample - self.rp)
            if choice.lift:
                rp = max(rp, rmax)
        return min(p["k"] * rmax, rp) if choice.stable and p["stable"] else rp

    def decide(self, fb: Feedback) -> Decision:
        p, R = self.p, self.R
        choice = self.choices(fb) if callable(self.choices) else self.choices
        got_ack = bool(self.acked) and fb.acked > self.acked[-1]
        self.acked.append(fb.acked)
        rtt = fb.rtt if fb.rtt is not None else self.rtts[-1]
        self.rtts.append(rtt)
        r = self._rate_over(p["recv_window"] or R)
        self.readings.append(r)
        rmax = max(self.readings[-p["rmax_window"] * R:])
        sample = self._sample(choice, rmax)
        if got_ack:
            self.rp = self._pulling_rate(choice, sample, rmax)

        sent = self.s
        if self.drain > 0:  # draining: hold the rate, withhold what is left to drain
            action = DRAIN
            withhold = min(self.drain, (1 - p["eta"]) * self.s)
            self.drain -= withhold
            sent = self.s - withhold
            self.since = 0
            self.since_inc += 1
        else:
            elapsed, elapsed_inc = self.since + 1, self.since_inc + 1
            timer = elapsed if p["force_from"] == "update" else elapsed_inc
            gradient = rtt - self.rtts[-1 - p["drtt_lag"]]
            falling = gradient <= 0 if p["accel_on_equal"] else gradient < 0
            action = HOLD
            if got_ack and elapsed >= rtt:
                if falling or timer >= p["force_after"] * rtt:
                    action = ACCELERATE
                elif gradient >= p["theta"]:
                    action = DECELERATE
            if action == ACCELERATE:
                self.s *= self._log_gain(self.rp / self.s)
                self.since, self.since_inc = 0, 0
            elif action == DECELERATE:
                self.s = (self.s + r) / 2
                self.since, self.since_inc = 0, elapsed_inc
                excess = fb.inflight - self.s * R
                self.drain = excess if p["drain"] and excess > 0 else Fraction(0)
            else:
                self.since, self.since_inc = elapsed, elapsed_inc
            sent = self.s
        self.last = {"srate": self.s, "Rp": self.rp, "sample": sample, "recv": r, "rmax": rmax, "rtt": rtt,
                     "drain": self.drain, "since": self.since, "since_inc": self.since_inc, "ack": got_ack,
                     "action": action}
        return Decision(fb.inflight + sent, sent)

    def adopt(self, decision: Decision) -> None:
        if decision.rate is not None and self.drain == 0:
            self.s = decision.rate

    def state(self) -> dict[str, Any]:
        return dict(self.last)
