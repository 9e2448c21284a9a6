"""``ccac synthesize`` (ccac.synthesis, ccac.encode.templates, ccac.synthesis.fluid_player):

* a template that contains CCmatic's cc_qdel finds it on cc_qdel's goal, and the file written
  answers every goal unsat when read back as any CCA file is;
* a template with no CCA that meets its goal ends "none", every candidate refuted or pruned;
* every candidate the generator prunes on a played trace is one the verifier refutes too (the
  generator's claims, checked by the solver), also on a loss-driven AIMD template, where each
  counterexample's own candidate fails again when played on it;
* the sieve, which plays candidates in groups, suspects exactly those that fail when played
  alone, confirms each on its own, and reads each candidate's rules as its file reads;
* the player, run with a trace's own CCA, gives traces of the model;
* bad templates, goals and synthesis files are one line and exit 2.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

from ccac.problems.query import load_query, parse_query
from ccac.solving.solve import premise_verdict, solve
from ccac.solving.validate import check_trace
from ccac.encode.rules import parse_definition
from ccac.encode.trace import Trace
from ccac.synthesis import cegis
from ccac.synthesis.cegis import fails_when_played, synthesize
from ccac.synthesis.sieve import Suspect, confirm, sieve
from ccac.synthesis.spec import Goal, Spec, load_spec
from ccac.synthesis.vector import VectorRules
from ccac.synthesis.fluid_player import Run, play

DATA = Path(__file__).resolve().parent.parent / "examples" / "synthesis"


def test_a_template_holding_cc_qdel_finds_it_and_the_file_meets_the_goal(tmp_path: Path) -> None:
    out = tmp_path / "found.toml"
    code, text, err = run_cli("synthesize", str(DATA / "qdel.toml"), "--out", str(out))
    assert code == 0, (text, err)
    assert "found: down = 1/2, up = 2, congested = `min_qdel > 0`" in text
    assert "iteration 1:" in text and "on its path: " in text and "suspected" in text
    assert "confirmed: " in text and "answers every goal unsat with its premise satisfiable" in text
    # queried as written: the goals' query with [cca] naming the file and nothing else (the goals'
    # memory = 2 is the file's own default now, not a setting the query adds)
    for name, overrides in (("cc_qdel_utilization", ["network.T=10"]), ("cc_qdel_queue", ["params.q=5.31"])):
        data = {**load_query(name, overrides).raw, "cca": {"file": str(out)}}
        query = parse_query(data, name, str(tmp_path / "q.toml"))
        assert solve(query, timeout=120).answer == "unsat", name
        assert premise_verdict(query)[0] == "satisfiable", name


def test_a_template_holding_cc_probe_slow_finds_a_cca_meeting_its_goal_as_cc_probe_slow_does() -> None:
    """On the constant-rate link with ACK jitter the search finds a CCA of the template that meets
    the goal; CCmatic's own drain_bq_probe (a candidate of the template) meets it too."""
    spec = load_spec(DATA / "probe.toml")
    out = synthesize(spec, timeout=120)
    assert out.found is not None
    ccmatic = next(i for i in range(spec.template.size)
                   if spec.assignment(i) == {"a1": 1, "b1": -1, "c1": 0, "a2": 3, "c2": 1})
    for goal in spec.goals:
        assert solve(spec.query(goal, ccmatic), timeout=120).answer == "unsat", goal.name


def _synthesize_in_copy(tmp_path: Path, name: str, template: str, proof: str) -> None:
    """``ccac synthesize NAME --prove PROOF`` in a copy of the examples: it writes the CCA file
    shipped beside them and proves the proof's lemmas about it."""
    for file in (name, template, proof):
        (tmp_path / file).write_text((DATA / file).read_text())
    code, text, err = run_cli("synthesize", str(tmp_path / name), "--prove", str(tmp_path / proof))
    assert code == 0 and "proved: 2/2 checks proved" in text, (text, err)
    written = template.replace(".toml", "_synthesized.toml")
    assert (tmp_path / written).read_text() == (DATA / written).read_text()


