"""The trial store: typed, keyed, atomic per chunk; safe under kill -9 and concurrent writers."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labeldp_sim.core.store import Column, Schema, TrialStore, atomic_write

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
NUMBERS = ["seed_key", "replicate", "N", "eps", "G", "excess_risk", "regret_fraction"]

SCHEMA = Schema("demo", (
    Column("experiment", "TEXT"), Column("config_key", "TEXT"), Column("seed_key", "TEXT"),
    Column("K", "REAL", sql="K_classes"), Column("k", "REAL"), Column("n", "INTEGER"),
    Column("flag", "BOOLEAN"), Column("value", "REAL"),
), key=("experiment", "config_key", "seed_key"))


def _frame(keys, value=0.0015026123456789, **extra):
    return pd.DataFrame({"experiment": "e", "config_key": "c0123456789abcdef", "seed_key": keys,
                         "K": 2.0, "k": np.nan, "n": 3, "flag": True, "value": value,
                         "run_id": "r", "computed_by": "abc", **extra})


# ------------------------------------------------------------------ units

def test_records_round_trip_with_their_types(tmp_path):
    store = TrialStore(tmp_path / "s.sqlite")
    assert store.write(SCHEMA, _frame(["a-0", "a-1"])) == 2
    back = store.load(SCHEMA, "e", "c0123456789abcdef")
    assert list(back.seed_key) == ["a-0", "a-1"]
    assert back.value.tolist() == [0.0015026123456789] * 2  # exact, not a CSV rounding
    assert back["K"].tolist() == [2.0, 2.0] and back.k.isna().all()  # K and k kept apart
    assert back.n.dtype == np.int64 and back.flag.dtype == bool
    assert back.config_key.map(type).eq(str).all()  # a key that looks like a number stays a string


def test_a_key_is_stored_once_first_write_wins_unless_replacing(tmp_path):
    store = TrialStore(tmp_path / "s.sqlite")
    store.write(SCHEMA, _frame(["a-0"], value=1.0))
    assert store.write(SCHEMA, _frame(["a-0", "a-1"], value=2.0)) == 1
    back = store.load(SCHEMA, "e", "c0123456789abcdef").set_index("seed_key").value
    assert back.to_dict() == {"a-0": 1.0, "a-1": 2.0}
    store.write(SCHEMA, _frame(["a-0"], value=3.0), replace=True)
    assert store.load(SCHEMA, "e", "c0123456789abcdef").set_index("seed_key").value["a-0"] == 3.0


def test_a_failed_chunk_leaves_nothing(tmp_path):
    store = TrialStore(tmp_path / "s.sqlite")
    store.write(SCHEMA, _frame(["a-0"]))
    bad = _frame(["a-1", "a-2"], value=[0.5, "not a number"])  # its second record is bad
    with pytest.raises(ValueError):
        store.write(SCHEMA, bad)
    assert list(store.load(SCHEMA, "e", "c0123456789abcdef").seed_key) == ["a-0"]


def test_schemas_refuse_clashing_column_names():
    with pytest.raises(ValueError, match="clash"):
        Schema("x", (Column("experiment", "TEXT"), Column("config_key", "TEXT"),
                     Column("K", "REAL"), Column("k", "REAL")), key=("experiment", "config_key"))


def test_atomic_write_leaves_the_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")

    def half_then_fail(path):
        path.write_text("half")
        raise RuntimeError("the writer died")

    with pytest.raises(RuntimeError):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["out.csv"]


# ------------------------------------------------------- whole runs, subprocesses

def _cli(args, results, **kw):
    return subprocess.Popen([sys.executable, "-m", "labeldp_sim", *args, f"paths.results_dir={results}"],
                            cwd=results.parent, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _stored(results) -> pd.DataFrame:
    path = results / "trials.sqlite"
    if not path.exists():
        return pd.DataFrame(columns=NUMBERS)
    with sqlite3.connect(path) as con:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rate_trials%'")]
        if not tables:
            return pd.DataFrame(columns=NUMBERS)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return pd.read_sql_query(f"SELECT * FROM {tables[0]}", con)


KILL_ARGS = ["experiment=cls_label_cdp", "grid.d=[1]", "grid.reps=500", "runner.chunk=20",
             "runner.n_jobs=2", "runner.progress=false"]


def _count(results) -> int:
    try:
        with sqlite3.connect(results / "trials.sqlite", timeout=5) as con:
            return con.execute("SELECT count(*) FROM rate_trials_v1").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def _kill_when(proc, results, stored_at_least: int, then_wait: float) -> None:
    """SIGKILL the process group once the store holds ``stored_at_least`` trials, ``then_wait`` s later."""
    while stored_at_least and _count(results) < stored_at_least and proc.poll() is None:
        time.sleep(0.01)
    time.sleep(then_wait)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def test_kill_9_at_random_instants_loses_duplicates_and_alters_nothing(tmp_path, capsys):
    """SIGKILL the process group at 10 random instants, then finish: the uninterrupted result.

    Instants are random within the run's phases, found from its progress rather than
    the clock (a loaded machine shifts the clock): 2 before anything is stored, 6 once
    a random share of the trials is stored, 2 after all are stored (while exporting).
    Each kill gets a directory of its own; the finished run must equal the reference.
    """
    from labeldp_sim.app import main

    reference_run = _cli(KILL_ARGS, tmp_path / "reference")
    assert reference_run.wait(timeout=600) == 0, reference_run.stderr.read()
    reference = pd.read_csv(tmp_path / "reference" / "cls_label_cdp" / "trials.csv").set_index("seed_key")
    wanted = len(reference)
    rng = np.random.default_rng(20261123)
    plans = ([(0, rng.uniform(0.0, 1.0)) for _ in range(2)]
             + [(int(rng.uniform(0.05, 0.9) * wanted), 0.0) for _ in range(6)]
             + [(wanted, rng.uniform(0.0, 0.5)) for _ in range(2)])
    partial_states = 0
    for i, (stored_at_least, then_wait) in enumerate(plans):
        results = tmp_path / f"killed{i}"
        _kill_when(_cli(KILL_ARGS, results, start_new_session=True), results, stored_at_least, then_wait)
        stored = _stored(results)  # also checks the database's integrity
        assert not stored.seed_key.duplicated().any()
        np.testing.assert_array_equal(stored.excess_risk.to_numpy(),
                                      reference.loc[stored.seed_key].excess_risk.to_numpy())
        partial_states += 0 < len(stored) < wanted
        export = results / "cls_label_cdp" / "trials.csv"
        if export.exists():  # an export is never torn: whole, with all of the run's trials
            assert len(pd.read_csv(export)) == wanted

        main([*KILL_ARGS, f"paths.results_dir={results}"])
        assert f"{len(stored):,} reused" in capsys.readouterr().out
        trials = pd.read_csv(export).set_index("seed_key")
        assert len(trials) == wanted and not trials.index.duplicated().any()
        pd.testing.assert_frame_equal(trials[NUMBERS[1:]], reference.loc[trials.index, NUMBERS[1:]])
    assert partial_states >= 5, "the kills meant to fall mid-run found the run finished"


SMALL = ["experiment=cls_label_cdp", "grid.d=[1]", "grid.reps=400", "runner.chunk=20",
         "runner.n_jobs=1", "runner.progress=false"]


def test_the_same_command_twice_at_once_keeps_every_trial_once(tmp_path):
    results = tmp_path / "results"
    procs = [_cli(SMALL, results) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outputs]
    trials = pd.read_csv(results / "cls_label_cdp" / "trials.csv")
    stored = _stored(results)
    assert len(trials) == len(stored) == 5 * 400 and not stored.seed_key.duplicated().any()


def _printed_slopes(stdout: str) -> dict:
    return {(m[0], int(m[1])): float(m[2]) for m in
            re.findall(r"slope on log (\w+), d=(\d+): (-?[\d.]+)", stdout)}


def test_two_configs_at_once_each_report_their_own_trials(tmp_path):
    from labeldp_sim.core.fit import fit_rates, summarize
    from labeldp_sim.table1.theory import CELLS

    results = tmp_path / "results"
    a, b = _cli(SMALL, results), _cli([*SMALL, "distribution.C_M=2"], results)
    (out_a, err_a), (out_b, err_b) = a.communicate(timeout=600), b.communicate(timeout=600)
    assert a.returncode == 0 and b.returncode == 0, (err_a, err_b)
    stored = _stored(results)
    keys = stored.config_key.unique()
    assert len(keys) == 2 and (stored.groupby("config_key").size() == 5 * 400).all()
    for out in (out_a, out_b):
        key = re.search(r"\[config (c[0-9a-f]{16});", out).group(1)
        mine = stored[stored.config_key == key].rename(columns={"K_classes": "K"})
        mine["in_regime"] = mine.in_regime.astype(bool)
        fits = fit_rates(summarize(mine), CELLS["cls_label_cdp"], 0.05, 3)
        for (axis, d), slope in _printed_slopes(out).items():
            fit = fits[(fits.axis == axis) & (fits.d == d) & fits.primary.astype(bool)]
            assert slope == pytest.approx(float(fit.slope.iloc[0]), abs=6e-4)
    # the exported directory is the last finisher's, whole and coherent
    out_dir = results / "cls_label_cdp"
    provenance = json.loads((out_dir / "provenance.json").read_text())
    trials = pd.read_csv(out_dir / "trials.csv")
    assert set(trials.config_key) == {provenance["config_key"]}
    assert provenance["trials"]["wanted"] == len(trials)


def test_a_code_change_recomputes_and_says_what_it_reuses(tmp_path):
    """Copy the package, change one numeric module, rerun: nothing is reused; revert: all is.
    A change to another paper's package leaves the Table I trials valid."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(ROOT / "labeldp_sim", copy / "labeldp_sim")
    shutil.copytree(ROOT / "conf", copy / "conf")
    env = {**ENV, "PYTHONPATH": str(copy)}
    results = tmp_path / "results"
    args = [sys.executable, "-m", "labeldp_sim", "experiment=cls_label_cdp", "grid.d=[1]",
            "grid.reps=30", "runner.n_jobs=1", "runner.progress=false", f"paths.results_dir={results}"]

    def run():
        proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "0 reused" in run()
    assert "150 reused" in run() and "0 to compute" in run()
    other_paper = copy / "labeldp_sim" / "userlevel" / "mean.py"
    other_paper.write_text(other_paper.read_text() + "\n# a change to another paper's code\n")
    assert "150 reused" in run()
    estimators = copy / "labeldp_sim" / "table1" / "estimators.py"
    original = estimators.read_text()
    estimators.write_text(original + "\n# a change to the code that computes trials\n")
    assert ": 150 trials: 0 reused" in run()
    estimators.write_text(original)
    out = run()
    assert "150 reused" in out and "computed by 150 by" in out
