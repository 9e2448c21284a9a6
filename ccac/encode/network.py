"""The ``[network]`` section: path parameters, their units, and which combinations are valid.

Units follow the thesis (chapter 5.2): time is counted in steps, R steps make one minimum RTT,
and bytes are scaled so that the link serves C bytes per step (C = 1 by default). ``buffer`` is
given in BDP units (C * R bytes) and becomes ``buffer_bytes`` for the model; ``alpha`` (the MSS)
and ``dupacks`` are left to the solver when not given, which quantifies over them. In
whole-packet mode (``packets = true``) the MSS is a number, C*R / ``bdp_packets`` unless
``alpha`` is given, so that packet counts are integers and the formula stays linear.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Mapping

from ccac.core.errors import CcacError
from ccac.core.limits import check_horizon
from ccac.core.params import Param, resolve, rounded_text

ZERO = Fraction(0)
START_MODES = ("any", "cold")

NETWORK_PARAMS: tuple[Param, ...] = (
    Param("T", 10, "number of time steps in the trace (t = 0 .. T-1)", "steps", "int", minimum=Fraction(2)),
    Param("R", 1, "minimum RTT (propagation delay)", "steps", "int", minimum=Fraction(1)),
    Param("D", 1, "jitter bound: how long the path may hold a token before using it", "steps", "int", minimum=ZERO),
    Param("C", 1, "link rate", "bytes/step", minimum=ZERO, exclusive_minimum=True),
    Param("buffer", "inf", "bottleneck buffer (loss-forced threshold); \"inf\" = no congestive loss, "
          "\"any\" = chosen by the solver", "BDP (C*R bytes)", minimum=ZERO, special=("inf", "any")),
    Param("buffer_min", None, "loss-allowed threshold if lower than buffer (loss may happen once the "
          "bottleneck queue exceeds it)", "BDP", minimum=ZERO),
    Param("compose", True, "true: composing path-server (waste when arrivals are below the token "
          "line); false: single-box server (waste only when its queue is within epsilon of empty)",
          kind="bool"),
    Param("epsilon", 0, "single-box model only: how close to empty the queue must be to waste tokens",
          "bytes", minimum=ZERO),
    Param("flows", 1, "number of flows sharing the bottleneck", "", "int", minimum=Fraction(1)),
    Param("alpha", None, "MSS; chosen by the solver (alpha > 0) when not given", "bytes",
          minimum=ZERO, exclusive_minimum=True),
    Param("dupacks", None, "loss-detection threshold: bytes acked after a loss before it is detected; "
          "the CCA's default, else chosen by the solver (>= 0)", "alpha (MSS)", minimum=ZERO),
    Param("eta", 0, "bound on the non-congestive loss rate (fraction of sent bytes)", "", minimum=ZERO,
          maximum=Fraction(1)),
    Param("rto", 1, "a timeout must fire once every in-flight byte has been known lost for this many "
          "steps (it may fire from the first)", "steps", "int", minimum=Fraction(1)),
    Param("packets", False, "whole-packet mode: senders send, the bottleneck serves, drops (drop-tail) "
          "and ACKs whole packets of alpha bytes; alpha is then a number (see bdp_packets)", kind="bool"),
    Param("bdp_packets", 10, "whole-packet mode: packets in one BDP (C*R bytes), which sets the MSS "
          "alpha = C*R / bdp_packets unless alpha is given", "packets", "int", minimum=Fraction(1),
          maximum=Fraction(10**6)),
    Param("link", "ccac", "ccac: the CCAC path-server (the token bucket holds tokens up to D steps); cbrdelay: "
          "CCmatic's constant-rate link with delay jitter (the bottleneck serves C whenever it has bytes, and "
          "every flow's ACKs pass a box of up to D steps); ideal: CCmatic's ideal link (constant rate, D = 0)",
          kind="choice", choices=("ccac", "cbrdelay", "ideal")),
    Param("loss_detection", "acks", "acks: a loss is detected once dupacks bytes sent after it are ACKed, or by a "
          "timeout; oracle: CCmatic's loss oracle, every loss known exactly R steps after it happens and no "
          "timeouts (a restriction of the model)", kind="choice", choices=("acks", "oracle")),
    Param("retransmissions", False, "true: senders retransmit what they detect lost, and a lost retransmission is "
          "revealed by a timeout only (duplicate ACKs mark a segment lost once, RFC 6675), and retransmissions "
          "held in a SACK sender's pipe may keep it below its window, on traces that start outside loss recovery; "
          "false: every loss is revealed by duplicate ACKs and the sender fills its window", kind="bool"),
    Param("start", "any", "any: the trace starts in any state the model allows (its first steps are history "
          "the CCA did not choose); cold: every flow's connection opens within the trace, as a real one does: "
          "nothing sent before, nothing queued or lost, its CCA in its start state (whole packets by default)",
          kind="choice", choices=START_MODES),
)
LINKS = ("ccac", "cbrdelay", "ideal")


# Keys of a ``[[flow]]`` table that describe the flow's own part of the path (thesis figure 7-1).
FLOW_PATH_PARAMS: tuple[Param, ...] = (
    Param("D", 0, "the flow's own jitter box: its feedback (ACKs) may be held up to D steps after "
          "the shared bottleneck served it, on top of [network] D", "steps", "int", minimum=ZERO),
    Param("eta", None, "bound on the flow's non-congestive loss rate (default: [network] eta)", "",
          minimum=ZERO, maximum=Fraction(1)),
    Param("R", None, "the flow's minimum RTT (default: [network] R)", "steps", "int", minimum=Fraction(1)),
    Param("packets", None, "the flow sends whole packets of alpha bytes (default: [network] packets); "
          "alpha is then a number, C*R / [network] bdp_packets unless given", kind="bool"),
    Param("start", None, "any or cold, as [network] start, for this flow alone (default: [network] start)",
          kind="choice", choices=START_MODES),
    Param("start_time", None, "a cold flow's connection opens at this step (at the earliest, the first step its "
          "CCA decides; default: that step)", "steps", "int", minimum=ZERO),
)


@dataclass(frozen=True)
class FlowPath:
    """One flow's own part of the path: what differs between flows sharing the bottleneck.

    ``D`` bounds the flow's own jitter box (thesis figure 7-1): the sender sees the ACK of a
    byte between 0 and D steps after the shared bottleneck served it, in order, while other
    flows' boxes delay theirs independently. ``eta`` bounds its non-congestive loss rate and
    ``R`` is its minimum RTT in steps. ``packets``: its bytes move in whole packets (sent,
    served, acked, lost: the network's whole-packet mode for this flow alone). ``start``: "cold"
    when its connection opens within the trace, and ``opens`` the step it opens at (its first
    decision, with its CCA in its start state; nothing of it is sent, served or lost before),
    which :func:`ccac.problems.query.with_openings` sets once the flow's CCA is known; "any" when
    the trace may start in any state.
    """

    D: int
    eta: Fraction
    R: int
    packets: bool = False
    start: str = "any"
    start_time: int | None = None   # cold: the opening step asked for (None: its CCA's first decision)
    opens: int | None = None        # cold: the step its connection opens, once its CCA is known


@dataclass(frozen=True)
class Network:
    """Validated path parameters. ``buffer`` is ``"inf"``, ``"any"`` or a Fraction (BDP units).

    ``paths`` holds each flow's own part of the path when the query gives ``[[flow]]`` tables;
    empty means every flow has the network's R and eta and no jitter box of its own.
    """

    T: int
    R: int
    D: int
    C: Fraction
    buffer: Fraction | str
    buffer_min: Fraction | None
    compose: bool
    epsilon: Fraction
    flows: int
    alpha: Fraction | None
    dupacks: Fraction | None
    eta: Fraction
    rto: int
    link: str = "ccac"
    loss_detection: str = "acks"
    retransmissions: bool = False
    packets: bool = False
    bdp_packets: int = 10
    start: str = "any"
    paths: tuple[FlowPath, ...] = field(default=())
    link_jitter: int = 0   # cbrdelay: the D given, which every flow's box carries (the bottleneck has none)

    def path(self, n: int) -> FlowPath:
        """Flow n's own part of the path (the network's defaults without ``[[flow]]``)."""
        return self.paths[n] if self.paths else FlowPath(0, self.eta, self.R, self.packets, self.start)

    @property
    def cold(self) -> bool:
        """Whether some flow's connection opens within the trace (a cold start)."""
        return any(self.path(n).start == "cold" for n in range(self.flows))

    @property
    def boxes(self) -> bool:
        """Whether some flow has its own jitter box (D > 0 in its ``[[flow]]`` table)."""
        return any(p.D > 0 for p in self.paths)

    @property
    def any_packets(self) -> bool:
        """Whether some flow moves whole packets (the bottleneck then serves and drops whole
        packets of it)."""
        return any(p.packets for p in self.paths) if self.paths else self.packets

    def with_packet_size(self) -> "Network":
        """This network with a numeric MSS once some flow moves whole packets: alpha as given,
        else C*R / bdp_packets (packet counts must be integers for the formula to stay linear)."""
        if not self.any_packets or self.alpha is not None:
            return self
        return replace(self, alpha=self.C * self.R / self.bdp_packets)

    @property
    def lossy(self) -> bool:
        """Whether some flow may lose bytes non-congestively (eta > 0)."""
        return any(self.path(n).eta > 0 for n in range(self.flows))

    @property
    def model_name(self) -> str:
        return "composing" if self.compose else "single-box"

    @property
    def finite_buffer(self) -> bool:
        return self.buffer != "inf"

    @property
    def bdp(self) -> Fraction:
        return self.C * self.R

    def buffer_bytes(self) -> Fraction | None:
        """Loss-forced threshold in bytes (None when infinite or solver-chosen)."""
        return self.buffer * self.bdp if isinstance(self.buffer, Fraction) else None

    def buffer_min_bytes(self) -> Fraction | None:
        """Loss-allowed threshold in bytes (defaults to the loss-forced one)."""
        if self.buffer_min is not None:
            return self.buffer_min * self.bdp
        return self.buffer_bytes()

    @property
    def jitter(self) -> int:
        """The jitter bound the query's ``D`` names: the bottleneck's, or on a cbrdelay link the
        flows' ACK boxes'."""
        return self.link_jitter if self.link == "cbrdelay" else self.D

    def as_dict(self) -> dict[str, Any]:
        """The parameters as given (a cbrdelay link's D is its boxes' jitter)."""
        return {**{p.name: getattr(self, p.name) for p in NETWORK_PARAMS}, "D": self.jitter}


