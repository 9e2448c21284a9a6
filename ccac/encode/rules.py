"""The CCA language: a congestion control algorithm as a few rules over what its sender observes.

A CCA file (TOML) declares parameters, state variables and one update rule per state variable,
written in the query expression language (:mod:`ccac.encode.expr`)::

    name = "my-aimd"
    summary = "additive increase, halve on loss"

    [params]
    beta = { default = 0.5, description = "decrease factor", minimum = 0 }

    [state.cwnd]
    description = "congestion window"
    initial = "cwnd >= alpha"        # what the state may be before the rules apply (optional)
    start = "alpha"                  # where the concrete sender starts when the run does not say
    rule = "beta * cwnd if newly_lost > 0 else (cwnd + alpha if newly_acked > 0 else cwnd)"

A rule gives the state's value at step t from the values of every state variable at step t - 1
(the state's names) and what the sender observes at step t (:data:`OBSERVATIONS`); all rules
update together. A state may also have ``on_ack`` (its value after one ACKed packet) and
``on_loss`` (at a loss event, beyond the recovery point :data:`RECOVER` the language then keeps):
those act first, in the order :mod:`ccac.encode.per_ack` defines, and ``rule`` (the identity
when absent) reads the state they leave. The CCA sends through two reserved state names: ``cwnd`` (the window: bytes
beyond what was ACKed or detected lost) and ``rate`` (a pacing rate, bytes per step); at least
one is declared. ``[send]`` may instead give either as an expression of the *new* state
(``window = "..."``, ``rate = "..."``), and ``rate_when`` makes pacing depend on a parameter.

A parameter whose ``unit`` is ``"BDP"`` is given in bandwidth-delay products and read by the
rules in bytes (times C * R), one whose unit is ``"C"`` in units of the link rate (read in
bytes per step): the sender is configured with such numbers, it does not observe them.
Parameters are numbers or booleans. ``[definitions]`` names expressions, expanded where used.

Open choices, for randomised algorithms and details a paper leaves open: ``choose(a, b, ...)``
is one of the values, ``between(lo, hi)`` any value from lo to hi (its ends in either order:
:func:`interval`). The encoding leaves each to the solver; the concrete sender takes it from
one deterministic hook; a trace records it, as the series ``<state>_choice<k>``, so the check
re-evaluates the rule with the value taken.

``delay_steps`` and ``delay_known`` are the model's whole-step reading of the delay, as Copa's,
ETC's and Algorithm 1's encodings read it: a rule over them states an algorithm that acts on the
reading. A sender with exact samples knows more; that every move its exact delay makes is one
the reading allows is the file's argument to make (for Algorithm 1: its target falls with the
delay, so the reading's ends bound it).

Only what a sender can know: names of the model a sender cannot observe (the link rate, the
queue, the true loss and service curves, other flows, the jitter bound, absolute time) are
refused with the rule's name.

A state variable that is a position on one of the flow's byte curves (a count of bytes ACKed,
lost or sent so far, like AIMD's marks) says so with ``axis = "acked"``, ``"lost"`` or ``"sent"``:
when a trace is cut into windows (proofs' stitching, :mod:`ccac.analysis.window`) such values
move with their curve. This module holds the definition and its static checks; the CCA
built from it (encoding and check) is :mod:`ccac.ccas.language`, its sender
:mod:`ccac.senders.language`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import z3

from ccac.core.errors import CcacError
from ccac.core.params import Param
from ccac.encode.encoding import maximum, minimum, term_context
from ccac.encode.expr import Symbols, compile_condition, compile_number, syntax_tree
from ccac.encode.nonlinear import MAX_EXPONENT, MAX_ROOT_DEGREE, in_root_band


@dataclass(frozen=True)
class Observation:
    """A quantity flow n's sender observes at step t. ``lag``: the oldest step the model must
    have for it to be read at t is t - lag (so rules reading it apply from step ``lag`` on, in
    R's units where ``per_R``). ``ranged``: the model knows it only as a range; the encoding
    lets it be any value there (a solver choice recorded in the trace), so a rule's move is
    allowed when some value in the range allows it."""

    description: str
    lag: int = 0
    per_R: bool = False
    kind: str = "real"
    ranged: bool = False
    belief: bool = False   # a running bound the sender keeps (a series of the trace)
    rtts: int = 0          # more min RTTs of history its first reading needs
    unit: str = "bytes"
    axis: str | None = None  # the byte curve a recorded value is a position on (see StateVar)
    jitter_lag: bool = False  # its first reading also needs `jitter` + 1 older steps of sending

    def first_step(self, R: int, params: dict[str, Any]) -> int:
        memory = int(params[MEMORY]) if self.belief else 0
        extra = int(params[JITTER]) + 1 if self.jitter_lag else 0
        return self.lag + memory + extra + (R if self.per_R else 0) + self.rtts * R


OBSERVATIONS: dict[str, Observation] = {
    "acked": Observation("bytes ACKed so far: the flow's service R steps ago (S_f[t-R])", lag=0, per_R=True),
    "newly_acked": Observation("bytes ACKed in the last step (S_f[t-R] - S_f[t-R-1])", lag=1, per_R=True),
    "lost": Observation("bytes detected lost so far (Ld_f[t])"),
    "newly_lost": Observation("bytes detected lost in this step (Ld_f[t] - Ld_f[t-1])", lag=1),
    "timeout": Observation("the retransmission timer fired at t", kind="bool"),
    "sent": Observation("bytes sent before this step (A_f[t-1])", lag=1),
    "inflight": Observation("bytes sent and neither ACKed nor detected lost (A_f[t-1] - S_f[t-R] - Ld_f[t])",
                            lag=1, per_R=True),
    "delay": Observation("the queueing delay of the newest ACKed byte, in steps (its RTT is R + delay; "
                         "the model knows it between two whole numbers)", lag=0, per_R=True, ranged=True, unit="steps"),
    "delay_steps": Observation("the model's reading of the newest ACKed byte's queueing delay in whole steps: "
                               "it was admitted at least this many steps before it was served and, when "
                               "delay_known, fewer than one more (CCmatic's qdel bucket; Algorithm 1's q_lo)",
                               per_R=True, ranged=True, unit="steps"),
    "delay_known": Observation("whether that reading bounds the delay from above (it does not while the byte "
                               "was admitted before anything the trace shows)", per_R=True, kind="bool", ranged=True,
                               unit=""),
    "qdel_steps": Observation("the whole-step queueing delay of the newest RTT sample: delay_steps at the last "
                              "step whose ACK reading grew, carried while no new bytes are ACKed (CCmatic's qdel, "
                              "as the published CCAC code reads delay)", per_R=True, ranged=True, unit="steps"),
    "min_c": Observation("belief: the largest link rate the ACKs prove, the running maximum over windows of k = 1 "
                         "to `memory` steps of bytes ACKed in the window over (k + jitter) (CCmatic's min_c; a "
                         "lower bound on the link rate whenever `jitter` is at least the path's)",
                         per_R=True, belief=True, unit="bytes/step"),
    "max_c": Observation("belief: the smallest link rate the ACKs allow, the running minimum over windows of k "
                         "(jitter < k <= memory) steps the sender saw fully used (every step's delay reading above "
                         "jitter while it sent, or a loss detected) of bytes ACKed over (k - jitter) (CCmatic's "
                         "max_c)", lag=1, per_R=True, belief=True, rtts=1, unit="bytes/step"),
    "min_c_lambda": Observation("belief: the least link rate the sender's own unsignalled sending proves, the "
                                "running maximum, over its last `memory` steps et whose bytes are all ACKed or "
                                "detected lost with no congestion signal since (a first ACK of a step delayed "
                                "beyond jitter + 1 steps, or a detected loss), of the bytes sent in step et over "
                                "(jitter + 2) (CCmatic's min_c_lambda, one-step probes)",
                                per_R=True, belief=True, jitter_lag=True, unit="bytes/step"),
    "bq_belief": Observation("belief: the bytes the sender believes queued at the bottleneck, at most its bytes "
                             "in flight, otherwise the previous belief plus the bytes sent in the last step less "
                             "one step of min_c_lambda, never below 0 (CCmatic's bq_belief2)",
                             per_R=True, belief=True, jitter_lag=True, unit="bytes"),
    "loss_point": Observation("where the bytes sent in this step stand in the flow's loss order: a "
                              "loss detected beyond it was sent after this step (RFC 6582's recover "
                              "point; the model knows it between L_f[t-1] and L_f[t])", lag=0, ranged=True, axis="L"),
}
CONSTANTS = {"alpha": "the MSS (bytes)", "R": "the flow's minimum RTT (steps)"}
#: the parameters a CCA that reads a belief declares: the jitter bound it assumes, in steps,
#: and how many steps of ACK readings it keeps
JITTER, MEMORY = "jitter", "memory"
#: beliefs that are named expressions over observations (CCmatic's, for a sender that assumes
#: jitter of up to `jitter` steps): available to a CCA that declares `jitter` and does not
#: define the name itself
BELIEF_DEFINITIONS = {
    "min_qdel": "max(0, qdel_steps - jitter)",   # the least queueing delay the newest sample allows
}
#: names of the model no sender observes, and why
REFUSED = {
    "C": "the link rate is the path's, not the sender's",
    "D": "the jitter bound is the path's",
    "buffer": "the buffer size is the path's",
    "T": "the horizon is the query's",
    "t": "rules are the same at every step: count time in a state variable",
    "queue": "the bottleneck queue is not visible to the sender",
    "qdelay": "the queueing delay is read as a range; use the delay observations",
    **{name: "the model's curves are the path's; observations give the flow's own view"
       for name in ("A", "S", "L", "W", "Ld", "A_f", "S_f", "L_f", "Ld_f", "Lnc", "Lnc_f", "So_f")},
}
SENDS = ("cwnd", "rate")
#: observations with a finite set of values at each step (0 .. t - R): a rule that uses one
#: non-linearly (a power of it, a product) is compiled once per value (:class:`ccac.encode.expr.Symbols`)
FINITE = ("delay_steps",)
CHOICE_FUNCTIONS = ("choose", "between")
FILE_KEYS = ("name", "summary", "description", "params", "definitions", "state", "send", "dupacks")
STATE_KEYS = ("description", "unit", "initial", "start", "rule", "on_ack", "on_loss", "axis")
#: the language's own recovery point (RFC 6582's ``recover``), in the loss order and in the bytes
#: sent, kept for a file with ``on_loss`` rules, and whether the sender is in recovery
#: (:mod:`ccac.encode.per_ack`)
RECOVER, RECOVER_SENT, IN_RECOVERY = "recover", "recover_sent", "in_recovery"
RECOVERY_STATES = {
    RECOVER: {"axis": "lost", "description": "loss order at the last loss event; a detection beyond it is a new one",
              "initial": f"{RECOVER} <= loss_point", "start": "lost - newly_lost", "on_loss": "loss_point",
              "rule": f"loss_point if timeout else {RECOVER}"},
    RECOVER_SENT: {"axis": "sent", "description": "bytes sent before the last loss event; the sender is in "
                                                  "recovery until they are all ACKed or detected lost",
                   "start": "0", "on_loss": "sent", "rule": f"sent if timeout else {RECOVER_SENT}"},
}
RECOVERY_DEFINITION = f"acked + lost < {RECOVER_SENT}"
AXES = {"acked": "S", "lost": "L", "sent": "A"}
PARAM_KEYS = ("default", "description", "unit", "minimum", "maximum", "exclusive_minimum", "kind")


@dataclass(frozen=True)
class Choice:
    """An open choice inside a rule: ``choose(...)`` (one of ``args``), ``between(lo, hi)``, or
    ``root`` (args: base, p, q): a value of ``base ** (p/q)`` within the root tolerance
    (:func:`ccac.encode.nonlinear.in_root_band`)."""

    kind: str
    args: tuple[str, ...]
    series: str   # the trace series that records the value taken


@dataclass(frozen=True)
class StateRule:
    name: str
    description: str
    unit: str
    rule: str                 # with each choice replaced by its series' name
    choices: tuple[Choice, ...]
    initial: str | None
    start: str | None
    axis: str | None = None   # the byte curve the value is a position on ("S", "L", "A")
    on_ack: str | None = None   # the new value after one ACKed packet (:mod:`ccac.encode.per_ack`)
    on_loss: str | None = None  # the new value at a loss event


@dataclass(frozen=True)
class Definition:
    """A parsed, checked CCA file."""

    name: str
    summary: str
    params: tuple[Param, ...]
    state: tuple[StateRule, ...]
    window: str | None        # [send] window, or the state cwnd
    rate: str | None
    rate_when: str | None     # a condition over the parameters
    dupacks: Fraction | None
    source: str
    observed: frozenset[str] = field(default_factory=frozenset)   # observations the rules read
    definitions: dict[str, str] = field(default_factory=dict)      # named expressions, expanded where used
    # states that only ever hold one of finitely many values (their rule's constants and their
    # start) and are used non-linearly: such uses are split into one case per value
    finite: dict[str, tuple[Fraction, ...]] = field(default_factory=dict)

    def number(self, source: str, values: dict[str, Any], where: str,
               finite: dict[str, tuple[Any, ...]] | None = None) -> Any:
        """``source`` (a rule, an argument, a send expression) compiled with ``values``; a
        non-linear use of a ``finite`` name (its values) is split into one case per value."""
        names = symbols(values, self.definitions)
        names.finite = dict(finite or {})
        return compile_number(source, names, where)

    def condition(self, source: str, values: dict[str, Any], where: str) -> Any:
        return compile_condition(source, symbols(values, self.definitions), where)

    def branch(self, source: str, values: dict[str, Any], where: str) -> str | None:
        """Which branch of the rule ``source`` applies with ``values`` (exact numbers): in its
        outermost ``x if c1 else y if c2 else z`` (the whole rule, or the first one inside it, as
        in ``max(alpha, x if c else y)``), the first condition that holds, "else" when none
        does ("not c1", "not (c1 or c2)"); None for a rule without branches."""
        text = source.strip()
        first = next((n for n in ast.walk(syntax_tree(text, where).body) if isinstance(n, ast.IfExp)), None)
        if first is None:
            return None
        tests: list[str] = []
        node: ast.expr = first
        while isinstance(node, ast.IfExp):
            test = " ".join((ast.get_source_segment(text, node.test) or "").split())
            if self.condition(test, values, where) is True:
                return test
            tests.append(test)
            node = node.orelse
        return f"not {tests[0]}" if len(tests) == 1 else f"not ({' or '.join(tests)})"

    @property
    def has_loss(self) -> bool:
        """Whether the file acts on loss events (then it keeps the recovery point)."""
        return any(s.on_loss is not None for s in self.state)

    @property
    def state_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.state)

    def first_rule_step(self, R: int, params: dict[str, Any]) -> int:
        """Rules apply from this step on (earlier steps are history: any state its ``initial``
        allows); at least 1, since a rule reads the state of the step before."""
        return max([1] + [OBSERVATIONS[o].first_step(R, params) for o in self.observed])

    def ranged(self) -> list[str]:
        return [o for o in sorted(self.observed) if OBSERVATIONS[o].ranged]

    def beliefs(self) -> list[str]:
        return [o for o in sorted(self.observed) if OBSERVATIONS[o].belief]

    def recorded(self) -> list[str]:
        """The observations a trace records (ranges' readings and beliefs), by name."""
        return self.ranged() + self.beliefs()


def parse_definition(data: dict[str, Any], source: str) -> Definition:
    """Check a CCA file's table and return its definition; errors name the key."""
    if "holes" in data:
        raise CcacError("this CCA file is a template (it has [holes]): `ccac synthesize` fills them; a query or "
                        "proof needs a CCA without holes", f"{source}: holes")
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise CcacError(f"unknown key {unknown[0]!r} (keys: {', '.join(FILE_KEYS)})", source)
    name = data.get("name")
    if not isinstance(name, str) or not name.replace("-", "_").isidentifier():
        raise CcacError("name must be a name like \"my-cca\"", f"{source}: name")
    summary = data.get("summary", data.get("description", ""))
    if not isinstance(summary, str):
        raise CcacError("summary must be a string", f"{source}: summary")
    params = tuple(_param(k, v, f"{source}: params.{k}") for k, v in _table(data, "params", source).items())
    states = _table(data, "state", source)
    send = _table(data, "send", source)
    bad = sorted(set(send) - {"window", "rate", "rate_when"})
    if bad:
        raise CcacError(f"unknown key {bad[0]!r} (keys: window, rate, rate_when)", f"{source}: send")
    window = send.get("window", "cwnd" if "cwnd" in states else None)
    rate = send.get("rate", "rate" if "rate" in states else None)
    if window is None and rate is None:
        raise CcacError("the CCA sends nothing: declare a state cwnd or rate, or give [send] window or rate",
                        source)
    param_names = {p.name for p in params}
    definitions = _table(data, "definitions", source)
    states, definitions = _with_recovery(states, definitions, source)
    for key, text_ in definitions.items():
        if not key.isidentifier() or not isinstance(text_, str):
            raise CcacError("a definition is NAME = \"expression\"", f"{source}: definitions.{key}")
    clash = sorted(param_names & (set(states) | set(OBSERVATIONS) | set(CONSTANTS) | set(REFUSED)))
    if clash:
        raise CcacError(f"parameter {clash[0]!r} has the name of a state variable or an observation",
                        f"{source}: params")
    clash = sorted(set(definitions) & (set(states) | param_names | set(OBSERVATIONS) | set(CONSTANTS) | set(REFUSED)))
    if clash:
        raise CcacError(f"definition {clash[0]!r} has the name of a parameter, state or observation",
                        f"{source}: definitions")
    if JITTER in param_names:
        definitions = {**{k: v for k, v in BELIEF_DEFINITIONS.items() if k not in states and k not in param_names},
                       **definitions}
    named = set(definitions)
    rules, observed = [], set()
    reads = {key: _check_names(text_, set(states) | named, param_names, f"{source}: definitions.{key}")
             for key, text_ in definitions.items()}
    texts: list[str] = []   # everything the CCA evaluates: the definitions it uses count, the others not
    for k, table in states.items():
        where = f"{source}: state.{k}"
        if not k.isidentifier() or k in OBSERVATIONS or k in CONSTANTS or k in REFUSED:
            raise CcacError(f"{k!r} cannot name a state variable (a reserved or model name)", where)
        if not isinstance(table, dict):
            raise CcacError("a state variable is a table: [state.NAME] with rule = \"...\"", where)
        extra = sorted(set(table) - set(STATE_KEYS))
        if extra:
            raise CcacError(f"unknown key {extra[0]!r} (keys: {', '.join(STATE_KEYS)})", where)
        per_ack = {key: table.get(key) for key in ("on_ack", "on_loss")}
        for key, text_ in per_ack.items():
            if text_ is not None:
                observed |= _check_per_ack(text_, key, set(states) | named, param_names, f"{where}.{key}")
                texts.append(text_)
        rule = table.get("rule", k if any(per_ack.values()) else None)
        if not isinstance(rule, str) or not rule.strip():
            raise CcacError("needs a rule (an expression giving the new value), on_ack or on_loss", where)
        text, choices = _extract_choices(_with_roots_inlined(rule, definitions, f"{where}.rule"), k, f"{where}.rule")
        texts += [text, *(a for c in choices for a in c.args),
                  *(t_ for t_ in (table.get("initial"), table.get("start")) if isinstance(t_, str))]
        for arg in (a for c in choices for a in c.args):
            observed |= _check_names(arg, set(states) | named, param_names, f"{where}.rule")
        observed |= _check_names(text, set(states) | named | {c.series for c in choices}, param_names, f"{where}.rule")
        initial, start = table.get("initial"), table.get("start")
        for key, text_ in (("initial", initial), ("start", start)):
            if text_ is not None:
                if not isinstance(text_, str):
                    raise CcacError(f"{key} must be an expression string", f"{where}.{key}")
                _check_names(text_, set(states) | named, param_names, f"{where}.{key}")
        axis = table.get("axis")
        if axis is not None and axis not in AXES:
            raise CcacError(f"axis is one of {', '.join(AXES)} (the curve the value is a position on)",
                            f"{where}.axis")
        rules.append(StateRule(k, str(table.get("description", "")), str(table.get("unit", "bytes")),
                               text, choices, initial, start, AXES.get(axis) if axis is not None else None,
                               per_ack["on_ack"], per_ack["on_loss"]))
    for key, text_ in (("window", send.get("window")), ("rate", send.get("rate"))):
        if text_ is not None:
            if not isinstance(text_, str):
                raise CcacError(f"{key} must be an expression string", f"{source}: send.{key}")
            _check_names(text_, set(states) | named, param_names, f"{source}: send.{key}")
    texts += [t_ for t_ in (send.get("window"), send.get("rate")) if isinstance(t_, str)]
    used = reached_names(texts, definitions, source) & named
    observed |= set().union(*(reads[d] for d in used)) if used else set()
    rate_when = send.get("rate_when")
    if rate_when is not None and (
            not isinstance(rate_when, str)
            or not _names(rate_when, f"{source}: send.rate_when") <= param_names | {"True", "False"}):
        raise CcacError("rate_when is a condition over the parameters only", f"{source}: send.rate_when")
    dupacks = data.get("dupacks")
    if dupacks is not None:
        dupacks = Param("dupacks", None, "", minimum=Fraction(0)).parse(dupacks, source)
    _check_ack_reads(rules, definitions, source)
    if any(s.on_ack is not None for s in rules):
        observed.add("newly_acked")   # the step's ACK count
    if "max_c" in observed:
        observed.add("qdel_steps")    # its windows read the delay samples of earlier steps
    if "qdel_steps" in observed:
        observed.add("delay_steps")   # the sample is the reading of the last step with new ACKs
    if "bq_belief" in observed:
        observed.add("min_c_lambda")  # it drains by min_c_lambda
    needs = {JITTER, MEMORY} - param_names
    if any(OBSERVATIONS[o].belief for o in observed) and needs:
        beliefs = ", ".join(b for b, o in OBSERVATIONS.items() if o.belief)
        raise CcacError(f"a belief ({beliefs}) needs the parameters {JITTER} (the jitter bound the sender assumes, "
                        f"steps) and {MEMORY} (steps of ACK readings it keeps); missing: {', '.join(sorted(needs))}",
                        f"{source}: params")
    if MEMORY in param_names and not any(p.name == MEMORY and p.kind == "int" and p.minimum is not None
                                         and p.minimum >= 1 for p in params):
        raise CcacError(f"{MEMORY} is a whole number of steps: kind = \"int\", minimum = 1",
                        f"{source}: params.{MEMORY}")
    if "min_c_lambda" in observed and not any(p.name == JITTER and p.kind == "int" for p in params):
        raise CcacError(f"min_c_lambda counts {JITTER} in whole steps: kind = \"int\"", f"{source}: params.{JITTER}")
    definition = Definition(name, summary.strip().splitlines()[0] if summary.strip() else "", params,
                            tuple(rules), window, rate, rate_when, dupacks, source, frozenset(observed),
                            dict(definitions))
    return replace(definition, finite=_check_compiles(definition))


def with_defaults(d: Definition, defaults: dict[str, Any], source: str) -> Definition:
    """``d`` with these parameters' defaults (as a file writes them) and its source replaced:
    what :func:`parse_definition` gives for the same file with only those defaults changed, as
    no check of a file reads a default (:func:`_check_linear` puts every parameter at 1)."""
    params = tuple(replace(p, default=defaults[p.name]) if p.name in defaults else p for p in d.params)
    for p in params:
        if p.name in defaults:
            p.parse(p.default, f"{source}: params")
    return replace(d, params=params, source=source)


def _check_compiles(d: Definition) -> dict[str, tuple[Fraction, ...]]:
    """Compile every expression once over unknowns (parameters at 1), so that an error names the
    rule, not a query. Returns the finite states (:func:`finite_values`) some expression uses
    non-linearly, with their values."""
    ctx = term_context()
    unknowns: dict[str, Any] = {n: z3.Bool(n, ctx) if o.kind == "bool" else z3.Real(n, ctx)
                                for n, o in OBSERVATIONS.items()}
    unknowns.update({s.name: z3.Real(s.name, ctx) for s in d.state})
    unknowns.update({c.series: z3.Real(c.series, ctx) for s in d.state for c in s.choices})
    values = {**{p.name: (True if p.kind == "bool" else Fraction(1)) for p in d.params},
              "alpha": z3.Real("alpha", ctx), "R": 1, **unknowns}
    finite = {s.name: v for s in d.state if (v := finite_values(s)) is not None}
    names = symbols(values, d.definitions)
    names.finite = {**finite, **{o: (0,) for o in FINITE}}
    for s in d.state:
        where = f"{d.source}: state.{s.name}"
        compile_number(s.rule, names, f"{where}.rule")
        for c in s.choices:
            for a in c.args[:1] if c.kind == "root" else c.args:
                compile_number(a, names, f"{where}.rule")
        for key, text_ in (("on_ack", s.on_ack), ("on_loss", s.on_loss)):
            if text_ is not None:
                compile_number(text_, names, f"{where}.{key}")
        if s.initial is not None:
            d.condition(s.initial, values, f"{where}.initial")
        if s.start is not None:
            d.number(s.start, values, f"{where}.start")
    for key, text in (("window", d.window), ("rate", d.rate)):
        if text is not None:
            compile_number(text, names, f"{d.source}: send.{key}")
    return {name: v for name, v in finite.items() if name in names.split_on}


def finite_values(s: StateRule) -> tuple[Fraction, ...] | None:
    """The values a state only ever holds, if finitely many: its rule, and its ``on_ack`` and
    ``on_loss`` rules if it has them, are each a choice (``a if c else b``, nested) among numbers
    written out and the state itself (kept), and its start is a number written out (0 if it has
    none: the sender starts there). None otherwise."""
    found: set[Fraction] = set()
    todo = [parse(text).body for text in (s.rule, s.on_ack, s.on_loss) if text is not None]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.IfExp):
            todo += [node.body, node.orelse]
        elif isinstance(node, ast.Name) and node.id == s.name:
            continue
        elif (number := _literal(node)) is not None:
            found.add(number)
        else:
            return None
    start = _literal(parse(s.start).body) if s.start is not None else Fraction(0)
    return None if start is None else tuple(sorted(found | {start}))


def _literal(node: ast.AST) -> Fraction | None:
    """The value of an expression of numbers alone (no names), else None."""
    if any(isinstance(n, (ast.Name, ast.Call)) for n in ast.walk(node)):
        return None
    try:
        value = compile_number(ast.unparse(node), Symbols(), "a number")
    except CcacError:
        return None
    return None if isinstance(value, bool) or not isinstance(value, (int, Fraction)) else Fraction(value)


def _with_recovery(states: dict[str, Any], definitions: dict[str, Any],
                   source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A file with an ``on_loss`` rule gets the language's recovery point (:data:`RECOVERY_STATES`)
    and the definition ``in_recovery``; their names are then the language's."""
    if not any(isinstance(t, dict) and "on_loss" in t for t in states.values()):
        return states, definitions
    taken = sorted((set(states) | set(definitions)) & {*RECOVERY_STATES, IN_RECOVERY})
    if taken:
        raise CcacError(f"{taken[0]!r} is the language's own with on_loss rules (the recovery point): "
                        "name yours differently", f"{source}: state.{taken[0]}")
    return {**states, **RECOVERY_STATES}, {**definitions, IN_RECOVERY: RECOVERY_DEFINITION}


def _check_per_ack(text: str, key: str, state: set[str], params: set[str], where: str) -> set[str]:
    """An ``on_ack`` or ``on_loss`` rule: an expression string without open choices, over what a
    sender knows; returns the observations it reads."""
    if not isinstance(text, str) or not text.strip():
        raise CcacError(f"{key} must be an expression string", where)
    if _names(text, where) & set(CHOICE_FUNCTIONS):
        raise CcacError(f"{key} cannot make an open choice (choose, between): make it in the per-step rule",
                        where)
    return _check_names(text, state, params, where)


def _check_ack_reads(rules: list[StateRule], definitions: dict[str, str], source: str) -> None:
    """An ``on_ack`` rule reads no other state that changes per ACK: the derived encoding bounds
    a state's per-ACK change over that state's own values only (:mod:`ccac.encode.per_ack`)."""
    ticking = {s.name for s in rules if s.on_ack is not None}
    for s in rules:
        if s.on_ack is None:
            continue
        where = f"{source}: state.{s.name}.on_ack"
        others = sorted((reached_names([s.on_ack], definitions, where) & ticking) - {s.name})
        if others:
            raise CcacError(f"on_ack reads `{others[0]}`, which also changes per ACK: an on_ack rule may read "
                            "its own state and states without on_ack rules", where)


def _table(data: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise CcacError(f"[{key}] must be a table", source)
    return value


def _param(name: str, spec: Any, where: str) -> Param:
    if not name.isidentifier():
        raise CcacError(f"{name!r} is not a plain name", where)
    if not isinstance(spec, dict):
        spec = {"default": spec}
    extra = sorted(set(spec) - set(PARAM_KEYS))
    if extra:
        raise CcacError(f"unknown key {extra[0]!r} (keys: {', '.join(PARAM_KEYS)})", where)
    default = spec.get("default")
    kind = spec.get("kind", "bool" if isinstance(default, bool) else "number")
    if kind not in ("number", "int", "bool"):
        raise CcacError("kind is number, int or bool", where)
    bound = {k: Param(k, None, "").parse(spec[k], where) for k in ("minimum", "maximum") if k in spec}
    exclusive = spec.get("exclusive_minimum", False)
    if not isinstance(exclusive, bool):
        raise CcacError("exclusive_minimum is true or false", where)
    unit = spec.get("unit", "")
    if unit not in PARAM_UNITS:
        as_given = ", ".join(u for u in PARAM_UNITS if u not in SCALED_UNITS and u)
        raise CcacError(f"unknown unit {unit!r}: BDP (read by the rules in bytes, times C R), C (in bytes per "
                        f"step, times C), or one the rules read as given: {as_given} "
                        f"(or none)", f"{where}.unit")
    param = Param(name, default, str(spec.get("description", "")), unit, kind, **bound,
                  exclusive_minimum=exclusive)
    if default is None:
        raise CcacError("a parameter needs a default", where)
    param.parse(default, where.rsplit(".", 1)[0])
    return param


def reached_names(texts: list[str], definitions: dict[str, str], where: str) -> set[str]:
    """Every name the expressions ``texts`` read, directly or through the ``definitions`` they
    use (and those definitions use, and so on): what a CCA evaluates."""
    reached = set().union(*(_names(text, where) for text in texts))
    expanded: set[str] = set()
    while todo := (reached & set(definitions)) - expanded:
        expanded |= todo
        reached |= set().union(*(_names(definitions[name], where) for name in todo))
    return reached


def _names(source: str, where: str) -> set[str]:
    try:
        tree = parse(source)
    except SyntaxError as e:
        raise CcacError(f"syntax error in `{source.strip()}`: {e.msg}", where) from None
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def parse(source: str) -> ast.Expression:
    """An expression that may span lines (as the query language's do)."""
    return ast.parse(f"({source.strip()})", mode="eval")


def _check_names(source: str, state: set[str], params: set[str], where: str) -> set[str]:
    """Refuse what a sender cannot see; return the observations ``source`` reads."""
    names = _names(source, where)
    tree = parse(source)
    loops = {n.id for node in ast.walk(tree)
             if isinstance(node, ast.comprehension) for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    functions = {node.func.id for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    for name in sorted(names - loops - functions):
        if name in REFUSED:
            raise CcacError(f"`{name}` is not something a sender observes ({REFUSED[name]})", where)
        if name not in state | params | set(OBSERVATIONS) | set(CONSTANTS) | {"True", "False"}:
            known = sorted(set(OBSERVATIONS) | set(CONSTANTS))
            raise CcacError(f"unknown name `{name}` (a rule reads state, parameters, {', '.join(known)})", where)
    return names & set(OBSERVATIONS)


def _has_root(text: str, where: str) -> bool:
    """Whether ``text`` raises something to a rational power (``x ** (1/3)``)."""
    try:
        tree = parse(text)
    except SyntaxError as e:
        raise CcacError(f"syntax error in `{text.strip()}`: {e.msg}", where) from None
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow)
               and (power := _literal(n.right)) is not None and power.denominator != 1 for n in ast.walk(tree))


def _with_roots_inlined(rule: str, definitions: dict[str, str], where: str) -> str:
    """``rule`` with each definition it uses that takes a rational power (directly or through
    other definitions) written out in place, so that its roots become the rule's own recorded
    choices (:func:`_extract_choices`), as if the rule had them directly; ``rule`` itself when it
    uses none."""
    rooted = {name for name in definitions
              if any(_has_root(definitions[d], where) for d in reached_names([name], definitions, where) | {name}
                     if d in definitions)}
    if not rooted & _names(rule, where):
        return rule

    class Inline(ast.NodeTransformer):
        def __init__(self, expanding: tuple[str, ...]) -> None:
            self.expanding = expanding

        def visit_Name(self, node: ast.Name) -> Any:
            if node.id not in rooted:
                return node
            if node.id in self.expanding:
                raise CcacError(f"definition `{node.id}` uses itself", where)
            body = parse(definitions[node.id]).body
            return Inline((*self.expanding, node.id)).visit(body)

    return ast.unparse(Inline(()).visit(parse(rule)))


def _extract_choices(rule: str, state: str, where: str) -> tuple[str, tuple[Choice, ...]]:
    """Replace each ``choose(...)`` / ``between(lo, hi)`` of ``rule`` by a name of its own."""
    try:
        tree = parse(rule)
    except SyntaxError as e:
        raise CcacError(f"syntax error in `{rule.strip()}`: {e.msg}", where) from None
    choices: list[Choice] = []

    class Replace(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> Any:
            if isinstance(node.func, ast.Name) and node.func.id in CHOICE_FUNCTIONS:
                kind = node.func.id
                if (node.keywords or (kind == "between" and len(node.args) != 2)
                        or (kind == "choose" and len(node.args) < 2)):
                    takes = "two values: lo, hi" if kind == "between" else "two or more values"
                    raise CcacError(f"{kind} takes {takes}", where)
                args = tuple(ast.unparse(a) for a in node.args)
                if any(f in a for a in args for f in CHOICE_FUNCTIONS):
                    raise CcacError(f"a choice inside {kind}(...) is not supported: name the inner one as a state",
                                    where)
                series = f"{state}_choice{len(choices)}"
                choices.append(Choice(kind, args, series))
                return ast.copy_location(ast.Name(series, ast.Load()), node)
            return self.generic_visit(node)

        def visit_BinOp(self, node: ast.BinOp) -> Any:
            self.generic_visit(node)
            exponent = _literal(node.right) if isinstance(node.op, ast.Pow) else None
            if exponent is None or exponent.denominator == 1:
                return node
            p, q = exponent.numerator, exponent.denominator
            if q > MAX_ROOT_DEGREE or abs(p) > MAX_EXPONENT:
                raise CcacError(f"rational exponent {p}/{q} of `{ast.unparse(node)}`: at most "
                                f"{MAX_EXPONENT}/{MAX_ROOT_DEGREE} in size (ccac.encode.nonlinear)", where)
            series = f"{state}_choice{len(choices)}"
            choices.append(Choice("root", (ast.unparse(node.left), str(abs(p)), str(q)), series))
            name = ast.copy_location(ast.Name(series, ast.Load()), node)
            return name if p > 0 else ast.copy_location(ast.BinOp(ast.Constant(1), ast.Div(), name), node)

    text = ast.unparse(Replace().visit(tree))
    return text, tuple(choices)


# ---------------------------------------------------------------------- exact evaluation
#: the units in which a parameter is given relative to the path, and scaled to bytes by the rules
SCALED_UNITS = ("BDP", "C")
#: every unit a parameter may declare: the scaled ones, and those read as given (a name for the reader)
PARAM_UNITS = (*SCALED_UNITS, "bytes", "bytes/step", "steps", "RTTs", "")


def unit_scale(unit: str, C: Any, R: int) -> Any:
    """What a parameter in ``unit`` is multiplied by to be read in bytes (per step): C R for BDP,
    C for C, 1 otherwise."""
    return C * R if unit == "BDP" else C if unit == "C" else 1


def constants(params: tuple[Param, ...], values: dict[str, Any], C: Any, R: int, alpha: Any) -> dict[str, Any]:
    """What every rule may read besides state and observations: the parameters (BDP ones in
    bytes), the MSS ``alpha`` and the minimum RTT ``R``."""
    scaled = {p.name: values[p.name] * unit_scale(p.unit, C, R) for p in params
              if p.unit in SCALED_UNITS and values.get(p.name) is not None}
    return {**values, **scaled, "alpha": alpha, "R": R}


def symbols(values: dict[str, Any], definitions: dict[str, str] | None = None) -> Symbols:
    """Names bound to values (numbers, or solver terms when encoding), and the definitions."""
    out = Symbols()
    out.constants.update(values)
    out.definitions.update(definitions or {})
    return out


def choice_allows(d: Definition, choice: Choice, value: Fraction, values: dict[str, Any], where: str) -> bool:
    """Whether ``value`` is one the choice may take, the arguments evaluated exactly."""
    if choice.kind == "root":
        base, p, q = choice.args
        return in_root_band(value, Fraction(d.number(base, values, where)), int(p), int(q))
    args = [Fraction(d.number(a, values, where)) for a in choice.args]
    if choice.kind == "choose":
        return value in args
    args = list(interval(*args))
    return args[0] <= value <= args[1]


def interval(lo: Any, hi: Any) -> tuple[Any, Any]:
    """The ends of ``between(lo, hi)``, the lower first: the values from lo to hi, in either
    order (numbers, or solver terms when encoding). A step evaluates every open choice of a rule,
    also those in branches the rule does not take, where the ends may come in either order (a
    range of exit windows below two MSS, after a timeout); read as empty, such a range would
    forbid the step whatever the rule does, and the encoding would lose runs of its sender. The
    sender's value (an end, or their midpoint) lies between the ends whichever comes first."""
    return minimum(lo, hi), maximum(lo, hi)
