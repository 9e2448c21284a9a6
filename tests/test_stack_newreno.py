"""The ``newreno`` file (ccas/rules/newreno.toml): its encoding admits the runs of its own
derived sender on random paths of the model, and recorded runs of ns-3's TcpNewReno (the
conformance harness's samples, tests/data/ns3_newreno_runs.json) pinned into it; (slow, needs
ns-3) the harness's readings ``cca`` and ``cca+Ld`` admit every run on 10 random paths.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction as F
from pathlib import Path

import pytest

from conftest import cca_params
from fluid_path import PathConfig, Run, admits, simulate

from ccac.ccas.language import load_file
from ccac.testbed.ns3_conformance import TcpRun, measure, reading
from ccac.testbed.ns3_stacks import STACKS

from test_ns3 import needs_ns3, ns3  # noqa: F401  (ns3: the fixture that imports ns-3 once)

FILE = Path(__file__).resolve().parent.parent / "ccas" / "rules" / "newreno.toml"
DATA = Path(__file__).parent / "data" / "ns3_newreno_runs.json"


SEEDS = 10


def derived_run(seed: int) -> Run:
    """The derived sender on a random fluid path with small buffers and some non-congestive loss
    (loss events at random places among a step's ACKs, random answers to the open choices)."""
    cca = load_file(FILE)
    rng = random.Random(seed)
    cfg = PathConfig(T=10, R=rng.choice([1, 2]), D=rng.choice([0, 1]), buffer=rng.choice([F(1, 4), F(1, 2)]),
                     dupacks=rng.choice([F(1, 2), F(1)]), eta=rng.choice([F(0), F(1, 10)]), alpha=F(1, 4))
    start = lambda s: cca.concrete(s, lambda what, n: rng.randrange(n))  # noqa: E731
    values = {"cwnd": cfg.alpha * rng.randint(2, 6), "ssthresh": cfg.alpha * rng.randint(2, 6)}
    return simulate(cfg, start, cca_params(cca), rng, values)


def growing_above_ssthresh(run: Run) -> int:
    """Steps whose window grew from at or above ssthresh (congestion avoidance's whole-byte increase)."""
    return sum(1 for t, s in enumerate(run.state) if s and t > run.cfg.R
               and run.cwnd[t - 1] >= s["ssthresh"] and run.cwnd[t] > run.cwnd[t - 1])


def loss_events(run: Run) -> int:
    """Steps with a loss event (the recovery point moved)."""
    return sum(1 for a, b in zip(run.state, run.state[1:]) if a and b and b["recover_sent"] != a["recover_sent"])


def test_the_encoding_admits_its_derived_senders_runs() -> None:
    """The derived sender's runs, every model variable, cwnd and the file's other states pinned:
    the encoding must admit each (and the runs must reach congestion avoidance and loss events)."""
    runs = [derived_run(seed) for seed in range(SEEDS)]
    assert sum(map(growing_above_ssthresh, runs)) >= 3, "too few congestion-avoidance steps: the test tests little"
    assert sum(map(loss_events, runs)) >= 5, "too few loss events: the test tests little"
    for run in runs:
        admits({"file": str(FILE)}, run, fix_state=("ssthresh", "pipe_cap", "loss_now"))


def recorded() -> list[TcpRun]:
    """The recorded ns-3 runs, as the harness read them."""
    return [TcpRun.from_record(r) for r in json.loads(DATA.read_text(encoding="utf-8"))["runs"]]


#: (recorded run, reading): seed 0 path 0 (slow start into drops, none detected yet) with its
#: window and ssthresh pinned too; seed 0 path 5 (a loss event at step 4, recovery, its end and
#: congestion avoidance) with its detected losses, not its window: ns-3 sends part of step 4
#: under the old window before the entering ACK cuts it, which a step's one window cannot say;
#: congestion avoidance at 30 packets, 10 ACKs a step at ssthresh 10, window and ssthresh pinned:
#: each step grows by ten of ns-3's whole-byte increases, more than the dupthresh - 1 ACKs the
#: file lets go ungrown can take off a doubled increase; slow start into five drops whose loss
#: event cuts cwnd to half the pipe (4.5 packets), below half the window (11), with its window
#: and ssthresh pinned (the loss step's sends alone do not show the cut: ns-3's pipe may hold
#: retransmissions)
RECORDED_READINGS = ((0, "cca+state"), (0, "cca+Ld"), (1, "cca+Ld"), (2, "cca+state"), (3, "cca+state"))


@pytest.mark.parametrize(("index", "name"), RECORDED_READINGS)
def test_the_encoding_admits_recorded_ns3_runs(index: int, name: str) -> None:
    """ns-3's TcpNewReno on a recorded path, pinned as the harness's reading ``name``."""
    run = recorded()[index]
    answer = reading(run, name, FILE, STACKS["newreno"])
    assert answer.admitted is True, (answer.culprits, run.describe())


@pytest.mark.slow
@needs_ns3
def test_the_harness_admits_ns3_runs_on_ten_paths(ns3: object) -> None:  # noqa: F811
    """The conformance harness on 10 random paths (seed 0): every run admitted in cca and cca+Ld."""
    counts = measure(FILE, STACKS["newreno"], 10, 0, readings=("cca", "cca+Ld"))
    assert counts == {"cca": 10, "cca+Ld": 10}, counts
