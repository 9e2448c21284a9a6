"""Query files: loading, ``--set`` overrides, and validation of every section.

A query is a TOML file::

    [network]          # path parameters (ccac.encode.network)
    T = 10
    [cca]              # the algorithm every flow runs, and its parameters
    name = "aimd"
    [[flow]]           # or: one table per flow, each with its own CCA and path (optional)
    name = "const"     # its CCA (default: [cca]) and that CCA's parameters
    D = 2              # its own jitter box (default 0), non-congestive loss rate eta and
                       # minimum RTT R (defaults: [network])
    [params]           # named numbers the expressions may use
    util = 0.1
    [definitions]      # named expressions; one using t is per step: queue[T-1]
    queue = "A[t] - L[t] - S[t]"
    [query]
    description = "..."
    assume = ["..."]   # conditions every trace must meet
    find = "..."       # the condition a counterexample must meet
    periodic = false   # true: the trace is one period of a run that repeats forever
    expect = "sat"     # the answer this query is known to have
    horizons = [11, 15] # optional: the values of T `ccac bench` uses for this query, for
                        # queries whose meaning constrains T (e.g. a periodic cycle)
    slow = false        # optional: a long reproduction (minutes); the default test run skips it
    window = 40         # optional: find the trace window by window, 40 new steps each (never unsat;
                        # ccac.analysis.window_search); the CLI's --window overrides it
    guide = "..."       # optional, with a window search: a number each window but the last pushes up

A bare name (no ``/`` and no ``.toml``) refers to the bundled library in ``ccac.queries``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Mapping

from ccac.ccas.interface import CCA
from ccac.ccas import CCAS, get_cca
from ccac.ccas.language import LanguageCCA, load_file
from ccac.core.errors import CcacError
from ccac.encode import nonlinear
from ccac.core.limits import check_durations, check_horizon
from ccac.encode.network import FLOW_PATH_PARAMS, FlowPath, Network, parse_flow_path, parse_network
from ccac.core.params import resolve, to_fraction

SECTIONS = ("network", "cca", "flow", "params", "definitions", "query")
QUERY_KEYS = ("description", "assume", "find", "periodic", "expect", "horizons", "slow", "nonlinear", "guide",
              "window")
ANSWERS = ("sat", "unsat")


@dataclass
class FlowCCA:
    """The algorithm one flow runs, with its resolved parameters."""

    cca: CCA
    params: dict[str, Any]


@dataclass
class Query:
    name: str
    description: str
    network: Network
    flows: list[FlowCCA]
    params: dict[str, Fraction]
    assume: list[str]
    find: str | None
    periodic: bool
    expect: str | None
    source: str
    horizons: list[int] | None = None
    slow: bool = False
    nonlinear: str | None = None   # non-linear mode (ccac.encode.nonlinear.MODES); None: the default
    guide: str | None = None       # a window search pushes this number up on each window but the last
    window: int | None = None      # search the trace window by window, this many steps each (None: whole)
    definitions: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        """The query with every default filled in, as plain data (for JSON and result keys)."""
        return {
            "name": self.name,
            "network": {k: _plain(v) for k, v in self.network.as_dict().items()},
            "cca": [{**_cca_key(f.cca), **{k: _plain(v) for k, v in f.params.items()}} for f in self.flows],
            **({"paths": [{k: _plain(v) for k, v in {**path_keys(p), "D": p.D - self.network.link_jitter}.items()}
                          for p in self.network.paths]}
               if self.network.paths else {}),
            "params": {k: _plain(v) for k, v in self.params.items()},
            "definitions": dict(self.definitions),
            "query": {"assume": list(self.assume), "find": self.find, "periodic": self.periodic,
                      "expect": self.expect, **({"nonlinear": self.nonlinear} if self.nonlinear else {}),
                      **({"guide": self.guide} if self.guide else {}),
                      **({"window": self.window} if self.window else {})},
        }


def path_keys(path: FlowPath) -> dict[str, Any]:
    """A flow's own path as a ``[[flow]]`` table writes it (its opening step is derived)."""
    return {p.name: getattr(path, p.name) for p in FLOW_PATH_PARAMS if getattr(path, p.name) is not None}


def parse_resolved(data: dict[str, Any], source: str) -> Query:
    """The query a result file recorded (:meth:`Query.resolved`), parsed again."""
    try:
        network = {k: v for k, v in data["network"].items() if v is not None and k != "flows"}
        ccas = [{k: v for k, v in cca.items() if v is not None} for cca in data["cca"]]
        paths = data.get("paths")
        table: dict[str, Any] = {"network": network, "params": data.get("params", {}),
                                 "definitions": data.get("definitions", {}),
                                 "query": {k: v for k, v in data["query"].items() if v is not None}}
        if paths:
            table["flow"] = [{**cca, **path} for cca, path in zip(ccas, paths)]
        elif all(cca == ccas[0] for cca in ccas):
            table["cca"] = ccas[0]
            network["flows"] = len(ccas)
        else:
            table["flow"] = list(ccas)
        name = data["name"]
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        raise CcacError(f"not a ccac result: its query is incomplete ({e!r} missing or malformed)", source)
    return parse_query(table, name, source)


