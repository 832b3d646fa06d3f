"""User-level LDP learning (papers/003, Algorithms 3-5): paths, exact risks, Hadamard coding, classes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.papers.userlevel.learning import (ESTIMATORS, FAMILIES, Algorithm3, Algorithm4, Algorithm5, CubeMoments,
                                            LinearMargin, QuadraticSO, SineRegression, Thm10Hard, Thm12Hard,
                                            box_radial_integral, cube_index, excess_risk, hadamard_decode,
                                            hadamard_encode, hadamard_matrix, regression_risk)


def _mean_se(x):
    x = np.asarray(x, dtype=float)
    return x.mean(), x.std(ddof=1) / math.sqrt(len(x))


def _trials(est, fam, n, m, eps, d, trials, seed, path):
    rng = np.random.default_rng(seed)
    return [est.trial(fam, n, m, eps, d, rng, path=path) for _ in range(trials)]


# --------------------------------------------------------------------------- (a) the two paths agree in law

LAW_CASES = [(Algorithm4(), LinearMargin(), ("error", "q_hat_1")),
             (Algorithm5(), SineRegression(), ("error", "q_hat_1", "p_hat_1"))]


@pytest.mark.parametrize("est,fam,keys", LAW_CASES, ids=["alg4", "alg5"])
def test_paths_agree_in_law(est, fam, keys):
    n, m, eps, d, trials = 4096, 16, 1.0, 1, 300
    a = _trials(est, fam, n, m, eps, d, trials, 21, "per_user")
    b = _trials(est, fam, n, m, eps, d, trials, 22, "sufficient")
    assert a[0]["K"] >= 2 and a[0]["K"] == b[0]["K"]
    for key in keys:
        xa, xb = [r[key] for r in a], [r[key] for r in b]
        (ma, sa), (mb, sb) = _mean_se(xa), _mean_se(xb)
        assert abs(ma - mb) < 4 * math.hypot(sa, sb), (key, ma, mb, sa, sb)
        assert stats.ks_2samp(xa, xb).pvalue > 1e-3, key


def test_paths_agree_in_law_several_coordinates_per_group():
    """ε = 2: groups run two Hadamard coordinates on the same users (joint law of their statistics)."""
    est, fam = Algorithm4(l=0.25), LinearMargin()
    a = _trials(est, fam, 2048, 16, 2.0, 1, 200, 31, "per_user")
    b = _trials(est, fam, 2048, 16, 2.0, 1, 200, 32, "sufficient")
    assert a[0]["groups"] == 2 and a[0]["K"] == 4
    for key in ("q_hat_1", "error"):
        (ma, sa), (mb, sb) = _mean_se([r[key] for r in a]), _mean_se([r[key] for r in b])
        assert abs(ma - mb) < 4 * math.hypot(sa, sb), (key, ma, mb, sa, sb)


def test_same_seed_same_numbers():
    for est, fam, d in ((Algorithm4(), LinearMargin(), 1), (Algorithm5(), Thm12Hard(), 1),
                        (Algorithm4(), Thm10Hard(), 1), (Algorithm3(), QuadraticSO(), 2)):
        for path in ("sufficient", "per_user"):
            a = est.trial(fam, 2048, 16, 1.0, d, np.random.default_rng(5), path=path)
            b = est.trial(fam, 2048, 16, 1.0, d, np.random.default_rng(5), path=path)
            assert a["error"] == b["error"]


# --------------------------------------------------------------------------- (b) exact risks vs Monte Carlo


# (family, d, estimator cubes per axis, n): small n gives coarse bumps and risks well above the MC noise;
# Thm 10 at n = 2^12, m = 16 has a perturbed block smaller than [0, 1]^d, so the ramp is exercised too.
RISK_CASES = [(LinearMargin(), 1, 7, 64), (SineRegression(), 1, 5, 64), (Thm10Hard(), 1, 9, 4096),
              (Thm10Hard(), 2, 5, 4096), (Thm12Hard(), 1, 6, 64), (Thm12Hard(), 2, 3, 64)]


@pytest.mark.parametrize("fam,d,B_axis,n", RISK_CASES, ids=[f"{f.name}-d{d}" for f, d, _, _ in RISK_CASES])
def test_exact_risks_match_monte_carlo(fam, d, B_axis, n):
    rng = np.random.default_rng(7)
    inst = fam.instance(rng, n, 16 if n > 64 else 4, 1.0, d)
    if fam.name == "thm10":
        assert inst.params["block_side"] < 1 and inst.params["perturbed"] < inst.params["cubes"]
    mom = inst.moments(B_axis)
    B = B_axis ** d
    assert mom.B == B and np.isclose(mom.p.sum(), 1.0)
    assert np.allclose(mom.pos - mom.neg, mom.q) and np.all(mom.pos >= -1e-15) and np.all(mom.neg >= -1e-15)
    signs = np.where(rng.random(B) < 0.5, -1.0, 1.0)  # a fixed cube classifier
    eta_hat = rng.uniform(-0.5, 0.5, B)  # a fixed cube regression function
    x, y = inst.sample(rng, 1_000_000)
    eta = inst.eta(x)
    cube = cube_index(x, B_axis)
    # Excess risk of the classifier: paired difference of its 0-1 loss and the Bayes rule's.
    loss = (signs[cube] != y).astype(float) - (np.where(eta >= 0, 1.0, -1.0) != y)
    mc, se = _mean_se(loss)
    exact = excess_risk(signs, mom)
    assert abs(mc - exact) < 4 * se + 1e-12, (mc, exact, se)
    # Regression risk and the per-cube integrals.
    mc, se = _mean_se((eta_hat[cube] - eta) ** 2)
    assert abs(mc - regression_risk(eta_hat, mom)) < 4 * se, (mc, regression_risk(eta_hat, mom), se)
    for key, vals in (("q", eta), ("sq", eta ** 2)):
        got = np.bincount(cube, weights=vals, minlength=B) / len(x)
        se = np.sqrt(np.bincount(cube, weights=vals ** 2, minlength=B) / len(x) / len(x))
        assert np.all(np.abs(got - getattr(mom, key)) < 5 * se + 1e-9), key


def test_excess_risk_is_zero_for_bayes_signs_when_eta_has_one_sign_per_cube():
    inst = LinearMargin(0.5, 0.5).instance(np.random.default_rng(0), 100, 4, 1.0, 1)
    mom = inst.moments(4)  # x0 = 0.5 on a cube edge
    assert excess_risk(mom.q, mom) == 0.0
    assert excess_risk(-mom.q, mom) == pytest.approx(0.25)  # ∫|x − ½| over [0, 1]
    assert regression_risk(mom.q / mom.p, mom) == pytest.approx(1 / (12 * 16))  # within-cube variance l²/12


def test_box_integral_whole_bump_and_monte_carlo():
    # Whole bump: ∫(½ − ||u||∞)^p du = d 2^{−p} B(d, p + 1).
    for d in (1, 2, 3):
        for p in (0.5, 1.0, 2.0):
            whole = box_radial_integral(-0.5 * np.ones(d), 0.5 * np.ones(d), np.zeros(d), -np.ones(d), np.zeros(d),
                                        np.ones(d), 0.0, 0.5, "bump", p)
            beta_fn = math.exp(math.lgamma(d) + math.lgamma(p + 1) - math.lgamma(d + p + 1))
            assert whole == pytest.approx(d * 2 ** -p * beta_fn, rel=1e-10)
    # A partial box, and the ramp, against Monte Carlo.
    rng = np.random.default_rng(1)
    lo, hi = np.array([-0.4, 0.1]), np.array([0.2, 0.45])
    u = lo + (hi - lo) * rng.random((400_000, 2))
    vals = np.maximum(0.5 - np.abs(u).max(axis=1), 0) ** 0.7 * np.prod(hi - lo)
    mc, se = _mean_se(vals)
    got = box_radial_integral(lo, hi, np.zeros(2), -np.ones(2), np.zeros(2), np.ones(2), 0.0, 0.5, "bump", 0.7)
    assert abs(got - mc) < 4 * se
    A, rho = 0.3, 0.25
    lo, hi = np.array([0.1, 0.2]), np.array([0.9, 0.6])
    x = lo + (hi - lo) * rng.random((400_000, 2))
    vals = np.minimum(np.maximum(x - A, 0).max(axis=1), rho) ** 1.5 * np.prod(hi - lo)
    mc, se = _mean_se(vals)
    got = box_radial_integral(lo, hi, np.zeros(2), np.zeros(2), np.full(2, A), np.ones(2), 0.0, 0.6, "ramp", 1.5,
                              rho)
    assert abs(got - mc) < 4 * se


# --------------------------------------------------------------------------- (c) Hadamard coding


def test_hadamard_decodes_exactly():
    rng = np.random.default_rng(2)
    for K in (1, 2, 8, 64):
        H = hadamard_matrix(K)
        assert np.array_equal(H, H.T) and np.array_equal(H @ H, K * np.eye(K))
        q = rng.standard_normal(K)
        assert np.allclose(hadamard_decode(hadamard_encode(q)), q, atol=1e-13)
    # With a family: E U_k = Q_k = (H q)_k, and decoding the exact Q gives back every cube's q.
    inst = SineRegression().instance(rng, 100, 4, 1.0, 1)
    mom = inst.moments(11)
    q = np.concatenate([mom.q, np.zeros(16 - 11)])
    Q = hadamard_encode(q)
    H = hadamard_matrix(16)
    x, y = inst.sample(rng, 400_000)
    U = y[:, None] * H[:, cube_index(x, 11)].T  # U_jk = Y_j H_K[k, cube(X_j)] (136)
    assert np.all(np.abs(U.mean(axis=0) - Q) < 5 * U.std(axis=0) / math.sqrt(len(x)))
    assert np.allclose(hadamard_decode(Q)[:11], mom.q, atol=1e-14)
    assert np.allclose(hadamard_decode(Q)[11:], 0.0, atol=1e-14)


def test_noiseless_limit_recovers_signs():
    """Huge ε and n: Algorithm 4's q̂ matches q, so the classifier is the best cube classifier."""
    out = Algorithm4(l=0.125).trial(LinearMargin(), 2 ** 16, 4096, 1e4, 1, np.random.default_rng(3))
    assert out["regime"] == "low" and out["stage1_ok"]
    assert abs(out["q_hat_1"] - out["q_1"]) < 1e-3 and out["sign_errors"] == 0


