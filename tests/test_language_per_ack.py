"""Per-ACK rules of the CCA language (ccac.encode.per_ack): the derived sender applies ``on_ack``
once per ACKed MSS and ``on_loss`` at the loss event, placed among the step's ACKs by a hook;
the derived per-step encoding must admit every such run (random fluid paths of the model, random
loss-event places), the exact check must refuse recorded values the encoding does not allow,
and files the derivation cannot encode soundly are refused naming the rule.
"""

from __future__ import annotations

import random
import tomllib
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import pytest

from conftest import cca_params
from fluid_path import PathConfig, Run, admits, simulate

from ccac.ccas import CCAS
from ccac.ccas.language import LanguageCCA, load_file
from ccac.core.errors import CcacError
from ccac.encode.rules import parse_definition
from ccac.problems.query import parse_query
from ccac.solving.solve import solve
from ccac.solving.validate import flow_values

DATA = Path(__file__).parent / "data"
PER_ACK = {"rules-reno": CCAS["rules-reno"], "per-ack-credit": load_file(DATA / "per_ack_credit.toml")}
SEEDS = 24


def run_on_random_path(cca: LanguageCCA, seed: int) -> Run:
    """The derived sender on one random fluid path, the loss event at a random place each step."""
    rng = random.Random(seed)
    cfg = PathConfig(T=9, R=rng.choice([1, 2]), D=rng.choice([0, 1]), buffer=rng.choice([None, F(1, 2), F(1)]),
                     dupacks=rng.choice([F(0), F(1)]), eta=rng.choice([F(0), F(1, 10)]))
    start = lambda s: cca.concrete(s, lambda what, n: rng.randrange(n))  # noqa: E731
    values = {"cwnd": cfg.alpha * rng.randint(1, 20), "ssthresh": cfg.alpha * rng.randint(1, 20)}
    return simulate(cfg, start, cca_params(cca), rng, values)


def split_events(run: Run) -> int:
    """Steps whose loss event fell strictly among the step's ACKs."""
    return sum(1 for t, s in enumerate(run.state) if s and t >= run.cfg.R + 1
               and 0 < s["loss_acked"] < run.S[t - run.cfg.R] - run.S[t - run.cfg.R - 1])


def crossings(run: Run, state: str) -> int:
    """Steps where the per-ACK change of ``state`` differed between the ACKs of one side."""
    return sum(1 for s in run.state if s and s[f"{state}_xi_lo0"] != s[f"{state}_xi_hi0"])


@pytest.mark.parametrize("key", sorted(PER_ACK))
def test_the_derived_encoding_admits_every_per_ack_run(key: str) -> None:
    cca = PER_ACK[key]
    runs = [run_on_random_path(cca, seed) for seed in range(SEEDS)]
    assert sum(split_events(r) for r in runs) >= 3, "too few loss events among a step's ACKs: the test tests little"
    changing = "cwnd" if key == "rules-reno" else "credit"
    assert sum(crossings(r, changing) for r in runs) >= 3, "too few steps whose per-ACK change varied"
    for run in runs:
        admits({"name": cca.name} if cca.name in CCAS else {"file": str(cca.source)}, run,
               fix_state=tuple(s.name for s in cca.state))


def test_the_encoding_admits_runs_through_a_timeout_where_a_choice_range_runs_backwards() -> None:
    """A timeout restarts the window from one MSS; the next steps' ACKs leave it below two MSS,
    where the rule's range between(cwnd / 2, cwnd - alpha), in a branch it does not take, has
    its ends crossed: the encoding must still admit the sender's run (the range is the values
    between its ends, in either order), and the exact check accept it."""
    cca = load_file(DATA / "per_ack_restart.toml")
    runs = [run_on_random_path(cca, seed) for seed in range(8)]
    crossed = sum(1 for r in runs for t, s in enumerate(r.state)
                  if s and t > r.cfg.R and r.timeout[t - 1] and s["cwnd_acked"] < 2 * r.cfg.alpha)
    assert crossed >= 3, "too few steps after a timeout with the range's ends crossed: the test tests little"
    for run in runs:
        admits({"file": str(cca.source)}, run, fix_state=tuple(s.name for s in cca.state))


def test_a_step_reads_the_state_its_acks_and_loss_event_left() -> None:
    """The order within a step, by hand: 15 ACKs from cwnd = 1.5 MSS below ssthresh = 6 MSS:
    slow start for 5 ACKs (to 6.5), then 10 ACKs of an eighth of an MSS; a loss event after the
    3rd ACK halves the 4.5 MSS it found, and recovery holds the rest."""
    from ccac.encode import per_ack
    d = CCAS["rules-reno"].definition
    alpha = F(1, 10)
    before = {"cwnd": F(15, 100), "ssthresh": F(6, 10), "recover": F(0), "recover_sent": F(0)}
    seen = {"alpha": alpha, "ca_share": F(1, 8), "newly_acked": F(15, 10), "acked": F(10), "lost": F(0),
            "newly_lost": F(0), "sent": F(20), "loss_point": F(0), "timeout": False}
    after, recorded = per_ack.run(d, before, seen, 0)
    assert after["cwnd"] == F(15, 100) + 5 * alpha + 10 * alpha / 8 and recorded["loss_acked"] == F(15, 10)
    lost = {**seen, "lost": F(1, 10), "newly_lost": F(1, 10)}
    after, recorded = per_ack.run(d, before, lost, 3)
    assert recorded["cwnd_at_loss"] == F(45, 100) and after["cwnd"] == F(45, 200) == after["ssthresh"]
    assert recorded["loss_acked"] == 3 * alpha and after["recover_sent"] == 20


