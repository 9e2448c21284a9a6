"""The paper-faithful Copa sender (senders/copa_paper.py) on paths of the fluid harness: runs
well-formed on random paths with every reading drawn (windows positive, sends as the model's
sender rule makes them, the per-ACK rules R1-R9 restated over the sender's ACK log), the
standing queue settling near 1/delta packets on a constant-rate path, and the velocity
doubling after three same-direction windows and resetting on a change.

For pinning a run into an encoding, :func:`run_one` returns the run (every model curve, cwnd
and rate per step: ``fluid_path.admits`` pins them), the sender (its ``acks``: every ACK acted on
with its RTT sample and the ``ack_rtt`` alternative that gave it, and ``windows``) and its
``picks``: every choice drawn, as (name, step, alternative), per-flow readings at step -1."""

from __future__ import annotations

import random
from fractions import Fraction as F
from typing import Any

from fluid_path import PathConfig, Run, simulate

from ccac.encode.trace import delay_range
from ccac.senders.copa_paper import CHOICES, GRAIN, CopaPaperSender, grain_floor

PICKS = list[tuple[str, int, int]]


def run_one(seed: int, fixed: dict[str, int] | None = None, cfg: PathConfig | None = None,
            params: dict[str, Any] | None = None, slow_start: bool | None = None) -> tuple[Run, CopaPaperSender, PICKS]:
    """One run on a random path of the model (or ``cfg``), readings drawn (or ``fixed``)."""
    rng = random.Random(seed)

    def choose(what: str, n: int) -> int:
        assert CHOICES[what] == n
        return fixed[what] if fixed and what in fixed else rng.randrange(n)

    if cfg is None:
        cfg = PathConfig(T=rng.choice([24, 32]), R=rng.choice([1, 2, 3]), D=rng.choice([0, 1, 2]),
                         buffer=rng.choice([None, F(1), F(2), F(4)]), eta=rng.choice([F(0), F(0), F(1, 20)]),
                         alpha=rng.choice([F(1, 10), F(1, 4), F(1, 2)]))
    slow = rng.random() < 0.7 if slow_start is None else slow_start
    made: list[CopaPaperSender] = []

    def start(s: Any) -> CopaPaperSender:
        made.append(CopaPaperSender(s, slow_start=slow, choose=choose))
        return made[0]

    given = {"competitive": rng.random() < 0.7, "init_cwnd": rng.choice([2, 4, 10]), **(params or {})}
    run = simulate(cfg, start, given, rng, paced=True)
    return run, made[0], made[0].picks


def check_run(run: Run, s: CopaPaperSender) -> None:
    """The run is well-formed and every ACK and window of the sender's logs follows R1-R9."""
    cfg = run.cfg
    R, T, a = cfg.R, cfg.T, cfg.alpha
    for t in range(R, T):
        assert run.A[t] >= run.A[t - 1]                                            # sends never negative
        assert run.cwnd[t] >= s.min_cwnd * a > 0                                   # window positive
        window = max(run.S[t - R] + run.Ld[t] + run.cwnd[t], run.A[t - 1])         # the model's sender rule
        assert run.A[t] == min(window, run.A[t - 1] + run.rate[t])
        st = run.state[t]
        assert st["cwnd"] == run.cwnd[t]
        pacing = st["standing"] if st["standing"] is not None else F(R)
        assert run.rate[t] == 2 * run.cwnd[t] / pacing                             # R9
    admitted = [x - y for x, y in zip(run.A, run.L)]
    seen: list[tuple[F, F]] = []
    for ack in s.acks:
        low, high = delay_range(run.S, admitted, ack.t - R)                        # the model's reading
        top = high if high is not None else low + R
        assert ack.rtt == R + low + (top - low) * F(ack.pick, 4)
        assert ack.t - 1 < ack.time <= ack.t
        seen.append((ack.time, ack.rtt))
        assert ack.standing == min(r for at, r in seen if at >= ack.time - ack.srtt / 2)   # R3
        assert ack.rtt_min == min(r for _, r in seen)                                    # R5 (whole run)
        assert ack.increase == (ack.cwnd_before * (ack.standing - ack.rtt_min) <= ack.inv_delta * ack.standing)
        if ack.slow_start:                                                               # R8
            grow = 1 if ack.increase and s.r_ss == 0 else 0
            assert ack.cwnd == ack.cwnd_before + grow
        elif ack.cwnd_before >= s.min_cwnd:                                              # R6
            change = grain_floor(ack.v * ack.inv_delta / ack.cwnd_before)
            want = ack.cwnd_before + change if ack.increase else max(ack.cwnd_before - change, s.min_cwnd)
            assert ack.cwnd == want
        assert ack.inv_delta >= 1 / s.delta0 and (ack.competitive or ack.inv_delta == 1 / s.delta0)   # R10, R12
    for p, ack in zip(s.acks, s.acks[1:]):                                             # R12 under ``ai`` 0
        if s.r_ai == 0 and ack.competitive:
            halved = ack.t != p.t and run.Ld[ack.t] > run.Ld[ack.t - 1]
            assert ack.inv_delta - grain_floor(1 / ack.cwnd_before) in (
                [p.inv_delta, max(p.inv_delta / 2, 1 / s.delta0)] if halved and p.competitive
                else [p.inv_delta if p.competitive else 1 / s.delta0])
    for prev, w in zip(s.windows, s.windows[1:]):                                        # R7
        assert w.cwnd_start == prev.cwnd_end
        if w.slow_start or prev.slow_start or w.direction is None:
            continue
        if w.direction != 0 and w.direction == prev.direction and prev.direction is not None:
            assert w.same == prev.same + 1
            assert w.v == (2 * prev.v if w.same >= 3 + s.r_doubling else prev.v)
        elif w.direction != prev.direction or w.direction == 0:
            assert (w.same, w.v) == (1, 1)


