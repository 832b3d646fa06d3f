"""Law-free analysis (issue 20, items 2 and 3): pre-asymptotic points, window slopes, the deepest-window verdict.

Every test builds its points table (or its trials) directly: no runs.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from labeldp_sim.papers.table1.estimators import CubeMean, KNNMean
from labeldp_sim.papers.table1.law_free.fit import (optimal_tunings, pre_asymptotic_check, fit_law_free, point_matrices,
                                            point_values)
from labeldp_sim.papers.table1.law_free.plots import plot_convergence
from labeldp_sim.papers.table1.law_free.table import write_minimax_table
from labeldp_sim.stats.windows import CI_EXACT, CI_MONTE_CARLO, CI_SHIFT_HULL, window_runs, ols_slope, window_fits
from labeldp_sim.papers.table1.theory import CELLS

TOL = 0.05


def _spec(cell: str, exact: bool = True):
    dist = SimpleNamespace(beta=1.0, gamma=1.0, p=float("nan"))
    return SimpleNamespace(cell=CELLS[cell], name=cell, tol=TOL, min_points=3, window_points=7, exact=exact,
                           distributions={1: dist})


def _discreteness(log_x: np.ndarray, amplitude: float) -> np.ndarray:
    """Log-excess of a min over a geometric tuning grid: quadratic in the optimum's distance to the
    nearest grid value, which comes round once per octave of x (h* ~ x^(-1/3), 3 grid values per octave)."""
    phase = (log_x / np.log(2)) % 1.0
    return amplitude * (phase - 0.5) ** 2


def _points(x, M, axis="N", h_exponent=-1 / 3, pre=None, se=None):
    """A points table of one (axis, d = 1) row as :func:`~.fit.analyse` writes it."""
    x, M = np.asarray(x, float), np.asarray(M, float)
    n = len(x)
    se = np.zeros(n) if se is None else np.asarray(se, float)
    return pd.DataFrame({
        "cell": "c", "axis": axis, "d": 1, "N": x if axis == "N" else 1e12, "eps": x if axis == "eps" else 1.0,
        "in_regime": True, "M": M, "M_se": se, "S": 1.3 * M, "S_se": 1.3 * se, "law_tied": 1.2 * M,
        "law_tied_se": 1.2 * se, "h_est_star": x ** h_exponent, "replicates": 1 if not se.any() else 16,
        "edge": "", "pre_asymptotic": [""] * n if pre is None else pre, "G_inst_star": 8,
        "opt_tuning": 16, "tuning_parameter": "G_est", "admission": "22/22 grid scales admitted"})


def _row(fits, quantity="M", statement=None):
    rows = fits[(fits.quantity == quantity) & (fits.primary if statement is None else fits.statement == statement)]
    return rows.iloc[0]


N_GRID = np.logspace(2, 9, 71)  # ten points per decade


def test_exact_power_law_with_discreteness_is_consistent_and_narrow():
    M = N_GRID ** (-2 / 3) * np.exp(_discreteness(np.log(N_GRID), 0.16))
    fits = fit_law_free(_points(N_GRID, M), _spec("reg_nonprivate"))
    m = _row(fits)
    assert m.verdict == "consistent", m.reason
    assert (m.deep_ci_high - m.deep_ci_low) / 2 <= 0.02
    assert m.deep_ci_low <= -2 / 3 <= m.deep_ci_high
    assert m.deep_window_hi == pytest.approx(N_GRID[-1]) and m.prev_window_hi <= 10 ** 8.5 * 1.001
    assert m.ci_method == CI_EXACT + CI_SHIFT_HULL and m.entries == "exact"
    windows = fits[fits.quantity == "M_window"]
    assert windows.deepest.sum() == 1 and windows.previous.sum() == 1 and len(windows) == 61
    assert np.allclose(windows.span_decades, 1.0)


def test_drifting_local_slope_is_pre_asymptotic_with_both_numbers():
    """A sum of two powers: the local slope still moves from -1 towards -2/3 at the deep end."""
    M = N_GRID ** (-2 / 3) + 300 * N_GRID ** -1.0  # a drift above tol/5 between the two deepest windows
    fits = fit_law_free(_points(N_GRID, M), _spec("reg_nonprivate"))
    m = _row(fits)
    assert m.verdict == "pre-asymptotic"
    half = lambda lo, hi: (hi - lo) / 2  # noqa: E731
    assert abs(m.deep_slope - m.prev_slope) > np.hypot(half(m.deep_ci_low, m.deep_ci_high),
                                                      half(m.prev_ci_low, m.prev_ci_high))
    assert m.prev_slope < m.deep_slope < -2 / 3  # the shallower window is further from -2/3
    assert f"{m.deep_slope:.3f}" in m.reason and f"{m.prev_slope:.3f}" in m.reason


def test_persistent_wrong_exponent_is_inconsistent_and_says_what_was_ruled_out():
    M = N_GRID ** -0.5 * np.exp(_discreteness(np.log(N_GRID), 0.16))
    pre = ["oracle tuning trivial (G_est*=1)"] * 5 + [""] * (len(N_GRID) - 5)
    fits = fit_law_free(_points(N_GRID, M, pre=pre), _spec("reg_nonprivate"))
    m = _row(fits)
    assert m.verdict == "inconsistent" and m.deep_ci_low > -2 / 3 + TOL
    assert m.deep_ci_low <= m.prev_slope <= m.deep_ci_high
    for ruled in ("range:", "grid edges:", "pre-asymptotic: 5 points", "class admission:", "deepest", "previous"):
        assert ruled in m.reason
    assert m.points == len(N_GRID) - 5 and m.points_pre_asymptotic == 5


def test_eps_axis_adjudicates_both_statements_on_the_deepest_window():
    """reg_label_cdp at d = 1: Table I's -1 consistent, Theorem 7's -2/3 rejected by the same rule."""
    eps = np.logspace(-9, -4, 51)
    M = eps ** -1.0 * np.exp(_discreteness(np.log(eps), 0.16))
    fits = fit_law_free(_points(eps, M, axis="eps", h_exponent=-0.5), _spec("reg_label_cdp"))
    assert _row(fits).verdict == "consistent"
    assert _row(fits, statement="Theorem 7").verdict == "inconsistent"
    assert _row(fits).deep_window_hi == pytest.approx(eps[-1])  # finest h: the largest ε


def test_pre_asymptotic_points_are_left_out_of_every_window():
    M = N_GRID ** (-2 / 3) * np.exp(_discreteness(np.log(N_GRID), 0.16))
    M[:20] = 0.3  # flat start: the trivial estimator (or a coarsest-scale worst case) would bend the fit
    pre = ["worst instance at the coarsest admitted scale (G*_inst=11)"] * 20 + [""] * (len(N_GRID) - 20)
    fits = fit_law_free(_points(N_GRID, M, pre=pre), _spec("reg_nonprivate"))
    assert _row(fits).verdict == "consistent"
    assert fits[fits.quantity == "M_window"].window_lo.min() == pytest.approx(N_GRID[20])
    unflagged = fit_law_free(_points(N_GRID, M), _spec("reg_nonprivate"))
    first = lambda f: f[f.quantity == "M_window"].window_lo.min()  # noqa: E731
    assert first(fits) > first(unflagged)


def _trials(R, law, tied, insts, tunes):
    """One point's exact trials (replicate 0) from a matrix R[i, t], the law column and the law-tied entry."""
    rows = []
    for i, G in enumerate(insts):
        for j, g in enumerate(tunes):
            rows.append({"instance": "grid", "admitted": True, "tuning": "oracle", "G_inst": G, "G_est": g,
                         "T": np.nan, "replicate": 0, "excess_risk": R[i, j]})
        rows.append({"instance": "grid", "admitted": True, "tuning": "law", "G_inst": G, "G_est": 8,
                     "T": np.nan, "replicate": 0, "excess_risk": law[i]})
    rows.append({"instance": "law", "admitted": True, "tuning": "law", "G_inst": 8, "G_est": 8, "T": np.nan,
                 "replicate": 0, "excess_risk": tied})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("coarse_worst", [False, True])
