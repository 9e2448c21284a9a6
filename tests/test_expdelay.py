"""expdelay (thesis 9.3, Algorithm 1): the encoding admits every run of the concrete sender
(ccac.senders.expdelay) on generated paths (the superset property), the target's outward-rounded
bounds contain the true value, a window of a longer run is a trace, solver traces pass the
independent check, the check catches corrupted traces, and a single flow on an ideal path
settles around the link rate."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import answer, assert_admits, cca_params, make_query
from fluid_path import PathConfig, admits
from fluid_path import simulate as simulate_path

from ccac.solving.solvers import solve_z3
from ccac.core.errors import CcacError
from ccac.ccas import get_cca
from ccac.ccas.expdelay import DECREASE, INCREASE, NONE, targets
from ccac.problems.problem import build
from ccac.senders.interface import Feedback, FlowRecord, SenderStart
from ccac.senders.expdelay import ExpDelaySender, true_target
from ccac.encode.trace import delay_range
from ccac.solving.validate import flow_values
from ccac.analysis.window import window_is_trace, windows

EXPDELAY = get_cca("expdelay")
C = Fraction(1)


def params(**given: Any) -> dict[str, Any]:
    return cca_params(EXPDELAY, **given)


def run(network: dict[str, Any], cca: dict[str, Any] | None = None, find: str | None = None,
        assume: list[str] | None = None, periodic: bool = False) -> Any:
    return answer(network, {"name": "expdelay", **(cca or {})}, find, assume, periodic, timeout=120)


# ------------------------------------------------------------------ the concrete sender on paths
def feedback(t: int, R: int, A: list[Fraction], S: list[Fraction], q: Fraction,
             delay: tuple[int, int | None]) -> Feedback:
    """What the sender sees at step t of a loss-free run whose latest sample waited q steps
    (Algorithm 1 reads no per-step record)."""
    return Feedback(t, R, S[t - R], Fraction(0), False, A[t - 1], R + q, delay, FlowRecord())


def simulate(data: Any, p: dict[str, Any], R: int, D: int, steps: int) -> dict[str, list[Any]]:
    """A concrete run: the concrete sender (ccac.senders.expdelay) from a drawn rate and timer
    offset, a path that follows the model's rules (token line C*t - W, waste only while the
    arrivals are below it, service between the two bounds, no loss); the true delay anywhere
    in the model's bracket."""
    pick = lambda *xs: data.draw(st.sampled_from(xs))  # noqa: E731
    every = p["every"] or R
    mu0 = pick(Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(3))
    offset = data.draw(st.integers(0, every - 1))
    sender = ExpDelaySender(SenderStart(R, D, C, Fraction(1, 10), p, {"mu": mu0}), offset)
    A: list[Fraction] = []
    S: list[Fraction] = []
    W: list[Fraction] = []
    rows: list[dict[str, Any]] = []
    for t in range(steps):
        if t < R:  # the run's own history: the sender sends its initial rate
            row = {"mu": mu0, "update": t % every == offset, "move": NONE}
            cwnd = Fraction(1)
        else:
            lo, hi = delay_range(S, A, t - R)
            top = Fraction(hi) if hi is not None else Fraction(lo + 3)
            q = lo + pick(Fraction(0), Fraction(1, 3), Fraction(1)) * (top - lo)
            cwnd = sender.decide(feedback(t, R, A, S, q, (lo, hi))).cwnd
            row = sender.state()
        A.append((A[-1] if A else pick(Fraction(0), Fraction(1), Fraction(3))) + row["mu"])
        if t == 0:
            W.append(Fraction(0))
            S.append(Fraction(0))
        else:
            W.append(max(W[-1], C * t - A[t]))
            lower = max(S[-1], C * (t - D) - W[max(t - D, 0)])
            S.append(lower + pick(Fraction(0), Fraction(1, 2), Fraction(1)) * (C * t - W[t] - lower))
        rows.append({**row, "cwnd": cwnd})
    out = {name: [r[name] for r in rows] for name in rows[0]}
    out.update(A=A, S=S, W=W)
    return out


