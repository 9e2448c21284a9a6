"""Counterexample traces: exact values of every named quantity, and ways to read them.

A :class:`Trace` holds the same names a query uses (``A``, ``S_f``, ``cwnd``, each CCA's
state, the constants), each value an exact :class:`~fractions.Fraction` (or bool). It prints
as a per-step table, converts to rows, pandas, CSV and JSON (exact rational string plus float),
and computes the queueing-delay range the way the model defines it.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, overload

from ccac.encode.expr import Series, Symbols
from ccac.encode.network import Network
from ccac.core.params import approximate, rounded_text

#: the per-flow series every trace has, for every flow (a query's answer, a trace read back
#: from JSON, a replayed or played run); the others may be missing: ``rate`` (a CCA that does
#: not pace), ``Lnc_f`` (no non-congestive loss), ``So_f`` (no jitter box), a CCA's state
EveryFlowSeries = Literal["A_f", "S_f", "L_f", "Ld_f", "cwnd", "timeout"]


@dataclass
class Trace:
    network: Network
    ccas: list[str]
    symbols: Symbols
    periodic: bool = False  # one period of a run that repeats forever (a periodic query's answer)

    # ------------------------------------------------------------------ access
    @property
    def T(self) -> int:
        return self.network.T

    @property
    def flows(self) -> int:
        return self.network.flows

    def constant(self, name: str) -> Any:
        return self.symbols.constants.get(name)

    def total(self, name: str) -> list[Fraction]:
        return self.symbols.series[name].values

    @overload
    def flow(self, name: EveryFlowSeries, n: int) -> list[Any]: ...
    @overload
    def flow(self, name: str, n: int) -> list[Any] | None: ...

    def flow(self, name: str, n: int) -> list[Any] | None:
        series = self.symbols.series.get(name)
        return None if series is None else series.values[n]

    def service_bounds(self) -> tuple[list[Fraction], list[Fraction]]:
        """The token bucket's bounds on the service curve at each step (thesis 4.2.1): the most
        the server can have served, C t - W(t), and the least, C (t - D) - W(t - D) (W(0) before
        the trace starts), in exact bytes."""
        C, D, W = self.network.C, self.network.D, self.total("W")
        steps = range(self.T)
        return [C * t - W[t] for t in steps], [C * (t - D) - W[max(t - D, 0)] for t in steps]

    def recorded(self, name: str, n: int) -> list[Any]:
        """:meth:`flow` where the caller knows the trace records ``name`` for flow ``n``
        (``So_f`` of a flow with a jitter box of its own, ``Lnc_f`` on a lossy path)."""
        values = self.flow(name, n)
        assert values is not None, f"the trace records no {name} for flow {n}"
        return values

    def delay_range(self, t: int, flow: int | None = None) -> tuple[int, int | None]:
        """Queueing delay of the byte served at step t (see :func:`delay_range`); with ``flow``,
        that flow's own reading through its jitter box (its ACKs ``So_f`` against its admitted
        bytes). A periodic trace's earlier periods are the trace itself, shifted by one
        period's bytes, so there the delay is read on the run with :data:`PAST_PERIODS` earlier
        periods before it."""
        return self.delay_ranges(flow, [t])[0]

    def delay_ranges(self, flow: int | None = None, steps: list[int] | None = None) -> list[tuple[int, int | None]]:
        """:meth:`delay_range` at each of ``steps`` (all of them by default), the curves read once."""
        if flow is None:
            served, A, L = self.total("S"), self.total("A"), self.total("L")
        else:
            served, A, L = self.recorded("So_f", flow), self.flow("A_f", flow), self.flow("L_f", flow)
        admitted = [a - lost for a, lost in zip(A, L)]
        steps = list(range(self.T)) if steps is None else steps
        if not self.periodic:
            return [delay_range(served, admitted, t) for t in steps]
        past_served, past_admitted = (repeat_period(curve, PAST_PERIODS, 0) for curve in (served, admitted))
        return [delay_range(past_served, past_admitted, t + PAST_PERIODS * (self.T - 1)) for t in steps]

    @classmethod
    def from_json(cls, data: dict[str, Any], network: Network, ccas: list[str]) -> Trace:
        """A trace written by :meth:`to_json` (exact values), on ``network`` (the query's)."""
        symbols = Symbols()
        symbols.constants.update({k: _unpair(v) for k, v in data["constants"].items()})
        for name, values in data["series"].items():
            if values and (values[0] is None or isinstance(values[0], list)):  # per flow
                rows = [[_unpair(x) for x in row] if row is not None else None for row in values]
                symbols.series[name] = Series(name, rows, 2, {})
            else:
                symbols.series[name] = Series(name, [_unpair(x) for x in values], 1)
        return cls(replace(network, T=int(data["T"])), ccas, symbols, bool(data.get("periodic")))

    # ------------------------------------------------------------------ tabular forms
    def columns(self) -> list[tuple[str, list[Any]]]:
        """Every series as (column name, values by step); per-flow names get ``[n]``."""
        cols: list[tuple[str, list[Any]]] = []
        for name, series in self.symbols.series.items():
            if series.dims == 1:
                cols.append((name, series.values))
            else:
                for n, row in enumerate(series.values):
                    if row is not None:
                        cols.append((f"{name}[{n}]", row))
        return cols

    def rows(self) -> list[dict[str, Any]]:
        cols = self.columns()
        out = []
        for t, (low, high) in enumerate(self.delay_ranges()):
            row: dict[str, Any] = {"t": t}
            row.update({name: values[t] for name, values in cols})
            row["delay_min"], row["delay_max"] = low, high
            out.append(row)
        return out

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame([{k: _float(v) for k, v in row.items()} for row in self.rows()]).set_index("t")

    def paths(self) -> list[dict[str, Any]]:
        """Each flow's own part of the path: jitter box D, non-congestive loss rate eta, R,
        whether it moves whole packets, how it starts, and with a cold start its opening step."""
        return [{k: v for k, v in vars(self.network.path(n)).items() if v is not None} for n in range(self.flows)]

    def write_csv(self, path: str | Path) -> None:
        """One row per step, exact values; with ``[[flow]]`` tables each flow's own D, eta and R
        are repeated in columns ``D_own[n]``, ``eta[n]``, ``R[n]``."""
        rows = self.rows()
        if self.network.paths:
            for row in rows:
                for n, p in enumerate(self.paths()):
                    row.update({f"D_own[{n}]": p["D"], f"eta[{n}]": p["eta"], f"R[{n}]": p["R"]})
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: _exact(v) for k, v in row.items()})

    def to_json(self) -> dict[str, Any]:
        series: dict[str, Any] = {}
        for name, s in self.symbols.series.items():
            if s.dims == 1:
                series[name] = [_pair(x) for x in s.values]
            else:
                series[name] = [[_pair(x) for x in row] if row is not None else None for row in s.values]
        constants = {k: _pair(v) for k, v in self.symbols.constants.items()}
        delay = [dict(zip(("min", "max"), reading)) for reading in self.delay_ranges()]
        paths = [{k: _pair(v) for k, v in p.items()} for p in self.paths()]
        return {"T": self.T, "periodic": self.periodic, "flows": self.flows, "ccas": self.ccas,
                "constants": constants, "paths": paths, "series": series, "delay": delay}

    def table(self, max_columns: int | None = None) -> str:
        """A readable per-step table (floats rounded for the eye; exact values are in JSON/CSV)."""
        rows = self.rows()
        headers = list(rows[0])
        if max_columns is not None:
            headers = headers[:max_columns]
        cells = [[_show(row[h]) for h in headers] for row in rows]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
        lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(cell, widths)) for cell in cells]
        consts = ", ".join(f"{k} = {_show(v)}" for k, v in self.symbols.constants.items())
        return f"{consts}\n" + "\n".join(lines)


