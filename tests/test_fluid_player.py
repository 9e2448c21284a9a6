"""The fluid player reproduces a counterexample (``ccac.synthesis.fluid_player``).

The invariant ``ccac synthesize`` rests on when it prunes: played on a counterexample's path
from the step its rules start, the candidate the verifier refuted fails again (its played run
validates and meets the goal's ``find``), because the player takes every choice of the path
(tokens, service, losses, detection, timeouts, ACK holding, the sender's ranged readings) as
the trace took it, clamped into what the model allows the played run.

Checked on :data:`CASES` seeded random cases (:func:`draw_case`, the same on every run): a
template of a loss-driven, delay-driven or paced CCA with holes, one of its candidates, a path
(buffer finite or not, eta > 0 or not, a jitter box or not, several duplicate-ACK thresholds, CCmatic's loss oracle, and
timeout rules) and a condition on the run; the goal is the condition, or its negation where the
condition is unsat (so that every case has a counterexample). Most cases' counterexamples lose
bytes, detect losses or time out after the rules start. T <= 10 and R = 1 keep each case
small. The other candidates of the template, played on the same path (where the clamps move),
must give traces of the model too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from ccac.encode.trace import Trace
from ccac.problems.query import Query
from ccac.solving.solve import solve
from ccac.solving.validate import check_trace, validate
from ccac.synthesis.cegis import fails_when_played
from ccac.synthesis.sieve import confirm, sieve
from ccac.synthesis.spec import Spec, load_spec
from ccac.synthesis.fluid_player import play

#: loss-driven and other template shapes: rules with number holes ``a`` (an increase, in
#: packets) and ``b`` (a decrease factor)
SHAPES = {
    "aimd with loss events": """
[state.cwnd]
start = "alpha"
rule = '''
alpha if timeout
else b * cwnd if lost > loss_mark
else cwnd + a * alpha if acked - ack_mark >= cwnd
else cwnd'''
[state.loss_mark]
axis = "lost"
initial = "loss_mark <= loss_point"
start = "lost - newly_lost"
rule = "loss_point if timeout or lost > loss_mark else loss_mark"
[state.ack_mark]
axis = "acked"
start = "acked"
rule = "acked if timeout or lost > loss_mark or acked - ack_mark >= cwnd else ack_mark"
""",
    "decrease on every detection": """
[state.cwnd]
start = "alpha"
rule = "alpha if timeout else max(alpha, b * cwnd) if newly_lost > 0 else cwnd + a * alpha if newly_acked > 0 else cwnd"
""",
    "window from what is in flight": """
[state.cwnd]
start = "alpha"
rule = "max(alpha, b * inflight) if newly_lost > 0 or timeout else max(alpha, inflight + a * alpha)"
""",
    "delay-driven": """
[state.cwnd]
start = "alpha"
rule = "max(alpha, b * cwnd) if delay > 1 or newly_lost > 0 else cwnd + a * alpha"
""",
    "paced on losses": """
[state.rate]
start = "alpha"
rule = "max(alpha, b * rate) if newly_lost > 0 or timeout else rate + a * alpha"
""",
}

#: conditions on the run after the rules start (step ``k``)
CONDITIONS = (
    "S[T-1] - S[{k}] < {u} * C * (T - 1 - {k})",
    "L[T-1] > L[{k}]",
    "Ld_f[0][T-1] > Ld_f[0][{k}]",
    "any(timeout[0][t] for t in range({k}, T))",
    "any(A[t] - L[t] - S[t] > {q} * C * R for t in range({k}, T))",
    "cwnd[0][T-1] < cwnd[0][{k}]",
    "L[T-1] > L[{k}] and S[T-1] - S[{k}] < {u} * C * (T - 1 - {k})",
)

CASES = 80


@dataclass
class Case:
    """One random case: its synthesis file's text, the candidate and the condition drawn."""

    template: str
    spec: str
    candidate: int
    condition: str