def fix_window(run_: dict[str, list[Any]], p: dict[str, Any], R: int, D: int, T: int, H: int) -> Any:
    """The encoding over steps H .. H+T-1 of the run (curves re-based), every variable fixed."""
    q = make_query({"T": T, "R": R, "D": D, "buffer": "inf"},
                   {"name": "expdelay", **{k: v for k, v in p.items() if v is not None}})
    problem = build(q)
    v, state = problem.vars, problem.states[0]
    S0, shift_W = run_["S"][H], C * H - run_["S"][H]
    fixed = []
    for t in range(T):
        u = H + t
        fixed += [v.A_f[0][t] == run_["A"][u] - S0, v.S_f[0][t] == run_["S"][u] - S0, v.L_f[0][t] == 0,
                  v.Ld_f[0][t] == 0, v.W[t] == run_["W"][u] - shift_W, v.rate[0][t] == run_["mu"][u],
                  v.timeout[0][t] == False, state["mu"][t] == run_["mu"][u],  # noqa: E712
                  state["update"][t] == run_["update"][u]]
        if t >= R:
            fixed += [v.cwnd[0][t] == run_["cwnd"][u], state["move"][t] == run_["move"][u]]
    return problem, fixed


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data())
def test_the_encoding_admits_every_window_of_a_run_of_the_concrete_sender(data: Any) -> None:
    """The superset property, tested: generated paths, the concrete sender on them, a window of
    the run re-based as its own trace, every variable fixed: the encoding must be sat."""
    R = data.draw(st.sampled_from([1, 2]))
    D = data.draw(st.sampled_from([0, 1, 2]))
    T = data.draw(st.integers(R + D + 1, 7))
    H = data.draw(st.integers(0, 8))
    draw = lambda *xs: data.draw(st.sampled_from(xs))  # noqa: E731
    p = params(s=draw(2, 3, Fraction(3, 2)), jitter=draw(1, 2, Fraction(1, 2)), qmax=draw(2, 5, Fraction(7, 2)),
               mu_min=draw(Fraction(1, 8), Fraction(1, 3)), a=draw(Fraction(1, 8), Fraction(1, 2)),
               b=draw(Fraction(1, 2), Fraction(7, 8)), cap=draw(True, False), every=draw(None, 1, 2))
    run_ = simulate(data, p, R, D, H + T)
    problem, fixed = fix_window(run_, p, R, D, T, H)
    assert_admits(problem.enc.formulas(), fixed, f"window at {H}, R = {R}, D = {D}, moves {run_['move'][H:]}, p = {p}")


@pytest.mark.parametrize("seed", range(16))
def test_the_encoding_admits_every_run_of_the_concrete_sender(seed: int) -> None:
    """The same on the model's own random paths (tests/fluid_path.py): losses, detections and
    timeouts, which Algorithm 1 ignores; the sender starts from the run's rate and takes its
    timer's phase from the run's update flag at step R - 1."""
    rng = random.Random(seed)
    R = rng.choice([1, 2])
    cfg = PathConfig(T=8, R=R, D=rng.choice([0, 1, 2]), buffer=rng.choice([None, Fraction(1, 2), Fraction(2)]),
                     eta=rng.choice([Fraction(0), Fraction(1, 10)]))
    p = params(s=rng.choice([2, 3, Fraction(3, 2)]), jitter=rng.choice([1, 2, Fraction(1, 2)]),
               qmax=rng.choice([2, 5, Fraction(7, 2)]), a=rng.choice([Fraction(1, 8), Fraction(1, 2)]),
               b=rng.choice([Fraction(1, 2), Fraction(7, 8)]), cap=rng.random() < 0.5, every=rng.choice([None, 1, 2]))
    mu, fired = rng.choice([Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(3)]), rng.random() < 0.5
    run_ = simulate_path(cfg, EXPDELAY.concrete, p, rng, {"mu": mu, "update": fired}, paced=True, history_rate=mu)
    admits({"name": "expdelay", **{k: v for k, v in p.items() if v is not None}}, run_,
           fix_state=("mu", "update", "move"))
    every = p["every"] or R
    first = next(t for t in range(R, cfg.T) if run_.state[t]["update"])
    assert first == (R - 1 + every if fired and every > 1 else R)


