"""What a PCC sender's per-packet RTT samples can be on the CCAC path, and what that makes of
the least-squares RTT gradient and the RTT deviation of a monitor interval (no ``ALGORITHM``).

The papers measure per packet: Vivace's gradient is the least-squares slope of "(sampled packet
RTT, time of sampling) for the packets in a MI" (Vivace 4.3; Proteus 5 writes the send time,
as the public code does), Proteus' deviation the standard deviation of "RTT samples within an
MI" (4.2). The model knows its curves only at whole steps, so a sound encoding must hold for
*every* set of per-packet samples a run of the path can produce between them. This module
states, each with its argument:

1. **The band of a step** (:func:`band_terms`, :func:`band_numbers`): an interval holding the
   RTT sample (less the propagation R) of every byte of the flow sent during step t, the time
   interval (t-1, t]. A byte sent at time s with the bottleneck queue Q(s) ahead of it (bytes,
   all flows: the queue is FIFO) waits until the token line reaches it, exactly Q(s)/C (no
   token is wasted while the queue holds bytes), and is served within D steps of that (the
   service never lags the token line by more than D); its ACK then passes the flow's own
   box (up to its D_n). So its sample is in ``[Q+(s)/C, Q+(s)/C + D]`` with D the jitter of
   the flow's feedback (``ctx.D``). Between the steps the queue is not sampled:

   * if the flow is alone on the path and nothing is lost at random (``eta = 0``), its paced
     arrivals are spread evenly over the step (the pacer), the token line grows at C while the
     queue holds bytes, and drop-tail loss holds the queue at the cap: Q+ is monotone within
     the step, between its values at t-1 and t (``Q+`` between min and max of the two ends);
   * otherwise (competitors whose windows may release bursts at any instant, or random loss
     thinning the arrivals unevenly), only what the step's totals force: the queue cannot
     drain faster than C nor grow by more than the step's admitted bytes X_t, so
     ``max(0, Q(t-1) - C, Q(t) - X_t) <= Q(s) <= min(Q+(t-1) + X_t, Q+(t) + C)``.

   On such a path the queue's direction in a step is also the pace's (a flow paced below the
   link rate cannot grow the queue, one above it cannot shrink it: at the cap drop-tail holds
   it), so the step's samples are at least the queue's delay at its end (pace <= C) or at most
   that plus D (pace >= C); before step 0 the queue is unknown, so for step 0 that is all.

2. **The gradient** of an interval of M whole steps (:func:`gradient_bounds`). The samples are
   the flow's packets sent in the interval whose ACKs came back. Three facts bound their
   least-squares slope g (steps of delay per step):

   (A) *FIFO*: a later byte never leaves before an earlier one (bottleneck and box are FIFO),
       so ``s + sample(s)`` never decreases and any set of samples has ``g >= -1``.
   (B) *A paced interval that lost nothing*: its samples are every packet of the interval,
       equally spaced in time (a pacer sends equal packets at a constant rate; the spacing h
       and the first packet's offset in (0, h] are unknown, any number N of packets). Then
       ``g = sum_k w_k y_k`` with the least-squares weights; with y_k in its step's band and
       P_j (N_j) the total positive (negative) weight that step j can carry over *all*
       lattices (:func:`weight_bounds`, exact for N < 30 and a proven tail bound beyond), for
       every real m: ``g <= sum_j P_j (hi_j - m)+ + N_j (m - lo_j)+`` (the weights sum to 0,
       so g = sum_k w_k (y_k - m), and each term is bounded by its step's band). The bound is
       convex and piecewise linear in m, so the tightest is at a band end: g is below the
       bound at every band end. Symmetrically below. For M = 2
       the worst lattice is two packets 2/3 of a step apart (N = 2): 1.5 times the per-step
       samples' slope, where many packets would give 0.75.
   (C) *A clean path* (one flow, D = 0, eta = 0): the sample is exactly Q+/C, and within an
       interval of constant rate r the queue moves at rate r - C (or sits at 0 or at the cap),
       so every set of samples has its slope between ``min(0, r/C - 1)`` and ``max(0, r/C - 1)``
       (r here is the step's arrivals, per step of the interval).

   (D) *One value*: when every band of the interval is the same single point, every sample
       equals it and any fit of any subset is flat: g = 0.

   An interval that lost bytes keeps only a subset of its packets' samples, and so does one
   whose samples Proteus' per-ACK filter may drop (5: after an ACK-interval burst, samples
   are ignored until one falls below the moving average); for those only (A), (C) and (D)
   hold: two surviving samples close in time can have any slope the jitter allows, so on a
   path with any delay noise their gradient is bounded only below (a coarse enclosure: the
   filter keeps a sample only when it falls below the moving average, which the model does
   not track).

3. **The deviation** sigma (population standard deviation) of any set of samples lies in
   ``[0, (max_j hi_j - min_j lo_j) / 2]`` (Popoviciu's inequality), and the RMS residual of
   the regression is at most sigma (a fit never leaves more variance than the mean does), so
   Proteus' regression error (RMS residual / MI duration, 5) is at most ``sigma / M``.

The check side (:func:`band_numbers`, :func:`gradient_range`) computes the same bounds on exact
numbers, with the minimum over m taken at the breakpoints of the convex piecewise-linear
bound, sharing only the weight tables (pure numbers).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any, Sequence

import z3

from ccac.encode.encoding import Term, num

EXACT_UP_TO = 30  # lattices of fewer packets are bounded exactly; more, by the tail bound


# ====================================================================== weight tables
def _lattice_sup(M: int, j: int, N: int) -> Fraction:
    """The supremum, over lattices of N packets covering an interval of M steps, of the total
    positive least-squares weight carried by step j (the interval (j-1, j]).

    Packets at x_k = x0 + k h (k < N) with 0 < x0 <= h, x_(N-1) <= M < x_(N-1) + h. The
    weight of packet k is (k - c) 12 / (h N (N^2 - 1)) with c = (N-1)/2. If the packets of
    step j above the centre are k = a..b, the sum is S(a, b) 12 / (h N (N^2 - 1)), largest at
    the smallest h for which some x0 places a..b in step j; every constraint on (x0, h) is
    strict once paired (below), so the feasible h form an open interval (lo, hi) and the
    supremum is S / lo (not attained)."""
    c = Fraction(N - 1, 2)
    best = Fraction(0)
    for a in range(N):
        if a <= c:
            continue
        for b in range(a, N):
            # x0 lies above 0, M - N h, j - 1 - a h (strict) and below h, M - (N-1) h, j - b h
            lows = [Fraction(M, N + 1), Fraction(j - 1, a + 1)] + ([Fraction(M - j, N - b)] if N > b else [])
            highs = [Fraction(M, N - 1)] + ([Fraction(j, b)] if b > 0 else []) + \
                ([Fraction(M - j + 1, N - 1 - a)] if N - 1 > a else []) + ([Fraction(1, b - a)] if b > a else [])
            h = max(lows)
            if h <= 0 or h >= min(highs):
                continue
            total = sum((k - c for k in range(a, b + 1)), Fraction(0))
            best = max(best, total * 12 / (h * N * (N * N - 1)))
    return best


def _tail(M: int, j: int, N0: int) -> Fraction:
    """An upper bound on step j's positive weight for every lattice of N >= N0 packets.

    The packets of step j above the centre xbar sum (x - xbar) to at most
    ((j + h - xbar)^2 - (max(j-1, xbar) - xbar)^2) / (2h) (an increasing function summed on a
    lattice of spacing h, against its integral); the weights divide by h^2 N (N^2-1)/12. The
    lattice covers the interval, so M/(N+1) < h < M/(N-1) and xbar > M/2 - M/(N-1). The bound
    grows with h and falls with xbar, and the whole expression falls with N, so its value at
    N0 (h at its largest in the numerator, smallest in the denominator) bounds every N >= N0."""
    h_max, xbar = Fraction(M, N0 - 1), Fraction(M, 2) - Fraction(M, N0 - 1)
    if j + h_max <= xbar:
        return Fraction(0)
    low = max(Fraction(j - 1), xbar)
    numerator = (j + h_max - xbar) ** 2 - (low - xbar) ** 2
    return 6 * numerator / (Fraction(M, N0 + 1) ** 3 * N0 * (N0 * N0 - 1))


@lru_cache(maxsize=None)
def weight_bounds(M: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """(P, N): for each step j = 1..M of an interval of M steps, the largest total positive and
    negative least-squares weight its packets can carry, over every evenly spaced set of any
    number of packets covering the interval (module docstring, (B)). N_j = P_(M+1-j): the
    reflection x -> M - x maps the lattices onto themselves.

    Steps in the first half (2 j <= M) carry no positive weight in any lattice: a packet above
    the centre x0 + (N-1) h / 2 has index k >= N/2, so it is sent at x0 + k h >= (x0 + N h)/2 +
    x0/2 > M/2 (the lattice covers the interval: x0 + N h > M, x0 > 0)."""
    positive = tuple(Fraction(0) if 2 * j <= M else
                     max([_lattice_sup(M, j, N) for N in range(2, EXACT_UP_TO)] + [_tail(M, j, EXACT_UP_TO)])
                     for j in range(1, M + 1))
    return positive, tuple(reversed(positive))


# ====================================================================== bands
def plus(x: Any) -> Any:
    return z3.If(x > 0, x, 0)


def band_terms(C: Fraction, D: int, even_queue: bool, queue0: Term, queue1: Term,
               admitted_in_step: Term) -> tuple[Term, Term]:
    """The sample band of a step (module docstring, 1) from the bottleneck queue at its two
    ends (bytes, may be negative: tokens ahead of the bytes) and the bytes admitted in it;
    ``even_queue``: one flow and no random loss (the queue is monotone within the step)."""
    q0, q1 = plus(queue0), plus(queue1)
    if even_queue:
        low = z3.If(q0 <= q1, q0, q1)
        high = z3.If(q0 >= q1, q0, q1)
    else:
        lows = [queue0 - C, queue1 - admitted_in_step]
        low = plus(z3.If(lows[0] >= lows[1], lows[0], lows[1]))
        highs = [q0 + admitted_in_step, q1 + C]
        high = z3.If(highs[0] <= highs[1], highs[0], highs[1])
    return low / C, high / C + D


def band_numbers(C: Fraction, D: int, even_queue: bool, queue0: Fraction, queue1: Fraction,
                 admitted_in_step: Fraction) -> tuple[Fraction, Fraction]:
    """:func:`band_terms` on exact numbers."""
    q0, q1 = max(queue0, Fraction(0)), max(queue1, Fraction(0))
    if even_queue:
        low, high = min(q0, q1), max(q0, q1)
    else:
        low = max(Fraction(0), queue0 - C, queue1 - admitted_in_step)
        high = min(q0 + admitted_in_step, q1 + C)
    return low / C, high / C + D


# ====================================================================== the gradient
def lattice_upper_terms(M: int, lows: Sequence[Term], highs: Sequence[Term]) -> list[Term]:
    """(B)'s upper bounds on the slope of a lossless paced interval of M steps: the bound for
    the reference m at every band end. The bound is convex and piecewise linear in m with its
    kinks at the band ends, so its minimum over all m is at one of them, and the slope is below
    each: asserting all of them states exactly ``g <= min over m``."""
    P, N = weight_bounds(M)

    def at(m: Term) -> Term:
        parts = [P[j] * plus(highs[j] - m) for j in range(M) if P[j]] + \
                [N[j] * plus(m - lows[j]) for j in range(M) if N[j]]
        return z3.Sum(*parts) if parts else num(0)

    return [at(m) for m in list(lows) + list(highs)]


def lattice_lower_terms(M: int, lows: Sequence[Term], highs: Sequence[Term]) -> list[Term]:
    """(B)'s lower bounds: minus the upper bounds of the mirrored samples, at every band end."""
    P, N = weight_bounds(M)

    def at(m: Term) -> Term:
        parts = [N[j] * plus(highs[j] - m) for j in range(M) if N[j]] + \
                [P[j] * plus(m - lows[j]) for j in range(M) if P[j]]
        return -z3.Sum(*parts) if parts else num(0)

    return [at(m) for m in list(lows) + list(highs)]


