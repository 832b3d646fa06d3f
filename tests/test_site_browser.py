"""The report opened in a real browser (issues 22, 33): headless Chromium loads ``index.html`` and
every experiment page it links to, and fails on a console error, a broken link or image, an empty
table, a page wider than the 1,400 × 900 window or taller than ten screens, or an experiment page
whose verdicts are not on its first screen.  Also with a results file deleted: the report degrades
(shows it missing), it does not break; and on three small folders unlike the committed suite (a
law-free run alone, a custom mechanism, a section that crashes on a planted bad file).

Runs where Debian's chromium and chromium-driver are installed (``.ci/run`` installs them).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from labeldp_sim.papers.table1.report import write_table1
from labeldp_sim.report import build
from labeldp_sim.report.build import write_site
from labeldp_sim.report.site import INDEX, SITE_DIR
from labeldp_sim.report.site_check import browser_available, check_site

from .test_site import RESULTS, copy_results

pytestmark = pytest.mark.browser

REASON = browser_available()
if REASON:
    pytest.skip(REASON, allow_module_level=True)
if not (RESULTS / "table1.csv").exists():
    pytest.skip("results/ holds no committed results", allow_module_level=True)

PNG = b"\x89PNG\r\n\x1a\n"


def test_every_page_opens_clean_and_the_index_has_a_screenshot(tmp_path):
    results = copy_results(tmp_path / "results")
    counts = write_site(results)
    shot = tmp_path / "index.png"
    report = check_site(results / INDEX, screenshot=shot)
    assert report.problems == [], "\n".join([*report.problems, report.summary()])
    # the index and one page per experiment, each reached by a link
    assert report.pages[0] == INDEX
    assert len(report.pages) == 1 + counts["experiments"]
    assert report.tables > counts["experiments"] and report.images > 0
    assert shot.read_bytes()[:8] == PNG


# what a run leaves that the report does not read: the store and the per-trial exports
RUN_ONLY = shutil.ignore_patterns("trials.sqlite*", "memo.sqlite*", "trials.csv", ".*")
# more fields in a row than in the header: pandas raises ParserError on it
BAD_CSV = b"N,risk\n100,0.5\n1000,0.1,7,8\n"


def _section(index: str, name: str) -> str:
    """The HTML of the index's ``<section id=name>``, or "" when there is none."""
    found = re.search(rf'<section id="{name}">(.*?)</section>', index, re.S)
    return found.group(1) if found else ""


def _rows(html: str, text: str) -> list[str]:
    return [row for row in re.findall(r"<tr>.*?</tr>", html, re.S) if text in row]


def _folder(target: Path, experiments: dict[str, str]) -> Path:
    """A results folder holding copies of some committed experiments, with Table I as a run writes it."""
    for source, name in experiments.items():
        shutil.copytree(RESULTS / source, target / name, ignore=RUN_ONLY)
    write_table1(target)
    return target


