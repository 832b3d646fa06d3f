"""Exact expected risk of the ℓ∞ kNN mean (labeldp_sim.papers.table1.knn_exact) against its Monte-Carlo trials.

The Monte-Carlo mean of ``KNNMean.trial`` over fresh instances must agree with
``KNNMean.expected_risks`` at α = 1e-6 and reject a planted 5 % error (the issue's
rule), for LaplaceLabel and NoPrivacy, bounded and heavy labels, d = 1 and 2 (d = 3
slow).  The pieces are checked against independent computations: the sign
averages against the marginal-law code with one bump switched on at a time, the
layer rules against a brute-force rule over the cube, their own refinement and the
homogenised layers, the table's spline against the exact values between its
points, the Beta rule against the moments of log U.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special, stats

from labeldp_sim.privacy.protocols import NoPrivacy
from labeldp_sim.papers.table1 import knn_exact as K
from labeldp_sim.papers.table1.estimators import KNNMean
from labeldp_sim.papers.table1.families import BoundedBump, HeavyTailBump
from labeldp_sim.papers.table1.families.cells import cube_index
from labeldp_sim.papers.table1.families.geometry import COS2
from labeldp_sim.papers.table1.knn_marginal import box_and_boundary_means, radius_for_mass
from labeldp_sim.papers.table1.mechanisms import JointLaplace, LaplaceLabel
from labeldp_sim.papers.table1.points import Point
from labeldp_sim.papers.table1.tuning import Column

Z = stats.norm.isf(0.5e-6)  # two-sided α = 1e-6
PLANTED = 1.05
ETA2 = {d: 0.375 ** d for d in (1, 2, 3)}  # ∫η² / h²: the scale of the tables


def _point(d, N, k, G):
    return Point("knn_exact", "N", d, N, 1.0, N, 1.0, G=G, h=1 / G, in_regime=True, G_est=G, k=k)


def _monte_carlo(family, G, N, k, mechanism, reps, n_test, seed, path="sufficient"):
    """(mean, standard error) of the trial's excess risk over fresh instances, and the exact value."""
    estimator = KNNMean(n_test=n_test)
    point = _point(family.d, N, k, G)
    rng = np.random.default_rng(seed)
    risks = np.array([estimator.trial(family.draw(rng, G), point, mechanism, rng, path)["excess_risk"]
                      for _ in range(reps)])
    exact = estimator.expected_risks(family, G, point, [Column(k, mechanism, 0, 0)])[0]
    return risks.mean(), risks.std(ddof=1) / np.sqrt(reps), exact


BOUNDED = {d: BoundedBump(d=d) for d in (1, 2, 3)}
HEAVY = {d: HeavyTailBump(d=d, tail_level=1.5) for d in (1, 2, 3)}  # labels ±1.5, 0; clipped at 1.2
CASES = [  # (family, G, N, k, mechanism): balls cut by the faces in ~1/4 of the queries; one large ball
    (BOUNDED[1], 4, 2000, 40, LaplaceLabel(1.0, 1.0)),
    (BOUNDED[1], 4, 2000, 40, NoPrivacy()),
    (HEAVY[1], 4, 2000, 40, LaplaceLabel(1.0, 1.2)),
    (HEAVY[1], 4, 2000, 40, NoPrivacy()),
    (BOUNDED[2], 3, 2000, 60, LaplaceLabel(1.0, 1.0)),
    (BOUNDED[2], 3, 2000, 60, NoPrivacy()),
    (HEAVY[2], 3, 2000, 60, LaplaceLabel(1.0, 1.2)),
    (HEAVY[2], 3, 2000, 60, NoPrivacy()),
    (BOUNDED[2], 3, 2000, 1200, LaplaceLabel(0.2, 1.0)),  # U ≈ 0.6 > 1/2: the large-ball rule
]
SLOW_CASES = [
    (BOUNDED[2], 6, 2000, 1200, LaplaceLabel(0.5, 1.0)),  # the large ball where the bumps weigh more
    (BOUNDED[3], 3, 2000, 60, LaplaceLabel(1.0, 1.0)),
    (HEAVY[3], 3, 2000, 60, NoPrivacy()),
    (BOUNDED[3], 3, 2000, 800, NoPrivacy()),  # U ≈ 0.4 > 1/4: the large-ball rule
    (BOUNDED[2], 40, 10 ** 9, 10 ** 8, NoPrivacy()),  # deep: the bias alone, balls of ~3 columns
]


def _check_agreement(mean, se, exact):
    assert se < 0.006 * mean  # precise enough for a planted 5 % error to stand out
    assert abs(mean - exact) <= Z * se, (mean, se, exact)
    assert abs(mean - PLANTED * exact) > Z * se, (mean, se, exact)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_monte_carlo_agrees_and_a_planted_error_is_rejected(case):
    family, G, N, k, mechanism = CASES[case]
    reps = 16 if family.d == 1 else 24
    _check_agreement(*_monte_carlo(family, G, N, k, mechanism, reps, 4096, case))


