"""The report opened in a real browser (issue 22): headless Chromium loads ``index.html`` and every
experiment page it links to, and fails on a console error, a broken link or image, or an empty
table.  Also with a results file deleted: the report degrades (shows it missing), it does not break.

Runs where Debian's chromium and chromium-driver are installed (``.ci/run`` installs them).
"""

from __future__ import annotations

import shutil

import pytest

from labeldp_sim.report.site import INDEX, SITE_DIR, write_site
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
    assert report.problems == [], "\n".join(report.problems)
    # the index and one page per experiment, each reached by a link
    assert report.pages[0] == INDEX
    assert len(report.pages) == 1 + counts["experiments"]
    assert report.tables > counts["experiments"] and report.images > 0
    assert shot.read_bytes()[:8] == PNG


def test_a_deleted_results_file_shows_as_missing_and_the_site_still_checks_clean(tmp_path):
    # the summary tables and a few experiments: the pages that the deletions touch, quickly
    results = copy_results(tmp_path / "all")
    for directory in [p for p in results.rglob("config.yaml")]:
        if directory.parent.name not in ("cls_label_ldp", "ul_minimax_cls", "kclass_fig2a"):
            shutil.rmtree(directory.parent)
    (results / "cls_label_ldp" / "rate.png").unlink(missing_ok=True)
    (results / "cls_label_ldp" / "rate.svg").unlink(missing_ok=True)
    (results / "userlevel" / "law_free" / "table.csv").unlink()
    write_site(results)
    page = (results / SITE_DIR / "exp-cls_label_ldp.html").read_text()
    # the pages name the folder they were built from (here tmp/all), not "results/"
    assert f"is not in <code>{results.as_posix()}/cls_label_ldp/</code>" in page
    assert f"{results.as_posix()}/userlevel/law_free/table.csv</code> is not there" in (results / INDEX).read_text()
    report = check_site(results / INDEX)
    assert report.problems == [], "\n".join(report.problems)
