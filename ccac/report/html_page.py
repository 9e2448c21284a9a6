"""Traces as self-contained HTML pages: linked, zoomable plots and, on hover, every variable
at the step under the pointer and what holds there.

A page is a list of :class:`Section` (lines of text and, if any, a trace) drawn with Bokeh, its
JavaScript inlined so the page opens with no network. A trace's panels (:func:`trace_panels`)
share one step axis, so a zoom or pan in one moves them all: the byte curves A, A - L and S with
the token-bucket bounds C t - W(t) and C (t - D) - W(t - D), the loss threshold and, with several
flows, each flow's curves; who gets the link; the queue; each flow's window and pacing rate; the
queueing delay; the CCA state each CCA marks ``plotted``; losses, detections and timeouts
marked. Every panel reads one data table (:func:`step_columns`: the trace's own columns, the
derived curves and the section's notes), and hovering a step lists it all.

Bokeh was chosen by measurement on a T = 100 trace with four linked panels, each page written
inline and opened offline in headless Chromium (docs/html.md): Bokeh 1.3 MB and about 0.1 s to
load, Vega-Lite through Altair 0.9 MB and 0.15-0.3 s but an 88 MB converter to inline its
scripts, Plotly 4.8 MB and 0.2-1.2 s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from html import escape
from pathlib import Path
from typing import Any, Sequence

from ccac.core.errors import CcacError
from ccac.encode.trace import Trace
from ccac.report.panels import FLOW_COLOURS, STATE_COLOURS, state_groups

#: the name of the page's data table (one column per variable), as the page's script knows it
STEPS_TABLE = "steps"


def check_html(path: str | Path, where: str = "--html") -> None:
    """A page is written as .html."""
    if Path(path).suffix.lower() not in (".html", ".htm"):
        raise CcacError(f"an interactive page is written as .html, not {Path(path).suffix or '(no extension)'!r}",
                        where)


def step_columns(trace: Trace) -> dict[str, list[float]]:
    """The page's data table: the step, every trace variable (per-flow names with ``[n]``), and
    the derived curves the panels draw (admitted bytes, the queue, the service bounds)."""
    t = list(range(trace.T))
    columns: dict[str, list[float]] = {"t": [float(i) for i in t]}
    for name, values in trace.columns():
        columns[name] = [_float(v) for v in values]
    A, S, L = (columns[x] for x in "ASL")
    upper, lower = trace.service_bounds()
    columns["A - L"] = [a - lost for a, lost in zip(A, L)]
    columns["queue"] = [a - lost - s for a, lost, s in zip(A, L, S)]
    columns["C t - W"] = [_float(u) for u in upper]
    columns["C (t - D) - W"] = [_float(low) for low in lower]
    buffer = trace.constant("buffer")
    if trace.network.finite_buffer and buffer is not None:
        columns["C t - W + buffer"] = [_float(u + buffer) for u in upper]
    if trace.flows > 1:   # who gets the link: each flow's bytes served per step
        columns["C"] = [_float(trace.network.C)] * trace.T
        for n in range(trace.flows):
            served = columns[f"S_f[{n}]"]
            columns[f"served[{n}]"] = [float("nan")] + [b - a for a, b in zip(served, served[1:])]
    columns.update(_delay_columns(trace))
    columns.update(_event_columns(trace, columns))
    return columns


def _event_columns(trace: Trace, columns: dict[str, list[float]]) -> dict[str, list[float]]:
    """Where the page marks an event, NaN at the other steps, for the kinds of event the trace
    has: ``_loss``, A - L at each step where L grows (the loss happens); ``_detected[n]``, S
    where flow n's detected losses Ld_f grow (its sender learns of a loss); ``_timeout``, A
    where some flow's timer fires."""
    nan, steps = float("nan"), range(trace.T)
    events: dict[str, list[bool]] = {"_loss": [t > 0 and columns["L"][t] > columns["L"][t - 1] for t in steps]}
    for n in range(trace.flows):
        detected = columns.get(f"Ld_f[{n}]", [])
        events[f"_detected[{n}]"] = [t > 0 and detected[t] > detected[t - 1] for t in range(len(detected))]
    fired = [trace.flow("timeout", n) or [] for n in range(trace.flows)]
    events["_timeout"] = [any(bool(f[t]) for f in fired if f) for t in steps]
    curve = {"_loss": columns["A - L"], "_timeout": columns["A"]}
    return {name: [curve.get(name, columns["S"])[t] if hit else nan for t, hit in enumerate(marks)]
            for name, marks in events.items() if any(marks)}


