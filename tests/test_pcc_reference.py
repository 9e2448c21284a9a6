"""Concrete reference implementations of the PCC family and a concrete path to run them on.

Nothing here imports the encodings (``ccas.pcc``, ``ccas.vivace``, ...): the references are
plain Python over exact fractions, written from the papers, and the path simulator produces
curves that obey the path-server model (thesis 4.2) step by step. The conformance tests
(tests/test_vivace.py, test_proteus.py, test_allegro.py) run a reference on a simulated path,
fix every model variable and the reference's state in the SMT encoding, and require sat: the
encoding admits the run (the superset property, tested).

Non-linear functions are computed to 50 significant digits with mpmath (not with the
enclosure code): the encodings' enclosures must contain these values.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import mpmath
import z3

from ccac.problem import build
from ccac.query import parse_query

mpmath.mp.dps = 50
F = Fraction


def power(x: Fraction, p: Fraction) -> Fraction:
    """x**p to 50 digits (exact for integer p)."""
    if p.denominator == 1:
        return x ** p.numerator
    return Fraction(mpmath.nstr(mpmath.power(mpmath.mpf(x.numerator) / x.denominator,
                                             mpmath.mpf(p.numerator) / p.denominator), 50))


def ls_slope(ys: list[Fraction]) -> Fraction:
    """Least-squares slope of ys against 0, 1, 2, ... (the textbook formula)."""
    n = len(ys)
    if n < 2:
        return F(0)  # one sample: no slope (used only by loss-only utilities)
    xs = [F(i) for i in range(n)]
    mx, my = sum(xs) / n, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def rms(vs: list[Fraction]) -> float:
    return float(mpmath.sqrt(sum(mpmath.mpf(v.numerator) / v.denominator * mpmath.mpf(v.numerator) / v.denominator
                                 for v in vs) / len(vs)))


def sqrt_fraction(v: Fraction) -> Fraction:
    return Fraction(mpmath.nstr(mpmath.sqrt(mpmath.mpf(v.numerator) / v.denominator), 50))


# ====================================================================== the path
@dataclass
class PathConfig:
    T: int
    R: int
    D: int
    C: Fraction = F(1)
    buffer: Fraction | None = None      # bytes; None = infinite
    eta: Fraction = F(0)
    alpha: Fraction = F(1, 10)
    dupacks: Fraction = F(1)            # in alpha
    rto: int = 1


@dataclass
class Run:
    """Every model curve of one flow's run, plus the sender's per-step record."""

    cfg: PathConfig
    A: list[Fraction] = field(default_factory=list)
    S: list[Fraction] = field(default_factory=list)
    L: list[Fraction] = field(default_factory=list)
    Lnc: list[Fraction] = field(default_factory=list)
    Ld: list[Fraction] = field(default_factory=list)
    W: list[Fraction] = field(default_factory=list)
    rate: list[Fraction] = field(default_factory=list)
    cwnd: list[Fraction] = field(default_factory=list)
    timeout: list[bool] = field(default_factory=list)
    rtt: list[Fraction] = field(default_factory=list)
    rtt_min: list[Fraction] = field(default_factory=list)
    state: dict[str, list[Any]] = field(default_factory=dict)


class Sender:
    """A reference sender: ``start`` draws the history state, ``step`` picks rate[t]."""

    def start(self, rng: random.Random, run: Run) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def step(self, t: int, run: Run, rng: random.Random) -> Fraction:  # pragma: no cover
        raise NotImplementedError

    def record(self, t: int, run: Run) -> None:  # pragma: no cover
        raise NotImplementedError


def simulate(cfg: PathConfig, sender: Sender, rng: random.Random,
             jitter: Callable[[int], Fraction] | None = None,
             loss: Callable[[int, Fraction], Fraction] | None = None,
             initial_queue: Fraction = F(0)) -> Run:
    """Run ``sender`` on one concrete path of the model, chosen step by step with ``rng``.

    Tokens: the token line C*t - W advances by C while bytes are queued above it and stops at
    the queue's end otherwise (tokens wasted only then: the composing model's rule). Service is
    anywhere between the D-steps-old token line and the token line. Non-congestive loss is
    ``loss(t, arrivals)`` (within eta of the bytes sent), congestive loss whatever exceeds the
    buffer. Loss detection follows appendix A.3 exactly (everything detectable is detected),
    and a timeout fires as soon as every byte in flight is known lost (R = 1 only, since a
    paced sender otherwise always has bytes in flight). The RTT sample of step t is the
    bottleneck backlog's drain time plus ``jitter(t)`` (at most D)."""
    run = Run(cfg)
    T, R, D, C = cfg.T, cfg.R, cfg.D, cfg.C
    dupacks = cfg.dupacks * cfg.alpha
    sender.start(rng, run)
    tl: list[Fraction] = []  # token line C*t - W[t]
    for t in range(T):
        # what the sender learns at the start of step t
        if t < R:
            run.Ld.append(F(0))
            run.timeout.append(False)
        else:
            adm = [a - l for a, l in zip(run.A, run.L)]
            stalled = (run.A[t - 1] == run.A[t - R] and run.S[t - R] == adm[t - R]
                       and run.L[t - R] > run.Ld[t - 1])
            if stalled:
                run.timeout.append(True)
                run.Ld.append(run.L[t - R])
            else:
                run.timeout.append(False)
                found = [run.L[s] for s in range(t - R + 1) if adm[s] + dupacks <= run.S[t - R]]
                run.Ld.append(max([run.Ld[t - 1]] + found))
        rate = sender.step(t, run, rng)
        run.rate.append(rate)
        if t == 0:
            run.A.append(initial_queue if cfg.buffer is None else min(initial_queue, cfg.buffer))
            run.L.append(F(0))
            run.Lnc.append(F(0))
            tl.append(F(0))
            run.S.append(F(0))
        else:
            run.A.append(run.A[t - 1] + rate)
            nc = loss(t, rate) if loss is not None else F(0)
            nc = min(nc, rate, cfg.eta * (run.A[t] - run.A[0]) - (run.Lnc[t - 1] - run.Lnc[0]))
            nc = max(nc, F(0))
            pending = run.A[t] - run.L[t - 1] - nc
            line = tl[t - 1] + C if pending > tl[t - 1] + C else pending
            congestive = F(0)
            if cfg.buffer is not None and pending - line > cfg.buffer:
                congestive = pending - line - cfg.buffer
            run.Lnc.append(run.Lnc[t - 1] + nc)
            run.L.append(run.L[t - 1] + nc + congestive)
            tl.append(line)
            low = max(run.S[t - 1], tl[t - D] if t >= D else tl[0] - C * (D - t))
            high = min(line, run.A[t] - run.L[t])
            run.S.append(low + (high - low) * F(rng.randint(0, 4), 4))
        run.W.append(C * t - tl[t])
        backlog = max(F(0), run.A[t] - run.L[t] - tl[t])
        run.rtt_min.append(backlog / C)
        run.rtt.append(backlog / C + (jitter(t) if jitter is not None else F(0)))
        run.cwnd.append(run.A[t - 1] + rate - run.S[t - R] - run.Ld[t] if t >= R else F(1))
        sender.record(t, run)
    return run


