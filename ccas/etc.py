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
  ``ccac.encode.trace.delay_range`` (thesis figure 5-1B, as Copa does it): ``R + lo <= rtt[t] <= R +
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

The elastic update (Eq. 1), the one non-linear term, is enclosed linearly by tangent planes and
chords of s * g(Rp/s): ``ccac.ccas.elastic.enclosure`` (breakpoints, outward rounding, the documented
error, 0.95 % of s' at the default grid 2; a base below 2 is rejected; solver cost). The
independent check of traces is ``ccac.ccas.elastic.check``.

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
(``tests/test_etc.py`` checks ``ccac.analysis.window.window_is_trace``; a first version bounded partial
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
(``ccac.encode.periodic``), and every state variable ends where it started.

The concrete sender, :mod:`ccac.senders.etc`, sharing no code with the encoding, runs ETC
on concrete feedback in exact arithmetic (the logarithm to 50 digits); the conformance tests
feed it generated paths and check the encoding admits every run. The paper-faithful sender,
:mod:`ccac.senders.etc_paper` (written from the paper alone, each open reading a named choice),
is admitted too, on every one of its readings (tests/test_etc.py: no reading needed pinning; the
runs are only pinned in the model's variables, so this checks the bytes sent, not ETC's state).

Files: this module is the encoding; :mod:`ccac.ccas.elastic.enclosure` the enclosure of Eq. 1 and its 60-digit
re-check; :mod:`ccac.ccas.elastic.check` the independent check of traces and the mode and action names.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import z3

from ccac.ccas.interface import CCA, FlowContext, FlowValues, StateVar
from ccac.ccas.elastic.check import ACCELERATE, DECELERATE, DRAIN, FILTERS, HISTORY, HOLD, PACING, PULLING, check
from ccac.ccas.elastic.enclosure import breakpoints, cell_gaps, enclosure
from ccac.core.errors import CcacError
from ccac.core.params import POSITIVE, Param
from ccac.encode.encoding import all_of, truth, whole
from ccac.senders.interface import ConcreteSender, SenderStart

__all__ = ["ACCELERATE", "DECELERATE", "DRAIN", "ETC", "FILTERS", "HISTORY", "HOLD", "PACING", "PULLING",
           "breakpoints", "cell_gaps", "enclosure"]


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
        StateVar("rmax", "max average receiving rate (a reading of the last rmax_window RTTs)", "bytes/step",
                 plotted=True),
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
        StateVar("action", "-1 history, 0 hold, 1 accelerate, 2 decelerate, 3 draining", "", "int", plotted=True,
                 labels=((0, "hold"), (1, "accelerate"), (2, "decelerate"), (3, "draining"))),
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
        """The rules of the module docstring, step by step in Alg. 1's ``NewACK`` order: what
        every step has (estimators, pacer, readings, the pulling sample), then, from step R on,
        what an ACK brings and the rate update it may make."""
        self._validate(ctx.params, ctx.R)
        rules = ETCEncoding(self, ctx)
        for t in range(ctx.T):
            rules.domains(t)
            rules.rtt_estimators(t)
            rules.pacer_carry(t)
            rules.receiving_rate(t)
            rules.max_receiving_rate(t)
            rules.pulling_sample(t)
            if t < ctx.R:
                rules.action.append(whole(HISTORY))
                continue
            rules.ack_and_rtt_sample(t)
            rules.pulling_rate(t)
            update = rules.update_conditions(t)
            rules.rate_update(t, update)
            rules.sending(t, update)
            rules.action.append(update.action())
        return rules.state()

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
        return check(self, f)

    def concrete(self, start: SenderStart) -> ConcreteSender:
        from ccac.senders.etc import ETCSender

        return ETCSender(start)


@dataclass(frozen=True)
class RateUpdateConditions:
    """Which branch of Alg. 1's ``RateUpdate`` step t takes (solver terms)."""

    draining: Any      # a drain is in progress: no update runs
    elapsed: Any       # steps since the last update, this one counted (now - t_update)
    accelerate: Any
    decelerate: Any

    def action(self) -> Any:
        """The ``action`` state value: draining, accelerate, decelerate or hold."""
        return z3.If(self.draining, DRAIN, z3.If(self.accelerate, ACCELERATE,
                                                 z3.If(self.decelerate, DECELERATE, HOLD)))


class ETCEncoding:
    """ETC's rules over one flow, one method per rule of the module docstring, each adding its
    constraints for step t (:meth:`ETC.encode` calls them in order). Every rule reads only the
    flow's own curves and state, so a method's docstring is its whole argument."""

    def __init__(self, cca: ETC, ctx: FlowContext) -> None:
        p, R = ctx.params, ctx.R
        self.ctx, self.p, self.R, self.C, self.D = ctx, p, R, ctx.C, ctx.D
        self.recv_window, self.rp_window = cca.recv_window(p, R), cca.rp_window(p, R)
        self.rtt_window = cca.rtt_window(p, R)
        self.tick, self.cap = cca.tick(p, R), cca.sample_cap(p, ctx.C, ctx.D)
        self.elastic_bounds = enclosure(p["base"], p["grid"], p["ratio_max"])
        self.srate, self.Rp, self.sample, self.recv = (ctx.series(n) for n in ("srate", "Rp", "sample", "recv"))
        self.rmax, self.rtt, self.drain = (ctx.series(n) for n in ("rmax", "rtt", "drain"))
        self.gate, self.force, self.bdp = (ctx.series(n) for n in ("rtt_gate", "rtt_force", "bdp"))
        self.carry, self.revalue = ctx.series("carry"), ctx.series("revalue")
        self.since, self.since_inc = ctx.series("since", "int"), ctx.series("since_inc", "int")
        self.ack = ctx.series("ack", "bool")
        self.bursts = p["pacing"] == "bursts"
        self.mss_burst = p["burst"] * ctx.alpha
        self.action: list[Any] = []

    def state(self) -> dict[str, list[Any]]:
        return {"srate": self.srate, "Rp": self.Rp, "sample": self.sample, "recv": self.recv, "rmax": self.rmax,
                "rtt": self.rtt, "rtt_gate": self.gate, "rtt_force": self.force, "bdp": self.bdp,
                "drain": self.drain, "carry": self.carry, "revalue": self.revalue, "since": self.since,
                "since_inc": self.since_inc, "ack": self.ack, "action": self.action}

    # ---------------------------------------------------------------- two shapes of reading
    def reading(self, x: Any, end: int, k: int) -> None:
        """x is this flow's receipt rate over the k steps ending at service step ``end``. Steps
        before the trace are history: S_f[b], b < 0, is at most S_f[0], and the total S[b] is at
        least the lower service bound, so x stays within what any past the path allows."""
        ctx, S, v, C, D = self.ctx, self.ctx.S, self.ctx.v, self.C, self.D
        if end - k >= 0:
            ctx.add(x * k == S[end] - S[end - k])
        elif end >= 0:
            ctx.add(x * k >= S[end] - S[0], x * k <= v.S[end] - C * (end - k - D - v.first) + v.W[0])
        else:
            ctx.add(x >= 0, x * k <= C * (D + k))

    @staticmethod
    def hull(x: Any, cands: list[Any], lows: list[Any] | None = None) -> Any:
        """x between the smallest and the largest candidate (a candidate given as a pair
        (guard, value) counts only where its guard holds; None: an unknown one). ``lows`` are
        candidates for the lower end only."""
        def side(above: bool, items: list[Any]) -> Any:
            terms = []
            for c in items:
                if c is None:
                    return truth(True)
                guard, value = c if isinstance(c, tuple) else (None, c)
                cmp = x >= value if above else x <= value
                terms.append(cmp if guard is None else z3.And(guard, cmp))
            return z3.Or(*terms)
        return z3.And(side(True, cands + (lows or [])), side(False, cands))

    # ---------------------------------------------------------------- every step
    def domains(self, t: int) -> None:
        """Rates, drain and timers are non-negative (the rate positive); an RTT sample or
        estimate is never below the minimum RTT R, the path's propagation delay."""
        R, gate, force = self.R, self.gate, self.force
        self.ctx.add(self.srate[t] > 0, self.Rp[t] >= 0, self.drain[t] >= 0, self.since[t] >= 0,
                     self.since_inc[t] >= 0, self.rtt[t] >= R, self.rmax[t] >= 0, gate[t] >= R, force[t] >= R)

    def rtt_estimators(self, t: int) -> None:
        """ETC's two RTT estimates (O4, O26: the gate's "RTT" and the 8-RTT timer's): each between
        its previous value and the samples of the last ``rtt_window`` steps. Sound for every
        estimator that stays in that hull (latest sample, any EWMA, windowed or lifetime
        minimum, mean or percentile of the window); at step 0, and until the window fits in the
        trace, free (history)."""
        gate, force, rtt, wrtt = self.gate, self.force, self.rtt, self.rtt_window
        if t >= 1 and t - wrtt + 1 >= 0:
            window = [rtt[u] for u in range(t - wrtt + 1, t + 1)]
            self.ctx.add(self.hull(gate[t], [gate[t - 1]] + window), self.hull(force[t], [force[t - 1]] + window))

    def pacer_carry(self, t: int) -> None:
        """Micro-burst pacing (Alg. 1 l. 1-11): the bytes accrued and not yet sent after each
        step are less than a burst plus a tick's accrual (the pacer keeps up, a RESTRICTION of
        the module docstring); ``pacing = fluid`` (a RESTRICTION) carries nothing."""
        carry, srate, tick, mss_burst = self.carry, self.srate, self.tick, self.mss_burst
        if self.bursts:
            self.ctx.add(carry[t] >= 0, carry[t] <= mss_burst + tick * srate[t])
        else:
            self.ctx.add(carry[t] == 0, self.revalue[t] == 0)

    def receiving_rate(self, t: int) -> None:
        """The receiving rate r (3.1): ACKed bytes per step over the ``recv_window`` steps whose
        ACKs the sender has at t (served by t-R); exact on the curves."""
        recv, R, w = self.recv, self.R, self.recv_window
        self.reading(recv[t], t - R, w)

    def max_receiving_rate(self, t: int) -> None:
        """rmax, the "maximum average receiving rate" of ``rmax_window`` RTTs (3.1 footnote):
        any value between the smallest and the largest reading of the window, a superset of the
        paper's readings of it (a windowed max, the stable stage's hysteresis, a resample) as
        long as the value kept is from the window. Readings before the trace are history,
        bounded by what the link could have delivered."""
        p, R, C, D, w, rmax, recv = self.p, self.R, self.C, self.D, self.recv_window, self.rmax, self.recv
        window = range(t - p["rmax_window"] * R + 1, t + 1)
        known = [recv[u] for u in window if u >= 0]
        before = any(u < 0 for u in window)
        self.ctx.add(z3.Or(*(rmax[t] >= x for x in known), before),
                     z3.Or(*(rmax[t] <= x for x in known),
                           *([rmax[t] * w <= C * (D + w)] if before else [])))

    def pulling_sample(self, t: int) -> None:
        """The pulling-rate sample (3.1, 3.2, 5.1), by ``pulling``: ``burst`` (sound) any
        positive sub-step receipt rate, at most C without jitter (the link serves no faster
        inside a step) or ``line_rate`` C if assumed, or 4.3's sparse-feedback fallback;
        ``coarse`` the step's receipt rate, ``ideal`` Eq. 5's C (both ASSUMPTIONS), ``fallback``
        the fallback only."""
        ctx, p, C, sample, rmax, cap = self.ctx, self.p, self.C, self.sample, self.rmax, self.cap
        mode = p["pulling"]
        if mode == "burst":
            in_range = z3.And(sample[t] > 0, *([sample[t] <= cap] if cap is not None else []))
            ctx.add(z3.Or(in_range, sample[t] == p["fallback_gain"] * rmax[t]) if p["sparse_fallback"] else in_range)
        elif mode == "coarse":
            self.reading(sample[t], t - self.R, p["burst_steps"])
        elif mode == "ideal":
            ctx.add(sample[t] == C if ctx.v.net.flows == 1 else z3.And(sample[t] * 2 >= C, sample[t] <= C))
        else:
            ctx.add(sample[t] == p["fallback_gain"] * rmax[t])

    # ---------------------------------------------------------------- from step R on
    def ack_and_rtt_sample(self, t: int) -> None:
        """An ACK arrives at t when some of the flow's bytes were served at t-R (exact). With one
        the latest RTT sample is that byte's: R plus its queueing delay, which lies in the
        integer range the curves give (thesis figure 5-1B), so any value in it covers the true
        one; without one the sample holds. The drain's BDP ``s * RTT_min`` is enclosed between
        ``s R`` (no RTT is shorter) and ``s`` times the newest sample's upper end (RTT_min is
        never above the newest sample)."""
        ctx, v, S, R = self.ctx, self.ctx.v, self.ctx.S, self.R
        ack, rtt, bdp, srate = self.ack, self.rtt, self.bdp, self.srate
        if t - R - 1 >= 0:
            ctx.add(ack[t] == (S[t - R] > S[t - R - 1]))
        u = t - R
        band = []
        for kk in range(1, u + 1):
            band += [z3.Implies(z3.Not(v.served_past(u, kk)), rtt[t] >= R + kk),
                     z3.Implies(v.served_past(u, kk), rtt[t] <= R + kk)]
            ctx.add(z3.Implies(z3.And(ack[t], v.served_past(u, kk)), bdp[t] <= srate[t] * (R + kk)))
        ctx.add(z3.If(ack[t], all_of(*band), rtt[t] == rtt[t - 1]), bdp[t] >= srate[t] * R)

    def pulling_rate(self, t: int) -> None:
        """The pulling rate Rp on an ACK, by ``filter``: ``hull`` (the union of the readings:
        latest sample, EWMA, max/min hold, sliding mean or median, outlier rejection, correction
        by rmax, O7) anywhere between the old Rp, rmax and the samples of the last ``rp_window``
        steps; ``latest`` and ``floor`` single readings. With ``stable`` the stable-convergence
        cap Rp = min(k rmax, Rp) (3.2) may apply at any step. No ACK: Rp holds."""
        p, Rp, sample, rmax, ack = self.p, self.Rp, self.sample, self.rmax, self.ack
        wrp = self.rp_window
        if p["pulling"] == "fallback":
            new_rp: Any = Rp[t] == p["fallback_gain"] * rmax[t]
        else:
            capped = z3.And(Rp[t] == p["k"] * rmax[t]) if p["stable"] else False
            if p["filter"] == "hull":
                older = [None if u < 0 else (ack[u], sample[u]) for u in range(t - wrp + 1, t)]
                new_rp = self.hull(Rp[t], [Rp[t - 1], sample[t], rmax[t]] + older,
                                   [p["k"] * rmax[t]] if p["stable"] else [])
            else:
                y = sample[t] if p["filter"] == "latest" else _max(sample[t], rmax[t])
                new_rp = z3.Or(Rp[t] == y, z3.And(capped, p["k"] * rmax[t] <= y))
        self.ctx.add(z3.If(ack[t], new_rp, Rp[t] == Rp[t - 1]))

    def update_conditions(self, t: int) -> RateUpdateConditions:
        """Alg. 1 l. 12-19: an update runs at an ACK, not while draining, once ``now - t_update
        >= RTT`` (the gate's estimate); it accelerates on a falling RTT (``dRTT < 0``, or ``<=
        0`` with ``accel_on_equal``, 3.1) or once ``force_after`` RTTs passed since the last
        update or increase (``force_from``), else decelerates if ``dRTT >= theta`` (3.4)."""
        p, since, since_inc, rtt, force, gate = self.p, self.since, self.since_inc, self.rtt, self.force, self.gate
        draining = self.drain[t - 1] > 0
        elapsed = since[t - 1] + 1
        elapsed_f = elapsed if p["force_from"] == "update" else since_inc[t - 1] + 1
        drtt = rtt[t] - rtt[t - p["drtt_lag"]]
        falling = drtt <= 0 if p["accel_on_equal"] else drtt < 0
        go = z3.Or(falling, elapsed_f >= p["force_after"] * force[t])
        eligible = z3.And(self.ack[t], z3.Not(draining), elapsed >= gate[t])
        return RateUpdateConditions(draining, elapsed, z3.And(eligible, go),
                                    z3.And(eligible, z3.Not(go), drtt >= p["theta"]))

    def elastic_update(self, t: int) -> Any:
        """Eq. 1, ``s' = s log_base(Rp/s + base - 1)``, enclosed linearly
        (:mod:`ccac.ccas.elastic.enclosure`): below every tangent plane of the concave
        perspective, above its chord in the cell of Rp/s, above the tail bound past the grid;
        so the true s' always satisfies it."""
        srate, enc = self.srate, self.elastic_bounds
        s0, rp, up = srate[t - 1], self.Rp[t], srate[t]
        bounds = [up <= a * s0 + b * rp for a, b in enc.tangents]
        ge = [rp >= x * s0 for x in enc.points[1:]]  # ge[i]: Rp/s >= points[i+1]
        bounds += [z3.Implies(ge[i + 1], ge[i]) for i in range(len(ge) - 1)]  # valid; helps z3
        for i, (a, b) in enumerate(enc.chords):  # the cell [points[i], points[i+1])
            cell = z3.And(ge[i - 1], z3.Not(ge[i])) if i > 0 else z3.Not(ge[0])
            bounds.append(z3.Implies(cell, up >= a * s0 + b * rp))
        bounds.append(z3.Implies(ge[-1], up >= enc.tail * s0))
        return z3.And(*bounds)

    def rate_update(self, t: int, update: RateUpdateConditions) -> None:
        """The update itself: an acceleration applies Eq. 1 (:meth:`elastic_update`), a
        deceleration halves toward the receiving rate, ``s = (s + r) / 2`` (3.4), and with
        ``clamp`` each may also keep s (O14(b): f >= 1 below Rp; O17: never raise on a
        decrease). A deceleration then drains what is in flight beyond the BDP (3.4, Eq. 2):
        each draining step withholds ``(1 - eta) s`` until that excess is withheld, with no
        update meanwhile (the drain's end is the new t_update, a RESTRICTION of the module
        docstring). Otherwise s holds and t_update is kept."""
        ctx, p, R, A, S, Ld = self.ctx, self.p, self.R, self.ctx.A, self.ctx.S, self.ctx.Ld
        srate, recv, drain, bdp = self.srate, self.recv, self.drain, self.bdp
        since, since_inc = self.since, self.since_inc
        draining, elapsed, accel, decel = update.draining, update.elapsed, update.accelerate, update.decelerate
        s0, rp, up = srate[t - 1], self.Rp[t], srate[t]
        elastic = self.elastic_update(t)
        halve = srate[t] * 2 == srate[t - 1] + recv[t]
        if p["clamp"]:
            elastic = z3.Or(elastic, z3.And(rp < s0, up == s0))
            halve = z3.Or(halve, z3.And(recv[t] > s0, up == s0))
        ctx.add(z3.Implies(accel, elastic))
        inflight = A[t - 1] - S[t - R] - Ld[t]
        excess = inflight - bdp[t]
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

    def sending(self, t: int, update: RateUpdateConditions) -> None:
        """What step t sends (Alg. 1 l. 1-11): its paced bytes (s, less what a drain withholds),
        give or take the pacer's carry, and at a rate change (or after a draining step) the
        pending interval since the last send, at most two ticks, re-valued at the new rate
        (Alg. 1 l. 3: Send() runs after RateUpdate). The window is the bytes in flight after
        sending, so pacing always binds (ETC has no window)."""
        ctx, R, srate, drain, carry, revalue = self.ctx, self.R, self.srate, self.drain, self.carry, self.revalue
        draining, accel, decel = update.draining, update.accelerate, update.decelerate
        withheld = drain[t - 1] - drain[t]
        paced = z3.If(draining, srate[t] - withheld, srate[t])
        sent = ctx.rate[t]
        if self.bursts:
            rv = revalue[t]
            changed = z3.Or(draining, accel, decel, drain[t - 2] > 0 if t >= 2 else True)
            span = 2 * self.tick
            ctx.add(sent == paced + carry[t - 1] - carry[t] + rv, carry[t - 1] + rv >= 0,
                    z3.Implies(z3.Not(changed), rv == 0),
                    z3.Implies(changed, z3.And(z3.Or(rv <= span * srate[t], rv <= span * srate[t - 1]),
                                               z3.Or(-rv <= span * srate[t], -rv <= span * srate[t - 1]))))
        else:
            ctx.add(sent == paced)
        ctx.add(ctx.cwnd[t] == ctx.A[t - 1] + sent - ctx.S[t - R] - ctx.Ld[t])


def _max(a: Any, b: Any) -> Any:
    return z3.If(a >= b, a, b)


ALGORITHM = ETC()
