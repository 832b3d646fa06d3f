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
rename) under :func:`locked`; inside :func:`staged` every file of one export
waits in a staging folder and all of them are renamed into place at once, so
a directory's files always come from one run, whole.

Trust, but check: before a process first uses an existing store it runs
SQLite's ``integrity_check`` (pages, b-trees *and* every index against its
table: a garbled primary-key index passes ``quick_check`` and then lets a
duplicate in), once per process per file; every table a run uses must have
the columns, types and primary key this code creates, ``row_sha`` included;
and every stored record carries ``row_sha``, a checksum of its values,
verified whenever records are loaded for reuse.  A damaged store (a truncated
or garbled file, a text file or a folder in its place, a broken index, an
edited record) is refused with one line (:class:`StoreDamaged`) before
anything is reused or computed.

The store's format has a version, :data:`STORE_VERSION`, stamped in the file
(``PRAGMA user_version``), so that any labeldp-sim can tell a store it cannot
read: one written by a newer version is refused in one line
(:class:`StoreMismatch`) that names both versions.  An unstamped store
(version 0, written before the stamp existed) is checked and stamped, unless
a table of it holds records without checksums, which nothing can verify: it
is refused in one line, never reused.

Disk and permission faults (a full disk, a read-only or forbidden folder)
while exporting give one line naming the path (:class:`~.errors.FileError`)
and leave the files as they were; in the store they are a :class:`StoreError`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import shutil
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from labeldp_sim.harness.errors import FileError, one_line, os_error_line
from labeldp_sim.harness.interrupts import checkpoint, deferred

__all__ = ["Column", "Schema", "TrialStore", "atomic_write", "locked", "staged", "STORE_NAME",
           "StoreError", "StoreDamaged", "StoreMismatch", "STORE_VERSION"]

STORE_NAME = "trials.sqlite"
_TYPES = {"TEXT", "INTEGER", "REAL", "BOOLEAN"}
# Columns every stored record carries after its own: which run computed it, from which commit.
PROVENANCE_COLUMNS = (("run_id", "TEXT"), ("computed_by", "TEXT"))
# The store's own column in every record table: sha256 of the record's values (:func:`_row_sha`),
# checked on every load.  Not part of a schema's columns: loads return the schema's columns.
CHECK_COLUMN = "row_sha"
RUN_COLUMNS = ("run_id", "experiment", "config_key", "git_commit", "code_fingerprint", "started",
               "finished", "status", "wanted", "reused", "computed", "host", "pid")
# The format of the store, stamped as SQLite's ``user_version``.  0: unstamped (labeldp-sim before
# the stamp; its tables may lack row_sha, its runs table host and pid).  1: every record table has
# row_sha and the key of its Schema, and runs has RUN_COLUMNS.  Raise it whenever a change would
# make older code misread the file: older code then refuses it instead of crashing or misreading.
STORE_VERSION = 1
# The stores this process has checked whole (integrity_check and version), as (path, device, inode):
# the check reads the whole file (about 1.3 s a million records), so it runs once per process and
# file, not once per job of a multirun or per TrialStore object; a file replaced since is checked anew.
_CHECKED: set = set()


class StoreError(RuntimeError):
    """The trial store cannot be used (one line for the user; exit status 1)."""


class StoreDamaged(StoreError):
    """The trial store's file is damaged: nothing in it can be trusted."""

    def __init__(self, path, reason: str):
        self.path, self.reason = Path(path), reason
        super().__init__(f"{path} is damaged ({reason}); move it aside or delete it to recompute")


class StoreMismatch(StoreError):
    """The trial store is of another format than this code's: a newer version, or an older
    one whose records cannot be verified, or tables this code does not create."""

    def __init__(self, path, reason: str, remedy: str = "move it aside or delete it to recompute"):
        self.path, self.reason = Path(path), reason
        super().__init__(f"{path} {reason}; {remedy}")


def _one_line(text: str, limit: int = 160) -> str:
    """``text`` as one printable line (SQLite quotes damaged bytes, and lists problems on lines)."""
    return "".join(c if c.isprintable() and ord(c) < 0x2000 else "?" for c in one_line(text, limit))


def _first_line(err) -> str:
    return _one_line(err) or type(err).__name__


