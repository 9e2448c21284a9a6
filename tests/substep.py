"""What happens inside the steps of a fluid run: the continuous-time path behind a run of
:func:`fluid_path.simulate`, and the per-packet RTT samples a sender on it measures.

The model samples its curves at whole steps; a real sender sends and measures between them. A
paper's sender that regresses per-packet RTT samples against their send times (PCC Vivace 4.3,
Proteus 4.2 and 5) sees how the queue moves *within* a step: a queue that drains in the first
half of a step, jitter that holds one byte and not the next. To test that an encoding admits
such senders, the harness builds, for every step, one continuous-time behaviour of the path
model that agrees with the step values :func:`fluid_path.simulate` chose (so the run is still a
trace of the model) and reads each packet's sample off it exactly:

* **Arrivals** are spread evenly over the step (a pacer), after any bursts the sender asks for
  (``Decision.bursts``: back to back at the step's start, at LINE times the link rate); congestive
  loss happens only at the buffer's cap (drop-tail: while the queue is full the link admits what
  it serves, C per step) and non-congestive loss thins the arrivals evenly. The step's admitted
  bytes and token line at its end follow from this (with even arrivals they are the ones
  :func:`fluid_path.simulate` computes per step; bursts can fill the buffer mid-step). Bursts
  come first so that the queue, once empty in a step, stays empty: tokens are wasted only with
  the queue empty at the step's end, as the model's waste rule requires.
* **The token line** grows at C while the queue holds bytes and follows the admitted bytes
  when it is empty (tokens are wasted only then): ``min(line(t-1) + C u, admitted(u))``.
* **The service** lies between the token line D steps ago and the token line now (the model's
  bounds, at every instant), along a random monotone path between the step's two values:
  jitter that holds some bytes and releases later ones at once.
* **Packets** are sent on a lattice with one spacing h (at most a step) and a phase, as a
  pacer sends equal packets: every monitor interval of whole steps holds an evenly spaced run
  of send times that covers it; a burst's packets (of the MSS) leave back to back. A packet's RTT sample is R plus the time from its send time to
  the instant the service reaches its byte (the sample of that byte of the fluid; a real
  packet adds its own transmission time, the same for every packet of an interval, which
  cancels in every gradient and deviation). In a step that loses bytes a packet is lost with
  the probability the loss gives it (at the cap, 1 - C/rate; by non-congestive loss, that
  fraction): its sample never arrives.

All arithmetic is exact (fractions); piecewise-linear curves are built from their breakpoints.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction

F = Fraction
LINE = 10  # a burst leaves the sender at this many times the link rate


@dataclass
class Piece:
    """A continuous piecewise-linear function on [points[0][0], points[-1][0]]."""

    points: list[tuple[Fraction, Fraction]]

    def at(self, x: Fraction) -> Fraction:
        pts = self.points
        if x <= pts[0][0]:
            return pts[0][1]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if x <= x1:
                return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        return pts[-1][1]

    def first_reach(self, v: Fraction) -> Fraction | None:
        """The earliest x with f(x) >= v (f non-decreasing), None if it never gets there."""
        pts = self.points
        if pts[0][1] >= v:
            return pts[0][0]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if y1 >= v:
                return x0 + (v - y0) * (x1 - x0) / (y1 - y0)
        return None


def _combine(f: Piece, g: Piece, pick: type(min)) -> Piece:  # type: ignore[valid-type]
    """min or max of two piecewise-linear functions on the same interval, exactly."""
    xs = sorted({x for x, _ in f.points} | {x for x, _ in g.points})
    out: list[tuple[Fraction, Fraction]] = []
    for a, b in zip(xs, xs[1:]):
        da, db = f.at(a) - g.at(a), f.at(b) - g.at(b)
        out.append((a, pick(f.at(a), g.at(a))))
        if (da < 0 < db) or (db < 0 < da):  # they cross inside (a, b)
            x = a + (b - a) * da / (da - db)
            out.append((x, f.at(x)))
    out.append((xs[-1], pick(f.at(xs[-1]), g.at(xs[-1]))))
    return Piece(out)


def lower(f: Piece, g: Piece) -> Piece:
    return _combine(f, g, min)


def upper(f: Piece, g: Piece) -> Piece:
    return _combine(f, g, max)


def line(x0: Fraction, y0: Fraction, slope: Fraction, x1: Fraction) -> Piece:
    return Piece([(x0, y0), (x1, y0 + slope * (x1 - x0))])


@dataclass
class Probes:
    """Where packets are sent: times ``phase + k * spacing`` (k = 0, 1, ...), 0 < spacing <= 1,
    0 < phase <= spacing."""

    spacing: Fraction
    phase: Fraction

    @classmethod
    def random(cls, rng: random.Random) -> Probes:
        spacing = F(rng.choice([1, 1, 2, 3, 4, 5, 7, 8]), rng.choice([1, 2, 3, 4, 5, 8]))
        spacing = min(spacing, F(1))
        return cls(spacing, spacing * F(rng.randint(1, 4), 4))

    def in_step(self, t: int) -> list[Fraction]:
        """The send times in step t, the interval (t-1, t]."""
        k = max(0, -((self.phase - (t - 1)) // self.spacing))  # first k with phase + k h > t - 1
        out = []
        x = self.phase + k * self.spacing
        while x <= t:
            if x > t - 1:
                out.append(x)
            x += self.spacing
        return out


@dataclass
class Sample:
    sent_at: Fraction
    position: Fraction          # the byte's place on the admitted curve
    size: Fraction              # the bytes the packet carries (its share of the step)
    served_at: Fraction | None = None


@dataclass
class Inside:
    """The continuous-time path behind a single-flow run, built step by step, and the packets
    sent on it (see the module docstring)."""

    C: Fraction
    D: int
    R: int
    buffer: Fraction | None
    probes: Probes
    rng: random.Random
    token: list[Piece] = field(default_factory=list)     # by step t >= 1: the token line on [t-1, t]
    service: list[Piece] = field(default_factory=list)   # by step: the service on [t-1, t]
    pending: list[Sample] = field(default_factory=list)  # sent, not yet served (FIFO order)
    served: list[Sample] = field(default_factory=list)   # in service order

    def token_piece(self, lo: Fraction, hi: Fraction, line0: Fraction) -> list[tuple[Fraction, Fraction]]:
        """The token line's breakpoints on [lo, hi] (before step 0: tokens arriving at C, as the
        model's service bound reads it; ``line0`` is its value at 0)."""
        xs = {lo, hi}
        for t, piece in enumerate(self.token, start=1):
            xs |= {x for x, _ in piece.points if lo <= x <= hi}
        if lo < 0 < hi:
            xs.add(F(0))
        return [(x, self.token_at(x, line0)) for x in sorted(xs)]

    def token_at(self, x: Fraction, line0: Fraction) -> Fraction:
        if x <= 0:
            return line0 + self.C * x
        t = -((-x) // 1)  # the step holding x: x in (t-1, t]
        return self.token[t - 1].at(x)

    def admit(self, t: int, a0: Fraction, k0: Fraction, arrived: Fraction, noncongestive: Fraction,
              bursts: tuple[Fraction, ...], alpha: Fraction) -> tuple[Fraction, Fraction]:
        """Step t's arrivals (the interval [t-1, t]): the flow's ``bursts`` back to back at the
        step's start at LINE times the link rate, the rest of its ``arrived`` bytes evenly over
        the step, ``noncongestive`` of them lost on the link (evenly), the queue held at the cap
        by drop-tail. Builds the admitted curve and the token line inside the step, sends the
        step's packets (a burst's of ``alpha`` bytes each; the rest on the probe lattice), and
        returns the admitted bytes and the token line at t."""
        C, start = self.C, F(t - 1)
        burst = sum(bursts, F(0))
        span = burst / (LINE * C)
        assert span <= 1, "a step's bursts fit in the step at the line rate"
        keep = 1 - noncongestive / arrived if arrived else F(1)
        even = (arrived - burst) * keep                      # offered per step, after the burst
        rates = [((burst / span + arrived - burst) * keep, span)] if span else []
        rates.append((even, F(1) - span))
        adm_pts, tok_pts = [(start, a0)], [(start, k0)]
        drops: list[tuple[Fraction, Fraction, Fraction]] = []   # (from, to, fraction dropped)
        x, adm, tok = start, a0, k0
        for rate, length in rates:
            stop = x + length
            while x < stop:
                queue = adm - tok
                if self.buffer is not None and queue >= self.buffer and rate >= C:  # at the cap
                    nxt, d_adm, d_tok = stop, C, C
                    drops.append((x, stop, 1 - C / rate if rate else F(0)))
                elif queue <= 0 and rate <= C:                                     # empty: tokens follow
                    nxt, d_adm, d_tok = stop, rate, rate
                else:                                                               # the queue moves
                    d_adm, d_tok = rate, C
                    grow = rate - C
                    if grow > 0 and self.buffer is not None:
                        nxt = min(stop, x + (self.buffer - queue) / grow)
                    elif grow < 0:
                        nxt = min(stop, x + queue / -grow)
                    else:
                        nxt = stop
                adm, tok = adm + d_adm * (nxt - x), tok + d_tok * (nxt - x)
                x = nxt
                adm_pts.append((x, adm))
                tok_pts.append((x, tok))
        admitted, token = Piece(adm_pts), Piece(tok_pts)
        self.token.append(token)
        self._send(t, admitted, drops, bursts, span, alpha, noncongestive / arrived if arrived else F(0), arrived)
        return adm, tok

    def _send(self, t: int, admitted: Piece, drops: list[tuple[Fraction, Fraction, Fraction]],
              bursts: tuple[Fraction, ...], span: Fraction, alpha: Fraction, thin: Fraction, arrived: Fraction) -> None:
        """The step's packets: each burst's, of ``alpha`` bytes, at its send time; the rest on the
        probe lattice after the bursts. A packet is lost with the fraction its instant drops."""
        start = F(t - 1)
        times: list[tuple[Fraction, Fraction]] = []
        sent = F(0)
        for size in bursts:
            k = F(0)
            while k < size:
                piece = min(alpha, size - k)
                sent += piece
                k += piece
                times.append((start + sent / (LINE * self.C), piece))
        if arrived > sum(bursts, F(0)):
            times += [(x, arrived * self.probes.spacing) for x in self.probes.in_step(t) if x > start + span]
        for x, size in times:
            drop = max([thin] + [frac for lo, hi, frac in drops if lo <= x <= hi])
            if self.rng.random() >= drop:
                self.pending.append(Sample(x, admitted.at(x), size))

    def serve(self, t: int, served: tuple[Fraction, Fraction], line0: Fraction) -> None:
        """Step t's service: a random monotone path between the step's two values, kept between
        the token line D steps ago and the token line now (the model's bounds, at every
        instant); the packets it reaches are served."""
        start, end = F(t - 1), F(t)
        tok = self.token[t - 1]
        u = F(self.rng.randint(0, 4), 4)
        mid = served[0] + (served[1] - served[0]) * F(self.rng.randint(0, 4), 4)
        path = Piece([(start, served[0]), (start + u, mid), (end, served[1])] if 0 < u < 1
                     else [(start, served[0]), (end, served[1])])
        floor = Piece([(x + self.D, y) for x, y in self.token_piece(start - self.D, end - self.D, line0)])
        service = upper(lower(path, tok), floor)
        assert service.at(start) == served[0] and service.at(end) == served[1]
        self.service.append(service)
        while self.pending:
            s = self.pending[0]
            reach = service.first_reach(s.position)
            if reach is None:
                break
            s.served_at = max(reach, s.sent_at)
            self.served.append(self.pending.pop(0))

    def acks_between(self, lo: Fraction, hi: Fraction) -> list[Sample]:
        """Samples whose ACK (R after service) arrives in (lo, hi]."""
        return [s for s in self.served if lo < s.served_at + self.R <= hi]
