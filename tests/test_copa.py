"""Copa (thesis 6.3): the encoding's rules hold on solver traces, the independent checker catches
corrupted traces, and semantic properties that a wrong encoding would break."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest

from conftest import answer, cca_params, make_query
from fluid_path import PathConfig, admits, simulate

from ccac import solve
from ccac.ccas import get_cca
from ccac.solving.validate import flow_values, validate

COPA = get_cca("copa")
UP_OR_DOWN = "cwnd[0][t] - cwnd[0][t-1] == alpha/R or cwnd[0][t] - cwnd[0][t-1] == -alpha/R"


def query(network: dict[str, Any], cca: dict[str, Any] | None = None, find: str | None = None,
          assume: list[str] | None = None, periodic: bool = False) -> Any:
    return make_query(network, cca or {"name": "copa"}, find, assume, periodic)


def run(network: dict[str, Any], cca: dict[str, Any] | None = None, find: str | None = None,
        assume: list[str] | None = None, periodic: bool = False) -> Any:
    return answer(network, cca or {"name": "copa"}, find, assume, periodic, timeout=60)


# ------------------------------------------------------------------ traces validate
@pytest.mark.parametrize("network, cca", [
    ({"T": 8}, {"name": "copa"}),
    ({"T": 8, "R": 2}, {"name": "copa"}),
    ({"T": 8, "R": 2}, {"name": "copa", "standing": 1}),
    ({"T": 8}, {"name": "copa", "pacing": False, "delta": 0.1}),
    ({"T": 8, "flows": 2}, {"name": "copa"}),
    ({"T": 8, "buffer": 1, "compose": False}, {"name": "copa", "increment": 2}),
])
def test_solver_traces_pass_the_independent_check(network, cca) -> None:
    result = run(network, cca)
    assert result.answer == "sat" and result.validated


def test_dq_bounds_match_the_model_delay_range() -> None:
    """With standing = R = 1 the sender at t sees exactly the sample of step t-1, whose range the
    trace computes on its own (Trace.delay_range, figure 5-1B)."""
    result = run({"T": 9}, find="any(dq_lo[0][t] >= 2 for t in range(T))")
    trace = result.trace
    lo, hi = trace.flow("dq_lo", 0), trace.flow("dq_hi", 0)
    assert lo[0] == 0 and hi[0] == 9
    for t in range(1, 9):
        low, high = trace.delay_range(t - 1)
        assert lo[t] == low
        assert hi[t] == (high if high is not None else 9)


# ------------------------------------------------------------------ the checker catches corruption
def _trace(network: dict[str, Any] | None = None) -> tuple[Any, Any]:
    q = query(network or {"T": 8})
    result = solve(q, timeout=60)
    assert result.answer == "sat" and result.validated
    return q, result.trace


@pytest.mark.parametrize("t", [3, 6])
def test_check_catches_a_corrupted_cwnd(t: int) -> None:
    q, trace = _trace()
    cwnd = trace.symbols.series["cwnd"].values[0]
    cwnd[t] = cwnd[t] + Fraction(1, 3) * trace.constant("alpha")
    problems = COPA.check(flow_values(trace, 0, q.flows[0].params))
    assert any(f"step {t}: cwnd changed" in p for p in problems), problems
    assert validate(q, trace)


def test_check_catches_a_move_the_delay_does_not_allow() -> None:
    # A decrease with cwnd <= alpha/delta is never allowed (the rate is below target at any dq).
    q, trace = _trace()
    values = flow_values(trace, 0, q.flows[0].params)
    alpha = values.alpha
    values.cwnd = [k * alpha for k in (3, 2, 1, 2, 3, 4, 5, 6)][: values.T]
    problems = COPA.check(values)
    assert any("step 2: cwnd decreased but every standing delay" in p for p in problems), problems


def test_check_catches_corrupted_delay_bounds_and_rate() -> None:
    q, trace = _trace()
    trace.symbols.series["dq_lo"].values[0][4] += 1
    # above pacing_gain (2) x cwnd / RTT for every RTT >= R = 1, whatever trace the solver chose
    trace.symbols.series["rate"].values[0][5] = 3 * trace.symbols.series["cwnd"].values[0][5] + 1
    problems = COPA.check(flow_values(trace, 0, q.flows[0].params))
    assert any("step 4: standing delay" in p for p in problems), problems
    assert any("step 5: pacing rate" in p for p in problems), problems


def test_check_passes_an_untouched_trace() -> None:
    q, trace = _trace({"T": 8, "R": 2})
    assert COPA.check(flow_values(trace, 0, q.flows[0].params)) == []


# ------------------------------------------------------------------ semantics
def test_cwnd_moves_by_exactly_one_increment_after_the_history() -> None:
    assert run({"T": 8}, find=f"any(not ({UP_OR_DOWN}) for t in range(R, T))").answer == "unsat"
    assert run({"T": 8, "R": 2}, find=f"any(not ({UP_OR_DOWN}) for t in range(R, T))").answer == "unsat"
    both = "any(cwnd[0][t] > cwnd[0][t-1] for t in range(R, T)) and any(cwnd[0][t] < cwnd[0][t-1] for t in range(R, T))"
    assert run({"T": 8}, find=both).answer == "sat"
    # The history step before R is free.
    assert run({"T": 8, "R": 2}, find="cwnd[0][1] - cwnd[0][0] > 3 * alpha").answer == "sat"


def test_no_decrease_below_alpha_over_delta() -> None:
    """f(dq) = cwnd*dq - (alpha/delta)(R+dq) < 0 for every dq when cwnd <= alpha/delta."""
    find = "any(cwnd[0][t] < cwnd[0][t-1] and cwnd[0][t-1] <= alpha / 0.5 for t in range(R, T))"
    assert run({"T": 8}, find=find).answer == "unsat"
    assert run({"T": 8}, {"name": "copa", "delta": 0.25},
               find=find.replace("alpha / 0.5", "alpha / 0.25")).answer == "unsat"
    assert run({"T": 8}, find=find.replace("alpha / 0.5", "alpha / 0.4")).answer == "sat"


def test_a_provably_short_queue_forces_an_increase() -> None:
    """Every byte served within one step of its admission: dq is in [0, 1], and at dq <= 1 the
    rate is below target unless cwnd > (alpha/delta)(R+1), so a smaller cwnd must grow."""
    short = ["all(S[t] > A[t-1] - L[t-1] for t in range(1, T))"]
    small = "cwnd[0][t-1] <= (alpha / 0.5) * (R + 1)"
    down = "cwnd[0][t] < cwnd[0][t-1]"
    # From step R+1 on, every sample in the window has a finite bound (the step-0 one does not).
    assert run({"T": 8}, assume=short, find=f"any({down} and {small} for t in range(R + 1, T))").answer == "unsat"
    assert run({"T": 8}, assume=short, find=f"any({down} for t in range(R + 1, T))").answer == "sat"


def test_a_provably_standing_queue_forbids_an_increase_of_a_large_window() -> None:
    """dq_lo >= 1 and cwnd > (alpha/delta)(R+1): f(1) > 0 and f grows, so no dq allows growth."""
    up = "cwnd[0][t] > cwnd[0][t-1]"
    big = "cwnd[0][t-1] > (alpha / 0.5) * (R + 1)"
    assert run({"T": 8}, find=f"any(dq_lo[0][t] >= 1 and {big} and {up} for t in range(R, T))").answer == "unsat"
    assert run({"T": 8}, find=f"any(dq_lo[0][t] >= 1 and {up} for t in range(R, T))").answer == "sat"
    assert run({"T": 8}, find=f"any(dq_lo[0][t] >= 1 and {big} for t in range(R, T))").answer == "sat"


def test_pacing_rate_stays_in_its_band() -> None:
    above = "any(dq_lo[0][t] == 1 and rate[0][t] * (R + 1) > 2 * cwnd[0][t] for t in range(T))"
    below = "any(dq_hi[0][t] == 2 and rate[0][t] * (R + 2) < 2 * cwnd[0][t] for t in range(T))"
    assert run({"T": 8}, find=above).answer == "unsat"
    assert run({"T": 8}, find=below).answer == "unsat"
    inside = "any(dq_lo[0][t] == 1 and dq_hi[0][t] == 2 and rate[0][t] * (R + 1) < 2 * cwnd[0][t] for t in range(T))"
    assert run({"T": 8}, find=inside).answer == "sat"
    # History steps: no samples, so only the upper end g*cwnd/R applies.
    assert run({"T": 8}, find="rate[0][0] * R > 2 * cwnd[0][0]").answer == "unsat"


# ------------------------------------------------------------------ periodic queries
def test_periodic_parity_at_r_1() -> None:
    """R = 1: cwnd returns to its start only after an even number of moves (documented trap)."""
    assert run({"T": 8}, periodic=True).answer == "unsat"
    result = run({"T": 9}, periodic=True)
    assert result.answer == "sat"
    cwnd = result.trace.flow("cwnd", 0)
    assert cwnd[0] == cwnd[-1]


UTIL = {"find": "S[T-1] - S[0] < 0.1 * C * (T-1)", "assume": ["alpha <= C*R/10", "alpha >= C*R/20"],
        "periodic": True}


def test_standing_queue_starves_copa_only_when_boxes_compose() -> None:
    """Thesis 6.3.1: < 10% utilization in steady state with the composing path-server, not with
    a single box (with alpha bounded below, see the module docstring on the step grid)."""
    network = {"T": 9, "R": 1, "D": 1, "buffer": "inf"}
    assert run({**network, "compose": True}, **UTIL).answer == "sat"
    assert run({**network, "compose": False}, **UTIL).answer == "unsat"
    # The single-box answer is not vacuous: its steady states exist, at higher utilization.
    assert run({**network, "compose": False}, assume=UTIL["assume"], periodic=True,
               find="S[T-1] - S[0] < 0.3 * C * (T-1)").answer == "sat"


def test_a_reading_of_an_unknown_past_may_be_what_some_past_gives() -> None:
    """At step 0 every sample is from before the trace: any bracket [q, q + 1], or an unbounded
    one, is what some past gives (a periodic trace repeated shows its own); an inverted or
    empty bracket is what no past gives."""
    q, trace = _trace()
    lo, hi = trace.symbols.series["dq_lo"].values[0], trace.symbols.series["dq_hi"].values[0]
    values = lambda: flow_values(trace, 0, q.flows[0].params)  # noqa: E731
    lo[0], hi[0] = 2, 3
    assert not any(p.startswith("step 0: standing delay") for p in COPA.check(values()))
    lo[0], hi[0] = 3, 3
    assert any(p.startswith("step 0: standing delay") for p in COPA.check(values()))


# ------------------------------------------------------------------ the concrete sender
@pytest.mark.parametrize("seed", range(24))
def test_the_encoding_admits_every_run_of_the_concrete_sender(seed: int) -> None:
    """The superset property, tested: the concrete Copa (ccac.senders.copa) on random model
    paths (standing queues, jitter, losses), its RTT samples anywhere in the model's delay
    reading, every model variable pinned: the encoding must admit the run. Its state (the
    integer bracket of dq) is a function of the curves, so nothing more is pinned."""
    rng = random.Random(seed)
    F = Fraction
    R = rng.choice([1, 2])
    cfg = PathConfig(T=rng.choice([8, 9]), R=R, D=rng.choice([0, 1, 2]), buffer=rng.choice([None, None, F(1), F(2)]),
                     eta=rng.choice([F(0), F(0), F(1, 10)]), alpha=rng.choice([F(1, 10), F(1, 4)]))
    params = cca_params(COPA, delta=rng.choice([None, F(1, 4), F(1, 10)]), standing=rng.choice([None, 1, 2]),
                        increment=rng.choice([None, F(1, 2), F(2)]), pacing=rng.random() < 0.6,
                        pacing_gain=rng.choice([None, F(1)]))
    values = {"cwnd": cfg.alpha * rng.randint(1, 30)}
    run = simulate(cfg, COPA.concrete, params, rng, values, paced=params["pacing"])
    admits({"name": "copa", **{k: v for k, v in params.items() if v is not None}}, run)
    moves = {run.cwnd[t] - run.cwnd[t - 1] for t in range(R + 1, cfg.T)}
    assert moves <= {cfg.alpha * params["increment"] / R, -cfg.alpha * params["increment"] / R}
