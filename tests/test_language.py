"""The CCA language (ccac.encode.rules, ccas/language.py, senders/language.py): CCAs written as
rules over what the sender observes, their encoding, check and sender derived from one file.

* the bundled language CCAs answer every library query and proof of their hand-written
  counterparts as those do (and variants of them);
* the derived encoding admits every run of the derived sender (the superset property, on random
  paths with random answers to the open choices);
* a CCA file from a user's folder gives validated counterexamples, replays, and proofs;
* what a sender cannot observe, non-linear rules and malformed files are refused in one line.
"""

from __future__ import annotations

import random
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import pytest

from conftest import bundled, cca_params, run_cli
from fluid_path import PathConfig, admits, simulate

from ccac.analysis.proof import check_proof, load_proof
from ccac.ccas import CCAS
from ccac.ccas.language import LanguageCCA, load_file
from ccac.core.errors import CcacError
from ccac.problems.query import bundled_queries, load_query, parse_query
from ccac.solving.validate import flow_values
from ccac.solving.solve import solve

COUNTERPARTS = {"aimd": "rules-aimd", "const": "rules-const", "expdelay": "rules-expdelay"}


def library_of(cca: str) -> list[Any]:
    """The library queries of ``cca`` that name it in [cca] (``--set cca.name`` swaps it)."""
    names = sorted(n for n in bundled_queries() if {f.cca.name for f in load_query(n).flows} == {cca}
                   and "flow" not in load_query(n).raw)
    # a query answered window by window is asked twice here: its own answer is checked by
    # tests/test_library.py, so the comparison runs with the long reproductions
    return [pytest.param(n, marks=pytest.mark.slow) if load_query(n).slow or load_query(n).window else n
            for n in names]


def same_answer(name: str, overrides: list[str], cca: str) -> None:
    original = bundled(name, *overrides)
    ours = bundled(name, *overrides, f"cca.name={COUNTERPARTS[cca]}")
    assert original.answer in ("sat", "unsat")
    assert ours.answer == original.answer, (name, overrides)
    if ours.answer == "sat":
        assert ours.validated, ours.violations


@pytest.mark.parametrize("name", library_of("aimd"))
def test_rules_aimd_answers_every_aimd_query_as_aimd(name: str) -> None:
    same_answer(name, [], "aimd")


@pytest.mark.parametrize("name, overrides", [
    ("aimd_premature_loss", ["cca.hold_in_recovery=true"]),
    ("aimd_loss_burst", ["cca.hold_in_recovery=true"]),
    ("aimd_no_loss_below_buffer", ["cca.pacing=true", "cca.pacing_gain=2"]),
    ("aimd_trickle", ["network.T=8", "network.D=2"]),
])
def test_rules_aimd_answers_variants_as_aimd(name: str, overrides: list[str]) -> None:
    same_answer(name, overrides, "aimd")


@pytest.mark.parametrize("name", library_of("expdelay"))
def test_rules_expdelay_answers_every_expdelay_query_as_expdelay(name: str) -> None:
    same_answer(name, [], "expdelay")


@pytest.mark.parametrize("overrides", [["params.util=0.95"], ["cca.cap=true"], ["network.D=0"],
                                       ["cca.a=0.25", "params.util=0.9"]])
def test_rules_expdelay_answers_variants_as_expdelay(overrides: list[str]) -> None:
    same_answer("expdelay_ideal_efficiency", overrides, "expdelay")


@pytest.mark.parametrize("s", [2, 6])
def test_rules_expdelay_answers_the_two_flow_query_as_expdelay(s: int) -> None:
    """expdelay_two_flow_sfair names its CCA in [[flow]] tables and reads the hand-written
    encoding's bracket (q_hi < T: the reading is bounded); the same query for rules-expdelay
    says delay_known."""
    import copy
    import tomllib

    data = tomllib.loads((Path(__file__).resolve().parent.parent / "queries" / "expdelay_two_flow_sfair.toml").read_text())
    data["params"]["s"] = s
    ours = copy.deepcopy(data)
    for flow in ours["flow"]:
        flow["name"] = "rules-expdelay"
    ours["query"]["assume"] = [a.replace("q_hi[n][t] < T", "delay_known[n][t]") for a in ours["query"]["assume"]]
    original, derived = solve(parse_query(data), timeout=300), solve(parse_query(ours), timeout=300)
    assert derived.answer == original.answer and (derived.answer != "sat" or derived.validated)


