"""User-level experiments on the shared harness: store, resume, reproducibility, flags, fits, reports."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labeldp_sim.harness.cli import run_experiment, validate_job
from labeldp_sim.papers.userlevel.experiments import UserLevelPlan, validate_userlevel
from labeldp_sim.papers.userlevel.report import fit_userlevel, summarize

SMALL = ["experiment=ul_mean_1d", "userlevel.trials=6", "runner.progress=false", "runner.n_jobs=1",
         "userlevel.sweeps.n.values=[4096,16384]", "userlevel.sweeps.m.values=[64,256,1024]",
         "userlevel.sweeps.n.m=256", "userlevel.sweeps.m.n=4096"]


def test_a_run_writes_outputs_and_a_rerun_reuses_every_trial(make_cfg, tmp_path, capsys):
    cfg = make_cfg([*SMALL, f"paths.results_dir={tmp_path}"])
    first = run_experiment(cfg)
    out = tmp_path / "userlevel" / "ul_mean_1d"
    for name in ("trials.csv", "summary.csv", "fit.csv", "rate.png", "provenance.json", "config.yaml"):
        assert (out / name).exists(), name
    for name in ("table1.md", "table1.csv", "error_vs_m.png", "exponents.png"):
        assert (tmp_path / "userlevel" / name).exists(), name
    # 4 estimators × (2 + 3 − 1 shared) points × 6 trials: the n- and m-sweeps share (4096, 256)
    assert len(first["trials"]) == 4 * 4 * 6
    capsys.readouterr()
    again = run_experiment(cfg)
    assert "96 reused" in capsys.readouterr().out
    pd.testing.assert_frame_equal(first["trials"][["seed_key", "estimator", "error"]],
                                  again["trials"][["seed_key", "estimator", "error"]])
    table = (tmp_path / "userlevel" / "table1.md").read_text()
    assert "Why Algorithm 1 matters" in table and "Slips of papers/003" in table


def test_numbers_do_not_depend_on_jobs_or_on_the_rest_of_the_grid(make_cfg, tmp_path):
    def errors(extra, sub):
        spec = validate_job(make_cfg([*SMALL, f"paths.results_dir={tmp_path / sub}", *extra]))
        plan = UserLevelPlan(spec)
        frames = [call[0](*call[1], **call[2]) for call in plan.tasks(plan.wanted())]
        frame = pd.concat(frames).set_index(["seed_key", "estimator"]).error
        return frame.sort_index()

    base = errors([], "a")
    fewer = errors(["userlevel.sweeps.m.values=[256]"], "b")
    shared = fewer.index.intersection(base.index)
    assert len(shared) > 0
    np.testing.assert_array_equal(base[shared].to_numpy(), fewer[shared].to_numpy())


def test_tiny_stage_one_groups_are_flagged_and_left_out_of_the_fit(make_cfg, tmp_path):
    """n ε² ≤ 128 users per stage: far below SPEC §7's ≈1000, so Algorithm 1's points are flagged
    (the baselines have no stage I and stay in)."""
    spec = validate_userlevel(make_cfg([*SMALL, f"paths.results_dir={tmp_path}",
                                        "userlevel.sweeps.n.values=[64,128,256]", "userlevel.sweeps.n.m=1024",
                                        "userlevel.estimators={alg1: {rate: alg1_constants}}"]))
    plan = UserLevelPlan(spec)
    trials = pd.concat([call[0](*call[1], **call[2]) for call in plan.tasks(plan.wanted())])
    trials["experiment"] = spec.name
    summary = summarize(spec, trials)
    small = summary[(summary.axis == "n") & (summary.estimator == "alg1")]
    assert not small.in_regime.any()
    assert all(small.flag.str.len() > 0)
    fits = fit_userlevel(spec, summary)
    row = fits[(fits.axis == "n") & (fits.estimator == "alg1")].iloc[0]
    assert row.verdict == "too few points" and row.points == 0


@pytest.mark.parametrize("rate,expected", [("alg1_constants", -1.0)])
def test_m_slope_of_algorithm_one_is_fitted_against_the_registry(make_cfg, tmp_path, rate, expected):
    spec = validate_userlevel(make_cfg([*SMALL, f"paths.results_dir={tmp_path}", "userlevel.trials=40",
                                        f"userlevel.estimators={{alg1: {{rate: {rate}}}}}"]))
    plan = UserLevelPlan(spec)
    trials = pd.concat([call[0](*call[1], **call[2]) for call in plan.tasks(plan.wanted())])
    fits = fit_userlevel(spec, summarize(spec, trials))
    row = fits[(fits.axis == "m") & (fits.estimator == "alg1")].iloc[0]
    assert row.theory == pytest.approx(expected, abs=1e-9)
    # 40 trials: the slope's own CI must cover the stated slope within a few standard errors
    assert abs(row.slope - expected) < 4 * row.se + 0.05


def test_a_point_the_trial_would_refuse_is_refused_at_validation_with_its_minimum(make_cfg, tmp_path):
    """Algorithm 3 at m = 64, ε = 1, d = 2 needs n >= 152 (17 steps, 4 Algorithm 2 groups of 2 users each): the
    validator applies the estimator's own check_point to every point, so n = 151 is refused before computing,
    on the key the user typed, and the trial itself refuses the same point."""
    from labeldp_sim.harness.errors import ConfigError
    from labeldp_sim.papers.userlevel.learning import Algorithm3, QuadraticSO

    base = ["experiment=ul_so", f"paths.results_dir={tmp_path}"]
    with pytest.raises(ConfigError) as err:
        validate_userlevel(make_cfg([*base, "userlevel.sweeps.n.values=[151]"]))
    assert err.value.key == "userlevel.sweeps.n.values" and err.value.got == 151
    assert err.value.allowed.startswith("n >= 152 for estimator alg3 at m = 64, eps = 1, d = 2")
    validate_userlevel(make_cfg([*base, "userlevel.sweeps.n.values=[152]"]))
    with pytest.raises(ConfigError):
        Algorithm3().trial(QuadraticSO(), 151, 64, 1.0, 2, np.random.default_rng(0))
    Algorithm3().trial(QuadraticSO(), 152, 64, 1.0, 2, np.random.default_rng(0))


def test_families_and_estimators_are_the_registries_own_and_classes_carry_their_needs(monkeypatch):
    """A registered estimator class of a task is offered for that task only, with no list to edit, and the
    memory check reads what its sufficient path holds from the class, not from its name."""
    from labeldp_sim.harness import components as registry
    from labeldp_sim.papers.userlevel.contract import ESTIMATOR_GROUP, Estimator
    from labeldp_sim.papers.userlevel.experiments import UserPoint, estimators, families, trial_needs
    from labeldp_sim.papers.userlevel.mean import Algorithm2, KashinL2

    assert set(families("mean")) == {"fixed", "thm2", "thm6", "thm7", "spike"}
    assert set(estimators("so")) == {"alg3"} and estimators("mean")["kashin"] is KashinL2
    # the toy registers into a copy of the group's table, dropped again after the test
    monkeypatch.setitem(registry._REGISTRY, ESTIMATOR_GROUP, dict(registry._REGISTRY[ESTIMATOR_GROUP]))

    class Toy(Estimator):
        name, task, parameters = "toy", "so", {}
        draws_coefficient_signs = True

        def trial(self, family, n, m, eps, d, rng, path="sufficient"):
            return {"error": 0.0, "stage1_ok": None, "in_regime": True, "groups": 1}

        def check_point(self, family, n, m, eps, d):
            pass

    assert estimators("so")["toy"] is Toy and "toy" not in estimators("mean")
    pt = UserPoint(n=4096, m=16, eps=1.0, d=4)
    for est, counted in ((Toy(), True), (KashinL2(), True), (Algorithm2(), False)):
        needs = trial_needs("n", pt, {"e": est}, "sufficient")
        assert any("Kashin" in need.what for need in needs) is counted, type(est).__name__
