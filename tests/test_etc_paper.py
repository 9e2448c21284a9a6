"""The paper-faithful ETC sender (senders/etc_paper.py) on random paths of the fluid harness:
rates positive and sent as decided, micro-bursts of N*MSS (a flush excepted), accelerations by
Eq. 1 and decelerations to (s + r)/2 happen, pulling-rate samples from ACK timing equal Eq. 5
and, on a path without jitter, the link rate C; every reading exercised."""

from __future__ import annotations

import math
import random
from fractions import Fraction as F
from typing import Any

from fluid_path import PathConfig, Run, simulate
from substep import Probes

from ccac.senders.etc_paper import CHOICES, ETCPaperSender, eq1, fifty


def run_one(seed: int, readings: str = "random", jitter: bool | None = None, params: dict[str, Any] | None = None,
            T: int = 40) -> tuple[PathConfig, Run, ETCPaperSender]:
    rng = random.Random(seed)
    crng = random.Random(seed * 7919 + 1)
    picks: dict[str, int] = {}

    def choose(what: str, n: int) -> int:
        assert CHOICES[what] == n
        return picks.setdefault(what, crng.randrange(n))

    clean = jitter is False
    alpha = F(1, rng.choice([10, 20, 40]))
    cfg = PathConfig(T=T, R=rng.choice([1, 2, 3]), D=0 if clean else rng.choice([0, 1, 2]),
                     buffer=None if clean else rng.choice([None, F(2), F(4), F(8)]),
                     eta=F(0) if clean else rng.choice([F(0), F(0), F(1, 20)]), alpha=alpha)
    par: dict[str, Any] = {
        "accel_on_equal": rng.random() < 0.5, "theta": rng.choice([F(1, 10), F(1, 4), F(1, 2)]),
        "force_from": rng.choice(["update", "increase"]), "base": rng.choice(["e", "e", 3]),
        "k": rng.choice([F(5, 4), F(11, 10) + F(1, 100)]),
    }
    par.update(params or {})
    values = {"rate": rng.choice([F(1, 2), F(1), F(3, 2)])} if rng.random() < 0.7 else {}
    made: list[ETCPaperSender] = []

    def start(s: Any) -> ETCPaperSender:
        made.append(ETCPaperSender(s, choose=choose if readings == "random" else None))
        return made[0]

    run = simulate(cfg, start, par, rng, values=values, paced=True, probes=Probes.random(rng))
    return cfg, run, made[0]


def check_sending(cfg: PathConfig, run: Run, snd: ETCPaperSender) -> None:
    """Rates positive and sent in full; cwnd = inflight + rate; bursts of N*MSS, except a
    flushed partial batch, alone in its step; a paced part only for a paced flush or an idle
    step's sliver."""
    R, B = cfg.R, snd.N * cfg.alpha
    for t in range(R, cfg.T):
        bursts, paced, kind = snd.sent_log[t]
        assert run.rate[t] > 0
        assert run.rate[t] == sum(bursts, F(0)) + paced == run.A[t] - run.A[t - 1]
        assert run.cwnd[t] == run.A[t - 1] - run.S[t - R] - run.Ld[t] + run.rate[t]
        short = [b for b in bursts if b != B]
        if short:                                   # a flush (L10) sent back to back
            assert snd.alt["flush"] == 0 and bursts == tuple(short) and len(short) == 1 and short[0] < B
        if paced:
            assert not bursts and (kind == "idle" or snd.alt["flush"] == 1)
        assert sum(bursts, F(0)) <= 10 * cfg.C      # the harness's line rate


def check_updates(snd: ETCPaperSender) -> None:
    """Every acceleration is Eq. 1 (clamped if so read), every deceleration (s + r)/2."""
    for a in snd.accels:
        if a["rp"] is None:
            assert a["new"] == a["old"]
            continue
        base = math.e if snd.base is None else float(snd.base)
        f = math.log(float(a["rp"] / a["old"]) + base - 1) / math.log(base)
        if snd.alt["clamp"] == 1:
            f = max(f, 1.0)
        assert math.isclose(float(a["f"]), f, rel_tol=1e-12)
        assert math.isclose(float(a["new"]), float(a["old"]) * f, rel_tol=1e-12)
        if a["new"] > a["old"]:                     # Eq. 1 never passes Rp (alpha >= e)
            assert a["new"] <= a["rp"]
    for d in snd.decels:
        half = fifty((d["old"] + d["r"]) / 2)        # kept to 50 digits
        assert abs(half - (d["old"] + d["r"]) / 2) <= half / 10**48
        assert d["new"] == (min(half, d["old"]) if snd.alt["decel_clamp"] == 1 else half)
        if d["td"] is not None:                     # Eq. 2
            assert d["td"] == (d["inflight"] - d["bdp"]) / ((1 - snd.eta) * d["new"])