def test_rules_expdelay_reads_an_unbounded_delay_at_its_lower_end() -> None:
    """Algorithm 1 on a reading the curves do not bound above (the byte was admitted before the
    trace, at least t - R steps ago): an increase needs mu below the target at that lower end,
    the largest target the delay allows (rules-expdelay splits its rule over the reading's whole
    steps, the lower end included)."""
    target_at_lower_end = "C / 8 * 2 ** (5 - (t - R))"   # mu_min s^((qmax - q) / jitter), defaults
    find = ("any(not delay_known[0][t] and delay_steps[0][t] == t - R and mu[0][t] > mu[0][t-1] "
            f"and mu[0][t-1] >= {target_at_lower_end} for t in range(R + 1, T))")
    q = parse_query({"network": {"T": 6, "R": 1, "D": 1}, "cca": {"name": "rules-expdelay"}, "query": {"find": find}})
    assert solve(q, timeout=120).answer == "unsat"
    assert solve(parse_query({**q.raw, "query": {"find": find.replace("mu[0][t] > mu[0][t-1]", "mu[0][t] < mu[0][t-1]")}}),
                 timeout=120).answer == "sat"


@pytest.mark.parametrize("name", library_of("const"))
def test_rules_const_answers_every_const_query_as_const(name: str) -> None:
    same_answer(name, [], "const")
    same_answer(name, ["cca.pacing=true"], "const")


@pytest.mark.parametrize("value", ["0", "-1", "true"])
def test_rules_const_refuses_the_parameters_const_refuses(value: str) -> None:
    answers = [run_cli("query", "const_service_at_capacity", "--set", f"cca.name={name}", "--set", f"cca.cwnd={value}")
               for name in ("const", "rules-const")]
    assert [code for code, _, _ in answers] == [2, 2]
    assert answers[0][2].split("cca.cwnd:")[1] == answers[1][2].split("cca.cwnd:")[1]


@pytest.mark.parametrize("proof", ["aimd_loss_threshold", "aimd_loss_threshold_thesis",
                                   pytest.param("aimd_steady_state", marks=pytest.mark.slow)])
def test_rules_aimd_gives_the_aimd_proofs_verdicts(proof: str) -> None:
    original = check_proof(load_proof(proof), timeout=300)
    ours = check_proof(load_proof(proof, ["cca.name=rules-aimd"]), timeout=300)
    assert ours.verdict == original.verdict
    assert [c.verdict for c in ours.checks] == [c.verdict for c in original.checks]


# ------------------------------------------------------------------ encoding admits the sender
CHOOSY = Path(__file__).parent / "data" / "choosy.toml"
TUTORIAL = Path(__file__).resolve().parent.parent / "examples" / "own_cca"
FILES = {"choosy": CHOOSY, "delay-target": TUTORIAL / "delay_target.toml",
         "believer": Path(__file__).parent / "data" / "believer.toml"}


def language_ccas() -> list[tuple[str, LanguageCCA]]:
    return [(c.name, c) for c in CCAS.values() if isinstance(c, LanguageCCA)] + \
        [(key, load_file(path)) for key, path in FILES.items()]


@pytest.mark.parametrize("key", [name for name, _ in language_ccas()])
def test_the_derived_encoding_admits_every_run_of_the_derived_sender(key: str, tmp_path: Path) -> None:
    cca = dict(language_ccas())[key]
    # the beliefs need `memory` steps of readings (max_c two RTTs more, min_c_lambda jitter + 1 more) first
    beliefs = key in ("believer", "cc_probe_slow")
    for seed in range(30 if beliefs else 12):
        rng = random.Random(seed)
        cfg = PathConfig(T=14 if beliefs else 8, R=1 if beliefs else rng.choice([1, 2]), D=rng.choice([0, 1]),
                         buffer=rng.choice([None, F(1), F(2)]),
                         dupacks=rng.choice([F(0), F(1)]), eta=rng.choice([F(0), F(1, 10)]))
        given = {p.name: rng.choice([True, False]) for p in cca.params if p.kind == "bool"}
        params = cca_params(cca, **given)
        start = lambda s: cca.concrete(s, lambda what, n: rng.randrange(n))  # noqa: E731
        run = simulate(cfg, start, params, rng, {"cwnd": cfg.alpha * rng.randint(1, 20)}, paced=cca.paced(params))
        table = {"file": str(cca.source)} if key in FILES else {"name": cca.name}
        admits({**table, **{k: v for k, v in params.items()}}, run, fix_state=tuple(s.name for s in cca.state))