def test_ccmatic_s_own_cc_qdel_template_is_searched_whole(tmp_path: Path) -> None:
    """CCmatic's cc_qdel template, all 37,296 candidates (its answer, probe_qdel, among them):
    the search finds a CCA meeting cc_qdel's goal, writes the file shipped and proves its
    lemmas; probe_qdel meets the goal too."""
    _synthesize_in_copy(tmp_path, "ccmatic_qdel.toml", "ccmatic_qdel_template.toml", "ccmatic_qdel_steady.toml")
    spec = load_spec(DATA / "ccmatic_qdel.toml")
    assert spec.template.size == 37_296
    probe_qdel = {"cond": "1 * min_qdel > 0", "a1": 0, "m1": Fraction(1, 2), "a2": 0, "m2": 2}
    index = next(i for i in range(spec.template.size) if spec.assignment(i) == probe_qdel)
    for goal in spec.goals:
        assert solve(spec.query(goal, index), timeout=120).answer == "unsat", goal.name


def test_ccmatic_s_own_goal_ported_finds_a_cca_and_admits_probe_qdel_within_alpha() -> None:
    """CCmatic's cc_qdel goal as ccac queries (ccmatic_goal_qdel.toml): the search finds a CCA
    of CCmatic's template, and CCmatic's answer (probe_qdel within alpha) meets the goal."""
    spec = load_spec(DATA / "ccmatic_goal_qdel.toml")
    out = synthesize(spec, timeout=120)
    assert out.found is not None
    within_alpha = {"cond": "1 * min_qdel > 0", "a1": -1, "m1": Fraction(1, 2), "a2": 0, "m2": 2}
    index = next(i for i in range(spec.template.size) if spec.assignment(i) == within_alpha)
    assert solve(spec.query(spec.goals[0], index), timeout=120).answer == "unsat"


@pytest.mark.slow
def test_ccmatic_s_own_cc_probe_slow_template_is_searched_whole(tmp_path: Path) -> None:
    """CCmatic's cc_probe_slow template, all 253,125 candidates: found, written, proved."""
    _synthesize_in_copy(tmp_path, "ccmatic_probe.toml", "ccmatic_probe_template.toml", "ccmatic_probe_steady.toml")


@pytest.mark.slow
def test_ccmatic_s_own_cc_qdel_template_holds_no_cca_for_a_tiny_queue() -> None:
    """The whole template exhausted: every candidate confirmed on its own run."""
    spec = load_spec(DATA / "ccmatic_qdel_impossible.toml")
    out = synthesize(spec, timeout=120)
    assert out.exhausted and out.suspected == 0


def test_the_worked_example_writes_the_file_it_ships_and_proves_its_lemmas(tmp_path: Path) -> None:
    """docs/synthesis.md: `ccac synthesize qdel.toml --prove steady.toml`, in a copy of the
    example's folder, writes the CCA file shipped beside it and proves the lemmas about the file
    it just wrote."""
    for name in ("qdel.toml", "qdel_template.toml", "steady.toml"):
        (tmp_path / name).write_text((DATA / name).read_text())
    code, text, err = run_cli("synthesize", str(tmp_path / "qdel.toml"), "--prove", str(tmp_path / "steady.toml"))
    assert code == 0 and "proved: 2/2 checks proved" in text, (text, err)
    assert (tmp_path / "qdel_template_synthesized.toml").read_text() == \
        (DATA / "qdel_template_synthesized.toml").read_text()
    code, _, err = run_cli("synthesize", str(tmp_path / "qdel.toml"), "--prove", str(tmp_path / "none.toml"))
    assert code == 2 and "no such proof file" in err


def test_a_template_without_an_answer_ends_none_with_every_candidate_refuted() -> None:
    code, text, _ = run_cli("synthesize", str(DATA / "impossible.toml"))
    assert code == 1 and "none: no CCA in this template meets the goal" in text, text
    assert "pruning: 23 of the 23 candidates the verifier did not ask were set aside on counterexamples' paths (100%)" in text
    spec = load_spec(DATA / "impossible.toml")
    out = synthesize(spec, timeout=120)
    assert out.exhausted and len(out.refuted) + len(out.pruned) == spec.template.size == 24


def test_every_candidate_pruned_on_a_played_trace_is_refuted_by_the_verifier() -> None:
    """A "none" rests on every candidate's own refutation: the ones the search pruned (each
    confirmed on its own played run) the solver refutes too."""
    spec = load_spec(DATA / "impossible.toml")
    out = synthesize(spec, timeout=120)
    assert out.exhausted and out.pruned and out.suspected == 0
    for candidate, index in out.pruned.items():
        goal = out.counterexamples[index].goal
        result = solve(spec.query(goal, candidate), timeout=120)
        assert result.answer == "sat", (spec.template.describe(spec.assignment(candidate)), goal.name)


