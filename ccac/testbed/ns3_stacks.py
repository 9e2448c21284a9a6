"""ns-3's TCP stacks as ccac runs them: the TypeId, its loss recovery and the attributes of its
congestion control object that make ns-3 run what a CCA file models. The conformance harness
(:mod:`ccac.testbed.ns3_conformance`) and the ns-3 replay (:mod:`ccac.testbed.ns3_replay`) both
run these stacks (:mod:`ccac.testbed.ns3_sim` configures each flow with :meth:`Stack.flow`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ccac.core.errors import CcacError

DEFAULT_STREAM = 4  # ns-3's random-number stream for TcpBbr's ProbeBW phase (its default)


@dataclass(frozen=True)
class Stack:
    """One of ns-3's TCP stacks as the harness runs it: the TypeId ``tcp``, its loss recovery
    (``TcpL4Protocol::RecoveryType``), the attributes of its congestion control object (name to
    value as text) and, with ``stream``, ns-3's random-number stream taken from the run (the
    conformance harness's :attr:`ccac.testbed.ns3_conformance.ModelPath.stream`). Every stack
    runs with what :mod:`ccac.testbed.ns3_sim` gives all flows: an ACK for every segment
    (``DelAckCount`` 1), SACK, timestamps, a minimum RTO of 1 s and the run's initial window and
    slow-start threshold. docs/real-stacks.md says, per
    stack, what ns-3 then does, function by function."""

    name: str
    tcp: str
    recovery: str = "ns3::TcpPrrRecovery"
    attributes: tuple[tuple[str, str], ...] = ()
    stream: bool = False
    state: tuple[str, ...] = ("cwnd",)  # what the reading cca+state pins (READINGS)

    def flow(self, stream: int = DEFAULT_STREAM) -> dict[str, Any]:
        """The keys of :func:`ccac.testbed.ns3_sim.simulate`'s flow that configure this stack, a
        stack that draws random numbers drawing them from ns-3's stream ``stream``."""
        attributes = dict(self.attributes) | ({"Stream": str(stream)} if self.stream else {})
        return {"tcp": self.tcp, "recovery": self.recovery, "attributes": attributes}

    def describe(self) -> str:
        """The stack's configuration, one line."""
        settings = [f"recovery {self.recovery[5:]}"] + [f"{k} = {v}" for k, v in self.attributes]
        settings += ["Stream = the path's (0 .. paths-1)"] if self.stream else []
        return f"{self.name}: {self.tcp} with DelAckCount 1, SACK, " + ", ".join(settings)


#: Classic recovery for the window-based stacks: in ns-3 (``TcpClassicRecovery::EnterRecovery``)
#: it sets cwnd to the new ssthresh on the ACK that enters recovery and leaves it there until the
#: ACK that ends recovery (``TcpSocketBase::ProcessAck``), the SACK scoreboard's pipe deciding what
#: is sent: a window a rule can state from the state at entry. ns-3's default, PRR
#: (``TcpPrrRecovery::DoRecovery``), sets cwnd on every ACK in recovery to the pipe plus a count
#: of the bytes delivered, which the model's curves do not carry.
CLASSIC = "ns3::TcpClassicRecovery"

#: The window-based stacks' state a file pins: the window and the slow-start threshold (bytes).
LOSS_BASED = ("cwnd", "ssthresh")

#: The four stacks the CCA files (ccas/rules/newreno.toml, cubic.toml, vegas.toml, bbr1.toml) model.
STACKS: dict[str, Stack] = {
    # RFC 5681 slow start and congestion avoidance per ACK, RFC 6675 SACK loss recovery with
    # cwnd = ssthresh (CLASSIC).
    "newreno": Stack("newreno", "ns3::TcpNewReno", CLASSIC, state=LOSS_BASED),
    # HyStart off (the CUBIC file has no HyStart: it would end slow start on ACK trains and RTT
    # rises the model's curves do not show); C, Beta, fast convergence and TCP friendliness
    # pinned at ns-3's defaults so that a change of default cannot move them silently; CLASSIC.
    "cubic": Stack("cubic", "ns3::TcpCubic", CLASSIC,
                   (("HyStart", "false"), ("C", "0.4"), ("Beta", "0.7"), ("FastConvergence", "true"),
                    ("TcpFriendliness", "true")), state=LOSS_BASED),
    # Alpha, Beta, Gamma pinned at ns-3's defaults (2, 4, 1 segments); NewReno's recovery is
    # Vegas' own, so CLASSIC too.
    "vegas": Stack("vegas", "ns3::TcpVegas", CLASSIC, (("Alpha", "2"), ("Beta", "4"), ("Gamma", "1")),
                   state=LOSS_BASED),
    # BBR sets cwnd itself on every ACK (``TcpBbr::HasCongControl``): no recovery algorithm is
    # called, so the default stays. Its gains and filter lengths pinned at ns-3's defaults; its
    # first ProbeBW phase is random (``TcpBbr::EnterProbeBW``): each path draws it from its own
    # stream, so that the runs cover the phases a file must admit.
    "bbr1": Stack("bbr1", "ns3::TcpBbr", attributes=(("HighGain", "2.89"), ("BwWindowLength", "10"),
                                                       ("RttWindowLength", "10s"), ("ProbeRttDuration", "200ms")),
                  stream=True, state=("cwnd", "rate")),
}


#: The thesis' AIMD in ns-3: ``TcpLinuxReno``, whose congestion avoidance counts ACKed segments and
#: adds one segment per window of them (``TcpLinuxReno::CongestionAvoidance``), as the thesis' AIMD
#: adds alpha per window of ACKs (``TcpNewReno`` adds MSS^2/cwnd per ACK, a little less per RTT),
#: with CLASSIC recovery (a window cut once per loss event and held until recovery ends). What
#: differs: ns-3 sets the window to max(2 MSS, bytes in flight / 2) on a loss where the thesis
#: halves the window, detects a loss by three duplicate ACKs of whole segments, and may add more
#: than one segment in a step.
AIMD_STACK = Stack("aimd", "ns3::TcpLinuxReno", CLASSIC, state=LOSS_BASED)


def stack(name: str) -> Stack:
    """The stack called ``name`` in :data:`STACKS`, or an ns-3 TypeId (``ns3::TcpNewReno``) run
    with ns-3's own defaults (PRR, every attribute at its default) and ACKs for every segment."""
    if name in STACKS:
        return STACKS[name]
    if name.startswith("ns3::"):
        return Stack(name, name)
    raise CcacError(f"unknown TCP stack {name!r}: one of {', '.join(STACKS)} or an ns-3 TypeId (ns3::TcpNewReno)",
                    "TCP")
