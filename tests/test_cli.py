"""The command line end to end: outputs, multirun, console script, bad input."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["grid.reps=15", "grid.d=[1,2]", "runner.n_jobs=1", "runner.progress=false", "runner.path=sufficient"]


def _run(args, tmp_path, command=None):
    command = command or [sys.executable, "-m", "labeldp_sim"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*command, *args, f"paths.results_dir={tmp_path}"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=300)


def _in_process(args, tmp_path, monkeypatch) -> int:
    """``labeldp-sim ARGS paths.results_dir=TMP`` in this process (a process of its own costs 2-3 s of
    imports: kept for the tests of the command as a process); its exit status."""
    from labeldp_sim.app import main

    monkeypatch.chdir(tmp_path)
    try:
        main([*args, f"paths.results_dir={tmp_path}"])
    except SystemExit as exit_info:
        return int(exit_info.code or 0)
    return 0


def test_experiment_writes_the_output_contract(tmp_path):
    proc = _run(["experiment=cls_label_ldp", *SMALL,
                 "grid.sweeps.N.values=[100000,1000000,10000000]",
                 "grid.sweeps.eps.values=[0.05,0.1,0.3]"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "cls_label_ldp"
    for name in ("trials.csv", "summary.csv", "fit.csv", "rate.png", "config.yaml", "provenance.json"):
        assert (out / name).stat().st_size > 0, name
    trials = pd.read_csv(out / "trials.csv")
    for column in ("experiment", "task", "privacy_model", "protection", "mechanism", "estimator",
                   "d", "beta", "gamma", "p", "K", "N", "eps", "replicate", "seed_key", "h", "k",
                   "T", "excess_risk", "seconds"):
        assert column in trials, column
    assert len(trials) == 2 * 6 * 15
    summary = pd.read_csv(out / "summary.csv")
    assert {"mean", "se", "replicates"} <= set(summary)
    fits = pd.read_csv(out / "fit.csv")
    assert {"axis", "d", "slope", "se", "ci_low", "ci_high", "theory", "theory_source", "tol",
            "verdict", "points"} <= set(fits)
    assert set(fits.axis) == {"N", "eps"} and set(fits.d) == {1, 2}
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["seed"] == 20261122 and provenance["libraries"]["numpy"]
    table = pd.read_csv(tmp_path / "table1.csv")
    assert (table.cell == "cls_label_ldp").sum() == 4
    assert "Table I, measured" in (tmp_path / "table1.md").read_text()


def test_multirun_runs_each_experiment(tmp_path, monkeypatch):
    assert _in_process(["-m", "experiment=cls_nonprivate,cls_label_cdp", *SMALL, "grid.d=[1]"], tmp_path,
                       monkeypatch) == 0
    assert (tmp_path / "cls_nonprivate" / "fit.csv").exists()
    assert (tmp_path / "cls_label_cdp" / "fit.csv").exists()


def test_console_script(tmp_path):
    script = shutil.which("labeldp-sim", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("console script not installed (run `make install`)")
    proc = _run(["experiment=cls_full_cdp", *SMALL, "grid.d=[1]"], tmp_path, command=[script])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cls_full_cdp" / "rate.png").exists()


# bad input through the command line: tests/test_bad_input.py (in-process, and once through a real process)


def _stored_count(path):
    import sqlite3

    with sqlite3.connect(path, timeout=5) as con:
        return con.execute("SELECT count(*) FROM rate_trials_v1").fetchone()[0]


def test_ctrl_c_keeps_finished_trials_and_the_rerun_resumes(tmp_path):
    """Ctrl-C inside the third chunk's transaction (delivered there by the store's own hook, not
    by the clock; once "cannot rollback - no transaction is active"): one line, exit 130, the
    three chunks kept (the signal is held to the commit) and counted exactly, and the same
    command resumes from them.  tests/test_interrupts.py sends it at 25 other instants."""
    instant = "store.in_transaction:3"
    args = ["experiment=cls_label_cdp", "grid.reps=60", "grid.d=[1]", "runner.n_jobs=2", "runner.path=sufficient",
            "runner.chunk=20", "runner.progress=false", f"paths.results_dir={tmp_path}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LABELDP_SIM_TEST_SIGNAL": instant}
    proc = subprocess.run([sys.executable, "-m", "labeldp_sim", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0] and "run the same command again" in lines[0], proc.stderr
    kept = _stored_count(tmp_path / "trials.sqlite")
    assert kept == 3 * 20 and f": {kept:,} trials of this run are kept" in lines[0]
    env.pop("LABELDP_SIM_TEST_SIGNAL")
    rerun = subprocess.run([sys.executable, "-m", "labeldp_sim", *args], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{kept:,} reused" in rerun.stdout
    trials = pd.read_csv(tmp_path / "cls_label_cdp" / "trials.csv")
    assert len(trials) == 5 * 60 and not trials.seed_key.duplicated().any()
    assert trials.run_id.nunique() == 2  # the interrupted run's trials were reused, not recomputed


def test_multirun_jobs_write_their_own_directories(tmp_path, monkeypatch):
    assert _in_process(["-m", "experiment=cls_label_cdp", "distribution.C_M=2,4", "grid.reps=10", "grid.d=[1]",
                        "runner.n_jobs=1", "runner.progress=false"], tmp_path, monkeypatch) == 0
    keys = set()
    for value in (2, 4):
        out = tmp_path / "cls_label_cdp" / f"distribution.C_M={value}"
        config = (out / "config.yaml").read_text()
        assert f"C_M: {value}" in config
        keys |= set(pd.read_csv(out / "trials.csv").config_key)
    assert len(keys) == 2


def test_a_bad_job_stops_a_multirun_before_any_job_computes(tmp_path, monkeypatch, capsys):
    status = _in_process(["-m", "experiment=cls_label_cdp", "distribution.C_M=2,-1", "grid.d=[1]"], tmp_path,
                         monkeypatch)
    assert status == 2 and capsys.readouterr().err.startswith("labeldp-sim: error: distribution.C_M")
    assert not (tmp_path / "cls_label_cdp").exists() and not (tmp_path / "trials.sqlite").exists()


@pytest.mark.parametrize("experiment,grid", [
    ("reg_label_cdp", ["grid.sweeps.eps.values=[0.00001,0.0001,0.001]"]),
    ("heavy_label_ldp", ["grid.sweeps.N.values=[1000,4000,16000]", "grid.sweeps.eps.values=[0.25,0.5,1.0]",
                         "grid.sweeps.eps.N=4000", "grid.reps_per_d=null"]),
])
def test_regression_experiment_writes_statements_and_figures(tmp_path, monkeypatch, experiment, grid):
    assert _in_process([f"experiment={experiment}", "grid.reps=6", "grid.d=[1,2]", "runner.n_jobs=1",
                        "runner.progress=false", *grid], tmp_path, monkeypatch) == 0
    fits = pd.read_csv(tmp_path / experiment / "fit.csv")
    trials = pd.read_csv(tmp_path / experiment / "trials.csv")
    assert trials["T"].notna().all()
    if experiment == "reg_label_cdp":
        assert trials.p.isna().all() and (trials["T"] == 1.0).all()  # bounded labels: clip at T
        assert set(fits.statement) == {"Table I / Theorem 8", "Theorem 7"}
        assert "Which statement the data support" in (tmp_path / "table1.md").read_text()
    else:
        # runner.path=auto: the kNN's exact expected risk (the marginal law integrated, knn_exact.py)
        assert (trials.p == 3.0).all() and trials.k.notna().all() and (trials.path == "exact").all()
    assert (tmp_path / "exponents_regression.png").stat().st_size > 0


def test_kclass_and_digits_experiments_write_their_tables(tmp_path, capsys, monkeypatch):
    assert _in_process(["experiment=kclass_fig2b", "kclass.trials=2", "kclass.K=[2,6]", "kclass.n_test=200",
                        "runner.n_jobs=1"], tmp_path, monkeypatch) == 0
    summary = pd.read_csv(tmp_path / "kclass_fig2b" / "summary.csv")
    assert set(summary.method) == {"rr", "lp_2st", "alibi", "vector_approximation", "non_private"}
    assert summary.bayes_accuracy.between(0, 1).all() and (tmp_path / "kclass_fig2b" / "accuracy.png").exists()
    assert _in_process(["experiment=kclass_digits", "digits.splits=2", "digits.eps=[1,8]", "runner.n_jobs=1"],
                       tmp_path, monkeypatch) == 0
    accuracy = pd.read_csv(tmp_path / "kclass_digits" / "accuracy.csv")
    assert len(accuracy) == 2 * 2 * 5 and "| method |" in (tmp_path / "kclass_digits" / "accuracy.md").read_text()
    # both kinds resume from the store: a rerun with one more split computes only that split
    capsys.readouterr()
    assert _in_process(["experiment=kclass_digits", "digits.splits=3", "digits.eps=[1,8]", "runner.n_jobs=1"],
                       tmp_path, monkeypatch) == 0
    out = capsys.readouterr().out
    assert "30 trials: 20 reused" in out and "10 to compute" in out, out
    again = pd.read_csv(tmp_path / "kclass_digits" / "accuracy.csv").set_index(["seed_key", "method"])
    before = accuracy.set_index(["seed_key", "method"])
    assert (again.loc[before.index, "accuracy"] == before.accuracy).all()


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path):
    """`labeldp-sim --cfg | head -1`: the pipe closes while the config is printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(f"{sys.executable} -m labeldp_sim experiment=cls_label_ldp --cfg | head -1",
                          shell=True, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
                          executable="/bin/bash")
    assert proc.stdout.strip() and "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr


