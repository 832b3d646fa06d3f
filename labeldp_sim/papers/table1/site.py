"""papers/000's parts of the HTML report: Table I with law-free, law-tied and theory side by side,
the Theorem 7 adjudication, and the layout of its experiment pages.

Read from ``results/table1.csv`` (rows), ``results/table1.md`` (its "Which statement the data
support" section) and ``results/exponents_<task>.svg``; every link goes to the page of the
experiment that measured the row (``<cell>`` law-tied, ``minimax/<cell>`` law-free).
"""

from __future__ import annotations

import pandas as pd

from labeldp_sim.report.site import Layout, Section, register_layout, register_section
from labeldp_sim.report.html import badge, esc, fmt, interval, is_true, markdown_html, markdown_section, table

__all__ = []

register_layout(Layout("rates", "law_tied",
                       figures=(("rate", "mean excess risk against the swept axis, fitted and theory slopes"),),
                       tables=(("fit.csv", "Fits (one row per axis, d and statement)"),
                               ("summary.csv", "Points (mean excess risk per grid point)"))))
register_layout(Layout("rates", "law_free",
                       figures=(("rate", "M = min over tuning of max over instances, against the swept axis"),
                                ("heatmap", "log10 risk over (instance scale, tuning) at each point"),
                                ("convergence", "local slope of the deepest windows: convergence diagram")),
                       tables=(("fit.csv", "Fits (whole range and windows)"),
                               ("points.csv", "Points (M, the worst instance and the oracle tuning per point)"))))


def _linked(site, relative: str, text: str) -> str:
    """A verdict linked to the page of the experiment that gave it (with its stale badge)."""
    return site.page_link(relative, text) if site.experiment(relative) else esc(text)


# the law-tied columns of table1.csv: absent where only law-free runs wrote it (a researcher's own folder)
LAW_TIED = ("experiment", "fixed", "theory", "theory_formula", "theory_source", "slope", "ci_low", "ci_high",
            "verdict")


def _rows(site, frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.reindex(columns=[*frame.columns, *(c for c in LAW_TIED if c not in frame.columns)])
    rows = []
    for _, r in frame.iterrows():
        free = r.get("law_free_verdict")
        free = free if isinstance(free, str) and free else "not run"
        tied = r.verdict if isinstance(r.verdict, str) and r.verdict else "not run"
        tied_dir = str(r.experiment) if isinstance(r.experiment, str) else str(r.cell)
        window = ""
        if pd.notna(r.get("law_free_window_lo")):
            window = (f'<br><span class="note">{esc(r.axis)} {fmt(r.law_free_window_lo)}–'
                      f"{fmt(r.law_free_window_hi)}</span>")
        rows.append({
            "cell": f"<code>{esc(r.cell)}</code>", "privacy": r.privacy, "rate (Table I)": r.rate,
            "axis": f"{r.axis} ({r.fixed})" if isinstance(r.fixed, str) else r.axis, "d": r.d,
            "theory": f'<span title="{esc(r.theory_formula)}; {esc(r.theory_source)}">{fmt(r.theory)}</span>'
                      if pd.notna(r.theory) else "",
            "law-free slope [95% CI]": esc(interval(r.law_free_slope, r.law_free_ci_low, r.law_free_ci_high)) + window,
            "law-free verdict": _linked(site, f"minimax/{r.cell}", free) if free != "not run" else free,
            "law-tied slope [95% CI]": interval(r.slope, r.ci_low, r.ci_high),
            "law-tied check": _linked(site, tied_dir, tied) if tied != "not run" else tied,
        })
    return pd.DataFrame(rows)


def _table1(site):
    frame = site.read_csv("table1.csv")
    if frame is None:
        return Section("Table I (papers/000)", site.missing_file("table1.csv", "make sweep writes it"),
                       anchor="table1", summary="missing")
    primary = frame[is_true(frame["primary"])]
    rows = _rows(site, primary)
    counts = primary.law_free_verdict.fillna("not run").value_counts()
    lead = ("<p>Fifteen rate cells at d = 1, 2, 3. The <b>law-free verdict</b> decides (worst admitted instance "
            "against an oracle-tuned estimator, exact expected risks, slope of the deepest window); the "
            "<b>law-tied check</b> confirms the construction (instance and tuning follow the cell's law). "
            "A verdict links to the page of the experiment that gave it; hover a theory slope for its "
            "formula and source.</p>")
    body = (lead + table(rows, verdicts=("law-free verdict", "law-tied check"),
                         raw=("cell", "theory", "law-free slope [95% CI]", "law-free verdict", "law-tied check"))
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
    cells = frame.loc[~is_true(frame["primary"]), "cell"].unique()
    part = frame[frame.cell.isin(cells)]
    if part.empty:
        return Section("Theorem 7 adjudication", "<p>" + badge("not run")
                       + " no cell with two statements of its exponent in table1.csv.</p>", anchor="theorem7")
    rows = pd.DataFrame({
        "cell": [site.page_link(f"minimax/{c}", c) for c in part.cell],
        "statement": part.statement.to_numpy(), "d": part.d.to_numpy(),
        "theory": [fmt(t) for t in part.theory],
        "law-free slope [95% CI]": [interval(s, lo, hi) for s, lo, hi in
                                    zip(part.law_free_slope, part.law_free_ci_low, part.law_free_ci_high)],
        "law-free verdict": [v if isinstance(v, str) else "not run" for v in part.law_free_verdict],
        "law-tied slope [95% CI]": [interval(s, lo, hi) for s, lo, hi in zip(part.slope, part.ci_low, part.ci_high)],
        "law-tied check": part.verdict.to_numpy()})
    body = ("<p>Theorem 7 (22) states the central-DP regression exponent as 2β/(d+2β); Table I, Theorem 8 and "
            "(154) give 2β/(d+β). Both statements are tested against the same law-free fits.</p>"
            + table(rows, verdicts=("law-free verdict", "law-tied check"), raw=("cell",)))
    text = site.read_text("table1.md")
    section = markdown_section(text, "Which statement the data support") if text else None
    if section:
        body += markdown_html(section)
    supported = "; ".join(sorted({line.split("support")[1].split("and")[0].strip(" *")
                                  for line in (section or "").splitlines() if "the data support" in line}))
    return Section("Theorem 7 adjudication", body + site.sources("table1.csv", "table1.md"), anchor="theorem7",
                   summary=f"the data support {supported}" if supported else "")


register_section(10, _table1)
register_section(20, _theorem7)
