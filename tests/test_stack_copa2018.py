"""``copa2018`` (ccas/rules/copa2018.toml) against Copa as the NSDI 2018 paper states it: the
paper-faithful sender ``senders/copa_paper.py`` (written from the paper alone) runs on random
paths of the model with its readings drawn from a fixed seed, and the file's encoding, with the
run's curves, windows and pacing rates pinned, must admit every run. The file's own derived
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
#: the seeds of the fast conformance test: together they kill every mutant of the file
#: (tests/mutants.py, ``copa2018_*``)
SEEDS = (0, 1, 2, 3, 4, 5)


def table(s: CopaPaperSender) -> dict[str, Any]:
    """The file with the paper sender's parameters and its slow-start reading."""
    return {"file": str(FILE), "delta": s.delta0, "min_cwnd": s.min_cwnd, "competitive": s.competitive_on,
            "ss_per_ack": s.r_ss == 0}


@pytest.mark.parametrize("seed", SEEDS)
def test_the_file_admits_the_paper_senders_run(seed: int) -> None:
    run, s, _ = run_one(seed)
    admits(table(s), run)


@pytest.mark.slow
def test_the_file_admits_the_paper_senders_runs_on_more_paths() -> None:
    for seed in range(len(SEEDS), 40):
        run, s, _ = run_one(seed)
        admits(table(s), run)


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