# --------------------------------------------------------------------------- (d) SO


def test_algorithm3_error_decreases_with_n():
    est, fam, m, trials = Algorithm3(), QuadraticSO(), 256, 16
    small = [r["error"] for r in _trials(est, fam, 2 ** 13, m, 1.0, 4, trials, 41, "sufficient")]
    big = _trials(est, fam, 2 ** 17, m, 1.0, 4, trials, 42, "sufficient")
    (ms, ss), (mb, sb) = _mean_se(small), _mean_se([r["error"] for r in big])
    assert ms - mb > 3 * math.hypot(ss, sb), (ms, mb, ss, sb)
    r = big[0]
    assert r["t0"] == math.ceil(math.log(2 ** 17 * m) / 0.5) and r["groups"] == r["t0"] * 8
    assert set(r) >= {"error", "stage1_ok", "in_regime", "groups", "t0", "lr"}


def test_algorithm3_paths_and_linf():
    est = Algorithm3(mean="linf")
    a = [r["error"] for r in _trials(est, QuadraticSO(), 4096, 16, 1.0, 2, 150, 51, "per_user")]
    b = [r["error"] for r in _trials(est, QuadraticSO(), 4096, 16, 1.0, 2, 150, 52, "sufficient")]
    (ma, sa), (mb, sb) = _mean_se(a), _mean_se(b)
    assert abs(ma - mb) < 4 * math.hypot(sa, sb), (ma, mb, sa, sb)


