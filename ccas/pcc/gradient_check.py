"""The independent check of Vivace's and Proteus' rate control (:mod:`ccac.ccas.pcc.gradient`):
the rules re-checked on a concrete trace in exact arithmetic, without the solver.

It reads the declared state (phase, position and length of each MI, the sample bands, each
MI's effective gradient and deviation, the decisions) and checks, step by step: the MI
schedule and the rates it sends; that the sample bands lie in the path's; that each MI's
signals are ones its bands allow (:func:`ccac.ccas.pcc.rtt.gradient_range`, the tolerances);
that a decision waits for the fate of the round, that its utility differences lie in the
enclosure of the round's measurements at its base rate, and that its step follows Vivace
4.2; that an MI timeout fires only once a timer may have. Non-linear quantities are checked
against the documented enclosures (the grid's line tables and the weight tables are shared
data); measurements that reach before the trace (history) are not checked, only what follows
from them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ccac.ccas.pcc.shared import bins_containing, grid_points, kappa_bounds, power_interval, quotient_interval, within
from ccac.ccas.pcc.gradient import Variant, amplifier, long_lattice, mi_bounds, pair_names
from ccac.ccas.pcc.rtt import band_numbers, gradient_range


def check_gradient(cca: Any, f: Any) -> list[str]:
    """Every violation of the rules in the trace of one Vivace/Proteus flow (module docstring),
    step by step: the state at the step, then the transition from the step before."""
    rules = GradientCheck(cca, f)
    for t in range(f.T):
        if not rules.in_domain(t):
            rules.bad(t, "a PCC state variable is out of its domain")
            continue
        rules.rates(t)
        rules.sample_band(t)
        rules.mi_signals(t)
        rules.decision_values(t)
        if t > 0:
            rules.transition(t)
    return rules.out


class GradientCheck:
    """One flow's trace and the problems found so far; one method per rule of the encoding
    (:class:`ccac.ccas.pcc.gradient.GradientEncoding`), each checking step t."""

    def __init__(self, cca: Any, f: Any) -> None:
        p, R, C, D = f.params, f.R, f.C, f.D
        self.f, self.p, self.R, self.C, self.D = f, p, R, C, D
        self.var: Variant = cca.variant(p, C)
        self.K, self.W = self.var.pairs, 2 * self.var.pairs
        self.M_lo, self.M_hi, self.bounded = mi_bounds(p, R, D, C, f.buffer)
        self.TO = int(p["mi_timeout"]) * R - 1   # steps from an MI's first step: it began sending at its start
        self.eps = p["eps"]
        self.tau_cap, self.k_cap = int(p["tau_cap"]), int(p["k_cap"])
        st = f.state
        self.base, self.phase, self.pos, self.mlen = st["base"], st["phase"], st["pos"], st["mlen"]
        self.order = [int(o) for o in st["order"]]
        self.event, self.dirn, self.tau, self.kk = st["event"], st["dir"], st["tau"], st["omega_k"]
        self.rtt_lo, self.rtt_hi = st["rtt_lo"], st["rtt_hi"]
        self.gu, self.mi_grad, self.mi_dev = st["gamma_used"], st["mi_grad"], st["mi_dev"]
        self.du = [st[dn] for dn, _ in pair_names(self.K)]
        self.gam = [st[gn] for _, gn in pair_names(self.K)]
        self.rerun = st.get("rerun")
        self.even = f.flows == 1 and not f.lossy          # the queue is monotone within a step
        self.clean = self.even and D == 0                  # and the sample is the queue's delay exactly
        self.queue = [a - k for a, k in zip(f.total_admitted, f.tokens)]
        self.adm_f = [a - lost for a, lost in zip(f.A, f.L)]
        self.out: list[str] = []
        self.deferred = False   # the round's fate was known at the last MI boundary, and no decision came

    def bad(self, t: int, msg: str) -> None:
        self.out.append(f"step {t}: {msg}")

    @staticmethod
    def high(i: int, o: int) -> bool:
        return bool((o >> (i // 2)) & 1) == (i % 2 == 0)

    # ---------------------------------------------------------------- every step
    def in_domain(self, t: int) -> bool:
        mlen = self.mlen
        return (0 <= self.phase[t] <= self.W) and self.event[t] in (0, 1, 2, 3) and self.dirn[t] in (1, -1) \
            and (0 <= self.tau[t] <= self.tau_cap) and (0 <= self.kk[t] <= self.k_cap) \
            and (0 <= self.order[t] < 2 ** self.K) \
            and (self.M_lo <= mlen[t] and (mlen[t] <= self.M_hi or not self.bounded))

    def rates(self, t: int) -> None:
        """A positive base rate; a probe MI's rate, or one the sender waits at; the window that
        makes pacing bind, and pacing before R."""
        f, p, R, W, eps, base, order = self.f, self.p, self.R, self.W, self.eps, self.base, self.order
        if base[t] <= 0:
            self.bad(t, f"base rate {base[t]} is not positive")
        if not 0 <= self.pos[t] <= self.mlen[t] - 1:
            self.bad(t, f"position {self.pos[t]} impossible in an MI of {self.mlen[t]} steps")
        if self.phase[t] < W:
            want = base[t] * (1 + eps if self.high(self.phase[t], order[t]) else 1 - eps)
            if f.rate[t] != want:
                self.bad(t, f"rate {f.rate[t]} is not the probe rate {want}")
        elif not _waiting_rate(p["wait"], f.rate[t], base[t],
                               base[t] * (1 + eps if self.high(W - 1, order[t]) else 1 - eps), eps):
            self.bad(t, f"rate {f.rate[t]} is not a rate the sender waits at ({p['wait']}, base {base[t]})")
        if t >= R and f.cwnd[t] != f.A[t - 1] + f.rate[t] - f.S[t - R] - f.Ld[t]:
            self.bad(t, "cwnd is not the bytes in flight after this step's sends")
        if 1 <= t < R and f.A[t] - f.A[t - 1] != f.rate[t]:
            self.bad(t, "a PCC flow paces its rate before its first decision too")

    def sample_band(self, t: int) -> None:
        """The step's samples lie in the path's band, with the pace's direction on an even queue."""
        f, C, D, rtt_lo, rtt_hi, queue = self.f, self.C, self.D, self.rtt_lo, self.rtt_hi, self.queue
        qdelay, admitted = f.state["qdelay"], f.total_admitted
        if rtt_lo[t] > rtt_hi[t] or rtt_lo[t] < 0:
            self.bad(t, f"sample band [{rtt_lo[t]}, {rtt_hi[t]}] is empty or negative")
        if self.even and ((f.rate[t] <= C and rtt_lo[t] < qdelay[t]) or (f.rate[t] >= C and rtt_hi[t] > qdelay[t] + D)):
            self.bad(t, "the step's samples lie against the direction its pace moves the queue")
        if t >= 1:
            lo, hi = band_numbers(C, D, self.even, queue[t - 1], queue[t], admitted[t] - admitted[t - 1])
            if rtt_lo[t] < lo or rtt_hi[t] > hi:
                self.bad(t, f"sample band [{rtt_lo[t]}, {rtt_hi[t]}] leaves the path's [{lo}, {hi}]")
        if qdelay[t] != max(queue[t], Fraction(0)) / C:
            self.bad(t, "qdelay is not the bottleneck queue over C")

    def mi_signals(self, t: int) -> None:
        """An MI's signals where it ends and it began inside the trace (:func:`_check_signals`)."""
        mlen = self.mlen
        ends = self.phase[t] < self.W and self.pos[t] == mlen[t] - 1
        if not ends and (self.mi_grad[t] != 0 or self.mi_dev[t] != 0):
            self.bad(t, "mi_grad/mi_dev set at a step where no MI ends")
        if ends and t - mlen[t] + 1 >= 1:
            self.out += [f"step {t}: {m}" for m in _check_signals(self.var, self.f, t, mlen[t], self.clean, self.M_hi)]

    def decision_values(self, t: int) -> None:
        """du and gamma only at a decision, gamma_used only at a rate decision."""
        if self.event[t] not in (1, 2) and any(d[t] != 0 for d in self.du + self.gam):
            self.bad(t, "du/gamma set outside a decision")
        if self.event[t] != 1 and self.gu[t] != 0:
            self.bad(t, "gamma_used set outside a rate decision")

    # ---------------------------------------------------------------- transitions from t-1 to t
    def round_fate(self, t: int, ready: bool) -> bool | None:
        """Whether the round's fate is known at t (None: not ready, before R, or its last MI
        before the trace)."""
        f, R, W, phase = self.f, self.R, self.W, self.phase
        if not (t >= R and ready):
            return None
        last_end = t - 1 if phase[t - 1] != W else max((s for s in range(t) if phase[s] == W - 1), default=-1)
        return _known(f, self.adm_f, t, last_end) if last_end >= 0 else None

    def transition(self, t: int) -> None:
        """An MI timeout, the MI schedule going on (and a decision not deferred past the second
        boundary after the fate is known), or a decision once the probes are done."""
        W, phase, pos, mlen, event = self.W, self.phase, self.pos, self.mlen, self.event
        pp, ps, pm = phase[t - 1], pos[t - 1], mlen[t - 1]
        if event[t] != 0:
            self.deferred = False
        boundary = pp >= W - 1 and ps == pm - 1     # the probes are done and an MI just ended
        ready = boundary or pp == W
        fate = self.round_fate(t, ready)
        if event[t] == 3:
            self.mi_timeout(t)
        elif event[t] == 0:
            self.schedule(t, boundary, fate)
        elif not ready:
            self.bad(t, "a decision before the round's probes are done")
        else:
            if fate is False:
                self.bad(t, "decided before the fate of the round's MIs was known")
            mis = _round_mis(phase, pos, mlen, t - 1, W)
            self.out += [f"step {t}: {m}" for m in _check_decision(self.var, self.f, t, mis, self.tau_cap, self.k_cap)]

    def mi_timeout(self, t: int) -> None:
        """The timer fired now, or earlier in the MI that has just ended, the rate halving at the
        MI's end (a reading); an MI that began before the trace may have fired there."""
        f, base, pos, TO, rerun = self.f, self.base, self.pos, self.TO, self.rerun
        ps, pm = pos[t - 1], self.mlen[t - 1]
        since = [t] + (list(range(max(t - pm, 1), t)) if ps == pm - 1 else [])
        from_history = ps == pm - 1 and t - 1 - ps <= 0
        if not from_history and all(_check_timeout(f, self.adm_f, pos, u, TO) for u in since):
            self.out += [f"step {t}: {m}" for m in _check_timeout(f, self.adm_f, pos, t, TO)]
        if 2 * base[t] not in (base[t - 1], f.rate[t - 1]) or (self.phase[t], pos[t]) != (0, 0) \
                or (rerun is not None and rerun[t] != 0):
            self.bad(t, "an MI timeout halves the rate and starts a new round")

    def schedule(self, t: int, boundary: bool, fate: bool | None) -> None:
        """No event: the MI goes on, the next probe starts or the sender waits, the round's state
        unchanged; a decision deferred at one boundary with the fate known must come at the next."""
        W, phase, pos, mlen, rerun = self.W, self.phase, self.pos, self.mlen, self.rerun
        base, order, tau, kk, dirn = self.base, self.order, self.tau, self.kk, self.dirn
        pp, ps, pm = phase[t - 1], pos[t - 1], mlen[t - 1]
        same = (base[t] == base[t - 1] and order[t] == order[t - 1] and tau[t] == tau[t - 1]
                and kk[t] == kk[t - 1] and dirn[t] == dirn[t - 1] and (rerun is None or rerun[t] == rerun[t - 1]))
        if ps < pm - 1:
            nxt = (pp, ps + 1)
        else:
            nxt = (pp + 1, 0) if pp < W - 1 else (W, 0)
        if (phase[t], pos[t]) != nxt or (ps < pm - 1 and mlen[t] != pm) or not same:
            self.bad(t, f"the MI schedule should continue to phase {nxt[0]}, position {nxt[1]} unchanged")
        if boundary and fate and self.deferred:
            self.bad(t, "the fate of the round's MIs was known at the last MI boundary and still is, "
                        "but the sender does not decide")
        self.deferred = bool(boundary and fate) or (self.deferred and pp == W and ps < pm - 1)