def random_path_run(cfg: PathConfig, sender: Sender, rng: random.Random) -> Run:
    """``simulate`` on a random path: jitter up to D in quarters, per-step random loss fractions
    up to 2*eta (the model caps the total at eta), so MIs see loss rates on both sides of a
    utility's loss terms, and a random initial queue."""
    jitter = (lambda t: F(rng.randint(0, 4), 4) * cfg.D)
    loss = (lambda t, sent: sent * cfg.eta * F(rng.randint(0, 8), 4)) if cfg.eta > 0 else None
    return simulate(cfg, sender, rng, jitter=jitter, loss=loss, initial_queue=F(rng.randint(0, 8), 4))


# ====================================================================== checking a run against an encoding
class Admitter:
    """The encoding of one configuration, built once; ``admits(run)`` fixes a run's values
    (every model variable and the named state series) and asks whether it is a trace."""

    def __init__(self, cfg: PathConfig, cca: dict[str, Any], state: list[str], internal: list[str] = ()):
        network = {"T": cfg.T, "R": cfg.R, "D": cfg.D, "C": cfg.C, "alpha": cfg.alpha, "dupacks": cfg.dupacks,
                   "buffer": "inf" if cfg.buffer is None else cfg.buffer / (cfg.C * cfg.R), "eta": cfg.eta,
                   "rto": cfg.rto}
        self.cfg, self.state, self.internal = cfg, state, list(internal)
        self.problem = build(parse_query({"network": network, "cca": cca, "query": {}}))
        self.solver = z3.Solver()
        self.solver.add(*self.problem.enc.formulas())

    def fixes(self, run: Run) -> list[tuple[str, Any]]:
        cfg, sym = self.cfg, self.problem.symbols
        out: list[tuple[str, Any]] = []

        def fix(name: str, values: list[Any], steps: range | None = None) -> None:
            series = sym.series[name]
            row = series.values if series.dims == 1 else series.values[0]
            for t in steps if steps is not None else range(cfg.T):
                term, value = row[t], values[t]
                if not isinstance(term, z3.ExprRef):
                    continue
                if z3.is_bool(term):
                    out.append((f"{name}[{t}]", term == z3.BoolVal(bool(value))))
                elif z3.is_int(term):
                    out.append((f"{name}[{t}]", term == int(value)))
                else:
                    out.append((f"{name}[{t}]", term == z3.RealVal(str(Fraction(value)))))

        fix("A_f", run.A)
        fix("S_f", run.S)
        fix("L_f", run.L)
        fix("Ld_f", run.Ld)
        fix("W", run.W)
        fix("rate", run.rate)
        fix("cwnd", run.cwnd, range(cfg.R, cfg.T))
        fix("timeout", run.timeout, range(cfg.R, cfg.T))
        if cfg.eta > 0:
            fix("Lnc_f", run.Lnc)
        for name in self.state:
            fix(name, run.state[name])
        for name in self.internal:  # the encoding's own per-step series (e.g. MI registers)
            for t in range(cfg.T):
                value = run.state[name][t]
                var = z3.Real(f"{name}_0_{t}")
                out.append((f"{name}[{t}]", var == z3.RealVal(str(Fraction(value)))))
        return out

    def admits(self, run: Run, timeout: float = 60) -> str:
        self.solver.push()
        try:
            self.solver.set("timeout", int(timeout * 1000))
            self.solver.add(*(c for _, c in self.fixes(run)))
            return str(self.solver.check())
        finally:
            self.solver.pop()

    def why_not(self, run: Run) -> list[str]:
        """An unsat core (constraint groups and fixed values) for a run the encoding rejects."""
        solver = z3.Solver()
        tracked: dict[str, str] = {}
        for i, (group, c) in enumerate(self.problem.enc.constraints):
            tracked[f"g{i}"] = f"{group}: {c}"
            solver.assert_and_track(c, f"g{i}")
        for i, (name, c) in enumerate(self.fixes(run)):
            tracked[f"f{i}"] = f"fixed {name}: {c}"
            solver.assert_and_track(c, f"f{i}")
        if solver.check() != z3.unsat:
            return []
        return [tracked[str(c)] for c in solver.unsat_core()]


