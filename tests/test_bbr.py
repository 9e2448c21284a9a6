"""BBR (thesis 6.1): the encoding's rules hold on solver traces, the independent checker catches
corrupted traces, and semantic properties that a wrong encoding would break."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest

from conftest import answer, cca_params, make_query
from fluid_path import PathConfig, Run, admits, simulate

from ccac import solve
from ccac.ccas import get_cca
from ccac.core.errors import CcacError
from ccac.solving.validate import flow_values, validate

BBR = get_cca("bbr")
SMALL = {"name": "bbr", "window": 2, "cycle": 4}


def query(network: dict[str, Any], cca: dict[str, Any] | None = None, find: str | None = None,
          assume: list[str] | None = None, periodic: bool = False) -> Any:
    return make_query(network, cca or SMALL, find, assume, periodic)


def run(network: dict[str, Any], cca: dict[str, Any] | None = None, find: str | None = None,
        assume: list[str] | None = None, periodic: bool = False) -> Any:
    return answer(network, cca or SMALL, find, assume, periodic, timeout=60)


# ------------------------------------------------------------------ traces validate
@pytest.mark.parametrize("network, cca", [
    ({"T": 8}, SMALL),
    ({"T": 10}, {"name": "bbr"}),
    ({"T": 10, "R": 2}, SMALL),
    ({"T": 8, "flows": 2}, SMALL),
    ({"T": 8, "buffer": 1}, {**SMALL, "pacing_gain": 2}),
    ({"T": 8, "packets": True}, {**SMALL, "quanta": 1}),
])
def test_solver_traces_pass_the_independent_check(network, cca) -> None:
    result = run(network, cca)
    assert result.answer == "sat" and result.validated
    assert result.trace.flow("bw", 0) is not None and result.trace.flow("phase", 0) is not None


def test_bbr_is_always_paced() -> None:
    assert BBR.paced({}) is True


# ------------------------------------------------------------------ the checker catches corruption
def _trace(network: dict[str, Any] | None = None) -> tuple[Any, Any]:
    q = query(network or {"T": 8})
    result = solve(q, timeout=60)
    assert result.answer == "sat" and result.validated
    return q, result.trace


@pytest.mark.parametrize("series, t", [("cwnd", 5), ("bw", 6), ("rate", 4), ("bw", 1)])
def test_check_catches_a_corrupted_value(series: str, t: int) -> None:
    q, trace = _trace()
    row = trace.symbols.series[series].values[0]
    row[t] = row[t] + Fraction(1, 7) if series != "bw" or t >= 3 else row[t] - 1000
    problems = BBR.check(flow_values(trace, 0, q.flows[0].params))
    assert any(f"step {t}:" in p for p in problems), problems
    assert validate(q, trace)


def test_check_catches_a_phase_that_does_not_advance() -> None:
    q, trace = _trace()
    phase = trace.symbols.series["phase"].values[0]
    phase[3] = (phase[3] + 1) % 4
    problems = BBR.check(flow_values(trace, 0, q.flows[0].params))
    assert any("step 3" in p and "phase" in p for p in problems), problems


def test_check_passes_an_untouched_trace() -> None:
    q, trace = _trace({"T": 9, "R": 2})
    assert BBR.check(flow_values(trace, 0, q.flows[0].params)) == []


# ------------------------------------------------------------------ semantics
def test_cwnd_is_exactly_cwnd_gain_times_bdp_estimate() -> None:
    assert run({"T": 8}, find="any(cwnd[0][t] != 2 * bw[0][t] * R for t in range(T))").answer == "unsat"
    cca = {**SMALL, "cwnd_gain": 3}
    assert run({"T": 8, "R": 2}, cca, find="any(cwnd[0][t] != 3 * bw[0][t] * R for t in range(T))").answer == "unsat"


def test_rate_is_the_phase_gain_times_bw() -> None:
    wrong = ("any((phase[0][t] == 0 and rate[0][t] != {p} * bw[0][t]) or (phase[0][t] == 1 and "
             "rate[0][t] != {d} * bw[0][t]) or (phase[0][t] >= 2 and rate[0][t] != {c} * bw[0][t]) "
             "for t in range(T))")
    assert run({"T": 8}, find=wrong.format(p=1.25, d=0.75, c=1)).answer == "unsat"
    mvfst = {**SMALL, "pacing_gain": 2}
    assert run({"T": 8}, mvfst, find=wrong.format(p=2.5, d=1.5, c=2)).answer == "unsat"
    # Not vacuous: the rate does take each of the three values.
    for phase in (0, 1, 2):
        assert run({"T": 8}, find=f"any(phase[0][t] == {phase} for t in range(T))").answer == "sat"


def test_any_other_rate_is_unsat() -> None:
    find = ("any(rate[0][t] != 1.25 * bw[0][t] and rate[0][t] != 0.75 * bw[0][t] "
            "and rate[0][t] != bw[0][t] for t in range(T))")
    assert run({"T": 8}, find=find).answer == "unsat"


def test_phase_advances_once_per_rtt() -> None:
    # R = 1, cycle 4: the phase changes every step and every phase is visited in 4 steps.
    assert run({"T": 8}, find="any(phase[0][t] == phase[0][t-1] for t in range(1, T))").answer == "unsat"
    assert run({"T": 8}, find="all(phase[0][t] != 0 for t in range(4))").answer == "unsat"
    # R = 2: the phase changes every other step, at a solver-chosen alignment.
    changes = "sum(1 if phase[0][t] != phase[0][t-1] else 0 for t in range(1, T))"
    assert run({"T": 9, "R": 2}, find=f"{changes} != 4").answer == "unsat"
    assert run({"T": 9, "R": 2}, find="phase[0][1] != phase[0][0]").answer == "sat"
    assert run({"T": 9, "R": 2}, find="phase[0][1] == phase[0][0]").answer == "sat"


def test_bw_is_the_exact_max_once_the_window_is_in_the_trace() -> None:
    # window = 2 RTTs, R = 1: from step 2R + 2 - 1 = 3 on, bw = max of the samples at t-1 and t.
    exact = "max(S_f[0][u-1] - S_f[0][u-2] for u in range(t-1, t+1))"
    assert run({"T": 8}, find=f"any(bw[0][t] != {exact} for t in range(3, T))").answer == "unsat"
    # Not vacuous: the max is attained by either sample.
    assert run({"T": 8}, find="bw[0][5] == S_f[0][4] - S_f[0][3] and bw[0][5] > S_f[0][3] - S_f[0][2]").answer == "sat"
    assert run({"T": 8}, find="bw[0][5] == S_f[0][3] - S_f[0][2] and bw[0][5] > S_f[0][4] - S_f[0][3]").answer == "sat"


def test_history_samples_only_bound_bw_from_below() -> None:
    # Step 2's window holds the exact sample at 2 and a partial one at 1 (S_f[-1] <= S_f[0]).
    assert run({"T": 8}, find="bw[0][2] > S_f[0][1] - S_f[0][0] + 1").answer == "sat"
    assert run({"T": 8}, find="bw[0][2] < S_f[0][1] - S_f[0][0]").answer == "unsat"
    assert run({"T": 8}, find="bw[0][2] < S_f[0][0] - S_f[0][0] + (S_f[0][1] - S_f[0][0])").answer == "unsat"


# ------------------------------------------------------------------ periodic queries
def test_periodic_traces_repeat_bw_and_the_filter() -> None:
    result = run({"T": 9}, periodic=True)
    assert result.answer == "sat"
    bw = result.trace.flow("bw", 0)
    assert bw[0] == bw[-1]
    # The filter at step 0 holds the samples of steps -1 and 0, i.e. of the previous period's
    # steps 7 and 8 (P = 8): bw[0] = max(S[6]-S[5], S[7]-S[6]).
    S = result.trace.flow("S_f", 0)
    assert bw[0] == max(S[7] - S[6], S[6] - S[5])


def test_periodic_traces_need_whole_cycles() -> None:
    with pytest.raises(CcacError, match="multiple of 4"):
        solve(query({"T": 10}, SMALL, periodic=True), timeout=60)
    result = run({"T": 9}, SMALL, periodic=True)
    assert result.answer == "sat"
    pos = result.trace.flow("cycle_pos", 0)
    assert pos[0] == pos[-1]


def test_low_utilization_in_steady_state_is_possible() -> None:
    """Thesis 6.1: BBR's probe can fail on a smooth path, at any utilization."""
    result = run({"T": 9, "compose": True, "buffer": "inf", "D": 1, "R": 1}, SMALL,
                 find="S[T-1] - S[0] < 0.1 * C * (T-1)", periodic=True)
    assert result.answer == "sat"


