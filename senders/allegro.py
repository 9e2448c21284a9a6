"""PCC Allegro (Dong et al., NSDI 2015, "PCC: Re-architecting Congestion Control") as a concrete
sender.

The algorithm (section numbers of the NSDI 2015 paper):

* Utility of a monitor interval (MI) [2.2]: ``u = T Sigmoid(L - loss_cap) - x L`` with x the
  MI's sending rate in Mbps (bytes sent over its length), L its loss rate, ``T = x (1 - L)``
  and ``Sigmoid(y) = 1 / (1 + e^(alpha y))``.
* MIs [3]: the sender sends at one rate per MI; each MI's length is random ("1.7 RTTs with
  0.5 RTT uniform-random variance": ``m_lo`` .. ``m_hi`` steps).
* Starting state [3]: one MI at r; once its utility is known, if it is lower than the previous
  MI's the rate halves ("the previous rate") and decision making starts with eps = eps_min,
  otherwise the rate doubles.
* Decision making [3]: four MIs, two pairs each of r(1+eps) and r(1-eps) in a random order.
  Both pairs favour the higher rate: r(1+eps), direction +1, rate adjusting; both the lower:
  r(1-eps), direction -1; otherwise the rate stays and eps grows by eps_min up to eps_max.
* Rate adjusting [3, eq. 1]: one MI at r_0 (the decision's rate), then r_n = r_(n-1) (1 + n
  eps_min dir) per MI while the utility does not drop; when U(r_n) < U(r_(n-1)) the rate
  returns to r_(n-1) and decision making resumes.
* Each experiment's rule is applied once the fate of every byte of its last MI is known (ACKed
  or detected lost); the sender keeps its rate meanwhile. The MI timeout of Vivace 4.3 (not in
  this paper; the encoding allows it): once that fate has been unknown for ``timeout_steps``
  the rate halves and decision making restarts at eps_min.

Open choices taken:

* Utilities count the bytes the record shows sent and lost at the MI's steps; an MI that sent
  nothing has utility 0. Ties are strict as written (leave the starting state, revert, or move
  only on a strict comparison). The first rate-adjusting MI runs at r_0 itself.
* Chance and open readings go through ``choose`` (:data:`ccac.senders.pcc.Choose`):
  ``"MI length"`` (alternative i: m_lo + i steps), ``"probe order"`` (0: r(1+eps) first),
  ``"MI timeout"`` (0: fire, 1: keep waiting) and ``"eps on re-entry"`` when decision making
  resumes from rate adjusting (0: keep eps, k >= 1: the k-th level; the paper only says the
  first entry starts at eps_min). The default takes alternative 0 everywhere: the shortest
  MIs, the faster probe first, the timer fires as soon as it may, eps kept.
* Taking over a run at step R (:class:`ccac.senders.interface.SenderStart`): the encoding's state names
  ``base``, ``mode``, ``phase``, ``pos``, ``mlen``, ``order``, ``eps``, ``dir``, ``adj_n``,
  ``u_prev``, ``prev_base`` seed the state at step R - 1; without them the sender is in the
  starting state, its first MI began with the run (step 0) at the flow's rate (else C), and
  there is no previous utility (the first comparison never finds a drop). The experiment's
  earlier MIs are taken to have had the current MI's length; an MI's bytes at steps up to 0
  (before the record's first difference) count at its rate, without loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

from ccac.senders.interface import ConcreteSender, Decision, Feedback, SenderStart
from ccac.senders.pcc import DIGITS, Choose, first_alternative

START, DECIDE, ADJUST = 0, 1, 2
WAIT = 4          # the phase while waiting for the fate of the experiment's last MI


def sigmoid(y: Fraction, alpha: Fraction) -> Fraction:
    """1 / (1 + e^(alpha y)) to DIGITS significant digits."""
    with localcontext() as ctx:
        ctx.prec = DIGITS + 10
        value = 1 / (1 + (Decimal(alpha.numerator) * Decimal(y.numerator)
                          / (Decimal(alpha.denominator) * Decimal(y.denominator))).exp())
        ctx.prec = DIGITS
        return Fraction(+value)


@dataclass(frozen=True)
class AllegroConfig:
    """Allegro's parameters; MI lengths and the timeout in steps."""

    m_lo: int
    m_hi: int
    timeout_steps: int
    alpha: Fraction = Fraction(100)
    loss_cap: Fraction = Fraction(1, 20)
    eps_min: Fraction = Fraction(1, 100)
    eps_max: Fraction = Fraction(1, 20)
    link_mbps: Fraction = Fraction(100)     # the Mbps value of the link rate C
    adjust_cap: int = 8                     # the encoding tracks n up to this: state() caps it


