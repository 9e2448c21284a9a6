"""How the cost of a query grows with the horizon: the yardstick of ``ccac bench --scaling``.

A fixed set of representative queries (:data:`CASES`: AIMD loss, a periodic Copa single-box
query, BBR, Vivace, ETC, two flows, and AIMD from a connection's start, which names a window and
so is answered window by window: :func:`ccac.analysis.window_search.answer`) is built and solved
at growing horizons. Where a query's
meaning depends on the minimum RTT, R grows with T (T = 10 R + 1: ten RTTs at 1, 2, 3, 4 steps
per RTT), so a longer trace is the same question at a finer time resolution; where it does
not, R stays and T grows. Each case's build and solve times are fitted to c * T^k by least
squares on their logarithms; k, the growth exponent, is what encoding work should lower.
An answer that runs out of time is kept as a lower bound on the time and left out of the fit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from ccac.core import deadline
from ccac.core.errors import CcacError
from ccac.problems.query import load_query
from ccac.solving.solve import Pipeline
from ccac.analysis.window_search import answer


@dataclass(frozen=True)
class Case:
    """A query and the (T, R) points it is measured at."""

    name: str
    what: str
    points: tuple[tuple[int, int | None], ...]  # (T, R); R None: the query's own


def finer(*Rs: int) -> tuple[tuple[int, int], ...]:
    """Ten RTTs at R steps per RTT: T = 10 R + 1."""
    return tuple((10 * R + 1, R) for R in Rs)


def longer(*Ts: int) -> tuple[tuple[int, None], ...]:
    """Longer traces at the query's own R."""
    return tuple((T, None) for T in Ts)


CASES: tuple[Case, ...] = (
    Case("aimd_premature_loss", "AIMD, loss below the fluid threshold", finer(1, 2, 3, 4)),
    Case("copa_low_utilization_single_box", "Copa, single box, periodic", finer(1, 2, 3, 4)),
    Case("bbr_low_utilization", "BBR, periodic (T - 1 whole cycles)", longer(9, 17, 25, 33, 41)),
    Case("vivace_negative_gradient_decrease", "Vivace-Latency (R = 2)", longer(10, 20, 30, 40)),
    Case("etc_standing_queue", "ETC, periodic", longer(9, 19, 29, 39)),
    Case("copa_fair_equal_jitter", "two Copa flows, periodic", finer(1, 2, 3, 4)),
    Case("aimd_cold_loss_below_buffer", "AIMD from a connection's start, window by window", longer(50, 100, 200, 400)),
    Case("bbr_cold_unequal_jitter_starvation", "two BBR flows from a connection's start, window by window",
         longer(50, 100, 200, 400)),
)


# Horizons for building alone (``--build-only``): each case at its own R, T up to 1001.
BUILD_HORIZONS = (101, 201, 501, 1001)


@dataclass
class Point:
    T: int
    R: int | None
    answer: str
    build: float
    solve: float
    note: str = ""


@dataclass
class Measured:
    case: Case
    points: list[Point] = field(default_factory=list)

    def counted(self, which: str) -> list[Point]:
        """The points that measure ``which``: solve time of the answered ones; build time of
        every point whose formula was built completely (a solver timeout comes after that)."""
        if which == "solve":
            return [p for p in self.points if p.answer in ("sat", "unsat")]
        return [p for p in self.points if p.answer != "invalid" and p.build > 0
                and not p.note.startswith("timeout: building")]

    def exponent(self, which: str) -> float | None:
        """The least-squares k of time ~ c * T^k over the counted points (None: fewer than 2)."""
        xs, ys = [], []
        for p in self.counted(which):
            seconds = getattr(p, which)
            if seconds > 0:
                xs.append(math.log(p.T))
                ys.append(math.log(seconds))
        if len(xs) < 2 or max(xs) == min(xs):
            return None
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def measure(case: Case, timeout: float | None, solver: str = "z3",
            points: tuple[tuple[int, int | None], ...] | None = None,
            encoding: str = "pairs") -> Measured:
    """Build and solve ``case`` at each of its points (or the given ones). The first point is
    built once untimed first, so that its build time does not include the process's warm-up."""
    out = Measured(case)
    try:
        Pipeline(load_query(case.name, overrides(case.name, *(points or case.points)[0])), solver, encoding).build()
    except CcacError:
        pass  # reported with the point below
    for T, R in points or case.points:
        try:
            query = load_query(case.name, overrides(case.name, T, R))
            result = answer(query, solver, timeout, encoding=encoding)
        except CcacError as e:
            out.points.append(Point(T, R, "invalid", 0.0, 0.0, str(e)))
            continue
        note = result.reason or "; ".join(result.violations or [])
        out.points.append(Point(T, R, result.answer, result.build_seconds, result.solve_seconds, note))
    return out