def _round_mis(phase: list[int], pos: list[int], mlen: list[int], last: int, W: int) -> list[tuple[int, int, bool]]:
    """(first step, last step so far, ended) of each MI of the round that step ``last`` belongs
    to, in order; [] if the round began before the trace (its first MI's start is unknown)."""
    e = last
    while e >= 0 and phase[e] == W:
        e -= 1
    if e < 0:
        return []
    spans = [(e - pos[e], e, pos[e] == mlen[e] - 1)]
    i = phase[e]
    while i > 0:
        e, i = spans[-1][0] - 1, i - 1
        if e < 0 or phase[e] != i or pos[e] != mlen[e] - 1:
            return []
        spans.append((e - pos[e], e, True))
    if spans[-1][0] < 0:
        return []
    return list(reversed(spans))


def _known(f: Any, adm_f: list[Fraction], t: int, end: int) -> bool:
    """Whether at step t the sender knows the fate of every byte sent by step ``end``."""
    return f.S[t - f.R] >= adm_f[end] and f.Ld[t] >= f.L[end]


def _waiting_rate(wait: str, rate: Fraction, base: Fraction, last: Fraction, eps: Fraction) -> bool:
    """Whether ``rate`` is one the sender waits at, by the ``wait`` reading."""
    if wait == "band":
        return (1 - eps) * base <= rate <= (1 + eps) * base
    return rate in {"base": (base,), "last": (last,), "either": (base, last)}[wait]


