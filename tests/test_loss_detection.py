"""The model's loss detection admits a real TCP's (``PathServer.loss_detection``): a recorded
ns-3 NewReno run, its detected losses read from the sender's scoreboard, is a run of the model
with any sender. No ns-3 needed: the run's sampled curves are data
(``tests/data/ns3_newreno_relost.json``, recorded by :mod:`ccac.testbed.ns3_conformance`).

The run needs both of the rule's allowances (docs/replay.md, "Conformance with ns-3's TCP"):
slow start overshoots the queue at steps 4-6 and the ACK clock spreads each step's packets, so
the scoreboard marks drops that are not the tail of their step's arrivals (whole packets are
bounded by a step's own losses L[s], not by the losses before it); and one retransmission is
lost at step 7, which no duplicate ACK reveals (Ld stays at 15 of 16 lost packets from step 10
to step 12, while step 8 is detectable from step 12 on).

A recorded TcpCubic run (``tests/data/ns3_cubic_held.json``) needs the sender's allowance for
retransmissions held in flight (``PathServer.sender``): its pipe counts SACKed retransmissions
until the cumulative ACK passes them, so it sends less than its window beyond what is ACKed and
detected lost.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccac.testbed import ns3_conformance
from ccac.solving.validate import check_sender
from ccac.testbed.ns3_conformance import DETECTED, DUPACKS, TcpRun, admission, reading
from ccac.testbed.ns3_stacks import STACKS

RECORDED = Path(__file__).parent / "data" / "ns3_newreno_relost.json"


def recorded_run() -> TcpRun:
    """The recorded run, its values exact fractions of a byte as the harness read them."""
    return TcpRun.from_record(json.loads(RECORDED.read_text(encoding="utf-8")))


def test_the_model_admits_ns3_newrenos_detected_losses() -> None:
    """The run's A, S, L, W, timeouts and Ld pinned, any sender: admitted."""
    run = recorded_run()
    assert admission(run, "any", curves=DETECTED).admitted is True, run.describe()


def test_a_sender_that_never_retransmits_would_have_detected_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``retransmissions = false`` (every loss revealed by duplicate ACKs) the same run is
    rejected, and the unsat core names a detected-loss value: the lost retransmission's."""
    run = recorded_run()
    strict = ns3_conformance.network
    monkeypatch.setattr(ns3_conformance, "network", lambda path: {**strict(path), "retransmissions": False})
    answer = admission(run, "any", curves=DETECTED)
    assert answer.admitted is False and any(c.startswith("Ld[") for c in answer.culprits), answer.culprits


HELD = Path(__file__).parent / "data" / "ns3_cubic_held.json"
CUBIC = Path(__file__).resolve().parent.parent / "ccas" / "rules" / "cubic.toml"


def test_the_model_admits_retransmissions_held_in_flight() -> None:
    """ns-3's TcpCubic (seed 0's path 11 of the harness: 2 packets per step, R = 1, a queue of 4)
    loses 2 packets at step 5 and from step 8 on sends 2 packets less than its window of 6
    allows beyond what is ACKed and detected lost: its pipe counts the two SACKed
    retransmissions until the cumulative ACK passes them. With ``retransmissions = true`` the
    CUBIC file's encoding admits it with its window and ssthresh pinned (``cca+state``), and
    the exact check of a trace's sender (:func:`ccac.solving.validate.check_sender`) accepts
    its sends with its window."""
    run = TcpRun.from_record(json.loads(HELD.read_text(encoding="utf-8")))
    assert reading(run, "cca+state", CUBIC, STACKS["cubic"]).admitted is True, run.describe()
    assert exact_sender_check(run, retransmissions=True) == []


def exact_sender_check(run: TcpRun, retransmissions: bool) -> list[str]:
    """The exact check of the run's sender (its ACKs as the bottleneck served them), its unread
    history detections at their first read."""
    R = run.path.R
    Ld = [run.Ld[R] if x is None else x for x in run.Ld]
    return check_sender(run.A, run.S, run.L, Ld, run.cwnd, None, run.timeout, DUPACKS * run.path.alpha, R,
                        run.path.T, run.path.alpha, retransmissions=retransmissions)


def test_a_sender_without_held_retransmissions_fills_its_window() -> None:
    """Without the allowance the sender must fill its window: the exact check rejects the run's
    sends."""
    run = TcpRun.from_record(json.loads(HELD.read_text(encoding="utf-8")))
    assert any("cwnd/pacing allow exactly" in p for p in exact_sender_check(run, retransmissions=False))