def _cca_key(cca: CCA) -> dict[str, str]:
    """How a resolved query names its CCA: by name if the library has it, else by its file."""
    if CCAS.get(cca.name) is cca or not isinstance(cca, LanguageCCA):
        return {"name": cca.name}
    return {"file": cca.source}


def _plain(v: Any) -> Any:
    if isinstance(v, Fraction):
        return int(v) if v.denominator == 1 else str(v)
    return v


def bundled_queries() -> dict[str, Path]:
    """The query library shipped with ccac, by name."""
    root = resources.files("ccac.queries")
    return {Path(p.name).stem: Path(str(p)) for p in root.iterdir() if p.name.endswith(".toml")}


def locate(file_or_name: str, library: dict[str, Path] | None = None, what: str = "query") -> Path:
    """A file path, or a bare name looked up in ``library`` (the bundled queries by default)."""
    path = Path(file_or_name)
    if path.suffix == ".toml" or "/" in file_or_name or path.exists():
        if not path.is_file():
            raise CcacError(f"no such {what} file: {file_or_name}")
        return path
    library = bundled_queries() if library is None else library
    if file_or_name not in library:
        raise CcacError(f"no bundled {what} named {file_or_name!r} (try `ccac list`; bundled: "
                        f"{', '.join(sorted(library))})")
    return library[file_or_name]


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise CcacError(f"malformed TOML: {e}", str(path)) from None
    except OSError as e:
        raise CcacError(f"cannot read: {e.strerror}", str(path)) from None


def apply_overrides(data: dict[str, Any], overrides: list[str],
                    sections: tuple[str, ...] = SECTIONS) -> dict[str, Any]:
    """Apply ``section.key=value`` strings; values use TOML syntax (bare words are strings)."""
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for item in overrides:
        if "=" not in item:
            raise CcacError(f"--set expects SECTION.KEY=VALUE, got {item!r}")
        key, text = item.split("=", 1)
        section, _, name = key.strip().partition(".")
        if section not in sections or not name:
            raise CcacError(f"--set key must be one of {', '.join(s + '.KEY' for s in sections)}, got {key!r}")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        if section == "flow":
            _flow_table(data, name, key)[name.partition(".")[2]] = value
        else:
            data.setdefault(section, {})[name] = value
    return data


def _flow_table(data: dict[str, Any], name: str, key: str) -> dict[str, Any]:
    """The ``[[flow]]`` table a ``flow.N.KEY`` override refers to (copied, so the file's data
    is left alone)."""
    index, _, field_name = name.partition(".")
    flows = data.get("flow")
    if not index.isdigit() or not field_name:
        raise CcacError(f"--set for a flow is flow.N.KEY (N = its index from 0), got {key!r}")
    if not isinstance(flows, list) or not int(index) < len(flows) or not isinstance(flows[int(index)], dict):
        count = len(flows) if isinstance(flows, list) else 0
        has = f"{count} [[flow]] tables (indices 0..{count - 1})" if count else "no [[flow]] tables"
        raise CcacError(f"--set {key}: the file has {has}")
    data["flow"] = [dict(f) if isinstance(f, dict) else f for f in flows]
    return data["flow"][int(index)]


def load_query(file_or_name: str, overrides: list[str] | None = None) -> Query:
    return parse_file(locate(file_or_name), overrides, SECTIONS, parse_query)


def parse_file(path: Path, overrides: list[str] | None, sections: tuple[str, ...],
               parse: Callable[[dict[str, Any], str, str], Any]) -> Any:
    """Read a TOML file, apply ``--set`` overrides to ``sections``, and parse it; errors name
    the file."""
    data = apply_overrides(read_toml(path), overrides or [], sections)
    try:
        return parse(data, path.stem, str(path))
    except CcacError as e:
        raise e.located(str(path)) from None


