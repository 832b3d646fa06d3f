"""Law-free user-level rows (issue 21): exact expected errors checked against Monte Carlo, the min–max, the mode."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from scipy.linalg import hadamard

from labeldp_sim.harness.cli import run_experiment, validate_job
from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.harness.points import keyed_rng
from labeldp_sim.papers.userlevel import integrals
from labeldp_sim.papers.userlevel.exact import clipped_normal_moments, decoded_variance
from labeldp_sim.papers.userlevel.hadamard import fwht
from labeldp_sim.papers.userlevel.families import Thm2Hard
from labeldp_sim.papers.userlevel.label_families import Thm10Hard, Thm12Hard
from labeldp_sim.papers.userlevel.law_free.fit import point_values
from labeldp_sim.papers.userlevel.mean import Algorithm1
from labeldp_sim.papers.userlevel.nonparametric import Algorithm4, Algorithm5

# A Monte-Carlo mean differs from the expectation by N(0, SE²) up to the exact formulas'
# stated approximations (normal q̂, stage I's independent-normal counts): 4 SE keeps a false
# alarm below 1e-4 per check while a 15 % error at these SEs (3-6 %) still fails.
Z_MAX = 4.0


def _mc_vs_exact(est, fam, n, m, eps, d, reps):
    mc, exact = [], []
    for r in range(reps):
        mc.append(est.trial(fam, n, m, eps, d, keyed_rng(7, "law-free-check", r))["error"])
        inst = fam.instance(keyed_rng(7, "law-free-check", r), n, m, eps, d)  # the same hidden signs
        exact.append(est.expected_error(inst, n, m, eps, d)["error"])
    diff = np.asarray(mc) - np.asarray(exact)
    return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(reps)), float(np.mean(exact))


@pytest.mark.parametrize("est, fam, n, m, eps, d, reps", [
    (Algorithm1(), Thm2Hard(), 2 ** 15, 1024, 1.0, 1, 300),
    (Algorithm1(c_h=0.5, c_delta=0.1), Thm2Hard(c=3.0), 2 ** 14, 256, 1.0, 1, 300),  # stage I's choice matters
    (Algorithm4(c_l=2.0), Thm10Hard(), 2 ** 19, 512, 0.5, 1, 60),
    (Algorithm5(c_l=2.0), Thm12Hard(), 2 ** 19, 1024, 0.5, 1, 60),
])
def test_expected_error_agrees_with_the_trials(est, fam, n, m, eps, d, reps):
    gap, se, level = _mc_vs_exact(est, fam, n, m, eps, d, reps)
    assert abs(gap) <= Z_MAX * se, (gap, se, level)


def test_fwht_is_the_sylvester_hadamard_product():
    rng = np.random.default_rng(0)
    for K in (1, 2, 8, 256):
        x = rng.normal(size=K)
        # K additions of O(1) terms: rounding differs from the matrix product by a few ulps × K
        np.testing.assert_allclose(fwht(x), hadamard(K) @ x, rtol=0, atol=1e-12 * K)


@pytest.mark.parametrize("mu, sd, T", [(0.3, 0.5, 1.0), (-2.0, 1.5, 1.0), (0.0, 0.01, 0.5), (5.0, 1.0, 1.0)])
def test_clipped_normal_moments_match_quadrature(mu, sd, T):
    first, second = clipped_normal_moments(mu, sd, T)
    law = stats.norm(mu, sd)
    q1 = integrate.quad(lambda z: np.clip(z, -T, T) * law.pdf(z), mu - 12 * sd, mu + 12 * sd, points=[-T, T])[0]
    q2 = integrate.quad(lambda z: np.clip(z, -T, T) ** 2 * law.pdf(z), mu - 12 * sd, mu + 12 * sd, points=[-T, T])[0]
    # quad's own error is ~1e-12 here; the closed forms are exact
    assert first == pytest.approx(q1, abs=1e-9) and second == pytest.approx(q2, abs=1e-9)


@pytest.mark.parametrize("Be, Bi", [(7, 5), (16, 40), (33, 33)])
def test_one_dimensional_overlaps_equal_the_general_box_integral(Be, Bi):
    powers = (1.0, 2.0)
    est, inst, w = integrals.bump_overlaps(Be, Bi, 1, powers)
    pts = np.union1d(integrals.axis_edges(Be), integrals.axis_edges(Bi))
    lo, hi = pts[:-1], pts[1:]
    ji = np.clip(np.floor((lo + hi) / 2 * Bi), 0, Bi - 1).astype(int)
    ulo, uhi = np.clip(lo * Bi - ji - 0.5, -0.5, 0.5), np.clip(hi * Bi - ji - 0.5, -0.5, 0.5)
    general = np.array([[integrals.box_radial_integral([a], [b], [0], [-1], [0], [1], 0.0, 0.5, "bump", p) / Bi
                         for p in powers] for a, b in zip(ulo, uhi)])
    # both are closed forms of the same polynomial pieces: equal up to rounding
    np.testing.assert_allclose(w, general, rtol=1e-12, atol=1e-15)


class _Spec:
    tunings, scales, tuning_key, scale_key = [1.0, 2.0, 4.0], [1.0, 2.0], "c_l", "c"


def test_m_is_the_min_over_tunings_of_the_max_over_scales():
    rows = []
    table = {(1.0, 1.0): 5.0, (1.0, 2.0): 9.0, (2.0, 1.0): 6.0, (2.0, 2.0): 7.0, (4.0, 1.0): 3.0, (4.0, 2.0): 8.0}
    for (t, c), err in table.items():
        for draw, noise in enumerate((-0.5, 0.5)):
            rows.append({"n": 10, "m": 2, "eps": 1.0, "d": 1, "tuning": t, "scale": c, "sign_draw": draw,
                         "error": err + noise, "admitted": True, "length": 0.1})
    points = point_values(pd.DataFrame(rows), _Spec())
    # worst per tuning: 9, 7, 8 -> the oracle picks t = 2 with worst scale c = 2; M = 7, SE = 0.5
    assert points.M.iloc[0] == pytest.approx(7.0) and points.tuning_star.iloc[0] == 2.0
    assert points.scale_star.iloc[0] == 2.0 and points.M_se.iloc[0] == pytest.approx(0.5)
    assert points.flag.iloc[0] == ""
    rows = [r | {"admitted": False} if r["tuning"] == 1.0 else r for r in rows]
    rows = [r | {"error": r["error"] - 6} if r["tuning"] == 4.0 else r for r in rows]
    points = point_values(pd.DataFrame(rows), _Spec())
    assert points.tuning_star.iloc[0] == 4.0 and "edge" in points.flag.iloc[0]


SMALL = ["experiment=ul_minimax_reg", "runner.progress=false", "runner.n_jobs=1",
         "userlevel_minimax.sweeps.n.values.lo=1e6", "userlevel_minimax.sweeps.n.values.hi=1e10",
         "userlevel_minimax.sweeps.n.values.per_decade=2", "userlevel_minimax.sweeps.m.values.lo=256",
         "userlevel_minimax.sweeps.m.values.hi=1024", "userlevel_minimax.sweeps.m.values.per_decade=2",
         "userlevel_minimax.sweeps.eps.values.lo=0.1", "userlevel_minimax.sweeps.eps.values.hi=0.5",
         "userlevel_minimax.sweeps.eps.values.per_decade=2",
         "userlevel_minimax.scale.lo=4", "userlevel_minimax.scale.hi=16", "userlevel_minimax.scale.per_octave=1",
         "userlevel_minimax.tuning.lo=4", "userlevel_minimax.tuning.hi=32", "userlevel_minimax.tuning.per_octave=1",
         "userlevel_minimax.signs=1"]


def test_a_law_free_run_writes_its_rows_and_reuses_them(make_cfg, tmp_path, capsys):
    cfg = make_cfg([*SMALL, f"paths.results_dir={tmp_path}"])
    first = run_experiment(cfg)
    out = tmp_path / "userlevel" / "law_free" / "ul_minimax_reg"
    for name in ("points.csv", "windows.csv", "fit.csv", "convergence.png", "provenance.json"):
        assert (out / name).exists(), name
    assert (tmp_path / "userlevel" / "law_free" / "table.md").exists()
    points = first["points"]
    n_axis = points[points.axis == "n"].sort_values("n")
    assert len(n_axis) == 9 and np.all(np.diff(n_axis.M) < 0)  # the worst-case risk falls with n
    capsys.readouterr()
    again = run_experiment(cfg)
    assert f"{len(first['trials']):,} reused" in capsys.readouterr().out
    pd.testing.assert_frame_equal(first["points"], again["points"])


@pytest.mark.parametrize("override, key", [
    ("userlevel_minimax.tuning.key=nope", "userlevel_minimax.tuning.key"),
    ("userlevel_minimax.family.name=sine", "userlevel_minimax.family.name"),
    ("userlevel_minimax.signs=0", "userlevel_minimax.signs"),
    ("userlevel_minimax.rates=[nope]", "userlevel_minimax.rates"),
    ("mode=law_tied", "mode"),
])
def test_bad_law_free_input_names_its_key(make_cfg, tmp_path, override, key):
    with pytest.raises(ConfigError) as err:
        validate_job(make_cfg([*SMALL, f"paths.results_dir={tmp_path}", override]))
    assert err.value.key == key


def _cells_covariance(p, q, K):
    """Covariance of one sample's K statistics U_k = y H_K[k, cube], from the 2B cells' probabilities."""
    H = hadamard(K)
    cells = [(b, y, (p[b] + y * q[b]) / 2) for b in range(len(p)) for y in (1, -1)]
    X = np.array([[y * H[k, b] for k in range(K)] for b, y, _ in cells])
    w = np.array([c[2] for c in cells])
    centred = X - w @ X
    return centred.T @ (w[:, None] * centred)


@pytest.mark.parametrize("groups", [[[0, 1, 2], [3, 4], [5, 6, 7]], [[0, 1], [2, 3], [4, 5], [6, 7]],
                                    [list(range(8))], [[k] for k in range(8)]])
def test_decoded_variance_equals_the_direct_covariance(groups):
    """Var of (H Q̂)_b / K from the statistics' covariance matrix, group by group, against the
    closed form through Sylvester's H_kc H_k'c = H_{k⊕k',c} (general and aligned-block paths)."""
    K, B, m, lam = 8, 6, 4, 0.7
    rng = np.random.default_rng(1)
    p = rng.random(B)
    p /= p.sum()
    q = (rng.random(B) - 0.5) * p
    cov = _cells_covariance(p, q, K)
    H = hadamard(K)
    n2 = np.arange(10.0, 10.0 * (len(groups) + 1), 10.0)
    direct = np.zeros(K)
    for b in range(K):
        for S, w in zip(groups, n2):
            h = np.zeros(K)
            h[S] = H[b, S]
            direct[b] += (h @ cov @ h / m + 2 * lam ** 2 * len(S)) / w
    direct /= K ** 2
    pad = np.zeros(K - B)
    got = decoded_variance(groups, K, fwht(np.r_[q, pad]), fwht(np.r_[p, pad]), m, lam, n2)
    # the same sums in another order: equal up to rounding
    np.testing.assert_allclose(got, direct, rtol=1e-12, atol=1e-18)


@pytest.mark.slow  # ~60 s: the medium regime draws every coordinate of a group from the same users
@pytest.mark.parametrize("est, fam, eps", [(Algorithm4(c_l=2.0), Thm10Hard(), 3.0),
                                           (Algorithm5(c_l=2.0), Thm12Hard(), 4.0)])
def test_expected_error_with_shared_users_agrees_with_the_trials(est, fam, eps):
    """ε > 2: a group's coordinates share its users (Algorithm 2's medium regime)."""
    assert est.tuning(2 ** 18, 256, eps, 1)["regime"] == "medium"
    gap, se, level = _mc_vs_exact(est, fam, 2 ** 18, 256, eps, 1, 40)
    assert abs(gap) <= Z_MAX * se, (gap, se, level)


def test_the_exact_path_of_a_law_tied_experiment(make_cfg, tmp_path):
    """userlevel.path=exact: each trial is E[error | its instance]; the sine family has none to draw."""
    cfg = make_cfg(["experiment=ul_reg", f"paths.results_dir={tmp_path}", "runner.progress=false",
                    "runner.n_jobs=1", "userlevel.sweeps.n.values=[262144,1048576,4194304]",
                    "userlevel.sweeps.m.values=[256,1024,4096]"])
    out = run_experiment(cfg)
    trials = out["trials"]
    assert (trials.path == "exact").all()
    assert trials.groupby(["n", "m"]).error.nunique().eq(1).all()  # no hidden randomness: one value per point
    fits = out["fits"]
    assert fits[fits.primary].verdict.isin(["upper bound respected"]).all()


def test_the_exact_path_refuses_an_estimator_without_one(make_cfg, tmp_path):
    with pytest.raises(ConfigError) as err:
        validate_job(make_cfg(["experiment=ul_so", "userlevel.path=exact", f"paths.results_dir={tmp_path}"]))
    assert err.value.key == "userlevel.path" and "alg3" in err.value.allowed


def _scalar_bump_overlaps(Be, Bi, d, powers):
    """The per-piece loop over box_radial_integral, C-order over the pieces (the reference)."""
    pts = np.union1d(integrals.axis_edges(Be), integrals.axis_edges(Bi))
    lo, hi = pts[:-1], pts[1:]
    ji = np.clip(np.floor((lo + hi) / 2 * Bi), 0, Bi - 1).astype(int)
    ulo, uhi = np.clip(lo * Bi - ji - 0.5, -0.5, 0.5), np.clip(hi * Bi - ji - 0.5, -0.5, 0.5)
    zeros, ones = np.zeros(d), np.ones(d)
    return np.array([[integrals.box_radial_integral(ulo[list(c)], uhi[list(c)], zeros, -ones, zeros, ones, 0.0, 0.5,
                                                    "bump", p) / Bi ** d for p in powers]
                     for c in itertools.product(range(len(lo)), repeat=d)])


def _scalar_ramp(Be, d, A, rho, powers):
    e = integrals.axis_edges(Be)
    out = np.zeros((Be ** d, len(powers)))
    zeros, ones = np.zeros(d), np.ones(d)
    for flat, idx in enumerate(itertools.product(range(Be), repeat=d)):
        idx = np.asarray(idx)
        R = float(np.max(e[idx + 1] - A))
        if R > 0:
            out[flat] = [integrals.box_radial_integral(e[idx], e[idx + 1], zeros, zeros, np.full(d, A), ones, 0.0, R,
                                                       "ramp", p, rho) for p in powers]
    return out


@pytest.mark.parametrize("Be, Bi, d", [(5, 3, 2), (7, 9, 2), (4, 6, 3)])
def test_vectorised_cube_integrals_equal_the_piecewise_ones(Be, Bi, d):
    """d >= 2, integer powers: Gauss–Legendre on each piece (exact for the polynomial integrand) against the
    per-piece closed forms, for the bumps (Theorems 10, 12) and Theorem 10's ramp."""
    integrals.bump_overlaps.cache_clear()
    integrals.ramp_moments.cache_clear()
    w = integrals.bump_overlaps(Be, Bi, d, (1.0, 2.0))[2]
    np.testing.assert_allclose(w, _scalar_bump_overlaps(Be, Bi, d, (1.0, 2.0)), rtol=1e-11, atol=1e-16)
    for A, rho in ((0.3, 0.5), (0.55, 0.2), (1.0, 0.5)):  # A = 1: the block covers the cube, nothing left
        np.testing.assert_allclose(integrals.ramp_moments(Be, d, A, rho, (1.0, 2.0)),
                                   _scalar_ramp(Be, d, A, rho, (1.0, 2.0)), rtol=1e-11, atol=1e-16)
