"""The "Table I, measured" report (SPEC §5): the table, its statements section, exponent plots."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from labeldp_sim.report.figures import write_figure  # noqa: E402
from labeldp_sim.harness.store import atomic_write  # noqa: E402
from labeldp_sim.papers.table1.theory import CELLS  # noqa: E402

__all__ = ["write_table1", "plot_exponents"]


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
                "tol", "verdict", "points", "x_min", "x_max")}})
    table = _with_law_free(pd.DataFrame(rows), results_dir / "minimax" / "table.csv")
    atomic_write(results_dir / "table1.csv", lambda p: table.to_csv(p, index=False))
    atomic_write(results_dir / "table1.md", lambda p: p.write_text(_table1_markdown(table)))
    for task in ("classification", "regression"):
        part = table[(table.task == task) & (table.verdict != "not run")]
        if len(part):
            write_figure(results_dir / f"exponents_{task}.png",
                         lambda p, part=part, task=task: plot_exponents(part, p, task))
    return table


LAW_FREE_COLUMNS = {"M_slope": "law_free_slope", "M_ci_low": "law_free_ci_low",
                    "M_ci_high": "law_free_ci_high", "window_lo": "law_free_window_lo",
                    "window_hi": "law_free_window_hi", "prev_slope": "law_free_prev_slope",
                    "whole_slope": "law_free_whole_slope", "verdict": "law_free_verdict",
                    "reason": "law_free_note", "theorem7_verdict": "law_free_theorem7",
                    "entries": "law_free_entries", "ci_method": "law_free_ci_method"}
LAW_FREE_TEXT = ("law_free_verdict", "law_free_note", "law_free_theorem7", "law_free_entries", "law_free_ci_method")
LAW_FREE_VERDICTS = ("consistent", "inconsistent", "inconclusive", "pre-asymptotic")


def _with_law_free(table: pd.DataFrame, minimax_csv: Path) -> pd.DataFrame:
    """Table I rows with the law-free fit of M beside them (SPEC §5a), where one was run.

    The law-free verdict is the headline, taken on the **deepest window**
    (:mod:`labeldp_sim.stats.windows`): its slope, CI and window ends, the previous
    window's slope and the whole-range slope beside them.  The law-tied slope
    (instance and tuning following the law) stays as a construction check.
    """
    if "primary" not in table:
        table["primary"] = True
    for column in LAW_FREE_COLUMNS.values():
        table[column] = "" if column in LAW_FREE_TEXT else np.nan
    if not minimax_csv.exists() or not len(table):
        return table
    text = {k: str for k in ("reason", "theorem7_verdict", "entries", "ci_method")}
    law_free = pd.read_csv(minimax_csv, dtype=text).fillna({k: "" for k in text})
    for _, lf in law_free.iterrows():
        rows = (table.cell == lf.cell) & (table.axis == lf.axis) & (table.d == lf.d)
        for source, column in LAW_FREE_COLUMNS.items():
            value = lf.get(source, "" if column in LAW_FREE_TEXT else np.nan)  # a table.csv of an older run
            if column == "law_free_verdict":
                # the Theorem 7 rows of the central regression cells take the law-free test of that statement
                table.loc[rows & table.primary.fillna(True).astype(bool), column] = value
                table.loc[rows & ~table.primary.fillna(True).astype(bool), column] = lf.theorem7_verdict
            else:
                table.loc[rows, column] = value
    return table


def _window(row) -> str:
    """`` (ε 1e-06–1e-05)``: the deepest window a law-free slope was read on ("" if none)."""
    low, high = row.get("law_free_window_lo"), row.get("law_free_window_hi")
    if low is None or high is None or not np.isfinite(low) or not np.isfinite(high):
        return ""
    return f" ({'N' if row.axis == 'N' else 'ε'} {low:.2g}–{high:.2g})"


def _fit_range(row) -> str:
    """The swept values the law-tied fit spans, e.g. ``N 9.6e3–1.0e9 (11 points)``."""
    low, high = row.get("x_min"), row.get("x_max")
    if low is None or high is None or not np.isfinite(low) or not np.isfinite(high):
        return ""
    return f"{row.axis} {low:.2g}–{high:.2g} ({int(row.points)} points)"


def _table1_markdown(table: pd.DataFrame) -> str:
    lines = ["# Table I, measured", "",
             "Two modes (docs/table1.md, \"Law-tied and law-free\").  **Law-free** (the verdict, SPEC §5a): the "
             "worst admitted instance against an **oracle-tuned** estimator on fixed geometric grids, "
             "no exponent of the theory in either; its slope of M = min max risk is the headline.  "
             "**Law-tied** (a construction check): instance scale and tuning follow the cell's bandwidth "
             "law, so its slope can only confirm that law: a weighted least-squares slope of log risk on "
             "log N or log ε over its whole range, with Monte-Carlo standard errors, verdict by equivalence "
             "test (**consistent** when the 95% CI lies inside theory ± tol, **inconsistent** when it lies "
             "outside, **inconclusive** otherwise).  The law-free slope is **local**: that of the deepest "
             "window (`law_free.window_decades`, 2 decades by default; finest oracle bandwidth) of "
             "`results/minimax/table.md`, its 95% CI an OLS "
             "interval from the residual error (the grids' discreteness and curvature in the window, AR(1)-"
             "inflated) where the risks are exact expectations, a Birge-inflated WLS interval where they are "
             "Monte Carlo; it is **consistent** only when that CI lies inside theory ± tol and the previous "
             "window's slope agrees with it (within the CI of their difference), **pre-asymptotic** when it "
             "does not (the slope still moves), **inconsistent** when the CI lies outside theory ± tol and the "
             "previous window agrees.  "
             "Law-free columns are empty where `make minimax` has not run that cell and d.  Generated by "
             "`labeldp_sim.report`.",
             "", "| cell | privacy | rate (Table I) | axis | d | theory slope | law-free slope [95% CI], "
             "deepest window | **law-free verdict** | law-tied slope [95% CI] | law-tied check | "
             "law-tied fit range | theory source |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        if r.verdict == "not run":
            lines.append(f"| `{r.cell}` | {r.privacy} | {r.rate} | | | | | not run | | | | |")
            continue
        label = "" if bool(r.primary) else f" *({r.statement})*"
        law_free = r.get("law_free_verdict", "")
        law_free = law_free if isinstance(law_free, str) and law_free else "not run"
        lines.append(
            f"| `{r.cell}`{label} | {r.privacy} | {r.rate} | {r.axis} ({r.fixed}) | {int(r.d)} "
            f"| {r.theory_formula} = {_fmt(r.theory)} "
            f"| {_fmt(r.get('law_free_slope'))} [{_fmt(r.get('law_free_ci_low'))}, "
            f"{_fmt(r.get('law_free_ci_high'))}]{_window(r)} | **{law_free}** "
            f"| {_fmt(r.slope)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] | {r.verdict} "
            f"| {_fit_range(r)} | {r.theory_source} |")
    primary = table[(table.verdict != "not run") & (table.primary.fillna(True).astype(bool))]
    law_free = primary[primary.law_free_verdict.astype(str).isin(LAW_FREE_VERDICTS)]
    counts = law_free.law_free_verdict.value_counts()
    lines += ["", "**Verdicts, law-free (Table I statements, deepest windows):** "
              + (", ".join(f"{v}: {n}" for v, n in counts.items()) or "not run yet (`make minimax`)"),
              "", "Law-tied construction check (all d): "
              + (", ".join(f"{v}: {n}" for v, n in primary.verdict.value_counts().items()) or "none yet"),
              ""]
    # a consistent row's note only repeats its two windows; the others say what was ruled out
    notes = primary[(primary.law_free_note.astype(str).str.len() > 0) & (primary.law_free_verdict != "consistent")]
    if len(notes):
        lines += ["Law-free notes:", ""]
        lines += [f"- `{r.cell}` {r.axis} d={int(r.d)}: {r.law_free_note}" for _, r in notes.iterrows()]
        lines.append("")
    lines += _statements_section(table)
    return "\n".join(lines)


def _statements_section(table: pd.DataFrame) -> list:
    """Which of several statements of one exponent the measurements support.

    The adjudication uses the law-free fits (deepest windows) where they exist: a
    law-tied slope follows whichever law the registry holds, so it cannot
    choose between statements.  Law-tied rows are listed, marked as such.
    """
    if "statement" not in table:
        return []
    multi = table[(table.verdict != "not run")].groupby(["cell", "axis", "d"]).statement.nunique()
    multi = multi[multi > 1]
    if not len(multi):
        return []
    lines = ["## Which statement the data support", "",
             "Some exponents are stated differently in different places of the paper (see "
             "`papers/README.md`).  Each statement is tested against the same fit; the adjudication "
             "comes from the law-free fits (the law-tied slope follows the law it is handed).", ""]
    for cell, part in table[table.cell.isin(multi.reset_index().cell)].groupby("cell", sort=False):
        verdicts, law_free = {}, {}
        for _, r in part.iterrows():
            free = isinstance(r.get("law_free_verdict"), str) and r.law_free_verdict in LAW_FREE_VERDICTS
            slope, low, high, v = ((r.law_free_slope, r.law_free_ci_low, r.law_free_ci_high, r.law_free_verdict)
                                   if free else (r.slope, r.ci_low, r.ci_high, r.verdict))
            verdicts.setdefault(r.statement, []).append(
                f"d={int(r.d)} ({'law-free' if free else 'law-tied'}): {_fmt(slope)} "
                f"[{_fmt(low)}, {_fmt(high)}] vs {_fmt(r.theory)} → {v}")
            if free:
                law_free.setdefault(r.statement, []).append(v)
        judged = law_free or {k: [x.rsplit("→ ", 1)[1] for x in v] for k, v in verdicts.items()}
        supported = [s for s, v in judged.items() if all(x == "consistent" for x in v)]
        rejected = [s for s, v in judged.items() if all(x == "inconsistent" for x in v)]
        source = "law-free fits" if law_free else "law-tied fits only (run `make minimax`)"
        lines.append(f"- `{cell}` ({source}): the data support "
                     f"**{', '.join(supported) or 'no statement at every d'}**"
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