def parse_query(data: dict[str, Any], name: str = "query", source: str = "<memory>",
                library: Mapping[str, CCA] | None = None) -> Query:
    """A query from its file's data. ``library``: CCAs a ``name`` may refer to besides the
    bundled ones (``ccac synthesize`` names each candidate of a template so)."""
    data = anchor_files(data, source)
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise CcacError(f"unknown section [{unknown[0]}] (sections: {', '.join(SECTIONS)})")
    for section in SECTIONS:
        if section != "flow" and section in data and not isinstance(data[section], dict):
            raise CcacError(f"[{section}] must be a table")
    network = parse_network(data.get("network", {}))
    if "flow" in data:
        network, flows = parse_flows(data["flow"], data.get("cca"), data.get("network", {}), network, library)
    else:
        flows = [parse_cca(data.get("cca"), "cca", library)] * network.flows
    network = with_openings(network, flows)
    params = {k: to_fraction(v, f"params.{k}") for k, v in data.get("params", {}).items()}
    definitions = parse_definitions(data.get("definitions", {}))
    q = data.get("query", {})
    extra = sorted(set(q) - set(QUERY_KEYS))
    if extra:
        raise CcacError(f"unknown key {extra[0]!r} (keys: {', '.join(QUERY_KEYS)})", "query")
    assume = q.get("assume", [])
    if isinstance(assume, str):
        assume = [assume]
    if not isinstance(assume, list) or not all(isinstance(a, str) for a in assume):
        raise CcacError("assume must be a string or a list of strings", "query.assume")
    find = q.get("find")
    if find is not None and not isinstance(find, str):
        raise CcacError("find must be a string", "query.find")
    periodic = q.get("periodic", False)
    if not isinstance(periodic, bool):
        raise CcacError("periodic must be true or false", "query.periodic")
    if periodic and network.cold:
        raise CcacError("a periodic trace repeats forever and a connection opens once: leave out periodic or "
                        "start = \"cold\"", "query.periodic")
    expect = q.get("expect")
    if expect is not None and expect not in ANSWERS:
        raise CcacError(f"expect must be \"sat\" or \"unsat\", got {expect!r}", "query.expect")
    horizons = q.get("horizons")
    if horizons is not None and (not isinstance(horizons, list) or not horizons or not all(
            isinstance(h, int) and not isinstance(h, bool) and h >= 2 for h in horizons)):
        raise CcacError("horizons must be a non-empty list of whole numbers >= 2", "query.horizons")
    for h in horizons or []:
        check_horizon(h, network.flows, "query.horizons", "a horizon")
    slow = q.get("slow", False)
    if not isinstance(slow, bool):
        raise CcacError("slow must be true or false", "query.slow")
    mode = q.get("nonlinear")
    if mode is not None and mode not in nonlinear.MODES:
        raise CcacError(f"nonlinear must be one of {', '.join(nonlinear.MODES)}, got {mode!r}", "query.nonlinear")
    guide = q.get("guide")
    if guide is not None and (not isinstance(guide, str) or not guide.strip()):
        raise CcacError("guide must be an expression string (a number over a window's steps)", "query.guide")
    window = q.get("window")
    if window is not None and (not isinstance(window, int) or isinstance(window, bool) or not 1 <= window <= network.T):
        raise CcacError(f"window must be a whole number of steps from 1 to T = {network.T}", "query.window")
    if periodic and window is not None:
        raise CcacError("a periodic trace is one period solved whole: leave out window", "query.window")
    description = q.get("description", "")
    if not isinstance(description, str):
        raise CcacError("description must be a string", "query.description")
    return Query(name=name, description=description.strip(), network=network, flows=flows,
                 params=params, assume=assume, find=find, periodic=periodic, expect=expect,
                 source=source, horizons=horizons, slow=slow, nonlinear=mode, guide=guide, window=window,
                 definitions=definitions, raw=data)


def with_openings(network: Network, flows: list[FlowCCA]) -> Network:
    """``network`` with each cold flow's opening step set (:attr:`FlowPath.opens`): its CCA's first
    decision (the first step its rules apply), or its ``start_time`` if later. A cold start needs
    the CCA's start state and a numeric MSS, and at least one step of the connection in the trace."""
    if not network.cold:
        return network
    if network.alpha is None:
        raise CcacError("a cold start fixes the CCA's start state in bytes: give alpha, or packets = true",
                        "network.start")
    paths = []
    for n, flow in enumerate(flows):
        path, where = network.path(n), f"flow[{n}]" if network.paths else "network.start"
        if path.start != "cold":
            paths.append(path)
            continue
        cca, first = flow.cca, flow.cca.first_rule_step(flow.params, path.R)
        if cca.start_state(flow.params, network.C, path.R, network.alpha) is None:
            raise CcacError(f"{cca.name} has no start state (its encoding describes a running connection): "
                            f"a cold start needs a CCA that starts, e.g. one written in the CCA language", where)
        opens = max(first, path.start_time or 0)
        if opens > first and not cca.opens_late:
            raise CcacError(f"{cca.name}'s rules start at step {first}: a connection that opens later "
                            f"(start_time = {path.start_time}) needs a CCA written in the CCA language",
                            f"{where}.start_time")
        if opens >= network.T:
            raise CcacError(f"the connection opens at step {opens} (its CCA's first decision"
                            f"{' or its start_time' if path.start_time else ''}): T = {network.T} leaves it no "
                            f"step; T must be at least {opens + 1}", where)
        paths.append(replace(path, opens=opens))
    return replace(network, paths=tuple(paths))


