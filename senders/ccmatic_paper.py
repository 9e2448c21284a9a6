"""Two CCAs synthesised by CCmatic (Agarwal et al., NSDI 2024), written from CCmatic's source
code only (checkout 17d0808; its model is the ccac submodule at 68a0c81): concrete senders for
the conformance harness (:mod:`ccac.senders.interface`).

* :class:`ProbeQdelSender` -- ``probe_qdel`` ("cc_qdel" in the paper's table and README),
  ``ccmatic/solutions/solutions_belief_template_modular.py:722-730``.
* :class:`DrainBqProbeSender` -- ``drain_bq_probe`` ("cc_probe_slow"),
  ``ccmatic/solutions/solutions_belief_template_modular.py:52-60``.

File references below are relative to the CCmatic checkout: ``sol`` =
``ccmatic/solutions/solutions_belief_template_modular.py``, ``main`` =
``ccmatic/main_cca_belief_template_modular.py``, ``ver`` = ``ccmatic/verifier/__init__.py``,
``cbr`` = ``ccmatic/verifier/cbr_delay.py``, ``model`` = ``external/ccac/model.py``.

How the template sends (main:262-280, model:331-355)
-----------------------------------------------------
The CCA sets the pacing rate ``r_f[t] = max(alpha, expr(beliefs[t-1]))`` (main:264-268, the
``solution_parser`` expression; each condition is ``lhs > 0``, generator ``get_value_on_execution``)
and the window ``c_f[t] = A_f[t-1] - S_f[t-1] + 1000 r_f[t]`` (main:279). In the model the
window allows ``S_f[t-R] + Ld_f[t] + c_f[t]`` (model:337), so with R = 1 it is never the
binding limit; the model also sends at least alpha per step (``send_min_alpha``, main:368,
model:343-345), which ``r_f >= alpha`` makes moot. Here: ``Decision(cwnd = fb.sent - fb.acked
+ 1000 rate, rate)``; ``fb.acked`` (S at t - R) stands for CCmatic's S_f[t-1], which is the
newest ACK reading when R = 1; with ``fb.lost`` the window is ``fb.sent + fb.lost + 1000 rate``,
so it never binds either.

Clock mapping (interface, not CCmatic)
--------------------------------------
CCmatic has R = 1: its belief of index s is defined from the model curves at indices <= s
(S_f[s] is the newest ACK reading at s + 1) and the CCA at t reads beliefs[t - 1]
(main:196-206: ``v.X[n][t-1]``, ``bq_belief2[n][t-1]``). Here the sender at step t has ACK
readings for service steps up to s = t - R, so at each decision it computes the beliefs of
index s = t - R and applies the rule to them. Every curve keeps its model index:

* ``S_f[k]`` = the ``fb.acked`` read at step k + R (every reading is kept; ``start.acked``,
  oldest first, are S[-n] .. S[-1]);
* ``A_f[k]`` = ``fb.outcome.sent[k]`` (k <= t - 1);
* ``L_f[k]`` = ``fb.outcome.lost[k]`` (the truly lost bytes, which the interface lets a sender
  read; CCmatic uses L_f where it says the CCA would use sequence numbers, cbr:243-244);
* ``Ld_f[k]`` = the ``fb.lost`` read at step k (``start.values["Ld_f"]`` for step R - 1).
  ``Ld_f`` is cumulative and >= 0, so if the earliest known ``Ld_f`` is 0 every earlier one is 0.

So for R = 1 these are CCmatic's formulas exactly; for R > 1 the beliefs are CCmatic's formulas
on the model's curves, index for index, read R steps late (A_f and Ld_f are then older than the
sender's newest values of them: the literal index mapping, chosen so that a belief of index s is
a function of the model's curves up to s only).

Readings CCmatic's sender cannot have, and what is used instead:
* qdel / first_qdel are computed on the aggregate curves A, L, S (ver:1285-1294,
  cbr:420-428); with one flow they are the flow's own curves, which are used here.
* A window's values before the sender's readings begin (S before ``start.acked``, A and L
  before step 0 of the record, Ld before the first known value) are unknown: a window that
  needs one is not used (the belief keeps its value), and a delay whose byte was sent at or
  before step 0 is only known to be at least its lower end (CCmatic leaves those readings to
  the solver, ver:1274-1276, cbr:402-413).

Parameters (``start.params``): ``jitter`` = CCmatic's D, the jitter the sender assumes
(default ``start.D``); ``memory`` = how many of the most recent windows are kept (default
None = all since the sender's readings began, as CCmatic keeps every window since its trace
began): min_c uses windows (st, s] with s - st <= memory, min_c_lambda uses et with
s - (et - 1) <= memory (the span its under-utilisation test covers). Rate floor alpha =
``start.alpha``. Belief timeouts (``fix_stale__min_c``, ``fix_stale__min_c_lambda``,
``fix_stale__bq_belief``) are False at HEAD's defaults (main:328-329 take the first two from
flags, off unless given; cbr:120-123) and are not implemented.

Start: each belief starts at ``start.value(name, 0)``; until the sender has made at least one
update of every belief its rule reads (min_c, resp. min_c_lambda and bq_belief, from its own
readings), its rate is alpha.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ccac.senders.interface import ConcreteSender, Decision, Feedback, SenderStart, exact

F = Fraction

#: CCmatic's ``minc_lambda_measurement_interval`` (cbr:121, default 1; only MI = 1 is used).
MI = 1

#: CCmatic's window multiplier for the rate-based window (main:279).
CWND_RATE_MULT = 1000


# --------------------------------------------------------------------- three-valued logic
# A reading the sender cannot make is None ("unknown"); a window is used only when its test is
# certainly True (Kleene logic).

def _and(*xs: bool | None) -> bool | None:
    if any(x is False for x in xs):
        return False
    if any(x is None for x in xs):
        return None
    return True


def _or(*xs: bool | None) -> bool | None:
    if any(x is True for x in xs):
        return True
    if any(x is None for x in xs):
        return None
    return False


def _not(x: bool | None) -> bool | None:
    return None if x is None else not x


class _Readings:
    """The sender's record of the model curves, by model index (module doc: clock mapping)."""

    def __init__(self, start: SenderStart) -> None:
        self.R = start.R
        self.S: dict[int, Fraction] = {}
        for i, x in enumerate(start.acked):
            self.S[i - len(start.acked)] = exact(x)
        self.Ld: dict[int, Fraction] = {}
        ld0 = start.value("Ld_f", None)
        if ld0 is not None:
            self.Ld[start.R - 1] = exact(ld0)
        self.sent: list[Fraction] = []
        self.lost: list[Fraction] = []

    def observe(self, fb: Feedback) -> int:
        """Record step ``fb.t``'s readings; return the belief index s = t - R."""
        s = fb.t - fb.R
        self.S[s] = F(fb.acked)
        self.Ld[fb.t] = F(fb.lost)
        self.sent = fb.outcome.sent
        self.lost = fb.outcome.lost
        return s

    def s(self, k: int) -> Fraction | None:
        return self.S.get(k)

    def a(self, k: int) -> Fraction | None:
        """A_f[k] (bytes sent by step k)."""
        return F(self.sent[k]) if 0 <= k < len(self.sent) else None

    def lost_by(self, k: int) -> Fraction | None:
        """L_f[k] (bytes of it truly lost by step k)."""
        return F(self.lost[k]) if 0 <= k < len(self.lost) else None

    def admitted(self, k: int) -> Fraction | None:
        a, lost = self.a(k), self.lost_by(k)
        return None if a is None or lost is None else a - lost

    def ld(self, k: int) -> Fraction | None:
        """Ld_f[k]; below the earliest known index it is 0 if that earliest value is 0."""
        if k in self.Ld:
            return self.Ld[k]
        if not self.Ld or k < 0:
            return None
        k0 = min(self.Ld)
        return F(0) if k < k0 and self.Ld[k0] == 0 else None