def _check_timeout(f: Any, adm_f: list[Fraction], pos: list[int], t: int, TO: int) -> list[str]:
    """An MI timer may fire at t: the bytes of some step u are unresolved (neither ACKed nor
    detected lost) and u's MI began at least TO steps before t; or bytes from before the trace
    (an MI of unknown start) may be unresolved: step 0's are. Before step R the fates read ACKs
    from before the trace, so any may be unknown."""
    if t < f.R:
        return []
    unresolved = [not _known(f, adm_f, t, u) for u in range(t)]
    if unresolved and unresolved[0]:
        return []
    if any(unresolved[u] and u - pos[u] <= t - TO for u in range(t)):
        return []
    return [f"an MI timeout before any unresolved byte's MI began {TO + 1} steps ago"]


def _check_signals(var: Variant, f: Any, t: int, M: int, clean: bool, cap: int) -> list[str]:
    """The effective gradient and deviation of the MI ending at t against its bands."""
    st = f.state
    steps = range(t - M + 1, t + 1)
    lows, highs = [st["rtt_lo"][s] for s in steps], [st["rtt_hi"][s] for s in steps]
    lost = f.L[t] - f.L[t - M]
    rises = [(f.A[s] - f.A[s - 1]) / f.C - 1 for s in steps]
    lattice = not var.ack_filter or clean
    g_lo, g_hi = gradient_range(M if lattice and M <= cap else None, lows, highs, lost == 0,
                                (min(rises), max(rises)) if clean else None)
    if lattice and M > cap and lost == 0:   # a longer MI: the coarse lattice bound
        spread = long_lattice(cap) * (max(highs) - min(lows))
        g_lo, g_hi = max(g_lo, -spread), spread if g_hi is None else min(g_hi, spread)
    s_hi = (max(highs) - min(lows)) / 2
    g, s = st["mi_grad"][t], st["mi_dev"][t]
    # the regression tolerance may fire where some gradient in range is below sigma / M
    if within(Fraction(0), g_lo, g_hi):
        smallest = Fraction(0)
    elif g_lo > 0:
        smallest = g_lo
    else:
        assert g_hi is not None  # 0 is outside [g_lo, g_hi] and g_lo <= 0, so g_hi < 0 bounds it
        smallest = -g_hi
    tolerable = var.regression_tolerance and smallest * M < s_hi
    out = []
    if not 0 <= s <= s_hi:
        out.append(f"RTT deviation {s} outside [0, {s_hi}] (half the bands' span)")
    if g == 0:
        zero_ok = var.trending == "free" or tolerable or within(Fraction(0), g_lo, g_hi) \
            or (var.flt > 0 and g_lo < var.flt and (g_hi is None or g_hi > -var.flt)) \
            or (var.positive_only and g_lo <= 0)
        if not zero_ok:
            out.append(f"effective gradient 0 but the MI's gradient lies in [{g_lo}, {g_hi}] and no tolerance applies")
        only_by_tolerance = not (var.trending == "free" or within(Fraction(0), g_lo, g_hi) or var.flt > 0
                                 or var.positive_only)
        if only_by_tolerance and s != 0:
            out.append("the regression tolerance zeroes the RTT deviation with the gradient")
    else:
        if not within(g, g_lo, g_hi):
            out.append(f"effective gradient {g} outside the MI's enclosure [{g_lo}, {g_hi}]")
        if var.flt > 0 and abs(g) < var.flt:
            out.append(f"gradient {g} below the filter {var.flt} should count as 0")
        if var.positive_only and g < 0:
            out.append(f"a negative gradient {g} where only positive ones count")
    return out


