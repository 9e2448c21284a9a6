"""``ccac sweep``: one query (or proof) over a grid of parameter values, locally or on Dask.

Every point of the grid (the cartesian product of the ``--grid`` options) is the file with that
point's values applied as ``--set`` overrides. Points run in a local process pool, or on a Dask
cluster with ``--scheduler``; both run :func:`run_point`, a module-level function that takes
and returns plain data. Each answer is committed to the result store (:mod:`ccac.store`) as it
arrives, so a rerun, or a resumed interrupted sweep, only computes what is missing.

Bad input is found before anything runs (exit 2, one line): a malformed ``--grid``, an unknown
key, a bad file, or a grid none of whose points is a valid query. A value that is invalid only
at some points (``network.T=2`` when R + D + 1 = 3) makes those points "error" rows.
"""

from __future__ import annotations

import csv
import io
import json
import multiprocessing
import os
import sys
import threading
import time
import tomllib
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from itertools import product
from pathlib import Path
from typing import Any, Callable

import click

from ccac.backends import SOLVER_HELP
from ccac.errors import CcacError
from ccac.limits import TimeLimit, check_seconds, time_limit
from ccac.params import decimal_text, exact_text
from ccac.query import QUERY_KEYS, SECTIONS, apply_overrides, bundled_queries, locate, read_toml
from ccac.store import Store, ccac_version, result_key, reusable, solver_version

__all__ = ["Axis", "parse_grid", "run_point", "sweep"]

MAX_AXIS = 100_000  # values one --grid option may expand to
MAX_POINTS = 100_000  # points of the whole grid (the product of the --grid options' sizes)
COLUMNS = ("answer", "validated", "seconds", "cached", "note")  # note: an error, or a proof's failed checks
ORDER = {"query": ("sat", "unsat", "unknown", "error"),
         "proof": ("proved", "refuted", "vacuous", "unknown", "error")}  # other answers follow
PROOF_KEYS = ("lemma", "steady_state")


# ---------------------------------------------------------------------- the task
_SOLVING = threading.Lock()  # z3's default context is per process and not thread-safe


def environment(solver: str) -> dict[str, str]:
    """The versions that key results computed in this process."""
    return {"solver_version": solver_version(solver), "ccac_version": ccac_version()}


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Answer one point: ``task`` is plain data (kind, file, overrides, solver, timeout).

    Returns plain data: answer (sat / unsat / unknown, a proof verdict, or "error"), validated,
    seconds, reason, error (the message), the resolved query and the versions that computed it.
    Runs in pool workers and on Dask workers; never raises for a bad point.
    """
    if task["kind"] == "family":
        return run_family(task)
    out: dict[str, Any] = {"answer": "error", "validated": None, "seconds": 0.0, "reason": None,
                           "error": None, "resolved": None}
    start = time.perf_counter()
    try:
        with _SOLVING:  # a Dask worker may run several tasks in threads of one process
            start = time.perf_counter()
            out.update(environment(task["solver"]))
            if task["kind"] == "proof":
                from ccac.proof import check_proof, load_proof

                with time_limit(task["timeout"], "building the proof's formulas to check its expressions"):
                    proof = load_proof(task["file"], list(task["overrides"]))
                out["resolved"] = proof.resolved()
                report = check_proof(proof, solver=task["solver"], timeout=task["timeout"])
                failed = [f"{c.name}: {c.verdict}" for c in report.checks if c.verdict != "proved"]
                out.update(answer=report.verdict, validated=report.validated, seconds=float(report.seconds),
                           reason="; ".join(failed) or None)
            else:
                from ccac.query import load_query
                from ccac.solve import solve

                query = load_query(task["file"], list(task["overrides"]))
                out["resolved"] = query.resolved()
                result = solve(query, task["solver"], task["timeout"])
                out.update(answer=result.answer, validated=result.validated, reason=result.reason,
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
    :mod:`ccac.family`): ``{"family": [one run_point-shaped result per point]}``."""
    from ccac.family import solve_family
    from ccac.query import load_query

    outs: list[dict[str, Any]] = []
    try:
        with _SOLVING:
            env = environment(task["solver"])
            queries = [load_query(task["file"], list(o)) for o in task["overrides_list"]]
            for result in solve_family(queries, task["timeout"]):
                outs.append({**env, "answer": result.answer, "validated": result.validated,
                             "reason": result.reason, "error": None, "resolved": result.query.resolved(),
                             "seconds": result.build_seconds + result.solve_seconds})
    except Exception as e:  # every point of the family gets the error; none is lost silently
        message = str(e) if isinstance(e, CcacError) else f"internal error: {type(e).__name__}: {e}"
        outs = [{"answer": "error", "validated": None, "seconds": 0.0, "reason": None,
                 "error": message, "resolved": None} for _ in task["overrides_list"]]
    return {"family": outs}