# --------------------------------------------------------------------------- (e) bad arguments


BAD = [(Algorithm4, {"c_l": -1}), (Algorithm4, {"beta": 2.0}), (Algorithm4, {"l": 0.0}), (Algorithm4, {"c2": "x"}),
       (Algorithm5, {"T": 0}), (Algorithm5, {"min_stage1": -3}), (Algorithm3, {"mean": "l2"}),
       (Algorithm3, {"lr": 0}), (Algorithm3, {"t0": 0}), (Algorithm3, {"t0": 2.5}), (Algorithm3, {"basis_seed": -1}),
       (Thm10Hard, {"gamma": 2.0}), (Thm10Hard, {"beta": 1.5}), (Thm10Hard, {"rho": 1.0}), (Thm10Hard, {"C_K": 0}),
       (Thm12Hard, {"c": -1}), (LinearMargin, {"lo": 0.7, "hi": 0.6}), (SineRegression, {"amp": 2}),
       (QuadraticSO, {"s": 3}), (QuadraticSO, {"a": True})]


@pytest.mark.parametrize("cls,kwargs", BAD, ids=[f"{c.__name__}-{k}" for c, k in BAD])
def test_bad_constructor_args(cls, kwargs):
    with pytest.raises(ConfigError) as err:
        cls(**kwargs)
    assert "\n" not in str(err.value) and next(iter(kwargs)) in str(err.value)


def test_bad_trial_args():
    rng = np.random.default_rng(0)
    for call in (lambda: Algorithm4().trial(LinearMargin(), 1, 4, 1.0, 1, rng),
                 lambda: Algorithm4().trial(LinearMargin(), 100, 4, 1.0, 1, rng, path="bogus"),
                 lambda: Algorithm4().trial(LinearMargin(), 100, 4, -1.0, 1, rng),
                 lambda: Algorithm4().trial(QuadraticSO(), 100, 4, 1.0, 1, rng),
                 lambda: Algorithm3().trial(LinearMargin(), 10_000, 4, 1.0, 1, rng),
                 lambda: Algorithm3().trial(QuadraticSO(), 100, 4, 1.0, 4, rng)):  # too few users per step
        with pytest.raises(ConfigError):
            call()


