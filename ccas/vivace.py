"""``vivace``: PCC Vivace (Dong et al., NSDI 2018), latency and loss modes, online-learning phase.

What is modelled (paper section in brackets)
--------------------------------------------
* Utility [3, eq. 1, rebuilt from 3's text and Proteus 4.1]: ``u = x^t - b*x*dRTT/dt - c*x*L``
  with x the MI's sending rate in Mbps, L its loss rate, dRTT/dt the least-squares RTT slope
  over the MI [4.3], gradients with ``|g| < flt`` counted as 0 [4.3, low-pass filter].
  Defaults t = 0.9, b = 900, c = 11.35 [5]; ``mode = "loss"`` is Vivace-Loss (b = 0) [5].
* Rate control [4.2, table 1]: MIs of one min RTT (R steps; ``mi``); a round probes
  ``r(1+eps)`` and ``r(1-eps)`` for one MI each, in a solver-chosen order (the paper's random
  order), computes ``gamma = (u1 - u2) / (2 eps r)``, moves the rate by ``m(tau)*theta0*gamma``
  with the confidence amplifier m (tau consecutive same-direction decisions; reset on a reversal),
  capped at ``omega*r`` with the dynamic change boundary ``omega = omega0 + k*delta`` (k + 1 after
  a capped move; otherwise recalibrated to the smallest k whose boundary holds the move; 0 on a
  reversal). eps = 0.05, theta0 = 1, omega0 = 0.05, delta = 0.1.
* Double check [4.3]: when the faster probe saw a smaller loss *rate*, the pair is re-run; same
  sign of the two gradients: their average is used, else the first is thrown out.
* MI timeout [4.3]: if the fate of the round's last MI is still unknown ``mi_timeout`` (4) RTTs
  after it ended, the rate is halved and a new round starts.
* The rest of the machinery (scale, one RTT sample per step with its band, waiting for the MI's
  fate, enclosures) is in ``ccas/pcc.py``, whose docstring gives the soundness arguments.

Readings of what the paper leaves open (each a parameter or a solver choice)
---------------------------------------------------------------------------
* m(tau): table 1 gives m(tau) = tau for tau <= 3 (so m(0) = 0) but 4.2 says "Setting m(0) = 1";
  this reading is m(tau) = max(1, tau) for tau <= 3, 2*tau - 3 above, with tau = 0 at the first
  decision in a new direction. The counters are tracked up to ``tau_cap`` / ``k_cap``; at a cap
  the amplifier (boundary) is any value at least the cap's: a sound stand-in for any longer run.
* 4.2 says omega grows "every time Delta_r > omega" but means |Delta_r| > omega*r (both
  directions; the rate is compared with omega*r a sentence later).
* What is sent while waiting for the last probe's fate: ``wait = "base"`` (the central rate,
  as the public PCC code) or ``"band"`` (any rate between the probes).
* When the MI timer starts and how long an "RTT" is: the timer is counted from the end of the
  round's last MI in min RTTs, and firing is *allowed*, never forced, after that (a real sender
  measuring a longer RTT fires later, and such runs are kept). The counters after a timeout are
  solver-chosen (the paper does not say).
* Ties (a utility difference of exactly 0): either direction (with a zero move).
* A decrease that would take the rate to 0 or below (omega >= 1, only past the caps): any
  positive rate up to r (the paper has no floor).

What is abstracted (the encoding is a superset of the algorithm above)
-----------------------------------------------------------------------
One RTT sample per step with its band [backlog/C, backlog/C + D]; x^t and x^(t-1) enclosed on
the rate grid (``grid``, default ratio 1.25: 0.06% gap for t = 0.9); the products x*dRTT/dt and
loss/x enclosed per grid bin with a sign split; the round's probe order, the waiting rate
(``band``), timer firing, ties and counters past the caps are solver choices. The decision is
taken at step granularity (the step where the fate of the last MI becomes known), like the
thesis' per-step CCAs.

Not modelled
------------
Slow start [4]: the doubling phase before the first utility decrease is left out; a trace is a
window of the online-learning phase, which a run never leaves once it has entered it, so any
run past slow start is covered. Per-packet RTT samples (one per step instead) and per-packet
loss events (bytes). Non-PCC details of the UDT implementation.

Left to the solver: the history (every state variable, register and sample at step 0), each
round's probe order, and the free choices listed above.

State (queries, trace): ``base``, ``phase``, ``pos``, ``order``, ``rtt``, ``rtt_min``,
``event``, ``dir``, ``tau``, ``omega_k``, ``gamma_used``, ``du``, ``gamma``, ``rerun``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ccac.cca import CCA, FlowContext, FlowValues
from ccac.params import Param
from ccac.sender import ConcreteSender, SenderStart
from ccac.ccas.pcc_gradient import GradientPCC, Variant, gradient_params, mi_steps, pcc_state
from ccac.ccas.pcc_gradient_check import check_gradient

if TYPE_CHECKING:
    from ccac.senders.pcc import Choose


class Vivace(GradientPCC, CCA):
    name = "vivace"
    summary = ("PCC Vivace: probe r(1+-eps) per RTT-long MI, gradient ascent on x^t - b x dRTT/dt - c x L "
               "(latency or loss mode), confidence amplifier and dynamic change boundary")
    params = (
        Param("mode", "latency", "latency: Vivace-Latency (b as given); loss: Vivace-Loss (b = 0)",
              kind="choice", choices=("latency", "loss")),
        Param("flt", Fraction(1, 100), "RTT-gradient filter: |dRTT/dt| below this counts as 0", "s/s",
              minimum=Fraction(0)),
        Param("double_check", True, "re-run a pair whose faster probe lost less (section 4.3)", kind="bool"),
    ) + gradient_params(Fraction(1, 20))
    state = pcc_state(1, True)

    def paced(self, params: dict[str, Any]) -> bool:
        return True

    def variant(self, p: dict[str, Any], C: Fraction) -> Variant:
        return Variant(pairs=1, b=Fraction(0) if p["mode"] == "loss" else p["b"], flt=p["flt"],
                       positive_only=False, dev_coeff=Fraction(0), threshold=None,
                       regression_tolerance=False, trending="off", double_check=bool(p["double_check"]),
                       ack_filter=False)

    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        return self.encode_gradient(ctx)

    def check(self, f: FlowValues) -> list[str]:
        return check_gradient(self, f)

    def concrete(self, start: SenderStart, choose: Choose | None = None) -> ConcreteSender:
        """The algorithm itself (``senders/pcc.py``); ``choose`` takes its open choices."""
        from ccac.senders.pcc import GradientConfig, GradientSender

        p, F = start.params, Fraction
        cfg = GradientConfig(
            M=mi_steps(p, start.R), timeout_steps=int(p["mi_timeout"]) * start.R, pairs=1, t=F(p["t"]),
            b=F(0) if p["mode"] == "loss" else F(p["b"]), c=F(p["c"]), eps=F(p["eps"]), theta0=F(p["theta0"]),
            omega0=F(p["omega0"]), delta=F(p["delta"]), flt=F(p["flt"]), link_mbps=F(p["link_mbps"]),
            double_check=bool(p["double_check"]), tau_cap=int(p["tau_cap"]), k_cap=int(p["k_cap"]))
        return GradientSender(cfg, start, choose)


ALGORITHM = Vivace()
