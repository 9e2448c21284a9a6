"""CCmatic's loss oracle (``[network] loss_detection = "oracle"``): every loss known exactly R
steps after it happens, no timeouts.

* the encoding admits runs of concrete senders (AIMD, a language CCA reading losses) on random
  paths whose losses the sender learns so (tests/fluid_path.py simulates them apart from the
  encoding), and under it no trace detects otherwise or times out;
* the validator rejects a trace that detects otherwise, and a trace found with detection by
  ACKs that the oracle would not produce;
* it is a restriction of the model: a question about late detection that is sat by ACKs is
  unsat under the oracle;
* an unknown mode is refused, one line, exit 2.
"""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest

from conftest import cca_params, make_query, run_cli
from fluid_path import PathConfig, admits, simulate
from ccac.ccas import get_cca

from ccac.encode.expr import Series
from ccac.encode.trace import Trace
from ccac.solving.solve import solve
from ccac.solving.validate import check_trace

LATE = "any(Ld_f[0][t] != L_f[0][t - R] for t in range(R, T))"


@pytest.mark.parametrize("seed", range(12))
def test_the_encoding_admits_every_run_that_learns_its_losses_from_the_oracle(seed: int) -> None:
    rng = random.Random(seed)
    cfg = PathConfig(T=8, R=rng.choice([1, 2]), D=rng.choice([0, 1]), buffer=rng.choice([F(1, 2), F(1), F(2)]),
                     eta=rng.choice([F(0), F(1, 10)]), oracle=True)
    params = cca_params(get_cca("aimd"), pacing=rng.random() < 0.3, hold_in_recovery=rng.random() < 0.5,
                        pacing_gain=None)
    values = {"cwnd": cfg.alpha * rng.randint(5, 40)}
    run = simulate(cfg, get_cca("aimd").concrete, params, rng, values, paced=params["pacing"])
    admits({"name": "aimd", **params}, run, fix_state=("loss_mark", "ack_mark"))


def test_the_oracle_is_a_restriction_and_its_traces_validate() -> None:
    network = {"T": 9, "R": 1, "D": 1, "buffer": 1, "eta": F(1, 10)}
    by_acks = solve(make_query(network, {"name": "aimd"}, find=LATE))
    assert by_acks.answer == "sat" and by_acks.validated
    oracle = make_query({**network, "loss_detection": "oracle"}, {"name": "aimd"},
                        find=f"{LATE} or any(timeout[0][t] for t in range(R, T))")
    assert solve(oracle).answer == "unsat"
    # the trace detected by ACKs, read as a path with the oracle, is not one: the validator says where
    as_oracle = Trace(oracle.network, ["aimd"], by_acks.trace.symbols)
    assert any("the loss oracle reports" in v for v in check_trace(oracle, as_oracle))
    # a trace of the oracle validates; moved off it by one step's detection, it does not
    oracle.find = "any(L[t] > L[t - 1] for t in range(1, T - 1))"
    found = solve(oracle)
    assert found.answer == "sat" and found.validated
    trace = found.trace
    row = list(trace.symbols.series["Ld_f"].values[0])
    step = next(t for t in range(1, trace.T) if row[t] > row[t - 1])
    row[step] = row[step - 1]
    trace.symbols.series["Ld_f"] = Series("Ld_f", [row], 2, {})
    assert any("the loss oracle reports" in v for v in check_trace(oracle, trace))


def test_an_unknown_loss_detection_is_refused(tmp_path) -> None:
    (tmp_path / "q.toml").write_text('[network]\nloss_detection = "psychic"\n[cca]\nname = "aimd"\n[query]\nfind = "True"\n')
    code, out, err = run_cli("query", str(tmp_path / "q.toml"))
    assert code == 2 and "loss_detection" in err and len(err.strip().splitlines()) == 1, (out, err)
