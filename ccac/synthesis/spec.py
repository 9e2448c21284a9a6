"""The synthesis file: a template and the goal a CCA of it must meet.

::

    [synthesize]
    template = "my_template.toml"     # a CCA file with [holes] (relative to this file)
    description = "what the goal means"

    [[goal]]                          # a query whose find the CCA must never meet: unsat
    name = "utilization"
    query = "cc_qdel_utilization"     # a query file or bundled name; its [cca] becomes the template
    set = ["network.T=12"]            # overrides, as --set

    [[goal]]                          # or written out, as a query's sections
    name = "queue"
    network = { T = 10, R = 1, D = 1 }
    cca = { jitter = 1, memory = 2 }  # the template's parameters
    params = { q = 4 }
    assume = ["alpha <= 0.05 * C * R"]
    find = "any(A[t] - L[t] - S[t] > q * C * (R + D) for t in range(3, T))"

Several goals are several paths at once (CCmatic's "ideal and adversarial link" pairs): a CCA
meets the goal when every goal's query is unsat for it. In a goal's query the flows that name no
CCA of their own (its ``[cca]`` table, or ``[[flow]]`` tables without a name) run the candidate.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ccac.ccas.language import LanguageCCA
from ccac.core.errors import CcacError
from ccac.core.params import to_fraction
from ccac.encode.network import FLOW_PATH_PARAMS
from ccac.encode.rules import Definition, parse_definition, with_defaults
from ccac.encode.templates import Template, split_template
from ccac.problems.query import Query, apply_overrides, locate, parse_query, read_toml

SPEC_KEYS = ("template", "description")
GOAL_KEYS = ("name", "query", "set", "network", "cca", "flow", "params", "definitions", "assume", "find",
             "periodic", "description")
MAX_GOALS = 16


@dataclass
class Goal:
    """One query the CCA must answer unsat; ``data`` is the query's file data, its CCA the
    candidate's (by the template's name)."""

    name: str
    data: dict[str, Any]
    source: str
    label: str = ""   # where it comes from, for the terminal: a query's name or "written out"
    settings: dict[str, Any] = field(default_factory=dict)   # the CCA parameters it gives the candidate


@dataclass
class Spec:
    template: Template
    goals: list[Goal]
    source: str
    description: str = ""
    settings: dict[str, Any] = field(default_factory=dict)   # CCA parameters the goals set: the CCA's own
    _ccas: OrderedDict[int, LanguageCCA] = field(default_factory=OrderedDict)
    _queries: OrderedDict[tuple[int, int], Query] = field(default_factory=OrderedDict)
    _shapes: dict[tuple[str, ...], Definition] = field(default_factory=dict)

    @property
    def cca_name(self) -> str:
        return str(self.template.data["name"])

    def assignment(self, index: int) -> dict[str, Any]:
        """Candidate ``index`` of the template, in :meth:`Template.candidates` order."""
        out: dict[str, Any] = {}
        for hole in reversed(self.template.holes):
            index, i = divmod(index, len(hole.choices))
            out[hole.name] = hole.choices[i]
        return {h.name: out[h.name] for h in self.template.holes}

    def choice_indices(self, candidates: "np.ndarray") -> dict[str, "np.ndarray"]:
        """For each hole, the index of its choice in each of ``candidates`` (as
        :meth:`assignment`, for many at once)."""
        out, rest = {}, np.asarray(candidates, dtype=np.int64)
        for hole in reversed(self.template.holes):
            rest, out[hole.name] = np.divmod(rest, len(hole.choices))
        return {h.name: out[h.name] for h in self.template.holes}

    def filled(self, index: int) -> dict[str, Any]:
        """Candidate ``index`` as a CCA file's data: the template with its holes filled and the
        goals' settings of its parameters as their defaults. This is the file ``ccac
        synthesize`` writes, and what every goal verifies."""
        return self.template.fill(self.assignment(index), self.settings)

    def cca(self, index: int) -> LanguageCCA:
        """Candidate ``index`` as a CCA: its :meth:`filled` file, read as any CCA file is."""
        if index in self._ccas:
            self._ccas.move_to_end(index)
        else:
            assignment = self.assignment(index)
            where = f"{self.template.source} with {self.template.describe(assignment)}"
            filled = self.filled(index)
            shape = self.shape(index)
            if shape not in self._shapes:   # the rules are read once per choice of expressions
                self._shapes[shape] = parse_definition(filled, where)
            numbers = {h.name: filled["params"][h.name]["default"] for h in self.template.holes if not h.options}
            self._ccas[index] = LanguageCCA(with_defaults(self._shapes[shape], numbers, where))
            _bound(self._ccas)
        return self._ccas[index]

    def shape(self, index: int) -> tuple[str, ...]:
        """Candidate ``index``'s expression holes' choices: candidates of one shape differ only
        in numbers."""
        assignment = self.assignment(index)
        return tuple(assignment[h.name] for h in self.template.holes if h.options)

    def query(self, goal: Goal, index: int) -> Query:
        """The goal's query with candidate ``index`` as its CCA (read once)."""
        key = (id(goal), index)
        if key in self._queries:
            self._queries.move_to_end(key)
        else:
            self._queries[key] = parse_query(goal.data, goal.name, goal.source, {self.cca_name: self.cca(index)})
            _bound(self._queries)
        return self._queries[key]


