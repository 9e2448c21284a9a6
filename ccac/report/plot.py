"""Draw a counterexample trace the way the thesis does (figures 4-3 and 6-5).

The top panel is a time-sequence graph: cumulative arrivals ``A`` and admitted bytes ``A - L``,
the service curve ``S`` and its bounds ``C*t - W(t)`` (upper) and ``C*(t-D) - W(t-D)`` (lower)
in black, plus the loss threshold ``C*t - W(t) + buffer`` when the buffer is finite. Steps where
loss happened and timeouts fired are marked. With several flows each flow's ``A_f`` and ``S_f``
get their own colour, and a flow with its own jitter box (``[[flow]]`` D > 0) also its observed
curve ``So_f`` (the ACKs its sender has seen). Below it: with several flows, the bytes each flow
got served per step, stacked against the link rate (who gets the link); ``cwnd`` per flow, the
pacing rate per flow (only when some flow paces), the queueing-delay range of the byte served
at each step, with each boxed flow's own range (queueing plus its box) in its colour, and the
CCA state variables each CCA marks ``plotted`` (one panel per unit, e.g. ETC's rates, Copa's
delay estimates).

Values exist only at the integer steps t = 0 .. T-1; the lines just join the samples (markers).
Everything is drawn on a bare :class:`~matplotlib.figure.Figure` with an Agg canvas, so it works
headless and leaves pyplot's global state alone.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import MaxNLocator, MultipleLocator

from ccac.ccas.interface import StateVar
from ccac.core.errors import CcacError
from ccac.core.params import approximate, rounded_text
from ccac.encode.trace import Trace
from ccac.report.panels import FLOW_COLOURS, STATE_COLOURS, state_groups

FORMATS = (".png", ".svg", ".pdf")
ARRIVAL, ADMITTED, SERVICE, BOUND = "tab:blue", "#7fb2e0", "tab:red", "black"
FLOW_MARKERS = ("o", "s", "^", "v", "D", "P", "X")
LOSS, TIMEOUT, DELAY = "crimson", "darkorange", "teal"
MARK: dict[str, Any] = dict(marker="o", markersize=3)


def check_format(path: str | Path, where: str = "--plot") -> None:
    """A figure is written as PNG, SVG or PDF, chosen by the file's extension."""
    if Path(path).suffix.lower() not in FORMATS:
        raise CcacError(f"unsupported plot format {Path(path).suffix or '(no extension)'!r} for "
                        f"{str(path)!r}; use .png, .svg or .pdf", where)


