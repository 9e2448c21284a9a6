"""PCC Vivace's online-learning rate control and PCC Proteus' variant of it, as a concrete sender.

The algorithm (Vivace: Dong et al., NSDI 2018; Proteus: Meng et al., SIGCOMM 2020):

* Monitor intervals (MIs) of ``M`` steps (one min RTT, Vivace table 1). A *round* probes
  ``pairs`` pairs of MIs, one at ``r(1+eps)`` and one at ``r(1-eps)`` around the base rate r,
  each pair in a random order (Vivace 4.2; Proteus 5: three pairs). After the round the sender
  sends at r until the fate of every byte of the round is known (Proteus 3: the utility of an
  MI exists "when all packets sent in that MI are acknowledged or lost").
* Utility of an MI at x Mbps with loss rate L, RTT gradient dRTT/dt and RTT deviation sigma:
  Vivace 3 ``x^t - b x dRTT/dt - c x L`` (loss mode: b = 0; gradients below ``flt`` count as 0,
  4.3); Proteus-P 4.1 the same with negative gradients ignored; Proteus-S 4.3 minus
  ``d x sigma``; Proteus-H 4.4 P's below a rate threshold, S's at or above it. The gradient is
  the least-squares slope of the MI's RTT samples against their send steps (Vivace 4.3), sigma
  their population standard deviation (Proteus 4.2). Proteus 5's regression-error tolerance:
  if |gradient| < RMS regression residual / M, gradient and deviation count as 0.
* Decision (Vivace 4.2): per pair ``gamma = (u(r(1+eps)) - u(r(1-eps))) / (2 eps x)``; one pair:
  move by ``m(tau) theta0 gamma`` (confidence amplifier m, tau same-direction decisions in a
  row, reset on a reversal), capped at ``omega r`` with the dynamic change boundary ``omega =
  omega0 + k delta`` (k + 1 after a capped move; otherwise the smallest k whose boundary holds
  the move; 0 on a reversal). Several pairs (Proteus 5): the majority direction, moved by the
  mean gradient of the pairs in the majority.
* Double check (Vivace 4.3, one pair only): when the faster probe saw the smaller loss rate the
  pair is run again; the same sign twice: the average gradient is used, else the second.
* MI timeout (Vivace 4.3): once the fate of the round's last MI has been unknown for
  ``timeout_steps`` after it ended, the rate halves and a new round starts.

Open choices taken (each documented where the paper is silent):

* m(tau) = max(1, tau) for tau <= 3, 2 tau - 3 above (table 1 gives m(0) = 0, the text m(0) = 1);
  "Delta_r > omega" read as |Delta_r| > omega r; a move to a rate <= 0 halves the rate instead
  (the paper has no floor); a zero gradient keeps the last direction.
* The sender sends at r while it waits (the public code's choice). Every MI has exactly M steps
  and the loss rate counts the bytes its pace sends (r(1 +- eps) per step), since the sender
  is always backlogged.
* RTT samples are per packet, as the papers measure them: each ACK gives the RTT of its
  packet (``Feedback.acks``) less the minimum R (the propagation delay cancels in every slope
  and deviation), against the packet's send time. An MI's samples are those of its packets that
  were ACKed (lost ones give none); with fewer than two the gradient and the deviation are 0
  (the public code's rule). The gradient is their least-squares slope against the send times,
  the deviation their population standard deviation, the regression error the RMS of the
  fit's residuals over the MI's length in steps. This sender keeps every sample (no per-ACK
  filter: a run without it is one the filter leaves alone). On the conformance harness the
  samples are exact real times; on the packet path, whole steps.
* Proteus 5's trending tolerance is not computed: its condition compares the regression over
  the last six MIs with exponentially weighted averages reaching back before the run, so
  whether it fires for an MI is a choice.
* Chance and open choices go through ``choose`` (:data:`Choose`): the probe order, the trending
  tolerance, and whether the MI timer fires once it may. The default takes alternative 0
  everywhere: the faster probe first, never trending, the timer fires as soon as it may.
* Taking over a run at step R (:class:`ccac.senders.interface.SenderStart`): the encoding's state names
  ``base``, ``phase``, ``pos``, ``order``, ``tau``, ``omega_k``, ``dir``, ``rerun`` seed the
  state at step R - 1; without them the first round began with the run (step 0) at the flow's
  rate (else C). Bytes of a round sent before step 0 count as not lost; the first run of a
  double check from before the start is unknown (the second run's gradient is used).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

from ccac.senders.interface import Choose, ConcreteSender, Decision, Feedback, SenderStart

DIGITS = 50

# PCC's choice points (:data:`~ccac.senders.interface.Choose`): ``"probe order"`` (0: r(1+eps)
# first), ``"trending"`` (0: not trending, 1: the gradient counts as 0, 2: gradient and deviation
# count as 0), ``"MI timeout"`` (0: fire, 1: keep waiting).


def first_alternative(what: str, n: int) -> int:
    """The default :data:`Choose`: alternative 0 of every choice."""
    return 0


# ====================================================================== exact numerics
def _decimal(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


def power(x: Fraction, p: Fraction) -> Fraction:
    """x**p for x > 0: exact for integer p, else to DIGITS significant digits."""
    if p.denominator == 1:
        return x ** p.numerator
    with localcontext() as ctx:
        ctx.prec = DIGITS + 10
        value = (_decimal(p) * _decimal(x).ln()).exp()
        ctx.prec = DIGITS
        return Fraction(+value)


def sqrt_fraction(v: Fraction) -> Fraction:
    """The square root of v >= 0 to DIGITS significant digits, rounded down (never above the
    true value: a deviation of two samples is then at most half their distance, exactly)."""
    with localcontext() as ctx:
        ctx.prec = DIGITS
        root = Fraction(_decimal(v).sqrt())   # correctly rounded, possibly up
    while root * root > v:
        root -= root / 10 ** (DIGITS - 1)
    return root


def amplifier(tau: int) -> Fraction:
    """Vivace's confidence amplifier m(tau) (module docstring)."""
    return Fraction(max(1, tau)) if tau <= 3 else Fraction(2 * tau - 3)


