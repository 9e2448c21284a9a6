"""The conformance harness against ns-3's TCP (ccac.testbed.ns3_conformance): its random paths
are paths of the model, a run pinned off by one packet is rejected with the culprit named, and
(slow) the measurement of the bundled readings.

The tests that run ns-3 are marked ``ns3`` and skipped without its Python bindings.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from ccac.core.errors import CcacError
from ccac.testbed.ns3_conformance import (MODEL_CURVES, NO_SSTHRESH, READINGS, ModelPath, TcpRun, admission,
                                          default_readings, measure, network, path_admitted, random_path, run_tcp)
from ccac.testbed.ns3_stacks import STACKS, stack

from test_ns3 import needs_ns3, ns3  # noqa: F401  (ns3: the fixture that imports ns-3 once)


@pytest.fixture(scope="module")
def runs(ns3: Any) -> list[TcpRun]:
    """TcpNewReno on three random paths of 12 steps, and TcpBbr on one."""
    rng = random.Random(7)
    paths = [random_path(rng, T=12) for _ in range(4)]
    return [run_tcp(p, "ns3::TcpNewReno") for p in paths[:3]] + [run_tcp(paths[3], "ns3::TcpBbr")]


@needs_ns3
def test_random_paths_are_paths_of_the_model(runs: list[TcpRun]) -> None:
    """The harness is right before it judges anything: every run's path curves (A, S, L, W),
    pinned with any sender, are a run of the model; and the sender's curves with its timeouts
    too (the model's ACK clock admits some window at every step)."""
    for run in runs:
        assert path_admitted(run).admitted is True, run.describe()
        assert admission(run, "any", curves=MODEL_CURVES).admitted is True, run.describe()
        assert run.S[0] == run.L[0] == 0 and all(x % run.path.alpha == 0 for x in run.A + run.S + run.L)


def test_the_query_states_the_paths_network() -> None:
    path = random_path(random.Random(1), T=10)
    net = network(path)
    bdp = path.per_step * path.R
    assert net["packets"] is True and net["bdp_packets"] == bdp and net["T"] == 10 and net["rto"] == 10
    assert net["buffer"] == Fraction(path.queue, bdp) and net["buffer_min"] <= net["buffer"]
    assert all(0 <= lag <= path.D for lag in path.lag) and 0 <= path.tokens <= path.per_step * path.D


def test_each_stack_states_its_configuration() -> None:
    """The four stacks run as STACKS says: classic recovery for the window-based ones, CUBIC
    without HyStart, BBR's ProbeBW phase from the path's stream; a TypeId runs ns-3's defaults;
    anything else is refused, naming the argument."""
    path = replace(random_path(random.Random(3), T=10), stream=17)
    assert set(STACKS) == {"newreno", "cubic", "vegas", "bbr1"}
    for name in ("newreno", "cubic", "vegas"):
        assert stack(name).flow(path.stream)["recovery"] == "ns3::TcpClassicRecovery"
        assert stack(name).state == ("cwnd", "ssthresh")
    assert stack("cubic").flow(path.stream)["attributes"]["HyStart"] == "false"
    assert stack("bbr1").flow(path.stream)["attributes"]["Stream"] == "17" and stack("bbr1").state == ("cwnd", "rate")
    assert stack("ns3::TcpNewReno").flow(path.stream) == {"tcp": "ns3::TcpNewReno", "recovery": "ns3::TcpPrrRecovery",
                                                    "attributes": {}}
    assert "HyStart = false" in stack("cubic").describe()
    with pytest.raises(CcacError, match="unknown TCP stack 'reno'"):
        stack("reno")
    assert "cca+state" in default_readings(Path("x.toml")) and "cca+state" not in default_readings("aimd")
    assert set(default_readings("aimd")) == set(READINGS) - {"cca+state"}


@needs_ns3
def test_a_state_the_cca_lacks_is_refused(runs: list[TcpRun]) -> None:
    """Pinning the TCP's ssthresh into a CCA without an ssthresh state is bad input, named."""
    with pytest.raises(CcacError, match="no state 'ssthresh'"):
        admission(runs[0], "aimd", state=("cwnd", "ssthresh"))


@needs_ns3
def test_a_run_off_by_one_packet_is_rejected_and_named(runs: list[TcpRun]) -> None:
    """A deliberately wrong reading: from one step on, one packet more served than the link's
    tokens allow (the service past the token line) is rejected, and the unsat core names a
    wrong service value."""
    run = runs[0]
    t = run.path.T // 2
    line = t - run.W[t]  # the token line C*t - W[t] (C = 1 byte per step)
    wrong = replace(run, S=run.S[:t] + [line + run.path.alpha] * (run.path.T - t))
    answer = path_admitted(wrong)
    assert answer.admitted is False
    assert any(c.startswith(f"S[{s}] = ") for s in range(t, run.path.T) for c in answer.culprits), answer.culprits


@needs_ns3
def test_an_encoding_that_rejects_names_the_pinned_values(runs: list[TcpRun]) -> None:
    """The AIMD core against NewReno with its window pinned: ns-3's window grows by a fraction
    of a segment per ACK, the thesis' AIMD by a whole packet per window of ACKs, so it rejects,
    and the culprits include a pinned window."""
    answer = admission(runs[0], "aimd", pin_cwnd=True)
    assert answer.admitted is False and any(c.startswith("cwnd[") for c in answer.culprits), answer.culprits


#: seed 0's fifth random path (C = 5 packets per step, R = 1): NewReno loses 17 packets, SACKs
#: retransmissions and loses five retransmissions (docs/replay.md)
SACKED_RETRANSMISSIONS = ModelPath(
    T=15, R=1, D=2, per_step=5, queue=11, tokens=3, initial_cwnd=9, initial_ssthresh=10_000,
    lag=tuple(Fraction(q, 4) for q in (3, 6, 4, 7, 7, 5, 1, 5, 1, 7, 5, 3, 3, 0, 4)))


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_detected_losses_are_the_scoreboards_marks() -> None:
    """Ld is what the sender's scoreboard has ever marked lost: it never falls back (sent less
    ACKed less ns-3's pipe did, from 11 to 9 to 7 packets, while SACKed retransmissions stayed in
    the pipe), stays within the losses, and misses the lost retransmissions, which no duplicate
    ACK reveals: 12 of the 17 lost packets are detected."""
    run = run_tcp(SACKED_RETRANSMISSIONS, "ns3::TcpNewReno")
    detected = [x for x in run.Ld if x is not None]
    assert all(a <= b for a, b in zip(detected, detected[1:])), run.describe()
    assert all(x <= lost for x, lost in zip(run.Ld, run.L) if x is not None)
    alpha = run.path.alpha
    assert (run.L[-1] / alpha, detected[-1] / alpha) == (17, 12), run.describe()


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_classic_recovery_holds_the_window_at_ssthresh() -> None:
    """The newreno stack (classic recovery) holds cwnd at the new ssthresh from the ACK that
    enters recovery on (recovery lasts to the run's end on this path); ns-3's default (PRR)
    moves cwnd with the pipe instead. ssthresh is sampled, from the initial threshold on."""
    alpha = SACKED_RETRANSMISSIONS.alpha
    for name, classic in (("newreno", True), ("ns3::TcpNewReno", False)):
        run = run_tcp(SACKED_RETRANSMISSIONS, name)
        assert run.ssthresh[0] == NO_SSTHRESH * alpha
        recovery = [t for t, x in enumerate(run.ssthresh) if x < NO_SSTHRESH * alpha]
        assert recovery, run.describe()
        held = all(run.cwnd[t] == run.ssthresh[t] for t in recovery)
        assert held == classic, run.describe()


@needs_ns3
@pytest.mark.slow
@pytest.mark.usefixtures("ns3")
def test_every_stacks_runs_are_runs_of_the_model() -> None:
    """docs/real-stacks.md's check, smaller: each configured stack's path curves, and its
    sender with any window, are admitted on every path."""
    for name in STACKS:
        counts = measure("any", name, 5, seed=0, readings=("path", "sender"))
        assert counts == {"path": 5, "sender": 5}, name


@needs_ns3
@pytest.mark.slow
@pytest.mark.usefixtures("ns3")
def test_measure_the_bundled_readings() -> None:
    """docs/replay.md's measurement, smaller: every path's curves are admitted, and the counts
    are counts."""
    for cca, tcp in (("aimd", "ns3::TcpNewReno"), ("bbr", "ns3::TcpBbr")):
        counts = measure(cca, tcp, 10, seed=0)
        assert counts["path"] == counts["sender"] == 10
        assert 0 <= counts["cca+cwnd"] <= counts["cca"] <= 10


def test_a_recorded_run_reads_back_exactly() -> None:
    """A run kept as JSON (:meth:`TcpRun.to_record`) reads back as the same run, exact fractions,
    unread steps and a TCP without pacing included."""
    data = Path(__file__).parent / "data" / "ns3_newreno_runs.json"
    for record in json.loads(data.read_text(encoding="utf-8"))["runs"]:
        run = TcpRun.from_record(record)
        again = TcpRun.from_record(json.loads(json.dumps(run.to_record())))
        assert again == run and again.rate is None and again.Ld[0] is None