def test_exact_point_values_and_flags(coarse_worst):
    insts, tunes = [2, 3, 4, 6, 8], [1, 2, 3, 4, 6, 8, 11, 16]
    t = np.log(np.array(tunes, float))
    R = 0.1 + (t[None, :] - np.log(4)) ** 2 + 0.01 * np.arange(len(insts))[:, None]
    if coarse_worst:
        R[0] += 0.5
    mats = point_matrices(_trials(R, R[:, 3], 0.7, insts, tunes), "G_est")
    mats["tune_cap"] = True
    values = point_values(mats, exact=True)
    assert values["M"] == pytest.approx(R.max(axis=0).min(), rel=1e-15)
    assert values["S"] == pytest.approx(R[:, 3].max()) and values["law_tied"] == 0.7
    assert values["M_se"] == values["S_se"] == values["law_tied_se"] == 0.0
    opt = optimal_tunings(mats)
    assert opt["tune"] == 4 and opt["G_inst"] == (2 if coarse_worst else 8)
    reason = pre_asymptotic_check(CubeMean(), opt, mats, 10 ** 6)
    assert ("coarsest admitted scale" in reason) == coarse_worst and "trivial" not in reason


def test_a_refined_optimum_next_to_the_cap_is_an_edge():
    """Refined tunings (law_free.refine) between the coarse grid's last two values: an optimum there is the
    cap's, as the last value itself is; the coarse value below it is not."""
    insts, tunes = [2, 4, 8], [256, 323, 406, 512, 645, 813, 900, 960, 1024]
    t = np.log(np.array(tunes, float))
    for best, edge in ((900, True), (813, False), (1024, True)):
        R = 0.1 + (t[None, :] - np.log(best)) ** 2 + 0.01 * np.arange(len(insts))[:, None]
        mats = point_matrices(_trials(R, R[:, 3], 0.7, insts, tunes), "G_est")
        mats.update(tune_cap=True, below_cap=813)
        opt = optimal_tunings(mats)
        assert opt["tune"] == best and (f"G_est*={best} at the grid cap" in opt["edge"]) == edge, best


