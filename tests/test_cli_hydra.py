"""Hydra's conventions on the command line: --help, --cfg job, --info, -sc, -cd, -v/-q, run.log,
progress off a terminal, and the multirun table."""

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from omegaconf import OmegaConf

from labeldp_sim.harness import logs
from labeldp_sim.harness.conf_path import CONF_DIR, config_groups, group_options
from labeldp_sim.harness.config import experiments_of_kind

ROOT = Path(__file__).resolve().parent.parent
TINY = ["grid.d=[1]", "grid.reps=2", "grid.sweeps.N.values=[1000,2000,4000]", "grid.sweeps.eps.values=[0.5,1.0]",
        "grid.sweeps.eps.N=1000", "runner.backend=sequential"]


def _main(argv, tmp_path, monkeypatch, capsys):
    """``labeldp-sim argv`` in this process: (exit status, stdout, stderr)."""
    from labeldp_sim.app import main

    monkeypatch.chdir(tmp_path)
    code = 0
    try:
        main(argv)
    except SystemExit as err:
        code = err.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_every_group_option_flag_and_subcommand(tmp_path, monkeypatch, capsys):
    code, out, err = _main(["--help"], tmp_path, monkeypatch, capsys)
    assert code == 0 and err == "", err
    assert out.startswith("usage: labeldp-sim")
    words = set(out.replace(",", " ").split())
    for group in config_groups():
        assert f"{group}:" in words or f"{group}" in words, group
        for option in group_options(group):
            assert option in words, (group, option)
    for kind in experiments_of_kind():
        assert f"{kind}:" in words, kind
    for flag in ("-m,", "--cfg", "--info", "--shell-completion", "--config-dir", "-v,", "--quiet", "report", "audit"):
        assert flag in out, flag
    assert "examples:" in out
    assert list(tmp_path.iterdir()) == []