class _CcmaticSender(ConcreteSender):
    """What both senders take from their start: the MSS alpha, the jitter D they assume
    (``params["jitter"]``, else the path's), how many windows they keep (``params["memory"]``,
    None = all) and their record of readings."""

    def __init__(self, start: SenderStart) -> None:
        p = {name: v for name, v in start.params.items() if v is not None}
        self.alpha = exact(start.alpha)
        self.D = int(p.get("jitter", start.D))
        memory = p.get("memory")
        self.memory: int | None = None if memory is None else int(memory)
        self.rd = _Readings(start)


# --------------------------------------------------------------------- probe_qdel

class ProbeQdelSender(_CcmaticSender):
    """``probe_qdel`` / cc_qdel (sol:722-730)::

        r_f = max alpha,
        if (+ 1min_qdel > 0):
            + 0.5min_c
        else:
            + 2min_c

    on the beliefs of index s = t - R.

    min_c (ver:824-865 and 921-922, ``update_bandwidth_beliefs_invalidation_and_timeout_
    use_more_vars``, the one ``update_beliefs`` calls, ver:986): for every window (st, s],

        this_lower = (S_f[s] - S_f[st]) / (s - st + D)         (ver:828, 831)
        min_c[s]   = max(min_c[s-1], max over st of this_lower)  (ver:865, 921: no timeout)

    with st from s - 1 down to the oldest reading kept (ver:826: down to 0), at most
    ``memory`` steps back.

    min_qdel (ver:935-942): ``min_qdel[s] = max(0, dt - D)`` where qdel[s][dt] holds:
    dt = the queueing delay, in whole steps, of the newest byte served at s: the first e with
    A[e] - L[e] >= S[s] gives dt = s - e (ver:1286-1290); when S[s] = S[s-1] (no new byte),
    qdel[s] = qdel[s-1] (ver:1293-1294). Here dt = ``fb.delay[0]`` (the model's reading of the
    newest ACKed byte: the same first e) when the ACK reading advanced, else the previous dt
    (CCmatic's carry). An unbounded reading (``fb.delay[1]`` None: the byte was sent at or
    before step 0; CCmatic lets the solver pick any dt >= s, or T - D when none holds) uses its
    lower end ``fb.delay[0]``. max_c, max_qdel, min_buffer are not read by this rule and are not
    kept."""

    def __init__(self, start: SenderStart) -> None:
        super().__init__(start)
        self.min_c = exact(start.value("min_c", 0))
        self.min_qdel = exact(start.value("min_qdel", 0))
        self.qdel: dict[int, int] = {}          # dt of the newest served byte, by service index
        self.ready = False                      # min_c updated from the sender's own readings
        self.rate = self.alpha

    # belief updates (index s)
    def _update_min_c(self, s: int) -> None:
        S_s = self.rd.s(s)
        assert S_s is not None   # observed just now (_Readings.observe)
        lows = []
        st = s - 1
        while (S_st := self.rd.s(st)) is not None and (self.memory is None or s - st <= self.memory):
            window = s - st
            lows.append((S_s - S_st) / (window + self.D))               # ver:828, 831
            st -= 1
        if lows:
            self.min_c = max([self.min_c] + lows)                       # ver:865, 921
            self.ready = True

    def _update_min_qdel(self, s: int, fb: Feedback) -> None:
        prev = self.rd.s(s - 1)
        if prev is not None and self.rd.s(s) == prev and (s - 1) in self.qdel:
            dt = self.qdel[s - 1]                                       # ver:1293-1294
        else:
            dt = int(fb.delay[0])                                       # ver:1286-1290
        self.qdel[s] = dt
        self.min_qdel = F(max(0, dt - self.D))                          # ver:939

    def decide(self, fb: Feedback) -> Decision:
        s = self.rd.observe(fb)
        self._update_min_c(s)
        self._update_min_qdel(s, fb)
        if not self.ready:
            rate = self.alpha
        elif self.min_qdel > 0:                                         # sol:725
            rate = max(self.alpha, F(1, 2) * self.min_c)                # sol:724, 726
        else:
            rate = max(self.alpha, 2 * self.min_c)                      # sol:724, 728
        self.rate = rate
        return Decision(F(fb.sent) - F(fb.acked) + CWND_RATE_MULT * rate, rate)   # main:279

    def state(self) -> dict[str, Any]:
        return {"min_c": self.min_c, "min_qdel": self.min_qdel}


