"""Periodic traces really repeat: checked by unrolling, independently of ``ccac.solving.validate``.

For every periodic query of the library that answers sat, the trace is repeated for three
periods here (plain list arithmetic, not the validator's code), every byte curve, window and
timeout of the repetition is pinned with ``assume`` in an ordinary (non-periodic) query over
3 * (T - 1) + 1 steps, and ccac's own encoding must find that longer run to be a trace. This
check tells a trace that repeats forever from one whose two ends merely match (see
``test_a_trace_that_only_matches_at_its_ends_is_not_periodic``).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import pytest

from ccac import load_query, solve
from ccac.problems.query import bundled_queries
from ccac.problems.problem import build
from ccac.solving.validate import validate

from conftest import make_query

PERIODS = 3
# Pinned per-flow series: the byte curves, the window and the timeout flag.
PINNED = ("A_f", "S_f", "L_f", "Ld_f", "cwnd", "timeout")
CURVES = {"A_f", "S_f", "L_f", "Ld_f", "W"}


def periodic_sat_queries() -> list[str]:
    names = []
    for name, path in sorted(bundled_queries().items()):
        q = load_query(str(path))
        if q.periodic and q.expect == "sat" and not q.slow:
            names.append(name)
    return names


def repeat(values: list[Any], shifts: bool) -> list[Any]:
    """The period (T - 1 steps) repeated PERIODS times, shifted by its growth if ``shifts``."""
    P = len(values) - 1
    growth = values[P] - values[0] if shifts else 0
    out = [values[t % P] + (t // P) * growth if shifts else values[t % P] for t in range(PERIODS * P)]
    return out + [values[P] + (PERIODS - 1) * growth if shifts else values[P]]


def literal(x: Any) -> str:
    if isinstance(x, bool):
        return "True" if x else "False"
    x = Fraction(x)
    return f"({x.numerator} / {x.denominator})"


def pinned_repetition(query: Any, trace: Any) -> Any:
    """An ordinary query over the repeated run with every pinned value fixed by ``assume``."""
    long_T = PERIODS * (trace.T - 1) + 1
    assume = []
    for t, w in enumerate(repeat(trace.total("W"), True)):
        assume.append(f"W[{t}] == {literal(w)}")
    for n in range(query.network.flows):
        for name in PINNED:
            for t, x in enumerate(repeat(trace.flow(name, n), name in CURVES)):
                assume.append(f"{name}[{n}][{t}] == {literal(x)}" if name != "timeout"
                              else f"{'' if x else 'not '}timeout[{n}][{t}]")
    for const in ("alpha", "dupacks"):
        assume.append(f"{const} == {literal(trace.constant(const))}")
    network = dataclasses.replace(query.network, T=long_T)
    return dataclasses.replace(query, network=network, periodic=False, assume=assume, find="True",
                               expect="sat")


@pytest.mark.parametrize("name", periodic_sat_queries())
def test_every_periodic_sat_trace_repeats_as_a_trace(name: str) -> None:
    query = load_query(name)
    result = solve(query, timeout=600)
    assert result.answer == "sat", result.reason
    assert result.validated, result.violations
    repeated = solve(pinned_repetition(query, result.trace), timeout=600)
    assert repeated.answer == "sat", (
        f"{name}: its trace repeated {PERIODS} times is not a trace of the model and the CCA")


def test_a_trace_that_only_matches_at_its_ends_is_not_periodic() -> None:
    """A weaker reading of "periodic" (queues and undetected loss equal at both ends) admits an
    ordinary trace that starts with half a BDP of undetected loss on a path that loses nothing,
    hidden by a dupack threshold of 7 bytes while the link serves at most 6 per period.
    Repeated, later periods' ACKs reveal it, so it is no periodic trace: the validator must
    reject it, and a periodic query must find that no such run exists."""
    ends = ["S_f[0][0] - (A_f[0][0] - L_f[0][0]) == S_f[0][T-1] - (A_f[0][T-1] - L_f[0][T-1])",
            "L_f[0][0] - Ld_f[0][0] == L_f[0][T-1] - Ld_f[0][T-1]",
            "(A[0] - L[0]) - (C * 0 - W[0]) == (A[T-1] - L[T-1]) - (C * (T-1) - W[T-1])"]
    phantom_loss = "L_f[0][0] - Ld_f[0][0] >= C * R / 2"
    network = {"T": 7, "R": 1, "D": 1, "buffer": "inf", "alpha": Fraction(1, 10), "dupacks": 70}
    cca = {"name": "const", "cwnd": 2}
    phantom = solve(make_query(network, cca, find="True", assume=ends + [phantom_loss]))
    assert phantom.answer == "sat" and phantom.validated, phantom.violations
    problems = validate(dataclasses.replace(phantom.query, periodic=True), phantom.trace)
    assert any(p.startswith(f"repeated {PERIODS} times:") and "detectable loss went undetected" in p
               for p in problems), problems
    periodic = solve(make_query(network, cca, find="True", assume=[phantom_loss], periodic=True))
    assert periodic.answer == "unsat", periodic.reason
    assert solve(make_query(network, cca, find="True", periodic=True)).answer == "sat"  # not vacuous


@pytest.mark.parametrize("network, cca", [
    ({"T": 9, "R": 1, "D": 1, "buffer": 1}, {"name": "aimd"}),            # losses and timeouts
    ({"T": 13, "R": 2, "D": 1, "buffer": 1}, {"name": "aimd"}),
    ({"T": 9, "R": 1, "D": 1, "eta": Fraction(1, 10)}, {"name": "aimd"}),  # non-congestive loss
    ({"T": 9, "R": 2, "D": 1}, {"name": "copa"}),
    ({"T": 9, "R": 1, "D": 1}, {"name": "expdelay"}),
    ({"T": 9, "R": 1, "D": 1}, {"name": "vivace", "mi": 2}),
    ({"T": 9, "R": 1, "D": 1, "buffer": Fraction(1, 2)}, {"name": "const", "cwnd": 1}),
])
def test_periodic_runs_of_each_kind_validate_when_repeated(network: dict[str, Any], cca: dict[str, Any]) -> None:
    """Some periodic run exists, and it passes the validator's 3-period repetition: the CCAs'
    checks accept what the unknown past of the repetition's first steps may have been."""
    result = solve(make_query(network, cca, find="True", periodic=True), timeout=300)
    assert result.answer == "sat", result.reason
    assert result.validated, result.violations


