"""The interactive page (`--html`, :mod:`ccac.report.html_page`) and a result in a notebook,
checked in a real browser: Debian's `chromium`, driven through Playwright."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest


from conftest import bundled

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, or a skip that says what is missing."""
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install '.[test]'")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def premature(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """`ccac query aimd_premature_loss --html t.html`, as a user runs it, and its answer."""
    from conftest import run_cli

    page = tmp_path_factory.mktemp("html") / "t.html"
    code, out, err = run_cli("query", "aimd_premature_loss", "--html", str(page))
    assert code == 0 and f"page: {page}" in out, err
    return bundled("aimd_premature_loss"), page


def open_page(browser: Any, page_path: Path, offline: bool) -> tuple[Any, list[str]]:
    """The page opened in a new browser context, with every console error and page error."""
    context = browser.new_context(offline=offline, viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(page_path.as_uri(), wait_until="load")
    tab.wait_for_function("() => window.Bokeh !== undefined && Bokeh.documents.length > 0", timeout=10_000)
    return tab, errors


def test_the_page_states_the_answer_and_holds_the_trace(premature: tuple[Any, Path]) -> None:
    result, page = premature
    html = page.read_text(encoding="utf-8")
    for line in ("sat: counterexample found", "validated: yes", "query: aimd_premature_loss"):
        assert line in html
    assert "<script src=\"http" not in html and "<link href=\"http" not in html   # nothing fetched


def test_the_page_renders_in_chromium_with_the_trace_s_values(browser: Any, premature: tuple[Any, Path],
                                                              tmp_path: Path) -> None:
    """No console error; the plotted table holds the trace's values, read back from the page;
    a hover lists every variable at a step; a screenshot is kept."""
    result, page = premature
    tab, errors = open_page(browser, page, offline=False)
    table = tab.evaluate("() => { const s = Bokeh.documents[0].get_model_by_name('steps');"
                         " const out = {}; for (const k of Object.keys(s.data)) out[k] = Array.from(s.data[k]);"
                         " return out; }")
    trace = result.trace
    assert table["S"] == pytest.approx([float(x) for x in trace.total("S")])
    assert table["cwnd[0]"] == pytest.approx([float(x) for x in trace.flow("cwnd", 0)])
    assert table["queue"] == pytest.approx([float(a - lost - s) for a, lost, s in
                                            zip(trace.total("A"), trace.total("L"), trace.total("S"))])
    panel = tab.locator(".bk-Figure").first
    box = panel.bounding_box()
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tooltip = tab.locator(".bk-tooltip-content").filter(has_text="cwnd[0]")
    tooltip.wait_for(timeout=5_000)
    assert tooltip.count() == 1
    shown = dict(line.split(":\t") for line in tooltip.inner_text().splitlines())
    step = int(shown["t"])
    assert {"cwnd[0]", "Ld_f[0]", "timeout[0]", "C t - W", "queue"} <= set(shown)
    assert float(shown["S"]) == pytest.approx(float(trace.total("S")[step]), abs=1e-4)
    assert float(shown["cwnd[0]"]) == pytest.approx(float(trace.flow("cwnd", 0)[step]), abs=1e-4)
    tab.screenshot(path=str(tmp_path / "aimd_premature_loss.png"), full_page=True)
    assert (tmp_path / "aimd_premature_loss.png").stat().st_size > 10_000
    assert errors == []


def test_the_page_opens_with_networking_off(browser: Any, premature: tuple[Any, Path]) -> None:
    _, page = premature
    tab, errors = open_page(browser, page, offline=True)
    assert tab.locator(".bk-Figure").count() >= 3 and errors == []


def test_a_result_shows_itself_in_a_notebook() -> None:
    result = bundled("aimd_premature_loss")
    html = result._repr_html_()
    assert "sat: counterexample found" in html and "Bokeh" in html and "<div" in html


def test_an_unsat_answer_writes_a_page_of_text(tmp_path: Path, cli: Any) -> None:
    page = tmp_path / "u.html"
    code, _, err = cli("query", "aimd_no_loss_below_buffer", "--html", str(page))
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "unsat: no trace of the model satisfies the query" in html
    assert '"name":"steps"' not in html   # no trace, so no plotted table


def test_a_page_must_be_html(tmp_path: Path, cli: Any) -> None:
    code, out, err = cli("query", "aimd_premature_loss", "--html", str(tmp_path / "t.png"))
    assert code == 2 and "an interactive page is written as .html" in err and "Traceback" not in out + err


def test_a_replay_page_shows_the_trace_beside_the_run(browser: Any, tmp_path: Path, cli: Any) -> None:
    """`ccac replay R.json --html`: the trace's curves and the packet run's, primed, in one table
    read back from the page, each equal to its own run."""
    from ccac.testbed.replay import load_result, replay

    recorded = Path(__file__).parent / "data" / "bbr_cold_shallow_buffer_loss.json"
    page = tmp_path / "r.html"
    code, out, err = cli("replay", str(recorded), "--html", str(page), "-q")
    assert code == 0 and f"page: {page}" in out, err
    tab, errors = open_page(browser, page, offline=True)
    table = tab.evaluate("() => { const s = Bokeh.documents[0].get_model_by_name('steps');"
                         " return {S: Array.from(s.data['S']), run: Array.from(s.data[\"S'\"]),"
                         " cwnd: Array.from(s.data[\"cwnd'[0]\"]), rules: Array.from(s.data['rules[0]'])}; }")
    query, trace = load_result(str(recorded))
    run = replay(query, trace).concrete
    assert table["S"] == pytest.approx([float(x) for x in trace.total("S")])
    assert table["run"] == pytest.approx([float(x) for x in run.total("S")])
    assert table["cwnd"] == pytest.approx([float(x) for x in run.flow("cwnd", 0)])
    assert table["run"] != table["S"] and errors == []
    assert all(note.startswith("pacing: phase ") for note in table["rules"])   # the trace's own rules, per step


def read_table(tab: Any, name: str = "steps") -> dict[str, list[Any]]:
    """A page's data table, every column, read back from the page."""
    return tab.evaluate("(name) => { const s = Bokeh.documents[0].get_model_by_name(name); const out = {};"
                        " for (const k of Object.keys(s.data)) out[k] = Array.from(s.data[k]); return out; }", name)


