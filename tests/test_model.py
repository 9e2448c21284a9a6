"""The path-server model: each rule is enforced (violating it is unsat) and is not stronger
than the thesis says (the behaviour it permits is sat). Small horizons throughout."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ccac import parse_query, solve
from ccac.solving.validate import validate
from conftest import answer

FINITE = {"T": 6, "R": 1, "D": 1, "buffer": 1}
INF = {"T": 6, "R": 1, "D": 1, "buffer": "inf"}


@pytest.mark.parametrize("network, find", [
    (INF, "any(S[t] > C*t - W[t] for t in range(T))"),                       # no more than the tokens
    (INF, "any(S[t] < C*(t-D) - W[t-D] for t in range(D, T))"),              # tokens held <= D steps
    (INF, "any(S_f[0][t] > A_f[0][t] - L_f[0][t] for t in range(T))"),      # serve only admitted bytes
    (INF, "any(W[t] > W[t-1] and A[t] - L[t] > C*t - W[t] for t in range(1, T))"),  # waste rule
    (INF, "any(W[t] - W[t-1] > C for t in range(1, T))"),                    # C*t - W non-decreasing
    (INF, "L[T-1] > L[0]"),                                                  # infinite buffer: no loss
    (FINITE, "any(A[t] - L[t] > C*t - W[t] + buffer for t in range(T))"),   # loss-forced threshold
    (FINITE, "any(L[t] > L[t-1] and A[t] - L[t] < C*(t-1) - W[t-1] + buffer for t in range(1, T))"),
    (FINITE, "any(Ld_f[0][t] > L_f[0][t-R] for t in range(R, T))"),         # cannot detect the future
    (FINITE, "any(A_f[0][t] - L_f[0][t] < A_f[0][t-1] - L_f[0][t-1] for t in range(1, T))"),
    (FINITE, "any(A_f[0][t] > S_f[0][t-R] + Ld_f[0][t] + cwnd[0][t] and A_f[0][t] > A_f[0][t-1] "
             "for t in range(R, T))"),                                        # ACK clocking
])
def test_violating_a_rule_is_unsat(network: dict, find: str) -> None:
    assert answer(network, {"name": "any"}, find).answer == "unsat"


@pytest.mark.parametrize("network, cca, find", [
    (FINITE, {"name": "any"}, "L[T-1] > L[0]"),                                   # loss is possible
    (INF, {"name": "any"}, "W[T-1] > W[0]"),                                      # waste is possible
    (INF, {"name": "any"}, "any(S[t] == C*(t-D) - W[t-D] for t in range(D, T))"),  # jitter up to D
    (FINITE, {"name": "aimd"}, "any(timeout[0][t] for t in range(T))"),          # timeouts happen
    (FINITE, {"name": "aimd"}, "any(Ld_f[0][t] > Ld_f[0][t-1] for t in range(R, T))"),  # detection
])
def test_permitted_behaviour_is_sat(network: dict, cca: dict, find: str) -> None:
    assert answer(network, cca, find).answer == "sat"


def test_timeout_only_when_everything_in_flight_is_lost() -> None:
    find = ("any(timeout[0][t] and S_f[0][t-R] < A_f[0][t-R] - L_f[0][t-R] for t in range(R, T))")
    assert answer(FINITE, {"name": "aimd"}, find).answer == "unsat"


def test_single_box_wastes_only_with_an_empty_queue() -> None:
    net = {**INF, "compose": False}
    find = "any(W[t] > W[t-1] and A[t] - L[t] > S[t] for t in range(1, T))"
    assert answer(net, {"name": "any"}, find).answer == "unsat"
    assert answer(INF, {"name": "any"}, find).answer == "sat"  # the composing model may


def test_single_box_epsilon_relaxes_the_waste_rule() -> None:
    find = "any(W[t] > W[t-1] and A[t] - L[t] > S[t] for t in range(1, T))"
    assert answer({**INF, "compose": False, "epsilon": 0.5}, {"name": "any"}, find).answer == "sat"


def test_non_congestive_loss_is_bounded_by_eta() -> None:
    net = {**INF, "eta": 0.1}
    assert answer(net, {"name": "any"}, "L[T-1] > L[0]").answer == "sat"
    assert answer(net, {"name": "any"}, "L[T-1] - L[0] > 0.1 * (A[T-1] - A[0])").answer == "unsat"


def test_fifo_between_flows() -> None:
    net = {**INF, "flows": 2}
    overtaken = ("any(S[t] >= A[s] - L[s] and S_f[1][t] < A_f[1][s] - L_f[1][s] "
                 "for t in range(T) for s in range(t))")
    assert answer(net, {"name": "any"}, overtaken).answer == "unsat"
    assert answer(net, {"name": "any"}, "S_f[1][T-1] > S_f[0][T-1]").answer == "sat"


def test_constant_window_sender_keeps_cwnd_in_flight() -> None:
    find = "any(A[t] - S[t-R] - Ld_f[0][t] != 2 for t in range(R, T))"
    # With no losses (none undetected at the start, none possible with an infinite buffer) a
    # window of 2 BDP keeps exactly 2 bytes beyond the ACKs, unless it started with more
    # outstanding (A never decreases).
    assumption = ["Ld_f[0][0] == L_f[0][0]", "A[R-1] - S[0] - Ld_f[0][0] <= 2"]
    assert answer(INF, {"name": "const", "cwnd": 2}, find, assumption).answer == "unsat"


# ------------------------------------------------------------------ property: every trace validates
configs = st.fixed_dictionaries({
    "T": st.integers(4, 7), "R": st.integers(1, 2), "D": st.integers(0, 2),
    "buffer": st.sampled_from(["inf", 0.5, 1, 2]), "compose": st.booleans(),
    "flows": st.integers(1, 2), "eta": st.sampled_from([0, 0.05]),
})


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(net=configs, cca=st.sampled_from([{"name": "any"}, {"name": "const", "cwnd": 1.5, "pacing": True},
                                         {"name": "aimd"}, {"name": "aimd", "pacing": True}]),
       goal=st.sampled_from(["L[T-1] > L[0]", "W[T-1] > W[0]", "S[T-1] > S[0]",
                             "any(Ld_f[0][t] > Ld_f[0][t-1] for t in range(1, T))"]))
def test_every_solver_trace_passes_the_independent_validator(net: dict, cca: dict, goal: str) -> None:
    if net["T"] < net["R"] + net["D"] + 1:
        net = {**net, "T": net["R"] + net["D"] + 1}
    r = solve(parse_query({"network": net, "cca": cca, "query": {"find": goal}}), timeout=60)
    assert r.answer in ("sat", "unsat")
    if r.answer == "sat":
        assert r.violations == []


# ------------------------------------------------------------------ the validator catches corruption
@pytest.fixture(scope="module")
def loss_trace():
    q = parse_query({"network": FINITE, "cca": {"name": "aimd"},
                     "query": {"assume": ["alpha <= 0.1"], "find": "L[T-1] > L[0]"}})
    r = solve(q)
    assert r.answer == "sat" and r.validated
    return q, r.trace


@pytest.mark.parametrize("series, flow, t, delta, expected", [
    ("S_f", 0, 5, Fraction(1000), "served more than the tokens"),
    ("W", None, 3, Fraction(-1000), "waste decreased"),
    ("A_f", 0, 4, Fraction(1, 7), "cwnd/pacing allow exactly"),
    ("cwnd", 0, 4, Fraction(1, 7), "AIMD rule"),
])
def test_validator_names_a_corrupted_value(loss_trace, series, flow, t, delta, expected) -> None:
    q, trace = loss_trace
    values = trace.symbols.series[series].values
    row = values if flow is None else values[flow]
    original = row[t]
    row[t] = original + delta
    try:
        problems = validate(q, trace)
    finally:
        row[t] = original
    assert any(expected in p for p in problems), problems
    assert validate(q, trace) == []