# ------------------------------------------------------------------ the concrete sender
def _random_params(rng: random.Random) -> dict[str, Any]:
    """BBR's parameters, with small windows and cycles often, so the filter window often lies
    wholly in the trace (and a window without ACKs, the floor, is reached)."""
    small = rng.random() < 0.6
    return cca_params(BBR, window=rng.choice([1, 2]) if small else None,
                      cycle=rng.choice([2, 3]) if small else None,
                      pacing_gain=rng.choice([None, Fraction(2)]),
                      drain_gain=rng.choice([None, Fraction(4, 5)]),
                      quanta=rng.choice([None, None, Fraction(1), Fraction(3)]))


def _random_path(rng: random.Random, cold: bool = False) -> PathConfig:
    return PathConfig(T=rng.choice([8, 10, 12]), R=rng.choice([1, 1, 2]), D=rng.choice([0, 1, 2]),
                      buffer=rng.choice([None, Fraction(1), Fraction(2)]),
                      eta=rng.choice([Fraction(0), Fraction(0), Fraction(1, 10)]), cold=cold)


def _stalls(run: Run, window: int) -> list[int]:
    """The decision steps whose filter window lies in the trace and saw no ACK (every sample 0):
    there the encoding's filter is exact and only the floor admits the sender's estimate."""
    R, S = run.cfg.R, run.S
    return [t for t in range((2 + window) * R - 1, run.cfg.T)
            if all(S[u - R] == S[u - 2 * R] for u in range(t - window * R + 1, t + 1))]


