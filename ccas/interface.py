"""The interface every CCA implements: one file in ``ccas/`` defines one :class:`CCA` object.

A CCA sets its flow's ``cwnd`` (and ``rate`` if it paces) from what the sender can observe at
step t: ACKs up to ``S_f[t-R]``, detected losses ``Ld_f[t]``, the timeout flag, and (for
delay-based CCAs) the queueing-delay range. It may add variables of its own (its state), which
it declares so that queries, traces and plots can use them by name.

Each CCA provides two independent descriptions of itself:

* :meth:`CCA.encode` adds linear SMT constraints that over-approximate the algorithm (every
  run of the real algorithm satisfies them: the superset property);
* :meth:`CCA.check` re-checks a concrete trace in exact rational arithmetic against the same
  rules, written directly and without the solver, so a counterexample is validated by code
  apart from the encoding. (A CCA written in the CCA language is the exception in part: its
  encoding and its check are derived from the same file, through the same rule definitions and
  belief updates, :mod:`ccac.encode.rules` and :mod:`ccac.encode.beliefs`; the check then
  catches the encoding's use of the solver, and the file's reading of the algorithm is checked
  against an implementation or a paper-faithful sender instead.)

The engine knows no CCA by name: ``ccac.ccas`` discovers the modules.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import z3

from ccac.encode.encoding import Cond, Encoding, Term
from ccac.models.path_server import PathVars
from ccac.core.params import Param

if TYPE_CHECKING:
    from ccac.senders.interface import ConcreteSender, SenderStart


@dataclass(frozen=True)
class StateVar:
    """A per-step state variable of a CCA, usable in queries as ``name[n][t]``.

    ``plotted`` variables are drawn by ``ccac query --plot`` below the model's panels, one
    panel per unit (so a CCA marks the few that explain its decisions, not its bookkeeping).
    ``axis`` names the byte curve of the flow a variable is a position on ("S", "L" or "A", as
    in :class:`ccac.encode.encoding.Slot`): such a variable shifts with that curve when a trace is
    cut into windows or repeated; None for everything else. ``labels`` name the values of a
    variable that records the CCA's decision at a step (ETC's ``action``: 1 accelerate), so a
    page can say which rule the step took (:meth:`CCA.step_rules`); a value without a label is
    not named."""

    name: str
    description: str
    unit: str = "bytes"
    kind: str = "real"  # "real", "int" or "bool"
    plotted: bool = False
    axis: str | None = None
    labels: tuple[tuple[int, str], ...] = ()


class FlowView:
    """The model's variables as flow n's sender sees them, for a flow with its own jitter box.

    Everything is the shared model's (:class:`PathVars`) except the delay reading
    :meth:`served_past`, which is this flow's own (:meth:`PathVars.observed_past`: the queueing
    delay plus the box's), so a delay-based CCA reads the delay its sender experiences without
    knowing about boxes.
    """

    def __init__(self, v: PathVars, n: int) -> None:
        self._v, self._n = v, n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._v, name)

    def served_past(self, t: int, k: int) -> Cond:
        return self._v.observed_past(self._n, t, k)


def flow_view(v: PathVars, n: int) -> PathVars:
    """The variables flow n's CCA gets: the model's, or a :class:`FlowView` if it has a box."""
    return v if v.net.path(n).D == 0 else FlowView(v, n)  # type: ignore[return-value]


@dataclass
class FlowContext:
    """What a CCA's encoder gets for flow ``n``: the model variables and a place to add to.

    Everything here is what flow n's sender observes: ``S`` is the service its ACKs report
    (through its own jitter box, if it has one), ``R`` its minimum RTT, ``D`` the jitter its
    feedback may carry (the shared path's plus its own box's), and ``v.served_past`` its own
    delay reading. CCAs therefore need no change to run on flows with different paths.
    """

    enc: Encoding
    v: PathVars  # for a flow with its own box, a FlowView (use :func:`flow_view`)
    n: int
    params: dict[str, Any]
    cca_name: str

    @property
    def T(self) -> int:
        return self.v.net.T

    @property
    def opens(self) -> int | None:
        """With a cold start, the step this flow's connection opens (its first decision); None
        when the trace may start in any state."""
        return self.v.net.path(self.n).opens

    @property
    def R(self) -> int:
        return self.v.net.path(self.n).R

    @property
    def D(self) -> int:
        return self.v.net.D + self.v.net.path(self.n).D

    @property
    def C(self) -> Fraction:
        return self.v.net.C

    @property
    def alpha(self) -> Term:
        return self.v.alpha

    @property
    def cwnd(self) -> list[z3.ArithRef]:
        return self.v.cwnd[self.n]

    @property
    def rate(self) -> list[z3.ArithRef]:
        rate = self.v.rate[self.n]
        if rate is None:
            raise ValueError(f"{self.cca_name} encodes a rate but declared itself unpaced")
        return rate

    @property
    def A(self) -> list[z3.ArithRef]:
        return self.v.A_f[self.n]

    @property
    def S(self) -> list[z3.ArithRef]:
        """The service of this flow as its sender observes it (after its own box, if any)."""
        return self.v.So_f[self.n]

    @property
    def L(self) -> list[z3.ArithRef]:
        return self.v.L_f[self.n]

    @property
    def Ld(self) -> list[z3.ArithRef]:
        return self.v.Ld_f[self.n]

    @property
    def timeout(self) -> list[z3.BoolRef]:
        return self.v.timeout[self.n]

    def series(self, name: str, kind: str = "real", axis: str | None = None) -> list[Any]:
        """One fresh solver variable per step for state ``name`` of this flow. ``axis`` names
        the byte curve a cumulative value lives on ("S", "L" or "A"; see
        :class:`ccac.encode.encoding.Slot`); values that are not byte positions leave it None."""
        return [self.enc.step(kind, name, t, self.n, axis) for t in range(self.T)]

    def var(self, name: str, kind: str = "real") -> Any:
        """One fresh solver variable for this flow (e.g. a solver-chosen phase)."""
        make = {"real": self.enc.real, "int": self.enc.integer, "bool": self.enc.boolean}[kind]
        return make(f"{name}_{self.n}")

    def add(self, *constraints: Cond) -> None:
        self.enc.add(f"cca.{self.cca_name}", *constraints)


@dataclass
class FlowValues:
    """Exact values of one flow's trace, for :meth:`CCA.check`. Lists are indexed by step."""

    n: int
    T: int
    R: int
    D: int
    C: Fraction
    alpha: Fraction
    dupacks: Fraction
    params: dict[str, Any]
    A: list[Fraction]
    S: list[Fraction]
    L: list[Fraction]
    Ld: list[Fraction]
    cwnd: list[Fraction]
    rate: list[Fraction] | None
    timeout: list[bool]
    state: dict[str, list[Any]]
    total_S: list[Fraction] = field(default_factory=list)
    total_admitted: list[Fraction] = field(default_factory=list)
    delay_S: list[Fraction] = field(default_factory=list)
    delay_admitted: list[Fraction] = field(default_factory=list)
    tokens: list[Fraction] = field(default_factory=list)   # the token line C*t - W[t]
    flows: int = 1
    opens: int | None = None                                # cold start: the connection's first decision
    lossy: bool = False                                     # some flow has non-congestive loss
    buffer: Fraction | None = None                          # the numeric buffer in bytes, if any

    def delay_range(self, s: int) -> tuple[int, int | None]:
        """The queueing-delay range this flow's sender reads at service step s (the shared
        reading, or the flow's own through its jitter box; see ``PathVars.observed_past``).
        Without ``delay_S`` the shared curves are read."""
        from ccac.encode.trace import delay_range

        if self.delay_S:
            return delay_range(self.delay_S, self.delay_admitted, s)
        return delay_range(self.total_S, self.total_admitted, s)


