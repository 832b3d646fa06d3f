"""The trial store: typed, keyed, atomic per chunk; safe under kill -9 and concurrent writers."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labeldp_sim.harness.store import Column, Schema, TrialStore, atomic_write

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


@pytest.mark.parametrize("column, values", [
    (Column("t", "TEXT"), ["a", "b"]),  # every value a str: the fast path
    (Column("t", "TEXT"), ["a", None, np.nan, 3, 2.5]),  # missing values and numbers as text
    (Column("t", "TEXT"), pd.array(["a", None], dtype="string")),
    (Column("r", "REAL"), [0.1, -0.0, np.nan, 3]),
    (Column("r", "REAL"), ["0.5", None]),
    (Column("i", "INTEGER"), [1, 2]),
    (Column("i", "INTEGER"), [1.0, np.nan]),
    (Column("b", "BOOLEAN"), [True, False]),
])
def test_a_whole_column_converts_as_each_value_alone(column, values):
    from labeldp_sim.harness.store.schema import _to_sql, column_to_sql

    series = pd.Series(values)
    converted = column_to_sql(series, column)
    alone = [_to_sql(v, column) for v in series.tolist()]
    # the checksum is of the repr of these values: equal and of one type, value by value
    assert repr(converted) == repr(alone)


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


KILL_ARGS = ["experiment=cls_label_cdp", "grid.d=[1]", "grid.reps=100", "runner.chunk=10",
             "runner.n_jobs=2", "runner.progress=false", "runner.path=sufficient"]


def _killed_at(results, instant: str, n_jobs: int) -> None:
    """Run KILL_ARGS; SIGKILL its whole process group at ``instant`` (``checkpoint:n``), found by
    the store's own hooks (:mod:`labeldp_sim.harness.interrupts`), not by the clock."""
    env = {**ENV, "LABELDP_SIM_TEST_SIGNAL": f"{instant}:SIGKILL:group"}
    proc = subprocess.Popen([sys.executable, "-m", "labeldp_sim", *KILL_ARGS, f"runner.n_jobs={n_jobs}",
                             f"paths.results_dir={results}"],
                            cwd=results.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGKILL, instant


# The default run kills at 2 of the 8 instants (one inside a transaction with 2 workers, one
# between two renames of the export); ``pytest -m slow`` kills at all 8.
@pytest.mark.parametrize("kills", [pytest.param((2, 7), id="2-instants"),
                                   pytest.param(tuple(range(8)), id="8-instants", marks=pytest.mark.slow)])
def test_kill_9_at_random_instants_loses_duplicates_and_alters_nothing(tmp_path, capsys, quick_plots, kills):
    """SIGKILL the process group at 8 instants, then finish: the uninterrupted result.

    2 before anything is stored (start-up, loky's start), 4 inside or between the
    transactions of random chunks, 2 while exporting (a file staged; between two renames
    of the export, which the next export completes).  Each kill gets a directory of its own;
    the finished run must equal the reference (computed with 2 loky workers; the kills
    at loky's start and in the first two chunks have 2 workers too, the others run in the
    driver alone: the numbers are the same, and the kills cheaper).
    """
    from labeldp_sim.app import main

    reference_run = _cli(KILL_ARGS, tmp_path / "reference")
    assert reference_run.wait(timeout=600) == 0, reference_run.stderr.read()
    reference = pd.read_csv(tmp_path / "reference" / "cls_label_cdp" / "trials.csv").set_index("seed_key")
    wanted = len(reference)
    rng = np.random.default_rng(20261123)
    chunks = rng.choice(np.arange(2, 45), size=4, replace=False)
    steps = ["store.begun", "store.in_transaction", "store.committed"]
    plans = (["startup:1", "workers.started:1"]
             + [f"{steps[i % 3]}:{n}" for i, n in enumerate(chunks)]
             + ["export.staged:3", "export.renamed:2"])
    partial_states = 0
    for i, instant in enumerate(plans):
        if i not in kills:
            continue
        results = tmp_path / f"killed{i}"
        results.mkdir()
        _killed_at(results, instant, n_jobs=2 if i in (1, 2, 3) else 1)
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
        status = list(TrialStore(results / "trials.sqlite").runs().status)
        # a run killed while computing stays "running" until the next run finds its process gone
        killed_computing = instant.startswith(("store.", "workers."))
        assert status == (["killed", "finished"] if killed_computing else status[:-1] + ["finished"])
        assert "running" not in status, (instant, status)
        trials = pd.read_csv(export).set_index("seed_key")
        assert len(trials) == wanted and not trials.index.duplicated().any()
        pd.testing.assert_frame_equal(trials[NUMBERS[1:]], reference.loc[trials.index, NUMBERS[1:]])
        assert not list((results / "cls_label_cdp").glob(".staging-*"))
    assert partial_states == sum(2 <= i <= 5 for i in kills)  # the 4 kills inside the store's chunks


SMALL = ["experiment=cls_label_cdp", "grid.d=[1]", "grid.reps=400", "runner.chunk=20",
         "runner.n_jobs=1", "runner.progress=false", "runner.path=sufficient"]


def test_the_same_command_twice_at_once_keeps_every_trial_once(tmp_path):
    results = tmp_path / "results"
    procs = [_cli(SMALL, results) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outputs]
    trials = pd.read_csv(results / "cls_label_cdp" / "trials.csv")
    stored = _stored(results)
    assert len(trials) == len(stored) == 5 * 400 and not stored.seed_key.duplicated().any()
    # each run counts the trials it stored, not those it computed after the other one stored them
    runs = TrialStore(results / "trials.sqlite").runs().set_index("run_id")
    assert (runs.status == "finished").all() and runs.computed.sum() == len(stored)
    assert stored.groupby("run_id").size().to_dict() == runs.computed[runs.computed > 0].to_dict()


def _printed_slopes(stdout: str) -> dict:
    return {(m[0], int(m[1])): float(m[2]) for m in
            re.findall(r"slope on log (\w+), d=(\d+): (-?[\d.]+)", stdout)}


def test_two_configs_at_once_each_report_their_own_trials(tmp_path):
    from labeldp_sim.papers.table1.fit import fit_rates, summarize
    from labeldp_sim.papers.table1.theory import CELLS

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


def test_the_code_fingerprint_follows_numeric_code_only(tmp_path, monkeypatch):
    """The rules behind reuse, in process: a paper's numeric module changes its fingerprint; a
    presentation module it declares, or another paper's code, does not."""
    import shutil

    from labeldp_sim.harness import provenance

    copy = tmp_path / "labeldp_sim"
    shutil.copytree(ROOT / "labeldp_sim", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(provenance, "PACKAGE_DIR", copy)
    fingerprint = provenance.code_fingerprint.__wrapped__  # uncached: the files change in between
    before = fingerprint("table1")

    def edited(relative):
        path = copy / relative
        original = path.read_text()
        path.write_text(original + "\n# an edit\n")
        try:
            return fingerprint("table1")
        finally:
            path.write_text(original)

    assert edited("papers/table1/estimators/cube.py") != before
    assert edited("harness/seeds.py") != before
    assert edited("papers/table1/report.py") == before  # declared in papers/table1/paper.py
    assert edited("papers/userlevel/mean.py") == before  # another paper
    assert edited("harness/cli.py") == before
    assert fingerprint("table1") == before


@pytest.mark.slow  # 6 runs end to end (~15 s); tests/test_extension.py checks the fingerprint rules in the default run
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
            "grid.reps=30", "runner.n_jobs=1", "runner.progress=false", "runner.path=sufficient",
            f"paths.results_dir={results}"]

    def run():
        proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "0 reused" in run()
    again = run()
    assert "150 reused" in again and "0 to compute" in again
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


# ------------------------------------------------------------------ a damaged store is refused

DAMAGE_ARGS = ["experiment=cls_label_cdp", "grid.d=[1]", "grid.reps=6", "runner.n_jobs=1",
               "runner.progress=false", "runner.path=sufficient"]


def _main(results) -> tuple:
    """main() in-process on ``results``: (exit status, stdout, stderr)."""
    from labeldp_sim.app import main

    try:
        main([*DAMAGE_ARGS, f"paths.results_dir={results}"])
        return 0
    except SystemExit as exit_:
        return exit_.code


@pytest.fixture
def healthy(tmp_path, quick_plots, capsys):
    """A results directory whose store holds one run (30 trials); its export as the reference."""
    results = tmp_path / "healthy"
    assert _main(results) == 0
    capsys.readouterr()
    for suffix in ("-wal", "-shm"):  # all in the main file (the last connection checkpointed it)
        assert not (results / f"trials.sqlite{suffix}").exists()
    return results, pd.read_csv(results / "cls_label_cdp" / "trials.csv")


def _damaged(tmp_path, healthy, name: str, damage) -> Path:
    results = tmp_path / name
    results.mkdir()
    store = results / "trials.sqlite"
    store.write_bytes((healthy[0] / "trials.sqlite").read_bytes())
    damage(store)
    return results


def _assert_refused(results, capsys, why: str = ""):
    status = _main(results)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert status == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"labeldp-sim: error: {results / 'trials.sqlite'} is damaged (")
    assert lines[0].endswith("move it aside or delete it to recompute") and why in lines[0]
    assert "reused" not in out and not (results / "cls_label_cdp" / "trials.csv").exists()