BENCH = ROOT / "benchmarks" / "bench.py"


@pytest.mark.parametrize("args", [["--bogus"], ["--draws", "0"], ["x"]])
def test_bench_refuses_bad_arguments_in_one_line_before_measuring(tmp_path, args, capsys, monkeypatch):
    """In this process (the script's --help below runs as a process of its own)."""
    import runpy

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(BENCH.parent))  # as `python benchmarks/bench.py` puts its folder first
    monkeypatch.setattr(sys, "argv", [str(BENCH), *args])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(BENCH), run_name="__main__")
    out = capsys.readouterr()
    assert exit_info.value.code == 2 and out.out == "", out.out
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchmarks/bench.py: error: ") and "allowed:" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_bench_help_starts_nothing(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH), "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: benchmarks/bench.py"), proc.stderr
    assert "# Benchmarks" not in proc.stdout


@pytest.mark.parametrize("argv,key", [
    (["report", "--results", ""], "--results"),
    (["report", "--results", "  "], "--results"),
    (["report", "--results"], "--results"),
    (["report", "--bogus"], "argument"),
    (["report", "extra"], "argument"),
    (["report", "--res", "results"], "argument"),  # no abbreviations
    (["audit", "--bogus"], "option"),
    (["audit", "--draws", "0"], "--draws"),
])
def test_subcommands_refuse_bad_arguments_in_one_line(tmp_path, monkeypatch, capsys, argv, key):
    from labeldp_sim.app import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"error: {key}: got " in lines[0] and "allowed: " in lines[0], lines
    assert list(tmp_path.iterdir()) == []  # `--results ''` used to write the report here


