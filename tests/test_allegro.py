"""PCC Allegro: the encoding admits every run of the concrete sender (``ccac.senders.allegro``;
the superset property, tested with hypothesis), solver traces pass the independent check and
the check catches corrupted ones, the decision state moves only when both pairs agree, and
windows of longer runs are traces."""

from __future__ import annotations

import random
from fractions import Fraction as F
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import answer, make_query
from fluid_path import PathConfig, Run
from pcc_conformance import Admitter, allegro_start, concrete_run, paper_run, random_choices, resolved_params

from ccac import solve
from ccac.solving.solvers import solve_z3
from ccac.ccas import get_cca
from ccac.ccas.allegro import sigmoid_bands, sigmoid_gap
from ccac.senders.allegro import sigmoid
from ccac.senders.allegro_paper import AllegroPaperSender
from ccac.solving.validate import flow_values
from ccac.analysis.window import window_is_trace, windows

ALLEGRO = get_cca("allegro")
# R = 1 gives MIs of 1..3 steps, R = 2 of 3..5
CONFIGS: dict[str, PathConfig] = {
    "clean-R1": PathConfig(T=10, R=1, D=1),
    # dupacks = 0 at R = 1, as in tests/test_vivace.py (a model corner of loss detection)
    "lossy-buffer-R1": PathConfig(T=10, R=1, D=1, eta=F(1, 10), buffer=F(1), dupacks=F(0)),
    "random-loss-R1": PathConfig(T=10, R=1, D=0, eta=F(1, 20), dupacks=F(0)),
    "shallow-buffer-R2": PathConfig(T=10, R=2, D=1, buffer=F(1, 2)),
}
_ADMITTERS: dict[str, Admitter] = {}


def admitter(key: str) -> Admitter:
    if key not in _ADMITTERS:
        _ADMITTERS[key] = Admitter(CONFIGS[key], {"name": "allegro"})
    return _ADMITTERS[key]


def sender_run(key: str, rng: random.Random) -> tuple[Run, dict[str, dict[int, F]]]:
    """The concrete Allegro on a random path of ``key``, from a random state at step R - 1."""
    cfg, cca = CONFIGS[key], {"name": "allegro"}
    return concrete_run(cfg, cca, rng, allegro_start(rng, cfg, resolved_params(cfg, cca)), random_choices(rng))


