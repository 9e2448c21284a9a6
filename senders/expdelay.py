"""The thesis' exponential rate-delay CCA (section 9.3, Algorithm 1) as a concrete sender.

Every ``every`` steps (default R: "run every R_m"), at the steps t with t % every == offset,
it reads the queueing delay q of its latest RTT sample (the sample minus the minimum RTT R)
and sets

    mu <- mu + a*C   if mu < target(q) = mu_min * C * s ** ((qmax - q) / jitter),
    mu <- b * mu     otherwise,

with the target capped at its value for q = jitter if ``cap``. It paces at mu and has no
window (Algorithm 1 has none): its window is the bytes in flight plus mu, which never binds.
Losses and timeouts change nothing.

Open choices, taken as follows. The timer's offset: the constructor's ``offset``, else the
run's: if its update flag was set at step R - 1 the timer fires again at R - 1 + every;
otherwise (or unknown) it first fires at step R, the first decision. The starting rate:
the run's ``mu``, else mu_min * C (the bottom of the design range). Before the first RTT
sample q is the least delay the model's reading allows (``Feedback.delay``).
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from ccac.senders.interface import ConcreteSender, Decision, Feedback, SenderStart

INCREASE, DECREASE, NONE = 1, -1, 0


def true_target(p: dict[str, Any], q: Fraction, C: Fraction) -> Fraction:
    """target(q) = mu_min * C * s^((qmax - q) / jitter), capped at q = jitter if ``cap``:
    exact for an integer exponent, else to 50 digits."""
    e = (Fraction(p["qmax"]) - q) / p["jitter"]
    if p["cap"]:
        e = min(e, (Fraction(p["qmax"]) - p["jitter"]) / p["jitter"])
    s = Fraction(p["s"])
    if e.denominator == 1:
        return p["mu_min"] * C * s ** e.numerator
    with localcontext() as dc:
        dc.prec = 50
        power = ((Decimal(s.numerator) / s.denominator).ln() * (Decimal(e.numerator) / e.denominator)).exp()
    return p["mu_min"] * C * Fraction(power)


class ExpDelaySender(ConcreteSender):
    def __init__(self, start: SenderStart, offset: int | None = None) -> None:
        self.p, self.C = start.params, start.C
        self.every: int = self.p["every"] or start.R
        if offset is None:
            fired = bool(start.value("update", False))
            offset = (start.R - 1 if fired else start.R) % self.every
        self.offset = offset
        self.mu = Fraction(start.value("mu", self.p["mu_min"] * start.C))
        self.move = NONE

    def decide(self, fb: Feedback) -> Decision:
        if fb.t % self.every != self.offset:
            self.move = NONE
        else:
            q = fb.rtt - fb.R if fb.rtt is not None else Fraction(fb.delay[0])
            if self.mu < true_target(self.p, q, self.C):
                self.mu += self.p["a"] * self.C
                self.move = INCREASE
            else:
                self.mu *= self.p["b"]
                self.move = DECREASE
        return Decision(fb.inflight + self.mu, self.mu)

    def adopt(self, decision: Decision) -> None:
        if decision.rate is not None:
            self.mu = decision.rate

    def state(self) -> dict[str, Any]:
        return {"mu": self.mu, "update": self.move != NONE, "move": self.move}
