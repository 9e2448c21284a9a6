"""The proof file format: reading a proof file into a :class:`Proof` (:func:`load_proof`,
:func:`parse_proof`), writing one (:func:`proof_text`), and the queries its lemmas and its
steady-state window stand for (:func:`lemma_query`, :func:`steady_query`).

A proof file (``proofs/*.toml``) has a query file's ``[network]``, ``[cca]``, ``[params]`` and
``[definitions]`` sections, then

* ``[[lemma]]`` entries: ``name``, optional overrides (``T``, and ``network`` / ``cca`` /
  ``params`` tables), ``assume`` and either ``show`` (a universal claim: proved when
  model and CCA and assume and not(show) is unsat) or ``exists`` (an existential claim: proved
  by a validated trace of model and CCA and assume and exists);
* an optional ``[steady_state]`` section: a ``region`` (predicates over the state at step
  ``t``), parameter assumptions, and ``[[steady_state.progress]]`` cases with a ranking
  quantity each, which :mod:`ccac.analysis.steady_state` checks. With ``k = K`` the region counts only
  if it held at the last K steps (k-induction); window sizes may be formulas of the path's R,
  D, C and buffer.

Every expression is compiled when the file is read, over the names the model declares (no
constraint is built), so bad input is reported before anything is solved.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any, Literal, overload

import tomli_w
import z3

from ccac.core.errors import CcacError
from ccac.encode.expr import Symbols, compile_condition, compile_number
from ccac.encode.terms import is_variable, subterms
from ccac.core.limits import check_horizon
from ccac.analysis.obligation import VERDICTS
from ccac.problems.problem import check_expressions, declared_symbols
from ccac.problems.query import Query, anchor_files, locate, parse_file, parse_query
from ccac.solving.backends import backend

BASE_SECTIONS = ("network", "cca", "flow", "params", "definitions")
PROOF_SECTIONS = BASE_SECTIONS + ("lemma", "steady_state", "description", "expect", "solver", "slow")
LEMMA_KEYS = ("name", "description", "T", "network", "cca", "params", "assume", "show", "exists")
STEADY_KEYS = ("name", "description", "T", "start", "k", "assume", "region", "progress")
PROGRESS_KEYS = ("name", "when", "rank", "decrease", "bound")
READING = "compiling the proof's expressions"  # what a time limit on reading a proof file stops


# ---------------------------------------------------------------------- the file
@dataclass
class Lemma:
    name: str
    description: str
    data: dict[str, Any]  # query sections for this lemma, overrides applied
    assume: list[str]
    show: str | None
    exists: str | None


@dataclass
class Progress:
    """A case outside the region: the state is in it when ``when`` holds at the window start;
    ``rank`` (a per-step quantity) must drop by ``decrease`` per window unless the run reaches
    the region or an earlier case, and stays at least ``bound`` within the case."""

    name: str
    when: str
    rank: str
    decrease: str
    bound: str


@dataclass
class SteadyState:
    name: str
    description: str
    T: int
    start: int
    assume: list[str]
    region: list[str]
    progress: list[Progress]
    k: int = 1  # the state is "in the region" when the region's predicates held at the last k steps


@dataclass
class Proof:
    name: str
    source: str
    description: str
    base: dict[str, Any]
    lemmas: list[Lemma]
    steady: SteadyState | None
    expect: str | None = None  # the verdict this proof is known to get (documentation, tests)
    raw: dict[str, Any] = field(default_factory=dict)
    solver: str = "z3"  # the solver it is checked with unless --solver says otherwise
    slow: bool = False  # minutes to check: the default test run skips it

    def resolved(self) -> dict[str, Any]:
        """The proof as canonical plain data (for result-store keys)."""
        return {"name": self.name, **_plain(self.raw)}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------------- reading and writing it
def bundled_proofs() -> dict[str, Path]:
    root = resources.files("ccac.proofs")
    return {Path(p.name).stem: Path(str(p)) for p in root.iterdir() if p.name.endswith(".toml")}


def proof_text(data: dict[str, Any], header: list[str], expect: str | None) -> str:
    """A proof file for ``data`` (as :func:`parse_proof` reads it): ``header`` lines as TOML
    comments, then the data, expecting ``expect`` (the verdict it was just checked to get)."""
    out = {k: v for k, v in data.items() if k != "expect"}
    if expect is not None:
        out["expect"] = expect
    return "".join(f"# {line}\n" for line in header) + tomli_w.dumps(out)


def is_proof_file(data: dict[str, Any]) -> bool:
    return "lemma" in data or "steady_state" in data


def load_proof(file_or_name: str, overrides: list[str] | None = None) -> Proof:
    """Read a proof file (or a bundled proof by name); ``overrides`` use ``--set`` syntax."""
    path = locate(file_or_name, bundled_proofs(), "proof")
    return parse_file(path, overrides, BASE_SECTIONS + ("steady_state",), parse_proof)


def parse_proof(data: dict[str, Any], name: str = "proof", source: str = "<memory>") -> Proof:
    unknown = sorted(set(data) - set(PROOF_SECTIONS))
    if unknown:
        raise CcacError(f"unknown section [{unknown[0]}] (sections: {', '.join(PROOF_SECTIONS)})")
    if not is_proof_file(data):
        raise CcacError("a proof needs [[lemma]] entries or a [steady_state] section")
    base = anchor_files({k: copy.deepcopy(data[k]) for k in BASE_SECTIONS if k in data}, source)
    parse_query({**base, "query": {}}, name, source)  # validates the shared sections once
    steady = _parse_steady(base, data["steady_state"]) if "steady_state" in data else None
    # lemmas may say "in the steady state": region[t]
    lemma_base = base if steady is None else _with_region(base, steady)
    lemmas_data = data.get("lemma", [])
    if not isinstance(lemmas_data, list) or not all(isinstance(x, dict) for x in lemmas_data):
        raise CcacError("lemmas are written [[lemma]] (an array of tables)", "lemma")
    lemmas = [_parse_lemma(lemma_base, item, i) for i, item in enumerate(lemmas_data)]
    names = [lemma.name for lemma in lemmas]
    for n in names:
        if names.count(n) > 1:
            raise CcacError(f"two lemmas are named {n!r}", "lemma")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise CcacError("description must be a string", "description")
    expect = data.get("expect")
    if expect is not None and expect not in VERDICTS:
        raise CcacError(f"expect must be one of {', '.join(VERDICTS)}, got {expect!r}", "expect")
    solver = proof_solver(data)
    slow = data.get("slow", False)
    if not isinstance(slow, bool):
        raise CcacError(f"slow must be true or false, got {slow!r}", "slow")
    return Proof(name, source, description.strip(), base, lemmas, steady, expect, data, solver, slow)


def proof_solver(data: dict[str, Any]) -> str:
    """The solver a proof file names (``solver = "..."``), else z3; CcacError if it names none
    ccac has."""
    solver = data.get("solver", "z3")
    if not isinstance(solver, str):
        raise CcacError(f"solver must be a solver's name, got {solver!r}", "solver")
    try:
        backend(solver)
    except CcacError as e:
        raise CcacError(str(e).removeprefix("--solver: "), "solver") from None
    return solver


def _strings(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CcacError("must be a string or a list of strings", where)
    return value


@overload
def _text(table: dict[str, Any], key: str, where: str, required: Literal[True] = True) -> str: ...
@overload
def _text(table: dict[str, Any], key: str, where: str, required: bool) -> str | None: ...


def _text(table: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise CcacError(f"missing key {key!r}", where)
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    if not isinstance(value, str) or not value.strip():
        raise CcacError(f"{key} must be an expression string", f"{where}.{key}")
    return value


def _parse_lemma(base: dict[str, Any], item: dict[str, Any], i: int) -> Lemma:
    where = f"lemma[{i}]"
    extra = sorted(set(item) - set(LEMMA_KEYS))
    if extra:
        raise CcacError(f"unknown key {extra[0]!r} (keys: {', '.join(LEMMA_KEYS)})", where)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise CcacError("every lemma needs a name", where)
    where = f"lemma {name!r}"
    data = copy.deepcopy(base)
    for section in ("network", "cca", "params"):
        if section in item:
            if not isinstance(item[section], dict):
                raise CcacError(f"{section} overrides must be a table", where)
            data.setdefault(section, {}).update(item[section])
    if "T" in item:
        data.setdefault("network", {})["T"] = item["T"]
    show, exists = _text(item, "show", where, False), _text(item, "exists", where, False)
    if (show is None) == (exists is None):
        raise CcacError("a lemma needs exactly one of `show` (for every trace) or `exists` (some trace)", where)
    assume = _strings(item.get("assume", []), f"{where}.assume")
    lemma = Lemma(name, str(item.get("description", "")).strip(), data, assume, show, exists)
    try:  # compile now, so a bad expression is reported before anything is solved
        check_expressions(lemma_query(lemma, lemma.show or lemma.exists, negate=show is not None))
    except CcacError as e:
        text = str(e).replace("query.find: ", f"{'show' if show else 'exists'}: ", 1)
        raise CcacError(text.replace("query.assume", "assume", 1), where) from None
    return lemma


def _parse_steady(base: dict[str, Any], table: Any) -> SteadyState:
    where = "steady_state"
    if not isinstance(table, dict):
        raise CcacError("must be a table", where)
    extra = sorted(set(table) - set(STEADY_KEYS))
    if extra:
        raise CcacError(f"unknown key {extra[0]!r} (keys: {', '.join(STEADY_KEYS)})", where)
    network = parse_query({**base, "query": {}}).network
    k = _window_size(table.get("k", 1), network, f"{where}.k")
    if k < 1:
        raise CcacError("k must be a whole number >= 1 (the steps the region must have held)", f"{where}.k")
    T = _window_size(table.get("T", network.T), network, f"{where}.T")
    start = _window_size(table.get("start", network.R - 1 + k - 1), network, f"{where}.start")
    if not k - 1 <= start < T - 1:
        raise CcacError(f"start must leave the region's k = {k} steps inside the window and come before its "
                        f"last step ({k - 1} <= start < T-1 = {T - 1})", f"{where}.start")
    # stitching checks a window against one T-1-start steps longer (check_stitching)
    check_horizon(T, network.flows, f"{where}.T")
    check_horizon(2 * T - 1 - start, network.flows, f"{where}.T",
                  f"the stitching horizon 2*T-1-start = {2 * T - 1 - start}: T")
    region = _strings(table.get("region", []), f"{where}.region")
    if not region:
        raise CcacError("the steady state needs a region: predicates over the state at step t", where)
    cases_data = table.get("progress", [])
    if not isinstance(cases_data, list) or not all(isinstance(c, dict) for c in cases_data):
        raise CcacError("progress cases are written [[steady_state.progress]]", f"{where}.progress")
    cases = []
    for i, c in enumerate(cases_data):
        cw = f"{where}.progress[{i}]"
        extra = sorted(set(c) - set(PROGRESS_KEYS))
        if extra:
            raise CcacError(f"unknown key {extra[0]!r} (keys: {', '.join(PROGRESS_KEYS)})", cw)
        cases.append(Progress(str(c.get("name", f"case {i + 1}")), *(
            _text(c, k, cw) for k in ("when", "rank", "decrease", "bound"))))
    steady = SteadyState(str(table.get("name", "steady state")), str(table.get("description", "")).strip(),
                         T, start, _strings(table.get("assume", []), f"{where}.assume"), region, cases, k)
    _check_time_free(base, steady)
    return steady


def _window_size(value: Any, network: Any, where: str) -> int:
    """A window size (``T``, ``k``, ``start``): a whole number, or an expression of the path's
    R, D, C and buffer (bytes) such as ``"2*(R+D) + 2*buffer//C"``, so that one proof file scales
    with the path it is checked on (``--set network.buffer=3``)."""
    if isinstance(value, str):
        sym = Symbols()
        sym.constants.update({"R": network.R, "D": network.D, "C": network.C})
        if network.buffer_bytes() is not None:
            sym.constants["buffer"] = network.buffer_bytes()
        value = compile_number(value, sym, where)
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)) or Fraction(value).denominator != 1:
        raise CcacError(f"must be a whole number or an expression of R, D, C and buffer that gives one, "
                        f"got {value}", where)
    return int(value)


def _check_time_free(base: dict[str, Any], s: SteadyState) -> None:
    """Parameter assumptions, decreases and bounds must not depend on the trace's steps: they
    must mean the same in every window of a run."""
    symbols, enc = declared_symbols(steady_query(Proof("", "", "", base, [], s), []))
    texts = [(a, f"steady_state.assume[{i}]") for i, a in enumerate(s.assume)]
    texts += [(text, f"steady_state.progress[{i}].{key}") for i, c in enumerate(s.progress)
              for key, text in (("decrease", c.decrease), ("bound", c.bound))]
    for text, where in texts:
        compile = compile_condition if where.startswith("steady_state.assume") else compile_number
        value = compile(text, symbols, where)
        if _mentions_steps(value, enc.slots):
            raise CcacError(f"`{text}` depends on the trace's steps; only parameters (alpha, buffer, "
                            f"[params], constant definitions) may appear here (per-step conditions "
                            f"belong in the region or a progress case)", where)
    for i, case in enumerate(s.progress):
        for key, text in (("when", f"case_{i}[{s.start}]"), ("rank", f"rank_{i}[{s.start}]")):
            compile_ = compile_condition if key == "when" else compile_number
            compile_(text, symbols, f"steady_state.progress[{i}].{key}")
    compile_condition(f"region[{s.start}]", symbols, "steady_state.region")


def _mentions_steps(value: Any, slots: dict[str, Any]) -> bool:
    """Whether ``value`` reads a variable of the trace's steps."""
    return isinstance(value, z3.ExprRef) and any(is_variable(e) and e.decl().name() in slots for e in subterms([value]))