#: candidates whose CCA and queries a process keeps read (the most recently used): a search of
#: 250,000 candidates reads each once when it confirms them, and must not keep them all
KEEP_READ = 4096


def _bound(cache: OrderedDict[Any, Any]) -> None:
    while len(cache) > KEEP_READ:
        cache.popitem(last=False)


def load_spec(path: Path) -> Spec:
    """Read a synthesis file; errors name the file and the key."""
    data = read_toml(path)
    source = str(path.resolve())   # absolute: workers of a pool or cluster read it themselves
    unknown = sorted(set(data) - {"synthesize", "goal"})
    if unknown:
        raise CcacError(f"unknown section [{unknown[0]}] (sections: [synthesize], [[goal]])", source)
    head = data.get("synthesize")
    if not isinstance(head, dict) or not isinstance(head.get("template"), str):
        raise CcacError("needs [synthesize] with template = \"a CCA file with [holes]\"", f"{source}: synthesize")
    extra = sorted(set(head) - set(SPEC_KEYS))
    if extra:
        raise CcacError(f"unknown key {extra[0]!r} (keys: {', '.join(SPEC_KEYS)})", f"{source}: synthesize")
    template_path = (path.parent / head["template"]).resolve()
    if not template_path.is_file():
        raise CcacError(f"no such template file: {template_path}", f"{source}: synthesize.template")
    template = split_template(read_toml(template_path), str(template_path))
    name = template.data.get("name")
    if not isinstance(name, str):
        raise CcacError("a template names its CCA: name = \"...\"", str(template_path))
    goals = data.get("goal")
    if not isinstance(goals, list) or not goals or not all(isinstance(g, dict) for g in goals):
        raise CcacError("needs at least one goal: [[goal]] tables, each a query the CCA must answer unsat", source)
    if len(goals) > MAX_GOALS:
        raise CcacError(f"{len(goals)} goals, more than {MAX_GOALS}", source)
    read = [_goal(g, i, path, name) for i, g in enumerate(goals)]
    spec = Spec(template, read, source, str(head.get("description", "")), _agreed_settings(read, template, source))
    for goal in spec.goals:   # the template's rules and every goal, read once with the first candidate
        spec.query(goal, 0)
    return spec


