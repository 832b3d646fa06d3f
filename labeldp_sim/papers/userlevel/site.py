"""papers/003's parts of the HTML report: Table 1 (law-free rows, law-tied rows, at a glance) and the
layout of its experiment pages.

Read from ``results/userlevel/law_free/table.csv`` (law-free rows), ``results/userlevel/table1.csv``
(law-tied rows) and the "Table 1 at a glance" section of ``results/userlevel/table1.md``.
"""

from __future__ import annotations

import re

import pandas as pd

from labeldp_sim.report.site import Layout, Section, register_layout, register_section
from labeldp_sim.report.html import badge, esc, fmt, interval, is_true, markdown_html, markdown_section, table
from labeldp_sim.report.verdicts import SlopeColumns, slope_verdicts

__all__ = []

BASE = "userlevel"

def _fit_verdicts(columns):
    """The verdicts of a user-level page: every row of its fit.csv, each against its rate (primary
    rows are the minimax verdicts, the others check an upper bound one-sidedly)."""
    def verdicts(site, exp):
        relative = (exp.path / "fit.csv").as_posix()
        return slope_verdicts(site.read_csv(relative), columns, site.sources(relative, from_site=True))
    return verdicts


def _describe(config) -> str:
    node = config.get("userlevel") if isinstance(config.get("userlevel"), dict) else {}
    family = node.get("family") if isinstance(node.get("family"), dict) else {}
    estimators = node.get("estimators")
    names = list(estimators) if isinstance(estimators, (dict, list)) else []
    return ", ".join(filter(None, [str(family.get("name", "")), *map(str, names)]))


register_layout(Layout("userlevel", figures=(("rate", "error against the swept axis, fitted and bound slopes"),),
                       tables=(("fit.csv", "Fits (one row per estimator, axis and rate)"),
                               ("summary.csv", "Points (mean error per grid point)")),
                       verdicts=_fit_verdicts(SlopeColumns(
                           labels=("estimator", "axis", "d"), statement="rate_source",
                           ci_text="How the 95% CI is formed: weighted least squares on the Monte-Carlo standard "
                                   "errors, t quantile, Birge-inflated.")),
                       describe=_describe))
register_layout(Layout("userlevel_minimax",
                       figures=(("convergence", "M against the swept axis and the local slope of its windows"),),
                       tables=(("fit.csv", "Fits (deepest window against each rate)"),
                               ("windows.csv", "Windows (local slopes)"),
                               ("points.csv", "Points (M, the worst scale and the oracle constant per point)")),
                       verdicts=_fit_verdicts(SlopeColumns(
                           slope="deep_slope", ci_low="deep_ci_low", ci_high="deep_ci_high",
                           window=("deep_lo", "deep_hi"), window_name="deepest window",
                           labels=("estimator", "axis", "d"), statement="rate_source",
                           ci_text="How the 95% CI is formed: OLS on exact entries, residual standard error "
                                   "× AR(1) factor, t quantile.")),
                       describe=_describe))


def _primary(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[is_true(frame["primary"])]


def _rows(site, relative: str, how: str, heading: str, build, folded: bool = False) -> str:
    """The primary rows of ``relative`` as ``build(site, rows)`` lays them out, under ``heading``
    (``folded``: inside a closed details element, for rows that confirm rather than decide)."""
    frame = site.read_csv(relative)
    if frame is None:
        return site.missing_file(relative, how)
    part = _primary(frame)
    if part.empty:  # written by runs of the other mode alone (a folder of law-free runs): nothing to lay out
        return heading + f"<p>{badge('not run')} no rows in <code>{esc(site.path_of(relative))}</code>.</p>"
    rows = table(build(site, part), raw=("experiment",), wide=("reason",)) + site.sources(relative)
    return heading + (f"<details><summary>{len(part)} rows</summary>{rows}</details>" if folded else rows)


def _law_free_rows(site, part: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "experiment": [site.page_link(f"{BASE}/law_free/{e}", e) for e in part.experiment],
        "Table 1 row": part.table1_row.to_numpy(), "axis": part.axis.to_numpy(), "d": part.d.to_numpy(),
        "rate (source)": [f"{r} ({s})" for r, s in zip(part.rate, part.rate_source)],
        "theory": [fmt(t) for t in part.theory],
        "deepest slope [95% CI]": [interval(s, lo, hi) for s, lo, hi in
                                   zip(part.deep_slope, part.deep_ci_low, part.deep_ci_high)],
        "window": [f"{fmt(lo)}–{fmt(hi)}" for lo, hi in zip(part.deep_lo, part.deep_hi)],
        "verdict": part.verdict.to_numpy(), "reason": part.reason.to_numpy()})