def _store_error(path, err: sqlite3.Error) -> StoreError:
    text = _first_line(err)
    lowered = text.lower()
    if type(err) is sqlite3.DatabaseError or any(
            word in lowered for word in ("malformed", "not a database", "corrupt", "disk image", "decode")):
        return StoreDamaged(path, text)
    return StoreError(f"cannot use the trial store {path} ({text})")


def _row_sha(values) -> str:
    """Checksum of one record's SQL values, as SQLite hands them back: sha256 of the tuple's
    ``repr`` (floats exact, every value typed: 1, 1.0 and '1' differ)."""
    return hashlib.sha256(repr(tuple(values)).encode()).hexdigest()[:32]


@contextlib.contextmanager
def _migration(con):
    """One ``BEGIN IMMEDIATE`` transaction that upgrades a table in place, signals held: wholly
    done or rolled back.  (A chunk's write has its own, with checkpoints between its steps.)"""
    with deferred():
        con.execute("BEGIN IMMEDIATE")
        try:
            yield
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError, TypeError):
        return True
    return True


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
    # math.isnan, not np.isnan: the same test on a scalar, ten times faster (a chunk has 10^5 values)
    if value is None:
        return None
    if column.type == "TEXT":
        return None if (isinstance(value, float) and math.isnan(value)) else str(value)
    if column.type in ("INTEGER", "BOOLEAN"):
        if isinstance(value, (float, np.floating)) and math.isnan(value):
            return None
        return int(value)
    value = float(value)
    # SQLite has no NaN (NULL reads back as NaN) and stores -0.0 as 0.0, which the checksum
    # of the record must say too
    return None if math.isnan(value) else value + 0.0


def _column_to_sql(values: pd.Series, column: Column) -> list:
    """:func:`_to_sql` of a whole column: the same Python values, numeric columns converted at once
    (a law-free chunk holds 10^5 records; converting each value alone cost most of a write)."""
    kind = values.dtype.kind
    if column.type == "REAL" and kind in "fiub":
        array = values.to_numpy(dtype=float) + 0.0  # -0.0 + 0.0 = 0.0, as SQLite stores it
        out = array.tolist()
        for i in np.flatnonzero(np.isnan(array)):
            out[i] = None
        return out
    if column.type in ("INTEGER", "BOOLEAN") and kind in "iub":
        return values.to_numpy().astype(np.int64).tolist()
    return [_to_sql(v, column) for v in values.tolist()]


_RUN_INTEGERS = ("wanted", "reused", "computed", "pid")


