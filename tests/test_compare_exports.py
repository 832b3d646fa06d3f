"""benchmarks/compare_exports.py, the refactor's check: two results folders compared CSV by CSV
(recursively, either side's files), equal up to time, host and provenance columns only, exactly."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "compare_exports.py"


def _compare(a: Path, b: Path):
    done = subprocess.run([sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True, text=True,
                          timeout=120)
    return done.returncode, done.stdout


def _write(root: Path, rel: str, frame: pd.DataFrame) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)


def _results(root: Path, *, key: str, seconds: float, order=slice(None), mean=(0.5, 0.25)) -> None:
    trials = pd.DataFrame({"N": [10, 20], "mean": list(mean), "config_key": [key, key],
                           "seconds": [seconds, seconds], "git_commit": [key, key], "run_id": [key, key],
                           "written": [f"2026-11-2{seconds:.0f}"] * 2})
    _write(root, "cls/trials.csv", trials.iloc[order])
    _write(root, "table1.csv", pd.DataFrame({"cell": ["a"], "slope": [-0.5], "code_fingerprint": [key]}))


def test_runs_that_differ_in_times_keys_and_order_only_are_identical(tmp_path):
    _results(tmp_path / "a", key="c1", seconds=1.0)
    _results(tmp_path / "b", key="c2", seconds=2.0, order=slice(None, None, -1))
    status, out = _compare(tmp_path / "a", tmp_path / "b")
    assert status == 0, out
    assert "cls/trials.csv: identical" in out and "table1.csv: identical" in out and "ALL IDENTICAL" in out


def test_one_ulp_in_a_nested_csv_fails_and_shows_the_row(tmp_path):
    _results(tmp_path / "a", key="c1", seconds=1.0)
    _results(tmp_path / "b", key="c1", seconds=1.0, mean=(0.5, np.nextafter(0.25, 1.0)))
    status, out = _compare(tmp_path / "a", tmp_path / "b")
    assert status == 1
    assert "cls/trials.csv: DIFFERENT values: mean (1 rows)" in out
    assert "row 1 A: N=20, mean=0.25" in out and f"row 1 B: N=20, mean={float(np.nextafter(0.25, 1.0))!r}" in out


def test_files_and_rows_on_one_side_only_are_named(tmp_path):
    _results(tmp_path / "a", key="c1", seconds=1.0)
    _results(tmp_path / "b", key="c1", seconds=1.0)
    _write(tmp_path / "b", "extra/summary.csv", pd.DataFrame({"x": [1]}))
    _write(tmp_path / "a", "cls/trials.csv", pd.DataFrame({"N": [10, 20, 30], "mean": [0.5, 0.25, 0.125]}))
    status, out = _compare(tmp_path / "a", tmp_path / "b")
    assert status == 1
    assert "extra/summary.csv: MISSING in A" in out
    assert "cls/trials.csv: DIFFERENT row counts (3 vs 2)" in out and "only in A: N=30, mean=0.125" in out
