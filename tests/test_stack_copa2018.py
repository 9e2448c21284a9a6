"""``copa2018`` (ccas/rules/copa2018.toml) against Copa as the NSDI 2018 paper states it: the
paper-faithful sender ``senders/copa_paper.py`` (written from the paper alone) runs on paths of
the model with its readings drawn from a fixed seed, and the file's encoding, with the run's
curves, windows and pacing rates pinned, and the sender's velocity, 1/delta, RTTmin and
RTTstanding pinned as its state, must admit every run in exact non-linear arithmetic (no
enclosure of the moves' quotients can absorb a factor of 2 there). The file's own derived
sender is checked by tests/test_language.py (every bundled file). A recorded run (slow start,
competitive mode's halving of 1/delta on a loss, the velocity) is pinned from tests/data, and a
slow test runs more paths."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import pytest

from fluid_path import PathConfig, Run, admits
from test_copa_paper import run_one

from ccac.senders.copa_paper import CopaPaperSender

FILE = Path(__file__).resolve().parent.parent / "ccas" / "rules" / "copa2018.toml"
RECORDED = Path(__file__).resolve().parent / "data" / "copa2018_run.json"
#: the seeds of the fast conformance test, with the runs below they kill every mutant of the
#: file (tests/mutants.py, ``copa2018_*``): seed 0 (R = 2) has six steps of slow start and a
#: velocity that doubles to 8, seed 5 (R = 3, MSS 0.1 BDP) ten steps of slow start
SEEDS = (0, 5)
#: the file's state that the sender reports, pinned to its values: the velocity, 1/delta and the
#: two RTT filters (in steps) after each step's last ACK
STATE = ("v", "inv_delta", "rtt_min", "standing")


def table(s: CopaPaperSender) -> dict[str, Any]:
    """The file with the paper sender's parameters and its slow-start reading."""
    return {"file": str(FILE), "delta": s.delta0, "min_cwnd": s.min_cwnd, "competitive": s.competitive_on,
            "ss_per_ack": s.r_ss == 0}


def admits_exactly(s: CopaPaperSender, run: Run) -> None:
    """The file admits ``run`` with the sender's state (:data:`STATE`) pinned, every non-linear
    use exact: a run it admits is one its exact rules allow."""
    admits(table(s), run, fix_state=STATE, mode="exact")


@pytest.mark.parametrize("seed", SEEDS)
def test_the_file_admits_the_paper_senders_run(seed: int) -> None:
    run, s, _ = run_one(seed)
    admits_exactly(s, run)


@pytest.mark.slow
def test_the_file_admits_the_paper_senders_runs_on_more_paths() -> None:
    for seed in sorted(set(range(40)) - set(SEEDS)):
        run, s, _ = run_one(seed)
        admits_exactly(s, run)


def test_the_file_admits_a_run_with_srtt_above_the_standing_window() -> None:
    """A path of long RTT (R = 5, no jitter, no buffer limit, 10 packets a BDP) and a window of
    20 packets from the start, default mode, no slow start: the queue the window builds lifts
    srtt above 6 steps, so RTTstanding (the least sample over srtt / 2) reaches back past the
    three steps before the current one, where a low sample can keep the window growing while
    every sample of those four steps calls for a decrease."""
    cfg = PathConfig(T=24, R=5, D=0, alpha=F(1, 2))
    run, s, _ = run_one(140, cfg=cfg, slow_start=False, params={"competitive": False, "init_cwnd": 20})
    assert max(a.srtt for a in s.acks) > 8 and any(a.increase for a in s.acks if a.srtt > 6)
    admits_exactly(s, run)


def recorded_run() -> tuple[Run, dict[str, Any]]:
    data = json.loads(RECORDED.read_text())
    fields: dict[str, Any] = {k: (F(v) if isinstance(v, str) else v) for k, v in data["cfg"].items()}
    cfg = PathConfig(**fields)
    run = Run(cfg)
    for name in ("A", "S", "L", "Lnc", "Ld", "W", "cwnd", "rate"):
        setattr(run, name, [F(x) for x in data[name]])
    run.timeout = list(data["timeout"])
    return run, {"file": str(FILE), **{k: F(v) if isinstance(v, str) else v for k, v in data["params"].items()}}


def test_the_file_admits_a_recorded_run() -> None:
    """A run of the paper sender kept in tests/data (R = 1, one BDP of buffer, 4 packets per
    step): slow start left at step 6, the velocity doubled to 2, competitive mode, and 1/delta
    halved at step 19, which detects a loss."""
    run, params = recorded_run()
    admits(params, run)


def record(seed: int, cfg: PathConfig, path: Path = RECORDED) -> None:
    """Write the run of ``seed`` on ``cfg`` (readings drawn from the seed) where
    :func:`recorded_run` reads it."""
    run, s, _ = run_one(seed, cfg=cfg, slow_start=True, params={"competitive": True})
    params = table(s)
    del params["file"]
    curves = {name: [str(x) for x in getattr(run, name)] for name in ("A", "S", "L", "Lnc", "Ld", "W", "cwnd", "rate")}
    fields = {k: (str(v) if isinstance(v, F) else v) for k, v in vars(cfg).items()}
    path.write_text(json.dumps({"cfg": fields, "params": {k: str(v) if isinstance(v, F) else v
                                                          for k, v in params.items()},
                                **curves, "timeout": run.timeout}, indent=1) + "\n")
