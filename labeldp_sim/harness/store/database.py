"""The store's file, trusted only once checked: opening it, its format version, its integrity and
the shape of its tables, and the one-line errors it raises.

Trust, but check: before a process first uses an existing store it runs
SQLite's ``integrity_check`` (pages, b-trees *and* every index against its
table: a garbled primary-key index passes ``quick_check`` and then lets a
duplicate in), once per process per file; every table a run uses must have
the columns, types and primary key this code creates, ``row_sha`` included.
A damaged store (a truncated or garbled file, a text file or a folder in its
place, a broken index) is refused with one line (:class:`StoreDamaged`)
before anything is reused or computed.

The store's format has a version, :data:`STORE_VERSION`, stamped in the file
(``PRAGMA user_version``), so that any labeldp-sim can tell a store it cannot
read: one written by a newer version is refused in one line
(:class:`StoreMismatch`) that names both versions.  An unstamped store
(version 0, written before the stamp existed) is checked and stamped, unless
a table of it holds records without checksums, which nothing can verify: it
is refused in one line, never reused.

Disk and permission faults (a full disk, a read-only or forbidden folder) in
the store are a :class:`StoreError`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from labeldp_sim.harness.errors import one_line, os_error_line
from labeldp_sim.harness.interrupts import deferred
from labeldp_sim.harness.store.schema import (
    CHECK_COLUMN, RUN_COLUMNS, RUN_INTEGERS, Schema, expected_columns, quote)

__all__ = ["StoreFile", "StoreError", "StoreDamaged", "StoreMismatch", "STORE_NAME", "STORE_VERSION"]

STORE_NAME = "trials.sqlite"
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


class StoreFile:
    """One store file, opened only through :meth:`_connect`, which checks it first; the
    :class:`~labeldp_sim.harness.store.TrialStore` reads and writes records through it.

    Parameters
    ----------
    path : path-like
        The database file.  It is created (with its directory) on the first
        write, not before.
    """

    def __init__(self, path):
        self.path = Path(path)
        self._ready: set = set()  # schemas whose tables this object has created or checked

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
                    rows = con.execute(f"SELECT count(*) FROM {quote(table)}").fetchone()[0]
                    raise StoreMismatch(
                        self.path, f"was written by an older labeldp-sim (store format version {version}): "
                        f"its table {table} holds {rows:,} record{'' if rows == 1 else 's'} without a checksum "
                        f"({CHECK_COLUMN}), which cannot be verified")
            con.execute(f"PRAGMA user_version = {STORE_VERSION}")

    def _ensure(self, con, schema: Schema) -> None:
        if schema.name in self._ready:  # once per store object, not once per chunk
            return
        columns = ", ".join(f"{quote(c.sql)} {'INTEGER' if c.type == 'BOOLEAN' else c.type}"
                            for c in schema.columns)
        key = ", ".join(quote(schema.by_name[k].sql) for k in schema.key)
        con.execute(f"CREATE TABLE IF NOT EXISTS {quote(schema.name)} ({columns}, {CHECK_COLUMN} TEXT, "
                    f"PRIMARY KEY ({key}))")
        con.execute("CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, experiment TEXT, "
                    "config_key TEXT, git_commit TEXT, code_fingerprint TEXT, started TEXT, "
                    "finished TEXT, status TEXT, wanted INTEGER, reused INTEGER, computed INTEGER, "
                    "host TEXT, pid INTEGER)")
        self._conforms(con, schema.name, expected_columns(schema))
        self._conforms(con, "runs", {(c, "INTEGER" if c in RUN_INTEGERS else "TEXT", int(c == "run_id"))
                                     for c in RUN_COLUMNS})
        self._ready.add(schema.name)

    def _conforms(self, con, table: str, expected: set) -> None:
        """The table has exactly the columns, types and primary key this code creates, or the
        store is refused: an INSERT would fail on a missing column, a table without ``row_sha``
        (dropped after an edit) would hand back records nothing verifies, and one without its
        primary key would take duplicates."""
        found = {(name.lower(), kind.upper(), pk) for _, name, kind, _, _, pk in
                 con.execute(f"PRAGMA table_info({quote(table)})")}
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
        return {row[1] for row in con.execute(f"PRAGMA table_info({quote(table)})")}