def test_the_check_refuses_per_ack_values_the_encoding_does_not_allow() -> None:
    q = parse_query({"network": {"T": 9, "R": 1, "D": 1, "buffer": 1, "alpha": 0.1}, "cca": {"name": "rules-reno"},
                     "query": {"find": "any(loss_acked[0][t] > 0 and cwnd_xi_lo0[0][t] < cwnd_at_loss[0][t] "
                                       "for t in range(2, T))"}})
    result = solve(q, timeout=120)
    assert result.answer == "sat" and result.validated, result.violations
    cca = q.flows[0].cca
    values = flow_values(result.trace, 0, q.flows[0].params)
    assert cca.check(values) == []
    t = next(t for t in range(2, q.network.T) if values.state["loss_acked"][t] > 0
             and values.state["cwnd_xi_lo0"][t] < values.state["cwnd_at_loss"][t])
    for name, delta in (("cwnd_xi_lo0", F(1000)), ("loss_acked", F(-1)), ("cwnd_at_loss", F(1, 3))):
        corrupted = flow_values(result.trace, 0, q.flows[0].params)
        corrupted.state[name][t] += delta
        assert any(p.startswith(f"step {t}: ") for p in cca.check(corrupted)), name


BASE = {"name": "x", "state": {"cwnd": {"start": "alpha", "on_ack": "cwnd + alpha"}}}


@pytest.mark.parametrize("state, message", [
    ({"cwnd": {"on_ack": "max(alpha, cwnd - alpha) if inflight > cwnd else cwnd + alpha"}},
     "state.cwnd.on_ack: the per-ACK change .* must keep one sign"),
    ({"cwnd": {"on_ack": "cwnd + alpha if gain > 0 else cwnd"}, "gain": {"on_ack": "gain + alpha"}},
     "state.cwnd.on_ack: on_ack reads `gain`, which also changes per ACK"),
    ({"cwnd": {"on_ack": "choose(cwnd, cwnd + alpha)"}}, "state.cwnd.on_ack: on_ack cannot make an open choice"),
    ({"cwnd": {"on_ack": "cwnd + alpha", "on_loss": "cwnd / 2"}, "recover": {"rule": "0"}},
     "state.recover: 'recover' is the language's own"),
    ({"cwnd": {"on_ack": "cwnd + alpha if in_recovery else cwnd"}}, "unknown name `in_recovery`"),
    ({"cwnd": {"on_ack": "cwnd + queue"}}, "state.cwnd.on_ack: `queue` is not something a sender observes"),
    ({"cwnd": {"description": "w"}}, "state.cwnd: needs a rule .*, on_ack or on_loss"),
    ({"cwnd": {"on_ack": "cwnd + alpha"}, "cwnd_acked": {"rule": "0"}}, "'cwnd_acked' names a value the per-ACK"),
])
def test_a_per_ack_rule_the_derivation_cannot_encode_is_refused(state: dict[str, Any], message: str) -> None:
    with pytest.raises(CcacError, match=message):
        LanguageCCA(parse_definition({"name": "x", "state": state}, "f.toml"))


def test_reno_congestion_avoidance_per_ack_is_accepted_and_a_two_signed_change_refused() -> None:
    """MSS * MSS / cwnd per ACK (a product and a quotient of solver quantities) keeps one sign
    once the divisor is bounded away from 0, which the sign proof shows with the non-linear
    nodes' exact relations; a change that grows small windows and shrinks large ones is refused,
    naming the rule."""
    reno = parse_definition({"name": "x", "state": {"cwnd": {
        "start": "alpha", "on_ack": "cwnd + alpha * alpha / max(cwnd, alpha)"}}}, "f.toml")
    LanguageCCA(reno)
    two_signed = parse_definition({"name": "x", "state": {"cwnd": {
        "start": "alpha", "on_ack": "cwnd + alpha * alpha / max(cwnd, alpha) - alpha / 2"}}}, "f.toml")
    with pytest.raises(CcacError, match=r"f.toml: state.cwnd.on_ack: the per-ACK change .* must keep one sign"):
        LanguageCCA(two_signed)


def test_the_tutorials_per_ack_query_finds_a_loss_event_after_some_acks() -> None:
    """docs/your-own-cca.md, section 5: a loss event that leaves more than half the step's
    starting window, because ACKs before it grew the window first."""
    from conftest import run_cli
    tutorial = Path(__file__).resolve().parent.parent / "examples" / "own_cca" / "reno_halving.toml"
    code, out, err = run_cli("query", str(tutorial))
    assert "sat: counterexample found" in out and "validated: yes" in out and "loss_acked[0]" in out, (out, err)
    query = tomllib.loads(tutorial.read_text())
    query["cca"] = {"file": str(DATA / "reno_per_step.toml")}
    query["query"]["find"] = query["query"]["find"].replace("recover[0]", "mark[0]")
    assert solve(parse_query(query), timeout=120).answer == "unsat"