def _check_decision(var: Variant, f: Any, t: int, mis: list[tuple[int, int, bool]], tau_cap: int,
                    k_cap: int) -> list[str]:
    """A decision at t (module docstring): a new round starts; the pairs' du and gamma lie in
    the enclosure of the round's measurements and agree in sign; the double check (Vivace
    4.3); the direction and gradient applied and the rate step (Vivace 4.2, Proteus 5)."""
    st, K = f.state, var.pairs
    du = [st[dn] for dn, _ in pair_names(K)]
    gam = [st[gn] for _, gn in pair_names(K)]
    out: list[str] = []
    if (st["phase"][t], st["pos"][t]) != (0, 0):
        out.append("a decision starts a new round (phase 0, position 0)")
    # the round's measurements: every MI inside the trace (else history: unchecked)
    complete = len(mis) == 2 * K and mis[0][0] >= 1
    lost = ([(f.L[last] - f.L[first - 1]) / (last - first + 1) for first, last, _ in mis]   # per step
            if complete else None)
    if lost is not None:
        out += _utility_problems(var, f, t, mis, lost)
    for k in range(K):
        d, g = du[k][t], gam[k][t]
        if (d > 0 and g < 0) or (d < 0 and g > 0):
            out.append(f"pair {k + 1}: du {d} and gamma {g} have opposite signs")
    problems, rerun_now = _double_check_problems(var, f, t, lost)
    out += problems
    if rerun_now:
        return out
    return out + _gradient_applied_problems(var, f, t, tau_cap, k_cap)


