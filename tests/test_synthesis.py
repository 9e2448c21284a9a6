"""``ccac synthesize`` (ccac.synthesis, ccac.encode.templates, ccac.testbed.fluid_player):

* a template that contains CCmatic's cc_qdel finds it on cc_qdel's goal, and the file written
  answers every goal unsat when read back as any CCA file is;
* a template with no CCA that meets its goal ends "none", every candidate refuted or pruned;
* every candidate the generator prunes on a played trace is one the verifier refutes too (the
  generator's claims, checked by the solver);
* the player, run with a trace's own CCA, gives traces of the model;
* bad templates, goals and synthesis files are one line and exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli

from ccac.problems.query import load_query, parse_query
from ccac.solving.solve import solve
from ccac.solving.validate import check_trace
from ccac.synthesis.cegis import synthesize
from ccac.synthesis.spec import load_spec
from ccac.testbed.fluid_player import play

DATA = Path(__file__).resolve().parent.parent / "examples" / "synthesis"


def test_a_template_holding_cc_qdel_finds_it_and_the_file_meets_the_goal(tmp_path: Path) -> None:
    out = tmp_path / "found.toml"
    code, text, err = run_cli("synthesize", str(DATA / "qdel.toml"), "--out", str(out))
    assert code == 0, (text, err)
    assert "found: down = 1/2, up = 2, congested = `min_qdel > 0`" in text
    assert "iteration 1:" in text and "pruned on its path" in text
    for name, overrides in (("cc_qdel_utilization", ["network.T=10"]), ("cc_qdel_queue", ["params.q=5.31"])):
        data = load_query(name, overrides).raw
        data = {**data, "cca": {**{k: v for k, v in data["cca"].items() if k != "name"}, "file": str(out)}}
        assert solve(parse_query(data, name, str(tmp_path / "q.toml")), timeout=120).answer == "unsat", name


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
    spec = load_spec(DATA / "impossible.toml")
    out = synthesize(spec, timeout=120)
    assert out.exhausted and len(out.refuted) + len(out.pruned) == spec.template.size == 24


def test_every_candidate_pruned_on_a_played_trace_is_refuted_by_the_verifier() -> None:
    spec = load_spec(DATA / "qdel.toml")
    out = synthesize(spec, timeout=120)
    assert out.found is not None and out.pruned
    for candidate, index in out.pruned.items():
        goal = out.counterexamples[index].goal
        result = solve(spec.query(goal, candidate), timeout=120)
        assert result.answer == "sat", (spec.template.describe(spec.assignment(candidate)), goal.name)


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
    ("k = { one_of = [\"min_c * min_c\"] }", 'find = "True"', "non-linear"),
])
def test_bad_templates_and_goals_are_one_line_and_exit_2(holes: str, goal: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(TEMPLATE.format(holes=holes))
    (tmp_path / "s.toml").write_text(SPEC.format(goal=goal))
    code, out, err = run_cli("synthesize", str(tmp_path / "s.toml"))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (out, err)


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
