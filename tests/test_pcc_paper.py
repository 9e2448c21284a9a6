"""The paper-faithful PCC Vivace and Proteus senders (senders/pcc_paper.py): sanity on random
paths of the fluid harness, and the rules one at a time on made-up measurements."""

from __future__ import annotations

import random
from fractions import Fraction as F
from typing import Any

import pytest

from ccac.senders.interface import Feedback, FlowRecord, SenderStart
from fluid_path import PathConfig, simulate
from ccac.senders.pcc_paper import MI, Pair, ProteusPaperSender, Round, VivacePaperSender, power
from substep import Probes

PARAMS = {"link_mbps": 100, "step_seconds": 0.01}


def _start(R: int = 2, C: F = F(1), params: dict[str, Any] | None = None) -> SenderStart:
    return SenderStart(R, 1, C, F(1, 10), dict(PARAMS if params is None else params))


class Recorder:
    """Wraps a sender, recording the latest RTT sample it has seen at each decision (this step's
    ACKs included: an MI that starts at t is one RTT as known at t)."""

    def __init__(self, sender: Any) -> None:
        self.sender, self.latest, self.seen = sender, None, {}

    def decide(self, fb: Feedback) -> Any:
        for a in fb.acks:
            self.latest = a.acked_at - a.sent_at
        self.seen[fb.t] = self.latest
        return self.sender.decide(fb)

    def state(self) -> dict[str, Any]:
        return self.sender.state()


def _run(seed: int, make: Any, T: int = 50) -> tuple[PathConfig, Any, Any, Recorder]:
    rng = random.Random(seed)
    cfg = PathConfig(T=T, R=rng.randint(1, 3), D=rng.randint(0, 2),
                     buffer=None if seed % 5 == 0 else F(rng.randint(1, 8), 2), eta=F(rng.randint(0, 2), 10))
    holder: list[Recorder] = []

    def start(s: SenderStart) -> Any:
        holder.append(Recorder(make(s)))
        return holder[0]

    run = simulate(cfg, start, PARAMS, rng, paced=True, probes=Probes.random(rng))
    return cfg, run, holder[0].sender, holder[0]


