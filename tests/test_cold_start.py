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
import z3

from conftest import run_cli
from fluid_path import PathConfig, admits, simulate
from ccac import load_query, parse_query, search_windows, solve
from ccac.analysis.window_search import (RESEEDS, STUCK_FLOOR, WIDEST, Search, WindowReport, whole_run_conditions,
                                         window_line, window_query)
from ccac.problems.problem import declared
from ccac.solving.solve import Pipeline
from ccac.solving.solvers import Outcome
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


def test_a_flow_that_opens_after_its_rtt_replays_in_packets_from_its_opening() -> None:
    """The packet replay runs a cold flow's concrete sender from its opening, not from step R:
    nothing is sent before it, and the sender starts in the trace's start state (the file's
    start) the step before, so its first decisions are the trace's."""
    from ccac.testbed.replay import replay

    query = parse_query({"network": {"T": 10, "R": 1, "D": 1, "buffer": "inf"},
                         "flow": [{"file": f"{RULES}/rules-aimd.toml", "start": "cold"},
                                  {"file": f"{RULES}/rules-aimd.toml", "start": "cold", "start_time": 6}]},
                        source="tests/q.toml")
    trace = solve(query).trace
    assert trace is not None
    run = replay(query, trace).concrete
    assert all(run.flow("A_f", 1)[t] == 0 for t in range(6)) and run.flow("A_f", 1)[6] > 0
    assert run.flow("cwnd", 1)[5:7] == trace.flow("cwnd", 1)[5:7]


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


def test_each_window_asks_for_the_find_on_the_run_so_far() -> None:
    """A find "at some step" that a middle window can already meet is met there: that window's
    report says the find holds, the loss it asks for lies in that window's kept steps, and the
    windows after it only continue the run."""
    query = parse_query({**cold(40), "query": {"find": "any(L[t] > L[t-1] for t in range(1, T))"}})
    seen: list[WindowReport] = []
    result = search_windows(query, 8, on_window=seen.append)
    assert result.answer == "sat" and result.validated and result.trace is not None
    first = next(r for r in seen if r.find_held)
    assert first.index < first.windows and "the find holds" in window_line(first)
    L = result.trace.total("L")
    assert any(L[t] > L[t - 1] for t in range(first.first, first.last + 1))
    assert not any(L[t] > L[t - 1] for t in range(1, first.first))


def test_a_window_without_a_continuation_is_solved_with_the_one_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search's moves, its windows' answers scripted: a window without a continuation is
    solved again together with the window before it (their steps free again), while the two
    span at most WIDEST windows; the first window, failing, ends the search as unknown."""
    search = Search(parse_query({**cold(24), "query": {"find": "L[T-1] >= 0"}}), 8)
    answers, asked = iter(["sat", "sat", "unsat", "unsat", "unknown"]), []

    def scripted(k: int, bounds: list[tuple[int, int]], *rest: object) -> tuple[Outcome, dict[str, object] | None]:
        asked.append(bounds[k])
        answer = next(answers)
        return Outcome(answer, "scripted", None, "z3", "", 0.0), {} if answer == "sat" else None

    monkeypatch.setattr(search, "_window", scripted)
    result = search.run()
    assert asked == [(0, 8), (8, 16), (16, 24), (8, 24), (0, 24)] and WIDEST == 3
    assert result.answer == "unknown" and "window 1 of 1 (steps 0..23)" in (result.reason or "")


def test_a_window_that_runs_out_of_time_is_solved_again_with_another_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search's moves, its one window scripted to run out of time: solved again with another
    random seed of z3, twice, each within twice the time of the try before (from STUCK_FLOOR);
    the last try has all the time there is, and then the search answers unknown."""
    search = Search(parse_query({**cold(8), "query": {"find": "L[T-1] >= 0"}}), 8)
    tries = []

    def scripted(k: int, bounds: list[tuple[int, int]], values: object, avoid: object, timeout: float | None,
                 seed: int = 0) -> tuple[Outcome, None]:
        tries.append((seed, timeout))
        return Outcome("unknown", "timeout after the window's time", None, "z3", "", 0.0), None

    monkeypatch.setattr(search, "_window", scripted)
    result = search.run()
    assert tries == [(0, STUCK_FLOOR), (1, 2 * STUCK_FLOOR), (2, None)] and RESEEDS == 2
    assert result.answer == "unknown" and "ran out of its time" in (result.reason or "")


def test_the_whole_run_conditions_take_each_fixed_value_in_its_own_sort() -> None:
    """The thesis' BBR keeps integer and Boolean state (its probing phase): the query's
    conditions over the whole run state each fixed step's value as a constant of its variable's
    sort (an exact value read back as a fraction included), on the last window's variables."""
    query = parse_query({"network": {"T": 16, "R": 2, "D": 0, "buffer": F(1, 10), "start": "cold"},
                         "cca": {"name": "bbr"}, "query": {"find": "S[T-1] > S[0]"}})
    start = 8
    problem = Pipeline(window_query(query, start, 16)).build()
    _, _, enc = declared(query, z3.Context())
    assert {slot.kind for slot in enc.slots.values()} == {"real", "int", "bool"}
    values = {name: False if slot.kind == "bool" else F(0) for name, slot in enc.slots.items() if slot.step < start}
    [find] = whole_run_conditions(query, problem, values, start)
    assert str(find) == "S_0_7 + 0 > 0"  # S[15], the window's step 7, over S[0], fixed at 0


def test_a_bundled_cold_query_reads_its_window() -> None:
    query = load_query("aimd_cold_loss_below_buffer")
    assert query.window is not None and query.network.cold
