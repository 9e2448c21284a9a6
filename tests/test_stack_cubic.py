"""The CUBIC stack file (ccas/rules/cubic.toml, ns-3's TcpCubic with classic recovery): its
derived sender's runs on random fluid paths are admitted by its encoding, and so are recorded
runs of ns-3's own TcpCubic (tests/data/ns3_cubic_path*.json, read by
ccac.testbed.ns3_conformance on seed 0's paths), so that conformance is checked without ns-3;
the slow test runs the harness itself on ten paths.
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
from ccac.testbed.ns3_conformance import (DETECTED, LOSS_BASED, MODEL_CURVES, STACKS, ModelPath, TcpRun, admission,
                                          measure)

FILE = Path(__file__).resolve().parent.parent / "ccas" / "rules" / "cubic.toml"
DATA = Path(__file__).parent / "data"
#: path 5: congestion avoidance from the start, a loss event at step 4 (ssthresh 6 -> 4 packets),
#: recovery held at 4, then growth to 7; path 0: slow start from 5 to 27 packets with 14 drops
RECORDED = {"path5": DATA / "ns3_cubic_path5.json", "path0": DATA / "ns3_cubic_path0.json"}
SEEDS = 16


def cubic() -> LanguageCCA:
    """The bundled file, as `ccac list` and queries name it."""
    cca = CCAS["cubic"]
    assert isinstance(cca, LanguageCCA)
    return cca


def run_on_random_path(cca: LanguageCCA, seed: int) -> Run:
    """The derived sender on one random fluid path (some in slow start, some in congestion
    avoidance), the loss event and the open choices at random places."""
    rng = random.Random(seed)
    cfg = PathConfig(T=9, R=rng.choice([1, 2]), D=rng.choice([0, 1]), buffer=rng.choice([None, F(1, 2), F(1)]),
                     dupacks=rng.choice([F(0), F(1)]), eta=rng.choice([F(0), F(1, 10)]))
    start = lambda s: cca.concrete(s, lambda what, n: rng.randrange(n))  # noqa: E731
    values = {"cwnd": cfg.alpha * rng.randint(1, 20), "ssthresh": cfg.alpha * rng.choice([2, 5, 10, 10000]),
              "trunc": cfg.alpha * F(rng.randint(0, 17), 10)}
    return simulate(cfg, start, cca_params(cca), rng, values)


def test_the_encoding_admits_every_run_of_the_derived_sender() -> None:
    cca = cubic()
    runs = [run_on_random_path(cca, seed) for seed in range(SEEDS)]
    events = sum(1 for r in runs for t, s in enumerate(r.state) if s and t > r.cfg.R and s["loss_acked"] is not None
                 and r.Ld[t] > r.Ld[t - 1])
    assert events >= 3, "too few steps with detections: the test tests little"
    for run in runs:
        admits({"name": "cubic"}, run, fix_state=tuple(s.name for s in cca.state))


def recorded(name: str) -> TcpRun:
    """A recorded ns-3 run, its values the exact fractions the harness read."""
    data: dict[str, Any] = json.loads(RECORDED[name].read_text(encoding="utf-8"))
    exact = lambda key: [F(x) for x in data[key]]  # noqa: E731
    path = {**data["path"], "lag": tuple(F(x) for x in data["path"]["lag"])}
    return TcpRun(path=ModelPath(**path), tcp=data["tcp"], A=exact("A"), S=exact("S"), L=exact("L"),
                  Ld=[F(x) if x is not None else None for x in data["Ld"]], W=exact("W"), timeout=data["timeout"],
                  cwnd=exact("cwnd"), rate=None, ssthresh=exact("ssthresh"))


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_encoding_admits_ns3s_recorded_run_with_its_detected_losses(name: str) -> None:
    run = recorded(name)
    answer = admission(run, FILE, curves=DETECTED)
    assert answer.admitted is True, f"{run.describe()}: {answer.culprits[:6]}"


def test_the_encoding_admits_ns3s_window_and_ssthresh_through_a_loss_event_and_recovery() -> None:
    """Path 5 with ns-3's cwnd and ssthresh pinned from step R on: the reduction to
    floor(0.7 * 6) = 4 packets, the window held at 4 in recovery, the growth after it."""
    run = recorded("path5")
    answer = admission(run, FILE, pin_cwnd=True, curves=MODEL_CURVES, state=LOSS_BASED)
    assert answer.admitted is True, f"{run.describe()}: {answer.culprits[:6]}"


@pytest.mark.slow
@needs_ns3
def test_the_encoding_admits_ns3s_runs_on_ten_paths(ns3: Any) -> None:  # noqa: F811
    counts = measure(FILE, STACKS["cubic"], 10, 0, readings=("cca", "cca+Ld"))
    assert counts == {"cca": 10, "cca+Ld": 10}, counts
