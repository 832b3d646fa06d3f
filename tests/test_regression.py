"""Regression families, mechanisms, estimators: laws against the paper's formulas."""

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.papers.table1.families import BoundedBump, HeavyTailBump, NoisyPareto, cube_index
from labeldp_sim.papers.table1.estimators import CubeMean, KNNMean, knn_mean
from labeldp_sim.papers.table1.points import Point
from labeldp_sim.privacy.protocols import CubeData, NoPrivacy, laplace_sum
from labeldp_sim.papers.table1.mechanisms import JointLaplace, LaplaceCubeMean, LaplaceCubeMeanFull, LaplaceLabel
from labeldp_sim.papers.table1.sweep import run_trial
from labeldp_sim.papers.table1.theory import CELLS

ALPHA = 1e-6


@pytest.mark.parametrize("family", [BoundedBump(d=2, T=1.5), HeavyTailBump(d=2, p=2.5),
                                    NoisyPareto(d=2)])
@pytest.mark.parametrize("G,G_est", [(4, 4), (4, 7)])
def test_exact_cube_risk_matches_monte_carlo(family, G, G_est):
    rng = np.random.default_rng(G_est)
    instance = family.draw(rng, G)
    model = instance.cell_model(G_est)
    estimates = 0.2 * rng.standard_normal(G_est ** 2)
    X = rng.random((400_000, 2))
    loss = (estimates[cube_index(X, G_est)] - instance.eta(X)) ** 2
    assert abs(model.excess_risk(estimates) - loss.mean()) < 5.3 * loss.std() / np.sqrt(len(loss))


@pytest.mark.parametrize("p,G", [(2.0, 6), (3.0, 10), (4.5, 8)])
def test_three_point_law_is_171_with_174(p, G):
    family = HeavyTailBump(d=1, p=p, M_p=1.3)
    instance = family.draw(np.random.default_rng(1), G)
    T = (1.3 * G ** family.beta / 2) ** (1 / (p - 1))  # (174) at h = 1/G
    assert instance.values[-1] == pytest.approx(T)
    X, y = instance.sample(400_000, np.random.default_rng(2))
    assert set(np.unique(y)) <= {-T, 0.0, T}
    moment = np.abs(y) ** p
    assert abs(moment.mean() - 1.3) < 5.3 * moment.std() / np.sqrt(len(y))  # E|Y|^p = M_p (172)
    resid = y - instance.eta(X)
    assert abs(resid.mean()) < 5.3 * resid.std() / np.sqrt(len(y))  # E[Y|x] = η_v (173)


def test_bounded_labels_are_plus_minus_T_with_mean_eta():
    instance = BoundedBump(d=1, T=2.0).draw(np.random.default_rng(0), 5)
    X, y = instance.sample(300_000, np.random.default_rng(1))
    assert set(np.unique(y)) == {-2.0, 2.0}
    resid = y - instance.eta(X)
    assert abs(resid.mean()) < 5.3 * resid.std() / np.sqrt(len(y))


@pytest.mark.parametrize("eps,T", [(0.5, 1.0), (2.0, 3.0)])
def test_laplace_label_noise_and_privacy(eps, T):
    mech = LaplaceLabel(eps, T)
    rng = np.random.default_rng(3)
    y = np.full(50_000, 10.0)  # clipped to T
    noise = mech.report(y, rng) - T
    assert stats.kstest(noise, stats.laplace(scale=2 * T / eps).cdf).pvalue > ALPHA
    z = np.linspace(-40, 40, 4001)
    ratio = stats.laplace.logpdf(z, loc=T, scale=mech.scale) - stats.laplace.logpdf(z, loc=-T, scale=mech.scale)
    assert np.abs(ratio).max() == pytest.approx(eps)  # worst pair of labels: exactly ε