def _random_run(seed: int) -> tuple[Run, dict[str, Any]]:
    """The concrete BBR on a random model path, sometimes taking over a filter value and a cycle
    position."""
    rng = random.Random(seed)
    cfg = _random_path(rng)
    params = _random_params(rng)
    values: dict[str, Any] = {}
    if rng.random() < 0.5:
        values["bw"] = Fraction(rng.randint(0, 8), 4)
    if rng.random() < 0.5:
        values["cycle_pos"] = rng.randrange(params["cycle"] * cfg.R)
    return simulate(cfg, BBR.concrete, params, rng, values, paced=True), params


@pytest.mark.parametrize("seed", range(24))
def test_the_encoding_admits_every_run_of_the_concrete_sender(seed: int) -> None:
    """The superset property, tested: the concrete BBR (ccac.senders.bbr) on random model paths
    (jitter, finite buffers, non-congestive loss). Every model variable and bw, phase, cycle_pos
    pinned: the encoding must admit the run, a run whose filter window saw no ACKs (the
    sender's floor) too."""
    run, params = _random_run(seed)
    R = run.cfg.R
    assert all(c > 0 and r > 0 for c, r in zip(run.cwnd[R:], run.rate[R:]))
    admits({"name": "bbr", **params}, run, fix_state=("bw", "phase", "cycle_pos"))


def test_some_random_runs_reach_the_floor_with_the_filter_in_the_trace() -> None:
    """Not vacuous: some runs of the test above stall for a whole filter window that lies in the
    trace, where the encoding's filter is exact and only the floor admits the sender."""
    stalled = 0
    for seed in range(24):
        run, params = _random_run(seed)
        stalled += bool(_stalls(run, params["window"]))
    assert stalled >= 2