def _utility_problems(var: Variant, f: Any, t: int, mis: list[tuple[int, int, bool]],
                      lost: list[Fraction]) -> list[str]:
    """The pairs' du and gamma at t against the enclosure of the round's measurements at its
    base rate, in some bin of the rate grid containing it (the bin the encoding selects)."""
    p, st, K = f.params, f.state, var.pairs
    eps, t_exp = p["eps"], p["t"]
    scale = p["link_mbps"] / f.C
    cK = p["c"] * scale
    du = [st[dn] for dn, _ in pair_names(K)]
    gam = [st[gn] for _, gn in pair_names(K)]
    r, o = st["base"][t - 1], int(st["order"][t - 1])
    grads = [st["mi_grad"][last] for _, last, _ in mis]
    devs = [st["mi_dev"][last] for _, last, _ in mis]
    d_dev = var.dev_coeff * p.get("step_seconds", 0)
    kap_lo, kap_hi = kappa_bounds(eps, t_exp)
    x = scale * r
    points = grid_points(p["grid_lo"] * p["link_mbps"], p["grid_hi"] * p["link_mbps"], p["grid"])
    pairs = []
    for k in range(K):
        hi_i, lo_i = (2 * k, 2 * k + 1) if (o >> k) & 1 else (2 * k + 1, 2 * k)
        h = var.b * ((1 + eps) * grads[hi_i] - (1 - eps) * grads[lo_i])
        if d_dev:
            gate_hi = var.threshold is None or (1 + eps) * r >= var.threshold
            gate_lo = var.threshold is None or (1 - eps) * r >= var.threshold
            h += d_dev * (((1 + eps) * devs[hi_i] if gate_hi else 0) - ((1 - eps) * devs[lo_i] if gate_lo else 0))
        pairs.append((h, lost[hi_i] - lost[lo_i]))
    fits_some_bin = False
    for b, lo, hi in bins_containing(points, x):
        p_lo, p_hi = power_interval(t_exp, points, b, x)
        e_lo, e_hi = power_interval(t_exp - 1, points, b, x)
        ok = True
        for k, (h, lam) in enumerate(pairs):
            corners = [lo * h] + ([hi * h] if hi is not None else [])
            z_lo = None if (hi is None and h < 0) else min(corners)
            z_hi = None if (hi is None and h > 0) else max(corners)
            y_lo, y_hi = quotient_interval(lo, hi, lam) if lam != 0 else (Fraction(0), Fraction(0))
            du_lo = None if (p_lo is None or z_hi is None) else kap_lo * p_lo - z_hi - cK * lam
            du_hi = None if (p_hi is None or z_lo is None) else kap_hi * p_hi - z_lo - cK * lam
            g_lo = None if (e_lo is None or y_hi is None) else (kap_lo * e_lo - h - cK * y_hi) / (2 * eps)
            g_hi = None if (e_hi is None or y_lo is None) else (kap_hi * e_hi - h - cK * y_lo) / (2 * eps)
            ok = ok and within(du[k][t], du_lo, du_hi) and within(gam[k][t], g_lo, g_hi)
        fits_some_bin = fits_some_bin or ok
    if fits_some_bin:
        return []
    return [f"du/gamma {[d[t] for d in du]}/{[g[t] for g in gam]} outside the utility enclosure "
            f"of the round's measurements at base rate {r}"]


