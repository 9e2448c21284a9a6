"""The result store: every answer a sweep computes, in SQLite, so nothing is computed twice.

The store lives in the user's cache directory (``platformdirs.user_cache_dir("ccac")``), or in
``$CCAC_CACHE_DIR`` when that is set, as ``results.sqlite``. A row is keyed by
:func:`result_key`: a hash of the canonical query (``Query.resolved()``, or ``Proof.resolved()``,
as JSON with sorted keys), the solver's name and version and ccac's version, so a new solver or
ccac release never reuses an old answer. Each row is committed as soon as it is written: an
interrupted sweep loses nothing it finished.

A stored "unknown" only says the solver gave up within its timeout, so it is reused only for a
request with the same or a shorter timeout (:func:`reusable`). Errors are never stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from ccac.core.errors import CcacError

__all__ = ["Store", "reusable", "result_key", "store_path"]

SCHEMA_VERSION = 2   # 2 added the trace column; a store of version 1 gains it on opening
DEFINITE = ("sat", "unsat", "proved", "refuted", "vacuous")  # answers that do not depend on time

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key            TEXT PRIMARY KEY,   -- result_key(): query + solver + versions
    kind           TEXT NOT NULL,      -- "query" or "proof"
    answer         TEXT NOT NULL,      -- sat / unsat / unknown, or a proof verdict
    validated      INTEGER,            -- 1 / 0, NULL when there is no trace
    seconds        REAL NOT NULL,      -- time the computation took
    timeout        REAL,               -- the timeout it ran under, NULL = no limit
    reason         TEXT,               -- the solver's reason for unknown
    solver         TEXT NOT NULL,
    solver_version TEXT NOT NULL,
    ccac_version   TEXT NOT NULL,
    query          TEXT NOT NULL,      -- the canonical query, JSON
    created        REAL NOT NULL,      -- Unix time
    trace          TEXT                -- a sat answer's validated trace, JSON; NULL: none (or stored by version 1)
)
"""


def store_path() -> Path:
    """Where the store is: ``$CCAC_CACHE_DIR/results.sqlite``, else in the user cache directory."""
    root = os.environ.get("CCAC_CACHE_DIR")
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("ccac")
    return Path(root) / "results.sqlite"


def canonical(resolved: dict[str, Any]) -> str:
    """The canonical text of a resolved query or proof."""
    return json.dumps(resolved, sort_keys=True, separators=(",", ":"))


def result_key(kind: str, resolved: dict[str, Any], solver: str, solver_ver: str, ccac_ver: str) -> str:
    text = canonical({"kind": kind, "query": resolved, "solver": solver,
                      "solver_version": solver_ver, "ccac_version": ccac_ver})
    return hashlib.sha256(text.encode()).hexdigest()


def reusable(row: dict[str, Any], timeout: float | None) -> bool:
    """May a stored row answer a request with this timeout (None = no limit)?"""
    if row["answer"] in DEFINITE:
        return True
    if row["answer"] != "unknown":
        return False
    stored = row["timeout"]
    return stored is None or (timeout is not None and stored >= timeout)


class Store:
    """The SQLite store; one writer per sweep, any number of readers (WAL journal)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else store_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=60)
            self.db.row_factory = sqlite3.Row
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError:  # e.g. a file system without shared memory
                pass
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, 1, SCHEMA_VERSION):
                raise CcacError(f"result store has schema version {version}, this ccac reads "
                                f"{SCHEMA_VERSION}; set CCAC_CACHE_DIR to use another store", str(self.path))
            if version == 1:   # its rows keep their answers, without traces
                self.db.execute("ALTER TABLE results ADD COLUMN trace TEXT")
            self.db.execute(_SCHEMA)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self.db.commit()
        except (OSError, sqlite3.DatabaseError) as e:
            raise CcacError(f"cannot open the result store: {e} (set CCAC_CACHE_DIR to use another "
                            f"directory)", str(self.path)) from None

    def get(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM results WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        found = dict(row)
        found["validated"] = None if found["validated"] is None else bool(found["validated"])
        found["trace"] = None if found["trace"] is None else json.loads(found["trace"])
        return found

    def put(self, key: str, kind: str, resolved: dict[str, Any], result: dict[str, Any],
            timeout: float | None, solver: str) -> None:
        """Store (or replace) one result and commit it at once."""
        validated = result.get("validated")
        self.db.execute(
            "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, kind, result["answer"], None if validated is None else int(bool(validated)),
             float(result["seconds"]), timeout, result.get("reason"), solver,
             result["solver_version"], result["ccac_version"], canonical(resolved), time.time(),
             None if result.get("trace") is None else json.dumps(result["trace"])))
        self.db.commit()

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