@dataclass
class MonitorInterval:
    first: int          # its first step
    length: int         # steps
    rate: Fraction      # bytes per step

    @property
    def last(self) -> int:
        return self.first + self.length - 1


class AllegroSender(ConcreteSender):
    """One flow of PCC Allegro (module docstring)."""

    def __init__(self, cfg: AllegroConfig, start: SenderStart, choose: Choose | None = None) -> None:
        self.cfg = cfg
        self.choose = choose or first_alternative
        self.scale = cfg.link_mbps / start.C                       # Mbps per byte/step
        steps = math.ceil(cfg.eps_max / cfg.eps_min)
        self.levels = [min(k * cfg.eps_min, cfg.eps_max) for k in range(1, steps + 1)]
        self.base = Fraction(start.value("base", start.value("rate", start.C)))
        self.mode = int(start.value("mode", START))
        self.mlen = int(start.value("mlen", cfg.m_lo))
        taken_over = start.R - 1      # the step whose state the sender takes over
        if taken_over < self.mlen:    # by default the first MI began at step 0
            phase, pos = 0, taken_over
        else:
            phase, pos = WAIT, min(taken_over - self.mlen + 1, cfg.timeout_steps)
        self.phase = int(start.value("phase", phase))
        self.pos = int(start.value("pos", pos))
        bits = int(start.value("order", 3))
        self.order = [bool(bits & 1), bool(bits & 2)]
        eps = start.value("eps", None)
        self.level = self.levels.index(eps) if eps in self.levels else 0
        self.dir = int(start.value("dir", 1))
        self.n = int(start.value("adj_n", 0))
        u_prev = start.value("u_prev", None)
        self.u_prev: Fraction | None = None if u_prev is None else Fraction(u_prev)
        self.prev_base = Fraction(start.value("prev_base", self.base))
        self.mis = self._experiment_so_far(taken_over)
        self.utilities: dict[int, Fraction] = {}   # by the step an MI ended (encoding: util)
        self.event = 0

    def _experiment_so_far(self, now: int) -> list[MonitorInterval]:
        """The MIs of the experiment running at step ``now``, all of the current MI's length."""
        if self.phase < WAIT:
            begin, count = now - self.pos - self.phase * self.mlen, self.phase + 1
        else:
            count = 4 if self.mode == DECIDE else 1
            begin = now - self.pos - count * self.mlen + 1
        return [MonitorInterval(begin + i * self.mlen, self.mlen, self._rate(i)) for i in range(count)]

    def _rate(self, phase: int) -> Fraction:
        """The sending rate of MI ``phase`` (and while waiting: the base rate)."""
        if self.mode != DECIDE or phase == WAIT:
            return self.base
        eps = self.levels[self.level]
        high = self.order[phase // 2] == (phase % 2 == 0)
        return self.base * (1 + eps if high else 1 - eps)

    # ------------------------------------------------------------------ one step
    def decide(self, fb: Feedback) -> Decision:
        cfg = self.cfg
        for mi in self.mis:   # MIs that ended by t - 1: their bytes sent and lost are recorded
            if mi.last < fb.t and mi.last not in self.utilities:
                self.utilities[mi.last] = self._utility(mi, fb)
        self.event = 0
        last = 3 if self.mode == DECIDE else 0
        if self.phase < WAIT and self.pos < self.mlen - 1:
            self.pos += 1
        elif self.phase < last:
            self.phase, self.pos = self.phase + 1, 0
            self.mlen = cfg.m_lo + self.choose("MI length", cfg.m_hi - cfg.m_lo + 1)
            self.mis.append(MonitorInterval(fb.t, self.mlen, self._rate(self.phase)))
        else:
            waited = self.pos + 1 if self.phase == WAIT else 1
            end = max(self.mis[-1].last, 0)   # the experiment's last step (before the run: 0)
            admitted = fb.outcome.sent[end] - fb.outcome.lost[end]
            if fb.acked >= admitted and fb.lost >= fb.outcome.lost[end]:
                self.event = 1
                self._apply_rule([self.utilities[mi.last] for mi in self.mis])
                self._new_experiment(fb.t)
            elif waited >= cfg.timeout_steps and self.choose("MI timeout", 2) == 0:
                self.event = 2
                self.base, self.mode, self.level = self.base / 2, DECIDE, 0
                self._new_experiment(fb.t)
            else:
                self.phase, self.pos = WAIT, min(waited, cfg.timeout_steps)
        rate = self._rate(self.phase)
        return Decision(fb.inflight + rate, rate)   # the window never binds: paced only

    def adopt(self, decision: Decision) -> None:
        """The transport sent ``decision.rate``: the base rate becomes the one whose probe (or
        current) rate it is."""
        if decision.rate is not None:
            self.base *= decision.rate / self._rate(self.phase)

    def _utility(self, mi: MonitorInterval, fb: Feedback) -> Fraction:
        """u = x (1 - L) Sigmoid(L - loss_cap) - x L over the MI's bytes (module docstring)."""
        record = fb.outcome
        sent = sum((record.sent[s] - record.sent[s - 1] if s >= 1 else mi.rate
                    for s in range(mi.first, mi.last + 1)), Fraction(0))
        lost = sum((record.lost[s] - record.lost[s - 1] for s in range(max(mi.first, 1), mi.last + 1)),
                   Fraction(0))
        if sent == 0:
            return Fraction(0)
        x, loss = self.scale * sent / mi.length, lost / sent
        return x * (1 - loss) * sigmoid(loss - self.cfg.loss_cap, self.cfg.alpha) - x * loss

    def _apply_rule(self, u: list[Fraction]) -> None:
        """The rule of the current state, given the utilities of the experiment's MIs."""
        if self.mode == START:
            if self.u_prev is not None and u[0] < self.u_prev:
                self.base, self.mode, self.level = self.base / 2, DECIDE, 0
            else:
                self.u_prev, self.prev_base = u[0], self.base
                self.base *= 2
        elif self.mode == DECIDE:
            pairs = [(u[2 * k], u[2 * k + 1]) if self.order[k] else (u[2 * k + 1], u[2 * k]) for k in range(2)]
            eps = self.levels[self.level]
            if all(plus > minus for plus, minus in pairs):
                self.base, self.dir, self.mode, self.n = self.base * (1 + eps), 1, ADJUST, 0
            elif all(minus > plus for plus, minus in pairs):
                self.base, self.dir, self.mode, self.n = self.base * (1 - eps), -1, ADJUST, 0
            else:
                self.level = min(self.level + 1, len(self.levels) - 1)
        elif self.n > 0 and self.u_prev is not None and u[0] < self.u_prev:
            self.base, self.mode = self.prev_base, DECIDE
            chosen = self.choose("eps on re-entry", len(self.levels) + 1)
            self.level = self.level if chosen == 0 else chosen - 1
        else:
            self.u_prev, self.prev_base = u[0], self.base
            self.n += 1
            self.base *= 1 + self.n * self.cfg.eps_min * self.dir

    def _new_experiment(self, t: int) -> None:
        self.phase, self.pos = 0, 0
        self.mlen = self.cfg.m_lo + self.choose("MI length", self.cfg.m_hi - self.cfg.m_lo + 1)
        self.order = [self.choose("probe order", 2) == 0 for _ in range(2)]
        self.mis = [MonitorInterval(t, self.mlen, self._rate(0))]

    # ------------------------------------------------------------------ reporting
    def state(self) -> dict[str, Fraction | int]:
        out: dict[str, Fraction | int] = {
            "base": self.base, "mode": self.mode, "phase": self.phase, "pos": self.pos, "mlen": self.mlen,
            "order": int(self.order[0]) + 2 * int(self.order[1]), "eps": self.levels[self.level],
            "dir": self.dir, "adj_n": min(self.n, self.cfg.adjust_cap), "event": self.event,
            "prev_base": self.prev_base}
        if self.u_prev is not None:
            out["u_prev"] = self.u_prev
        return out

    def measurements(self) -> dict[str, dict[int, Fraction]]:
        """State the sender learns only after its step: the utility of each MI that ended at a
        step s >= 0 (the encoding's ``util[s]``), known from step s + 1 on."""
        return {"util": {s: u for s, u in self.utilities.items() if s >= 0}}
