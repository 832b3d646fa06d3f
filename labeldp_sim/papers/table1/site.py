"""papers/000's parts of the HTML report: Table I with law-free, law-tied and theory side by side,
the Theorem 7 adjudication, and the layout of its experiment pages.

Read from ``results/table1.csv`` (rows), ``results/table1.md`` (its "Which statement the data
support" section) and ``results/exponents_<task>.svg``; every link goes to the page of the
experiment that measured the row (``<cell>`` law-tied, ``minimax/<cell>`` law-free).
"""

from __future__ import annotations

import pandas as pd

from labeldp_sim.papers.table1.parameters import config_parameters, parameters_text
from labeldp_sim.papers.table1.report import measured, run_text
from labeldp_sim.stats.windows import AXIS_SYMBOLS
from labeldp_sim.report.verdicts import SlopeColumns, slope_verdicts
from labeldp_sim.report.site import Layout, Section, register_layout, register_section
from labeldp_sim.report.html import badge, esc, fmt, interval, is_true, markdown_html, markdown_section, table

__all__ = []

def _fits(site, exp, keep) -> tuple:
    relative = (exp.path / "fit.csv").as_posix()
    frame = site.read_csv(relative)
    return (None if frame is None else keep(frame)), site.sources(relative, from_site=True)


def _law_tied_verdicts(site, exp):
    fits, source = _fits(site, exp, lambda f: f)
    return slope_verdicts(fits, SlopeColumns(ci_text="How the 95% CI is formed: weighted least squares on the "
                                                     "Monte-Carlo standard errors, t quantile, Birge-inflated."),
                          source)


def _law_free_verdicts(site, exp):
    fits, source = _fits(site, exp, lambda f: f[f.quantity == "M"] if "quantity" in f else f)
    return slope_verdicts(fits, SlopeColumns(slope="deep_slope", ci_low="deep_ci_low", ci_high="deep_ci_high",
                                             window=("deep_window_lo", "deep_window_hi"),
                                             window_name="deepest window", ci_method="ci_method"), source)


def _describe(config) -> str:
    return parameters_text(config_parameters(config))


register_layout(Layout("rates", "law_tied",
                       figures=(("rate", "mean excess risk against the swept axis, fitted and theory slopes"),),
                       tables=(("fit.csv", "Fits (one row per axis, d and statement)"),
                               ("summary.csv", "Points (mean excess risk per grid point)")),
                       verdicts=_law_tied_verdicts, describe=_describe))
register_layout(Layout("rates", "law_free",
                       figures=(("rate", "M = min over tuning of max over instances, against the swept axis"),
                                ("heatmap", "log10 risk over (instance scale, tuning) at each point"),
                                ("convergence", "local slope of the deepest windows: convergence diagram")),
                       tables=(("fit.csv", "Fits (whole range and windows)"),
                               ("points.csv", "Points (M, the worst instance and the oracle tuning per point)")),
                       verdicts=_law_free_verdicts, describe=_describe))


def _linked(site, relative, text: str) -> str:
    """A verdict linked to the page of the experiment that gave it (with its stale badge)."""
    return site.page_link(relative, text) if isinstance(relative, str) and site.experiment(relative) else esc(text)


# the columns of table1.csv a section reads: absent from an older file or a hand-made one
COLUMNS = ("experiment", "mechanism", "estimator", "parameters", "fixed", "statement", "theory", "theory_formula",
           "theory_source", "slope", "ci_low", "ci_high", "x_min", "x_max", "points", "verdict",
           "law_free_experiment", "law_free_mechanism", "law_free_estimator", "law_free_slope", "law_free_ci_low",
           "law_free_ci_high", "law_free_window_lo", "law_free_window_hi", "law_free_verdict")