def parse_definitions(table: dict[str, Any]) -> dict[str, str]:
    """``[definitions]``: name -> expression text (a bare number is allowed too)."""
    out: dict[str, str] = {}
    for name, text in table.items():
        if not name.isidentifier():
            raise CcacError(f"definition name {name!r} is not a plain name", "definitions")
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            text = repr(text)
        if not isinstance(text, str) or not text.strip():
            raise CcacError("a definition must be an expression string", f"definitions.{name}")
        out[name] = text
    return out


def parse_flows(tables: Any, default_cca: Any, given_network: dict[str, Any],
                network: Network, library: Mapping[str, CCA] | None = None) -> tuple[Network, list[FlowCCA]]:
    """``[[flow]]``: one table per flow with its CCA (``name`` and that CCA's parameters; without
    a name, the ``[cca]`` table's) and its own path keys (D, eta, R). Returns the network with
    ``flows`` and ``paths`` set from the tables."""
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise CcacError("flows are written [[flow]] (an array of tables, one per flow)", "flow")
    if "flows" in given_network and network.flows != len(tables):
        raise CcacError(f"network.flows = {network.flows} but there are {len(tables)} [[flow]] tables "
                        f"(leave flows out: the tables say how many)", "network.flows")
    network = replace(network, flows=len(tables))
    check_horizon(network.T, network.flows, "network.T")
    path_keys = {p.name for p in FLOW_PATH_PARAMS}
    flows, paths = [], []
    for i, table in enumerate(tables):
        where = f"flow[{i}]"
        cca_keys = {k: v for k, v in table.items() if k not in path_keys}
        if "name" in cca_keys or "file" in cca_keys:
            flows.append(parse_cca(cca_keys, where, library))
        elif cca_keys:
            raise CcacError(f"unknown key {sorted(cca_keys)[0]!r}: a flow table takes D, eta, R and, "
                            f"with its CCA's name, that CCA's parameters (a flow without a name runs "
                            f"[cca] with [cca]'s parameters)", where)
        elif default_cca is None:
            raise CcacError("no CCA: give this flow a name, or a [cca] table for flows without one", where)
        else:
            flows.append(parse_cca(default_cca, "cca", library))
        paths.append(parse_flow_path(network, {k: v for k, v in table.items() if k in path_keys}, where))
    return replace(network, paths=tuple(paths)).with_packet_size(), flows


def anchor_files(data: dict[str, Any], source: str) -> dict[str, Any]:
    """``data`` with every CCA ``file`` of its [cca] and [[flow]] tables made absolute: relative
    to the folder of the file ``source`` (a query or proof file), else to the working folder."""
    base = Path(source).parent if Path(source).is_file() else Path.cwd()

    def anchored(table: Any) -> Any:
        if isinstance(table, dict) and isinstance(table.get("file"), str):
            return {**table, "file": str((base / table["file"]).resolve())}
        return table

    out = dict(data)
    if "cca" in out:
        out["cca"] = anchored(out["cca"])
    if isinstance(out.get("flow"), list):
        out["flow"] = [anchored(t) for t in out["flow"]]
    return out


def parse_cca(table: Any, where: str, library: Mapping[str, CCA] | None = None) -> FlowCCA:
    """A CCA table: ``name`` (a CCA of the library) or ``file`` (a CCA file in the CCA
    language; relative paths were anchored at the query file's folder, :func:`anchor_files`),
    and the CCA's parameters."""
    if not isinstance(table, dict) or ("name" not in table and "file" not in table):
        raise CcacError("needs a table with a name, e.g. [cca] name = \"aimd\", or a CCA file, "
                        "[cca] file = \"my_cca.toml\"", where)
    if "file" in table:
        if "name" in table:
            raise CcacError("give either name (a CCA of the library) or file (a CCA file), not both", where)
        if not isinstance(table["file"], str):
            raise CcacError("file must be a string", f"{where}.file")
        path = Path(table["file"])
        if not path.is_file():
            raise CcacError(f"no such CCA file: {path}", f"{where}.file")
        cca: CCA = load_file(path.resolve())
    else:
        if not isinstance(table["name"], str):
            raise CcacError("name must be a string", f"{where}.name")
        cca = (library or {}).get(table["name"]) or get_cca(table["name"], f"{where}.name")
    given = {k: v for k, v in table.items() if k not in ("name", "file")}
    params = resolve(cca.params, given, where)
    check_durations(cca.params, params, where)
    return FlowCCA(cca, params)