def _double_check_problems(var: Variant, f: Any, t: int, lost: list[Fraction] | None) -> tuple[list[str], bool]:
    """Vivace 4.3's double check at the decision at t: a rerun (event 2) iff the first run's
    faster probe lost a smaller fraction, once, with the state unchanged; a rate decision ends
    it. Also whether t is a rerun (then no rate step follows)."""
    st, eps = f.state, f.params["eps"]
    event, rerun, base, tau, kk, dirn = st["event"], st.get("rerun"), st["base"], st["tau"], st["omega_k"], st["dir"]
    out: list[str] = []
    if rerun is None:
        if event[t] == 2:
            return ["a double-check rerun in a variant without double checks"], True
        return out, False
    if var.double_check and lost is not None and rerun[t - 1] == 0:
        hi_i, lo_i = (0, 1) if int(st["order"][t - 1]) & 1 else (1, 0)
        abnormal = lost[hi_i] * (1 - eps) < lost[lo_i] * (1 + eps)
        if abnormal != (event[t] == 2):
            out.append("double-check rerun iff the faster probe lost a smaller fraction (first run)")
    if (not var.double_check or rerun[t - 1] == 1) and event[t] == 2:
        out.append("a second double-check rerun")
    if event[t] == 2:
        if rerun[t] != 1 or base[t] != base[t - 1] or tau[t] != tau[t - 1] or kk[t] != kk[t - 1] \
                or dirn[t] != dirn[t - 1]:
            out.append("a rerun repeats the pair at the same rate with the state unchanged")
        return out, True
    if rerun[t] != 0:
        out.append("a rate decision ends the double check")
    return out, False


