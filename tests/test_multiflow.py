"""Many flows with different paths: ``[[flow]]`` tables (each flow's CCA, its own jitter box D,
eta and R), the per-flow jitter box's encoding and independent check, and the errors."""

from __future__ import annotations

from typing import Any

import pytest

from ccac import parse_query, solve
from ccac.core.errors import CcacError
from ccac.problems.problem import build
from ccac.solving.validate import validate

# Flow 1's sender sends less than its window allows given what the bottleneck served for it:
# only possible if it has not seen those ACKs yet (its own jitter box), or sees them later (R).
HELD_BACK = "any(A_f[1][t] < S_f[1][t-1] + Ld_f[1][t] + cwnd[1][t] for t in range(2, T))"


def flows_query(flows: list[dict[str, Any]], find: str | None = None, network: dict[str, Any] | None = None,
                cca: dict[str, Any] | None = None, assume: list[str] | None = None) -> Any:
    data: dict[str, Any] = {"network": {"T": 7, "R": 1, "D": 0, **(network or {})}, "flow": flows,
                            "query": {"assume": assume or []}}
    if cca is not None:
        data["cca"] = cca
    if find is not None:
        data["query"]["find"] = find
    return parse_query(data)


def solved(query: Any) -> Any:
    result = solve(query, timeout=60)
    if result.answer == "sat":
        assert result.validated, result.violations
    return result


CONST = {"name": "const"}


# ---------------------------------------------------------------------- the jitter box
def test_own_jitter_box_allows_what_no_box_cannot() -> None:
    with_box = flows_query([CONST, {**CONST, "D": 2}], HELD_BACK)
    assert solved(with_box).answer == "sat"
    assert solved(flows_query([CONST, {**CONST, "D": 0}], HELD_BACK)).answer == "unsat"


@pytest.mark.parametrize("find", [
    "any(So_f[1][t] > S_f[1][t] for t in range(T))",                  # no ACK before service
    "any(So_f[1][t] < S_f[1][t-2] for t in range(2, T))",             # held at most D = 2 steps
    "any(So_f[1][t] < So_f[1][t-1] for t in range(1, T))",            # in order
    "any(So_f[0][t] != S_f[0][t] for t in range(T))",                 # no box: sees S_f itself
])
def test_box_rules_are_enforced(find: str) -> None:
    assert solved(flows_query([CONST, {**CONST, "D": 2}], find)).answer == "unsat"


def test_box_may_hold_exactly_d_steps() -> None:
    find = "any(So_f[1][t] == S_f[1][t-2] and S_f[1][t] > S_f[1][t-1] > S_f[1][t-2] for t in range(2, T))"
    assert solved(flows_query([CONST, {**CONST, "D": 2}], find)).answer == "sat"


def test_all_boxes_zero_is_exactly_the_shared_model() -> None:
    """[[flow]] tables with D = 0 and the network's R and eta build the very same constraints as
    [cca] + flows = N."""
    network = {"T": 6, "R": 1, "D": 1, "buffer": 1, "eta": 0.1}
    tables = build(flows_query([{"name": "aimd"}, {"name": "aimd", "D": 0}], "L[T-1] > L[0]", network))
    shared = build(parse_query({"network": {**network, "flows": 2}, "cca": {"name": "aimd"},
                                "query": {"find": "L[T-1] > L[0]"}}))
    assert [(g, c.sexpr()) for g, c in tables.enc.constraints] == \
        [(g, c.sexpr()) for g, c in shared.enc.constraints]


def test_delay_based_cca_reads_the_delay_through_its_box() -> None:
    """Copa behind a box: its encoding reads its own delay (FlowContext), its check agrees."""
    copa = {"name": "copa", "pacing": False}
    find = "any(dq_lo[1][t] >= 2 for t in range(T)) and all(dq_hi[0][t] <= 1 for t in range(2, T))"
    result = solved(flows_query([copa, {**copa, "D": 2}], find, {"T": 8}))
    assert result.answer == "sat"
    # Without the box both flows read the same bottleneck delay: impossible.
    assert solved(flows_query([copa, copa], find, {"T": 8})).answer == "unsat"


# ---------------------------------------------------------------------- mixed CCAs, eta, R
def test_mixed_ccas_validate() -> None:
    query = flows_query([{"name": "aimd"}, {"name": "const", "cwnd": 0.5, "D": 1}],
                        "L[T-1] > L[0] and cwnd[0][T-1] > cwnd[0][1]", {"buffer": 1, "T": 8})
    result = solved(query)
    assert result.answer == "sat"
    assert [f.cca.name for f in query.flows] == ["aimd", "const"]


def test_per_flow_rtt() -> None:
    assert solved(flows_query([CONST, {**CONST, "R": 2}], HELD_BACK)).answer == "sat"
    assert solved(flows_query([CONST, {**CONST, "R": 1}], HELD_BACK)).answer == "unsat"