def test_trivial_tuning_is_one_cube_or_every_sample():
    assert CubeMean().trivial_tuning(1, 10 ** 6) and not CubeMean().trivial_tuning(2, 10 ** 6)
    assert KNNMean().trivial_tuning(1000, 1000) and not KNNMean().trivial_tuning(999, 1000)
    mats = {"tune_col": "G_est", "insts": np.array([1, 2, 3])}
    opt = {"tune": 1, "inst_flat_hi": 3}
    assert pre_asymptotic_check(CubeMean(), opt, mats, 10 ** 4) == "oracle tuning trivial (G_est*=1)"


def test_windows_are_maximal_one_decade_runs():
    lx = np.array([0.0, 0.3, 0.6, 0.9, 1.0, 1.2, 1.6, 2.0, 2.05, 3.5])
    runs = window_runs(lx, 1.0, 4)
    # (3, 7) lies inside (2, 7) and (6, 9) inside (5, 9): not maximal; (9, 10) has one point
    assert [(r.start, r.stop) for r in runs] == [(0, 5), (1, 6), (2, 7), (4, 8), (5, 9)]
    for r in runs:
        assert lx[r.stop - 1] - lx[r.start] <= 1.0 + 1e-9 and r.stop - r.start >= 4


def test_ols_ci_is_the_t_interval_of_the_residuals():
    x = np.logspace(0, 1, 6)
    jitter = np.array([0.01, -0.02, 0.015, 0.0, -0.01, 0.005])
    fit = ols_slope(x, x ** -0.7 * np.exp(jitter), rel_error=0.0)
    lx, ly = np.log(x), -0.7 * np.log(x) + jitter
    b, a = np.polyfit(lx, ly, 1)
    r = ly - a - b * lx
    s = np.sqrt(np.sum(r ** 2) / 4 / np.sum((lx - lx.mean()) ** 2))
    rho = np.clip(np.sum(r[1:] * r[:-1]) / np.sum(r ** 2), 0, 0.9)
    assert fit["slope"] == pytest.approx(b, rel=1e-12) and fit["rho"] == pytest.approx(rho, abs=1e-12)
    assert fit["ci_high"] - fit["slope"] == pytest.approx(2.7764451 * s * np.sqrt((1 + rho) / (1 - rho)),
                                                          rel=1e-6)  # t(0.975, 4)