def families(groups: list[list[int]], resolved: dict[int, dict[str, Any]], chunks: int) -> list[list[list[int]]] | None:
    """The groups split into at most ``chunks`` families for one shared solver each, if every
    group's query differs from the others only in [params] values; else None."""
    from ccac.family import only_params_differ

    if len(groups) < 2 or not only_params_differ([resolved[g[0]] for g in groups]):
        return None
    size = -(-len(groups) // max(1, min(chunks, len(groups))))
    return [groups[i:i + size] for i in range(0, len(groups), size)]


# ---------------------------------------------------------------------- the grid
@dataclass
class Axis:
    """One --grid option: a key and its values, as TOML text and as shown in the table."""

    key: str
    texts: list[str]
    shown: list[str]

    def value(self, i: int) -> Any:
        try:
            return tomllib.loads(f"v = {self.texts[i]}")["v"]
        except tomllib.TOMLDecodeError:
            return self.texts[i]


def parse_grid(option: str) -> Axis:
    """``KEY=V1,V2,...``; each item a TOML value or a range ``a:b[:step]`` (exact decimals)."""
    where = f"--grid {option!r}"
    key, eq, values = option.partition("=")
    key = key.strip()
    section, _, name = key.partition(".")
    if not eq:
        raise CcacError("expected KEY=V1,V2,... (e.g. network.buffer=0.5,1,2 or params.util=0.1:0.5:0.1)", where)
    if not section or not name:
        raise CcacError("KEY must be SECTION.NAME, e.g. network.buffer", where)
    texts: list[str] = []
    shown: list[str] = []
    for item in _split(values, where):
        if not item:
            raise CcacError("empty value (check the commas)", where)
        if ":" in item and item[0] not in "\"'[{":
            for x in _range(item, where):
                texts.append(_toml_number(x))
                shown.append(exact_text(x))
        else:
            texts.append(item)
            shown.append(_show_value(item))
    if len(texts) > MAX_AXIS:
        raise CcacError(f"{len(texts)} values; at most {MAX_AXIS} per --grid option", where)
    return Axis(key, texts, shown)


def _split(text: str, where: str) -> list[str]:
    """Split at the commas outside TOML strings, arrays and inline tables."""
    items, depth, quote, escaped, start = [], 0, "", False, 0
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if quote or depth:
        raise CcacError("unbalanced quotes or brackets", where)
    items.append(text[start:].strip())
    return items


def _range(item: str, where: str) -> list[Fraction]:
    parts = item.split(":")
    if len(parts) not in (2, 3):
        raise CcacError(f"a range is START:STOP or START:STOP:STEP, got {item!r}", where)
    try:
        start, stop, step = (Fraction(p.strip()) for p in (parts + ["1"])[:3])
    except (ValueError, ZeroDivisionError):
        raise CcacError(f"range bounds and step must be numbers (e.g. 0.1:4:0.1), got {item!r}", where) from None
    if step <= 0:
        raise CcacError(f"range step must be positive, got {item!r}", where)
    if stop < start:
        raise CcacError(f"empty range {item!r} (STOP is below START)", where)
    count = int((stop - start) / step) + 1  # STOP included when it lands on the grid
    if count > MAX_AXIS:
        raise CcacError(f"range {item!r} has {count} values; at most {MAX_AXIS}", where)
    return [start + k * step for k in range(count)]


def _toml_number(x: Fraction) -> str:
    """x in TOML syntax, read back exactly by ccac (which reads a float through its decimal text)."""
    text = decimal_text(x)
    if text is not None and (x.denominator == 1 or Fraction(repr(float(text))) == x):
        return text
    return f'"{exact_text(x)}"'  # ccac reads numeric strings exactly


def _show_value(text: str) -> str:
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word: --set reads it as a string
    if isinstance(value, bool):
        return str(value).lower()
    return value if isinstance(value, str) else text


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
    from ccac.network import NETWORK_PARAMS

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


# ---------------------------------------------------------------------- running
@dataclass
class Point:
    shown: tuple[str, ...]
    overrides: list[str]
    key: str | None = None
    result: dict[str, Any] = field(default_factory=dict)
    cached: bool = False

    @property
    def answer(self) -> str:
        return self.result.get("answer", "pending")


def _load_point(kind: str, target: str, overrides: list[str]) -> dict[str, Any]:
    if kind == "proof":
        try:
            from ccac.proof import load_proof
        except ImportError as e:
            raise CcacError(f"proof sweeps need ccac.proof: {e}") from None
        return load_proof(target, overrides).resolved()
    from ccac.query import load_query

    return load_query(target, overrides).resolved()


def _start_method() -> str:
    # fork would copy this process's threads (tqdm's monitor) mid-state; forkserver starts
    # workers from a clean single-threaded process, spawn where forkserver does not exist
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def run_local(tasks: list[dict[str, Any]], workers: int,
              done: Callable[[int, dict[str, Any]], None]) -> None:
    ctx = multiprocessing.get_context(_start_method())
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(["ccac.sweep"])
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx,
                               initializer=_ignore_interrupts)
    try:
        futures = {pool.submit(run_point, task): i for i, task in enumerate(tasks)}
        for future in as_completed(futures):
            done(futures[future], _outcome(future))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()  # a solve in progress would otherwise run to its end
        raise
    pool.shutdown()


