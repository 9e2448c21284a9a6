"""The pages of `ccac sweep ... --html` and `ccac bound ... --html` (:mod:`ccac.report.grid_page`):
the grid or the probes, each point linked to its trace, checked in headless Chromium."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import run_cli
from test_bound import QUERY_FILE
from test_html import browser, open_page  # noqa: F401
from test_sweep import SLACK

from ccac import load_query, solve
from ccac.core.params import exact_text

#: read a named data table of the page, every column as a plain array
READ = ("(name) => { const s = Bokeh.documents[0].get_model_by_name(name); const out = {};"
        " for (const k of Object.keys(s.data)) out[k] = Array.from(s.data[k]); return out; }")
#: select point i of the grid, as a tap does
SELECT = "(i) => { Bokeh.documents[0].get_model_by_name('points').selected.indices = [i]; }"
#: the text above the trace shows point i (the tap's callback has run)
SHOWN = ("(i) => { const d = Bokeh.documents[0];"
         " return d.get_model_by_name('point').text === d.get_model_by_name('points').data.header[i]; }")


@pytest.fixture(scope="module")
def sweep_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """A three-axis sweep (T x slack x flows: sat at slack 0 with one or two flows, traces of two
    lengths and two shapes) written as a page; (the query file, the page, stdout)."""
    folder = tmp_path_factory.mktemp("grid")
    query, page = folder / "slack.toml", folder / "sweep.html"
    query.write_text(SLACK)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CCAC_CACHE_DIR", str(folder / "cache"))
        code, out, err = run_cli("sweep", str(query), "--grid", "network.T=5,6", "--grid", "params.slack=0,0.5",
                                 "--grid", "network.flows=1,2", "--workers", "1", "--html", str(page))
    assert code == 0 and f"page: {page}" in out, err
    yield query, page, out


@pytest.fixture(scope="module")
def bound_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """`ccac bound` on the service query (flip at x = 6/5) as a page, and its --json."""
    folder = tmp_path_factory.mktemp("bound")
    query, page, out_json = folder / "service.toml", folder / "bound.html", folder / "bound.json"
    query.write_text(QUERY_FILE)
    code, out, err = run_cli("bound", str(query), "--param", "x", "--lo", "0", "--hi", "2.4", "--tol", "0.1",
                             "--html", str(page), "--json", str(out_json))
    assert code == 0 and f"page: {page}" in out, err
    return page, json.loads(out_json.read_text())


def tap(tab: Any, i: int) -> dict[str, list[float]]:
    """Select point i as a tap does; the trace table once the page shows it."""
    tab.evaluate(SELECT, i)
    tab.wait_for_function(SHOWN, arg=i, timeout=5_000)
    return tab.evaluate(READ, "steps")


def floats(values: list[Any]) -> list[float]:
    return [float(v) for v in values]


def test_the_sweep_page_holds_every_point_and_each_sat_point_s_trace(browser: Any,  # noqa: F811
                                                                     sweep_page: tuple[Path, Path, str]) -> None:
    """Every point with its answer, as the table printed it; tapping a sat point puts its own
    trace (one flow or two, T = 5 or 6) in the trace table; an unsat point empties it."""
    query, page, out = sweep_page
    tab, errors = open_page(browser, page, offline=False)
    points = tab.evaluate(READ, "points")
    printed = [line.split()[:4] for line in out.split("\n\n")[0].splitlines()[2:]]
    assert [list(row) for row in zip(points["network.T"], points["params.slack"], points["network.flows"],
                                     points["answer"])] == printed
    assert [row[3] for row in printed] == ["sat", "sat", "unsat", "unsat"] * 2
    for i, (T, slack, flows, answer) in enumerate(printed):
        steps = tap(tab, i)
        if answer != "sat":
            assert steps["t"] == [] and "unsat: no trace" in tab.evaluate(
                "() => Bokeh.documents[0].get_model_by_name('point').text")
            continue
        trace = solve(load_query(str(query), [f"network.T={T}", f"params.slack={slack}",
                                              f"network.flows={flows}"])).trace
        assert steps["t"] == list(range(int(T))) and len(steps["query holds"]) == int(T)   # the hover's notes
        assert steps["S"] == pytest.approx(floats(trace.total("S")))
        assert steps["cwnd[0]"] == pytest.approx(floats(trace.flow("cwnd", 0)))
        if flows == "2":
            assert steps["S_f[1]"] == pytest.approx(floats(trace.flow("S_f", 1)))
        else:   # the union of both shapes' columns: the second flow's are NaN here
            assert all(math.isnan(v) for v in steps["S_f[1]"])
    assert tab.locator(".bk-Figure").count() >= 5   # two heat maps (one per flows value) and the trace panels
    assert errors == []


def test_the_bound_page_marks_the_bracket_and_links_each_sat_probe(browser: Any,  # noqa: F811
                                                                   bound_page: tuple[Path, dict[str, Any]]) -> None:
    """Every probe with its answer; the boundary probe is shown first, with the trace --json
    writes; every other sat probe's trace has the service its value asks for."""
    page, result = bound_page
    tab, errors = open_page(browser, page, offline=False)
    points = tab.evaluate(READ, "points")
    values = [Fraction(x) for x in points["params.x"]]
    assert list(zip(values, points["answer"])) == [(Fraction(p["value"]), p["answer"]) for p in result["probes"]]
    a, b = (Fraction(end["value"]) for end in result["bracket"])
    assert f"the flip is between {exact_text(a)} and {exact_text(b)}" in page.read_text(encoding="utf-8")
    boundary = values.index(a)
    first = tab.evaluate(READ, "steps")
    assert first["S"] == pytest.approx([s["float"] for s in result["trace"]["series"]["S"]])
    sat = [i for i, answer in enumerate(points["answer"]) if answer == "sat"]
    assert len(sat) >= 2 and boundary in sat
    for i in sat:
        steps = tap(tab, i)
        x = float(points["x"][i])
        assert len(steps["t"]) == 6 and steps["S"][-1] - steps["S"][0] >= x * 5 - 1e-9   # C = 1, T = 6
        if i == boundary:
            assert steps == first
    assert errors == []