def test_monte_carlo_windows_use_the_weighted_fit():
    rng = np.random.default_rng(4)
    M = N_GRID ** (-2 / 3)
    se = 0.01 * M
    frame = _points(N_GRID, M * (1 + se / M * rng.standard_normal(len(M))), se=se)
    wins = window_fits(frame, "N", "M", "M_se", exact=False)
    assert (wins.ci_method == CI_MONTE_CARLO).all()
    inside = (wins.ci_low <= -2 / 3) & (-2 / 3 <= wins.ci_high)
    assert inside.mean() >= 0.8  # 95% intervals, overlapping windows
    fits = fit_law_free(frame, _spec("reg_nonprivate", exact=False))
    assert _row(fits).entries.startswith("Monte Carlo") and _row(fits).verdict in ("consistent", "inconclusive",
                                                                                   "pre-asymptotic")


def test_table_and_convergence_diagram_take_the_deepest_window(tmp_path):
    M = N_GRID ** (-2 / 3) * np.exp(_discreteness(np.log(N_GRID), 0.16))
    fits = fit_law_free(_points(N_GRID, M), _spec("reg_nonprivate"))
    (tmp_path / "reg_nonprivate").mkdir()
    fits.to_csv(tmp_path / "reg_nonprivate" / "fit.csv", index=False)
    table = write_minimax_table(tmp_path)
    row, m = table.iloc[0], _row(fits)
    assert row.verdict == "consistent" and row.M_slope == pytest.approx(m.deep_slope)
    assert row.prev_slope == pytest.approx(m.prev_slope) and row.whole_slope == pytest.approx(m.slope)
    text = (tmp_path / "table.md").read_text()
    assert "residual standard error" in text and "Decisive with a CI half-width ≤ 0.02: 1 of 1" in text
    plot_convergence(fits, tmp_path / "convergence.png", "reg_nonprivate")
    assert (tmp_path / "convergence.png").stat().st_size > 10_000


def test_table1_law_free_column_is_the_deepest_window(tmp_path):
    from labeldp_sim.papers.table1.report import write_table1

    eps = np.logspace(-9, -4, 51)
    M = eps ** -1.0 * np.exp(_discreteness(np.log(eps), 0.16))
    fits = fit_law_free(_points(eps, M, axis="eps", h_exponent=-0.5), _spec("reg_label_cdp"))
    (tmp_path / "minimax" / "reg_label_cdp").mkdir(parents=True)
    fits.to_csv(tmp_path / "minimax" / "reg_label_cdp" / "fit.csv", index=False)
    write_minimax_table(tmp_path / "minimax")
    cell = CELLS["reg_label_cdp"]
    tied = pd.DataFrame([{"experiment": "reg_label_cdp", "cell": "reg_label_cdp", "axis": "eps", "d": 1,
                          "fixed": "N=1e+14", "statement": e.statement, "primary": k == 0,
                          "theory": e.slope(1.0, 1.0, 1), "theory_formula": e.formula,
                          "theory_source": e.source, "slope": -1.0, "se": 0.01, "ci_low": -1.02, "ci_high": -0.98,
                          "tol": TOL, "verdict": "consistent" if k == 0 else "inconsistent", "points": 5,
                          "x_min": 1e-9, "x_max": 1e-5} for k, e in enumerate(cell.statements("eps"))])
    (tmp_path / "reg_label_cdp").mkdir()
    tied.to_csv(tmp_path / "reg_label_cdp" / "fit.csv", index=False)
    table = write_table1(tmp_path)
    rows = table[table.cell == "reg_label_cdp"].set_index("statement")
    m = _row(fits)
    assert rows.loc["Table I / Theorem 8"].law_free_slope == pytest.approx(m.deep_slope)
    assert rows.loc["Table I / Theorem 8"].law_free_window_hi == pytest.approx(eps[-1])
    assert rows.loc["Table I / Theorem 8"].law_free_verdict == "consistent"
    assert rows.loc["Theorem 7"].law_free_verdict == "inconsistent"
    text = (tmp_path / "table1.md").read_text()
    assert "deepest" in text and "(ε 1e-05–0.0001)" in text


