"""CCmatic's links (`[network] link`, docs/model.md): "cbrdelay" is the composing server without
jitter of its own and every flow's ACKs through a box of D steps, and answers as that explicit
form does; "ideal" has no jitter; both survive a result file's round trip."""

from __future__ import annotations

import pytest

from conftest import run_cli

from ccac.core.errors import CcacError
from ccac.encode.network import parse_network
from ccac.problems.query import load_query, parse_query, parse_resolved
from ccac.solving.solve import solve


def test_cbrdelay_is_a_constant_rate_bottleneck_with_acks_held_up_to_d() -> None:
    net = parse_network({"T": 8, "D": 2, "link": "cbrdelay", "flows": 2})
    assert net.D == 0 and net.jitter == 2 and [net.path(n).D for n in range(2)] == [2, 2]
    query = load_query("cc_probe_slow_utilization")
    assert query.network.D == 0 and query.network.path(0).D == 1


@pytest.mark.parametrize("util, answer", [("0.19", "unsat"), ("0.25", "sat")])
def test_cbrdelay_answers_as_its_explicit_form(util: str, answer: str) -> None:
    linked = load_query("cc_probe_slow_utilization", [f"params.util={util}"])
    data = {**linked.raw, "network": {**{k: v for k, v in linked.raw["network"].items() if k != "link"}, "D": 0},
            "flow": [{"D": 1}]}
    explicit = parse_query(data, "explicit")
    assert solve(linked, timeout=120).answer == solve(explicit, timeout=120).answer == answer


def test_a_link_survives_the_result_files_round_trip() -> None:
    for name in ("cc_probe_slow_utilization", "cc_qdel_ideal_link"):
        query = load_query(name)
        again = parse_resolved(query.resolved(), "result.json")
        assert again.network == query.network, name


def test_the_ideal_link_has_no_jitter() -> None:
    assert parse_network({"T": 8, "link": "ideal"}).D == 0
    with pytest.raises(CcacError, match="the ideal link has no jitter"):
        parse_network({"T": 8, "link": "ideal", "D": 1})
    code, _, err = run_cli("query", "cc_qdel_ideal_link", "--set", "network.D=1")
    assert code == 2 and "the ideal link has no jitter" in err


def test_an_unknown_link_is_refused() -> None:
    code, _, err = run_cli("query", "cc_qdel_ideal_link", "--set", "network.link=wifi")
    assert code == 2 and "expected one of ccac, cbrdelay, ideal" in err, err