def _ignore_interrupts() -> None:
    """Pool workers leave Ctrl-C to the parent, which stops them (mid-solve, they would only
    print tracebacks)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _outcome(future: Any) -> dict[str, Any]:
    try:
        return future.result()
    except Exception as e:  # the worker died (killed, out of memory, ...), not the point's fault
        return {"answer": "error", "validated": None, "seconds": 0.0, "reason": None,
                "error": f"worker failed: {type(e).__name__}: {e}", "resolved": None}


def connect(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise CcacError("needs dask.distributed: pip install 'ccac[cluster]'", "--scheduler") from None
    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise CcacError(f"cannot connect to the Dask scheduler at {address}: {e}", "--scheduler") from None


def cluster_environment(client: Any, solver: str) -> dict[str, str]:
    try:
        return client.submit(environment, solver, pure=False).result()
    except Exception as e:  # e.g. ccac is not installed on the workers
        raise CcacError(f"the cluster's workers cannot run ccac: {type(e).__name__}: {e}", "--scheduler") from None


def run_dask(client: Any, tasks: list[dict[str, Any]], done: Callable[[int, dict[str, Any]], None]) -> None:
    from distributed import as_completed as dask_completed

    futures = client.map(run_point, tasks, pure=False)
    index = {future.key: i for i, future in enumerate(futures)}
    try:
        for future in dask_completed(futures):
            done(index[future.key], _outcome(future))
    finally:
        client.cancel(futures)


# ---------------------------------------------------------------------- output
def _cells(point: Point) -> tuple[str, ...]:
    r = point.result
    validated = {True: "yes", False: "NO", None: "-"}[r.get("validated")]
    return point.shown + (point.answer, validated, f"{r.get('seconds', 0.0):.3f}",
                          "yes" if point.cached else "no",
                          (r.get("error") or (r.get("reason") if point.answer != "unknown" else "") or "")
                          .replace("\n", " "))


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [header, tuple("-" * w for w in widths), *rows]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


def write_out(path: Path, axes: list[Axis], header: tuple[str, ...], points: list[Point],
              indexes: list[tuple[int, ...]]) -> None:
    if path.suffix.lower() == ".csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(_cells(p) for p in points)
        path.write_text(buffer.getvalue())
        return
    rows = []
    for point, idx in zip(points, indexes):
        row = {a.key: a.value(i) for a, i in zip(axes, idx)}
        row.update(answer=point.answer, validated=point.result.get("validated"),
                   seconds=round(float(point.result.get("seconds", 0.0)), 4), cached=point.cached,
                   error=point.result.get("error"), reason=point.result.get("reason"))
        rows.append(row)
    path.write_text(json.dumps(rows, indent=1) + "\n")


def exit_code(kind: str, points: list[Point]) -> int:
    answers = {p.answer for p in points}
    if any(p.result.get("validated") is False or p.answer == "invalid" for p in points):
        return 4
    if kind == "proof" and answers & {"refuted", "vacuous"}:
        return 1
    if "error" in answers:
        return 2
    if "unknown" in answers:
        return 3
    return 0


# ---------------------------------------------------------------------- the command
HELP = """Run FILE_OR_NAME (a query or a proof) at every point of a grid of values.