def test_cfg_job_prints_the_composed_config(tmp_path, monkeypatch, capsys):
    from labeldp_sim.harness.cli import compose_job

    code, out, err = _main(["--cfg", "job", "experiment=cls_label_ldp", "seed=3"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    expected = OmegaConf.to_container(compose_job(["experiment=cls_label_ldp", "seed=3"]), resolve=True)
    assert yaml.safe_load(out) == expected
    for flag in ("all", "hydra"):  # Hydra's other two: the job's config, the same
        assert _main(["--cfg", flag, "experiment=cls_label_ldp", "seed=3"], tmp_path, monkeypatch, capsys)[1] == out
    assert list(tmp_path.iterdir()) == []


def test_info_shows_the_search_path_defaults_and_plugins(tmp_path, monkeypatch, capsys):
    extra = tmp_path / "myconf"
    (extra / "mechanism").mkdir(parents=True)
    shutil.copy(CONF_DIR / "table1" / "mechanism" / "rr.yaml", extra / "mechanism" / "my_rr.yaml")
    code, out, err = _main(["--info", "-cd", str(extra), "experiment=cls_label_ldp"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert "Config search path" in out and str(CONF_DIR) in out and str(extra.resolve()) in out
    assert str(CONF_DIR / "table1") in out
    assert "experiment=cls_label_ldp" in out and "mechanism=rappor" in out
    assert "kind rates: labeldp_sim.papers.table1" in out
    assert "LABELDP_SIM_CONF_PATH" not in os.environ or str(extra) not in os.environ["LABELDP_SIM_CONF_PATH"]
    # --config-dir's option is a choice like any other: in --help and in composition
    code, out, _ = _main(["-cd", str(extra), "--help"], tmp_path, monkeypatch, capsys)
    assert "my_rr" in out
    code, out, err = _main(["--config-dir", str(extra), "--cfg", "experiment=cls_label_ldp", "mechanism=my_rr"],
                           tmp_path, monkeypatch, capsys)
    assert code == 0, err


@pytest.mark.parametrize("argv,key,allowed", [
    (["--cfg", "jobs"], "--cfg", "job, hydra, all"),
    (["--info=everything"], "--info", "searchpath"),
    (["-sc", "install=zsh"], "-sc", "install=bash"),
    (["--shell-completion"], "--shell-completion", "install=bash"),
    (["-cd", "does/not/exist"], "--config-dir", "an existing directory"),
    (["-v", "-q"], "-q/--quiet", "not both"),
    (["hydra.verbose=loud"], "hydra.verbose", "true or false"),
    (["--verbose=2"], "--verbose", "the flag alone"),
    (["--bogus"], "argument", "--config-dir"),
])
def test_each_bad_flag_is_one_line_and_creates_nothing(tmp_path, monkeypatch, capsys, argv, key, allowed):
    code, out, err = _main([*argv, "experiment=cls_label_ldp"], tmp_path, monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, (out, err)
    assert lines[0].startswith(f"labeldp-sim: error: {key}: got ") and allowed in lines[0], lines[0]
    assert list(tmp_path.iterdir()) == []


def test_a_config_dir_the_path_checks_refuse_is_blamed_on_the_flag(tmp_path, monkeypatch, capsys):
    clash = tmp_path / "clash"
    (clash / "mechanism").mkdir(parents=True)
    shutil.copy(CONF_DIR / "table1" / "mechanism" / "rr.yaml", clash / "mechanism" / "rr.yaml")
    code, out, err = _main(["-cd", str(clash), "experiment=cls_label_ldp"], tmp_path, monkeypatch, capsys)
    assert code == 2 and err.startswith("labeldp-sim: error: --config-dir: got ") and "rr.yaml" in err, err


def test_bash_completion_script_completes_groups_options_and_subcommands(tmp_path, monkeypatch, capsys):
    code, out, err = _main(["-sc", "install=bash"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    for group in config_groups():
        assert f"{group})" in out and f"{group}=" in out, group
    assert "complete -F _labeldp_sim_complete labeldp-sim" in out
    bash = shutil.which("bash")
    if bash is None:
        return
    script = tmp_path / "completion.bash"
    script.write_text(out)
    probe = (f"source {script}\n"
             't() { COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$2"; '
             'COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _labeldp_sim_complete; echo "${COMPREPLY[*]}"; }\n'
             't "labeldp-sim experiment=cls_label_l" "labeldp-sim experiment = cls_label_l"\n'
             't "labeldp-sim rep" "labeldp-sim rep"\n'
             't "labeldp-sim -m runner=default,sl" "labeldp-sim -m runner = default,sl"\n')
    done = subprocess.run([bash, "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.splitlines() == ["cls_label_ldp", "report", "default,slurm"], done.stderr


def test_verbosity_flags_set_the_console_level():
    logger = logs.get_logger()
    console = logs._console()
    assert console.level == logging.INFO
    with logs.verbosity(logging.WARNING):
        assert console.level == logging.WARNING and logger.isEnabledFor(logging.INFO)  # run.log gets INFO
    with logs.verbosity(logging.DEBUG):
        assert console.level == logging.DEBUG and logger.isEnabledFor(logging.DEBUG)
    assert console.level == logging.INFO and not logger.isEnabledFor(logging.DEBUG)


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_a_tiny_run_logs_to_run_log_and_says_where_it_wrote(tmp_path):
    results = tmp_path / "res"
    argv = [sys.executable, "-m", "labeldp_sim", "experiment=cls_label_ldp", *TINY, f"paths.results_dir={results}"]
    quiet = subprocess.run([*argv, "-q"], cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=120)
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stdout + quiet.stderr
    loud = subprocess.run([*argv, "hydra.verbose=true"], cwd=tmp_path, capture_output=True, text=True,
                          env=_env(), timeout=120)
    assert loud.returncode == 0, loud.stderr
    assert "config search path: " in loud.stdout  # a DEBUG line
    assert "10 trials: 10 reused" in loud.stdout or "trials: " in loud.stdout
    assert f"cls_label_ldp: wrote {results / 'cls_label_ldp'} (trials in {results / 'trials.sqlite'}" in loud.stdout
    assert (f"{results / 'index.html'} was not rebuilt; to rebuild the report: labeldp-sim report --results "
            f"{results}") in loud.stdout
    log = (results / "run.log").read_text().splitlines()
    runs = [line for line in log if " INFO    labeldp_sim: run: labeldp-sim experiment=cls_label_ldp" in line]
    assert len(runs) == 2  # appended, one header per run; -q hid the console only
    assert any("labeldp_sim.runner: cls_label_ldp: " in line and " reused " in line for line in log)
    assert any(" DEBUG   labeldp_sim.cli: config search path" in line for line in log)


def test_a_refused_run_writes_no_run_log(tmp_path):
    results = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-m", "labeldp_sim", "experiment=cls_label_ldp", *TINY, "seed=-1",
                           f"paths.results_dir={results}"], cwd=tmp_path, capture_output=True, text=True,
                          env=_env(), timeout=120)
    assert proc.returncode == 2 and "labeldp-sim: error: seed: got" in proc.stderr, proc.stderr
    assert not results.exists() and list(tmp_path.iterdir()) == []


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_progress_lines_off_a_terminal_are_throttled():
    clock = _Clock()
    throttle = logs.Throttle("cls_label_ldp", 10_000, clock=clock, every=15)
    assert throttle.update(100) is None  # no time has passed
    clock.now += 14
    assert throttle.update(1134) is None
    clock.now += 31
    assert throttle.update(0) == "cls_label_ldp: 1,234/10,000 trials (12 %), 45 s elapsed, about 5 min left"
    clock.now += 10  # less than 15 s since the last line
    assert throttle.update(1000) is None
    clock.now += 1000  # later lines: a tenth of the elapsed time apart at least
    assert throttle.update(1000).startswith("cls_label_ldp: 3,234/10,000 trials (32 %), 18 min elapsed")
    clock.now += 60
    assert throttle.update(1000) is None  # 60 s < 1115 s / 10... not yet
    clock.now += 100
    assert throttle.update(0) is not None
    clock.now += 500
    assert throttle.update(10_000 - throttle.done) is None  # the end: finish() says it
    assert throttle.finish() == "cls_label_ldp: 10,000/10,000 trials (100 %), 29 min elapsed"
    quick = logs.Throttle("x", 10, clock=clock)
    quick.update(10)
    assert quick.finish() is None  # a run shorter than the interval shows no line at all


def test_progress_display_by_terminal_and_setting(capsys):
    from tqdm.auto import tqdm

    assert isinstance(logs.progress("x", 10, True, tty=True), tqdm)
    logs.progress("x", 10, True, tty=True).close()
    silent = logs.progress("x", 10, False, tty=False)
    clock = _Clock()
    logged = logs.progress("x", 10, True, tty=False, clock=clock)
    clock.now += 60
    for display in (silent, logged):
        display.update(5)
        display.close()
    assert capsys.readouterr().out.splitlines() == 2 * ["x: 5/10 trials (50 %), 60 s elapsed, about 60 s left"]


def test_multirun_writes_one_table_across_the_jobs(tmp_path):
    results = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-m", "labeldp_sim", "-m", "experiment=cls_label_ldp",
                           "seed=1,2", *TINY, f"paths.results_dir={results}"], cwd=tmp_path, capture_output=True,
                          text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    tables = list((results / "multirun").glob("*.csv"))
    assert len(tables) == 1
    table = pd.read_csv(tables[0])
    assert list(table.columns[:5]) == ["job", "experiment", "overrides", "status", "out"]
    assert sorted(set(table.job)) == [1, 2] and set(table.status) == {"finished"}
    for job, rows in table.groupby("job"):
        fit = pd.read_csv(Path(rows.out.iloc[0]) / "fit.csv")
        assert len(rows) == len(fit)
        assert list(rows.axis) == list(fit.axis) and list(rows.verdict) == list(fit.verdict)
        assert rows.overrides.iloc[0].startswith(f"experiment={rows.experiment.iloc[0]} seed=")
    assert "multirun: 2 jobs (all with experiment=cls_label_ldp" in proc.stdout
    assert "[2] cls_label_ldp seed=2: slope on log N, d=1: " in proc.stdout
    assert f"multirun table: {tables[0]}" in proc.stdout
    assert proc.stdout.count("index.html was not rebuilt") == 1


def test_multirun_rows_of_a_kind_without_slopes_and_of_law_free_fits():
    from labeldp_sim.harness import multirun

    assert multirun.job_rows(3, "kclass_fig2a", ["seed=1"], "finished", {"summary": pd.DataFrame(), "out": "o"}) == [
        {"job": 3, "experiment": "kclass_fig2a", "overrides": "seed=1", "status": "finished", "out": "o"}]
    fits = pd.DataFrame({"quantity": ["M", "S"], "axis": ["N", "N"], "d": [1, 1], "deep_slope": [-0.5, -0.4],
                         "deep_ci_low": [-0.6, -0.5], "deep_ci_high": [-0.4, -0.3], "theory": [-0.5, -0.5],
                         "verdict": ["consistent", "x"]})
    rows = multirun.job_rows(1, "cls_label_ldp", ["mode=law_free"], "finished", {"fits": fits, "out": "o"})
    assert len(rows) == 1 and rows[0]["slope"] == -0.5 and rows[0]["ci_high"] == -0.4
    assert multirun.job_rows(2, "x", [], "not run", None)[0]["status"] == "not run"
