"""``etc``: Elastic Transmission Control (Han et al., USENIX ATC 2024), as a linear encoding.

Source: ``../shared/seeds/etc-atc2024.md`` (sections cited as "3.3", "Alg. 1", ...; "O4" etc.
are the open points of an independent reading of the paper). ETC is rate-based: no congestion
window, a sending rate ``s`` paced out in micro-bursts, pulled up toward a *pulling rate* Rp by
an elastic (logarithmic) multiplier, and pushed down toward the receiving rate r when the RTT
gradient rises.

The encoding is meant to be a superset of the union of the paper's readings, except where a
line below says RESTRICTION (runs of the paper's algorithm it excludes; the effect on answers
is said there and summed up at the end) or ASSUMPTION (a mode a query must choose explicitly).

The algorithm as modelled (one decision per step, the model's granularity)
---------------------------------------------------------------------------
R steps make one minimum RTT. The sender at step t has the ACKs of everything served by t-R.
From step R on, in the order of Alg. 1's ``NewACK`` (update Rp, update r, maybe ``RateUpdate``):

* **ACK.** ``ack[t]``: some of this flow's bytes were acknowledged during step t
  (``S_f[t-R] > S_f[t-R-1]``). ``NewACK`` runs only then; the 10 ms timer (Alg. 1 l. 26-27)
  only sends, it never updates the rate.
* **RTT sample** (3.2). ``rtt[t]`` is the *latest* sample the sender has at t. With an ACK it
  is the RTT of the byte whose ACK arrives at t, in steps: ``R`` plus the queueing delay of the
  byte served at t-R, a real number the model knows only as the integer range of
  ``ccac.trace.delay_range`` (thesis figure 5-1B, as Copa does it): ``R + lo <= rtt[t] <= R +
  hi`` (no upper end when the range has none); the true value lies in the range, so any solver
  choice inside it covers it. Without an ACK there is no new sample and ``rtt[t] = rtt[t-1]``
  (the range read at a step without an ACK describes the same byte a step later and could
  exclude the sender's true latest sample). One sample per step (the paper takes the first
  packet of each micro-burst; at step resolution that is one per step, as Copa's).
* **RTT gradient.** ``dRTT = rtt[t] - rtt[t - drtt_lag]`` (consecutive samples by default;
  "what dRTT is measured between" is unspecified (O2): ``drtt_lag`` steps, 1 .. R, one
  reading per value).
* **RTT estimators** (O4, O26). "RTT" in ``now - t_update >= RTT`` and in "8 RTTs" is
  unspecified, and the two need not be the same: ``rtt_gate[t]`` and ``rtt_force[t]`` are two
  free estimates, each at least R and between the smallest and the largest of its previous
  value and the samples of the last ``rtt_window`` steps (default R). That covers every
  estimator whose value stays in the hull of its previous value and those samples: the latest
  sample, an EWMA of any (even varying) gain such as SRTT, a cumulative mean, a windowed or
  lifetime minimum (RTT_min) or maximum, and a mean, median or percentile of the last
  ``rtt_window`` samples (a windowed minimum: the new minimum is at least min(old, new sample)
  and at most the new sample). Not covered: estimates outside that hull (SRTT + k RTTVAR, a
  mean over more than ``rtt_window`` steps: widen it). At step 0 the estimates are free
  (at least R): a query about a known start states them (``rtt_gate[0][R-1] == R``).
* **Pulling-rate sample** (3.1, 3.2, 5.1), ``sample[t]``, by ``pulling``:
  ``burst`` (default, sound): the receipt rate of a micro-burst, ``(N-1) L / dt2`` (Eq. 5), a
  sub-step quantity the step curves do not determine. Without jitter (the flow's D = 0) the
  link serves at most C per unit time inside a step too, so ``0 < sample <= C``; with jitter a
  held burst can be released at once (ACK compression), so ``sample > 0`` is all the model
  says, unless ``line_rate`` states a path ASSUMPTION (``sample <= line_rate * C``). With
  ``sparse_fallback`` (default) the sample may instead be 4.3's fallback ``fallback_gain *
  rmax`` (1.25): when a micro-burst yields only one IACK the paper sets Rp to 1.25 x the max
  receiving rate, and the model cannot tell how IACKs align with bursts (O12, O20); with
  ``sparse_fallback = false`` it is an ASSUMPTION that every burst yields a sample.
  ``coarse`` (ASSUMPTION): the step's receipt rate ``(S_f[t-R] - S_f[t-R-k]) / k``, k =
  ``burst_steps``: a step average in place of the sub-step rate, not a superset (it is the
  mode in which the path's jitter shapes the signal at step level; with jitter every coarse
  trace is also a ``burst`` trace). ``ideal`` (ASSUMPTION): the paper's own model, Eq. 5 with no
  cross traffic: C for one flow, C/2 <= sample <= C with several (Eq. 8). ``fallback``: no
  burst samples at all; Rp = ``fallback_gain`` x rmax on every ACK (4.3).
* **Receiving rate** ``recv[t] = (S_f[t-R] - S_f[t-R-w]) / w``, w = ``recv_window`` steps
  (default R; "current receiving rate" is unspecified, one reading per value). ``rmax[t]``: the
  "maximum average receiving rate" over ``rmax_window`` RTTs (3.1 footnote: 8). Which reading
  the paper keeps (a windowed max; the stable stage's "updated only on a 1.1x rise"; "sampled
  again") is unspecified, so rmax may be *any* value between the smallest and the largest
  reading of the window: a superset of all of them as long as the value kept is from that
  window (RESTRICTION otherwise: a hysteretic rmax kept for longer than ``rmax_window`` RTTs is
  not covered; widen ``rmax_window``).
* **Pulling rate** ``Rp[t]`` on an ACK, by ``filter``: ``hull`` (default): anywhere between the
  smallest and the largest of the old Rp, rmax, the new sample and the samples of the other
  ACKed steps of the last ``rp_window`` steps (default R) -- covers "latest sample", any EWMA of
  samples, max- and min-hold, a sliding mean or median of the window's samples, a mean after
  dropping outliers (3-sigma rule, appendix F), and replacing, flooring or capping by rmax
  ("constantly corrected by the maximum average receiving rate", O7); ``latest``: the new
  sample; ``floor``: max(sample, rmax) (single readings). With ``stable = true`` the
  stable-convergence stage (3.2) may apply at any step (the solver picks the stage: the 1.1x /
  8-RTT stage rule is too vague to encode): Rp = min(k x rmax, Rp) with ``k`` = 1.25
  (unspecified; 4.3's factor). No ACK: Rp holds.
* **RateUpdate** (Alg. 1 l. 12-19, 23) at an ACK with ``t - t_update >= rtt_gate[t]`` and not
  draining: accelerate if ``dRTT < 0`` (Alg. 1 l. 13, 3.3; ``accel_on_equal = true`` reads 3.1's
  "holds or decreases" as ``dRTT <= 0``) or ``force_after`` (8) RTTs (``rtt_force``) passed
  since the last update (Alg. 1) or increase (3.3's text; ``force_from``):
  ``s = s * log_base(Rp/s + base - 1)`` (Eq. 1, base e by default, 3.3 / 6.1); else decelerate
  if ``dRTT >= theta`` (steps, unspecified, default 1/2): ``s = (s + r) / 2`` (3.4); else
  nothing, and t_update is kept (so the update is retried at the next ACK). With ``clamp``
  (default) the encoding also admits the clamping readings: an acceleration with Rp < s may
  leave s unchanged (f >= 1, O14(b); 5.3's "f >= 1"), and a deceleration with r > s may leave s
  unchanged (O17).
* **Drain** (3.4, Eq. 2). After a deceleration, if inflight = ``A_f[t-1] - S_f[t-R] - Ld_f[t]``
  exceeds the BDP, ETC sends at ``eta * s`` (eta = 0.3, 6.1) for ``t_d = (inflight - BDP) /
  ((1 - eta) * s)``: it withholds exactly ``inflight - BDP`` bytes. The BDP is ``s * RTT_min``
  with the sender's minimum-RTT estimate (O5, O27: a windowed minimum of its samples, never
  below the true minimum R, above it when the queue never emptied in the window, and never
  above the newest sample). ``bdp[t]`` is that product, enclosed linearly: ``s * R <= bdp[t]``
  and, with an ACK, ``bdp[t] <= s * (R + hi)`` where hi is the newest sample's upper end (the
  product s * RTT_min with RTT_min a solver real is not linear; the enclosure is wider than
  the true set by at most one step of delay resolution, s * (R + hi - rtt)). ``drain[t]`` is
  what is left to withhold; each draining step withholds ``min(drain, (1 - eta) * s)``, so the
  step where the drain ends sends the rest at s (the fluid t_d, not rounded to steps). The
  drain's end is the new t_update: the rate holds for at least an RTT after it (3.4), and no
  RateUpdate runs while draining (RESTRICTION: Alg. 1 sets t_update at the decision, O16(a), so
  a literal sender whose drain lasts longer than its gate's RTT may update mid-drain; not
  covered).
* **Sending** (Alg. 1 l. 1-11, ``pacing``). ``rate[t]`` (the model's pacing rate) is what ETC
  sends in step t. Its pacer accrues ``s`` per step (less what a drain withholds: the step's
  *paced* bytes) and sends them in micro-bursts of N = ``burst`` MSS at ACKs and timer ticks,
  flushing a partial burst when 10 ms passed since the last send. With ``pacing = bursts``
  (default) ``carry[t]`` is what accrued and is not yet sent at the end of step t:
  ``0 <= carry[t] <= N * MSS + tick * s[t]`` (after each send event less than a burst is
  pending, under the reading where the pacer keeps up, and events come at least every
  ``tick`` steps -- the 10 ms timer in steps, default R/4, i.e. 10 ms at a 40 ms minimum RTT; a
  shorter RTT needs a larger tick), and
  ``sent[t] = paced[t] + carry[t-1] - carry[t] + revalue[t]``, where ``revalue[t]`` is Alg. 1
  l. 3's re-valuation: Send() runs after RateUpdate, so at a rate change the pending interval
  since the last send (at most two ticks) is counted at the new rate: ``|revalue[t]| <= 2 tick
  max(s[t-1], s[t])`` at steps that accelerate, decelerate or drain, or follow a draining step,
  0 elsewhere, and ``carry[t-1] + revalue[t] >= 0``. ``pacing = fluid`` is the RESTRICTION of
  earlier versions: every step sends exactly its paced bytes. ETC has no window; the model's
  ``cwnd[t]`` is set to the bytes in flight after sending, ``A_f[t-1] + rate[t] - S_f[t-R] -
  Ld_f[t]``, so that the pacing term always binds: ``A_f[t] = A_f[t-1] + rate[t]`` exactly.
* **Losses and timeouts** change nothing (4.3: loss only changes the ACK type).

The elastic update, linearly (the one non-linear term)
------------------------------------------------------
With x = Rp/s and g(x) = log_base(x + base - 1), the update is ``s' = s * g(Rp/s)``, the
perspective of the concave increasing g, hence jointly concave in (s, Rp) for s > 0. At a step
that accelerates, with ``s = srate[t-1]``, ``Rp = Rp[t]`` and ``s' = srate[t]``:

* **above**: every tangent plane, at every breakpoint x_j:
  ``s' <= (g(x_j) - x_j g'(x_j)) * s + g'(x_j) * Rp`` (a tangent of a concave function lies
  above it everywhere; multiply by s > 0);
* **below**: the chord of the cell holding x: ``x_j * s <= Rp < x_{j+1} * s ->
  s' >= s * chord_j(Rp/s)`` (a chord lies below a concave function on its interval), and
  past the last breakpoint monotonicity, ``Rp >= x_K * s -> s' >= g(x_K) * s``. The cell
  guards are the atoms ``Rp >= x_j * s``, with the (valid) implications
  ``Rp >= x_{j+1} s -> Rp >= x_j s`` stated too so that the SAT layer sees their order.

Breakpoints (a partition of [0, inf)): 0, then ``grid`` rational points per doubling of x
from 1/8 up to ``ratio_max`` (128). Coefficients are computed with 60-digit decimals and
rounded *outward* (upper bounds up, lower bounds down, to the simplest rational within a
relative 2^-20; s and Rp are non-negative), so the enclosure contains the true value. In a
cell [a, b] the enclosure is at most ``delta_cell * s`` wide, where ``delta_cell`` is the gap
between the two end tangents' meeting point and the chord (a concave piecewise-linear
function minus a line peaks at its kink). For base e, ``grid = 2``: ``delta_cell / g`` <=
0.95 % on every cell up to x = 128 (the largest absolute gap, 0.029 s, is near x = 128 where
s' is about 4.9 s); ``grid = 1``: 4.0 %; ``grid = 4``: 0.23 %. Beyond ``ratio_max`` only
monotonicity bounds s' below (raise ``ratio_max`` for huge Rp/s). :meth:`ETC.check` re-checks
every acceleration against this documented bound, computing g(x) directly to 60 digits.
Everything else is linear as it stands: the deceleration, the drain (a ``max(0, .)`` by
``If``), products of a parameter and a variable, and counters compared with
``force_after * rtt``.

Solver cost, measured (z3 5.4): 60-digit coefficients (2^-40 denominators) made even
"find any trace" take minutes at T = 10, small-denominator coefficients seconds; stating the
enclosure only under the acceleration condition (rather than for a helper variable at every
step) and the ordered cell guards each cut the start-up proof (etc_startup_85) by about 10x.
A base below 2 is rejected: there g(0) < 0 and an "acceleration" with Rp/s < 2 - base sets a
negative rate (the conformance test found it at base 3/2).

What is left to the solver (each a superset of the paper's unspecified choices)
--------------------------------------------------------------------------------
The RTT samples within their delay ranges (and so the sign of dRTT), the two RTT estimators
within their hulls, the minimum-RTT BDP within its enclosure, rmax within its window's
readings, Rp within the filter's hull, each pulling sample in ``burst`` mode (and whether it is
the fallback), the stage (stable or not) at every ACK, the clamping readings, the pacer's carry
and re-valuation, and everything at steps before R: the history. There ``srate``, ``Rp``,
``drain``, ``since``, the estimators, the carry and the RTT samples are free (any real past has
some value), ``ack[R]`` is free (S_f[-1] is unknown), and a reading reaching before step 0 is
only bounded by what any past of the model implies: for b < 0 <= a, ``S_f[a] - S_f[b] <= S[a] -
S[b] <= S[a] - C*(b - D) + W[0]`` (the lower service bound, with W[0] for W[b - D] as the model
does) and ``>= S_f[a] - S_f[0]``; a reading wholly before step 0 is in ``[0, C*(k + D)/k]``; an
estimator or Rp window reaching before step 0 leaves the value free. Every history constraint
is therefore implied by the constraints of a longer run at the same place
(``tests/test_etc.py`` checks ``ccac.window.window_is_trace``; a first version bounded partial
readings by ``S_f[a] - S_f[0] + C*(D + k - a)``, which any real past satisfies but a longer
run's encoding does not imply, and the check caught it).

RESTRICTIONS and ASSUMPTIONS, and what they do to answers
----------------------------------------------------------
A sat answer is a trace of the encoding (validated by :meth:`ETC.check`); an unsat answer is a
proof for every run of the paper's algorithm *that none of the following excludes*. Each
item names the runs it excludes; an unsat answer that a query states is a proof only for the
others (the query's description says which it rests on).

* Step resolution (RESTRICTION): one decision per step, taken at the step's start. A real
  sender decides at ACK arrivals inside the step, so its update gaps in steps can be the floor
  rather than the ceiling of its gate's RTT (at R = 1 and an estimate of 1.5 steps it may
  update at gaps 1, 2, 1, 2 where the encoding needs 2, 2); several samples and at most one
  update per step; the sub-step order of ACKs, pacing events and the drain's end is folded
  into the carry. Unsat answers about how fast ETC reacts (etc_startup_85) hold for senders
  whose decisions fall on step boundaries.
* The pacer keeps up (RESTRICTION): the carry is below a burst plus a tick's accrual. The
  literal Alg. 1 (``if``, not ``while``, l. 5; O18(c, d)) sends at most one burst per event, so
  a sender whose rate exceeds N MSS per event interval falls behind s without bound (an
  ACK-clocked cap of about 2 bursts per acknowledged burst); such runs, which send *less*
  than s, are not covered, nor is the literal timer branch that re-counts ``remain`` (O18(a),
  which sends *more*). Answers about s itself (the rate the sender computes) do not depend on
  this; answers about the bytes sent, queues and losses do. ``pacing = fluid`` restricts
  further to exactly s per step. A step that sends nothing is not representable (the model
  requires a positive rate); with 2 ticks at most a step every step has a send event.
* The tick (ASSUMPTION): ``tick`` must be at least the real 10 ms timer period in steps
  (10 ms x R / RTT_min); the default R/4 assumes a minimum RTT of at least 40 ms.
* The drain freezes updates (RESTRICTION, above): a literal Alg. 1 sender updating mid-drain.
* rmax's window (RESTRICTION, above): an rmax older than ``rmax_window`` RTTs.
* Single readings selected by a parameter (accel_on_equal, force_from, theta, drtt_lag,
  recv_window, k, fallback_gain, base, eta): each answer is for the value chosen, not for
  the union over values (run the query per reading). Where the paper names a value (eta,
  base, 8 RTTs, 1.25) the default is it.
* Pulling modes ``coarse`` and ``ideal`` and ``sparse_fallback = false``, ``line_rate``
  (ASSUMPTIONS): a query using them proves nothing about paths or ACK schedules that break
  them; ``burst`` with the fallback is the sound default.
* Filters ``latest`` and ``floor`` (single readings): ``hull`` is the union.
* Not modelled: the initial rate (10 packets per RTT, 6.1) is not built in -- state it in a
  query (``srate[0][R-1] == 10 * alpha / R``); retransmissions and the IACK/ACK formats; ETC's
  stage detection beyond the solver's free choice; the receiver.

State (usable in queries, ``name[n][t]``): ``srate`` (s), ``Rp``, ``sample``, ``recv`` (r),
``rmax``, ``rtt`` (the latest sample, steps), ``rtt_gate`` / ``rtt_force`` (the RTT estimates
of the update gate and of the 8-RTT timer, steps), ``bdp`` (the drain's s * RTT_min, bytes),
``drain`` (bytes), ``carry`` / ``revalue`` (the pacer's pending bytes and their re-valuation),
``since`` / ``since_inc`` (steps since the last update / acceleration, ints), ``ack`` (bool)
and ``action`` (-1 history, 0 hold, 1 accelerate, 2 decelerate, 3 draining).

Steady state: in a periodic query every reading, the ACK flag, the RTT samples dRTT compares
and rmax's window at the trace's first steps read the previous periods of the same run
(``ccac.periodic``), and every state variable ends where it started.

The concrete sender, :mod:`ccac.senders.etc`, sharing no code with the encoding, runs ETC
on concrete feedback in exact arithmetic (the logarithm to 50 digits); the conformance tests
feed it generated paths and check the encoding admits every run.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import z3

from ccac.cca import CCA, FlowContext, FlowValues, StateVar
from ccac.errors import CcacError
from ccac.params import POSITIVE, Param
from ccac.sender import ConcreteSender, SenderStart

PULLING = ("burst", "coarse", "ideal", "fallback")
PACING = ("bursts", "fluid")
FILTERS = ("hull", "latest", "floor")
HOLD, ACCELERATE, DECELERATE, DRAIN, HISTORY = 0, 1, 2, 3, -1
_DIGITS = 60
_TOLERANCE = Fraction(1, 2 ** 20)


# ---------------------------------------------------------------------------------- the log
class _Log:
    """g(x) = log_base(x + base - 1) and g'(x), to 60 digits (base "e" or a rational > 1)."""

    def __init__(self, base: Any) -> None:
        self.dc = decimal.Context(prec=_DIGITS)
        if base == "e":
            self.b1 = self.dc.exp(decimal.Decimal(1)) - 1
            self.lnb = decimal.Decimal(1)
        else:
            b = Fraction(base)
            bd = self.dc.divide(decimal.Decimal(b.numerator), decimal.Decimal(b.denominator))
            self.b1 = bd - 1
            self.lnb = self.dc.ln(bd)

    def dec(self, x: Fraction) -> decimal.Decimal:
        return self.dc.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator))

    def g(self, x: Fraction) -> decimal.Decimal:
        return self.dc.divide(self.dc.ln(self.dec(x) + self.b1), self.lnb)

    def dg(self, x: Fraction) -> decimal.Decimal:
        return self.dc.divide(decimal.Decimal(1), (self.dec(x) + self.b1) * self.lnb)


