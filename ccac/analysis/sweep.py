"""Sweeps: one query (or proof) answered at every point of a grid (:mod:`ccac.analysis.grid`).

Every point is the file with that point's values applied as ``--set`` overrides. A
:class:`Sweep` reads the target and each point's query, fills the points the result store
(:mod:`ccac.solving.store`) already answers, and turns the rest into tasks for :func:`run_point`, a
module-level function that takes and returns plain data, run in a local process pool or on a
Dask cluster (:mod:`ccac.analysis.executors`). Each answer is committed to the store as it arrives, so a
rerun, or a resumed interrupted sweep, only computes what is missing.

Bad input is found before anything runs (a :class:`CcacError`): an unknown key, a bad file, or
a grid none of whose points is a valid query. A value that is invalid only at some points
(``network.T=2`` when R + D + 1 = 3) makes those points "error" results. The command,
its table and its exit codes are :mod:`ccac.commands.sweep`.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence

from ccac.core.errors import CcacError
from ccac.analysis.executors import Executor, executor
from ccac.analysis.grid import Axis, grid_points, option_keys, parse_grid
from ccac.core.deadline import TimeLimit, time_limit
from ccac.encode.trace import Trace
from ccac.problems.query import (QUERY_KEYS, SECTIONS, Query, apply_overrides, bundled_queries, load_query, locate,
                                 read_toml)
from ccac.analysis.proof_file import READING, proof_solver
from ccac.core import VERSION
from ccac.solving.backends import solver_version
from ccac.solving.store import Store, result_key, reusable

__all__ = ["Point", "Sweep", "environment", "run_point", "versions"]

PROOF_KEYS = ("lemma", "steady_state")


# ---------------------------------------------------------------------- the task
_SOLVING = threading.Lock()  # z3's default context is per process and not thread-safe


def environment(solver: str) -> dict[str, str]:
    """The versions that key results computed in this process."""
    return {"solver_version": solver_version(solver), "ccac_version": VERSION}


def versions(where: Executor, solver: str) -> dict[str, str]:
    """The versions that key results: those of the Dask cluster's workers, or of this process."""
    return where.call(environment, solver)


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Answer one point: ``task`` is plain data (kind, file, overrides, solver, timeout).

    Returns plain data: answer (sat / unsat / unknown, a proof verdict, or "error"), validated,
    seconds, reason, error (the message), the resolved query, the versions that computed it and,
    for a sat query, its trace (:meth:`ccac.encode.trace.Trace.to_json`; :meth:`Sweep.trace`
    reads it back).
    Runs in pool workers and on Dask workers; never raises for a bad point.
    """
    if task["kind"] == "family":
        return run_family(task)
    out = _failed(None)
    start = time.perf_counter()
    try:
        with _SOLVING:  # a Dask worker may run several tasks in threads of one process
            start = time.perf_counter()
            out.update(environment(task["solver"]))
            if task["kind"] == "proof":
                from ccac.analysis.proof import check_proof, load_proof

                with time_limit(task["timeout"], READING):
                    proof = load_proof(task["file"], list(task["overrides"]))
                out["resolved"] = proof.resolved()
                report = check_proof(proof, solver=task["solver"], timeout=task["timeout"])
                failed = [f"{c.name}: {c.verdict}" for c in report.checks if c.verdict != "proved"]
                out.update(answer=report.verdict, validated=report.validated, seconds=float(report.seconds),
                           reason="; ".join(failed) or None)
            else:
                from ccac.problems.query import load_query
                from ccac.solving.solve import solve

                query = load_query(task["file"], list(task["overrides"]))
                out["resolved"] = query.resolved()
                result = solve(query, task["solver"], task["timeout"])
                answer, reason = checked_premise(query, result, task["solver"], task["timeout"])
                out.update(answer=answer, validated=result.validated, reason=reason, trace=_trace_json(result),
                           seconds=time.perf_counter() - start)
    except CcacError as e:
        out.update(answer="error", error=str(e), seconds=time.perf_counter() - start)
    except TimeLimit as e:
        out.update(answer="unknown", reason=e.reason, seconds=time.perf_counter() - start)
    except Exception as e:  # a bug at one point must not lose the rest of the sweep
        out.update(answer="error", error=f"internal error: {type(e).__name__}: {e}",
                   seconds=time.perf_counter() - start)
    return out


def run_family(task: dict[str, Any]) -> dict[str, Any]:
    """Answer points that differ only in [params] values with one z3 solver (``--reuse``,
    :mod:`ccac.analysis.family`): ``{"family": [one run_point-shaped result per point]}``."""
    from ccac.analysis.family import solve_family
    from ccac.problems.query import load_query

    outs: list[dict[str, Any]] = []
    try:
        with _SOLVING:
            env = environment(task["solver"])
            queries = [load_query(task["file"], list(o)) for o in task["overrides_list"]]
            for result in solve_family(queries, task["timeout"]):
                answer, reason = checked_premise(result.query, result, "z3", task["timeout"])
                outs.append({**env, "answer": answer, "validated": result.validated, "trace": _trace_json(result),
                             "reason": reason, "error": None, "resolved": result.query.resolved(),
                             "seconds": result.build_seconds + result.solve_seconds})
    except Exception as e:  # every point of the family gets the error; none is lost silently
        message = str(e) if isinstance(e, CcacError) else f"internal error: {type(e).__name__}: {e}"
        outs = [_failed(message) for _ in task["overrides_list"]]
    return {"family": outs}


def checked_premise(query: Any, result: Any, solver: str, timeout: float | None) -> tuple[str, str | None]:
    """A point's answer and reason, an unsat's premise checked (:func:`ccac.solving.solve.premise`):
    "vacuous" when the point's assumptions admit no trace at all (a grid can make them
    contradict, e.g. packets of 0.2 against ``alpha <= 0.1 * C * R``), so that a sweep never
    reports "no trace has the find" where no trace exists."""
    if result.answer != "unsat":
        return result.answer, result.reason
    from ccac.solving.solve import premise_verdict

    verdict, line = premise_verdict(query, solver, timeout)
    if verdict == "vacuous":
        return "vacuous", "the assumptions alone admit no trace here"
    return "unsat", result.reason if verdict == "satisfiable" else line


def _trace_json(result: Any) -> dict[str, Any] | None:
    """A query result's trace as plain data (None without one)."""
    return None if result.trace is None else result.trace.to_json()


