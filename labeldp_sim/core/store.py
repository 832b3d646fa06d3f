"""The trial store: every computed trial, once, in one SQLite database per results directory.

``<results_dir>/trials.sqlite`` holds one table per record kind (Table I rate
trials, K-class trials, digits trials).  A record is keyed on (experiment,
config key, seed key[, method]); the config key hashes the configuration *and*
the code that computes the numbers (:func:`labeldp_sim.provenance.config_key`),
so a code change never reuses old trials.

Why SQLite: one file, in the standard library, with transactions.  Each chunk
of trials is one ``BEGIN IMMEDIATE`` transaction, so a ``kill -9`` at any instant
leaves every chunk either wholly stored or absent, and concurrent writers
(two processes on one directory) queue on the write lock instead of
clobbering each other.  The journal is WAL, so readers never block the writer.
CSV files are exports, written by :func:`atomic_write` (temporary file, then
rename) under :func:`locked`, so an export is never torn and all the files of
one directory come from one run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["Column", "Schema", "TrialStore", "atomic_write", "locked", "STORE_NAME"]

STORE_NAME = "trials.sqlite"
_TYPES = {"TEXT", "INTEGER", "REAL", "BOOLEAN"}
# Columns every stored record carries after its own: which run computed it, from which commit.
PROVENANCE_COLUMNS = (("run_id", "TEXT"), ("computed_by", "TEXT"))


@dataclass(frozen=True)
class Column:
    """One typed column: its name in the tables users see and its SQL name and type.

    SQLite column names ignore case, so a table with both ``K`` (classes) and
    ``k`` (neighbours) gives one of them a distinct SQL name.
    """

    name: str
    type: str
    sql: str = ""

    def __post_init__(self):
        if self.type not in _TYPES:
            raise ValueError(f"column {self.name}: type {self.type} not in {_TYPES}")
        if not self.sql:
            object.__setattr__(self, "sql", self.name)


@dataclass(frozen=True)
class Schema:
    """A record kind: its table, typed columns and primary key.

    ``key`` always starts with ``experiment`` and ``config_key``; the rest
    (``seed_key``, and ``method`` where one trial yields a row per method) is
    what a plan asks for.  ``version`` goes into the table name, so a change of
    columns starts a new table instead of misreading an old one.
    """

    table: str
    columns: tuple
    key: tuple
    version: int = 1
    by_name: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        columns = tuple(self.columns) + tuple(Column(n, t) for n, t in PROVENANCE_COLUMNS
                                              if n not in {c.name for c in self.columns})
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "by_name", {c.name: c for c in columns})
        lowered = [c.sql.lower() for c in columns]
        if len(set(lowered)) != len(lowered):
            raise ValueError(f"{self.table}: SQL column names clash when case is ignored")
        if tuple(self.key[:2]) != ("experiment", "config_key") or not set(self.key) <= set(self.by_name):
            raise ValueError(f"{self.table}: key must start with experiment, config_key")

    @property
    def name(self) -> str:
        return f"{self.table}_v{self.version}"

    @property
    def row_key(self) -> tuple:
        """The key columns below (experiment, config_key)."""
        return tuple(self.key[2:])

    @property
    def names(self) -> list:
        return [c.name for c in self.columns]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _to_sql(value, column: Column):
    if value is None:
        return None
    if column.type == "TEXT":
        return None if (isinstance(value, float) and np.isnan(value)) else str(value)
    if column.type in ("INTEGER", "BOOLEAN"):
        if isinstance(value, (float, np.floating)) and np.isnan(value):
            return None
        return int(value)
    value = float(value)
    return None if np.isnan(value) else value  # SQLite has no NaN: NULL reads back as NaN


class TrialStore:
    """The SQLite trial store of one results directory.

    Parameters
    ----------
    path : path-like
        The database file, usually ``<results_dir>/trials.sqlite``.  It is
        created (with its directory) on the first write, not before.
    """

    def __init__(self, path):
        self.path = Path(path)
        self._ready: set = set()  # schemas whose tables this object has created or found

    def __repr__(self):
        return f"TrialStore({str(self.path)!r})"

    @contextlib.contextmanager
    def _connect(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # a long timeout: a second process waits for the first one's chunk to commit
        con = sqlite3.connect(self.path, timeout=120.0, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL never corrupts and loses no committed chunk when the process dies;
            # only an operating-system crash may drop the last chunks, which a rerun recomputes
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA busy_timeout=120000")
            yield con
        finally:
            con.close()

    def _ensure(self, con, schema: Schema) -> None:
        if schema.name in self._ready:  # once per store object, not once per chunk
            return
        columns = ", ".join(f"{_q(c.sql)} {'INTEGER' if c.type == 'BOOLEAN' else c.type}"
                            for c in schema.columns)
        key = ", ".join(_q(schema.by_name[k].sql) for k in schema.key)
        con.execute(f"CREATE TABLE IF NOT EXISTS {_q(schema.name)} ({columns}, PRIMARY KEY ({key}))")
        con.execute("CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, experiment TEXT, "
                    "config_key TEXT, git_commit TEXT, code_fingerprint TEXT, started TEXT, "
                    "finished TEXT, status TEXT, wanted INTEGER, reused INTEGER, computed INTEGER)")
        self._ready.add(schema.name)

    def exists(self) -> bool:
        return self.path.exists()

    # ------------------------------------------------------------------ reads
    def load(self, schema: Schema, experiment: str, config_key: str) -> pd.DataFrame:
        """Every stored record of one (experiment, config key), with the schema's dtypes."""
        if not self.path.exists():
            return self._empty(schema)
        with self._connect() as con:
            self._ensure(con, schema)
            cursor = con.execute(
                f"SELECT {', '.join(_q(c.sql) for c in schema.columns)} FROM {_q(schema.name)} "
                f"WHERE experiment = ? AND config_key = ?", (experiment, config_key))
            rows = cursor.fetchall()
        frame = pd.DataFrame.from_records(rows, columns=schema.names)
        return self._typed(frame, schema)

    @staticmethod
    def _empty(schema: Schema) -> pd.DataFrame:
        return TrialStore._typed(pd.DataFrame({name: [] for name in schema.names}), schema)

    @staticmethod
    def _typed(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
        for c in schema.columns:
            if c.type == "REAL":
                frame[c.name] = pd.to_numeric(frame[c.name], errors="coerce").astype(float)
            elif c.type == "INTEGER":
                values = pd.to_numeric(frame[c.name], errors="coerce")
                frame[c.name] = values.astype("int64") if values.notna().all() else values.astype(float)
            elif c.type == "BOOLEAN":
                frame[c.name] = frame[c.name].astype(bool)
            else:
                frame[c.name] = frame[c.name].astype("str")  # pandas' own string dtype; None stays missing
        return frame

    def runs(self) -> pd.DataFrame:
        """The ``runs`` table: one row per run that wrote to this store."""
        if not self.path.exists():
            return pd.DataFrame()
        with self._connect() as con:
            return pd.read_sql_query("SELECT * FROM runs ORDER BY started", con)

    # ----------------------------------------------------------------- writes
    def write(self, schema: Schema, frame: pd.DataFrame, replace: bool = False) -> int:
        """Store one chunk of records in one transaction; return the rows inserted.

        ``replace=False`` keeps a record already stored under the same key (the
        first write wins: a concurrent run computed the same numbers);
        ``replace=True`` overwrites it (``runner.reuse=false``).
        """
        missing = [n for n in schema.names if n not in frame]
        if missing:
            raise KeyError(f"{schema.table}: records lack columns {missing}")
        rows = [tuple(_to_sql(v, c) for v, c in zip(record, schema.columns))
                for record in frame[schema.names].itertuples(index=False, name=None)]
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = (f"{verb} INTO {_q(schema.name)} ({', '.join(_q(c.sql) for c in schema.columns)}) "
               f"VALUES ({', '.join('?' * len(schema.columns))})")
        with self._connect() as con:
            self._ensure(con, schema)
            con.execute("BEGIN IMMEDIATE")
            try:
                before = con.total_changes
                con.executemany(sql, rows)
                inserted = con.total_changes - before
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return inserted

    def start_run(self, schema: Schema, experiment: str, config_key: str, git_commit: str,
                  fingerprint: str, wanted: int, reused: int) -> str:
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        with self._connect() as con:
            self._ensure(con, schema)
            con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, NULL, 'running', ?, ?, 0)",
                        (run_id, experiment, config_key, git_commit, fingerprint,
                         time.strftime("%Y-%m-%dT%H:%M:%S"), wanted, reused))
        return run_id

    def finish_run(self, run_id: str, status: str, computed: int) -> None:
        with self._connect() as con:
            con.execute("UPDATE runs SET finished = ?, status = ?, computed = ? WHERE run_id = ?",
                        (time.strftime("%Y-%m-%dT%H:%M:%S"), status, computed, run_id))


@contextlib.contextmanager
def locked(directory: Path, name: str = ".export.lock"):
    """An exclusive ``flock`` on ``directory/name``: one run exports into a directory at a time."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / name, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def atomic_write(path: Path, write) -> None:
    """``write(tmp_path)`` then rename onto ``path``: readers see the old file or the new one, whole.

    The temporary name keeps the suffix, so writers that pick a format from it
    (matplotlib, pandas) still do.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
