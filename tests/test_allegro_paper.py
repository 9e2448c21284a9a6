"""The paper-faithful PCC (Allegro) sender (senders/allegro_paper.py) on random paths of the
fluid harness: rates positive and sent as decided, MIs of the intended lengths and rates, the
state machine's rules (trial rates, eps, eq. 1, doubling), every reading exercised."""

from __future__ import annotations

import math
import random
from fractions import Fraction as F
from typing import Any

from fluid_path import PathConfig, Run, simulate
from substep import Probes

from ccac.senders.allegro_paper import CHOICES, AllegroPaperSender

PARAMS = {"link_mbps": 100}


def run_one(seed: int, fixed: dict[str, int] | None = None, slow_start: bool | None = None,
            T: int | None = None, buffer: Any = "random") -> tuple[Run, AllegroPaperSender, dict[str, int]]:
    rng = random.Random(seed)
    picks: dict[str, int] = {}

    def choose(what: str, n: int) -> int:
        assert CHOICES[what] == n
        k = fixed[what] if fixed and what in fixed else rng.randrange(n)
        picks.setdefault(what, k)
        return k

    cfg = PathConfig(T=T or rng.choice([40, 60, 80]), R=rng.choice([1, 2, 3]), D=rng.choice([0, 1, 2]),
                     buffer=rng.choice([None, F(1), F(2), F(4)]) if buffer == "random" else buffer,
                     eta=rng.choice([F(0), F(0), F(1, 20)]))
    slow = rng.random() < 0.3 if slow_start is None else slow_start
    made: list[AllegroPaperSender] = []

    def start(s: Any) -> AllegroPaperSender:
        made.append(AllegroPaperSender(s, slow_start=slow, choose=choose))
        return made[0]

    run = simulate(cfg, start, PARAMS, rng, paced=True, probes=Probes.random(rng))
    return run, made[0], picks


def check_run(run: Run, s: AllegroPaperSender) -> None:
    cfg = run.cfg
    R, T = cfg.R, cfg.T
    for t in range(R, T):
        rate = run.rate[t]
        assert rate > 0
        inflight = run.A[t - 1] - run.S[t - R] - run.Ld[t]
        assert run.cwnd[t] == inflight + rate
        assert run.A[t] - run.A[t - 1] == rate          # the window never limits
    covered: set[int] = set()
    prev_end = R - 1
    for m in s.log:
        assert m.s0 > prev_end                          # MIs do not overlap
        prev_end = m.last
        lo, hi = s.mi_factor_range()
        assert lo <= m.u <= hi
        if not m.cut:                                   # R3: max(10 MSS / rate, u RTT), whole steps
            assert m.steps == max(1, math.ceil(max(m.floor, m.u * m.rtt)))
        st = run.state[m.s0]
        floor_rate = st["base"] if (s.r_floor == 1 and m.role[0] == "trial") else m.rate
        assert m.floor == 10 * s.mss / floor_rate
        for t in range(m.s0, min(m.last + 1, T)):
            assert run.rate[t] == m.rate                # one rate per MI
            covered.add(t)
        if m.role[0] == "trial":                        # R10: r(1 +- eps)
            assert st["phase"] == "decision"
            assert m.rate == st["base"] * (1 + m.role[2] * st["eps"])
        if m.used:
            assert m.utility is not None
    for t in range(R, T):
        if t not in covered:
            assert run.state[t]["waiting"]              # outside MIs only while waiting (R16)
    for t in range(R, T):                               # eps in {eps_min, ..., eps_max}
        e = run.state[t]["eps"]
        assert s.eps_min <= e <= s.eps_max and (e / s.eps_min).denominator == 1
    # eq. 1 between consecutive adjusting MIs of one plan; doubling in the starting state
    for a, b in zip(s.log, s.log[1:]):
        if a.epoch == b.epoch and a.role[0] == b.role[0] == "adjust":
            n = b.role[1]
            assert n == a.role[1] + 1
            d = run.state[b.s0]["dir"]
            factor = 1 + n * s.eps_min * d
            assert b.rate == a.rate * (factor if factor > 0 else 1)
        if a.epoch == b.epoch and a.role[0] == b.role[0] == "start":
            assert b.rate == 2 * a.rate
    if s.r_pipeline == 1:                               # no MI starts while one is outstanding
        for a, b in zip(s.log, s.log[1:]):
            if a.epoch == b.epoch and not a.cut and a.known_at is not None:
                assert b.s0 >= a.known_at


