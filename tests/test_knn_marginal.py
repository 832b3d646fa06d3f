"""kNN estimates from their exact marginal law (SPEC §9) against the per-sample reference path."""

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.papers.table1.points import Point
from labeldp_sim.privacy.protocols import NoPrivacy
from labeldp_sim.papers.table1.estimators import KNNMean, knn_mean
from labeldp_sim.papers.table1.families import BoundedBump, BumpSigns, HeavyTailBump
from labeldp_sim.papers.table1.knn_marginal import (box_and_boundary_means, draw_knn_estimates, radius_for_mass,
                                             region_mass)
from labeldp_sim.papers.table1.mechanisms import LaplaceLabel
from labeldp_sim.papers.table1.sweep import run_trial

ALPHA = 1e-6  # the level: a wrong law must be rejected, a right one essentially never


def _queries(d, rng):
    """Interior queries, and queries near faces and corners (where the ball is cut by the cube)."""
    near = np.array([[0.01, 0.995, 0.5][:d], [0.999, 0.002, 0.03][:d]])
    return np.vstack([rng.random((6, d)), near])


@pytest.mark.parametrize("d", [1, 2, 3])
def test_radius_inverts_the_region_mass(d):
    rng = np.random.default_rng(d)
    q = _queries(d, rng)
    for mass in (1e-12, 1e-6, 1e-3, 0.05, 0.4, 0.97):
        r = radius_for_mass(q, np.full(len(q), mass))
        assert np.allclose(region_mass(q, r), mass, rtol=1e-12, atol=0)


def _gauss_integral(instance, lo, hi, fixed_axis=None, fixed_value=None, nodes=24):
    """∫ η over the box [lo, hi] (or over its face at axis = value) by Gauss–Legendre per bump column.

    η is a product of cos² within each column, so a high-order rule on each
    column piece is exact to rounding: an independent check of the closed form.
    """
    G = instance.G
    x0, w0 = np.polynomial.legendre.leggauss(nodes)
    axes_x, axes_w = [], []
    for i in range(len(lo)):
        if i == fixed_axis:
            axes_x.append(np.array([fixed_value]))
            axes_w.append(np.array([1.0]))
            continue
        cuts = np.unique(np.concatenate([[lo[i], hi[i]], np.arange(1, G) / G]))
        cuts = cuts[(cuts >= lo[i]) & (cuts <= hi[i])]
        xs, ws = [], []
        for a, b in zip(cuts[:-1], cuts[1:]):
            xs.append((a + b) / 2 + (b - a) / 2 * x0)
            ws.append((b - a) / 2 * w0)
        axes_x.append(np.concatenate(xs))
        axes_w.append(np.concatenate(ws))
    grid = np.array(np.meshgrid(*axes_x, indexing="ij")).reshape(len(lo), -1).T
    weight = np.prod(np.array(np.meshgrid(*axes_w, indexing="ij")).reshape(len(lo), -1), axis=0)
    return float(np.sum(instance.eta(grid) * weight))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_region_and_boundary_means_are_exact(d):
    rng = np.random.default_rng(10 + d)
    instance = BoundedBump(d=d).draw(rng, 5)
    q = _queries(d, rng)
    r = rng.uniform(0.02, 0.3, size=len(q))
    mean_in, mean_boundary = box_and_boundary_means(instance, q, r)
    for j in range(len(q)):
        lo, hi = np.maximum(q[j] - r[j], 0), np.minimum(q[j] + r[j], 1)
        assert mean_in[j] == pytest.approx(_gauss_integral(instance, lo, hi) / np.prod(hi - lo), abs=1e-12)
        total, area = 0.0, 0.0
        for i in range(d):
            other = np.prod(np.delete(hi - lo, i))
            for value in (q[j, i] + r[j], q[j, i] - r[j]):
                if 0 < value < 1:
                    total += _gauss_integral(instance, lo, hi, i, value)
                    area += other
        assert mean_boundary[j] == pytest.approx(total / area, abs=1e-12)


CASES = [  # (family, d, G, N, k)
    (BoundedBump(d=1), 1, 4, 3000, 60),
    (BoundedBump(d=2), 2, 3, 3000, 40),
    (BoundedBump(d=3), 3, 3, 2000, 30),
    (HeavyTailBump(d=2, tail_level=1.5), 2, 3, 3000, 40),
]


def _both_paths(family, d, G, N, k, mechanism, reps, seed, marginal_k=None):
    """Estimates at fixed queries of one fixed instance: per-sample rows, marginal-law rows."""
    rng = np.random.default_rng(seed)
    instance = family.draw(rng, G)
    q = _queries(d, rng)[[0, 1, 6, 7]]
    per_sample = np.array([knn_mean(*_reports(instance, N, mechanism, rng), q, k) for _ in range(reps)])
    marginal = np.array([draw_knn_estimates(instance, q, N, marginal_k or k, mechanism, rng)
                         for _ in range(reps)])
    return per_sample, marginal


