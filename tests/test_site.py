"""The HTML report (issue 22): built from the committed results, it shows every row, links only
relative files that exist, marks stale and missing files, and never breaks on a missing one.

The browser half (every page opened in headless Chromium) is tests/test_site_browser.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest

from labeldp_sim.app import load_sites
from labeldp_sim.report.build import write_site
from labeldp_sim.report.site import INDEX, SITE_DIR
from labeldp_sim.report.html import esc, fmt, table, verdict_class

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"

load_sites()


# one experiment of each kind and mode: a small copy that still takes every code path of a page
SAMPLE = ("cls_label_ldp", "minimax/cls_label_ldp", "minimax/reg_nonprivate", "kclass_fig2a", "kclass_digits",
          "userlevel/ul_cls", "userlevel/law_free/ul_minimax_reg")


def copy_results(target: Path, only: tuple | None = None) -> Path:
    """The repository's results without the store, the per-trial exports and any built site; with
    ``only``, the summary tables and just those experiment folders (a report in a fraction of the time)."""
    skip = shutil.ignore_patterns("trials.sqlite*", "memo.sqlite*", "trials.csv", SITE_DIR, INDEX, ".*")
    shutil.copytree(RESULTS, target, ignore=skip)
    if only is not None:
        for config in sorted(target.rglob("config.yaml")):
            relative = config.parent.relative_to(target).as_posix()
            if relative not in only and config.parent.exists():
                shutil.rmtree(config.parent)
    return target


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not (RESULTS / "table1.csv").exists():
        pytest.skip("results/ holds no committed results (make clean-results?)")
    results = copy_results(tmp_path_factory.mktemp("site") / "results")
    counts = write_site(results)
    return results, counts, (results / INDEX).read_text()


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for name in ("href", "src", "data"):
            if attrs.get(name):
                self.refs.append((tag, attrs[name]))


def _refs(page: Path) -> _Refs:
    parser = _Refs()
    parser.feed(page.read_text())
    return parser


def test_index_shows_every_row_claim_and_mechanism(built):
    results, counts, index = built
    text = re.sub(r"<[^>]+>", " ", index)
    table1 = pd.read_csv(results / "table1.csv")
    primary = table1[table1.primary.astype(str) == "True"]
    # every Table I row: the index has one table row per (cell, axis, d) of the primary statement
    section = index.split('id="table1"')[1].split("</section>")[0]
    every_row = section.split("<details><summary>Every row")[1].split('<p class="source">Read from')[0]
    assert every_row.count("<tr>") - 1 == len(primary)
    for cell in primary.cell.unique():
        assert f"{cell}</code>" in section
    claims = pd.read_csv(results / "kclass_claims.csv")
    kclass = index.split('id="kclass"')[1].split("</section>")[0]
    for claim in claims.claim:
        assert claim.replace("'", "&#x27;").replace('"', "&quot;") in kclass or claim in text
    free = pd.read_csv(results / "userlevel" / "law_free" / "table.csv")
    tied = pd.read_csv(results / "userlevel" / "table1.csv")
    userlevel = index.split('id="userlevel"')[1].split("</section>")[0]
    for experiment in set(free.experiment) | set(tied.experiment):
        assert f">{experiment}</a>" in userlevel, experiment
    audit = pd.read_csv(results / "audit.csv")
    audit_html = index.split('id="audit"')[1].split("</section>")[0]
    for mechanism in audit.mechanism[audit.kind == "mechanism"]:
        assert f"<td>{esc(mechanism)}</td>" in audit_html, mechanism
    assert "Theorem 7" in index.split('id="theorem7"')[1]
    assert counts["experiments"] == len(list(results.rglob("config.yaml")))


def test_every_link_is_relative_and_resolves(built):
    results, _, _ = built
    pages = [results / INDEX, *sorted((results / SITE_DIR).glob("*.html"))]
    assert len(pages) > 1
    for page in pages:
        parsed = _refs(page)
        assert parsed.refs, page
        for tag, ref in parsed.refs:
            parts = urlsplit(ref)
            assert not parts.scheme and not parts.netloc and not ref.startswith("/"), (page.name, ref)
            if not parts.path:
                assert parts.fragment in parsed.ids, (page.name, ref)
                continue
            assert (page.parent / unquote(parts.path)).resolve().exists(), (page.name, ref)


def test_every_experiment_has_a_page_with_its_files(built):
    results, counts, index = built
    for config in results.rglob("config.yaml"):
        relative = config.parent.relative_to(results)
        page = results / SITE_DIR / ("exp-" + "--".join(relative.parts) + ".html")
        html = page.read_text()
        assert "config.yaml" in html and "Provenance" in html
        assert f'href="{SITE_DIR}/{page.name}"' in index, relative  # reachable from the index
        for figure in config.parent.glob("*.svg"):
            assert f'src="../{(relative / figure.name).as_posix()}"' in html


def test_numbers_show_as_what_they_are():
    """Whole numbers read as float because of a gap (K, counts) show whole; small values keep 3
    significant digits instead of collapsing to 3 decimals; a slope keeps its 3 decimals."""
    frame = pd.DataFrame({"K": [2.0, float("nan"), 5.0], "count": [0.0, 3.0, 1.0], "mse": [0.00286, 0.0412, 0.5],
                          "slope": [-0.6667, -1.0, -0.5]})
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table(frame))
    assert cells == ["2", "0", "0.00286", "-0.667", "", "3", "0.0412", "-1.000", "5", "1", "0.500", "-0.500"]
    assert (fmt(0.00286), fmt(-0.6667), fmt(2.0), fmt(123456.0)) == ("0.00286", "-0.667", "2.000", "1.23e+05")


def test_a_report_of_an_unchanged_folder_gives_the_same_bytes(tmp_path):
    """The pages carry no time of their own (each run's is in its provenance.json): reporting an
    unchanged results folder twice rewrites nothing, so a results commit holds only what changed."""
    if not (RESULTS / "table1.csv").exists():
        pytest.skip("no committed results")
    results = copy_results(tmp_path / "results", only=SAMPLE)
    write_site(results)
    before = {p: p.read_bytes() for p in results.rglob("*.html")}
    write_site(results)
    assert {p: p.read_bytes() for p in results.rglob("*.html")} == before
    assert f"from the files in <code>{results.as_posix()}/</code>" in (results / INDEX).read_text()


def test_stale_and_missing_are_shown_and_nothing_breaks(tmp_path):
    if not (RESULTS / "table1.csv").exists():
        pytest.skip("no committed results")
    results = copy_results(tmp_path / "results", only=SAMPLE)
    # one results file gone, one summary table gone, one experiment made by "older code"
    (results / "minimax" / "cls_label_ldp" / "fit.csv").unlink()
    (results / "kclass_claims.csv").unlink()
    provenance = results / "minimax" / "reg_nonprivate" / "provenance.json"
    provenance.write_text(re.sub(r'"code_fingerprint": "\w+"', '"code_fingerprint": "0000000000000000"',
                                 provenance.read_text()))
    counts = write_site(results)
    assert "kclass_claims.csv" in counts["missing"]
    page = (results / SITE_DIR / "exp-minimax--cls_label_ldp.html").read_text()
    assert "results/minimax/cls_label_ldp/fit.csv</code> is not there" in page
    assert 'class="badge v-missing"' in page
    index = (results / INDEX).read_text()
    assert "results/kclass_claims.csv</code> is not there" in index
    stale = (results / SITE_DIR / "exp-minimax--reg_nonprivate.html").read_text()
    assert "computed by older code" in stale
    # the other sections are whole
    assert 'id="table1"' in index and 'id="userlevel"' in index and 'id="audit"' in index


def test_a_section_that_fails_is_an_error_and_the_command_fails(tmp_path, monkeypatch, caplog):
    """'missing' means a file is absent; a section whose builder raises is an **error**, with its
    one-line cause on the page, and ``labeldp-sim report`` exits 1 (the rest of the site is written)."""
    from labeldp_sim.report import build, site as site_module

    def broken(site):
        raise AttributeError("'Series' object has no attribute 'experiment'\nsecond line")

    monkeypatch.setattr(site_module, "_SECTIONS", [*site_module._SECTIONS, site_module.SectionEntry(99, broken, title="broken")])
    assert build.main(["--results", str(tmp_path)]) == 1
    index = (tmp_path / INDEX).read_text()
    assert 'class="badge v-bad">error</span>' in index
    assert "AttributeError: &#39;Series&#39; object has no attribute &#39;experiment&#39;</p>" in index
    assert "labeldp-sim report: error: section broken: AttributeError" in caplog.text


def test_a_law_free_only_table1_builds_without_error(tmp_path):
    """table1.csv as a law-free run alone writes it (no law-tied columns): the row shows its verdict."""
    pd.DataFrame([{"cell": "reg_label_cdp", "task": "regression", "family": "regression",
                   "privacy": "label, central", "rate": "(Nε)^(-2β/(2β+d))", "axis": "eps", "d": 1,
                   "verdict": float("nan"), "primary": True, "law_free_slope": -1.0, "law_free_ci_low": -1.001,
                   "law_free_ci_high": -0.999, "law_free_verdict": "consistent"}]).drop(columns="verdict").to_csv(
        tmp_path / "table1.csv", index=False)
    counts = write_site(tmp_path)
    assert counts["errors"] == []
    assert "-1.000 [-1.001, -0.999]" in (tmp_path / INDEX).read_text()


def test_an_empty_results_directory_gives_a_page_that_says_so(tmp_path):
    """No run of any paper in the folder: each section's absent files are named once, not as missing."""
    counts = write_site(tmp_path)
    index = (tmp_path / INDEX).read_text()
    assert counts["experiments"] == 0 and counts["errors"] == []
    absent = index.split("Not in this folder (no run of theirs here):")[1].split("</p>")[0]
    for title in ("Table I (papers/000)", "K-class claims (papers/002)", "User-level Table 1 (papers/003)",
                  "Privacy audit", "Benchmarks"):
        assert title in absent
    assert 'class="badge v-missing"' not in index.split("</nav>")[1]


def test_a_papers_absent_table_is_missing_where_its_runs_are(tmp_path):
    """A folder with a Table I run and no table1.csv: the section says the file is missing, at the
    folder's own path (a file a run of that paper writes is absent)."""
    if not (RESULTS / "reg_label_cdp" / "config.yaml").exists():
        pytest.skip("results/ holds no committed reg_label_cdp run")
    results = tmp_path / "results"
    shutil.copytree(RESULTS / "reg_label_cdp", results / "reg_label_cdp", ignore=shutil.ignore_patterns("trials.csv"))
    write_site(results)
    index = (results / INDEX).read_text()
    assert f"{results.as_posix()}/table1.csv</code> is not there" in index


@pytest.mark.parametrize("text, cls", [
    ("consistent", "v-good"), ("inconsistent", "v-bad"), ("not reproduced", "v-bad"), ("reproduced", "v-good"),
    ("pre-asymptotic", "v-unsure"), ("inconclusive", "v-unsure"), ("not run: no estimator", "v-none"),
    ("upper bound respected", "v-good"), ("upper bound violated", "v-bad"), ('<a href="x">consistent</a>', "v-good"),
    ("law-free consistent (-0.97 vs -1.00); ul_mean_l2: inconclusive", "v-good"), ("", ""), (None, ""),
])
def test_verdict_colours(text, cls):
    assert verdict_class(text) == cls


@pytest.mark.parametrize("args", [["--results", "{tmp}/nowhere"], ["--bogus"]])
def test_cli_refuses_bad_arguments_in_one_line(tmp_path, args):
    args = [a.format(tmp=tmp_path) for a in args]
    run = subprocess.run([sys.executable, "-m", "labeldp_sim", "report", *args], capture_output=True, text=True,
                         cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "--results" in run.stderr and "allowed" in run.stderr
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / INDEX).exists()