class CCA(ABC):
    """One congestion control algorithm. Subclasses set the class attributes and the methods."""

    name: str
    summary: str
    params: tuple[Param, ...] = ()
    state: tuple[StateVar, ...] = ()
    dupacks_default: Fraction | None = None  # in units of alpha; None = solver-chosen

    def paced(self, params: dict[str, Any]) -> bool:
        """Whether this configuration limits the sender by a pacing rate."""
        return False

    @abstractmethod
    def encode(self, ctx: FlowContext) -> dict[str, list[Any]]:
        """Add this CCA's constraints for flow ``ctx.n``; return its state series by name."""

    def lookback(self, params: dict[str, Any], R: int) -> int:
        """How many steps before step t the rule at t reads, at most: the curves (ACKs at t-R),
        its own state (at t-1), its samples and windows. The delay reading of a sample is not
        counted (the model bounds it; see ``ccac.encode.periodic``). Periodic queries encode at least
        this much wrapped history before the trace, so that every rule of the trace reads what
        a run repeating the trace forever would show it. The default covers a CCA that reads
        the ACKs of step t-R and its own state at t-1."""
        return R + 1

    def first_rule_step(self, params: dict[str, Any], R: int) -> int:
        """The first step at which the CCA's rules constrain its state; before it the state is
        free history, as the model's first R steps are. The default: the first step that reads
        ACKs, R."""
        return R

    opens_late = False
    """Whether a connection of this CCA may open after its first rule step (a flow that joins a
    running path, ``[[flow]] start_time``): its rules then apply from the opening step
    (:attr:`FlowContext.opens`), which only a CCA that reads that step supports."""

    def start_state(self, params: dict[str, Any], C: Fraction, R: int, alpha: Fraction) -> dict[str, Fraction] | None:
        """Its values at a connection's start, by name (``cwnd``, ``rate``, declared state), one step
        before the connection's first decision: what a cold start (``[network] start = "cold"``)
        fixes, with nothing sent, ACKed or lost before. A name left out is any value the CCA's
        history allows. None: this CCA has no start state (its encoding describes a running
        connection only), so a cold start is refused."""
        return None

    def period_divisor(self, params: dict[str, Any], R: int) -> int:
        """A periodic trace's period (T - 1 steps) must be a multiple of this: the length of
        any clock the CCA runs on (a probing cycle, an update timer), which must repeat too."""
        return 1

    @abstractmethod
    def check(self, f: FlowValues) -> list[str]:
        """Re-check the CCA's rules on exact trace values; return one message per violation."""

    def step_rules(self, f: FlowValues) -> dict[int, list[str]]:
        """The rules that applied at each step of ``f`` (step -> names or conditions of the
        branches taken), for a page that shows why each decision was made; empty where the CCA
        does not name its branches. Only read on a trace :meth:`check` passed. By default, the
        labelled value of each state variable that records a decision (``StateVar.labels``)."""
        out: dict[int, list[str]] = {}
        for var in self.state:
            values, names = f.state.get(var.name), dict(var.labels)
            for t, value in enumerate(values if values is not None and names else []):
                if value in names:
                    out.setdefault(t, []).append(f"{var.name}: {names[value]}")
        return out

    def concrete(self, start: SenderStart) -> ConcreteSender | None:
        """The algorithm itself (:mod:`ccac.senders.interface`), taking over a run at ``start``; None if
        the CCA has no algorithm to run (``any``: the solver chooses every decision)."""
        return None
