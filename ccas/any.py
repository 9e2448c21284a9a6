"""``any``: no congestion control at all; the solver picks every cwnd and pacing rate.

Useful to ask what the path alone allows (e.g. the most it can serve in T steps), independent
of any algorithm. With cwnd and rate free, any non-decreasing arrival curve is possible.
"""

from __future__ import annotations

from typing import Any

from ccac.ccas.interface import CCA, FlowContext, FlowValues


class AnySender(CCA):
    name = "any"
    summary = "no constraints: the sender may send any non-decreasing arrival curve"

    def paced(self, params: dict[str, Any]) -> bool:
        return True

    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        return {}

    def check(self, f: FlowValues) -> list[str]:
        return []


ALGORITHM = AnySender()
