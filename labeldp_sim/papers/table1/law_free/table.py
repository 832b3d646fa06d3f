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
from labeldp_sim.stats.windows import headline

__all__ = ["minimax_table", "write_minimax_table", "theorem7_table", "write_theorem7", "TABLE_COLUMNS",
           "THEOREM7_COLUMNS", "DECISIVE_HALF_WIDTH"]

DECISIVE_HALF_WIDTH = 0.02  # issue 20's acceptance: decisive rows with a CI half-width <= 0.02

TABLE_COLUMNS = ["cell", "axis", "d", "theory", "M_slope", "M_ci_low", "M_ci_high", "M_ci_half_width",
                 "verdict", "reason", "window_lo", "window_hi", "window_points", "prev_slope", "prev_window_lo",
                 "prev_window_hi", "whole_slope", "whole_ci_low", "whole_ci_high", "entries", "ci_method",
                 "points", "points_in_regime", "points_edge", "points_pre_asymptotic", "S_slope", "S_verdict",
                 "law_tied_slope", "law_tied_verdict", "h_est_slope", "law_h_exponent", "h_est_ok",
                 "theorem7_verdict", "tuning", "tol"]


def _get(row: pd.Series, key: str, default=np.nan):
    """A fit.csv field; ``default`` where a stale file (before the window fits) lacks it or it is empty."""
    value = row.get(key, default)
    if isinstance(default, str) and isinstance(value, float) and np.isnan(value):
        return default  # an empty text field reads back as NaN
    return value


def _cell_fits(base: Path):
    """(folder, fits) of every run under ``base``: the cells' own (folder named as its cell) and the
    variants at other parameters (``reg_label_cdp_beta05``: the Theorem 7 sweep)."""
    for fit_csv in sorted(base.glob("*/fit.csv")):
        yield fit_csv.parent.name, pd.read_csv(fit_csv)


def minimax_table(base: Path) -> pd.DataFrame:
    """One row per (cell, axis, d) from results/minimax/<cell>/fit.csv (variants in other folders aside)."""
    rows = []
    for folder, fits in _cell_fits(base):
        if folder not in CELLS:
            continue
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
                         "theorem7_verdict": t7.verdict.iloc[0] if len(t7) else "", "tol": _get(m, "tol")})
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
    "cross-fitted standard errors, inflated by the Birge ratio (normal quantile).  Either way the CI is widened "
    "to the slopes of the window's even- and odd-ranked points (the sweep shifted by half its step), so that a "
    "verdict holds on the grid and its shift alike.  The previous window is "
    "the next shallower one overlapping the deepest by at most half.  A window holds at least "
    "`law_free.window_points` points (7: its t quantile has 5 or more degrees of freedom).  **The slope still "
    "moves** when the OLS line through the slopes of the deepest windows (centres within half a span of the "
    "deepest's) changes across them by more than max(the deepest half-width, tol/2); with fewer than three such "
    "windows, when the previous window's slope differs from the deepest's by more than √(h₁² + h₂²) "
    "(h: CI half-widths).  **pre-asymptotic**: it still moves; **consistent**: the deepest CI inside "
    "theory ± tol; **inconsistent**: wholly outside; otherwise **inconclusive**.  tol is `law_free.tol` "
    "(stated per row in fit.csv and below).  The whole-range slope is extra information (it mixes the "
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
    tols = sorted(set(table.tol.dropna())) if "tol" in table else []
    lines += ["", "Verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())),
              f"Decisive with a CI half-width ≤ {DECISIVE_HALF_WIDTH}: {int(decisive.sum())} of {len(table)}",
              f"Equivalence margin tol (law_free.tol): {', '.join(f'{t:g}' for t in tols) or '—'}", ""]
    atomic_write(base / "table.md", lambda p: p.write_text("\n".join(lines) + "\n"))
    write_theorem7(base)
    return table


THEOREM7_COLUMNS = ["experiment", "cell", "beta", "axis", "d", "tol", "table1", "theorem7", "gap", "slope",
                    "ci_low", "ci_high", "table1_verdict", "theorem7_verdict", "adjudicated", "why"]