def test_a_law_free_folder_a_custom_mechanism_and_a_crashing_section_check_clean(tmp_path):
    """Three folders unlike the committed suite, each checked in the browser: a law-free run alone, a
    law-tied run of a custom mechanism with its figure deleted, and planted unparseable files."""
    # law-free only: one minimax experiment and nothing else
    law_free = _folder(tmp_path / "law_free", {"minimax/reg_label_cdp": "minimax/reg_label_cdp"})
    # a crashing section: the same folder with a planted table1.csv and points.csv pandas cannot parse
    crash = tmp_path / "crash"
    shutil.copytree(law_free, crash)
    (crash / "table1.csv").write_bytes(BAD_CSV)
    (crash / "minimax" / "reg_label_cdp" / "points.csv").write_bytes(BAD_CSV)
    # a custom mechanism: a law-tied experiment whose config names a mechanism the paper never did
    custom = tmp_path / "custom"
    shutil.copytree(RESULTS / "reg_label_cdp", custom / "reg_label_cdp", ignore=RUN_ONLY)
    config = custom / "reg_label_cdp" / "config.yaml"
    assert "  name: laplace_cube\n" in config.read_text()
    config.write_text(config.read_text().replace("  name: laplace_cube\n", "  name: my_laplace\n"))
    # and its figure deleted: the page shows it missing and still checks clean
    (custom / "reg_label_cdp" / "rate.png").unlink()
    (custom / "reg_label_cdp" / "rate.svg").unlink()
    write_table1(custom)

    assert write_site(law_free)["errors"] == []
    assert write_site(custom)["errors"] == []
    assert build.main(["--results", str(crash)]) == 1

    page_name = "exp-minimax--reg_label_cdp.html"
    index = (law_free / INDEX).read_text()
    table1, theorem7 = _section(index, "table1"), _section(index, "theorem7")
    # Table I: the cell's rows carry the law-free verdict, linked to the experiment's page
    assert _rows(table1, "<code") and all(">not run<" in row for row in _rows(table1, "cls_nonprivate"))
    every_row = table1.split("Every row")[1]  # the folded table: a row per (axis, d); above it the grid
    assert len(_rows(every_row, f'<a href="{SITE_DIR}/{page_name}">consistent</a>')) == 3  # d = 1, 2, 3
    # Theorem 7 against the same law-free fits: inconsistent at every d
    stated = _rows(theorem7, "(Theorem 7)")
    assert len(stated) == 3 and all(f'<a href="{SITE_DIR}/{page_name}">inconsistent</a>' in row for row in stated)
    # the papers with no run here are "not in this folder", not missing
    assert re.search(r"Not in this folder[^<]*K-class claims[^<]*User-level Table 1", index)
    assert 'id="kclass"' not in index and 'id="userlevel"' not in index and "missing-file" not in index
    page = (law_free / SITE_DIR / page_name).read_text()
    assert f"<code>{law_free.as_posix()}/minimax/reg_label_cdp/</code>" in page
    assert page.index('<section id="verdicts">') < page.index('<section id="figures">')

    # the custom mechanism is named in the index's rows and in the page's lead
    index = (custom / INDEX).read_text()
    every_row = _section(index, "table1").split("Every row")[1]
    assert len(_rows(every_row, "<td>my_laplace, cube_mean; β = 1</td>")) == 3  # d = 1, 2, 3
    lead = re.search(r'<p class="lead">(.*?)</p>', (custom / SITE_DIR / "exp-reg_label_cdp.html").read_text(), re.S)
    assert "run: my_laplace, cube_mean" in lead.group(1)
    page = (custom / SITE_DIR / "exp-reg_label_cdp.html").read_text()
    # the page names the folder it was built from (here tmp/custom), not "results/"
    assert f"is not in <code>{custom.as_posix()}/reg_label_cdp/</code>" in page

    # the crashing sections show an error badge with the cause; the experiment's page still builds
    index = (crash / INDEX).read_text()
    for name in ("table1", "theorem7"):
        assert re.search(r'<span class="badge v-bad">error</span>[^\n]*table1\.csv could not be read: ParserError',
                         _section(index, name)), name
    page = (crash / SITE_DIR / page_name).read_text()
    assert re.search(r'<span class="badge v-bad">error</span> <code>[^<]*/points\.csv</code> could not be '
                     r"read as CSV: ParserError", page)
    assert '<section id="verdicts">' in page

    # all three in one browser session: a hub page above them links to each folder's index
    hub = tmp_path / INDEX
    hub.write_text('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>folders</title></head>'
                   '<body>' + " ".join(f'<a href="{name}/{INDEX}">{name}</a>' for name in
                                       ("law_free", "custom", "crash")) + "</body></html>")
    report = check_site(hub)
    assert report.problems == [], "\n".join([*report.problems, report.summary()])
    assert sorted(report.pages) == sorted([INDEX, *(f"{name}/{INDEX}" for name in ("law_free", "custom", "crash")),
                                           f"law_free/{SITE_DIR}/{page_name}", f"crash/{SITE_DIR}/{page_name}",
                                           f"custom/{SITE_DIR}/exp-reg_label_cdp.html"])