def test_each_step_says_which_query_conditions_and_cca_rules_hold_there(browser: Any,
                                                                         premature: tuple[Any, Path]) -> None:
    """The hover's per-step notes, read back from the page, against the trace's values read here:
    each part of the find holds at exactly the steps where its comparison holds, and AIMD's rule
    is 'new loss' exactly where the window halves on a detected loss."""
    result, page = premature
    tab, errors = open_page(browser, page, offline=True)
    table = read_table(tab)
    trace, R = result.trace, result.query.network.R
    L, S, Ld, cwnd = trace.total("L"), trace.total("S"), trace.flow("Ld_f", 0), trace.flow("cwnd", 0)
    C, buffer, alpha = trace.constant("C"), trace.constant("buffer"), trace.constant("alpha")
    expected = {"find: L[t] > L[t-1]": lambda t: L[t] > L[t - 1],
                "find: cwnd[0][t] <= buffer + alpha": lambda t: cwnd[t] <= buffer + alpha,
                "find: Ld_f[0][t] > Ld_f[0][t-1]": lambda t: Ld[t] > Ld[t - 1],
                "find: S[t-R] - S[t-R-1] > C": lambda t: S[t - R] - S[t - R - 1] > C}
    for t in range(trace.T):
        holds = set(filter(None, table["query holds"][t].split("; ")))
        fails = set(filter(None, table["query fails"][t].split("; ")))
        in_range = R + 1 <= t < trace.T
        assert holds == ({part for part, test in expected.items() if test(t)} if in_range else set()), t
        assert fails == ({part for part, test in expected.items() if not test(t)} if in_range else set()), t
    witnesses = [t for t in range(trace.T) if len(table["query holds"][t].split("; ")) == len(expected)]
    assert witnesses, "the find holds at some step: its parts all hold there"
    marked = [t for t in range(trace.T) if not math.isnan(table["_loss"][t])]   # the loss marks, on A - L
    assert marked == [t for t in range(1, trace.T) if L[t] > L[t - 1]] and marked
    detected = [t for t in range(trace.T) if not math.isnan(table["_detected[0]"][t])]
    assert detected == [t for t in range(1, trace.T) if Ld[t] > Ld[t - 1]] and "_timeout" not in table
    halved = [t for t in range(R, trace.T) if cwnd[t] * 2 == cwnd[t - 1] and Ld[t] > Ld[t - 1]]
    assert halved and [t for t in range(trace.T) if table["rules[0]"][t] == "new loss"] == halved
    assert errors == []


def test_a_proof_page_shows_each_check_and_the_refuted_one_s_counterexample(browser: Any, tmp_path: Path,
                                                                            cli: Any) -> None:
    """`ccac prove --html`: every check's line, and the refuted lemma's counterexample plotted
    with the values of the trace `ccac prove` saves beside it."""
    from ccac.testbed.replay import load_result

    proof = tmp_path / "two_lemmas.toml"
    proof.write_text('[network]\nT = 6\nR = 1\nD = 1\nbuffer = "inf"\n[cca]\nname = "aimd"\n'
                     '[definitions]\nqueue = "A[t] - L[t] - S[t]"\n'
                     '[[lemma]]\nname = "never_empty"\nshow = "queue[T-1] > 0"\n'
                     '[[lemma]]\nname = "nonnegative"\nshow = "queue[T-1] >= 0"\n')
    page, saved = tmp_path / "p.html", tmp_path / "cex"
    code, out, err = cli("prove", str(proof), "--html", str(page), "--save", str(saved))
    assert code == 1 and f"page: {page}" in out, err
    html = page.read_text(encoding="utf-8")
    assert "never_empty: REFUTED" in html and "nonnegative: proved" in html and "refuted: 1/2 checks" in html
    tab, errors = open_page(browser, page, offline=True)
    table = read_table(tab)
    _, trace = load_result(str(saved / "lemma_never_empty.json"))
    assert table["queue"] == pytest.approx([float(a - lost - s) for a, lost, s in
                                            zip(trace.total("A"), trace.total("L"), trace.total("S"))])
    assert table["queue"][-1] <= 0 and errors == []
    assert tab.evaluate("() => Bokeh.documents[0].get_model_by_name('steps 2')") is None   # one trace only