@pytest.mark.parametrize("seed", range(12))
def test_the_cold_encoding_admits_a_fresh_sender(seed: int) -> None:
    """A connection's start: the concrete BBR started fresh (no filter, the cycle at its first
    decision) on a random path that carried nothing before. Its first estimates are the floor
    (no ACK yet); the cold encoding, its filter exact from step 0, must admit the run."""
    rng = random.Random(1000 + seed)
    cfg = _random_path(rng, cold=True)
    params = _random_params(rng)
    run = simulate(cfg, BBR.concrete, params, rng, paced=True)
    assert all(a == 0 for a in run.A[:cfg.R]) and run.A[cfg.R] > 0
    assert run.state[cfg.R]["bw"] == 4 * cfg.alpha / (params["cwnd_gain"] * cfg.R)   # no ACK yet: the floor
    admits({"name": "bbr", **params}, run, fix_state=("bw", "phase", "cycle_pos"))


def test_a_filter_window_without_acks_holds_the_floor() -> None:
    """Once the filter window lies in the trace, a window of RTTs without ACKs makes bw the
    floor 4 * alpha / (cwnd_gain * R) (cwnd 4 packets), not 0; any other value is unsat."""
    stall = "S_f[0][3] == S_f[0][2]"  # R = 1, window 1: the sample of step 4 is 0
    cca = {"name": "bbr", "window": 1, "cycle": 2}
    result = run({"T": 5, "alpha": 0.1}, cca, find=stall)
    assert result.answer == "sat"
    assert result.trace.flow("bw", 0)[4] == Fraction(1, 5) and result.trace.flow("cwnd", 0)[4] == Fraction(2, 5)
    assert run({"T": 5}, cca, find=f"{stall} and bw[0][4] != 2 * alpha").answer == "unsat"
    assert run({"T": 5}, {**cca, "cwnd_gain": 4}, find=f"{stall} and cwnd[0][4] != 4 * alpha").answer == "unsat"


def test_the_check_wants_the_floor() -> None:
    """The exact check: a window of zero samples wants bw at the floor, not 0 or another value."""
    q = query({"T": 5, "alpha": 0.1}, {"name": "bbr", "window": 1, "cycle": 2}, find="S_f[0][3] == S_f[0][2]")
    result = solve(q, timeout=60)
    trace = result.trace
    assert result.answer == "sat" and result.validated and trace is not None
    bw = trace.symbols.series["bw"].values[0]
    bw[4] = Fraction(1, 4)
    problems = BBR.check(flow_values(trace, 0, q.flows[0].params))
    assert any("step 4:" in p and "floor" in p for p in problems), problems


# ------------------------------------------------------------------ a connection's start
COLD = {"T": 7, "R": 1, "D": 1, "alpha": 0.1, "start": "cold"}


def test_a_cold_two_flow_trace_starts_at_the_floor() -> None:
    result = run({**COLD, "flows": 2}, {**SMALL, "quanta": 1})
    assert result.answer == "sat" and result.validated
    trace = result.trace
    for n in range(2):
        opens = trace.network.path(n).opens
        assert opens == 1 and trace.flow("A_f", n)[0] == 0 and trace.flow("A_f", n)[opens] > 0
        assert trace.flow("bw", n)[opens - 1] == Fraction(1, 5)      # 4 * alpha / (2 * R)
        assert trace.flow("cwnd", n)[opens - 1] == Fraction(1, 2)    # 4 packets + 1 quantum


def test_a_cold_filter_is_exact_from_the_start() -> None:
    """With nothing ACKed before the trace the estimate is the max sample (or the floor) at every
    step, where a trace that may start in any state only bounds it below at first."""
    exact = "max(S_f[0][u-1] - (S_f[0][u-2] if u >= 2 else 0) for u in range(max(t-1, 1), t+1))"
    find = f"any(bw[0][t] != ({exact} if {exact} > 0 else 2 * alpha) for t in range(1, T))"
    assert run(COLD, find=find).answer == "unsat"
    assert run({**COLD, "start": "any"}, find=find).answer == "sat"


def test_a_cold_start_is_offered_to_bbr() -> None:
    start = BBR.start_state(cca_params(BBR, quanta=Fraction(3)), Fraction(1), 2, Fraction(1, 10))
    assert start == {"bw": Fraction(1, 10), "cwnd": Fraction(7, 10)}