\b
The grid is the cartesian product of the --grid options. KEY is a --set key
(network.R, cca.pacing, params.util, ...); each value is a TOML value or a
range START:STOP[:STEP] in exact decimals, STOP included when it lands on the
grid:
  --grid network.R=1,2 --grid network.buffer=0.5,1,2
  --grid params.util=0.1:0.5:0.1     (0.1, 0.2, 0.3, 0.4, 0.5 exactly)

\b
A FILE with a top-level `lemma` or `steady_state` is a proof; its rows show
the verdict (proved, refuted, vacuous, unknown).

\b
Points run in a local process pool (--workers), or on a Dask cluster with
--scheduler: its workers need ccac installed and FILE at the same absolute
path, and solve one point at a time per process (start them with
`--nthreads 1 --nworkers N`).

\b
Every answer is committed at once to a SQLite store in the user cache
directory ($CCAC_CACHE_DIR overrides it), keyed by the resolved query, the
solver and its version and the ccac version: a rerun or an interrupted sweep
reuses what is stored (column `cached`); a stored unknown is reused only for
a timeout no longer than it had. Errors are not stored. --fresh recomputes
and overwrites.

\b
Bad input stops the sweep before it runs (exit 2, one line): a malformed
--grid, a key no point accepts (network.nosuch), a bad file, or a grid where
no point is a valid query. A value invalid only at some points (network.T=2
with R + D + 1 = 3) gives those points an `error` row, and the rest run.

