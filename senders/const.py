"""``const`` as a concrete sender: a fixed congestion window of ``cwnd`` BDPs, i.e.
cwnd * C * R bytes, and with ``pacing = true`` a pacing rate of that window / R bytes per step.
It has no state and leaves nothing open: the window does not depend on the feedback.
"""

from __future__ import annotations

from fractions import Fraction

from ccac.senders.interface import ConcreteSender, Decision, Feedback, SenderStart


class ConstantWindowSender(ConcreteSender):
    def __init__(self, start: SenderStart) -> None:
        self.window = Fraction(start.params["cwnd"]) * start.C * start.R
        self.rate = self.window / start.R if start.params["pacing"] else None

    def decide(self, fb: Feedback) -> Decision:
        return Decision(self.window, self.rate)
