"""The core of BBR the thesis models (6.1) as a concrete sender.

At each step t from the first decision on, with R steps to one min RTT:

1. record the ACK reading ``acked(t)`` (bytes ACKed by t);
2. delivery-rate sample ``(acked(t) - acked(t - R)) / R``: the bytes ACKed over the last min RTT;
3. ``bw`` = the largest sample of steps t - window*R + 1 .. t (the max filter);
4. the cycle advances one step (``cycle_pos`` in 0 .. cycle*R - 1, phase = cycle_pos // R);
5. ``cwnd = cwnd_gain * bw * R + quanta * alpha``, paced at ``pacing_gain * g(phase) * bw`` with g = probe_gain
   in phase 0, drain_gain in phase 1, and 1 in the others.

Readings where the history before the first decision is unknown:

* ``start.acked`` is the ACK curve at the steps just before the first decision (its last entry
  one step before it). A cumulative curve never exceeds a later reading, so each entry is
  taken as at most the first reading; before the oldest entry the curve is flat (nothing was
  ACKed earlier than what is known). So a sample whose RTT reaches before the known curve
  counts only what was ACKed since.
* Samples of steps before the first decision (whose RTT lies wholly before it) are not known:
  they count as ``start.values["bw"]`` (the filter the sender takes over) if given, else 0,
  and leave the filter as those steps leave its window.
* The cycle: ``start.values["cycle_pos"]`` is the position one step before the first
  decision; if unknown, the cycle starts (probe, position 0) at the first decision.
* Floor: if every sample in the filter is 0 the estimate would be 0, which the model's
  cwnd > 0 forbids; the estimate is then ``4 * alpha / (cwnd_gain * R)``, so cwnd is Linux's
  4-packet minimum and the pacing rate follows from the same estimate. (Linux floors cwnd at
  4 packets also for a small non-zero estimate; this core, like the thesis', does not.)
"""

from __future__ import annotations

from fractions import Fraction

from ccac.senders.interface import ConcreteSender, Decision, Feedback, SenderStart


class BBRSender(ConcreteSender):
    def __init__(self, start: SenderStart) -> None:
        p = start.params
        self.R = start.R
        self.window, self.cycle = int(p["window"]), int(p["cycle"])
        self.cwnd_gain, self.pacing_gain = Fraction(p["cwnd_gain"]), Fraction(p["pacing_gain"])
        self.probe_gain, self.drain_gain = Fraction(p["probe_gain"]), Fraction(p["drain_gain"])
        self.floor = 4 * Fraction(start.alpha) / (self.cwnd_gain * self.R)
        self.quanta = Fraction(p["quanta"]) * Fraction(start.alpha)  # bytes BBR adds to its window
        self.before = [Fraction(a) for a in start.acked]         # ACK curve before the first decision
        self.old_bw = Fraction(start.value("bw", 0))            # samples before the first decision
        given = start.value("cycle_pos", None)
        self.pos = int(given) if given is not None else -1        # advanced before each decision
        self.first: int | None = None                            # step of the first decision
        self.acked: list[Fraction] = []                          # ACK readings from the first decision on
        self.samples: list[Fraction] = []                        # samples from the first decision on
        self.bw = Fraction(0)

    def _acked_at(self, u: int) -> Fraction:
        """The ACK curve at step u (the readings, else the capped start curve, else flat)."""
        assert self.first is not None
        if u >= self.first:
            return self.acked[u - self.first]
        if not self.before:
            return self.acked[0]
        i = max(0, len(self.before) - (self.first - u))
        return min(self.before[i], self.acked[0])

    def gain(self, phase: int) -> Fraction:
        g = self.probe_gain if phase == 0 else self.drain_gain if phase == 1 else Fraction(1)
        return self.pacing_gain * g

    def decide(self, fb: Feedback) -> Decision:
        if self.first is None:
            self.first = fb.t
        t, R = fb.t, self.R
        self.acked.append(Fraction(fb.acked))
        self.samples.append((self.acked[-1] - self._acked_at(t - R)) / R)

        oldest = t - self.window * R + 1
        in_window = self.samples[max(0, oldest - self.first):]
        if oldest < self.first:
            in_window = in_window + [self.old_bw]
        self.bw = max(in_window)
        if self.bw == 0:
            self.bw = self.floor

        self.pos = (self.pos + 1) % (self.cycle * R)
        return Decision(self.cwnd_gain * self.bw * R + self.quanta, self.gain(self.pos // R) * self.bw)

    def state(self) -> dict[str, Fraction | int]:
        return {"bw": self.bw, "phase": self.pos // self.R, "cycle_pos": self.pos}
