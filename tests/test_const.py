"""const: the encoding admits every run of the concrete sender (ccac.senders.const) on random
model paths (the superset property, tested)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from conftest import cca_params
from fluid_path import PathConfig, admits, simulate

from ccac.ccas import get_cca

F = Fraction
CONST = get_cca("const")


@pytest.mark.parametrize("seed", range(8))
def test_the_encoding_admits_every_run_of_the_concrete_sender(seed: int) -> None:
    """Windows from a tenth to three BDPs, paced or not, on paths with and without losses."""
    rng = random.Random(seed)
    cfg = PathConfig(T=8, R=rng.choice([1, 2]), D=rng.choice([0, 1, 2]),
                     buffer=rng.choice([None, F(1, 2), F(2)]), eta=rng.choice([F(0), F(1, 10)]))
    params = cca_params(CONST, cwnd=rng.choice([F(1, 10), F(1), F(3, 2), F(3)]), pacing=seed % 2 == 1)
    run = simulate(cfg, CONST.concrete, params, rng, paced=params["pacing"])
    admits({"name": "const", **params}, run)
    window = params["cwnd"] * cfg.C * cfg.R
    assert run.cwnd[cfg.R:] == [window] * (cfg.T - cfg.R)