def test_pre_asymptotic_flags_stay_at_the_shallow_end():
    """A flagged point deeper than the first unflagged one is kept in the fits (the flag marks where a sweep
    starts, not a coarsest-scale worst instance that persists into the deep end)."""
    from labeldp_sim.papers.table1.law_free.fit import shallow_end_only
    flags = ["coarsest", "trivial", "", "coarsest", ""]
    x = np.logspace(-12, -8, 5)
    frame = pd.concat([_points(x, x ** -0.5, axis="eps", pre=flags),
                       _points(x[::-1], x[::-1] ** -0.5, axis="eps", pre=flags).assign(d=2)], ignore_index=True)
    out = shallow_end_only(frame)
    assert out[out.d == 1].pre_asymptotic.tolist() == ["coarsest", "trivial", "", "", ""]
    # the same flags listed from the deep end: the shallowest point is unflagged, so no flag stays
    assert out[out.d == 2].sort_values("eps").pre_asymptotic.tolist() == ["", "", "", "", ""]
    assert shallow_end_only(_points(x, x ** -0.5, axis="eps", pre=["a"] * 5)).pre_asymptotic.tolist() == ["a"] * 5


@pytest.mark.parametrize("x, says", [
    (np.logspace(6, 8, 3), "too few points for a window of 1 decade(s) (>= 7 points); use >= 6 points per decade"),
    (np.logspace(6, 7.2, 9), "too short for two windows of 1 decade(s) overlapping by at most half; extend it to "
                             ">= 1.5 decades (deeper than 1.58e+07"),
    (np.r_[np.logspace(6, 7, 19), 1e9], "unevenly spaced: some decade holds fewer than 7 points"),
])
def test_a_short_grid_says_what_to_change(x, says):
    """A user's own grid (issue 35, item 5): the reason of an inconclusive row names what is missing and what
    to change, and the one-line summary (headline) carries it instead of 'nan [nan, nan]'."""
    from labeldp_sim.stats.windows import headline

    m = _row(fit_law_free(_points(x, x ** (-2 / 3)), _spec("reg_nonprivate")))
    assert m.verdict == "inconclusive" and says in m.reason, m.reason
    assert says in headline(m.reason) and "Ruled out" not in headline(m.reason)


def test_a_moving_slope_is_told_to_go_deeper():
    M = N_GRID ** (-2 / 3) + 300 * N_GRID ** -1.0
    m = _row(fit_law_free(_points(N_GRID, M), _spec("reg_nonprivate")))
    assert m.verdict == "pre-asymptotic" and f"deeper than {N_GRID[-1]:.3g}" in m.reason


# issue 35, item 4: the convergence rule reads the trend of the deepest windows, not one earlier window
EPS_GRID = np.logspace(-6, -1, 31)  # six points per decade, as Table I's ε sweeps


def _with_local_slope(x, slope_of_log10x, amplitude=0.0):
    """M whose local log-log slope is ``slope_of_log10x(log10 x)``, times the grids' discreteness."""
    t = np.log10(x)
    fine = np.linspace(t[0], t[-1], 4001)
    log_m = np.cumsum(np.r_[0.0, np.diff(fine) * slope_of_log10x(fine[:-1])]) * np.log(10)
    return np.exp(np.interp(t, fine, log_m) + _discreteness(np.log(x), amplitude))


def _eps_row(M, cell="cls_label_ldp", tol=0.02):
    spec = _spec(cell)
    spec.tol = tol
    return _row(fit_law_free(_points(EPS_GRID, M, axis="eps", h_exponent=-0.5), spec, 2.0))


def test_a_settled_offset_is_judged_on_its_ci_not_on_a_window_two_decades_back():
    """The slope climbs to -1.310 by ε = 10^-3.2, then stays: the previous window (a decade back) still
    reads the climb, but the trend across the deepest windows is below tol/2, so the verdict is the
    deepest CI's (it lies wholly outside Table I's -4/3 ± 0.02: inconsistent), not 'pre-asymptotic'."""
    m = _eps_row(_with_local_slope(EPS_GRID, lambda t: np.where(t < -3.2, -1.31 + 0.08 * (-3.2 - t), -1.31)))
    assert m.prev_slope - m.deep_slope > 0.4 * 0.02  # the previous window still reads the climb
    assert abs(m.trend_change) < 0.01 and m.verdict == "inconsistent", m.reason


