"""Outputs: rate plots, provenance and the "Table I, measured" report (SPEC §5)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .theory import CELLS  # noqa: E402

from .store import atomic_write  # noqa: E402

__all__ = ["plot_rates", "write_table1", "plot_exponents"]


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
            row = fits[(fits.axis == axis) & (fits.d == d) & fits.primary.astype(bool)]
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


def _fmt(x, digits=3):
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _load_fits(results_dir: Path) -> pd.DataFrame:
    fits = []
    for fit_csv in sorted(results_dir.glob("*/fit.csv")):
        frame = pd.read_csv(fit_csv)
        if len(frame):
            fits.append(frame)
    if not fits:
        return pd.DataFrame(columns=["cell", "experiment"])
    fits = pd.concat(fits, ignore_index=True)
    if "statement" not in fits:
        fits["statement"] = "Table I"
        fits["primary"] = True
    return fits


def _cell_fits(fits: pd.DataFrame, name: str) -> pd.DataFrame:
    """Fits of one cell; the experiment named after the cell wins when several measure it."""
    mine = fits[fits.cell == name]
    if (mine.experiment == name).any():
        mine = mine[mine.experiment == name]
    return mine


def write_table1(results_dir: Path) -> pd.DataFrame:
    """``table1.csv`` and ``table1.md`` from every ``<experiment>/fit.csv`` present.

    One row per (cell, axis, d, statement) for every cell of the registry;
    cells without results appear once as "not run".  For cells whose exponent
    the paper states in more than one way, a section says which statement the
    data support.  Also draws ``exponents_<task>.png``.
    """
    results_dir = Path(results_dir)
    fits = _load_fits(results_dir)
    rows = []
    for name, cell in CELLS.items():
        mine = _cell_fits(fits, name)
        base = {"cell": name, "task": cell.task, "family": cell.family, "privacy": str(cell.privacy),
                "rate": cell.rate}
        if not len(mine):
            rows.append({**base, "axis": "", "d": np.nan, "verdict": "not run"})
            continue
        for _, fit in mine.sort_values(["axis", "d", "primary"], ascending=[True, True, False]).iterrows():
            rows.append({**base, **{k: fit.get(k) for k in (
                "experiment", "axis", "d", "beta", "gamma", "p", "fixed", "statement", "primary",
                "theory", "theory_formula", "theory_source", "slope", "se", "ci_low", "ci_high",
                "tol", "verdict", "points")}})
    table = pd.DataFrame(rows)
    atomic_write(results_dir / "table1.csv", lambda p: table.to_csv(p, index=False))
    atomic_write(results_dir / "table1.md", lambda p: p.write_text(_table1_markdown(table)))
    for task in ("classification", "regression"):
        part = table[(table.task == task) & (table.verdict != "not run")]
        if len(part):
            atomic_write(results_dir / f"exponents_{task}.png",
                         lambda p, part=part, task=task: plot_exponents(part, p, task))
    return table


def _table1_markdown(table: pd.DataFrame) -> str:
    lines = ["# Table I, measured", "",
             "Slope of log(mean excess risk) on log N or log ε, fitted by weighted least squares "
             "with Monte-Carlo standard errors; verdict by equivalence test: **consistent** when the "
             "95% CI lies inside theory ± tol, **inconsistent** when it lies outside, "
             "**inconclusive** otherwise.  Theory values are at the run's β, γ, p, d.  Generated by "
             "`labeldp_sim.report`; see each `results/<cell>/` for trials, summaries, fits and plots.",
             "", "| cell | privacy | rate (Table I) | axis | d | theory slope | measured slope [95% CI] "
             "| verdict | theory source |", "|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        if r.verdict == "not run":
            lines.append(f"| `{r.cell}` | {r.privacy} | {r.rate} | | | | | not run | |")
            continue
        label = "" if bool(r.primary) else f" *({r.statement})*"
        lines.append(
            f"| `{r.cell}`{label} | {r.privacy} | {r.rate} | {r.axis} ({r.fixed}) | {int(r.d)} "
            f"| {r.theory_formula} = {_fmt(r.theory)} "
            f"| {_fmt(r.slope)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] | **{r.verdict}** "
            f"| {r.theory_source} |")
    primary = table[(table.verdict != "not run") & (table.primary.fillna(True).astype(bool))]
    counts = primary.verdict.value_counts()
    lines += ["", "Verdicts (Table I statements): "
              + (", ".join(f"{v}: {n}" for v, n in counts.items()) or "none yet"), ""]
    lines += _statements_section(table)
    return "\n".join(lines)


def _statements_section(table: pd.DataFrame) -> list:
    """Which of several statements of one exponent the measurements support."""
    multi = table[(table.verdict != "not run")].groupby(["cell", "axis", "d"]).statement.nunique()
    multi = multi[multi > 1]
    if not len(multi):
        return []
    lines = ["## Which statement the data support", "",
             "Some exponents are stated differently in different places of the paper (see "
             "`papers/README.md`).  Each statement is tested against the same fit:", ""]
    for cell, part in table[table.cell.isin(multi.reset_index().cell)].groupby("cell", sort=False):
        verdicts = {}
        for _, r in part.iterrows():
            verdicts.setdefault(r.statement, []).append(
                f"d={int(r.d)}: {_fmt(r.slope)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] vs "
                f"{_fmt(r.theory)} → {r.verdict}")
        supported = [s for s, v in verdicts.items() if all(x.endswith("→ consistent") for x in v)]
        rejected = [s for s, v in verdicts.items() if all(x.endswith("→ inconsistent") for x in v)]
        lines.append(f"- `{cell}`: the data support **{', '.join(supported) or 'no statement at every d'}**"
                     + (f" and reject {', '.join(rejected)}." if rejected else "."))
        for statement, entries in verdicts.items():
            lines.append(f"  - {statement}: " + "; ".join(entries))
    lines.append("")
    return lines


def plot_exponents(table: pd.DataFrame, path: Path, task: str) -> None:
    """Measured slope ± 95% CI against the theory exponent, per cell and axis, across d."""
    cells = list(dict.fromkeys(table.cell))
    ncols = min(5, len(cells))
    nrows = int(np.ceil(len(cells) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 3.0 * nrows), squeeze=False,
                             sharey=False)
    colors = {"N": "tab:blue", "eps": "tab:orange"}
    for ax, cell in zip(axes.ravel(), cells):
        part = table[table.cell == cell]
        for axis, group in part.groupby("axis"):
            primary = group[group.primary.fillna(True).astype(bool)].sort_values("d")
            offset = -0.08 if axis == "N" else 0.08
            ax.errorbar(primary.d + offset, primary.slope,
                        yerr=[primary.slope - primary.ci_low, primary.ci_high - primary.slope],
                        fmt="o", color=colors.get(axis, "k"), capsize=3, label=f"measured, log {axis}")
            ax.plot(primary.d, primary.theory, "x--", color=colors.get(axis, "k"), alpha=0.7,
                    label=f"Table I, log {axis}")
            for statement, alt in group[~group.primary.fillna(True).astype(bool)].groupby("statement"):
                alt = alt.sort_values("d")
                ax.plot(alt.d, alt.theory, "+:", color="gray", label=statement)
        ax.set_title(cell, fontsize=9)
        ax.set_xlabel("d")
        ax.set_xticks(sorted(part.d.dropna().unique().astype(int)))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in axes.ravel()[len(cells):]:
        ax.axis("off")
    axes[0][0].set_ylabel("slope of log risk")
    fig.suptitle(f"Table I exponents, {task}: measured (95% CI) vs theory", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