def test_random_paths_and_readings() -> None:
    seen: dict[str, set[int]] = {k: set() for k in CHOICES}
    phases: set[str] = set()
    for seed in range(40):
        run, s, picks = run_one(seed)
        check_run(run, s)
        for k, v in picks.items():
            seen[k].add(v)
        phases |= {st["phase"] for st in run.state[run.cfg.R:]}
    assert {"start", "decision", "adjust"} <= phases
    for k, n in CHOICES.items():
        if k != "mi_draw":
            assert seen[k] == set(range(n)), (k, seen[k])


def test_default_reading_moves_up_on_an_empty_path() -> None:
    """No loss below capacity: U rises with the rate, so every round is conclusive upwards and
    rate adjusting follows (R11, R14)."""
    rng = random.Random(7)
    made: list[AllegroPaperSender] = []

    def start(st: Any) -> AllegroPaperSender:
        made.append(AllegroPaperSender(st, choose=lambda w, n: rng.randrange(n) if w in ("mi_draw", "trial_order") else 0))
        return made[0]

    cfg = PathConfig(T=90, R=1, D=0, buffer=None)
    run = simulate(cfg, start, PARAMS, rng, paced=True, probes=Probes.random(rng))
    s = made[0]
    check_run(run, s)
    assert run.rate[1] in (F(1, 2) * F(101, 100), F(1, 2) * F(99, 100))
    roles = [m.role[0] for m in s.log]
    assert roles[:4] == ["trial"] * 4 and roles[4] == "adjust"
    assert [m.role for m in s.log if m.role[0] == "adjust"][:2] == [("adjust", 0), ("adjust", 1)]
    assert all(run.state[m.s0]["dir"] == 1 for m in s.log if m.role[0] == "adjust")
    assert run.rate[-1] > F(1, 2)


def test_slow_start_doubles_then_exits_at_the_previous_rate() -> None:
    rng = random.Random(3)
    made: list[AllegroPaperSender] = []

    def start(st: Any) -> AllegroPaperSender:
        made.append(AllegroPaperSender(st, slow_start=True, choose=lambda w, n: 0))
        return made[0]

    cfg = PathConfig(T=60, R=2, D=1, buffer=F(1))
    run = simulate(cfg, start, PARAMS, rng, paced=True, probes=Probes.random(rng))
    s = made[0]
    check_run(run, s)
    first = s.log[0]
    assert first.role == ("start",) and first.rate == 2 * s.mss / first.rtt     # R7
    starts = [m for m in s.log if m.role[0] == "start"]
    used = [m for m in starts if m.used]
    drop = next(i for i in range(1, len(used)) if used[i].utility < used[i - 1].utility)
    trial = next(m for m in s.log if m.role[0] == "trial")
    assert run.state[trial.s0]["base"] == used[drop - 1].rate                   # R9
    assert all(m.role[0] != "start" for m in s.log[s.log.index(trial):])


def test_utility_is_the_safe_one() -> None:
    rng = random.Random(0)
    made: list[AllegroPaperSender] = []
    simulate(PathConfig(T=4, R=1, D=0), lambda st: made.append(AllegroPaperSender(st)) or made[0], PARAMS, rng,
             paced=True, probes=Probes.random(rng))
    s = made[0]
    assert abs(float(s.utility(F(100), F(100), F(0))) - 100 / (1 + math.exp(-5))) < 1e-12
    assert s.utility(F(100), F(95), F(1, 20)) == F(95, 2) - 5                     # Sigmoid(0) = 1/2
    assert s.utility(F(100), F(80), F(1, 5)) < 0
