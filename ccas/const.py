"""``const``: a fixed congestion window, optionally paced at window / min RTT.

The simplest ACK-clocked sender (thesis figure 4-3D): it keeps ``cwnd`` bytes beyond what was
acknowledged or detected lost. With ``pacing = true`` it also sends at most cwnd / R bytes per
step. There is no approximation: the encoding is the algorithm.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ccac.ccas.interface import CCA, FlowContext, FlowValues
from ccac.core.params import Param
from ccac.senders.interface import ConcreteSender, SenderStart


class ConstantWindow(CCA):
    name = "const"
    summary = "fixed cwnd (in BDP), optionally paced at cwnd / R"
    params = (
        Param("cwnd", 1, "congestion window", "BDP (C*R bytes)", minimum=Fraction(0), exclusive_minimum=True),
        Param("pacing", False, "also pace at cwnd / R bytes per step", kind="bool"),
    )

    def paced(self, params: dict[str, Any]) -> bool:
        return bool(params["pacing"])

    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        window = ctx.params["cwnd"] * ctx.C * ctx.R
        for t in range(ctx.T):
            ctx.add(ctx.cwnd[t] == window)
            if self.paced(ctx.params):
                ctx.add(ctx.rate[t] == window / ctx.R)
        return {}

    def check(self, f: FlowValues) -> list[str]:
        window = f.params["cwnd"] * f.C * f.R
        problems = [f"step {t}: cwnd {f.cwnd[t]} != {window}" for t in range(f.T) if f.cwnd[t] != window]
        if f.rate is not None:
            problems += [f"step {t}: rate {f.rate[t]} != {window / f.R}"
                         for t in range(f.T) if f.rate[t] != window / f.R]
        return problems

    def concrete(self, start: SenderStart) -> ConcreteSender:
        from ccac.senders.const import ConstantWindowSender

        return ConstantWindowSender(start)


ALGORITHM = ConstantWindow()
