"""What a stored record is: its typed columns and key (:class:`Schema`), its SQL values and its
checksum.

Every record table has the schema's columns, then :data:`PROVENANCE_COLUMNS` (which run
computed it), then :data:`CHECK_COLUMN`, a checksum of its values (:func:`row_sha`) that the
store verifies whenever records are loaded for reuse.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["Column", "Schema", "CHECK_COLUMN", "PROVENANCE_COLUMNS", "RUN_COLUMNS", "RUN_INTEGERS",
           "expected_columns", "row_sha", "quote", "column_to_sql"]

_TYPES = {"TEXT", "INTEGER", "REAL", "BOOLEAN"}
# Columns every stored record carries after its own: which run computed it, from which commit.
PROVENANCE_COLUMNS = (("run_id", "TEXT"), ("computed_by", "TEXT"))
# The store's own column in every record table: sha256 of the record's values (:func:`row_sha`),
# checked on every load.  Not part of a schema's columns: loads return the schema's columns.
CHECK_COLUMN = "row_sha"
RUN_COLUMNS = ("run_id", "experiment", "config_key", "git_commit", "code_fingerprint", "started",
               "finished", "status", "wanted", "reused", "computed", "host", "pid")
RUN_INTEGERS = ("wanted", "reused", "computed", "pid")


def row_sha(values) -> str:
    """Checksum of one record's SQL values, as SQLite hands them back: sha256 of the tuple's
    ``repr`` (floats exact, every value typed: 1, 1.0 and '1' differ)."""
    return hashlib.sha256(repr(tuple(values)).encode()).hexdigest()[:32]


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


def quote(name: str) -> str:
    """``name`` as an SQL identifier."""
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


def column_to_sql(values: pd.Series, column: Column) -> list:
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
    out = values.tolist()
    if column.type == "TEXT" and all(type(v) is str for v in out):
        return out  # _to_sql of a str is the str: keys and labels, a third of a law-free write
    return [_to_sql(v, column) for v in out]


def expected_columns(schema: Schema) -> set:
    """The (column, SQL type, position in the primary key) of the table of ``schema``, as
    ``PRAGMA table_info`` reports them (names in lower case: SQLite ignores their case)."""
    columns = {(c.sql.lower(), "INTEGER" if c.type == "BOOLEAN" else c.type,
                schema.key.index(c.name) + 1 if c.name in schema.key else 0) for c in schema.columns}
    return columns | {(CHECK_COLUMN, "TEXT", 0)}
