"""Plots every paper shares: log-log error against one axis, with fitted and theory slopes.

Every figure is written twice by :func:`write_figure`: a PNG for the Markdown files and an SVG,
crisp at any zoom, for the HTML report (:mod:`labeldp_sim.report.site`).
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_rates", "markdown_table", "mean_ci_grid", "write_figure", "FIGURE_FORMATS"]

# The PNG for Markdown readers, the SVG for the HTML report.
FIGURE_FORMATS = (".png", ".svg")
# An SVG that differs only in its date or its random ids would churn every committed figure:
# fixed ids (svg.hashsalt), no date (SOURCE_DATE_EPOCH is how matplotlib's SVG writer takes one),
# and real text (svg.fonttype none) rather than glyph outlines: smaller, selectable, searchable.
SVG_SETTINGS = {"svg.hashsalt": "labeldp-sim", "svg.fonttype": "none"}


def write_figure(path: Path, draw) -> None:
    """``draw(file)`` once per :data:`FIGURE_FORMATS`, each file written whole (atomic_write).

    ``path`` names the PNG (``rate.png``); the SVG goes beside it (``rate.svg``).  ``draw``
    builds and saves the figure to the file it is given (matplotlib takes the format from the
    suffix), so a figure is drawn once per format.
    """
    from labeldp_sim.harness.store import atomic_write

    path = Path(path)
    atomic_write(path.with_suffix(".png"), draw)
    previous = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = "0"
    try:
        with matplotlib.rc_context(SVG_SETTINGS):
            atomic_write(path.with_suffix(".svg"), draw)
    finally:
        if previous is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = previous


def plot_rates(summary: pd.DataFrame, fits: pd.DataFrame, path: Path, title: str, series: str = "d",
               ylabel: str = "mean excess risk", xlabels: dict | None = None) -> None:
    """Log-log mean error with 95% error bars, fitted line and the theory slope.

    One panel per ``axis`` of ``summary`` (its values in the column of that
    name), one colour per value of ``series``; points outside the regime are
    hollow.  ``fits`` has one row per (axis, series) with ``primary`` true for
    the line drawn: slope, ci_low, ci_high, intercept, x_min, x_max, theory, verdict.  The
    legend shows the slope's interval the verdict uses (``ci_low``, ``ci_high``: t quantile,
    Birge-inflated), never a second one of its own.
    """
    xlabels = xlabels or {"N": "N", "eps": "ε"}
    axes_names = list(dict.fromkeys(summary.axis))
    fig, axes = plt.subplots(1, len(axes_names), figsize=(5.5 * len(axes_names), 4.2), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, axis in zip(axes[0], axes_names):
        part = summary[summary.axis == axis]
        for i, (d, group) in enumerate(part.groupby(series)):
            color = colors[i % len(colors)]
            x = group[axis].to_numpy(float)
            inside = group.in_regime.to_numpy(bool)
            ax.errorbar(x[inside], group["mean"][inside], yerr=1.96 * group.se[inside], fmt="o",
                        color=color, capsize=3, label=f"{series}={d}")
            if (~inside).any():
                ax.errorbar(x[~inside], group["mean"][~inside], yerr=1.96 * group.se[~inside],
                            fmt="o", mfc="none", color=color, capsize=3, alpha=0.6)
            row = fits[(fits.axis == axis) & (fits[series] == d) & fits.primary.astype(bool)]
            if len(row) and np.isfinite(row.slope.iloc[0]):
                r = row.iloc[0]
                xs = np.geomspace(r.x_min, r.x_max, 50)
                ax.plot(xs, np.exp(r.intercept) * xs ** r.slope, color=color,
                        label=f"fit {r.slope:.3f}, 95% CI [{r.ci_low:.3f}, {r.ci_high:.3f}]")
                centre = np.sqrt(r.x_min * r.x_max)
                anchor = np.exp(r.intercept) * centre ** r.slope
                ax.plot(xs, anchor * (xs / centre) ** r.theory, "--", color=color, alpha=0.7,
                        label=f"theory {r.theory:.3f} [{r.verdict}]")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(xlabels.get(axis, axis))
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title(f"{title}: slope on log {axis}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown_table(header: list, rows: list) -> list:
    """Lines of a GitHub markdown table."""
    return (["| " + " | ".join(str(h) for h in header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def mean_ci_grid(summary: pd.DataFrame, index: str, columns: str, order_index, order_columns,
                 digits: int = 3) -> dict:
    """``{(i, c): "mean ± 1.96·se"}`` from a summary with ``mean`` and ``se`` columns."""
    mean = summary.pivot(index=index, columns=columns, values="mean")
    half = summary.pivot(index=index, columns=columns, values="se") * 1.96
    return {(i, c): f"{mean.loc[i, c]:.{digits}f} ± {half.loc[i, c]:.{digits}f}"
            for i in order_index for c in order_columns}
