"""The "Table I, measured" report (SPEC §5): the table, its statements section, exponent plots."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from labeldp_sim.report.figures import save_figure  # noqa: E402
from labeldp_sim.harness.store import atomic_write  # noqa: E402
from labeldp_sim.papers.table1.parameters import config_parameters, parameters_text  # noqa: E402
from labeldp_sim.papers.table1.theory import CELLS  # noqa: E402
from labeldp_sim.stats.windows import AXIS_SYMBOLS  # noqa: E402

__all__ = ["write_table1", "plot_exponents", "run_text", "measured"]


def _fmt(x, digits=3):
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _config(directory: Path) -> dict:
    """A run's resolved config (its ``config.yaml``), {} when it has none (a hand-made folder)."""
    try:
        return yaml.safe_load((directory / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}


def _run_columns(directory: Path, prefix: str = "") -> dict:
    """The mechanism, estimator and family parameters of the run in ``directory`` (``prefix`` for the
    law-free columns), and ``parameters``, the family's alone: the key that pairs a law-tied row with
    the law-free row of the same family (β = 0.5 is another row than β = 1)."""
    params = config_parameters(_config(directory))
    return {f"{prefix}mechanism": params.get("mechanism", ""), f"{prefix}estimator": params.get("estimator", ""),
            "parameters": parameters_text(params, components=False)}


def _load_fits(results_dir: Path) -> pd.DataFrame:
    fits = []
    for fit_csv in sorted(results_dir.glob("*/fit.csv")):
        frame = pd.read_csv(fit_csv)
        if len(frame) and "cell" in frame:  # another paper's experiment has no Table I cell
            fits.append(frame.assign(**_run_columns(fit_csv.parent)))
    if not fits:
        return pd.DataFrame(columns=["cell", "experiment", "parameters"])
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


# law-free fit.csv (its rows of M, one per statement of the exponent) -> table1.csv
LAW_FREE_COLUMNS = {"deep_slope": "law_free_slope", "deep_ci_low": "law_free_ci_low",
                    "deep_ci_high": "law_free_ci_high", "deep_window_lo": "law_free_window_lo",
                    "deep_window_hi": "law_free_window_hi", "prev_slope": "law_free_prev_slope",
                    "slope": "law_free_whole_slope", "tol": "law_free_tol", "verdict": "law_free_verdict",
                    "reason": "law_free_note", "entries": "law_free_entries", "ci_method": "law_free_ci_method"}
LAW_FREE_TEXT = ("law_free_verdict", "law_free_note", "law_free_entries", "law_free_ci_method", "law_free_experiment",
                 "law_free_mechanism", "law_free_estimator")
LAW_FREE_VERDICTS = ("consistent", "inconsistent", "inconclusive", "pre-asymptotic")
# what a Table I row is: its cell, where it was measured, which statement of the exponent, which family
ROW_KEY = ["cell", "axis", "d", "statement", "parameters"]
STATEMENT_COLUMNS = ("primary", "theory", "theory_formula", "theory_source")
LAW_TIED_COLUMNS = ("experiment", "mechanism", "estimator", "fixed", "slope", "se", "ci_low", "ci_high", "tol",
                    "verdict", "points", "x_min", "x_max")


def _law_free_fits(minimax_dir: Path) -> pd.DataFrame:
    """The law-free rows: each ``minimax/<cell>/fit.csv``'s fits of M (deepest window), one per statement.

    Runs in folders not named as a cell (the Theorem 7 runs at other β, ``<cell>_beta05``) have a
    table of their own (``minimax/theorem7.md``) and stay out of Table I.
    """
    rows = []
    for fit_csv in sorted(minimax_dir.glob("*/fit.csv")):
        if fit_csv.parent.name not in CELLS:
            continue
        frame = pd.read_csv(fit_csv, dtype={"reason": str, "entries": str, "ci_method": str})
        if not {"cell", "quantity"} <= set(frame.columns):  # another kind's run (user-level) under minimax/
            continue
        frame = frame[frame.quantity == "M"]
        if frame.empty:
            continue
        frame = frame.reindex(columns=[*ROW_KEY[:4], *STATEMENT_COLUMNS, *LAW_FREE_COLUMNS])
        frame = frame.rename(columns=LAW_FREE_COLUMNS).assign(
            law_free_experiment=fit_csv.parent.relative_to(minimax_dir.parent).as_posix(),
            **_run_columns(fit_csv.parent, "law_free_"))
        rows.append(frame)
    if not rows:
        return pd.DataFrame(columns=[*ROW_KEY, *STATEMENT_COLUMNS, *LAW_FREE_COLUMNS.values()])
    found = pd.concat(rows, ignore_index=True)
    found["d"] = found["d"].astype(int)
    return found


def write_table1(results_dir: Path) -> pd.DataFrame:
    """``table1.csv`` and ``table1.md`` from every ``<experiment>/fit.csv`` and ``minimax/<cell>/fit.csv`` present.

    One row per (cell, axis, d, statement, family parameters) that a law-tied or a law-free run
    measured, the two side by side where both did; every other cell of the registry appears once
    as "not run".  Each row names the runs' mechanism, estimator and family parameters (read
    from their ``config.yaml``), so that a row of a run with other settings than the committed
    ones says so.  For cells whose exponent the paper states in more than one way, a section
    says which statement the data support.  Also draws ``exponents_<task>.png``.
    """
    results_dir = Path(results_dir)
    fits = _load_fits(results_dir)
    tied = [_cell_fits(fits, name) for name in CELLS]
    tied = pd.concat([t for t in tied if len(t)], ignore_index=True) if any(len(t) for t in tied) else None
    free = _law_free_fits(results_dir / "minimax")
    if tied is not None:
        tied = tied.reindex(columns=[*ROW_KEY, *STATEMENT_COLUMNS, *LAW_TIED_COLUMNS])
        tied["d"] = tied["d"].astype(int)
        fitted = tied.merge(free, on=ROW_KEY, how="outer", suffixes=("", "_free"))
        for column in STATEMENT_COLUMNS:  # the same statement's theory, whichever run states it
            fitted[column] = fitted[column].where(fitted[column].notna(), fitted.pop(f"{column}_free"))
    else:
        fitted = free.reindex(columns=[*free.columns, *LAW_TIED_COLUMNS])
    order = {name: i for i, name in enumerate(CELLS)}
    rows = []
    for name, cell in CELLS.items():
        base = {"cell": name, "task": cell.task, "family": cell.family, "privacy": str(cell.privacy),
                "rate": cell.rate}
        mine = fitted[fitted.cell == name]
        if mine.empty:
            rows.append({**base, "primary": True, "verdict": "not run"})
            continue
        mine = mine.assign(primary=mine.primary.fillna(True).astype(bool))
        mine = mine.sort_values(["axis", "d", "parameters", "primary"], ascending=[True, True, True, False])
        rows += [{**base, **row} for row in mine.drop(columns="cell").to_dict("records")]
    columns = [*("cell", "task", "family", "privacy", "rate"), *ROW_KEY[1:], *STATEMENT_COLUMNS, *LAW_TIED_COLUMNS,
               "law_free_experiment", "law_free_mechanism", "law_free_estimator", *LAW_FREE_COLUMNS.values()]
    table = pd.DataFrame(rows).reindex(columns=columns)
    table = table.sort_values("cell", key=lambda s: s.map(order), kind="stable", ignore_index=True)
    for column in ("verdict", *LAW_FREE_TEXT):
        # object first: a column no run filled is all-NaN float, which takes no text
        table[column] = table[column].astype(object).fillna("not run" if column in ("verdict", "law_free_verdict")
                                                            else "")
    atomic_write(results_dir / "table1.csv", lambda p: table.to_csv(p, index=False))
    atomic_write(results_dir / "table1.md", lambda p: p.write_text(_table1_markdown(table)))
    for task in ("classification", "regression"):
        part = table[(table.task == task) & measured(table)]
        if len(part):
            plot_exponents(part, results_dir / f"exponents_{task}.png", task)
    return table


def _window(row) -> str:
    """``ε 1e-06–1e-05``: the deepest window a law-free slope was read on ("" if none)."""
    low, high = row.get("law_free_window_lo"), row.get("law_free_window_hi")
    if low is None or high is None or not np.isfinite(low) or not np.isfinite(high):
        return ""
    return f"{AXIS_SYMBOLS.get(row.axis, row.axis)} {low:.2g}–{high:.2g}"


def _fit_range(row) -> str:
    """The swept values the law-tied fit spans, e.g. ``N 9.6e3–1.0e9 (11 points)``."""
    low, high = row.get("x_min"), row.get("x_max")
    if low is None or high is None or not np.isfinite(low) or not np.isfinite(high):
        return ""
    return f"{AXIS_SYMBOLS.get(row.axis, row.axis)} {low:.2g}–{high:.2g} ({int(row.points)} points)"


def _ran(verdict) -> bool:
    return isinstance(verdict, str) and verdict not in ("", "not run")


def measured(table: pd.DataFrame) -> pd.Series:
    """Which rows of a Table I table a law-tied or a law-free run measured (a verdict other than "not run";
    an empty cell, from an older or hand-made table1.csv, counts as not run)."""
    return table.verdict.map(_ran) | table.law_free_verdict.map(_ran)


def run_text(row) -> str:
    """The run(s) behind a row: mechanism, estimator (the law-free run's, then the law-tied run's where
    it differs) and the family parameters, e.g. ``laplace_cube, cube_mean; β = 0.5``."""
    runs = []
    for prefix in ("law_free_", ""):
        mechanism, estimator = row.get(f"{prefix}mechanism"), row.get(f"{prefix}estimator")
        if isinstance(mechanism, str) and mechanism:
            runs.append(f"{mechanism}, {estimator}")
    words = "; ".join(dict.fromkeys(runs))
    parameters = row.get("parameters")
    return words + (f"; {parameters}" if isinstance(parameters, str) and parameters else "")


MARKDOWN_INTRO = (
    "Two modes (docs/table1.md, \"Law-tied and law-free\").  **Law-free** (the verdict, SPEC §5a): the "
    "worst admitted instance against an **oracle-tuned** estimator on fixed geometric grids, "
    "no exponent of the theory in either; its slope of M = min max risk is the headline.  "
    "**Law-tied** (a construction check): instance scale and tuning follow the cell's bandwidth "
    "law, so its slope can only confirm that law: a weighted least-squares slope of log risk on "
    "log N or log ε over its whole range, with Monte-Carlo standard errors, verdict by equivalence "
    "test (**consistent** when the 95% CI lies inside theory ± tol, **inconsistent** when it lies "
    "outside, **inconclusive** otherwise).  The law-free slope is **local**: that of the deepest "
    "window (`law_free.window_decades`, 2 decades by default; finest oracle bandwidth) of "
    "`minimax/table.md`, its 95% CI an OLS "
    "interval from the residual error (the grids' discreteness and curvature in the window, AR(1)-"
    "inflated) where the risks are exact expectations, a Birge-inflated WLS interval where they are "
    "Monte Carlo, widened to the slopes of the window's even- and odd-ranked points (the sweep shifted by "
    "half its step); it is **pre-asymptotic** when the slopes of the deepest windows still trend (by more "
    "than max(the deepest fit's half-width, tol/2)), else **consistent** when that CI lies inside "
    "theory ± tol, **inconsistent** when it lies wholly outside, **inconclusive** otherwise.  Each row names "
    "the mechanism, estimator and family parameters of the runs that measured it.  Law-free columns say \"not run\" where `make minimax` has not run that cell and d, "
    "law-tied ones where `make sweep` has not.  Generated by `labeldp_sim.report`.")


def _interval_text(slope, low, high) -> str:
    return "" if pd.isna(slope) else f"{_fmt(slope)} [{_fmt(low)}, {_fmt(high)}]"


def _markdown_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of table1.md, each cell a string (pandas renders the Markdown)."""
    rows = []
    for (_, r), ran in zip(table.iterrows(), measured(table)):
        label = "" if not ran or bool(r.primary) else f" *({r.statement})*"
        window = _window(r)
        rows.append({
            "cell": f"`{r.cell}`{label}", "privacy": r.privacy, "rate (Table I)": r.rate,
            "axis": r.axis if ran else "", "d": f"{int(r.d)}" if ran else "",
            "run": run_text(r) if ran else "",
            "theory slope": f"{r.theory_formula} = {_fmt(r.theory)}" if ran else "",
            "law-free slope [95% CI], deepest window": (
                _interval_text(r.law_free_slope, r.law_free_ci_low, r.law_free_ci_high)
                + (f" ({window})" if window else "")),
            "**law-free verdict**": f"**{r.law_free_verdict}**",
            "law-tied slope [95% CI]": _interval_text(r.slope, r.ci_low, r.ci_high),
            "law-tied check": r.verdict, "law-tied fit range": _fit_range(r),
            "theory source": r.theory_source if ran and isinstance(r.theory_source, str) else ""})
    return pd.DataFrame(rows)


def _table1_markdown(table: pd.DataFrame) -> str:
    rows = _markdown_rows(table)
    rows = rows.apply(lambda column: column.str.replace("|", r"\|", regex=False))  # a "|" would split a cell
    lines = ["# Table I, measured", "", MARKDOWN_INTRO, "", rows.to_markdown(index=False, tablefmt="pipe", disable_numparse=True), ""]
    ran = table[measured(table)]
    primary = ran[ran.primary.fillna(True).astype(bool)]
    law_free = primary[primary.law_free_verdict.astype(str).isin(LAW_FREE_VERDICTS)]
    tied = primary[primary.verdict != "not run"]
    counts = law_free.law_free_verdict.value_counts()
    lines += ["**Verdicts, law-free (Table I statements, deepest windows):** "
              + (", ".join(f"{v}: {n}" for v, n in counts.items()) or "not run yet (`make minimax`)"),
              "", "Law-tied construction check (all d): "
              + (", ".join(f"{v}: {n}" for v, n in tied.verdict.value_counts().items()) or "none yet"),
              ""]
    # a consistent row's note only repeats its two windows; the others say what was ruled out
    notes = primary[(primary.law_free_note.astype(str).str.len() > 0) & (primary.law_free_verdict != "consistent")]
    if len(notes):
        lines += ["Law-free notes:", ""]
        lines += [f"- `{r.cell}` {r.axis} d={int(r.d)}: {r.law_free_note}" for _, r in notes.iterrows()]
        lines.append("")
    lines += _statements_section(ran)
    return "\n".join(lines)


def _statements_section(table: pd.DataFrame) -> list:
    """Which of several statements of one exponent the measurements support.

    The adjudication uses the law-free fits (deepest windows) where they exist: a
    law-tied slope follows whichever law the registry holds, so it cannot
    choose between statements.  Law-tied rows are listed, marked as such.
    """
    if "statement" not in table:
        return []
    multi = table.groupby(["cell", "axis", "d", "parameters"], dropna=False).statement.nunique()
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
    """Measured slope (95% CI) against the theory exponent, per cell and axis, across d: the law-free
    slope (deepest window, the verdict's) filled, the law-tied one hollow, each where it was run."""
    cells = list(dict.fromkeys(table.cell))
    ncols = min(5, len(cells))
    nrows = int(np.ceil(len(cells) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 3.2 * nrows), squeeze=False,
                             sharey=False)
    colors = {"N": "tab:blue", "eps": "tab:orange"}
    several = table.parameters.fillna("").nunique() > 1
    for ax, cell in zip(axes.ravel(), cells):
        part = table[table.cell == cell]
        for (axis, parameters), group in part.groupby(["axis", part.parameters.fillna("")]):
            color = colors.get(axis, "k")
            name = f"log {AXIS_SYMBOLS.get(axis, axis)}" + (f", {parameters}" if several and parameters else "")
            primary = group[group.primary.fillna(True).astype(bool)].sort_values("d")
            for columns, offset, style, mode in ((("law_free_slope", "law_free_ci_low", "law_free_ci_high"), -0.08,
                                                  {"fmt": "o"}, "law-free"),
                                                 (("slope", "ci_low", "ci_high"), 0.08,
                                                  {"fmt": "s", "mfc": "none"}, "law-tied")):
                slope, low, high = (primary[c].astype(float) for c in columns)
                if slope.notna().any():
                    ax.errorbar(primary.d + offset, slope, yerr=[slope - low, high - slope], color=color,
                                capsize=3, label=f"{mode}, {name}", **style)
            ax.plot(primary.d, primary.theory, "x--", color=color, alpha=0.8, zorder=3, label=f"Table I, {name}")
            for statement, alt in group[~group.primary.fillna(True).astype(bool)].groupby("statement"):
                alt = alt.sort_values("d")
                ax.plot(alt.d, alt.theory, "+:", color="gray", zorder=3, label=statement)
        ax.set_title(cell, fontsize=9)
        ax.set_xlabel("d")
        ax.set_xticks(sorted(part.d.dropna().unique().astype(int)))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in axes.ravel()[len(cells):]:
        ax.axis("off")
    axes[0][0].set_ylabel("slope of log risk")
    fig.suptitle(f"Table I exponents, {task}: measured slope (95% CI; filled law-free, deepest window; "
                 "hollow law-tied) vs theory", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)

