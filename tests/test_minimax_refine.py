"""The exact path's refined oracle tuning (``law_free.refine``): columns of a denser grid around the coarse optimum.

The refinement evaluates only the denser grid's values between the coarse optimum's neighbours.  Where
the worst-case risk is unimodal in the tuning that is the optimum of the whole denser grid: the tests
compute the whole denser grid and compare.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from labeldp_sim.harness.cli import validate_job
from labeldp_sim.papers.table1.law_free.plan import LawFreePlan, fixed_columns, run_exact
from labeldp_sim.papers.table1.tuning import Column

CASES = {
    # cube mean, bounded labels: the tuning G_est
    "reg_label_cdp": ["law_free.G_max={1:4096}", "+law_free.sweeps={eps:{values:[1e-8],N:1000000000000000}}"],
    # heavy tails: every refined G_est gets its own resolved clip level
    "heavy_full_cdp": ["law_free.G_max={1:4096}", "+law_free.sweeps={eps:{values:[1e-8],N:1000000000000000}}"],
    # cube argmax (K = 2)
    "cls_label_cdp": ["law_free.G_max={1:1024}", "+law_free.sweeps={eps:{values:[1e-7],N:1000000000000}}"],
}


def _spec(make_cfg, tmp_path, experiment, refine=8):
    cfg = make_cfg([f"experiment={experiment}", "mode=law_free", f"paths.results_dir={tmp_path}", "law_free.d=[1]",
                    "~law_free.sweeps", f"law_free.refine={refine}", *CASES[experiment]])
    spec = validate_job(cfg)
    assert spec.exact
    return spec


def _worst(frame, tuning):
    oracle = frame[(frame.instance == "grid") & (frame.tuning == "oracle")]
    return oracle.groupby(tuning).excess_risk.max()


@pytest.mark.parametrize("experiment", sorted(CASES))
def test_refined_columns_sit_between_the_coarse_neighbours_and_lower_M(make_cfg, tmp_path, experiment):
    spec = _spec(make_cfg, tmp_path, experiment)
    point = spec.points[0]
    frame = run_exact(spec, point, fixed_columns(spec, point))
    tuning = spec.estimator.tuning
    worst = _worst(frame, tuning)
    coarse = spec.est_grids[point.id]
    j = int(np.argmin(worst.loc[coarse].to_numpy()))
    extra = sorted(set(worst.index) - set(int(t) for t in coarse))
    assert 0 < len(extra) <= 2 * (spec.refine_for(1) - 1)
    assert all(coarse[j - 1] < t < coarse[j + 1] for t in extra)
    assert set(extra) <= set(int(t) for t in spec.fine_grids[point.id])
    # the coarse columns are the unrefined run's, entry for entry (the refinement only adds)
    plain = run_exact(_spec(make_cfg, tmp_path, experiment, refine=1), point, fixed_columns(spec, point))
    assert worst.loc[coarse].to_numpy() == pytest.approx(_worst(plain, tuning).loc[coarse].to_numpy(), rel=1e-12)
    assert worst.min() <= worst.loc[coarse].min()
    # every key the plan wants is in the task's rows, once
    keys = set(key for (key,) in LawFreePlan(spec).wanted())
    assert set(frame.seed_key) == keys and len(frame) == len(keys)


@pytest.mark.parametrize("experiment", ["reg_label_cdp", "cls_label_cdp"])
def test_refined_M_is_the_whole_dense_grid_optimum(make_cfg, tmp_path, experiment):
    """M from the refined columns equals the min-max over every tuning of the denser grid, computed directly
    (the same closed forms in the same order: equal to rounding, 1e-12 relative)."""
    spec = _spec(make_cfg, tmp_path, experiment)
    point = spec.points[0]
    M = _worst(run_exact(spec, point, fixed_columns(spec, point)), spec.estimator.tuning).min()
    dist = spec.distributions[point.d]
    columns = [Column(int(t), spec.mechanisms[(point.id, None)], 0, 0, None) for t in spec.fine_grids[point.id]]
    R = np.array([spec.estimator.expected_risks(dist, int(G), point, columns) for G in spec.inst_grids[point.id]])
    assert M == pytest.approx(R.max(axis=0).min(), rel=1e-12)


def test_refine_is_validated(tmp_path):
    for bad in ("0", "2.5", "{1:8}"):  # a mapping must name every law_free.d
        out = subprocess.run([sys.executable, "-m", "labeldp_sim", "experiment=reg_label_cdp", "mode=law_free",
                              f"law_free.refine={bad}", f"paths.results_dir={tmp_path}"], capture_output=True, text=True)
        assert out.returncode == 2, bad
        assert out.stderr.startswith("labeldp-sim: error: law_free.refine:") and out.stderr.count("\n") == 1
