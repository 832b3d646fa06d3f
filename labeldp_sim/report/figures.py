"""Plots every paper shares: log-log error against one axis, with fitted and theory slopes.

Every figure is written twice by :func:`write_figure`: a PNG for the Markdown files and an SVG,
crisp at any zoom, for the HTML report (:mod:`labeldp_sim.report.site`).  A plot builds its
figure once and hands it to :func:`save_figure`, which renders both files from it: building a
figure and laying it out again for each format cost as much as the two renders.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.lines  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_rates", "mean_ci_grid", "write_figure", "save_figure", "FIGURE_FORMATS", "figure_title",
           "wrap_title", "log_minor_labels", "hollow_handle"]

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


def save_figure(fig, path: Path, dpi: float) -> None:
    """Both files of one built figure (:func:`write_figure`, the PNG at ``dpi``), then close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, laid out.
    path : Path
        The PNG's path; the SVG goes beside it.
    dpi : float
        The PNG's resolution.
    """
    try:
        write_figure(path, lambda p: fig.savefig(p, dpi=dpi))
    finally:
        plt.close(fig)


def figure_title(title: str, subtitle: str | None = None) -> str:
    """``"reg_label_cdp (laplace_cube, cube_mean, β = 0.5)"``: a run's name with its parameters.

    Parameters
    ----------
    title : str
        The run's name.
    subtitle : str or None
        Its parameters in words (:func:`labeldp_sim.papers.table1.parameters.parameters_text`); none
        or empty leaves the name alone.
    """
    return f"{title} ({subtitle})" if subtitle else title


def wrap_title(text: str, width_in: float, fontsize: float) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``fontsize`` points.

    A title wider than its figure is clipped at both edges (tight_layout does not shrink text),
    so long titles are wrapped at word boundaries; existing line breaks are kept.

    Parameters
    ----------
    text : str
        The title.
    width_in : float
        The width available, in inches (the figure's, less a margin).
    fontsize : float
        The title's font size in points.
    """
    # DejaVu Sans averages about 0.6 em per character over mixed text: a conservative estimate
    chars = max(int(width_in * 72 / (0.6 * fontsize)), 20)
    return "\n".join(textwrap.fill(line, chars) for line in text.split("\n"))


class _MinorLogLabels(matplotlib.ticker.Formatter):
    """Labels of the 2·10^k and 5·10^k minor ticks of a log axis spanning under two decades."""

    def __call__(self, x, pos=None):
        lo, hi = sorted(self.axis.get_view_interval())
        if x <= 0 or lo <= 0 or np.log10(hi / lo) >= 2:
            return ""
        exponent = int(np.floor(np.log10(x) + 1e-9))
        mantissa = int(round(x / 10.0 ** exponent))
        if mantissa not in (2, 5) or not np.isclose(x, mantissa * 10.0 ** exponent):
            return ""
        if -3 <= exponent <= 3:
            return f"{x:g}"
        return f"${mantissa}\\times10^{{{exponent}}}$"


def log_minor_labels(axis) -> None:
    """Label the 2·10^k and 5·10^k minor ticks of a log axis that spans under two decades.

    With a single labelled decade (an ε sweep over 0.02 … 0.5) a log axis would otherwise read
    as unlabelled; every minor tick labelled, or labels across wider spans, only crowd it.
    """
    axis.set_minor_formatter(_MinorLogLabels())


def hollow_handle(label: str, color: str = "0.35"):
    """A legend entry for hollow markers (no line, an empty circle)."""
    return matplotlib.lines.Line2D([], [], ls="none", marker="o", mfc="none", color=color, label=label)


# The legend's intervals are the verdict's (stats.fit): t quantile, scale inflated by Birge's ratio.
SLOPE_CI_NOTE = "slope 95% CI: t, Birge-inflated"
HOLLOW_LABEL = "hollow: outside the fit regime"
# Above the error bars (zorder 2) and the fitted lines: a theory line hidden under the data is the
# misreading issue 33 reports.
FIT_ZORDER, THEORY_ZORDER = 3, 4