\b
Prints one row per point, in grid order, and a summary; --out writes the rows
as .csv or .json. A sweep explores: a query's `expect` is not checked.
Exit: 4 a sat trace failed validation; 1 a proof refuted or vacuous; 2 some
points had errors; 3 some unknown; else 0 (all answered or proved)."""


@click.command("sweep", help=HELP)
@click.argument("file_or_name")
@click.option("--grid", "grids", multiple=True, metavar="KEY=V1,V2,...",
              help="A grid axis: values, or ranges START:STOP[:STEP]. Repeat for more axes.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a value at every point, as in `ccac query`.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Local worker processes [default: the number of CPUs].")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on this Dask scheduler (e.g. tcp://host:8786) instead of locally.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the rows to a .csv or .json file.")
@click.option("--fresh", is_flag=True, help="Ignore stored results; recompute and overwrite them.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="S",
              help="Per point: seconds of building, solving and validating (per check for a proof; "
                   "answer: unknown).")
@click.option("--solver", default="z3", show_default=True, help=SOLVER_HELP)
@click.option("--reuse", is_flag=True,
              help="Points whose queries differ only in [params] values share one z3 solver per "
                   "worker (checks under assumptions) instead of a fresh solve each.")
def sweep(file_or_name: str, grids: tuple[str, ...], overrides: tuple[str, ...], workers: int | None,
          scheduler: str | None, out_path: str | None, fresh: bool, timeout: float | None,
          solver: str, reuse: bool) -> None:
    started = time.perf_counter()
    check_seconds(timeout)
    axes = [parse_grid(g) for g in grids]
    count = 1
    for a in axes:
        count *= len(a.texts)
    if count > MAX_POINTS:
        sizes = " × ".join(f"{len(a.texts):,}" for a in axes)
        raise CcacError(f"the grid has {count:,} points ({sizes}), more than {MAX_POINTS:,}", "--grid")
    keys = option_keys(axes, overrides)
    if out_path and Path(out_path).suffix.lower() not in (".csv", ".json"):
        raise CcacError(f"unsupported format {Path(out_path).suffix or '(none)'!r}; use .csv or .json", "--out")
    kind, target, source, data = locate_target(file_or_name)
    indexes = list(product(*(range(len(a.texts)) for a in axes)))
    points = [Point(tuple(a.shown[i] for a, i in zip(axes, idx)),
                    list(overrides) + [f"{a.key}={a.texts[i]}" for a, i in zip(axes, idx)])
              for idx in indexes]
    if kind == "query":
        check_keys(data, keys, [p.overrides for p in points])
    resolved = load_points(kind, target, source, points)

    client = connect(scheduler) if scheduler else None
    try:
        env = cluster_environment(client, solver) if client else environment(solver)
        with Store() as store:
            groups = lookup(store, points, resolved, kind, solver, env, timeout, fresh)
            nworkers = workers or os.cpu_count() or 1
            shared = (families(groups, resolved, nworkers)
                      if reuse and kind == "query" and solver == "z3" else None)
            if shared is not None:
                tasks = [{"kind": "family", "file": target, "solver": solver, "timeout": timeout,
                          "overrides_list": [points[ns[0]].overrides for ns in family]} for family in shared]
            else:
                tasks = [{"kind": kind, "file": target, "overrides": points[ns[0]].overrides,
                          "solver": solver, "timeout": timeout} for ns in groups]
            where = f"Dask scheduler {scheduler}" if client else _plural(min(nworkers, len(tasks)), "local worker")
            click.echo(f"sweep: {_plural(len(points), 'point')}, {sum(p.cached for p in points)} in the store "
                       f"({store.path}), {len(groups)} to compute"
                       + (f" in {len(tasks)} {'family' if len(tasks) == 1 else 'families'} sharing a solver each"
                          if shared else "")
                       + (f" on {where}" if tasks else ""), err=True)
            counts = Counter(p.answer for p in points if p.result)
            bar = _progress(len(tasks))
            bar.set_postfix(_postfix(kind, counts), refresh=False)

            def done(i: int, outcome: dict[str, Any]) -> None:
                if shared is None:
                    parts = [(groups[i], outcome)]
                elif "family" in outcome:
                    parts = list(zip(shared[i], outcome["family"]))
                else:  # the worker died: every point of its family gets the error
                    parts = [(group, dict(outcome)) for group in shared[i]]
                for group, result in parts:
                    if result["answer"] != "error" and result.get("resolved") is not None:
                        key = result_key(kind, result["resolved"], solver, result["solver_version"],
                                         result["ccac_version"])  # the versions that computed it
                        store.put(key, kind, result["resolved"], result, timeout, solver)
                    result["error"] = _unlocated(result.get("error"), source)
                    for n in group:
                        points[n].result = result
                    counts.update([result["answer"]] * len(group))
                bar.set_postfix(_postfix(kind, counts), refresh=False)
                bar.update(1)

            try:
                if tasks and client:
                    run_dask(client, tasks, done)
                elif tasks:
                    run_local(tasks, nworkers, done)
            except KeyboardInterrupt:
                bar.close()
                stored = sum(1 for p in points if p.result and p.answer != "error")
                click.echo(f"interrupted: {stored} of {len(points)} points are stored; run the same "
                           f"command again to resume", err=True)
                raise
            finally:
                bar.close()
    finally:
        if client is not None:
            client.close()
    report(kind, axes, points, indexes, out_path, time.perf_counter() - started)


def option_keys(axes: list[Axis], overrides: tuple[str, ...]) -> list[tuple[str, str]]:
    """(option, key) of every --grid and --set; a key on two axes, or on an axis and in --set,
    is ambiguous."""
    keys = [("--grid", a.key) for a in axes]
    seen: set[str] = set()
    for _, key in keys:
        if key in seen:
            raise CcacError("given twice; list all its values in one --grid", f"--grid {key}")
        seen.add(key)
    for item in overrides:
        if "=" not in item:
            raise CcacError(f"expected SECTION.KEY=VALUE, got {item!r}", "--set")
        key = item.partition("=")[0].strip()
        if key in seen:
            raise CcacError("given both in --grid and --set", f"--set {key}")
        keys.append(("--set", key))
    return keys


def load_points(kind: str, target: str, source: Path, points: list[Point]) -> dict[int, dict[str, Any]]:
    """Each valid point's resolved query, by index; an invalid point gets its error row."""
    resolved: dict[int, dict[str, Any]] = {}
    for n, point in enumerate(points):
        try:
            resolved[n] = _load_point(kind, target, point.overrides)
        except CcacError as e:
            point.result = {"answer": "error", "validated": None, "seconds": 0.0,
                            "error": _unlocated(str(e), source)}
    if not resolved:
        raise CcacError(f"no point of the grid is valid; e.g. {points[0].result['error']}")
    return resolved