def _truncate(store):
    store.write_bytes(store.read_bytes()[: store.stat().st_size // 2])


def _garble_header(store):
    data = bytearray(store.read_bytes())
    data[:16] = bytes(range(16))
    store.write_bytes(bytes(data))


def _text(store):
    store.write_text("trials, as I remember them\n")


def _folder(store):
    store.unlink()
    store.mkdir()
    (store / "notes.txt").write_text("not a database\n")


@pytest.mark.parametrize("damage", [_truncate, _garble_header, _text, _folder])
def test_a_damaged_store_is_refused_in_one_line(tmp_path, healthy, capsys, damage):
    _assert_refused(_damaged(tmp_path, healthy, damage.__name__, damage), capsys)


def test_an_edited_record_is_caught_by_its_checksum(tmp_path, healthy, capsys):
    """A value changed in place (the file stays a valid database) and one changed through SQL."""
    trials = healthy[1]
    value = float(trials.excess_risk[trials.excess_risk > 0].iloc[3])

    def in_place(store):
        import struct

        data = store.read_bytes()
        at = data.find(struct.pack(">d", value))
        assert at > 0
        store.write_bytes(data[:at] + struct.pack(">d", value * 1.5) + data[at + 8:])

    def through_sql(store):
        with sqlite3.connect(store) as con:
            con.execute("UPDATE rate_trials_v1 SET excess_risk = excess_risk * 2 WHERE replicate = 1")

    for damage in (in_place, through_sql):
        results = _damaged(tmp_path, healthy, damage.__name__, damage)
        with sqlite3.connect(results / "trials.sqlite") as con:
            assert con.execute("PRAGMA quick_check").fetchone()[0] == "ok"  # SQLite sees nothing
        _assert_refused(results, capsys, "fail their checksum")


def test_random_garbles_are_refused_or_harmless(tmp_path, healthy, capsys):
    """16 random bytes at 8 random places: refused in one line, or (a garble in unused bytes)
    the very numbers of the healthy store.  Never other numbers."""
    size = (healthy[0] / "trials.sqlite").stat().st_size
    rng = np.random.default_rng(20261124)
    for i in range(8):
        at, garble = int(rng.integers(0, size - 16)), rng.bytes(16)

        def damage(store, at=at, garble=garble):
            data = store.read_bytes()
            store.write_bytes(data[:at] + garble + data[at + 16:])

        results = _damaged(tmp_path, healthy, f"garble{i}", damage)
        status = _main(results)
        out, err = capsys.readouterr()
        assert "Traceback" not in err and status in (0, 1), (at, err)
        if status == 1:
            assert len(err.strip().splitlines()) == 1 and " is damaged (" in err, (at, err)
            continue
        assert "30 reused" in out, (at, out)
        again = pd.read_csv(results / "cls_label_cdp" / "trials.csv")
        pd.testing.assert_frame_equal(again[NUMBERS], healthy[1][NUMBERS])


def _assert_one_line(results, capsys, *words):
    """The run refuses the store: exit 1, one line naming it and saying ``words``; nothing reused."""
    status = _main(results)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert status == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"labeldp-sim: error: {results / 'trials.sqlite'} "), lines[0]
    assert all(word in lines[0] for word in words), lines[0]
    assert "reused" not in out and not (results / "cls_label_cdp" / "trials.csv").exists()
    return lines[0]


def _index_page(store: Path) -> tuple:
    """(offset, bytes) of the page of the primary-key index of rate_trials_v1 (one page: 30 records)."""
    with sqlite3.connect(store) as con:
        root = con.execute("SELECT rootpage FROM sqlite_master "
                           "WHERE name = 'sqlite_autoindex_rate_trials_v1_1'").fetchone()[0]
        size = con.execute("PRAGMA page_size").fetchone()[0]
    return (root - 1) * size, store.read_bytes()[(root - 1) * size: root * size]


def _checks(store: Path) -> tuple:
    with sqlite3.connect(store) as con:
        try:
            return (con.execute("PRAGMA quick_check").fetchone()[0],
                    con.execute("PRAGMA integrity_check").fetchone()[0])
        except sqlite3.DatabaseError as err:
            return str(err), str(err)


def test_a_broken_primary_key_index_is_refused_though_quick_check_passes(tmp_path, healthy, capsys):
    """A key in the index edited (to another record's key, and to a key of none): SQLite's
    quick_check sees nothing; the load would miss the record and the run insert it again."""
    trials = healthy[1]
    key = str(trials.seed_key.iloc[5]).encode()

    for i, last in enumerate((b"0", b"z")):
        def edit(store, last=last):
            at, page = _index_page(store)
            data = bytearray(store.read_bytes())
            found = page.find(key)
            assert found > 0
            data[at + found + len(key) - 1: at + found + len(key)] = last
            store.write_bytes(bytes(data))

        results = _damaged(tmp_path, healthy, f"index{i}", edit)
        quick, full = _checks(results / "trials.sqlite")
        assert quick == "ok" and full != "ok", (quick, full)
        _assert_refused(results, capsys, "integrity_check")
        with sqlite3.connect(results / "trials.sqlite") as con:  # nothing inserted: no duplicate
            assert con.execute("SELECT count(*) FROM rate_trials_v1").fetchone()[0] == len(trials)


def test_index_garbles_never_let_duplicates_in(tmp_path, healthy, capsys):
    """16 random bytes at 8 random places of the primary-key index: refused in one line, or the
    healthy store's very numbers, and never a second copy of a record (the issue's faults:
    quick_check passed, 2 duplicates went in, every rerun ended in a traceback)."""
    at, page = _index_page(healthy[0] / "trials.sqlite")
    rng = np.random.default_rng(20261127)
    past_quick_check = 0
    for i in range(8):
        offset, garble = at + int(rng.integers(0, len(page) - 16)), rng.bytes(16)

        def damage(store, offset=offset, garble=garble):
            data = store.read_bytes()
            store.write_bytes(data[:offset] + garble + data[offset + 16:])

        results = _damaged(tmp_path, healthy, f"igarble{i}", damage)
        quick, full = _checks(results / "trials.sqlite")
        past_quick_check += quick == "ok" and full != "ok"
        for _ in range(2):  # the run, and a rerun
            status = _main(results)
            out, err = capsys.readouterr()
            assert "Traceback" not in err and status in (0, 1), (offset, err)
            if status == 1:
                assert len(err.strip().splitlines()) == 1 and " is damaged (" in err, (offset, err)
                continue
            assert "30 reused" in out, (offset, out)
            again = pd.read_csv(results / "cls_label_cdp" / "trials.csv")
            pd.testing.assert_frame_equal(again[NUMBERS], healthy[1][NUMBERS])
        with sqlite3.connect(results / "trials.sqlite") as con:
            try:
                keys = [r[0] for r in con.execute("SELECT seed_key FROM rate_trials_v1 NOT INDEXED")]
            except sqlite3.DatabaseError:
                continue  # the table's own pages are unreadable: refused above
        assert len(keys) == len(set(keys)) == len(healthy[1]), offset
    assert past_quick_check >= 1  # the fault quick_check misses is among them


OLD_TABLE = ('CREATE TABLE "demo_v1" ("experiment" TEXT, "config_key" TEXT, "seed_key" TEXT, '
             '"K_classes" REAL, "k" REAL, "n" INTEGER, "flag" INTEGER, "value" REAL, "run_id" TEXT, '
             '"computed_by" TEXT, PRIMARY KEY ("experiment", "config_key", "seed_key"))')


def test_a_store_written_before_checksums_is_refused_not_trusted(tmp_path):
    """A table without row_sha (an older labeldp-sim, or a column dropped after an edit): its
    records cannot be verified, so they are neither reused nor blessed with a checksum now."""
    from labeldp_sim.harness.store import StoreMismatch

    path = tmp_path / "s.sqlite"
    with sqlite3.connect(path) as con:
        con.execute(OLD_TABLE)
        con.execute("INSERT INTO demo_v1 VALUES ('e', 'c0123456789abcdef', 'a-0', 2.0, NULL, 3, 1, 0.25, "
                    "'r', 'abc')")
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT * FROM demo_v1").fetchall()
    for action in (lambda s: s.load(SCHEMA, "e", "c0123456789abcdef"), lambda s: s.write(SCHEMA, _frame(["a-1"]))):
        with pytest.raises(StoreMismatch) as caught:
            action(TrialStore(path))
        message = str(caught.value)
        assert "\n" not in message and message.startswith(f"{path} was written by an older labeldp-sim "
                                                          "(store format version 0): its table demo_v1 holds 1 "
                                                          "record without a checksum (row_sha)")
        assert message.endswith("move it aside or delete it to recompute")
    with sqlite3.connect(path) as con:  # nothing adopted, nothing stamped (only the journal is WAL now)
        assert con.execute("PRAGMA user_version").fetchone()[0] == 0
        assert "row_sha" not in [r[1] for r in con.execute("PRAGMA table_info(demo_v1)")]
        assert con.execute("SELECT * FROM demo_v1").fetchall() == rows


def test_an_edited_record_whose_checksum_column_was_dropped_is_refused(tmp_path, healthy, capsys):
    """The run's store (stamped), and the same store unstamped as labeldp-sim wrote it before the
    stamp: a record edited, then row_sha dropped.  Both refused: never the edited number."""
    from labeldp_sim.harness.store import STORE_VERSION

    with sqlite3.connect(healthy[0] / "trials.sqlite") as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION

    for version in (STORE_VERSION, 0):
        def edit_then_drop(store, version=version):
            with sqlite3.connect(store) as con:
                con.execute("UPDATE rate_trials_v1 SET excess_risk = excess_risk * 2 WHERE replicate = 1")
                con.execute("ALTER TABLE rate_trials_v1 DROP COLUMN row_sha")
                con.execute(f"PRAGMA user_version = {version}")

        results = _damaged(tmp_path, healthy, f"dropped{version}", edit_then_drop)
        assert _checks(results / "trials.sqlite") == ("ok", "ok")
        _assert_one_line(results, capsys, "rate_trials_v1", "without a checksum (row_sha)" if version == 0
                         else "records carry no checksum (row_sha)", "cannot be verified",
                         "move it aside or delete it to recompute")


def test_a_store_of_a_newer_format_is_refused_in_one_line(tmp_path, healthy, capsys):
    from labeldp_sim.harness.store import STORE_VERSION

    def newer(store):
        con = sqlite3.connect(store)
        con.execute(f"PRAGMA user_version = {STORE_VERSION + 1}")
        con.close()  # its WAL into the file now, not when the garbage collector gets to it

    results = _damaged(tmp_path, healthy, "newer", newer)
    before = (results / "trials.sqlite").read_bytes()
    line = _assert_one_line(results, capsys, f"was written by a newer labeldp-sim (store format version "
                            f"{STORE_VERSION + 1}; this one reads versions up to {STORE_VERSION})",
                            "run that newer version on it")
    assert "is damaged" not in line
    assert (results / "trials.sqlite").read_bytes() == before  # not stamped down, not written


def test_an_unstamped_store_of_this_format_is_checked_and_stamped(tmp_path):
    """A store as labeldp-sim wrote it before the stamp (row_sha in every record; runs of an even
    older one without host and pid): reused, runs upgraded, stamped."""
    from labeldp_sim.harness.store import STORE_VERSION

    old = tmp_path / "old.sqlite"
    TrialStore(old).write(SCHEMA, _frame(["a-0", "a-1"]))
    path = tmp_path / "s.sqlite"  # a copy: another file, as a later process would find it
    with sqlite3.connect(old) as con:
        con.execute("PRAGMA user_version = 0")
        con.execute("DROP TABLE runs")
        con.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, experiment TEXT, config_key TEXT, "
                    "git_commit TEXT, code_fingerprint TEXT, started TEXT, finished TEXT, status TEXT, "
                    "wanted INTEGER, reused INTEGER, computed INTEGER)")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path.write_bytes(old.read_bytes())
    store = TrialStore(path)
    assert list(store.load(SCHEMA, "e", "c0123456789abcdef").seed_key) == ["a-0", "a-1"]
    store.start_run(SCHEMA, "e", "c0123456789abcdef", "abc", "fp", 2, 2)
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION
        assert [r[1] for r in con.execute("PRAGMA table_info(runs)")][-2:] == ["host", "pid"]


