"""The HTML pieces of the report (:mod:`labeldp_sim.report.site`): verdict colours, numbers, tables,
Markdown.  Every value is escaped here, so a results file cannot inject markup into a page.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import pandas as pd
from markupsafe import Markup, escape

__all__ = ["verdict_class", "esc", "fmt", "interval", "is_true", "badge", "table", "render", "markdown_html",
           "markdown_section", "MAX_ROWS"]

# A table longer than this shows its first rows and links the CSV for the rest: a page stays
# quick to open and to print.
MAX_ROWS = 150


# ---------------------------------------------------------------------------- verdict colours

# Words a verdict cell starts with (or contains) and the colour class they get.  Order
# matters: "inconsistent" before "consistent", "not reproduced" before "reproduced".
_VERDICTS = (
    ("not run", "v-none"), ("missing", "v-missing"), ("stale", "v-stale"), ("error", "v-bad"),
    ("inconsistent", "v-bad"), ("not reproduced", "v-bad"), ("upper bound violated", "v-bad"),
    ("leaky", "v-bad"), ("not private", "v-bad"), ("missed", "v-bad"), ("accepted", "v-bad"),
    ("inconclusive", "v-unsure"), ("pre-asymptotic", "v-unsure"),
    ("consistent", "v-good"), ("reproduced", "v-good"), ("upper bound respected", "v-good"),
    ("private", "v-good"), ("caught", "v-good"), ("refused", "v-good"), ("stated", "v-note"),
)


def verdict_class(text) -> str:
    """The colour class of a verdict text (``v-good``, ``v-bad``, ``v-unsure``...), '' for none."""
    if not isinstance(text, str):
        return ""
    low = _strip_tags(text).strip().lower()
    for word, cls in _VERDICTS:
        if low.startswith(word):
            return cls
    first = min(((low.find(word), cls) for word, cls in _VERDICTS if word in low), default=None)
    return first[1] if first else ""


# ---------------------------------------------------------------------------- HTML pieces

def esc(value) -> str:
    """``value`` as HTML text, escaped (a plain str: the sections join HTML as text, and hand it to a
    template as :class:`~markupsafe.Markup`)."""
    return str(escape("" if value is None else str(value)))


def fmt(value, digits: int = 3) -> str:
    """A number as a table shows it: 3 decimals, or 3 significant digits when large or small
    (below 0.1, where 3 decimals would leave one or two: 0.00286, not 0.003)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:d}" if abs(value) < 1e15 else f"{value:.{digits}g}"
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 0.1):
        return f"{value:.{digits}g}"
    if float(value).is_integer() and abs(value) >= 10:  # a count or a grid size stored as float
        return f"{int(value):d}"
    return f"{value:.{digits}f}"


def interval(slope, low, high) -> str:
    """``slope [low, high]`` (a fitted slope and its 95% CI), '' where nothing was fitted."""
    return "" if pd.isna(slope) else f"{fmt(slope)} [{fmt(low)}, {fmt(high)}]"


def is_true(column: pd.Series) -> pd.Series:
    """A flag column of a results CSV (``primary``...) as booleans, whether pandas read it as bool or text."""
    return column.astype(str).str.lower() == "true"


def badge(text: str, cls: str | None = None) -> str:
    return str(Markup('<span class="badge {}">{}</span>').format(cls or verdict_class(text), text))


def render(template: str, **context) -> str:
    """A template of ``labeldp_sim/report/templates`` filled with ``context`` (autoescaped: a value
    is escaped unless it is :class:`~markupsafe.Markup`, HTML already escaped)."""
    return _templates().get_template(template).render(badge=lambda *a: Markup(badge(*a)), **context)