def _expected(schema: Schema) -> set:
    """The (column, SQL type, position in the primary key) of the table of ``schema``, as
    ``PRAGMA table_info`` reports them (names in lower case: SQLite ignores their case)."""
    columns = {(c.sql.lower(), "INTEGER" if c.type == "BOOLEAN" else c.type,
                schema.key.index(c.name) + 1 if c.name in schema.key else 0) for c in schema.columns}
    return columns | {(CHECK_COLUMN, "TEXT", 0)}


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
        self._ready: set = set()  # schemas whose tables this object has created or checked

    def __repr__(self):
        return f"TrialStore({str(self.path)!r})"

    @contextlib.contextmanager
    def _connect(self):
        """A connection to a checked store (:meth:`_check`); any SQLite failure, and a folder that
        cannot be created or read, becomes a :class:`StoreError` (one line for the user)."""
        try:
            if self.path.is_dir():
                raise StoreDamaged(self.path, "a directory, not a database file")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # EACCES, EROFS, ENOSPC on the folder: one line, not a traceback
            raise self._os_error(err) from None
        try:
            # a long timeout: a second process waits for the first one's chunk to commit
            con = sqlite3.connect(self.path, timeout=120.0, isolation_level=None)
        except sqlite3.Error as err:
            raise _store_error(self.path, err) from None
        try:
            version = self._refuse_newer(con)  # before anything that could write to it
            con.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL never corrupts and loses no committed chunk when the process dies;
            # only an operating-system crash may drop the last chunks, which a rerun recomputes
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA busy_timeout=120000")
            self._check(con, version)
            yield con
        except sqlite3.Error as err:
            if isinstance(err, (sqlite3.IntegrityError, sqlite3.ProgrammingError,
                                sqlite3.NotSupportedError)):
                raise  # a fault of this code, not of the file
            raise _store_error(self.path, err) from None
        except UnicodeDecodeError as err:  # garbled schema text: Python's sqlite3 decodes it, not SQLite
            raise StoreDamaged(self.path, f"text that is not UTF-8: {err.reason} at byte {err.start}") from None
        finally:
            con.close()

    def _os_error(self, err: OSError) -> StoreError:
        return StoreError(f"cannot use the trial store {self.path} ({os_error_line(err)})")

    def _exists(self) -> bool:
        try:
            return self.path.exists() or self.path.is_symlink()
        except OSError as err:  # a folder on the way that may not be read
            raise self._os_error(err) from None

    def _identity(self) -> tuple:
        stat = os.stat(self.path)
        return os.path.realpath(self.path), stat.st_dev, stat.st_ino

    def _check(self, con, version: int) -> None:
        """Once per process and file: the whole file's integrity, and (an unstamped store,
        ``version`` below :data:`STORE_VERSION`) that its records can be verified; then stamp the
        version.  ``version`` is :meth:`_refuse_newer`'s, read before anything could write.

        Raises
        ------
        StoreMismatch
            An unstamped store with records without checksums.
        StoreDamaged
            ``integrity_check`` finds a fault.
        """
        identity = self._identity()
        if identity in _CHECKED:
            return
        if self._tables(con):
            self._integrity_check(con)
        if version < STORE_VERSION:
            self._upgrade(con, version)
        _CHECKED.add(identity)

    def _refuse_newer(self, con) -> int:
        """The store's format version; a newer one than this code's is refused (its tables may
        mean other things; writing to it could damage it for the code that made it)."""
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > STORE_VERSION:
            raise StoreMismatch(self.path, f"was written by a newer labeldp-sim (store format version "
                                f"{version}; this one reads versions up to {STORE_VERSION})",
                                "run that newer version on it, or move it aside or delete it to recompute "
                                "with this one")
        return version

    @staticmethod
    def _tables(con) -> list:
        return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                          "AND name NOT LIKE 'sqlite_%' ORDER BY name")]

    def _integrity_check(self, con) -> None:
        """SQLite's full check of the file: pages, b-trees, records' formats, and every index
        against its table (``quick_check`` skips the last: a garbled primary-key index passes it,
        hides stored records from the load and lets their duplicates in)."""
        problems = [r[0] for r in con.execute("PRAGMA integrity_check(3)").fetchall()]
        if problems != ["ok"]:
            raise StoreDamaged(self.path, _one_line("SQLite integrity_check: " + "; ".join(problems)))

    def _upgrade(self, con, version: int) -> None:
        """Stamp an unstamped (version 0) or new store with :data:`STORE_VERSION`, in one
        transaction: refused if a record table lacks ``row_sha`` (its records cannot be
        verified: reusing them would trust them blindly, and checksumming them now would
        bless whatever an edit left); an old ``runs`` table gains ``host`` and ``pid``."""
        with _migration(con):
            if con.execute("PRAGMA user_version").fetchone()[0] >= STORE_VERSION:
                return  # another process stamped it meanwhile
            for table in self._tables(con):
                columns = self._table_columns(con, table)
                if table == "runs":
                    for column in ("host", "pid"):
                        if column not in columns:
                            con.execute(f"ALTER TABLE runs ADD COLUMN {column} "
                                        f"{'INTEGER' if column == 'pid' else 'TEXT'}")
                elif CHECK_COLUMN not in columns:
                    rows = con.execute(f"SELECT count(*) FROM {_q(table)}").fetchone()[0]
                    raise StoreMismatch(
                        self.path, f"was written by an older labeldp-sim (store format version {version}): "
                        f"its table {table} holds {rows:,} record{'' if rows == 1 else 's'} without a checksum "
                        f"({CHECK_COLUMN}), which cannot be verified")
            con.execute(f"PRAGMA user_version = {STORE_VERSION}")

    def _ensure(self, con, schema: Schema) -> None:
        if schema.name in self._ready:  # once per store object, not once per chunk
            return
        columns = ", ".join(f"{_q(c.sql)} {'INTEGER' if c.type == 'BOOLEAN' else c.type}"
                            for c in schema.columns)
        key = ", ".join(_q(schema.by_name[k].sql) for k in schema.key)
        con.execute(f"CREATE TABLE IF NOT EXISTS {_q(schema.name)} ({columns}, {CHECK_COLUMN} TEXT, "
                    f"PRIMARY KEY ({key}))")
        con.execute("CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, experiment TEXT, "
                    "config_key TEXT, git_commit TEXT, code_fingerprint TEXT, started TEXT, "
                    "finished TEXT, status TEXT, wanted INTEGER, reused INTEGER, computed INTEGER, "
                    "host TEXT, pid INTEGER)")
        self._conforms(con, schema.name, _expected(schema))
        self._conforms(con, "runs", {(c, "INTEGER" if c in _RUN_INTEGERS else "TEXT", int(c == "run_id"))
                                     for c in RUN_COLUMNS})
        self._ready.add(schema.name)

    def _conforms(self, con, table: str, expected: set) -> None:
        """The table has exactly the columns, types and primary key this code creates, or the
        store is refused: an INSERT would fail on a missing column, a table without ``row_sha``
        (dropped after an edit) would hand back records nothing verifies, and one without its
        primary key would take duplicates."""
        found = {(name.lower(), kind.upper(), pk) for _, name, kind, _, _, pk in
                 con.execute(f"PRAGMA table_info({_q(table)})")}
        if found == expected:
            return
        names = {c[0] for c in found}
        missing = sorted({c[0] for c in expected} - names)
        extra = sorted(names - {c[0] for c in expected})
        if CHECK_COLUMN in missing and table != "runs":
            why = f"its records carry no checksum ({CHECK_COLUMN}) and cannot be verified"
        elif missing or extra:
            why = ", ".join(part for part in (f"lacks {', '.join(missing)}" if missing else "",
                                             f"has {', '.join(extra)}" if extra else "") if part)
        else:
            why = "other column types or another primary key"
        raise StoreMismatch(self.path, _one_line(f"does not match this labeldp-sim's store format "
                                                 f"{STORE_VERSION}: table {table}: {why}"))

    @staticmethod
    def _table_columns(con, table: str) -> set:
        return {row[1] for row in con.execute(f"PRAGMA table_info({_q(table)})")}

    def exists(self) -> bool:
        return self.path.exists()

    # ------------------------------------------------------------------ reads
    def load(self, schema: Schema, experiment: str, config_key: str, verify: bool = True) -> pd.DataFrame:
        """Every stored record of one (experiment, config key), with the schema's dtypes.

        Each record is checked to be the one asked for (a damaged index can hand
        back another one) and, with ``verify``, against its checksum (some
        microseconds a record); any fault raises :class:`StoreDamaged`: nothing
        is reused from a store that fails.
        """
        if not self._exists():
            return self._empty(schema)
        with self._connect() as con:
            self._ensure(con, schema)
            checkpoint("store.load")
            cursor = con.execute(
                f"SELECT {CHECK_COLUMN}, {', '.join(_q(c.sql) for c in schema.columns)} "
                f"FROM {_q(schema.name)} WHERE experiment = ? AND config_key = ?", (experiment, config_key))
            rows = cursor.fetchall()
        self._verify(schema, rows, experiment, config_key, verify)
        frame = pd.DataFrame.from_records([row[1:] for row in rows], columns=schema.names)
        return self._typed(frame, schema)

    def _verify(self, schema: Schema, rows: list, experiment: str, config_key: str, checksums: bool) -> None:
        bad = sum(1 for row in rows if row[0] != _row_sha(row[1:])) if checksums else 0
        if bad:
            raise StoreDamaged(self.path, f"{bad:,} of {len(rows):,} stored records of {experiment} "
                               f"fail their checksum")
        at = [schema.names.index(n) + 1 for n in schema.key]
        keys = [tuple(row[i] for i in at) for row in rows]
        if any(key[:2] != (experiment, config_key) for key in keys) or len(set(keys)) != len(keys):
            raise StoreDamaged(self.path, f"its index of {schema.name} hands back the wrong records")

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
        """The ``runs`` table: one row per run that wrote to this store.

        ``status``: running, finished, interrupted, failed (a store, disk, cluster or code
        fault ended it), or killed (a run whose process died without a word, noticed by a
        later run on the same host).
        """
        if not self._exists():
            return pd.DataFrame()
        with self._connect() as con:
            cursor = con.execute("SELECT * FROM runs ORDER BY started, rowid")
            names = [d[0] for d in cursor.description]
            return pd.DataFrame.from_records(cursor.fetchall(), columns=names)

    # ----------------------------------------------------------------- writes
    def write(self, schema: Schema, frame: pd.DataFrame, replace: bool = False) -> int:
        """Store one chunk of records in one transaction; return the rows inserted.

        ``replace=False`` keeps a record already stored under the same key (the
        first write wins: a concurrent run computed the same numbers; it is not
        counted); ``replace=True`` overwrites it (``runner.reuse=false``).  A
        signal is held from the start of the transaction to the return of the
        count (:func:`~labeldp_sim.harness.interrupts.deferred`), so the count is
        the chunk's, exactly, whenever a Ctrl-C lands.
        """
        missing = [n for n in schema.names if n not in frame]
        if missing:
            raise KeyError(f"{schema.table}: records lack columns {missing}")
        columns = [_column_to_sql(frame[name], c) for name, c in zip(schema.names, schema.columns)]
        rows = [(*row, _row_sha(row)) for row in zip(*columns)]
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = (f"{verb} INTO {_q(schema.name)} ({', '.join(_q(c.sql) for c in schema.columns)}, "
               f"{CHECK_COLUMN}) VALUES ({', '.join('?' * (len(schema.columns) + 1))})")
        with self._connect() as con:
            self._ensure(con, schema)
            try:
                checkpoint("store.write")
                con.execute("BEGIN IMMEDIATE")  # waits (C code, up to the busy time-out) for another writer
                with deferred():
                    checkpoint("store.begun")
                    before = con.total_changes
                    con.executemany(sql, rows)
                    inserted = con.total_changes - before
                    checkpoint("store.in_transaction")
                    con.execute("COMMIT")
                    checkpoint("store.committed")
            except BaseException:
                # the interrupt may land before BEGIN took effect or after COMMIT did
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
        return inserted

    def start_run(self, schema: Schema, experiment: str, config_key: str, git_commit: str,
                  fingerprint: str, wanted: int, reused: int) -> str:
        """Record a run as ``running`` (and earlier runs of this host whose process is gone as
        ``killed``); return its id."""
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        host = socket.gethostname()
        with self._connect() as con:
            self._ensure(con, schema)
            checkpoint("store.start_run")
            stale = con.execute("SELECT run_id, pid FROM runs WHERE status = 'running' AND host = ? "
                                "AND pid IS NOT NULL", (host,)).fetchall()
            for dead, _ in [r for r in stale if r[1] != os.getpid() and not _alive(r[1])]:
                con.execute("UPDATE runs SET status = 'killed' WHERE run_id = ? AND status = 'running'",
                            (dead,))
            con.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) "
                        f"VALUES ({', '.join('?' * len(RUN_COLUMNS))})",
                        (run_id, experiment, config_key, git_commit, fingerprint,
                         time.strftime("%Y-%m-%dT%H:%M:%S"), None, "running", wanted, reused, 0,
                         host, os.getpid()))
        return run_id

    def finish_run(self, run_id: str, status: str, computed: int) -> None:
        """``status``: finished, interrupted or failed; ``computed``: the records this run inserted."""
        with self._connect() as con:
            checkpoint("store.finish_run")
            con.execute("UPDATE runs SET finished = ?, status = ?, computed = ? WHERE run_id = ?",
                        (time.strftime("%Y-%m-%dT%H:%M:%S"), status, computed, run_id))


