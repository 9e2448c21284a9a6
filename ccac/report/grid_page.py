"""A sweep's grid or a bound's probes as one self-contained HTML page (``ccac sweep ... --html``,
``ccac bound ... --html``), each point linked to its trace.

The page holds, as text, what was run (the command's summary lines), then the grid as an
interactive Bokeh plot (its JavaScript inlined, as :mod:`ccac.report.html_page` does, so the page
opens with no network), every point coloured by its answer (sat, unsat, unknown, vacuous,
error, or a proof's proved, refuted, vacuous, unknown); hovering a point lists its axis values,
answer, seconds and reason:

* a sweep over two axes is a heat map: the first axis across, the second up;
* over one axis, a strip: the axis across, one lane per answer;
* over three or more, one heat map of the first two axes per combination of the other axes'
  values (titled with them), all on the same two axes;
* a bound is a strip of its probes over the parameter's exact value (one lane per answer),
  the final bracket shaded.

Below the grid, the tapped point: its header (its overrides, its answer) and, for a point with
a validated trace, the trace's panels of :func:`ccac.report.html_page.trace_panels` with every
variable per step on hover. A point without one (unsat, unknown, an error, or a trace the store
did not keep) shows its reason and empties the panels. Tapping swaps the data of the one table
the panels draw (:data:`ccac.report.html_page.STEPS_TABLE`) for the tapped point's trace through a
small :class:`bokeh.models.CustomJS` callback. Traces of different shapes (other flows, paced or
not, another T) share the panels: the table has the union of every trace's columns, those a
trace lacks filled with NaN (drawn as nothing). The first point with a trace is shown when the
page opens. Losses, detections and timeouts are marked as on the page of one query: their marks
are columns of the table too, so a tap moves them with the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ccac.encode.trace import Trace
from ccac.report.html_page import STEPS_TABLE, preformatted, state_units, step_columns, trace_panels

#: the name of the page's table of points (one row per point or probe), as the page's script knows it
GRID_TABLE = "points"
#: the name of the text above the tapped point's trace
POINT_TEXT = "point"
ANSWER_COLOURS = {"sat": "#d62728", "refuted": "#d62728", "unsat": "#2ca02c", "proved": "#2ca02c",
                  "vacuous": "#ff7f0e", "unknown": "#9e9e9e", "error": "#000000", "invalid": "#9467bd"}
ANSWER_ORDER = ("sat", "refuted", "unsat", "proved", "vacuous", "unknown", "invalid", "error")
#: swap the trace table's data and the point's text for the tapped point's
_ON_TAP = """
const i = points.selected.indices[0];
if (i === undefined) return;
info.text = points.data.header[i];
const k = points.data.trace[i];
steps.data = k >= 0 ? {...traces[k].data} : Object.fromEntries(Object.keys(steps.data).map((c) => [c, []]));
"""


@dataclass
class GridPoint:
    """One point of a grid (or one probe of a bound) as the page shows it: its values as shown,
    one per axis; its answer and seconds; why (an unknown's reason, an error, a proof's failed
    checks, or why it has no trace); the lines shown above its trace when tapped; its validated
    trace, if any, and what holds at each of its steps (:class:`ccac.report.html_page.Section`'s
    notes)."""

    values: tuple[str, ...]
    answer: str
    seconds: float
    reason: str
    header: Sequence[str]
    trace: Trace | None = None
    notes: dict[str, list[str]] = field(default_factory=dict)


def sweep_layout(text: Sequence[str], keys: Sequence[str], points: Sequence[GridPoint]) -> Any:
    """``text`` above the grid of ``points`` over the axes ``keys`` (a strip, a heat map, or heat
    maps per value of the third and later axes), and the tapped point's trace below."""
    source = _points_source(points, keys, {"facet": [_facet(keys, p.values) for p in points]})
    if len(keys) == 1:
        figures = [_strip(source, keys[0], _factors(p.values[0] for p in points), _answers(points))]
    else:
        xs, ys = (_factors(p.values[i] for p in points) for i in (0, 1))
        facets = _factors(source.data["facet"])
        figures = [_heat_map(source, keys, xs, ys, facet) for facet in facets]
    return _linked(text, figures, source, points)


