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
the pages (Jinja2 templates in ``templates/``) in :mod:`.pages`, what each opens with in
:mod:`.verdicts`, the HTML pieces (tables, verdict colours, Markdown) in :mod:`.html`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd
import yaml

from labeldp_sim.harness.errors import first_line
from labeldp_sim.harness.provenance import code_fingerprint, package_of
from labeldp_sim.report.html import badge, esc
from labeldp_sim.report.verdicts import Verdicts

__all__ = ["Layout", "Section", "SectionEntry", "Site", "Experiment", "UnreadableFile", "register_layout", "register_section",
           "layout_of", "registered_sections", "INDEX", "SITE_DIR", "ASSETS"]

INDEX = "index.html"
SITE_DIR = "site"
ASSETS = Path(__file__).with_name("assets")


# ---------------------------------------------------------------------------- plug-in contract

@dataclass
class Section:
    """One part of the index: its heading and its HTML (which says what results files it read)."""

    title: str
    body: str
    anchor: str = ""
    summary: str = ""  # one line for the index's table of contents
    absent: bool = False  # its files are not in the folder (the builder found none to read)


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
    verdicts : callable or None
        ``verdicts(site, exp) -> Verdicts | None``: what the page opens with, the run's verdicts
        in sentences (:func:`labeldp_sim.report.verdicts.slope_verdicts` builds them from a fit
        table); None for a kind that states none.
    describe : callable or None
        ``describe(config) -> str``: the run in a few words from its resolved config (mechanism,
        estimator, family parameters), shown under the page's title.
    """

    kind: str
    mode: str | None = None
    figures: tuple = ()
    tables: tuple = ()
    verdicts: object = None
    describe: object = None


_SECTIONS: list = []
_LAYOUTS: dict = {}


@dataclass(frozen=True)
class SectionEntry:
    """A registered section: where it goes, how it is built, whose runs it reports, how it is named."""

    order: float
    build: object
    package: str | None = None
    title: str = ""
    anchor: str = ""


def register_section(order: float, build, package: str | None = None, title: str = "", anchor: str = "") -> None:
    """Add ``build(site) -> Section | list[Section] | None`` to the index, at ``order`` (ascending).

    ``package``: the paper package whose runs the section reports (``"table1"``).  In a folder
    with no run of that package (a researcher's own law-free cell), a section that finds its
    files absent is named once under "not in this folder" instead of shown as missing.
    ``title`` and ``anchor`` name the section when its builder raises (the page shows the error
    under the section's own heading).
    """
    if not any(entry.build is build for entry in _SECTIONS):
        _SECTIONS.append(SectionEntry(order, build, package, title or build.__name__.strip("_"), anchor))
        _SECTIONS.sort(key=lambda entry: entry.order)


def register_layout(layout: Layout) -> Layout:
    _LAYOUTS[(layout.kind, layout.mode)] = layout
    return layout


def registered_sections() -> list:
    """The :class:`SectionEntry` of every section of the index, in order."""
    return list(_SECTIONS)


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
    def own_folder(self) -> bool:
        """Whether the run has a folder of its own, named from its overrides (non-default settings, a
        multirun job) rather than its experiment's: its numbers are in no table of the folder."""
        return self.path.name != self.name

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
            except FileNotFoundError:
                self._csv[relative] = None
                self.missing.append(relative)
            except (OSError, ValueError, UnicodeDecodeError) as err:
                # there but unreadable: not "missing"; the section that wanted it shows this error
                raise UnreadableFile(f"{relative} could not be read: {first_line(err)}") from err
        return self._csv[relative]

    def read_text(self, relative: str) -> str | None:
        try:
            return (self.results / relative).read_text()
        except OSError:
            self.missing.append(relative)
            return None

    def verdicts(self, exp: Experiment) -> Verdicts | None:
        """What ``exp``'s page opens with (its layout's verdicts), None for a kind that states none; a
        file its layout cannot read gives an error (noted in :attr:`errors`), not a broken page."""
        layout = layout_of(exp.kind, exp.mode)
        if layout.verdicts is None:
            return None
        try:
            return layout.verdicts(self, exp)
        except Exception as err:  # noqa: BLE001 — a bad file must not take the page down: the page says so
            self.errors.append(f"{exp.path.as_posix()} verdicts: {first_line(err)}")
            return Verdicts([], f"{badge('error')} the verdicts could not be read: {esc(first_line(err))}")

    def describe(self, exp: Experiment) -> str:
        """``exp``'s run in a few words (its layout's ``describe``), '' where the layout has none."""
        layout = layout_of(exp.kind, exp.mode)
        return layout.describe(exp.config) if layout.describe else ""

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

    def sources(self, *relatives: str, from_site: bool = False) -> str:
        """The 'read from' line under a table: each file linked, or marked missing (``from_site``: on a page)."""
        return ('<p class="source">Read from ' + ", ".join(self.link(r, from_site=from_site) for r in relatives)
                + ".</p>")

    def path_of(self, relative: str) -> str:
        """A results-relative path as the reader finds it: under this report's own folder."""
        return (self.results / relative).as_posix()

    def packages(self) -> set:
        """The paper packages whose runs fill the tables of this folder (a run in a folder of its own
        fills none)."""
        return {exp.package for exp in self.experiments.values() if exp.package and not exp.own_folder}

    def missing_file(self, relative: str, how: str) -> str:
        return (f'<p class="missing-file">{badge("missing")} <code>{esc(self.path_of(relative))}</code> is not there: '
                f"{esc(how)}.</p>")


class UnreadableFile(ValueError):
    """A results file that is there and cannot be read (not a missing one): its section is an error."""


def _package_of_kind(kind: str) -> str | None:
    """The paper package whose code a kind's trials run (its class's package), None when unknown."""
    from labeldp_sim.harness.kinds import registered

    found = registered().get(kind)
    return package_of(type(found).__module__) if found is not None else None
