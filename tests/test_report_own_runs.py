"""The report of a researcher's own folder (issue 33): a law-free cell alone, a non-default β, a swapped
mechanism, a planted unreadable file; verdicts first, and one interval for one slope everywhere.

Built from copies of the committed law-free and law-tied reg_label_cdp folders (no trial is run);
the browser half is tests/test_site_browser.py.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from labeldp_sim.app import load_sites
from labeldp_sim.papers.table1.report import write_table1
from labeldp_sim.report import build
from labeldp_sim.report.build import write_site
from labeldp_sim.report.html import interval
from labeldp_sim.report.site import INDEX, SITE_DIR

from .test_site import RESULTS

load_sites()

LAW_FREE = RESULTS / "minimax" / "reg_label_cdp"
LAW_TIED = RESULTS / "reg_label_cdp"
if not (LAW_FREE / "fit.csv").exists() or not (LAW_TIED / "fit.csv").exists():
    pytest.skip("results/ holds no committed reg_label_cdp runs", allow_module_level=True)

UNREPORTED = ("trials.csv",)


def _copy(source: Path, target: Path, **config) -> Path:
    """A run's folder copied (its per-trial export left out), its config.yaml changed by ``config``
    (``{"distribution.beta": 0.5}``) as a run with those overrides would have written it."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*UNREPORTED))
    if config:
        resolved = yaml.safe_load((target / "config.yaml").read_text())
        for dotted, value in config.items():
            node, *keys = dotted.split(".")
            parent = resolved[node]
            for key in keys[:-1]:
                parent = parent[key]
            parent[keys[-1]] = value
        (target / "config.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False))
    return target


def _section(index: str, anchor: str) -> str:
    return index.split(f'id="{anchor}"')[1].split("</section>")[0]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture(scope="module")
def law_free_only(tmp_path_factory):
    """The q1 of the issue: one law-free cell in a folder of its own, as ``paths.results_dir`` writes it."""
    folder = tmp_path_factory.mktemp("q1")
    _copy(LAW_FREE, folder / "minimax" / "reg_label_cdp", **{"distribution.beta": 0.5})
    table = write_table1(folder)
    counts = write_site(folder)
    return folder, table, counts


def test_a_law_free_cell_alone_reaches_table1_the_index_and_theorem7(law_free_only):
    folder, table, counts = law_free_only
    assert counts["errors"] == []
    rows = table[table.cell == "reg_label_cdp"]
    fits = pd.read_csv(LAW_FREE / "fit.csv")
    measured = fits[fits.quantity == "M"]
    # every statement of every (axis, d) the run fitted is a row, with the family it was measured on
    assert len(rows) == len(measured)
    assert set(rows.parameters) == {"β = 0.5"} and set(rows.law_free_mechanism) == {"laplace_cube"}
    assert set(rows[rows.statement == "Theorem 7"].law_free_verdict) == {"inconsistent"}
    markdown = (folder / "table1.md").read_text()
    assert "| `reg_label_cdp` *(Theorem 7)*" in markdown and "laplace_cube, cube_mean; β = 0.5" in markdown
    assert "data support **Table I / Theorem 8** and reject Theorem 7" in markdown
    index = (folder / INDEX).read_text()
    table1 = _text(_section(index, "table1"))
    assert "reg_label_cdp" in table1 and "β = 0.5" in table1 and "consistent" in table1
    theorem7 = _text(_section(index, "theorem7"))
    assert "Theorem 7" in theorem7 and "inconsistent" in theorem7
    # the folder's own paths; the papers with no run here are named once, not shown as missing
    assert f"{folder.as_posix()}/" in index and "results/" not in _text(index).replace(folder.as_posix(), "")
    absent = index.split("Not in this folder")[1].split("</p>")[0]
    assert "K-class claims" in absent and "User-level Table 1" in absent


def test_one_slope_has_one_interval_on_the_page_the_index_and_the_figure(law_free_only):
    """The deepest window's CI in fit.csv is what the page's verdict sentence, the index row and the
    rate figure's legend (real text in the SVG) print: one interval, formed once."""
    folder = law_free_only[0]
    fits = pd.read_csv(folder / "minimax" / "reg_label_cdp" / "fit.csv")
    page = (folder / SITE_DIR / "exp-minimax--reg_label_cdp.html").read_text()
    index = (folder / INDEX).read_text()
    legend = (folder / "minimax" / "reg_label_cdp" / "rate.svg").read_text()
    for r in fits[(fits.quantity == "M") & fits.primary.astype(bool)].itertuples():
        shown = interval(r.deep_slope, r.deep_ci_low, r.deep_ci_high)
        assert shown in _section(page, "verdicts") and shown in _section(index, "table1")
        assert f"deepest {shown}" in legend


def test_a_page_opens_with_its_verdicts_and_folds_its_tables(law_free_only):
    folder = law_free_only[0]
    page = (folder / SITE_DIR / "exp-minimax--reg_label_cdp.html").read_text()
    main = page.split("<main>")[1]
    assert main.index('id="verdicts"') < main.index('id="figures"') < main.index('id="tables"')
    verdicts = _text(_section(page, "verdicts"))
    assert re.search(r"against Theorem 7 -0\.\d{3} ± 0\.02: inconsistent\.", verdicts)
    assert "How the 95% CI is formed: OLS on exact entries" in verdicts
    assert "β = 0.5" in _text(page.split('id="verdicts"')[0])
    tables = _section(page, "tables")
    assert tables.count("<details>") >= 2 and "<details open>" not in tables
    # a text the same in every row (how the CI is formed) is said once above its table, not per row
    assert tables.count("OLS on exact entries") == 1


def test_a_swapped_mechanism_and_another_beta_are_rows_of_their_own(tmp_path):
    """A law-tied run of a made-up mechanism beside the law-free run of another β: two rows per
    statement, each naming its mechanism and β, never merged into one."""
    _copy(LAW_TIED, tmp_path / "reg_label_cdp", **{"mechanism.name": "my_laplace"})
    _copy(LAW_FREE, tmp_path / "minimax" / "reg_label_cdp", **{"distribution.beta": 0.5})
    table = write_table1(tmp_path)
    rows = table[table.cell == "reg_label_cdp"]
    tied, free = rows[rows.verdict != "not run"], rows[rows.law_free_verdict != "not run"]
    assert set(tied.mechanism) == {"my_laplace"} and set(tied.parameters) == {"β = 1"}
    assert set(free.parameters) == {"β = 0.5"} and tied.index.intersection(free.index).empty
    write_site(tmp_path)
    page = (tmp_path / SITE_DIR / "exp-reg_label_cdp.html").read_text()
    assert "my_laplace" in page.split('id="verdicts"')[0]
    assert "my_laplace" in _section((tmp_path / INDEX).read_text(), "table1")


def test_an_unreadable_file_is_an_error_on_its_page_and_the_command_fails(law_free_only, tmp_path, caplog):
    folder = tmp_path / "planted"
    shutil.copytree(law_free_only[0], folder)
    (folder / "minimax" / "reg_label_cdp" / "points.csv").write_text("a,b\n1,2\n3,4,5\n")
    assert build.main(["--results", str(folder)]) == 1
    page = (folder / SITE_DIR / "exp-minimax--reg_label_cdp.html").read_text()
    assert 'class="badge v-bad">error</span>' in page and "could not be read as CSV" in page
    assert "points.csv" in caplog.text
    # the rest of the page, and the index, are built
    assert 'id="verdicts"' in page and "inconsistent" in _section((folder / INDEX).read_text(), "theorem7")
    (folder / "table1.csv").write_text("cell,axis\nx,y\n1,2,3,4\n")
    assert build.main(["--results", str(folder)]) == 1
    index = (folder / INDEX).read_text()
    assert "table1.csv could not be read" in _text(_section(index, "table1"))
    assert "is not there" not in _section(index, "table1")  # an unreadable file is not a missing one


def test_a_run_in_a_folder_of_its_own_is_listed_with_its_verdicts(tmp_path):
    """A run with non-default settings writes <experiment>/<overrides>/ (docs/cli.md): the index lists it
    under other runs with its verdict sentences, and no table claims it as the cell's."""
    _copy(LAW_FREE, tmp_path / "minimax" / "reg_label_cdp" / "distribution.beta=0.5", **{"distribution.beta": 0.5})
    counts = write_site(tmp_path)
    index = (tmp_path / INDEX).read_text()
    assert counts["errors"] == [] and counts["missing"] == []
    others = _text(_section(index, "other-runs"))
    assert "minimax/reg_label_cdp/distribution.beta=0.5" in others and "β = 0.5" in others
    assert "against Theorem 7" in others and "inconsistent" in others
    assert "Table I (papers/000)" in index.split("Not in this folder")[1].split("</p>")[0]


def test_a_folder_of_user_level_law_free_runs_alone_builds(tmp_path):
    """papers/003's law-free runs without a law-tied one: its table1.csv has a header and no row, and the
    section shows the law-free rows and says the law-tied ones were not run (it raised AttributeError)."""
    from labeldp_sim.papers.userlevel.report import write_table1 as write_userlevel_table1

    law_free = RESULTS / "userlevel" / "law_free"
    if not (law_free / "table.csv").exists():
        pytest.skip("results/ holds no committed user-level law-free runs")
    shutil.copytree(law_free, tmp_path / "userlevel" / "law_free", ignore=shutil.ignore_patterns(*UNREPORTED))
    write_userlevel_table1(tmp_path / "userlevel")
    counts = write_site(tmp_path)
    assert counts["errors"] == []
    section = _text(_section((tmp_path / INDEX).read_text(), "userlevel"))
    assert "Law-free rows" in section and "consistent" in section and "not run no rows in" in section