def _simplest(lo: Fraction, hi: Fraction) -> Fraction:
    """The rational with the smallest denominator in [lo, hi] (continued fractions)."""
    if lo < 0:
        return -_simplest(-hi, -lo) if hi <= 0 else Fraction(0)
    n = lo.numerator // lo.denominator
    if n == lo or n + 1 <= hi:
        return Fraction(n) if n == lo else Fraction(n + 1)
    return n + 1 / _simplest(1 / (hi - n), 1 / (lo - n))


def _outward(d: decimal.Decimal, up: bool) -> Fraction:
    """A rational with a small denominator on the safe side of d (>= d when ``up``, else <= d),
    within a relative 2^-20 of it. Small denominators keep the solver's arithmetic cheap
    (60-digit coefficients made even satisfiable queries take minutes)."""
    exact = Fraction(d)
    tol = max(abs(exact), Fraction(1, 2 ** 10)) * _TOLERANCE
    return _simplest(exact, exact + tol) if up else _simplest(exact - tol, exact)


def _up(d: decimal.Decimal) -> Fraction:
    return _outward(d, True)


def _down(d: decimal.Decimal) -> Fraction:
    return _outward(d, False)


def breakpoints(grid: int, ratio_max: Fraction) -> list[Fraction]:
    """0, then ``grid`` rational points per doubling of Rp/s from 1/8 up to ``ratio_max``."""
    points = [Fraction(0)]
    j = -3 * grid
    while True:
        exact = 2.0 ** (j / grid)
        x = Fraction(2) ** (j // grid) if j % grid == 0 else Fraction(exact).limit_denominator(32)
        if x >= ratio_max:
            break
        if x > points[-1]:
            points.append(x)
        j += 1
    points.append(Fraction(ratio_max))
    return points


@dataclass(frozen=True)
class Enclosure:
    """Outward-rounded linear bounds on s' = s * g(Rp/s) (see the module docstring)."""

    points: tuple[Fraction, ...]
    tangents: tuple[tuple[Fraction, Fraction], ...]           # s' <= a*s + b*Rp
    chords: tuple[tuple[Fraction, Fraction], ...]              # s' >= min(a*s + b*Rp, ..., tail*s)
    tail: Fraction


@lru_cache(maxsize=None)
def enclosure(base: Any, grid: int, ratio_max: Fraction) -> Enclosure:
    log = _Log(base)
    pts = breakpoints(grid, ratio_max)
    g = {x: log.g(x) for x in pts}
    tangents = tuple((_up(g[x] - log.dec(x) * log.dg(x)), _up(log.dg(x))) for x in pts)
    chords = []
    for a, b in zip(pts, pts[1:]):
        m = (g[b] - g[a]) / log.dec(b - a)
        chords.append((_down(g[a] - m * log.dec(a)), _down(m)))
    return Enclosure(tuple(pts), tangents, tuple(chords), _down(g[pts[-1]]))


@lru_cache(maxsize=None)
def cell_gaps(base: Any, grid: int, ratio_max: Fraction) -> tuple[tuple[Fraction, Fraction, Fraction], ...]:
    """(a, b, delta) per cell: the enclosure is at most delta * s wide for Rp/s in [a, b]
    (the two end tangents meet at x*; the gap to the chord is largest there). Rounded up."""
    log = _Log(base)
    out = []
    points = breakpoints(grid, ratio_max)
    for a, b in zip(points, points[1:]):
        ga, gb, da, db = log.g(a), log.g(b), log.dg(a), log.dg(b)
        xa, xb = log.dec(a), log.dec(b)
        meet = (gb - ga + da * xa - db * xb) / (da - db)
        tangent = ga + da * (meet - xa)
        chord = ga + (gb - ga) / (xb - xa) * (meet - xa)
        out.append((a, b, _up(tangent - chord)))
    return tuple(out)


# ---------------------------------------------------------------------------------- the CCA
class ETC(CCA):
    name = "etc"
    summary = ("ETC: rate s pulled toward the pulling rate by s*log_base(Rp/s + base - 1), halved "
               "toward the receiving rate on a rising RTT, then drained")
    params = (
        Param("base", "e", "base of the elastic log, Eq. 1 (3.3: e; A.5: e to 4); below 2 an "
              "'acceleration' can set a negative rate", kind="number", minimum=Fraction(2), special=("e",)),
        Param("grid", 2, "enclosure resolution: breakpoints of Rp/s per doubling (error: 1 -> 4%, "
              "2 -> 0.95%, 4 -> 0.23% of s')", "per octave", "int", minimum=Fraction(1)),
        Param("ratio_max", 128, "largest Rp/s the enclosure's grid covers (beyond: monotone bound only)",
              minimum=Fraction(1)),
        Param("pulling", "burst", "pulling-rate samples: burst (sound: any sub-step receipt rate the path "
              "allows, <= C without jitter, unbounded with it unless line_rate; or the 4.3 fallback), "
              "coarse (ASSUMPTION: the step's receipt rate), ideal (ASSUMPTION: Eq. 5's C), fallback "
              "(Rp = fallback_gain*rmax, 4.3)", kind="choice", choices=PULLING),
        Param("burst_steps", 1, "coarse samples: receipt rate over this many steps", "steps", "int",
              minimum=Fraction(1)),
        Param("line_rate", None, "pulling = burst: ASSUMPTION that no burst is received faster than "
              "line_rate*C (none by default: jitter can compress a burst without bound)", "C", **POSITIVE),
        Param("sparse_fallback", True, "pulling = burst: a sample may instead be the sparse-feedback "
              "fallback fallback_gain*rmax (4.3; false = ASSUMPTION: every burst gets two IACKs)", kind="bool"),
        Param("filter", "hull", "Rp on an ACK: hull (between old Rp, rmax and the samples of the last "
              "rp_window steps), latest (the sample), floor (max(sample, rmax))", kind="choice", choices=FILTERS),
        Param("rp_window", None, "filter = hull: the samples of this many steps bound Rp (default R)",
              "steps", "int", minimum=Fraction(1)),
        Param("stable", True, "the stable-convergence cap Rp = min(k*rmax, Rp) may apply (3.2; the "
              "solver picks the stage)", kind="bool"),
        Param("k", Fraction(5, 4), "stable-stage cap on Rp as a multiple of rmax (3.2, unspecified)",
              **POSITIVE),
        Param("fallback_gain", Fraction(5, 4), "the sparse-feedback fallback: Rp as a multiple of rmax (4.3)",
              **POSITIVE),
        Param("recv_window", None, "receiving rate r: ACKed bytes over this many steps (default R)",
              "steps", "int", minimum=Fraction(1)),
        Param("rmax_window", 8, "rmax: between the smallest and largest r of this many RTTs (3.1 "
              "footnote)", "RTTs", "int", minimum=Fraction(1)),
        Param("rtt_window", None, "the RTT estimators of the update gate and the 8-RTT timer: between "
              "their previous value and the samples of this many steps (default R)", "steps", "int",
              minimum=Fraction(1)),
        Param("accel_on_equal", False, "accelerate on dRTT <= 0 (3.1) rather than dRTT < 0 (Alg. 1)",
              kind="bool"),
        Param("force_after", 8, "forced acceleration after this many RTTs (3.3, Alg. 1 l. 13)", "RTTs",
              **POSITIVE),
        Param("force_from", "update", "the forced-acceleration timer counts from the last update "
              "(Alg. 1) or the last increase (3.3)", kind="choice", choices=("update", "increase")),
        Param("theta", Fraction(1, 2), "decelerate when dRTT >= theta (3.4, unspecified)", "steps",
              minimum=Fraction(0)),
        Param("drtt_lag", 1, "dRTT = rtt[t] - rtt[t - drtt_lag] (1 .. R)", "steps", "int",
              minimum=Fraction(1)),
        Param("clamp", True, "also admit the clamping readings: an acceleration with Rp < s may keep s "
              "(f >= 1), a deceleration with r > s may keep s", kind="bool"),
        Param("eta", Fraction(3, 10), "drain sub-rate: send eta*s while draining (3.4, 6.1)",
              minimum=Fraction(0), exclusive_minimum=True, maximum=Fraction(1)),
        Param("drain", True, "drain the queue after a deceleration when inflight > s*RTT_min (3.4)",
              kind="bool"),
        Param("pacing", "bursts", "bursts: micro-burst pacing (Alg. 1 l. 1-11), a step sends s give or "
              "take a carry of pending bytes; fluid: RESTRICTION, a step sends exactly s", kind="choice",
              choices=PACING),
        Param("burst", 8, "micro-burst size N (6.1)", "packets", "int", minimum=Fraction(1)),
        Param("tick", None, "the longest time between two Send() calls (the 10 ms timer), in steps "
              "(default R/4: 10 ms at a 40 ms minimum RTT)", "steps", minimum=Fraction(0)),
    )
    state = (
        StateVar("srate", "ETC's sending rate s", "bytes/step", plotted=True),
        StateVar("Rp", "pulling rate", "bytes/step", plotted=True),
        StateVar("sample", "pulling-rate sample of step t (pulling mode)", "bytes/step"),
        StateVar("recv", "receiving rate r: ACKed bytes per step over recv_window", "bytes/step", plotted=True),
        StateVar("rmax", "max average receiving rate (a reading of the last rmax_window RTTs)", "bytes/step", plotted=True),
        StateVar("rtt", "the latest RTT sample at t (held without an ACK)", "steps", plotted=True),
        StateVar("rtt_gate", "the RTT estimate of the update gate now - t_update >= RTT", "steps"),
        StateVar("rtt_force", "the RTT estimate of the forced acceleration after force_after RTTs", "steps"),
        StateVar("bdp", "the drain's BDP s * RTT_min (RTT_min: the sender's minimum-RTT estimate)", "bytes"),
        StateVar("drain", "bytes the drain still withholds after step t", "bytes", plotted=True),
        StateVar("carry", "paced bytes not yet sent at the end of step t (a partial micro-burst)", "bytes"),
        StateVar("revalue", "pending bytes re-valued at a rate change (Alg. 1 l. 3 after RateUpdate)", "bytes"),
        StateVar("since", "steps since the last rate update (t - t_update)", "steps", "int"),
        StateVar("since_inc", "steps since the last acceleration", "steps", "int"),
        StateVar("ack", "an ACK of this flow arrived in step t", "", "bool"),
        StateVar("action", "-1 history, 0 hold, 1 accelerate, 2 decelerate, 3 draining", "", "int", plotted=True),
    )

    def paced(self, params: dict[str, Any]) -> bool:
        return True

    @staticmethod
    def recv_window(params: dict[str, Any], R: int) -> int:
        return params["recv_window"] if params["recv_window"] is not None else R

    @staticmethod
    def rp_window(params: dict[str, Any], R: int) -> int:
        return params["rp_window"] if params["rp_window"] is not None else R

    @staticmethod
    def rtt_window(params: dict[str, Any], R: int) -> int:
        return params["rtt_window"] if params["rtt_window"] is not None else R

    @staticmethod
    def tick(params: dict[str, Any], R: int) -> Fraction:
        return Fraction(params["tick"]) if params["tick"] is not None else Fraction(R, 4)

    @staticmethod
    def sample_cap(params: dict[str, Any], C: Fraction, D: int) -> Fraction | None:
        """pulling = burst: the largest receipt rate of a micro-burst (None: unbounded). Without
        jitter the link serves at most C per unit time within a step too; with jitter a held
        burst is released at once unless ``line_rate`` (an assumption) bounds it."""
        caps = ([C] if D == 0 else []) + ([params["line_rate"] * C] if params["line_rate"] is not None else [])
        return min(caps) if caps else None

    def _validate(self, p: dict[str, Any], R: int) -> None:
        if p["drtt_lag"] > R:
            raise CcacError(f"drtt_lag = {p['drtt_lag']} must be at most R = {R} (the history "
                            f"holds R RTT samples)", "cca.drtt_lag")

    # ------------------------------------------------------------------ encoding
    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        p, R, T, C, D = ctx.params, ctx.R, ctx.T, ctx.C, ctx.D
        self._validate(p, R)
        v, S, A, Ld = ctx.v, ctx.S, ctx.A, ctx.Ld
        w, wrp, wrtt = self.recv_window(p, R), self.rp_window(p, R), self.rtt_window(p, R)
        tick, cap = self.tick(p, R), self.sample_cap(p, C, D)
        enc = enclosure(p["base"], p["grid"], p["ratio_max"])
        srate, Rp, sample, recv = (ctx.series(n) for n in ("srate", "Rp", "sample", "recv"))
        rmax, rtt, drain = (ctx.series(n) for n in ("rmax", "rtt", "drain"))
        gate, force, bdp = (ctx.series(n) for n in ("rtt_gate", "rtt_force", "bdp"))
        carry, revalue = ctx.series("carry"), ctx.series("revalue")
        since, since_inc = ctx.series("since", "int"), ctx.series("since_inc", "int")
        ack = ctx.series("ack", "bool")
        bursts = p["pacing"] == "bursts"
        mss_burst = p["burst"] * ctx.alpha
        action: list[Any] = []

        def reading(x: Any, end: int, k: int) -> None:
            """x is this flow's receipt rate over the k steps ending at service step ``end``."""
            if end - k >= 0:
                ctx.add(x * k == S[end] - S[end - k])
            elif end >= 0:  # S_f[b], b < 0: at most S_f[0]; S[b] at least the lower service bound
                ctx.add(x * k >= S[end] - S[0], x * k <= v.S[end] - C * (end - k - D - v.first) + v.W[0])
            else:
                ctx.add(x >= 0, x * k <= C * (D + k))

        def hull(x: Any, cands: list[Any], lows: list[Any] | None = None) -> Any:
            """x between the smallest and the largest candidate (a candidate given as a pair
            (guard, value) counts only where its guard holds; None: an unknown one)."""
            def side(above: bool, items: list[Any]) -> Any:
                terms = []
                for c in items:
                    if c is None:
                        return z3.BoolVal(True)
                    guard, value = c if isinstance(c, tuple) else (None, c)
                    cmp = x >= value if above else x <= value
                    terms.append(cmp if guard is None else z3.And(guard, cmp))
                return z3.Or(*terms)
            return z3.And(side(True, cands + (lows or [])), side(False, cands))

        for t in range(T):
            ctx.add(srate[t] > 0, Rp[t] >= 0, drain[t] >= 0, since[t] >= 0, since_inc[t] >= 0,
                    rtt[t] >= R, rmax[t] >= 0, gate[t] >= R, force[t] >= R)
            # The RTT estimators: between the previous estimate and the samples of the window.
            if t >= 1 and t - wrtt + 1 >= 0:
                window = [rtt[u] for u in range(t - wrtt + 1, t + 1)]
                ctx.add(hull(gate[t], [gate[t - 1]] + window), hull(force[t], [force[t - 1]] + window))
            # Micro-burst pacing: the bytes accrued and not yet sent.
            if bursts:
                ctx.add(carry[t] >= 0, carry[t] <= mss_burst + tick * srate[t])
            else:
                ctx.add(carry[t] == 0, revalue[t] == 0)
            reading(recv[t], t - R, w)
            # rmax: between the smallest and the largest reading of its window.
            window = range(t - p["rmax_window"] * R + 1, t + 1)
            known = [recv[u] for u in window if u >= 0]
            before = any(u < 0 for u in window)
            ctx.add(z3.Or(*(rmax[t] >= x for x in known), before),
                    z3.Or(*(rmax[t] <= x for x in known),
                          *([rmax[t] * w <= C * (D + w)] if before else [])))
            mode = p["pulling"]
            if mode == "burst":
                in_range = z3.And(sample[t] > 0, *([sample[t] <= cap] if cap is not None else []))
                ctx.add(z3.Or(in_range, sample[t] == p["fallback_gain"] * rmax[t]) if p["sparse_fallback"] else in_range)
            elif mode == "coarse":
                reading(sample[t], t - R, p["burst_steps"])
            elif mode == "ideal":
                ctx.add(sample[t] == C if ctx.v.net.flows == 1 else z3.And(sample[t] * 2 >= C, sample[t] <= C))
            else:
                ctx.add(sample[t] == p["fallback_gain"] * rmax[t])

            if t < R:
                action.append(z3.IntVal(HISTORY))
                continue

            # ACK and RTT sample: a new sample in the delay range with an ACK, else the last one.
            if t - R - 1 >= 0:
                ctx.add(ack[t] == (S[t - R] > S[t - R - 1]))
            u = t - R
            band = []
            for kk in range(1, u + 1):
                band += [z3.Implies(z3.Not(v.served_past(u, kk)), rtt[t] >= R + kk),
                         z3.Implies(v.served_past(u, kk), rtt[t] <= R + kk)]
                # The BDP: s * RTT_min with R <= RTT_min <= the newest sample <= R + its upper end.
                ctx.add(z3.Implies(z3.And(ack[t], v.served_past(u, kk)), bdp[t] <= srate[t] * (R + kk)))
            ctx.add(z3.If(ack[t], z3.And(*band), rtt[t] == rtt[t - 1]), bdp[t] >= srate[t] * R)

            # Pulling rate.
            if mode == "fallback":
                new_rp: Any = Rp[t] == p["fallback_gain"] * rmax[t]
            else:
                capped = z3.And(Rp[t] == p["k"] * rmax[t]) if p["stable"] else False
                if p["filter"] == "hull":
                    older = [None if u < 0 else (ack[u], sample[u]) for u in range(t - wrp + 1, t)]
                    new_rp = hull(Rp[t], [Rp[t - 1], sample[t], rmax[t]] + older,
                                  [p["k"] * rmax[t]] if p["stable"] else [])
                else:
                    y = sample[t] if p["filter"] == "latest" else _max(sample[t], rmax[t])
                    new_rp = z3.Or(Rp[t] == y, z3.And(capped, p["k"] * rmax[t] <= y))
            ctx.add(z3.If(ack[t], new_rp, Rp[t] == Rp[t - 1]))

            # RateUpdate.
            draining = drain[t - 1] > 0
            elapsed = since[t - 1] + 1
            elapsed_f = elapsed if p["force_from"] == "update" else since_inc[t - 1] + 1
            drtt = rtt[t] - rtt[t - p["drtt_lag"]]
            falling = drtt <= 0 if p["accel_on_equal"] else drtt < 0
            go = z3.Or(falling, elapsed_f >= p["force_after"] * force[t])
            eligible = z3.And(ack[t], z3.Not(draining), elapsed >= gate[t])
            accel = z3.And(eligible, go)
            decel = z3.And(eligible, z3.Not(go), drtt >= p["theta"])
            # The elastic update, only where it applies (see the module docstring): below
            # the tangent planes, above the concave piecewise-linear interpolant of g.
            s0, rp, up = srate[t - 1], Rp[t], srate[t]
            bounds = [up <= a * s0 + b * rp for a, b in enc.tangents]
            ge = [rp >= x * s0 for x in enc.points[1:]]  # ge[i]: Rp/s >= points[i+1]
            bounds += [z3.Implies(ge[i + 1], ge[i]) for i in range(len(ge) - 1)]  # valid; helps z3
            for i, (a, b) in enumerate(enc.chords):  # the cell [points[i], points[i+1])
                cell = z3.And(ge[i - 1], z3.Not(ge[i])) if i > 0 else z3.Not(ge[0])
                bounds.append(z3.Implies(cell, up >= a * s0 + b * rp))
            bounds.append(z3.Implies(ge[-1], up >= enc.tail * s0))
            elastic = z3.And(*bounds)
            halve = srate[t] * 2 == srate[t - 1] + recv[t]
            if p["clamp"]:  # O14(b): f >= 1, the update skipped below Rp; O17: never raise on a decrease
                elastic = z3.Or(elastic, z3.And(rp < s0, up == s0))
                halve = z3.Or(halve, z3.And(recv[t] > s0, up == s0))
            ctx.add(z3.Implies(accel, elastic))
            inflight = A[t - 1] - S[t - R] - Ld[t]
            excess = inflight - bdp[t]
            withheld = drain[t - 1] - drain[t]
            ctx.add(
                z3.Implies(draining, z3.And(
                    srate[t] == srate[t - 1], since[t] == 0, since_inc[t] == since_inc[t - 1] + 1,
                    drain[t] == _max(drain[t - 1] - (1 - p["eta"]) * srate[t], 0))),
                z3.Implies(accel, z3.And(since[t] == 0, since_inc[t] == 0, drain[t] == 0)),
                z3.Implies(decel, z3.And(
                    halve, since[t] == 0, since_inc[t] == since_inc[t - 1] + 1,
                    drain[t] == (_max(excess, 0) if p["drain"] else 0))),
                z3.Implies(z3.And(z3.Not(draining), z3.Not(accel), z3.Not(decel)), z3.And(
                    srate[t] == srate[t - 1], since[t] == elapsed, since_inc[t] == since_inc[t - 1] + 1,
                    drain[t] == 0)),
            )
            # Sending: the step's paced bytes (s, less what a drain withholds), give or take the
            # pacer's carry, and at a rate change the re-valued pending bytes (Alg. 1 l. 3).
            paced = z3.If(draining, srate[t] - withheld, srate[t])
            sent = ctx.rate[t]
            if bursts:
                rv = revalue[t]
                changed = z3.Or(draining, accel, decel, drain[t - 2] > 0 if t >= 2 else True)
                span = 2 * tick
                ctx.add(sent == paced + carry[t - 1] - carry[t] + rv, carry[t - 1] + rv >= 0,
                        z3.Implies(z3.Not(changed), rv == 0),
                        z3.Implies(changed, z3.And(z3.Or(rv <= span * srate[t], rv <= span * srate[t - 1]),
                                                   z3.Or(-rv <= span * srate[t], -rv <= span * srate[t - 1]))))
            else:
                ctx.add(sent == paced)
            ctx.add(ctx.cwnd[t] == A[t - 1] + sent - S[t - R] - Ld[t])
            action.append(z3.If(draining, DRAIN, z3.If(accel, ACCELERATE, z3.If(decel, DECELERATE, HOLD))))
        return {"srate": srate, "Rp": Rp, "sample": sample, "recv": recv, "rmax": rmax, "rtt": rtt,
                "rtt_gate": gate, "rtt_force": force, "bdp": bdp, "drain": drain, "carry": carry,
                "revalue": revalue, "since": since, "since_inc": since_inc, "ack": ack, "action": action}

    def lookback(self, params: dict[str, Any], R: int) -> int:
        """rmax's window of receive-rate readings (rmax_window RTTs), each over the ACKs of
        recv_window (or burst_steps) steps ending R steps earlier; dRTT's lag; the samples of
        the Rp filter's window (a fallback sample reads rmax there); the RTT estimators'
        window; the drain two steps back (pacing)."""
        reading = max(self.recv_window(params, R), params["burst_steps"])
        base = params["rmax_window"] * R + R + reading
        return max(base + params["drtt_lag"], base + self.rp_window(params, R) - 1,
                   self.rtt_window(params, R) + 1, R + 2)

    # ------------------------------------------------------------------ independent check
    def check(self, f: FlowValues) -> list[str]:
        p, R, T, C, D = f.params, f.R, f.T, f.C, f.D
        S, A, Ld = f.S, f.A, f.Ld
        st = f.state
        s, Rp, sample, recv, rmax, rtt = (st[x] for x in ("srate", "Rp", "sample", "recv", "rmax", "rtt"))
        gate, force, bdp, carry, revalue = (st[x] for x in ("rtt_gate", "rtt_force", "bdp", "carry", "revalue"))
        drain, since, since_inc, ack, action = (st[x] for x in ("drain", "since", "since_inc", "ack", "action"))
        w, wrp, wrtt = self.recv_window(p, R), self.rp_window(p, R), self.rtt_window(p, R)
        tick, cap = self.tick(p, R), self.sample_cap(p, C, D)
        bursts = p["pacing"] == "bursts"
        mss_burst = p["burst"] * f.alpha
        out: list[str] = []

        def bad(t: int, msg: str) -> None:
            out.append(f"step {t}: {msg}")

        def check_reading(name: str, x: Fraction, t: int, end: int, k: int) -> None:
            if end - k >= 0:
                if x * k != S[end] - S[end - k]:
                    bad(t, f"{name} {x} is not the receipt rate over steps {end - k}..{end}")
            elif end >= 0:  # the encoding adds W[0] <= -S[0] = 0 to the upper end
                if not S[end] - S[0] <= x * k <= f.total_S[end] - C * (end - k - D):
                    bad(t, f"{name} {x} outside what S_f and the token line allow")
            elif not 0 <= x * k <= C * (D + k):
                bad(t, f"{name} {x} outside [0, C*(D+k)/k]")

        for t in range(T):
            if s[t] <= 0 or Rp[t] < 0 or drain[t] < 0 or since[t] < 0 or since_inc[t] < 0 or rtt[t] < R:
                bad(t, "a state variable is out of its range (s > 0, Rp, drain, counters >= 0, rtt >= R)")
            for name, est in (("rtt_gate", gate), ("rtt_force", force)):
                if est[t] < R:
                    bad(t, f"{name} {est[t]} below the minimum RTT R")
                if t >= 1 and t - wrtt + 1 >= 0:
                    cands = [est[t - 1]] + [rtt[u] for u in range(t - wrtt + 1, t + 1)]
                    if not min(cands) <= est[t] <= max(cands):
                        bad(t, f"{name} {est[t]} outside its previous value and the window's samples")
            if bursts:
                if not 0 <= carry[t] <= mss_burst + tick * s[t]:
                    bad(t, f"carry {carry[t]} outside [0, N*MSS + tick * s]")
            elif carry[t] != 0 or revalue[t] != 0:
                bad(t, "fluid pacing has no carry")
            check_reading("recv", recv[t], t, t - R, w)
            window = [u for u in range(t - p["rmax_window"] * R + 1, t + 1)]
            readings = [recv[u] for u in window if u >= 0]
            top = C * (D + w) / w if any(u < 0 for u in window) else max(readings)
            low = 0 if any(u < 0 for u in window) else min(readings)
            if not low <= rmax[t] <= max([top] + readings):
                bad(t, f"rmax {rmax[t]} outside the readings of its window [{low}, {top}]")
            mode = p["pulling"]
            if mode == "burst":
                fallback = p["sparse_fallback"] and sample[t] == p["fallback_gain"] * rmax[t]
                if not fallback and not (sample[t] > 0 and (cap is None or sample[t] <= cap)):
                    bad(t, f"burst sample {sample[t]} outside (0, {cap}] and not the fallback")
            elif mode == "coarse":
                check_reading("sample", sample[t], t, t - R, p["burst_steps"])
            elif mode == "ideal":
                # Eq. 5/8: C for one flow, within [C/2, C] with cross traffic (the check cannot
                # tell how many flows share the path, so it accepts the band).
                if not C / 2 <= sample[t] <= C:
                    bad(t, f"ideal pulling sample {sample[t]} is not Eq. 5's value")
            elif sample[t] != p["fallback_gain"] * rmax[t]:
                bad(t, "fallback sample is not fallback_gain * rmax")
            if t < R:  # what the sender did before its first ACK is unknown: any action
                continue

            # ACK, RTT sample, BDP.
            if t - R - 1 >= 0 and ack[t] != (S[t - R] > S[t - R - 1]):
                bad(t, f"ack flag {ack[t]} but S_f[{t - R}] vs S_f[{t - R - 1}] says otherwise")
            lo, hi = f.delay_range(t - R)
            if ack[t]:
                if rtt[t] < R + lo or (hi is not None and rtt[t] > R + hi):
                    bad(t, f"rtt {rtt[t]} outside R + the delay range [{lo}, {hi}]")
            elif rtt[t] != rtt[t - 1]:
                bad(t, "a new RTT sample without an ACK")
            if bdp[t] < s[t] * R or (ack[t] and hi is not None and bdp[t] > s[t] * (R + hi)):
                bad(t, f"bdp {bdp[t]} outside [s*R, s*(R + the sample's upper end)]")

            # Pulling rate.
            if not ack[t]:
                if Rp[t] != Rp[t - 1]:
                    bad(t, "Rp changed without an ACK")
            elif mode == "fallback":
                if Rp[t] != p["fallback_gain"] * rmax[t]:
                    bad(t, "Rp is not fallback_gain * rmax")
            else:
                cap_k = p["k"] * rmax[t]
                if p["filter"] == "hull":
                    if t - wrp + 1 < 0:
                        ok = True  # the window reaches samples before the trace
                    else:
                        cands = [Rp[t - 1], sample[t], rmax[t]] + [sample[u] for u in range(t - wrp + 1, t) if ack[u]]
                        ok = min(cands + ([cap_k] if p["stable"] else [])) <= Rp[t] <= max(cands)
                else:
                    y = sample[t] if p["filter"] == "latest" else max(sample[t], rmax[t])
                    ok = Rp[t] == y or (p["stable"] and Rp[t] == cap_k and cap_k <= y)
                if not ok:
                    bad(t, f"Rp {Rp[t]} not what the {p['filter']} filter allows")

            # RateUpdate.
            draining = drain[t - 1] > 0
            elapsed = since[t - 1] + 1
            elapsed_f = elapsed if p["force_from"] == "update" else since_inc[t - 1] + 1
            drtt = rtt[t] - rtt[t - p["drtt_lag"]]
            go = (drtt <= 0 if p["accel_on_equal"] else drtt < 0) or elapsed_f >= p["force_after"] * force[t]
            eligible = ack[t] and not draining and elapsed >= gate[t]
            if draining:
                want = (DRAIN, s[t - 1], max(drain[t - 1] - (1 - p["eta"]) * s[t - 1], Fraction(0)), 0,
                        since_inc[t - 1] + 1)
            elif eligible and go:
                want = (ACCELERATE, s[t], Fraction(0), 0, 0)
                kept = p["clamp"] and Rp[t] < s[t - 1] and s[t] == s[t - 1]
                if not kept:
                    out.extend(f"step {t}: {m}" for m in _check_elastic(p, s[t - 1], Rp[t], s[t]))
            elif eligible and drtt >= p["theta"]:
                new = (s[t - 1] + recv[t]) / 2
                if p["clamp"] and recv[t] > s[t - 1] and s[t] == s[t - 1]:
                    new = s[t - 1]
                excess = A[t - 1] - S[t - R] - Ld[t] - bdp[t]
                want = (DECELERATE, new, max(excess, Fraction(0)) if p["drain"] else Fraction(0), 0,
                        since_inc[t - 1] + 1)
            else:
                want = (HOLD, s[t - 1], Fraction(0), elapsed, since_inc[t - 1] + 1)
            got = (action[t], s[t], drain[t], since[t], since_inc[t])
            if got != want:
                bad(t, f"ETC step (action, s, drain, since, since_inc) = {_show(got)}, rules give {_show(want)}")
            paced = s[t] - (drain[t - 1] - drain[t]) if draining else s[t]
            expected_sent = paced + carry[t - 1] - carry[t] + revalue[t] if bursts else paced
            sent = f.rate[t] if f.rate is not None else None
            if sent != expected_sent:
                bad(t, f"sent {sent} but ETC sends {expected_sent}")
            if bursts:
                changed = draining or action[t] != HOLD or (drain[t - 2] > 0 if t >= 2 else True)
                span = 2 * tick * max(s[t], s[t - 1])
                if carry[t - 1] + revalue[t] < 0 or (revalue[t] != 0 and not changed) or abs(revalue[t]) > span:
                    bad(t, f"revalue {revalue[t]}: pending bytes re-valued without a rate change or beyond "
                           f"2 ticks of the rate")
            if f.cwnd[t] != A[t - 1] + expected_sent - S[t - R] - Ld[t]:
                bad(t, "cwnd is not the bytes in flight after sending")
        return out

    def concrete(self, start: SenderStart) -> ConcreteSender:
        from ccac.senders.etc import ETCSender

        return ETCSender(start)


def _check_elastic(p: dict[str, Any], prev: Fraction, rp: Fraction, new: Fraction) -> list[str]:
    """An accelerated rate must be within the documented error of s * g(Rp/s) (60 digits)."""
    log = _Log(p["base"])
    x = rp / prev
    slack = log.dec((prev + rp) * Fraction(1, 2 ** 16))  # outward rounding of the coefficients
    if x <= p["ratio_max"]:
        delta = next(d for a, b, d in cell_gaps(p["base"], p["grid"], p["ratio_max"]) if a <= x <= b)
        true = log.dec(prev) * log.g(x)
        low, high = true - log.dec(delta * prev), true + log.dec(delta * prev)
    else:  # beyond the grid: monotone below, the last tangent above
        top = Fraction(p["ratio_max"])
        low = log.dec(prev) * log.g(top)
        high = log.dec(prev) * (log.g(top) + log.dg(top) * log.dec(x - top))
    if low - slack <= log.dec(new) <= high + slack:
        return []
    return [f"accelerated to {float(new):.6g}, outside the documented enclosure "
            f"[{float(low):.6g}, {float(high):.6g}] of s*g(Rp/s) for s = {float(prev):.6g}, Rp = {float(rp):.6g}"]


def _max(a: Any, b: Any) -> Any:
    return z3.If(a >= b, a, b)


def _show(values: tuple) -> str:
    return "(" + ", ".join(str(v) if not isinstance(v, Fraction) else f"{float(v):.6g}" for v in values) + ")"


ALGORITHM = ETC()