def test_both_pages_open_with_networking_off(browser: Any, sweep_page: tuple[Path, Path, str],  # noqa: F811
                                             bound_page: tuple[Path, dict[str, Any]]) -> None:
    for page in (sweep_page[1], bound_page[0]):
        html = page.read_text(encoding="utf-8")
        assert "<script src=\"http" not in html and "<link href=\"http" not in html
        tab, errors = open_page(browser, page, offline=True)
        assert tab.locator(".bk-Figure").count() >= 4 and errors == []


def test_one_axis_is_a_strip_and_a_stored_point_says_its_trace_is_not_kept(browser: Any,  # noqa: F811
                                                                           tmp_path: Path, cli: Any,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """One axis: a strip with the sat point's trace; the same sweep again, answered from the store,
    draws the same trace from the store's copy of it."""
    monkeypatch.setenv("CCAC_CACHE_DIR", str(tmp_path / "cache"))
    query, first, again = tmp_path / "slack.toml", tmp_path / "first.html", tmp_path / "again.html"
    query.write_text(SLACK)
    for page in (first, again):
        code, out, err = cli("sweep", str(query), "--grid", "params.slack=0,0.5", "--workers", "1", "--html", str(page))
        assert code == 0 and f"page: {page}" in out, err
    assert "1 reused" not in out and "2 reused from the store" in out
    tables = []
    for page in (first, again):
        tab, errors = open_page(browser, page, offline=True)
        points = tab.evaluate(READ, "points")
        assert points["answer"] == ["sat", "unsat"] and points["trace"] == [0, -1] and errors == []
        tables.append(tab.evaluate(READ, "steps"))
    assert len(tables[0]["t"]) == 6 and tables[1] == tables[0]


def test_a_store_from_before_traces_were_kept_opens_and_says_so(tmp_path: Path) -> None:
    """A store of schema version 1 (no trace column) gains the column: its rows keep their answers
    without a trace, and new rows keep theirs."""
    import sqlite3

    from ccac.solving.store import SCHEMA_VERSION, Store

    path = tmp_path / "results.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE results (key TEXT PRIMARY KEY, kind TEXT NOT NULL, answer TEXT NOT NULL, "
                "validated INTEGER, seconds REAL NOT NULL, timeout REAL, reason TEXT, solver TEXT NOT NULL, "
                "solver_version TEXT NOT NULL, ccac_version TEXT NOT NULL, query TEXT NOT NULL, created REAL NOT NULL)")
    old.execute("INSERT INTO results VALUES ('k', 'query', 'sat', 1, 0.1, NULL, NULL, 'z3', 'v', 'c', '{}', 0)")
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    with Store(path) as store:
        assert store.get("k")["answer"] == "sat" and store.get("k")["trace"] is None
        store.put("k2", "query", {}, {"answer": "sat", "validated": True, "seconds": 0.1, "solver_version": "v",
                                      "ccac_version": "c", "trace": {"T": 3}}, None, "z3")
        assert store.get("k2")["trace"] == {"T": 3}
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


@pytest.mark.parametrize("command", [("sweep", "{query}", "--grid", "params.slack=0,0.5"),
                                     ("bound", "{query}", "--param", "slack", "--lo", "0", "--hi", "1")])
def test_a_page_must_be_html_and_is_refused_before_solving(tmp_path: Path, cli: Any,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           command: tuple[str, ...]) -> None:
    monkeypatch.setenv("CCAC_CACHE_DIR", str(tmp_path / "cache"))
    query = tmp_path / "slack.toml"
    query.write_text(SLACK)
    code, out, err = cli(*(arg.format(query=query) for arg in command), "--html", str(tmp_path / "grid.png"))
    assert code == 2 and "an interactive page is written as .html, not '.png'" in err
    assert "probe" not in out + err and "sweep:" not in err and "Traceback" not in out + err
    assert not (tmp_path / "cache").exists()


def test_a_sweep_and_a_bound_show_themselves_in_a_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ccac.analysis.sweep.sweep` from Python: its points as a DataFrame, and in a notebook the
    grid with each sat point's trace above the table; a bound's probes likewise."""
    from test_bound import service_query

    from ccac.analysis.bound import find_bound
    from ccac.analysis.sweep import sweep

    monkeypatch.setenv("CCAC_CACHE_DIR", str(tmp_path / "cache"))
    query = tmp_path / "slack.toml"
    query.write_text(SLACK)
    job = sweep(str(query), {"params.slack": [0, 0.5]}, workers=1)
    table = job.table()
    assert list(table["params.slack"]) == ["0", "0.5"] and list(table["answer"]) == ["sat", "unsat"]
    html = job._repr_html_()
    assert '"name":"points"' in html and '"name":"steps"' in html and "<table" in html and "unsat" in html
    again = sweep(str(query), {"params.slack": "0,0.5"}, workers=1)
    assert list(again.table()["cached"]) == [True, True]
    bound = find_bound(service_query(), "x", Fraction(0), Fraction(12, 5), Fraction(1, 10), traces=True)
    html = bound._repr_html_()
    assert f"bound of params.x on {bound.query.name}: flip" in html and '"name":"steps"' in html