def gradient_range(M: int | None, lows: Sequence[Fraction], highs: Sequence[Fraction], lossless: bool,
                   rise: tuple[Fraction, Fraction] | None) -> tuple[Fraction, Fraction | None]:
    """The interval (A), (B) and (C) allow for an interval's gradient, on exact numbers.

    ``M`` is the interval's length when (B) applies to it (lossless, every sample kept, and
    short enough to have weight tables), else None; ``lows``/``highs`` its steps' bands;
    ``rise`` (C)'s (min, max) of r/C - 1 over its steps on a clean path, else None; (D) when
    every band is one point. The upper end is None when nothing bounds it. (B)'s bound is convex and piecewise linear in
    m, so
    its minimum over m is at one of the band ends."""
    if lows and max(highs) == min(lows):   # (D): every sample is that one value
        return Fraction(0), Fraction(0)
    low, high = Fraction(-1), None
    if M is not None and lossless:
        P, N = weight_bounds(M)
        candidates = list(lows) + list(highs)

        def upper(m: Fraction) -> Fraction:
            return sum((P[j] * max(highs[j] - m, Fraction(0)) + N[j] * max(m - lows[j], Fraction(0))
                        for j in range(M)), Fraction(0))

        def lower(m: Fraction) -> Fraction:
            return -sum((N[j] * max(highs[j] - m, Fraction(0)) + P[j] * max(m - lows[j], Fraction(0))
                         for j in range(M)), Fraction(0))

        high = min(upper(m) for m in candidates)
        low = max(low, max(lower(m) for m in candidates))
    if rise is not None:
        low = max(low, min(Fraction(0), rise[0]))
        high = max(Fraction(0), rise[1]) if high is None else min(high, max(Fraction(0), rise[1]))
    return low, high


def deviation_bound(lows: Sequence[Any], highs: Sequence[Any]) -> Any:
    """Popoviciu: the standard deviation of values in [min lows, max highs] is at most half
    the width (terms or numbers)."""
    if all(isinstance(x, Fraction) for x in list(lows) + list(highs)):
        return (max(highs) - min(lows)) / 2
    top, bottom = highs[0], lows[0]
    for h in highs[1:]:
        top = z3.If(h >= top, h, top)
    for lo in lows[1:]:
        bottom = z3.If(lo <= bottom, lo, bottom)
    return (top - bottom) / 2