def test_a_loss_driven_aimd_template_is_pruned_on_its_counterexamples() -> None:
    """aimd_loss.toml (loss-driven AIMD, finite buffer, no candidate keeps 45% utilization):
    each counterexample's refuted candidate fails again when played on it, the search prunes
    other candidates on the counterexamples (fewer solver calls than candidates), and the
    solver refutes every candidate it pruned."""
    spec = load_spec(DATA / "aimd_loss.toml")
    out = synthesize(spec, timeout=120)
    assert out.exhausted and out.suspected == 0 and len(out.refuted) < spec.template.size
    for cex in out.counterexamples:
        assert fails_when_played(spec, cex.goal, cex.trace, cex.candidate), spec.assignment(cex.candidate)
    assert out.pruned
    for candidate, index in out.pruned.items():
        result = solve(spec.query(out.counterexamples[index].goal, candidate), timeout=120)
        assert result.answer == "sat", spec.template.describe(spec.assignment(candidate))


BIG_HOLES = """[holes]
down = { range = [0, 3], resolution = 0.25 }
up = { range = [0, 3], resolution = 0.25 }
congested = { one_of = ["min_qdel > 0", "qdel_steps > 0", "min_c > alpha"] }
"""


@pytest.fixture(scope="module")
def big_spec(tmp_path_factory: pytest.TempPathFactory) -> Spec:
    """cc_qdel's goal over a template of 507 candidates (13 x 13 x 3)."""
    folder = tmp_path_factory.mktemp("big")
    template = (DATA / "qdel_template.toml").read_text()
    template = template[:template.index("[holes]")] + BIG_HOLES + template[template.index("[state.rate]"):]
    (folder / "qdel_template.toml").write_text(template)
    (folder / "qdel.toml").write_text((DATA / "qdel.toml").read_text())
    return load_spec(folder / "qdel.toml")


def test_the_sieve_suspects_exactly_the_candidates_that_fail_when_played_alone(big_spec: Spec) -> None:
    """Played in groups, a template's candidates are suspected on a counterexample's path exactly
    when each, played alone, fails the goal there; each suspect is confirmed on its group's run,
    and a candidate is never confirmed on a run that is not its own."""
    spec = big_spec
    for goal in spec.goals[:1]:
        for refuted in (0, 40):
            trace = solve(spec.query(goal, refuted), timeout=120).trace
            candidates = list(range(spec.template.size))
            suspects, alone = sieve(spec, goal, trace, candidates)
            assert not alone and len(suspects) > 1
            suspected = {c for s in suspects for c in s.members}
            confirmed = {c for s in suspects for c in confirm(spec, goal, s.trace, s.members)}
            failing = {c for c in candidates if fails_when_played(spec, goal, trace, c)}
            assert suspected == confirmed == failing and failing
            first, second = suspects[0], suspects[1]
            assert confirm(spec, goal, first.trace, second.members) == []


def test_the_sieve_suspects_exactly_the_candidates_that_fail_alone_on_a_loss_driven_template() -> None:
    """On aimd_loss.toml's counterexamples (losses, detections, timeouts, the sender's place in
    the loss order read as the trace read it) group play agrees with single play too."""
    spec = load_spec(DATA / "aimd_loss.toml")
    goal = spec.goals[0]
    candidates = list(range(spec.template.size))
    for refuted in (0, 10, 20):
        trace = solve(spec.query(goal, refuted), timeout=120).trace
        suspects, alone = sieve(spec, goal, trace, candidates)
        assert not alone
        suspected = {c for s in suspects for c in s.members}
        confirmed = {c for s in suspects for c in confirm(spec, goal, s.trace, s.members)}
        failing = {c for c in candidates if fails_when_played(spec, goal, trace, c)}
        assert suspected == confirmed == failing and refuted in failing, refuted


