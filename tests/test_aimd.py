"""AIMD as the thesis defines it (6.2), and the RFC 6582 reading as a parameter (``hold_in_recovery``)."""

from __future__ import annotations

import random
from fractions import Fraction as F
from typing import Any

import pytest

from ccac.ccas import get_cca
from ccac.solving.validate import flow_values

from conftest import answer, bundled, cca_params
from fluid_path import PathConfig, admits, simulate

AIMD = get_cca("aimd")
SECOND_HALVING = ("any(cwnd[0][t] <= 2 and Ld_f[0][t+1] - Ld_f[0][t] >= 1 and S[t+1-R] - S[t-R] >= C + 1 "
                  "and A[t+1] >= A[t] + 2 and L[t+1] > L[t] "
                  "and any(cwnd[0][u] * 2 == cwnd[0][u-1] for u in range(1, t+1)) "
                  "and any(cwnd[0][u] * 2 == cwnd[0][u-1] for u in range(t+2, T)) for t in range(2, T-1))")


def solved(name: str, *overrides: str) -> Any:
    return bundled(name, *overrides)


def test_the_thesis_loss_burst_query_is_sat_at_t5() -> None:
    result = solved("aimd_loss_burst")
    assert result.answer == "sat" and result.trace.T == 5


def test_the_loss_burst_needs_growth_while_an_old_event_is_detected() -> None:
    """RFC 6582's reading (hold cwnd while more losses of an old event are detected) excludes
    exactly the step the thesis' trace needs."""
    assert solved("aimd_loss_burst", "cca.hold_in_recovery=true").answer == "unsat"


def test_the_burst_is_followed_by_a_second_halving() -> None:
    """Appendix A.2's whole story at T = 7: a halving, the held ACKs, the old event's second
    detection burst with growth, the 2 BDP burst and its loss, and a second halving."""
    result = solved("aimd_loss_burst", "network.T=7", f"query.find={SECOND_HALVING!r}")
    assert result.answer == "sat"
    trace = result.trace
    cwnd, Ld, marks = trace.flow("cwnd", 0), trace.flow("Ld_f", 0), trace.flow("loss_mark", 0)
    grew_while_detecting_old = [t for t in range(1, trace.T)
                                if Ld[t] > Ld[t - 1] and Ld[t] <= marks[t - 1] and cwnd[t] > cwnd[t - 1]]
    assert grew_while_detecting_old, "the trace must grow cwnd in a step detecting an old event's losses"


def _trace_with_old_event_detection() -> Any:
    """A trace in which some step detects more losses of an old event while a window of ACKs
    has arrived (so the thesis' AIMD grows there)."""
    find = ("any(Ld_f[0][t] > Ld_f[0][t-1] and Ld_f[0][t] <= loss_mark[0][t-1] "
            "and S[t-R] - ack_mark[0][t-1] >= cwnd[0][t-1] and not timeout[0][t] for t in range(R, T))")
    result = answer({"T": 7, "R": 1, "D": 1, "buffer": 2}, {"name": "aimd"}, find=find)
    assert result.answer == "sat"
    return result


def test_check_follows_the_variant() -> None:
    """The same trace passes the thesis' AIMD's check and fails RFC 6582's, which would have
    held cwnd; and holding cwnd there fails the thesis' AIMD's check."""
    result = _trace_with_old_event_detection()
    params = result.query.flows[0].params
    values = flow_values(result.trace, 0, params)
    assert AIMD.check(values) == []
    strict = flow_values(result.trace, 0, {**params, "hold_in_recovery": True})
    assert any("AIMD rule 'old loss' violated" in p for p in AIMD.check(strict))
    held = flow_values(result.trace, 0, params)
    t = next(t for t in range(1, held.T) if held.Ld[t] > held.Ld[t - 1] and held.Ld[t] <= held.state["loss_mark"][t - 1]
             and held.S[t - 1] - held.state["ack_mark"][t - 1] >= held.cwnd[t - 1])
    held.cwnd = held.cwnd[:t] + [held.cwnd[t - 1]] * (held.T - t)
    assert any(f"step {t}: AIMD rule 'window acked' violated" in p for p in AIMD.check(held))


# ------------------------------------------------------------------ the concrete sender
@pytest.mark.parametrize("seed", range(24))
def test_the_encoding_admits_every_run_of_the_concrete_sender(seed: int) -> None:
    """The superset property, tested: the concrete AIMD (ccac.senders.aimd) on random model
    paths (losses, detections with several dupack thresholds, timeouts), every model variable
    and both marks pinned: the encoding must admit the run."""
    rng = random.Random(seed)
    cfg = PathConfig(T=9, R=rng.choice([1, 2]), D=rng.choice([0, 1, 2]),
                     buffer=rng.choice([None, F(1, 2), F(1), F(2)]), dupacks=rng.choice([F(0), F(1), F(3)]),
                     eta=rng.choice([F(0), F(0), F(1, 10)]))
    params = cca_params(get_cca("aimd"), pacing=rng.random() < 0.3, hold_in_recovery=rng.random() < 0.5,
                        pacing_gain=rng.choice([None, F(2)]))
    values = {"cwnd": cfg.alpha * rng.randint(1, 30)}
    run = simulate(cfg, get_cca("aimd").concrete, params, rng, values, paced=params["pacing"])
    admits({"name": "aimd", **{k: v for k, v in params.items()}}, run, fix_state=("loss_mark", "ack_mark"))
    assert run.cwnd[cfg.R:] and all(c > 0 for c in run.cwnd)
