"""SIGINT and SIGTERM at any instant of a run: one line, exit 130 (143), a consistent store and
results directory, an exact count of what is kept.

Signals are delivered at named instants (:func:`labeldp_sim.harness.interrupts.checkpoint`:
inside a store transaction, between the renames of an export...), by a hook, not by
sleeping: the tests do not depend on the machine's speed.  Most instants run in-process
(cheap); a few need a process of their own (start-up, loky's workers, kill -9).
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from labeldp_sim.app import main
from labeldp_sim.harness import interrupts
from labeldp_sim.harness.store import MANIFEST, STAGING_PREFIX, atomic_write, staged

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop(interrupts.ENV_HOOK, None)
RUN = ["experiment=cls_label_cdp", "grid.reps=6", "grid.d=[1]", "runner.n_jobs=1", "runner.chunk=5",
       "runner.progress=false", "runner.path=sufficient"]
TABLE = "rate_trials_v1"


@pytest.fixture
def fast_plots(monkeypatch):
    """The figures are not what these tests look at: a small file stands for each."""
    from labeldp_sim.report import figures as report
    from labeldp_sim.papers.table1 import report as table1_report

    def plot(*args, **kwargs):  # both files, each written whole, as save_figure writes them
        interrupts.checkpoint("call.plot")
        report.write_figure(Path(args[2]), lambda p: Path(p).write_text("figure\n"))

    monkeypatch.setattr(report, "plot_rates", plot)
    monkeypatch.setattr(table1_report, "plot_exponents",
                        lambda table, path, task: report.write_figure(Path(path), lambda p: Path(p).write_text("x\n")))


def _traced(monkeypatch, module, name):
    """``module.name`` announces itself at checkpoint ``call.<name>``."""
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        interrupts.checkpoint(f"call.{name}")
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)


def _signal_at(name: str, nth: int, signum=signal.SIGINT):
    seen = [0]

    def hook(reached):
        if reached == name:
            seen[0] += 1
            if seen[0] == nth:
                os.kill(os.getpid(), signum)

    return hook


def _run(results, *extra, hook=None):
    """main() in-process; its exit status (0 when it returns)."""
    interrupts.set_hook(hook)
    try:
        main([*RUN, f"paths.results_dir={results}", *extra])
        return 0
    except SystemExit as exit_:
        return exit_.code
    finally:
        interrupts.set_hook(None)


def _runs(store: Path) -> pd.DataFrame:
    if not store.exists():
        return pd.DataFrame(columns=["run_id", "status", "computed"])
    with sqlite3.connect(store) as con:
        assert con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        return pd.read_sql_query("SELECT rowid AS n, * FROM runs ORDER BY rowid", con)


def _rows_of(store: Path, run_id: str) -> int:
    with sqlite3.connect(store) as con:
        return con.execute(f"SELECT count(*) FROM {TABLE} WHERE run_id = ?", (run_id,)).fetchone()[0]


def _kept(line: str):
    """N in "... interrupted: N trials of this run are kept ...", else None."""
    if "trials of this run are kept" not in line:
        return None
    return int(line.split(": ")[-1].split(" trials")[0].replace(",", ""))


def _assert_whole(out: Path):
    """The results directory holds one run's files: trials, summary, config and provenance agree."""
    assert not list(out.glob(f"{STAGING_PREFIX}*")) and not (out / MANIFEST).exists()
    if not (out / "provenance.json").exists():
        assert not (out / "trials.csv").exists()
        return
    provenance = json.loads((out / "provenance.json").read_text())
    trials = pd.read_csv(out / "trials.csv")
    assert set(trials.config_key) == {provenance["config_key"]}
    assert len(trials) == provenance["trials"]["wanted"]
    assert f"seed: {provenance['seed']}" in (out / "config.yaml").read_text().splitlines()
    summary = pd.read_csv(out / "summary.csv")
    means = trials.groupby(["axis", "N", "eps"]).excess_risk.mean() if "axis" in trials else None
    if means is not None and "axis" in summary:
        mine = summary.set_index(["axis", "N", "eps"])["mean"]
        pd.testing.assert_series_equal(mine.sort_index(), means.sort_index(), check_names=False,
                                       rtol=1e-12)  # summation order


