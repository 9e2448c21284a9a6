"""From a :class:`~ccac.problems.query.Query` to an SMT problem: model, CCAs, then the query itself.

The names an expression may use are collected in one place (:func:`symbols_for`) from a
*valuation*: the identity gives solver terms to compile a query, a solver model gives exact
numbers to check a trace. Queries and traces therefore share one vocabulary by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import z3

from ccac.encode import nonlinear
from ccac.encode.encoding import Encoding, terms_in
from ccac.encode import periodic as steady
from ccac.core.errors import CcacError
from ccac.encode.expr import Series, Symbols, compile_condition, compile_number
from ccac.encode.frontier import STYLES
from ccac.models import MODELS, FlowSetup, PathServer, PathVars
from ccac.ccas.interface import FlowContext, flow_view
from ccac.problems.query import Query

# Expression name -> (PathVars attribute, description), for per-flow series.
FLOW_SERIES: dict[str, tuple[str, str]] = {
    "A_f": ("A_f", "cumulative bytes sent by flow n"),
    "S_f": ("S_f", "cumulative bytes of flow n served by the path"),
    "L_f": ("L_f", "cumulative bytes of flow n lost"),
    "Ld_f": ("Ld_f", "cumulative losses of flow n detected by its sender"),
    "Lnc_f": ("Lnc_f", "cumulative non-congestive losses of flow n (when eta > 0)"),
    "So_f": ("So_f", "cumulative bytes of flow n whose ACKs its sender has seen (through its own "
                     "jitter box; when some [[flow]] has D > 0)"),
    "cwnd": ("cwnd", "congestion window of flow n"),
    "rate": ("rate", "pacing rate of flow n (paced CCAs only)"),
    "timeout": ("timeout", "true when flow n's sender times out at step t"),
}
TOTAL_SERIES: dict[str, str] = {
    "A": "cumulative arrivals, all flows", "S": "cumulative service, all flows",
    "L": "cumulative loss, all flows", "W": "cumulative wasted tokens",
}
CONSTANTS: dict[str, str] = {
    "C": "link rate (bytes/step)", "R": "minimum RTT (steps)", "D": "jitter bound (steps)",
    "T": "number of steps", "flows": "number of flows", "alpha": "MSS (bytes)",
    "dupacks": "loss-detection threshold (bytes)", "buffer": "loss-forced buffer threshold (bytes)",
}


@dataclass
class Problem:
    """A query encoded for the solver, with everything needed to read a model back."""

    query: Query
    enc: Encoding
    vars: PathVars
    states: list[dict[str, list[Any]]]
    symbols: Symbols
    periodic_pairs: list[tuple[str, Any, Any]] = field(default_factory=list)
    nodes: list[nonlinear.Node] = field(default_factory=list)   # non-linear uses (ccac.encode.nonlinear)
    nonlinear: str = nonlinear.DEFAULT_MODE   # what their values may be: exact or enclosed

    @property
    def ctx(self) -> z3.Context:
        """The z3 context every term of the problem lives in."""
        return self.enc.ctx

    def formulas(self, settled: bool = True) -> list[Any]:
        """The formula to solve: every constraint, or for a periodic query's second question
        (``settled=False``, :func:`ccac.solving.solve.periodic_answer`) all but the settling
        conditions (:data:`ccac.encode.periodic.SETTLED`)."""
        return self.enc.formulas() if settled else self.enc.formulas(skip=[steady.SETTLED])

    def settling(self) -> list[Any]:
        """A periodic query's settling conditions alone (what :meth:`formulas` leaves out)."""
        return [c for g, c in self.enc.constraints if g.startswith(steady.SETTLED)]


