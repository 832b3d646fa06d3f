r"""The law-free n-exponents of papers/003 against the stated ones, over (β, γ, d): one table, one figure.

Each law-free classification or regression experiment (:mod:`.search`, :mod:`.fit`) measures the
local slope of log M on log n over its deepest window, M the oracle-tuned worst case of its
family.  The paper states, for n users with m samples each at privacy ε,

.. math:: R - R^* \asymp (mn(\varepsilon^2\wedge\varepsilon))^{-\frac{\beta(1+\gamma)}{2(d+\beta)}}
          \quad\text{(classification: Theorem 9, eq. (19); Theorem 10, eq. (20))}

.. math:: R \asymp (mn(\varepsilon^2\wedge\varepsilon))^{-\frac{\beta}{d+\beta}}
          \quad\text{(regression: Theorem 11, eq. (21); Theorem 12, eq. (22))}

up to logarithmic factors and the non-private terms ((mn)^{-β(1+γ)/(2β+d)},
(mn)^{-2β/(2β+d)}), which are smaller on the swept ranges.  The **stated exponent** on the n
axis is therefore −β(1+γ)/(2(d+β)) and −β/(d+β); the fit's ``theory`` column (the local slope
of the full lower-bound form over the same window, the one the verdict is taken against) sits
beside it.  β and γ are read from each experiment's resolved ``config.yaml``
(``userlevel_minimax.family``), d from its fit rows.

:func:`exponent_table` gathers one row per experiment and d; :func:`plot_exponents` draws
measured against stated with the y = x line; :func:`write_exponents` writes both beside the
experiments (``exponents.csv``, ``exponents.png`` and ``.svg``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from labeldp_sim.harness.store import atomic_write  # noqa: E402
from labeldp_sim.report.figures import save_figure  # noqa: E402

__all__ = ["stated_exponent", "exponent_table", "plot_exponents", "write_exponents", "TASK_OF_RATE",
           "COLUMNS", "DECISIVE_HALF_WIDTH"]

# the rates whose n-exponent is stated here: Theorem 10/12's lower bounds (the verdicts' rates)
# and Theorem 9/11's upper bounds (same exponent, up to logs)
TASK_OF_RATE = {"thm10_lower": "classification", "thm9_cls": "classification",
                "thm12_lower": "regression", "thm11_reg": "regression"}
COLUMNS = ["experiment", "task", "beta", "gamma", "d", "rate", "stated", "theory", "measured", "ci_low",
           "ci_high", "half_width", "window_lo", "window_hi", "verdict", "decisive"]
DECISIVE_HALF_WIDTH = 0.03  # a decisive row: consistent or inconsistent with a CI at most this wide (each side)
# horizontal nudges (stated-exponent units), so that coinciding stated exponents stay apart: per task, and
# further out per dimension above 1 (β = 1, d = 2 and β = 0.5, d = 1 share −1/3)
_DODGE = {"classification": -0.002, "regression": 0.002}
_DODGE_D = 0.004
_COLOURS = {"classification": "tab:blue", "regression": "tab:orange"}
_MARKERS = {1: "o", 2: "s", 3: "^"}


def stated_exponent(task: str, beta: float, d: int, gamma: float | None = None) -> float:
    r"""The paper's exponent of n (m and ε fixed) in the private term of Table 1's rate.

    Parameters
    ----------
    task : {"classification", "regression"}
        Classification: :math:`-\beta(1+\gamma)/(2(d+\beta))` (eqs. (19), (20));
        regression: :math:`-\beta/(d+\beta)` (eqs. (21), (22)).
    beta : float
        Hölder exponent β.
    d : int
        Dimension.
    gamma : float or None
        Tsybakov margin exponent γ (classification only).

    Returns
    -------
    float
        The exponent (negative).

    Examples
    --------
    >>> stated_exponent("classification", 1.0, 1, 0.5)
    -0.375
    >>> round(stated_exponent("regression", 0.5, 1), 4)
    -0.3333
    """
    if task == "classification":
        if gamma is None:
            raise ValueError("a classification exponent needs gamma")
        return -beta * (1.0 + gamma) / (2.0 * (d + beta))
    if task == "regression":
        return -beta / (d + beta)
    raise ValueError(f"task {task!r}: classification or regression")


def _family(folder: Path) -> dict:
    """``userlevel_minimax.family`` of the experiment's resolved config.yaml ({} where there is none)."""
    path = folder / "config.yaml"
    if not path.is_file():
        return {}
    config = yaml.safe_load(path.read_text()) or {}
    family = (config.get("userlevel_minimax") or {}).get("family") or {}
    return family if isinstance(family, dict) else {}


