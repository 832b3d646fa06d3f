"""Values a computation derives on its way to a trial, kept across processes and runs.

A trial's number may rest on an intermediate that depends on far fewer settings than the trial
(Table I's exact classification: the law of the cubes' tilts depends on the family and the two
grid scales, not on N, ε or the mechanism).  Recomputing it in every worker and every cell costs
more than the trials themselves; :class:`Memo` keeps it in ``<results_dir>/memo.sqlite``.

* **Keyed on the code.**  A value is stored under the code fingerprint of the packages that make
  it (:func:`~labeldp_sim.harness.provenance.code_fingerprint`) and a key that names every
  argument (its ``repr``: floats round-trip exactly), so an edit to the code never reuses a value.
* **Exact.**  A value is stored pickled and read back bit for bit, with a sha256 checked on every
  read: a number made from a stored value equals the one made from a fresh one.
* **Never in the way.**  A memo that cannot be opened or written (a read-only folder, a full disk,
  a damaged file) is skipped: the value is computed, as without a memo.  Two processes that compute
  the same key store equal values; a garbled one is replaced.  Deleting the file loses only time.

A task makes a memo its process's own for a while (:func:`memo_in`); code deep in the
computation asks :func:`memoized`, which computes the value where no memo is in use.
"""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
from contextlib import contextmanager
from pathlib import Path

__all__ = ["Memo", "MEMO_NAME", "memo_in", "memoized", "memo_count"]

MEMO_NAME = "memo.sqlite"
_TABLE = ("CREATE TABLE IF NOT EXISTS memo (fingerprint TEXT NOT NULL, key TEXT NOT NULL, "
          "value BLOB NOT NULL, sha TEXT NOT NULL, PRIMARY KEY (fingerprint, key))")
_MISSING = object()


class Memo:
    """The stored values of one code fingerprint in one file.

    Parameters
    ----------
    path : Path
        The SQLite file (created with its folder's parent present).
    fingerprint : str
        The code fingerprint every value read or written here is stored under.
    """

    def __init__(self, path: Path, fingerprint: str):
        self.path, self.fingerprint = Path(path), str(fingerprint)
        self._con = None  # None once it cannot be used: every value is then computed

    def __enter__(self) -> "Memo":
        try:
            con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute(_TABLE)
            self._con = con
        except (sqlite3.Error, OSError):
            pass  # no memo: the values are computed
        return self

    def __exit__(self, *exc) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def get(self, key: str):
        """The value stored under ``key``, or the module's missing marker."""
        if self._con is None:
            return _MISSING
        try:
            row = self._con.execute("SELECT value, sha FROM memo WHERE fingerprint = ? AND key = ?",
                                    (self.fingerprint, key)).fetchone()
        except sqlite3.Error:
            self.__exit__()
            return _MISSING
        if row is None or hashlib.sha256(row[0]).hexdigest() != row[1]:
            return _MISSING  # a garbled value is recomputed and replaced
        return pickle.loads(row[0])

    def put(self, key: str, value) -> None:
        """Store ``value`` under ``key`` (replacing an equal one another process stored, or a garbled one)."""
        if self._con is None:
            return
        blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self._con.execute("INSERT OR REPLACE INTO memo VALUES (?, ?, ?, ?)",
                              (self.fingerprint, key, blob, hashlib.sha256(blob).hexdigest()))
        except sqlite3.Error:
            self.__exit__()

    def count(self) -> int:
        """How many values of this fingerprint the file holds (0 where it cannot be read)."""
        if self._con is None:
            return 0
        try:
            return int(self._con.execute("SELECT COUNT(*) FROM memo WHERE fingerprint = ?",
                                         (self.fingerprint,)).fetchone()[0])
        except sqlite3.Error:
            self.__exit__()
            return 0


_ACTIVE: list = []  # the memo this process's current task uses (a stack: tasks do not nest, tests may)


@contextmanager
def memo_in(path: Path, fingerprint: str):
    """Make ``path`` (a :class:`Memo` of ``fingerprint``) the memo :func:`memoized` uses, for the block.

    A folder that does not exist (a Dask worker on another host, whose results folder is not
    shared) gives no memo: the values are computed.
    """
    path = Path(path)
    if not path.parent.is_dir():
        yield None
        return
    with Memo(path, fingerprint) as memo:
        _ACTIVE.append(memo)
        try:
            yield memo
        finally:
            _ACTIVE.remove(memo)


def memoized(name: str, args: tuple, compute):
    """``compute()``, or the value the memo in use stored under ``name`` and ``args``.

    Parameters
    ----------
    name : str
        What the value is (a function's qualified name).
    args : tuple
        Every argument it depends on, of types whose ``repr`` names them exactly (int, float, str,
        bool, None and tuples of them).
    compute : callable
        Makes the value.
    """
    if not _ACTIVE:
        return compute()
    memo, key = _ACTIVE[-1], f"{name}{args!r}"
    value = memo.get(key)
    if value is _MISSING:
        value = compute()
        memo.put(key, value)
    return value


def memo_count(path: Path, fingerprint: str) -> int:
    """How many values of ``fingerprint`` the memo at ``path`` holds; 0 where there is none (none created)."""
    if not Path(path).is_file():
        return 0
    with Memo(path, fingerprint) as memo:
        return memo.count()