# ====================================================================== Vivace / Proteus
@dataclass
class GradientConfig:
    """The parameters of the reference gradient controller (Vivace 4.2, Proteus 4 and 5)."""

    M: int
    eps: Fraction = F(1, 20)
    t: Fraction = F(9, 10)
    b: Fraction = F(900)
    c: Fraction = F(1135, 100)
    theta0: Fraction = F(1)
    omega0: Fraction = F(1, 20)
    delta: Fraction = F(1, 10)
    flt: Fraction = F(1, 100)
    timeout_steps: int = 8
    link_mbps: Fraction = F(100)
    step_seconds: Fraction = F(15, 1000)
    pairs: int = 1
    double_check: bool = True
    positive_only: bool = False
    d: Fraction = F(0)                     # RTT-deviation coefficient (per second)
    threshold: Fraction | None = None      # bytes/step; Proteus-H
    regression_tolerance: bool = False
    trending: bool = False                 # the trending tolerance may zero g / sigma (random)
    tau_cap: int = 6
    k_cap: int = 6


def m_of_tau(tau: int) -> Fraction:
    return F(max(1, tau)) if tau <= 3 else F(2 * tau - 3)


class GradientRef(Sender):
    """PCC Vivace's online-learning controller (and Proteus' majority variant), exactly.

    MIs of M steps; a round probes ``pairs`` pairs r(1+eps)/r(1-eps) in random order, waits
    (at the base rate) until the fate of the last MI is known, and moves the rate by
    m(tau)*theta0*gamma capped at omega*r; an MI timeout halves the rate."""

    def __init__(self, cfg: GradientConfig, C: Fraction):
        self.cfg, self.C = cfg, C
        self.scale = cfg.link_mbps / C
        self.W = 2 * cfg.pairs

    # ---------------------------------------------------------- history
    def start(self, rng: random.Random, run: Run) -> None:
        cfg, W, M = self.cfg, self.W, self.cfg.M
        self.phase = rng.randint(0, W)
        self.pos = rng.randint(0, M - 1) if self.phase < W else rng.randint(1, cfg.timeout_steps)
        self.base = self.C * F(rng.randint(2, 24), 16)
        self.order = [rng.random() < 0.5 for _ in range(cfg.pairs)]
        self.tau = rng.randint(0, 8)
        self.k = rng.randint(0, 8)
        self.dir = rng.choice([1, -1])
        self.rerun = rng.randint(0, 1) if cfg.double_check else 0
        self.gamma_first = F(rng.randint(-40, 40))
        self.ys = [[F(rng.randint(0, 8), 4) for _ in range(M)] for _ in range(W)]
        self.lost = [F(0) for _ in range(W)]
        self.mark: tuple[Fraction, Fraction] | None = None  # (admitted, lost) at the last MI's end
        self.event = 0
        self.du = [F(0)] * cfg.pairs
        self.gam = [F(0)] * cfg.pairs
        self.used = F(0)
        run.state = {k: [] for k in ("base", "phase", "pos", "order", "rtt", "event", "dir", "tau", "omega_k",
                                     "gamma_used", "rerun", *self.pair_names())}

    def pair_names(self) -> list[str]:
        if self.cfg.pairs == 1:
            return ["du", "gamma"]
        return [f"du{k + 1}" for k in range(self.cfg.pairs)] + [f"gamma{k + 1}" for k in range(self.cfg.pairs)]

    def factor(self, phase: int) -> Fraction:
        first = phase % 2 == 0
        high = self.order[phase // 2] == first
        return 1 + self.cfg.eps if high else 1 - self.cfg.eps

    # ---------------------------------------------------------- one step
    def step(self, t: int, run: Run, rng: random.Random) -> Fraction:
        cfg, W, M = self.cfg, self.W, self.cfg.M
        self.event, self.du, self.gam, self.used = 0, [F(0)] * cfg.pairs, [F(0)] * cfg.pairs, F(0)
        if t > 0:
            ready = self.phase == W or (self.phase == W - 1 and self.pos == M - 1)
            if not ready:
                if self.pos < M - 1:
                    self.pos += 1
                else:
                    self.phase, self.pos = self.phase + 1, 0
            else:
                if self.phase == W - 1:
                    self.mark = (run.A[t - 1] - run.L[t - 1], run.L[t - 1])
                waited = self.pos + 1 if self.phase == W else 1
                if t >= cfg_R(run):
                    R = cfg_R(run)
                    fate = run.S[t - R] >= self.mark[0] and run.Ld[t] >= self.mark[1]
                else:
                    fate = rng.random() < 0.5   # ACKs from before the trace: history
                if fate:
                    self.decide(rng)
                elif waited >= cfg.timeout_steps and rng.random() < 0.7:
                    self.event = 3
                    self.base = self.base / 2
                    self.new_round(rng)
                    self.rerun = 0
                else:
                    self.phase, self.pos = W, min(waited, cfg.timeout_steps)
        rate = self.base * self.factor(self.phase) if self.phase < W else self.base
        return rate

    def new_round(self, rng: random.Random) -> None:
        self.phase, self.pos = 0, 0
        self.order = [rng.random() < 0.5 for _ in range(self.cfg.pairs)]

    def signals(self, i: int, rng: random.Random) -> tuple[Fraction, Fraction]:
        """(effective gradient, RTT deviation in steps) of MI slot i."""
        cfg, ys = self.cfg, self.ys[i]
        g = ls_slope(ys)
        mean = sum(ys) / len(ys)
        sigma_sq = sum((y - mean) ** 2 for y in ys) / len(ys)
        zero_g = zero_s = False
        if cfg.regression_tolerance and cfg.M >= 3:
            fit = [mean + g * (j - F(cfg.M - 1, 2)) for j in range(cfg.M)]
            err_sq = sum((y - f) ** 2 for y, f in zip(ys, fit)) / cfg.M
            # |g| < sqrt(err_sq) / M  <=>  g^2 M^2 < err_sq (exact)
            if g * g * cfg.M * cfg.M < err_sq:
                zero_g = zero_s = True
        if cfg.trending:
            tg = rng.random() < 0.3
            ts = tg and rng.random() < 0.5
            zero_g, zero_s = zero_g or tg, zero_s or ts
        ge = F(0) if zero_g else g
        if cfg.flt > 0 and abs(ge) < cfg.flt:
            ge = F(0)
        if cfg.positive_only:
            ge = max(ge, F(0))
        sigma = F(0) if zero_s else sqrt_fraction(sigma_sq)
        return ge, sigma

    def decide(self, rng: random.Random) -> None:
        cfg, W = self.cfg, self.W
        r = self.base
        x = self.scale * r
        sig = [self.signals(i, rng) for i in range(W)]
        gammas, dus = [], []
        for k in range(cfg.pairs):
            hi, lo = (2 * k, 2 * k + 1) if self.order[k] else (2 * k + 1, 2 * k)
            u = []
            for slot, f in ((hi, 1 + cfg.eps), (lo, 1 - cfg.eps)):
                xi = x * f
                g, s = sig[slot]
                sent = r * f * cfg.M
                loss_rate = self.lost[slot] / sent
                util = power(xi, cfg.t) - cfg.b * xi * g - cfg.c * xi * loss_rate
                if cfg.d > 0 and (cfg.threshold is None or r * f >= cfg.threshold):
                    util -= cfg.d * xi * s * cfg.step_seconds
                u.append(util)
            du = u[0] - u[1]
            dus.append(du)
            gammas.append(du / (2 * cfg.eps * x))
        self.du, self.gam = dus, gammas
        if cfg.pairs == 1:
            hi, lo = (0, 1) if self.order[0] else (1, 0)
            abnormal = self.lost[hi] * (1 - cfg.eps) < self.lost[lo] * (1 + cfg.eps)
            if cfg.double_check and self.rerun == 0 and abnormal:
                self.event, self.rerun, self.gamma_first = 2, 1, gammas[0]
                self.new_round(rng)
                return
            gamma = gammas[0]
            if self.rerun == 1:
                g1 = self.gamma_first
                gamma = (g1 + gamma) / 2 if (g1 >= 0) == (gamma >= 0) else gamma
            self.rerun = 0
        else:
            ups = [g for g in gammas if g > 0]
            downs = [g for g in gammas if g <= 0]
            chosen = ups if len(ups) * 2 > cfg.pairs else downs
            gamma = sum(chosen) / len(chosen)
        direction = 1 if gamma > 0 else -1 if gamma < 0 else self.dir
        if cfg.pairs > 1:
            direction = 1 if len([g for g in gammas if g > 0]) * 2 > cfg.pairs else -1
        self.event, self.used = 1, gamma
        if direction == self.dir:
            self.tau += 1
        else:
            self.tau, self.k = 0, 0
        self.dir = direction
        dr = m_of_tau(self.tau) * cfg.theta0 * gamma / self.scale       # bytes/step
        omega = cfg.omega0 + self.k * cfg.delta
        if abs(dr) > omega * r:
            dr = direction * omega * r
            self.k += 1
        else:
            k = 0
            while abs(dr) > r * (cfg.omega0 + k * cfg.delta):
                k += 1
            self.k = k
        new = r + dr
        self.base = new if new > 0 else r / 2
        self.new_round(rng)

    # ---------------------------------------------------------- bookkeeping after the path step
    def record(self, t: int, run: Run) -> None:
        cfg = self.cfg
        if t == 0 and self.phase == self.W:
            # the last MI ended before the trace: its end is at most what step 0 shows
            self.mark = (run.A[0] - run.L[0], run.L[0])
        if self.phase < self.W:
            self.ys[self.phase][self.pos] = run.rtt[t]
            dl = run.L[t] - run.L[t - 1] if t > 0 else F(0)
            self.lost[self.phase] = dl if self.pos == 0 else self.lost[self.phase] + dl
        st = run.state
        st["base"].append(self.base)
        st["phase"].append(self.phase)
        st["pos"].append(self.pos)
        st["order"].append(sum(2 ** k for k, b in enumerate(self.order) if b))
        st["rtt"].append(run.rtt[t])
        st["event"].append(self.event)
        st["dir"].append(self.dir)
        st["tau"].append(min(self.tau, cfg.tau_cap))
        st["omega_k"].append(min(self.k, cfg.k_cap))
        st["gamma_used"].append(self.used)
        st["rerun"].append(self.rerun)
        names = self.pair_names()
        for k in range(cfg.pairs):
            st[names[k]].append(self.du[k])
            st[names[cfg.pairs + k]].append(self.gam[k])
        for i in range(self.W):  # the MI registers (the encoding's pcc_y*/pcc_lost* series)
            st.setdefault(f"pcc_lost{i}", []).append(self.lost[i])
            for j in range(cfg.M):
                st.setdefault(f"pcc_y{i}_{j}", []).append(self.ys[i][j])


def register_names(pairs: int, M: int) -> list[str]:
    """The encoding's internal MI-register series of the Vivace/Proteus engine."""
    return [f"pcc_lost{i}" for i in range(2 * pairs)] + \
        [f"pcc_y{i}_{j}" for i in range(2 * pairs) for j in range(M)]


def cfg_R(run: Run) -> int:
    return run.cfg.R


# ====================================================================== Allegro
def sigmoid(y: Fraction, alpha: Fraction) -> Fraction:
    """1 / (1 + e^(alpha*y)) to 50 digits."""
    z = mpmath.mpf(alpha.numerator) / alpha.denominator * mpmath.mpf(y.numerator) / y.denominator
    return Fraction(mpmath.nstr(1 / (1 + mpmath.exp(z)), 50))


@dataclass
class AllegroConfig:
    """The parameters of the reference Allegro controller (NSDI 2015, sections 2.2 and 3)."""

    m_lo: int
    m_hi: int
    alpha: Fraction = F(100)
    cap: Fraction = F(1, 20)
    eps_min: Fraction = F(1, 100)
    eps_max: Fraction = F(1, 20)
    timeout_steps: int = 4
    link_mbps: Fraction = F(100)
    adjust_cap: int = 8


class AllegroRef(Sender):
    """PCC Allegro, exactly: MIs of random length in [m_lo, m_hi] steps; the starting state
    doubles the rate per MI until the utility decreases (then halves it back); the decision
    state runs two r(1+eps)/r(1-eps) pairs in random order and moves only if both agree (else
    eps grows by eps_min up to eps_max); the rate-adjusting state sets r_n = r_(n-1)(1 + n
    eps_min dir) until the utility drops, then returns to r_(n-1). Each experiment's rule is
    applied once the fate of its last MI is known (the sender sends at its rate meanwhile);
    an MI timeout may halve the rate."""

    START, DECIDE, ADJUST, WAIT = 0, 1, 2, 4

    def __init__(self, cfg: AllegroConfig, C: Fraction):
        self.cfg, self.C = cfg, C
        self.scale = cfg.link_mbps / C
        n = -(-cfg.eps_max // cfg.eps_min)
        self.levels = [min(k * cfg.eps_min, cfg.eps_max) for k in range(1, int(n) + 1)]

    def utility(self, a: Fraction, lost: Fraction, M: int) -> Fraction:
        """u = T Sig(L - cap) - x L with x = a/M (Mbps), L = lost/a, T = x (1 - L)."""
        x = self.scale * a / M
        L = lost / a if a > 0 else F(0)
        return x * (1 - L) * sigmoid(L - self.cfg.cap, self.cfg.alpha) - x * L

    def start(self, rng: random.Random, run: Run) -> None:
        cfg = self.cfg
        self.mode = rng.choice([self.START, self.DECIDE, self.ADJUST])
        self.mlen = rng.randint(cfg.m_lo, cfg.m_hi)
        last = 3 if self.mode == self.DECIDE else 0
        self.phase = rng.choice(list(range(last + 1)) + [self.WAIT])
        self.pos = rng.randint(0, self.mlen - 1) if self.phase < self.WAIT else rng.randint(1, cfg.timeout_steps)
        self.base = self.C * F(rng.randint(2, 24), 16)
        self.prev_base = self.C * F(rng.randint(2, 24), 16)
        self.epsk = rng.randint(1, len(self.levels))
        self.dir = rng.choice([1, -1])
        self.n = rng.randint(0, cfg.adjust_cap + 3)
        self.order = [rng.random() < 0.5 for _ in range(2)]
        self.u_prev = self.scale * self.base * F(rng.randint(-8, 24), 16)
        self.reg = [self.scale * self.base * F(rng.randint(-8, 24), 16) for _ in range(4)]
        self.sent = self.lost = F(0)
        self.mark: tuple[Fraction, Fraction] | None = None
        self.event, self.util = 0, F(0)
        run.state = {k: [] for k in ("base", "mode", "phase", "pos", "mlen", "order", "eps", "dir", "adj_n",
                                     "event", "util", "u_prev", "prev_base")}

    def factor(self) -> Fraction:
        if self.mode != self.DECIDE or self.phase == self.WAIT:
            return F(1)
        high = self.order[self.phase // 2] == (self.phase % 2 == 0)
        e = self.levels[self.epsk - 1]
        return 1 + e if high else 1 - e

    def new_experiment(self, rng: random.Random) -> None:
        self.phase, self.pos = 0, 0
        self.mlen = rng.randint(self.cfg.m_lo, self.cfg.m_hi)
        self.order = [rng.random() < 0.5 for _ in range(2)]

    def step(self, t: int, run: Run, rng: random.Random) -> Fraction:
        cfg = self.cfg
        self.event, self.util = 0, F(0)
        if t > 0:
            last = 3 if self.mode == self.DECIDE else 0
            if self.phase < self.WAIT and self.pos < self.mlen - 1:
                self.pos += 1
            elif self.phase < last:
                self.phase, self.pos = self.phase + 1, 0
                self.mlen = rng.randint(cfg.m_lo, cfg.m_hi)
            else:
                waited = self.pos + 1 if self.phase == self.WAIT else 1
                R = run.cfg.R
                if t >= R:
                    fate = run.S[t - R] >= self.mark[0] and run.Ld[t] >= self.mark[1]
                else:
                    fate = rng.random() < 0.5   # ACKs from before the trace: history
                if fate:
                    self.event = 1
                    self.apply_rule(rng)
                    self.new_experiment(rng)
                elif waited >= cfg.timeout_steps and rng.random() < 0.7:
                    self.event = 2
                    self.base /= 2
                    self.mode, self.epsk = self.DECIDE, 1
                    self.new_experiment(rng)
                else:
                    self.phase, self.pos = self.WAIT, min(waited, cfg.timeout_steps)
        return self.base * self.factor()

    def apply_rule(self, rng: random.Random) -> None:
        cfg = self.cfg
        u = self.reg[0]
        if self.mode == self.START:
            if u < self.u_prev:
                self.base /= 2
                self.mode, self.epsk = self.DECIDE, 1
            else:
                self.u_prev, self.prev_base = u, self.base
                self.base *= 2
        elif self.mode == self.DECIDE:
            plus = [self.reg[0] if self.order[0] else self.reg[1], self.reg[2] if self.order[1] else self.reg[3]]
            minus = [self.reg[1] if self.order[0] else self.reg[0], self.reg[3] if self.order[1] else self.reg[2]]
            e = self.levels[self.epsk - 1]
            if all(p > m for p, m in zip(plus, minus)):
                self.base, self.dir, self.mode, self.n = self.base * (1 + e), 1, self.ADJUST, 0
            elif all(m > p for p, m in zip(plus, minus)):
                self.base, self.dir, self.mode, self.n = self.base * (1 - e), -1, self.ADJUST, 0
            else:
                self.epsk = min(self.epsk + 1, len(self.levels))
        else:
            if self.n > 0 and u < self.u_prev:
                self.base = self.prev_base
                self.mode = self.DECIDE
                self.epsk = rng.randint(1, len(self.levels))   # reset or kept: the paper leaves it open
            else:
                self.u_prev, self.prev_base = u, self.base
                self.n += 1
                self.base *= 1 + self.n * cfg.eps_min * self.dir

    def record(self, t: int, run: Run) -> None:
        if self.phase < self.WAIT:
            da = run.A[t] - run.A[t - 1] if t > 0 else self.base * self.factor() * (self.pos + 1)
            dl = run.L[t] - run.L[t - 1] if t > 0 else F(0)
            self.sent = da if self.pos == 0 else self.sent + da
            self.lost = dl if self.pos == 0 else self.lost + dl
            self.mark = (run.A[t] - run.L[t], run.L[t])
            if self.pos == self.mlen - 1:
                self.util = self.utility(self.sent, self.lost, self.mlen)
                self.reg[self.phase] = self.util
        elif t == 0:
            self.mark = (run.A[0] - run.L[0], run.L[0])
        st = run.state
        for name, value in (("base", self.base), ("mode", self.mode), ("phase", self.phase), ("pos", self.pos),
                            ("mlen", self.mlen), ("order", int(self.order[0]) + 2 * int(self.order[1])),
                            ("eps", self.levels[self.epsk - 1]), ("dir", self.dir),
                            ("adj_n", min(self.n, self.cfg.adjust_cap)), ("event", self.event),
                            ("util", self.util), ("u_prev", self.u_prev), ("prev_base", self.prev_base)):
            st[name].append(value)
