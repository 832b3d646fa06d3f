"""The law-free Table I (SPEC §5a): ``results/minimax/table.csv`` and ``table.md``, one row per (cell, axis, d).

Each row takes its verdict, slope and 95 % CI from the **deepest window**
(:mod:`labeldp_sim.stats.windows`), with the previous window's slope beside it and
the whole-range slope as extra information.  How the CI is formed is stated
per row (``ci_method``): OLS with the residual standard error on exact
entries, WLS with Birge inflation on Monte-Carlo ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from labeldp_sim.harness.store import atomic_write
from labeldp_sim.papers.table1.theory import CELLS

__all__ = ["minimax_table", "write_minimax_table", "TABLE_COLUMNS", "DECISIVE_HALF_WIDTH"]

DECISIVE_HALF_WIDTH = 0.02  # issue 20's acceptance: decisive rows with a CI half-width <= 0.02

TABLE_COLUMNS = ["cell", "axis", "d", "theory", "M_slope", "M_ci_low", "M_ci_high", "M_ci_half_width",
                 "verdict", "reason", "window_lo", "window_hi", "window_points", "prev_slope", "prev_window_lo",
                 "prev_window_hi", "whole_slope", "whole_ci_low", "whole_ci_high", "entries", "ci_method",
                 "points", "points_in_regime", "points_edge", "points_pre_asymptotic", "S_slope", "S_verdict",
                 "law_tied_slope", "law_tied_verdict", "h_est_slope", "law_h_exponent", "h_est_ok",
                 "theorem7_verdict", "tuning"]


def _get(row: pd.Series, key: str, default=np.nan):
    """A fit.csv field; ``default`` where a stale file (before the window fits) lacks it or it is empty."""
    value = row.get(key, default)
    if isinstance(default, str) and isinstance(value, float) and np.isnan(value):
        return default  # an empty text field reads back as NaN
    return value


def minimax_table(base: Path) -> pd.DataFrame:
    """One row per (cell, axis, d) from results/minimax/<cell>/fit.csv."""
    rows = []
    for fit_csv in sorted(base.glob("*/fit.csv")):
        fits = pd.read_csv(fit_csv)
        fits = fits[fits.quantity.isin(["M", "S", "law_tied"])]
        for (cell, axis, d), group in fits.groupby(["cell", "axis", "d"], sort=True):
            prim = group[group.primary.astype(bool)].set_index("quantity")
            m = prim.loc["M"]
            t7 = group[(group.quantity == "M") & (group.statement == "Theorem 7")]
            low, high = _get(m, "deep_ci_low"), _get(m, "deep_ci_high")
            rows.append({"cell": cell, "axis": axis, "d": int(d), "theory": m.theory,
                         "M_slope": _get(m, "deep_slope"), "M_ci_low": low, "M_ci_high": high,
                         "M_ci_half_width": (high - low) / 2, "verdict": m.verdict,
                         "reason": _get(m, "reason", ""),
                         "window_lo": _get(m, "deep_window_lo"), "window_hi": _get(m, "deep_window_hi"),
                         "window_points": _get(m, "deep_points"), "prev_slope": _get(m, "prev_slope"),
                         "prev_window_lo": _get(m, "prev_window_lo"), "prev_window_hi": _get(m, "prev_window_hi"),
                         "whole_slope": m.slope, "whole_ci_low": m.ci_low, "whole_ci_high": m.ci_high,
                         "entries": _get(m, "entries", "Monte Carlo"),
                         "ci_method": _get(m, "ci_method", ""), "points": int(m.points),
                         "points_in_regime": int(m.points_in_regime), "points_edge": _get(m, "points_edge"),
                         "points_pre_asymptotic": _get(m, "points_pre_asymptotic"),
                         "S_slope": _get(prim.loc["S"], "deep_slope"), "S_verdict": prim.loc["S"].verdict,
                         "law_tied_slope": _get(prim.loc["law_tied"], "deep_slope"),
                         "law_tied_verdict": prim.loc["law_tied"].verdict,
                         "h_est_slope": m.h_est_slope, "law_h_exponent": m.law_h_exponent,
                         "h_est_ok": m.h_est_ok, "tuning": m.tuning,
                         "theorem7_verdict": t7.verdict.iloc[0] if len(t7) else ""})
    order = {name: i for i, name in enumerate(CELLS)}
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    return table.sort_values(["cell", "axis", "d"], key=lambda s: s.map(order) if s.name == "cell" else s)


def _f(x, digits=3):
    return "—" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{digits}f}"


def _window(lo, hi) -> str:
    return "—" if not (np.isfinite(lo) and np.isfinite(hi)) else f"{lo:.2g}–{hi:.2g}"


HEADER = [
    "# Table I, law-free (SPEC §5a)", "",
    "Worst admitted instance × **oracle tuning** (best G_est / k / T on fixed geometric grids; no exponent of "
    "the theory in either grid).  M = min over tunings of max over instances: with exact entries (expected "
    "risks, one replicate) the min-max of the matrix itself; with Monte-Carlo entries cross-fitted on "
    "even/odd replicates.  S = worst case at the law's tuning; law-tied = the law's own instance and tuning.",
    "",
    "Left out of the fits of M: points outside the theorem's regime, points whose optimum lies on a grid edge, "
    "and pre-asymptotic points (the oracle tuning is the trivial estimator, G_est = 1 or k = N, or the worst "
    "instance sits at the coarsest admitted scale).",
    "",
    "**Slopes are local**: log M on log N or log ε over sliding windows of `law_free.window_decades` decades "
    "(2 by default; each row's own span is its 'deepest window').  The verdict, slope "
    "and 95% CI are the **deepest window's** (finest oracle bandwidth).  How the CI is formed: with exact "
    "entries there is no Monte-Carlo error, so it is OLS with the residual standard error, inflated by the "
    "AR(1) factor √((1+ρ)/(1−ρ)) of the residuals' lag-1 autocorrelation, and a t quantile (it carries the "
    "grids' discreteness and the curvature within the window); with Monte-Carlo entries WLS on the "
    "cross-fitted standard errors, inflated by the Birge ratio (normal quantile).  The previous window is "
    "the next shallower one overlapping the deepest by at most half; the two **agree** when their slopes "
    "differ by at most √(h₁² + h₂²) (h: CI half-widths).  **consistent**: the deepest CI inside theory ± tol "
    "and the windows agreeing; **pre-asymptotic**: they do not (the local slope still moves); "
    "**inconsistent**: the deepest CI wholly outside theory ± tol and the windows agreeing; otherwise "
    "**inconclusive**.  The whole-range slope is extra information (it mixes the "
    "pre-asymptotic start in).  Convergence diagrams: `<cell>/convergence.png`.",
    "",
]
COLUMNS = ["cell", "axis", "d", "entries", "Table I", "deepest window", "M slope [95% CI]", "±", "previous", "verdict",
           "whole range", "S", "law-tied", "h*_est slope (law)", "Theorem 7", "note"]


def _cell(text) -> str:
    """Text for a Markdown table cell: a bare | would end the cell."""
    return str(text).replace("|", "\\|")


def write_minimax_table(base: Path) -> pd.DataFrame:
    """results/minimax/table.csv and table.md from every cell's fit.csv."""
    table = minimax_table(base)
    atomic_write(base / "table.csv", lambda p: table.to_csv(p, index=False))
    lines = list(HEADER)
    rows = []
    for _, r in table.iterrows():
        h = f"{_f(r.h_est_slope, 2)} ({_f(r.law_h_exponent, 2)})"
        entries = "exact" if str(r.entries) == "exact" else "MC"
        rows.append([_cell(c) for c in (
            r.cell, r.axis, r.d, entries, _f(r.theory), _window(r.window_lo, r.window_hi),
            f"{_f(r.M_slope)} [{_f(r.M_ci_low)}, {_f(r.M_ci_high)}]", _f(r.M_ci_half_width), _f(r.prev_slope),
            r.verdict, _f(r.whole_slope), _f(r.S_slope), _f(r.law_tied_slope), h, r.theorem7_verdict or "",
            r.reason or "")])
    lines += pd.DataFrame(rows, columns=COLUMNS, dtype=object).to_markdown(
        index=False, tablefmt="pipe", disable_numparse=True, stralign=None).splitlines()
    counts = table.verdict.value_counts().to_dict()
    decisive = table.verdict.isin(["consistent", "inconsistent"]) & (table.M_ci_half_width <= DECISIVE_HALF_WIDTH)
    lines += ["", "Verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())),
              f"Decisive with a CI half-width ≤ {DECISIVE_HALF_WIDTH}: {int(decisive.sum())} of {len(table)}", ""]
    atomic_write(base / "table.md", lambda p: p.write_text("\n".join(lines) + "\n"))
    return table