def _complete(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.reindex(columns=[*frame.columns, *(c for c in COLUMNS if c not in frame.columns)])


def _verdict(value) -> str:
    return value if isinstance(value, str) and value else "not run"


def _range(axis, low, high) -> str:
    """Where a slope was measured: ``ε 1e-09–1e-07``."""
    if pd.isna(low) or pd.isna(high):
        return ""
    return f'<br><span class="note">{esc(AXIS_SYMBOLS.get(axis, axis))} {low:.3g}–{high:.3g}</span>'


def _rows(site, frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    frame = _complete(frame)
    for (_, r), ran in zip(frame.iterrows(), measured(frame)):
        free, tied = _verdict(r.law_free_verdict), _verdict(r.verdict)
        fixed = f'<br><span class="note">{esc(r.fixed)}</span>' if isinstance(r.fixed, str) and tied != "not run" else ""
        statement = f" <i>({esc(r.statement)})</i>" if ran and not bool(r.primary) else ""
        rows.append({
            # the cell's privacy and rate are the same in each of its rows: under its name, the rate on hover
            "cell": f'<code title="{esc(r.rate)}">{esc(r.cell)}</code>{statement}'
                    f'<br><span class="note">{esc(r.privacy)}</span>',
            "axis": r.axis if ran else "",
            "d": r.d if ran else float("nan"), "run": run_text(r) if ran else "",
            "theory": f'<span title="{esc(r.theory_formula)}; {esc(r.theory_source)}">{fmt(r.theory)}</span>'
                      if pd.notna(r.theory) else "",
            "law-free slope [95% CI], deepest window": esc(interval(r.law_free_slope, r.law_free_ci_low,
                                                                    r.law_free_ci_high))
                                                       + _range(r.axis, r.law_free_window_lo, r.law_free_window_hi),
            "law-free verdict": _linked(site, r.law_free_experiment, free) if free != "not run" else free,
            "law-tied slope [95% CI], fit range": esc(interval(r.slope, r.ci_low, r.ci_high))
                                                  + _range(r.axis, r.x_min, r.x_max) + fixed,
            "law-tied check": _linked(site, r.experiment, tied) if tied != "not run" else tied,
        })
    return pd.DataFrame(rows)


RAW = ("cell", "theory", "law-free slope [95% CI], deepest window", "law-free verdict",
       "law-tied slope [95% CI], fit range", "law-tied check")


def _grid_cell(site, r) -> str:
    """One (cell, axis, d) of the grid: the law-free verdict (linked), its slope [95% CI] and window; the
    law-tied check where no law-free run was made."""
    free = _verdict(r.law_free_verdict)
    if free != "not run":
        return (_linked(site, r.law_free_experiment, free) + "<br>"
                + esc(interval(r.law_free_slope, r.law_free_ci_low, r.law_free_ci_high)) + _theory(r)
                + _range(r.axis, r.law_free_window_lo, r.law_free_window_hi))
    tied = _verdict(r.verdict)
    if tied != "not run":
        return (_linked(site, r.experiment, tied) + ' <span class="note">(law-tied)</span><br>'
                + esc(interval(r.slope, r.ci_low, r.ci_high)) + _theory(r) + _range(r.axis, r.x_min, r.x_max))
    return "not run"


def _theory(r) -> str:
    return f' <span class="note">vs {fmt(r.theory)}</span>' if pd.notna(r.theory) else ""


def _grid(site, primary: pd.DataFrame) -> str:
    """The verdicts at a glance: a row per (cell, axis, family parameters), a column per d."""
    frame = _complete(primary)
    ran = frame[measured(frame)]
    dims = sorted(int(d) for d in ran.d.dropna().unique())
    rows = []
    family = ran.parameters.astype(object).fillna("")  # an older table1.csv has no parameters
    for _, r in frame.drop_duplicates(["cell", "axis", "parameters"]).iterrows():
        mine = ran[(ran.cell == r.cell) & (ran.axis == r.axis)
                   & (family == ("" if pd.isna(r.parameters) else r.parameters))]
        row = {"cell": f'<code title="{esc(r.rate)}">{esc(r.cell)}</code><br><span class="note">{esc(r.privacy)}</span>',
               "axis": r.axis if len(mine) else "", "run": run_text(mine.iloc[0]) if len(mine) else ""}
        for d in dims:
            at = mine[mine.d == d]
            row[f"d = {d}"] = _grid_cell(site, at.iloc[0]) if len(at) else "not run"
        rows.append(row)
    columns = [f"d = {d}" for d in dims]
    return table(pd.DataFrame(rows), verdicts=tuple(columns), raw=("cell", *columns))


def _table1(site):
    frame = site.read_csv("table1.csv")
    if frame is None:
        return Section("Table I (papers/000)", site.missing_file("table1.csv", "make sweep writes it"),
                       anchor="table1", summary="missing", absent=True)
    primary = frame[is_true(frame["primary"])]
    rows = _rows(site, primary)
    counts = _complete(primary).law_free_verdict.map(_verdict).value_counts()
    lead = ("<p>Fifteen rate cells at d = 1, 2, 3. The <b>law-free verdict</b> (below: each cell and axis, by d; "
            "the slope with its 95% CI and the deepest window it was read on) decides (worst admitted instance "
            "against an oracle-tuned estimator, exact expected risks, slope of the deepest window); the "
            "<b>law-tied check</b> confirms the construction (instance and tuning follow the cell's law). "
            "Each slope says the range it was measured on (the law-free one: its deepest window), each row "
            "the mechanism, estimator and family parameters of its runs. A verdict links to the page of the "
            "experiment that gave it; hover a cell for its rate, a theory slope for its formula and source.</p>")
    body = (lead + _grid(site, primary)
            + f"<details><summary>Every row ({len(rows)}): theory, law-free and law-tied slopes, their ranges, "
              "the law-tied checks</summary>"
            + table(rows, verdicts=("law-free verdict", "law-tied check"), raw=RAW) + "</details>"
            + site.sources("table1.csv"))
    figures = [shown for task in ("classification", "regression") if (shown := site.figure(
        f"exponents_{task}", f"Measured slope (95% CI) against theory across d, {task}"))]
    if figures:
        body += "<details><summary>Exponent figures</summary>" + "".join(figures) + "</details>"
    return Section("Table I (papers/000)", body, anchor="table1",
                   summary=", ".join(f"{n} {v}" for v, n in counts.items()))


def _theorem7(site):
    frame = site.read_csv("table1.csv")
    if frame is None:
        return None  # the Table I section already says it is missing
    frame = _complete(frame)
    ran = frame[measured(frame)]
    cells = ran.loc[~is_true(ran["primary"]), "cell"].unique()
    part = ran[ran.cell.isin(cells)]
    if part.empty:
        return Section("Theorem 7 adjudication", "<p>" + badge("not run")
                       + " no cell with two statements of its exponent in table1.csv.</p>", anchor="theorem7")
    rows = _rows(site, part)
    body = ("<p>Theorem 7 (22) states the central-DP regression exponent as 2β/(d+2β); Table I, Theorem 8 and "
            "(154) give 2β/(d+β). Both statements are tested against the same law-free fits.</p>"
            + table(rows, verdicts=("law-free verdict", "law-tied check"), raw=RAW))
    text = site.read_text("table1.md")
    section = markdown_section(text, "Which statement the data support") if text else None
    if section:
        body += markdown_html(section)
    supported = "; ".join(sorted({line.split("support")[1].split("and")[0].strip(" *")
                                  for line in (section or "").splitlines() if "the data support" in line}))
    sources = ["table1.csv", "table1.md"]
    # the β sweep (issue 35, item 3), where it ran: its absence is no missing file
    every_beta = site.read_text("minimax/theorem7.md") if (site.results / "minimax/theorem7.md").exists() else None
    if every_beta:  # folded: one line says how many rows reject Theorem 7, the table opens on a click
        tally = next((line for line in every_beta.splitlines() if line.startswith("Theorem 7 rejected in")), "")
        body += (f"<details><summary>At every β: {esc(tally or 'Theorem 7 against Table I')}</summary>"
                 + markdown_html(every_beta.split("\n", 2)[2]) + "</details>")
        sources.append("minimax/theorem7.md")
    return Section("Theorem 7 adjudication", body + site.sources(*sources), anchor="theorem7",
                   summary=f"the data support {supported}" if supported else "")


register_section(10, _table1, "table1", "Table I (papers/000)", "table1")
register_section(20, _theorem7, "table1", "Theorem 7 adjudication", "theorem7")