def test_per_flow_eta() -> None:
    flows = [CONST, {**CONST, "eta": 0.5}]
    assert solved(flows_query(flows, "Lnc_f[1][T-1] > Lnc_f[1][0]")).answer == "sat"
    assert solved(flows_query(flows, "Lnc_f[0][T-1] > Lnc_f[0][0]")).answer == "unsat"


def test_flows_without_a_name_run_the_cca_table() -> None:
    query = flows_query([{}, {"D": 1}], cca={"name": "const", "cwnd": 2})
    assert [(f.cca.name, f.params["cwnd"]) for f in query.flows] == [("const", 2), ("const", 2)]
    assert [p.D for p in query.network.paths] == [0, 1]


# ---------------------------------------------------------------------- the validator
def test_validator_catches_a_corrupted_box() -> None:
    query = flows_query([CONST, {**CONST, "D": 2}], HELD_BACK)
    result = solved(query)
    assert validate(query, result.trace) == []
    observed = result.trace.symbols.series["So_f"].values[1]
    served = result.trace.symbols.series["S_f"].values[1]
    observed[-1] = served[-1] + 1  # the box delivers an ACK for a byte never served
    assert any("not yet served" in p for p in validate(query, result.trace))
    observed[-1] = served[-4] - 1  # ... or holds one longer than D = 2 steps
    assert any("longer than D = 2" in p for p in validate(query, result.trace))


# ---------------------------------------------------------------------- input errors
@pytest.mark.parametrize("flows, network, cca, message", [
    ([CONST, {**CONST, "jitter": 2}], {}, None, "flow[1]: unknown parameter 'jitter'"),
    ([CONST, {"jitter": 2}], {}, CONST, "flow[1]: unknown key 'jitter'"),
    ([CONST, {**CONST, "D": -1}], {}, None, "flow[1].D: must be >= 0"),
    ([CONST, {**CONST, "eta": 2}], {}, None, "flow[1].eta: must be <= 1"),
    ([CONST, {**CONST, "R": 0}], {}, None, "flow[1].R: must be >= 1"),
    ([CONST, {**CONST, "D": 1.5}], {}, None, "flow[1].D: expected a whole number"),
    ([CONST, CONST], {"flows": 3}, None, "network.flows: network.flows = 3 but there are 2 [[flow]]"),
    ([CONST, {}], {}, None, "flow[1]: no CCA"),
    ([CONST, {"cwnd": 2}], {}, CONST, "flow[1]: unknown key 'cwnd'"),
    ([CONST, {**CONST, "D": 6}], {}, None, "flow[1]: T = 7 is too small for this flow"),
    ([], {}, None, "flow: flows are written [[flow]]"),
])
def test_bad_flow_tables_are_clear_errors(flows: list, network: dict, cca: Any, message: str) -> None:
    with pytest.raises(CcacError) as e:
        flows_query(flows, network=network, cca=cca)
    assert message in str(e.value)