def test_registries():
    assert set(FAMILIES) == {"quadratic", "linear", "sine", "thm10", "thm12"}
    assert set(ESTIMATORS) == {"alg3", "alg4", "alg5"}
    tasks = {"alg3": "so", "alg4": "classification", "alg5": "regression"}
    assert {k: v.task for k, v in ESTIMATORS.items()} == tasks
    assert {f.name for f in FAMILIES.values() if f.minimax_hard} == {"thm10", "thm12"}


# --------------------------------------------------------------------------- (f) the hard instances are in their classes


def _holder_ratio(inst, rng, d, beta, n_pairs=200_000):
    x = rng.random((n_pairs, d))
    scale = 10.0 ** rng.uniform(-4, 0, (n_pairs, 1))
    x2 = np.clip(x + scale * rng.uniform(-1, 1, (n_pairs, d)), 0, 1)
    dist = np.linalg.norm(x - x2, axis=1)
    ok = dist > 0
    return np.max(np.abs(inst.eta(x) - inst.eta(x2))[ok] / dist[ok] ** beta)


@pytest.mark.parametrize("d", [1, 2])
def test_thm10_instance_in_class(d):
    rng = np.random.default_rng(8)
    fam = Thm10Hard()
    inst = fam.instance(rng, 2 ** 14, 64, 1.0, d)
    p = inst.params
    l = p["l"]
    assert l <= p["l_formula"] and p["l_formula"] == pytest.approx((2 ** 20) ** (-1 / (2 * (d + 1))))
    # About C_K l^{γβ−d} perturbed cubes, all in the corner block, one sign each.
    assert p["perturbed"] == len(p["v"]) and set(np.unique(p["v"])) <= {-1.0, 1.0}
    assert 0.5 ** d * p["perturbed_target"] <= p["perturbed"] <= 2 ** d * p["perturbed_target"]
    x = rng.random((400_000, d))
    eta = inst.eta(x)
    assert np.max(np.abs(eta)) <= 0.5 + 1e-12
    inside = np.all(x < p["block_side"], axis=1)
    assert np.all(eta[~inside] >= 0) and np.max(np.abs(eta[inside])) <= (l / 2) + 1e-12
    # Hölder-β (Assumption 2(b)) with the stated C_b.
    assert _holder_ratio(inst, rng, d, fam.beta) <= p["C_b"] + 1e-9
    # Margin (Assumption 2(a)): P(|η(X)| < t) ≤ C_a t^γ, with C_a bounded in n.
    for t in (1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3):
        mc, se = _mean_se(np.abs(eta) < t)
        assert mc <= p["C_a"] * t ** fam.gamma + 4 * se, (t, mc)
    big = fam.instance(rng, 2 ** 40, 2 ** 10, 1.0, d).params
    assert big["C_a"] <= 2 * p["C_a"] and big["perturbed"] > 0
    # The paper's η = 0 off the block would break the margin condition (slip 9): our η vanishes only near it.
    assert np.mean(np.abs(eta) < 1e-3) < 0.05


@pytest.mark.parametrize("d", [1, 2])
def test_thm12_instance_in_class(d):
    rng = np.random.default_rng(9)
    fam = Thm12Hard()
    inst = fam.instance(rng, 2 ** 14, 64, 1.0, d)
    p = inst.params
    assert p["perturbed"] == p["cubes"] == len(p["v"]) == round(1 / p["l"]) ** d
    x = rng.random((200_000, d))
    assert np.max(np.abs(inst.eta(x))) <= (p["l"] / 2) ** fam.beta + 1e-12
    assert _holder_ratio(inst, rng, d, fam.beta) <= p["C_b"] + 1e-9
    # Every cube carries ±φ l^β: ∫_{cube} η = v_k l^{β+d}||φ||_1 with ||φ||_1 = d 2^{−β} B(d, β+1).
    B_axis = round(1 / p["l"])
    mom = inst.moments(B_axis)
    norm1 = d * 0.5 * math.exp(math.lgamma(d) - math.lgamma(d + 2))
    assert np.allclose(mom.q, p["v"] * p["l"] ** (1 + d) * norm1, rtol=1e-9, atol=1e-15)


def test_linear_family_margin_and_range():
    rng = np.random.default_rng(4)
    inst = LinearMargin().instance(rng, 100, 4, 1.0, 1)
    assert 0.4 <= inst.params["x0"] <= 0.6
    x = rng.random((200_000, 1))
    eta = inst.eta(x)
    assert np.max(np.abs(eta)) < 1
    for t in (0.01, 0.1):
        mc, se = _mean_se(np.abs(eta) < t)
        assert mc <= inst.params["C_a"] * t + 4 * se


def test_cube_moments_dataclass():
    mom = CubeMoments(*(np.ones(3) for _ in range(5)))
    assert mom.B == 3