def test_random_paths_and_readings() -> None:
    seen: set[str] = set()
    accels = decels = samples = bursts = forced = drains = stable = 0
    for seed in range(14):
        cfg, run, snd = run_one(seed, readings="default" if seed < 3 else "random")
        if seed >= 3:
            seen |= {w for w, k in snd.alt.items()}
        check_sending(cfg, run, snd)
        check_updates(snd)
        accels += len(snd.accels)
        decels += len(snd.decels)
        forced += sum(a["forced"] for a in snd.accels)
        drains += sum(d["td"] is not None for d in snd.decels)
        samples += sum("fallback" not in s for s in snd.sample_log)
        bursts += sum(b == snd.N * cfg.alpha for t in range(cfg.R, cfg.T) for b in snd.sent_log[t][0])
        stable += any(st.get("stage") == 2 for st in run.state[cfg.R:])
        for s in snd.sample_log:                    # Eq. 5 from the ACK timing
            if "fallback" not in s:
                assert s["value"] == s["bytes"] / (s["last"] - s["first"]) > 0
                if s["full"] and snd.alt["sample_acks"] == 0:
                    assert s["bytes"] == (snd.N - 1) * cfg.alpha
    assert seen == set(CHOICES)
    assert accels > 0 and decels > 0 and forced > 0 and drains > 0
    assert samples > 0 and bursts > 0 and stable > 0


def test_pulling_rate_is_the_link_rate_without_jitter() -> None:
    """D = 0, no loss, infinite buffer: a micro-burst leaves at 10 C, queues, and is served at
    C, so every sample (N - 1) MSS / (last ACK - first ACK) is exactly C."""
    count = 0
    for seed in range(6):
        cfg, run, snd = run_one(100 + seed, readings="default" if seed % 2 else "random", jitter=False)
        check_sending(cfg, run, snd)
        for s in snd.sample_log:
            assert "fallback" not in s
            assert s["value"] == s["bytes"] / (s["last"] - s["first"]) == cfg.C
            if s["full"]:
                assert s["bytes"] == (snd.N - 1) * cfg.alpha
                assert s["last"] - s["first"] == (snd.N - 1) * cfg.alpha / cfg.C
            count += 1
    assert count > 0


def test_short_steps_timer_and_slivers() -> None:
    """Steps of 5 ms: the 10 ms timer spans two steps (tick 2); an idle step still sends a
    sliver, so every rate stays positive."""
    idle = 0
    for seed in range(4):
        cfg, run, snd = run_one(200 + seed, params={"step_seconds": 0.005}, T=30)
        assert snd.tick == 2
        check_sending(cfg, run, snd)
        check_updates(snd)
        idle += sum(snd.sent_log[t][2] == "idle" for t in range(cfg.R, cfg.T))
    assert idle > 0


def test_eq1_and_defaults() -> None:
    for rp, s in ((F(1), F(1, 1000)), (F(1), F(1, 5)), (F(3), F(2)), (F(1), F(2))):
        f, new = eq1(rp, s, None)
        assert math.isclose(float(f), math.log(float(rp / s) + math.e - 1), rel_tol=1e-15)
        if s < rp:
            assert 1 < f and new <= rp                  # "takes the pulling rate as the maximum"
        else:
            assert f < 1
    assert eq1(F(7, 3), F(7, 3), None)[0] == 1 or abs(eq1(F(7, 3), F(7, 3), None)[0] - 1) < F(1, 10**45)
    assert math.isclose(float(eq1(F(1), F(1, 5), F(2))[0]), math.log2(5 + 1), rel_tol=1e-15)
    from ccac.senders.interface import SenderStart
    snd = ETCPaperSender(SenderStart(4, 0, F(1), F(1, 10), {}))
    assert snd.s == 10 * F(1, 10) / 4 and snd.N == 8 and snd.eta == F(3, 10) and snd.tick == 1
    assert ETCPaperSender(SenderStart(4, 0, F(1), F(1, 10), {"step_seconds": 0.015})).tick == F(2, 3)
