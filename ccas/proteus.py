"""PCC Proteus (Meng et al., SIGCOMM 2020): what Proteus-P, -S and -H share (no ``ALGORITHM``:
the three modes are the modules ``proteus_p``, ``proteus_s`` and ``proteus_h``).

What is modelled (paper section in brackets)
--------------------------------------------
* Utilities [4.1, 4.3, 4.4]: Proteus-P ``u_P = x^t - b*x*max(0, dRTT/dt) - c*x*L`` (Vivace's
  utility with negative RTT gradients ignored), Proteus-S ``u_S = u_P - d*x*sigma(RTT)`` with
  sigma the population standard deviation of the MI's RTT samples in seconds, Proteus-H
  ``u_H = u_P`` if ``x < threshold`` else ``u_S``, evaluated per MI at that MI's rate.
  Defaults t = 0.9, b = 900, c = 11.35 [4.1, 6], d = 1500 per second [6].
* Rate control [3, 4.3: "we adopt the rate control algorithm from PCC Vivace"]: Vivace's
  gradient step and its readings (``ccas/vivace.py``: MIs of one RTT as the sender estimates
  it, amplifier, change boundary, MI timer, waiting rate), and the majority rule [5]: each round
  tries 3 pairs r(1+eps)/r(1-eps), each in a solver-chosen order, and moves in the majority
  direction.
* Noise tolerance [5]: the per-MI regression-error tolerance (if |gradient| < RMS regression
  residual / MI duration, gradient and deviation count as 0; allowed wherever the per-packet
  samples' residual can exceed |g| M, which with many samples per MI it can), and the trending
  tolerance (may zero the gradient, and then the deviation).
* The per-ACK RTT filter [5] (samples after an ACK-interval burst are dropped until one falls
  below the moving average): an MI whose samples it may thin keeps only the FIFO and
  clean-path bounds on its gradient (:mod:`ccac.ccas.pcc.rtt`), so on a jittery path its
  gradient is nearly free: covered, coarsely.

Readings of what the paper leaves open (parameters or solver choices)
---------------------------------------------------------------------
* The magnitude of a majority move: the paper says only "based on the majority decision"; the
  gradient applied is any value between the smallest and the largest gradient of the three
  pairs, with the majority's sign (covers the mean, median or any one of the majority's
  gradients, and the mean of all three).
* eps: Proteus does not restate it; Vivace's 0.05 is the default (``eps``).
* Vivace's fixed gradient filter flt: section 5 replaces it by the tolerances above ("a fixed
  threshold is ineffective"), so ``flt`` defaults to 0 (set 0.01 for Vivace's filter).
* Trending tolerance [5]: its condition compares the trending gradient and deviation (a
  regression over the last k = 6 MIs) with their exponentially weighted averages and
  deviations (G1 = 2, G2 = 4). Those averages depend on the whole history before the trace,
  so in a finite window the condition is unknown: ``trending = "free"`` (default) lets the
  solver zero each MI's gradient (and, nested, its deviation) or not -- a superset of every
  history. ``trending = "off"`` models a variant without it.
* Ties, the wait rate, timer and counters: as in ``ccas/vivace.py``.

What is abstracted: as for Vivace (``ccas/pcc/shared.py``, :mod:`ccac.ccas.pcc.rtt`): per-packet RTT
samples within per-step bands, the gradient enclosed over every sample set they allow, sigma
within Popoviciu's bound ``[0, (max hi - min lo) / 2]`` and the regression error within sigma
/ M, x^t / x^(t-1) on the rate grid, x*H and loss/x per bin with sign splits.

RESTRICTIONS: Vivace's (``ccas/vivace.py``: the change boundary capping |Delta_r|, a given
``mi_max``, step-boundary decisions, no slow start), except the one-pair reading (Proteus
runs 3 pairs). Not modelled: the cross-layer threshold policy of Proteus-H [4.4] (the threshold
is a fixed parameter; a policy that changes it is a sequence of such windows, each covered),
and Vivace's double check (replaced by the majority rule, as the paper says).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ccac.ccas.interface import CCA, FlowContext, FlowValues
from ccac.core.params import Param
from ccac.senders.interface import ConcreteSender, SenderStart
from ccac.ccas.pcc.gradient import GradientPCC, Variant, gradient_params, mi_steps, pcc_state
from ccac.ccas.pcc.gradient_check import check_gradient

if TYPE_CHECKING:
    from ccac.senders.pcc import Choose

PAIRS = 3  # section 5: "try each pair of sending rates three times", majority decision
MODES = {
    "P": "PCC Proteus-P (primary): Vivace's utility ignoring negative RTT gradients, majority of 3 probe pairs",
    "S": "PCC Proteus-S (scavenger): Proteus-P's utility minus d*x*RTT deviation, majority of 3 probe pairs",
    "H": "PCC Proteus-H (hybrid): Proteus-P below a rate threshold, Proteus-S at or above it",
}


class Proteus(GradientPCC, CCA):
    """One Proteus mode; the modules proteus_p/s/h each instantiate one."""

    def __init__(self, mode: str):
        self.mode = mode
        self.name = f"proteus-{mode.lower()}"
        self.summary = MODES[mode]
        own = [
            Param("flt", Fraction(0), "fixed RTT-gradient filter (Vivace's; Proteus replaces it, "
                  "section 5)", "s/s", minimum=Fraction(0)),
            Param("regression_tolerance", True, "|gradient| < regression error zeroes gradient and "
                  "deviation (needs MIs of 3+ steps to matter)", kind="bool"),
            Param("trending", "free", "trending tolerance: free = may zero an MI's gradient (and then "
                  "its deviation), as its history-dependent condition allows; off = never",
                  kind="choice", choices=("free", "off")),
            Param("ack_filter", True, "the per-ACK RTT filter (section 5): after an ACK-interval burst it "
                  "drops samples, so on a path with jitter or competitors an MI's gradient is bounded "
                  "only by FIFO order; false asks about Proteus without it", kind="bool"),
        ]
        if mode in ("S", "H"):
            own.append(Param("d", 1500, "RTT-deviation coefficient: d * x * sigma, sigma in seconds",
                             "1/s", minimum=Fraction(0)))
        if mode == "H":
            own.append(Param("threshold", Fraction(1, 2), "rates below it use Proteus-P's utility, "
                             "rates at or above it Proteus-S's", "C", minimum=Fraction(0)))
        self.params = tuple(own) + gradient_params(Fraction(1, 20), step_seconds=mode in ("S", "H"))
        self.state = pcc_state(PAIRS, False)

    def paced(self, params: dict[str, Any]) -> bool:
        return True

    def variant(self, p: dict[str, Any], C: Fraction) -> Variant:
        return Variant(pairs=PAIRS, b=p["b"], flt=p["flt"], positive_only=True,
                       dev_coeff=p["d"] if self.mode in ("S", "H") else Fraction(0),
                       threshold=p["threshold"] * C if self.mode == "H" else None,
                       regression_tolerance=bool(p["regression_tolerance"]), trending=p["trending"],
                       double_check=False, ack_filter=bool(p["ack_filter"]))

    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        return self.encode_gradient(ctx)

    def check(self, f: FlowValues) -> list[str]:
        return check_gradient(self, f)

    def concrete(self, start: SenderStart, choose: Choose | None = None) -> ConcreteSender:
        """The algorithm itself (``senders/pcc.py``); ``choose`` takes its open choices."""
        from ccac.senders.pcc import GradientConfig, GradientSender

        p, F = start.params, Fraction
        deviation = self.mode in ("S", "H")
        cfg = GradientConfig(
            M=mi_steps(p, start.R), timeout_steps=int(p["mi_timeout"]) * start.R, pairs=PAIRS, t=F(p["t"]),
            b=F(p["b"]), c=F(p["c"]), eps=F(p["eps"]), theta0=F(p["theta0"]), omega0=F(p["omega0"]),
            delta=F(p["delta"]), flt=F(p["flt"]), link_mbps=F(p["link_mbps"]),
            step_seconds=F(p["step_seconds"]) if deviation else F(0), double_check=False, positive_only=True,
            d=F(p["d"]) if deviation else F(0), threshold=F(p["threshold"]) * start.C if self.mode == "H" else None,
            regression_tolerance=bool(p["regression_tolerance"]), trending=p["trending"] == "free",
            tau_cap=int(p["tau_cap"]), k_cap=int(p["k_cap"]))
        return GradientSender(cfg, start, choose)