@pytest.mark.slow
@pytest.mark.parametrize("case", range(len(SLOW_CASES)))
def test_monte_carlo_agrees_in_three_dimensions_and_deeper(case):
    family, G, N, k, mechanism = SLOW_CASES[case]
    _check_agreement(*_monte_carlo(family, G, N, k, mechanism, 30, 4096, 100 + case))


def test_per_sample_trials_agree_too():
    """The reference path (N samples, sorted): many small neighbourhoods keep its spread down."""
    _check_agreement(*_monte_carlo(BOUNDED[1], 8, 8000, 10, LaplaceLabel(1.0, 1.0), 120, 4096, 7, "per_sample"))


@pytest.mark.slow
def test_per_sample_trials_agree_heavy_nonprivate():
    _check_agreement(*_monte_carlo(HEAVY[1], 8, 8000, 10, NoPrivacy(), 200, 4096, 8, "per_sample"))


# ----------------------------------------------------------------------------- the pieces


@pytest.mark.parametrize("d, G", [(1, 4), (2, 3), (3, 2)])
def test_sign_averages_are_those_of_the_marginal_law(d, G):
    """t1..t4 at any query = Σ over bumps of the products of the marginal law's box and face means
    with one bump switched on (E v_j v_l = δ_jl), at interior, face and corner queries."""
    rng = np.random.default_rng(d)
    q = np.vstack([rng.random((4, d)), [[0.01, 0.995, 0.5][:d]], [[0.999, 0.002, 0.03][:d]]])
    for U in (1e-3, 0.05, 0.4, 0.9):
        r = radius_for_mass(q, np.full(len(q), U))
        parts = []
        for j in range(G ** d):
            signs = np.zeros(G ** d)
            signs[j] = 1.0
            inner, face = box_and_boundary_means(SimpleNamespace(G=G, signs=signs, height=1.0), q, r)
            parts.append((inner, face, COS2.values(q, G) * (cube_index(q, G) == j)))
        inner, face, eta = (np.array(p) for p in zip(*parts))
        expected = [np.sum(inner ** 2, 0), np.sum(inner * face, 0), np.sum(inner * eta, 0), np.sum(face * eta, 0)]
        got = K.query_terms(q * G, G, U * G ** d)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=0, atol=1e-12)


def _brute(d, G, rho0, panels):
    """g by the tensor rule over the folded cube with the ball found at every node (any U)."""
    return np.array(K._large_ball(d, G, (2.0 * rho0) ** d, panels=panels))


@pytest.mark.parametrize("rho0", [pytest.param(0.3, marks=pytest.mark.slow), 0.7])
def test_layer_rules_against_a_brute_force_rule(rho0):
    """d = 2, G = 3: the interior + layers against the brute rule (60 panels an axis, error O(n^-2) for
    g1, g3; O(1/n) for g2, g4, whose integrand jumps where a face leaves the cube)."""
    g = K.g_terms(2, 3, rho0)[0] / ETA2[2]
    brute = _brute(2, 3, rho0, 60) / ETA2[2]
    assert np.max(np.abs(g - brute)[[0, 2]]) < 2e-6
    assert np.max(np.abs(g - brute)[[1, 3]]) < 3e-4


@pytest.mark.slow
def test_layer_rules_against_a_brute_force_rule_in_three_dimensions():
    for G, rho0, panels in ((3, 0.5, 24), (5, 1.2, 20)):
        g = K.g_terms(3, G, rho0)[0] / ETA2[3]
        brute = _brute(3, G, rho0, panels) / ETA2[3]
        assert np.max(np.abs(g - brute)[[0, 2]]) < 3e-6
        assert np.max(np.abs(g - brute)[[1, 3]]) < 5e-4


@pytest.mark.parametrize("d, G, rho0", [(2, 40, 3.0), (2, 5, 1.5), (3, 8, 1.0), (3, 40, 5.0)])
def test_layer_rules_are_converged(d, G, rho0, monkeypatch):
    """Doubling every panel moves g by < 1e-6 of ∫η² (the resolved and homogenised layer rules)."""
    coarse = K.g_terms(d, G, rho0)[0]
    monkeypatch.setattr(K, "REFINE", 2)
    assert np.max(np.abs(K.g_terms(d, G, rho0)[0] - coarse)) < 1e-6 * ETA2[d]


@pytest.mark.parametrize("d, G, rho0, c", [(2, 40, 6.5, 2), (2, 40, 8.0, 1), (3, 10, 3.0, 3)])
def test_homogenised_layers_match_the_resolved_ones(d, G, rho0, c, monkeypatch):
    """Above RHO_HOMOGENISED the cut axes' column patterns are averaged: error < 3e-5 of ∫η²."""
    homogenised = K.g_terms(d, G, rho0)[0]
    monkeypatch.setitem(K.RHO_HOMOGENISED, c, 1e9)
    assert np.max(np.abs(K.g_terms(d, G, rho0)[0] - homogenised)) < 3e-5 * ETA2[d]


