"""Stable seeds and the store: identical numbers whatever n_jobs, backend, grid, or interruption."""

import pandas as pd
import pytest

from labeldp_sim.harness import provenance
from labeldp_sim.harness.config import BACKENDS
from labeldp_sim.papers.table1.experiment import build_experiment
from labeldp_sim.papers.table1.sweep import RATE_TRIALS
from labeldp_sim.papers.table1.sweep import run_sweep
from labeldp_sim.harness.store import TrialStore

from .conftest import SMALL_GRID

GRID = SMALL_GRID + ["grid.sweeps.N.values=[20000,200000,2000000]", "grid.reps=40",
                     "runner.chunk=7"]
CENTRAL_GRID = SMALL_GRID + ["grid.sweeps.eps.values=[0.00001,0.0001]", "grid.reps=40",
                             "runner.chunk=7"]


def _numbers(trials):
    return trials[["seed_key", "excess_risk", "regret_fraction", "N", "eps", "G"]].reset_index(drop=True)


def _build(make_cfg, results, *overrides):
    return build_experiment(make_cfg([*overrides, f"paths.results_dir={results}"]))


# the central cell is slow: tests/test_record_key.py runs every kind at another n_jobs and backend too
@pytest.mark.parametrize("experiment,grid", [("cls_label_ldp", GRID),
                                             pytest.param("cls_full_cdp", CENTRAL_GRID, marks=pytest.mark.slow)])
def test_same_numbers_for_any_n_jobs_and_backend(make_cfg, tmp_path, experiment, grid):
    settings = [["runner.n_jobs=1"], ["runner.n_jobs=2"]]
    settings += [[f"runner.backend={b}", "runner.n_jobs=2", "runner.chunk=3"] for b in BACKENDS]
    runs = [_numbers(run_sweep(_build(make_cfg, tmp_path / str(i), f"experiment={experiment}", *grid,
                                      *extra)))
            for i, extra in enumerate(settings)]
    for run in runs[1:]:
        pd.testing.assert_frame_equal(runs[0], run)


def test_adding_grid_points_does_not_change_existing_ones(make_cfg, tmp_path):
    small = _build(make_cfg, tmp_path / "a", "experiment=cls_label_ldp", *GRID)
    big = _build(make_cfg, tmp_path / "b", "experiment=cls_label_ldp", *GRID,
                 "grid.sweeps.N.values=[5000,20000,200000,2000000]", "grid.d=[2,1]")
    a = _numbers(run_sweep(small))
    b = _numbers(run_sweep(big)).set_index("seed_key").loc[a.seed_key].reset_index()
    pd.testing.assert_frame_equal(a, b)


def test_resume_reuses_stored_trials_and_completes(make_cfg, tmp_path):
    full = run_sweep(_build(make_cfg, tmp_path / "full", "experiment=cls_label_ldp", *GRID))
    exp = _build(make_cfg, tmp_path / "resumed", "experiment=cls_label_ldp", *GRID)
    kept = full.sample(frac=0.4, random_state=0)  # what an interrupted run had stored
    TrialStore(tmp_path / "resumed" / "trials.sqlite").write(RATE_TRIALS, kept)
    resumed = run_sweep(exp)
    assert resumed.attrs["run"].reused == len(kept)
    assert resumed.attrs["run"].computed == len(full) - len(kept)
    pd.testing.assert_frame_equal(_numbers(full), _numbers(resumed))
    merged = resumed.set_index("seed_key").loc[kept.seed_key]
    assert (merged.seconds.to_numpy() == kept.seconds.to_numpy()).all()  # reused, not recomputed


def test_changed_config_does_not_reuse_rows(make_cfg, tmp_path):
    first = _build(make_cfg, tmp_path, "experiment=cls_label_ldp", *GRID)
    run_sweep(first)
    second = _build(make_cfg, tmp_path, "experiment=cls_label_ldp", *GRID, "distribution.L=0.5")
    trials = run_sweep(second)
    assert trials.attrs["run"].reused == 0
    assert (trials.config_key == second.config_key).all() and len(trials) == len(second.points) * 40


def test_a_code_change_changes_the_key_and_recomputes(make_cfg, tmp_path, monkeypatch):
    before = _build(make_cfg, tmp_path, "experiment=cls_label_ldp", *GRID)
    run_sweep(before)
    monkeypatch.setattr(provenance, "code_fingerprint", lambda package=None: "0123456789abcdef")
    after = _build(make_cfg, tmp_path, "experiment=cls_label_ldp", *GRID)
    assert after.config_key != before.config_key
    assert after.config_key.startswith("c") and len(after.config_key) == 17
    trials = run_sweep(after)
    assert trials.attrs["run"].reused == 0 and trials.attrs["run"].computed == len(trials)


def test_reuse_false_recomputes_and_replaces(make_cfg, tmp_path):
    exp = _build(make_cfg, tmp_path, "experiment=cls_label_ldp", *GRID)
    first = run_sweep(exp)
    again = run_sweep(_build(make_cfg, tmp_path, "experiment=cls_label_ldp", *GRID, "runner.reuse=false"))
    assert again.attrs["run"].reused == 0 and again.attrs["run"].computed == len(first)
    assert set(again.run_id) == {again.attrs["run"].run_id}
    pd.testing.assert_frame_equal(_numbers(first), _numbers(again))


def test_keys_stay_strings_through_the_csv_export(make_cfg, tmp_path):
    trials = run_sweep(_build(make_cfg, tmp_path, "experiment=cls_label_ldp", *GRID))
    trials.to_csv(tmp_path / "t.csv", index=False)
    back = pd.read_csv(tmp_path / "t.csv")
    assert back.config_key.map(type).eq(str).all() and back.seed_key.map(type).eq(str).all()