@pytest.mark.parametrize("settled, loose, slow, expected", [
    ("unsat", "unsat", "settled", "unsat"),   # unsat without settling decides alone
    ("sat", "sat", "loose", "sat"),           # a settled trace decides alone
    ("unsat", "sat", None, "unknown"),        # only "settled unsat, unsettled sat" needs both
    ("unknown", "unsat", None, "unsat"),
    ("unknown", "sat", None, "unknown"),
])
def test_periodic_solves_race_and_the_first_decisive_one_answers(monkeypatch, settled, loose, slow, expected):
    from ccac.core import machine
    import time as clock

    from ccac.solving import solvers
    from ccac.solving.solvers import Outcome
    from ccac.solving.solve import solve_periodic

    problem = build(load_query("copa_low_utilization_single_box"))
    every = len(problem.enc.formulas())

    def fake(formulas, timeout):
        which = "settled" if len(formulas) == every else "loose"
        if which == slow:
            clock.sleep(60)
        answer = settled if which == "settled" else loose
        return Outcome(answer, f"{which} said so", {} if answer == "sat" else None, "fake", "0", 0.0)

    monkeypatch.setitem(solvers.SOLVERS, "fake", fake)
    start = clock.perf_counter()
    out = solve_periodic(problem, "fake", 60)
    assert out.answer == expected
    if expected == "unknown" and loose == "sat" and settled == "unsat":
        assert "is sat" in out.reason
    if slow is not None and machine.usable_cpus() >= 2:
        assert clock.perf_counter() - start < 20  # the slow one was not waited for