def test_choices_are_taken_recorded_and_checked() -> None:
    """A solved trace records each open choice; the check re-evaluates the rule with it and
    refuses a value the choice does not allow."""
    q = parse_query({"network": {"T": 8, "R": 1, "D": 1, "buffer": 1}, "cca": {"file": str(CHOOSY)},
                     "query": {"find": "any(cwnd_choice1[0][t] > cwnd[0][t-1] for t in range(R + 1, T))"}})
    result = solve(q, timeout=120)
    assert result.answer == "sat" and result.validated, result.violations
    values = flow_values(result.trace, 0, q.flows[0].params)
    assert q.flows[0].cca.check(values) == []
    t = next(t for t in range(2, q.network.T) if values.state["cwnd_choice1"][t] > values.cwnd[t - 1])
    values.state["cwnd_choice1"][t] += F(1, 7)
    assert any(f"step {t}: cwnd_choice1" in p for p in q.flows[0].cca.check(values))


def test_the_check_catches_corrupted_rules_and_readings() -> None:
    """The derived check re-runs every rule on a solved trace: a window the rule does not give,
    a whole-step delay the curves do not give and a belief its update does not give (min_c,
    min_c_lambda, bq_belief) are each reported at their step."""
    aimd = load_query("aimd_premature_loss", ["cca.name=rules-aimd"])
    result = solve(aimd, timeout=120)
    values = flow_values(result.trace, 0, aimd.flows[0].params)
    cca = aimd.flows[0].cca
    assert cca.check(values) == []
    values.cwnd[5] += F(1, 3)
    assert any(p.startswith("step 5: rule cwnd") or p.startswith("step 6: rule") for p in cca.check(values))
    qdel = load_query("cc_qdel_queue")
    result = solve(qdel, timeout=120)
    values = flow_values(result.trace, 0, qdel.flows[0].params)
    cca = qdel.flows[0].cca
    assert cca.check(values) == []
    t = next(t for t in range(3, qdel.network.T) if values.delay_range(t - values.R)[1] is not None)
    values.state["delay_steps"][t] += 1
    assert any(p.startswith(f"step {t}: delay reading") for p in cca.check(values))
    values = flow_values(result.trace, 0, qdel.flows[0].params)
    values.state["min_c"][4] += F(1, 5)
    assert any(p.startswith("step 4: min_c") or p.startswith("step 5: min_c") for p in cca.check(values))
    probe = load_query("cc_probe_slow_small_buffer")
    result = solve(probe, timeout=120)
    cca = probe.flows[0].cca
    values = flow_values(result.trace, 0, probe.flows[0].params)
    assert cca.check(values) == []
    for belief in ("min_c_lambda", "bq_belief"):
        values.state[belief][8] += F(1, 5)
        assert any(p.startswith(f"step 8: {belief} is") for p in cca.check(values)), belief
        values.state[belief][8] -= F(1, 5)


# ------------------------------------------------------------------ a user's own file
CCA_FILE = """
name = "halver"
summary = "one MSS more per step with ACKs, half on any detected loss"

[state.cwnd]
start = "alpha"
initial = "cwnd >= alpha"
rule = "max(alpha, cwnd / 2) if newly_lost > 0 else (cwnd + alpha if newly_acked > 0 else cwnd)"
"""
QUERY_FILE = """
[network]
T = 10
R = 1
D = 1
buffer = 1

[cca]
file = "halver.toml"

[query]
find = "any(L[t] > L[t-1] for t in range(1, T))"
expect = "sat"
"""
PROOF_FILE = """
expect = "proved"
[network]
T = 8
R = 1
D = 1
buffer = 1

[cca]
file = "halver.toml"

[[lemma]]
name = "no loss at a window within the buffer"
show = "not any(L[t] > L[t-1] and cwnd[0][t-1] <= buffer / 2 and A_f[0][t-1] - S_f[0][t-2] - Ld_f[0][t-1] <= cwnd[0][t-1] for t in range(2, T))"
"""