@pytest.mark.parametrize("d, G", [(1, 5), (1, 1), pytest.param(2, 3, marks=pytest.mark.slow),
                                  pytest.param(3, 10, marks=pytest.mark.slow)])
def test_table_spline_between_its_points(d, G):
    """The spline at the midpoints of its grid against the exact g: < 1e-4 of ∫η² for g1, g3 (weight
    O(1) in the risk), < 5e-3 for g2, g4 (weight 1/k: the face terms)."""
    spline = K.g_table(d, G)
    mids = (spline.x[:-1] + spline.x[1:]) / 2
    U = 1 / (1 + np.exp(-mids))
    err = np.abs(spline(mids) - K.g_terms(d, G, G / 2 * U ** (1 / d))) / ETA2[d]
    assert err[:, [0, 2]].max() < 1e-4
    assert err[:, [1, 3]].max() < 5e-3


def test_small_balls_reach_the_pointwise_limit():
    """Below RHO_MIN the table's first value is taken: g → ∫η² as ρ → 0, within d (2π ρ)²/2."""
    for d in (1, 2, 3):
        g = K.g_terms(d, 7, K.RHO_MIN)[0] / ETA2[d]
        assert np.max(np.abs(g - 1)) < d * (2 * np.pi * K.RHO_MIN) ** 2 / 2


@pytest.mark.parametrize("k, N", [(1, 10), (1, 1000), (7, 1000), (999, 1000), (1000, 1000), (40, 3000),
                                  (1, 10 ** 15), (10 ** 7, 10 ** 15), (3 * 10 ** 14, 10 ** 15)])
def test_beta_rule_moments_of_log_u(k, N):
    """E log U = ψ(k) − ψ(N+1), Var log U = ψ'(k) − ψ'(N+1) for U ~ Beta(k, N−k+1)."""
    s, w = K.beta_log_nodes(k, N)
    mean = w @ s
    assert mean == pytest.approx(special.digamma(k) - special.digamma(N + 1), rel=1e-9, abs=1e-12)
    if N < 10 ** 6 or k < 10 ** 8:  # ψ' of 10^15 cancels: its variance is no reference
        var = special.polygamma(1, k) - special.polygamma(1, N + 1)
        assert w @ (s - mean) ** 2 == pytest.approx(var, rel=1e-8)


# ----------------------------------------------------------------------------- the contract


def test_exact_for_states_its_domain():
    knn = KNNMean()
    assert knn.exact_for(BOUNDED[2], LaplaceLabel(1.0, 1.0)) and knn.exact_for(HEAVY[3], NoPrivacy())
    assert not knn.exact_for(BOUNDED[2], JointLaplace(1.0, 1.0))  # no report moments: a ratio of noisy sums
    assert not KNNMean(metric="euclidean").exact_for(BOUNDED[2], NoPrivacy())  # balls with no closed form
    assert KNNMean(metric="euclidean").exact_for(BOUNDED[1], NoPrivacy())  # d = 1: every norm is |x − x'|


def test_report_moments():
    m = LaplaceLabel(0.5, 2.0).report_moments()
    assert (m.T, m.a, m.b2, m.b1) == (2.0, 1.0, 0.0, 1.0) and m.b0 == pytest.approx(2 * (2 * 2.0 / 0.5) ** 2)
    m = NoPrivacy().report_moments()
    assert (m.T, m.b0) == (None, 0.0)


@pytest.mark.parametrize("d, G", [(1, 10 ** 6), (2, 4096), (3, 1024)])
def test_limits_at_depth(d, G, monkeypatch):
    """N = 10^15 at the G caps: k = 1 takes one label (risk E Var(Y|x) + noise = T² + σ² − ∫η²,
    the ball far below a bump), k = N the global mean (risk ∫η² + (T² + σ²)/N, up to the mean's
    own square), each to 1e-9."""
    full = K.table_grid  # its ends only: the small-ball value and U = 1 − TOP_GAP
    monkeypatch.setattr(K, "table_grid", lambda d_, G_: full(d_, G_)[[0, 1, -2, -1]])
    K.g_table.cache_clear()
    try:
        family, mechanism, N = BoundedBump(d=d), LaplaceLabel(1e-3, 1.0), 10 ** 15
        noise = 2 * (2 / 1e-3) ** 2
        eta2 = G ** -2.0 * ETA2[d]
        one, everything = KNNMean().expected_risks(family, G, _point(d, N, 1, G),
                                                   [Column(1, mechanism, 0, 0), Column(N, mechanism, 0, 0)])
        assert one == pytest.approx(1 + noise - eta2, rel=1e-9)
        assert everything == pytest.approx(eta2 + (1 + noise) / N, rel=2e-6)
    finally:
        K.g_table.cache_clear()