def test_laplace_sum_is_a_difference_of_gammas():
    rng = np.random.default_rng(4)
    direct = rng.laplace(0, 1.5, size=(20_000, 7)).sum(axis=1)
    summed = laplace_sum(np.full(20_000, 7), 1.5, rng)
    assert stats.ks_2samp(direct, summed).pvalue > ALPHA
    assert laplace_sum(np.zeros(3), 1.0, rng).tolist() == [0.0, 0.0, 0.0]


def test_central_cube_means_use_23_and_33_scales():
    rng = np.random.default_rng(5)
    eps, T, N, h, d = 0.7, 2.0, 10_000, 0.1, 2
    # 20,000 cubes of 40 samples whose clipped labels sum to 8: four at 30 (clipped to T = 2)
    data = CubeData.from_counts(np.tile([[4, 36]], (20_000, 1)), [30.0, 0.0])
    label = LaplaceCubeMean(eps, T)
    noise = label.release(data, rng, N, h, d) - 8.0 / 40
    assert stats.kstest(noise, stats.laplace(scale=2 * T / (40 * eps)).cdf).pvalue > ALPHA
    empty = CubeData.from_counts(np.zeros((2, 2)), [2.0, 0.0])
    assert label.release(empty, rng, N, h, d).tolist() == [0.0, 0.0]  # empty -> 0
    full = LaplaceCubeMeanFull(eps, T)
    n0 = 0.5 * 2.0 ** -d * N * h ** d  # (35) with c = 1, θ = 2^-d
    assert full.n0(N, h, d) == pytest.approx(n0)
    noise = full.release(data, rng, N, h, d) - 8.0 / max(40, n0)
    assert stats.kstest(noise, stats.laplace(scale=6 * T / (n0 * eps)).cdf).pvalue > ALPHA


def test_joint_laplace_budget_adds_to_eps():
    mech = JointLaplace(0.8, 2.5)
    # ℓ1 sensitivities 2 (counts) and 2T (sums) over the two Laplace scales
    assert 2 / mech.count_scale + 2 * mech.T / mech.sum_scale == pytest.approx(0.8)


REG_MECHANISMS = {
    "none": lambda T: NoPrivacy(),
    "laplace": lambda T: LaplaceLabel(1.0, T),
    "laplace_cube": lambda T: LaplaceCubeMean(0.5, T),
    "laplace_cube_full": lambda T: LaplaceCubeMeanFull(0.5, T),
    "joint_laplace": lambda T: JointLaplace(2.0, T),
}


def _risks(dist, mech, point, path, seed, reps=300):
    return np.array([run_trial(dist, mech, CubeMean(), point, r, seed, path)["excess_risk"]
                     for r in range(reps)])


@pytest.mark.parametrize("name", sorted(REG_MECHANISMS))
@pytest.mark.parametrize("family,d,N,G,G_est,clip", [
    (BoundedBump(d=1), 1, 600, 5, 5, 1.0),
    (BoundedBump(d=1), 1, 600, 5, 5, 0.4),             # labels ±1 beyond the clip level 0.4
    (HeavyTailBump(d=2, p=3.0), 2, 1500, 3, 4, 1.0),
    (HeavyTailBump(d=2, p=3.0), 2, 1500, 3, 4, 0.35),  # the tail beyond the clip level
    (BoundedBump(d=2), 2, 60, 4, 12, 0.4),              # 60 samples in 144 cubes: most are empty
])
def test_cube_mean_paths_agree_in_distribution(name, family, d, N, G, G_est, clip):
    T = clip * (family.T if family.labels == "bounded" else family.tail(G))
    point = Point("paths", "N", d, N, 1.0, N, 1.0, G=G, h=1 / G, in_regime=True, G_est=G_est)
    mech = REG_MECHANISMS[name](T)
    per_sample = _risks(family, mech, point, "per_sample", 1)
    sufficient = _risks(family, mech, point, "sufficient", 2)
    assert stats.ks_2samp(per_sample, sufficient).pvalue > ALPHA


