"""``aimd``: TCP-style additive increase, multiplicative decrease (thesis 6.2, table 4.1).

The sender is ACK-clocked (the model keeps cwnd bytes beyond what was acknowledged or detected
lost) and, with ``pacing = true``, also paced at ``pacing_gain * cwnd / R``. Pacing against the
minimum RTT R is the definition of this variant, not an approximation: a stack that paces
against its smoothed RTT (>= R) sends more slowly, and those runs are not covered by a query
about this variant (ask about it by lowering ``pacing_gain``). From step R on, at
each step t, in order of precedence:

1. timeout: cwnd = alpha (one MSS); the loss event and the ACK count restart.
2. a *new* loss event is detected: cwnd halves. A detected loss is new only if the lost byte
   was sent after the last decrease (RFC 6582): in the model bytes are lost on arrival, so a
   loss is new iff the detected-loss curve passes ``loss_mark``, the loss curve's value when
   the window was last decreased. Bytes lost during the decrease step itself may count as
   before or after it: ``loss_mark`` is solver-chosen between L[t-1] and L[t] (both orders are
   possible within a step, so allowing both over-approximates).
3. a full window of ACKs arrived since the last change (``S[t-R] - ack_mark >= cwnd``):
   cwnd grows by alpha and the count restarts (``ack_mark = S[t-R]``). At most one increase
   per step: the discrete AIMD reacts once per step (thesis 6.2). This applies also in a step
   that detects more losses of an old event: the thesis' AIMD "increases its cwnd only when it
   gets enough ACKs and does not react more than once to the same loss event" (6.2), so the
   second burst of detections of one event neither halves nor holds the window (appendix A.2's
   loss-burst trace depends on exactly this step).
4. otherwise cwnd holds.

``hold_in_recovery = true`` is the other reading, closer to RFC 6582's fast recovery: in a step
that detects more losses of an old event cwnd holds and the ACK count does not restart. It is
a different algorithm, not a relaxation: each variant has runs the other does not.

Deliberate differences from the published CCAC code's AIMD (each keeps every run of the thesis'
AIMD, so it is sound): the ACK count and the loss mark at the trace's start are the solver's
(the thesis' lemmas hold "from any initial state"; the published code starts the loss mark at
S_f[0] and counts ACKs from the last window change inside the trace); the loss mark is the
loss curve's value at the decrease, which is the thesis' definition (a loss is new iff the lost
byte was sent after the last decrease; bytes are lost on arrival), where the published code
marks the decrease by the sequence number A - L + dupacks and calls a detected loss new once
the ACKs pass that mark.

Before step R the state is history: cwnd, ``loss_mark`` and ``ack_mark`` are free (loss_mark
at most L[t], since it is a past value of the loss curve; not at most L[0]: a decrease just
before step t may have set it to a loss value after step 0, and a window cut from a longer run
must be a trace, see ``ccac.analysis.window``). Loss detection uses a dupack
threshold of 3 MSS unless the network sets ``dupacks``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import z3

from ccac.ccas.interface import CCA, FlowContext, FlowValues, StateVar
from ccac.core.params import Param
from ccac.senders.interface import ConcreteSender, SenderStart


class AIMD(CCA):
    name = "aimd"
    summary = "ACK-clocked AIMD: +alpha per window of ACKs, halve once per loss event, reset on timeout"
    params = (
        Param("pacing", False, "also pace at pacing_gain * cwnd / R bytes per step", kind="bool"),
        Param("pacing_gain", 1, "pacing rate as a multiple of cwnd / R (Linux used 2, later 1.2)",
              minimum=Fraction(0), exclusive_minimum=True),
        Param("hold_in_recovery", False, "no increase in a step that detects more losses of an old "
              "event (RFC 6582 fast recovery); false: the thesis' AIMD, which increases there",
              kind="bool"),
    )
    state = (
        StateVar("loss_mark", "cumulative loss when cwnd was last decreased; detected loss beyond it is a new event",
                 axis="L"),
        StateVar("ack_mark", "cumulative ACKed bytes when cwnd last changed; a window beyond it triggers +alpha",
                 axis="S"),
    )
    dupacks_default = Fraction(3)

    def paced(self, params: dict[str, Any]) -> bool:
        return bool(params["pacing"])

    def start_state(self, params: dict[str, Any], C: Fraction, R: int, alpha: Fraction) -> dict[str, Fraction]:
        """A connection's start (the thesis' AIMD has no slow start): one MSS of window, no loss
        event yet and the ACK count at zero, as its concrete sender starts."""
        return {"cwnd": alpha, "loss_mark": Fraction(0), "ack_mark": Fraction(0)}

    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        loss_mark, ack_mark = (ctx.series(sv.name, axis=sv.axis) for sv in self.state)
        cwnd, S, L, Ld, R = ctx.cwnd, ctx.S, ctx.L, ctx.Ld, ctx.R
        for t in range(ctx.T):
            if self.paced(ctx.params):
                ctx.add(ctx.rate[t] * R == ctx.params["pacing_gain"] * cwnd[t])
            if t < R:
                ctx.add(loss_mark[t] <= L[t])
                continue
            acked = S[t - R]
            timeout = ctx.timeout[t]
            new_loss = Ld[t] > loss_mark[t - 1]
            old_loss = Ld[t] > Ld[t - 1]
            window_acked = acked - ack_mark[t - 1] >= cwnd[t - 1]
            restart_event = z3.And(L[t - 1] <= loss_mark[t], loss_mark[t] <= L[t])
            keep_marks = z3.And(loss_mark[t] == loss_mark[t - 1], ack_mark[t] == ack_mark[t - 1])
            # What rules out growth besides a timeout: a new loss event, and with
            # hold_in_recovery also the detection of more losses of an old one.
            recovering = ctx.params["hold_in_recovery"]
            blocks_growth = old_loss if recovering else new_loss
            ctx.add(
                z3.Implies(timeout, z3.And(cwnd[t] == ctx.alpha, restart_event, ack_mark[t] == acked)),
                z3.Implies(z3.And(z3.Not(timeout), new_loss),
                           z3.And(cwnd[t] * 2 == cwnd[t - 1], restart_event, ack_mark[t] == acked)),
                *([z3.Implies(z3.And(z3.Not(timeout), z3.Not(new_loss), old_loss),
                              z3.And(cwnd[t] == cwnd[t - 1], keep_marks))] if recovering else []),
                z3.Implies(z3.And(z3.Not(timeout), z3.Not(blocks_growth), window_acked),
                           z3.And(cwnd[t] == cwnd[t - 1] + ctx.alpha, ack_mark[t] == acked,
                                  loss_mark[t] == loss_mark[t - 1])),
                z3.Implies(z3.And(z3.Not(timeout), z3.Not(blocks_growth), z3.Not(window_acked)),
                           z3.And(cwnd[t] == cwnd[t - 1], keep_marks)),
            )
        return {"loss_mark": loss_mark, "ack_mark": ack_mark}

    def check(self, f: FlowValues) -> list[str]:
        problems: list[str] = []
        loss_mark = f.state["loss_mark"]
        gain = f.params["pacing_gain"]
        for t in range(f.T):
            if f.rate is not None and f.rate[t] != gain * f.cwnd[t] / f.R:
                problems.append(f"step {t}: pacing rate {f.rate[t]} != {gain} * cwnd / R")
            if t < f.R:
                if loss_mark[t] > f.L[t]:
                    problems.append(f"step {t}: loss_mark {loss_mark[t]} above L[{t}] = {f.L[t]}")
                continue
            rule, ok = self._rule(f, t)
            if not ok:
                problems.append(f"step {t}: AIMD rule '{rule}' violated (cwnd {f.cwnd[t - 1]} -> {f.cwnd[t]})")
        return problems

    def step_rules(self, f: FlowValues) -> dict[int, list[str]]:
        return {t: [self._rule(f, t)[0]] for t in range(f.R, f.T)}

    @staticmethod
    def _rule(f: FlowValues, t: int) -> tuple[str, bool]:
        """The rule that applies at step ``t`` (t >= R), by the events of the step, and whether
        the trace follows it."""
        loss_mark, ack_mark = f.state["loss_mark"], f.state["ack_mark"]
        acked = f.S[t - f.R]
        fresh_event = f.L[t - 1] <= loss_mark[t] <= f.L[t]
        if f.timeout[t]:
            return "timeout", f.cwnd[t] == f.alpha and fresh_event and ack_mark[t] == acked
        if f.Ld[t] > loss_mark[t - 1]:
            return "new loss", f.cwnd[t] == f.cwnd[t - 1] / 2 and fresh_event and ack_mark[t] == acked
        if f.Ld[t] > f.Ld[t - 1] and f.params["hold_in_recovery"]:
            return "old loss", (f.cwnd[t] == f.cwnd[t - 1] and loss_mark[t] == loss_mark[t - 1]
                                and ack_mark[t] == ack_mark[t - 1])
        if acked - ack_mark[t - 1] >= f.cwnd[t - 1]:
            return "window acked", (f.cwnd[t] == f.cwnd[t - 1] + f.alpha and ack_mark[t] == acked
                                    and loss_mark[t] == loss_mark[t - 1])
        return "hold", (f.cwnd[t] == f.cwnd[t - 1] and loss_mark[t] == loss_mark[t - 1]
                        and ack_mark[t] == ack_mark[t - 1])

    def concrete(self, start: SenderStart) -> ConcreteSender:
        from ccac.senders.aimd import AIMDSender

        return AIMDSender(start)


ALGORITHM = AIMD()