MAKERS = {
    "vivace": lambda s: VivacePaperSender(s),
    "vivace-loss": lambda s: VivacePaperSender(s, mode="loss"),
    "proteus-P": lambda s: ProteusPaperSender(s, mode="P"),
    "proteus-S": lambda s: ProteusPaperSender(s, mode="S"),
    "proteus-H": lambda s: ProteusPaperSender(s, mode="H"),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_default_readings_on_random_paths(name: str) -> None:
    decisions = 0
    for seed in range(4):
        cfg, run, snd, rec = _run(seed, MAKERS[name])
        R = cfg.R
        assert all(r > 0 for r in run.rate[R:]) and all(w >= r for w, r in zip(run.cwnd[R:], run.rate[R:]))
        mis = snd.mis
        assert mis[0].start == R
        for a, b in zip(mis, mis[1:]):           # consecutive MIs tile time
            assert b.start == a.end + 1
        for mi in mis:                           # one RTT (the latest sample; R before one), whole steps
            rtt = rec.seen[mi.start] if rec.seen[mi.start] is not None else F(R)
            assert mi.rtt0 == rtt and mi.length == max(1, -(-rtt // 1))
            if mi.end is not None and not mi.cut:
                assert mi.end - mi.start + 1 == mi.length
            assert all(run.rate[t] == mi.rate for t in range(mi.start, (mi.end if mi.end is not None else cfg.T - 1) + 1))
        probes = [mi for mi in mis if mi.kind == "probe"]
        for mi in probes:                        # r(1 + eps) and r(1 - eps) around the pair's base
            assert mi.rate == mi.pair.base * (1 + mi.sign * F(5, 100))
        rounds: dict[int, list[MI]] = {}
        for mi in probes:
            rounds.setdefault(id(mi.pair.round), []).append(mi)
        for rnd in rounds.values():
            if any(m.abandoned for m in rnd) or rnd[-1].end is None:
                continue                         # cut short by an MI timeout, or still running
            if name.startswith("vivace"):        # as written: r(1 + eps) first (plus a double check's re-run)
                assert [m.sign for m in rnd[:2]] == [1, -1]
            else:                                # three pairs, each one of each
                assert len(rnd) == 6 and all({rnd[i].sign, rnd[i + 1].sign} == {1, -1} for i in (0, 2, 4))
        for mi in snd.log:                       # measured MIs have a utility and a loss rate in [0, 1]
            assert "u" in mi.metrics and 0 <= mi.metrics["L"] <= 1
        decisions += snd.decisions
        for i, (r, delta, omega, m) in enumerate(snd.steps):   # every step within omega r
            assert abs(delta) <= omega * r and m >= 1
            if i == 0:
                assert omega == F(5, 100)
    assert decisions > 0


def test_random_readings_and_slow_start() -> None:
    seen: set[str] = set()
    for seed in range(20):
        crng = random.Random(seed)

        def choose(what: str, n: int) -> int:
            seen.add(what)
            return crng.randrange(n)

        kinds = [lambda s: VivacePaperSender(s, choose=choose, slow_start=seed % 3 == 0),
                 lambda s: ProteusPaperSender(s, mode="PSH"[seed % 3], choose=choose, slow_start=seed % 4 == 0)]
        cfg, run, snd, _ = _run(seed, kinds[seed % 2], T=40)
        assert all(r > 0 for r in run.rate[cfg.R:])
        for a, b in zip(snd.mis, snd.mis[1:]):
            assert b.start == a.end + 1 and a.end >= a.start
    assert {"mi_rtt", "regression_x", "amplifier", "combine", "timeout_start", "probe_first"} <= seen


def _mi(rate: F, g: F = F(0), L: F = F(0), sigma: F = F(0), kind: str = "probe") -> MI:
    mi = MI(0, 1, rate, kind, F(2))
    mi.metrics.update(x=rate, g=g, L=L, sigma=sigma)
    return mi


def test_utilities_in_mbps_and_seconds() -> None:
    v = VivacePaperSender(_start())
    x = F(100)                                   # C = 1 byte/step = 100 Mbps
    expect = power(x, F(9, 10)) - 900 * x * F(1, 50) - F(1135, 100) * x * F(1, 10)
    assert v.utility(_mi(F(1), F(1, 50), F(1, 10))) == expect
    # Vivace does not clip a negative gradient (unless its low-pass filter zeroed it)
    assert v.utility(_mi(F(1), F(-1, 50))) > v.utility(_mi(F(1)))
    assert VivacePaperSender(_start(), mode="loss").utility(_mi(F(1), F(1, 50))) == power(x, F(9, 10))
    p = ProteusPaperSender(_start(), mode="P")
    assert p.utility(_mi(F(1), F(-1, 50))) == p.utility(_mi(F(1)))      # max{0, gradient}
    s = ProteusPaperSender(_start(), mode="S")
    # sigma 2 steps = 0.02 s: d x sigma = 1500 * 100 * 0.02
    assert p.utility(_mi(F(1), sigma=F(2))) - s.utility(_mi(F(1), sigma=F(2))) == 1500 * 100 * F(2, 100)
    h = ProteusPaperSender(_start(params=dict(PARAMS, threshold=F(1, 2))), mode="H")
    assert h.utility(_mi(F(1, 4), sigma=F(2))) == p.utility(_mi(F(1, 4), sigma=F(2)))   # below: u_P
    assert h.utility(_mi(F(3, 4), sigma=F(2))) == s.utility(_mi(F(3, 4), sigma=F(2)))   # at or above: u_S


def test_low_pass_filter_readings() -> None:
    lit = VivacePaperSender(_start())
    mag = VivacePaperSender(_start(), choose=lambda w, n: 1 if w == "lowpass" else 0)
    for snd, zeroed in ((lit, [F(1, 200), F(-1, 10)]), (mag, [F(1, 200), F(-1, 200)])):
        for g in zeroed:
            mi = _mi(F(1), g)
            mi.metrics["g"] = g
            snd._tolerate(mi)
            assert mi.metrics["g"] == 0
    mi = _mi(F(1), F(-1, 10))
    mag._tolerate(mi)
    assert mi.metrics["g"] == F(-1, 10)


def test_regression_error_tolerance() -> None:
    snd = ProteusPaperSender(_start(params=dict(PARAMS, trending="off")), mode="S")
    mi = MI(0, 1, F(1), "probe", F(4), length=4)
    sends = [F(k, 2) for k in range(8)]
    noisy = [F(3) + (F(1, 2) if k % 2 else F(0)) for k in range(8)]   # flat with jitter: within error
    mi.metrics.update(steps=4, send_times=sends, rtts=noisy, g_raw=F(1, 100))
    snd._tolerate(mi)
    assert mi.metrics["g"] == 0 and mi.metrics["sigma"] == 0 and mi.metrics["sigma_raw"] > 0
    steep = [F(3) + F(k, 2) for k in range(8)]                        # a clean ramp: kept
    mi2 = MI(1, 5, F(1), "probe", F(4), length=4)
    mi2.metrics.update(steps=4, send_times=sends, rtts=steep, g_raw=F(1))
    snd._tolerate(mi2)
    assert mi2.metrics["g"] == 1 and mi2.metrics["regression_error"] == 0


def _round(snd: Any, base: F, outcomes: list[tuple[F, F, F, F]]) -> Round:
    rnd = Round(base)
    for u1, u2, l1, l2 in outcomes:
        pair = Pair(base, [1, -1])
        pair.mis = {1: _mi(base * F(21, 20), L=l1), -1: _mi(base * F(19, 20), L=l2)}
        pair.mis[1].metrics["u"], pair.mis[-1].metrics["u"] = u1, u2
        for m in pair.mis.values():
            m.done = True
        rnd.pairs.append(pair)
    return rnd


def test_double_check() -> None:
    snd = VivacePaperSender(_start())
    snd.round = rnd = _round(snd, F(1, 2), [(F(10), F(5), F(0), F(1, 10))])   # faster, less loss
    snd._decide_round(rnd)
    assert rnd.rechecked and len(rnd.pairs) == 2 and snd.decisions == 0      # re-run the same pair
    assert [s for _, s in snd.queue] == [1, -1]
    second = _round(snd, F(1, 2), [(F(4), F(6), F(0), F(0))]).pairs[0]          # the other outcome
    rnd.pairs[1] = second
    snd._decide_round(rnd)
    assert snd.decisions == 1 and snd.base < F(1, 2)                          # the re-run's gamma


def test_majority_rule() -> None:
    snd = ProteusPaperSender(_start())
    snd.round = rnd = _round(snd, F(1, 2), [(F(2), F(1), F(0), F(0)), (F(1), F(2), F(0), F(0)),
                                            (F(3), F(1), F(0), F(0))])
    snd._decide_round(rnd)
    assert snd.decisions == 1 and snd.base > F(1, 2)
    snd.round = rnd = _round(snd, snd.base, [(F(2), F(1), F(0), F(0)), (F(1), F(2), F(0), F(0)),
                                             (F(1), F(1), F(0), F(0))])
    before = snd.base
    snd._decide_round(rnd)
    assert snd.base == before                                                 # no 2 of 3: no change


def test_amplifier_and_dynamic_boundary() -> None:
    snd = VivacePaperSender(_start())
    r = snd.base
    steps = []
    for _ in range(5):                       # a huge gradient: every step exceeds the boundary
        before = snd.base
        snd._step(F(10**6))
        steps.append((snd.base - before) / before)
    assert steps == [F(5, 100), F(15, 100), F(25, 100), F(35, 100), F(45, 100)]   # omega0 + k delta
    snd._step(F(-10**6))                     # a reversal: k = 0, tau = 0
    assert snd.k == 1 and snd.tau == 1
    snd.base = r
    tiny = VivacePaperSender(_start())
    for m in (1, 1, 2, 3, 5, 7):             # m(0) = 1, then Table 1
        before = tiny.base
        tiny._step(F(1, 10**6))
        assert tiny.base - before == m * F(1, 10**6) / 100


def test_ack_filter() -> None:
    snd = ProteusPaperSender(_start())
    times = [F(10), F(10) + F(1, 100), F(10) + F(2, 100), F(13)]          # a gap 150x the last interval
    keep = [snd._keep_sample(t, F(3)) for t in times]
    assert keep[:3] == [True, True, True] and keep[3] is False and snd.ignoring
    snd.srtt = F(3)
    assert snd._keep_sample(F(14), F(4)) is False and snd._keep_sample(F(15), F(2)) is True
    assert not snd.ignoring


def test_mi_timeout_halves_the_rate() -> None:
    """No ACK ever comes back: 4 RTTs (R = 2, no sample) after the first MI started, the rate
    halves and a new decision probes around it."""
    start = _start(R=2)
    snd = VivacePaperSender(start)
    rec = FlowRecord()
    sent = F(0)
    rates = []
    for t in range(0, 20):
        if t >= 2:
            fb = Feedback(t, 2, F(0), F(0), False, sent, None, (0, None), rec)
            d = snd.decide(fb)
            rates.append((t, d.rate))
            sent += d.rate
        else:
            sent += F(1, 2)
        rec.sent.append(sent)
        rec.lost.append(F(0))
        rec.rtt.append(None)
    assert snd.timeouts >= 1
    t_halve = next(t for t, r in rates if r < F(19, 40))
    assert t_halve == (2 - 1) + 4 * 2                         # timer from the MI start (time R - 1)
    assert dict(rates)[t_halve] == F(1, 4) * F(21, 20)        # probing around r / 2
