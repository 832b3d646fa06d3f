"""The trial store's records: loading one configuration's trials for reuse, writing a chunk of
them, and the ``runs`` table that says which run computed what.

Why SQLite: one file, in the standard library, with transactions.  Each chunk
of trials is one ``BEGIN IMMEDIATE`` transaction, so a ``kill -9`` at any instant
leaves every chunk either wholly stored or absent, and concurrent writers
(two processes on one directory) queue on the write lock instead of
clobbering each other.  The journal is WAL, so readers never block the writer.

Every stored record carries ``row_sha``, a checksum of its values, verified
whenever records are loaded for reuse: an edited record, or a record that a
damaged index hands back for another, is refused with one line
(:class:`~.database.StoreDamaged`) before anything is reused.
"""

from __future__ import annotations

import os
import socket
import time
import uuid

import pandas as pd

from labeldp_sim.harness.interrupts import checkpoint, deferred
from labeldp_sim.harness.store.database import StoreDamaged, StoreFile
from labeldp_sim.harness.store.schema import (
    CHECK_COLUMN, RUN_COLUMNS, Schema, column_to_sql, quote, row_sha)

__all__ = ["TrialStore"]


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError, TypeError):
        return True
    return True


class TrialStore(StoreFile):
    """The SQLite trial store of one results directory.

    Parameters
    ----------
    path : path-like
        The database file, usually ``<results_dir>/trials.sqlite``.  It is
        created (with its directory) on the first write, not before.
    """

    def __repr__(self):
        return f"TrialStore({str(self.path)!r})"

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
                f"SELECT {CHECK_COLUMN}, {', '.join(quote(c.sql) for c in schema.columns)} "
                f"FROM {quote(schema.name)} WHERE experiment = ? AND config_key = ?", (experiment, config_key))
            rows = cursor.fetchall()
        self._verify(schema, rows, experiment, config_key, verify)
        frame = pd.DataFrame.from_records([row[1:] for row in rows], columns=schema.names)
        return self._typed(frame, schema)

    def _verify(self, schema: Schema, rows: list, experiment: str, config_key: str, checksums: bool) -> None:
        bad = sum(1 for row in rows if row[0] != row_sha(row[1:])) if checksums else 0
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
        columns = [column_to_sql(frame[name], c) for name, c in zip(schema.names, schema.columns)]
        rows = [(*row, row_sha(row)) for row in zip(*columns)]
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = (f"{verb} INTO {quote(schema.name)} ({', '.join(quote(c.sql) for c in schema.columns)}, "
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
