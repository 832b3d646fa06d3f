"""The HTML report: ``results/index.html`` and one page per experiment, from the files already there.

``labeldp-sim report`` (``make report``, and the end of ``make sweep`` and ``make minimax``)
reads the results directory and writes a static site into it: ``index.html`` at its root,
the experiment pages, a style sheet and a sort script under ``site/``.  It recomputes no
trial and needs no server: every link is relative and nothing is fetched from the network,
so the site opens from the file system and from any static host.

What the site shows comes from results files only, and every table says which file it
read.  A file that should be there and is not is shown as **missing**; an experiment whose
``provenance.json`` records a code fingerprint other than the current one of the package
that made it is shown as **stale** (the numbers are what older code computed; ``make sweep``
or ``make minimax`` recomputes them).  The report degrades, it does not break.

The core names no paper.  A paper package contributes through its ``site`` module
(``labeldp_sim.<paper>.site``, declared presentation in its ``paper.py``), which calls

* :func:`register_section` for its parts of the index (Table I, its claims...), and
* :func:`register_layout` for the pages of its experiment kinds (which figures and tables a
  page shows, in which order; the files a run of that kind always writes).

The shared parts (the privacy audit, the benchmarks, provenance) are in :mod:`.sections`;
the HTML pieces (tables, verdict colours, Markdown) in :mod:`.html`.
"""

from __future__ import annotations

import importlib
import json
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd
import yaml

from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.errors import FileError, first_line
from labeldp_sim.harness.provenance import code_fingerprint, package_of
from labeldp_sim.report.html import badge, esc, markdown_html, table
from labeldp_sim.harness.store import atomic_write, staged

log = get_logger("report")

__all__ = ["Layout", "Section", "Site", "register_layout", "register_section", "layout_of", "write_site", "main",
           "INDEX", "SITE_DIR"]

INDEX = "index.html"
SITE_DIR = "site"
ASSETS = Path(__file__).with_name("assets")
FIGURE_ORDER = ("rate", "heatmap", "convergence", "accuracy")
DATA_SUFFIXES = (".csv", ".md", ".yaml", ".json", ".png", ".svg")
# Per-trial exports are large and not committed (.gitignore): named, never linked, so the
# committed site has no link that a fresh clone would break.
UNLINKED = ("trials.csv",)


# ---------------------------------------------------------------------------- plug-in contract

@dataclass
class Section:
    """One part of the index: its heading and its HTML (which says what results files it read)."""

    title: str
    body: str
    anchor: str = ""
    summary: str = ""  # one line for the index's table of contents


@dataclass(frozen=True)
class Layout:
    """What the page of one experiment kind shows.

    Attributes
    ----------
    kind, mode : str
        The ``kind`` (and ``mode``, for a kind with modes) of the experiments it lays out.
    figures : tuple of (stem, caption)
        Figures in page order (``rate`` → ``rate.svg``, else ``rate.png``); one a run of this
        kind always writes is shown as missing when absent.
    tables : tuple of (file, caption)
        CSV and Markdown files in page order, the fit table first.
    """

    kind: str
    mode: str | None = None
    figures: tuple = ()
    tables: tuple = ()


_SECTIONS: list = []
_LAYOUTS: dict = {}


def register_section(order: float, build) -> None:
    """Add ``build(site) -> Section | list[Section] | None`` to the index, at ``order`` (ascending)."""
    if not any(b is build for _, b in _SECTIONS):
        _SECTIONS.append((order, build))
        _SECTIONS.sort(key=lambda pair: pair[0])


def register_layout(layout: Layout) -> Layout:
    _LAYOUTS[(layout.kind, layout.mode)] = layout
    return layout


def layout_of(kind: str, mode: str | None) -> Layout:
    return _LAYOUTS.get((kind, mode)) or _LAYOUTS.get((kind, None)) or Layout(kind=kind, mode=mode)


# ---------------------------------------------------------------------------- experiments on disk