# ====================================================================== the controller
@dataclass(frozen=True)
class GradientConfig:
    """One member of the family: Vivace (one pair, double check) or a Proteus mode (three pairs,
    positive gradients, tolerances). Rates in bytes per step, like the model's."""

    M: int                                  # MI length in steps
    timeout_steps: int                      # MI timeout, in steps after the round's last MI
    pairs: int = 1
    t: Fraction = Fraction(9, 10)
    b: Fraction = Fraction(900)
    c: Fraction = Fraction(1135, 100)
    eps: Fraction = Fraction(1, 20)
    theta0: Fraction = Fraction(1)
    omega0: Fraction = Fraction(1, 20)
    delta: Fraction = Fraction(1, 10)
    flt: Fraction = Fraction(1, 100)
    link_mbps: Fraction = Fraction(100)     # the Mbps value of the link rate C
    step_seconds: Fraction = Fraction(15, 1000)
    double_check: bool = True               # Vivace 4.3 (one pair only)
    positive_only: bool = False             # Proteus: negative RTT gradients ignored
    d: Fraction = Fraction(0)               # RTT-deviation coefficient per second (Proteus-S/H)
    threshold: Fraction | None = None       # Proteus-H: rates >= threshold use the deviation
    regression_tolerance: bool = False      # Proteus 5
    trending: bool = False                  # Proteus 5's trending tolerance exists (``choose``)
    tau_cap: int = 6                        # the encoding tracks tau and k up to these caps:
    k_cap: int = 6                          # state() reports them capped


