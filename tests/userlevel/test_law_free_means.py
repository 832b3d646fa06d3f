"""Law-free ℓ∞ and ℓ2 means (issue 34): Algorithm 2 and Kashin in closed form against their trials; d sweeps."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from labeldp_sim.harness.cli import validate_job
from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.harness.points import keyed_rng
from labeldp_sim.papers.userlevel.exact import user_mean_law
from labeldp_sim.papers.userlevel.families import Spike, Thm6Hard, Thm7Hard
from labeldp_sim.papers.userlevel.law_free.fit import analyse
from labeldp_sim.papers.userlevel.mean import Algorithm2, HeavyCoordinate, HeavyTailed, KashinL2

# As test_userlevel_law_free: a Monte-Carlo mean is N(expectation, SE²) up to the closed forms' stated
# approximations (stage I's independent normal counts; Kashin's normal user means); 4 SE keeps a false alarm
# below 1e-4 per check, and a 15 % error at these SEs (4-6 %) still fails.
Z_MAX = 4.0


def _mc_vs_exact(est, inst, n, m, eps, d, reps):
    errors = []
    for r in range(reps):
        theta, _ = est._estimate(inst, n, m, eps, d, keyed_rng(11, "law-free-means", r), "sufficient")
        errors.append(float(np.sum((np.atleast_1d(theta) - np.atleast_1d(inst.mu)) ** 2)))
    exact = est.expected_error(inst, n, m, eps, d)["error"]
    return float(np.mean(errors)) - exact, float(np.std(errors, ddof=1) / math.sqrt(reps)), exact


@pytest.mark.parametrize("est, fam, n, m, eps, d, reps", [
    (Algorithm2(c_delta=0.1), Thm7Hard(), 2 ** 15, 64, 0.5, 4, 200),  # one coordinate per group
    (Algorithm2(), Thm7Hard(c=0.5), 2 ** 14, 64, 2.0, 4, 200),  # two coordinates share a group's users
    (KashinL2(), Thm6Hard(), 2 ** 14, 64, 0.5, 2, 200),
    (KashinL2(c_delta=0.1), Thm6Hard(), 2 ** 13, 16, 4.0, 2, 200),  # shared users: the covariance terms
    (HeavyTailed(p=2.0), Spike(p=2.0), 2 ** 16, 16, 1.0, 1, 300),  # the user mean clipped to [−D, D] first
    (HeavyTailed(p=3.0), Spike(p=3.0, c=4.0), 2 ** 15, 8, 0.5, 1, 300),
    (HeavyCoordinate(p=2.0), Spike(p=2.0), 2 ** 17, 16, 0.5, 4, 200),  # Remark 2: Theorem 3 per coordinate
    (HeavyCoordinate(p=2.0), Spike(p=2.0, c=2.0), 2 ** 16, 16, 2.0, 4, 200),
])
def test_expected_error_agrees_with_the_trials(est, fam, n, m, eps, d, reps):
    inst = fam.instance(keyed_rng(11, "instance"), n, m, eps, d)
    gap, se, exact = _mc_vs_exact(est, inst, n, m, eps, d, reps)
    assert abs(gap) <= Z_MAX * se, (gap, se, exact)


def test_user_mean_law_is_binomial_for_two_points_and_keeps_the_moments_otherwise():
    values, probs, exact = user_mean_law([-1.0, 1.0], [0.3, 0.7], 10)
    assert exact and np.allclose(probs, stats.binom.pmf(np.arange(11), 10, 0.7))
    np.testing.assert_allclose(values, (2 * np.arange(11) - 10) / 10)
    atoms, weights = np.array([-1.0, 0.0, 0.5]), np.array([0.2, 0.5, 0.3])
    values, probs, exact = user_mean_law(atoms, weights, 100)
    mean, var = weights @ atoms, weights @ atoms ** 2 - (weights @ atoms) ** 2
    # the discretised normal keeps the mean exactly (recentred atoms) and the variance to the cells' width²/12
    assert not exact and probs @ values == pytest.approx(mean, abs=1e-15)
    assert probs @ (values - mean) ** 2 == pytest.approx(var / 100, rel=1e-3)


def test_the_hard_directions_search_their_scale():
    """s = min(½, c·d/√(nm(ε²∧ε))): c scales s, ε > 1 enters through ε, not ε²."""
    small = Thm6Hard(c=1.0).instance(0, 10 ** 8, 100, 4.0, 4).params["s"]
    assert small == pytest.approx(4 / math.sqrt(10 ** 10 * 4.0))
    assert Thm7Hard(c=2.0).instance(0, 10 ** 8, 100, 0.5, 4).params["s"] == pytest.approx(
        2 * 4 / math.sqrt(10 ** 10 * 0.25))
    assert Thm6Hard(c=10 ** 6).instance(0, 100, 1, 0.5, 2).params["s"] == 0.5


def test_a_d_sweep_is_validated_and_fitted_whole(make_cfg, tmp_path):
    spec = validate_job(make_cfg(["experiment=ul_minimax_linf", f"paths.results_dir={tmp_path}"]))
    d_points = spec.sweeps["d"]
    assert [p.d for p in d_points] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert {(p.n, p.m, p.eps) for p in d_points} == {(10 ** 12, 1024, 0.5)}
    assert {p.d for p in spec.sweeps["n"]} == {8}
    # M = C·d²·(1 ± 10⁻³): the d row's slope is 2 to 10⁻³ over every window, fitted as one row (its d NaN);
    # the wiggle gives the windows' residual SE something to measure
    # (the oracle's tuning 1 inside its grid 0.5, 1, 2, where the other two cost twice as much)
    rows = [{"n": p.n, "m": p.m, "eps": p.eps, "d": p.d, "tuning": t, "scale": 1.0, "sign_draw": 0,
             "error": 3e-9 * p.d ** 2 * (1 + 1e-3 * math.sin(p.d)) * (1 if t == 1.0 else 2), "admitted": True,
             "length": np.nan} for p in d_points for t in (0.5, 1.0, 2.0)]
    only_d = type(spec)(**{**spec.__dict__, "sweeps": {"d": d_points}, "tunings": [0.5, 1.0, 2.0], "scales": [1.0]})
    points, windows, fits = analyse(pd.DataFrame(rows), only_d)
    primary = fits[fits.primary]
    assert len(primary) == 1 and primary.d.isna().all() and primary.axis.iloc[0] == "d"
    assert primary.deep_slope.iloc[0] == pytest.approx(2.0, abs=2e-3)
    assert primary.verdict.iloc[0] == "consistent" and primary.theory.iloc[0] == pytest.approx(2.0, abs=1e-6)


@pytest.mark.parametrize("override, key", [
    ("+userlevel_minimax.sweeps.d.values=[1,2]", None),
    ("userlevel_minimax.sweeps.d.values=[0,2]", "userlevel_minimax.sweeps.d.values"),
])
def test_bad_d_sweeps_name_their_key(make_cfg, tmp_path, override, key):
    if key is None:  # the only sweep is over d: a list d would be ignored, so it is refused
        cfg = make_cfg(["experiment=ul_minimax_linf", f"paths.results_dir={tmp_path}", "~userlevel_minimax.sweeps.n",
                        "~userlevel_minimax.sweeps.m", "~userlevel_minimax.sweeps.eps"])
        with pytest.raises(ConfigError) as err:
            validate_job(cfg)
        assert err.value.key == "userlevel_minimax.d"
        return
    with pytest.raises(ConfigError) as err:
        validate_job(make_cfg(["experiment=ul_minimax_linf", f"paths.results_dir={tmp_path}", override]))
    assert err.value.key == key


def _free_row(experiment, axis, d, rate, slope, theory, verdict="consistent", table1_row=""):
    return {"experiment": experiment, "axis": axis, "d": d, "rate": rate, "primary": True, "verdict": verdict,
            "deep_slope": slope, "theory": theory, "deep_lo": 1e6, "table1_row": table1_row, "estimator": "x"}


def test_the_glance_puts_d_sweeps_exponent_surfaces_and_the_item_column_where_they_belong():
    from labeldp_sim.papers.userlevel.report import _glance_cell

    free = pd.DataFrame([_free_row("ul_minimax_linf", "n", 8, "thm7_lower", -0.995, -1.0, table1_row="mean_bounded_linf"),
                         _free_row("ul_minimax_linf", "d", np.nan, "thm7_lower", 2.0, 2.0,
                                   table1_row="mean_bounded_linf")])
    tied = pd.DataFrame(columns=["axis", "primary", "experiment", "verdict", "rate"])
    # a mean's n row at d = 8 stays in the n column (d is a factor there, not in the exponent); its d sweep fills d
    assert "ul_minimax_linf: consistent (-0.995" in _glance_cell("mean_bounded_linf", "n", tied, free)
    assert _glance_cell("mean_bounded_linf", "d", tied, free) == "law-free ul_minimax_linf: d swept: consistent (2.000 vs 2.000)"
    cls = pd.DataFrame([_free_row("ul_minimax_cls", "n", 1, "thm10_lower", -0.48, -0.5),
                        _free_row("ul_minimax_cls_gamma05", "n", 1, "thm10_lower", -0.365, -0.376)])
    exponents = pd.DataFrame({"experiment": ["ul_minimax_cls", "ul_minimax_cls_gamma05"], "task": "classification",
                              "beta": [1.0, 1.0], "gamma": [1.0, 0.5], "d": 1, "verdict": "consistent",
                              "measured": [-0.48, -0.365], "theory": [-0.5, -0.376]})
    n_cell = _glance_cell("classification", "n", tied, cls, exponents)
    assert "ul_minimax_cls:" in n_cell and "gamma05" not in n_cell  # the n column speaks for β = γ = 1
    assert _glance_cell("classification", "beta_gamma", tied, cls, exponents) == (
        "law-free ul_minimax_cls_gamma05: β = 1, γ = 0.5, n: consistent (-0.365 vs -0.376)")
    item = pd.DataFrame([_free_row("ul_minimax_mean_item", "m", 1, "item_bounded", -1.0, -1.0)])
    assert "ul_minimax_mean_item (x): m consistent" in _glance_cell("mean_bounded_l2", "item", tied, item)


def test_the_glance_links_every_experiment_it_names():
    from labeldp_sim.papers.userlevel.site import _linked

    class Site:
        def page_href(self, relative):
            return {"userlevel/law_free/ul_minimax_l2": "site/a.html", "userlevel/ul_mean_l2": "site/b.html"}.get(relative)

    html = "<td>law-free ul_minimax_l2: consistent; ul_mean_l2: inconclusive; ul_nowhere: x</td>"
    assert _linked(Site(), html) == ('<td>law-free <a href="site/a.html">ul_minimax_l2</a>: consistent; '
                                     '<a href="site/b.html">ul_mean_l2</a>: inconclusive; ul_nowhere: x</td>')


def test_the_spike_in_d_dimensions_has_the_coordinatewise_moment():
    """X = a e_K w.p. δ, K uniform: E|X_k|^p = M_p for every k, δ = c/(m√(nε²)) (capped at 1)."""
    inst = Spike(p=3.0, M_p=2.0, c=2.0).instance(0, 10 ** 6, 16, 0.5, 4)
    delta = 2.0 / (16 * math.sqrt(10 ** 6 * 0.25))
    assert inst.params["delta"] == pytest.approx(delta)
    np.testing.assert_allclose(inst.probs @ np.abs(inst.support) ** 3, np.full(4, 2.0), rtol=1e-12)
    assert Spike().instance(0, 10 ** 6, 16, 0.5).params == Spike(c=1.0).instance(0, 10 ** 6, 16, 0.5).params


def test_a_worst_case_row_is_one_sided_and_its_one_tuning_is_not_an_edge(make_cfg, tmp_path):
    spec = validate_job(make_cfg(["experiment=ul_minimax_heavy", f"paths.results_dir={tmp_path}"]))
    assert spec.one_sided and spec.tunings == [1.0]
    pts = spec.sweeps["n"]
    # M = c·n^(−0.6)·(1 ± 10⁻³) at the theorem's one tuning: faster than the bound's −0.5, so "respected"
    rows = [{"n": p.n, "m": p.m, "eps": p.eps, "d": p.d, "tuning": 1.0, "scale": c, "sign_draw": 0,
             "error": c * p.n ** -0.6 * (1 + 1e-3 * math.sin(p.n)), "admitted": True, "length": np.nan}
            for p in pts for c in spec.scales]
    only_n = type(spec)(**{**spec.__dict__, "sweeps": {"n": pts}})
    points, _, fits = analyse(pd.DataFrame(rows), only_n)
    assert (points.flag == "").all()  # one tuning: the theorem's, no oracle edge to rule it out
    primary = fits[fits.primary].iloc[0]
    assert primary.verdict == "upper bound respected" and primary.reason.startswith("worst case over the family's")
    with pytest.raises(ConfigError) as err:  # one-sided needs an upper bound first
        validate_job(make_cfg(["experiment=ul_minimax_heavy", f"paths.results_dir={tmp_path}",
                               "userlevel_minimax.rates=[spike_lower]"]))
    assert err.value.key == "userlevel_minimax.rates"
