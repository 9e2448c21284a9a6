"""Unbounded safety: "can a run ever leave the region (or meet the query)?" answered for the
infinite horizon by z3's constrained-Horn-clause engine (Spacer), which finds the inductive
invariant itself, in place of a user's window size and k-induction.

The transition system
---------------------
A state is a *window*: the values of every per-step variable at N consecutive steps (N at least
the model's and the CCA's look-back, :func:`ccac.encode.periodic.lookback`, and at least the
region's k), re-based the way :mod:`ccac.analysis.window` re-bases a window of a longer run (byte
curves relative to the window's first step, so that the state stays bounded), plus the
parameters the solver chooses (alpha, dupacks, a solver-chosen buffer). With ``short`` the
N-step model and ``long`` the (N+1)-step model, both built by one
:class:`ccac.solving.solve.Pipeline`:

* ``Init(x)``: x is a trace of ``short`` that meets the start condition (a proof: its region held
  at the window's last k steps, with the parameter assumptions; a query: its ``assume``);
* ``Trans(x, x')``: some trace y of ``long`` has x as its steps 0..N-1 and x' as its steps 1..N
  re-based at step 1;
* ``Bad(x)``: the region fails at the window's last step (a query: its ``find`` holds over the
  window).

Spacer answers: an inductive invariant ``Inv`` with Init -> Inv, Inv(x) and Trans(x, x') ->
Inv(x'), Inv -> not Bad (proved); or that Bad is reachable (a counterexample, which is searched
for again as an ordinary validated trace of the unrolled model, :func:`counterexample`); or
nothing within the time limit (unknown).

Why a proof here is sound (what the system over-approximates). Let a run be any infinite run of
the model, w_j its N-step window at step j re-based. w_0 is a trace of ``short``; w_j and w_{j+1}
are steps 0..N-1 and 1..N of the run's (N+1)-step window at j, which is a trace of ``long``
because a window of a longer run, re-based, is a trace of the shorter model. That last fact is
not assumed: it is what :func:`ccac.analysis.window.window_is_trace` checks (the stitching check
of :func:`ccac.analysis.steady_state.check_stitching`, run on the invariant below). So every
run's windows are a path of the transition system, and Inv holds on each. Rules that read back
without a bound (loss detection by duplicate ACKs, delay readings) read only inside the (N+1)-step
window there, with that window's first steps free history: ``long`` allows more than the run
does, never less. A variable that no expression can name (a CCA's internal series) is left out of
the state, which only forgets (a projection over-approximates too).

The invariant is then written as a steady-state region over steps t-N+1 .. t and checked by
ccac's own obligations (:func:`check_invariant`): it holds at the start (a lemma), it excludes
Bad (a lemma), it is closed (the closure check, with T = N+1) and windows stitch
(:func:`ccac.analysis.steady_state.check_stitching`). The claim rests on those checks, not on
Spacer.

What it does not do: it proves safety ("never leaves", "never happens"), not that a run from any
state *enters* the region; that remains a proof's progress cases.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from ccac.analysis.obligation import Check
from ccac.analysis.proof import check_lemma
from ccac.analysis.proof_file import BASE_SECTIONS, Proof, parse_proof
from ccac.analysis.steady_state import check_closure, check_stitching
from ccac.analysis.window import rebase
from ccac.core.errors import CcacError
from ccac.encode.encoding import truth
from ccac.encode.expr import compile_condition
from ccac.encode.periodic import lookback
from ccac.encode.terms import is_variable, subterms
from ccac.problems.problem import Problem
from ccac.problems.query import Query, parse_query
from ccac.solving.solve import Pipeline, Result, solve

MAX_DEPTH = 12     # the longest counterexample searched for as an ordinary trace (windows after the first)
SAFE, HELD = "safe_now", "safe_held"   # the proof's region at step t, and held at its k steps up to t


@dataclass
class Question:
    """A safety question over windows of N steps: runs whose first window meets ``init`` never
    have a window meeting ``bad``. ``data`` is the query file's shared sections (with the
    definitions the texts use)."""

    name: str
    data: dict[str, Any]
    window: int
    init: list[str]
    bad: str
    params_assume: list[str]   # parameter assumptions (every window)
    bmc_find: str              # a long trace has a bad window (the counterexample search's find)
    statement: str = ""        # the question in words

    def query(self, T: int, assume: list[str], find: str | None = None) -> Query:
        data = copy.deepcopy(self.data)
        data.setdefault("network", {})["T"] = T
        return parse_query({**data, "query": {"assume": assume, **({"find": find} if find else {})}}, self.name)


@dataclass
class Unbounded:
    """Spacer's answer and what ccac made of it."""

    question: Question
    answer: str                 # "proved", "refuted" or "unknown"
    spacer: str                 # what Spacer said: "unsat" (safe), "sat" or "unknown"
    spacer_seconds: float
    reason: str = ""
    invariant: str | None = None
    checks: list[Check] = field(default_factory=list)
    counterexample: Result | None = None
    sizes: dict[str, int] = field(default_factory=dict)


