"""``copa``: Copa's default mode (thesis 6.3 and chapter 11), without mode switching.

What is modelled
----------------
Copa compares its current rate ``cwnd / RTT_standing`` with the target rate
``1 / (delta * d_q)`` packets per unit time, i.e. ``alpha / (delta * dq)`` bytes/step with the
MSS ``alpha``, where ``dq = RTT_standing - RTT_min`` is the *standing* queueing delay: the
smallest RTT seen over a short recent window, minus the minimum RTT (taken to be exactly R, as
the thesis assumes). If the rate is at most the target it increases cwnd, otherwise it
decreases it. In the model's step grid that is, at every step t >= R:

* ``cwnd[t] = cwnd[t-1] + increment*alpha/R``  if  ``cwnd[t-1] / (R + dq) <= alpha / (delta * dq)``,
* ``cwnd[t] = cwnd[t-1] - increment*alpha/R``  otherwise,

(``dq = 0`` always increases: the target rate is unbounded), i.e. with
``f(dq) = cwnd[t-1] * dq - (alpha/delta) * (R + dq)``: increase iff ``f(dq) <= 0``.
The decision uses ``cwnd[t-1]``, the window in force when the step's ACKs arrive (the rate
Copa compares is the one it was sending at); the update produces ``cwnd[t]``.

The step size: Copa proper changes cwnd by ``v / (delta * cwnd)`` packets per ACK, i.e. by
``v / delta`` packets per RTT; the thesis' CCAC model (and this one by default) moves cwnd by
one MSS, ``alpha``, per RTT, spread evenly over the R steps of an RTT (velocity v = 1, its
steady-state value). ``increment`` scales this (``increment = 1/delta`` is Copa's own
per-RTT change); this is a choice of algorithm variant, not an approximation.

With ``pacing = true`` (default) Copa paces at ``pacing_gain * cwnd / RTT_standing``
(``pacing_gain`` = 2: "double cwnd/RTT_standing to accommodate imperfections in pacing").

The standing-RTT measurement
----------------------------
The model gives one RTT sample per step: the byte at the head of the service curve at step
s (thesis figure 5-1B). Its queueing delay is only known as an integer range: it is at least k
if ``not served_past(s, k)`` (``S[s] <= (A-L)[s-k]``: that byte had been admitted by step s-k)
and less than k if ``served_past(s, k)`` (it was admitted after s-k), for k = 1..s; it is at
least 0 always, and it has no upper bound when ``served_past(s, k)`` fails for every k <= s
(the byte was admitted by step 0 and the trace cannot tell how long before). The delays are
those of the shared FIFO queue (total curves), so with several flows every flow sees them.
Call these ``[lo_s, hi_s]`` (``hi_s`` possibly +inf).
Its ACK reaches the sender at s + R. The sender at step t sees the samples of service steps
``t-R-standing+1 .. t-R`` (``standing`` steps, default R, one min RTT; Copa uses srtt/2, which
the step grid cannot resolve finer, so the window length is a modelling parameter). Samples of
service steps before 0 are history: lo = 0, hi = +inf. ``dq`` is the minimum of the samples,
so ``dq`` lies in ``[dq_lo, dq_hi] = [min_s lo_s, min_s hi_s]``.

Why this over-approximates (every run of the algorithm above satisfies the constraints)
-------------------------------------------------------------------------------------------
* **Unknown delay, both directions allowed.** The true ``dq`` is some real number in
  ``[dq_lo, dq_hi]`` (the true value is even in the half-open ``[dq_lo, dq_hi)``). Since
  ``f`` is linear in ``dq``, an increase is consistent with *some* dq in the range iff
  ``f(dq_lo) <= 0`` or ``f(dq_hi) <= 0``, and a decrease iff ``f(dq_lo) > 0`` or
  ``f(dq_hi) > 0`` (decrease is Copa's "otherwise", so strict). With ``dq_hi = +inf`` the
  decrease side is decided by the slope of f, ``cwnd - alpha/delta``: some large dq has
  ``f > 0`` iff ``cwnd > alpha/delta``; some has ``f <= 0`` iff ``cwnd <= alpha/delta``. The
  encoding allows exactly the moves some dq in the range allows: a superset of the moves the
  true dq allows. (f is negative everywhere when ``cwnd <= alpha/delta`` and increasing
  otherwise, so "f(lo) <= 0" and "f(hi) > 0" are the binding tests; the encoding states these
  simplified forms and :meth:`check` the either-endpoint forms, which are equivalent.)
* **Products.** ``cwnd * dq`` would multiply two solver quantities; dq's bounds are integers
  0..t, so the encoding case-splits over their values (``dq_lo == v -> f_v(cwnd) <= 0`` with
  ``f_v`` linear), which is exact, not an approximation.
* **Pacing band.** The true pacing rate ``g * cwnd / (R + dq)`` for dq in the range lies in
  ``[g*cwnd/(R+dq_hi), g*cwnd/(R+dq_lo)]``; the encoding allows any rate in that band (lower
  end 0 -- the model keeps rate > 0 -- when dq_hi is unbounded), again by case split on the
  integer bounds: ``rate * (R + dq_lo) <= g * cwnd`` and ``rate * (R + dq_hi) >= g * cwnd``.
* **History.** Steps t < R are history: cwnd and rate there are only bounded by the pacing band
  (with no samples the band is ``(0, g*cwnd/R]``). Samples from before step 0 are free
  (lo = 0, hi = +inf), which keeps every decision that any pre-trace history could produce.

What is not modelled
--------------------
Mode switching and the competitive mode (as in thesis 6.3); slow start; the velocity
parameter (v = 1, its steady-state value); the per-ACK granularity of the update and of the
standing-RTT filter (one sample and one move per step, the thesis' discretization -- like the
model's AIMD, Copa reacts once per step); min-RTT estimation (R is exact); a minimum cwnd: the model requires
cwnd > 0, and a decrease
needs ``cwnd[t-1] > alpha/delta``, so it can reach cwnd <= 0 only if
``increment * alpha / R >= alpha / delta`` (``increment * delta >= R``). With the defaults
(delta = 1/2, increment = 1, R >= 1) no run of the algorithm is lost that way.

A consequence of the step grid worth knowing when reading answers: a queueing delay below one
step cannot be told from zero (the range is [0, 1]), and at R = 1 one step is a whole min RTT.
Copa's "nearly empty queue" test (fewer than 1/delta packets queued) is then not resolvable
when ``alpha/delta`` is small against ``C * 1 step``: with dq possibly 1 step, any
``cwnd > (alpha/delta) * (R + 1)`` may decrease even when every queue is empty at the sample
points. Queries that want the thesis' single-box behaviour need alpha bounded below as well
as above (or a finer grid, larger R).

Left to the solver: cwnd before step R, which way to move when the delay range allows both,
and the pacing rate inside its band.

State (usable in queries): ``dq_lo`` and ``dq_hi``, the integer bounds (in steps) of the
standing queueing delay the sender at t can infer. ``dq_hi`` is +infinity when no sample
bounds the delay above; it is then shown as the sentinel ``T`` (a finite upper bound is at
most t - R < T, so ``dq_hi == T`` means exactly "unbounded"). During the history prefix
(t < R) there are no samples: ``dq_lo = 0``, ``dq_hi = T``.

Steady state: Copa's only memory is cwnd (with v = 1); the standing-RTT samples are functions
of the path's curves. In a periodic query the samples at the trace's first steps are those of
the previous periods of the same run (``ccac.encode.periodic``), so dq_lo and dq_hi are exact at every
step, and cwnd ends where it started.
Parity trap: every step moves cwnd by exactly one increment, so cwnd can return to its start
value only after an even number of moves: a periodic Copa query needs T - 1 even (T odd). With
T even every periodic Copa query is unsat for that reason alone (a vacuous answer).
"""