def _delay_columns(trace: Trace) -> dict[str, list[float]]:
    """The queueing delay the model allows the byte served at each step, ``delay_min`` to
    ``delay_max`` (NaN: no upper end inside the trace; ``_open`` marks those steps at their
    least), and each boxed flow's own reading (its queue and its box) as ``delay_min[n]``."""
    columns: dict[str, list[float]] = {}
    boxed = [n for n in range(trace.flows) if trace.network.path(n).D > 0]
    for flow, suffix in [(None, "")] + [(n, f"[{n}]") for n in boxed]:
        readings = trace.delay_ranges(flow)
        columns[f"delay_min{suffix}"] = [float(lo) for lo, _ in readings]
        columns[f"delay_max{suffix}"] = [float("nan") if hi is None else float(hi) for _, hi in readings]
        if flow is None:
            columns["_open"] = [float(lo) if hi is None else float("nan") for lo, hi in readings]
    return columns


def state_units(trace: Trace) -> dict[str, str]:
    """The CCA state the trace's CCAs mark ``plotted`` (as ``--plot`` draws it,
    :func:`ccac.report.panels.state_groups`): each column's unit, one panel per unit."""
    return {f"{var.name}[{n}]": key.removeprefix("state:") for key, variables in state_groups(trace).items()
            for n, var in variables}


@dataclass
class Section:
    """One part of a page: its lines of text (a query and its answer, a check of a proof) and,
    if it has one, its trace, with a replayed run of it (as long) drawn beside it, and notes
    per step (column name -> the text at each step: which query conditions and which CCA rules
    hold there, :func:`ccac.solving.validate.step_notes`) listed on hover."""

    text: Sequence[str]
    trace: Trace | None = None
    run: Trace | None = None
    notes: dict[str, list[str]] = field(default_factory=dict)


def table_name(k: int) -> str:
    """The data table of a page's k-th trace (from 0), as the page's script knows it."""
    return STEPS_TABLE if k == 0 else f"{STEPS_TABLE} {k + 1}"


def sections_layout(sections: Sequence[Section]) -> Any:
    """The sections one under the other; each trace's panels share its own step axis."""
    from bokeh.layouts import column

    parts: list[Any] = []
    traces = 0
    for section in sections:
        parts += _section(section, table_name(traces))
        traces += section.trace is not None
    return column(*parts, sizing_mode="stretch_width")


def _section(section: Section, table: str) -> list[Any]:
    """A section's text and, with a trace, its panels reading one table named ``table``."""
    from bokeh.models import ColumnDataSource
    from bokeh.models.widgets.markups import Div

    header = Div(text=preformatted(section.text), name="answer")
    trace = section.trace
    if trace is None:
        return [header]
    columns: dict[str, list[Any]] = dict(step_columns(trace))
    if section.run is not None:
        columns.update({primed(name): values for name, values in step_columns(section.run).items() if name != "t"})
    columns.update(section.notes)
    source = ColumnDataSource(columns, name=table)
    return [header, *trace_panels(source, section.run is not None, state_units(trace))]


def preformatted(lines: Sequence[str]) -> str:
    """Lines of text as the page shows them: as printed, escaped."""
    return "<pre>" + escape("\n".join(lines)) + "</pre>"


def primed(name: str) -> str:
    """A replayed run's column: the trace's name, primed (``cwnd[0]`` -> ``cwnd'[0]``)."""
    head, bracket, rest = name.partition("[")
    return f"{head}'{bracket}{rest}"


def sections_fragment(sections: Sequence[Section]) -> str:
    """The sections as a part of another page (:func:`layout_fragment`)."""
    return layout_fragment(sections_layout(sections))


def layout_fragment(shown: Any) -> str:
    """A Bokeh layout as a part of another page (a notebook's output cell), with the BokehJS
    bundles it needs inlined (the plots and the text widgets: about 1.6 MB, where all of
    Bokeh's are 3.9 MB)."""
    from bokeh.embed import components
    from bokeh.embed.bundle import bundle_for_objs_and_resources
    from bokeh.resources import INLINE

    script, div = components(shown)
    return f"{bundle_for_objs_and_resources([shown], INLINE).scripts()}{script}{div}"


def trace_fragment(trace: Trace) -> str:
    """A bare trace in a notebook: its size and model above its interactive plots (what holds at
    each step needs its query: a :class:`~ccac.solving.solve.Result` shows that)."""
    flows = f"{trace.flows} flow{'s' if trace.flows > 1 else ''}"
    return sections_fragment([Section([f"trace: T = {trace.T} steps, {flows}, CCA {', '.join(trace.ccas)}"], trace)])