def users_folder(tmp_path: Path) -> Path:
    (tmp_path / "halver.toml").write_text(CCA_FILE)
    (tmp_path / "q.toml").write_text(QUERY_FILE)
    (tmp_path / "p.toml").write_text(PROOF_FILE)
    return tmp_path


def test_a_users_cca_file_gives_a_validated_counterexample_that_replays(tmp_path: Path) -> None:
    folder = users_folder(tmp_path)
    code, out, err = run_cli("query", str(folder / "q.toml"), "--json", str(folder / "r.json"))
    assert code == 0 and "validated: yes" in out and "cca[0]: halver" in out, (out, err)
    code, out, err = run_cli("replay", str(folder / "r.json"))
    assert code in (0, 1) and "concrete halver" in out, (out, err)
    code, out, err = run_cli("list")
    assert "rules (CCA language)" in out and "rules-aimd" in out


def test_a_cca_file_runs_beside_a_library_cca_in_flow_tables(tmp_path: Path) -> None:
    folder = users_folder(tmp_path)
    (folder / "two.toml").write_text('[network]\nT = 7\nR = 1\n[[flow]]\nname = "aimd"\n'
                                     '[[flow]]\nfile = "halver.toml"\nD = 1\n[query]\n'
                                     'find = "S_f[1][T-1] - S_f[1][0] < 0.2 * (S_f[0][T-1] - S_f[0][0])"\n')
    code, out, err = run_cli("query", str(folder / "two.toml"))
    assert code == 0 and "cca[1]: halver" in out and "validated: yes" in out, (out, err)


def test_a_users_cca_file_can_be_the_subject_of_a_proof(tmp_path: Path) -> None:
    folder = users_folder(tmp_path)
    report = check_proof(load_proof(str(folder / "p.toml")), timeout=120)
    assert report.verdict in ("proved", "refuted"), report.verdict
    code, out, err = run_cli("prove", str(folder / "p.toml"))
    assert code in (0, 1) and "Traceback" not in err


def test_the_tutorial_works_as_written(tmp_path: Path) -> None:
    """docs/your-own-cca.md: the query finds a validated trace and plots it, the replay runs
    the derived sender, the lemma is proved."""
    code, out, err = run_cli("query", str(TUTORIAL / "underuse.toml"), "--plot", str(tmp_path / "u.png"), "--replay")
    assert "sat: counterexample found" in out and "validated: yes" in out and "concrete delay-target" in out, err
    assert (tmp_path / "u.png").stat().st_size > 0 and code in (0, 1)
    code, out, err = run_cli("prove", str(TUTORIAL / "floor.toml"))
    assert code == 0 and "proved: 1/1 checks proved" in out, (out, err)


def test_beliefs_are_named_definitions_for_a_cca_that_declares_its_jitter() -> None:
    from ccac.encode.rules import parse_definition

    base = {"name": "x", "params": {"jitter": 1}, "state": {"cwnd": {"rule": "cwnd + alpha"}}}
    assert parse_definition(base, "x").observed == frozenset()   # an unused belief reads nothing
    uses = {**base, "state": {"cwnd": {"rule": "cwnd / 2 if min_qdel > 0 else cwnd + alpha"}}}
    assert parse_definition(uses, "x").observed == {"qdel_steps", "delay_steps"}
    with pytest.raises(CcacError, match="unknown name `min_qdel`"):
        parse_definition({**uses, "params": {}}, "x")


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("rule, message", [
    ("cwnd + C", "`C` is not something a sender observes"),
    ("cwnd if queue > 0 else alpha", "`queue` is not something a sender observes"),
    ("cwnd + S_f[0][0]", "`S_f` is not something a sender observes"),
    ("t * alpha", "`t` is not something a sender observes"),
    ("cwnd ** 9", "beyond +-8"),
    ("cwnd ** (1/9)", "rational exponent 1/9 of `cwnd ** (1 / 9)`: at most 8/8"),
    ("cwnd + mystery", "unknown name `mystery`"),
    ("cwnd +", "syntax error"),
    ("choose(cwnd)", "choose takes two or more values"),
])
def test_a_rule_a_sender_cannot_run_is_refused_in_one_line(rule: str, message: str, tmp_path: Path) -> None:
    err = refusal(tmp_path, f'name = "x"\n[state.cwnd]\nrule = "{rule}"\n', message)
    assert "state.cwnd.rule" in err and len(err.strip().splitlines()) == 1