PAST_PERIODS = 2  # earlier periods a periodic trace's delay readings look into


def repeat_period(values: list[Any], before: int, after: int, shifts: bool = True) -> list[Any]:
    """One period of a periodic trace (its T = P + 1 values, the last being the next period's
    first) with ``before`` earlier and ``after`` later periods around it: the value at step
    t + j*P is the period's at t, plus j times its growth over the period if it is a byte
    position (``shifts``), unchanged otherwise (windows, rates, flags)."""
    P = len(values) - 1
    if not shifts:
        return [values[t] for _ in range(before + after + 1) for t in range(P)] + [values[P]]
    growth = values[P] - values[0]
    return [values[t] + j * growth for j in range(-before, after + 1) for t in range(P)] + [values[P] + after * growth]


def delay_range(served: list[Fraction], admitted: list[Fraction], t: int) -> tuple[int, int | None]:
    """Queueing delay of the byte served at step t, as the model bounds it (figure 5-1B):
    at least every k with S[t] <= (A-L)[t-k], at most every k with S[t] > (A-L)[t-k];
    the upper end is None when nothing admitted inside the trace was served yet."""
    low = max(k for k in range(t + 1) if served[t] <= admitted[t - k])
    above = [k for k in range(t + 1) if served[t] > admitted[t - k]]
    return low, (min(above) if above else None)


def _unpair(v: Any) -> Any:
    """A value written by :func:`_pair`: its exact rational, or the bool / None itself."""
    if isinstance(v, dict):
        return Fraction(v["exact"])
    return v


def _float(v: Any) -> Any:
    return approximate(v) if isinstance(v, Fraction) else v


def _exact(v: Any) -> Any:
    if isinstance(v, Fraction):
        return str(v)
    return v if v is not None else ""


def _pair(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, Fraction)):
        near = approximate(v)
        return {"exact": str(Fraction(v)), "float": near if math.isfinite(near) else None}
    return v


def _show(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "."
    if isinstance(v, Fraction):
        return rounded_text(v)
    return str(v)


__all__ = ["Trace", "Series", "delay_range"]
