"""Copa's default mode (thesis 6.3 and chapter 11, without mode switching) as a concrete sender.

At each step t from the first decision on, with ``alpha`` the MSS:

1. record the newest RTT sample; ``RTT_standing`` is the smallest of the samples of the last
   ``standing`` steps (default R), and the standing queueing delay is ``dq = RTT_standing - R``;
2. compare the rate it was sending at, ``cwnd / RTT_standing`` (cwnd of step t - 1), with the
   target rate ``alpha / (delta * dq)`` (unbounded when dq = 0): at or below it, cwnd grows by
   ``increment * alpha / R``; above it, cwnd shrinks by as much (one ``increment`` MSS per RTT,
   spread over the R steps of an RTT);
3. if paced, pace at ``pacing_gain * cwnd / RTT_standing``.

Readings where the paper is open:

* Copa's standing window is srtt/2 of ACKs and it updates per ACK; here one RTT sample
  (``fb.rtt``) and one update per step, and the window is ``standing`` steps of samples.
* The min RTT is R, the path's propagation delay, as the thesis assumes (Copa takes the least
  RTT over 10 s, which reaches R once the queue has drained); dq is then exact.
* Before the first sample (``fb.rtt`` None) the target is taken as unbounded (increase) and the
  pacing RTT as R. Samples from before the sender's first decision are not known to it: its
  window holds only the samples it has seen.
* Slow start, the velocity (v = 1), competitive mode and a minimum window are left out; a
  decrease that would leave cwnd <= 0 (only possible when ``increment * delta > R``) holds cwnd.

Unknown starting state: cwnd one MSS. Reported state: ``dq``, the exact standing queueing
delay (the encoding's ``dq_lo``/``dq_hi`` are its integer bracket, read off the path's curves).
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction

from ccac.senders.interface import ConcreteSender, Decision, Feedback, SenderStart


class CopaSender(ConcreteSender):
    def __init__(self, start: SenderStart) -> None:
        self.alpha, self.R, self.p = start.alpha, start.R, start.params
        standing = self.p["standing"] if self.p["standing"] is not None else start.R
        self.samples: deque[Fraction] = deque(maxlen=int(standing))
        self.cwnd = Fraction(start.value("cwnd", start.alpha))
        self.dq: Fraction | None = None  # the standing queueing delay, in steps

    def decide(self, fb: Feedback) -> Decision:
        if fb.rtt is not None:
            self.samples.append(Fraction(fb.rtt))
        rtt_standing = min(self.samples, default=Fraction(self.R))  # no sample yet: dq = 0
        self.dq = dq = rtt_standing - self.R

        move = self.alpha * Fraction(self.p["increment"]) / self.R
        target = self.alpha / Fraction(self.p["delta"])  # bytes: the target rate times dq
        # cwnd / RTT_standing <= target / dq, multiplied out (dq = 0: an unbounded target)
        if self.cwnd * dq <= target * rtt_standing:
            self.cwnd += move
        elif self.cwnd > move:
            self.cwnd -= move

        if not self.p["pacing"]:
            return Decision(self.cwnd)
        return Decision(self.cwnd, Fraction(self.p["pacing_gain"]) * self.cwnd / rtt_standing)

    def adopt(self, decision: Decision) -> None:
        self.cwnd = decision.cwnd

    def state(self) -> dict[str, Fraction | None]:
        return {"dq": self.dq}