def _gradient_applied_problems(var: Variant, f: Any, t: int, tau_cap: int, k_cap: int) -> list[str]:
    """The rate decision at t: one pair's gradient (after a double check: the two runs'
    average when their signs agree, else the second's), or several pairs' majority direction
    with a gradient between theirs; the direction with the gradient's sign; then Vivace 4.2's
    step (:func:`_step_problem`) or, a zero gradient, no move at all."""
    p, st, K = f.params, f.state, var.pairs
    base, event, dirn, tau, kk = st["base"], st["event"], st["dir"], st["tau"], st["omega_k"]
    gam = [st[gn] for _, gn in pair_names(K)]
    rerun = st.get("rerun")
    out: list[str] = []
    r, d, g_used = base[t - 1], dirn[t], st["gamma_used"][t]
    if K == 1:
        first_run = rerun is None or rerun[t - 1] == 0
        if first_run and g_used != gam[0][t]:
            out.append("gamma_used is the pair's gradient")
        if not first_run:
            s = t - 1
            while s >= 0 and event[s] != 2:
                s -= 1
            if s >= 0:
                g1, g2 = gam[0][s], gam[0][t]
                same_sign = (g1 >= 0 and g2 >= 0) or (g1 <= 0 and g2 <= 0)
                opposite = (g1 >= 0 and g2 <= 0) or (g1 <= 0 and g2 >= 0)
                if not ((same_sign and g_used == (g1 + g2) / 2) or (opposite and g_used == g2)):
                    out.append("double check: same sign -> average the gradients, else keep the second")
    else:
        agreeing = [gam[k][t] for k in range(K) if gam[k][t] * d >= 0]
        every = [gam[k][t] for k in range(K)]
        if len(agreeing) * 2 <= K:
            out.append(f"direction {d} is not the majority of the pairs' gradients")
        elif not min(every) <= g_used <= max(every):
            out.append("gamma_used is not between the pairs' gradients")
    if g_used * d < 0:
        out.append(f"direction {d} against the gradient {g_used}")
    idle = g_used == 0 and base[t] == r and tau[t] == tau[t - 1] and kk[t] == kk[t - 1] and d == dirn[t - 1]
    scale = p["link_mbps"] / f.C
    problem = _step_problem(p, r, base[t], g_used, d, dirn[t - 1], tau[t - 1], tau[t], kk[t - 1], kk[t], scale,
                            tau_cap, k_cap)
    if problem and not idle:
        out.append(problem)
    return out


def _step_problem(p: dict[str, Any], r: Fraction, new: Fraction, g_used: Fraction, d: int, d_prev: int,
                  tau_prev: int, tau: int, k_prev: int, k: int, scale: Fraction, tau_cap: int,
                  k_cap: int) -> str | None:
    """Why the move from base rate r to ``new`` does not follow Vivace 4.2's step with gradient
    ``g_used`` in direction d (None if it does, under one of the readings the encoding covers:
    m(tau) before or after counting this decision or Table 1's m(0) = 0; the cap at omega
    before or after k is raised)."""
    same_dir = d == d_prev
    if tau != (min(tau_prev + 1, tau_cap) if same_dir else 0):
        return f"tau {tau} does not follow the confidence rule"
    k0 = k_prev if same_dir else 0
    theta0, omega0, delta = p["theta0"], p["omega0"], p["delta"]
    if tau < tau_cap:
        ms = {amplifier(tau), amplifier(tau + 1)} | ({Fraction(0)} if tau == 0 else set())
        moves = [(m * theta0 / scale * g_used,) * 2 for m in ms]
    else:
        q = amplifier(tau) * theta0 / scale * g_used
        moves = [(q, None) if g_used > 0 else (None, q) if g_used < 0 else (q, q)]
    om = omega0 + k0 * delta

    def recal(q: Fraction) -> int:
        for j in range(k_cap):
            if abs(q) <= (omega0 + j * delta) * r:
                return j
        return k_cap

    change = new - r
    for q_lo, q_hi in moves:
        if within(change, q_lo, q_hi) and (k0 == k_cap or abs(change) <= om * r) and k == recal(change):
            return None
        can_clip = (q_hi is None or q_hi > om * r) if d == 1 else (q_lo is None or q_lo < -om * r)
        if not can_clip or k != min(k0 + 1, k_cap):
            continue
        if k0 == k_cap:
            if (d == 1 and new >= (1 + om) * r) or (d == -1 and 0 < new <= r):
                return None
            continue
        for w in (om, om + delta):
            if (d == 1 and new == (1 + w) * r) or (d == -1 and (new == (1 - w) * r if w < 1 else 0 < new <= r)):
                return None
    return (f"new base rate {new} (from {r}) does not follow the gradient step "
            f"(gamma {g_used}, tau {tau}, omega {om})")