# ------------------------------------------------------------------ the superset property
@pytest.mark.parametrize("key", sorted(CONFIGS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_encoding_admits_every_run_of_the_concrete_sender(key: str, rng: random.Random) -> None:
    """Pin every model variable, the sender's state (rates, modes, MI lengths, decisions) and
    its exact MI utilities in the encoding: it must still be satisfiable."""
    run, measured = sender_run(key, rng)
    adm = admitter(key)
    assert adm.admits(run, measured) == "sat", adm.why_not(run, measured)[:20]


def split_vote(run: Run, measured: dict[str, dict[int, F]]) -> bool:
    """Whether the run has a decision that keeps the rate although one pair, both of whose MIs
    ended in the trace (their utilities pinned), favoured the higher rate (rule 8: the pairs
    must agree)."""
    cfg, states, util = run.cfg, run.state, measured["util"]
    for t in range(cfg.R, cfg.T):
        now, before = states[t], states[t - 1]
        if now["event"] != 1 or before["mode"] != 1 or now["mode"] != 1 or now["base"] != before["base"]:
            continue
        ends: dict[int, int] = {}   # the round's MI i ended at step ends[i]
        for s in range(t - 1, cfg.R - 2, -1):
            if states[s]["phase"] < 4 and states[s]["pos"] == states[s]["mlen"] - 1:
                ends.setdefault(states[s]["phase"], s)
            if states[s].get("event", 0) != 0:   # the round began here
                break
        for k in range(2):
            plus, minus = (2 * k, 2 * k + 1) if before["order"] >> k & 1 else (2 * k + 1, 2 * k)
            if plus in ends and minus in ends and ends[plus] in util and ends[minus] in util \
                    and util[ends[plus]] > util[ends[minus]]:
                return True
    return False


# Runs whose decision keeps the rate although one pair favoured the higher rate (split_vote):
# an encoding that moved on a single pair's vote rejects them (tests/mutants.py:
# allegro_up_on_one_pair). Only the lossy configurations have them, in about 8% of the seeds of
# sender_run (none of 300 on the lossless ones), so the 30 random draws above miss them in
# about one run in ten; these seeds, the first ones of a screen of seeds 0..300, reach them on
# every run.
SPLIT_VOTES = {"lossy-buffer-R1": (10, 30, 36), "random-loss-R1": (30, 36, 40)}


@pytest.mark.parametrize("key", sorted(SPLIT_VOTES))
def test_encoding_admits_runs_whose_pairs_disagree(key: str) -> None:
    adm = admitter(key)
    for seed in SPLIT_VOTES[key]:
        run, measured = sender_run(key, random.Random(seed))
        assert split_vote(run, measured), f"seed {seed} no longer reaches a split vote: choose others"
        assert adm.admits(run, measured) == "sat", (seed, adm.why_not(run, measured)[:20])


@pytest.mark.parametrize("key", ["clean-R1", "shallow-buffer-R2"])
def test_encoding_admits_the_default_sender(key: str) -> None:
    """The sender as CCA.concrete makes it without a hook, nothing known at its start: its
    defaults (the starting state, its first MI began at step 0, shortest MIs) too."""
    for seed in range(8):
        run, measured = concrete_run(CONFIGS[key], {"name": "allegro"}, random.Random(seed), {}, None)
        assert admitter(key).admits(run, measured) == "sat", admitter(key).why_not(run, measured)[:20]


# the paper's own sender (senders/allegro_paper.py, written from the paper alone): every reading
# of the paper drawn at random, on paths with per-packet samples, only the model's variables
# pinned. Its MI lengths come from its RTT estimate (queueing and jitter included) and from
# the 10-packet floor, so each configuration raises mi_hi to cover them (ccas/allegro.py:
# MI length, a parameter-covered restriction): at R = 1 MIs of up to 8 steps, at R = 2 up to 10.
PAPER: dict[str, tuple[PathConfig, dict[str, Any]]] = {
    "clean": (PathConfig(T=12, R=1, D=0), {"mi_hi": 8}),
    "jitter": (PathConfig(T=12, R=1, D=1), {"mi_hi": 8}),
    "lossy": (PathConfig(T=12, R=1, D=0, eta=F(1, 10), buffer=F(1), dupacks=F(0)), {"mi_hi": 8}),
    "shallow": (PathConfig(T=12, R=2, D=0, buffer=F(1, 2)), {"mi_hi": 5}),
}
PAPER_RUNS = 8
# readings the encoding does not cover, pinned to the covered alternative (each a RESTRICTION
# in ccas/allegro.py's docstring: an unsat answer holds only for senders with that reading):
ALLEGRO_RESTRICTIONS = {
    # an MI's metrics are the fates of the bytes it sent, not the events seen during it
    "mi_feedback": 0,
}
# every third run starts in the starting state (the constructor's slow_start); there the
# encoding waits for each MI's fate before the next doubling: pipelining across a pending
# starting-state result (pipeline = 0) is not covered. (In decision making both readings are.)
STARTING_RESTRICTIONS = {**ALLEGRO_RESTRICTIONS, "pipeline": 1}


def paper_runs(key: str, seeds: range) -> None:
    cfg, params = PAPER[key]
    cca = {"name": "allegro", **params}
    adm = Admitter(cfg, cca)
    for seed in seeds:
        slow = seed % 3 == 2
        run, drawn = paper_run(cfg, cca, lambda s, c: AllegroPaperSender(s, slow_start=slow, choose=c),
                               random.Random(seed), STARTING_RESTRICTIONS if slow else ALLEGRO_RESTRICTIONS)
        assert adm.admits(run, {}) == "sat", (seed, slow, drawn, adm.why_not(run, {})[:20])


@pytest.mark.parametrize("key", sorted(PAPER))
def test_encoding_admits_every_run_of_the_paper_sender(key: str) -> None:
    """senders/allegro_paper.py, written from the paper alone, with its open readings at random
    (except ALLEGRO_RESTRICTIONS)."""
    paper_runs(key, range(PAPER_RUNS))


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(PAPER))
def test_encoding_admits_many_runs_of_the_paper_sender(key: str) -> None:
    paper_runs(key, range(PAPER_RUNS, 60))


def test_concrete_runs_exercise_every_rule() -> None:
    """The conformance runs apply every state's rule with each outcome, and time out."""
    seen: set[tuple[int, int, int]] = set()
    for seed in range(60):
        for key in ("clean-R1", "lossy-buffer-R1"):
            states = sender_run(key, random.Random(seed))[0].state
            for t in range(CONFIGS[key].R + 1, CONFIGS[key].T):
                now, before = states[t], states[t - 1]
                if now["event"] == 2:
                    seen.add((2, 0, 0))
                if now["event"] == 1:
                    change = (now["base"] > before["base"]) - (now["base"] < before["base"])
                    seen.add((1, before["mode"], change))
    assert {(2, 0, 0), (1, 0, 1), (1, 0, -1), (1, 1, 1), (1, 1, -1), (1, 1, 0), (1, 2, 1), (1, 2, -1)} <= seen, seen


def test_sigmoid_bands_contain_the_sigmoid_and_are_tight() -> None:
    bands = sigmoid_bands(F(100), F(1, 20), F(1, 200), F(3, 20))
    for lo, hi, s_lo, s_hi in bands:
        for y in ([lo] if hi is None else [lo, (lo + hi) / 2, hi]):
            assert s_lo <= sigmoid(y - F(1, 20), F(100)) <= s_hi
    assert bands[0][3] - bands[0][2] < F(1, 10 ** 11)         # exact without loss
    assert sigmoid_gap(F(100), F(1, 20), F(1, 200), F(3, 20)) < 0.125


# ------------------------------------------------------------------ traces validate; the check catches corruption
def run(network: dict[str, Any], cca: dict[str, Any] | None = None, find: str | None = None,
        assume: list[str] | None = None) -> Any:
    return answer(network, {"name": "allegro", **(cca or {})}, find, assume, timeout=180)


# a decision that raises the rate, its whole round inside the trace (so every MI is checked)
DECISION = ("any(event[0][t] == 1 and mode[0][t-1] == 1 and base[0][t] > base[0][t-1] "
            "and any(event[0][u] != 0 for u in range(1, t - 3)) for t in range(5, T))")
# MIs of exactly one step at R = 1 (mi_lo = mi_hi = 1): a decision round fits in 5 steps
FAST = {"mi_lo": 1, "mi_hi": 1}


def _decision_trace() -> tuple[Any, Any, int]:
    q = make_query({"T": 7, "R": 1, "buffer": 1}, {"name": "allegro", **FAST}, find=DECISION)
    result = solve(q, timeout=180)
    assert result.answer == "sat" and result.validated, result.reason
    ev, mode = result.trace.flow("event", 0), result.trace.flow("mode", 0)
    t = next(t for t in range(5, q.network.T) if ev[t] == 1 and mode[t - 1] == 1)
    return q, result.trace, t


def test_check_catches_corrupted_traces() -> None:
    """Corrupt a validated trace at its decision step: the move, the utility, the rate."""
    q, trace, t = _decision_trace()
    values = flow_values(trace, 0, q.flows[0].params)
    assert ALLEGRO.check(values) == []
    # a move the decision rule does not allow (the rate must also follow, or the rate check fires)
    values.state["base"][t] *= F(3, 2)
    values.rate[t] *= F(3, 2)
    assert any(p.startswith(f"step {t}: decision making") for p in ALLEGRO.check(values)), ALLEGRO.check(values)
    # a utility outside the sigmoid enclosure at the end of the decision's last MI
    values = flow_values(trace, 0, q.flows[0].params)
    e = t - 1
    while values.state["phase"][e] == 4:
        e -= 1
    values.state["util"][e] += 50
    assert any(p.startswith(f"step {e}: utility") for p in ALLEGRO.check(values)), ALLEGRO.check(values)
    # a sending rate off the probe rate
    values = flow_values(trace, 0, q.flows[0].params)
    values.rate[e] += F(1, 7)
    assert any(p.startswith(f"step {e}: rate") for p in ALLEGRO.check(values))


@pytest.mark.parametrize("network", [{"T": 8, "R": 1, "eta": 0.05}, {"T": 8, "R": 2, "buffer": 1}])
def test_solver_traces_with_rules_pass_the_independent_check(network) -> None:
    result = run(network, find="any(event[0][t] == 1 for t in range(1, T))")
    assert result.answer == "sat" and result.validated, result.reason


# ------------------------------------------------------------------ semantics of the decision state
# the four decision MIs lie in the trace: the experiment started with an event at u >= 1
IN_TRACE = "any(event[0][u] != 0 for u in range(1, t - 3))"


@pytest.mark.parametrize("outcome, expect", [("<", "unsat"), ("==", "unsat"), (">", "sat")])
def test_without_loss_a_decision_moves_up(outcome: str, expect: str) -> None:
    """No loss: u = x Sig(-0.05) is proportional to the rate, so both pairs agree that the higher
    rate is better; a decision inside the trace never moves down or stays, and it moves up."""
    net, clean = {"T": 7, "R": 1, "D": 0}, ["all(L_f[0][t] == 0 for t in range(T))"]
    find = (f"any(event[0][t] == 1 and mode[0][t-1] == 1 and base[0][t] {outcome} base[0][t-1] and {IN_TRACE} "
            "for t in range(5, T))")
    result = run(net, FAST, assume=clean, find=find)
    assert result.answer == expect, result.reason


def test_disagreeing_pairs_keep_the_rate_and_grow_eps() -> None:
    """With loss the pairs can disagree: the rate stays and eps grows by eps_min, never more."""
    net = {"T": 7, "R": 1, "D": 0, "eta": 0.1}
    stay = "any(event[0][t] == 1 and mode[0][t-1] == 1 and base[0][t] == base[0][t-1] and eps[0][t] == eps[0][t-1] + 0.01 for t in range(1, T))"
    assert run(net, FAST, find=stay).answer == "sat"
    jump = "any(event[0][t] == 1 and mode[0][t-1] == 1 and mode[0][t] == 1 and eps[0][t] > eps[0][t-1] + 0.01 for t in range(1, T))"
    assert run(net, FAST, find=jump).answer == "unsat"


def test_windows_of_longer_runs_are_traces() -> None:
    """The history rules are implied by any real past (ccac.analysis.window)."""
    net = {"T": 5, "R": 1, "D": 1, "buffer": 1}
    short, long = windows(make_query(net, {"name": "allegro"}), make_query({**net, "T": 7}, {"name": "allegro"}))
    assert window_is_trace(short, long, 2, solve_z3, 300).outcome.answer == "unsat"


# ------------------------------------------------------------------ random loss on either side of the cap
UNIFORM_LOSS = ["all(A_f[0][t] - A_f[0][t-1] == rate[0][t] for t in range(1, T))",
                "all(Lnc_f[0][t] - Lnc_f[0][t-1] == p * (A_f[0][t] - A_f[0][t-1]) for t in range(1, T))"]


def decision_find(direction: str) -> str:
    return (f"any(event[0][t] == 1 and mode[0][t-1] == 1 and base[0][t] {direction} base[0][t-1] and {IN_TRACE} "
            "for t in range(1, T))")


@pytest.mark.parametrize("p, alpha, direction, expect", [
    ("0.08", 100, "<", "sat"),     # the mirrored find of queries/allegro_loss_near_cap.toml: not vacuous
    ("0.02", 100, "<", "unsat"),   # below the cap random loss is tolerated: no decision moves down
    ("0.02", 100, ">", "sat"),
    # alpha = 100 puts the single-sender break-even loss (1-L) Sig(L - 0.05) = L at 7.44%, not
    # 5%: 6% uniform loss is still tolerated; with the code's alpha = 1000 (break-even 5.28%) not
    ("0.06", 100, "<", "unsat"),
    ("0.06", 1000, "<", "sat"),
])
def test_uniform_random_loss_on_either_side_of_the_cap(p: str, alpha: int, direction: str, expect: str) -> None:
    q = make_query({"T": 7, "R": 1, "D": 0, "buffer": "inf", "eta": p}, {"name": "allegro", "alpha": alpha, **FAST},
                   find=decision_find(direction), assume=[a.replace("p *", f"{p} *") for a in UNIFORM_LOSS])
    result = solve(q, timeout=180)
    assert result.answer == expect, result.reason
    if expect == "sat":
        assert result.validated, result.violations


# this experiment began with a rule at t-2 whose own MI lies in the trace (a rule at u >= 1
# before it), so both utilities compared come from the trace
EARLIER = "event[0][t-2] == 1 and any(event[0][u] == 1 for u in range(1, t - 2))"


@pytest.mark.parametrize("find, expect", [
    # without loss u = x Sig(-0.05) grows with the rate: the starting state never exits ...
    ("any(event[0][t] == 1 and mode[0][t-1] == 0 and mode[0][t] == 1 and {EARLIER} for t in range(4, T))",
     "unsat"),
    # ... but keeps doubling
    ("any(event[0][t] == 1 and mode[0][t-1] == 0 and base[0][t] == 2 * base[0][t-1] and {EARLIER} "
     "for t in range(4, T))", "sat"),
    # and an upward rate adjustment never reverts
    ("any(event[0][t] == 1 and mode[0][t-1] == 2 and dir[0][t-1] == 1 and mode[0][t] == 1 and {EARLIER} "
     "for t in range(4, T))", "unsat"),
])
def test_starting_and_rate_adjusting_states_without_loss(find: str, expect: str) -> None:
    """Each rule compares one MI (here of one step) with the previous MI's utility, which the
    previous rule stored."""
    net, clean = {"T": 7, "R": 1, "D": 0}, ["all(L_f[0][t] == 0 for t in range(T))"]
    result = run(net, FAST, assume=clean, find=find.replace("{EARLIER}", EARLIER))
    assert result.answer == expect, result.reason