@pytest.mark.parametrize("table", [
    OLD_TABLE.replace('"computed_by" TEXT,', '"computed_by" TEXT, row_sha TEXT,').replace(
        ', PRIMARY KEY ("experiment", "config_key", "seed_key")', ""),
    OLD_TABLE.replace('"computed_by" TEXT,', '"computed_by" TEXT, row_sha TEXT, "extra" REAL,'),
    OLD_TABLE.replace('"value" REAL,', "").replace('"computed_by" TEXT,', '"computed_by" TEXT, row_sha TEXT,'),
], ids=["no-primary-key", "extra-column", "missing-column"])
def test_a_table_unlike_the_code_s_is_refused(tmp_path, table):
    """Without its primary key a table takes duplicates; with other columns the code misreads it
    or its inserts fail: refused in one line naming the table."""
    from labeldp_sim.harness.store import StoreMismatch

    path = tmp_path / "s.sqlite"
    with sqlite3.connect(path) as con:
        con.execute(table)
    with pytest.raises(StoreMismatch, match=r"does not match this labeldp-sim's store format \d+: table demo_v1"):
        TrialStore(path).write(SCHEMA, _frame(["a-0"]))


def test_the_whole_file_is_checked_once_per_process(tmp_path, monkeypatch):
    """integrity_check reads the whole file: once per process and file (a multirun's jobs, the
    run's many connections), and again for another file at the same path."""
    calls = []
    real = TrialStore._integrity_check
    monkeypatch.setattr(TrialStore, "_integrity_check", lambda self, con: (calls.append(self.path),
                                                                            real(self, con)))
    path = tmp_path / "s.sqlite"
    TrialStore(path).write(SCHEMA, _frame(["a-0"]))
    assert calls == []  # a new store: nothing to check
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(path.read_bytes())
    for _ in range(3):
        TrialStore(copy).load(SCHEMA, "e", "c0123456789abcdef")
    assert calls == [copy]
    replaced = copy.with_suffix(".new")
    replaced.write_bytes(path.read_bytes())
    replaced.replace(copy)  # another file (inode) at the same path
    TrialStore(copy).load(SCHEMA, "e", "c0123456789abcdef")
    assert calls == [copy, copy]


