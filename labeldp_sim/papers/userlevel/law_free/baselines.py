r"""Algorithm 1 against the item-level column and Proposition 1's baselines, law-free, along m (papers/003).

Table 1 puts the user-level bounded-mean rate D²/(nm(ε²∧1)) beside the item-level one ("same", nm
samples each ε-LDP on its own); Proposition 1 gives two naive user-level conversions, P1a (every
sample at ε/m: D²m/(nε²) + D²/(nm)) and P1b (one sample per user at ε: D²/(n(ε²∧1))).  Their
law-free experiments (``ul_minimax_mean``, ``ul_minimax_mean_item``, ``ul_minimax_mean_p1a``,
``ul_minimax_mean_p1b``) sweep the same m at the same n and ε, so their worst-case risks M share
one m axis: m-slopes −1 (Algorithm 1, item-level), 0 (P1b), +1 (P1a).

Algorithms 2–5 (``ul_minimax_linf``, ``ul_minimax_l2``, ``ul_minimax_so``, ``ul_minimax_cls``,
``ul_minimax_reg``) sweep m at their own n, ε and metric, so their M is not on the means' scale: the
figure's second panel draws each relative to its smallest m, M(m)/M(m₀), with P1b's and P1a's beside
(what a user's m samples buy: nothing for P1b, a loss for P1a, the stated m-slope for Algorithms 1–5).

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
from labeldp_sim.report.figures import hollow_handle, save_figure, wrap_title  # noqa: E402
from labeldp_sim.papers.userlevel.theory import RATES  # noqa: E402

__all__ = ["BASELINE_EXPERIMENTS", "ALGORITHM_EXPERIMENTS", "LABELS", "m_slope_table", "plot_m_baselines",
           "write_m_baselines"]

#: The law-free experiments compared on one scale (the bounded mean at one n and ε), in drawing order.
BASELINE_EXPERIMENTS = ("ul_minimax_mean", "ul_minimax_mean_item", "ul_minimax_mean_p1b", "ul_minimax_mean_p1a")
#: Algorithms 2–5's law-free experiments, each drawn relative to its smallest m.
ALGORITHM_EXPERIMENTS = ("ul_minimax_linf", "ul_minimax_l2", "ul_minimax_so", "ul_minimax_cls", "ul_minimax_reg")

#: Estimator name -> what it is, in words (the figure's legend and the table's ``label``).
LABELS = {"alg1": "Algorithm 1 (user-level ε)",
          "item_ldp": "item-level ε per sample (Table 1 column)",
          "one_sample": "P1b: one sample per user at ε",
          "item": "P1a: every sample at ε/m",
          "alg2": "Algorithm 2 (ℓ∞ mean)", "kashin": "Algorithm 2 on Kashin coefficients (ℓ2 mean)",
          "alg3": "Algorithm 3 (SO, unsquared)", "alg4": "Algorithm 4 (classification)",
          "alg5": "Algorithm 5 (regression)"}

#: Estimator name -> its colour and marker, the same in both panels.
STYLE = {"alg1": ("C0", "o"), "item_ldp": ("C1", "o"), "one_sample": ("C2", "o"), "item": ("C3", "o"),
         "alg2": ("C4", "s"), "kashin": ("C5", "^"), "alg3": ("C6", "D"), "alg4": ("C8", "s"), "alg5": ("C9", "^")}

TABLE_COLUMNS = ["experiment", "estimator", "label", "rate", "m_slope", "ci_low", "ci_high", "m_slope_ci",
                 "stated_slope", "verdict", "window_lo", "window_hi", "n", "eps", "d", "points", "points_total"]


def _read(base: Path, experiment: str, name: str) -> pd.DataFrame | None:
    path = Path(base) / experiment / name
    return pd.read_csv(path) if path.exists() else None


def _fmt(x: float) -> str:
    return "—" if not np.isfinite(x) else f"{round(float(x), 3) + 0.0:+.3f}"  # + 0.0: no "-0.000"


def m_slope_table(base, experiments=BASELINE_EXPERIMENTS, same_axes: bool = True) -> pd.DataFrame:
    """The tidy m-slope table: one row per experiment with an m sweep, its verdict's rate (the first).

    Parameters
    ----------
    base : path-like
        ``results/userlevel/law_free``: the folder holding one folder per experiment.
    experiments : sequence of str
        The experiments, in row order; one without a ``fit.csv``, or whose fit has no m row, is left out.
    same_axes : bool
        Require one n and ε for every m sweep (their M then share a scale).

    Returns
    -------
    pandas.DataFrame
        Columns ``experiment``, ``estimator``, ``label`` (:data:`LABELS`), ``rate`` (the stated rate
        the verdict is against), ``m_slope``, ``ci_low``, ``ci_high`` (the deepest window's local
        slope of log M on log m and its 95% CI), ``m_slope_ci`` (the same as text), ``stated_slope``
        (the stated rate's local slope over that window), ``verdict``, ``window_lo``, ``window_hi``,
        ``n``, ``eps``, ``d`` (the m sweep's fixed axes), ``points``, ``points_total``.

    Raises
    ------
    ValueError
        When ``same_axes`` and the m sweeps do not share n and ε (their M would not be comparable).
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
                     "d": int(sweep.d.iloc[0]), "points": int(r.points), "points_total": int(r.points_total)})
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    if same_axes and len(table) and (table.n.nunique() > 1 or table.eps.nunique() > 1):
        raise ValueError("the m sweeps differ in their fixed axes: "
                         + ", ".join(f"{r.experiment} (n = {r.n}, ε = {r.eps:g})" for r in table.itertuples()))
    return table


