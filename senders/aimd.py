"""The thesis' AIMD (6.2, table 4.1) as a concrete sender.

At each step from the first decision on, in order of precedence:

1. timeout: cwnd = one MSS; the loss event and the ACK count restart;
2. a new loss event is detected (a byte lost after the last decrease: RFC 6582's "recover"
   point; the sender marks the decrease by the flow's cumulative loss before this step, so
   a loss of bytes sent from this step on is new): cwnd halves, the ACK count restarts;
3. with ``hold_in_recovery``: more detections of an old event hold cwnd;
4. a whole window of ACKs since the last change: cwnd grows by one MSS, the count restarts;
5. otherwise cwnd holds.

Paced at ``pacing_gain * cwnd / R`` if asked. Unknown starting state: cwnd one MSS, the ACK
count starting at the first reading, and every loss detected before the start counted as an
old event.
"""

from __future__ import annotations

from fractions import Fraction

from ccac.senders.interface import ConcreteSender, Decision, Feedback, SenderStart


class AIMDSender(ConcreteSender):
    def __init__(self, start: SenderStart) -> None:
        self.alpha, self.R, self.p = start.alpha, start.R, start.params
        self.cwnd = Fraction(start.value("cwnd", start.alpha))
        detected = Fraction(start.value("Ld_f", 0))
        self.loss_mark = Fraction(start.value("loss_mark", detected))
        self.ack_mark: Fraction | None = start.value("ack_mark", None)
        self.detected = detected

    def decide(self, fb: Feedback) -> Decision:
        if self.ack_mark is None:
            self.ack_mark = fb.acked
        lost_before = fb.outcome.lost[fb.t - 1] if fb.t >= 1 else Fraction(0)
        if fb.timeout:
            self.cwnd = self.alpha
            self.loss_mark, self.ack_mark = lost_before, fb.acked
        elif fb.lost > self.loss_mark:
            self.cwnd /= 2
            self.loss_mark, self.ack_mark = lost_before, fb.acked
        elif fb.lost > self.detected and self.p["hold_in_recovery"]:
            pass
        elif fb.acked - self.ack_mark >= self.cwnd:
            self.cwnd += self.alpha
            self.ack_mark = fb.acked
        self.detected = fb.lost
        rate = self.p["pacing_gain"] * self.cwnd / self.R if self.p["pacing"] else None
        return Decision(self.cwnd, rate)

    def adopt(self, decision: Decision) -> None:
        self.cwnd = decision.cwnd

    def state(self) -> dict[str, Fraction | None]:
        return {"loss_mark": self.loss_mark, "ack_mark": self.ack_mark}
