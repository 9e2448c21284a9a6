"""Query files: sections, defaults, overrides, and one clear error per kind of bad input."""

from __future__ import annotations

from fractions import Fraction

import pytest

from ccac.core.errors import CcacError
from ccac.problems.query import apply_overrides, bundled_queries, load_query, parse_query


def test_defaults_and_exact_numbers() -> None:
    q = parse_query({"network": {"buffer": 0.1}, "cca": {"name": "aimd"}, "params": {"util": 0.1}})
    assert q.network.T == 10 and q.network.R == 1 and q.network.D == 1 and q.network.compose
    assert q.network.buffer == Fraction(1, 10)          # 0.1 is read exactly, not as a double
    assert q.params["util"] == Fraction(1, 10)
    assert q.flows[0].params == {"pacing": False, "pacing_gain": 1, "hold_in_recovery": False}


def test_overrides_use_toml_values() -> None:
    data = apply_overrides({"network": {"T": 10}}, ["network.T=15", "cca.pacing=true", "params.x=0.5",
                                                    "network.buffer=inf"])
    assert data["network"]["T"] == 15
    assert parse_query({**data, "cca": {"name": "aimd"}}).network.buffer == "inf"
    assert data["cca"] == {"pacing": True} and data["params"] == {"x": 0.5}


@pytest.mark.parametrize("data, message", [
    ({"netwrk": {}}, "unknown section [netwrk]"),
    ({"cca": {"name": "tahoe"}}, "cca.name: unknown CCA 'tahoe'"),
    ({"cca": {"name": "aimd", "gain": 2}}, "cca: unknown parameter 'gain'"),
    ({"cca": {"name": "aimd"}, "network": {"R": 0}}, "network.R: must be >= 1"),
    ({"cca": {"name": "aimd"}, "network": {"D": -1}}, "network.D: must be >= 0"),
    ({"cca": {"name": "aimd"}, "network": {"buffer": -1}}, "network.buffer: must be >= 0"),
    ({"cca": {"name": "aimd"}, "network": {"buffer": "big"}}, "network.buffer: expected a number"),
    ({"cca": {"name": "aimd"}, "network": {"T": 3, "R": 2, "D": 1}}, "T = 3 is too small"),
    ({"cca": {"name": "aimd"}, "network": {"flows": 0}}, "network.flows: must be >= 1"),
    ({"cca": {"name": "aimd"}, "network": {"T": 2.5}}, "network.T: expected a whole number"),
    ({"cca": {"name": "aimd"}, "network": {"compose": "yes"}}, "network.compose: expected true or false"),
    ({"cca": {"name": "aimd"}, "network": {"epsilon": 0.1}}, "epsilon applies only to the single-box model"),
    ({"cca": {"name": "aimd"}, "query": {"expect": "maybe"}}, "query.expect"),
    ({"cca": {"name": "aimd"}, "query": {"fnd": "x"}}, "query: unknown key 'fnd'"),
    ({"network": {}}, "cca: needs a table with a name"),
    ({"cca": {"name": "aimd"}, "query": {"horizons": [1]}}, "query.horizons: horizons must be a non-empty list"),
    ({"cca": {"name": "aimd"}, "query": {"horizons": 10}}, "query.horizons"),
    ({"cca": {"name": "aimd"}, "query": {"slow": "yes"}}, "query.slow: slow must be true or false"),
])
def test_bad_input_is_one_clear_error(data: dict, message: str) -> None:
    with pytest.raises(CcacError) as e:
        parse_query(data)
    assert message in str(e.value)


def test_malformed_file_names_the_file(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[network\nT = 3")
    with pytest.raises(CcacError) as e:
        load_query(str(bad))
    assert str(bad) in str(e.value) and "malformed TOML" in str(e.value)


def test_unknown_bundled_name() -> None:
    with pytest.raises(CcacError, match="no bundled query named 'nope'"):
        load_query("nope")


def test_bundled_queries_load_and_state_an_expectation() -> None:
    library = bundled_queries()
    assert {"aimd_premature_loss", "const_service_above_capacity"} <= set(library)
    for name in library:
        q = load_query(name)
        assert q.expect in ("sat", "unsat"), name
        assert q.description, name
        assert q.network.T <= 10 or q.slow or q.window, \
            f"{name}: T > 10 needs slow = true or a window search (the default test run is short)"