def test_a_synthesis_page_shows_each_counterexample_and_the_cca_found(browser: Any, tmp_path: Path,
                                                                      cli: Any) -> None:
    """`ccac synthesize --html`: the search's log, one plotted trace per counterexample it
    reports, each with the rule its candidate took at each step, and the file written."""
    import re

    spec = Path(__file__).resolve().parent.parent / "examples" / "synthesis" / "qdel.toml"
    page, found = tmp_path / "s.html", tmp_path / "found.toml"
    code, out, err = cli("synthesize", str(spec), "--out", str(found), "--html", str(page))
    assert code == 0 and f"page: {page}" in out, err
    counterexamples = int(re.search(r"(\d+) counterexamples", out).group(1))
    html = page.read_text(encoding="utf-8")
    assert "iteration 1:" in html and "confirmed:" in html and "[state.rate]" in found.read_text()
    assert "the CCA found, as" in html and "[state.rate]" in html
    tab, errors = open_page(browser, page, offline=True)
    names = [f"steps {k}" if k > 1 else "steps" for k in range(1, counterexamples + 2)]
    present = [tab.evaluate("(n) => Bokeh.documents[0].get_model_by_name(n) !== null", n) for n in names]
    assert present == [True] * counterexamples + [False]
    rules = read_table(tab)["rules[0]"]
    assert {"rate: congested", "rate: not congested"} & set(rules) and errors == []


def test_a_proof_report_and_a_trace_show_themselves_in_a_notebook() -> None:
    """A proof's report (its `_repr_html_`) and a bare trace (through the formatter `import ccac`
    registers in an IPython shell) display as interactive plots."""
    from IPython.core.interactiveshell import InteractiveShell

    from ccac.analysis.proof import check_proof
    from ccac.analysis.proof_file import parse_proof
    from ccac.report.html_page import show_traces_in

    report = check_proof(parse_proof({"network": {"T": 6, "R": 1, "D": 1, "buffer": "inf"}, "cca": {"name": "aimd"},
                                      "lemma": [{"name": "l", "show": "A[T-1] - L[T-1] - S[T-1] > 0"}]}))
    html = report._repr_html_()
    assert "[lemma] l: REFUTED" in html and '"name":"steps"' in html
    shell = InteractiveShell.instance()
    show_traces_in(shell)
    trace = report.checks[0].result.trace
    shown, _ = shell.display_formatter.format(trace)
    assert f"trace: T = {trace.T} steps, 1 flow, CCA aimd" in shown["text/html"]
    assert '"name":"steps"' in shown["text/html"]


def test_a_periodic_two_flow_trace_is_drawn_as_two_periods_with_each_flow_s_curves(browser: Any,
                                                                                  tmp_path: Path) -> None:
    """Two BBR flows, flow 1 behind its own box, periodic: the page draws two periods (the second
    the first shifted by a period's bytes), each flow's A_f, S_f and So_f, who gets the link per
    step, the delay readings (flow 1's own too) and BBR's plotted state, each in its panel."""
    result = bundled("bbr_cwnd_limited_starvation_unequal_jitter")
    assert result.answer == "sat" and result.validated
    page = tmp_path / "p.html"
    result.write_html(page)
    tab, errors = open_page(browser, page, offline=True)
    table = read_table(tab)
    P = result.trace.T - 1
    assert len(table["t"]) == 2 * P + 1 and "drawn as two periods" in page.read_text(encoding="utf-8")
    for name in ("S", "S_f[0]", "So_f[1]"):
        first = table[name][:P + 1]
        growth = first[-1] - first[0]
        assert table[name][P:] == pytest.approx([v + growth for v in first]), name
    assert table["So_f[1]"][:P + 1] == pytest.approx([float(x) for x in result.trace.flow("So_f", 1)])
    S0, S1 = table["S_f[0]"], table["S_f[1]"]
    assert table["served[1]"][1:] == pytest.approx([b - a for a, b in zip(S1, S1[1:])])
    lows = [float(result.trace.delay_range(t, 1)[0]) for t in range(result.trace.T)]
    assert table["delay_min[1]"][:P + 1] == pytest.approx(lows) and S0[-1] > 5 * S1[-1]
    names = tab.evaluate("() => Array.from(Bokeh.documents[0].all_models).map((m) => m.name)")
    for panel in ("cumulative bytes", "served per step (bytes)", "queueing delay (steps)", "CCA state (bytes/step)"):
        assert panel in names, (panel, names)
    assert errors == []
