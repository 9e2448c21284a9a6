"""The Vegas stack file (ccas/rules/vegas.toml, ns-3's TcpVegas with classic recovery): its
derived sender's runs on random fluid paths are admitted by its encoding, and so are recorded
runs of ns-3's own TcpVegas (tests/data/ns3_vegas_*.json, read by ccac.testbed.ns3_conformance
on two of seed 0's paths and one whose link the window does not fill), with ns-3's window and
ssthresh pinned, so that conformance is checked without ns-3; the slow test runs the harness
itself on ten paths (window and ssthresh pinned too).
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
from test_ns3 import needs_ns3, ns3  # noqa: F401  (ns3: the fixture that imports ns-3 once)

from ccac.ccas import CCAS
from ccac.ccas.language import LanguageCCA
from ccac.testbed.ns3_conformance import DETECTED, MODEL_CURVES, TcpRun, admission, measure
from ccac.testbed.ns3_stacks import LOSS_BASED, STACKS

FILE = Path(__file__).resolve().parent.parent / "ccas" / "rules" / "vegas.toml"
DATA = Path(__file__).parent / "data"
#: seed 0's path 1: slow start from 6 packets, 3 drops, slow start left at step 6 (ssthresh 10000 ->
#: 9), a loss event at step 9 (cwnd 10 -> 9) and recovery; path 3: slow start from 10 to 18, left
#: at step 6 (ssthresh 17), a loss event at step 12 (18 -> 17); underused: a link of 8 packets a
#: step (R = 1, D = 0) that the window does not fill, linear mode from 2 packets (ssthresh 2): with
#: two segments in flight every ACK ends a round of one ACK, with three every other ACK ends one of
#: two: NewReno's increment up to twice a step (2 -> 2.9 -> 3.55 -> 3.83 -> 4.34; ssthresh held at
#: 2, below 3/4 of the window, so no Vegas step explains it), then Vegas' +1 MSS (5, 6), twice in
#: the step whose ACKs cover the whole flight (6 -> 8), once a step to 11, ssthresh raised to 3/4 of
#: the window (3.75 .. 8.25), and holds
RECORDED = {name: DATA / f"ns3_vegas_{name}.json" for name in ("path1", "path3", "underused")}
SEEDS = 16


def vegas() -> LanguageCCA:
    """The bundled file, as `ccac list` and queries name it."""
    cca = CCAS["vegas"]
    assert isinstance(cca, LanguageCCA)
    return cca


def run_on_random_path(cca: LanguageCCA, seed: int) -> Run:
    """The derived sender on one random fluid path (some in slow start, some in linear mode),
    the loss event and the open choices (the round's verdict and truncation) at random; no
    timeout fires (rto = T, as on the ns-3 harness's paths)."""
    rng = random.Random(seed)
    cfg = PathConfig(T=9, R=rng.choice([1, 2]), D=rng.choice([0, 1]), buffer=rng.choice([None, F(1, 2), F(1)]),
                     dupacks=rng.choice([F(0), F(1)]), eta=rng.choice([F(0), F(1, 10)]), rto=9)
    start = lambda s: cca.concrete(s, lambda what, n: rng.randrange(n))  # noqa: E731
    values = {"cwnd": cfg.alpha * rng.randint(1, 20), "ssthresh": cfg.alpha * rng.choice([2, 5, 10, 10000])}
    return simulate(cfg, start, cca_params(cca), rng, values)


def test_the_encoding_admits_every_run_of_the_derived_sender() -> None:
    cca = vegas()
    runs = [run_on_random_path(cca, seed) for seed in range(SEEDS)]
    events = sum(1 for r in runs for t, s in enumerate(r.state) if s and t > r.cfg.R and r.Ld[t] > r.Ld[t - 1])
    assert events >= 3, "too few steps with detections: the test tests little"
    for run in runs:
        admits({"name": "vegas"}, run, fix_state=tuple(s.name for s in cca.state))


def recorded(name: str) -> TcpRun:
    """A recorded ns-3 run, its values the exact fractions the harness read."""
    return TcpRun.from_record(json.loads(RECORDED[name].read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_encoding_admits_ns3s_recorded_run_with_its_detected_losses(name: str) -> None:
    run = recorded(name)
    answer = admission(run, FILE, curves=DETECTED)
    assert answer.admitted is True, f"{run.describe()}: {answer.culprits[:6]}"


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_encoding_admits_ns3s_window_and_ssthresh(name: str) -> None:
    """ns-3's cwnd and ssthresh pinned from step R on: slow start, its exit by Vegas or a loss
    event (ssthresh to max(min(ssthresh, cwnd - MSS), 2 MSS), cwnd held there in recovery) and
    the once-per-round steps of one MSS."""
    run = recorded(name)
    answer = admission(run, FILE, pin_cwnd=True, curves=MODEL_CURVES, state=LOSS_BASED)
    assert answer.admitted is True, f"{run.describe()}: {answer.culprits[:6]}"


@pytest.mark.slow
@needs_ns3
def test_the_encoding_admits_ns3s_runs_on_ten_paths(ns3: Any) -> None:  # noqa: F811
    counts = measure(FILE, STACKS["vegas"], 10, 0, readings=("cca", "cca+Ld", "cca+state"))
    assert counts == {"cca": 10, "cca+Ld": 10, "cca+state": 10}, counts
