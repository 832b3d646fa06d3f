"""Stable seeds: identical numbers whatever n_jobs, backend, grid, or interruption."""

import pandas as pd
import pytest

from labeldp_sim.experiment import build_experiment
from labeldp_sim.runner import run_sweep

from .conftest import SMALL_GRID

GRID = SMALL_GRID + ["grid.sweeps.N.values=[20000,200000,2000000]", "grid.reps=40",
                     "runner.chunk=7"]
CENTRAL_GRID = SMALL_GRID + ["grid.sweeps.eps.values=[0.00001,0.0001]", "grid.reps=40",
                             "runner.chunk=7"]


def _numbers(trials):
    return trials[["seed_key", "excess_risk", "regret_fraction", "N", "eps", "G"]].reset_index(drop=True)


@pytest.mark.parametrize("experiment,grid", [("cls_label_ldp", GRID), ("cls_full_cdp", CENTRAL_GRID)])
def test_same_numbers_for_any_n_jobs_and_backend(make_cfg, tmp_path, experiment, grid):
    runs = []
    for i, extra in enumerate((["runner.n_jobs=1"], ["runner.n_jobs=2"],
                               ["runner.backend=threading", "runner.n_jobs=2", "runner.chunk=3"])):
        exp = build_experiment(make_cfg([f"experiment={experiment}", *grid, *extra]))
        runs.append(_numbers(run_sweep(exp, tmp_path / str(i))))
    pd.testing.assert_frame_equal(runs[0], runs[1])
    pd.testing.assert_frame_equal(runs[0], runs[2])


def test_adding_grid_points_does_not_change_existing_ones(make_cfg, tmp_path):
    small = build_experiment(make_cfg(["experiment=cls_label_ldp", *GRID]))
    big = build_experiment(make_cfg(["experiment=cls_label_ldp", *GRID,
                                     "grid.sweeps.N.values=[5000,20000,200000,2000000]", "grid.d=[2,1]"]))
    a = _numbers(run_sweep(small, tmp_path / "a"))
    b = _numbers(run_sweep(big, tmp_path / "b")).set_index("seed_key").loc[a.seed_key].reset_index()
    pd.testing.assert_frame_equal(a, b)


def test_resume_after_interruption_reuses_and_completes(make_cfg, tmp_path):
    exp = build_experiment(make_cfg(["experiment=cls_label_ldp", *GRID]))
    full = run_sweep(exp, tmp_path / "full")
    out = tmp_path / "resumed"
    out.mkdir()
    # an interrupted run leaves only a partial file with some of the trials
    full.sample(frac=0.4, random_state=0).to_csv(out / "trials.partial.csv", index=False)
    resumed = run_sweep(exp, out)
    assert not (out / "trials.partial.csv").exists()
    pd.testing.assert_frame_equal(_numbers(full), _numbers(resumed))
    kept = full.sample(frac=0.4, random_state=0).seed_key
    merged = resumed.set_index("seed_key").loc[kept]
    original = full.set_index("seed_key").loc[kept]
    assert (merged.seconds == original.seconds).all()  # reused, not recomputed


def test_changed_config_does_not_reuse_rows(make_cfg, tmp_path):
    first = build_experiment(make_cfg(["experiment=cls_label_ldp", *GRID]))
    run_sweep(first, tmp_path)
    second = build_experiment(make_cfg(["experiment=cls_label_ldp", *GRID, "distribution.L=0.5"]))
    trials = run_sweep(second, tmp_path)
    assert (trials.config_key == second.config_key).all() and len(trials) == len(second.points) * 40
