"""What both pictures of a trace share, the static plot (:mod:`ccac.report.plot`) and the
interactive page (:mod:`ccac.report.html_page`): the state each CCA marks ``plotted``, one panel
per unit, and the colours of flows and state variables. Kept apart from both so that neither
imports the other's library."""

from __future__ import annotations

from ccac.ccas import CCAS
from ccac.ccas.interface import StateVar
from ccac.encode.trace import Trace

#: a colour per flow, and per CCA state variable in its panel (matplotlib's tab10, by hex, so
#: both libraries draw the same colours)
FLOW_COLOURS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f")
STATE_COLOURS = ("#17becf", "#ff7f0e", "#bcbd22", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def state_groups(trace: Trace) -> dict[str, list[tuple[int, StateVar]]]:
    """The (flow, variable) pairs to draw, grouped into one panel per unit (keyed ``state:unit``)."""
    groups: dict[str, list[tuple[int, StateVar]]] = {}
    for n, name in enumerate(trace.ccas):
        cca = CCAS.get(name)   # a CCA from a user's file is not in the library: no state panels
        for var in cca.state if cca is not None else ():
            if var.plotted and var.kind != "bool" and var.name in trace.symbols.series \
                    and trace.flow(var.name, n) is not None:
                groups.setdefault(f"state:{var.unit}", []).append((n, var))
    return groups
