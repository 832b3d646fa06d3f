"""Outputs: rate plots, provenance and the "Table I, measured" report (SPEC §5)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .theory import CELLS  # noqa: E402

__all__ = ["plot_rates", "write_provenance", "write_table1"]

LIBRARIES = ["labeldp-sim", "numpy", "scipy", "pandas", "matplotlib", "hydra-core", "omegaconf",
             "joblib", "statsmodels", "tqdm"]


def plot_rates(summary: pd.DataFrame, fits: pd.DataFrame, path: Path, title: str) -> None:
    """Log-log mean risk with 95% error bars, fitted line and the theory slope."""
    axes_names = list(dict.fromkeys(summary.axis))
    fig, axes = plt.subplots(1, len(axes_names), figsize=(5.5 * len(axes_names), 4.2), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, axis in zip(axes[0], axes_names):
        part = summary[summary.axis == axis]
        for i, (d, group) in enumerate(part.groupby("d")):
            color = colors[i % len(colors)]
            x = group[axis].to_numpy(float)
            inside = group.in_regime.to_numpy(bool)
            ax.errorbar(x[inside], group["mean"][inside], yerr=1.96 * group.se[inside], fmt="o",
                        color=color, capsize=3, label=f"d={d}")
            if (~inside).any():
                ax.errorbar(x[~inside], group["mean"][~inside], yerr=1.96 * group.se[~inside],
                            fmt="o", mfc="none", color=color, capsize=3, alpha=0.6)
            row = fits[(fits.axis == axis) & (fits.d == d)]
            if len(row) and np.isfinite(row.slope.iloc[0]):
                r = row.iloc[0]
                xs = np.geomspace(r.x_min, r.x_max, 50)
                ax.plot(xs, np.exp(r.intercept) * xs ** r.slope, color=color,
                        label=f"fit {r.slope:.3f} ± {1.96 * r.se:.3f}")
                centre = np.sqrt(r.x_min * r.x_max)
                anchor = np.exp(r.intercept) * centre ** r.slope
                ax.plot(xs, anchor * (xs / centre) ** r.theory, "--", color=color, alpha=0.7,
                        label=f"theory {r.theory:.3f} [{r.verdict}]")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("N" if axis == "N" else "ε")
        ax.set_ylabel("mean excess risk")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title(f"{title}: slope on log {axis}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _git_commit() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        # outputs being rewritten by this very sweep do not make the code dirty
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)results"], cwd=root, capture_output=True,
                               text=True).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_provenance(path: Path, seed: int, config_key: str, overrides=None) -> dict:
    """Package and library versions, git commit, seed, command line."""
    versions = {}
    for lib in LIBRARIES:
        try:
            versions[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            versions[lib] = None
    info = {
        "package_version": versions.pop("labeldp-sim"),
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": versions,
        "seed": seed,
        "config_key": config_key,
        "command": " ".join(sys.argv),
        "overrides": list(overrides or []),
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    path.write_text(json.dumps(info, indent=2) + "\n")
    return info


def _fmt(x, digits=3):
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def write_table1(results_dir: Path) -> pd.DataFrame:
    """``table1.csv`` and ``table1.md`` from every ``<experiment>/fit.csv`` present.

    One row per (cell, axis, d) fit, for every cell of the registry; cells
    without results appear once as "not run".  When several experiments
    measure one cell, the experiment named after the cell is used.
    """
    results_dir = Path(results_dir)
    fits = []
    for fit_csv in sorted(results_dir.glob("*/fit.csv")):
        frame = pd.read_csv(fit_csv)
        if len(frame):
            fits.append(frame)
    fits = pd.concat(fits, ignore_index=True) if fits else pd.DataFrame(columns=["cell", "experiment"])
    rows = []
    for name, cell in CELLS.items():
        mine = fits[fits.cell == name]
        if (mine.experiment == name).any():
            mine = mine[mine.experiment == name]
        base = {"cell": name, "task": cell.task, "privacy": str(cell.privacy), "rate": cell.rate}
        if not len(mine):
            rows.append({**base, "axis": "", "d": np.nan, "verdict": "not run"})
            continue
        for _, fit in mine.sort_values(["axis", "d"]).iterrows():
            rows.append({**base, **{k: fit[k] for k in (
                "experiment", "axis", "d", "beta", "gamma", "fixed", "theory", "theory_formula",
                "theory_source", "slope", "se", "ci_low", "ci_high", "tol", "verdict", "points")}})
    table = pd.DataFrame(rows)
    table.to_csv(results_dir / "table1.csv", index=False)

    lines = ["# Table I, measured", "",
             "Slope of log(mean excess risk) on log N or log ε, fitted by weighted least squares "
             "with Monte-Carlo standard errors; verdict by equivalence test: **consistent** when the "
             "95% CI lies inside theory ± tol, **inconsistent** when it lies outside, "
             "**inconclusive** otherwise.  Generated by `labeldp_sim.report`; see each "
             "`results/<cell>/` for trials, summaries, fits and plots.", "",
             "| cell | privacy | rate (Table I) | axis | d | theory slope | measured slope [95% CI] "
             "| verdict | theory source |",
             "|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        if r.verdict == "not run":
            lines.append(f"| `{r.cell}` | {r.privacy} | {r.rate} | | | | | not run | |")
            continue
        lines.append(
            f"| `{r.cell}` | {r.privacy} | {r.rate} | {r.axis} ({r.fixed}) | {int(r.d)} "
            f"| {r.theory_formula} = {_fmt(r.theory)} "
            f"| {_fmt(r.slope)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] | **{r.verdict}** "
            f"| {r.theory_source} |")
    counts = table[table.verdict != "not run"].verdict.value_counts()
    lines += ["", "Verdicts: " + (", ".join(f"{v}: {n}" for v, n in counts.items()) or "none yet"), ""]
    (results_dir / "table1.md").write_text("\n".join(lines))
    return table