def test_an_interrupt_inside_a_write_keeps_the_chunk_whole_and_counted(tmp_path):
    """KeyboardInterrupt at each step of a write (Python's own handler: no deferral here):
    the chunk is wholly stored or absent, never 'cannot rollback'."""
    from labeldp_sim.harness import interrupts

    for step in ("store.begun", "store.in_transaction", "store.committed"):
        store = TrialStore(tmp_path / f"{step}.sqlite")
        store.write(SCHEMA, _frame(["a-0"]))

        def interrupt(reached, step=step):
            if reached == step:
                raise KeyboardInterrupt

        interrupts.set_hook(interrupt)
        try:
            with pytest.raises(KeyboardInterrupt):
                store.write(SCHEMA, _frame(["a-1", "a-2"]))
        finally:
            interrupts.set_hook(None)
        keys = sorted(store.load(SCHEMA, "e", "c0123456789abcdef").seed_key)
        assert keys == (["a-0", "a-1", "a-2"] if step == "store.committed" else ["a-0"]), step


def test_schema_text_that_is_not_utf8_is_refused(tmp_path, healthy, capsys):
    """A garbled byte in a table's CREATE statement: SQLite's error names the unrecognized token,
    and Python's sqlite3 fails decoding that message (UnicodeDecodeError, not an sqlite3 error);
    the store is refused in one line all the same."""
    def garble_schema(store):
        data = bytearray(store.read_bytes())
        at = data.find(b'CREATE TABLE "rate_trials_v1"')
        assert 0 < at < 65536
        data[at + 7] = 0xD0  # TABLE's T: a token SQLite does not know, and a lead byte without its continuation
        store.write_bytes(bytes(data))

    _assert_refused(_damaged(tmp_path, healthy, "schema", garble_schema), capsys, "not UTF-8")