def test_a_slope_still_climbing_is_pre_asymptotic_whatever_the_previous_windows_ci():
    """A steady drift of 0.03 per decade over the whole sweep, under discreteness wide enough that the
    previous window's CI covers the deepest slope: the deepest windows' trend still calls it moving."""
    m = _eps_row(_with_local_slope(EPS_GRID, lambda t: -0.5 - 0.03 * (t + 1)), cell="cls_label_cdp", tol=0.05)
    assert m.verdict == "pre-asymptotic" and m.trend_change < -0.02, m.reason
    assert "trend" in m.reason and "deeper than" in m.reason


def test_a_drift_below_half_the_tolerance_counts_as_settled():
    """0.004 per decade is below max(deepest half-width, tol/2) across the deepest windows: consistent."""
    m = _eps_row(_with_local_slope(EPS_GRID, lambda t: -4 / 3 - 0.004 * (t + 1)))
    assert m.verdict == "consistent" and 0 < abs(m.trend_change) < 0.01, m.reason


def test_a_window_needs_window_points_so_its_t_quantile_has_five_degrees_of_freedom():
    """Two points per decade give two-decade windows of 5 points, fewer than law_free.window_points = 7:
    no window, and the reason asks for >= 3 points per decade instead of fitting t(3)."""
    x = np.logspace(5, 11, 13)
    spec = _spec("reg_nonprivate")
    m = _row(fit_law_free(_points(x, x ** (-2 / 3)), spec, 2.0))
    assert np.isnan(m.deep_slope) and m.verdict == "inconclusive"
    assert "(>= 7 points); use >= 3 points per decade" in m.reason, m.reason


def _theorem7_fits(folder, beta, d, slope, half, table1, theorem7, verdicts, tol=0.02):
    rows = []
    for statement, theory, primary, v in (("Table I", table1, True, verdicts[0]), ("Theorem 7", theorem7, False,
                                                                                   verdicts[1])):
        rows.append({"cell": "reg_label_cdp", "experiment": folder, "beta": beta, "axis": "eps", "d": d,
                     "tol": tol, "quantity": "M", "statement": statement, "primary": primary, "theory": theory,
                     "deep_slope": slope, "deep_ci_low": slope - half, "deep_ci_high": slope + half,
                     "verdict": v, "reason": "x"})
    return pd.DataFrame(rows)


def test_theorem7_table_rejects_only_where_the_gap_exceeds_tol_plus_the_half_width(tmp_path):
    """Issue 35, item 3: β = 0.5, d = 3 separates (gap 0.036 > 0.02 + 0.011); β = 0.25, d = 3 cannot at ± 0.02
    (gap 0.011 < tol) and names the margin that would; a wide CI names the half-width that would."""
    from labeldp_sim.papers.table1.law_free.table import theorem7_table

    cases = {"reg_label_cdp_beta05": (0.5, 3, -0.287, 0.011, -2 * 0.5 / 3.5, -2 * 0.5 / 4, ("consistent", "inconsistent")),
             "reg_label_cdp_beta025": (0.25, 3, -0.154, 0.002, -0.5 / 3.25, -0.5 / 3.5, ("consistent", "consistent")),
             "reg_full_cdp_beta05": (0.5, 2, -0.40, 0.05, -1 / 2.5, -1 / 3, ("inconclusive", "inconclusive"))}
    for folder, args in cases.items():
        (tmp_path / folder).mkdir()
        _theorem7_fits(folder, *args).to_csv(tmp_path / folder / "fit.csv", index=False)
    table = theorem7_table(tmp_path).set_index("experiment")
    assert table.loc["reg_label_cdp_beta05", "adjudicated"] == "Theorem 7 rejected"
    low = table.loc["reg_label_cdp_beta025"]
    assert low.adjudicated == "not separated" and "0.011 ≤ tol" in low.why and "tol ≤ 0.005" in low.why
    wide = table.loc["reg_full_cdp_beta05"]
    assert wide.adjudicated == "not separated" and "half-width below 0.047" in wide.why