def _failed(message: str | None) -> dict[str, Any]:
    """The result of a point that could not be answered."""
    return {"answer": "error", "validated": None, "seconds": 0.0, "reason": None, "error": message,
            "resolved": None}


# ---------------------------------------------------------------------- the target
def locate_target(file_or_name: str) -> tuple[str, str, Path, dict[str, Any]]:
    """(kind, what workers load, the file, its TOML data): a query or a proof, a file or a
    bundled name (workers resolve a bundled name in their own installation)."""
    path = Path(file_or_name)
    if path.suffix == ".toml" or "/" in file_or_name or path.exists():
        path = locate(file_or_name).resolve()
        data = read_toml(path)
        return ("proof" if any(k in data for k in PROOF_KEYS) else "query"), str(path), path, data
    library = bundled_queries()
    if file_or_name in library:
        return "query", file_or_name, library[file_or_name], read_toml(library[file_or_name])
    proof = Path(str(resources.files("ccac.proofs") / f"{file_or_name}.toml"))
    if proof.is_file():
        return "proof", file_or_name, proof, read_toml(proof)
    locate(file_or_name)  # raises, listing the bundled queries
    raise CcacError(f"no query or proof named {file_or_name!r}")


def check_keys(data: dict[str, Any], keys: list[tuple[str, str]], point_overrides: list[list[str]]) -> None:
    """Reject keys no point of the grid accepts (before anything runs)."""
    from ccac.ccas import CCAS
    from ccac.encode.network import NETWORK_PARAMS

    for option, key in keys:
        section, _, name = key.partition(".")
        if section not in SECTIONS or not name:
            raise CcacError(f"KEY must be SECTION.NAME with SECTION one of {', '.join(SECTIONS)}",
                            f"{option} {key}")
    ccas = set()
    for overrides in point_overrides:
        cca = apply_overrides(data, overrides).get("cca")
        if isinstance(cca, dict) and cca.get("name") in CCAS:
            ccas.add(cca["name"])
    known = {"network": sorted(p.name for p in NETWORK_PARAMS), "query": list(QUERY_KEYS),
             "cca": ["name"] + sorted({p.name for c in ccas for p in CCAS[c].params})}
    for option, key in keys:
        section, _, name = key.partition(".")
        if section not in known or (section == "cca" and not ccas):
            continue  # any name may be a param; with no valid CCA, each point reports its error
        if name not in known[section]:
            whose = f" of CCA {', '.join(sorted(ccas))}" if section == "cca" else ""
            raise CcacError(f"unknown key {name!r} in [{section}]{whose} (known: {', '.join(known[section])})",
                            f"{option} {key}")