def draw_case(seed: int) -> Case:
    """The case of ``seed``: a template, a candidate of it, a path and a condition."""
    rng = random.Random(seed)
    name = rng.choice(sorted(SHAPES))
    dupacks = rng.choice(["", "dupacks = 1\n", "dupacks = 3\n"])
    template = (f'name = "t"\n{dupacks}[holes]\na = {rng.sample([0, 1, 2, 4], 2)}\n'
                f'b = {rng.sample([0.25, 0.5, 0.75, 1], 2)}\n{SHAPES[name]}')
    network = {"T": rng.randint(6, 10), "R": 1, "D": rng.choice([0, 1, 1, 2]),
               "buffer": rng.choice(['"inf"', "0.5", "1", "1", "2", '"any"']),
               "eta": rng.choice([0, 0, 0.1]), "rto": rng.choice([1, 1, 2])}
    if network["buffer"] == "2" and rng.random() < 0.5:
        network["buffer_min"] = 1
    if rng.random() < 0.2:
        network["dupacks"] = rng.choice([0, 1])
    box = rng.random() < 0.25
    if box and rng.random() < 0.5:
        network["link"] = '"cbrdelay"'
    condition = rng.choice(CONDITIONS).format(k=1, u=rng.choice([0.3, 0.5, 0.7, 0.9]), q=rng.choice([0.5, 1, 2]))
    candidate = rng.randrange(4)
    if rng.random() < 0.25:   # CCmatic's loss oracle (drawn last: the cases drawn before it stay as they were)
        network["loss_detection"] = '"oracle"'
    table = ", ".join(f"{k} = {v}" for k, v in network.items())
    spec = (f'[synthesize]\ntemplate = "t.toml"\n[[goal]]\nname = "{name}"\nnetwork = {{ {table} }}\n'
            + ('flow = [{ D = 1 }]\n' if box and network.get("link") is None else "")
            + f'assume = ["alpha <= 0.2 * C * R", "alpha >= 0.05 * C * R"]\nfind = "{condition}"\n')
    return Case(template, spec, candidate, condition)


def counterexample(case: Case, folder: Path) -> tuple[Spec, Trace]:
    """The case's synthesis file, written in ``folder``, and the verifier's validated trace for
    its candidate: on the condition, or on its negation where the condition is unsat."""
    (folder / "t.toml").write_text(case.template)
    for find in (case.condition, f"not ({case.condition})"):
        (folder / "s.toml").write_text(case.spec.replace(f'find = "{case.condition}"', f'find = "{find}"'))
        spec = load_spec(folder / "s.toml")
        result = solve(spec.query(spec.goals[0], case.candidate), timeout=120)
        if result.answer == "sat":
            assert result.validated, result.violations
            return spec, result.trace
        assert result.answer == "unsat", result.reason
    raise AssertionError(f"neither the condition nor its negation is sat: {case}")


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], tuple[Case, Spec, Trace]]:
    """Seed -> its case, synthesis file and counterexample, each solved once per process."""
    folder = tmp_path_factory.mktemp("cases")
    made: dict[int, tuple[Case, Spec, Trace]] = {}

    def get(seed: int) -> tuple[Case, Spec, Trace]:
        if seed not in made:
            case = draw_case(seed)
            (folder / str(seed)).mkdir()
            made[seed] = (case, *counterexample(case, folder / str(seed)))
        return made[seed]

    return get


def played(spec: Spec, trace: Trace, candidate: int) -> tuple[Query, Trace | None]:
    """The goal's query for ``candidate``, and its run played on ``trace``'s path from the step
    its rules start."""
    query = spec.query(spec.goals[0], candidate)
    takeover = query.flows[0].cca.definition.first_rule_step(query.network.path(0).R, query.flows[0].params)
    return query, play(query, trace, takeover)


@pytest.mark.parametrize("seed", range(CASES))
def test_the_refuted_candidate_fails_again_when_played_on_its_counterexample(
        seed: int, drawn: Callable[[int], tuple[Case, Spec, Trace]]) -> None:
    """The verifier's counterexample for a candidate, played with that candidate from the step
    its rules start, validates and meets the goal, alone and in the sieve's group play; it is
    the counterexample itself (every choice the player keeps is the trace's own)."""
    case, spec, trace = drawn(seed)
    goal = spec.goals[0]
    query, run = played(spec, trace, case.candidate)
    assert run is not None, case
    assert fails_when_played(spec, goal, trace, case.candidate), (validate(query, run)[:3], case)
    for name in ("A_f", "S_f", "L_f", "Ld_f", "timeout", "cwnd", "W"):
        assert run.symbols.series[name].values == trace.symbols.series[name].values, (name, case)
    suspects, alone = sieve(spec, goal, trace, [case.candidate])
    assert not alone and [s.members for s in suspects] == [[case.candidate]], case
    assert confirm(spec, goal, suspects[0].trace, [case.candidate]) == [case.candidate], case


@pytest.mark.parametrize("seed", range(CASES))
def test_every_candidate_played_on_a_counterexample_gives_a_trace_of_the_model(
        seed: int, drawn: Callable[[int], tuple[Case, Spec, Trace]]) -> None:
    """Any candidate of the template, played on the path (so the clamps move the path's choices
    into the played run's ranges), gives a trace of the model: the model's rules and its own."""
    _, spec, trace = drawn(seed)
    for candidate in range(spec.template.size):
        query, run = played(spec, trace, candidate)
        assert run is not None and check_trace(query, run) == [], (seed, candidate, run and check_trace(query, run)[:3])
