"""Table 1's item-level column and Proposition 1's baselines (papers/003): exact risks, configs, the m-figure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from labeldp_sim.harness.cli import validate_job
from labeldp_sim.harness.points import keyed_rng
from labeldp_sim.papers.userlevel.families import FixedSign, Thm2Hard, Thm6Hard
from labeldp_sim.papers.userlevel.law_free.baselines import (BASELINE_EXPERIMENTS, m_slope_table, plot_m_baselines,
                                                             write_m_baselines)
from labeldp_sim.papers.userlevel.mean import ESTIMATORS, ItemLevel, ItemLevelLDP, NaiveLaplace, OneSample
from labeldp_sim.papers.userlevel.mechanisms import ItemLevelLaplace
from labeldp_sim.papers.userlevel.theory import RATES, expected_slope

# Monte-Carlo mean of (trial error − exact error) on the same instances: within 3 SE at a fixed seed
Z_MAX = 3.0
REPS = 300


def _gap(est, fam, n, m, eps, d, path="sufficient"):
    diff = []
    for r in range(REPS):
        err = est.trial(fam, n, m, eps, d, keyed_rng(11, "item-baselines", r), path)["error"]
        inst = fam.instance(keyed_rng(11, "item-baselines", r), n, m, eps, d)  # the same hidden signs
        diff.append(err - est.expected_error(inst, n, m, eps, d)["error"])
    diff = np.asarray(diff)
    return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(REPS))


@pytest.mark.parametrize("est, fam, n, m, eps, d, path", [
    (ItemLevelLDP(), Thm2Hard(), 500, 16, 1.0, 1, "sufficient"),           # noise term dominates
    (ItemLevelLDP(), Thm2Hard(), 500, 16, 1.0, 1, "per_user"),             # nm one-sample units, noise each
    (ItemLevelLDP(D=0.5), FixedSign(s=0.3), 500, 8, 0.5, 1, "sufficient"),  # clipping bias dominates
    (ItemLevelLDP(D=0.5), Thm6Hard(), 300, 8, 1.0, 2, "sufficient"),       # d = 2: Lap(2Dd/ε) per coordinate
    (ItemLevel(), Thm2Hard(), 500, 16, 1.0, 1, "sufficient"),
    (ItemLevel(D=0.5), FixedSign(s=0.3), 500, 8, 2.0, 1, "sufficient"),
    (ItemLevel(D=0.5), Thm6Hard(), 300, 8, 1.0, 2, "sufficient"),
    (OneSample(), Thm2Hard(), 500, 16, 1.0, 1, "sufficient"),
    (OneSample(D=0.5), FixedSign(s=0.3), 500, 8, 2.0, 1, "per_user"),
    (OneSample(D=0.5), Thm6Hard(), 300, 8, 1.0, 2, "sufficient"),
    (NaiveLaplace(D=0.5), FixedSign(s=0.3), 500, 4, 4.0, 1, "sufficient"),  # binomial user means, clipped
    (NaiveLaplace(), Thm6Hard(), 300, 8, 1.0, 2, "sufficient"),             # nothing clipped: Var X/m
], ids=lambda v: repr(v) if not isinstance(v, (int, float, str)) else None)
def test_expected_error_agrees_with_the_trials(est, fam, n, m, eps, d, path):
    gap, se = _gap(est, fam, n, m, eps, d, path)
    assert abs(gap) <= Z_MAX * se, (gap, se)


def test_closed_forms_on_theorem2s_family():
    """X = ±1, P(+1) = (1 + sv)/2, clip at D ≤ 1: bias² (1−D)²s², Var c = D²(1−s²), Laplace 2b²."""
    n, m, eps = 10 ** 6, 64, 0.5
    inst = Thm2Hard(c=3.0).instance(keyed_rng(0, "x"), n, m, eps, 1)
    s = inst.params["s"]
    for D in (1.0, 0.6):
        bias2, var = (1 - D) ** 2 * s ** 2, D ** 2 * (1 - s ** 2)
        hand = {ItemLevelLDP: bias2 + (var + 8 * D ** 2 / eps ** 2) / (n * m),
                ItemLevel: bias2 + var / (n * m) + 8 * D ** 2 * m / (n * eps ** 2),
                OneSample: bias2 + (var + 8 * D ** 2 / eps ** 2) / n}
        for cls, value in hand.items():
            assert cls(D=D).expected_error(inst, n, m, eps, 1)["error"] == pytest.approx(value, rel=1e-12), cls
    # D above the support bound clips nothing: no bias, more noise
    out = ItemLevelLDP(D=2.0).expected_error(inst, n, m, eps, 1)
    assert out["bias2"] == 0 and out["error"] == pytest.approx((1 - s ** 2 + 32 / eps ** 2) / (n * m), rel=1e-12)


def test_item_ldp_is_item_level_epsilon_per_sample_through_the_audited_randomizer():
    assert ESTIMATORS["item_ldp"] is ItemLevelLDP and ESTIMATORS["item"] is ItemLevel
    assert all(ESTIMATORS[k].exact_expected_error for k in ("item_ldp", "item", "one_sample", "naive"))
    mech, reports = ItemLevelLDP()._mechanism(0.5, 1.0, 16, 1, 1)
    assert isinstance(mech, ItemLevelLaplace) and mech.m == 1 and reports == 16  # one privacy unit per sample
    assert mech.scale == pytest.approx(2 * 1.0 / 0.5) and mech.epsilon == 0.5
    out = ItemLevelLDP().trial(Thm2Hard(), 100, 16, 0.5, 1, keyed_rng(0, "y"))
    assert out["epsilon_item"] == 0.5 and out["epsilon_user"] == 8.0 and out["noise_scale"] == pytest.approx(4.0)
    # P1a at the same ε: scale 2Dm/ε, m times item_ldp's
    assert ItemLevel()._mechanism(0.5, 1.0, 16, 1, 1)[0].scale == pytest.approx(16 * mech.scale)


def test_item_bounded_rate():
    r = RATES["item_bounded"]
    assert r.kind == "baseline" and "Table 1" in r.source
    assert r.value(1e6, 100, 0.5, d=2, D=2.0) == pytest.approx(4.0 * 2 / (1e8 * 0.25))
    assert expected_slope(r, "m", [16, 1024], {"n": 1e8, "eps": 1.0}) == pytest.approx(-1.0)
    assert r.value(1e8, 16, 0.1) == pytest.approx(RATES["thm2_lower"].value(1e8, 16, 0.1))  # 1-D, ε ≤ 1


CONFIGS = {"ul_minimax_mean_item": ("item_ldp", "item_bounded"), "ul_minimax_mean_p1a": ("item", "p1a_item_level"),
           "ul_minimax_mean_p1b": ("one_sample", "p1b_one_sample")}


@pytest.mark.parametrize("experiment", sorted(CONFIGS))
def test_configs_validate_and_share_algorithm1s_sweeps(make_cfg, tmp_path, experiment):
    spec = validate_job(make_cfg([f"experiment={experiment}", f"paths.results_dir={tmp_path}"]))
    ref = validate_job(make_cfg(["experiment=ul_minimax_mean", f"paths.results_dir={tmp_path}"]))
    estimator, rate = CONFIGS[experiment]
    assert spec.name == experiment and spec.family_name == "thm2" and spec.estimator_name == estimator
    assert spec.tuning_key == "D" and 1.0 in spec.tunings and spec.tunings[-1] > 1.0  # D = 1 inside the grid
    assert spec.rates == [rate, "thm2_lower"] and spec.scales[0] == 0.5 and spec.scales[-1] >= 2 ** 23
    assert spec.sweeps == ref.sweeps  # the same n, m, ε points: comparable m axes
    assert not tmp_path.joinpath("userlevel").exists()


def _synthetic(base, slopes, n=10 ** 8, eps=1.0):
    """A points.csv and fit.csv per experiment: M = C·m^slope on four m, one point ruled out."""
    m = np.array([16, 256, 4096, 65536])
    for k, (experiment, (estimator, rate, slope)) in enumerate(slopes.items()):
        out = base / experiment
        out.mkdir(parents=True)
        flag = ["", "", "", "oracle D = 2 on the grid's edge" if k == 0 else ""]
        pd.DataFrame({"axis": "m", "n": n, "m": m, "eps": eps, "d": 1, "M": 10.0 ** -(k + 6) * (m / 16.0) ** slope,
                      "M_se": 0.0, "flag": flag}).to_csv(out / "points.csv", index=False)
        pd.DataFrame([{"experiment": experiment, "estimator": estimator, "axis": "m", "d": 1, "rate": rate,
                       "primary": True, "theory": float(slope), "deep_slope": slope + 0.01, "deep_ci_low": slope - 0.02,
                       "deep_ci_high": slope + 0.04, "deep_lo": 16.0, "deep_hi": 4096.0, "verdict": "consistent",
                       "points": 3, "points_total": 4},
                      {"experiment": experiment, "estimator": estimator, "axis": "m", "d": 1, "rate": "thm2_lower",
                       "primary": False, "theory": -1.0, "deep_slope": slope + 0.01, "deep_ci_low": slope - 0.02,
                       "deep_ci_high": slope + 0.04, "deep_lo": 16.0, "deep_hi": 4096.0, "verdict": "inconsistent",
                       "points": 3, "points_total": 4}]).to_csv(out / "fit.csv", index=False)


SLOPES = {"ul_minimax_mean": ("alg1", "thm2_lower", -1), "ul_minimax_mean_item": ("item_ldp", "item_bounded", -1),
          "ul_minimax_mean_p1b": ("one_sample", "p1b_one_sample", 0),
          "ul_minimax_mean_p1a": ("item", "p1a_item_level", 1)}


def test_m_slope_table_and_figure_on_a_synthetic_folder(tmp_path):
    _synthetic(tmp_path, SLOPES)
    table = write_m_baselines(tmp_path)
    assert table.experiment.tolist() == list(BASELINE_EXPERIMENTS)
    assert table.estimator.tolist() == ["alg1", "item_ldp", "one_sample", "item"]
    assert table.stated_slope.tolist() == [-1.0, -1.0, 0.0, 1.0] and (table.verdict == "consistent").all()
    assert table.m_slope.tolist() == pytest.approx([-0.99, -0.99, 0.01, 1.01])
    assert table.m_slope_ci.iloc[2] == "+0.010 [-0.020, +0.040]" and (table.n == 10 ** 8).all()
    assert pd.read_csv(tmp_path / "baselines_m.csv").m_slope_ci.tolist() == table.m_slope_ci.tolist()
    png, svg = (tmp_path / "baselines_m.png").read_bytes(), (tmp_path / "baselines_m.svg").read_bytes()
    assert png and svg
    write_m_baselines(tmp_path)  # the same bytes twice
    assert (tmp_path / "baselines_m.png").read_bytes() == png and (tmp_path / "baselines_m.svg").read_bytes() == svg


def test_m_slope_table_skips_missing_runs_and_refuses_mixed_axes(tmp_path):
    _synthetic(tmp_path / "a", {k: SLOPES[k] for k in ("ul_minimax_mean", "ul_minimax_mean_p1b")})
    assert m_slope_table(tmp_path / "a").experiment.tolist() == ["ul_minimax_mean", "ul_minimax_mean_p1b"]
    with pytest.raises(ValueError, match="no law-free m sweep"):
        plot_m_baselines(tmp_path / "empty", tmp_path / "x.png")
    _synthetic(tmp_path / "b", {"ul_minimax_mean": SLOPES["ul_minimax_mean"]})
    _synthetic(tmp_path / "b", {"ul_minimax_mean_p1a": SLOPES["ul_minimax_mean_p1a"]}, n=10 ** 9)
    with pytest.raises(ValueError, match="fixed axes"):
        m_slope_table(tmp_path / "b")


def test_algorithms_2_to_5_join_the_table_at_their_own_axes(tmp_path):
    """Algorithms 2–5 sweep m at their own n and ε: they join the table (and the figure's relative panel)
    without the check that the bounded-mean rows share one n and ε."""
    _synthetic(tmp_path, SLOPES)
    _synthetic(tmp_path, {"ul_minimax_so": ("alg3", "thm8_so", -0.5)}, n=10 ** 12)
    _synthetic(tmp_path, {"ul_minimax_cls": ("alg4", "thm10_lower", -0.5)}, n=10 ** 9, eps=0.5)
    table = write_m_baselines(tmp_path)
    assert table.experiment.tolist() == [*BASELINE_EXPERIMENTS, "ul_minimax_so", "ul_minimax_cls"]
    assert table.n.tolist()[-2:] == [10 ** 12, 10 ** 9] and table.stated_slope.tolist()[-2:] == [-0.5, -0.5]
    with pytest.raises(ValueError, match="fixed axes"):  # the bounded-mean panel still refuses mixed axes
        m_slope_table(tmp_path, [*BASELINE_EXPERIMENTS, "ul_minimax_so"])
