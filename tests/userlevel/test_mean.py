"""User-level LDP mean estimation (papers/003): paths, closed forms, regimes, privacy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.papers.userlevel.data import UserValues, draw_users
from labeldp_sim.papers.userlevel.families import FAMILIES, FixedSign, Spike, Thm2Hard, Thm6Hard, Thm7Hard
from labeldp_sim.papers.userlevel.mean import (ESTIMATORS, Algorithm1, Algorithm2, HeavyTailed, ItemLevel, KashinBasis,
                                        KashinL2, NaiveLaplace, OneSample, TwoStageTuning, algorithm2_plan,
                                        twostage)
from labeldp_sim.papers.userlevel.mechanisms import (BinHistogram, ClippedMean, ItemLevelLaplace, MappedSamples,
                                              OneSampleLaplace, UserRandomizer, coordinate)


def _run(est, fam, n, m, eps, d, trials, seed, path):
    rng = np.random.default_rng(seed)
    return [est.trial(fam, n, m, eps, d, rng, path=path) for _ in range(trials)]


def _mean_se(x):
    x = np.asarray(x, dtype=float)
    return x.mean(), x.std(ddof=1) / math.sqrt(len(x))


# --------------------------------------------------------------------------- (a) the two paths agree in law

LAW_CASES = [
    ("fixed", 1, "alg1"), ("fixed", 1, "one_sample"),
    ("thm2", 1, "alg1"), ("thm2", 1, "naive"),
    ("spike", 1, "heavy"), ("spike", 1, "item"),
    ("thm6", 4, "kashin"), ("thm6", 4, "alg2"),
    ("thm7", 4, "alg2"), ("thm7", 4, "one_sample"),
]


@pytest.mark.parametrize("family,d,estimator", LAW_CASES)
def test_paths_agree_in_law(family, d, estimator):
    fam, est = FAMILIES[family](), ESTIMATORS[estimator]()
    n, m, eps = 2048, 16, 1.0
    trials = 600 if d == 1 else 300  # 1-D trials cost ~1 ms: buy power where it is cheap
    a = _run(est, fam, n, m, eps, d, trials, 11, "per_user")
    b = _run(est, fam, n, m, eps, d, trials, 12, "sufficient")
    for key in ("error", "mu_hat_1"):
        xa, xb = [r[key] for r in a], [r[key] for r in b]
        (ma, sa), (mb, sb) = _mean_se(xa), _mean_se(xb)
        assert abs(ma - mb) < 4 * math.hypot(sa, sb), (key, ma, mb, sa, sb)
        assert stats.ks_2samp(xa, xb).pvalue > 1e-3, key


def test_group_multiset_agrees_in_law():
    """The sufficient group draw (Multinomial over Bin(m, π) users) matches literal samples."""
    rng = np.random.default_rng(3)
    per = [draw_users(rng, 200, 9, [1.0, -1.0], [0.6, 0.4], "per_user") for _ in range(400)]
    suf = [draw_users(rng, 200, 9, [1.0, -1.0], [0.6, 0.4], "sufficient") for _ in range(400)]
    for f in (lambda v: v.counts @ v.means(), lambda v: v.counts @ (v.means() > 0.5)):
        xa, xb = [f(v) for v in per], [f(v) for v in suf]
        assert stats.ks_2samp(xa, xb).pvalue > 1e-3
    assert all(v.n == 200 and v.m == 9 for v in per + suf)


# --------------------------------------------------------------------------- (b) closed form (55)


def test_algorithm1_mse_matches_closed_form():
    n, m, eps, s, trials = 2 ** 13, 1024, 1.0, 0.3, 1500
    res = _run(Algorithm1(), FixedSign(s=s), n, m, eps, 1, trials, 5, "sufficient")
    assert all(r["stage1_ok"] and r["in_regime"] for r in res)
    tuning = TwoStageTuning.theorem1(1.0, m, n)
    lam = (3 * tuning.h + 2 * tuning.delta) / eps
    closed = (2 / n) * ((1 - s ** 2) / m + 2 * lam ** 2)  # Var Y = D²(1−s²)/m
    mean, se = _mean_se([r["error"] for r in res])
    assert abs(mean - closed) < 4 * se, (mean, closed, se)


# --------------------------------------------------------------------------- (c) Kashin


@pytest.mark.parametrize("d", [1, 4, 16])
def test_kashin_reconstructs_with_small_sup_norm(d):
    basis = KashinBasis(d, seed=0)
    rng = np.random.default_rng(d)
    x = np.vstack([rng.standard_normal((500, d)) * rng.exponential(1.0, (500, 1)),
                   np.sign(rng.standard_normal((100, d))), basis.U / np.linalg.norm(basis.U, axis=1)[:, None]])
    a = basis.coefficients(x)
    assert np.abs(basis.reconstruct(a) - x).max() < 1e-9
    norms = np.linalg.norm(x, axis=1)
    assert np.all(np.abs(a).max(axis=1) <= basis.K / math.sqrt(d) * norms + 1e-12)
    assert np.allclose(basis.U.T @ basis.U, np.eye(d))
    assert basis.K < 3.0  # SPEC §2: K ≈ 2.4 (here with a 10% margin)


def test_kashin_estimator_uses_coefficient_means():
    """θ = E a(X) ≠ U μ (a is nonlinear) but Uᵀθ = μ, and stage I is checked on θ."""
    inst = Thm6Hard().instance(np.random.default_rng(0), 2 ** 14, 64, 1.0, 8)
    basis = KashinBasis(8)
    theta = inst.expect(basis.coefficients)
    assert np.allclose(basis.reconstruct(theta[None])[0], inst.mu, atol=1e-12)


# --------------------------------------------------------------------------- (d) protocols


def test_abstract_randomizer_cannot_be_instantiated():
    with pytest.raises(TypeError):
        UserRandomizer(1.0)

    class HalfWritten(UserRandomizer):
        def law(self, x_user):
            return np.asarray(x_user)[None], np.ones(1)

    with pytest.raises(TypeError):
        HalfWritten(1.0)


def _worst_pairs(m, D, d=1):
    """Neighbouring data sets (one user's whole data set replaced) that hit every clip."""
    shape = (m,) if d == 1 else (m, d)
    top, bottom = np.full(shape, D), np.full(shape, -D)
    mixed = np.where(np.arange(m).reshape((m,) + (1,) * (len(shape) - 1)) % 2 == 0, D, -D) * np.ones(shape)
    return [(top, bottom), (top, mixed), (mixed, bottom)]


@pytest.mark.parametrize("mech,d", [
    (BinHistogram(0.7, -1.0, 0.5, 4), 1),
    (BinHistogram(0.7, -1.0, 0.5, 4, pre_clip=1.0), 1),
    (ClippedMean(0.7, -0.2, 0.4), 1),
    (ClippedMean(0.7, [-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]), 3),
    (ItemLevelLaplace(0.7, 1.0, 8, 2), 2),
    (OneSampleLaplace(0.7, 1.0, 2), 2),
    (MappedSamples(ClippedMean(0.7, -0.5, 0.5), coordinate(1), linear=True), 3),
])
def test_randomizers_are_user_level_eps_ldp(mech, d):
    assert mech.epsilon_bound == pytest.approx(mech.epsilon)
    rng = np.random.default_rng(0)
    worst = 0.0
    for x, y in _worst_pairs(8, 1.0, d):
        worst = max(worst, mech.privacy_loss(x, y))
        z = mech.randomize(x, rng)
        assert z.shape == mech.law(x)[0].shape[1:]
    assert worst <= mech.epsilon + 1e-12
    assert worst >= 0.5 * mech.epsilon  # the pairs do move the report


def test_release_sum_same_clip_on_both_paths():
    """Noise-free part: counts·clip(atoms) equals the per-user sum of clipped user means."""
    rng = np.random.default_rng(1)
    per = draw_users(rng, 300, 5, [2.0, -1.0, 0.5], [0.2, 0.3, 0.5], "per_user")
    mech = ClippedMean(1e9, -0.3, 0.6)  # ε huge: noise negligible
    direct = np.clip(per.means(), -0.3, 0.6).sum()
    assert mech.release_sum(per, rng)[0] == pytest.approx(direct, abs=1e-5)
    collapsed = UserValues.from_statistics(per.means())
    assert mech.release_sum(collapsed, rng)[0] == pytest.approx(direct, abs=1e-5)


# --------------------------------------------------------------------------- (e) bad parameters


@pytest.mark.parametrize("make", [
    lambda: Algorithm1(D=-1.0), lambda: Algorithm1(min_stage1=0), lambda: HeavyTailed(p=1.5),
    lambda: HeavyTailed(M_p=-2.0), lambda: KashinL2(K=0.0), lambda: KashinL2(basis_seed=-1),
    lambda: Algorithm2(c1=float("nan")), lambda: NaiveLaplace(D="1"), lambda: ItemLevel(D=0),
    lambda: OneSample(D=float("inf")),
    lambda: FixedSign(s=1.5), lambda: FixedSign(D=0), lambda: Thm2Hard(D=-1), lambda: Spike(p=1.0),
    lambda: Spike(M_p=0), lambda: ClippedMean(0.0, -1, 1), lambda: ClippedMean(1.0, 1, -1),
    lambda: BinHistogram(1.0, -1, 0.0, 3), lambda: BinHistogram(-1.0, -1, 0.5, 3),
    lambda: ItemLevelLaplace(1.0, 1.0, 0),
    lambda: Algorithm1().trial(FixedSign(), 100, 16, 1.0, 2, np.random.default_rng(0)),
    lambda: Algorithm1().trial(FixedSign(), 100, 16, 0.0, 1, np.random.default_rng(0)),
    lambda: Algorithm1().trial(FixedSign(), 100, 16, 1.0, 1, np.random.default_rng(0), path="exact"),
    lambda: Algorithm2().trial(Thm7Hard(), 1000, 16, 1.0, 6, np.random.default_rng(0)),
])
def test_bad_parameters_raise_config_error(make):
    with pytest.raises(ConfigError) as info:
        make()
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- (f) stage I failure


def test_stage1_fails_detectably_with_tiny_groups():
    res = _run(Algorithm1(), FixedSign(), 64, 4096, 0.5, 1, 60, 2, "sufficient")
    assert not any(r["in_regime"] for r in res)
    assert sum(r["stage1_ok"] is False for r in res) >= 5
    big = _run(Algorithm1(), FixedSign(), 2 ** 13, 4096, 1.0, 1, 20, 2, "sufficient")
    assert all(r["in_regime"] and r["stage1_ok"] for r in big)


def test_algorithm2_flags_every_coordinate():
    res = _run(Algorithm2(), Thm7Hard(), 256, 256, 0.5, 8, 10, 4, "sufficient")
    assert all(r["groups"] == 8 and r["regime"] == "high" and not r["in_regime"] for r in res)
    assert any(r["stage1_ok"] is False for r in res)


# --------------------------------------------------------------------------- (g) m-slopes


def test_m_slopes_algorithm1_falls_item_level_grows():
    n, eps, trials = 2 ** 13, 1.0, 200
    err = {}
    for name, est in (("alg1", Algorithm1()), ("item", ItemLevel())):
        for m in (64, 1024):
            err[name, m] = _mean_se([r["error"] for r in _run(est, FixedSign(), n, m, eps, 1, trials, m, "sufficient")])
    for lo, hi in ((("alg1", 1024), ("alg1", 64)), (("item", 64), ("item", 1024))):
        (a, sa), (b, sb) = err[lo], err[hi]
        assert b - a > 4 * math.hypot(sa, sb), (lo, hi, err)


# --------------------------------------------------------------------------- structure


def test_algorithm2_plan_covers_every_coordinate_once():
    n = 2 ** 17
    for dim in (1, 5, 8, 16):
        for eps in (0.3, 1.0, 1.5, 2.0, 3.7, 7.0, 50.0, 1e4):
            regime, groups, eps_inst = algorithm2_plan(dim, eps, n)
            coords = sorted(c for g in groups for c in g)
            assert coords == list(range(dim))
            assert max(len(g) for g in groups) * eps_inst <= eps + 1e-12  # basic composition
            assert regime == ("high" if eps < 1 else "medium" if eps < dim * math.log(n) else "low")


def test_twostage_on_user_statistics():
    """The reusable core on ±1 user means given directly (as learning.py uses it)."""
    rng = np.random.default_rng(7)
    m, n = 256, 2 ** 13
    means = lambda k: 2 * rng.binomial(m, 0.7, size=k) / m - 1  # noqa: E731
    est, ok = twostage(UserValues.from_statistics(means(n // 2)), UserValues.from_statistics(means(n // 2)),
                       1.0, m, n, 1.0, rng, mu=0.4)
    assert ok is True and abs(est - 0.4) < 0.1
    est2, ok2 = twostage(draw_users(rng, n // 2, m, [1.0, -1.0], [0.7, 0.3], "sufficient"),
                         draw_users(rng, n // 2, m, [1.0, -1.0], [0.7, 0.3], "sufficient"), 1.0, m, n, 1.0, rng)
    assert ok2 is None and abs(est2 - 0.4) < 0.1


def test_same_seed_same_numbers():
    for est, fam, d in ((KashinL2(), Thm6Hard(), 4), (HeavyTailed(p=3.0), Spike(p=3.0), 1)):
        a = _run(est, fam, 4096, 32, 2.0, d, 3, 9, "sufficient")
        b = _run(est, fam, 4096, 32, 2.0, d, 3, 9, "sufficient")
        assert a == b


def test_registries():
    assert set(FAMILIES) == {"fixed", "thm2", "thm6", "thm7", "spike"}
    assert set(ESTIMATORS) == {"alg1", "heavy", "alg2", "kashin", "item", "one_sample", "naive", "item_ldp", "heavy_coord"}
    assert all(ESTIMATORS[k].task == "mean" for k in ESTIMATORS)
    assert not FAMILIES["fixed"].minimax_hard and all(FAMILIES[k].minimax_hard for k in FAMILIES if k != "fixed")