def refusal(tmp_path: Path, cca_file: str, message: str) -> str:
    """What ``ccac query`` prints on stderr for a query of a CCA file with this text, having
    checked it is bad input (exit 2) saying ``message``, without a traceback."""
    folder = users_folder(tmp_path)
    (folder / "halver.toml").write_text(cca_file)
    code, out, err = run_cli("query", str(folder / "q.toml"))
    assert code == 2 and message in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("text, message", [
    ('name = "x"\n', "sends nothing"),
    ('name = "x"\ncolour = 1\n[state.cwnd]\nrule = "cwnd"\n', "unknown key 'colour'"),
    ('name = "x"\n[state.cwnd]\nrule = "cwnd"\nspeed = 2\n', "unknown key 'speed'"),
    ('name = "x"\n[state.cwnd]\nrule = "cwnd"\n[state.acked]\nrule = "acked"\n', "cannot name a state variable"),
    ('name = "x"\n[params]\nC = 1\n[state.cwnd]\nrule = "cwnd"\n', "has the name of"),
    ('name = "x"\n[state.cwnd]\nrule = "cwnd"\naxis = "queue"\n', "axis is one of"),
    ('name = [\n', "not valid TOML"),
    ('name = "x"\n[params]\njitter = 1\nmemory = { default = 2, kind = "int", minimum = 1 }\n'
     '[state.rate]\nrule = "min_c_lambda"\n', "min_c_lambda counts jitter in whole steps"),
    ('name = "x"\n[params]\njitter = 1\n[state.rate]\nrule = "bq_belief"\n', "missing: memory"),
    # a unit the rules would not scale, spelled like one they would
    ('name = "x"\n[params]\nq = { default = 1, unit = "bdp" }\n[state.cwnd]\nrule = "q"\n', "params.q.unit: unknown unit 'bdp'"),
    # initial holds at step 0 too, where no ACK has arrived: it names what it may read instead
    ('name = "x"\n[state.cwnd]\nrule = "cwnd"\ninitial = "cwnd <= acked"\n',
     "state.cwnd.initial: unknown name `acked` (known: R, alpha, cwnd, lost, timeout)"),
])
def test_a_malformed_cca_file_is_refused_in_one_line(text: str, message: str, tmp_path: Path) -> None:
    refusal(tmp_path, text, message)


def test_the_checked_line_states_the_free_cca_state(tmp_path: Path) -> None:
    """A rule reading newly_acked (the ACKs of two steps) starts a step after the model's
    history: the output says the CCA state is free through that step, not only the history."""
    (tmp_path / "na.toml").write_text('name = "na"\n[state.cwnd]\nrule = "cwnd + newly_acked"\n')
    (tmp_path / "q.toml").write_text('[network]\nT = 5\n[cca]\nfile = "na.toml"\n[query]\nfind = "True"\n')
    code, out, _ = run_cli("query", str(tmp_path / "q.toml"))
    assert code == 0 and ("steps 0..0 are free history; the CCA state is free through step 1, its rules apply "
                          "from step 2; any initial state") in out, out
    (tmp_path / "na.toml").write_text('name = "na"\n[state.cwnd]\nrule = "cwnd + alpha"\n')
    code, out, _ = run_cli("query", str(tmp_path / "q.toml"))
    assert code == 0 and "steps 0..0 are free history; any initial state" in out, out