# Instants spread over a run of 30 trials in chunks of 5: validation, the reuse query, the run's
# start, loky's start, every step of a chunk's transaction, the run's end, the fits, each step of
# the export (files staged, manifest, renames) and of the Table I refresh.
INSTANTS = [
    ("validate", 1, signal.SIGINT), ("store.load", 1, signal.SIGINT),
    ("store.start_run", 1, signal.SIGINT), ("workers.starting", 1, signal.SIGINT),
    ("store.write", 1, signal.SIGINT), ("store.begun", 1, signal.SIGINT),
    ("store.in_transaction", 1, signal.SIGINT), ("store.committed", 1, signal.SIGINT),
    ("store.in_transaction", 3, signal.SIGTERM), ("store.committed", 4, signal.SIGINT),
    ("store.begun", 5, signal.SIGTERM), ("store.write", 6, signal.SIGINT),
    ("store.finish_run", 1, signal.SIGINT), ("store.load", 2, signal.SIGINT),
    ("call.summarize", 1, signal.SIGINT), ("call.fit_rates", 1, signal.SIGTERM),
    ("export.staged", 1, signal.SIGINT), ("call.plot", 1, signal.SIGINT),
    ("export.staged", 3, signal.SIGTERM), ("call.provenance", 1, signal.SIGINT),
    ("export.commit", 1, signal.SIGINT), ("export.renamed", 1, signal.SIGINT),
    ("export.renamed", 5, signal.SIGTERM), ("call.write_table1", 1, signal.SIGINT),
    ("export.renamed", 8, signal.SIGINT),
]