# ------------------------------------------------------------------ the exponential's enclosure
@pytest.mark.parametrize("s, jitter, qmax, cap", [
    (2, 1, 5, False), (3, 2, 5, False), (Fraction(3, 2), Fraction(1, 2), Fraction(7, 2), True),
    (4, 3, 7, True), (Fraction(10, 7), Fraction(5, 3), 4, False),
])
def test_the_target_bounds_contain_the_true_value(s: Any, jitter: Any, qmax: Any, cap: bool) -> None:
    p = params(s=s, jitter=jitter, qmax=qmax, cap=cap)
    for k, (lo, hi) in enumerate(targets(p, 12)):
        true = true_target(p, Fraction(k), C)
        assert lo <= true <= hi, k
        assert hi - lo <= hi / 10 ** 10, (k, lo, hi)  # outward rounding only: about 12 digits


def test_integer_exponents_are_exact() -> None:
    p = params()  # s = 2, jitter = 1, qmax = 5, mu_min = 1/8
    assert [lo for lo, hi in targets(p, 6)] == [Fraction(4), 2, 1, Fraction(1, 2), Fraction(1, 4), Fraction(1, 8),
                                                 Fraction(1, 16)]
    assert all(lo == hi for lo, hi in targets(p, 6))


# ------------------------------------------------------------------ windows of a longer run
@pytest.mark.parametrize("network, cca", [
    ({"T": 6, "R": 1, "D": 1}, {}),
    ({"T": 7, "R": 2, "D": 1}, {"cap": True}),
    ({"T": 6, "R": 1, "D": 2}, {"every": 2, "jitter": 2}),
])
def test_a_window_of_a_longer_run_is_a_trace(network: dict[str, Any], cca: dict[str, Any]) -> None:
    short, long = windows(make_query(network, {"name": "expdelay", **cca}),
                          make_query({**network, "T": network["T"] + 3}, {"name": "expdelay", **cca}))
    for shift in (1, 3):
        check = window_is_trace(short, long, shift, solve_z3, 120)
        assert check.outcome.answer == "unsat", (shift, check.culprits[:5])


# ------------------------------------------------------------------ the check
def _trace(network: dict[str, Any], find: str, cca: dict[str, Any] | None = None) -> Any:
    q = make_query(network, {"name": "expdelay", **(cca or {})}, find)
    result = run(network, cca, find)
    assert result.answer == "sat" and result.validated, result.reason
    return q, result.trace


def _problems(q: Any, trace: Any) -> list[str]:
    return EXPDELAY.check(flow_values(trace, 0, q.flows[0].params))


BOTH = "any(move[0][t] == 1 for t in range(R, T)) and any(move[0][t] == -1 for t in range(R, T))"


@pytest.mark.parametrize("network, cca", [
    ({"T": 8, "R": 1, "D": 1}, {}),
    ({"T": 9, "R": 2, "D": 1}, {"cap": True}),
    ({"T": 8, "R": 1, "D": 2}, {"s": 3, "jitter": 2, "every": 2}),
    ({"T": 7, "R": 1, "D": 1, "flows": 2}, {}),
])
def test_solver_traces_pass_the_independent_check(network: dict[str, Any], cca: dict[str, Any]) -> None:
    q, trace = _trace(network, BOTH, cca)
    assert _problems(q, trace) == []


def test_check_catches_a_move_against_the_delay() -> None:
    """An increase turned into a decrease (and back) is caught by the target test, whatever
    trace the solver returned: the flips are chosen where the bracket forbids them."""
    q, trace = _trace({"T": 8, "R": 1, "D": 1},
                      "any(move[0][t] == 1 and mu[0][t-1] < tgt_lo[0][t] for t in range(R, T)) and "
                      "any(move[0][t] == -1 and mu[0][t-1] >= tgt_hi[0][t] for t in range(R, T))")
    mu, move = trace.flow("mu", 0), trace.flow("move", 0)
    p = q.flows[0].params
    up = next(t for t in range(1, 8) if move[t] == INCREASE and mu[t - 1] < trace.flow("tgt_lo", 0)[t])
    down = next(t for t in range(1, 8) if move[t] == DECREASE and mu[t - 1] >= trace.flow("tgt_hi", 0)[t])
    for t, new, label in ((up, DECREASE, "decreased"), (down, INCREASE, "increased")):
        old = (mu[t], move[t])
        mu[t] = p["b"] * mu[t - 1] if new == DECREASE else mu[t - 1] + p["a"] * C
        move[t] = new
        problems = _problems(q, trace)
        assert any(f"step {t}: {label}" in m for m in problems), problems
        mu[t], move[t] = old