def lookup(store: Store, points: list[Point], resolved: dict[int, dict[str, Any]], kind: str, solver: str,
           env: dict[str, str], timeout: float | None, fresh: bool) -> list[list[int]]:
    """Fill the points the store answers; the rest grouped by query (one task per group)."""
    todo: dict[str, list[int]] = {}
    for n, res in resolved.items():
        point = points[n]
        point.key = result_key(kind, res, solver, env["solver_version"], env["ccac_version"])
        stored = None if fresh else store.get(point.key)
        if stored is not None and reusable(stored, timeout):
            point.result, point.cached = {**stored, "error": None}, True
        else:
            todo.setdefault(point.key, []).append(n)
    return list(todo.values())


def report(kind: str, axes: list[Axis], points: list[Point], indexes: list[tuple[int, ...]],
           out_path: str | None, seconds: float) -> None:
    """The table, the summary, --out, and the exit code."""
    header = tuple(a.key for a in axes) + COLUMNS
    click.echo(table(header, [_cells(p) for p in points]))
    counts = Counter(p.answer for p in points)
    order = ORDER[kind] + tuple(sorted(set(counts) - set(ORDER[kind])))
    summary = ", ".join(_plural(counts[a], a) if a == "error" else f"{counts[a]} {a}" for a in order)
    reused = sum(p.cached for p in points)
    computed = sum(float(r.get("seconds", 0.0))  # points with the same query share one result
                   for r in {id(p.result): p.result for p in points if not p.cached}.values())
    click.echo(f"\n{_plural(len(points), 'point')}: {summary}; {reused} reused from the store; "
               f"{computed:.1f} s of computation, {seconds:.1f} s in all")
    if out_path:
        write_out(Path(out_path), axes, header, points, indexes)
    code = exit_code(kind, points)
    if code == 2:
        click.echo(f"error: {counts['error']} of {len(points)} points could not be run "
                   f"(see the note column)", err=True)
    if code:
        raise SystemExit(code)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _unlocated(message: str | None, source: Path) -> str | None:
    """An error message without the file name every point shares."""
    prefix = f"{source}: "
    return message[len(prefix):] if message and message.startswith(prefix) else message


def _progress(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="pt", desc="sweep", dynamic_ncols=True,
                disable=True if total == 0 else None)  # None: on a terminal only


def _postfix(kind: str, counts: Counter) -> dict[str, int]:
    return {a: counts[a] for a in ORDER[kind] + tuple(sorted(set(counts) - set(ORDER[kind])))}
