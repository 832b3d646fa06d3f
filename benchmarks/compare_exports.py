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

Prints one verdict per file or table and exits 1 if any differs or is missing
on one side.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import numpy as np
import pandas as pd

# columns that say how or when a row was computed, not what it is
IGNORED = {"config_key", "run_id", "computed_by", "row_sha", "seconds", "git_commit", "commit",
           "code_fingerprint", "fingerprint", "started", "finished", "timestamp", "host", "pid",
           "wall_s", "results_dir"}
IGNORED_SUFFIXES = ("_seconds", "_commit", "_fingerprint", "_timestamp", "_config_key")
STORE = "trials.sqlite"
SKIPPED_TABLES = {"runs"}  # run bookkeeping: ids, times, commits, hosts


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


def compare(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """'identical', or what differs."""
    a, b = canonical(a), canonical(b)
    if list(a.columns) != list(b.columns):
        only_a = sorted(set(a.columns) - set(b.columns))
        only_b = sorted(set(b.columns) - set(a.columns))
        return f"DIFFERENT columns (only in A: {only_a}; only in B: {only_b})"
    if len(a) != len(b):
        return f"DIFFERENT row counts ({len(a)} vs {len(b)})"
    bad = []
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
    return "identical" if not bad else "DIFFERENT values: " + ", ".join(bad)


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
            verdict = compare(pd.read_csv(pa), pd.read_csv(pb))
        failed += verdict != "identical"
        print(f"{rel}: {verdict}")
    ta, tb = store_tables(args.a / STORE), store_tables(args.b / STORE)
    for name in sorted(set(ta) | set(tb)):
        if name not in ta or name not in tb:
            verdict = f"MISSING in {'A' if name not in ta else 'B'}"
        else:
            verdict = compare(ta[name], tb[name])
            verdict += f" ({len(ta[name]):,} rows)"
        failed += not verdict.startswith("identical")
        print(f"{STORE}:{name}: {verdict}")
    print("ALL IDENTICAL" if not failed else f"{failed} DIFFERENCE(S)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
