import numpy as np
import pytest

from labeldp_sim.stats.fit import fit_slope, verdict


@pytest.mark.parametrize("ci,theory,expected", [
    ((-0.70, -0.64), -0.667, "consistent"),
    ((-0.80, -0.74), -0.667, "inconsistent"),
    ((-0.60, -0.55), -0.667, "inconsistent"),
    ((-0.75, -0.66), -0.667, "inconclusive"),
    ((-0.90, -0.40), -0.667, "inconclusive"),
])
def test_verdict_rule(ci, theory, expected):
    assert verdict(*ci, theory, 0.05) == expected


def test_fit_recovers_a_known_slope_within_its_ci():
    rng = np.random.default_rng(0)
    x = np.geomspace(1e3, 1e8, 6)
    truth = -0.4
    hits = 0
    for _ in range(200):
        mean_true = 3.0 * x ** truth
        se = 0.05 * mean_true
        observed = mean_true + se * rng.standard_normal(len(x))
        fit = fit_slope(x, observed, se)
        hits += fit["ci_low"] <= truth <= fit["ci_high"]
    # 95% coverage: 200 fits, binomial α ≈ 1e-6 lower bound is ~0.85
    assert hits >= 170


def test_curvature_widens_the_ci():
    x = np.geomspace(1e3, 1e8, 6)
    se_rel = 0.01
    straight = fit_slope(x, x ** -0.5, se_rel * x ** -0.5)
    curved_mean = x ** -0.5 * np.exp(0.05 * np.log(x / 1e5) ** 2)
    curved = fit_slope(x, curved_mean, se_rel * curved_mean)
    assert curved["birge"] > 10 and curved["se"] > 3 * straight["se"]