def from_proof(proof: Proof, window: int | None = None) -> Question:
    """The closure question of a proof's steady state: once the region has held at k
    consecutive steps, does it hold at every later step? Its window is the model's look-back,
    at least the closure check's ``start + 1`` steps (or ``window``): the k steps of the region
    come after the model's free-history steps, as in :func:`ccac.analysis.steady_state.check_closure`."""
    s = proof.steady
    if s is None:
        raise CcacError("--unbounded needs a [steady_state] region (the property to prove)", "steady_state")
    data = copy.deepcopy(proof.base)
    defs = data.setdefault("definitions", {})
    for name in (SAFE, HELD):
        if name in defs:
            raise CcacError(f"`{name}` is defined by --unbounded; rename this definition", f"definitions.{name}")
    defs[SAFE] = " and ".join(f"({p})" for p in s.region)
    defs[HELD] = " and ".join(f"{SAFE}[t - {j}]" for j in range(s.k))
    look = lookback(parse_query({**data, "query": {}}))
    n = _window(window, max(look, s.start + 1), f"the region's k = {s.k} after its start's history", s.start + 1)
    statement = (f"once the region [{' and '.join(s.region)}] has held at {s.k} consecutive step"
                 f"{'s' if s.k > 1 else ''}{', assuming ' + ' and '.join(s.assume) if s.assume else ''}, "
                 f"is it ever left?")
    return Question(s.name, data, n, [f"{HELD}[{n - 1}]"] + s.assume, f"not {SAFE}[{n - 1}]", list(s.assume),
                    f"any(not {SAFE}[t] for t in range({n - 1}, T))", statement)


def from_query(query: Query, window: int | None = None) -> Question:
    """The query's question for the infinite horizon: from a start meeting its ``assume`` (over
    the first window), does any window ever meet its ``find``?"""
    if query.find is None or query.periodic:
        raise CcacError("--unbounded needs a query with a find and without periodic = true", "query")
    data = {k: copy.deepcopy(query.raw[k]) for k in BASE_SECTIONS if k in query.raw}
    n = _window(window, lookback(query), "", 1)
    statement = (f"from a first window with {' and '.join(query.assume) or 'anything'}, does any window "
                 f"ever have {query.find}?")
    return Question(query.name, data, n, list(query.assume), query.find, [], query.find, statement)


def _window(asked: int | None, least: int, why: str, floor: int) -> int:
    if asked is None:
        return least
    if asked < floor:
        raise CcacError(f"the window must be at least {floor} steps ({why})", "--window")
    return asked


# ---------------------------------------------------------------------- the Horn clauses
def prove_unbounded(question: Question, timeout: float | None = None, solver: str = "z3",
                    check_timeout: float | None = None) -> Unbounded:
    """Ask Spacer (within ``timeout`` seconds); check an invariant with ccac's own obligations
    (each within ``check_timeout``, solved by ``solver``), or search a counterexample as a
    validated ordinary trace."""
    n = question.window
    pipeline = Pipeline(question.query(n, []))
    short = pipeline.build()
    long = pipeline.build(question.query(n + 1, []))
    state, names = _state(short)
    fp, inv, sizes = _horn(short, long, state, question, timeout)
    start = time.perf_counter()
    bad = _conditions(short, [question.bad], "bad")
    try:
        said = fp.query(z3.And(inv(*state), *bad))
    except z3.Z3Exception as e:   # Spacer stopped by its time limit raises "canceled"
        return Unbounded(question, "unknown", "unknown", time.perf_counter() - start, f"Spacer: {e}", sizes=sizes)
    seconds = time.perf_counter() - start
    if said == z3.unsat:
        invariant = _text(_definition(fp.get_answer(), inv, state), names, n)
        checks = check_invariant(question, invariant, solver, check_timeout)
        answer = "proved" if all(c.verdict == "proved" for c in checks) else _worst(checks)
        return Unbounded(question, answer, "unsat", seconds, "", invariant, checks, None, sizes)
    if said == z3.sat:
        result = counterexample(question, solver, check_timeout)
        if result is not None:
            return Unbounded(question, "refuted" if result.validated else "invalid", "sat", seconds,
                             f"a validated trace of {result.query.network.T} steps", counterexample=result,
                             sizes=sizes)
        return Unbounded(question, "unknown", "sat", seconds,
                         f"Spacer's counterexample over windows is not a trace of the unrolled model up to "
                         f"{n + MAX_DEPTH} steps", sizes=sizes)
    return Unbounded(question, "unknown", "unknown", seconds, f"Spacer: {fp.reason_unknown()}", sizes=sizes)