def plot_trace(trace: Trace, path: str | Path | None = None, title: str = "",
               period: int | None = None) -> Figure:
    """Draw ``trace``; save it to ``path`` (format from the extension) if given; return the Figure.
    ``period``: the trace repeats with this period (steps); each period's start is marked."""
    if path is not None:
        check_format(path)
    paced = [n for n in range(trace.flows) if _flow(trace, "rate", n) is not None]
    states = state_groups(trace)
    kinds = (["cumulative"] + (["share"] if trace.flows > 1 else []) + ["cwnd"]
             + (["rate"] if paced else []) + ["delay"] + list(states))
    heights = {"cumulative": 3.2, "share": 1.5, "cwnd": 1.3, "rate": 1.3, "delay": 1.5} | {unit: 1.3 for unit in states}
    fig = Figure(figsize=(10, 1.2 + sum(heights[k] for k in kinds)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(kinds), 1, sharex=True,
                        gridspec_kw={"height_ratios": [heights[k] for k in kinds]})
    panels = dict(zip(kinds, axes))

    _cumulative(panels["cumulative"], trace)
    if "share" in panels:
        _share(panels["share"], trace)
    _per_flow(panels["cwnd"], trace, "cwnd", range(trace.flows), "cwnd (bytes)")
    if paced:
        _per_flow(panels["rate"], trace, "rate", paced, "pacing rate\n(bytes/step)")
    _delay(panels["delay"], trace)
    for unit, variables in states.items():
        _state(panels[unit], trace, unit, variables)
    _time_axes(list(axes), trace)
    if period is not None:
        for start in range(period, trace.T - 1, period):
            for ax in axes:
                ax.axvline(start, color="0.35", lw=1.0, ls=(0, (6, 3)))
        axes[0].text(period, 1.0, " next period", transform=axes[0].get_xaxis_transform(),
                     fontsize=8, color="0.35", va="bottom")

    fig.suptitle(title or "CCAC trace", fontsize=12, fontweight="bold")
    fig.text(0.01, 0.005, _caption(trace), fontsize=8, color="dimgray", ha="left", va="bottom",
             wrap=True)
    bottom = 0.05 if trace.network.paths else 0.035  # room for the caption's per-flow line
    engine = fig.get_layout_engine()
    assert isinstance(engine, ConstrainedLayoutEngine)   # the figure is made with layout="constrained"
    engine.set(h_pad=0.06, rect=(0, bottom, 1, 1 - bottom))
    if path is not None:
        fig.savefig(path, dpi=150)
    return fig


def plot_replay(replay: Any, path: str | Path | None = None) -> Figure:
    """Draw a trace and its packet replay (:mod:`ccac.testbed.replay`) on one figure: each flow's
    sending and service curves, its cwnd, and the least queueing delay at each step. The trace
    is dashed, the packet run solid, one colour per flow; the steps the query's conditions
    were read on are shaded (a periodic trace's last repetition)."""
    if path is not None:
        check_format(path)
    trace, run = replay.trace, replay.concrete
    fig = Figure(figsize=(10, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(3, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.6, 1.3]})
    for n in range(trace.flows):
        colour = FLOW_COLOURS[n % len(FLOW_COLOURS)]
        for tr, style, side in ((trace, "--", "trace"), (run, "-", "replay")):
            label = f"flow {n}, {side}"
            axes[0].plot(_floats(tr.flow("A_f", n)), ls=style, color=colour, alpha=0.5, label=f"A_f {label}")
            axes[0].plot(_floats(tr.flow("S_f", n)), ls=style, color=colour, marker=".", label=f"S_f {label}")
            axes[1].plot(_floats(tr.flow("cwnd", n)), ls=style, color=colour, marker=".", label=label)
    for tr, style, side in ((trace, "--", "trace"), (run, "-", "replay")):
        axes[2].plot([low for low, _ in tr.delay_ranges()], ls=style, color=DELAY,
                     marker=".", label=side)
    first, last = replay.window
    for ax in axes:
        if (first, last) != (0, trace.T - 1):
            ax.axvspan(first, last, color="0.92", zorder=0)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    axes[0].set_ylabel("cumulative bytes")
    axes[1].set_ylabel("cwnd (bytes)")
    axes[2].set_ylabel("queueing delay\n(steps, at least)")
    _time_axes(list(axes), trace)
    verdict = {True: "finding reproduced", False: "finding NOT reproduced", None: "no verdict"}[replay.reproduced]
    fig.suptitle(f"{replay.query.name}: trace (dashed) vs packet replay (solid), {verdict}",
                 fontsize=12, fontweight="bold")
    if path is not None:
        fig.savefig(path, dpi=150)
    return fig


# ---------------------------------------------------------------------------------- panels
def _cumulative(ax: Axes, trace: Trace) -> None:
    """Arrival, admitted and service curves, the service bounds and the loss threshold."""
    net, t = trace.network, list(range(trace.T))
    A, S, L = (_floats(trace.total(x)) for x in "ASL")
    upper, lower = (_floats(bound) for bound in trace.service_bounds())
    admitted = [a - lost for a, lost in zip(A, L)]

    ax.plot(t, A, color=ARRIVAL, lw=2, label="$A$ arrivals", **MARK)
    ax.plot(t, admitted, color=ADMITTED, lw=1.5, ls="--", label="$A - L$ admitted", **MARK)
    ax.plot(t, S, color=SERVICE, lw=2, label="$S$ service", **MARK)
    ax.plot(t, upper, color=BOUND, lw=1, label="$Ct - W(t)$ service upper bound")
    ax.plot(t, lower, color=BOUND, lw=1, ls="-.", label="$C(t-D) - W(t-D)$ service lower bound")
    buffer = trace.constant("buffer")
    if net.finite_buffer and buffer is not None:
        ax.plot(t, [u + approximate(buffer) for u in upper], color="dimgray", lw=1, ls="--",
                label=f"$Ct - W(t) + \\beta$ loss threshold ($\\beta$ = {_num(buffer)} B)")
        low = net.buffer_min_bytes()
        if net.buffer_min is not None and low is not None and low != buffer:
            ax.plot(t, [u + approximate(low) for u in upper], color="dimgray", lw=1, ls=":",
                    label=f"loss allowed above (buffer_min = {_num(low)} B)")

    if trace.flows > 1:
        for n in range(trace.flows):
            style = _flow_style(trace, n)
            ax.plot(t, _floats(trace.flow("A_f", n)), label=f"$A_{{{n}}}$ flow {n} arrivals", **style)
            ax.plot(t, _floats(trace.flow("S_f", n)), ls=":", label=f"$S_{{{n}}}$ flow {n} service",
                    **style)
            box = trace.network.path(n).D
            if box > 0:
                ax.plot(t, _floats(trace.flow("So_f", n)), ls="--",
                        label=f"$S^o_{{{n}}}$ flow {n} ACKs seen (own box D = {box})", **style)

    losses = [i for i in t[1:] if L[i] > L[i - 1]]
    if losses:  # on the admitted curve: loss happens where it touches the loss threshold
        ax.scatter(losses, [admitted[i] for i in losses], s=70, marker="X", color=LOSS, zorder=5,
                   edgecolor="white", linewidth=0.5,
                   label="loss at step t ($L$ increases; allowed once\n$A - L$ reaches the threshold of step t-1)")
    timeouts = [(i, n) for n in range(trace.flows) for i in t if _timeout(trace, n, i)]
    if timeouts:
        curve = (lambda n: A) if trace.flows == 1 else (lambda n: _floats(trace.flow("A_f", n)))
        ax.scatter([i for i, _ in timeouts], [curve(n)[i] for i, n in timeouts], s=60, marker="D",
                   facecolor="none", edgecolor=TIMEOUT, linewidth=1.8, zorder=6,
                   label="timeout" + ("" if trace.flows == 1 else " (on that flow's $A_f$)"))
    ax.set_ylabel("cumulative bytes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)


def _share(ax: Axes, trace: Trace) -> None:
    """Bytes each flow got served at the bottleneck in each step, stacked, against the link rate."""
    t = list(range(1, trace.T))
    bottom = [0.0] * len(t)
    for n in range(trace.flows):
        S = _floats(trace.flow("S_f", n))
        got = [S[i] - S[i - 1] for i in t]
        ax.bar(t, got, bottom=bottom, width=0.6, color=_flow_style(trace, n)["color"], alpha=0.8,
               label=f"flow {n} ({trace.ccas[n]})")
        bottom = [b + g for b, g in zip(bottom, got)]
    ax.axhline(approximate(trace.network.C), color=BOUND, lw=1, ls="--", label="link rate C")
    ax.set_ylabel("served per step\n(bytes)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)


def _per_flow(ax: Axes, trace: Trace, name: str, flows: Sequence[int], ylabel: str) -> None:
    """One line per flow for a per-flow series such as ``cwnd`` or ``rate``."""
    t = list(range(trace.T))
    for n in flows:
        values = _flow(trace, name, n)
        ax.plot(t, _floats(values), label=f"{name} flow {n}", **_flow_style(trace, n))
        ticks = [i for i in t if _timeout(trace, n, i)]
        if name == "cwnd" and ticks:
            assert values is not None   # every trace has cwnd
            ax.scatter(ticks, [approximate(values[i]) for i in ticks], s=50, marker="D",
                       facecolor="none", edgecolor=TIMEOUT, linewidth=1.8, zorder=5)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)


def _state(ax: Axes, trace: Trace, key: str, variables: list[tuple[int, StateVar]]) -> None:
    """A CCA's own state, one line per (flow, variable): colour per variable, marker per flow."""
    t, unit = list(range(trace.T)), key.removeprefix("state:")
    names = list(dict.fromkeys(var.name for _, var in variables))
    for n, var in variables:
        values = [float("nan") if v is None else approximate(v) for v in _flow(trace, var.name, n) or []]
        label = var.name if trace.flows == 1 else f"{var.name} flow {n}"
        ax.plot(t, values, color=STATE_COLOURS[names.index(var.name) % len(STATE_COLOURS)],
                marker=FLOW_MARKERS[n % len(FLOW_MARKERS)], markersize=3, lw=1.3,
                ls=("-", "--", ":", "-.")[n % 4], label=label)
    if unit == "bytes/step":
        ax.axhline(approximate(trace.network.C), color=BOUND, lw=0.8, ls="--", label="C link rate")
    ax.set_ylabel(f"CCA state\n({unit})" if unit else "CCA state")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)


def _delay(ax: Axes, trace: Trace) -> None:
    """Bars from the least to the greatest queueing delay the model allows at each step."""
    ranges = trace.delay_ranges()
    boxed = [n for n in range(trace.flows) if trace.network.path(n).D > 0]
    # each boxed flow's own reading, drawn beside the shared one
    own = {n: trace.delay_ranges(n) for n in boxed}
    every = ranges + [r for readings in own.values() for r in readings]
    top = max([hi for _, hi in every if hi is not None] + [lo for lo, _ in every]) + 1.2
    closed = [(i, lo, hi) for i, (lo, hi) in enumerate(ranges) if hi is not None]
    opened = [(i, lo) for i, (lo, hi) in enumerate(ranges) if hi is None]
    if closed:
        ax.bar([i for i, _, _ in closed], [hi - lo for _, lo, hi in closed],
               bottom=[lo for _, lo, _ in closed], width=0.5, color=DELAY, alpha=0.55,
               edgecolor=DELAY, label="delay range [lo, hi]")
    if opened:
        ax.bar([i for i, _ in opened], [top - lo for _, lo in opened],
               bottom=[lo for _, lo in opened], width=0.5, color="none", edgecolor=DELAY,
               hatch="///", linewidth=1, label="at least lo (no upper end in trace)")
        ax.scatter([i for i, _ in opened], [top] * len(opened), marker="^", s=45,
                   color=DELAY, clip_on=False, zorder=5)
    for k, n in enumerate(boxed):
        shown = [(i, lo, hi if hi is not None else top) for i, (lo, hi) in enumerate(own[n])]
        ax.bar([i + 0.3 + 0.15 * k for i, _, _ in shown], [hi - lo for _, lo, hi in shown],
               bottom=[lo for _, lo, _ in shown], width=0.12, color=_flow_style(trace, n)["color"],
               alpha=0.8, label=f"flow {n}: its sender's delay range (queue + own box)")
    ax.set_ylim(0 if min(lo for lo, _ in ranges) >= 0 else None, top + 0.6)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    ax.set_ylabel("queueing delay\n(steps)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)


def _time_axes(axes: list[Axes], trace: Trace) -> None:
    """Steps on x, vertical grid lines every R steps (one RTT; thinned for long traces), RTTs on top."""
    R, T = trace.network.R, trace.T
    every = R * max(1, -(-T // (R * 40)))
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=min(T, 20)))
        ax.xaxis.set_minor_locator(MultipleLocator(every))
        ax.grid(True, axis="x", which="minor", color="0.82", lw=0.8)
        ax.grid(True, axis="y", color="0.93", lw=0.6)
        ax.tick_params(axis="x", which="minor", length=0)
        ax.set_axisbelow(True)
        ax.set_xlim(-0.4, T - 0.6)
    rtts = "1 RTT" if every == R else f"{every // R} RTTs"
    axes[-1].set_xlabel(f"time t (steps; grey lines every {every} step{'s' if every > 1 else ''} = {rtts})")

    def to_rtts(x: Any) -> Any:   # x: the array of step positions matplotlib converts
        return x / R

    def to_steps(x: Any) -> Any:
        return x * R

    top = axes[0].secondary_xaxis("top", functions=(to_rtts, to_steps))
    top.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=min(T // R + 1, 12)))
    top.set_xlabel(f"time (RTTs; 1 RTT = R = {R} step{'s' if R > 1 else ''})", fontsize=9)


# ---------------------------------------------------------------------------------- helpers
def _caption(trace: Trace) -> str:
    net = trace.network
    buffer = trace.constant("buffer")
    parts = [f"C = {_num(net.C)} B/step", _steps("R", net.R), _steps("D", net.D), f"T = {net.T}",
             f"buffer = {'inf' if buffer is None else _num(buffer) + ' B'}",
             f"alpha = {_num(trace.constant('alpha'))} B", f"dupacks = {_num(trace.constant('dupacks'))} B",
             f"flows = {trace.flows} ({', '.join(dict.fromkeys(trace.ccas))})"]
    own = [f"flow {n}: {trace.ccas[n]}, own box D = {p.D}, eta = {_num(p.eta)}, R = {p.R}"
           for n, p in enumerate(trace.network.paths)]
    return ("Values exist only at integer steps t = 0..T-1 (markers); lines merely join them. "
            "Bytes (B) are scaled so the link serves C bytes per step.\n"
            + ",  ".join(p.replace(" ", "\u00a0") for p in parts)
            + ("\n" + ";  ".join(own) if own else ""))


def _flow_style(trace: Trace, n: int) -> dict[str, Any]:
    """Colour and marker of flow n; earlier flows are drawn wider so identical curves stay visible."""
    wider = (trace.flows - 1 - n) / max(trace.flows - 1, 1)
    return dict(color=FLOW_COLOURS[n % len(FLOW_COLOURS)], marker=FLOW_MARKERS[n % len(FLOW_MARKERS)],
                markersize=3 + 2 * wider, lw=1.2 + 2 * wider, alpha=0.9)


def _steps(name: str, n: int) -> str:
    return f"{name} = {n} step{'' if n == 1 else 's'}"


def _flow(trace: Trace, name: str, n: int) -> list[Any] | None:
    return trace.flow(name, n) if name in trace.symbols.series else None


def _timeout(trace: Trace, n: int, t: int) -> bool:
    values = _flow(trace, "timeout", n)
    return bool(values and values[t])


def _floats(values: Sequence[Any] | None) -> list[float]:
    return [approximate(v) for v in values or []]


def _num(v: Any) -> str:
    return "?" if v is None else rounded_text(Fraction(v))


__all__ = ["plot_trace", "plot_replay", "check_format", "FORMATS"]