@dataclass
class Experiment:
    """One experiment's output directory and what its provenance says."""

    path: Path          # results-relative directory, e.g. minimax/cls_label_ldp
    config: dict
    provenance: dict
    current: str | None  # the current code fingerprint of the package(s) that made it
    package: str | None

    @property
    def name(self) -> str:
        return self.config.get("experiment_name") or self.path.name

    @property
    def kind(self) -> str:
        return str(self.config.get("kind", ""))

    @property
    def mode(self) -> str | None:
        return self.config.get("mode")

    @property
    def recorded(self) -> str | None:
        return self.provenance.get("code_fingerprint")

    @property
    def status(self) -> str:
        """'current', 'stale' (older code), or 'no provenance'."""
        if not self.provenance:
            return "no provenance"
        if self.current is None:
            return "unknown kind"
        return "current" if self.recorded == self.current else "stale"

    @property
    def page(self) -> str:
        """The page's file name inside ``site/``."""
        return "exp-" + "--".join(self.path.parts) + ".html"


@dataclass
class Site:
    """The results directory being reported, and what the sections and pages share."""

    results: Path
    missing: list = field(default_factory=list)  # results-relative paths a section wanted and did not find
    errors: list = field(default_factory=list)  # "section: cause" of each section whose builder raised
    _csv: dict = field(default_factory=dict, repr=False)  # sections share a table (table1.csv): read once

    @cached_property
    def experiments(self) -> dict:
        """results-relative directory (posix) -> :class:`Experiment`, for every directory with a config.yaml."""
        found = {}
        for config in sorted(self.results.rglob("config.yaml")):
            directory = config.parent
            relative = directory.relative_to(self.results)
            if any(part.startswith(".") or part == SITE_DIR for part in relative.parts):
                continue
            found[relative.as_posix()] = self._experiment(relative)
        return found

    def _experiment(self, relative: Path) -> Experiment:
        directory = self.results / relative
        try:
            config = yaml.safe_load((directory / "config.yaml").read_text()) or {}
        except (OSError, yaml.YAMLError):
            config = {}
        try:
            provenance = json.loads((directory / "provenance.json").read_text())
        except (OSError, ValueError):
            provenance = {}
        package = _package_of_kind(str(config.get("kind", "")))
        current = code_fingerprint(package) if package else None
        return Experiment(relative, config, provenance, current, package)

    def read_csv(self, relative: str) -> pd.DataFrame | None:
        """A results CSV, or None (and noted as missing) when it is not there or unreadable.

        Read once per report and shared between sections: a section filters it, never edits it.
        """
        if relative not in self._csv:
            try:
                self._csv[relative] = pd.read_csv(self.results / relative)
            except (OSError, ValueError, pd.errors.ParserError):
                self._csv[relative] = None
                self.missing.append(relative)
        return self._csv[relative]

    def read_text(self, relative: str) -> str | None:
        try:
            return (self.results / relative).read_text()
        except OSError:
            self.missing.append(relative)
            return None

    def experiment(self, relative: str) -> Experiment | None:
        return self.experiments.get(relative)

    def link(self, relative: str, text: str | None = None, *, from_site: bool = False) -> str:
        """A link to a results file, or a **missing** badge when it is not there."""
        if not (self.results / relative).exists():
            return f'{esc(text or relative)} {badge("missing")}'
        prefix = "../" if from_site else ""
        return f'<a href="{esc(prefix + relative)}">{esc(text or relative)}</a>'

    def figure(self, stem: str, caption: str, *, from_site: bool = False) -> str | None:
        """The figure ``<stem>.svg`` (else ``<stem>.png``; ``stem`` results-relative) with its caption
        and a link to its file, for the index or (``from_site``) a page; None when neither file is there."""
        for suffix in (".svg", ".png"):
            relative = stem + suffix
            if (self.results / relative).exists():
                note = "" if suffix == ".svg" else (' <span class="note">(PNG: this run wrote no SVG; the next run '
                                                    "of the experiment does)</span>")
                src = ("../" if from_site else "") + relative
                return (f'<figure><img src="{esc(src)}" alt="{esc(caption)}"><figcaption>{esc(caption)}: '
                        f"{self.link(relative, Path(relative).name, from_site=from_site)}{note}</figcaption></figure>")
        return None

    def page_link(self, relative: str, text: str | None = None) -> str:
        """From the index: a link to the page of the experiment in ``relative`` (with its
        stale badge), or a **missing** badge when no such experiment is in the results."""
        found = self.experiment(relative)
        if found is None:
            return f'{esc(text or relative)} {badge("missing")}'
        mark = f' {badge("stale")}' if found.status == "stale" else ""
        return f'<a href="{SITE_DIR}/{esc(found.page)}">{esc(text or relative)}</a>{mark}'

    def page_href(self, relative: str) -> str | None:
        found = self.experiment(relative)
        return f"{SITE_DIR}/{found.page}" if found else None

    def sources(self, *relatives: str) -> str:
        """The 'read from' line under a table: each file linked, or marked missing."""
        return '<p class="source">Read from ' + ", ".join(self.link(r) for r in relatives) + ".</p>"

    def path_of(self, relative: str) -> str:
        """A results-relative path as the reader finds it: under this report's own folder."""
        return (self.results / relative).as_posix()

    def missing_file(self, relative: str, how: str) -> str:
        return (f'<p class="missing-file">{badge("missing")} <code>{esc(self.path_of(relative))}</code> is not there: '
                f"{esc(how)}.</p>")