def _state(short: Problem) -> tuple[list[z3.ExprRef], dict[str, str]]:
    """The window's state: every per-step variable an expression can name, then the
    solver-chosen parameters; with each one's text in the expression language at the window's
    last step t (``{k}`` standing for its distance back from t, filled in by :func:`_text`).
    A byte position is written relative to the window's first step, t - N + 1, on its axis
    (:func:`anchors`), as the state re-bases it: so the text reads the same in any window."""
    names: dict[str, str] = {}
    n = short.query.network.T
    anchor = anchors(short, n)
    for name, series in short.symbols.series.items():
        rows = [(None, series.values)] if series.dims == 1 else list(enumerate(series.values))
        for flow, values in rows:
            for t, value in enumerate(values or []):
                slot = short.enc.slots.get(value.decl().name()) if is_variable(value) else None
                if slot is None:
                    continue
                text = f"{name}{'' if flow is None else f'[{flow}]'}[t - {{{t}}}]"
                if slot.axis is not None:
                    text = f"({text} - {anchor[slot.axis, slot.flow]})"
                names[value.decl().name()] = text
    for name, value in short.symbols.constants.items():
        if isinstance(value, z3.ExprRef) and is_variable(value):
            names[value.decl().name()] = name
    free = {e.decl().name(): e for e in subterms(short.enc.formulas()) if is_variable(e)}
    return [free[k] for k in names if k in free], names


def anchors(short: Problem, n: int) -> dict[tuple[str, int | None], str]:
    """Each byte axis's value at the window's first step, as text at its last step t: what
    :func:`ccac.analysis.window.rebase` subtracts (service and loss curves their own, arrivals
    both, the wasted-token curve so that the token line keeps its distance from service)."""
    first = f"t - {n - 1}"
    out: dict[tuple[str, int | None], str] = {("W", None): f"(C * ({first}) - S[{first}])"}
    for f in range(short.query.network.flows):
        out["S", f] = f"S_f[{f}][{first}]"
        out["L", f] = f"L_f[{f}][{first}]"
        out["A", f] = f"(S_f[{f}][{first}] + L_f[{f}][{first}])"
    return out


def _definition(answer: z3.ExprRef, inv: z3.FuncDeclRef, state: list[z3.ExprRef]) -> z3.ExprRef:
    """Spacer's answer (``ForAll(x, Inv(x) == body)``) as ``body`` over the state variables."""
    body = answer.body() if z3.is_quantifier(answer) else answer
    if z3.is_app(body) and body.decl() == inv:
        return z3.BoolVal(True, body.ctx)
    if not (z3.is_eq(body) and z3.is_app(body.arg(0)) and body.arg(0).decl() == inv):
        raise CcacError(f"Spacer's answer is not a definition of its invariant: {answer}")
    application, definition = body.arg(0), body.arg(1)
    values: list[z3.ExprRef] = list(state)
    for i, arg in enumerate(application.children()):
        values[z3.get_var_index(arg)] = state[i]
    return z3.substitute_vars(definition, *values)


def _horn(short: Problem, long: Problem, state: list[z3.ExprRef], question: Question,
          timeout: float | None) -> tuple[z3.Fixedpoint, z3.FuncDeclRef, dict[str, int]]:
    """The two rules: Init -> Inv(x); Inv(x) and a trace of ``long`` whose steps 1..N re-based
    are x' -> Inv(x')."""
    ctx = short.ctx
    fp = z3.Fixedpoint(ctx=ctx)
    fp.set("engine", "spacer")
    if timeout is not None:
        fp.set("timeout", max(1, int(timeout * 1000)))
    inv = z3.Function("Inv", *[v.sort() for v in state], z3.BoolSort(ctx))
    fp.register_relation(inv)
    pre = {a.decl().name(): b for a, b in rebase(short, long, 0)}
    post = {a.decl().name(): b for a, b in rebase(short, long, 1)}
    after = [z3.Const(f"next!{v.decl().name()}", v.sort()) for v in state]
    short_rules, long_rules = _model(short), _model(long)
    variables = {e.decl().name(): e for e in subterms(short_rules + long_rules) if is_variable(e)}
    fp.declare_var(*variables.values(), *after)
    init = _conditions(short, question.init, "init")
    fp.rule(inv(*state), short_rules + init)
    moved = [z3.simplify(pre.get(v.decl().name(), v)) for v in state]
    fp.rule(inv(*after), [inv(*moved), *long_rules,
                          *(a == post.get(v.decl().name(), v) for a, v in zip(after, state))])
    sizes = {"window": question.window, "state variables": len(state),
             "constraints (N steps)": len(short_rules), "constraints (N+1 steps)": len(long_rules)}
    return fp, inv, sizes