def _reports(instance, N, mechanism, rng):
    X, y = instance.sample(N, rng)
    return X, mechanism.report(y, rng)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_per_query_estimates_agree_in_law_with_the_per_sample_path(case):
    family, d, G, N, k = CASES[case]
    T = 1.0 if family.labels == "bounded" else 1.2  # the heavy case clips inside its ±1.5 labels
    per_sample, marginal = _both_paths(family, d, G, N, k, LaplaceLabel(4.0, T), 1500, case)
    for j in range(per_sample.shape[1]):
        assert stats.ks_2samp(per_sample[:, j], marginal[:, j]).pvalue > ALPHA


def test_agreement_test_has_power():
    """A marginal law with k off by a factor 2 is rejected at the same level and sample size."""
    family, d, G, N, k = CASES[1]
    per_sample, marginal = _both_paths(family, d, G, N, k, LaplaceLabel(4.0, 1.0), 1500, 1,
                                       marginal_k=2 * k)
    assert min(stats.ks_2samp(per_sample[:, j], marginal[:, j]).pvalue for j in range(4)) < ALPHA


@pytest.mark.parametrize("d", [1, 2])
def test_mean_risk_is_the_same_on_both_paths(d):
    """Same mean risk (a Welch z-test at ALPHA); the marginal path's per-trial spread is smaller."""
    family = BoundedBump(d=d)
    G, N, k = 4, 4000, 80
    point = Point("knn", "N", d, N, 1.0, N, 1.0, G=G, h=1 / G, in_regime=True, G_est=G, k=k)
    est, mech = KNNMean(n_test=64), LaplaceLabel(1.0, 1.0)
    risks = {path: np.array([run_trial(family, mech, est, point, r, 7, path)["excess_risk"]
                             for r in range(300)]) for path in ("per_sample", "sufficient")}
    a, b = risks["per_sample"], risks["sufficient"]
    z = (a.mean() - b.mean()) / np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    assert abs(z) < stats.norm.isf(ALPHA / 2)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_a_trial_at_n_1e12_looks_at_a_few_bumps_only(d):
    """The cost of a marginal-law trial does not grow with N: it draws a few signs per query."""
    N, G, k = 10 ** 12, {1: 6300, 2: 707, 3: 190}[d], {1: 158_740_105, 2: 2_000_000, 3: 144_956}[d]
    point = Point("knn", "N", d, N, 0.5, N, 0.5, G=G, h=1 / G, in_regime=True, G_est=G, k=k)
    rng = np.random.default_rng(d)
    instance = BoundedBump(d=d).draw(rng, G)
    result = KNNMean(n_test=256).trial(instance, point, LaplaceLabel(0.5, 1.0), rng, "sufficient")
    assert 0 < result["excess_risk"] < 1e-2
    if G ** d > BumpSigns.EAGER:
        assert len(instance.signs._keys) <= 256 * 3 ** d


def test_lazy_signs_are_fair_coins_and_stay_fixed():
    signs = BumpSigns(10 ** 9, np.random.default_rng(0))
    idx = np.random.default_rng(1).integers(0, 10 ** 9, size=20_000)
    first = signs[idx]
    assert np.array_equal(signs[idx[::-1]], first[::-1])  # a sign, once drawn, does not change
    assert set(np.unique(first)) == {-1.0, 1.0}
    assert abs(first.mean()) < 5 / np.sqrt(len(first))


def test_no_privacy_marginal_estimate_is_the_region_mean_in_expectation():
    """Without noise E η̂(x) = ((k−1) E η̄_in + E η̄_∂)/k: a check of the label step alone."""
    rng = np.random.default_rng(3)
    instance = BoundedBump(d=2).draw(rng, 3)
    q = np.array([[0.3, 0.6]])
    N, k = 500, 25
    est = np.array([draw_knn_estimates(instance, q, N, k, NoPrivacy(), rng)[0] for _ in range(4000)])
    reference = np.array([knn_mean(*instance.sample(N, rng), q, k)[0] for _ in range(4000)])
    se = np.sqrt(est.var() / len(est) + reference.var() / len(reference))
    assert abs(est.mean() - reference.mean()) < stats.norm.isf(ALPHA / 2) * se


@pytest.mark.parametrize("metric", ["chebyshev", "euclidean"])
def test_per_sample_metric_is_used(metric):
    rng = np.random.default_rng(5)
    X, Z, q = rng.random((500, 2)), rng.standard_normal(500), rng.random((20, 2))
    order = 1 if metric == "chebyshev" else 2
    dist = (np.max(np.abs(q[:, None] - X[None]), axis=2) if order == 1
            else np.linalg.norm(q[:, None] - X[None], axis=2))
    brute = Z[np.argsort(dist, axis=1)[:, :7]].mean(axis=1)
    assert np.allclose(knn_mean(X, Z, q, 7, metric), brute)


def test_euclidean_knn_has_no_marginal_path():
    assert KNNMean(metric="chebyshev").supports_sufficient
    assert not KNNMean(metric="euclidean").supports_sufficient
