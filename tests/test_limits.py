"""No input may make ccac run or allocate without bound (``ccac.core.limits``).

Each limit is exercised through the command line in a child process with a 1 GiB address-space
limit and a wall-clock bound: bad input exits 2 with one ``error:`` line, a time limit exits 3
with an ``unknown: timeout:`` answer, never a traceback. A property test then throws random
expressions and random query files at the parser and the formula builder.
"""

from __future__ import annotations

import importlib
import math
import os
import re
import resource
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from ccac.core import limits
from ccac.solving.solvers import SOLVERS
from ccac.core.errors import CcacError
from ccac.core.backstop import GRACE
from ccac.core.deadline import TimeLimit, current, time_limit
from ccac.core.limits import MAX_EXPANSION
from ccac.problems.problem import build
from ccac.problems.query import load_query, parse_query

ROOT = Path(__file__).resolve().parent.parent
SOLVE = importlib.import_module("ccac.solving.solve")  # the module (the package's `solve` is the function)
MEMORY = 2**30  # address space of each child process
# every bad input is refused within this: a refusal, not a run (the inputs below would take hours
# or exhaust memory if expanded). Generous, because the suite shares its cores with other workers.
BAD_INPUT_SECONDS = 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run(*args: str, seconds: float = BAD_INPUT_SECONDS) -> tuple[int, str, str, float]:
    """``ccac ARGS`` in a child process with 1 GiB of address space; (exit code, stdout, stderr,
    wall seconds). A run longer than ``seconds`` fails the test."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", "from ccac.commands.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=seconds, preexec_fn=_limit_memory,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


def query_file(tmp_path: Path, find: str, network: str = "T = 10", extra: str = "") -> str:
    path = tmp_path / "q.toml"
    path.write_text(f'[network]\n{network}\n[cca]\nname = "aimd"\n{extra}\n[query]\nfind = """{find}"""\n')
    return str(path)


def assert_bad_input(code: int, err: str, *texts: str) -> None:
    """Exit 2 with exactly one line on stderr, ``error: ...`` containing ``texts``."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for text in texts:
        assert text in lines[0], lines[0]


# ---------------------------------------------------------------------- expressions
def test_a_huge_range_is_refused_before_it_is_iterated(tmp_path: Path) -> None:
    code, _, err, seconds = run("query", query_file(tmp_path, "any(L[0] > t for t in range(0, 10**9))"))
    assert_bad_input(code, err, "query.find", "would run 1,000,000,000 times", "MAX_EXPANSION")
    assert seconds < BAD_INPUT_SECONDS


def test_nested_ranges_are_multiplied_before_the_first_iteration(tmp_path: Path) -> None:
    find = "any(L[0] > t + u for t in range(10**4) for u in range(10**4))"
    code, _, err, seconds = run("query", query_file(tmp_path, find))
    assert_bad_input(code, err, "query.find", "nested loops would run 100,000,000 times",
                     "range(10**4): 10,000 × range(10**4): 10,000")
    assert seconds < BAD_INPUT_SECONDS


def test_a_huge_power_is_refused_before_it_is_computed(tmp_path: Path) -> None:
    code, _, err, seconds = run("query", query_file(tmp_path, "2**10**10 > 1"))
    assert_bad_input(code, err, "query.find", "power too large", "10,000,000,000 bits", "MAX_NUMBER_BITS")
    assert seconds < BAD_INPUT_SECONDS


def test_numbers_grown_by_products_are_refused(tmp_path: Path) -> None:
    code, _, err, _ = run("query", query_file(tmp_path, "2**9000 * 2**9000 > L[0]"))
    assert_bad_input(code, err, "query.find", "18,002 bits", "MAX_NUMBER_BITS")


def test_a_decimal_literal_beyond_float_range_is_refused(tmp_path: Path) -> None:
    code, _, err, _ = run("query", query_file(tmp_path, "L[0] < 1e309"))
    assert_bad_input(code, err, "query.find", "number too large: a decimal literal")