@contextlib.contextmanager
def locked(directory: Path, name: str = ".export.lock"):
    """An exclusive ``flock`` on ``directory/name``: one run exports into a directory at a time.

    Raises
    ------
    FileError
        The directory or its lock file cannot be created (EACCES, EROFS, ENOSPC...).
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle = open(directory / name, "a")
    except OSError as err:
        raise FileError(directory, err, _left(directory)) from err
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def atomic_write(path: Path, write) -> None:
    """``write(tmp_path)`` then rename onto ``path``: readers see the old file or the new one, whole.

    The temporary name keeps the suffix, so writers that pick a format from it
    (matplotlib, pandas) still do.  Inside :func:`staged` for ``path``'s
    directory, the file waits in the staging folder and lands with the others.

    Raises
    ------
    FileError
        An ``OSError`` while writing (a full disk, no permission, a read-only file system):
        one line naming ``path``; the temporary file is removed and ``path`` is as it was.
    """
    path = Path(path)
    stage = _STAGES.get(_dir_key(path.parent)) if _STAGES else None
    if stage is not None:
        stage.add(path.name, write)
        return
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(tmp)
        _fsync_file(tmp)
        os.replace(tmp, path)
    except FileError:
        raise
    except OSError as err:
        raise FileError(path, err, "the file is left as it was") from err
    finally:
        with contextlib.suppress(OSError):  # nothing half-written stays behind, whatever the fault
            tmp.unlink()


def _left(directory: Path) -> str:
    return f"{directory} is left as it was"


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _dir_key(directory: Path) -> str:
    return os.path.realpath(directory)


MANIFEST = ".export.manifest"
STAGING_PREFIX = ".staging-"
_STAGES: dict = {}  # realpath of a directory -> its open _Stage


class _Stage:
    """The files of one export of ``directory``, waiting in ``folder`` (inside it)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.folder = directory / f"{STAGING_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.names: list = []
        self.committed = False

    def add(self, name: str, write) -> None:
        target = self.folder / name
        try:
            self.folder.mkdir(exist_ok=True)
            write(target)
            _fsync_file(target)
        except FileError:
            raise
        except OSError as err:  # the staging folder goes (staged's end): nothing of it lands
            raise FileError(self.directory / name, err, _left(self.directory)) from err
        if name not in self.names:
            self.names.append(name)
        checkpoint("export.staged")

    def commit(self) -> None:
        """Rename every staged file into place, with signals held: all or none.

        A manifest written first names them, so a ``kill -9`` between two renames
        is finished by the next export of the directory (:func:`_recover`).  A fault
        before the manifest is in place (a full disk) leaves the directory as it was.
        """
        if not self.names:
            return
        _fsync_dir(self.folder)
        manifest = self.directory / MANIFEST
        with deferred():
            checkpoint("export.commit")
            tmp = manifest.with_name(f"{MANIFEST}.{os.getpid()}.tmp")
            try:
                tmp.write_text(json.dumps({"folder": self.folder.name, "names": self.names}))
                _fsync_file(tmp)
                os.replace(tmp, manifest)
            except OSError as err:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                raise FileError(manifest, err, _left(self.directory)) from err
            _fsync_dir(self.directory)
            try:
                for name in self.names:
                    os.replace(self.folder / name, self.directory / name)
                    checkpoint("export.renamed")
            except OSError as err:  # renames need no space; the manifest lets the next export finish
                raise FileError(self.directory / name, err, f"the next export to {self.directory} "
                                "completes this one's") from err
            _fsync_dir(self.directory)
            self.committed = True
            with contextlib.suppress(OSError):  # the files are in: leftovers go at the next export
                manifest.unlink()
                self.folder.rmdir()


