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
from ccac.encode.rules import finite_values
from ccac.testbed.ns3_conformance import DETECTED, MODEL_CURVES, TcpRun, admission, measure
from ccac.testbed.ns3_stacks import LOSS_BASED, STACKS

FILE = Path(__file__).resolve().parent.parent / "ccas" / "rules" / "cubic.toml"
DATA = Path(__file__).parent / "data"
#: path 5: congestion avoidance from the start, a loss event at step 4 (ssthresh 6 -> 4 packets),
#: recovery held at 4, then growth to 7; path 0: slow start from 5 to 27 packets with 14 drops,
#: none detected yet, its last step's ACKs partly duplicates (SACKs above a hole: no growth);
#: clamp: 25 ACKs a step in congestion avoidance before any loss, growth one or two MSS a step;
#: slow_start: no loss (a queue of 60 packets), slow start from 2 packets, up to 10 ACKs a step
RECORDED = {"path5": DATA / "ns3_cubic_path5.json", "path0": DATA / "ns3_cubic_path0.json",
            "clamp": DATA / "ns3_cubic_clamp.json", "slow_start": DATA / "ns3_cubic_slow_start.json"}
SEEDS = 16


def cubic() -> LanguageCCA:
    """The bundled file, as `ccac list` and queries name it."""
    cca = CCAS["cubic"]
    assert isinstance(cca, LanguageCCA)
    return cca


def run_on_random_path(cca: LanguageCCA, seed: int) -> tuple[Run, dict[str, Any]]:
    """The derived sender on one random fluid path (some in slow start, some in congestion
    avoidance, some in a cubic epoch below w_max on a path of one-second RTT, where the target
    forces growth), the loss event and the open choices at random places; with its parameters."""
    rng = random.Random(seed)
    cfg = PathConfig(T=9, R=rng.choice([1, 2]), D=rng.choice([0, 1]), buffer=rng.choice([None, F(1, 2), F(1)]),
                     dupacks=rng.choice([F(0), F(1)]), eta=rng.choice([F(0), F(1, 10)]))
    start = lambda s: cca.concrete(s, lambda what, n: rng.randrange(n))  # noqa: E731
    cwnd = cfg.alpha * rng.randint(1, 20)
    values = {"cwnd": cwnd, "ssthresh": cfg.alpha * rng.choice([2, 5, 10, 10000]),
              "trunc": cfg.alpha * F(rng.randint(0, 17), 10)}
    params = cca_params(cca)
    if seed % 2:
        w_max = cwnd + cfg.alpha * rng.randint(5, 30)
        values |= {"ssthresh": cwnd, "w_max": w_max, "origin": w_max, "epoch": F(rng.randint(0, 3)),
                   "k_s": F(rng.randint(0, 2)), "steady": F(1)}
        params = cca_params(cca, rtt=1)
    return simulate(cfg, start, params, rng, values), params


def test_the_encoding_admits_every_run_of_the_derived_sender() -> None:
    cca = cubic()
    runs = [run_on_random_path(cca, seed) for seed in range(SEEDS)]
    events = sum(1 for r, _ in runs for t, s in enumerate(r.state) if s and t > r.cfg.R
                 and s["loss_acked"] is not None and r.Ld[t] > r.Ld[t - 1])
    assert events >= 3, "too few steps with detections: the test tests little"
    climbs = sum(1 for r, _ in runs for t, s in enumerate(r.state) if s and t > r.cfg.R
                 and s["epoch"] >= 1 and r.cwnd[t] >= r.cwnd[t - 1] + 2 * r.cfg.alpha)
    assert climbs >= 3, "too few steps where the cubic epoch grew the window: the test tests little"
    for run, params in runs:
        admits({"name": "cubic", "rtt": params["rtt"]}, run, fix_state=tuple(s.name for s in cca.state))


def test_a_state_set_by_its_loss_event_is_not_split_into_its_start_value() -> None:
    """w_max has no rule (its value comes from on_loss alone) and starts at 0: it holds many
    values, so it must not be split into the one case {0}, which would forbid every loss event
    wherever w_max is used non-linearly (K's quotient); steady's rule yields only 0 and 1."""
    states = {s.name: s for s in cubic().definition.state}
    assert finite_values(states["w_max"]) is None
    assert finite_values(states["steady"]) == (0, 1)


def recorded(name: str) -> TcpRun:
    """A recorded ns-3 run, its values the exact fractions the harness read."""
    return TcpRun.from_record(json.loads(RECORDED[name].read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", ["clamp", "path0", "path5"])
def test_the_encoding_admits_ns3s_recorded_run_with_its_detected_losses(name: str) -> None:
    """Every recorded run with its loss detections pinned; slow_start, which loses nothing (so
    detects nothing), is pinned with its window and ssthresh below, which holds it tighter."""
    run = recorded(name)
    answer = admission(run, FILE, curves=DETECTED)
    assert answer.admitted is True, f"{run.describe()}: {answer.culprits[:6]}"


@pytest.mark.parametrize("name", ["path5", "path0", "slow_start"])
def test_the_encoding_admits_ns3s_window_and_ssthresh(name: str) -> None:
    """ns-3's cwnd and ssthresh pinned from step R on (the harness's cca+state). Path 5: the
    reduction to floor(0.7 * 6) = 4 packets, the window held at 4 in recovery, the growth after
    it. Path 0 and slow_start: slow start with ssthresh at 10000 packets, one MSS per ACK, so
    that congestion avoidance's freedom (up to one MSS per ACK) cannot stand in for it; on path
    0 the last step's ACKs grow the window by 1 packet of 2 (a duplicate ACK grows nothing)."""
    run = recorded(name)
    answer = admission(run, FILE, pin_cwnd=True, curves=MODEL_CURVES, state=LOSS_BASED)
    assert answer.admitted is True, f"{run.describe()}: {answer.culprits[:6]}"


@pytest.mark.parametrize("pin_state", [False, True])
def test_the_encoding_admits_ns3s_growth_under_the_clamp_before_the_first_loss(pin_state: bool) -> None:
    """The clamp run with w_max held at 0 (ns-3's lastMaxCwnd before a connection's first loss),
    so that the file's forced growth (at least floor(k / 20) MSS for k ACKs) applies; with
    pin_state, ns-3's window and ssthresh too."""
    run = recorded("clamp")
    answer = admission(run, FILE, pin_cwnd=pin_state, curves=DETECTED, state=LOSS_BASED if pin_state else (),
                       constant={"w_max": F(0)})
    assert answer.admitted is True, f"{run.describe()}: {answer.culprits[:6]}"


@pytest.mark.slow
@needs_ns3
@pytest.mark.xfail(strict=True, reason="model gaps, not the file's: on seed 0's paths 3 and 4 ns-3's pipe keeps SACKed "
                   "retransmissions in flight and sends less than the model's sender rule demands (cca); path 1's "
                   "detections (cca+Ld) are rejected by the file before this one's CUBIC too")
def test_the_encoding_admits_ns3s_runs_on_ten_paths(ns3: Any) -> None:  # noqa: F811
    counts = measure(FILE, STACKS["cubic"], 10, 0, readings=("cca", "cca+Ld"))
    assert counts == {"cca": 10, "cca+Ld": 10}, counts
