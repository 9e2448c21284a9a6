"""Periodic (steady-state) queries: traces that repeat forever, encoded exactly.

What "periodic" means
---------------------
A periodic trace of T steps has period P = T - 1: its last step is the first step of the next
period. Repeated forever in both directions it is an infinite run in which every byte curve (A,
S, L, Ld, W, and each CCA's byte marks) grows by the same amount every period and everything
else (queues, undetected losses, bytes in a jitter box, windows, rates, every CCA variable,
timeouts) repeats exactly. ccac answers sat only with a trace whose infinite repetition obeys
every rule of the model and of the CCA *at every step*, including the rules that look back in
time: loss detection by duplicate ACKs, timeouts, delay readings, bandwidth filters, monitor
intervals and receive-rate windows.

How it is encoded (:func:`timeline`, :func:`conditions`)
---------------------------------------------------------
The model and the CCAs are built, unchanged, over a longer timeline: ``history`` steps before
the trace, then the trace. A history step is not a free variable: it is the trace's own step
one or more periods later, each byte curve shifted down by its growth over those periods
(:meth:`ccac.encode.encoding.Encoding.wrapped`). Every rule at every trace step therefore reads the
previous periods of the same run, exactly. The trace's last step must equal its first (plus
one period's growth on each byte axis), for every variable of the model and every CCA: so the
trace steps are one full period of the infinite run, and the rules hold at all its steps
because they hold at one period's worth of them and do not depend on absolute time.

``history`` covers what any rule reads a bounded number of steps back (the model's R, D, own
boxes and timeout clock; each CCA's declared :meth:`~ccac.ccas.interface.CCA.lookback`) plus one more
period, the *settling* period. Two mechanisms look back without a bound: a loss is detected
only once `dupacks` bytes sent after it are ACKed, however long that takes, and a delay reading
reports how long the byte being served waited, however long that was. For these the encoding
asks (group ``query.periodic.settled``, :func:`settled`) that what happened before the
timeline is already decided by its first period: every byte admitted before it has been served
(and, behind a flow's own box, ACKed) by the end of the settling period, and every loss before
it is detectable at the trace's start (or the flow never loses a byte). Then no rule at a trace
step depends on anything before the timeline, and the run is exactly periodic.

Soundness of both answers
-------------------------
* sat: the trace meets every rule at every step of its infinite repetition (the argument
  above); ``ccac.solving.validate`` checks this independently by unrolling the trace over several
  periods and checking the result as an ordinary trace.
* unsat: the settled conditions only narrow the search, so ccac solves again without them
  (``ccac.solving.solve``). That second formula over-approximates every periodic run: a run's own
  history satisfies every constraint, and what lies before the timeline is left free as in an
  ordinary query. Only if both are unsat is the answer unsat. If the second is sat, a periodic
  run might exist in which some byte waits, or some loss stays undetected, for longer than a
  period; the answer is then unknown and says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import z3

from ccac.encode.encoding import Cond, Encoding, Term, Timeline
from ccac.core.errors import CcacError
from ccac.core.limits import check_horizon
from ccac.encode.network import Network

SETTLED = "query.periodic.settled"

# Byte curves of the path model: their periodicity is the model's own (PathServer.periodic),
# which ties each curve's growth to the others' (queues, undetected losses, boxes repeat).
MODEL_CURVES = frozenset({"A", "S", "L", "Ld", "Lnc", "So", "W"})


def timeline(query: Any) -> Timeline:
    """The timeline of ``query``: no history for an ordinary query; for a periodic one, what
    the longest look-back of any rule needs plus one settling period (module docstring)."""
    if not query.periodic:
        return Timeline()
    net = query.network
    period = net.T - 1
    for n, flow in enumerate(query.flows):
        divisor = flow.cca.period_divisor(flow.params, net.path(n).R)
        if period % divisor:
            raise CcacError(
                f"a periodic trace repeats every T - 1 = {period} steps, but flow {n}'s "
                f"{flow.cca.name} runs on a clock of {divisor} steps that would not repeat: "
                f"T - 1 must be a multiple of {divisor}", "query.periodic")
    reach = lookback(query)
    check_horizon(net.T + reach + period, net.flows, "query.periodic",
                  "T plus a periodic query's history (the longest look-back plus one period)")
    return Timeline(history=reach + period, period=period)


def lookback(query: Any) -> int:
    """How many steps before step t any rule at t reads, at most, besides the two unbounded
    readings (module docstring): the model's reach (:func:`model_reach`) and each CCA's declared
    :meth:`~ccac.ccas.interface.CCA.lookback`."""
    net = query.network
    return max([model_reach(query)] + [flow.cca.lookback(flow.params, net.path(n).R)
                                       for n, flow in enumerate(query.flows)])


def model_reach(query: Any) -> int:
    """How many steps before step t the model's own rules at t read, at most: a flow's minimum
    RTT, the jitter it may carry (the path's and its own box's) and the timeout clock."""
    net = query.network
    return max(net.path(n).R + net.D + net.path(n).D + net.rto for n in range(net.flows))


def extended(net: Network, tl: Timeline) -> Network:
    """The network the model is built over: the trace plus the wrapped history steps."""
    return replace(net, T=net.T + tl.history) if tl.history else net


def conditions(enc: Encoding, v: Any) -> list[tuple[str, Term, Term]]:
    """(label, value at the first step, value at the last step) for every per-step variable
    but the model's byte curves (:data:`MODEL_CURVES`, whose conditions the model states):
    values that are not byte positions repeat; a CCA's byte mark grows by what its flow's curve
    on the same axis grows in a period."""
    tl = enc.timeline
    first, last = tl.history, tl.history + tl.period
    growth = {
        "A": lambda n: v.A_f[n][last] - v.A_f[n][first],
        "S": lambda n: v.S_f[n][last] - v.S_f[n][first],
        "L": lambda n: v.L_f[n][last] - v.L_f[n][first],
        "W": lambda n: v.W[last] - v.W[first],
    }
    out: list[tuple[str, Term, Term]] = []
    seen: set[tuple[str, int | None]] = set()
    for slot in list(enc.slots.values()):
        key = (slot.series, slot.flow)
        if key in seen or slot.series in MODEL_CURVES:
            continue
        seen.add(key)
        label = slot.series if slot.flow is None else f"{slot.series} of flow {slot.flow}"
        start, end = slot.at(0, enc.ctx), slot.at(tl.period, enc.ctx)
        if slot.axis is None:
            out.append((label, start, end))
        else:
            out.append((f"{label} (growth vs the flow's {slot.axis} curve)", end - start,
                        growth[slot.axis](slot.flow)))
    return out


def lossless_means_detected(v: Any, tl: Timeline) -> list[Cond]:
    """A fact of every periodic run: a flow that loses nothing in a period has no undetected
    loss. Its loss curve is then constant forever. If it is served at all, some byte sent long
    enough ago has `dupacks` bytes ACKed after it, so every loss (all before that byte) has been
    detected. If it is never served, nothing it admitted waits (the server serves a queue
    within D steps unless it wastes tokens, which it may only when nothing waits), so every
    byte in flight is lost, and the timeout rule detects them. Both the settled formula and the
    one without the settling conditions may therefore assume it."""
    first, last = tl.history, tl.history + tl.period
    return [z3.Implies(v.L_f[n][last] == v.L_f[n][first], v.Ld_f[n][first] == v.L_f[n][first])
            for n in range(v.net.flows)]


def settled(v: Any, tl: Timeline) -> list[Cond]:
    """What happened before the timeline is decided by its settling period (module docstring):

    * every byte admitted before the timeline has left the bottleneck by the end of the
      settling period (S at step P > (A-L) at step 0: strictly, so a delay reading there is
      bounded inside the timeline), and, behind a flow's own box, has been ACKed;
    * for every flow, every loss before the timeline is detectable at the trace's first step
      (ACKs of `dupacks` bytes admitted after it have arrived), or the flow never loses a byte
      and has no undetected loss."""
    settle, first, last = tl.period, tl.history, tl.history + tl.period
    out: list[Cond] = [v.S[settle] > v.admitted(0)]
    for n in range(v.net.flows):
        path = v.net.path(n)
        if path.D > 0:
            out.append(v.So_f[n][settle] > v.admitted_f(n, 0))
        detectable = v.So_f[n][first - path.R] >= v.admitted_f(n, 0) + v.dupacks
        lossless = z3.And(v.L_f[n][last] == v.L_f[n][first], v.Ld_f[n][first] == v.L_f[n][first])
        out.append(z3.Or(detectable, lossless))
    return out
