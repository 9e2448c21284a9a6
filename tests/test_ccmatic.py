"""CCmatic's two CCAs as ccac's language states them (``ccas/rules/cc_qdel.toml``,
``cc_probe_slow.toml``) against senders written from CCmatic's code alone
(``senders/ccmatic_paper.py``, by a reader who did not see the language files): on random paths
of the model the language encoding must admit every run of the independent sender (its rates
pinned, the beliefs the solver's). What they are known to read differently is stated per test.
"""

from __future__ import annotations

import random
from fractions import Fraction as F
from typing import Any, Callable

import pytest

from conftest import cca_params
from fluid_path import PathConfig, Run, admits, simulate

from ccac.ccas import CCAS
from ccac.senders.ccmatic_paper import DrainBqProbeSender, ProbeQdelSender
from ccac.senders.interface import ConcreteSender, SenderStart


def independent_run(make: Callable[[SenderStart], ConcreteSender], cca: str, seed: int, T: int) -> tuple[Run, dict[str, Any]]:
    rng = random.Random(seed)
    cfg = PathConfig(T=T, R=1, D=rng.choice([0, 1]), buffer=rng.choice([None, F(1), F(2)]),
                     dupacks=rng.choice([F(0), F(1)]))
    params = cca_params(CCAS[cca])
    run = simulate(cfg, make, params, rng, paced=True)
    # the language's rate-only window (bytes in flight plus the rate) sends exactly what the
    # independent sender's never-binding window does: the rate
    for t in range(cfg.R, T):
        run.cwnd[t] = run.A[t - 1] + run.rate[t] - run.S[t - cfg.R] - run.Ld[t]
    return run, params


@pytest.mark.parametrize("seed", range(20))
def test_cc_qdel_admits_the_independent_probe_qdel(seed: int) -> None:
    run, params = independent_run(ProbeQdelSender, "cc_qdel", seed, 10)
    admits({"name": "cc_qdel", **params}, run)


@pytest.mark.parametrize("seed", range(20))
def test_cc_probe_slow_admits_the_independent_drain_bq_probe(seed: int) -> None:
    run, params = independent_run(DrainBqProbeSender, "cc_probe_slow", seed, 12)
    admits({"name": "cc_probe_slow", **params}, run)
