"""Compare the exported numbers of two results directories (a refactor must leave them unchanged).

    python benchmarks/compare_exports.py RESULTS_A RESULTS_B [--only SUBPATH ...]

Every ``*.csv`` under either directory (matched by relative path) and every
trial table of their ``trials.sqlite`` stores is compared after dropping the
columns that may legitimately differ between two runs of the same trials
(config keys, run ids, timings, commits, timestamps, code fingerprints, hosts).
Rows are put in a canonical order first (sorted on every kept column), since
the store's order follows task completion.  Every kept column — numbers and
text — must be exactly equal (NaN equals NaN).  Figures (``*.png``),
``provenance.json`` and ``config.yaml`` are not compared: they carry paths,
commits and times.

Prints one verdict per file or table, with the first differing rows of each
that differs, and exits 1 if any differs or is missing on one side.
"""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

# Columns that say how, when or where a row was computed, not what it is: the config key and code
# fingerprint (they hash the code, which a refactor changes on purpose), commits, run ids, the
# store's computed_by (a commit) and row_sha (a checksum that covers the run id and config key:
# the values it covers are compared one by one), times and timestamps, the host, the process and
# the results folder.  Anything else, however small its difference, is a difference.
IGNORED = {"config_key", "run_id", "computed_by", "row_sha", "seconds", "git_commit", "commit",
           "code_fingerprint", "fingerprint", "started", "finished", "timestamp", "written", "host",
           "pid", "wall_s", "results_dir"}
IGNORED_SUFFIXES = ("_seconds", "_commit", "_fingerprint", "_timestamp", "_config_key")
STORE = "trials.sqlite"
SKIPPED_TABLES = {"runs"}  # run bookkeeping: ids, times, commits, hosts
SHOWN_ROWS = 5  # differing rows printed per file: enough to see the pattern, short enough to read


def ignored(column: str) -> bool:
    return column in IGNORED or column.endswith(IGNORED_SUFFIXES)


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """The kept columns, in name order, rows sorted on all of them (keys and labels before floats,
    so that a changed number does not also move its row)."""
    kept = sorted(c for c in frame.columns if not ignored(c))
    frame = frame[kept]
    order = sorted(kept, key=lambda c: pd.api.types.is_float_dtype(frame[c]))
    if len(frame) and kept:
        frame = frame.sort_values(order, kind="mergesort", na_position="last")
    return frame.reset_index(drop=True)


def _cell(value) -> str:
    value = value.item() if isinstance(value, np.generic) else value
    missing = value is None or (isinstance(value, float) and np.isnan(value))
    # repr: the comparison is exact, so the printout shows every digit
    return "nan" if missing else repr(value)


def _row_text(names, values) -> str:
    return ", ".join(f"{name}={_cell(value)}" for name, value in zip(names, values))


def _unmatched(a: pd.DataFrame, b: pd.DataFrame) -> list:
    """Lines for the first rows of A with no equal row in B, then B's with none in A (as
    multisets: a row twice in A and once in B is once unmatched)."""
    def rows(frame):
        return Counter(tuple(None if isinstance(v, float) and np.isnan(v) else v for v in row)
                       for row in frame.itertuples(index=False, name=None))

    ra, rb = rows(a), rows(b)
    lines = []
    for side, extra in (("A", ra - rb), ("B", rb - ra)):
        for row in list(extra.elements())[:SHOWN_ROWS]:
            lines.append(f"    only in {side}: " + _row_text(a.columns, row))
    return lines


def compare(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """'identical', or what differs: a verdict line, then (indented) the first differing rows."""
    a, b = canonical(a), canonical(b)
    if list(a.columns) != list(b.columns):
        only_a = sorted(set(a.columns) - set(b.columns))
        only_b = sorted(set(b.columns) - set(a.columns))
        return f"DIFFERENT columns (only in A: {only_a}; only in B: {only_b})"
    if len(a) != len(b):
        return "\n".join([f"DIFFERENT row counts ({len(a)} vs {len(b)})", *_unmatched(a, b)])
    bad, differs = [], np.zeros(len(a), dtype=bool)
    for column in a.columns:
        x, y = a[column], b[column]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            xv, yv = x.to_numpy(dtype=float), y.to_numpy(dtype=float)
            same = (xv == yv) | (np.isnan(xv) & np.isnan(yv))
        else:
            same = (x.isna() & y.isna()) | (x.astype(str) == y.astype(str))
            same = same.to_numpy()
        if not same.all():
            bad.append(f"{column} ({int((~same).sum())} rows)")
            differs |= ~same
    if not bad:
        return "identical"
    lines = ["DIFFERENT values: " + ", ".join(bad)]
    for i in np.flatnonzero(differs)[:SHOWN_ROWS]:
        # column by column: a row of mixed dtypes (iloc) would turn integers into floats
        lines += [f"    row {i} {side}: " + _row_text(frame.columns, [frame[c].iat[i] for c in frame.columns])
                  for side, frame in (("A", a), ("B", b))]
    return "\n".join(lines)


def read_csv(path: Path) -> pd.DataFrame:
    """The CSV at ``path``; an empty file (no header) as an empty frame, not an error."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def store_tables(path: Path) -> dict:
    """Every trial table of a store, as frames."""
    if not path.exists():
        return {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        names = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                 if n not in SKIPPED_TABLES]
        return {n: pd.read_sql_query(f'SELECT * FROM "{n}"', con) for n in names}


def main(argv=None) -> int:
    from bench_args import Parser

    parser = Parser(prog="benchmarks/compare_exports.py", description=__doc__.split("\n")[0],
                    allow_abbrev=False)
    parser.add_argument("a", type=Path, help="results directory A (e.g. before the change)")
    parser.add_argument("b", type=Path, help="results directory B (e.g. after the change)")
    parser.add_argument("--only", nargs="*", default=None,
                        help="compare only files whose relative path starts with one of these")
    args = parser.parse_args(argv)

    def wanted(rel: str) -> bool:
        return args.only is None or any(rel.startswith(prefix) for prefix in args.only)

    csvs = sorted({str(p.relative_to(root)) for root in (args.a, args.b) for p in root.rglob("*.csv")})
    failed = 0
    for rel in filter(wanted, csvs):
        pa, pb = args.a / rel, args.b / rel
        if not (pa.exists() and pb.exists()):
            verdict = f"MISSING in {'A' if not pa.exists() else 'B'}"
        else:
            verdict = compare(read_csv(pa), read_csv(pb))
        failed += verdict != "identical"
        print(f"{rel}: {verdict}")
    ta, tb = store_tables(args.a / STORE), store_tables(args.b / STORE)
    for name in sorted(set(ta) | set(tb)):
        if name not in ta or name not in tb:
            verdict = f"MISSING in {'A' if name not in ta else 'B'}"
        else:
            verdict = compare(ta[name], tb[name])
            first, _, rest = verdict.partition("\n")
            verdict = f"{first} ({len(ta[name]):,} rows)" + (f"\n{rest}" if rest else "")
        failed += not verdict.startswith("identical")
        print(f"{STORE}:{name}: {verdict}")
    print("ALL IDENTICAL" if not failed else f"{failed} DIFFERENCE(S)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