# ---------------------------------------------------------------------- the sweep
@dataclass
class Point:
    """One point of the grid: its value index per axis, its values as shown, its overrides,
    and its result once known (``cached``: from the store)."""

    index: tuple[int, ...]
    shown: tuple[str, ...]
    overrides: list[str]
    key: str | None = None
    result: dict[str, Any] = field(default_factory=dict)
    cached: bool = False

    @property
    def answer(self) -> str:
        return self.result.get("answer", "pending")


class Sweep:
    """A query or proof over the points of a grid: :meth:`plan` fills what the store answers
    and makes the tasks for the rest, :meth:`run` runs them and records each result."""

    def __init__(self, file_or_name: str, axes: list[Axis], indexes: list[tuple[int, ...]],
                 overrides: tuple[str, ...], keys: list[tuple[str, str]], solver: str | None,
                 timeout: float | None) -> None:
        """Read the target and each point's query; ``keys`` are the (option, key) pairs of the
        command line (:func:`ccac.analysis.grid.option_keys`). Raises CcacError for a key no point
        accepts, or when no point is valid; an invalid point gets its error result. ``solver``
        None: a proof file's own ``solver``, else z3."""
        self.kind, self.target, self.source, data = locate_target(file_or_name)
        self.solver = solver or (proof_solver(data) if self.kind == "proof" else "z3")
        self.timeout = timeout
        self.axes = axes
        self.points = [Point(idx, tuple(a.shown[i] for a, i in zip(axes, idx)),
                             list(overrides) + [f"{a.key}={a.texts[i]}" for a, i in zip(axes, idx)])
                       for idx in indexes]
        if self.kind == "query":
            check_keys(data, keys, [p.overrides for p in self.points])
        self.resolved = self._load_points()
        self.groups: list[list[int]] = []  # the points to compute, grouped by query
        self.shared: list[list[list[int]]] | None = None  # the groups in families, with --reuse
        self.tasks: list[dict[str, Any]] = []

    def execute(self, workers: int | None = None, scheduler: str | None = None, fresh: bool = False,
                reuse: bool = False, started: Callable[[Store, Executor], None] | None = None,
                progress: Callable[[list[str]], None] = lambda answers: None) -> None:
        """Plan and run the sweep in a local pool of ``workers`` or on a Dask ``scheduler``, with
        the result store: ``started`` is told where it runs once the plan is made (the store
        answered what it could), ``progress`` gets the answers of each finished task."""
        with executor(workers, scheduler) as where:
            env = versions(where, self.solver)
            with Store() as store:
                self.plan(store, env, fresh, reuse, where.workers)
                if started is not None:
                    started(store, where)
                self.run(store, where, progress)

    def table(self) -> Any:
        """The points as a pandas DataFrame: a column per axis (its values as given), then the
        answer, whether its trace was validated, seconds, whether it came from the store, and
        the reason or error."""
        import pandas as pd

        rows = [{**{a.key: shown for a, shown in zip(self.axes, p.shown)}, "answer": p.answer,
                 "validated": p.result.get("validated"), "seconds": float(p.result.get("seconds", 0.0)),
                 "cached": p.cached, "reason": p.result.get("error") or p.result.get("reason")} for p in self.points]
        return pd.DataFrame(rows)

    def layout(self, summary: Sequence[str] = ()) -> Any:
        """The grid as an interactive Bokeh layout (:func:`ccac.report.grid_page.sweep_layout`):
        each point by its answer, each validated sat point linked to its trace (read back on its
        own query) with what holds at each step."""
        from ccac.report.grid_page import GridPoint, sweep_layout
        from ccac.report.sweep_lines import point_lines, untraced_note
        from ccac.solving.validate import step_notes

        points = []
        for p in self.points:
            found = self.trace(p) if p.result.get("validated") else None
            note = p.result.get("error") or p.result.get("reason") or untraced_note(p)
            trace, notes = (found[1], step_notes(*found)) if found else (None, {})
            points.append(GridPoint(p.shown, p.answer, float(p.result.get("seconds", 0.0)), note,
                                    point_lines(p.overrides, p, self.timeout), trace, notes))
        text = [f"ccac sweep {self.target} ({self.kind}; solver {self.solver})",
                *(f"--grid {a.key}={','.join(a.shown)}" for a in self.axes), *summary]
        return sweep_layout(text, [a.key for a in self.axes], points)

    def _repr_html_(self) -> str:
        """A notebook shows the grid, each point linked to its trace, and the table."""
        from ccac.report.html_page import layout_fragment

        return layout_fragment(self.layout()) + self.table().to_html(index=False)

    def plan(self, store: Store, env: dict[str, str], fresh: bool, reuse: bool, chunks: int) -> None:
        """Fill the points the store answers (none when ``fresh``); the rest become tasks, one per
        group of points with the same query, or with ``reuse`` (z3 queries that differ only in
        [params] values) at most ``chunks`` families sharing a solver each."""
        self.groups = self._lookup(store, env, fresh)
        self.shared = (self._families(chunks) if reuse and self.kind == "query" and self.solver == "z3"
                       else None)
        if self.shared is not None:
            self.tasks = [{"kind": "family", "file": self.target, "solver": self.solver, "timeout": self.timeout,
                           "overrides_list": [self.points[ns[0]].overrides for ns in family]}
                          for family in self.shared]
        else:
            self.tasks = [{"kind": self.kind, "file": self.target, "overrides": self.points[ns[0]].overrides,
                           "solver": self.solver, "timeout": self.timeout} for ns in self.groups]

    def run(self, store: Store, where: Executor, progress: Callable[[list[str]], None]) -> None:
        """Run the tasks where ``where`` runs them; after each, ``progress`` gets the answers of
        the points it answered."""
        def done(i: int, outcome: dict[str, Any] | Exception) -> None:
            progress(self.record(store, i, outcome))

        where.run(run_point, self.tasks, done)

    def record(self, store: Store, i: int, outcome: dict[str, Any] | Exception) -> list[str]:
        """Task i's results in its points, and in the store unless errors; the answer of each
        point it answered. An Exception: the worker died, and every point of the task gets it."""
        if isinstance(outcome, Exception):
            outcome = _failed(f"worker failed: {type(outcome).__name__}: {outcome}")
        if self.shared is None:
            parts = [(self.groups[i], outcome)]
        elif "family" in outcome:
            parts = list(zip(self.shared[i], outcome["family"]))
        else:  # the worker died: every point of its family gets the error
            parts = [(group, dict(outcome)) for group in self.shared[i]]
        answers: list[str] = []
        for group, result in parts:
            if result["answer"] != "error" and result.get("resolved") is not None:
                key = result_key(self.kind, result["resolved"], self.solver, result["solver_version"],
                                 result["ccac_version"])  # the versions that computed it
                store.put(key, self.kind, result["resolved"], result, self.timeout, self.solver)
            result["error"] = self._unlocated(result.get("error"))
            for n in group:
                self.points[n].result = result
            answers += [result["answer"]] * len(group)
        return answers

    def trace(self, point: Point) -> tuple[Query, Trace] | None:
        """A query point's query and trace, read back from its result on the point's own query;
        None without one (not sat, a proof, or a stored result from before traces were kept)."""
        data = point.result.get("trace")
        if self.kind != "query" or not data:
            return None
        query = load_query(self.target, point.overrides)
        return query, Trace.from_json(data, query.network, [f.cca.name for f in query.flows])

    def _load_points(self) -> dict[int, dict[str, Any]]:
        """Each valid point's resolved query, by index; an invalid point gets its error result."""
        resolved: dict[int, dict[str, Any]] = {}
        for n, point in enumerate(self.points):
            try:
                resolved[n] = self._load_point(point.overrides)
            except CcacError as e:
                point.result = _failed(self._unlocated(str(e)))
        if not resolved:
            raise CcacError(f"no point of the grid is valid; e.g. {self.points[0].result['error']}")
        return resolved

    def _load_point(self, overrides: list[str]) -> dict[str, Any]:
        if self.kind == "proof":
            try:
                from ccac.analysis.proof import load_proof
            except ImportError as e:
                raise CcacError(f"proof sweeps need ccac.analysis.proof: {e}") from None
            return load_proof(self.target, overrides).resolved()
        from ccac.problems.query import load_query

        return load_query(self.target, overrides).resolved()

    def _lookup(self, store: Store, env: dict[str, str], fresh: bool) -> list[list[int]]:
        """Fill the points the store answers; the rest grouped by query (one task per group)."""
        todo: dict[str, list[int]] = {}
        for n, res in self.resolved.items():
            point = self.points[n]
            point.key = result_key(self.kind, res, self.solver, env["solver_version"], env["ccac_version"])
            stored = None if fresh else store.get(point.key)
            if stored is not None and reusable(stored, self.timeout):
                point.result, point.cached = {**stored, "error": None}, True
            else:
                todo.setdefault(point.key, []).append(n)
        return list(todo.values())

    def _families(self, chunks: int) -> list[list[list[int]]] | None:
        """The groups split into at most ``chunks`` families for one shared solver each, if every
        group's query differs from the others only in [params] values; else None."""
        from ccac.analysis.family import only_params_differ

        groups = self.groups
        if len(groups) < 2 or not only_params_differ([self.resolved[g[0]] for g in groups]):
            return None
        size = -(-len(groups) // max(1, min(chunks, len(groups))))
        return [groups[i:i + size] for i in range(0, len(groups), size)]

    def _unlocated(self, message: str | None) -> str | None:
        """An error message without the file name every point shares."""
        prefix = f"{self.source}: "
        return message[len(prefix):] if message and message.startswith(prefix) else message


def sweep(file_or_name: str, grid: dict[str, Any], overrides: Sequence[str] = (), *, workers: int | None = None,
          scheduler: str | None = None, timeout: float | None = None, solver: str | None = None,
          fresh: bool = False, reuse: bool = False) -> Sweep:
    """``ccac sweep`` from Python: ``file_or_name`` (a query or a proof) at every point of
    ``grid`` (key -> its values: a list, or the command line's text ``"0.1:0.5:0.1"``), with the
    result store; the finished :class:`Sweep` (``.points``, ``.table()``, and in a notebook the
    interactive grid)."""
    axes = [parse_grid(f"{key}={_grid_text(values)}") for key, values in grid.items()]
    job = Sweep(file_or_name, axes, grid_points(axes), tuple(overrides), option_keys(axes, tuple(overrides)),
                solver, timeout)
    job.execute(workers, scheduler, fresh, reuse)
    return job


def _grid_text(values: Any) -> str:
    """An axis's values as ``--grid`` takes them: a text as it is, a list item by item (numbers
    and booleans as TOML writes them, a text quoted)."""
    if isinstance(values, str):
        return values
    return ",".join(json.dumps(v) if isinstance(v, (str, bool)) else str(v) for v in values)
