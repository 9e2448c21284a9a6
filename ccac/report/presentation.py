"""What the commands print, shared by all of them: exit codes, how a query and its answer are
described, and the validation line of a trace. The engine never imports this module."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Protocol, Sequence

import click

from ccac.core.params import rounded_text

EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_UNKNOWN, EXIT_INVALID_TRACE = 1, 2, 3, 4


def failure_code(decided: bool) -> int:
    """The exit code of a run that did not get what it asked: a mismatch when the answers that
    failed it were decided, unknown when some was not."""
    return EXIT_MISMATCH if decided else EXIT_UNKNOWN


def validated_text(validated: bool | None) -> str:
    """A table cell for a trace's validation: yes, NO, or - (no trace)."""
    return {True: "yes", False: "NO", None: "-"}[validated]


def plot_line(path: str) -> str:
    """Where a figure was drawn."""
    return f"plot: {path}"


VALIDATED = "validated: yes (independent exact-rational check of every model, CCA and query constraint)"


def echo_validation(validated: bool | None, violations: list[str] | None) -> None:
    """Say whether a trace passed the independent checker; list what it violates if not."""
    if validated:
        click.echo(VALIDATED)
    else:
        click.echo("validated: NO - the solver's trace violates:", err=True)
        for v in violations or []:
            click.echo(f"  {v}", err=True)


def answer_line(answer: str, timeout: float | None, reason: str | None) -> str:
    if answer == "sat":
        return "sat: counterexample found"
    if answer == "unsat":
        return "unsat: no trace of the model satisfies the query"
    if reason and reason.startswith("timeout:"):  # the time limit ran out outside the solver
        return f"unknown: {reason}"
    limit = f" after {timeout:g} s" if timeout is not None else ""
    why = f" ({reason})" if reason and reason != "timeout" else ""
    return f"unknown: solver timed out{limit}{why}" if reason in (None, "timeout", "canceled") \
        else f"unknown: solver gave up{why}"


def describe_query(q: Any) -> str:
    net = q.network
    buffer = ("infinite" if net.buffer == "inf" else "solver-chosen" if net.buffer == "any"
              else f"{rounded_text(net.buffer, 6)} BDP")
    lines = [f"query: {q.name} ({q.source})"]
    lines += ["  " + line for line in q.description.splitlines()]
    link = {"ccac": f"{net.model_name} path-server", "ideal": "ideal link (constant rate, no jitter)",
            "cbrdelay": "cbrdelay link (constant-rate bottleneck, ACKs held up to D steps)"}[net.link]
    oracle = ", losses known exactly R steps after they happen (loss oracle)" if net.loss_detection == "oracle" else ""
    lines.append(f"model: {link}, T={net.T} R={net.R} D={net.jitter} C={rounded_text(net.C, 6)} "
                 f"buffer={buffer}, {net.flows} flow(s){oracle}")
    for n, f in enumerate(q.flows):
        params = ", ".join(f"{k}={_show(v)}" for k, v in f.params.items())
        path = net.paths[n] if net.paths else None
        own = f"; its path: own jitter box D={path.D}, eta={_show(path.eta)}, R={path.R}" if path else ""
        if path and path.opens is not None:
            own += f", connection opens at step {path.opens}"
        lines.append(f"cca[{n}]: {f.cca.name}" + (f" ({params})" if params else "") + own)
    return "\n".join(lines)


def statement(q: Any, answer: str) -> str:
    """What exactly was checked, with its quantifiers."""
    net = q.network
    if q.periodic:
        scope = (f"periodic runs of the {net.model_name} model (steps 0..{net.T - 1} repeated forever, "
                 f"period {net.T - 1}; every rule holds at every step, reading the earlier periods)")
    elif net.cold:
        scope = f"traces of the {net.model_name} model over steps 0..{net.T - 1} ({_openings(q)})"
    else:
        history = max(net.path(n).R for n in range(net.flows))
        rules = max(f.cca.first_rule_step(f.params, net.path(n).R) for n, f in enumerate(q.flows))
        state = (f"; the CCA state is free through step {rules - 1}, its rules apply from step {rules}"
                 if rules > history else "")
        scope = (f"traces of the {net.model_name} model over steps 0..{net.T - 1} (steps 0..{history - 1} "
                 f"are free history{state}; any initial state)")
    conds = [f"assume {a}" for a in q.assume] + ([f"find {q.find}"] if q.find else [])
    body = "; ".join(conds) or "no conditions"
    if answer == "sat":
        return f"checked: there EXISTS one of the {scope} with: {body}"
    if answer == "unsat":
        return f"checked: NO one of the {scope} has: {body}"
    return f"checked: undecided whether any of the {scope} has: {body}"