def test_sweep_over_a_flows_box(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CCAC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "two.toml"
    path.write_text('[network]\nT = 7\nD = 0\n[cca]\nname = "const"\n[[flow]]\n[[flow]]\n'
                    f'[query]\nfind = "{HELD_BACK}"\n')
    code, out, err = cli("sweep", str(path), "--grid", "flow.1.D=0,2", "--workers", "1")
    assert code == 0, err
    answers = [line.split()[:2] for line in out.splitlines()[2:4]]
    assert answers == [["0", "unsat"], ["2", "sat"]]


def test_cli_flow_override_and_errors(cli, tmp_path) -> None:
    path = tmp_path / "two.toml"
    path.write_text('[network]\nT = 7\nD = 0\n[cca]\nname = "const"\n[[flow]]\n[[flow]]\n'
                    f'[query]\nfind = "{HELD_BACK}"\n')
    assert cli("query", str(path), "-q")[0] == 0 and "unsat" in cli("query", str(path))[1]
    code, out, _ = cli("query", str(path), "--set", "flow.1.D=2")
    assert code == 0 and "sat: counterexample" in out and "own jitter box D=2" in out
    code, _, err = cli("query", str(path), "--set", "flow.2.D=2")
    assert code == 2 and "2 [[flow]] tables" in err and "Traceback" not in err
    code, _, err = cli("query", str(path), "--set", "flow.1.D=-3")
    assert code == 2 and "flow[1].D: must be >= 0" in err


def test_proof_files_take_flow_tables() -> None:
    from ccac.analysis.proof import check_proof, parse_proof

    proof = parse_proof({"network": {"T": 7, "D": 0}, "flow": [CONST, {**CONST, "D": 2}],
                         "lemma": [{"name": "box", "show": "all(So_f[1][t] <= S_f[1][t] for t in range(T))"},
                                   {"name": "lag", "exists": "any(So_f[1][t] < S_f[1][t] for t in range(T))"}]})
    assert check_proof(proof).verdict == "proved"


# ---------------------------------------------------------------------- query helpers
def test_throughput_ratio_sfair_utilization_semantics() -> None:
    """Each helper means its definition: checked against the curves on a solved trace, and by
    the solver (a helper and its expansion never disagree)."""
    query = flows_query([CONST, {**CONST, "D": 2}], "ratio(0, 1, 2, 6) >= 3", {"T": 8})
    result = solved(query)
    assert result.answer == "sat"
    S_f, S = result.trace.symbols.series["S_f"].values, result.trace.total("S")
    got = [S_f[n][6] - S_f[n][2] for n in range(2)]
    assert got[1] > 0 and got[0] >= 3 * got[1]
    pairs = [
        ("throughput(1, 2, 6)", "(S_f[1][6] - S_f[1][2]) / 4"),
        ("utilization(1, 7)", "(S[7] - S[1]) / (C * 6)"),
    ]
    for helper, expansion in pairs:
        differ = f"{helper} != {expansion}"
        assert solved(flows_query([CONST, {**CONST, "D": 2}], differ, {"T": 8})).answer == "unsat"
    sfair = "sfair(2, 2, 6) != (S_f[0][6] - S_f[0][2] <= 2 * (S_f[1][6] - S_f[1][2]) and " \
            "S_f[1][6] - S_f[1][2] <= 2 * (S_f[0][6] - S_f[0][2]))"
    assert solved(flows_query([CONST, {**CONST, "D": 2}], sfair, {"T": 8})).answer == "unsat"
    ratio = "(ratio(0, 1, 2, 6) >= 3) != (S_f[1][6] > S_f[1][2] and S_f[0][6] - S_f[0][2] >= 3 * (S_f[1][6] - S_f[1][2]))"
    assert solved(flows_query([CONST, {**CONST, "D": 2}], ratio, {"T": 8})).answer == "unsat"
    assert S[7] >= S[1]


@pytest.mark.parametrize("find, message", [
    ("ratio(0, 1, 2, 6) + 1 > 3", "non-linear: ratio(...) can only be compared"),
    ("ratio(0, 1, 2, 6) >= alpha", "non-linear: ratio(...) can only be compared"),
    ("ratio(0, 1, 2, 6) >= ratio(1, 0, 2, 6)", "non-linear: ratio(...) can only be compared"),
    ("throughput(0, 6, 2) > 1", "the window must have t1 < t2"),
    ("throughput(2, 1, 6) > 1", "index 2 out of range 0..1"),
    ("throughput(0, 1) > 1", "throughput takes 3 arguments: throughput(n, t1, t2)"),
    ("sfair(0.5, 1, 6)", "sfair's factor s must be a number >= 1"),
    ("utilization(1, 9) > 0", "index 9 out of range"),
])
def test_helper_errors(find: str, message: str) -> None:
    with pytest.raises(CcacError) as e:
        build(flows_query([CONST, CONST], find, {"T": 8}))
    assert message in str(e.value) and "query.find" in str(e.value)


# ---------------------------------------------------------------------- plots and traces
def test_plot_draws_each_flow_with_its_box_and_the_shared_curves(tmp_path) -> None:
    result = solved(flows_query([{"name": "aimd"}, {**CONST, "D": 2}], HELD_BACK, {"buffer": 1}))
    path = tmp_path / "two.png"
    fig = result.plot(path)
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 10_000
    lines = [line.get_label() for ax in fig.axes for line in ax.get_lines()]
    assert "$S$ service" in lines and "$Ct - W(t)$ service upper bound" in lines
    assert "$S^o_{1}$ flow 1 ACKs seen (own box D = 2)" in lines
    assert not any(label.startswith("$S^o_{0}$") for label in lines)  # flow 0 has no box
    colours = {line.get_label(): line.get_color() for ax in fig.axes for line in ax.get_lines()}
    assert colours["$A_{0}$ flow 0 arrivals"] != colours["$A_{1}$ flow 1 arrivals"]
    assert colours["$S^o_{1}$ flow 1 ACKs seen (own box D = 2)"] == colours["$A_{1}$ flow 1 arrivals"]
    legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "flow 0 (aimd)" in legends and "flow 1 (const)" in legends and "link rate C" in legends
    assert "flow 1: its sender's delay range (queue + own box)" in legends
    assert any("flow 1: const, own box D = 2, eta = 0, R = 1" in t.get_text() for t in fig.texts)


def test_traces_carry_each_flows_path(tmp_path) -> None:
    import csv
    import json

    result = solved(flows_query([CONST, {**CONST, "D": 2, "eta": 0.25, "R": 2}], HELD_BACK))
    data = result.trace.to_json()
    assert data["paths"][1] == {"D": {"exact": "2", "float": 2.0}, "eta": {"exact": "1/4", "float": 0.25},
                                "R": {"exact": "2", "float": 2.0}, "packets": False, "start": "any"}
    assert len(data["series"]["So_f"]) == 2
    result.trace.write_csv(tmp_path / "t.csv")
    rows = list(csv.DictReader((tmp_path / "t.csv").open()))
    assert rows[0]["D_own[1]"] == "2" and rows[0]["eta[1]"] == "1/4" and rows[0]["R[1]"] == "2"
    assert "So_f[1]" in rows[0]
    json.dumps(data)