def test_a_wrong_suspicion_costs_time_never_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a sieve that suspects every candidate on every counterexample's own run, the search
    still finds cc_qdel's answer and still proves the impossible template has none: a suspect
    that fails its own check is searched again."""
    def suspect_everyone(spec: Spec, goal: Goal, trace: Trace, candidates: list[int]):
        return [Suspect(candidates[0], list(candidates), trace)], []

    monkeypatch.setattr(cegis, "sieve", suspect_everyone)
    out = synthesize(load_spec(DATA / "qdel.toml"), timeout=120)
    spec = load_spec(DATA / "qdel.toml")
    assert out.found is not None and spec.assignment(out.found) == {"down": Fraction(1, 2), "up": 2,
                                                                    "congested": "min_qdel > 0"}
    spec = load_spec(DATA / "impossible.toml")
    out = synthesize(spec, timeout=120)
    assert out.exhausted and len(out.refuted) + len(out.pruned) == spec.template.size


def test_rules_the_vector_walk_does_not_know_are_played_one_by_one(tmp_path: Path) -> None:
    """A template whose rules hold an open choice is not played in groups: the sieve hands its
    candidates back, and the search plays each alone (and still finds or refutes)."""
    (tmp_path / "t.toml").write_text(TEMPLATE.format(holes="k = [0, 1, 2]").replace(
        "max(alpha, k * min_c)", "max(alpha, choose(k * min_c, min_c))"))
    (tmp_path / "s.toml").write_text(SPEC.format(goal='find = "S[T-1] - S[2] < 0.5 * C * (T - 3 - D)"'))
    spec = load_spec(tmp_path / "s.toml")
    trace = solve(spec.query(spec.goals[0], 0), timeout=120).trace
    suspects, alone = sieve(spec, spec.goals[0], trace, [1, 2])
    assert suspects == [] and alone == [1, 2]
    assert synthesize(spec, timeout=120).iterations >= 1


def test_a_goal_may_use_its_own_definitions(tmp_path: Path) -> None:
    """A goal's [definitions] are read on the played runs too: the same answers as the goal with
    them written out."""
    (tmp_path / "t.toml").write_text(TEMPLATE.format(holes="k = [0, 1, 2, 3]"))
    answers = []
    for goal in ('find = "S[T-1] - S[2] < 0.5 * C * (T - 3 - D)"',
                 'definitions = { served = "S[T-1] - S[2]" }\nfind = "served < 0.5 * C * (T - 3 - D)"'):
        (tmp_path / "s.toml").write_text(SPEC.format(goal=goal))
        out = synthesize(load_spec(tmp_path / "s.toml"), timeout=120)
        answers.append((out.found, out.exhausted, sorted(out.refuted), sorted(out.pruned)))
    assert answers[0] == answers[1] and answers[0][3], answers


def test_candidates_of_one_shape_are_read_as_their_files_are(big_spec: Spec) -> None:
    """A candidate's CCA (the template's rules read once per choice of expressions, its numbers
    and the goals' settings set as defaults) equals the CCA its filled file reads as."""
    spec = big_spec
    for index in (0, 1, 2, 250, 506):
        assignment = spec.assignment(index)
        where = f"{spec.template.source} with {spec.template.describe(assignment)}"
        assert spec.cca(index).definition == parse_definition(spec.template.fill(assignment, spec.settings), where)


def test_the_vector_rules_decide_as_the_sender_does(big_spec: Spec) -> None:
    """The rules evaluated for many candidates at once give each candidate's own decision."""
    spec, goal = big_spec, big_spec.goals[0]
    trace = solve(spec.query(goal, 0), timeout=120).trace
    candidates = np.arange(0, spec.template.size, 7)
    for shape in range(3):
        members = candidates[spec.choice_indices(candidates)["congested"] == shape]
        query = spec.query(goal, int(members[0]))
        rules = VectorRules(spec.template, query.flows[0].cca.definition)
        holes = rules.hole_arrays({k: v for k, v in spec.choice_indices(members).items()}, trace.network.C, 1)
        first = query.flows[0].cca.definition.first_rule_step(1, query.flows[0].params)
        run = Run.start(query, trace, first)
        feedback = run.detect(run.takeover)
        seen = run.sender.observe(feedback)
        context = {**run.sender.constants, **seen, **run.sender.start_state(seen)}
        decided = rules.decide(context, holes, run.sender.paced, feedback.inflight)
        for row, candidate in zip(decided, members):
            sender = run.sender.fork()
            cca = spec.query(goal, int(candidate)).flows[0]
            sender.become(cca.cca.definition, cca.params)
            decision = sender.respond(feedback, seen)
            assert row[-2] == pytest.approx(float(decision.rate)) and row[-1] == pytest.approx(float(decision.cwnd))