def test_random_paths_and_readings() -> None:
    seen: dict[str, set[int]] = {k: set() for k in CHOICES}
    acks = windows = competitive = halvings = 0
    for seed in range(30):
        run, s, picks = run_one(seed)
        check_run(run, s)
        for what, _, k in picks:
            seen[what].add(k)
        acks += len(s.acks)
        windows += len(s.windows)
        competitive += any(a.competitive for a in s.acks)
        halvings += sum(p.competitive and a.inv_delta < p.inv_delta for p, a in zip(s.acks, s.acks[1:]))
    assert seen == {k: set(range(n)) for k, n in CHOICES.items()}
    assert acks > 1000 and windows > 100 and competitive > 0 and halvings > 0


def equilibrium_run(inv_delta: int, R: int) -> tuple[Run, CopaPaperSender]:
    """One packet per step (alpha = C = 1, so the model's whole-step delay reading counts
    packets of queue), no jitter, no competing traffic, an unlimited buffer; default mode."""
    cfg = PathConfig(T=100, R=R, D=0, C=F(1), alpha=F(1))
    run, s, _ = run_one(1, fixed={k: 0 for k in CHOICES}, cfg=cfg, slow_start=True,
                        params={"competitive": False, "init_cwnd": 2, "delta": F(1, inv_delta)})
    return run, s


def test_standing_queue_settles_near_inverse_delta() -> None:
    """s2.2's equilibrium: a lone flow holds about 1/delta packets in the queue. From step 40 on
    (after slow start and its drain) the standing queue (the smallest queue over the last R/2
    steps, R/2 being about srtt/2 on an empty path) averages within one packet of 1/delta
    (measured: 2.42, 2.43 for 1/delta = 2; 4.10, 4.68 for 1/delta = 4), the queue never empties
    for long and v stays 1 (s2.1: "In steady state, we want v = 1")."""
    for inv_delta in (2, 4):
        for R in (2, 4):
            run, s = equilibrium_run(inv_delta, R)
            queue = [run.A[t] - run.L[t] - run.S[t] for t in range(run.cfg.T)]
            standing = [min(queue[t - R // 2:t + 1]) for t in range(40, run.cfg.T)]
            mean = sum(standing, F(0)) / len(standing)
            assert abs(mean - inv_delta) <= 1, (inv_delta, R, float(mean))
            assert max(queue[40:]) <= 3 * inv_delta
            assert all(st["v"] == 1 and not st["slow_start"] for st in run.state[40:])


def test_velocity_doubles_after_three_windows_and_resets() -> None:
    """A flow far below a large BDP (16 packets) without slow start: every window moves cwnd up,
    so v stays 1 for two windows and doubles from the end of the third (reading 0; the fourth
    under reading 1), every window after it, until the queue it builds turns cwnd down: v = 1."""
    for later in (0, 1):
        cfg = PathConfig(T=60, R=4, D=0, C=F(1), alpha=F(1, 4))
        run, s, _ = run_one(2, fixed={**{k: 0 for k in CHOICES}, "doubling_start": later}, cfg=cfg,
                            slow_start=False, params={"competitive": False, "init_cwnd": 2})
        check_run(run, s)
        ups = []
        for w in s.windows:
            if w.direction != 1:
                break
            ups.append(w.v)
        assert len(ups) >= 5
        assert ups == [1] * (2 + later) + [2 ** k for k in range(1, len(ups) - 1 - later)]
        turn = s.windows[len(ups)]
        assert turn.direction == -1 and turn.v == 1 and turn.same == 1


def test_window_change_is_v_over_delta_cwnd() -> None:
    """R6 on the first ACK with exact numbers: cwnd 10 packets, v 1, delta 1/2 move cwnd by
    v / (delta cwnd) = 1/5 packet, rounded toward zero to the grain (less than 2^-32 off)."""
    cfg = PathConfig(T=12, R=2, D=0, C=F(1), alpha=F(1, 10))
    run, s, _ = run_one(3, fixed={k: 0 for k in CHOICES}, cfg=cfg, slow_start=False,
                        params={"competitive": False, "init_cwnd": 10})
    first = s.acks[0]
    assert first.cwnd_before == 10 and first.v == 1 and first.inv_delta == 2
    moved = abs(first.cwnd - first.cwnd_before)
    assert F(1, 5) - GRAIN < moved <= F(1, 5)
    assert (first.cwnd > 10) == first.increase


def test_lone_flow_turns_competitive_and_halves_inverse_delta_on_loss() -> None:
    """One packet per step, R = 2, a buffer of 6 packets, the mode switch on: the lone flow's
    queue does not come near empty (the model's whole-step delay reading never reads under a
    tenth of the delay swing), so R11 turns it competitive (measured: by step 28); 1/delta
    then grows by about one per RTT (measured: above 5) and a step detecting buffer losses
    halves it (R12), here from above 4."""
    cfg = PathConfig(T=100, R=2, D=0, C=F(1), alpha=F(1), buffer=F(6))
    run, s, _ = run_one(1, fixed={k: 0 for k in CHOICES}, cfg=cfg, slow_start=True,
                        params={"competitive": True, "init_cwnd": 2})
    check_run(run, s)
    assert next(a.t for a in s.acks if a.competitive) <= 30
    halved = [(p, a) for p, a in zip(s.acks, s.acks[1:]) if p.competitive and a.inv_delta < p.inv_delta]
    assert halved and all(run.Ld[a.t] > run.Ld[a.t - 1] for _, a in halved)
    assert any(p.inv_delta > 4 and a.inv_delta == p.inv_delta / 2 + grain_floor(1 / a.cwnd_before) for p, a in halved)
