r"""Log-log rate fits with verdicts (SPEC §5), and per-group summaries.

:func:`fit_slope` is a weighted least-squares regression of log(mean error)
on log(axis value), with weights 1/se_log², where se_log = se/mean is the
delta-method standard error of the log mean (statsmodels ``WLS``).  Which
points enter the fit (a paper's regime) is the paper's choice.

The slope's standard error uses the Monte-Carlo errors as known variances
(``cov_type="fixed scale"``), inflated by the Birge ratio χ²/df when the
points scatter about the line more than their errors allow (a curved or
wrongly-tuned rate shows up as a wider CI, not a spuriously narrow one).

Exact entries (expected risks in closed form, se = 0) have no Monte-Carlo
error: their slope's uncertainty is the fit's own, an ordinary least-squares
fit whose CI (t quantile, n − 2 degrees of freedom) comes from the residual
scatter about the line — the discreteness of the grids and the curvature of
the rate within the range.

Verdict by equivalence test with margin ``tol``:
*consistent* when the 95% CI lies inside theory ± tol, *inconsistent* when it
lies wholly outside, *inconclusive* otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["fit_slope", "verdict", "summarize_by"]


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
    if len(x) and np.all(se == 0):
        return _exact_fit(np.log(x), y, level)
    sm = _statsmodels()
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


def _exact_fit(log_x, y, level) -> dict:
    """OLS of exact log risks: the CI is the residual scatter's (t, n − 2 df); birge is NaN (no errors)."""
    sm = _statsmodels()
    result = sm.OLS(y, sm.add_constant(log_x)).fit()
    df = len(y) - 2
    slope, slope_se = float(result.params[1]), (float(result.bse[1]) if df > 0 else np.inf)
    t = stats.t.ppf(0.5 + level / 2, max(df, 1))
    return {"slope": slope, "se": slope_se, "ci_low": slope - t * slope_se, "ci_high": slope + t * slope_se,
            "intercept": float(result.params[0]), "birge": np.nan}


def _statsmodels():
    """statsmodels.api, imported at the first fit: it costs about a second, which every command
    that fits nothing (``--help``, a refused input, ``report``) would otherwise pay at start-up."""
    import statsmodels.api as sm

    return sm
