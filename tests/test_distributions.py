"""The bump family and the exact excess risk (8) of cube classifiers."""

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.papers.table1.families import HolderBump, SmoothMargin, cube_index


def _mc_risk(instance, G_est, predictions_all, n, rng):
    """Monte-Carlo estimate of (8): mean of η*(X) − η_c(X)(X) over uniform X, and its SE."""
    X = rng.random((n, instance.family.d))
    if hasattr(instance, "g_and_class"):
        g, a = instance.g_and_class(X)
    else:
        g = instance.family.A * np.abs(2 * X[:, 0] - 1) ** instance.kappa
        a = (X[:, 0] > 0.5).astype(int)
    c = predictions_all[cube_index(X, G_est)]
    loss = g * (c != a)  # η* − η_c = g when c ≠ a(x), else 0 (tilt construction)
    return loss.mean(), loss.std() / np.sqrt(n)


@pytest.mark.parametrize("d,G,G_est,K", [(1, 8, 8, 2), (1, 6, 9, 3), (2, 5, 5, 2), (2, 4, 7, 4)])
def test_exact_cube_risk_matches_monte_carlo_integral(d, G, G_est, K):
    rng = np.random.default_rng(10 * d + G_est)
    instance = HolderBump(d=d, K=K, C_M=2.0).draw(rng, G)
    model = instance.cell_model(G_est)
    predictions_all = rng.integers(K, size=G_est ** d)
    exact = model.excess_risk(predictions_all[model.cells])
    estimate, se = _mc_risk(instance, G_est, predictions_all, 400_000, rng)
    assert abs(exact - estimate) < 5.3 * se  # α ≈ 1e-7


def test_smooth_instance_exact_risk_matches_monte_carlo():
    rng = np.random.default_rng(3)
    instance = SmoothMargin(d=2, gamma=2.0, K=3).draw(rng)
    model = instance.cell_model(6)
    predictions_all = rng.integers(3, size=36)
    exact = model.excess_risk(predictions_all[model.cells])
    estimate, se = _mc_risk(instance, 6, predictions_all, 400_000, rng)
    assert abs(exact - estimate) < 5.3 * se


def test_aligned_bump_risk_is_the_closed_form():
    """Aligned cubes: a wrong bump cube costs L h^(β+d) ‖φ‖₁ with ‖φ‖₁ = 2^(-d)."""
    fam = HolderBump(d=2, beta=0.5, gamma=1.0, L=0.8, C_M=2.0)
    G = 9
    instance = fam.draw(np.random.default_rng(0), G)
    model = instance.cell_model(G)
    assert len(model.cells) == fam.n_bumps(G) == 2 * G ** (2 - 0.5)  // 1
    wrong = (instance.classes + 1) % fam.K
    order = np.argsort(np.array(instance.bumps))
    per_cube = fam.L * (1 / G) ** (fam.beta + 2) / 4
    assert model.excess_risk(wrong[order]) == pytest.approx(len(model.cells) * per_cube)
    assert model.excess_risk(instance.classes[order]) == 0.0


@pytest.mark.parametrize("K", [2, 3])
def test_sampled_labels_follow_cell_class_probabilities(K):
    rng = np.random.default_rng(K)
    instance = HolderBump(d=1, K=K, C_M=3.0).draw(rng, 4)
    model = instance.cell_model(4)
    X, y = instance.sample(200_000, rng)
    cells = cube_index(X, 4)
    for r, cell in enumerate(model.cells):
        observed = np.bincount(y[cells == cell], minlength=K)
        expected = observed.sum() * model.class_probs[r]
        assert stats.chisquare(observed, expected).pvalue > 1e-6


def test_margin_construction_counts_bumps_and_flags_the_cap():
    fam = HolderBump(d=2, gamma=1.0, beta=1.0, C_M=4.0)
    assert fam.n_bumps(10) == 40 and fam.construction_valid(10)
    assert fam.n_bumps(3) == 9 and not fam.construction_valid(3)  # capped at G^d
    assert HolderBump(d=1, gamma=0.0, C_M=1.0).n_bumps(7) == 7  # γ = 0: every cube


@pytest.mark.parametrize("kwargs,key", [
    ({"beta": 0.0}, "beta"), ({"beta": 1.5}, "beta"), ({"gamma": -0.1}, "gamma"),
    ({"K": 1}, "K"), ({"d": 0}, "d"), ({"L": 2.0}, "L"), ({"C_M": 0}, "C_M"),
])
def test_bad_family_parameters_name_their_key(kwargs, key):
    from labeldp_sim.harness.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        HolderBump(**kwargs)
    assert err.value.key == key