def _m_curve(base, experiment: str) -> tuple:
    """(m, M, usable) of an experiment's m sweep, in increasing m (usable: not ruled out of the fits)."""
    part = _read(base, experiment, "points.csv")
    part = part[part.axis == "m"].sort_values("m")
    ok = (part.flag.isna() | (part.flag.astype(str) == "")).to_numpy()
    return part.m.to_numpy(float), part.M.to_numpy(float), ok


def _draw(ax, base, table: pd.DataFrame, relative: bool) -> bool:
    """One line per row of ``table`` (M, or M(m)/M(m₀) when ``relative``); True when a point is hollow."""
    hollow = False
    for r in table.itertuples():
        m, M, ok = _m_curve(base, r.experiment)
        if relative:
            M = M / M[0]
        where = "" if not relative else f" (n = {r.n:.3g}, ε = {r.eps:g}, d = {r.d})"
        label = f"{r.label}{where}: m-slope {r.m_slope_ci} vs {r.stated_slope:+.2f} ({r.rate}) [{r.verdict}]"
        color, marker = STYLE.get(r.estimator, (None, "o"))
        line = ax.plot(m[ok], M[ok], marker + "-", ms=3, lw=1.2, color=color, label=label)[0]
        if (~ok).any():
            hollow = True
            ax.plot(m[~ok], M[~ok], marker, mfc="none", color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("m (samples per user)")
    ax.grid(True, which="both", alpha=0.3)
    return hollow


def _legend(ax, hollow: bool):
    handles, _ = ax.get_legend_handles_labels()
    if hollow:
        handles.append(hollow_handle("hollow: ruled out (oracle tuning on the grid's edge)"))
    # below the axes: the curves span the whole plot (P1a rises across the upper left)
    ax.legend(handles=handles, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1,
              title="m-slope over the deepest window [95% CI] vs the stated rate's", title_fontsize=6.5)


def plot_m_baselines(base, path, experiments=BASELINE_EXPERIMENTS, D: float = 1.0,
                     algorithms=ALGORITHM_EXPERIMENTS) -> Path:
    """Error against m: the bounded mean's estimators on one scale, and Algorithms 1–5 beside the baselines.

    Left: M (the law-free worst-case risk) against m at the sweeps' common n and ε, one line per
    estimator of ``experiments``, with Theorem 2's lower bound D²/(nm(ε²∧1)) (constant 1) dashed for
    scale.  Right: M(m)/M(m₀) (m₀ the sweep's smallest m) of Algorithm 1 and of ``algorithms`` (each at
    its own n, ε, d and metric), with P1b and P1a: how much each gains from a user's m samples.  Each
    legend entry carries the fitted m-slope [95% CI] over the deepest window, the stated rate's slope
    there and the verdict (:func:`m_slope_table`); points a fit ruled out are hollow.

    Parameters
    ----------
    base : path-like
        ``results/userlevel/law_free``.
    path : path-like
        The PNG written; the SVG goes beside it (:func:`~labeldp_sim.report.figures.save_figure`).
    experiments : sequence of str
        The bounded-mean experiments drawn on one scale (those with results).
    D : float
        The family's support bound, for the lower-bound line.
    algorithms : sequence of str
        Algorithms 2–5's experiments for the relative panel (those with results; none: one panel).

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
    others = m_slope_table(base, algorithms, same_axes=False)
    n, eps = int(table.n.iloc[0]), float(table.eps.iloc[0])
    panels = 2 if len(others) else 1
    fig, axes = plt.subplots(1, panels, figsize=(7.4 * panels, 7.0), squeeze=False)
    ax = axes[0, 0]
    hollow = _draw(ax, base, table, relative=False)
    grid = np.unique(np.concatenate([_m_curve(base, e)[0] for e in table.experiment]))
    ax.plot(grid, RATES["thm2_lower"].value(n, grid, eps, D=D), "--", color="0.45", lw=1.1,
            label="thm2_lower D²/(nm(ε²∧1)), constant 1")
    ax.set_ylabel("M = min over clip/tuning of max over instances")
    _legend(ax, hollow)
    ax.set_title(wrap_title(f"Bounded mean, law-free on Theorem 2's family (n = {n:.3g}, ε = {eps:g}): "
                            "Algorithm 1 vs item-level and Proposition 1's baselines", 7.0, 9), fontsize=9)
    if panels == 2:
        ax = axes[0, 1]
        mine = table[table.estimator.isin(["alg1", "one_sample", "item"])]
        hollow = _draw(ax, base, pd.concat([mine, others], ignore_index=True), relative=True)
        ax.axhline(1.0, color="0.6", lw=0.8)
        ax.set_ylabel("M(m) / M(smallest m of the sweep)")
        _legend(ax, hollow)
        ax.set_title(wrap_title("What m samples per user buy: Algorithms 1–5 (each at its own n, ε, d and "
                                "metric) against P1b (flat) and P1a (rising)", 7.0, 9), fontsize=9)
    fig.tight_layout()
    path = Path(path)
    save_figure(fig, path, dpi=110)
    return path


def write_m_baselines(base, experiments=BASELINE_EXPERIMENTS) -> pd.DataFrame:
    """Write ``baselines_m.png`` / ``.svg`` (:func:`plot_m_baselines`) and ``baselines_m.csv`` (:func:`m_slope_table`:
    the bounded-mean rows, then Algorithms 2–5's).

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
    table = pd.concat([m_slope_table(base, experiments), m_slope_table(base, ALGORITHM_EXPERIMENTS, same_axes=False)],
                      ignore_index=True)
    plot_m_baselines(base, base / "baselines_m.png", experiments)
    atomic_write(base / "baselines_m.csv", lambda p: table.to_csv(p, index=False))
    return table
