"""The Markdown tables of the results files, rendered through pandas (issue 33, item 6).

Each writer's tables are read back with pandas (``read_csv`` on the pipe-table rows, an escaped ``\\|``
kept inside its cell) and compared with the cells the writer builds: pre-formatted numbers stay as
formatted, a missing number reads as before (``—``, ``nan``), a ``|`` inside a cell does not split it.
No runs: every test builds its own tiny input, or a fixture of the writer's own tests.
"""

from __future__ import annotations

import csv
import io
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd

from labeldp_sim.papers.kclass.claims import check_claims, claims_markdown
from labeldp_sim.papers.kclass.methods import method_classes
from labeldp_sim.papers.kclass.report import write_digits, write_kclass
from labeldp_sim.papers.table1.law_free.fit import fit_law_free
from labeldp_sim.papers.table1.law_free.table import COLUMNS as MINIMAX_COLUMNS, write_minimax_table
from labeldp_sim.papers.userlevel.law_free.fit import write_law_free_table
from labeldp_sim.papers.userlevel.report import write_table1
from labeldp_sim.privacy.audit.report import write_outputs
from labeldp_sim.privacy.audit.runner import CAP, CARELESS, LIMITATION, MECHANISM, Result
from labeldp_sim.report.html import markdown_html

from .test_kclass_claims import fig2a_with_alibi_gap
from .test_minimax_fit import N_GRID, _discreteness, _points, _spec
from .userlevel.test_userlevel_verdicts import _fit_row

SEPARATOR = re.compile(r"\|(-{3,}\|)+")
BAR = re.compile(r"(?<!\\)\|")  # a bare |: a cell boundary (\| is a | inside a cell)


def pipe_tables(text: str) -> list:
    """Every pipe table of a Markdown text as a DataFrame of its cells' text (``\\|`` read back as ``|``)."""
    tables, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            header, separator, *rows = block
            assert SEPARATOR.fullmatch(separator), separator  # no alignment colons: the report's <td> stay bare
            assert all(len(BAR.findall(row)) == len(BAR.findall(header)) for row in rows), block
            frame = pd.read_csv(io.StringIO("\n".join([header, *rows])), sep=r" ?(?<!\\)\| ?", engine="python",
                                dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE)
            frame = frame.iloc[:, 1:-1]  # the empty fields before the first | and after the last
            tables.append(frame.map(lambda cell: cell.replace("\\|", "|")))
            block = []
    return tables


def assert_table(frame: pd.DataFrame, header: list, rows: list):
    assert list(frame.columns) == header
    assert frame.values.tolist() == rows


# --------------------------------------------------------------------------- privacy audit: audit.md

def _result(mechanism, kind, **kw):
    row = dict(mechanism=mechanism, kind=kind, privacy="label, local", neighbours="y ∈ {0, |T|}", pair="0 vs 1",
               claimed_eps=1.0, exact_loss=0.5, exact_method="max |a − b|", eps_lower=float("nan"), direction="",
               p_hat=float("nan"), q_hat=float("nan"), draws=200_000, caught_by="", verdict="private",
               expected="private")
    return Result(**(row | kw))


def test_audit_tables(tmp_path):
    results = [
        _result("rr", MECHANISM),
        _result("rr_broken", "mutant of rr", broken="flips | keeps", exact_loss=float("inf"), eps_lower=2.25,
                verdict="caught", expected="caught"),
        _result("rr: label 0.5", CARELESS, broken="label 0.5", message="ConfigError: label | not 0/1",
                verdict="refused", expected="refused"),
        _result("rr cap", CAP, claimed_eps=30.0, exact_loss=30.000000000001, message="1e-13, bound 2e-12",
                verdict="holds", expected="holds"),
        _result("rr: low-order bits", LIMITATION, eps_lower=4.5, verdict="stated", expected="stated"),
    ]
    write_outputs(results, tmp_path, draws=1000, seed=0, alpha=0.05, seconds=1.0)
    text = (tmp_path / "audit.md").read_text(encoding="utf-8")
    tables = pipe_tables(text)
    assert len(tables) == 6
    assert_table(tables[0], ["mechanism", "privacy", "neighbours", "black-box pair", "claimed ε", "exact loss",
                             "ε_lower", "verdict"],
                 [["rr", "label, local", "y ∈ {0, |T|}", "0 vs 1", "1", "0.5000", "—", "private"]])
    assert_table(tables[1], ["mutant", "of", "what is broken", "privacy", "claimed ε", "exact loss", "ε_lower",
                             "caught by", "verdict"],
                 [["rr_broken", "rr", "flips | keeps", "label, local", "1", "∞", "2.2500", "—", "caught"]])
    assert_table(tables[2], ["case", "of", "careless input", "verdict", "what the caller sees"],
                 [["rr: label 0.5", "rr", "label 0.5", "refused", "`ConfigError: label | not 0/1`"]])
    assert_table(tables[3], ["ε cap of", "privacy", "cap", "cap + worst excess", "verdict",
                             "worst excess seen, rounding bound"],
                 [["rr cap", "label, local", "30", "30.000000000001", "holds", "1e-13, bound 2e-12"]])
    assert_table(tables[4], ["mechanism", "privacy", "claimed ε", "ε_lower (low-order bits)", "draws", "verdict"],
                 [["rr: low-order bits", "label, local", "1", "4.5000", "200,000", "stated"]])
    assert_table(tables[5], ["mechanism", "method"], [["rr", "max |a − b|"], ["rr cap", "max |a − b|"]])
    # the rows read as they did when written by hand; the HTML report turns each into a <table>
    assert "| rr | label, local | y ∈ {0, \\|T\\|} | 0 vs 1 | 1 | 0.5000 | — | private |" in text
    html = markdown_html(text)
    assert html.count("<table>") == 6 and '<td class="v-good">private</td>' in html


