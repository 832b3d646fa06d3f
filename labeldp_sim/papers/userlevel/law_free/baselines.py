r"""Algorithm 1 against the item-level column and Proposition 1's baselines, law-free, along m (papers/003).

Table 1 puts the user-level bounded-mean rate D²/(nm(ε²∧1)) beside the item-level one ("same", nm
samples each ε-LDP on its own); Proposition 1 gives two naive user-level conversions, P1a (every
sample at ε/m: D²m/(nε²) + D²/(nm)) and P1b (one sample per user at ε: D²/(n(ε²∧1))).  Their
law-free experiments (``ul_minimax_mean``, ``ul_minimax_mean_item``, ``ul_minimax_mean_p1a``,
``ul_minimax_mean_p1b``) sweep the same m at the same n and ε, so their worst-case risks M share
one m axis: m-slopes −1 (Algorithm 1, item-level), 0 (P1b), +1 (P1a).

This module only reads what :mod:`.fit` wrote, ``results/userlevel/law_free/<experiment>/points.csv``
(M per point, its ``flag``: a point ruled out of the fits) and ``fit.csv`` (the local slopes over
the deepest window, the stated rate's slope there, the verdict), and draws one figure and one table.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from labeldp_sim.harness.store import atomic_write  # noqa: E402
from labeldp_sim.report.figures import hollow_handle, wrap_title, write_figure  # noqa: E402
from labeldp_sim.papers.userlevel.theory import RATES  # noqa: E402

__all__ = ["BASELINE_EXPERIMENTS", "LABELS", "m_slope_table", "plot_m_baselines", "write_m_baselines"]

#: The law-free experiments compared, in drawing order.
BASELINE_EXPERIMENTS = ("ul_minimax_mean", "ul_minimax_mean_item", "ul_minimax_mean_p1b", "ul_minimax_mean_p1a")

#: Estimator name -> what it is, in words (the figure's legend and the table's ``label``).
LABELS = {"alg1": "Algorithm 1 (user-level ε)",
          "item_ldp": "item-level ε per sample (Table 1 column)",
          "one_sample": "P1b: one sample per user at ε",
          "item": "P1a: every sample at ε/m"}

TABLE_COLUMNS = ["experiment", "estimator", "label", "rate", "m_slope", "ci_low", "ci_high", "m_slope_ci",
                 "stated_slope", "verdict", "window_lo", "window_hi", "n", "eps", "points", "points_total"]


def _read(base: Path, experiment: str, name: str) -> pd.DataFrame | None:
    path = Path(base) / experiment / name
    return pd.read_csv(path) if path.exists() else None


def _fmt(x: float) -> str:
    return "—" if not np.isfinite(x) else f"{round(float(x), 3) + 0.0:+.3f}"  # + 0.0: no "-0.000"


def m_slope_table(base, experiments=BASELINE_EXPERIMENTS) -> pd.DataFrame:
    """The tidy m-slope table: one row per experiment with an m sweep, its verdict's rate (the first).

    Parameters
    ----------
    base : path-like
        ``results/userlevel/law_free``: the folder holding one folder per experiment.
    experiments : sequence of str
        The experiments, in row order; one without a ``fit.csv``, or whose fit has no m row, is left out.

    Returns
    -------
    pandas.DataFrame
        Columns ``experiment``, ``estimator``, ``label`` (:data:`LABELS`), ``rate`` (the stated rate
        the verdict is against), ``m_slope``, ``ci_low``, ``ci_high`` (the deepest window's local
        slope of log M on log m and its 95% CI), ``m_slope_ci`` (the same as text), ``stated_slope``
        (the stated rate's local slope over that window), ``verdict``, ``window_lo``, ``window_hi``,
        ``n``, ``eps`` (the m sweep's fixed axes), ``points``, ``points_total``.

    Raises
    ------
    ValueError
        When the m sweeps do not share n and ε (their m axes would not be comparable).
    """
    rows = []
    for experiment in experiments:
        fit, points = _read(base, experiment, "fit.csv"), _read(base, experiment, "points.csv")
        if fit is None or points is None:
            continue
        prim = fit[(fit.axis == "m") & fit.primary.astype(bool)]
        sweep = points[points.axis == "m"]
        if prim.empty or sweep.empty:
            continue
        r = prim.iloc[0]
        rows.append({"experiment": experiment, "estimator": r.estimator, "label": LABELS.get(r.estimator, r.estimator),
                     "rate": r.rate, "m_slope": float(r.deep_slope), "ci_low": float(r.deep_ci_low),
                     "ci_high": float(r.deep_ci_high),
                     "m_slope_ci": f"{_fmt(r.deep_slope)} [{_fmt(r.deep_ci_low)}, {_fmt(r.deep_ci_high)}]",
                     "stated_slope": float(r.theory), "verdict": r.verdict, "window_lo": float(r.deep_lo),
                     "window_hi": float(r.deep_hi), "n": int(sweep.n.iloc[0]), "eps": float(sweep.eps.iloc[0]),
                     "points": int(r.points), "points_total": int(r.points_total)})
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    if len(table) and (table.n.nunique() > 1 or table.eps.nunique() > 1):
        raise ValueError("the m sweeps differ in their fixed axes: "
                         + ", ".join(f"{r.experiment} (n = {r.n}, ε = {r.eps:g})" for r in table.itertuples()))
    return table


def plot_m_baselines(base, path, experiments=BASELINE_EXPERIMENTS, D: float = 1.0) -> Path:
    """M (the law-free worst-case risk) against m at the sweeps' common n and ε, one line per estimator.

    Each estimator's legend entry carries its fitted m-slope [95% CI] over the deepest window, the
    stated rate's slope there and the verdict (:func:`m_slope_table`); points its fit ruled out are
    hollow.  Theorem 2's lower bound D²/(nm(ε²∧1)) (constant 1) is drawn dashed for scale.

    Parameters
    ----------
    base : path-like
        ``results/userlevel/law_free``.
    path : path-like
        The PNG written; the SVG goes beside it (:func:`~labeldp_sim.report.figures.write_figure`).
    experiments : sequence of str
        The experiments drawn (those with results).
    D : float
        The family's support bound, for the lower-bound line.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        When no experiment has an m sweep under ``base``, or the sweeps' n and ε differ.
    """
    table = m_slope_table(base, experiments)
    if table.empty:
        raise ValueError(f"no law-free m sweep of {', '.join(experiments)} under {base}")
    n, eps = int(table.n.iloc[0]), float(table.eps.iloc[0])
    fig, ax = plt.subplots(figsize=(7.4, 6.4))
    hollow = False
    ms = []
    for r in table.itertuples():
        part = _read(base, r.experiment, "points.csv")
        part = part[part.axis == "m"].sort_values("m")
        ok = part.flag.isna() | (part.flag.astype(str) == "")
        ms.append(part.m.to_numpy(float))
        label = f"{r.label}: m-slope {r.m_slope_ci} vs {r.stated_slope:+.2f} ({r.rate}) [{r.verdict}]"
        line = ax.plot(part.m[ok], part.M[ok], "o-", ms=3.5, lw=1.3, label=label)[0]
        if (~ok).any():
            hollow = True
            ax.plot(part.m[~ok], part.M[~ok], "o", mfc="none", color=line.get_color())
    grid = np.unique(np.concatenate(ms))
    lower = RATES["thm2_lower"].value(n, grid, eps, D=D)
    ax.plot(grid, lower, "--", color="0.45", lw=1.1, label="thm2_lower D²/(nm(ε²∧1)), constant 1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("m (samples per user)")
    ax.set_ylabel("M = min over clip/tuning of max over instances")
    ax.grid(True, which="both", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if hollow:
        handles.append(hollow_handle("hollow: ruled out (oracle tuning on the grid's edge)"))
    # below the axes: the curves span the whole plot (P1a rises across the upper left)
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1,
              title="m-slope over the deepest window [95% CI] vs the stated rate's", title_fontsize=7)
    ax.set_title(wrap_title(f"Bounded mean, law-free on Theorem 2's family (n = {n:.3g}, ε = {eps:g}): "
                            "Algorithm 1 vs item-level and Proposition 1's baselines", 7.0, 9), fontsize=9)
    fig.tight_layout()
    path = Path(path)
    write_figure(path, lambda p: fig.savefig(p, dpi=110))
    plt.close(fig)
    return path


def write_m_baselines(base, experiments=BASELINE_EXPERIMENTS) -> pd.DataFrame:
    """Write ``baselines_m.png`` / ``.svg`` (:func:`plot_m_baselines`) and ``baselines_m.csv`` (:func:`m_slope_table`).

    Parameters
    ----------
    base : path-like
        ``results/userlevel/law_free``: read from, and written to.
    experiments : sequence of str
        The experiments compared.

    Returns
    -------
    pandas.DataFrame
        The m-slope table, as written to ``baselines_m.csv``.
    """
    base = Path(base)
    table = m_slope_table(base, experiments)
    plot_m_baselines(base, base / "baselines_m.png", experiments)
    atomic_write(base / "baselines_m.csv", lambda p: table.to_csv(p, index=False))
    return table
