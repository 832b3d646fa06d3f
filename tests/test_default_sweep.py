"""The default suite's verdicts (slow: ~1 minute; run with `pytest -m slow`)."""

import pytest

from labeldp_sim.cli import run_experiment

EXPERIMENTS = ["cls_nonprivate", "cls_label_ldp", "cls_label_cdp", "cls_full_ldp", "cls_full_cdp"]


@pytest.mark.slow
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_default_sweep_is_consistent_with_table_1(make_cfg, tmp_path, experiment):
    cfg = make_cfg([f"experiment={experiment}", f"paths.results_dir={tmp_path}",
                    "runner.progress=false"])
    fits = run_experiment(cfg)["fits"]
    assert len(fits) >= 2
    assert (fits.verdict == "consistent").all(), fits[["axis", "d", "slope", "ci_low", "ci_high",
                                                       "theory", "verdict"]]