def _law_tied_rows(site, part: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "experiment": [site.page_link(f"{BASE}/{e}", e) for e in part.experiment],
        "Table 1 row": part.table1_row.to_numpy(), "estimator": part.estimator.to_numpy(),
        "axis": part.axis.to_numpy(), "d": part.d.to_numpy(), "fixed": part.fixed.to_numpy(),
        "slope [95% CI]": [interval(s, lo, hi) for s, lo, hi in zip(part.slope, part.ci_low, part.ci_high)],
        "bound's local slope": [fmt(t) for t in part.theory], "rate": part.rate.to_numpy(),
        "verdict": part.verdict.to_numpy(), "reason": part.reason.to_numpy()})


LAW_FREE_HEADING = ("<h3>Law-free rows</h3><p>Worst lower-bound instance against the oracle-tuned estimator, exact "
                    "expected errors; the slope of the deepest window decides.</p>")
LAW_TIED_HEADING = ("<h3>Law-tied rows</h3><p>Fixed instances, tested one-sidedly against the upper bound: "
                    "they confirm the estimators, they give no minimax verdict.</p>")


def _linked(site, html: str) -> str:
    """The glance's experiment names as links to their pages (law-free, then law-tied); unknown names left as text."""
    def link(match):
        name = match.group(0)
        href = site.page_href(f"{BASE}/law_free/{name}") or site.page_href(f"{BASE}/{name}")
        return f'<a href="{esc(href)}">{name}</a>' if href else name
    return re.sub(r"(?<![\w/.])ul_[a-z0-9_]+\b", link, html)


def _section(site):
    parts = []
    relative = f"{BASE}/table1.md"
    text = site.read_text(relative)
    glance = markdown_section(text, "Table 1 at a glance") if text else None
    if glance:
        # nine columns of verdict sentences: the table scrolls inside its own box, not the page
        parts.append("<h3>Table 1 at a glance</h3>" + '<div class="scroll">' + _linked(site, markdown_html(glance))
                     + "</div>" + site.sources(relative))
    else:
        parts.append(site.missing_file(relative, "make sweep writes it"))
    # the glance above states each row's verdict: the law-free rows with their slopes open on a click
    parts.append(_rows(site, f"{BASE}/law_free/table.csv", "make minimax writes it", LAW_FREE_HEADING,
                       _law_free_rows, folded=True))
    free = site.read_csv(f"{BASE}/law_free/table.csv")  # read above: the same frame
    parts.append(_rows(site, f"{BASE}/table1.csv", "make sweep writes it", LAW_TIED_HEADING, _law_tied_rows,
                       folded=True))
    figures = [shown for stem, caption in (("exponents", "measured exponents against Table 1"),
                                           ("law_free/exponents", "law-free n-exponents at every β, γ against "
                                                                  "the stated ones"),
                                           ("law_free/baselines_m", "law-free error against m: Algorithm 1, the "
                                                                    "item-level estimator, P1a, P1b"),
                                           ("error_vs_m", "error against m per estimator"))
               if (shown := site.figure(f"{BASE}/{stem}", caption))]
    if figures:
        parts.append("<details><summary>Figures</summary>" + "".join(figures) + "</details>")
    summary = ("law-free: " + ", ".join(f"{n} {v}" for v, n in _primary(free).verdict.value_counts().items())
               if free is not None else "")
    absent = text is None and free is None and site.read_csv(f"{BASE}/table1.csv") is None
    return Section("User-level Table 1 (papers/003)", "".join(parts), anchor="userlevel",
                   summary="missing" if absent else summary, absent=absent)


register_section(40, _section, "userlevel", "User-level Table 1 (papers/003)", "userlevel")
