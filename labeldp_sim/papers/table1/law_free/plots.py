"""Figures of a law-free run (SPEC §5a): rates, risk-matrix heat maps, convergence diagrams.

* ``rate.png``: M, S and the law-tied value against N or ε, one panel per
  (axis, d); points left out of the fits of M (optimum on a grid edge,
  pre-asymptotic) are hollow, the Table I exponent is drawn over the data
  through the deepest window; the legend says what hollow and shaded mean.
* ``heatmap.png``: log10 R over (G_inst, tuning) at T*, a panel per point
  (at most ``HEATMAP_COLUMNS`` points per d, evenly spread, at most four
  ticks per axis), the worst instance per tuning and the minimax entry marked.

Every title names the run and its parameters (``title``, from
:mod:`labeldp_sim.papers.table1.parameters`) and is wrapped to its figure's width.
* ``convergence.png`` (issue 20, item 3): per (axis, d), the local slope of
  log M over each window of ``law_free.window_decades`` decades (:mod:`labeldp_sim.stats.windows`) against the
  window's geometric centre, with its 95 % CI, the theory's exponent and its
  ± tol band; the deepest window (the verdict's) and the previous one are
  marked.  Read it from the shallow end to the deep end: a verdict needs the
  slopes to flatten inside the band (consistent) or outside it
  (inconsistent).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from matplotlib.image import NonUniformImage  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator  # noqa: E402

from labeldp_sim.papers.table1.law_free.matrices import point_matrices  # noqa: E402
from labeldp_sim.report.figures import (  # noqa: E402
    THEORY_ZORDER, hollow_handle, log_minor_labels, save_figure, wrap_title)

__all__ = ["plot_rates_law_free", "plot_heatmaps", "plot_convergence", "HEATMAP_COLUMNS"]

# Four panels per d, each about 3.3 in wide, keep the tick labels legible (issue 33: eight made
# 24 panels of 5 px labels); both ends of the sweep stay in view (_spread).
HEATMAP_COLUMNS = 4
HEATMAP_TICKS = 3  # at most this many intervals, so 4 ticks, per heat-map axis
HOLLOW_M = "hollow: left out of the fits of M (grid edge or pre-asymptotic)"


def _power(v, _):
    """Tick label of a log10 axis: 10^k at whole decades, the value itself in between."""
    return f"$10^{{{int(round(v))}}}$" if np.isclose(v, round(v)) else f"{10 ** v:.2g}"


_POWER = FuncFormatter(_power)


def _bounds(v: np.ndarray) -> tuple:
    """The outer edges of cells centred on the sorted values ``v`` (half a step beyond each end)."""
    pad = 0.5 * (v[-1] - v[0]) / max(len(v) - 1, 1) if len(v) > 1 else 0.5
    return float(v[0] - pad), float(v[-1] + pad)


def _axis_label(axis: str) -> str:
    return "N" if axis == "N" else "ε"


def _primary(fits: pd.DataFrame, axis: str, d, quantity: str) -> pd.Series | None:
    rows = fits[(fits.axis == axis) & (fits.d == d) & (fits.quantity == quantity)
                & fits.primary.astype(bool)]
    return rows.iloc[0] if len(rows) else None


def plot_rates_law_free(points: pd.DataFrame, fits: pd.DataFrame, path: Path, title: str) -> None:
    """M, S and the law-tied value against the axis, one panel per (axis, d)."""
    groups = list(points.groupby(["axis", "d"], sort=True))
    # the legend (up to six long entries) sits below each panel: inside, it hid the M curve or the
    # deepest window, whichever corner it took
    fig, axes = plt.subplots(1, len(groups), figsize=(5.2 * len(groups), 5.4), squeeze=False)
    # M last, on top: at a dense sweep the three curves overlap
    styles = {"law_tied": ("^", "C2", "law-tied"), "S": ("s", "C1", "S = max at the law's tuning"),
              "M": ("o", "C0", "M = min max (oracle tuning)")}
    for ax, ((axis, d), group) in zip(axes[0], groups):
        x = group[axis].to_numpy(float)
        pre = group.get("pre_asymptotic", pd.Series("", index=group.index)).fillna("")
        left_out = ((group.edge != "") | (pre != "")).to_numpy()
        size = 6 if len(group) <= 25 else 3.5
        for quantity, (marker, color, label) in styles.items():
            y, se = group[quantity].to_numpy(), group[quantity + "_se"].to_numpy()
            f = _primary(fits, axis, d, quantity)
            text = ""
            if f is not None and np.isfinite(f.get("deep_slope", np.nan)):
                text = f" deepest {f.deep_slope:.3f} [{f.deep_ci_low:.3f}, {f.deep_ci_high:.3f}]"
            hollow = left_out if quantity == "M" else np.zeros_like(left_out)
            ax.errorbar(x[~hollow], y[~hollow], yerr=1.96 * se[~hollow], fmt=marker, color=color, capsize=3,
                        ms=size, label=label + text)
            if hollow.any():
                ax.errorbar(x[hollow], y[hollow], yerr=1.96 * se[hollow], fmt=marker, mfc="none", color=color,
                            capsize=3, ms=size, alpha=0.6)
        f = _primary(fits, axis, d, "M")
        extra = []
        if f is not None and np.isfinite(f.get("deep_window_lo", np.nan)):
            inside = (x >= f.deep_window_lo) & (x <= f.deep_window_hi) & ~left_out
            centre = np.exp(np.mean(np.log(x[inside])))
            anchor = np.exp(np.mean(np.log(group.M.to_numpy()[inside])))
            xs = np.geomspace(x.min(), x.max(), 20)
            ax.plot(xs, anchor * (xs / centre) ** f.theory, "k--", lw=1.3, alpha=0.85, dashes=(4, 2),
                    zorder=THEORY_ZORDER, gid="theory",
                    label=f"theory (Table I) {f.theory:.3f} through the deepest window [{f.verdict}]")
            ax.axvspan(f.deep_window_lo, f.deep_window_hi, color="C3", alpha=0.08)
            extra.append(Patch(color="C3", alpha=0.15, label="shaded: the deepest window"))
        if left_out.any():
            extra.append(hollow_handle(HOLLOW_M))
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_minor_labels(ax.xaxis)
        ax.set_xlabel(_axis_label(axis))
        ax.set_ylabel("excess risk")
        ax.grid(True, which="both", alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        ax.legend(handles=handles + extra, fontsize=7, title="deepest-window slope, 95% CI", title_fontsize=7,
                  loc="upper center", bbox_to_anchor=(0.5, -0.15))
        ax.set_title(f"law-free, log {_axis_label(axis)}, d={d}", fontsize=9)
    width = 5.2 * len(groups)
    fig.suptitle(wrap_title(title, width - 0.4, 10), fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def plot_heatmaps(trials: pd.DataFrame, points: pd.DataFrame, path: Path, title: str, tune_col: str) -> None:
    """log10 mean R over (G_inst, tuning) at T*, a panel per point, rows by d; minimax path marked.

    At most :data:`HEATMAP_COLUMNS` points per d (evenly spread, both ends kept), at most
    ``HEATMAP_TICKS + 1`` ticks per axis, so that each panel stays about 3 in wide with 7 pt labels.

    Parameters
    ----------
    trials : pandas.DataFrame
        The matrix entries of the run (one row per point × instance × tuning × replicate).
    points : pandas.DataFrame
        One row per point: axis, d, N, eps, opt_T.
    path : Path
        The PNG written (the SVG goes beside it, :func:`~labeldp_sim.report.figures.save_figure`).
    title : str
        The figure's title (the run's name and parameters).
    tune_col : str
        The estimator's tuning column.
    """
    rows = sorted(points.d.unique())
    shown = {d: _spread(points[points.d == d], HEATMAP_COLUMNS) for d in rows}
    ncols = max(len(part) for part in shown.values())
    width = max(3.4 * ncols, 6.0)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(width, 3.0 * len(rows) + 0.6), squeeze=False)
    for a in axes.ravel():
        a.set_visible(False)
    by_point = dict(tuple(trials.groupby(["axis", "d", "N", "eps"], sort=False)))
    for ri, d in enumerate(rows):
        for ci, (_, pt) in enumerate(shown[d].iterrows()):
            part = by_point[(pt.axis, d, pt.N, pt.eps)]
            mats = point_matrices(part, tune_col)
            T = -1.0 if not np.isfinite(pt.opt_T) else pt.opt_T
            cols = [j for j, (_, c) in enumerate(mats["tunes"]) if np.isclose(c, T)]
            if len(cols) < 2:  # the exact path resolves T per tuning: every tuning at its own clip level
                cols = list(range(len(mats["tunes"])))
            mean = mats["R"].mean(axis=0)[:, cols]
            tune = np.array([mats["tunes"][j][0] for j in cols], dtype=float)
            ax = axes[ri, ci]
            ax.set_visible(True)
            # one image on log axes; NonUniformImage because the refined tunings (law_free.refine) crowd
            # around the optimum (a 60 × 60 pcolormesh per panel is slow to save)
            x, y = np.log10(tune), np.log10(mats["insts"].astype(float))
            x_edges, y_edges = _bounds(x), _bounds(y)
            image = NonUniformImage(ax, interpolation="nearest", cmap="viridis", extent=(*x_edges, *y_edges))
            # exact zeros (estimator cubes that split no bump's edge) drawn at the smallest positive entry
            floor = mean[mean > 0].min() if (mean > 0).any() else 1e-300
            image.set_data(x, y, np.log10(np.maximum(mean, floor)))
            ax.add_image(image)
            ax.set_xlim(*x_edges)
            ax.set_ylim(*y_edges)
            worst = np.argmax(mean, axis=0)
            ax.plot(x, y[worst], "w.-", lw=0.8, ms=3)
            j = int(np.argmin(mean.max(axis=0)))
            ax.plot(x[j], y[worst[j]], "r*", ms=10, mec="k", mew=0.4)
            for axis_, edges in ((ax.xaxis, x_edges), (ax.yaxis, y_edges)):
                axis_.set_major_locator(_decade_locator(*edges))
                axis_.set_major_formatter(_POWER)
            ax.tick_params(labelsize=7)
            ax.set_xlabel(f"{mats['tune_col']} (oracle tuning)", fontsize=8)
            ax.set_ylabel("G_inst (instance)", fontsize=8)
            label = f"N = {pt.N:.2g}" if pt.axis == "N" else f"ε = {pt.eps:.2g}"
            ax.set_title(f"d={d}, {_axis_label(pt.axis)} sweep: {label}", fontsize=9)
            bar = fig.colorbar(image, ax=ax, shrink=0.85, pad=0.03)
            bar.locator = MaxNLocator(nbins=4)
            bar.update_ticks()
            bar.ax.tick_params(labelsize=7)
    fig.suptitle(wrap_title(f"{title}: log10 mean R at the optimal clip level T*\n"
                            "white: the worst instance per tuning; red star: the minimax entry", width - 0.4, 10),
                 fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)


def _decade_locator(lo: float, hi: float):
    """Ticks of a log10 axis over [lo, hi]: every k-th whole decade, at most HEATMAP_TICKS + 1 of them,
    where the span holds two decades or more (labels then read 10^k); MaxNLocator's below that."""
    decades = int(np.floor(hi)) - int(np.ceil(lo)) + 1
    if decades < 2:
        return MaxNLocator(nbins=HEATMAP_TICKS)
    return MultipleLocator(int(np.ceil(decades / (HEATMAP_TICKS + 1))))