def _package_of_kind(kind: str) -> str | None:
    """The paper package whose code a kind's trials run (its class's package), None when unknown."""
    from labeldp_sim.harness.kinds import registered

    found = registered().get(kind)
    return package_of(type(found).__module__) if found is not None else None


# ---------------------------------------------------------------------------- pages

def _page(title: str, body: str, *, depth: int, site: Site) -> str:
    assets = ("" if depth else f"{SITE_DIR}/") + "assets"
    home = "../" if depth else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<link rel="stylesheet" href="{assets}/style.css">
<script src="{assets}/sort.js" defer></script>
</head>
<body>
<header><a class="home" href="{home}{INDEX}">labeldp-sim results</a></header>
<main>
<h1>{esc(title)}</h1>
{body}
</main>
<footer>Generated by <code>labeldp-sim report</code> from the files in
<code>{esc(site.results.as_posix())}/</code>; no trial was recomputed (each run's time and commit are in its
<code>provenance.json</code>: the pages carry no time of their own, so an unchanged folder gives the same bytes).</footer>
</body>
</html>
"""


def _figure(site: Site, exp: Experiment, stem: str, caption: str, expected: bool) -> str:
    shown = site.figure((exp.path / stem).as_posix(), caption, from_site=True)
    if shown or not expected:
        return shown or ""
    return (f'<figure class="absent">{badge("missing")} <code>{esc(stem)}.svg</code> / <code>{esc(stem)}.png</code>'
            f" ({esc(caption)}) is not in <code>{esc(site.path_of(exp.path.as_posix()))}/</code></figure>")


def _file_block(site: Site, exp: Experiment, name: str, caption: str, expected: bool) -> str:
    relative = (exp.path / name).as_posix()
    path = site.results / relative
    if not path.exists():
        if not expected:
            return ""
        return (f"<h3>{esc(caption)}</h3><p>{badge('missing')} <code>{esc(site.path_of(relative))}</code> "
                "is not there: the page shows what the other files hold.</p>")
    if name.endswith(".md"):
        body = markdown_html(path.read_text())
    else:
        try:
            frame = pd.read_csv(path)
        except (ValueError, pd.errors.ParserError, OSError):
            return (f"<h3>{esc(caption)}</h3><p>{badge('missing')} <code>{esc(site.path_of(relative))}</code> "
                    "could not be read as CSV.</p>")
        if frame.empty:
            return f"<h3>{esc(caption)}</h3><p>{badge('not run')} <code>{esc(name)}</code> has no rows.</p>"
        body = table(frame, verdicts=tuple(c for c in frame.columns if "verdict" in c))
    return (f"<h3>{esc(caption)}</h3>{body}"
            f'<p class="source">Read from {site.link(relative, name, from_site=True)}.</p>')


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
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    stale = ""
    if exp.status == "stale":
        stale = ('<p class="stale-note">' + badge("stale") + " These numbers were computed by older code than "
                 f"the current <code>{esc(exp.package)}</code> package: rerun the experiment to refresh them.</p>")
    return f'{stale}<table class="facts">{body}</table>'


def experiment_page(site: Site, exp: Experiment) -> str:
    layout = layout_of(exp.kind, exp.mode)
    directory = site.results / exp.path
    files = sorted(p.name for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
    parts = [f'<p class="lead">Kind <code>{esc(exp.kind)}</code>'
             + (f", mode <code>{esc(exp.mode)}</code>" if exp.mode else "")
             + f"; files in <code>{esc(site.path_of(exp.path.as_posix()))}/</code>.</p>"]
    declared = {stem for stem, _ in layout.figures}
    figures = [_figure(site, exp, stem, caption, True) for stem, caption in layout.figures]
    extra = sorted({Path(f).stem for f in files if f.endswith((".svg", ".png"))} - declared,
                   key=lambda s: (FIGURE_ORDER.index(s) if s in FIGURE_ORDER else len(FIGURE_ORDER), s))
    figures += [_figure(site, exp, stem, stem, False) for stem in extra]
    if figures:
        parts.append("<h2>Figures</h2>" + "".join(figures))
    declared_tables = [name for name, _ in layout.tables]
    blocks = [_file_block(site, exp, name, caption, True) for name, caption in layout.tables]
    blocks += [_file_block(site, exp, name, name, False) for name in files
               if name.endswith((".csv", ".md")) and name not in declared_tables and name not in UNLINKED]
    parts.append("<h2>Tables</h2>" + "".join(blocks))
    config = directory / "config.yaml"
    parts.append("<h2>Configuration</h2>" + (f"<pre>{esc(config.read_text())}</pre>" if config.exists() else ""))
    config_link = site.link((exp.path / "config.yaml").as_posix(), "config.yaml", from_site=True)
    parts.append(f'<p class="source">Read from {config_link}.</p>')
    parts.append("<h2>Provenance</h2>" + _provenance_block(exp))
    listing = []
    for name in files:
        relative = (exp.path / name).as_posix()
        if name in UNLINKED:
            listing.append(f"<li><code>{esc(name)}</code> (per-trial export, not committed; "
                           f"{(directory / name).stat().st_size / 1e6:.1f} MB here)</li>")
        elif name.endswith(DATA_SUFFIXES):
            listing.append(f"<li>{site.link(relative, name, from_site=True)}</li>")
    parts.append("<h2>Files</h2><ul class=\"files\">" + "".join(listing) + "</ul>")
    return _page(f"{exp.name} ({exp.path.as_posix()})", "\n".join(parts), depth=1, site=site)


# ---------------------------------------------------------------------------- the whole site

def _index(site: Site) -> str:
    sections = []
    for _, build in _SECTIONS:
        try:
            built = build(site)
        except Exception as err:  # noqa: BLE001 — one section's failure must not take the index down
            # an error, not "missing" (a file that is absent): the page shows its cause, the command fails
            name = getattr(build, "__name__", "section")  # the builder function's name labels the section
            cause = first_line(err)
            site.errors.append(f"{name}: {cause}")
            built = Section(name, f'<p class="missing-file">{badge("error")} this section could not be built '
                                  f"from the files in <code>{esc(site.results.as_posix())}/</code>: "
                                  f"{esc(cause)}</p>")
        if built is None:
            continue
        sections.extend(built if isinstance(built, list) else [built])
    for i, section in enumerate(sections):
        section.anchor = section.anchor or f"section-{i}"
    toc = "".join(f'<li><a href="#{esc(s.anchor)}">{esc(s.title)}</a>'
                  + (f' <span class="note">{esc(s.summary)}</span>' if s.summary else "") + "</li>" for s in sections)
    legend = ("<p class=\"legend\">Colours: " + badge("consistent") + badge("reproduced") + badge("private")
              + " agree with the paper; " + badge("inconsistent") + badge("not reproduced")
              + " disagree; " + badge("inconclusive") + badge("pre-asymptotic") + " undecided; "
              + badge("not run") + badge("missing") + badge("stale") + " not measured, file absent, older code.</p>")
    intro = ("<p class=\"lead\">Which of the papers' rates hold, and how sure we are: each verdict compares a "
             "measured log-log slope (95% CI) with the theory. Law-free verdicts (worst instance against an "
             "oracle-tuned estimator, exact risks) decide; law-tied checks confirm the construction.</p>")
    body = intro + legend + f'<nav class="toc"><ol>{toc}</ol></nav>' + "".join(
        f'<section id="{esc(s.anchor)}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections)
    return _page("Minimax rates under label and user-level DP: results", body, depth=0, site=site)


def write_site(results: Path) -> dict:
    """Write ``results/index.html`` and ``results/site/`` from the files in ``results``; returns counts.

    Every page is built before any is written; then the pages (``site/``, staged) land at
    once, then the index: a reader never sees half a page, nor (a fault on the way) pages
    of two reports in ``site/``.  Pages of experiments no longer in ``results`` are removed.

    Raises
    ------
    FileError
        A page, a folder or an asset cannot be written (a full disk, a read-only or forbidden
        folder): one line naming it; nothing half-written is left, and ``site/`` is as it was.
    """
    importlib.import_module(f"{__package__}.sections")  # registers the shared sections

    results = Path(results)
    site = Site(results)
    out = results / SITE_DIR
    pages = {exp.page: experiment_page(site, exp) for exp in site.experiments.values()}
    index = _index(site)
    assets = [asset for asset in ASSETS.iterdir() if asset.is_file()]
    try:
        (out / "assets").mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FileError(out / "assets", err, f"{results} is left as it was") from err
    # the assets are the package's, the same for every report: each lands whole on its own
    for asset in assets:
        atomic_write(out / "assets" / asset.name, lambda p, asset=asset: shutil.copyfile(asset, p))
    with staged(out):
        for page, text in pages.items():
            atomic_write(out / page, lambda p, text=text: p.write_text(text, encoding="utf-8"))
    for old in out.glob("exp-*.html"):
        if old.name not in pages:
            old.unlink()
    atomic_write(results / INDEX, lambda p: p.write_text(index, encoding="utf-8"))
    statuses = [e.status for e in site.experiments.values()]
    return {"experiments": len(statuses), "stale": statuses.count("stale"), "missing": sorted(site.missing),
            "errors": list(site.errors)}


def main(argv: list) -> int:
    """``labeldp-sim report [--results DIR]``: write the site, print one line.

    Returns 0 done, 2 bad input (an empty ``--results`` too: ``Path('')`` is the working
    directory), 1 a file or folder that cannot be written (one line naming it) or a section of
    the index that could not be built (the site is written, the section shows its error; one
    line per section here).
    """
    import time

    from labeldp_sim.harness.cli import report_arguments
    from labeldp_sim.harness.errors import ConfigError, os_error_line

    try:
        typed = report_arguments(argv)[1]
        results = Path(typed)
        if not results.is_dir():
            raise ConfigError("--results", typed, "an existing results directory")
    except ConfigError as err:
        log.error(f"labeldp-sim report: error: {err}")
        return 2
    start = time.perf_counter()
    try:
        counts = write_site(results)
    except OSError as err:  # a full disk, a read-only or forbidden folder: one line, not a traceback
        log.error(f"labeldp-sim report: error: {os_error_line(err)}")
        return 1
    missing = counts["missing"]
    log.info(f"report: {results / INDEX} ({counts['experiments']} experiment pages, {counts['stale']} stale; "
             f"{len(missing)} summary files missing{': ' + ', '.join(missing) if missing else ''}) "
             f"in {time.perf_counter() - start:.1f} s")
    for error in counts["errors"]:
        log.error(f"labeldp-sim report: error: section {error}")
    return 1 if counts["errors"] else 0