def show_traces_in(shell: Any) -> None:
    """Make an IPython ``shell`` display every :class:`Trace` by :func:`trace_fragment` (a trace's
    room sits below this one, so it cannot name its own page: the facade registers this)."""
    shell.display_formatter.formatters["text/html"].for_type(Trace, trace_fragment)


def write_sections(path: str | Path, title: str, sections: Sequence[Section]) -> None:
    """``sections`` as one whole page at ``path``."""
    write_layout(path, title, sections_layout(sections))


def write_layout(path: str | Path, title: str, shown: Any) -> None:
    """A Bokeh layout as one whole HTML document at ``path``, Bokeh's scripts inlined (once for
    the page): it opens with no network."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    check_html(path)
    Path(path).write_text(str(file_html(shown, INLINE, title)), encoding="utf-8")


def trace_panels(source: Any, replayed: bool = False, units: dict[str, str] | None = None) -> list[Any]:
    """The panels over ``source`` (a table of :func:`step_columns`), for the flows whose columns
    it has: the byte curves (each flow's too, with several), who gets the link, the queue, each
    flow's window and pacing rate, the queueing delay, and the CCA state ``units`` names (column
    -> unit, one panel per unit). With ``replayed``, each curve's primed twin (the replayed run)
    dashed beside it. Every panel lists all of ``source``'s variables at the step under the pointer."""
    from bokeh.models import HoverTool
    from bokeh.plotting import figure

    panels: list[Any] = []

    def panel(label: str, height: int = 160) -> Any:
        shared = {"x_range": panels[0].x_range} if panels else {}
        fig = figure(height=height, sizing_mode="stretch_width", tools="xpan,xwheel_zoom,box_zoom,reset,save",
                     y_axis_label=label, name=label, **shared)
        panels.append(fig)
        return fig

    _byte_curves(panel("cumulative bytes", 320), source, replayed)
    if "served[1]" in source.data:
        _shares(panel("served per step (bytes)"), source)
    queue = panel("queue (bytes)")
    queue.line("t", "queue", source=source, color="teal", line_width=2, legend_label="A - L - S")
    if replayed:
        queue.line("t", primed("queue"), source=source, color="teal", line_dash="dashed", line_width=2,
                   legend_label=f"{primed('queue')} (replayed run)")
    queue.legend.location = "top_left"
    for series, label in (("cwnd", "window (bytes)"), ("rate", "pacing rate (bytes/step)")):
        if _flows_of(source, series):
            _per_flow(panel(label), source, series, replayed)
    _delays(panel("queueing delay (steps)"), source)
    by_unit: dict[str, list[str]] = {}
    for name, unit in (units or {}).items():
        if name in source.data:
            by_unit.setdefault(unit, []).append(name)
    for unit, names in by_unit.items():
        fig = panel(f"CCA state ({unit})" if unit else "CCA state")
        for k, name in enumerate(names):
            fig.line("t", name, source=source, color=STATE_COLOURS[k % len(STATE_COLOURS)], line_width=2,
                     legend_label=name)
        fig.legend.location = "top_left"
    panels[-1].xaxis.axis_label = "step t"
    hover = _hover_rows(source)
    for fig in panels:   # one table of every variable per step, from the panel's first line
        fig.add_tools(HoverTool(tooltips=hover, mode="vline", renderers=fig.renderers[:1]))
        fig.legend.click_policy = "hide"   # a click on a legend entry hides its curve
    return panels


def _hover_rows(source: Any) -> list[tuple[str, str]]:
    """Every variable of the table (not the page's own marks, named with a leading ``_``)."""
    names = [name for name in source.data if name != "t" and not name.startswith("_")]
    return [("t", "@t{0}")] + [(name, f"@{{{name}}}" if _is_text(source.data[name]) else f"@{{{name}}}{{0.[0000]}}")
                               for name in names]


def _flows_of(source: Any, series: str) -> list[int]:
    """The flows whose ``series[n]`` column the table has."""
    return sorted(int(name[len(series) + 1:-1]) for name in source.data
                  if name.startswith(f"{series}[") and name[len(series) + 1:-1].isdigit())