# --------------------------------------------------------------------------- Table I, law-free: table.md

def test_minimax_table(tmp_path):
    M = N_GRID ** (-2 / 3) * np.exp(_discreteness(np.log(N_GRID), 0.16))
    fits = fit_law_free(_points(N_GRID, M), _spec("reg_nonprivate"))
    (tmp_path / "reg_nonprivate").mkdir()
    fits.to_csv(tmp_path / "reg_nonprivate" / "fit.csv", index=False)
    table = write_minimax_table(tmp_path)
    [frame] = pipe_tables((tmp_path / "table.md").read_text())
    r = table.iloc[0]
    assert list(frame.columns) == MINIMAX_COLUMNS and len(frame) == 1
    row = frame.iloc[0]
    assert (row.cell, row.axis, row.d, row.entries, row.verdict) == ("reg_nonprivate", "N", "1", "exact", "consistent")
    assert row["Table I"] == f"{r.theory:.3f}" and row["±"] == f"{r.M_ci_half_width:.3f}"
    assert row["M slope [95% CI]"] == f"{r.M_slope:.3f} [{r.M_ci_low:.3f}, {r.M_ci_high:.3f}]"
    assert row["deepest window"] == f"{r.window_lo:.2g}–{r.window_hi:.2g}"
    assert row["h*_est slope (law)"] == f"{r.h_est_slope:.2f} ({r.law_h_exponent:.2f})"


# --------------------------------------------------------------------------- K-class: accuracy.md, claims

def test_kclass_claims_table():
    table = check_claims(fig2a_with_alibi_gap(0.6, 0.001))
    tables = pipe_tables(claims_markdown(table))
    assert len(tables) == table.figure.nunique()
    sub = table[table.figure == "kclass_fig2a"]
    text = lambda s: str(s).replace("\n", " ")  # noqa: E731
    assert_table(tables[0], ["claim", "source", "verdict", "measured", "reason"],
                 [[text(r.claim), text(r.source), f"**{r.verdict}**", text(r.measured), text(r.reason)]
                  for r in sub.itertuples()])


def _kclass_summary(axis, values, methods):
    return pd.DataFrame([{axis: x, "method": m, "mean": 0.5 + 0.1 * i + 0.01 * j, "se": 0.01, "trials": 2}
                         for i, x in enumerate(values) for j, m in enumerate(methods)])


def test_kclass_accuracy_tables(tmp_path):
    methods = ["rr", "lp_2st", "alibi", "vector_approximation", "non_private"]
    labels = [method_classes()[m].label for m in methods]
    summary = _kclass_summary("eps", [1.0, 8.0], methods)
    trials = pd.DataFrame(columns=["experiment", "config_key", "seed_key", "eps", "split", "method", "accuracy",
                                   "seconds", "run_id", "computed_by"])
    spec = SimpleNamespace(eps=[1, 8], methods=methods, k=5, splits=2, test_fraction=0.3)
    write_digits(spec, trials, summary, tmp_path)
    [frame] = pipe_tables((tmp_path / "accuracy.md").read_text())
    assert_table(frame, ["method", "ε = 1", "ε = 8"],
                 [[label, f"{0.5 + 0.01 * j:.3f} ± 0.020", f"{0.6 + 0.01 * j:.3f} ± 0.020"]
                  for j, label in enumerate(labels)])

    summary = _kclass_summary("K", [2, 6], methods)
    summary["ci_low"], summary["ci_high"] = summary["mean"] - 0.0196, summary["mean"] + 0.0196
    trials = pd.DataFrame([{"experiment": "kclass_fig2b", "config_key": "c", "seed_key": f"s{t}", "K": K, "trial": t,
                            "method": m, "accuracy": 0.5, "seconds": 0.0, "sigma": 1.0, "N": 100, "k": 5, "eps": 1.0,
                            "run_id": "r", "computed_by": "test"} for K in (2, 6) for t in range(2) for m in methods])
    spec = SimpleNamespace(name="kclass_fig2b", K_values=[2, 6], methods=methods, sigma=1.0, eps=1.0, k=5, N=100,
                           trials=2)
    write_kclass(spec, trials, summary, tmp_path)
    frame = pipe_tables((tmp_path / "accuracy.md").read_text())[0]
    assert list(frame.columns) == ["K", "Bayes", *labels]
    assert frame.K.tolist() == ["2", "6"] and all(re.fullmatch(r"0\.\d{3}", b) for b in frame.Bayes)
    assert frame.iloc[1, 2:].tolist() == [f"{0.6 + 0.01 * j:.3f} ± 0.020" for j in range(len(methods))]


