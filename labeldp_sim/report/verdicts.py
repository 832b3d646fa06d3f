"""What an experiment page opens with: the run's verdicts, one sentence each.

A sentence states the verdict, the slope with its 95% CI (the interval the verdict was taken
on, read from the run's own fit table: the figures' legends and the index print the same
numbers), the range the slope was measured on, and the theory with its tolerance, so that a
reader can quote it.  A paper's :class:`~labeldp_sim.report.site.Layout` names the function
that builds them; :func:`slope_verdicts` serves every kind whose fit table has one row per
fitted slope.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from markupsafe import Markup

from labeldp_sim.report.html import esc, fmt, interval, render
from labeldp_sim.stats.windows import AXIS_SYMBOLS

__all__ = ["Verdict", "Verdicts", "SlopeColumns", "slope_verdicts"]


@dataclass(frozen=True)
class Verdict:
    """One verdict and the sentence (HTML, escaped) that states it."""

    verdict: str
    sentence: str


@dataclass
class Verdicts:
    """The verdicts a page opens with, a lead (how the CI is formed, once per page) and the file read."""

    rows: list = field(default_factory=list)
    lead: str = ""
    source: str = ""

    def template_context(self) -> dict:
        """The pieces for a template, marked safe (each was escaped where it was built)."""
        return {"rows": [{"verdict": v.verdict, "sentence": Markup(v.sentence)} for v in self.rows],
                "lead": Markup(self.lead), "source": Markup(self.source)}

    def sentences_html(self) -> str:
        """The numbered sentences alone (``templates/verdicts.html.j2``, as a page shows them)."""
        return render("verdicts.html.j2", verdicts=self.template_context())


@dataclass(frozen=True)
class SlopeColumns:
    """Where a fit table keeps what a verdict sentence says (column names).

    ``labels`` tell the rows apart (``axis`` and ``d``...); ``window`` the range the slope
    was measured on; ``statement`` the name of the theory it is tested against (a rate's
    source), None when the table tests one; ``ci_method`` a column saying how the CI is formed
    (said once in the lead), or ``ci_text``, the same said by the layout.
    """

    slope: str = "slope"
    ci_low: str = "ci_low"
    ci_high: str = "ci_high"
    theory: str = "theory"
    tol: str = "tol"
    verdict: str = "verdict"
    labels: tuple = ("axis", "d")
    window: tuple = ("x_min", "x_max")
    window_name: str = "over"
    statement: str | None = "statement"
    ci_method: str | None = None
    ci_text: str = ""


def _label(row, labels: tuple) -> str:
    words = []
    for name in labels:
        value = row.get(name)
        if value is None or (isinstance(value, float) and pd.isna(value)):
            continue
        if name == "axis":
            words.append(f"slope on log {AXIS_SYMBOLS.get(value, value)}")
        elif isinstance(value, str):  # a name (an estimator) says itself
            words.append(value)
        else:
            words.append(f"{name} = {fmt(value)}")
    return ", ".join(words)


def slope_verdicts(frame: pd.DataFrame | None, columns: SlopeColumns, source: str = "") -> Verdicts | None:
    """A sentence per row of ``frame`` (the rows a page states: filter before), or None without rows."""
    if frame is None or frame.empty or columns.slope not in frame:
        return None
    rows = []
    for _, r in frame.iterrows():
        verdict = r.get(columns.verdict)
        verdict = verdict if isinstance(verdict, str) and verdict else "not run"
        low, high = (r.get(c) for c in columns.window)
        axis = AXIS_SYMBOLS.get(r.get("axis"), r.get("axis") or "")
        where = f", {columns.window_name} {axis} {fmt(low)}–{fmt(high)}" if pd.notna(low) and pd.notna(high) else ""
        statement = r.get(columns.statement) if columns.statement else None
        against = f"{statement} " if isinstance(statement, str) and statement else "the theory "
        tol = r.get(columns.tol)
        margin = f" ± {fmt(tol)}" if pd.notna(tol) else ""
        slope = interval(r.get(columns.slope), r.get(columns.ci_low), r.get(columns.ci_high)) or "no slope fitted"
        sentence = (f"{_label(r, columns.labels)}: {slope} (95% CI{where}) against {against}"
                    f"{fmt(r.get(columns.theory))}{margin}: {verdict}.")
        rows.append(Verdict(verdict, esc(sentence[0].upper() + sentence[1:])))
    lead = columns.ci_text
    if columns.ci_method and columns.ci_method in frame:
        methods = [m for m in dict.fromkeys(frame[columns.ci_method].dropna()) if isinstance(m, str) and m]
        if methods:
            lead = "How the 95% CI is formed: " + "; ".join(methods) + "."
    return Verdicts(rows, esc(lead), source)
