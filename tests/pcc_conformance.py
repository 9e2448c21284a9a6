"""Conformance of the PCC senders (``ccac.senders.pcc``, ``ccac.senders.allegro``): run one on a
random path of the model (:func:`fluid_path.simulate`) with random answers to its open choices,
pin the run in the CCA's encoding and require sat (the superset property, tested).

Unlike :func:`fluid_path.admits`, :class:`Admitter` builds the encoding of one configuration
once and checks many runs against it, and it also pins the state a PCC sender learns
only after the step it describes (its ``measurements``: RTT sample bands, MI signals; for
Vivace and Proteus also each MI's raw gradient and deviation, :func:`raw_signals`).
"""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction
from typing import Any, Callable

import z3

from conftest import make_query
from fluid_path import PathConfig, Run, simulate
from substep import Probes

from ccac.ccas import get_cca
from ccac.ccas.allegro import eps_levels, mi_range
from ccac.ccas.pcc.gradient import mi_steps
from ccac.problems.problem import build
from ccac.senders.interface import SenderStart
from ccac.senders.pcc import Choose, GradientSender
from ccac.solving.solvers import solve_yices



def random_choices(rng: random.Random) -> Choose:
    """Every open choice at random; an MI timer that may fire fires in 70% of the steps."""
    def choose(what: str, n: int) -> int:
        if what == "MI timeout":
            return 0 if rng.random() < 0.7 else 1
        return rng.randrange(n)
    return choose


def resolved_params(cfg: PathConfig, cca: dict[str, Any]) -> dict[str, Any]:
    """The resolved parameters of ``cca`` (a query's cca table) on ``cfg``."""
    return make_query(cfg.network(), cca).flows[0].params


def concrete_run(cfg: PathConfig, cca: dict[str, Any], rng: random.Random, values: dict[str, Any],
                 choose: Choose | None) -> tuple[Run, dict[str, dict[int, Fraction]]]:
    """Run the concrete sender of ``cca`` taking over with ``values`` at step R, on a random
    path (from ``rng``) with ``choose`` for its open choices (None: its defaults); return the
    run and the sender's measurements."""
    algorithm: Any = get_cca(cca["name"])   # a PCC CCA: its concrete() takes a choose hook
    params = resolved_params(cfg, cca)
    sender = algorithm.concrete(SenderStart(cfg.R, cfg.D, cfg.C, cfg.alpha, params, dict(values)), choose)
    history: dict[int, Fraction] = {}
    probes = None
    if isinstance(sender, GradientSender):  # per-packet samples; the history paces the round it takes over
        assumed = {"base": sender.base, "phase": sender.phase, "pos": sender.pos, "waited": sender.waited,
                   "order": sum(2 ** k for k, high in enumerate(sender.order) if high)}
        history = history_rates(cfg, params, assumed, 2 * sender.cfg.pairs)
        probes = Probes.random(rng)
    run = simulate(cfg, lambda s: sender, params, rng, values, paced=True, history_rate=history, probes=probes)
    run.state[cfg.R - 1] = dict(values)   # the state the sender took over
    measured = sender.measurements()
    if isinstance(sender, GradientSender):
        measured.update(raw_signals(sender))
    return run, measured


def raw_signals(sender: GradientSender) -> dict[str, dict[int, Fraction]]:
    """The raw RTT gradient and deviation of each MI the sender measured (keyed by its last
    step), before the tolerances, Vivace's filter and Proteus' max(0, g) act: the encoding's
    ``pcc_g`` and ``pcc_s``. Pinned with the effective signals, they make the encoding show
    that the clip and the tolerances map the sender's own slope and deviation to what it
    used: the gradient enclosure always contains 0 (a zero slope fits any sample bands), so
    with the raw values free a wrong clip or tolerance could hide behind a raw gradient of 0."""
    raw = dataclasses.replace(sender.cfg, regression_tolerance=False, trending=False, flt=Fraction(0),
                              positive_only=False)
    kept, sender.cfg = sender.cfg, raw
    try:
        signals = {e: sender._signals(e - raw.M + 1, e) for e in sender.signals}
    finally:
        sender.cfg = kept
    return {"pcc_g": {e: g for e, (g, _) in signals.items()}, "pcc_s": {e: s for e, (_, s) in signals.items()}}