def test_each_window_ci_holds_the_slopes_of_its_two_halves():
    """fold_grid_shift: a window's every other point is the sweep shifted by half its step.  The halves'
    slopes are those of an independent polyfit, the CI becomes their hull with the fit's own CI (kept in
    fit_ci_*), and a clean power law is left as it was (both halves give its exponent to rounding)."""
    from labeldp_sim.stats.windows import fold_grid_shift, trend

    lx = np.log(EPS_GRID)
    wobble = 0.03 * np.sin(2 * np.pi * np.log10(EPS_GRID) * 2.4)  # a period of 2.5 grid steps
    frame = _points(EPS_GRID, np.exp(-0.8 * lx + wobble), axis="eps")
    wins = window_fits(frame, "eps", "M", "M_se", True, decades=2.0, min_points=7)
    folded = fold_grid_shift(wins, frame, "eps", "M", "M_se", True)
    for (_, raw), (_, win) in zip(wins.iterrows(), folded.iterrows()):
        inside = np.flatnonzero((EPS_GRID >= raw.window_lo) & (EPS_GRID <= raw.window_hi))
        even, odd = (np.polyfit(lx[h], -0.8 * lx[h] + wobble[h], 1)[0] for h in (inside[0::2], inside[1::2]))
        # float64 sums over <= 13 points: 1e-9 is far above their rounding, far below a slope's digits
        assert win.shift_slope_even == pytest.approx(even, abs=1e-9)
        assert win.shift_slope_odd == pytest.approx(odd, abs=1e-9)
        assert (win.fit_ci_low, win.fit_ci_high) == (raw.ci_low, raw.ci_high)
        assert win.ci_low == min(raw.ci_low, even, odd) and win.ci_high == max(raw.ci_high, even, odd)
        assert win.ci_method == CI_EXACT + CI_SHIFT_HULL
    # the trend test reads the fits' own half-widths: folding never loosens it
    assert trend(folded, 2.0).moving(folded[folded.deepest].iloc[0], 0.02) == \
        trend(wins, 2.0).moving(wins[wins.deepest].iloc[0], 0.02)
    clean = _points(EPS_GRID, EPS_GRID ** -0.8, axis="eps")
    plain = window_fits(clean, "eps", "M", "M_se", True, decades=2.0, min_points=7)
    kept = fold_grid_shift(plain, clean, "eps", "M", "M_se", True)
    assert np.allclose(kept[["shift_slope_even", "shift_slope_odd"]], -0.8, atol=1e-9)
    assert np.array_equal(kept.ci_low, plain.ci_low) and np.array_equal(kept.ci_high, plain.ci_high)


def test_a_verdict_that_one_half_of_the_grid_would_not_give_is_not_consistent():
    """The deepest window's own fit lies inside -4/3 ± 0.02, but its odd-ranked points (the grid shifted by
    half its step) give a slope outside it: the folded CI straddles the margin, so the row is inconclusive
    and its reason shows both halves.  Four displaced points at the window's ends make the halves tilt apart
    while the full fit's residuals stay small."""
    lx = np.log(EPS_GRID)
    wobble = np.zeros(len(EPS_GRID))
    wobble[-13:] = 0.06 * np.r_[1, -1, np.zeros(9), 1, -1]
    m = _eps_row(np.exp(-4 / 3 * lx + wobble))
    assert -4 / 3 - 0.02 < m.deep_fit_ci_low and m.deep_fit_ci_high < -4 / 3 + 0.02  # consistent unfolded
    assert m.deep_shift_slope_odd > -4 / 3 + 0.02 and m.deep_ci_high == m.deep_shift_slope_odd
    assert m.verdict == "inconclusive" and "its halves (the grid shifted by half its step)" in m.reason, m.reason


@pytest.mark.parametrize("flag, says", [
    ("G_est*=1024 at the grid cap", "raise law_free.G_max.1"),
    ("T*=16 on its grid edge", "widen law_free.T_range"),
])
def test_points_left_out_at_a_grid_edge_name_the_key_that_keeps_them(flag, says):
    """Issue 35, item 5: a point whose optimum sits on a cap is left out, and the reason says which key's
    range stopped it (G_max per d for the cube counts, T_range for the clip level)."""
    x = np.logspace(3, 9, 37)
    points = _points(x, x ** (-2 / 3)).assign(edge=[flag] * 6 + [""] * 31)
    m = _row(fit_law_free(points, _spec("reg_nonprivate")))
    assert "grid edges: 6 points" in m.reason and f"to keep them, {says}" in m.reason, m.reason