class GradientSender(ConcreteSender):
    """One flow of PCC Vivace or Proteus (module docstring). A round's MIs are contiguous, so
    the sender keeps the round's first step; it reads the MIs' measurements from the run's
    record once the round's fate is known."""

    def __init__(self, cfg: GradientConfig, start: SenderStart, choose: Choose | None = None) -> None:
        self.cfg = cfg
        self.choose = choose or first_alternative
        self.W = 2 * cfg.pairs                       # probe MIs per round; phase W = waiting
        self.scale = cfg.link_mbps / start.C         # Mbps per byte/step
        self.base = Fraction(start.value("base", start.value("rate", start.C)))
        taken_over = start.R - 1                     # the step whose state the sender takes over
        if taken_over < self.W * cfg.M:              # by default the first round began at step 0
            phase, pos, waited = *divmod(taken_over, cfg.M), 0
        else:
            waited = taken_over - self.W * cfg.M + 1
            phase, pos, waited = self.W, (waited - 1) % cfg.M, min(waited, cfg.timeout_steps)
        self.phase = int(start.value("phase", phase))
        self.pos = int(start.value("pos", pos))
        self.waited = int(start.value("waited", waited)) if self.phase == self.W else 0
        bits = int(start.value("order", 2 ** cfg.pairs - 1))
        self.order = [bool(bits >> k & 1) for k in range(cfg.pairs)]
        self.tau = int(start.value("tau", 0))
        self.k = int(start.value("omega_k", 0))
        self.dir = int(start.value("dir", 1))
        self.rerun = int(start.value("rerun", 0))
        self.gamma_first: Fraction | None = None
        if self.phase < self.W:
            self.round_start = taken_over - self.phase * cfg.M - self.pos
        else:
            self.round_start = taken_over - self.waited - self.W * cfg.M + 1
        self.packets: list[tuple[Fraction, Fraction]] = []  # ACKed packets: send time, RTT sample less R
        self.signals: dict[int, tuple[Fraction, Fraction]] = {}  # an MI's end step: its gradient, deviation
        self.event = 0
        self.du = [Fraction(0)] * cfg.pairs
        self.gammas = [Fraction(0)] * cfg.pairs
        self.used = Fraction(0)

    # ------------------------------------------------------------------ one step
    def decide(self, fb: Feedback) -> Decision:
        cfg, W, M = self.cfg, self.W, self.cfg.M
        self._take_sample(fb)
        self.event, self.used = 0, Fraction(0)
        self.du, self.gammas = [Fraction(0)] * cfg.pairs, [Fraction(0)] * cfg.pairs
        ready = self.phase == W or (self.phase == W - 1 and self.pos == M - 1)
        if not ready:
            self.phase, self.pos = (self.phase, self.pos + 1) if self.pos < M - 1 else (self.phase + 1, 0)
        else:
            waited = self.waited + 1 if self.phase == W else 1
            end = max(self.round_start + W * M - 1, 0)   # the round's last step (before the run: 0)
            admitted = fb.outcome.sent[end] - fb.outcome.lost[end]
            if fb.acked >= admitted and fb.lost >= fb.outcome.lost[end]:
                self._rate_decision(fb)
            elif waited >= cfg.timeout_steps and self.choose("MI timeout", 2) == 0:
                self.event, self.base, self.rerun = 3, self.base / 2, 0
                self._new_round(fb.t)
            else:  # wait in MIs of M steps (at the base rate), deciding as soon as the fate is known
                self.pos = (self.pos + 1) % M if self.phase == W else 0
                self.phase, self.waited = W, min(waited, cfg.timeout_steps)
        rate = self.base * self._factor(self.phase) if self.phase < W else self.base
        return Decision(fb.inflight + rate, rate)   # the window never binds: paced only

    def adopt(self, decision: Decision) -> None:
        """The transport sent ``decision.rate``: the base rate becomes the one whose probe (or
        waiting) rate it is."""
        if decision.rate is not None:
            sent = self.base * self._factor(self.phase) if self.phase < self.W else self.base
            self.base *= decision.rate / sent

    def _take_sample(self, fb: Feedback) -> None:
        """Take in the ACKs that arrived: each packet's send time and RTT sample less R."""
        self.packets += [(a.sent_at, a.acked_at - a.sent_at - fb.R) for a in fb.acks]

    def _factor(self, phase: int) -> Fraction:
        """The probe factor of MI ``phase``: pair phase // 2, first or second of the pair."""
        high = self.order[phase // 2] == (phase % 2 == 0)
        return 1 + self.cfg.eps if high else 1 - self.cfg.eps

    def _new_round(self, t: int) -> None:
        self.phase, self.pos, self.waited, self.round_start = 0, 0, 0, t
        self.order = [self.choose("probe order", 2) == 0 for _ in range(self.cfg.pairs)]

    # ------------------------------------------------------------------ measurements and utilities
    def _signals(self, first: int, last: int) -> tuple[Fraction, Fraction]:
        """(effective RTT gradient, RTT deviation in steps) of the MI of steps first..last,
        from its packets' samples (module docstring)."""
        cfg, M = self.cfg, last - first + 1
        points = [(x, y) for x, y in self.packets if first - 1 < x <= last]
        n = len(points)
        xs, ys = [x for x, _ in points], [y for _, y in points]
        if n < 2 or min(xs) == max(xs):
            g, deviation, zero_g = Fraction(0), Fraction(0), False
        else:
            mx, my = sum(xs, Fraction(0)) / n, sum(ys, Fraction(0)) / n
            g = (sum(((x - mx) * (y - my) for x, y in points), Fraction(0))
                 / sum(((x - mx) ** 2 for x in xs), Fraction(0)))
            deviation = sqrt_fraction(sum(((y - my) ** 2 for y in ys), Fraction(0)) / n)
            residual_sq = sum(((y - my - g * (x - mx)) ** 2 for x, y in points), Fraction(0)) / n
            zero_g = cfg.regression_tolerance and g * g * M * M < residual_sq   # |g| < RMS residual / M
        zero_s = zero_g
        if cfg.trending:
            trend = self.choose("trending", 3)
            zero_g, zero_s = zero_g or trend >= 1, zero_s or trend == 2
        gradient = Fraction(0) if zero_g or abs(g) < cfg.flt else g
        if cfg.positive_only:
            gradient = max(gradient, Fraction(0))
        return gradient, Fraction(0) if zero_s else deviation

    def _utility(self, factor: Fraction, signals: tuple[Fraction, Fraction], lost: Fraction) -> Fraction:
        """The utility of a probe MI at ``base * factor`` with effective RTT gradient and
        deviation ``signals`` that lost ``lost`` bytes."""
        cfg = self.cfg
        rate = self.base * factor
        x = self.scale * rate
        gradient, deviation = signals
        loss_rate = lost / (rate * cfg.M)
        u = power(x, cfg.t) - cfg.b * x * gradient - cfg.c * x * loss_rate
        if cfg.d > 0 and (cfg.threshold is None or rate >= cfg.threshold):
            u -= cfg.d * x * deviation * cfg.step_seconds
        return u

    def _rate_decision(self, fb: Feedback) -> None:
        """The round's fate is known: its utilities, then a double check or a rate move."""
        cfg, M, eps = self.cfg, self.cfg.M, self.cfg.eps
        x = self.scale * self.base
        firsts = [self.round_start + i * M for i in range(self.W)]
        signals = [self._signals(s, s + M - 1) for s in firsts]
        self.signals.update({s + M - 1: sig for s, sig in zip(firsts, signals) if s >= 0})
        lost = [self._lost_by(s + M - 1, fb) - self._lost_by(s - 1, fb) for s in firsts]
        for k in range(cfg.pairs):
            hi, lo = (2 * k, 2 * k + 1) if self.order[k] else (2 * k + 1, 2 * k)
            self.du[k] = self._utility(1 + eps, signals[hi], lost[hi]) - self._utility(1 - eps, signals[lo], lost[lo])
            self.gammas[k] = self.du[k] / (2 * eps * x)
        if cfg.pairs == 1:
            hi, lo = (0, 1) if self.order[0] else (1, 0)
            faster_lost_less = lost[hi] * (1 - eps) < lost[lo] * (1 + eps)   # l+/a+ < l-/a-
            if cfg.double_check and self.rerun == 0 and faster_lost_less:
                self.event, self.rerun, self.gamma_first = 2, 1, self.gammas[0]
                self._new_round(fb.t)
                return
            gamma = self.gammas[0]
            first = self.gamma_first if self.rerun == 1 else None
            if first is not None and (first >= 0) == (gamma >= 0):
                gamma = (first + gamma) / 2
            self.rerun, self.gamma_first = 0, None
            direction = 1 if gamma > 0 else -1 if gamma < 0 else self.dir
        else:
            up = 2 * sum(1 for g in self.gammas if g > 0) > cfg.pairs
            majority = [g for g in self.gammas if (g > 0) == up]
            gamma = sum(majority, Fraction(0)) / len(majority)
            direction = 1 if up else -1
        self.event, self.used = 1, gamma
        self._move(gamma, direction)
        self._new_round(fb.t)

    def _lost_by(self, s: int, fb: Feedback) -> Fraction:
        """Bytes lost by step s (none before the run)."""
        return fb.outcome.lost[s] if s >= 0 else Fraction(0)

    def _move(self, gamma: Fraction, direction: int) -> None:
        """Vivace 4.2: the amplified step, capped by the dynamic change boundary."""
        cfg, r = self.cfg, self.base
        if direction == self.dir:
            self.tau += 1
        else:
            self.tau, self.k = 0, 0
        self.dir = direction
        change = amplifier(self.tau) * cfg.theta0 * gamma / self.scale   # bytes/step
        if abs(change) > (cfg.omega0 + self.k * cfg.delta) * r:
            change = direction * (cfg.omega0 + self.k * cfg.delta) * r
            self.k += 1
        else:
            self.k = 0
            while abs(change) > (cfg.omega0 + self.k * cfg.delta) * r:
                self.k += 1
        self.base = r + change if r + change > 0 else r / 2

    # ------------------------------------------------------------------ reporting
    def state(self) -> dict[str, Fraction | int]:
        cfg = self.cfg
        out: dict[str, Fraction | int] = {
            "base": self.base, "phase": self.phase, "pos": self.pos, "mlen": cfg.M,
            "order": sum(2 ** k for k, first_high in enumerate(self.order) if first_high),
            "event": self.event, "dir": self.dir, "tau": min(self.tau, cfg.tau_cap),
            "omega_k": min(self.k, cfg.k_cap), "gamma_used": self.used}
        for k in range(cfg.pairs):
            suffix = "" if cfg.pairs == 1 else str(k + 1)
            out[f"du{suffix}"], out[f"gamma{suffix}"] = self.du[k], self.gammas[k]
        if cfg.pairs == 1:
            out["rerun"] = self.rerun
        return out

    def measurements(self) -> dict[str, dict[int, Fraction]]:
        """State the sender learns only after its step: the smallest and largest RTT sample
        (less R) of the packets it sent in each step s whose ACKs it has (the encoding's
        ``rtt_lo[s]``, ``rtt_hi[s]``; the step may hold more samples later), and the effective
        gradient and deviation of each MI it has measured, at the MI's last step (``mi_grad``,
        ``mi_dev``)."""
        by_step: dict[int, list[Fraction]] = {}
        for x, y in self.packets:
            by_step.setdefault(-((-x) // 1), []).append(y)
        return {"rtt_lo": {s: min(ys) for s, ys in by_step.items() if s >= 0},
                "rtt_hi": {s: max(ys) for s, ys in by_step.items() if s >= 0},
                "mi_grad": {e: g for e, (g, _) in self.signals.items()},
                "mi_dev": {e: d for e, (_, d) in self.signals.items()}}
