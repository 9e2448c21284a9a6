"""ccac.report.plot: the thesis-style trace figure renders to png/svg/pdf, headless, with the right lines."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from ccac import CcacError, parse_query, solve
from ccac.report.plot import plot_trace


@pytest.fixture(scope="module")
def lossy():
    """One AIMD flow with a finite buffer that loses bytes (so the loss markers appear)."""
    r = solve(parse_query({"network": {"T": 6, "buffer": 1}, "cca": {"name": "aimd"},
                           "query": {"assume": ["alpha <= 0.1"], "find": "L[T-1] > L[0]"}}))
    assert r.answer == "sat"
    return r


@pytest.fixture(scope="module")
def two_flows():
    """Two constant-window flows on an infinite buffer."""
    r = solve(parse_query({"network": {"T": 5, "flows": 2}, "cca": {"name": "const", "cwnd": 1},
                           "query": {}}, name="two_flows"))
    assert r.answer == "sat"
    return r


def labels(fig: Figure) -> list[str]:
    return [line.get_label() for ax in fig.axes for line in ax.get_lines()]


def legend_texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


@pytest.mark.parametrize("ext, check", [
    ("png", lambda b: b.startswith(b"\x89PNG\r\n\x1a\n")),
    ("svg", lambda b: b"<svg" in b),
    ("pdf", lambda b: b.startswith(b"%PDF")),
])
def test_formats(lossy, tmp_path, ext, check):
    path = tmp_path / f"trace.{ext}"
    fig = lossy.plot(path)
    assert isinstance(fig, Figure)
    data = path.read_bytes()
    assert len(data) > 1000 and check(data)


def test_uppercase_extension_and_string_path(lossy, tmp_path):
    path = tmp_path / "trace.PNG"
    plot_trace(lossy.trace, str(path), title="upper")
    assert path.read_bytes().startswith(b"\x89PNG")


def test_no_path_returns_figure_without_writing(lossy, tmp_path):
    fig = plot_trace(lossy.trace)
    assert isinstance(fig, Figure) and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["trace.jpg", "trace", "trace.png.txt"])
def test_unknown_extension_raises(lossy, tmp_path, name):
    with pytest.raises(CcacError, match=r"unsupported plot format.*use \.png, \.svg or \.pdf"):
        plot_trace(lossy.trace, tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_single_flow_content(lossy):
    fig = plot_trace(lossy.trace, title="aimd")
    names = labels(fig)
    for want in ("$A$ arrivals", "$A - L$ admitted", "$S$ service", "service upper bound",
                 "service lower bound", "loss threshold", "cwnd flow 0"):
        assert any(want in n for n in names), want
    assert any("loss at step" in t for t in legend_texts(fig))  # L increases in this trace
    assert not any("flow 1" in n for n in names)
    assert fig._suptitle.get_text() == "aimd"
    # the bounds are exact: upper = C*t - W, lower = C*(t-D) - W(t-D) with W[0] before t = D
    tr, net = lossy.trace, lossy.trace.network
    W = [float(w) for w in tr.total("W")]
    lines = {line.get_label(): line for ax in fig.axes for line in ax.get_lines()}
    upper = next(v for k, v in lines.items() if "upper bound" in k).get_ydata()
    lower = next(v for k, v in lines.items() if "lower bound" in k).get_ydata()
    C, D = float(net.C), net.D
    assert list(upper) == pytest.approx([C * t - W[t] for t in range(tr.T)])
    assert list(lower) == pytest.approx([C * (t - D) - W[max(t - D, 0)] for t in range(tr.T)])
    threshold = next(v for k, v in lines.items() if "loss threshold" in k).get_ydata()
    assert list(threshold) == pytest.approx([u + float(tr.constant("buffer")) for u in upper])


def test_two_flows_have_per_flow_lines(two_flows, tmp_path):
    fig = two_flows.plot(tmp_path / "two.png")
    names = labels(fig)
    for n in (0, 1):
        assert any(f"flow {n} arrivals" in x for x in names)
        assert any(f"flow {n} service" in x for x in names)
        assert f"cwnd flow {n}" in names
    assert any("flow 1" in t for t in legend_texts(fig))
    assert any(x == "$A$ arrivals" for x in names)  # the shared totals stay


def test_infinite_buffer_has_no_loss_threshold(two_flows):
    fig = plot_trace(two_flows.trace)
    assert two_flows.trace.constant("buffer") is None
    assert not any("threshold" in x for x in labels(fig))
    assert not any("loss" in t for t in legend_texts(fig))


def test_pacing_rate_panel_only_when_paced(two_flows, lossy):
    assert not any("rate" in x for x in labels(plot_trace(lossy.trace)))
    r = solve(parse_query({"network": {"T": 4}, "cca": {"name": "const", "pacing": True}, "query": {}}))
    fig = plot_trace(r.trace)
    assert "rate flow 0" in labels(fig)
    assert len(fig.axes) > len(plot_trace(lossy.trace).axes)


def test_no_pyplot_state_leak(lossy):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plot_trace(lossy.trace)
    assert plt.get_fignums() == before


def test_cca_state_is_drawn_one_panel_per_unit(lossy):
    """ETC marks its rates, RTT sample, drain and action as plotted: one panel per unit, with the
    exact values of the trace; AIMD marks none, so its figure has no state panel."""
    r = solve(parse_query({"network": {"T": 6, "R": 2}, "cca": {"name": "etc"}, "query": {}}))
    assert r.answer == "sat"
    fig = plot_trace(r.trace)
    panels = {ax.get_ylabel(): ax for ax in fig.axes if ax.get_ylabel().startswith("CCA state")}
    assert set(panels) == {"CCA state\n(bytes/step)", "CCA state\n(steps)", "CCA state\n(bytes)", "CCA state"}
    lines = {line.get_label(): line for line in panels["CCA state\n(bytes/step)"].get_lines()}
    assert {"srate", "Rp", "recv", "rmax", "C link rate"} <= set(lines)
    assert list(lines["srate"].get_ydata()) == [float(v) for v in r.trace.flow("srate", 0)]
    assert not any(ax.get_ylabel().startswith("CCA state") for ax in plot_trace(lossy.trace).axes)


def test_state_of_every_flow_is_drawn():
    r = solve(parse_query({"network": {"T": 5, "flows": 2}, "cca": {"name": "copa"}, "query": {}}))
    assert r.answer == "sat"
    assert {"dq_lo flow 0", "dq_lo flow 1", "dq_hi flow 0", "dq_hi flow 1"} <= set(labels(plot_trace(r.trace)))