def _openings(q: Any) -> str:
    """Where each flow starts, for a cold start: when its connection opens, or any state."""
    net = q.network
    opened = {net.path(n).opens for n in range(net.flows)}
    if len(opened) == 1 and None not in opened:
        return (f"from a connection's start: nothing sent before step {opened.pop()}, where every flow's "
                f"connection opens with its CCA in its start state")
    return "; ".join(f"flow {n}: " + (f"opens at step {net.path(n).opens} from its CCA's start state"
                                      if net.path(n).opens is not None else "any initial state")
                     for n in range(net.flows))


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, Fraction):
        return rounded_text(v, 6)
    return str(v)


def solver_line(solver: str, version: str, build_seconds: float, solve_seconds: float | None) -> str:
    """Which solver answered and how long building and solving took (``solve_seconds`` None: the
    time limit stopped the building, and the solver was not run)."""
    if solve_seconds is None:
        return f"solver: {solver} {version}, not run (building stopped after {build_seconds:.2f} s)"
    return f"solver: {solver} {version}, {solve_seconds:.2f} s (formula built in {build_seconds:.2f} s)"


def nonlinear_line(mode: str, refinements: int, repaired: bool = False) -> str:
    """How the formula's non-linear uses were solved: the mode, an enclosed answer's refinement
    rounds, and whether its trace was repaired (operands pinned, every node exact)."""
    if mode == "exact":
        return "non-linear: exact (z3's non-linear real arithmetic)"
    rounds = f"non-linear: enclosed, {refinements} refinement round{'' if refinements == 1 else 's'}"
    return rounds + (", the trace repaired (operands pinned to its values, every use exact)" if repaired else "")


def expected_line(expect: str, answer: str) -> str:
    """The answer against the one expected."""
    return f"expected: {expect} ({'as expected' if answer == expect else f'EXPECTED {expect}'})"


class ProbedValue(Protocol):
    """An answer at one exact value of a number a search moves (a bound's or a tightening's probe)."""

    @property
    def value(self) -> Fraction: ...
    @property
    def answer(self) -> str: ...
    @property
    def seconds(self) -> float: ...


class CaseView(Protocol):
    """One case of a query split into cases (:class:`ccac.analysis.cubes.Case`)."""

    @property
    def formula(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def answer(self) -> str: ...
    @property
    def seconds(self) -> float | None: ...  # None: cancelled


class SplitView(Protocol):
    """A query split into cases and solved apart (:class:`ccac.analysis.cubes.CubeRun`)."""

    @property
    def cases(self) -> Sequence[CaseView]: ...
    @property
    def split_seconds(self) -> float: ...
    def projected(self, workers: int) -> tuple[float, bool] | None: ...


def case_lines(split: SplitView, workers: Sequence[int]) -> list[str]:
    """Each case's answer and time, and the projected time to the answer on each of ``workers``."""
    kinds = sorted({c.formula for c in split.cases})
    counts = ", ".join(f"{sum(c.formula == k for c in split.cases)} of the {k} formula" for k in kinds)
    lines = [f"cases: {counts} (split in {split.split_seconds:.2f} s)"]
    lines += [f"  {case.formula} {case.index}: {case.answer} {'-' if case.seconds is None else f'{case.seconds:.2f} s'}"
              for case in split.cases]
    shown = []
    for n in workers:
        projected = split.projected(n)
        if projected is not None:
            seconds, exact = projected
            shown.append(f"{n}: {'' if exact else '>= '}{seconds:.2f} s")
    if shown:
        lines.append("time from the split to the answer on N workers: " + ", ".join(shown))
    return lines