def bound_layout(text: Sequence[str], key: str, points: Sequence[GridPoint], positions: Sequence[float],
                 bracket: tuple[float, float] | None) -> Any:
    """``text`` above the probes of a bound over ``key`` (``positions``: each probe's value as a
    float, its exact value in ``values``), one lane per answer, ``bracket`` shaded; the tapped
    probe's trace below."""
    from bokeh.models import FactorRange
    from bokeh.models.annotations import BoxAnnotation, Span
    from bokeh.plotting import figure

    source = _points_source(points, [key], {"x": list(positions), "probe": list(range(1, len(points) + 1))})
    fig = figure(height=220, sizing_mode="stretch_width", y_range=FactorRange(factors=_answers(points)),
                 tools="tap,xpan,xwheel_zoom,box_zoom,reset,save", x_axis_label=key, name="probes",
                 title=f"probes of {key}" + ("" if bracket is None else
                                              f"; the flip is between {_bracket_text(points, positions, bracket)}"))
    if bracket is not None:
        fig.add_layout(BoxAnnotation(left=bracket[0], right=bracket[1], fill_color="gold", fill_alpha=0.3))
        for edge in bracket:
            fig.add_layout(Span(location=edge, dimension="height", line_color="goldenrod", line_dash="dashed"))
    renderer = fig.scatter("x", "answer", source=source, size=14, line_color="black",
                           fill_color=_colours_by_answer(_answers(points)))
    _hover(fig, renderer, [(key, f"@{{{key}}}"), ("probe", "@probe")])
    boundary = [i for i, (p, x) in enumerate(zip(points, positions)) if p.trace is not None and x in (bracket or ())]
    return _linked(text, [fig], source, points, boundary[0] if boundary else None)


def _bracket_text(points: Sequence[GridPoint], positions: Sequence[float], bracket: tuple[float, float]) -> str:
    """The bracket's ends as their exact values (``a and b``)."""
    exact = {x: p.values[0] for p, x in zip(points, positions)}
    return " and ".join(exact.get(end, f"{end:g}") for end in bracket)


def _points_source(points: Sequence[GridPoint], keys: Sequence[str], extra: dict[str, list[Any]]) -> Any:
    """The table of points: a column per axis (named by its key), the answer, seconds, reason,
    the point's header as HTML and its trace's number (-1: none), and ``extra``."""
    from bokeh.models import ColumnDataSource

    numbers = _trace_numbers(points)
    columns: dict[str, list[Any]] = {key: [p.values[i] for p in points] for i, key in enumerate(keys)}
    columns.update(answer=[p.answer for p in points], seconds=[p.seconds for p in points],
                   reason=[p.reason for p in points], header=[preformatted(p.header) for p in points],
                   trace=[numbers.get(id(p.trace), -1) for p in points], **extra)
    return ColumnDataSource(columns, name=GRID_TABLE)


def _strip(source: Any, key: str, xs: list[str], answers: list[str]) -> Any:
    """One axis: its values across, a lane per answer."""
    from bokeh.models import FactorRange
    from bokeh.plotting import figure

    fig = figure(height=220, sizing_mode="stretch_width", x_range=FactorRange(factors=xs),
                 y_range=FactorRange(factors=answers), tools="tap,reset,save", x_axis_label=key, name="grid")
    renderer = fig.scatter(key, "answer", source=source, size=16, line_color="black",
                           fill_color=_colours_by_answer(answers))
    _hover(fig, renderer, [(key, f"@{{{key}}}")])
    return fig


def _heat_map(source: Any, keys: Sequence[str], xs: list[str], ys: list[str], facet: str) -> Any:
    """The first two axes as a heat map of the points of one ``facet`` (the other axes' values)."""
    from bokeh.models import CDSView, FactorRange, GroupFilter
    from bokeh.plotting import figure

    fig = figure(height=max(200, 40 * len(ys) + 90), sizing_mode="stretch_width", x_range=FactorRange(factors=xs),
                 y_range=FactorRange(factors=ys), tools="tap,reset,save", x_axis_label=keys[0],
                 y_axis_label=keys[1], title=facet or None, name=f"grid {facet}".strip())
    view = CDSView(filter=GroupFilter(column_name="facet", group=facet))
    renderer = fig.rect(keys[0], keys[1], 0.95, 0.95, source=source, view=view, line_color="white",
                        fill_color=_colours_by_answer(_factors(source.data["answer"])), legend_field="answer")
    fig.add_layout(fig.legend[0], "right")
    _hover(fig, renderer, [(key, f"@{{{key}}}") for key in keys])
    return fig