def _spread(frame: pd.DataFrame, most: int) -> pd.DataFrame:
    """At most ``most`` rows of ``frame``, evenly spread over it, both ends kept."""
    if len(frame) <= most:
        return frame
    return frame.iloc[np.unique(np.round(np.linspace(0, len(frame) - 1, most)).astype(int))]


def plot_convergence(fits: pd.DataFrame, path: Path, title: str) -> None:
    """Local slope of log M per window against the window's centre, one panel per (axis, d)."""
    verdicts = fits[(fits.quantity == "M") & fits.primary.astype(bool)]
    keys = sorted({(r.axis, int(r.d)) for _, r in verdicts.iterrows()})
    axes_names = sorted({a for a, _ in keys})
    dims = sorted({d for _, d in keys})
    # one panel alone would leave the two-line title no room
    width = max(4.6 * len(dims), 6.0)
    fig, axes = plt.subplots(len(axes_names), len(dims), figsize=(width, 3.6 * len(axes_names) + 0.5),
                             squeeze=False)
    for a in axes.ravel():
        a.set_visible(False)
    for axis, d in keys:
        ax = axes[axes_names.index(axis), dims.index(d)]
        ax.set_visible(True)
        _convergence_panel(ax, fits, axis, d)
    decades = float(verdicts.window_decades.iloc[0]) if "window_decades" in verdicts and len(verdicts) else 1.0
    fig.suptitle(wrap_title(f"{title}, law-free: local slope of log M over {decades:g}-decade windows\n"
                            "95% CI: exact entries OLS residual error × AR(1) factor; Monte Carlo WLS/Birge",
                            width - 0.4, 9), fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def _convergence_panel(ax, fits: pd.DataFrame, axis: str, d: int) -> None:
    f = _primary(fits, axis, d, "M")
    wins = fits[(fits.quantity == "M_window") & (fits.axis == axis) & (fits.d == d)].sort_values("window_centre")
    theory, tol = float(f.theory), float(f.tol)
    ax.axhspan(theory - tol, theory + tol, color="0.85", zorder=0, label=f"theory {theory:.3f} ± {tol:g}")
    ax.axhline(theory, color="k", lw=1, zorder=THEORY_ZORDER, gid="theory")
    others = fits[(fits.quantity == "M") & (fits.axis == axis) & (fits.d == d) & ~fits.primary.astype(bool)]
    for _, o in others.iterrows():
        ax.axhline(o.theory, color="0.4", ls=":", lw=1, label=f"{o.statement} {o.theory:.3f}")
    if np.isfinite(f.slope):
        ax.axhline(f.slope, color="C0", ls="--", lw=0.8, alpha=0.6, label=f"whole range {f.slope:.3f}")
    if len(wins):
        x, s = wins.window_centre.to_numpy(float), wins.slope.to_numpy(float)
        err = [s - wins.ci_low.to_numpy(float), wins.ci_high.to_numpy(float) - s]
        ax.errorbar(x, s, yerr=err, fmt="o-", color="C0", ms=3, lw=0.8, capsize=2, label="window slope")
        for flag, color, name in (("previous", "C1", "previous"), ("deepest", "C3", "deepest")):
            w = wins[wins[flag].astype(bool)]
            if len(w):
                w = w.iloc[0]
                ax.errorbar([w.window_centre], [w.slope], yerr=[[w.slope - w.ci_low], [w.ci_high - w.slope]],
                            fmt="D", color=color, ms=6, capsize=4, label=f"{name} {w.slope:.3f}")
        # the band and the two windows the verdict reads stay in view; far-off shallow windows may clip
        focus = np.concatenate([[theory - 2 * tol, theory + 2 * tol], s,
                                wins[wins.deepest.astype(bool) | wins.previous.astype(bool)][["ci_low", "ci_high"]]
                                .to_numpy(float).ravel()])
        low, high = np.nanmin(focus), np.nanmax(focus)
        ax.set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, f"no window of {f.get('window_decades', 1.0):g} decade(s)\nwith >= 4 usable points",
                transform=ax.transAxes, ha="center", va="center", fontsize=8)
    ax.set_xlabel(f"window centre ({_axis_label(axis)})")
    ax.set_ylabel(f"local slope of log M on log {_axis_label(axis)}")
    ax.set_title(f"log {_axis_label(axis)}, d={d}: {f.verdict}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, loc="best")
