"""``vivace``: PCC Vivace (Dong et al., NSDI 2018), latency and loss modes, online-learning phase.

What is modelled (paper section in brackets)
--------------------------------------------
* Utility [3, eq. 1, rebuilt from 3's text and Proteus 4.1]: ``u = x^t - b*x*dRTT/dt - c*x*L``
  with x the MI's sending rate in Mbps, L its loss rate, dRTT/dt the least-squares slope of
  the MI's per-packet RTT samples [4.3], gradients with ``|g| < flt`` counted as 0 [4.3,
  low-pass filter]. Defaults t = 0.9, b = 900, c = 11.35 [5]; ``mode = "loss"`` is Vivace-Loss
  (b = 0) [5].
* Rate control [4.2, table 1] (:mod:`ccac.ccas.pcc.gradient`): MIs of one RTT as the sender
  estimates it (any whole number of steps from R to the path's longest RTT), a round probes
  ``r(1+eps)`` and ``r(1-eps)`` for one MI each in a solver-chosen order, computes ``gamma =
  (u1 - u2) / (2 eps r)``, moves the rate by ``m(tau)*theta0*gamma`` with the confidence
  amplifier m, capped at ``omega*r`` with the dynamic change boundary ``omega = omega0 +
  k*delta``. eps = 0.05, theta0 = 1, omega0 = 0.05, delta = 0.1.
* Double check [4.3]: when the faster probe saw a smaller loss *rate*, the pair is re-run; same
  sign of the two gradients: their average is used, else the first is thrown out.
* MI timeout [4.3]: the rate may halve once some MI whose fate is still unknown began
  ``mi_timeout`` (4) min RTTs ago; never forced.
* Per-packet RTT samples and the enclosures of an MI's gradient: :mod:`ccac.ccas.pcc.rtt`;
  scale, pacing, fate and the non-linear enclosures: ``ccas/pcc/shared.py``.

Readings of what the paper leaves open: the union is encoded
------------------------------------------------------------
* m(tau): table 1 gives m(tau) = tau for tau <= 3 (m(0) = 0), 4.2 says "Setting m(0) = 1", and
  "tau consecutive decisions" may or may not count the current one: the step's amplifier is
  any of m(tau), m(tau + 1) and (at tau = 0) table 1's 0, with m(tau) = max(1, tau) for tau <= 3
  and 2 tau - 3 above. The counters are tracked up to ``tau_cap`` / ``k_cap``; at a cap the
  amplifier (boundary) is any value at least the cap's.
* The cap: omega before or after k is raised for this decision.
* What is sent while waiting for the round's fate: the base rate or the last probe's
  (``wait = "either"``, default; ``"band"``: anything between the probes).
* When a decision is taken: at once when the fate is known, or at the next MI boundary (at
  most one MI later): the readings differ on whether a sender keeps sending in whole MIs.
* The MI timer: from the start of any MI whose fate is unknown (of this round, an earlier one,
  or one the sender waited in), allowed from ``mi_timeout`` min RTTs on, never forced (a sender
  measuring a longer RTT fires later); it halves the base rate or the rate being sent, at once
  or at the end of the MI it fired in; the counters after it are the solver's.
* A zero gradient: the rate and the counters stay (one reading), or a zero move.
* A decrease that would take the rate to 0 or below (past the caps only): any positive rate.

RESTRICTIONS (runs of the paper's algorithm the encoding excludes) and their effect
-----------------------------------------------------------------------------------
An unsat answer is a proof for the runs none of these excludes; a sat answer is a real
trace of the encoding either way. ``tests/test_vivace.py`` pins these readings of the
paper-faithful sender (``senders/pcc_paper.py``) and checks every other one is admitted.

* One probe pair per decision (Vivace 4.2). Proteus' account of Vivace (5: two pairs that
  must agree, citing the Allegro paper) is not Vivace's own text; a two-pair Vivace is not
  covered.
* The change boundary caps |Delta_r| (both directions: the rate is compared with omega r a
  sentence later). The literal "every time Delta_r > omega" would never cap a decrease; a
  sender that reads it so may fall by more than omega r per decision and is not covered.
* A given ``mi_max`` or ``mi``: MIs outside it are not covered. The defaults restrict nothing
  (a finite buffer bounds every RTT estimate; with an infinite one MIs beyond 2R + D are
  allowed with coarser bounds).
* Decisions at step boundaries (the model's clock): an MI is a whole number of steps, the
  first boundary at least one RTT estimate after it began; a sender acting mid-step is
  covered as far as its per-step totals are (finer steps, a larger R, shrink the gap).
* Slow start [4] is not modelled: a trace is a window of the online-learning phase, which a
  run never leaves once it has entered it, so runs past slow start are covered and runs in it
  are not.

Left to the solver: the history (every state variable, register and sample at step 0), each
round's probe order, the MI lengths, the per-packet samples within their enclosures and the
readings above.

State (queries, trace): ``base``, ``phase``, ``pos``, ``order``, ``rtt``, ``rtt_min``,
``event``, ``dir``, ``tau``, ``omega_k``, ``gamma_used``, ``du``, ``gamma``, ``rerun``.
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