def symbols_for(query: Query, v: PathVars, states: list[dict[str, list[Any]]],
                value: Callable[[Any], Any]) -> Symbols:
    """Every name a query may use, each mapped through ``value``: the trace's steps only (a
    periodic query's wrapped history is the trace itself, and is not shown twice)."""
    net = query.network
    first = v.first

    def steps(row: list[Any]) -> list[Any]:
        return [value(x) for x in row[first:]]

    sym = Symbols()
    sym.constants.update({"C": net.C, "R": net.R, "D": net.jitter, "T": net.T, "flows": net.flows,
                          "alpha": value(v.alpha), "dupacks": value(v.dupacks)})
    if v.buffer is None:
        sym.unavailable["buffer"] = "the buffer is infinite (network.buffer = \"inf\")"
    else:
        sym.constants["buffer"] = value(v.buffer)
    for name, param in query.params.items():
        if name in sym.constants or name in FLOW_SERIES or name in TOTAL_SERIES:
            raise CcacError(f"parameter name {name!r} is already a model name", f"params.{name}")
        sym.constants[name] = param
    for name in TOTAL_SERIES:
        sym.series[name] = Series(name, steps(getattr(v, name)), 1)
    for name, (attr, _) in FLOW_SERIES.items():
        rows = getattr(v, attr)
        if rows is None:
            sym.unavailable[name] = "there is no non-congestive loss (eta = 0 for every flow)"
            continue
        if name == "So_f" and not net.boxes:
            sym.unavailable[name] = ("no flow has a jitter box of its own ([[flow]] D > 0): "
                                     "every sender observes S_f")
            continue
        missing = {n: f"flow {n}'s CCA ({query.flows[n].cca.name}) does not pace"
                   for n, row in enumerate(rows) if row is None}
        sym.series[name] = Series(name, [steps(row) if row is not None else None for row in rows],
                                  2, missing)
    for n, flow in enumerate(query.flows):
        for sv in flow.cca.state:
            if sv.name not in sym.series:
                sym.series[sv.name] = Series(sv.name, [None] * net.flows, 2, {})
            series = sym.series[sv.name]
            series.values[n] = steps(states[n][sv.name])
    for series in sym.series.values():
        if series.dims == 2 and series.missing is not None:
            for n, row in enumerate(series.values):
                if row is None and n not in series.missing:
                    series.missing[n] = f"flow {n}'s CCA ({query.flows[n].cca.name}) has no {series.name}"
    for name, text in query.definitions.items():
        if name in sym.constants or name in sym.series or name in sym.unavailable or name == "t":
            raise CcacError(f"definition name {name!r} is already a model name", f"definitions.{name}")
        sym.definitions[name] = text
    return sym


def declared_symbols(query: Query) -> tuple[Symbols, Encoding]:
    """The names ``query``'s expressions may use, with the kinds the model would give them,
    and the encoding that declares their variables (in a z3 context of their own): the model's
    variables and one fresh series per declared CCA state variable, with no constraint of the
    model or of a CCA built. What reading a file needs to check that its expressions compile
    (:func:`check_expressions`)."""
    ctx = z3.Context()
    with terms_in(ctx):
        v, states, enc = declared(query, ctx)
        return symbols_for(query, v, states, lambda x: x), enc


def declared(query: Query, ctx: z3.Context | None = None) -> tuple[PathVars, list[dict[str, list[Any]]], Encoding]:
    """The model's variables and each flow's declared CCA state series for ``query``, declared in
    ``ctx`` (a new context if None) with no constraint built: what reading names, or a run's
    values given by variable name, needs."""
    context = ctx or z3.Context()
    with terms_in(context):
        _, enc, v = _declare(query, "pairs", context)
        states = []
        for n, flow in enumerate(query.flows):
            view = FlowContext(enc, flow_view(v, n), n, flow.params, flow.cca.name)
            states.append({sv.name: view.series(sv.name, sv.kind, sv.axis) for sv in flow.cca.state})
        return v, states, enc


def check_expressions(query: Query) -> None:
    """Raise the :class:`CcacError` :func:`build` would raise for ``query``'s names, assumptions
    and find, without building its constraints."""
    symbols = declared_symbols(query)[0]
    query_conditions(query, symbols)
    if query.guide is not None:
        compile_number(query.guide, symbols, "query.guide")


def query_conditions(query: Query, symbols: Symbols) -> list[tuple[str, Any]]:
    """``query``'s assumptions and its find compiled over ``symbols``, each with its group."""
    out = [("query.assume", compile_condition(text, symbols, f"query.assume[{i}]"))
           for i, text in enumerate(query.assume)]
    if query.find is not None:
        out.append(("query.find", compile_condition(query.find, symbols, "query.find")))
    return out


