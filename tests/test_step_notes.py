"""What holds at each step of a validated trace (:func:`ccac.solving.validate.step_notes`), the
hover of every interactive page: the query's per-step conditions part by part, and the rule each
flow's CCA took. Checked against the trace's own values, read here without ccac's compiler."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from ccac import load_query, parse_query, solve
from ccac.ccas import CCAS
from ccac.encode.expr import step_parts
from ccac.solving.validate import flow_values, step_notes

from conftest import bundled


@pytest.fixture(scope="module")
def premature() -> tuple:
    result = bundled("aimd_premature_loss")
    assert result.answer == "sat" and result.validated
    return result.query, result.trace


def test_each_part_of_a_per_step_condition_holds_where_its_comparison_does(premature: tuple) -> None:
    query, trace = premature
    R, L, cwnd = query.network.R, trace.total("L"), trace.flow("cwnd", 0)
    buffer, alpha = trace.constant("buffer"), trace.constant("alpha")
    symbols = trace.symbols.with_definitions(query.definitions)
    parts = {p.text: p.holds for p in step_parts(query.find, symbols, "find")}
    assert list(parts) == ["L[t] > L[t-1]", "cwnd[0][t] <= buffer + alpha", "Ld_f[0][t] > Ld_f[0][t-1]",
                           "S[t-R] - S[t-R-1] > C"]
    steps = range(R + 1, trace.T)
    assert parts["L[t] > L[t-1]"] == {t: L[t] > L[t - 1] for t in steps}
    assert parts["cwnd[0][t] <= buffer + alpha"] == {t: cwnd[t] <= buffer + alpha for t in steps}


def test_conditions_without_a_per_step_reading_are_left_out(premature: tuple) -> None:
    """A whole-trace condition and loops without ``t`` have no step to show; a filter keeps only
    the steps it lets through."""
    _, trace = premature
    symbols = trace.symbols
    assert step_parts("S[T-1] - S[0] > 0", symbols, "x") == []
    assert step_parts("all(cwnd[n][T-1] > 0 for n in range(1))", symbols, "x") == []
    assert step_parts("all(S[T-1] >= S[s] for s in range(T) for u in range(2))", symbols, "x") == []
    (part,) = step_parts("S[T-1] > 0 and all(S[t] >= 0 for t in range(T) if t % 2 == 0)", symbols, "x")
    assert part.text == "S[t] >= 0" and sorted(part.holds) == list(range(0, trace.T, 2))


def test_aimd_names_the_rule_of_each_step_by_its_events(premature: tuple) -> None:
    """'new loss' where a detection passes the loss mark and the window halves, 'window acked'
    where it grows by one packet, 'hold' where nothing moves it."""
    query, trace = premature
    taken = CCAS["aimd"].step_rules(flow_values(trace, 0, query.flows[0].params))
    cwnd, alpha = trace.flow("cwnd", 0), trace.constant("alpha")
    R = query.network.R
    assert sorted(taken) == list(range(R, trace.T))
    for t, (rule,) in taken.items():
        expected = {"new loss": cwnd[t] * 2 == cwnd[t - 1], "window acked": cwnd[t] == cwnd[t - 1] + alpha,
                    "hold": cwnd[t] == cwnd[t - 1]}
        assert expected[rule], (t, rule, cwnd[t - 1], cwnd[t])
    notes = step_notes(query, trace)
    assert notes["rules[0]"][R:] == [taken[t][0] for t in range(R, trace.T)] and notes["rules[0]"][:R] == [""] * R


def test_a_language_cca_names_the_branch_each_rule_took() -> None:
    """AIMD in the CCA language: each step's branch of the window's rule is the one the trace's
    window followed (halved on a new loss, one packet more per window of ACKs, else held)."""
    query = parse_query({"network": {"T": 8, "R": 1, "D": 1, "buffer": 1}, "cca": {"name": "rules-aimd"},
                         "query": {"find": "any(L[t] > L[t-1] for t in range(1, T))"}})
    result = solve(query)
    assert result.answer == "sat" and result.validated
    trace = result.trace
    cwnd, alpha = trace.flow("cwnd", 0), trace.constant("alpha")
    rules = step_notes(query, trace)["rules[0]"]
    taken = {t: dict(part.split(": ", 1) for part in note.split("; ")) for t, note in enumerate(rules) if note}
    assert len(taken) >= trace.T - 2 and all(set(branches) == {"cwnd", "loss_mark", "ack_mark"}
                                             for branches in taken.values())
    moves = {"lost > loss_mark": lambda t: cwnd[t] * 2 == cwnd[t - 1],
             "acked - ack_mark >= cwnd": lambda t: cwnd[t] == cwnd[t - 1] + alpha,
             "timeout": lambda t: cwnd[t] == alpha}
    for t, branches in taken.items():
        branch = branches["cwnd"]
        assert moves.get(branch, lambda t: cwnd[t] == cwnd[t - 1])(t), (t, branch, cwnd[t - 1], cwnd[t])
    assert {branches["cwnd"] for branches in taken.values()} & set(moves), "some step moves the window"


def test_branch_reports_the_first_condition_that_holds() -> None:
    from ccac.encode.rules import Definition

    d = Definition(name="x", summary="", params=(), state=(), window=None, rate=None, rate_when=None,
                   dupacks=None, source="")
    rule = "a if x > 0 else b if y > 0 else c"
    assert d.branch(rule, {"x": Fraction(1), "y": Fraction(1)}, "r") == "x > 0"
    assert d.branch(rule, {"x": Fraction(0), "y": Fraction(1)}, "r") == "y > 0"
    assert d.branch(rule, {"x": Fraction(0), "y": Fraction(0)}, "r") == "not (x > 0 or y > 0)"
    assert d.branch("max(1, 2 if x > 0 else 3)", {"x": Fraction(0)}, "r") == "not x > 0"
    assert d.branch("max(1, x)", {"x": Fraction(0)}, "r") is None


def test_bbr_names_the_gain_of_each_step_s_phase() -> None:
    """The thesis' BBR paces at gain * bw: the gain each step's note names is the trace's rate
    over its estimate, read here from the recorded trace."""
    from ccac.testbed.replay import load_result

    query, trace = load_result(str(Path(__file__).parent / "data" / "bbr_cold_shallow_buffer_loss.json"))
    rules = step_notes(query, trace)["rules[0]"]
    rate, bw = trace.flow("rate", 0), trace.flow("bw", 0)
    for t in range(trace.T):
        pacing, source = rules[t].split("; ")
        assert pacing.endswith(f"gain {rate[t] / bw[t]}"), (t, pacing, rate[t], bw[t])
        assert source.startswith("bw: ")
    assert any(note.endswith("the largest delivery-rate sample in the window") for note in rules)


def test_copa_names_the_way_each_step_moved_the_window() -> None:
    query = load_query("copa_steady_utilization")
    result = solve(query)
    assert result.answer == "sat" and result.validated
    trace = result.trace
    cwnd = trace.flow("cwnd", 0)
    rules = step_notes(query, trace)["rules[0]"]
    for t in range(max(query.network.R, 1), trace.T):
        up = cwnd[t] > cwnd[t - 1]
        assert rules[t].startswith("up: " if up else "down: "), (t, rules[t], cwnd[t - 1], cwnd[t])


def test_a_part_looping_over_flows_too_is_read_once_per_flow(premature: tuple) -> None:
    _, trace = premature
    parts = step_parts("all(cwnd[n][t] >= cwnd[n][t-1] / 2 for n in range(1) for t in range(1, T))",
                       trace.symbols, "x")
    assert [p.text for p in parts] == ["cwnd[n][t] >= cwnd[n][t-1] / 2 [n = 0]"]
    cwnd = trace.flow("cwnd", 0)
    assert parts[0].holds == {t: cwnd[t] >= cwnd[t - 1] / 2 for t in range(1, trace.T)}


@pytest.mark.parametrize("name, variable", [("etc_standing_queue", "action"), ("expdelay_two_flow_sfair", "move"),
                                            ("vivace_negative_gradient_decrease", "event")])
def test_a_decision_the_cca_records_is_named_at_its_step(name: str, variable: str) -> None:
    """ETC's action, expdelay's move and Vivace's rate decisions are state the CCA records;
    each step's note names the recorded value by its label, and expdelay's increase and decrease
    are where its rate went up and down."""
    query = load_query(name)
    result = solve(query)
    assert result.answer == "sat" and result.validated
    trace = result.trace
    labels = dict(next(v for v in query.flows[0].cca.state if v.name == variable).labels)
    for n in range(query.network.flows):
        rules, values = step_notes(query, trace).get(f"rules[{n}]", [""] * trace.T), trace.flow(variable, n)
        named = [f"{variable}: {labels[v]}" if v in labels else None for v in values]
        assert [next((part for part in note.split("; ") if part.startswith(f"{variable}: ")), None)
                for note in rules] == named
        if variable == "move":
            mu = trace.flow("mu", n)
            for t, note in enumerate(named):
                assert note != "move: increase" or mu[t] > mu[t - 1], (t, mu[t - 1], mu[t])
                assert note != "move: decrease" or mu[t] < mu[t - 1], (t, mu[t - 1], mu[t])
    assert any(v in labels for n in range(query.network.flows) for v in trace.flow(variable, n))