def paper_run(cfg: PathConfig, cca: dict[str, Any], make: Callable[[SenderStart, Choose], Any],
              rng: random.Random, restrictions: dict[str, int], rate_name: str = "base") -> tuple[Run, dict[str, int]]:
    """A paper-faithful sender (``senders/pcc_paper.py``, ``senders/allegro_paper.py``,
    ``senders/etc_paper.py``, written from the papers alone) on a random path built inside its
    steps (per-packet samples), with every reading the paper leaves open drawn at random, except
    ``restrictions``: readings the encoding does not cover, pinned to the covered alternative
    (each a documented restriction). The sender takes over at step R with a random sending rate
    (its start value ``rate_name``: a PCC base rate, ETC's ``srate``), which the history's steps
    pace. Only the model's variables of the run are pinned (:meth:`Admitter.admits` with no
    state): the sender's own state is not the encoding's. Returns the run and the readings drawn."""
    drawn: dict[str, int] = {}

    def choose(what: str, n: int) -> int:
        k = restrictions[what] if what in restrictions else rng.randrange(n)
        drawn.setdefault(what, k)
        return k

    params = resolved_params(cfg, cca)
    base = cfg.C * Fraction(rng.randint(4, 20), 16)
    sender = make(SenderStart(cfg.R, cfg.D, cfg.C, cfg.alpha, params, {rate_name: base}), choose)
    history = {t: base for t in range(1, cfg.R)}   # the flow before its first decision: paced
    run = simulate(cfg, lambda s: sender, params, rng, {}, paced=True, history_rate=history,
                   probes=Probes.random(rng))
    run.state = [{} for _ in run.state]
    return run, drawn