@pytest.mark.parametrize("command", ["report", "audit"])
def test_subcommands_answer_help(tmp_path, monkeypatch, capsys, command):
    from labeldp_sim.app import main

    monkeypatch.chdir(tmp_path)
    try:
        main([command, "--help"])
    except SystemExit as exit_info:
        assert exit_info.code in (0, None)
    assert capsys.readouterr().out.startswith("usage: labeldp-sim " + command)
    assert list(tmp_path.iterdir()) == []


def test_a_multirun_of_experiments_refreshes_the_shared_tables_once_after_its_last_job(
        tmp_path, monkeypatch, quick_plots):
    """Table I's tables (and papers/003's) are the results directory's: a multirun of several
    experiments writes them once, after its last job, and a job that fails first has them written
    for the jobs that finished."""
    from labeldp_sim.papers.table1 import kind as table1_kind

    refreshed = []
    real = table1_kind.RatesKind.write_shared
    monkeypatch.setattr(table1_kind.RatesKind, "write_shared",
                        lambda self, directory: refreshed.append(directory) or real(self, directory))
    tiny = ["grid.d=[1]", "grid.reps=2", "grid.sweeps.eps.values=[0.5,1.0]", "grid.sweeps.eps.N=1000",
            "runner.backend=sequential", "runner.progress=false"]
    assert _in_process(["-m", "experiment=cls_label_cdp,cls_full_cdp", *tiny], tmp_path, monkeypatch) == 0
    assert len(refreshed) == 1
    assert {"cls_label_cdp", "cls_full_cdp"} <= set(pd.read_csv(tmp_path / "table1.csv").cell)

    refreshed.clear()
    failing = tmp_path / "failing"
    failing.mkdir()
    real_analyse = table1_kind.RatesKind.analyse

    def analyse(self, spec, trials):
        if spec.name == "cls_full_cdp":
            raise RuntimeError("a fault of the second job")
        return real_analyse(self, spec, trials)

    monkeypatch.setattr(table1_kind.RatesKind, "analyse", analyse)
    with pytest.raises(RuntimeError, match="second job"):
        _in_process(["-m", "experiment=cls_label_cdp,cls_full_cdp", *tiny], failing, monkeypatch)
    assert len(refreshed) == 1
    table = pd.read_csv(failing / "table1.csv")
    assert table.loc[table.cell == "cls_label_cdp", "verdict"].iloc[0] != "not run"