def parse_network(given: Mapping[str, Any], where: str = "network") -> Network:
    """Read the ``[network]`` table, apply defaults and reject invalid combinations."""
    values = resolve(NETWORK_PARAMS, given, where)
    if values["start"] == "cold" and "packets" not in given:
        values["packets"] = True   # a connection's start is about whole packets (an initial window of segments)
    if values["link"] == "ideal":
        if "D" in given and values["D"] != 0:
            raise CcacError("the ideal link has no jitter: leave D out or set D = 0", f"{where}.D")
        values["D"] = 0
    net = Network(**values)
    if net.packets and net.alpha is not None and "bdp_packets" in given:
        from_bdp = net.C * net.R / net.bdp_packets
        if net.alpha != from_bdp:
            raise CcacError(f"alpha = {net.alpha} and bdp_packets = {net.bdp_packets} (alpha = "
                            f"{from_bdp}) disagree: give the packet size once", f"{where}.bdp_packets")
    net = net.with_packet_size()
    if net.link == "cbrdelay":
        # CCmatic's cbrdelay: a constant-rate bottleneck (the composing server with D = 0 serves
        # exactly min(tokens, bytes admitted): its U(t) = min(U(t-1) + C, A - L)) followed, for
        # every flow, by a box that holds ACKs up to D steps
        if not net.compose:
            raise CcacError("the cbrdelay link is a constant-rate bottleneck: compose must be true", where)
        net = replace(net, D=0, link_jitter=values["D"],
                      paths=tuple(FlowPath(values["D"], net.eta, net.R, net.packets, net.start)
                                  for _ in range(net.flows)))
    if net.T < net.R + net.jitter + 1:
        raise CcacError(
            f"T = {net.T} is too small: the first R + D = {net.R + net.jitter} steps are history the CCA "
            f"did not choose, so T must be at least R + D + 1 = {net.R + net.jitter + 1}", where)
    check_horizon(net.T, net.flows, f"{where}.T")
    if net.buffer_min is not None:
        if not isinstance(net.buffer, Fraction):
            raise CcacError("buffer_min needs a finite numeric buffer", where)
        if net.buffer_min > net.buffer:
            raise CcacError(f"buffer_min ({rounded_text(net.buffer_min)}) must not exceed buffer "
                            f"({rounded_text(net.buffer)})", where)
    if net.compose and net.epsilon != 0:
        raise CcacError("epsilon applies only to the single-box model (compose = false)", where)
    return net


def parse_flow_path(net: Network, given: Mapping[str, Any], where: str) -> FlowPath:
    """Read a ``[[flow]]`` table's path keys (D, eta, R, packets); eta, R and packets default to
    the network's. A flow in whole packets needs a numeric MSS (:meth:`Network.with_packet_size`)."""
    values = resolve(FLOW_PATH_PARAMS, given, where)
    path = FlowPath(D=values["D"] + net.link_jitter, eta=net.eta if values["eta"] is None else values["eta"],
                    R=net.R if values["R"] is None else values["R"],
                    packets=values["packets"] if values["packets"] is not None
                    else net.packets or values["start"] == "cold",   # a connection starts in whole packets
                    start=net.start if values["start"] is None else values["start"], start_time=values["start_time"])
    if path.start_time is not None and path.start != "cold":
        raise CcacError("start_time is when a cold flow's connection opens: give start = \"cold\" too "
                        "(or [network] start = \"cold\")", f"{where}.start_time")
    first_free = path.R + net.D + path.D + 1
    if net.T < first_free:
        raise CcacError(
            f"T = {net.T} is too small for this flow: its first R + D + its own D = {first_free - 1} "
            f"steps are history its CCA did not choose, so T must be at least {first_free}", where)
    return path