def _goal(table: dict[str, Any], i: int, path: Path, cca_name: str) -> Goal:
    where = f"{path}: goal[{i}]"
    extra = sorted(set(table) - set(GOAL_KEYS))
    if extra:
        raise CcacError(f"unknown key {extra[0]!r} (keys: {', '.join(GOAL_KEYS)})", where)
    name = table.get("name", f"goal {i}")
    if not isinstance(name, str):
        raise CcacError("name must be a string", f"{where}.name")
    overrides = table.get("set", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise CcacError("set is a list of KEY=VALUE strings, as --set", f"{where}.set")
    if "query" in table:
        written = sorted(k for k in table if k not in ("name", "query", "set"))
        if written:
            raise CcacError(f"a goal names a query or writes one out, not both (remove {written[0]!r})", where)
        if not isinstance(table["query"], str):
            raise CcacError("query is a query file or a bundled query's name", f"{where}.query")
        query_path = _goal_query(path, table["query"], name, f"{where}.query")
        data = read_toml(query_path)
        source = str(query_path)
        label = f"query {table['query']}" + (f" with {', '.join(overrides)}" if overrides else "")
    else:
        query = {k: table[k] for k in ("assume", "find", "periodic", "description") if k in table}
        data = {k: table[k] for k in ("network", "cca", "flow", "params", "definitions") if k in table}
        data["query"] = query
        source, label = str(path), "written out"
    if not isinstance(data.get("query", {}).get("find"), str):
        raise CcacError("a goal needs find: the behaviour the CCA must never show", where)
    data = apply_overrides(data, overrides)
    data["query"] = {**data["query"], "expect": "unsat"}
    data, settings = _candidate_settings(data, cca_name, f"{path}: goal {name!r}")
    return Goal(name, data, source, label, settings)


def _goal_query(path: Path, named: str, goal: str, where: str) -> Path:
    """The query a goal names: a file beside the synthesis file, or a bundled query."""
    if (path.parent / named).is_file():
        return path.parent / named
    try:
        return locate(named)
    except CcacError:
        raise CcacError(f"goal {goal!r} names {named!r}: no such query file beside the synthesis file, and no "
                        f"bundled query of that name (`ccac list` lists them)", where) from None


def _candidate_settings(data: dict[str, Any], cca_name: str, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A goal's query data with the candidate's parameters taken out, and those parameters.

    The candidate runs in the goal's ``[cca]`` table (its ``name`` or ``file`` replaced by the
    template's name) and in every ``[[flow]]`` table that names no CCA or names the template.
    What those tables give the candidate (``memory = 2``, ``cca.up=2`` by ``set``) is not left
    to the goal: :func:`_agreed_settings` makes it the candidate's own, so the file written
    carries every value it was verified with."""
    path_keys = {p.name for p in FLOW_PATH_PARAMS}
    settings: dict[str, Any] = {}
    given = {k: v for k, v in (data.get("cca") or {}).items() if k not in ("name", "file")}
    _merge(settings, given, f"{where}: cca", "")
    out = {**data, "cca": {"name": cca_name}}
    if isinstance(data.get("flow"), list):
        flows = []
        for i, table in enumerate(data["flow"]):
            if isinstance(table, dict) and table.get("name") == cca_name and "file" not in table:
                own = {k: v for k, v in table.items() if k not in path_keys and k != "name"}
                _merge(settings, own, f"{where}: flow[{i}]", "its [cca] table or an earlier flow")
                table = {k: v for k, v in table.items() if k in path_keys or k == "name"}
            flows.append(table)
        out["flow"] = flows
    return out, settings


def _agreed_settings(goals: list[Goal], template: Template, source: str) -> dict[str, Any]:
    """The CCA parameters the goals set, which become the candidates' own (every goal verifies
    the CCA with them, and the file written carries them). A goal may not set a hole (the search
    chooses it) nor a name the template has no parameter for, and two goals may not set one
    parameter to different values: one file cannot carry both."""
    holes = {h.name for h in template.holes}
    params = template.data.get("params", {})
    agreed: dict[str, Any] = {}
    for goal in goals:
        where = f"{source}: goal {goal.name!r}"
        for key in goal.settings:
            if key in holes:
                raise CcacError(f"sets the template's hole {key!r}: a goal cannot fix what the search chooses "
                                f"(remove the setting, or give the hole one value in the template)", where)
            if key not in params:
                raise CcacError(f"sets {key!r}, which is not a parameter of the template (its parameters: "
                                f"{', '.join(sorted(params)) or 'none'})", where)
        _merge(agreed, goal.settings, where, "an earlier goal")
    return agreed


def _merge(settings: dict[str, Any], new: dict[str, Any], where: str, earlier: str) -> None:
    """Add ``new`` to ``settings``; a parameter already set to another value is bad input."""
    for key, value in new.items():
        if key in settings and _number_or_value(settings[key]) != _number_or_value(value):
            raise CcacError(f"sets {key} = {value!r} where {earlier} sets {settings[key]!r}: the CCA written "
                            f"carries one value", where)
        settings.setdefault(key, value)


def _number_or_value(value: Any) -> Any:
    try:
        return to_fraction(value, "")
    except CcacError:
        return value
