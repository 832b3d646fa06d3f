"""Table I summaries and rate fits: one fit row per (axis, d) and statement of the theory.

For each (axis, d) the fit is :func:`~labeldp_sim.stats.fit.fit_slope` over the
points in the axis's regime (:meth:`~labeldp_sim.papers.table1.theory.Cell.in_regime`)
with a positive mean and a positive standard error, or an exact mean (se = 0:
the exact path, whose fit's CI is its residual scatter's); each of the cell's statements of the
exponent gets a verdict from the same fit (:func:`~labeldp_sim.stats.fit.verdict`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from labeldp_sim.stats.fit import fit_slope, verdict

__all__ = ["summarize", "fit_rates", "POINT_KEYS"]

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
    if "path" in trials:  # an exact expected risk has no Monte-Carlo error
        exact = grouped.path.agg(lambda p: bool((p == "exact").all())).to_numpy()
        summary.loc[exact, "se"] = 0.0
        summary["exact"] = exact
    else:
        summary["exact"] = False
    cols = keys + ["mean", "se", "replicates", "regret_fraction", "seconds", "exact"]
    return summary[cols]


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
        used = group[group.in_regime & (group["mean"] > 0) & ((group.se > 0) | group.exact.astype(bool))]
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