@pytest.mark.parametrize("name, overrides", [
    ("cc_qdel_queue", []), ("cc_probe_slow_small_buffer", []), ("aimd_premature_loss", ["cca.name=rules-aimd"]),
    ("cc_probe_slow_ccac_path", ["params.util=0.3"]),
])
def test_the_player_gives_traces_of_the_model(name: str, overrides: list[str]) -> None:
    query = load_query(name, overrides)
    result = solve(query, timeout=120)
    assert result.answer == "sat"
    cca, params = query.flows[0].cca, query.flows[0].params
    first = cca.definition.first_rule_step(query.network.path(0).R, params)
    for takeover in (first, first + 1, first + 2):
        played = play(query, result.trace, takeover)
        assert played is not None
        assert check_trace(query, played) == [], (name, takeover)


TEMPLATE = """name = "t"
[params]
jitter = 1
memory = {{ default = 2, kind = "int", minimum = 1 }}
[holes]
{holes}
[state.rate]
start = "alpha"
rule = "max(alpha, k * min_c)"
"""
SPEC = """[synthesize]
template = "t.toml"
[[goal]]
network = {{ T = 6 }}
{goal}
"""


@pytest.mark.parametrize("holes, goal, message", [
    ("k = []", 'find = "True"', "at least one value"),
    ("k = [1, 1]", 'find = "True"', "listed twice"),
    ("k = { range = [0, 1] }", 'find = "True"', "needs a resolution"),
    ("k = { range = [1, 0], resolution = 0.5 }", 'find = "True"', "is above the highest"),
    ("k = { int = [0, 2], colour = 1 }", 'find = "True"', "unknown key 'colour'"),
    ("k = { range = [0, 1], resolution = 0.00001 }", 'find = "True"', "more than 10000"),
    ("k = { one_of = [] }", 'find = "True"', "one_of is a list"),
    ("k = [1, 2]", "", "a goal needs find"),
    ("k = [1, 2]", 'find = "True"\ncolour = 1', "unknown key 'colour'"),
    ("k = [1, 2]", 'query = "cc_qdel_queue"\nfind = "True"', "names a query or writes one out"),
    ("k = [1, 2]\nj = { int = [0, 999] }\nm = { int = [0, 9999] }", 'find = "True"', "candidates, more than"),
    ("k = { one_of = [\"min_c ** 9\"] }", 'find = "True"', "exponent"),
    ("k = [1, 2]\nunused = [1, 2]", 'find = "True"', "holes.unused: no rule reads this hole"),
    ("k = { range = [0, 1], resolution = 0.3 }", 'find = "True"', "so 1 would be left out"),
])
def test_bad_templates_and_goals_are_one_line_and_exit_2(holes: str, goal: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(TEMPLATE.format(holes=holes))
    (tmp_path / "s.toml").write_text(SPEC.format(goal=goal))
    code, out, err = run_cli("synthesize", str(tmp_path / "s.toml"))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (out, err)


@pytest.mark.parametrize("goal, hole", [
    ('query = "cc_qdel_utilization"\nset = ["network.T=10", "cca.up=2"]', "up"),   # by set, on a bundled query
    ('network = { T = 8 }\ncca = { jitter = 1, memory = 2, down = 0.5 }\nfind = "False"', "down"),   # written out
    ('network = { T = 8 }\nflow = [{ name = "qdel_template", up = 1 }]\nfind = "False"', "up"),   # a flow's table
])
def test_a_goal_cannot_set_a_hole(goal: str, hole: str, tmp_path: Path) -> None:
    """Were a goal's setting of a hole applied while checking, the search would verify the value
    the goal sets, not the candidate's, and write a file that fails the goal: refused."""
    (tmp_path / "qdel_template.toml").write_text((DATA / "qdel_template.toml").read_text())
    (tmp_path / "s.toml").write_text(f'[synthesize]\ntemplate = "qdel_template.toml"\n[[goal]]\nname = "g"\n{goal}\n')
    code, out, err = run_cli("synthesize", str(tmp_path / "s.toml"))
    assert code == 2 and f"goal 'g': sets the template's hole {hole!r}" in err and "s.toml" in err, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_goal_whose_premise_admits_no_trace_ends_the_search_naming_it(tmp_path: Path) -> None:
    """Contradictory assumptions make every candidate's every goal unsat: not a CCA found."""
    (tmp_path / "qdel_template.toml").write_text((DATA / "qdel_template.toml").read_text())
    (tmp_path / "s.toml").write_text(
        '[synthesize]\ntemplate = "qdel_template.toml"\n[[goal]]\nname = "contradiction"\nnetwork = { T = 8 }\ncca = { jitter = 1, memory = 2 }\n'
        'assume = ["alpha > C * R", "alpha < 0.5 * C * R"]\nfind = "S[T-1] < S[3]"\n')
    code, out, err = run_cli("synthesize", str(tmp_path / "s.toml"), "--out", str(tmp_path / "found.toml"))
    assert code == 1, (out, err)
    assert "goal contradiction: unsat;" in out and "VACUOUS" in out and "NOT confirmed" in out, out
    assert not (tmp_path / "found.toml").exists()


def test_a_goal_naming_a_missing_query_is_one_line_naming_the_file_and_the_goal(tmp_path: Path) -> None:
    (tmp_path / "qdel_template.toml").write_text((DATA / "qdel_template.toml").read_text())
    (tmp_path / "s.toml").write_text('[synthesize]\ntemplate = "qdel_template.toml"\n[[goal]]\nname = "g"\n'
                                     'query = "no_such_query"\n')
    code, out, err = run_cli("synthesize", str(tmp_path / "s.toml"))
    assert code == 2 and "s.toml: goal[0].query: goal 'g' names 'no_such_query': no such query file" in err, (out, err)
    assert len(err.strip().splitlines()) == 1 and len(err) < 300


def test_goals_setting_a_parameter_differently_are_refused(tmp_path: Path) -> None:
    (tmp_path / "qdel_template.toml").write_text((DATA / "qdel_template.toml").read_text())
    (tmp_path / "s.toml").write_text(
        '[synthesize]\ntemplate = "qdel_template.toml"\n[[goal]]\nname = "a"\nquery = "cc_qdel_queue"\n'
        '[[goal]]\nname = "b"\nnetwork = { T = 8 }\ncca = { jitter = 1, memory = 3 }\nfind = "False"\n')
    code, out, err = run_cli("synthesize", str(tmp_path / "s.toml"))
    assert code == 2 and "goal 'b': sets memory = 3 where an earlier goal sets 2" in err, (out, err)


def test_a_template_is_not_a_cca_for_a_query(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(TEMPLATE.format(holes="k = [1, 2]"))
    (tmp_path / "q.toml").write_text('[network]\nT = 6\n[cca]\nfile = "t.toml"\n[query]\nfind = "True"\n')
    code, _, err = run_cli("query", str(tmp_path / "q.toml"))
    assert code == 2 and "is a template" in err and "ccac synthesize" in err, err


def test_a_missing_synthesis_file_or_template_is_one_line(tmp_path: Path) -> None:
    code, _, err = run_cli("synthesize", str(tmp_path / "nothing.toml"))
    assert code == 2 and "no such synthesis file" in err
    (tmp_path / "s.toml").write_text(SPEC.format(goal='find = "True"'))
    code, _, err = run_cli("synthesize", str(tmp_path / "s.toml"))
    assert code == 2 and "no such template file" in err


def test_the_recheck_carries_an_unsat_only_to_the_formula_it_was_proved_for(tmp_path: Path) -> None:
    """The file's formula, identical to the one the verifier proved unsat, keeps that unsat; a
    file edited after it was written (any other formula) is solved again, and here fails."""
    from ccac.synthesis import written

    spec = load_spec(DATA / "qdel.toml")
    found = next(i for i in range(spec.template.size)
                 if spec.assignment(i) == {"down": Fraction(1, 2), "up": 2, "congested": "min_qdel > 0"})
    target = tmp_path / "found.toml"
    written.write(spec, found, target)
    checks = list(written.recheck(spec, target, 120, proved=found))
    assert all(c.holds and "identical SMT-LIB" in c.line for c in checks), checks
    target.write_text(target.read_text().replace('default = "1/2"', "default = 0"))   # down = 0 refuted
    checks = list(written.recheck(spec, target, 120, proved=found))
    assert any(c.answer == "sat" for c in checks) and not any("identical SMT-LIB" in c.line for c in checks), checks
