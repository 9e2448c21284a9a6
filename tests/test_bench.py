"""The bench command runs a query file at the given horizons and reports each run."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ccac.analysis.scaling import CASES
from ccac.commands.bench import bench, scaling_cases
from ccac.problems.query import bundled_queries, load_query
from ccac.solving.solve import solve

QUERY = """
[network]
T = 10
buffer = 1
[cca]
name = "const"
cwnd = 2
[query]
find = "S[T-1] - S[0] == C*(T-1+D)"
expect = "{expect}"
"""


def run_bench(tmp_path, expect: str, horizons: str):
    path = tmp_path / "full_link.toml"
    path.write_text(QUERY.format(expect=expect))
    return CliRunner().invoke(bench, ["--horizons", horizons, str(path)])


def test_bench_reports_each_horizon(tmp_path):
    result = run_bench(tmp_path, "sat", "1,6")
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line.split() for line in result.output.splitlines()
            if line.startswith("full_link")}
    assert rows["6"][2:5] == ["sat", "sat", "yes"]
    assert rows["1"][2] == "invalid" and "network.T" in " ".join(rows["1"])  # T must be >= 2


def test_bench_fails_when_an_answer_contradicts_expectation(tmp_path):
    result = run_bench(tmp_path, "unsat", "6")
    assert result.exit_code == 1
    assert "1 failed" in result.output


def test_bench_uses_the_query_s_own_horizons_unless_told_otherwise(tmp_path):
    path = tmp_path / "full_link.toml"
    path.write_text(QUERY.format(expect="sat") + "horizons = [5, 7]\n")
    rows = [line.split() for line in CliRunner().invoke(bench, [str(path)]).output.splitlines()
            if line.startswith("full_link")]
    assert [r[1] for r in rows] == ["5", "7"]
    rows = [line.split() for line in CliRunner().invoke(bench, ["--horizons", "6", str(path)]).output.splitlines()
            if line.startswith("full_link")]
    assert [r[1] for r in rows] == ["6"]


def test_scaling_fits_the_growth_exponent() -> None:
    from ccac.analysis.scaling import Case, Measured, Point

    m = Measured(Case("q", "", ()), [Point(10, 1, "sat", 1.0, 0.5), Point(20, 2, "unsat", 4.0, 4.0),
                                     Point(40, 4, "unknown", 16.0, 1.0, "timeout"),
                                     Point(80, 8, "unknown", 1.0, 0.0, "timeout: building the formula ...")])
    assert abs(m.exponent("build") - 2) < 1e-9     # 1 s -> 4 s -> 16 s as T doubles; a solver
    # timeout's build counts, a build cut short does not
    assert abs(m.exponent("solve") - 3) < 1e-9     # unanswered points are left out
    assert Measured(Case("q", "", ()), [Point(10, 1, "sat", 1.0, 1.0)]).exponent("solve") is None


def test_scaling_runs_cases_and_draws_them(tmp_path) -> None:
    from ccac.commands.bench import bench_scaling
    from ccac.analysis.scaling import CASES, Case

    assert {c.name for c in CASES} <= set(bundled_queries())
    path = tmp_path / "scaling.png"
    results = bench_scaling(120, "z3", str(path), (Case("aimd_premature_loss", "AIMD", ((5, 1), (7, 1))),))
    assert [p.answer for p in results[0].points] == ["sat", "sat"]
    assert results[0].exponent("solve") is not None and path.stat().st_size > 0


def test_scaling_build_only_builds_at_long_horizons(tmp_path) -> None:
    from ccac.analysis.scaling import Case, measure_build

    m = measure_build(Case("aimd_premature_loss", "AIMD", ()), 60, "index", horizons=(50, 100))
    assert [p.answer for p in m.points] == ["built", "built"] and m.exponent("build") is not None
    cut = measure_build(Case("copa_low_utilization_single_box", "Copa", ()), 0.5, horizons=(301,))
    assert cut.points[0].answer == "timeout" and cut.points[0].note.startswith("timeout: building")


def test_resolution_scales_every_duration_with_R() -> None:
    from ccac.problems.query import load_query
    from ccac.analysis.scaling import finer_horizon, overrides

    q = load_query("copa_starvation_unequal_jitter", overrides("copa_starvation_unequal_jitter", 25, 3))
    assert (q.network.R, q.network.D, q.network.rto) == (3, 0, 3)
    assert [(p.R, p.D) for p in q.network.paths] == [(3, 0), (3, 9)]   # flow 1's box: D = 3 -> 9
    assert finer_horizon("copa_starvation_unequal_jitter", 3) == 25      # 8 RTTs at R = 3


def test_scaling_takes_its_own_horizons_and_names_of_its_cases(cli) -> None:
    code, _, err = cli("bench", "--scaling", "--horizons", "10")
    assert code == 2 and "--scaling runs its own" in err
    code, _, err = cli("bench", "--scaling", "aimd_premature_loss", "no_such_case")
    assert code == 2 and "'no_such_case' is not a case of --scaling" in err and "Traceback" not in err
    assert scaling_cases(("aimd_cold_loss_below_buffer",)) == tuple(c for c in CASES if c.name ==
                                                                    "aimd_cold_loss_below_buffer")
    assert scaling_cases(()) == CASES


SQUARING = """name = "squaring"
summary = "the window squares itself each step: a product of solver quantities"
[state.cwnd]
initial = "cwnd >= alpha"
start = "alpha"
rule = "cwnd * cwnd"
"""
SQUARING_QUERY = """[network]
T = 3
buffer = 2
[cca]
file = "{cca}"
[query]
assume = ["cwnd[0][0] == 1/2"]
find = "{find}"
"""


def rounds_column(output: str, label: str) -> list[str]:
    """The rounds cells of ``label``'s rows, cut at the column's place in the heading."""
    heading = output.splitlines()[0]
    start, end = heading.index("rounds"), heading.index("note")
    return [line[start:end].strip() for line in output.splitlines() if line.startswith(label + " ")]


@pytest.mark.parametrize("find, needs", [
    ("cwnd[0][2] > 1", "none"),              # unsat on the first enclosure
    ("cwnd[0][2] > 1/16", "refinement"),     # unsat once the pieces near 1/4 are cut
    ("cwnd[0][2] >= 0", "repair"),           # sat: the first trace squares inexactly, pinned exact
])
def test_bench_reports_an_enclosed_answer_s_refinement_rounds(tmp_path, find: str, needs: str) -> None:
    cca = tmp_path / "squaring.toml"
    cca.write_text(SQUARING)
    path = tmp_path / "square.toml"
    path.write_text(SQUARING_QUERY.format(cca=cca, find=find))
    result = solve(load_query(str(path)), nonlinear="enclose", timeout=60)
    assert (result.refinements > 0, result.repaired) == (needs == "refinement", needs == "repair")
    shown = "0, repaired" if needs == "repair" else str(result.refinements)
    output = CliRunner().invoke(bench, ["--horizons", "3", "--timeout", "60", str(path)]).output
    assert rounds_column(output, "square") == [shown], output
    output = CliRunner().invoke(bench, ["--horizons", "3", "--nonlinear", "exact", str(path)]).output
    assert rounds_column(output, "square") == ["exact"], output


def test_bench_shows_no_rounds_for_a_linear_formula(tmp_path) -> None:
    assert rounds_column(run_bench(tmp_path, "sat", "6").output, "full_link") == ["-"]
