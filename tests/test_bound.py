"""`ccac bound`: bisection on a [params] number, against thresholds known exactly.

No path serves more than C*(T-1+D) bytes over steps 0..T-1, and some path serves exactly that
(const_service_above/at_capacity). So "service >= x * C * (T-1)" is sat exactly for
x <= (T-1+D)/(T-1): 6/5 at T = 6, D = 1, whatever the CCA.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Callable

import pytest

import ccac.analysis.bound
from ccac import parse_query
from ccac.analysis.bound import Probe, find_bound

THRESHOLD = Fraction(6, 5)
SERVICE = "S[T-1] - S[0] >= x * C * (T - 1)"
QUERY_FILE = f"""
[network]
T = 6
[cca]
name = "any"
[params]
x = 1
[query]
find = "{SERVICE}"
"""


def service_query(find: str = SERVICE):
    return parse_query({"network": {"T": 6}, "cca": {"name": "any"}, "params": {"x": 1},
                        "query": {"find": find}})


def consistent(probes: list[Probe], sat: Callable[[Fraction], bool] = lambda x: x <= THRESHOLD) -> bool:
    """Every decisive probe agrees with the analytic answer at its value."""
    return all(p.answer == ("sat" if sat(p.value) else "unsat") for p in probes if p.answer != "unknown")


def test_bracket_holds_the_exact_service_threshold() -> None:
    # lo and hi are symmetric around 6/5, so the first midpoint is the threshold itself: sat
    # (the bound is reached), and every later probe lies above it.
    r = find_bound(service_query(), "x", 0, Fraction(12, 5), tol="0.01")
    a, b = r.bracket
    assert r.status == "flip" and r.rebuilt is None
    assert (a.answer, b.answer) == ("sat", "unsat")
    assert a.value == THRESHOLD < b.value <= THRESHOLD + Fraction(1, 100)
    assert r.unknown == [] and consistent(r.probes)


def test_boundary_counterexample_is_validated_at_the_boundary_value() -> None:
    r = find_bound(service_query(), "params.x", "0.5", "1.5", tol="0.001")
    a, b = r.bracket
    assert a.value <= THRESHOLD < b.value and b.value - a.value <= Fraction(1, 1000)
    assert r.validated is True and r.violations == []
    assert r.boundary_query.params["x"] == a.value == r.trace.constant("x")
    served = r.trace.total("S")
    assert served[-1] - served[0] >= a.value * 5  # the find condition, exactly, with C = 1


def test_non_linear_use_rebuilds_per_probe_and_flips_the_other_way() -> None:
    # x * service is non-linear with x a solver constant, linear with x a number:
    # sat iff x * C*(T-1+D) >= C*(T-1), i.e. x >= 5/6.
    r = find_bound(service_query("x * (S[T-1] - S[0]) >= C * (T - 1)"), "x", 0, Fraction(5, 3), tol="0.01")
    a, b = r.bracket
    assert r.rebuilt is not None and "non-linear" in r.rebuilt
    assert (a.answer, b.answer) == ("unsat", "sat") and b.value == Fraction(5, 6)
    assert r.validated is True
    assert consistent(r.probes, lambda x: x >= Fraction(5, 6))


def test_unknown_probe_is_searched_around(monkeypatch) -> None:
    real = ccac.analysis.bound._Prober.probe

    def threshold_times_out(self, value):
        if value == THRESHOLD:
            return Probe(value, "unknown", 0.0, "timeout"), None, None
        return real(self, value)

    monkeypatch.setattr(ccac.analysis.bound._Prober, "probe", threshold_times_out)
    tol = Fraction(1, 100)
    r = find_bound(service_query(), "x", 0, Fraction(12, 5), tol=tol)
    a, b = r.bracket
    assert r.probes[2].value == THRESHOLD and r.probes[2].answer == "unknown"
    assert [u.value for u in r.unknown] == [THRESHOLD]
    assert a.answer == "sat" and b.answer == "unsat" and a.value < THRESHOLD < b.value
    assert THRESHOLD - a.value <= tol and b.value - THRESHOLD <= tol  # narrowed on both sides
    assert r.width > tol and consistent(r.probes) and r.validated


def test_cli_prints_probes_bracket_and_validated_trace(cli, tmp_path) -> None:
    path, out_json = tmp_path / "service.toml", tmp_path / "bound.json"
    path.write_text(QUERY_FILE)
    code, out, err = cli("bound", str(path), "--param", "x", "--lo", "0", "--hi", "2.4",
                         "--tol", "0.01", "--json", str(out_json))
    assert code == 0, err
    assert "probe params.x = 1.2: sat" in out
    assert "bound: params.x flips between 1.2 (sat) and 1.209375 (unsat); unknown at: -" in out
    assert "monotone" in out and "validated: yes" in out and "delay_min" in out
    assert "premise at 1.209375: the assumptions alone admit a validated trace" in out
    data = json.loads(out_json.read_text())
    assert data["status"] == "flip" and data["validated"] is True and data["premise"] == "satisfiable"
    assert [p["value"] for p in data["bracket"]] == ["6/5", "387/320"]
    assert len(data["probes"]) == out.count("probe params.x") and data["trace"]["T"] == 6


def test_a_flip_where_the_assumptions_stop_having_traces_is_vacuous(cli, tmp_path) -> None:
    """Assume the service reaches x C (T-1) and ask for nothing more: above 6/5 no trace meets the
    assumption, so the bound brackets 6/5 but says nothing about a find: VACUOUS, exit 1."""
    path = tmp_path / "assumed.toml"
    path.write_text(QUERY_FILE.replace(f'find = "{SERVICE}"', f'assume = ["{SERVICE}"]\nfind = "True"'))
    code, out, _ = cli("bound", str(path), "--param", "x", "--lo", "0", "--hi", "2.4", "--tol", "0.1")
    assert code == 1 and "VACUOUS at" in out and "flips between 1.2 (sat)" in out


def test_cli_no_flip_exits_1(cli, tmp_path) -> None:
    path = tmp_path / "service.toml"
    path.write_text(QUERY_FILE)
    code, out, _ = cli("bound", str(path), "--param", "x", "--lo", "0", "--hi", "1")
    assert code == 1 and "bound: no flip in [0, 1]: sat at both ends" in out


def test_cli_unknown_endpoint_exits_3(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(ccac.analysis.bound._Prober, "probe",
                        lambda self, value: (Probe(value, "unknown", 0.0, "timeout"), None, None))
    path = tmp_path / "service.toml"
    path.write_text(QUERY_FILE)
    code, out, _ = cli("bound", str(path), "--param", "x", "--lo", "0", "--hi", "2")
    assert code == 3 and "the answer is unknown at 0 and 2" in out


def test_cli_invalid_boundary_trace_exits_4(cli, tmp_path, monkeypatch) -> None:
    import importlib  # the boundary trace is checked by ccac.solving.solve.checked_trace (the module;
    # `ccac.solving.solve` as an attribute is the function)
    monkeypatch.setattr(importlib.import_module("ccac.solving.solve"), "validate",
                        lambda query, trace, pairs: ["step 1: made up"])
    path = tmp_path / "service.toml"
    path.write_text(QUERY_FILE)
    code, _, err = cli("bound", str(path), "--param", "x", "--lo", "0", "--hi", "2.4", "--tol", "0.5")
    assert code == 4 and "validated: NO" in err and "step 1: made up" in err


@pytest.mark.parametrize("args, message", [
    (["--param", "y", "--lo", "0", "--hi", "1"], "--param: unknown parameter 'y' (params: x; or a [network] setting as network.NAME)"),
    (["--param", "x", "--lo", "1", "--hi", "1"], "--lo must be below --hi, got 1 >= 1"),
    (["--param", "x", "--lo", "0", "--hi", "1", "--tol", "0"], "--tol must be positive"),
    (["--param", "x", "--lo", "zero", "--hi", "1"], "--lo: expected a number, got 'zero'"),
    (["--param", "x", "--lo", "0", "--hi", "1", "--plot", "b.gif"], "unsupported plot format"),
    (["--lo", "0", "--hi", "1"], "Missing option '--param'"),
    (["--param", "network.packets", "--lo", "0", "--hi", "1"],
     "--param: network.packets is not a numeric [network] setting"),
    (["--param", "network.T", "--lo", "2.5", "--hi", "9"], "network.T is a whole number: --lo and --hi must be whole"),
    (["--param", "network.T", "--lo", "3", "--hi", "100000000"], "network.T"),
    (["--param", "network.bdp_packets", "--lo", "0", "--hi", "9"], "network.bdp_packets"),
])
def test_cli_bad_input_exits_2_with_one_line(cli, tmp_path, args, message) -> None:
    path = tmp_path / "service.toml"
    path.write_text(QUERY_FILE)
    code, out, err = cli("bound", str(path), *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert "Traceback" not in err + out


def test_one_reused_solver_brackets_the_same_threshold() -> None:
    """--reuse: every probe a check of one z3 solver under assumptions; same exact answers."""
    r = find_bound(service_query(), "x", 0, Fraction(12, 5), tol="0.01", reuse=True)
    assert r.reused and r.status == "flip" and consistent(r.probes)
    assert r.bracket[0].value == THRESHOLD and r.validated is True


def test_reused_solver_confirms_periodic_unsat_without_the_settling_group() -> None:
    """A periodic probe that is unsat is checked again, in the same solver, without the settling
    conditions; both the reused and the fresh search give the same bracket."""
    from ccac.problems.query import load_query

    q = load_query("copa_steady_utilization")
    fresh = find_bound(q, "util", 0, 1, tol="0.05")
    reused = find_bound(q, "util", 0, 1, tol="0.05", reuse=True)
    assert reused.reused and not fresh.reused
    assert [(p.value, p.answer) for p in reused.probes] == [(p.value, p.answer) for p in fresh.probes]
    assert reused.validated is True


def network_query(find: str, **network: object):
    return parse_query({"network": {"T": 6, **network}, "cca": {"name": "any"}, "query": {"find": find}})


def test_a_whole_number_network_setting_is_searched_over_whole_numbers() -> None:
    """network.T: no path serves more than C*(T-1+D) bytes in steps 0..T-1, and some path serves
    exactly that, so "service >= 7 C" is sat exactly from T = 7 (D = 1). Every probe is a whole
    number of steps and the bracket is two neighbours."""
    r = find_bound(network_query("S[T-1] - S[0] >= 7 * C"), "network.T", 3, 40)
    a, b = r.bracket
    assert r.key == "network.T" and r.rebuilt and r.tol == 1
    assert (a.value, a.answer, b.value, b.answer) == (6, "unsat", 7, "sat")
    assert all(p.value.denominator == 1 for p in r.probes)
    assert consistent(r.probes, lambda T: T >= 7)
    assert r.validated is True and r.boundary_value == 7 and r.boundary_query.network.T == 7


def test_packets_per_bdp_bound_the_smallest_delivery() -> None:
    """Whole packets of C*R/b bytes: a delivery of more than nothing but less than C*R/7 exists
    exactly when b > 7. The boundary trace is read back and validated with its packet size."""
    r = find_bound(network_query("0 < S[T-1] - S[0] and S[T-1] - S[0] < C*R/7", packets=True),
                   "network.bdp_packets", 1, 100)
    a, b = r.bracket
    assert (a.value, a.answer, b.value, b.answer) == (7, "unsat", 8, "sat")
    assert consistent(r.probes, lambda packets: packets > 7)
    assert r.validated is True and r.boundary_query.network.alpha == Fraction(1, 8)
    assert r.premise == "satisfiable"


def test_cli_bounds_a_network_setting(cli, tmp_path) -> None:
    path = tmp_path / "service.toml"
    path.write_text(QUERY_FILE.replace(f'find = "{SERVICE}"', 'find = "S[T-1] - S[0] >= 7 * C"'))
    code, out, err = cli("bound", str(path), "--param", "network.T", "--lo", "3", "--hi", "12")
    assert code == 0, err
    assert "bound: network.T flips between 6 (unsat) and 7 (sat)" in out
    assert "boundary counterexample (the sat probe closest to the flip): network.T = 7" in out