# --------------------------------------------------------------------- drain_bq_probe

class DrainBqProbeSender(_CcmaticSender):
    """``drain_bq_probe`` / cc_probe_slow (sol:52-60)::

        r_f = max alpha,
        if (+ 1bq_belief + -1alpha > 0):
            + 1min_c_lambda + -1bq_belief
        else:
            + 3min_c_lambda + 1alpha

    on the beliefs of index s = t - R, bq_belief being ``bq_belief2`` (main:202-204).

    first_qdel (cbr:420-428): the queueing delay, in whole steps, of the FIRST byte served in
    (k-1, k]: when S[k] != S[k-1], dt = k - e for the first e with A[e] - L[e] > S[k-1]
    (defined only for e >= 1, i.e. dt <= k - 1; e = 0 means only "dt >= k", the solver's
    choice in CCmatic, cbr:402-413); when S[k] = S[k-1], first_qdel[k] = first_qdel[k-1]
    (cbr:425-428). Computed here from the sender's own record (A = ``outcome.sent``, L =
    ``outcome.lost``, S = its ACK readings).

    min_c_lambda (cbr:197-386, no timeout): for s >= 1, with D = ``jitter``,

        high_delay(k)   = first_qdel[k] >= D + 2                  (cbr:208-209: no dt <= D+1)
        loss(st)        = Ld_f[st+1] > Ld_f[st]   (L_f if D = 0)   (cbr:210-213)
        utilized(st)    = (high_delay(st+1) and A_f[st+1] > A_f[st] and S_f[st+1] > S_f[st])
                          or loss(st)                              (cbr:214-218)
        under_cum(st)   = not utilized(st') for every st' in [st, s-1]   (cbr:219-230)
        for et in s .. 1:                                          (cbr:239)
            correct_et  = A_f[et] - L_f[et] <= S_f[s]              (cbr:249-250)
            lower       = (A_f[et] - A_f[et-1]) / (1 + D + 1)      (cbr:252, 261-262)
            if correct_et and under_cum(et-1): candidate lower     (cbr:269-271)
        min_c_lambda[s] = max(min_c_lambda[s-1], candidates)       (cbr:232-233, 272, 385-386)

    with et at most ``memory`` steps back: s - (et - 1) <= memory. Unknown readings make a test
    unknown, and only a test that is certainly true admits a candidate (module doc).

    bq beliefs (cbr:127-160):

        bq_belief1[s] = A_f[s] - Ld_f[s] - S_f[s]                                (cbr:133-134)
        bq_belief2[s] = min(bq_belief1[s],
                            max(0, bq_belief2[s-1] + (A_f[s] - A_f[s-1]) - min_c_lambda[s]))
                                                                             (cbr:143-160)

    (the NEW min_c_lambda[s] is the delivery rate, cbr:143).
    """

    def __init__(self, start: SenderStart) -> None:
        super().__init__(start)
        self.min_c_lambda = exact(start.value("min_c_lambda", 0))
        self.bq_belief = exact(start.value("bq_belief", 0))
        self.bq_belief1: Fraction | None = None
        # first_qdel by service index: (lower end in steps, exact?) or None (unknown)
        self.first_qdel: dict[int, tuple[int, bool] | None] = {}
        self.ready_mcl = False
        self.ready_bq = False
        self.rate = self.alpha

    # first_qdel (cbr:420-428)
    def _first_qdel(self, k: int) -> tuple[int, bool] | None:
        if k in self.first_qdel:
            return self.first_qdel[k]
        rd = self.rd
        S_k, S_p = rd.s(k), rd.s(k - 1)
        value: tuple[int, bool] | None = None
        if S_k is not None and S_p is not None:
            if S_k != S_p:
                e = 0
                while True:
                    adm = rd.admitted(e)
                    if adm is None or e > k:
                        e = -1
                        break
                    if adm > S_p:
                        break
                    e += 1
                if e >= 1:
                    value = (k - e, True)             # A[e]-L[e] > S[k-1] >= A[e-1]-L[e-1]
                elif e == 0:
                    value = (k, False)                # sent at or before step 0: dt >= k
            else:
                value = self._first_qdel(k - 1) if (k - 1) in self.first_qdel else None
        self.first_qdel[k] = value
        return value

    def _high_delay(self, k: int) -> bool | None:
        q = self._first_qdel(k)
        if q is None:
            return None
        dt, exact_ = q
        if dt >= self.D + 2:
            return True
        return False if exact_ else None

    def _loss(self, st: int) -> bool | None:
        rd = self.rd
        if self.D == 0:                                   # cbr:211-213 (loss oracle)
            x, y = rd.lost_by(st), rd.lost_by(st + 1)
        else:                                             # cbr:210
            x, y = rd.ld(st), rd.ld(st + 1)
        return None if x is None or y is None else y > x

    def _gt(self, x: Fraction | None, y: Fraction | None) -> bool | None:
        return None if x is None or y is None else x > y

    def _utilized(self, st: int) -> bool | None:
        rd = self.rd
        return _or(_and(self._high_delay(st + 1),
                        self._gt(rd.a(st + 1), rd.a(st)),        # sent_new_pkts, cbr:215
                        self._gt(rd.s(st + 1), rd.s(st))),       # recvd_new_pkts, cbr:214
                   self._loss(st))                               # cbr:216-218

    def _update_min_c_lambda(self, s: int) -> None:
        rd = self.rd
        if s < 1 or rd.s(s) is None or rd.s(s - 1) is None:
            return
        self.ready_mcl = True
        # record first_qdel for every index up to s, in order (its carry reads k - 1)
        k = min(rd.S) + 1
        while k <= s:
            self._first_qdel(k)
            k += 1
        S_s = rd.s(s)
        assert S_s is not None   # checked above
        best = self.min_c_lambda
        under: bool | None = True                         # under_cum over [et-1, s-1]
        for et in range(s, 0, -1):                        # cbr:239
            st = et - MI
            if self.memory is not None and s - st > self.memory:
                break
            if st < 0:
                break
            under = _and(under, _not(self._utilized(st)))             # cbr:219-230
            adm_et = rd.admitted(et)
            correct = None if adm_et is None else adm_et <= S_s        # cbr:249-250
            a_et, a_st = rd.a(et), rd.a(st)
            if _and(correct, under) is True and a_et is not None and a_st is not None:
                lower = (a_et - a_st) / (MI + self.D + 1)             # cbr:261-262
                best = max(best, lower)                               # cbr:269-272
            if under is not True:                   # it can no longer become True
                break
        self.min_c_lambda = best                                      # cbr:385-386

    def _update_bq(self, s: int) -> None:
        rd = self.rd
        a_s, a_p, ld_s, S_s = rd.a(s), rd.a(s - 1), rd.ld(s), rd.s(s)
        if a_s is None or a_p is None or ld_s is None or S_s is None:
            return
        bq1 = a_s - ld_s - S_s                                         # cbr:133-134
        self.bq_belief1 = bq1
        sent = a_s - a_p                                               # cbr:151
        delivered = self.min_c_lambda * 1                              # cbr:143, 152
        bq2 = max(F(0), self.bq_belief + sent - delivered)             # cbr:153
        self.bq_belief = min(bq1, bq2)                                 # cbr:160
        self.ready_bq = True

    def decide(self, fb: Feedback) -> Decision:
        s = self.rd.observe(fb)
        self._update_min_c_lambda(s)
        self._update_bq(s)
        a, mcl, bq = self.alpha, self.min_c_lambda, self.bq_belief
        if not (self.ready_mcl and self.ready_bq):
            rate = a
        elif bq - a > 0:                                               # sol:55
            rate = max(a, mcl - bq)                                    # sol:54, 56
        else:
            rate = max(a, 3 * mcl + a)                                 # sol:54, 58
        self.rate = rate
        return Decision(F(fb.sent) - F(fb.acked) + CWND_RATE_MULT * rate, rate)   # main:279

    def state(self) -> dict[str, Any]:
        return {"min_c_lambda": self.min_c_lambda, "bq_belief": self.bq_belief}
