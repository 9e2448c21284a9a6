"""The bench command runs a query file at the given horizons and reports each run."""

from __future__ import annotations

from click.testing import CliRunner

from ccac.bench import bench

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
