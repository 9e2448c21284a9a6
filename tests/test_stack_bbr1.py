"""bbr1 (ccas/rules/bbr1.toml), BBRv1 as ns-3's TcpBbr: its encoding admits the runs of its
derived sender on random fluid paths, and four recorded ns-3 runs (tests/data/bbr1_ns3_runs.json:
seed 0's paths 0, 2, 9 and 25 of ``python -m ccac.testbed.ns3_conformance``: Startup, its pacing
rate raised, a window below the 4-MSS floor, losses detected and recovery) pinned into it with
their windows and pacing rates; (slow, ns-3) the harness on 10 paths.

The pinned pacing rate pins the bandwidth filter within a percent in Drain and ProbeBW, and from
below after Startup raises it (the file's ``paced``), so the window's target binds: path 25's run
(index 3) raises its rate at seven steps and grows its window by exactly the bytes ACKed while
below the target that rate shows, which a window that must grow by more does not admit.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import pytest

from conftest import cca_params
from fluid_path import PathConfig, Run, admits, simulate

from ccac.ccas import CCAS
from ccac.ccas.language import LanguageCCA
from ccac.testbed.ns3_conformance import DETECTED, TcpRun, admission, measure

from test_ns3 import needs_ns3, ns3  # noqa: F401  (ns3: the fixture that imports ns-3 once)

FILE = Path(__file__).resolve().parent.parent / "ccas" / "rules" / "bbr1.toml"
RECORDED = Path(__file__).parent / "data" / "bbr1_ns3_runs.json"
SEEDS = 8
#: the reading cca+state with the detected losses: the run's curves, its detections, window and
#: pacing rate (the file's ``pacing_rate``)
STATE = {"curves": DETECTED, "pin_cwnd": True, "state": ("cwnd", "rate")}


def run_on_random_path(seed: int) -> Run:
    """bbr1's derived sender on one random fluid path, its open choices drawn at random."""
    cca = CCAS["bbr1"]
    assert isinstance(cca, LanguageCCA)
    rng = random.Random(seed)
    cfg = PathConfig(T=9, R=rng.choice([1, 2]), D=rng.choice([0, 1]), buffer=rng.choice([None, F(1, 2), F(1)]),
                     dupacks=rng.choice([F(0), F(1)]), eta=rng.choice([F(0), F(1, 10)]))
    start = lambda s: cca.concrete(s, lambda what, n: rng.randrange(n))  # noqa: E731
    return simulate(cfg, start, cca_params(cca), rng, {"cwnd": cfg.alpha * rng.randint(4, 20)})


def test_the_encoding_admits_its_derived_senders_runs() -> None:
    runs = [run_on_random_path(seed) for seed in range(SEEDS)]
    assert sum(r.Ld[-1] > 0 for r in runs) >= 2, "too few runs detect a loss: recovery goes untested"
    for run in runs:
        admits({"name": "bbr1"}, run, fix_state=("max_bw", "mode", "pacing_rate"))


def recorded() -> list[TcpRun]:
    """The recorded ns-3 runs, as the harness read them."""
    return [TcpRun.from_record(r) for r in json.loads(RECORDED.read_text())["runs"]]


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_recorded_ns3_runs_are_admitted_with_their_window_and_pacing_rate(index: int) -> None:
    """Each run pinned with its detections, window and pacing rate (so each reading that pins
    less admits it too); run 1 detects losses and recovers (its window falls)."""
    run = recorded()[index]
    assert max(run.cwnd) > run.cwnd[run.path.R], "the run leaves its window where it started"
    if index == 1:
        assert run.Ld[-1] is not None and run.Ld[-1] > 0 and min(run.cwnd[run.path.R:]) < max(run.cwnd)
    answer = admission(run, FILE, **STATE)  # type: ignore[arg-type]
    assert answer.admitted is True, f"{run.describe()}: rejected by {answer.culprits[:8]}"


def test_a_recorded_window_off_by_one_packet_is_rejected() -> None:
    """The state reading can fail: the recorded run with its window one packet above ns-3's at
    one step of Startup (more than the step's ACKs allow) is rejected."""
    run = recorded()[0]
    t = run.path.R + 2
    cwnd = list(run.cwnd)
    cwnd[t] += 2 * run.path.alpha
    answer = admission(TcpRun(**{**run.__dict__, "cwnd": cwnd}), FILE, **STATE)  # type: ignore[arg-type]
    assert answer.admitted is False


@pytest.mark.slow
@needs_ns3
def test_the_harness_admits_ns3s_runs_on_ten_paths(ns3: Any) -> None:  # noqa: F811
    counts = measure(FILE, "bbr1", 10, 0, readings=("cca", "cca+Ld"))
    assert counts == {"cca": 10, "cca+Ld": 10}