def test_check_catches_wrong_sizes_rates_and_timers() -> None:
    q, trace = _trace({"T": 8, "R": 2, "D": 1}, BOTH)
    mu, update = trace.flow("mu", 0), trace.flow("update", 0)
    assert _problems(q, trace) == []
    t = next(t for t in range(2, 8) if update[t])
    mu[t] += Fraction(1, 7)
    assert any(f"step {t}: rate" in m and "neither" in m for m in _problems(q, trace))
    mu[t] -= Fraction(1, 7)
    trace.flow("rate", 0)[5] += Fraction(1, 3)
    assert any("step 5: the pacing rate is not mu" in m for m in _problems(q, trace))
    trace.flow("rate", 0)[5] -= Fraction(1, 3)
    update[t] = False
    assert any("update" in m for m in _problems(q, trace))


# ------------------------------------------------------------------ semantics
def test_single_flow_settles_around_the_link_rate() -> None:
    """One flow, the link (C = 1) inside the rate range [C/8, 2C], jitter D = the design's:
    a repeating run keeps the link at least 90% busy and its rate near C. (With D = 0 no run
    of period <= 9 repeats exactly at all: the check below that one exists matters.)"""
    net = {"T": 9, "R": 1, "D": 1, "buffer": "inf"}
    assert run(net, find="True", periodic=True).answer == "sat"  # not vacuous
    assert run(net, find="S[T-1] - S[0] < 0.9 * C * (T - 1)", periodic=True).answer == "unsat"
    far = "any(mu[0][t] > 2 * C or mu[0][t] < C / 2 for t in range(T))"
    assert run(net, find=far, periodic=True).answer == "unsat"


def test_increase_only_below_the_target_and_decrease_only_at_or_above() -> None:
    net = {"T": 7, "R": 1, "D": 1}
    assert run(net, find="any(move[0][t] == 1 and mu[0][t-1] >= tgt_hi[0][t] for t in range(R, T))").answer == "unsat"
    assert run(net, find="any(move[0][t] == -1 and mu[0][t-1] < tgt_lo[0][t] for t in range(R, T))").answer == "unsat"
    assert run(net, find="any(mu[0][t] != mu[0][t-1] and not update[0][t] for t in range(R, T))",
               cca={"every": 2}).answer == "unsat"


def test_periodic_needs_the_timer_to_repeat() -> None:
    """With R = 2 the timer fires every 2 steps: a period of 7 steps cannot repeat it, which is
    said before solving (not a vacuous unsat)."""
    with pytest.raises(CcacError, match="multiple of 2"):
        run({"T": 8, "R": 2, "D": 1}, find="True", periodic=True)
    assert run({"T": 9, "R": 2, "D": 1}, find="True", periodic=True).answer == "sat"


def test_the_aimd_step_overshoots_s_with_exact_delays() -> None:
    """The finding of queries/expdelay_two_flow_sfair.toml without the model: two flows of the
    concrete sender with exact delays one design jitter apart (flow 1's box adds D = 1 step)
    disagree while their rates are within s of each other, and one AIMD step takes them past s."""
    p = params()  # s = 2, jitter = 1, qmax = 5, mu_min = 1/8: target(2) = C, target(3) = C/2
    fast = ExpDelaySender(SenderStart(1, 0, C, Fraction(1, 10), p, {"mu": Fraction(99, 100)}))
    slow = ExpDelaySender(SenderStart(1, 1, C, Fraction(1, 10), p, {"mu": Fraction(1, 2)}))
    assert fast.mu <= p["s"] * slow.mu
    path = [Fraction(0)]
    fast.decide(feedback(1, 1, path, path, Fraction(2), (2, 2)))
    slow.decide(feedback(1, 1, path, path, Fraction(3), (3, 3)))
    assert fast.state()["move"] == INCREASE  # 0.99 C < target(2) = C
    assert slow.state()["move"] == DECREASE  # C/2 >= target(3) = C/2
    assert fast.mu > p["s"] * slow.mu  # 1.115 C vs 0.4375 C: a factor 2.55
