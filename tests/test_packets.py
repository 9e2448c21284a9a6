"""Whole-packet mode (``[network] packets = true``): the packet size, the encoding against an
independent drop-tail packet simulation, and the validator's packet rules.

The simulation below is written from how a drop-tail bottleneck handles whole packets (a
burst of packets per step, dropped from its tail when the buffer cannot hold them; a link that
transmits packet after packet, C bytes of time per step; duplicate-ACK loss detection), not
from the encoding's formulas: every run it produces must be a trace of the packet mode's
encoding (its superset property on packet runs), and every trace the solver returns must obey
the packet rules the validator restates.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from ccac import load_query, parse_query, solve
from ccac.core.errors import CcacError
from ccac.solving.validate import check_sender, validate

from conftest import run_cli
from fluid_path import PathConfig, Run, admits


# ------------------------------------------------------------------ the packet size
def test_the_packet_size_is_the_bdp_over_bdp_packets() -> None:
    q = load_query("aimd_premature_loss", ["network.packets=true", "network.bdp_packets=8"])
    assert q.network.alpha == q.network.C * q.network.R / 8
    given = load_query("aimd_premature_loss", ["network.packets=true", "network.alpha=0.25"])
    assert given.network.alpha == Fraction(1, 4)
    assert load_query("aimd_premature_loss", ["network.packets=true"]).network.alpha == Fraction(1, 10)


def test_the_packet_size_given_twice_is_bad_input() -> None:
    with pytest.raises(CcacError, match="disagree: give the packet size once"):
        load_query("aimd_premature_loss", ["network.packets=true", "network.alpha=0.25", "network.bdp_packets=5"])
    code, _, err = run_cli("query", "aimd_premature_loss", "--set", "network.packets=true",
                           "--set", "network.bdp_packets=0")
    assert code == 2 and "bdp_packets" in err and "Traceback" not in err


# ------------------------------------------------------------------ a drop-tail packet path
NO_PACING = Fraction(1000)  # the ``any`` sender's rate: far above anything its window lets it send


def drop_tail_run(cfg: PathConfig, cwnd: list[Fraction], first_burst: int) -> Run:
    """A sender with the given windows on a link of C bytes per step behind a drop-tail queue
    of ``cfg.buffer`` bytes, packets of ``cfg.alpha``. Step t: the sender learns the ACKs of
    packets delivered by t - R, detects losses (``dupacks`` packets sent after a lost one
    acknowledged, or a timeout once everything it sent is acknowledged or lost), and sends whole
    packets up to its window (at least one packet); its burst reaches the queue at once, and
    each packet that does not fit whole is dropped; then the link transmits for one step, a
    packet at a time, idle (wasting its time) only with nothing queued."""
    T, R, C, alpha, buffer = cfg.T, cfg.R, cfg.C, cfg.alpha, cfg.buffer
    run = Run(cfg, cwnd=list(cwnd), rate=[NO_PACING] * T)
    queue: list[Fraction] = []        # bytes left to transmit of each queued packet (head first)
    lost_at: list[tuple[Fraction, Fraction]] = []  # (admitted bytes before the loss, loss size)
    sent = admitted = served = lost = detected = wasted = Fraction(0)
    for t in range(T):
        timed_out = False
        if t >= R:
            acked = run.S[t - R]
            newly = [size for before, size in lost_at if before + cfg.dupacks * alpha <= acked]
            detected = max(detected, sum(newly, Fraction(0)))
            stalled = (run.A[t - 1] == run.A[t - R] and acked == run.A[t - R] - run.L[t - R]
                       and run.L[t - R] > run.Ld[t - 1])
            if stalled:
                timed_out, detected = True, run.L[t - R]
            window = acked + detected + max(cwnd[t], alpha)
            burst = max(0, math.floor((window - sent) / alpha))
        else:
            burst = first_burst if t == 0 else 0
        token_line_before = (C * (t - 1) - wasted) if t > 0 else Fraction(0)
        for _ in range(burst):
            sent += alpha
            if admitted - token_line_before + alpha > buffer:
                lost_at.append((admitted, alpha))
                lost += alpha
            else:
                admitted += alpha
                queue.append(alpha)
        if t > 0:
            budget = C
            while budget > 0 and queue:
                used = min(budget, queue[0])
                queue[0] -= used
                budget -= used
                if queue[0] == 0:
                    queue.pop(0)
                    served += alpha
            wasted += budget
        run.A.append(sent)
        run.S.append(served)
        run.L.append(lost)
        run.Ld.append(detected)
        run.W.append(wasted)
        run.timeout.append(timed_out)
    return run


@pytest.mark.parametrize("seed", range(12))
def test_the_encoding_admits_every_drop_tail_packet_run(seed: int) -> None:
    rng = random.Random(seed)
    T, R = 12, rng.choice([1, 2])
    bdp_packets, dupacks = rng.choice([4, 5, 10]), rng.choice([0, 1, 3])
    buffer = Fraction(rng.choice([1, 2, 3]), 2)  # BDP
    alpha = Fraction(R, bdp_packets)               # C = 1
    cfg = PathConfig(T=T, R=R, D=0, buffer=buffer * R, alpha=alpha, dupacks=Fraction(dupacks), packets=True)
    # windows from a quarter packet (which still sends one packet) to 4 BDP
    cwnd = [alpha / 4 if rng.random() < 0.3 else Fraction(rng.randint(1, 40), 10) for _ in range(T)]
    first_burst = rng.randint(1, int(buffer * R / alpha))  # the queue the trace starts with (no loss yet)
    run = drop_tail_run(cfg, cwnd, first_burst)
    assert sum(run.L) > 0 or seed % 2, "the run should exercise losses (pick another seed)"
    admits({"name": "any"}, run)


# ------------------------------------------------------------------ traces and the validator
def test_a_packet_mode_trace_moves_whole_packets_and_validates() -> None:
    result = solve(load_query("aimd_premature_loss", ["network.packets=true"]), timeout=120)
    assert result.answer == "sat" and result.validated, result.violations
    alpha = result.trace.constant("alpha")
    assert alpha == Fraction(1, 10)
    for name in ("A_f", "S_f", "L_f", "Ld_f"):
        assert all((x / alpha).denominator == 1 for x in result.trace.flow(name, 0)), name
    # The same trace with a fraction of a packet sent at one step is not a packet trace.
    broken = result.trace
    broken.symbols.series["A_f"].values[0][-1] += alpha / 2
    assert any("not a whole number of packets" in p for p in validate(result.query, broken))


def test_the_validator_floors_the_window_to_whole_packets() -> None:
    """One packet of 1/4 byte: a window that reaches 0.6 bytes beyond what was sent sends two
    packets (0.5), not 0.6; and a window below one packet still sends one."""
    alpha = Fraction(1, 4)
    A, S = [Fraction(0), Fraction(1, 2)], [Fraction(0), Fraction(0)]
    zeros, no = [Fraction(0)] * 2, [False, False]
    cwnd = [Fraction(3, 5), Fraction(3, 5)]
    assert check_sender(A, S, zeros, zeros, cwnd, None, no, Fraction(0), 1, 1, alpha) == []
    assert check_sender(A, S, zeros, zeros, cwnd, None, no, Fraction(0), 1, 1) != []  # fluid: 0.6
    tiny = [Fraction(1, 100)] * 2
    assert check_sender([Fraction(0), alpha], S, zeros, zeros, tiny, None, no, Fraction(0), 1, 1, alpha) == []


def test_the_validator_lets_a_steps_later_packets_reveal_its_drops() -> None:
    """Step 1 admits 2 bytes and loses 1; 1.5 bytes after step 1's start are acked by step 3
    (R = 1, no dupack threshold): part of step 1's loss may be detected, in whole packets as in
    the fluid model (a sender's ACK clock spreads a step's packets, so a packet admitted after
    a drop of the same step can reveal it); a loss of step 2, none of whose bytes are acked
    yet, may not."""
    alpha = Fraction(1, 2)
    A = [Fraction(1), Fraction(4), Fraction(4), Fraction(4)]
    L = [Fraction(0), Fraction(1), Fraction(1), Fraction(1)]
    S = [Fraction(0), Fraction(1), Fraction(5, 2), Fraction(5, 2)]
    Ld = [Fraction(0), Fraction(0), Fraction(0), Fraction(1, 2)]
    cwnd = [Fraction(1, 2)] * 4
    no = [False] * 4
    for packet in (None, alpha):
        problems = check_sender(A, S, L, Ld, cwnd, None, no, Fraction(0), 1, 5, packet)
        assert not any("duplicate ACKs" in p for p in problems), problems
    A_later = [Fraction(1), Fraction(4), Fraction(5), Fraction(5)]
    L_later = [Fraction(0), Fraction(0), Fraction(1), Fraction(1)]
    early = check_sender(A_later, S, L_later, Ld, cwnd, None, no, Fraction(0), 1, 5, alpha)
    assert any("step 3: detected a loss before enough duplicate ACKs arrived" in p for p in early), early


# ------------------------------------------------------------------ findings in whole packets
def test_a_finding_that_survives_whole_packets_replays_in_packets(cli, tmp_path) -> None:
    out = tmp_path / "burst.json"
    code, text, err = cli("query", "aimd_loss_burst", "--set", "network.packets=true", "--json", str(out))
    assert code == 0 and "validated: yes" in text, err
    code, text, err = cli("replay", str(out), "-q")
    assert code == 0 and "finding reproduced by the concrete senders" in text, err + text


def test_a_fluid_only_finding_is_unsat_in_whole_packets(cli) -> None:
    """BBR (2x paced) below 10% utilization in steady state: at the same MSS (alpha = 0.1) the
    fluid model has a trace that sends 0.94 of a packet every step; in whole packets there is
    none, and the premise (the same query without its find) has a trace, so the unsat is not
    vacuous."""
    code, text, err = cli("query", "bbr_2x_paced_low_utilization", "--set", "network.packets=true",
                          "--expect", "unsat")
    assert code == 0, err + text
    assert "premise: the assumptions alone admit a validated trace" in text


def test_one_flow_in_whole_packets_beside_a_fluid_one() -> None:
    """``[[flow]] packets = true`` for flow 0 alone: its curves are whole packets (of the
    network's C R / bdp_packets), flow 1's need not be, and the trace validates."""
    q = parse_query({"network": {"T": 6, "buffer": 1},
                     "flow": [{"name": "any", "packets": True}, {"name": "any"}],
                     "query": {"find": "A_f[1][T-1] - A_f[1][0] == 0.05 and A_f[0][T-1] > A_f[0][0]"}})
    assert [q.network.path(n).packets for n in range(2)] == [True, False] and q.network.alpha == Fraction(1, 10)
    result = solve(q, timeout=60)
    assert result.answer == "sat" and result.validated, result.violations
    A0, A1 = result.trace.flow("A_f", 0), result.trace.flow("A_f", 1)
    assert all((a / q.network.alpha).denominator == 1 for a in A0)
    assert A1[-1] - A1[0] == Fraction(1, 20)  # half a packet: flow 1 is fluid


def test_whole_packets_on_cbrdelay_links_too() -> None:
    """A cbrdelay link gives every flow a path of its own (its ACK box): those paths keep the
    network's whole-packet mode."""
    q = parse_query({"network": {"T": 6, "link": "cbrdelay", "packets": True}, "cca": {"name": "any"},
                     "query": {"find": "A[T-1] > A[0]"}})
    assert q.network.path(0).packets
    result = solve(q, timeout=60)
    assert result.answer == "sat" and result.validated, result.violations
    assert all((a / q.network.alpha).denominator == 1 for a in result.trace.flow("A_f", 0))