def theorem7_table(base: Path) -> pd.DataFrame:
    """Theorem 7 against Table I, one row per (run, axis, d) whose cell states both (issue 35, item 3).

    Theorem 7 is **rejected** where the deepest CI is consistent with Table I and inconsistent with
    Theorem 7.  That needs tol + h < gap (h the half-width, gap = |θ_I − θ_7|): where the gap is below
    tol no CI can do it, and the row says which margin would.
    """
    rows = []
    for folder, fits in _cell_fits(base):
        fits = fits[fits.quantity == "M"]
        for (axis, d), group in fits.groupby(["axis", "d"], sort=True):
            t7 = group[group.statement == "Theorem 7"]
            main = group[group.primary.astype(bool)]
            if not (len(t7) and len(main)):
                continue
            m, t = main.iloc[0], t7.iloc[0]
            low, high, tol = _get(m, "deep_ci_low"), _get(m, "deep_ci_high"), float(m.tol)
            gap, half = abs(m.theory - t.theory), (high - low) / 2
            rejected = m.verdict == "consistent" and t.verdict == "inconsistent"
            if rejected:
                why = f"Table I consistent, Theorem 7 inconsistent at ± {tol:g}"
            elif gap <= tol:
                why = (f"cannot separate at ± {tol:g}: the exponents differ by {gap:.3f} ≤ tol, so a CI consistent "
                       f"with one lies in the other's margin; a verdict at tol ≤ {gap / 2:.3f} with a CI half-width "
                       f"≤ {gap / 2:.3f} would (law_free.tol)")
            elif np.isfinite(half) and half + tol >= gap:
                why = (f"the CI half-width {half:.3f} + tol {tol:g} ≥ the gap {gap:.3f}: a CI half-width below "
                       f"{gap - tol:.3f} (a deeper or denser sweep) would separate them")
            else:
                why = f"Table I verdict {m.verdict}: {headline(_get(m, 'reason', ''))}"
            rows.append({"experiment": folder, "cell": m.cell, "beta": _get(m, "beta"), "axis": axis, "d": int(d),
                         "tol": tol, "table1": m.theory, "theorem7": t.theory, "gap": gap,
                         "slope": _get(m, "deep_slope"), "ci_low": low, "ci_high": high,
                         "table1_verdict": m.verdict, "theorem7_verdict": t.verdict,
                         "adjudicated": "Theorem 7 rejected" if rejected else "not separated", "why": why})
    table = pd.DataFrame(rows, columns=THEOREM7_COLUMNS)
    return table.sort_values(["cell", "beta", "axis", "d"], kind="stable").reset_index(drop=True)


def write_theorem7(base: Path) -> pd.DataFrame:
    """results/minimax/theorem7.csv and theorem7.md: :func:`theorem7_table`."""
    table = theorem7_table(base)
    if not len(table):
        return table
    atomic_write(base / "theorem7.csv", lambda p: table.to_csv(p, index=False))
    rows = [[_cell(c) for c in (r.cell, _f(r.beta, 2), r.axis, r.d, _f(r.table1), _f(r.theorem7), _f(r.gap),
                                f"{_f(r.slope)} [{_f(r.ci_low)}, {_f(r.ci_high)}]", r.table1_verdict,
                                r.theorem7_verdict, r.adjudicated, r.why)] for _, r in table.iterrows()]
    head = ["cell", "β", "axis", "d", "Table I", "Theorem 7", "gap", "M slope [95% CI]", "Table I verdict",
            "Theorem 7 verdict", "adjudicated", "why"]
    lines = ["# Theorem 7 against Table I, at every β (law-free)", "",
             "Theorem 7 (22) states the central exponent on εN as 2β/(d+2β); Table I and Theorem 8 give "
             "2β/(β+d).  Theorem 7 is rejected where the deepest window's CI is consistent with Table I and "
             "inconsistent with Theorem 7 at ± tol, which needs the gap between the exponents to exceed tol plus "
             "the CI half-width.  Runs: the cells' own (β = 1) and `<cell>_beta<β>` (experiments/minimax.txt).", ""]
    lines += pd.DataFrame(rows, columns=head, dtype=object).to_markdown(
        index=False, tablefmt="pipe", disable_numparse=True, stralign=None).splitlines()
    rejected = int((table.adjudicated == "Theorem 7 rejected").sum())
    lines += ["", f"Theorem 7 rejected in {rejected} of {len(table)} rows; the others say why not.", ""]
    atomic_write(base / "theorem7.md", lambda p: p.write_text("\n".join(lines) + "\n"))
    return table