def history_rates(cfg: PathConfig, params: dict[str, Any], values: dict[str, Any], W: int) -> dict[int, Fraction]:
    """What the history's steps of the round the sender takes over sent: a Vivace/Proteus flow
    paces each MI's probe rate around the round's base (and the base while it waits), and the
    encoding holds the flow to its pace in the history too. Steps before the round are free.
    ``W`` is the round's number of probe MIs."""
    eps, base, phase, order = params["eps"], values["base"], values["phase"], values["order"]
    M = mi_steps(params, cfg.R)
    last = cfg.R - 1
    began = last - (phase * M + values["pos"] if phase < W else values["waited"] + W * M - 1)
    rates = {}
    for u in range(max(began, 1), last + 1):
        i = (u - began) // M
        if i >= W:
            rates[u] = base
        else:
            high = bool(order >> (i // 2) & 1) == (i % 2 == 0)
            rates[u] = base * (1 + eps if high else 1 - eps)
    return rates


def gradient_start(rng: random.Random, cfg: PathConfig, params: dict[str, Any], pairs: int) -> dict[str, Any]:
    """A random state of Vivace (one pair) or Proteus (three) at step R - 1, by the encoding's
    names (and the sender's own ``waited``), in a round that began by step 0: the history's
    steps then pace that round's probes (:func:`history_rates`), as a window of a real run
    whose history holds no decision does (one with a decision in its history would need the
    round before it to be consistent too)."""
    W, M, timeout_steps = 2 * pairs, mi_steps(params, cfg.R), int(params["mi_timeout"]) * cfg.R
    # (phase, pos, waited), each at R - 1 steps or more into its round
    where = [(i // M, i % M, 0) for i in range(cfg.R - 1, W * M)] + \
            [(W, (w - 1) % M, w) for w in range(1, timeout_steps + 1) if w + W * M - 1 >= cfg.R - 1]
    phase, pos, waited = rng.choice(where)
    began = cfg.R - 1 - (phase * M + pos if phase < W else waited + W * M - 1)
    # a double check's second run began with an abnormal first run, which needs loss: on a
    # lossless path only a round that began before the run can be one
    rerun = (params.get("double_check", False) and (began <= 0 or cfg.eta > 0 or cfg.buffer is not None)
             and rng.random() < 0.5)
    values = {"base": cfg.C * Fraction(rng.randint(2, 24), 16), "phase": phase, "pos": pos, "mlen": M,
              "waited": waited,
              "order": rng.randrange(2 ** pairs), "tau": rng.randint(0, int(params["tau_cap"])),
              "omega_k": rng.randint(0, int(params["k_cap"])), "dir": rng.choice([1, -1])}
    return {**values, "rerun": int(rerun)} if pairs == 1 else values


def allegro_start(rng: random.Random, cfg: PathConfig, params: dict[str, Any]) -> dict[str, Any]:
    """A random state of Allegro at step R - 1, by the encoding's names."""
    m_lo, m_hi = mi_range(params, cfg.R)
    mode = rng.choice([0, 1, 2])
    phase = rng.choice(list(range(4 if mode == 1 else 1)) + [4])
    mlen = rng.randint(m_lo, m_hi)
    adj_n = rng.randint(0, int(params["adjust_cap"]))
    # a starting or rate-adjusting experiment that began inside the history followed a rule
    # tying its rates and u_prev to the history's: let such an experiment begin by step 0
    first = cfg.R - 1 if phase == 0 and (mode == 0 or (mode == 2 and adj_n > 0)) else 0
    base = cfg.C * Fraction(rng.randint(2, 24), 16)
    return {"base": base, "mode": mode, "phase": phase, "mlen": mlen,
            "pos": rng.randint(first, mlen - 1) if phase < 4 else rng.randint(1, int(params["mi_timeout"]) * cfg.R),
            "order": rng.randrange(4), "eps": rng.choice(eps_levels(params)), "dir": rng.choice([1, -1]),
            "adj_n": adj_n, "prev_base": cfg.C * Fraction(rng.randint(2, 24), 16),
            "u_prev": params["link_mbps"] / cfg.C * base * Fraction(rng.randint(-8, 24), 16)}


def pinned_answer(formulas: list[Any], fixed: list[Any], timeout: float) -> str:
    """Whether the encoding (``formulas``) admits a run of a paper-faithful sender pinned by
    ``fixed`` (the path's variables only: the encoding's state is left to find): "sat" when a
    witness is found and checked, else z3's own answer ("unsat" or "unknown").

    Pinning the run's rates makes the encoding's products linear: z3's preprocessing (simplify,
    propagate the pinned values, solve equations) leaves a linear problem that yices solves in a
    fraction of z3's time (a Proteus run of T = 16: about 1 s against 3-4 s). Yices' assignment
    is carried back through the preprocessing to every variable (z3's model converter) and
    accepted only if every formula and pin holds under it in z3's exact evaluation, so a "sat"
    never rests on yices or on the conversion. Anything else (a non-linear rest, yices unsat or
    unknown) is asked of z3 on the formulas as they are, so a rejection and its unsat core are
    z3's."""
    if _yices_witness(formulas + fixed, timeout):
        return "sat"
    return z3_answer(formulas + fixed, timeout)


def z3_answer(formulas: list[Any], timeout: float) -> str:
    """z3's answer on ``formulas`` in a fresh solver (z3 answers pinned runs faster from scratch
    than incrementally, measured on every PCC configuration), its model left unread."""
    solver = z3.Solver(ctx=formulas[0].ctx)
    solver.set("timeout", int(timeout * 1000))
    solver.add(*formulas)
    return str(solver.check())


def _yices_witness(formulas: list[Any], timeout: float) -> bool:
    """Whether yices finds an assignment that satisfies ``formulas`` exactly (pinned_answer)."""
    ctx = formulas[0].ctx
    goal = z3.Goal(ctx=ctx)
    goal.add(*formulas)
    preprocess = z3.Then(*(z3.Tactic(name, ctx=ctx) for name in ("simplify", "propagate-values", "solve-eqs")),
                         ctx=ctx)
    subgoals = preprocess(goal)
    if len(subgoals) != 1 or z3.Probe("is-qflira", ctx=ctx)(subgoals[0]) != 1:
        return False
    rest = subgoals[0]
    model = z3.Model(ctx)
    if len(rest) > 0:
        outcome = solve_yices(list(rest), timeout)
        if outcome.answer != "sat" or outcome.assignment is None:
            return False
        for name, value in outcome.assignment.items():
            literal = _literal(value, ctx)
            model.update_value(z3.Const(name, literal.sort()), literal)
    full = rest.convert_model(model)
    return z3.is_true(full.eval(z3.And(formulas), model_completion=True))


def _literal(value: bool | int | Fraction, ctx: z3.Context) -> z3.ExprRef:
    """A value of a yices assignment as z3's literal of its sort (bool, Int, Real)."""
    if isinstance(value, bool):
        return z3.BoolVal(value, ctx)
    return z3.IntVal(value, ctx) if isinstance(value, int) else z3.RealVal(value, ctx)


class Admitter:
    """The encoding of one configuration, built once; :meth:`admits` pins a run: every model
    variable, the state the sender took over (step R - 1) and reported (from step R on), and
    its measurements."""

    def __init__(self, cfg: PathConfig, cca: dict[str, Any], yices_first: bool = True) -> None:
        self.cfg = cfg
        self.yices_first = yices_first
        self.problem = build(make_query(cfg.network(), cca))
        self.formulas = self.problem.enc.formulas()

    def fixes(self, run: Run, measured: dict[str, dict[int, Fraction]]) -> list[tuple[str, Any]]:
        v, states, cfg = self.problem.vars, self.problem.states[0], self.cfg
        out: list[tuple[str, Any]] = []

        def pin(name: str, t: int, term: Any, value: Any) -> None:
            if not isinstance(term, z3.ExprRef):
                return
            if z3.is_bool(term):
                out.append((f"{name}[{t}]", term == bool(value)))
            elif z3.is_int(term):
                out.append((f"{name}[{t}]", term == int(value)))
            else:
                out.append((f"{name}[{t}]", term == Fraction(value)))

        for t in range(cfg.T):
            pin("A_f", t, v.A_f[0][t], run.A[t])
            pin("S_f", t, v.S_f[0][t], run.S[t])
            pin("L_f", t, v.L_f[0][t], run.L[t])
            pin("Ld_f", t, v.Ld_f[0][t], run.Ld[t])
            pin("W", t, v.W[t], run.W[t])
            if v.Lnc_f is not None:
                pin("Lnc_f", t, v.Lnc_f[0][t], run.Lnc[t])
            if t >= cfg.R:
                pin("cwnd", t, v.cwnd[0][t], run.cwnd[t])
                pin("rate", t, v.rate[0][t], run.rate[t])
                pin("timeout", t, v.timeout[0][t], run.timeout[t])
            for name, value in run.state[t].items():
                if name in states:  # the sender's own bookkeeping has no counterpart to pin
                    pin(name, t, states[name][t], value)
        for name, by_step in measured.items():
            terms = states[name] if name in states else encoded(self.problem, name, cfg.T)  # pcc_g, pcc_s
            for t, value in by_step.items():
                if t < cfg.T:
                    pin(name, t, terms[t], value)
        return out

    def admits(self, run: Run, measured: dict[str, dict[int, Fraction]], timeout: float = 600) -> str:
        """"sat" if the encoding admits the run. A run that pins the encoding's state (the
        concrete sender's) leaves z3 nothing to search: z3 answers it. A paper sender's run pins
        the path alone, and the encoding's state is found by :func:`pinned_answer` when
        ``yices_first`` (the PCC learners: Proteus 2-4 times, Vivace 1.5 times and Allegro 3.5
        times faster than z3 alone; ETC's encoding is faster in z3). The timeout is generous
        because a rare pinned run takes z3 a minute on a loaded machine, and "unknown" fails the
        test as "unsat" does."""
        fixed = [c for _, c in self.fixes(run, measured)]
        if self.yices_first and not measured and not any(run.state):
            return pinned_answer(self.formulas, fixed, timeout)
        return z3_answer(self.formulas + fixed, timeout)

    def why_not(self, run: Run, measured: dict[str, dict[int, Fraction]]) -> list[str]:
        """An unsat core (constraint groups and pinned values) for a run the encoding rejects."""
        solver = z3.Solver(ctx=self.problem.ctx)
        tracked: dict[str, str] = {}
        for i, (group, c) in enumerate(self.problem.enc.constraints):
            tracked[f"g{i}"] = f"{group}: {c}"
            solver.assert_and_track(c, f"g{i}")
        for i, (name, c) in enumerate(self.fixes(run, measured)):
            tracked[f"f{i}"] = f"fixed {name}: {c}"
            solver.assert_and_track(c, f"f{i}")
        if solver.check() != z3.unsat:
            return []
        return [tracked[str(c)] for c in solver.unsat_core()] + [run.describe()]


def encoded(problem: Any, series: str, T: int, flow: int = 0) -> list[Any]:
    """Flow ``flow``'s solver variables of an internal series (not a query name), each checked to be
    in the encoding: a misspelt name would make a fresh, unconstrained variable."""
    slots = {slot.step: name for name, slot in problem.enc.slots.items() if slot.series == series and slot.flow == flow}
    assert sorted(slots) == list(range(T)), (series, sorted(slots))
    return [problem.enc.slots[slots[t]].at(t, problem.ctx) for t in range(T)]