def _linked(text: Sequence[str], figures: list[Any], source: Any, points: Sequence[GridPoint],
            first: int | None = None) -> Any:
    """``text``, the figures, and below them the tapped point's header and trace panels; the point
    shown first is ``first``, else the first with a trace."""
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS
    from bokeh.models.widgets.markups import Div

    tables = _trace_tables(points)
    if first is None:
        first = next((i for i, k in enumerate(source.data["trace"]) if k >= 0), 0)
    shown = source.data["trace"][first]
    steps = ColumnDataSource(tables[shown] if shown >= 0 else {"t": []}, name=STEPS_TABLE)
    info = Div(text=source.data["header"][first], name=POINT_TEXT)
    source.selected.indices = [first]
    traces = [ColumnDataSource(table) for table in tables]
    source.selected.js_on_change("indices", CustomJS(args=dict(points=source, steps=steps, info=info, traces=traces),
                                                     code=_ON_TAP))
    header = Div(text=preformatted([*text, "", "Tap a point to show its trace below."]), name="answer")
    units = {name: unit for p in points if p.trace is not None for name, unit in state_units(p.trace).items()}
    panels = trace_panels(steps, units=units) if tables else []
    return column(header, *figures, info, *panels, sizing_mode="stretch_width")


def _trace_numbers(points: Sequence[GridPoint]) -> dict[int, int]:
    """Each distinct trace's number (points with one result share its trace), by ``id``."""
    numbers: dict[int, int] = {}
    for p in points:
        if p.trace is not None and id(p.trace) not in numbers:
            numbers[id(p.trace)] = len(numbers)
    return numbers


def _trace_tables(points: Sequence[GridPoint]) -> list[dict[str, list[Any]]]:
    """Each distinct trace's :func:`step_columns` and notes, in :func:`_trace_numbers` order, over
    the union of every trace's columns (those a trace lacks: NaN, or no text for a note)."""
    seen: dict[int, dict[str, list[Any]]] = {}
    for p in points:
        if p.trace is not None and id(p.trace) not in seen:
            seen[id(p.trace)] = {**step_columns(p.trace), **p.notes}
    names = list(dict.fromkeys(name for table in seen.values() for name in table))
    notes = {name for p in points for name in p.notes}
    return [{name: table.get(name) or ["" if name in notes else float("nan")] * len(table["t"]) for name in names}
            for table in seen.values()]


def _hover(fig: Any, renderer: Any, axes: list[tuple[str, str]]) -> None:
    from bokeh.models import HoverTool

    fig.add_tools(HoverTool(renderers=[renderer], tooltips=axes + [
        ("answer", "@answer"), ("seconds", "@seconds{0.000}"), ("reason", "@reason")]))


def _colours_by_answer(answers: list[str]) -> Any:
    from bokeh.transform import factor_cmap

    return factor_cmap("answer", [ANSWER_COLOURS.get(a, "#17becf") for a in answers], answers)


def _answers(points: Sequence[GridPoint]) -> list[str]:
    """The answers present, in :data:`ANSWER_ORDER`, then any other."""
    present = {p.answer for p in points}
    return [a for a in ANSWER_ORDER if a in present] + sorted(present - set(ANSWER_ORDER))


def _factors(values: Any) -> list[str]:
    """Distinct values in their first order (a grid's order)."""
    return list(dict.fromkeys(values))


def _facet(keys: Sequence[str], values: tuple[str, ...]) -> str:
    """The third and later axes' values of a point, as a heat map's title ("" with two axes or fewer)."""
    return ", ".join(f"{k} = {v}" for k, v in zip(keys[2:], values[2:]))