def test_regression_agreement_test_has_power():
    family = BoundedBump(d=1)
    point = Point("paths", "N", 1, 600, 1.0, 600, 1.0, G=5, h=0.2, in_regime=True, G_est=5)
    per_sample = _risks(family, LaplaceLabel(1.0, 1.0), point, "per_sample", 1)
    wrong = _risks(family, LaplaceLabel(0.5, 1.0), point, "sufficient", 2)
    assert stats.ks_2samp(per_sample, wrong).pvalue < ALPHA


@pytest.mark.parametrize("d", [1, 2, 3])
def test_knn_mean_matches_brute_force(d):
    rng = np.random.default_rng(d)
    X, Z, q = rng.random((700, d)), rng.standard_normal(700), rng.random((50, d))
    for k in (1, 9, 700):
        dist = np.linalg.norm(q[:, None, :] - X[None, :, :], axis=2)
        brute = Z[np.argsort(dist, axis=1)[:, :k]].mean(axis=1)
        assert np.allclose(knn_mean(X, Z, q, k, "euclidean"), brute)


def test_knn_k_is_theorem_6_and_appendix_k_balance():
    est = KNNMean()
    N, eps, d, b = 10**6, 0.3, 2, 1.0
    k6 = N ** (2 * b / (d + 2 * b)) * eps ** (-2 * d / (d + 2 * b))  # Theorem 6
    assert est.neighbours(CELLS["reg_label_ldp"], N, eps, b, d) == pytest.approx(k6, rel=1e-3)
    p = 3.0
    D = 2 * p * b + d * (p - 1)
    k10 = N ** (2 * p * b / D) * eps ** (-2 * d * (p - 1) / D)  # balance of (195)
    assert est.neighbours(CELLS["heavy_label_ldp"], N, eps, b, d, p) == pytest.approx(k10, rel=1e-3)


def test_knn_trial_risk_is_an_unbiased_integral():
    family = BoundedBump(d=1)
    point = Point("knn", "N", 1, 5000, 1.0, 5000, 1.0, G=6, h=1 / 6, in_regime=True, G_est=6, k=50)
    risks = [run_trial(family, NoPrivacy(), KNNMean(n_test=256), point, r, 0, "per_sample")["excess_risk"]
             for r in range(40)]
    assert np.all(np.isfinite(risks)) and 0 < np.mean(risks) < 0.05


@pytest.mark.parametrize("d", [1, 2, 3])
def test_regression_exponents_match_spec(d):
    b, p = 0.8, 2.5
    r_reg = 2 * b / (2 * b + d)
    D = 2 * p * b + d * (p - 1)
    expect = {
        ("reg_nonprivate", "N"): -r_reg, ("reg_label_ldp", "N"): -r_reg, ("reg_label_ldp", "eps"): -2 * r_reg,
        ("reg_label_cdp", "eps"): -2 * b / (b + d), ("reg_full_ldp", "N"): -b / (b + d),
        ("reg_full_cdp", "eps"): -2 * b / (b + d), ("heavy_nonprivate", "N"): -r_reg,
        ("heavy_label_ldp", "N"): -2 * b * (p - 1) / D, ("heavy_label_ldp", "eps"): -4 * b * (p - 1) / D,
        ("heavy_label_cdp", "eps"): -2 * b * (p - 1) / (p * b + d * (p - 1)),
        ("heavy_full_ldp", "N"): -b * (p - 1) / (p * b + d * (p - 1)),
        ("heavy_full_cdp", "eps"): -2 * b * (p - 1) / (p * b + d * (p - 1)),
    }
    for (name, axis), value in expect.items():
        assert CELLS[name].axes[axis].slope(b, float("nan"), d, p) == pytest.approx(value)
    for name in ("reg_label_cdp", "reg_full_cdp"):
        statements = CELLS[name].statements("eps")
        assert [s.statement for s in statements] == ["Table I / Theorem 8", "Theorem 7"]
        assert statements[1].slope(b, float("nan"), d, p) == pytest.approx(-2 * b / (d + 2 * b))
