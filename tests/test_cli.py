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
SMALL = ["grid.reps=15", "grid.d=[1,2]", "runner.n_jobs=1", "runner.progress=false"]


def _run(args, tmp_path, command=None):
    command = command or [sys.executable, "-m", "labeldp_sim"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*command, *args, f"paths.results_dir={tmp_path}"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=300)


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


def test_multirun_runs_each_experiment(tmp_path):
    proc = _run(["-m", "experiment=cls_nonprivate,cls_label_cdp", *SMALL, "grid.d=[1]"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cls_nonprivate" / "fit.csv").exists()
    assert (tmp_path / "cls_label_cdp" / "fit.csv").exists()


def test_console_script(tmp_path):
    script = shutil.which("labeldp-sim", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("console script not installed (run `make install`)")
    proc = _run(["experiment=cls_full_cdp", *SMALL, "grid.d=[1]"], tmp_path, command=[script])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cls_full_cdp" / "rate.png").exists()


@pytest.mark.parametrize("args,key", [
    (["experiment=cls_label_ldp", "grid.sweeps.N.eps=-1"], "grid.sweeps.N.eps"),
    (["experiment=cls_label_ldp", "mechanism=nonexistent"], "mechanism"),
    (["experiment=cls_label_ldp", "distribution.beta=2"], "distribution.beta"),
    (["experiment=cls_label_ldp", "mechanism=exponential"], "mechanism"),
])
def test_bad_input_exits_with_one_line(tmp_path, args, key):
    proc = _run(args, tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and "allowed" in lines[0], proc.stderr
    assert not (tmp_path / "cls_label_ldp").exists()  # nothing computed
