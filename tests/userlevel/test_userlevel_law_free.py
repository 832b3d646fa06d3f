"""Law-free user-level rows (issue 21): exact expected errors checked against Monte Carlo, the min–max, the mode."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from scipy.linalg import hadamard

from labeldp_sim.core.cli import run_experiment, validate_job
from labeldp_sim.core.errors import ConfigError
from labeldp_sim.core.points import keyed_rng
from labeldp_sim.userlevel import integrals
from labeldp_sim.userlevel.exact import clipped_normal_moments, fwht
from labeldp_sim.userlevel.families import Thm2Hard
from labeldp_sim.userlevel.label_families import Thm10Hard, Thm12Hard
from labeldp_sim.userlevel.law_free_fit import point_values
from labeldp_sim.userlevel.mean import Algorithm1
from labeldp_sim.userlevel.nonparametric import Algorithm4, Algorithm5

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
    est, inst, w = integrals._bump_overlaps(Be, Bi, 1, powers)
    pts = np.union1d(integrals._edges(Be), integrals._edges(Bi))
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
