"""What both pictures of a trace draw from the CCAs, the static plot (:mod:`ccac.report.plot`)
and the interactive page (:mod:`ccac.report.html_page`): the state each CCA marks ``plotted``,
one panel per unit. Kept apart from both so that neither imports the other's library."""

from __future__ import annotations

from ccac.ccas import CCAS
from ccac.ccas.interface import StateVar
from ccac.encode.trace import Trace


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