def plot_rates(summary: pd.DataFrame, fits: pd.DataFrame, path: Path, title: str, series: str = "d",
               ylabel: str = "mean excess risk", xlabels: dict | None = None, subtitle: str | None = None,
               hollow_label: str = HOLLOW_LABEL) -> None:
    """Log-log mean error with 95% error bars, fitted line and the theory slope.

    One panel per ``axis`` of ``summary`` (its values in the column of that name), one colour per
    value of ``series``; points outside the regime are hollow, and the legend says so.  The theory
    line is drawn over the data and the fit, through the fit's centre.  The legend shows the
    slope's interval the verdict uses (``ci_low``, ``ci_high``: t quantile, Birge-inflated, named
    once in the legend's title), never a second one of its own.

    Parameters
    ----------
    summary : pandas.DataFrame
        One row per (axis, series, point): the axis value, ``mean``, ``se``, ``in_regime``.
    fits : pandas.DataFrame
        One row per (axis, series) with ``primary`` true for the line drawn: slope, ci_low, ci_high,
        intercept, x_min, x_max, theory, verdict.
    path : Path
        The PNG written (the SVG goes beside it, :func:`save_figure`).
    title : str
        The run's name, the figure's title.
    series : str
        The column whose values get a colour each.
    ylabel : str
        The quantity on the y axis.
    xlabels : dict or None
        Axis name -> its label on the x axis.
    subtitle : str or None
        The run's parameters, shown in brackets after ``title``.
    hollow_label : str
        The legend's words for a hollow marker.
    """
    xlabels = xlabels or {"N": "N", "eps": "ε"}
    axes_names = list(dict.fromkeys(summary.axis))
    width = 5.5 * len(axes_names)
    # a legend of three or more series (three entries each) hides the data: it goes below the panel
    most = max(summary[summary.axis == a][series].nunique() for a in axes_names)
    below = most > 2
    height = 4.4 + (0.13 * (3 * most + 3) if below else 0.0)
    fig, axes = plt.subplots(1, len(axes_names), figsize=(width, height), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, axis in zip(axes[0], axes_names):
        part = summary[summary.axis == axis]
        any_hollow = False
        for i, (d, group) in enumerate(part.groupby(series)):
            color = colors[i % len(colors)]
            x = group[axis].to_numpy(float)
            inside = group.in_regime.to_numpy(bool)
            ax.errorbar(x[inside], group["mean"][inside], yerr=1.96 * group.se[inside], fmt="o",
                        color=color, capsize=3, label=f"{series}={d}")
            if (~inside).any():
                any_hollow = True
                ax.errorbar(x[~inside], group["mean"][~inside], yerr=1.96 * group.se[~inside],
                            fmt="o", mfc="none", color=color, capsize=3, alpha=0.6)
            row = fits[(fits.axis == axis) & (fits[series] == d) & fits.primary.astype(bool)]
            if len(row) and np.isfinite(row.slope.iloc[0]):
                r = row.iloc[0]
                xs = np.geomspace(r.x_min, r.x_max, 50)
                ax.plot(xs, np.exp(r.intercept) * xs ** r.slope, color=color, zorder=FIT_ZORDER,
                        label=f"fit {r.slope:.3f}, 95% CI [{r.ci_low:.3f}, {r.ci_high:.3f}]")
                centre = np.sqrt(r.x_min * r.x_max)
                anchor = np.exp(r.intercept) * centre ** r.slope
                ax.plot(xs, anchor * (xs / centre) ** r.theory, "--", color="k", lw=1.3, alpha=0.85,
                        dashes=(4, 2), zorder=THEORY_ZORDER, gid="theory",
                        label=f"theory {r.theory:.3f} ({series}={d}) [{r.verdict}]")
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_minor_labels(ax.xaxis)
        ax.set_xlabel(xlabels.get(axis, axis))
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if any_hollow:
            handles.append(hollow_handle(hollow_label))
            labels.append(hollow_label)
        place = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.16)} if below else {}
        ax.legend(handles, labels, fontsize=7, title=SLOPE_CI_NOTE, title_fontsize=7, **place)
        ax.set_title(f"slope on log {'ε' if axis == 'eps' else axis}", fontsize=10)
    fig.suptitle(wrap_title(figure_title(title, subtitle), width - 0.4, 11), fontsize=11)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def mean_ci_grid(summary: pd.DataFrame, index: str, columns: str, order_index, order_columns,
                 digits: int = 3) -> dict:
    """``{(i, c): "mean ± 1.96·se"}`` from a summary with ``mean`` and ``se`` columns."""
    mean = summary.pivot(index=index, columns=columns, values="mean")
    half = summary.pivot(index=index, columns=columns, values="se") * 1.96
    return {(i, c): f"{mean.loc[i, c]:.{digits}f} ± {half.loc[i, c]:.{digits}f}"
            for i in order_index for c in order_columns}