def measure_build(case: Case, timeout: float | None, encoding: str = "pairs",
                  horizons: tuple[int, ...] = BUILD_HORIZONS) -> Measured:
    """Build ``case`` (no solving) at each horizon at its own R: answer "built", or "timeout"
    (the time is then a lower bound) or "invalid" (a message in ``note``)."""
    out = Measured(case)
    for T in horizons:
        start = time.perf_counter()
        try:
            with deadline.time_limit(timeout):
                Pipeline(load_query(case.name, overrides(case.name, T, None)), encoding=encoding).build()
        except deadline.TimeLimit as e:
            out.points.append(Point(T, None, "timeout", time.perf_counter() - start, 0.0, e.reason))
            continue
        except CcacError as e:
            out.points.append(Point(T, None, "invalid", 0.0, 0.0, str(e)))
            continue
        out.points.append(Point(T, None, "built", time.perf_counter() - start, 0.0))
    return out


def overrides(name: str, T: int, R: int | None) -> list[str]:
    """``--set`` values for query ``name`` at horizon T and, if R is given, at R steps per RTT.

    A finer resolution is the same question only if every duration in steps scales with R: the
    jitter bounds (the network's and each flow's box), each flow's own RTT, the timeout clock,
    and the MSS (bytes: the link serves C bytes per step, so one RTT carries R times as many).
    The query's own R must divide the new one."""
    out = [f"network.T={T}"]
    if R is None:
        return out
    base = load_query(name)
    net = base.network
    if R % net.R:
        raise CcacError(f"R = {R} is not a multiple of the query's own R = {net.R}", name)
    k = R // net.R
    out += [f"network.R={R}", f"network.D={net.D * k}", f"network.rto={net.rto * k}"]
    if net.alpha is not None:
        out.append(f"network.alpha={net.alpha * k}")
    for n, path in enumerate(net.paths):
        out += [f"flow.{n}.D={path.D * k}", f"flow.{n}.R={path.R * k}"]
    return out


def finer_horizon(name: str, R: int) -> int:
    """The query's own horizon at R steps per RTT: the same number of RTTs, (T - 1) R / R_q + 1
    steps (so a periodic query's period stays a whole number of its clocks)."""
    base = load_query(name)
    if R % base.network.R:
        raise CcacError(f"R = {R} is not a multiple of the query's own R = {base.network.R}", name)
    return (base.network.T - 1) * (R // base.network.R) + 1


def plot(results: list[Measured], path: str | Path) -> None:
    """Build and solve time against T, log-log, one line per case; a hollow marker is a point
    not answered in time (its time a lower bound)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharex=True)
    for ax, which, title in zip(axes, ("build", "solve"), ("building the formula", "solving")):
        for m in results:
            counted = m.counted(which)
            k = m.exponent(which)
            label = f"{m.case.name}" + (f" (k = {k:.2f})" if k is not None else "")
            line = ax.plot([p.T for p in counted], [max(getattr(p, which), 1e-4) for p in counted],
                           marker="o", label=label)[0]
            if which == "solve":  # unanswered points: hollow, at the time spent (a lower bound)
                out = [p for p in m.points if p.answer == "unknown" and p.solve > 0]
                ax.plot([p.T for p in out], [p.solve for p in out], linestyle="none", marker="o",
                        markerfacecolor="none", color=line.get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("horizon T (steps)")
        ax.set_ylabel("seconds")
        ax.set_title(title)
        ax.grid(True, which="both", color="0.9")
    axes[1].legend(fontsize=7, loc="upper left")
    fig.savefig(path, dpi=130)