def _byte_curves(fig: Any, source: Any, replayed: bool) -> None:
    """A, A - L, S, the service bounds and the loss threshold; with several flows each flow's
    A_f (solid), S_f (dotted) and, with a box of its own, So_f (dashed: the ACKs it has seen)."""
    for name, colour, dash in (("A", "#1f77b4", "solid"), ("A - L", "#7fb2e0", "dashed"), ("S", "#d62728", "solid"),
                               ("C t - W", "black", "solid"), ("C (t - D) - W", "black", "dashdot"),
                               ("C t - W + buffer", "dimgray", "dotted")):
        if name in source.data:
            fig.line("t", name, source=source, color=colour, line_dash=dash, legend_label=name, line_width=2)
    if replayed:
        for name, colour in (("A", "#1f77b4"), ("S", "#d62728")):
            fig.line("t", primed(name), source=source, color=colour, line_dash="dashed", line_width=2,
                     line_alpha=0.7, legend_label=f"{primed(name)} (replayed run)")
    flows = _flows_of(source, "A_f")
    for n in flows if len(flows) > 1 else []:
        colour = FLOW_COLOURS[n % len(FLOW_COLOURS)]
        for name, dash in (("A_f", "solid"), ("S_f", "dotted"), ("So_f", "dashed")):
            if f"{name}[{n}]" in source.data:
                fig.line("t", f"{name}[{n}]", source=source, color=colour, line_dash=dash, line_width=1.5,
                         legend_label=f"{name}[{n}]")
    _events(fig, source)
    fig.legend.location = "top_left"


def _events(fig: Any, source: Any) -> None:
    """The marks of :func:`_event_columns` the table has: a loss on A - L, a detection on S (in
    its flow's colour with several flows), a timeout on A."""
    if "_loss" in source.data:
        fig.scatter("t", "_loss", source=source, marker="x", size=12, color="crimson", line_width=3,
                    legend_label="loss")
    several = len(_flows_of(source, "A_f")) > 1
    for n in _flows_of(source, "_detected"):
        fig.scatter("t", f"_detected[{n}]", source=source, marker="circle_x", size=12, fill_alpha=0, line_width=2,
                    color=FLOW_COLOURS[n % len(FLOW_COLOURS)] if several else "crimson",
                    legend_label=f"loss detected (flow {n})" if several else "loss detected")
    if "_timeout" in source.data:
        fig.scatter("t", "_timeout", source=source, marker="diamond", size=12, fill_alpha=0, color="darkorange",
                    line_width=2, legend_label="timeout")


def _shares(fig: Any, source: Any) -> None:
    """The bytes each flow got served in each step, stacked, against the link rate C."""
    fig.line("t", "C", source=source, color="black", line_dash="dashed", legend_label="link rate C")
    flows = _flows_of(source, "served")
    fig.vbar_stack([f"served[{n}]" for n in flows], x="t", width=0.6, source=source, fill_alpha=0.8,
                   color=[FLOW_COLOURS[n % len(FLOW_COLOURS)] for n in flows],
                   legend_label=[f"flow {n}" for n in flows])
    fig.legend.location = "top_left"


def _per_flow(fig: Any, source: Any, series: str, replayed: bool) -> None:
    """One line per flow of ``series`` (its replayed twin dashed)."""
    for n in _flows_of(source, series):
        colour = FLOW_COLOURS[n % len(FLOW_COLOURS)]
        fig.line("t", f"{series}[{n}]", source=source, color=colour, line_width=2, legend_label=f"flow {n}")
        if replayed and primed(f"{series}[{n}]") in source.data:
            fig.line("t", primed(f"{series}[{n}]"), source=source, color=colour, line_dash="dashed",
                     line_width=2, legend_label=f"flow {n}, replayed")
    fig.legend.location = "top_left"


def _delays(fig: Any, source: Any) -> None:
    """The queueing delay the model allows the byte served at each step, a bar from its least to
    its greatest (a triangle at the least where the trace holds no upper end), and each boxed
    flow's own reading beside it in its colour."""
    from bokeh.transform import dodge

    fig.line("t", "delay_min", source=source, color="teal", line_width=1, legend_label="least delay")
    fig.vbar(x="t", bottom="delay_min", top="delay_max", width=0.5, source=source, color="teal", fill_alpha=0.5,
             legend_label="delay range")
    fig.scatter("t", "_open", source=source, marker="triangle", size=10, color="teal",
                legend_label="at least (no upper end in the trace)")
    for k, n in enumerate(_flows_of(source, "delay_min")):
        fig.vbar(x=dodge("t", 0.3 + 0.15 * k), bottom=f"delay_min[{n}]", top=f"delay_max[{n}]", width=0.12,
                 source=source, color=FLOW_COLOURS[n % len(FLOW_COLOURS)], legend_label=f"flow {n}'s own reading")
    fig.legend.location = "top_left"


def _is_text(values: Sequence[Any]) -> bool:
    return bool(values) and isinstance(values[0], str)


def _float(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return float(value) if isinstance(value, (int, float, Fraction)) else float("nan")