@pytest.mark.parametrize("extra, cca", [
    ("", ""),   # the assumption makes the MSS a 401-digit number
    ("", 'file = "big.toml"'),   # a CCA parameter of 1e308, cubed by its rule
])
def test_values_beyond_float_range_are_printed_plotted_and_saved_without_a_traceback(tmp_path: Path, extra: str,
                                                                                    cca: str) -> None:
    """A trace's values grow as large as its assumptions make them: the table shows them
    (scientific notation past the float range), the plot and the JSON take them (the JSON's
    "float" is null there, its "exact" exact)."""
    (tmp_path / "big.toml").write_text('name = "big"\n[params]\nbig = 1e308\n'
                                       '[state.cwnd]\nrule = "big * big * big"\n')
    (tmp_path / "q.toml").write_text(
        '[network]\nT = 6\n[cca]\n' + (cca or 'name = "aimd"') + '\n[query]\n'
        + ('assume = ["alpha == 10**400 + 0.5"]\n' if not cca else 'assume = ["cwnd[0][3] > 1"]\n') + 'find = "True"\n')
    code, out, err, _ = run("query", str(tmp_path / "q.toml"), "--plot", str(tmp_path / "p.png"),
                            "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "t.csv"))
    assert code == 0 and "Traceback" not in err and "validated: yes" in out, (out, err)
    # a whole number exactly, others in scientific notation
    assert ("e+" in out or max(len(word) for word in out.split()) > 900) and (tmp_path / "p.png").stat().st_size > 0
    text = (tmp_path / "r.json").read_text()
    assert '"float": null' in text and "Infinity" not in text


def test_shift_is_not_an_operator(tmp_path: Path) -> None:
    code, _, err, _ = run("query", query_file(tmp_path, "1 << 10**10 > L[0]"))
    assert_bad_input(code, err, "query.find", "unsupported operator")


def test_definitions_count_towards_the_expression_that_expands_them(tmp_path: Path) -> None:
    """Each definition doubles the one before: 2^30 terms, refused while the count passes the
    limit, naming the query's place and the definition being expanded."""
    defs = "\n".join(['[definitions]', 'd0 = "L[0]"'] + [f'd{i} = "d{i - 1} + d{i - 1}"' for i in range(1, 31)])
    code, _, err, seconds = run("query", query_file(tmp_path, "d30 > 0", extra=defs))
    assert_bad_input(code, err, "query.find", f"more than {MAX_EXPANSION:,} syntax nodes",
                     "while expanding definition")
    assert seconds < BAD_INPUT_SECONDS


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    code, _, err, _ = run("query", query_file(tmp_path, "-" * 5000 + "L[0] > 0"))
    assert_bad_input(code, err, "query.find", "nested too deeply")
    code, _, err, _ = run("query", query_file(tmp_path, "L[0]" + " + 1" * 250 + " > 0"))
    assert_bad_input(code, err, "query.find", "nests 254 levels deep, more than 200 (ccac.core.limits.MAX_DEPTH)")


def test_a_number_written_with_a_huge_exponent_is_refused(tmp_path: Path) -> None:
    code, _, err, seconds = run("query", query_file(tmp_path, "L[0] > x", extra='[params]\nx = "1e999999999"'))
    assert_bad_input(code, err, "params.x", "exponent 999999999")
    assert seconds < BAD_INPUT_SECONDS


# ---------------------------------------------------------------------- horizon
def test_a_horizon_beyond_the_machine_memory_is_refused_when_read(tmp_path: Path) -> None:
    code, _, err, seconds = run("query", "aimd_premature_loss", "--set", "network.T=1000000")
    assert_bad_input(code, err, "network.T", "T = 1,000,000 with 1 flow is too large",
                     "the largest T that fits is")
    assert seconds < BAD_INPUT_SECONDS


def test_too_many_flows_are_refused_when_read(tmp_path: Path) -> None:
    code, _, err, _ = run("query", "aimd_premature_loss", "--set", "network.flows=1000000000")
    assert_bad_input(code, err, "network.T", "1,000,000,000 flows is too large", "flows fit")


def test_bench_horizons_and_proof_windows_are_bounded_too(tmp_path: Path) -> None:
    code, _, err, _ = run("query", "aimd_premature_loss", "--set", "query.horizons=[10, 1000000]")
    assert_bad_input(code, err, "query.horizons", "a horizon = 1,000,000")
    proof = tmp_path / "p.toml"
    proof.write_text('[network]\nT = 6\n[cca]\nname = "const"\n[steady_state]\nT = 1000000\n'
                     'region = ["A[t] - L[t] - S[t] <= 10"]\n')
    code, _, err, _ = run("prove", str(proof))
    assert_bad_input(code, err, "steady_state.T", "too large")


def test_the_horizon_limit_keeps_t_1000_on_a_16_gb_machine() -> None:
    assert limits.max_horizon(1, 16 * 10**9) >= 1000
    assert limits.max_horizon(1, 16 * 10**9) < 5000  # the measured runaway case stays refused


def test_a_grid_is_bounded_as_a_whole(tmp_path: Path) -> None:
    code, _, err, _ = run("sweep", "const_service_at_capacity", "--grid", "params.a=1:1000:1",
                          "--grid", "params.b=1:1000:1")
    assert_bad_input(code, err, "--grid", "1,000,000 points")


# ---------------------------------------------------------------------- time
def test_timeout_stops_building_and_says_where(tmp_path: Path) -> None:
    """Copa at T = 300 takes about 25 s to build; --timeout 3 answers unknown after about 3 s.
    (Not periodic: a periodic query's history would make T = 300 too large for 1 GiB.)"""
    code, out, err, seconds = run("query", "copa_low_utilization_composing", "--set", "network.T=300",
                                  "--set", "query.periodic=false", "--timeout", "3")
    assert code == 3, err
    assert "Traceback" not in err
    answer = next(line for line in out.splitlines() if line.startswith("unknown"))
    assert answer.startswith("unknown: timeout: building the formula took more than 3 s ("), out
    # where it stopped: a step of a constraint group (the checkpoint) or a line of ccac's code
    # (the backstop, when one call builds for long, as Copa's encoder does at T = 300)
    assert re.search(r"\((reached step \d+ of 300 in \S+|stopped in \S+:\d+ )", answer), answer
    assert "solver: z3" in out and re.search(r", not run \(building stopped after 3\.\d+ s\)", out)
    assert seconds < BAD_INPUT_SECONDS


def test_timeout_stops_a_loop_that_adds_no_constraints(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work that never reaches a checkpoint (here a CCA encoder looping in pure Python) is
    stopped by the SIGALRM backstop, which names the line of ccac's own code it stopped in."""
    from ccac.ccas import CCAS

    def endless(ctx: Any) -> dict[str, list[Any]]:
        while True:
            sum(range(1000))

    monkeypatch.setattr(CCAS["const"], "encode", endless)
    start = time.monotonic()
    result = SOLVE.solve(load_query("const_service_at_capacity", ["network.T=6"]), timeout=1)
    assert time.monotonic() - start < 1 + GRACE + 1
    assert result.answer == "unknown"
    assert result.reason.startswith("timeout: building the formula took more than 1 s (stopped in ccac/problems/problem.py:")


@pytest.mark.parametrize("query, key", [("aimd_premature_loss", "allegro.mi_hi"),
                                        ("bbr_low_utilization", "bbr.cycle"),
                                        ("proteus_p_negative_gradients_ignored", "proteus-p.mi")])
def test_a_huge_cca_duration_is_refused_when_read(query: str, key: str) -> None:
    """CCA parameters in steps or RTTs are bounded by MAX_DURATION (docs/query-language.md: Limits)."""
    cca, name = key.split(".")
    args = ["--set", f'cca.name="{cca}"'] if query == "aimd_premature_loss" else []
    code, _, err, _ = run("query", query, *args, "--set", f"cca.{name}=1000000000", "-q")
    assert_bad_input(code, err, f"cca.{name}", f"must be at most {limits.MAX_DURATION}")


def test_a_periodic_history_counts_toward_the_horizon() -> None:
    """BBR's filter window is part of a periodic query's history: 64 RTTs at R = 64 is a history
    of over 4,000 steps (a formula of about 135 GB), refused when read, before anything is built."""
    code, _, err, _ = run("query", "bbr_low_utilization", "--set", "cca.window=64", "--set", "network.R=64",
                          "--set", "network.T=257", "-q")
    assert_bad_input(code, err, "query.periodic", "periodic query's history")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_timeout_must_be_a_positive_number_of_seconds(value: str) -> None:
    code, _, err, _ = run("query", "const_service_at_capacity", "--timeout", value)
    assert_bad_input(code, err, "--timeout: must be a positive number of seconds")


def test_the_solver_gets_the_time_building_left(monkeypatch: pytest.MonkeyPatch) -> None:
    given_to_solver: list[float | None] = []
    real = SOLVERS["z3"]

    def spy(formulas: list[Any], timeout: float | None) -> Any:
        given_to_solver.append(timeout)
        return real(formulas, timeout)

    monkeypatch.setitem(SOLVERS, "z3", spy)
    result = SOLVE.solve(load_query("const_service_at_capacity", ["network.T=6"]), timeout=30)
    assert result.answer == "sat" and result.validated
    assert given_to_solver and 0 < given_to_solver[0] < 30 - result.build_seconds + 0.5


def test_timeout_covers_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sat answer whose validation outlasts the limit is unknown, never reported unvalidated."""
    def slow_validate(*args: Any) -> list[str]:
        while True:  # pure Python that adds no constraint: only the backstop can stop it
            sum(range(1000))

    monkeypatch.setattr(SOLVE, "validate", slow_validate)
    start = time.monotonic()
    result = SOLVE.solve(load_query("const_service_at_capacity", ["network.T=6"]), timeout=1.5)
    assert time.monotonic() - start < 1.5 + GRACE + 1
    assert result.answer == "unknown" and result.trace is None and result.validated is None
    assert result.reason.startswith("timeout: the limit of 1.5 s ran out while reading back and validating "
                                    "the trace"), result.reason
    assert "the solver answered sat" in result.reason


def test_nested_time_limits_keep_the_earlier_deadline() -> None:
    with time_limit(100) as outer:
        with time_limit(None) as inner:
            assert inner.deadline == outer.deadline
        with time_limit(0.05):
            with pytest.raises(TimeLimit, match="building the formula took more than 0.05 s"):
                build(load_query("aimd_premature_loss", ["network.T=200"]))
        assert not outer.expired()
    assert current() is None


# ---------------------------------------------------------------------- random input
NAMES = ["L[0]", "S[T-1]", "A[1]", "W[0]", "cwnd[0][1]", "cwnd[0][t]", "L[t]", "S[t-1]", "alpha", "C", "T",
         "R", "t", "u", "buffer", "dupacks", "flows", "S_f[0][2]", "L", "cwnd[0]", "nosuch"]
HUGE = ["10**9", "10**100", "2**10**10", "10**10**10", str(2**200), "9" * 400, "-10**18", "1e308", "0.1",
        "2**9999", "(1/3)**5000"]
BOUNDS = ["0", "1", "2", "T", "T - 1", "R + 1", "t", "10**9", "10**100", "2**64", "-10**9", "10**4"]


def _numbers() -> st.SearchStrategy[str]:
    return st.one_of(st.integers(-20, 20).map(str), st.sampled_from(HUGE),
                     st.fractions(max_denominator=7).map(lambda f: f"({f.numerator}/{f.denominator})"))


def _loops(body: st.SearchStrategy[str], kinds: list[str]) -> st.SearchStrategy[str]:
    """``kind(body for v in range(a, b) ...)`` with one to three (possibly nested) loops."""
    loops = st.lists(st.tuples(st.sampled_from(["t", "u"]), st.sampled_from(BOUNDS), st.sampled_from(BOUNDS)),
                     min_size=1, max_size=3)
    return st.tuples(st.sampled_from(kinds), body, loops).map(
        lambda x: f"{x[0]}({x[1]} " + " ".join(f"for {v} in range({a}, {b})" for v, a, b in x[2]) + ")")


def _expressions() -> st.SearchStrategy[str]:
    """Random expressions from a small grammar: numbers (huge ones too), names, arithmetic
    (``**``, ``//``, ``%``, ``<<`` included), comparisons, logic, helpers and nested loops."""
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        ops = ["+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!=", "and", "or", "<<"]
        return st.one_of(
            st.tuples(inner, st.sampled_from(ops), inner).map(lambda x: f"({x[0]} {x[1]} {x[2]})"),
            inner.map(lambda e: f"(not {e})"),
            inner.map(lambda e: f"(-{e})"),
            st.tuples(inner, inner, inner).map(lambda x: f"({x[0]} if {x[1]} else {x[2]})"),
            st.tuples(st.sampled_from(["abs", "implies", "min", "max", "throughput", "utilization", "sfair"]),
                      st.lists(inner, min_size=1, max_size=3)).map(lambda x: f"{x[0]}({', '.join(x[1])})"),
            _loops(inner, ["any", "all", "sum", "min", "max"]),
        )

    return st.recursive(st.one_of(_numbers(), st.sampled_from(NAMES)), extend, max_leaves=10)


NUMERIC_NAMES = ["L[0]", "S[T-1]", "A[1]", "W[0]", "cwnd[0][1]", "alpha", "C", "T", "R", "dupacks",
                 "L[t]", "cwnd[0][t]", "S[t-1]", "t", "u"]


def _typed(depth: int = 3) -> tuple[st.SearchStrategy[str], st.SearchStrategy[str]]:
    """Well-typed numbers and conditions nested at most ``depth`` levels (most compile, so
    loops and powers are exercised)."""
    leaf_number = st.one_of(_numbers(), st.sampled_from(NUMERIC_NAMES))
    leaf_condition = st.one_of(st.sampled_from(["True", "False"]),
                               st.tuples(leaf_number, st.sampled_from(["<", ">="]), leaf_number).map(
                                   lambda x: f"{x[0]} {x[1]} {x[2]}"))
    if depth == 0:
        return leaf_number, leaf_condition
    number, condition = _typed(depth - 1)
    bigger_number = st.one_of(
        leaf_number,
        st.tuples(number, st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), number).map(
            lambda x: f"({x[0]} {x[1]} {x[2]})"),
        number.map(lambda e: f"abs({e})"),
        st.tuples(st.sampled_from(["min", "max"]), number, number).map(lambda x: f"{x[0]}({x[1]}, {x[2]})"),
        _loops(number, ["sum", "min", "max"]),
        st.tuples(number, condition, number).map(lambda x: f"({x[0]} if {x[1]} else {x[2]})"))
    bigger_condition = st.one_of(
        leaf_condition,
        st.tuples(number, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), number).map(
            lambda x: f"{x[0]} {x[1]} {x[2]}"),
        st.tuples(condition, st.sampled_from(["and", "or"]), condition).map(lambda x: f"({x[0]} {x[1]} {x[2]})"),
        condition.map(lambda e: f"(not {e})"),
        st.tuples(condition, condition).map(lambda x: f"implies({x[0]}, {x[1]})"),
        _loops(condition, ["any", "all"]))
    return bigger_number, bigger_condition


def _conditions() -> st.SearchStrategy[str]:
    """Mostly well-typed conditions, sometimes anything the wild grammar makes."""
    typed = _typed()[1]
    return st.one_of(typed, typed, _expressions())


WILD = st.one_of(st.integers(-3, 12), st.sampled_from([0, 10**6, 10**18, -(2**63), 2**63 - 1]),
                 st.floats(allow_nan=False, allow_infinity=False, width=32), st.booleans(),
                 st.sampled_from(["inf", "any", "aimd", "1e999999999", "1/3", "", "x"]),
                 st.lists(st.integers(-2, 12), max_size=3))
CCAS = ["aimd", "const", "any", "aimd", "const", "copa", "bbr", "etc", "expdelay", "vivace", "allegro", "tahoe"]
NETWORK_KEYS = ["T", "R", "D", "buffer", "flows", "alpha", "eta", "rto", "compose", "dupacks", "bogus"]
CCA_KEYS = ["pacing", "cwnd", "delta", "window", "cycle", "mi", "mi_hi", "standing", "every", "k_cap", "bogus"]


@st.composite
def query_data(draw: st.DrawFn) -> dict[str, Any]:
    """A small query file as data: mostly valid sections with random (often invalid) keys and
    values mixed in, and random expressions."""
    network: dict[str, Any] = {"T": draw(st.sampled_from([4, 6, 10]))}
    if draw(st.integers(0, 3)) == 0:
        network.update(draw(st.dictionaries(st.sampled_from(NETWORK_KEYS), WILD, min_size=1, max_size=2)))
    if draw(st.integers(0, 7)) == 0:
        network["T"] = draw(st.sampled_from([1, 10**6, 10**18, 3000]))
    cca: dict[str, Any] = {"name": draw(st.sampled_from(CCAS))}
    if draw(st.integers(0, 3)) == 0:
        cca.update(draw(st.dictionaries(st.sampled_from(CCA_KEYS), WILD, min_size=1, max_size=2)))
    query: dict[str, Any] = {"find": draw(_conditions())}
    if draw(st.integers(0, 2)) == 0:
        query["assume"] = draw(st.lists(_conditions(), min_size=1, max_size=2))
    if draw(st.integers(0, 5)) == 0:
        query[draw(st.sampled_from(["periodic", "expect", "horizons", "bogus"]))] = draw(WILD)
    data: dict[str, Any] = {"network": network, "cca": cca, "query": query}
    if draw(st.integers(0, 4)) == 0:
        data["definitions"] = {"d": draw(_expressions()), "e": draw(st.sampled_from(["d + d", "e", "d[t]", "1"]))}
    return data


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if math.isfinite(value) else "inf"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_query(data: dict[str, Any], path: Path) -> Path:
    path.write_text("".join(f"[{section}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in table.items())
                            for section, table in data.items()))
    return path


PROPERTY_SECONDS = 20  # any random input finishes within this
BUILD_LIMIT = 2.0  # the in-process examples build under this time limit


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(query_data())
def test_random_queries_build_or_fail_cleanly(data: dict[str, Any]) -> None:
    """Parsing and building any query either succeeds, is bad input (CcacError) or runs out of
    its time limit (TimeLimit): nothing else escapes, and it finishes in bounded time."""
    start = time.monotonic()
    try:
        q = parse_query(data)
        with time_limit(BUILD_LIMIT):
            build(q)
        event("built")
    except CcacError as e:
        event(f"bad input: {str(e)[:90]}")
    except TimeLimit:
        event("time limit")
    assert time.monotonic() - start < PROPERTY_SECONDS


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=query_data())
def test_random_queries_through_the_command_line(data: dict[str, Any], tmp_path: Path) -> None:
    """The same through ``ccac query``: an exit code in {0, 1, 2, 3}, no traceback, bounded time."""
    path = write_query(data, tmp_path / "random.toml")
    code, out, err, _ = run("query", str(path), "--timeout", "5", "-q", seconds=PROPERTY_SECONDS)
    assert code in (0, 1, 2, 3), (code, out, err)
    assert "Traceback" not in err, err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err


def test_fraction_helpers_used_by_the_limits() -> None:
    assert limits.number_bits(Fraction(3, 4)) == 2 + 3
    assert limits.power_bits(2, 10) == pytest.approx(10)
    assert limits.power_bits(1, 10**100) == 1 and limits.power_bits(-1, 10**100) == 1
    assert limits.show_size(10**20) == "about 10^20"
