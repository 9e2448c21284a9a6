"""Steady-state theorems: the checks that a proof's ``[steady_state]`` holds for every trace
(infinite horizon), and the theorem stated once they all do.

:func:`check_steady_state` checks closure (:func:`check_closure`), progress, cover and the
soundness of stitching windows together (:func:`check_stitching`, by ``ccac.analysis.window``); only if
every one is proved does :func:`state_theorem` state the theorem. With ``k = K`` the region
counts only if it held at the last K steps (k-induction).

:mod:`ccac.analysis.strengthen` and :mod:`ccac.analysis.tighten` search for a region that these checks accept.
"""

from __future__ import annotations

import dataclasses
import time
from fractions import Fraction
from typing import Any, Iterator

from ccac.solving.backends import backend

from ccac.encode.expr import compile_condition, compile_number
from ccac.core.deadline import TimeLimit, time_limit
from ccac.core.params import rounded_text
from ccac.analysis.obligation import Check, prove_claim, scope_text
from ccac.solving.solve import Result
from ccac.analysis.proof_file import Proof, SteadyState, steady_query
from ccac.analysis.window import WindowCheck, same_reading, window_is_trace, windows


def held_at(s: SteadyState) -> str:
    """Where the region is assumed at a window's start, in words."""
    return f"step {s.start}" if s.k == 1 else f"each of the {s.k} steps {s.start - s.k + 1}..{s.start}"


def check_closure(proof: Proof, solver: str, timeout: float | None, region: list[str] | None = None) -> Check:
    """The region, held at the last k steps up to the window's start, holds at every later step
    of the window (k = 1: closure over a window; a window of start + 2 steps: k-induction).
    ``region`` replaces the proof's predicates (strengthening tries candidate regions)."""
    s = proof.steady
    assert s is not None
    if region is not None:
        proof = dataclasses.replace(proof, steady=dataclasses.replace(s, region=region))
        s = proof.steady
        assert s is not None
    s0 = s.start
    in_region = steady_query(proof, [f"region[{s0}]"])
    return prove_claim(
        "closure", "the region is never left", in_region, f"all(region_now[t] for t in range({s0 + 1}, T))",
        solver, timeout, f"for {scope_text(in_region, s0)}: if the region ({' and '.join(s.region)}) holds at "
                         f"{held_at(s)} then it holds at every step {s0 + 1}..{s.T - 1}")


def check_steady_state(proof: Proof, solver: str, timeout: float | None) -> Iterator[Check]:
    """Closure, progress, cover and stitching for ``proof.steady`` (see docs/proofs.md,
    "Steady-state theorems" for why these together prove the infinite-horizon theorem), each
    yielded as soon as it is decided (a long proof reports as it goes)."""
    s = proof.steady
    assert s is not None
    s0, last = s.start, s.T - 1
    premises: dict[str, Result] = {}  # a premise shared by two checks is solved once
    base = steady_query(proof, [])
    scope = scope_text(base, s0)

    yield check_closure(proof, solver, timeout)

    cases = [f"case_{i}[{s0}]" for i in range(len(s.progress))]
    yield prove_claim(
        "cover", "the region and the progress cases cover every state", base,
        " or ".join([f"region[{s0}]"] + cases), solver, timeout,
        f"for {scope}: at step {s0} the state is in the region or in one of the progress cases", premises)

    for i, case in enumerate(s.progress):
        earlier = [f"not case_{j}[{s0}]" for j in range(i)]
        premise = [f"case_{i}[{s0}]", f"not region[{s0}]"] + earlier
        q = steady_query(proof, premise)
        yield prove_claim(
            "bounded", f"{case.name}: rank bounded below", q, f"rank_{i}[{s0}] >= ({case.bound})", solver,
            timeout, f"for {scope}: in case '{case.name}' at step {s0}, {case.rank} >= {case.bound}", premises)
        goal = [f"region[{last}]"] + [f"case_{j}[{last}]" for j in range(i)] + [
            f"(case_{i}[{last}] and rank_{i}[{last}] <= rank_{i}[{s0}] - ({case.decrease}))"]
        yield prove_claim(
            "progress", case.name, q, " or ".join(goal), solver, timeout,
            f"for {scope}: from case '{case.name}' at step {s0} (when {case.when}; not in the region"
            f"{' or an earlier case' if i else ''}), by step {last} the run is in the region"
            f"{', in an earlier case,' if i else ''} or {case.rank} has dropped by at least {case.decrease}",
            premises)
        yield prove_claim(
            "decrease", f"{case.name}: the decrease is positive", base, f"({case.decrease}) > 0", solver,
            timeout, f"under the parameter assumptions, {case.decrease} > 0", premises)
    yield from check_stitching(proof, solver, timeout)


def check_stitching(proof: Proof, solver: str, timeout: float | None) -> Iterator[Check]:
    """Windows placed ``T-1-start`` steps apart chain: each is a trace of the lemma model, and
    the region, cases and ranks read the same at one window's end and the next one's start.
    Each check is yielded as it is decided."""
    s = proof.steady
    assert s is not None
    shift = s.T - 1 - s.start
    start = time.perf_counter()
    try:
        with time_limit(timeout, "building the two windows' formulas"):
            short, long = windows(steady_query(proof, []), steady_query(proof, [], T=s.T + shift), solver)
    except TimeLimit as e:
        yield Check("stitching", "the windows chain", "unknown", time.perf_counter() - start,
                    "in every run: windows placed T-1-start steps apart chain", detail=e.reason)
        return
    solve_fn = backend(solver)
    for offset in (shift, 0):
        yield _window_check(window_is_trace(short, long, offset, solve_fn, timeout))
    quantities: list[tuple[str, str, Any]] = [("the region", "region", compile_condition)]
    for i, case in enumerate(s.progress):
        quantities += [(f"case '{case.name}'", f"case_{i}", compile_condition),
                       (f"rank of '{case.name}'", f"rank_{i}", compile_number)]
    for label, name, compile_ in quantities:
        at_start = compile_(f"{name}[{s.start}]", short.symbols, "steady_state")
        at_end = compile_(f"{name}[{s.T - 1}]", long.symbols, "steady_state")
        yield _window_check(same_reading(short, long, shift, at_start, at_end, label, solve_fn, timeout))


def _window_check(w: WindowCheck) -> Check:
    verdict = {"unsat": "proved", "sat": "refuted", "unknown": "unknown"}[w.outcome.answer]
    return Check("stitching", w.what, verdict, w.outcome.seconds, f"in every run: {w.what}",
                 culprits=w.culprits[:5])


def state_theorem(proof: Proof) -> str:
    """The infinite-horizon theorem ``proof.steady`` states, in words (once every check of
    :func:`check_steady_state` is proved)."""
    s = proof.steady
    assert s is not None
    net = steady_query(proof, []).network
    held = "" if s.k == 1 else f" (holding at {s.k} consecutive steps)"
    return (f"{s.name} holds for every trace of the model (infinite horizon): from any initial "
            f"state the run enters the region [{' and '.join(s.region)}]{held} and never leaves it "
            f"({net.model_name} model, R={net.R}, D={net.D}, C={_num(net.C)}, buffer="
            f"{net.buffer if isinstance(net.buffer, str) else _num(net.buffer) + ' BDP'}"
            f"{'; assuming ' + ' and '.join(s.assume) if s.assume else ''})")


def _num(x: Fraction) -> str:
    return rounded_text(x, 6)