def _model(problem: Problem) -> list[z3.BoolRef]:
    return [c for group, c in problem.enc.constraints if not group.startswith("query.find")]


def _conditions(problem: Problem, texts: list[str], where: str) -> list[z3.BoolRef]:
    """``texts`` compiled over ``problem``'s window."""
    out = []
    for i, text in enumerate(texts):
        value = compile_condition(text, problem.symbols, f"{where}[{i}]")
        out.append(truth(value, problem.ctx) if isinstance(value, bool) else value)
    return out


# ---------------------------------------------------------------------- the invariant as text
def _text(formula: z3.ExprRef, names: dict[str, str], n: int) -> str:
    """``formula`` (over the window's variables) in the expression language, at step t = the
    window's last step."""
    def walk(e: z3.ExprRef) -> str:
        if is_variable(e):
            return names[e.decl().name()].format(*range(n - 1, -1, -1))
        if z3.is_rational_value(e):
            return str(Fraction(e.numerator_as_long(), e.denominator_as_long()))
        if z3.is_int_value(e):
            return str(e.as_long())
        if z3.is_true(e) or z3.is_false(e):
            return "True" if z3.is_true(e) else "False"
        args = [walk(a) for a in e.children()]
        kind = e.decl().kind()
        joiner = {z3.Z3_OP_AND: " and ", z3.Z3_OP_OR: " or ", z3.Z3_OP_ADD: " + ", z3.Z3_OP_MUL: " * "}
        if kind in joiner:
            return "(" + joiner[kind].join(args) + ")"
        binary = {z3.Z3_OP_LE: "<=", z3.Z3_OP_GE: ">=", z3.Z3_OP_LT: "<", z3.Z3_OP_GT: ">", z3.Z3_OP_EQ: "==",
                  z3.Z3_OP_SUB: "-", z3.Z3_OP_DIV: "/"}
        if kind in binary and len(args) == 2:
            return f"({args[0]} {binary[kind]} {args[1]})"
        if kind == z3.Z3_OP_IMPLIES:
            return f"implies({args[0]}, {args[1]})"
        if kind == z3.Z3_OP_NOT:
            return f"(not {args[0]})"
        if kind == z3.Z3_OP_UMINUS:
            return f"(-{args[0]})"
        if kind == z3.Z3_OP_ITE:
            return f"({args[1]} if {args[0]} else {args[2]})"
        if kind == z3.Z3_OP_TO_REAL:
            return args[0]
        raise CcacError(f"Spacer's invariant uses {e.decl().name()}, which the expression language cannot state")
    return walk(z3.simplify(formula, som=False))


# ---------------------------------------------------------------------- ccac's own checks
def invariant_proof(question: Question, invariant: str) -> Proof:
    """The invariant as a proof file: a steady-state region over the window (start N-1, T = N+1,
    k = 1) and two lemmas, "it holds at the start" and "it excludes the bad windows"."""
    n = question.window
    data = copy.deepcopy(question.data)
    data["steady_state"] = {"name": f"{question.name} (invariant found by Spacer)", "T": n + 1, "start": n - 1,
                            "k": 1, "assume": question.params_assume, "region": [invariant]}
    data["lemma"] = [
        {"name": "the invariant holds at the start", "T": n, "assume": question.init, "show": f"region[{n - 1}]"},
        {"name": "the invariant excludes the bad windows", "T": n,
         "assume": [f"region[{n - 1}]"] + question.params_assume, "show": f"not ({question.bad})"},
    ]
    return parse_proof(data, question.name)


def check_invariant(question: Question, invariant: str, solver: str, timeout: float | None) -> list[Check]:
    """Initiation and safety (lemmas), closure and stitching of the invariant, by ccac's
    ordinary obligations (each proved only if unsat and not vacuous)."""
    proof = invariant_proof(question, invariant)
    checks = [check_lemma(lemma, solver, timeout) for lemma in proof.lemmas]
    checks.append(check_closure(proof, solver, timeout))
    checks.extend(check_stitching(proof, solver, timeout))
    return checks


def counterexample(question: Question, solver: str, timeout: float | None) -> Result | None:
    """A validated trace that starts as ``init`` and reaches a bad window, searched for by the
    ordinary pipeline over N, N+1, ... N+MAX_DEPTH steps; None if there is none there."""
    for T in range(question.window, question.window + MAX_DEPTH + 1):
        result = solve(question.query(T, question.init, question.bmc_find), solver=solver, timeout=timeout)
        if result.answer == "sat":
            return result
    return None


def _worst(checks: list[Check]) -> str:
    verdicts = {c.verdict for c in checks}
    return next(v for v in ("invalid", "refuted", "vacuous", "unknown") if v in verdicts)