def start_values(query: Query, n: int) -> tuple[int, dict[str, Fraction]] | None:
    """Flow n's cold start: the step before its connection's first decision and its CCA's values
    there (:meth:`ccac.ccas.interface.CCA.start_state`); None for a flow that may start in any
    state. The encoding fixes these values (:func:`start_pins`) and the validator checks them
    (:func:`ccac.solving.validate.check_start`), both from here."""
    net, flow = query.network, query.flows[n]
    path = net.path(n)
    if path.opens is None:
        return None
    assert net.alpha is not None, "a cold start has a numeric MSS (ccac.problems.query.with_openings)"
    values = flow.cca.start_state(flow.params, net.C, path.R, net.alpha)
    assert values is not None, "a cold flow's CCA has a start state (ccac.problems.query.with_openings)"
    return path.opens - 1, values


def start_pins(query: Query, v: PathVars, states: list[dict[str, list[Any]]]) -> list[Any]:
    """Each cold flow's CCA in its start state one step before its connection opens."""
    pins = []
    for n in range(query.network.flows):
        start = start_values(query, n)
        if start is None:
            continue
        step, values = start
        rate = v.rate[n]
        series: dict[str, list[Any]] = {**states[n], "cwnd": v.cwnd[n], **({"rate": rate} if rate is not None else {})}
        pins += [series[name][step] == value for name, value in values.items() if name in series]
    return pins


def _declare(query: Query, style: str, ctx: z3.Context) -> tuple[PathServer, Encoding, PathVars]:
    """The model of ``query``, an encoding of its timeline in ``style`` (variables in ``ctx``)
    and the model's variables declared there (no constraint yet)."""
    if style not in STYLES:
        raise CcacError(f"unknown encoding {style!r} (available: {', '.join(STYLES)})")
    model = MODELS[query.network.model_name]
    timeline = steady.timeline(query)
    enc = Encoding(timeline, style, ctx)
    setups = [FlowSetup(paced=f.cca.paced(f.params), dupacks_default=f.cca.dupacks_default)
              for f in query.flows]
    return model, enc, model.declare(enc, steady.extended(query.network, timeline), setups)


def build(query: Query, style: str = "pairs", ctx: z3.Context | None = None,
          mode: str | None = None) -> Problem:
    """Encode model, CCAs and query as one set of constraints, in the z3 context ``ctx`` (a new
    one if None: see :func:`ccac.encode.encoding.term_context`). A periodic query is built over
    its trace plus wrapped history steps (:mod:`ccac.encode.periodic`). ``style`` is how frontiers
    are encoded (:mod:`ccac.encode.frontier`): the answer does not depend on it, the cost does.
    ``mode`` is what non-linear uses' values may be (:func:`nonlinear_mode`); their constraints
    are the group ``nonlinear`` (none without non-linear uses)."""
    context = ctx or z3.Context()
    chosen = nonlinear_mode(query, mode)
    with terms_in(context), nonlinear.collecting() as nodes:
        problem = _build(query, style, context)
        problem.nodes, problem.nonlinear = nodes, chosen
        if nodes:
            problem.enc.add("nonlinear", *nonlinear.constraints(nodes, chosen))
    return problem


def nonlinear_mode(query: Query, mode: str | None) -> str:
    """The non-linear mode of a solve: ``mode`` if given, else the query's own, else the default."""
    chosen = mode or query.nonlinear or nonlinear.DEFAULT_MODE
    if chosen not in nonlinear.MODES:
        raise CcacError(f"unknown non-linear mode {chosen!r} (available: {', '.join(nonlinear.MODES)})",
                        "--nonlinear")
    return chosen


def _build(query: Query, style: str, ctx: z3.Context) -> Problem:
    model, enc, v = _declare(query, style, ctx)
    model.constrain(enc, v)
    states: list[dict[str, list[Any]]] = []
    for n, flow in enumerate(query.flows):
        view = FlowContext(enc, flow_view(v, n), n, flow.params, flow.cca.name)
        states.append(flow.cca.encode(view))
    enc.add("cca.start", *start_pins(query, v, states))
    periodic: list[tuple[str, Any, Any]] = []
    if query.periodic:
        periodic = model.periodic(v) + steady.conditions(enc, v)
    symbols = symbols_for(query, v, states, lambda x: x)
    problem = Problem(query, enc, v, states, symbols, periodic)
    for group, condition in query_conditions(query, symbols):
        enc.add(group, condition)
    if query.periodic:
        enc.add("query.periodic", *(start == end for _, start, end in periodic),
                *steady.lossless_means_detected(v, enc.timeline))
        enc.add(steady.SETTLED, *steady.settled(v, enc.timeline))
    return problem
