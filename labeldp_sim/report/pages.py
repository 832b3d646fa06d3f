"""The pages of the report: one per experiment and the index, rendered from the Jinja2 templates
of ``labeldp_sim/report/templates`` (``base``, ``index``, ``experiment``, ``table``).

An experiment page opens with its verdicts (:mod:`.verdicts`), in sentences a reader can quote;
then its figures; then its tables, folded, each opened on a click; then its configuration,
provenance and files.  The index lists the stale experiments and the sections that could not be
built at its top, then the sections the papers register.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from markupsafe import Markup

from labeldp_sim.harness.errors import first_line
from labeldp_sim.report.html import badge, esc, markdown_html, render, table
from labeldp_sim.report.site import SITE_DIR, Experiment, Section, Site, layout_of

__all__ = ["experiment_page", "index_page", "FIGURE_ORDER", "UNLINKED"]

FIGURE_ORDER = ("rate", "heatmap", "convergence", "accuracy")
DATA_SUFFIXES = (".csv", ".md", ".yaml", ".json", ".png", ".svg")
# Per-trial exports are large and not committed (.gitignore): named, never linked, so the
# committed site has no link that a fresh clone would break.
UNLINKED = ("trials.csv",)


def _page(template: str, title: str, site: Site, *, depth: int, **context) -> str:
    return render(template, title=title, folder=site.results.as_posix(),
                  assets=("" if depth else f"{SITE_DIR}/") + "assets", home="../" if depth else "", **context)


def _figure(site: Site, exp: Experiment, stem: str, caption: str, expected: bool) -> str:
    shown = site.figure((exp.path / stem).as_posix(), caption, from_site=True)
    if shown or not expected:
        return shown or ""
    return (f'<figure class="absent">{badge("missing")} <code>{esc(stem)}.svg</code> / <code>{esc(stem)}.png</code>'
            f" ({esc(caption)}) is not in <code>{esc(site.path_of(exp.path.as_posix()))}/</code></figure>")


def _file_block(site: Site, exp: Experiment, name: str, caption: str, expected: bool) -> dict | None:
    """One table of the page (folded): its caption, a note (rows, or why it is not shown) and its HTML."""
    relative = (exp.path / name).as_posix()
    path = site.results / relative
    source = f'<p class="source">Read from {site.link(relative, name, from_site=True)}.</p>'
    if not path.exists():
        if not expected:
            return None
        return {"caption": caption, "note": "missing", "open": True,
                "body": Markup(f"<p>{badge('missing')} <code>{esc(site.path_of(relative))}</code> "
                               "is not there: the page shows what the other files hold.</p>")}
    if name.endswith(".md"):
        return {"caption": caption, "note": name, "open": False,
                "body": Markup(markdown_html(path.read_text()) + source)}
    try:
        frame = pd.read_csv(path)
    except (ValueError, pd.errors.ParserError, OSError, UnicodeDecodeError) as err:
        site.errors.append(f"{relative}: {first_line(err)}")
        return {"caption": caption, "note": "error", "open": True,
                "body": Markup(f"<p>{badge('error')} <code>{esc(site.path_of(relative))}</code> could not be read "
                               f"as CSV: {esc(first_line(err))}</p>")}
    if frame.empty:
        return {"caption": caption, "note": "no rows", "open": False,
                "body": Markup(f"<p>{badge('not run')} <code>{esc(name)}</code> has no rows.</p>")}
    body = table(frame, verdicts=tuple(c for c in frame.columns if "verdict" in c))
    return {"caption": caption, "note": f"{len(frame)} rows, {name}", "open": False, "body": Markup(body + source)}


def _provenance_block(exp: Experiment) -> str:
    prov = exp.provenance
    if not prov:
        return f"<p>{badge('missing')} no <code>provenance.json</code>: where these numbers came from is unknown.</p>"
    trials = prov.get("trials") or {}
    rows = [
        ("status", badge(exp.status) if exp.status != "current" else badge("current", "v-good")),
        ("code fingerprint (recorded)", f"<code>{esc(exp.recorded)}</code>"),
        ("code fingerprint (current)", f"<code>{esc(exp.current)}</code> (package <code>{esc(exp.package)}</code>)"),
        ("git commit", f"<code>{esc(prov.get('git_commit'))}</code>"),
        ("written", esc(prov.get("written"))),
        ("command", f"<code>{esc(prov.get('command'))}</code>"),
        ("seed, config key", f"{esc(prov.get('seed'))}, <code>{esc(prov.get('config_key'))}</code>"),
        ("trials wanted / computed / reused",
         f"{esc(trials.get('wanted'))} / {esc(trials.get('computed'))} / {esc(trials.get('reused'))}"),
        ("libraries", esc(", ".join(f"{k} {v}" for k, v in (prov.get("libraries") or {}).items()))),
    ]
    return '<table class="facts">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _stale_note(exp: Experiment) -> str:
    if exp.status != "stale":
        return ""
    return ('<p class="stale-note">' + badge("stale") + " These numbers were computed by older code than "
            f"the current <code>{esc(exp.package)}</code> package: rerun the experiment to refresh them.</p>")


def experiment_page(site: Site, exp: Experiment) -> str:
    """The page of one experiment: its verdicts, figures, tables (folded), configuration and provenance."""
    layout = layout_of(exp.kind, exp.mode)
    directory = site.results / exp.path
    files = sorted(p.name for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
    declared = {stem for stem, _ in layout.figures}
    figures = [_figure(site, exp, stem, caption, True) for stem, caption in layout.figures]
    extra = sorted({Path(f).stem for f in files if f.endswith((".svg", ".png"))} - declared,
                   key=lambda s: (FIGURE_ORDER.index(s) if s in FIGURE_ORDER else len(FIGURE_ORDER), s))
    figures += [_figure(site, exp, stem, stem, False) for stem in extra]
    declared_tables = [name for name, _ in layout.tables]
    blocks = [_file_block(site, exp, name, caption, True) for name, caption in layout.tables]
    blocks += [_file_block(site, exp, name, name, False) for name in files
               if name.endswith((".csv", ".md")) and name not in declared_tables and name not in UNLINKED]
    config = directory / "config.yaml"
    listing = []
    for name in files:
        relative = (exp.path / name).as_posix()
        if name in UNLINKED:
            listing.append(f"<code>{esc(name)}</code> (per-trial export, not committed; "
                           f"{(directory / name).stat().st_size / 1e6:.1f} MB here)")
        elif name.endswith(DATA_SUFFIXES):
            listing.append(site.link(relative, name, from_site=True))
    verdicts = site.verdicts(exp)
    return _page("experiment.html.j2", f"{exp.name} ({exp.path.as_posix()})", site, depth=1, exp=exp,
                 directory=site.path_of(exp.path.as_posix()), run=site.describe(exp),
                 stale_note=Markup(_stale_note(exp)),
                 verdicts=verdicts.template_context() if verdicts is not None else None,
                 figures=[Markup(f) for f in figures if f], tables=[b for b in blocks if b],
                 config=Markup(f"<pre>{esc(config.read_text())}</pre>" if config.exists() else ""),
                 config_source=Markup('<p class="source">Read from '
                                      f'{site.link((exp.path / "config.yaml").as_posix(), "config.yaml", from_site=True)}.</p>'),
                 provenance=Markup(_provenance_block(exp)), files=[Markup(f) for f in listing])


def index_page(site: Site, registered: list) -> str:
    """The index: stale experiments and errors first, then each registered section."""
    sections, absent = [], []
    packages = site.packages()
    for entry in registered:
        wanted = len(site.missing)
        try:
            built = entry.build(site)
        except Exception as err:  # noqa: BLE001 — one section's failure must not take the index down
            # an error, not "missing" (a file that is absent): the page shows its cause, the command fails
            cause = first_line(err)
            site.errors.append(f"section {entry.title}: {cause}")
            built = Section(entry.title, f'<p class="missing-file">{badge("error")} this section could not be built '
                                         f"from the files in <code>{esc(site.results.as_posix())}/</code>: "
                                         f"{esc(cause)}</p>", anchor=entry.anchor, summary="error")
        for section in [] if built is None else built if isinstance(built, list) else [built]:
            # a paper with no run here: its absent files are not news, one line says so
            if section.absent and (entry.package is None or entry.package not in packages):
                absent.append(section)
                del site.missing[wanted:]  # not missing: this folder holds no run that writes them
            else:
                sections.append(section)
    for i, section in enumerate(sections):
        section.anchor = section.anchor or f"section-{i}"
        section.body = Markup(section.body)
    stale = [{"path": relative, "href": f"{SITE_DIR}/{exp.page}"} for relative, exp in site.experiments.items()
             if exp.status == "stale"]
    return _page("index.html.j2", "Minimax rates under label and user-level DP: results", site, depth=0,
                 sections=sections, absent=absent, stale=stale, errors=list(site.errors),
                 experiments=len(site.experiments))
