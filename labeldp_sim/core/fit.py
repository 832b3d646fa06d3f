r"""Summaries and log-log rate fits with verdicts (SPEC §5).

For each (axis, group) the fit is a weighted least-squares regression of
log(mean excess risk) on log(axis value) over the points in the axis's regime
(:meth:`~labeldp_sim.theory.Cell.in_regime`), with weights 1/se_log², where
se_log = se/mean is the delta-method standard error of the log mean
(statsmodels ``WLS``).

The slope's standard error uses the Monte-Carlo errors as known variances
(``cov_type="fixed scale"``), inflated by the Birge ratio χ²/df when the
points scatter about the line more than their errors allow (a curved or
wrongly-tuned rate shows up as a wider CI, not a spuriously narrow one).

Verdict by equivalence test with margin ``tol``:
*consistent* when the 95% CI lies inside theory ± tol, *inconsistent* when it
lies wholly outside, *inconclusive* otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats

__all__ = ["summarize", "fit_slope", "fit_rates", "verdict"]

POINT_KEYS = ["experiment", "cell", "axis", "d", "N", "eps", "N_requested", "eps_requested",
              "G", "G_est", "bumps", "beta", "gamma", "p", "K", "minimax_hard", "in_regime"]


def summarize(trials: pd.DataFrame) -> pd.DataFrame:
    """Per grid point: mean excess risk, its standard error, replicates."""
    keys = [k for k in POINT_KEYS if k in trials]
    grouped = trials.groupby(keys, sort=False, dropna=False)
    summary = grouped.agg(
        mean=("excess_risk", "mean"),
        sd=("excess_risk", "std"),
        replicates=("excess_risk", "size"),
        regret_fraction=("regret_fraction", "mean"),
        seconds=("seconds", "sum"),
    ).reset_index()
    summary["se"] = summary.sd / np.sqrt(summary.replicates)
    cols = keys + ["mean", "se", "replicates", "regret_fraction", "seconds"]
    return summary[cols]


def summarize_by(trials: pd.DataFrame, keys, value: str) -> pd.DataFrame:
    """Per group of ``keys`` (in order of appearance): mean of ``value``, trials, se and the
    normal 95% CI, columns ``keys + [mean, trials, se, ci_low, ci_high]``."""
    summary = trials.groupby(list(keys), sort=False)[value].agg(["mean", "std", "size"]).reset_index()
    summary["se"] = summary["std"] / np.sqrt(summary["size"])
    summary["ci_low"] = summary["mean"] - 1.96 * summary.se
    summary["ci_high"] = summary["mean"] + 1.96 * summary.se
    return summary.rename(columns={"size": "trials"}).drop(columns="std")


def verdict(ci_low: float, ci_high: float, theory: float, tol: float) -> str:
    """Equivalence-test verdict of SPEC §5."""
    if theory - tol <= ci_low and ci_high <= theory + tol:
        return "consistent"
    if ci_high < theory - tol or ci_low > theory + tol:
        return "inconsistent"
    return "inconclusive"


def fit_slope(x, mean, se, level=0.95) -> dict:
    """WLS slope of log(mean) on log(x) with Monte-Carlo standard errors.

    Returns slope, se, ci_low, ci_high, intercept, birge (χ²/df, ≥ 1 used).
    """
    x, mean, se = (np.asarray(a, dtype=float) for a in (x, mean, se))
    y = np.log(mean)
    se_log = np.maximum(se / mean, 1e-12)
    design = sm.add_constant(np.log(x))
    weights = 1.0 / se_log ** 2
    ols = sm.WLS(y, design, weights=weights).fit()
    df = len(x) - 2
    birge = float(np.sum(weights * ols.resid ** 2) / df) if df > 0 else 1.0
    result = sm.WLS(y, design, weights=weights).fit(
        cov_type="fixed scale", cov_kwds={"scale": max(1.0, birge)})
    z = stats.norm.ppf(0.5 + level / 2)
    slope, slope_se = float(result.params[1]), float(result.bse[1])
    return {"slope": slope, "se": slope_se, "ci_low": slope - z * slope_se,
            "ci_high": slope + z * slope_se, "intercept": float(result.params[0]),
            "birge": birge}


def fit_rates(summary: pd.DataFrame, cell, tol: float, min_points: int = 3) -> pd.DataFrame:
    """One fit row per (axis, d) and statement of the theory, with a verdict each.

    The first statement of each axis is Table I's (``primary``); cells whose
    exponent the paper states differently elsewhere (Theorem 7 for the central
    regression cells) get one more row per statement, from the same fit.
    """
    rows = []
    for (axis, d), group in summary.groupby(["axis", "d"], sort=True):
        if axis not in cell.axes:
            continue
        used = group[group.in_regime & (group["mean"] > 0) & (group.se > 0)]
        beta, gamma, p = (float(group[c].iloc[0]) for c in ("beta", "gamma", "p"))
        fitted = None
        if len(used) >= min_points:
            fitted = fit_slope(used[axis], used["mean"], used["se"])
        for rank, exponent in enumerate(cell.statements(axis)):
            theory = exponent.slope(beta, gamma, int(d), p)
            row = {"experiment": group.experiment.iloc[0], "cell": cell.name, "axis": axis,
                   "d": int(d), "beta": beta, "gamma": gamma, "p": p, "K": group.K.iloc[0],
                   "fixed": (f"eps={group.eps.iloc[0]:g}" if axis == "N" else f"N={group.N.iloc[0]:g}"),
                   "theory": theory, "theory_formula": exponent.formula,
                   "theory_source": exponent.source, "statement": exponent.statement,
                   "primary": rank == 0, "tol": tol,
                   "minimax_hard": bool(group.minimax_hard.iloc[0]),
                   "points": len(used), "points_total": len(group),
                   "x_min": float(used[axis].min()) if len(used) else np.nan,
                   "x_max": float(used[axis].max()) if len(used) else np.nan}
            if fitted is None:
                row.update(slope=np.nan, se=np.nan, ci_low=np.nan, ci_high=np.nan, birge=np.nan,
                           intercept=np.nan, verdict="too few points")
            else:
                row.update(fitted)
                row["verdict"] = verdict(fitted["ci_low"], fitted["ci_high"], theory, tol)
                if not row["minimax_hard"] and row["verdict"] != "consistent":
                    row["verdict"] += " (not minimax-hard)"
            rows.append(row)
    cols = ["experiment", "cell", "axis", "d", "beta", "gamma", "p", "K", "fixed", "slope", "se",
            "ci_low", "ci_high", "theory", "theory_formula", "theory_source", "statement", "primary",
            "tol", "verdict", "points", "points_total", "x_min", "x_max", "birge", "intercept",
            "minimax_hard"]
    return pd.DataFrame(rows, columns=cols)
