r"""Law-free analysis (SPEC §5a): M, S and the law-tied value per point; fits, windows, verdicts.

Per grid point the trials of :mod:`.search` give R_r[i, t] (replicate r,
admitted instance i, oracle tuning t = (G_est or k, T)), the law-tuned
column R_r[i, law] and the law-tied value R_r[law instance, law tuning].

**Exact entries** (``spec.exact``: each entry is the estimator's expected
risk, :meth:`~.estimators.Estimator.expected_risks`; one replicate)

    M = min_t max_i R[i, t],   S = max_i R[i, law],   law-tied = R[law, law],

with no Monte-Carlo error (M_se = S_se = 0): no cross-fitting is needed.

**Monte-Carlo entries**: the selection is **cross-fitted**: on the even
replicates (half A) take t_A = argmin_t max_i mean_A R[i, t] and
i_A = argmax_i mean_A R[i, t_A], and evaluate R[i_A, t_A] on the odd
replicates (half B); then swap the halves.

    M = ( mean_B R[i_A, t_A] + mean_A R[i_B, t_B] ) / 2,
    se(M) = ½ √( var_B / n_B + var_A / n_A ),

so the number reported was not used to choose where it is read, and its
standard error is an ordinary Monte-Carlo one.  S is cross-fitted the same
way over i at the law's tuning.

The arg-optima reported (G*_inst, G*_est or k*, T*) come from all
replicates; h*_est is refined by a parabola through log max_i R around the
grid minimum (a sub-grid vertex, clipped to the neighbouring grid values).

Points left out of the fits of M (issue 20, item 2), each with its reason in
``points.csv``:

* ``edge``: an optimum (t* in a tuning dimension, or i*) on a truncated end of
  its grid (a cap: G_max, T's range);
* ``pre_asymptotic``: the oracle tuning is the trivial estimator
  (:meth:`~labeldp_sim.papers.table1.estimators.BandwidthTuned.trivial_tuning`: G_est = 1, k = N), or
  the worst instance sits at the coarsest admitted scale where the class's
  admission cut the family (the first admitted G_inst > 1: G_inst = 1, one
  bump over the cube, is the end of what exists, as G_est = 1 is for the
  edges): i* is that scale and no other scale ties with it — a tie is a risk within
  ``INSTANCE_TIE`` (2 %) of the worst, or within two Monte-Carlo standard
  errors.  (With exact entries a coarse regression bump and a bump at the
  estimator's scale have the same bias to a fraction of a percent; a coarsest
  arg-max among such ties is not the pinning the flag is about.)
  Both flags mark the **shallow end** of a sweep (issue 20: "the lower end of
  a sweep starts where the optimum is interior"): only the run of flagged
  points from the smallest N or ε up to the first unflagged one is left out.
  Past it, a worst instance at the coarsest admitted scale is the family's
  hardest member at that depth (the features+label cells at d = 3 keep it
  there to the deepest point, as G_inst = 1 does where it is admitted), and
  the two-window flattening check, not the flag, says whether the slope has
  settled.

The slopes are local (:mod:`labeldp_sim.stats.windows`): windows of ``law_free.window_decades``
decades (2 by default), their 95 %
CI formed as that module says (OLS with the residual error on exact entries,
WLS with Birge inflation on Monte-Carlo ones), widened to the slopes of each
window's two interleaved halves (:func:`~labeldp_sim.stats.windows.fold_grid_shift`:
the sweep shifted by half its step), and the verdict is taken on the
deepest window (finest oracle bandwidth) against the trend of the deepest windows.  The
whole-range slope stays in ``fit.csv`` as extra information; the slope of
log h*_est is an OLS fit compared with the law's exponent (within ``H_TOL``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from labeldp_sim.stats.fit import verdict
from labeldp_sim.harness.store import atomic_write
from labeldp_sim.papers.table1.law_free.matrices import point_matrices
from labeldp_sim.papers.table1.law_free.plots import plot_convergence, plot_heatmaps, plot_rates_law_free
from labeldp_sim.papers.table1.law_free.table import write_minimax_table
from labeldp_sim.stats.windows import (SHIFT_COLUMNS, WINDOW_COLUMNS, WINDOW_DECADES, fold_grid_shift, local_slope,
                                       trend, verdict_reason, window_fits, window_verdict)

__all__ = ["point_matrices", "cross_fit", "point_values", "analyse", "fit_law_free", "write_law_free",
           "write_minimax_table", "H_TOL", "TUNING_LABEL"]

H_TOL = 0.1
# relative margin within which another instance ties with the worst one (the coarsest scale counts as
# the worst only when it beats every other admitted scale by more than this)
INSTANCE_TIE = 0.02
TUNING_LABEL = "oracle (best on the grid for the worst admitted instance)"


def cross_fit(R: np.ndarray, reps: np.ndarray) -> tuple[float, float]:
    """Cross-fitted min over tunings of max over instances (see module docstring); R: (r, i, t)."""
    if R.ndim == 2:
        R = R[:, :, None]
    halves = [reps % 2 == 0, reps % 2 == 1]
    values, variances = [], []
    for select, evaluate in (halves, halves[::-1]):
        mean = R[select].mean(axis=0)
        t = int(np.argmin(mean.max(axis=0)))
        i = int(np.argmax(mean[:, t]))
        held = R[evaluate][:, i, t]
        values.append(held.mean())
        variances.append(held.var(ddof=1) / len(held))
    return float(np.mean(values)), float(0.5 * np.sqrt(sum(variances)))


def _vertex(log_x: np.ndarray, y: np.ndarray, j: int) -> float:
    """Sub-grid minimum: vertex of the parabola through (j−1, j, j+1), clipped to [x_{j−1}, x_{j+1}]."""
    if j == 0 or j == len(y) - 1:
        return float(log_x[j])
    if np.any(y[j - 1:j + 2] <= 0):
        return float(log_x[j])
    x3, y3 = log_x[j - 1:j + 2], np.log(y[j - 1:j + 2])
    a, b, _ = np.polyfit(x3, y3, 2)
    if a <= 0:
        return float(log_x[j])
    return float(np.clip(-b / (2 * a), x3[0], x3[2]))


def optimal_tunings(mats: dict) -> dict:
    """Arg-optima from all replicates, their edge flags, the flat range of the worst instance."""
    R = mats["R"]
    mean = R.mean(axis=0)
    # one replicate: exact entries, no Monte-Carlo error
    se = R.std(axis=0, ddof=1) / np.sqrt(R.shape[0]) if R.shape[0] > 1 else np.zeros_like(mean)
    worst = mean.max(axis=0)
    t = int(np.argmin(worst))
    i = int(np.argmax(mean[:, t]))
    tune_value, T = mats["tunes"][t]
    tune_values = sorted({v for v, _ in mats["tunes"]})
    T_values = sorted({c for _, c in mats["tunes"]})
    # Only a truncated end is an edge: G = 1 (one cube), k = 1 and k = N are the ends of
    # what exists; the caps G_max (and T's range at both ends) are where the grid stops.
    edges = []
    # the cap's band: above the coarse grid's last value but one (refined tunings sit between the two)
    below_cap = mats.get("below_cap", tune_values[-2] if len(tune_values) > 1 else -np.inf)
    if tune_value > below_cap and mats["tune_cap"]:
        edges.append(f"{mats['tune_col']}*={tune_value} at the grid cap")
    T_range = mats.get("T_range") or ((T_values[0], T_values[-1]) if len(T_values) > 1 else None)
    if T_range is not None and (T <= T_range[0] * (1 + 1e-9) or T >= T_range[1] * (1 - 1e-9)):
        edges.append(f"T*={T:.3g} on its grid edge")
    insts = mats["insts"]
    if i == len(insts) - 1 and len(insts) > 1:
        edges.append(f"G*_inst={insts[i]} at the grid cap")
    # instances tied with the worst: within two standard errors, or within INSTANCE_TIE of it (exact
    # entries: coarse regression bumps and bumps at the estimator's scale tie to a fraction of a percent)
    flat = mean[:, t] >= mean[i, t] - np.maximum(2 * np.hypot(se[i, t], se[:, t]), INSTANCE_TIE * mean[i, t])
    # the worst-case profile over the first tuning dimension at T*, for the sub-grid vertex
    same_T = [j for j, (_, c) in enumerate(mats["tunes"]) if c == T]
    profile_x = np.log([mats["tunes"][j][0] for j in same_T])
    jmin = int(np.argmin(worst[same_T]))
    return {"t": t, "i": i, "tune": tune_value, "T": T, "G_inst": int(insts[i]), "edge": "; ".join(edges),
            "inst_flat_lo": int(insts[flat].min()), "inst_flat_hi": int(insts[flat].max()),
            "log_tune_vertex": _vertex(profile_x, worst[same_T], jmin)}


def point_values(mats: dict, exact: bool) -> dict:
    """M, S and the law-tied value of one point with their standard errors (module docstring)."""
    if exact:  # expected risks: the min-max of the matrix itself, nothing to cross-fit
        R, law = mats["R"].mean(axis=0), mats["law"].mean(axis=0)
        return {"M": float(R.max(axis=0).min()), "M_se": 0.0, "S": float(law.max()), "S_se": 0.0,
                "law_tied": float(np.mean(mats["tied"])), "law_tied_se": 0.0}
    M, M_se = cross_fit(mats["R"], mats["reps"])
    S, S_se = cross_fit(mats["law"], mats["reps"])
    return {"M": M, "M_se": M_se, "S": S, "S_se": S_se, "law_tied": float(np.mean(mats["tied"])),
            "law_tied_se": float(np.std(mats["tied"], ddof=1) / np.sqrt(len(mats["tied"])))}


def pre_asymptotic_check(est, opt: dict, mats: dict, N: int) -> str:
    """Why a point is pre-asymptotic ("" if it is not): trivial oracle tuning, coarsest worst instance."""
    reasons = []
    if est.trivial_tuning(opt["tune"], N):
        reasons.append(f"oracle tuning trivial ({mats['tune_col']}*={opt['tune']:g})")
    coarsest = int(mats["insts"][0])
    # G_inst = 1 (one bump over the cube) is the end of what exists, like G_est = 1 for the edges; a
    # coarsest scale above 1 is where the class's admission cut the family, and a worst instance pinned
    # there says the search has not reached the scales the rate is about
    if len(mats["insts"]) > 1 and coarsest > 1 and opt["inst_flat_hi"] == coarsest:
        reasons.append(f"worst instance at the coarsest admitted scale (G*_inst={coarsest}; coarser ones "
                       "are outside the class)")
    return "; ".join(reasons)


def _law_exponent(cell, axis: str, x_lo: float, x_hi: float, fixed: float, beta: float, d: int, p) -> float:
    """d log h_law / d log(axis) between the two ends of a fit (the law's tuning exponent)."""
    def h(x):
        N, eps = (x, fixed) if axis == "N" else (fixed, x)
        return cell.bandwidth(N, eps, beta, d, 1.0, p)
    return float(np.log(h(x_hi) / h(x_lo)) / np.log(x_hi / x_lo))


def analyse(trials: pd.DataFrame, spec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-point table (M, S, law-tied, optima, flags) and the fits of one law-free run."""
    rows = []
    cell, est = spec.cell, spec.estimator
    exact = bool(spec.exact)
    by_point = dict(tuple(trials.groupby(["axis", "d", "N_requested", "eps_requested"], sort=False)))
    for pt in spec.points:
        part = by_point[(pt.axis, pt.d, pt.N_requested, pt.eps_requested)]
        mats = point_matrices(part, est.tuning)
        mats["tune_cap"] = est.grid_capped(mats["tunes"][-1][0], pt.N)
        coarse = spec.est_grids.get(pt.id)
        if coarse is not None and len(coarse) > 1:
            mats["below_cap"] = coarse[-2]
        # the clip levels' grid ends (the exact path resolves T between them, so the tunes' own T differ)
        T_grid = [T for T in spec.T_grid if T is not None]
        mats["T_range"] = (min(T_grid), max(T_grid)) if T_grid else None
        opt = optimal_tunings(mats)
        log_h_est = est.log_bandwidth(opt["log_tune_vertex"], pt.N, pt.d)
        dist = spec.distributions[pt.d]
        rows.append({
            "cell": cell.name, "axis": pt.axis, "d": pt.d, "N": pt.N, "eps": pt.eps,
            "in_regime": cell.in_regime(pt.axis, pt.N, pt.eps, dist.beta, pt.d, dist.p),
            **point_values(mats, exact),
            "tuning": TUNING_LABEL, "tuning_parameter": mats["tune_col"],
            "opt_tuning": opt["tune"], "opt_T": np.nan if opt["T"] == -1.0 else opt["T"],
            "h_est_star": float(np.exp(log_h_est)),
            "law_tuning": mats["law_tuning"][0], "law_T": mats["law_tuning"][1],
            "G_inst_star": opt["G_inst"], "G_inst_flat": f"{opt['inst_flat_lo']}-{opt['inst_flat_hi']}",
            "law_G_inst": mats["law_inst"],
            "instances": len(mats["insts"]),
            "G_inst_max": int(mats["insts"][-1]), "tunings": len(mats["tunes"]),
            "replicates": len(mats["reps"]), "entries": "exact" if exact else "Monte Carlo",
            "edge": opt["edge"], "pre_asymptotic": pre_asymptotic_check(est, opt, mats, pt.N),
            "margin_C_gamma": spec.margin_constant.get(pt.d, np.nan),
        })
    points = shallow_end_only(pd.DataFrame(rows))
    for d in spec.distributions:
        scales = {G: ok for (dd, G), ok in spec.admitted.items() if dd == d}
        refused = [G for G, ok in sorted(scales.items()) if not ok]
        constant = spec.margin_constant.get(d, np.nan)
        points.loc[points.d == d, "admission"] = (
            f"{len(scales) - len(refused)}/{len(scales)} grid scales admitted"
            + (f" (margin C_γ = {constant:.3g})" if np.isfinite(constant) else "")
            + (f"; refused G = {refused}" if refused else ""))
    return points, fit_law_free(points, spec, spec.window_decades)


def shallow_end_only(points: pd.DataFrame) -> pd.DataFrame:
    """Pre-asymptotic flags kept on the run of flagged points at the shallow end of each (axis, d) sweep
    (module docstring); a flagged point deeper than the first unflagged one is kept in the fits."""
    points = points.copy()
    for (axis, _), group in points.groupby(["axis", "d"], sort=False):
        ordered = group.sort_values(axis)
        clear = (ordered.pre_asymptotic == "").to_numpy()
        if clear.any():
            later = ordered.index[int(np.argmax(clear)):]
            points.loc[later, "pre_asymptotic"] = ""
    return points


def _span(axis: str, frame: pd.DataFrame) -> str:
    return (f"{'N' if axis == 'N' else 'ε'} {frame[axis].min():.3g}–{frame[axis].max():.3g}"
            if len(frame) else "none")


def _ruled_out(axis: str, group: pd.DataFrame, regime: pd.DataFrame, oracle: bool) -> str:
    """What was ruled out before the windows were fitted: range, grid edges, pre-asymptotic points,
    class admission (the last from the admission check of every grid scale)."""
    parts = [f"range: {len(group) - len(regime)} of {len(group)} points outside the theorem's regime "
             f"(in regime {_span(axis, regime)})"]
    if oracle:
        edge = regime[regime.edge != ""]
        parts.append(f"grid edges: {len(edge)} points with an optimum on a grid edge left out"
                     + (f" ({_span(axis, edge)}; {_edge_advice(edge, int(group.d.iloc[0]))})" if len(edge) else ""))
        pre = regime[(regime.edge == "") & (regime.pre_asymptotic != "")]
        if len(pre):
            kinds = sorted({reason.split(" (")[0] for r in pre.pre_asymptotic for reason in r.split("; ")})
            parts.append(f"pre-asymptotic: {len(pre)} points left out ({_span(axis, pre)}: {', '.join(kinds)})")
        else:
            parts.append("pre-asymptotic: none (no trivial tuning, no worst instance at the coarsest scale)")
    if "admission" in group and isinstance(group.admission.iloc[0], str):
        parts.append(f"class admission: {group.admission.iloc[0]}")
    return "; ".join(parts)


def _edge_advice(edge: pd.DataFrame, d: int) -> str:
    """What keeps such points: the key whose range stopped their optima (:func:`optimal_tunings`'s flags)."""
    flags = " ".join(edge.edge)
    advice = []
    if "at the grid cap" in flags:
        advice.append(f"raise law_free.G_max.{d} (where G_max, not the data cap G^d <= N, stopped the grid)")
    if "on its grid edge" in flags:
        advice.append("widen law_free.T_range")
    return "to keep them, " + " and ".join(advice) if advice else "see points.csv, column edge"


def _optima_in(axis: str, used: pd.DataFrame, win) -> str:
    """The oracle's optima over the points of one window (why a deviation is what it is)."""
    inside = used[(used[axis] >= win.window_lo) & (used[axis] <= win.window_hi)]
    return (f"in the deepest window G*_inst {int(inside.G_inst_star.min())}-{int(inside.G_inst_star.max())}, "
            f"{inside.tuning_parameter.iloc[0]}* {inside.opt_tuning.min():g}-{inside.opt_tuning.max():g}")


QUANTITIES = (("M", "M_se", TUNING_LABEL), ("S", "S_se", "the law's"),
              ("law_tied", "law_tied_se", "the law's, on the law's instance"))


def fit_law_free(points: pd.DataFrame, spec, decades: float = WINDOW_DECADES) -> pd.DataFrame:
    """Whole-range and window fits of M, S and the law-tied value on each (axis, d), verdicts per statement.

    ``decades`` is the span of one local-slope window (``law_free.window_decades``).

    Rows of quantity M, S, law_tied (one per statement of the exponent): the
    whole-range fit in ``slope``/``se``/``ci_low``/``ci_high`` (and its
    equivalence test in ``whole_verdict``), the deepest and previous windows
    in ``deep_*``/``prev_*``, and the verdict of
    :func:`~labeldp_sim.stats.windows.window_verdict` in ``verdict``.  Rows of quantity
    ``<q>_window`` (``primary`` False): every window's local slope.
    """
    cell, tol, rows, window_rows = spec.cell, spec.tol, [], []
    exact, decades = bool(spec.exact), float(decades)
    dist0 = next(iter(spec.distributions.values()))
    beta, gamma, p = dist0.beta, dist0.gamma, dist0.p
    points = points.assign(pre_asymptotic=points.get("pre_asymptotic", "")).fillna({"pre_asymptotic": ""})
    for (axis, d), group in points.groupby(["axis", "d"], sort=True):
        if axis not in cell.axes:
            continue
        regime = group[group.in_regime]
        used = regime[(regime.edge == "") & (regime.pre_asymptotic == "")]
        fixed = group.eps.iloc[0] if axis == "N" else group.N.iloc[0]
        law_h = (_law_exponent(cell, axis, float(used[axis].min()), float(used[axis].max()), fixed, beta,
                               int(d), p) if len(used) >= 2 else np.nan)
        h_slope = (float(np.polyfit(np.log(used[axis]), np.log(used.h_est_star), 1)[0])
                   if len(used) >= 2 else np.nan)
        for quantity, se, tuning in QUANTITIES:
            subset = used if quantity == "M" else regime
            subset = subset[(subset[quantity] > 0) & ((subset[se] > 0) | exact)]  # log of a zero risk: none
            whole = (local_slope(subset[axis], subset[quantity], subset[se], exact)
                     if len(subset) >= max(spec.min_points, 3) else None)
            wins = fold_grid_shift(window_fits(subset, axis, quantity, se, exact, decades=decades,
                                               min_points=spec.window_points), subset, axis, quantity, se, exact)
            deep = wins[wins.deepest].iloc[0] if wins.deepest.any() else None
            prev = wins[wins.previous].iloc[0] if wins.previous.any() else None
            moves = trend(wins, decades)
            ruled = _ruled_out(axis, group, regime, quantity == "M")
            base = {"cell": cell.name, "experiment": spec.name, "beta": beta, "gamma": gamma, "p": p,
                    "axis": axis, "d": int(d), "tol": tol, "window_decades": decades,
                    "entries": "exact" if exact else f"Monte Carlo ({int(group.replicates.max())} replicates)",
                    "ci_method": wins.ci_method.iloc[0] if len(wins) else (whole or {}).get("ci_method", "")}
            for rank, exponent in enumerate(cell.statements(axis)):
                theory = exponent.slope(beta, gamma, int(d), p)
                row = {**base, "quantity": quantity, "statement": exponent.statement, "primary": rank == 0,
                       "theory": theory, "theory_formula": exponent.formula, "theory_source": exponent.source,
                       "points": len(subset), "points_in_regime": len(regime),
                       "points_edge": int((regime.edge != "").sum()),
                       "points_pre_asymptotic": int(((regime.edge == "") & (regime.pre_asymptotic != "")).sum()),
                       "tuning": tuning, "windows": len(wins),
                       "h_est_slope": h_slope if quantity == "M" else np.nan,
                       "law_h_exponent": law_h if quantity == "M" else np.nan,
                       **_whole(whole, theory, tol), **_window_fields("deep", deep), **_window_fields("prev", prev),
                       "trend_windows": 0 if moves is None else moves.windows,
                       "trend_change": np.nan if moves is None else moves.change}
                row["verdict"] = window_verdict(deep, prev, theory, tol, moves)
                row["reason"] = verdict_reason(row["verdict"], deep, prev, theory, tol, axis, exact, ruled, decades,
                                               x=subset[axis], trend_=moves, min_points=spec.window_points)
                if quantity == "M" and deep is not None and row["verdict"] in ("inconsistent", "pre-asymptotic"):
                    row["reason"] += "; " + _optima_in(axis, subset, deep)
                row["h_est_ok"] = (bool(abs(h_slope - law_h) <= H_TOL)
                                   if quantity == "M" and np.isfinite(h_slope) else None)
                rows.append(row)
            primary_theory = cell.statements(axis)[0].slope(beta, gamma, int(d), p)
            for _, w in wins.iterrows():
                window_rows.append({**base, "quantity": f"{quantity}_window", "statement": "", "primary": False,
                                    "theory": primary_theory, "tuning": tuning, **w.to_dict()})
    fits = pd.DataFrame(rows + window_rows)
    for column in WINDOW_COLUMNS + SHIFT_COLUMNS:  # a run without any window still has the columns (figures, table)
        if column not in fits:
            fits[column] = np.nan
    for flag in ("deepest", "previous"):
        fits[flag] = fits[flag].eq(True)  # False on the statement rows
    return fits


def _whole(whole: dict | None, theory: float, tol: float) -> dict:
    """The whole-range fit's columns (extra information: it mixes the pre-asymptotic start in)."""
    if whole is None:
        return {"slope": np.nan, "se": np.nan, "ci_low": np.nan, "ci_high": np.nan, "intercept": np.nan,
                "birge": np.nan, "whole_verdict": "too few points"}
    return {k: whole[k] for k in ("slope", "se", "ci_low", "ci_high", "intercept", "birge")} | {
        "whole_verdict": verdict(whole["ci_low"], whole["ci_high"], theory, tol)}


def _window_fields(prefix: str, win) -> dict:
    """``deep_window_lo`` … ``prev_ci_high``: one window's ends, points, slope and CI (NaN: none)."""
    keys = ("window_lo", "window_hi", "points", "slope", "ci_low", "ci_high", *SHIFT_COLUMNS)
    return {f"{prefix}_{k}": (np.nan if win is None else win[k]) for k in keys}


def write_law_free(spec, trials: pd.DataFrame, points: pd.DataFrame, fits: pd.DataFrame, out: Path) -> None:
    """fit.csv, points.csv, heatmap.png, rate.png and convergence.png of one cell (trials stay in the store)."""
    atomic_write(out / "points.csv", lambda p: points.to_csv(p, index=False))
    atomic_write(out / "fit.csv", lambda p: fits.to_csv(p, index=False))
    from labeldp_sim.papers.table1.parameters import parameters_text, spec_parameters
    from labeldp_sim.report.figures import figure_title

    title = figure_title(spec.name, parameters_text(spec_parameters(spec)))
    plot_rates_law_free(points, fits, out / "rate.png", title)
    plot_heatmaps(trials, points, out / "heatmap.png", title, spec.estimator.tuning)
    plot_convergence(fits, out / "convergence.png", title)