def exponent_table(base: Path, axis: str = "n") -> pd.DataFrame:
    """One row per law-free classification/regression experiment and d: stated and measured n-exponents.

    Parameters
    ----------
    base : Path
        The law-free results folder (``results/userlevel/law_free``): ``<experiment>/fit.csv`` and
        ``<experiment>/config.yaml``.
    axis : str
        The swept axis whose slopes are read (``"n"``; the stated exponents are those of n).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`: the family's β and γ (γ NaN for regression; the families' default 1
        where a config omits them), d, the verdict's rate, ``stated`` (:func:`stated_exponent`),
        ``theory`` (the full lower-bound form's local slope over the deepest window),
        ``measured`` and its 95 % CI (deepest window), the half-width, the window, the verdict and
        ``decisive`` (consistent or inconsistent with half-width <= :data:`DECISIVE_HALF_WIDTH`).
        Sorted by task, stated exponent and experiment; empty (with the columns) where nothing matches.
    """
    rows = []
    for fit_path in sorted(Path(base).glob("*/fit.csv")):
        fits = pd.read_csv(fit_path)
        if fits.empty or "primary" not in fits:
            continue
        fits = fits[fits.primary.astype(bool) & (fits.axis.astype(str) == axis) & fits.rate.isin(TASK_OF_RATE)]
        if fits.empty:
            continue
        family = _family(fit_path.parent)
        for r in fits.itertuples():
            task = TASK_OF_RATE[r.rate]
            beta = float(family.get("beta", 1.0))
            gamma = float(family.get("gamma", 1.0)) if task == "classification" else np.nan
            half = (r.deep_ci_high - r.deep_ci_low) / 2
            rows.append({
                "experiment": r.experiment, "task": task, "beta": beta, "gamma": gamma, "d": int(r.d),
                "rate": r.rate, "stated": stated_exponent(task, beta, int(r.d), None if np.isnan(gamma) else gamma),
                "theory": float(r.theory), "measured": float(r.deep_slope), "ci_low": float(r.deep_ci_low),
                "ci_high": float(r.deep_ci_high), "half_width": float(half), "window_lo": float(r.deep_lo),
                "window_hi": float(r.deep_hi), "verdict": r.verdict,
                "decisive": bool(r.verdict in ("consistent", "inconsistent") and half <= DECISIVE_HALF_WIDTH)})
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values(["task", "stated", "experiment"], ignore_index=True)


def _label(row) -> str:
    words = [f"β={row.beta:g}"] + ([f"γ={row.gamma:g}"] if np.isfinite(row.gamma) else [])
    return ", ".join(words + ([f"d={row.d}"] if row.d != 1 else []))


def plot_exponents(table: pd.DataFrame, path: Path, tol: float = 0.05) -> None:
    """Measured n-exponent (95 % CI) against the stated one, with y = x and its ±``tol`` band.

    Classification and regression in two colours (nudged sideways, by 0.002 per task and 0.004
    per dimension above 1, so that equal stated exponents stay apart), d by the marker, filled
    where the verdict is consistent and hollow otherwise; each point numbered, the numbers'
    (β, γ, d), slope [CI], stated exponent and verdict listed beside the axes.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`exponent_table`'s rows.
    path : Path
        The PNG written (the SVG beside it, both via :func:`~labeldp_sim.report.figures.save_figure`).
    tol : float
        Half-width of the shaded band around y = x (the verdicts' tolerance).
    """
    fig = plt.figure(figsize=(9.4, 5.8))
    ax = fig.add_axes((0.09, 0.1, 0.55, 0.82))
    finite = (table[np.isfinite(table.measured)] if len(table) else table).reset_index(drop=True)
    values = np.r_[finite.stated.to_numpy(float), finite.ci_low.to_numpy(float), finite.ci_high.to_numpy(float)]
    lo, hi = (float(values.min()) - 0.05, float(values.max()) + 0.05) if len(values) else (-0.6, -0.2)
    line = np.array([lo, hi])
    ax.fill_between(line, line - tol, line + tol, color="0.9", zorder=0, label=f"y = x ± {tol:g}")
    ax.plot(line, line, "k--", lw=1, zorder=1, label="y = x (measured = stated)")
    seen, key = set(), []
    for k, row in enumerate(finite.itertuples(), start=1):
        colour = _COLOURS.get(row.task, "k")
        side = -1.0 if row.task == "classification" else 1.0
        x = row.stated + _DODGE.get(row.task, 0.0) + side * _DODGE_D * (row.d - 1)
        group = (row.task, row.d)
        ax.errorbar([x], [row.measured], yerr=[[row.measured - row.ci_low], [row.ci_high - row.measured]],
                    fmt=_MARKERS.get(row.d, "D"), color=colour, mfc=colour if row.verdict == "consistent" else "none",
                    ms=6, capsize=3, zorder=3, label=None if group in seen else f"{row.task}, d = {row.d}")
        seen.add(group)
        # the number above the classification CIs, right of and below the regression points
        ax.annotate(str(k), (x, row.ci_high) if side < 0 else (x, row.measured), textcoords="offset points",
                    xytext=(0, 5) if side < 0 else (5, -4), fontsize=7, color=colour, zorder=4,
                    ha="center" if side < 0 else "left", va="bottom" if side < 0 else "top")
        key.append(f"{k:>2}  {row.task}, {_label(row)}\n    {row.measured:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}]"
                   f" vs {row.stated:.3f}: {row.verdict}")
    fig.text(0.67, 0.92, "measured [95% CI] vs stated: verdict\n\n" + "\n".join(key), fontsize=6.5, va="top",
             family="monospace")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("stated exponent of n: −β(1+γ)/(2(d+β)) (19)/(20), −β/(d+β) (21)/(22)", fontsize=8)
    ax.set_ylabel("measured local slope of log M on log n (deepest window, 95% CI)", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", title="filled: consistent; hollow: other verdicts", title_fontsize=7)
    ax.set_title("papers/003, law-free: measured vs stated n-exponent", fontsize=10)
    save_figure(fig, path, dpi=110)


def write_exponents(base: Path, path: Path | None = None) -> pd.DataFrame:
    """``exponents.csv`` and ``exponents.png``/``.svg`` in ``base`` (results/userlevel/law_free), or at ``path``.

    Parameters
    ----------
    base : Path
        The law-free results folder read by :func:`exponent_table`.
    path : Path or None
        The PNG to write (the CSV and SVG beside it); None: ``base / "exponents.png"``.

    Returns
    -------
    pandas.DataFrame
        :func:`exponent_table`'s table; nothing is written where it is empty.
    """
    base = Path(base)
    table = exponent_table(base)
    if table.empty:
        return table
    path = Path(path) if path is not None else base / "exponents.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path.with_suffix(".csv"), lambda p: table.to_csv(p, index=False))
    plot_exponents(table, path)
    return table