# ---------------------------------------------------------------------- the queries a proof stands for
def lemma_query(lemma: Lemma, claim: str | None, negate: bool) -> Query:
    """The lemma's sections and assumptions as a query, finding ``claim`` (with ``negate``:
    its negation, a counterexample to a ``show``)."""
    query: dict[str, Any] = {"assume": lemma.assume}
    if claim is not None:
        query["find"] = f"not ({claim})" if negate else claim
    return parse_query({**lemma.data, "query": query}, lemma.name)


def _with_region(base: dict[str, Any], s: SteadyState) -> dict[str, Any]:
    """The shared sections plus the steady state's own definitions: ``region_now`` (the
    region's predicates at step t), ``region`` (they held at each of the k steps up to t; with
    k = 1 the same), and ``case_i`` / ``rank_i`` for progress case i."""
    data = copy.deepcopy(base)
    defs = data.setdefault("definitions", {})
    now = " and ".join(f"({p})" for p in s.region)
    own = {"region_now": now,
           "region": now if s.k == 1 else " and ".join(f"region_now[t - {j}]" for j in range(s.k))}
    for i, case in enumerate(s.progress):
        own[f"case_{i}"], own[f"rank_{i}"] = case.when, case.rank
    for name in own:
        if name in defs and defs[name] != own[name]:
            raise CcacError(f"`{name}` is defined by [steady_state]; rename this definition", f"definitions.{name}")
    defs.update(own)
    return data


def steady_query(proof: Proof, assume: list[str], find: str | None = None, T: int | None = None) -> Query:
    """The steady state's window as a query: the model, the CCA, the region's definitions, the
    parameter assumptions plus ``assume``, and optionally ``find`` (T: the window's, or ``T``)."""
    s = proof.steady
    assert s is not None
    data = _with_region(proof.base, s)
    data.setdefault("network", {})["T"] = T if T is not None else s.T
    query: dict[str, Any] = {"assume": s.assume + assume}
    if find is not None:
        query["find"] = find
    return parse_query({**data, "query": query}, s.name)
