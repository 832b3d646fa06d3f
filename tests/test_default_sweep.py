"""The default suite's verdicts: every Table I fit row consistent (slow: ~12 minutes; `make test-slow`)."""

from pathlib import Path

import pytest

from labeldp_sim.harness.cli import run_experiment

EXPERIMENTS = (Path(__file__).resolve().parent.parent / "experiments" / "default.txt").read_text().split()


@pytest.mark.slow
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_default_sweep_is_consistent_with_table_1(make_cfg, tmp_path, experiment):
    cfg = make_cfg([f"experiment={experiment}", f"paths.results_dir={tmp_path}",
                    "runner.progress=false"])
    fits = run_experiment(cfg)["fits"]
    fits = fits[fits.primary.astype(bool)]
    assert len(fits) >= 3
    assert (fits.verdict == "consistent").all(), fits[["axis", "d", "slope", "ci_low", "ci_high",
                                                       "theory", "verdict"]]