def _recover(directory: Path) -> None:
    """Finish an export whose renames a ``kill -9`` cut short; drop staging folders left behind."""
    manifest = directory / MANIFEST
    if manifest.exists():
        try:
            plan = json.loads(manifest.read_text())
            folder = directory / plan["folder"]
            for name in plan["names"]:
                if (folder / name).exists():
                    os.replace(folder / name, directory / name)
            _fsync_dir(directory)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # the manifest is renamed into place whole; a stranger's file: drop it
        manifest.unlink(missing_ok=True)
    for folder in directory.glob(f"{STAGING_PREFIX}*"):
        shutil.rmtree(folder, ignore_errors=True)
    for tmp in directory.glob(f"{MANIFEST}.*.tmp"):
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def staged(directory):
    """Every :func:`atomic_write` into ``directory`` inside the block lands at its end, all
    at once, or (an exception, a Ctrl-C) not at all: the directory shows the old files or
    the new ones, never a mix.  Yields the stage (``.committed`` once the files are in).

    Holds the directory's ``.staging.lock`` (after any lock the caller holds). A
    nested block for the same directory joins the outer one.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FileError(directory, err, _left(directory)) from err
    key = _dir_key(directory)
    if key in _STAGES:
        yield _STAGES[key]
        return
    with locked(directory, ".staging.lock"):
        try:
            _recover(directory)
        except OSError as err:
            raise FileError(directory, err, _left(directory)) from err
        stage = _Stage(directory)
        _STAGES[key] = stage
        try:
            yield stage
            stage.commit()
        finally:
            _STAGES.pop(key, None)
            if not (directory / MANIFEST).exists():  # a cut-short commit is left to _recover
                shutil.rmtree(stage.folder, ignore_errors=True)
