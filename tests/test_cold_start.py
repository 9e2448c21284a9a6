"""A connection's start (``[network] start = "cold"``) and the window search (``--window``).

Cold start: a real sender started fresh on random paths of the model must be admitted by the cold
encoding (the superset property from a connection's start); a cold trace must show nothing sent
before the opening and the CCA's start state one step before it, and the validator must refuse a
trace that does not. Window search: a long cold trace found window by window is validated whole,
and a query it cannot answer is unknown, never unsat."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction as F
from typing import Callable

import pytest

from conftest import run_cli
from fluid_path import PathConfig, admits, simulate
from ccac import load_query, parse_query, search_windows, solve
from ccac.ccas import get_cca
from ccac.core.errors import CcacError
from ccac.encode.expr import Series
from ccac.problems.query import parse_resolved
from ccac.solving.validate import validate

RULES = "ccas/rules"


def cold(T: int, **network: object) -> dict[str, object]:
    return {"network": {"T": T, "R": 2, "D": 1, "buffer": 1, "start": "cold", **network},
            "cca": {"name": "aimd"}}


@pytest.mark.parametrize("seed", range(12))
def test_the_cold_encoding_admits_a_fresh_sender(seed: int) -> None:
    """The concrete AIMD started fresh (its own start: one MSS, no loss event, no ACK counted) on a
    random path that carried nothing before: every model variable pinned, the cold encoding must
    admit the run."""
    rng = random.Random(seed)
    cfg = PathConfig(T=10, R=rng.choice([1, 2]), D=rng.choice([0, 1, 2]), buffer=rng.choice([None, F(1, 2), F(1)]),
                     dupacks=rng.choice([F(0), F(1), F(3)]), cold=True)
    aimd = get_cca("aimd")
    run = simulate(cfg, aimd.concrete, {"pacing": False, "pacing_gain": F(1), "hold_in_recovery": False}, rng)
    assert all(a == 0 for a in run.A[:cfg.R]) and run.A[cfg.R] > 0
    admits({"name": "aimd"}, run, fix_state=("loss_mark", "ack_mark"))


def test_a_cold_trace_starts_where_a_connection_starts() -> None:
    result = solve(parse_query(cold(8)))
    assert result.answer == "sat" and result.validated
    trace = result.trace
    assert trace is not None
    opens = trace.network.path(0).opens
    assert opens == 2
    assert all(trace.flow("A_f", 0)[t] == 0 for t in range(opens))
    assert trace.flow("cwnd", 0)[opens - 1] == trace.constant("alpha")
    assert trace.flow("A_f", 0)[opens] > 0


def cold_trace_with(name: str, change: Callable[[F], F]) -> list[str]:
    """What the validator finds in a cold AIMD trace whose ``name`` at flow 0, step 1 (the step
    before the connection opens) is ``change``d."""
    query = parse_query(cold(8))
    result = solve(query)
    assert result.trace is not None
    series = result.trace.symbols.series
    rows = [list(row) for row in series[name].values]
    rows[0][1] = change(rows[0][1])
    series[name] = Series(name, rows, 2, series[name].missing)
    return validate(query, result.trace)


def test_the_validator_refuses_a_trace_that_sent_before_its_connection_opened() -> None:
    assert any("before its connection opens" in p for p in cold_trace_with("A_f", lambda sent: F(1, 10)))


def test_the_start_state_is_checked() -> None:
    assert any("not its start value" in p for p in cold_trace_with("cwnd", lambda cwnd: 2 * cwnd))


def test_a_language_flow_may_open_later() -> None:
    query = parse_query({"network": {"T": 10, "R": 1, "D": 1, "buffer": "inf"},
                         "flow": [{"file": f"{RULES}/rules-aimd.toml", "start": "cold"},
                                  {"file": f"{RULES}/rules-aimd.toml", "start": "cold", "start_time": 6}]},
                        source="tests/q.toml")
    assert query.network.path(1).opens == 6
    result = solve(query)
    assert result.answer == "sat" and result.validated and result.trace is not None
    assert all(result.trace.flow("A_f", 1)[t] == 0 for t in range(6))
    assert result.trace.flow("A_f", 1)[6] > 0
    again = parse_resolved(query.resolved(), "again")
    assert again.network.path(1).opens == 6 and again.network.path(0).start == "cold"


@pytest.mark.parametrize("table, message", [
    ({"network": {"T": 9, "start": "cold"}, "cca": {"name": "copa"}}, "has no start state"),
    ({"network": {"T": 9}, "flow": [{"name": "aimd", "start": "cold", "start_time": 4}]}, "needs a CCA written"),
    ({"network": {"T": 9}, "flow": [{"name": "aimd", "start_time": 4}]}, "give start = \"cold\""),
    ({"network": {"T": 9, "start": "cold"}, "cca": {"name": "aimd"}, "query": {"periodic": True}}, "opens once"),
    ({"network": {"T": 9, "start": "cold", "packets": False}, "cca": {"name": "aimd"}}, "give alpha"),
    ({"network": {"T": 9}, "flow": [{"file": f"{RULES}/rules-aimd.toml", "start": "cold", "start_time": 9}]},
     "T must be at least 10"),
    ({"network": {"T": 9}, "cca": {"name": "aimd"}, "query": {"window": 20}}, "window must be"),
])
def test_bad_cold_starts_are_named(table: dict[str, object], message: str) -> None:
    with pytest.raises(CcacError, match=message):
        parse_query(table)


def test_the_cli_names_a_bad_window() -> None:
    code, _, err = run_cli("query", "bbr_low_utilization", "--window", "5")
    assert code == 2 and "--window" in err and "periodic" in err and "Traceback" not in err
    code, _, err = run_cli("query", "aimd_premature_loss", "--set", "network.start=cold", "--set", "cca.name=copa")
    assert code == 2 and "no start state" in err and "Traceback" not in err


# ------------------------------------------------------------------ window search
def test_a_window_search_finds_a_long_cold_trace_and_validates_it_whole() -> None:
    query = parse_query({**cold(40, buffer=F(1, 5)), "query": {"find": "any(L[t] > L[t-1] for t in range(1, T))"}})
    seen = []
    result = search_windows(query, 10, on_window=seen.append)
    assert result.answer == "sat" and result.validated
    assert result.trace is not None and result.trace.T == 40
    assert [r.index for r in seen if r.answer == "sat"][-1] == 4


def test_a_window_search_never_answers_unsat() -> None:
    query = parse_query({**cold(20), "query": {"find": "A[T-1] < 0"}})
    assert solve(query).answer == "unsat"
    result = search_windows(query, 8, timeout=60)
    assert result.answer == "unknown" and "proves nothing" in (result.reason or "")


def test_the_guide_pushes_each_window() -> None:
    query = parse_query({**cold(24), "query": {"guide": "A[T-1] - A[0]", "find": "L[T-1] >= 0"}})
    low = replace(query, guide=None)
    guided, plain = search_windows(query, 8), search_windows(low, 8)
    assert guided.validated and plain.validated
    assert guided.trace is not None and plain.trace is not None
    assert guided.trace.total("A")[15] >= plain.trace.total("A")[15]


def test_a_bundled_cold_query_reads_its_window() -> None:
    query = load_query("aimd_cold_loss_below_buffer")
    assert query.window is not None and query.network.cold