from __future__ import annotations

import functools

from fractions import Fraction
from typing import Any

import z3

from ccac.ccas.interface import CCA, FlowContext, FlowValues, StateVar
from ccac.encode.encoding import Cond, all_of, any_of, first_case, negated, whole
from ccac.core.params import Param
from ccac.senders.interface import ConcreteSender, SenderStart


class Copa(CCA):
    name = "copa"
    summary = "Copa default mode: cwnd +-alpha/R per step (alpha per RTT) toward the target rate alpha/(delta*dq)"
    params = (
        Param("delta", Fraction(1, 2), "target rate is alpha / (delta * dq) bytes per step",
              minimum=Fraction(0), exclusive_minimum=True),
        Param("standing", None, "standing-RTT window: the min RTT over this many steps of samples "
              "(default R)", "steps", "int", minimum=Fraction(1)),
        Param("increment", 1, "cwnd change per RTT, in MSS (alpha); Copa proper uses 1/delta",
              "alpha per RTT", minimum=Fraction(0), exclusive_minimum=True),
        Param("pacing", True, "pace at pacing_gain * cwnd / RTT_standing", kind="bool"),
        Param("pacing_gain", 2, "pacing rate as a multiple of cwnd / RTT_standing",
              minimum=Fraction(0), exclusive_minimum=True),
    )
    state = (
        StateVar("dq_lo", "lower end of the standing queueing delay the sender can infer", "steps", plotted=True),
        StateVar("dq_hi", "upper end of the standing queueing delay (T = unbounded)", "steps", plotted=True),
    )

    def paced(self, params: dict[str, Any]) -> bool:
        return bool(params["pacing"])

    @staticmethod
    def standing(params: dict[str, Any], R: int) -> int:
        return params["standing"] if params["standing"] is not None else R

    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        p, R, T = ctx.params, ctx.R, ctx.T
        v, cwnd, alpha = ctx.v, ctx.cwnd, ctx.alpha
        target = alpha * (1 / p["delta"])  # alpha / delta, bytes
        standing = self.standing(p, R)
        move = alpha * (p["increment"] / R)  # cwnd change per step
        dq_lo: list[Any] = []
        dq_hi: list[Any] = []

        for t in range(T):
            samples = range(t - R - standing + 1, t - R + 1)
            history = any(s < 0 for s in samples)
            known = [s for s in samples if s >= 0]
            top = max(known, default=0)  # every finite bound is at most the latest sample step

            @functools.cache
            def lo_at_least(k: int) -> Cond:
                """dq_lo >= k: every sample's delay is at least k."""
                if k <= 0:
                    return True
                if history or any(s < k for s in known):
                    return False
                return z3.And(*(z3.Not(v.served_past(s, k)) for s in known))

            @functools.cache
            def hi_at_most(k: int) -> Cond:
                """dq_hi <= k: some sample's delay is below k (so its hi_s <= k)."""
                if k <= 0:
                    return False
                return any_of(False, *(v.served_past(s, min(k, s)) for s in known if s >= 1))

            lo_is = {k: all_of(lo_at_least(k), negated(lo_at_least(k + 1))) for k in range(top + 1)}
            hi_is = {k: all_of(hi_at_most(k), negated(hi_at_most(k - 1))) for k in range(1, top + 1)}
            hi_inf = negated(hi_at_most(top))

            # The displayed range is a function of the curves (terms, not variables): the
            # largest k with dq_lo >= k, and the smallest k with dq_hi <= k (T = unbounded).
            dq_lo.append(first_case(((lo_at_least(k), k) for k in range(top, 0, -1)), 0, whole))
            dq_hi.append(first_case(((hi_at_most(k), k) for k in range(1, top + 1)), T, whole))

            if t >= max(R, 1):
                prev = cwnd[t - 1]

                def f(d: int) -> z3.ArithRef:
                    return prev * d - target * (R + d)

                # Increase possible iff f(dq_lo) <= 0; decrease iff f(dq_hi) > 0 (see docstring).
                may_increase = z3.Or(*(z3.And(c, f(k) <= 0) for k, c in lo_is.items()))
                may_decrease = z3.Or(*(z3.And(c, f(k) > 0) for k, c in hi_is.items()),
                                     z3.And(hi_inf, prev > target))
                ctx.add(z3.Or(z3.And(cwnd[t] == prev + move, may_increase),
                              z3.And(cwnd[t] == prev - move, may_decrease)))

            if self.paced(p):
                rate, g = ctx.rate[t], p["pacing_gain"]
                ctx.add(*(z3.Implies(c, rate * (R + k) <= g * cwnd[t]) for k, c in lo_is.items()))
                ctx.add(*(z3.Implies(c, rate * (R + k) >= g * cwnd[t]) for k, c in hi_is.items()))
        return {"dq_lo": dq_lo, "dq_hi": dq_hi}

    def lookback(self, params: dict[str, Any], R: int) -> int:
        """The samples of service steps t-R-standing+1 .. t-R, and cwnd at t-1."""
        return R + self.standing(params, R)

    # ------------------------------------------------------------------ independent check
    @staticmethod
    def reading_problems(f: FlowValues, samples: range, lo: int, hi: int | None) -> list[str]:
        """Whether [lo, hi] (hi None: unbounded) is the standing delay the samples give.

        A sample whose byte was admitted inside the trace has an exact delay bracket. One whose
        byte was admitted before step 0 (or that was taken before step 0) waited an unknown
        time, at least what the trace shows: any past is possible there, so the reading may be
        any value such a sample allows: its delay at least the lower end the trace shows, its
        bracket's upper end one more, or unbounded. The encoding shows the widest of them
        (0, unbounded) in an ordinary trace; a periodic trace's repetition shows the one its
        own earlier periods give."""
        exact: list[tuple[int, int]] = []
        floors: list[tuple[int, None]] = []
        for s in samples:
            low, high = f.delay_range(s) if s >= 0 else (0, None)
            if high is not None:
                exact.append((low, high))
            else:
                floors.append((low, high))
        exact_lo = min((r[0] for r in exact), default=None)
        exact_hi = min((r[1] for r in exact), default=None)
        if not floors:
            want = f"[{exact_lo}, {exact_hi}]"
            ok = lo == exact_lo and hi == exact_hi
        else:
            least = min(r[0] for r in floors + exact)
            lo_ok = least <= lo and (exact_lo is None or lo <= exact_lo)
            hi_ok = (hi is None and exact_hi is None) or (
                hi is not None and hi > lo and (exact_hi is None or hi <= exact_hi))
            ok = lo_ok and hi_ok
            want = (f"lo in [{least}, {exact_lo if exact_lo is not None else 'inf'}], hi above lo and "
                    f"at most {exact_hi if exact_hi is not None else 'inf'} (samples reach before step 0)")
        shown = f"[{lo}, {hi if hi is not None else 'inf'}]"
        return [] if ok else [f"standing delay {shown} but the samples give {want}"]

    def check(self, f: FlowValues) -> list[str]:
        p, R, T = f.params, f.R, f.T
        target = f.alpha / p["delta"]
        standing = self.standing(p, R)
        g = p["pacing_gain"]
        move = f.alpha * p["increment"] / R
        dq_lo, dq_hi = f.state["dq_lo"], f.state["dq_hi"]
        problems: list[str] = []
        for t in range(T):
            lo, hi = dq_lo[t], (None if dq_hi[t] == T else dq_hi[t])
            problems += [f"step {t}: {msg}" for msg in self.reading_problems(
                f, range(t - R - standing + 1, t - R + 1), lo, hi)]

            if t >= max(R, 1):
                prev, change = f.cwnd[t - 1], f.cwnd[t] - f.cwnd[t - 1]

                def fits(d: int | None, up: bool) -> bool:
                    """Whether Copa, measuring standing delay d (None = arbitrarily large),
                    would move up (rate <= target) or down (rate > target)."""
                    if d is None:  # the limit of cwnd*d vs target*(R+d) as d grows
                        return prev <= target if up else prev > target
                    if d == 0:  # the target rate is unbounded
                        return up
                    below_target = prev / (R + d) <= target / d
                    return below_target if up else not below_target

                if change == move:
                    if not (fits(lo, True) or fits(hi, True)):
                        problems.append(f"step {t}: cwnd increased but every standing delay in "
                                        f"[{lo}, {hi}] puts the rate above the target")
                elif change == -move:
                    if not (fits(lo, False) or fits(hi, False)):
                        problems.append(f"step {t}: cwnd decreased but every standing delay in "
                                        f"[{lo}, {hi}] puts the rate at or below the target")
                else:
                    problems.append(f"step {t}: cwnd changed by {change}, not +-increment*alpha/R = {move}")

            if f.rate is not None:
                if f.rate[t] > g * f.cwnd[t] / (R + lo):
                    problems.append(f"step {t}: pacing rate {f.rate[t]} above {g} * cwnd / (R + {lo})")
                if hi is not None and f.rate[t] < g * f.cwnd[t] / (R + hi):
                    problems.append(f"step {t}: pacing rate {f.rate[t]} below {g} * cwnd / (R + {hi})")
        return problems

    def step_rules(self, f: FlowValues) -> dict[int, list[str]]:
        """At each step that moves the window, which way and what Copa measured: up (its rate at
        or below the target 1 / (delta * standing delay)) or down (above it), and the standing
        delay the trace allows (the range :meth:`check` reads)."""
        move = f.alpha * f.params["increment"] / f.R
        out: dict[int, list[str]] = {}
        for t in range(max(f.R, 1), f.T):
            hi = f.state["dq_hi"][t]
            reading = f"standing delay in [{f.state['dq_lo'][t]}, {'unbounded' if hi == f.T else hi}] steps"
            change = f.cwnd[t] - f.cwnd[t - 1]
            way = "up: rate at or below the target" if change == move else "down: rate above the target"
            out[t] = [f"{way}, {reading}"]
        return out

    def concrete(self, start: SenderStart) -> ConcreteSender:
        from ccac.senders.copa import CopaSender

        return CopaSender(start)


ALGORITHM = Copa()