def test_a_signal_at_any_instant_gives_one_line_and_a_consistent_store(tmp_path, capsys, monkeypatch,
                                                                       fast_plots):
    """25 instants, each in a new run (its own seed) on one results directory, so that each
    export replaces the last one's: the directory must hold one whole run's files after each."""
    from labeldp_sim.harness import provenance
    from labeldp_sim.papers.table1 import fit
    from labeldp_sim.papers.table1 import report as table1_report

    for module, name in ((fit, "summarize"), (fit, "fit_rates"), (provenance, "provenance"),
                         (table1_report, "write_table1")):
        _traced(monkeypatch, module, name)
    results = tmp_path / "results"
    store, out = results / "trials.sqlite", results / "cls_label_cdp"
    assert _run(results, "seed=1") == 0  # a first export: interrupted exports must leave it whole
    capsys.readouterr()
    reached, kept = [], {}
    for i, (name, nth, signum) in enumerate(INSTANTS):
        before = len(_runs(store))
        status = _run(results, f"seed={100 + i}", hook=_signal_at(name, nth, signum))
        err = capsys.readouterr().err
        where = f"{name}#{nth}"
        assert status == 128 + signum, (where, status, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "interrupted" in lines[0] and "Traceback" not in err, (where, err)
        assert "run the same command again" in lines[0]
        runs = _runs(store)  # quick_check too
        if len(runs) > before:  # the run was recorded: its status and count are exact
            run = runs.iloc[-1]
            rows = _rows_of(store, run.run_id)
            assert run.status in ("interrupted", "finished") and run.computed == rows, (where, dict(run))
            if _kept(lines[0]) is not None:
                assert _kept(lines[0]) == rows and run.status == "interrupted", (where, lines[0], rows)
            reached.append(run.status)
            kept[i] = rows
        _assert_whole(out)
        assert not list(results.glob(f"{STAGING_PREFIX}*")) and not (results / MANIFEST).exists()
    assert reached.count("interrupted") >= 10 and reached.count("finished") >= 8, reached
    # an interrupted run resumes: what it kept is reused, the rest computed, the numbers as in one go
    assert INSTANTS[8][0] == "store.in_transaction" and 0 < kept[8] < 30
    assert _run(results, "seed=108") == 0
    assert f"30 trials: {kept[8]} reused" in capsys.readouterr().out
    assert _run(tmp_path / "reference", "seed=108") == 0
    again = pd.read_csv(out / "trials.csv").set_index("seed_key").excess_risk
    reference = pd.read_csv(tmp_path / "reference" / "cls_label_cdp" / "trials.csv").set_index("seed_key")
    pd.testing.assert_series_equal(again.sort_index(), reference.excess_risk.sort_index())


def test_a_crash_between_the_renames_of_an_export_is_finished_by_the_next(tmp_path):
    """kill -9 between two renames (here: an exception no handler sees) leaves a manifest; the
    next export of the directory moves the rest of the files in first."""
    out = tmp_path / "out"
    with staged(out):
        for name in ("a.csv", "b.csv", "c.csv"):
            atomic_write(out / name, lambda p, name=name: p.write_text("old\n"))

    class Killed(BaseException):
        pass

    def die(reached):
        if reached == "export.renamed":
            raise Killed

    interrupts.set_hook(die)
    try:
        with pytest.raises(Killed), staged(out):
            for name in ("a.csv", "b.csv", "c.csv"):
                atomic_write(out / name, lambda p, name=name: p.write_text("new\n"))
    finally:
        interrupts.set_hook(None)
    assert (out / MANIFEST).exists() and (out / "a.csv").read_text() == "new\n"
    assert (out / "b.csv").read_text() == "old\n"  # torn, until the next export
    with staged(out):
        atomic_write(out / "d.csv", lambda p: p.write_text("next\n"))
    assert [(out / n).read_text() for n in ("a.csv", "b.csv", "c.csv", "d.csv")] == ["new\n"] * 3 + ["next\n"]
    assert not (out / MANIFEST).exists() and not list(out.glob(f"{STAGING_PREFIX}*"))


def test_an_exception_inside_an_export_leaves_the_old_files(tmp_path):
    out = tmp_path / "out"
    with staged(out):
        atomic_write(out / "a.csv", lambda p: p.write_text("old\n"))
    with pytest.raises(RuntimeError), staged(out):
        atomic_write(out / "a.csv", lambda p: p.write_text("new\n"))
        atomic_write(out / "b.csv", lambda p: p.write_text("new\n"))
        raise RuntimeError("the plot failed")
    assert (out / "a.csv").read_text() == "old\n" and not (out / "b.csv").exists()
    assert sorted(p.name for p in out.iterdir() if not p.name.endswith(".lock")) == ["a.csv"]


# ------------------------------------------------------------------ processes of their own

def _cli(results, spec, *extra, **kwargs):
    env = {**ENV, interrupts.ENV_HOOK: spec} if spec else ENV
    return subprocess.Popen([sys.executable, "-m", "labeldp_sim", *RUN, f"paths.results_dir={results}",
                             *extra], cwd=results.parent, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **kwargs)


def _gone(pgid: int, polls: int = 60) -> bool:
    """Whether the process group empties within ``polls`` polls of 0.1 s.

    A process that has closed its files (so ``communicate`` returned) may still be on its way
    out, not yet a zombie; the claim is that it leaves, not when the kernel finishes.
    """
    while _alive_in_group(pgid) and polls:
        time.sleep(0.1)
        polls -= 1
    return not _alive_in_group(pgid)


def _alive_in_group(pgid: int) -> list:
    """Processes of the process group that are not zombies."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


@pytest.mark.parametrize("spec,extra,status", [
    ("startup:1", [], 130),  # while the package is still importing numpy, pandas, Hydra...
    ("validate:1:SIGTERM", [], 143),
    ("workers.started:1:SIGINT:group", ["runner.n_jobs=2"], 130),  # a terminal's Ctrl-C: every process
    ("export.staged:2:SIGINT:group", [], 130),
], ids=["start-up", "validation", "loky-start", "export"])
def test_a_signal_to_the_process_gives_one_line_and_no_traceback(tmp_path, spec, extra, status):
    results = tmp_path / "results"
    proc = _cli(results, spec, *extra)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0], err  # no worker's traceback either
    assert "run the same command again" in lines[0]
    assert _gone(proc.pid), _alive_in_group(proc.pid)  # the workers are gone with the driver
    if spec.startswith(("startup", "validate")):
        assert not results.exists()  # nothing was written
    else:
        runs = _runs(results / "trials.sqlite")
        assert list(runs.status) == ["interrupted" if "workers" in spec else "finished"]
        assert runs.computed.iloc[0] == _rows_of(results / "trials.sqlite", runs.run_id.iloc[0])
        _assert_whole(results / "cls_label_cdp")


def test_workers_leave_when_the_driver_is_killed(tmp_path):
    """kill -9 of the driver alone, its loky workers idle (the trials are computed, the export has
    begun): they notice within a second, not after loky's idle time-out (300 s)."""
    results = tmp_path / "results"
    proc = _cli(results, "export.staged:1:SIGKILL", "runner.n_jobs=2", "grid.reps=40")
    proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL
    # 30 s: far beyond the workers' own 0.5 s check, far below loky's 300 s
    assert _gone(proc.pid, polls=300), _alive_in_group(proc.pid)
    store = results / "trials.sqlite"
    runs = _runs(store)
    assert list(runs.status) == ["finished"] and _rows_of(store, runs.run_id[0]) == 5 * 40


def test_the_resource_trackers_clean_up_after_a_dead_driver_without_a_word():
    """A driver that dies holding a loky semaphore leaves it to the tracker, which unlinks it; its
    warnings would follow the interrupt's one line on the same stderr (a flaky loky-start case)."""
    script = ("import os\n"
              "from labeldp_sim.harness import interrupts\n"
              "interrupts._start_resource_trackers()\n"
              "from joblib.externals.loky.backend import resource_tracker\n"
              "resource_tracker.register('/loky-labeldp-sim-test-sem', 'semlock')\n"
              "os._exit(0)\n")
    proc = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("spec,status", [
    ("workers.spawn:2:SIGTERM", 143),
    ("workers.spawn:2:SIGINT:group", 130),  # a terminal's Ctrl-C while loky forks its workers
], ids=["sigterm", "ctrl-c"])
def test_a_signal_while_the_workers_are_forked_ends_the_run_at_once(tmp_path, spec, status):
    """The signal is sent from the hook the instant the second worker is forked (no sleeping):
    the driver acts on it there, not once every worker has started; the workers already forked,
    one that loky may not know yet included, are gone with it."""
    results = tmp_path / "results"
    proc = _cli(results, spec, "runner.n_jobs=4", "grid.reps=40")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0] and "0 trials of this run are kept" in lines[0], err
    assert _gone(proc.pid), _alive_in_group(proc.pid)
    runs = _runs(results / "trials.sqlite")
    assert list(runs.status) == ["interrupted"] and runs.computed.iloc[0] == 0


def test_spawning_acts_on_a_signal_inside_the_block(monkeypatch):
    """In-process: a SIGTERM inside :func:`interrupts.spawning` raises there (it is not held to
    the end of the block), and the SIGINT mask of the main thread is restored."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    reached = []
    with pytest.raises(SystemExit) as exit_info:
        with interrupts.guard():
            with interrupts.spawning(processes=False):
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(100):  # the handler runs at the next instructions
                    time.sleep(0.01)
                reached.append("end of the block")
    assert exit_info.value.code == 143 and reached == []
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before