# --------------------------------------------------------------------------- user-level: table1.md, law-free

def test_userlevel_table1_tables(tmp_path):
    rows = [_fit_row(experiment="ul_mean_l2", estimator="kashin", rate="kashin_constants", minimax_hard=True,
                     fixed="m=4, |x|≤1, eps=1, d=1", slope=-1.0, ci_low=-1.02, ci_high=-0.98, theory=-1.0,
                     verdict="consistent"),
            _fit_row(experiment="ul_mean_1d", estimator="alg1", axis="m", rate="thm1_alg1", slope=-0.99,
                     ci_low=-1.01, ci_high=-0.97, theory=-1.0, verdict="consistent")]
    for row in rows:
        (tmp_path / row["experiment"]).mkdir()
        pd.DataFrame([row]).to_csv(tmp_path / row["experiment"] / "fit.csv", index=False)
    fits = write_table1(tmp_path).set_index("estimator")
    tables = pipe_tables((tmp_path / "table1.md").read_text())
    glance, *sections, baselines = tables
    assert list(glance.columns) == ["Table 1 row", "entry", "n", "m", "ε ≤ 1", "ε > 1", "d", "β, γ",
                                    "item-level column"]
    header = ["experiment", "estimator", "family", "axis", "d", "fixed", "slope [95% CI]", "expected",
              "rate (source)", "verdict", "points", "reason"]
    [section] = [s for s in sections if "kashin" in s.estimator.tolist()]
    expected = {"kashin": ["ul_mean_l2", "kashin", "f", "n", "1", "m=4, |x|≤1, eps=1, d=1", "-1.000 [-1.020, -0.980]",
                           "-1.000", "kashin_constants (nan)"],
                "alg1": ["ul_mean_1d", "alg1", "f (fixed)", "m", "1", "m=4, eps=1, d=1", "-0.990 [-1.010, -0.970]",
                         "-1.000", "thm1_alg1 (nan)"]}
    assert_table(section, header, [expected[e] + [fits.loc[e, "verdict"], "5/5", fits.loc[e, "reason"]]
                                   for e in section.estimator])
    assert_table(baselines, ["experiment", "estimator", "m-slope [95% CI]", "expected", "verdict"],
                 [["ul_mean_1d", "Algorithm 1 (−1 expected)", "-0.990 [-1.010, -0.970]", "-1.000",
                   fits.loc["alg1", "verdict"]]])


def test_userlevel_law_free_table(tmp_path):
    base = dict(experiment="ul_minimax_reg", axis="n", d=1, deep_lo=1e6, deep_hi=1e8, deep_slope=-0.5,
                deep_ci_low=-0.51, deep_ci_high=-0.49, prev_slope=-0.48, rate="thm12_lower", rate_kind="lower",
                theory=-0.5, verdict="consistent", points=9, points_total=10, reason="")
    fits = pd.DataFrame([base | {"primary": True},
                         base | {"primary": False, "rate": "thm11_reg", "rate_kind": "upper", "theory": float("nan"),
                                 "verdict": "upper bound respected", "reason": "x | y"}])
    (tmp_path / "ul_minimax_reg").mkdir()
    fits.to_csv(tmp_path / "ul_minimax_reg" / "fit.csv", index=False)
    write_law_free_table(tmp_path)
    [frame] = pipe_tables((tmp_path / "table.md").read_text())
    assert_table(frame, ["experiment", "axis", "d", "deepest window", "slope [95% CI]", "previous", "rate", "expected",
                         "verdict", "points", "reason"],
                 [["ul_minimax_reg", "n", "1", "1e+06–1e+08", "-0.500 [-0.510, -0.490]", "-0.480",
                   "thm12_lower (lower)", "-0.500", "consistent", "9/10", ""],
                  ["", "", "", "", "", "", "thm11_reg (upper)", "—", "(upper bound respected)", "", "x | y"]])


def test_rendering_is_deterministic(tmp_path):
    """The same inputs give the same bytes."""
    texts = []
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        write_outputs([_result("rr", MECHANISM)], tmp_path / sub, draws=10, seed=0, alpha=0.05, seconds=0.0)
        texts.append((tmp_path / sub / "audit.md").read_bytes())
    assert texts[0] == texts[1]
