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
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccac.testbed import ns3_conformance
from ccac.testbed.ns3_conformance import DETECTED, TcpRun, admission

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