@lru_cache(maxsize=1)
def _templates():
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("labeldp_sim.report", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


# A text column holding one value in every row, longer than this, is said once above its table
# (a CI method, a formula's source), not once per row.
CONSTANT_TEXT = 40


def table(frame: pd.DataFrame, columns: list | None = None, verdicts: tuple = ("verdict",),
          links: dict | None = None, caption: str = "", max_rows: int = MAX_ROWS, raw: tuple = (),
          wide: tuple = ()) -> str:
    """A sortable HTML table of ``frame`` (template ``table.html.j2``).

    ``verdicts`` are the columns coloured by :func:`verdict_class`; ``links`` maps a column to
    a function of the row giving an href (or None); ``raw`` columns hold HTML already escaped;
    ``wide`` columns keep a reading width (long text) when the table is squeezed.
    Numbers carry their full value in ``data-sort`` so sorting is numeric.  A long text that is
    the same in every row (of two or more) is stated once above the table.
    """
    columns = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    constants = []
    if len(frame) > 1:
        for c in list(columns):
            values = frame[c].dropna().unique()
            if (c not in raw and c not in verdicts and len(values) == 1 and frame[c].notna().all()
                    and isinstance(values[0], str) and len(values[0]) > CONSTANT_TEXT):
                constants.append((c, values[0]))
                columns.remove(c)
    # a column of whole numbers (K, counts, grid sizes) read as float because of a gap shows them whole:
    # 2, not 2.000
    whole = {c for c in columns if _whole_numbers(frame[c])}
    links = links or {}
    shown = frame.head(max_rows)
    rows = []
    for _, row in shown.iterrows():
        cells = []
        for c in columns:
            value = row[c]
            if c in whole and not pd.isna(value):
                value = int(value)
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool) and not pd.isna(value)
            classes = " ".join(filter(None, (verdict_class(value) if c in verdicts else "",
                                             "wide" if c in wide else "")))
            cells.append({"text": Markup(value) if c in raw else _folded(fmt(value)),
                          "sort": repr(float(value)) if numeric else None, "cls": classes,
                          "href": links[c](row) if c in links else None})
        rows.append(cells)
    return render("table.html.j2", columns=columns, rows=rows, constants=constants, caption=Markup(caption),
                  more=len(frame) > len(shown), shown=len(shown), total=len(frame))


def _whole_numbers(column: pd.Series) -> bool:
    """Whether a float column holds only whole numbers below 1e15 (NaN aside), at least one."""
    if not pd.api.types.is_float_dtype(column):
        return False
    values = column.dropna()
    return len(values) > 0 and bool(((values == values.round()) & (values.abs() < 1e15)).all())


# A cell longer than this (a verdict's reasons, a command line) opens on a click, so one long
# cell does not make every row of its table a screen tall.
LONG_CELL = 180


def _folded(text: str) -> Markup:
    if len(text) <= LONG_CELL:
        return escape(text)
    cut = text[:LONG_CELL // 2].rsplit(" ", 1)[0]
    return Markup("<details><summary>{} …</summary>{}</details>").format(cut, text)


def markdown_html(text: str) -> str:
    """Markdown (a results ``.md`` file, or a section of one) as HTML, tables included."""
    import markdown

    out = markdown.markdown(text, extensions=["tables"])
    # the verdict cells of a Markdown table get their colours too
    # (an aligned column's cells carry a style attribute: kept, the class added)
    return re.sub(r"<td( style=\"[^\"]*\")?>(.*?)</td>",
                  lambda m: f'<td{m.group(1) or ""} class="{verdict_class(_strip_tags(m.group(2)))}">'
                            f"{m.group(2)}</td>", out, flags=re.S)


def _strip_tags(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text)


def markdown_section(text: str, heading: str) -> str | None:
    """The part of a Markdown document under ``## heading`` (to the next heading of that level)."""
    match = re.search(rf"^(#+) {re.escape(heading)}\s*$", text, flags=re.M)
    if not match:
        return None
    level = len(match.group(1))
    rest = text[match.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, flags=re.M)
    return rest[: end.start()] if end else rest
