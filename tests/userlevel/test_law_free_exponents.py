"""The law-free exponent surface of papers/003 (β, γ): its table, its figure and its experiments' configs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from labeldp_sim.papers.userlevel.law_free.exponents import (COLUMNS, exponent_table, stated_exponent,
                                                              write_exponents)
from labeldp_sim.papers.userlevel.law_free.search import validate_user_law_free

# name -> (task, beta, gamma): the surface's experiments (β = γ = 1 is ul_minimax_cls / ul_minimax_reg)
SURFACE = {
    "ul_minimax_cls_gamma05": ("classification", 1.0, 0.5),
    "ul_minimax_cls_gamma025": ("classification", 1.0, 0.25),
    "ul_minimax_cls_beta05_gamma05": ("classification", 0.5, 0.5),
    "ul_minimax_cls_beta075_gamma05": ("classification", 0.75, 0.5),
    "ul_minimax_reg_beta05": ("regression", 0.5, None),
    "ul_minimax_reg_beta075": ("regression", 0.75, None),
}


@pytest.mark.parametrize("task, beta, d, gamma, expected", [
    ("classification", 1.0, 1, 1.0, -0.5),          # Table 1 at β = γ = 1: (mnε²)^(-1/2)
    ("classification", 0.5, 1, 0.5, -0.25),
    ("classification", 1.0, 2, 1.0, -1 / 3),
    ("regression", 0.75, 1, None, -0.75 / 1.75),
    ("regression", 1.0, 2, None, -1 / 3),
])
def test_stated_exponents_are_the_papers(task, beta, d, gamma, expected):
    assert stated_exponent(task, beta, d, gamma) == pytest.approx(expected)


def test_stated_exponent_refuses_a_classification_without_gamma():
    with pytest.raises(ValueError):
        stated_exponent("classification", 1.0, 1)


def _fit_row(experiment, task, axis, d, rate, primary, slope, half, verdict):
    return {"experiment": experiment, "task": task, "family": "x", "estimator": "y", "axis": axis, "d": d,
            "rate": rate, "rate_kind": "lower", "rate_source": "", "primary": primary, "theory": -0.3,
            "deep_slope": slope, "deep_ci_low": slope - half, "deep_ci_high": slope + half,
            "deep_lo": 1e11, "deep_hi": 1e13, "prev_slope": slope, "prev_ci_low": np.nan, "prev_ci_high": np.nan,
            "verdict": verdict, "points": 9, "points_total": 9, "tol": 0.05, "table1_row": "",
            "window_decades": 2.0, "reason": ""}


def _experiment(base, name, family, rows):
    folder = base / name
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(folder / "fit.csv", index=False)
    (folder / "config.yaml").write_text(yaml.safe_dump({"experiment_name": name,
                                                         "userlevel_minimax": {"family": family}}))


@pytest.fixture
def results(tmp_path):
    """A law-free folder: a classification run (n and m axes, the upper bound beside), a regression run at
    d = 1 and 2, a mean run and an ε-axis run (neither on the surface)."""
    base = tmp_path / "law_free"
    _experiment(base, "cls_a", {"name": "thm10", "beta": 0.5, "gamma": 0.5}, [
        _fit_row("cls_a", "classification", "n", 1, "thm10_lower", True, -0.245, 0.002, "consistent"),
        _fit_row("cls_a", "classification", "n", 1, "thm9_cls", False, -0.245, 0.002, "upper bound respected"),
        _fit_row("cls_a", "classification", "m", 1, "thm10_lower", True, -0.25, 0.01, "consistent")])
    _experiment(base, "reg_b", {"name": "thm12", "beta": 0.75}, [
        _fit_row("reg_b", "regression", "n", 1, "thm12_lower", True, -0.42, 0.004, "consistent"),
        _fit_row("reg_b", "regression", "n", 2, "thm12_lower", True, -0.25, 0.04, "pre-asymptotic")])
    _experiment(base, "mean_c", {"name": "thm2"}, [
        _fit_row("mean_c", "mean", "n", 1, "thm2_lower", True, -1.0, 0.01, "consistent")])
    _experiment(base, "cls_eps", {"name": "thm10"}, [
        _fit_row("cls_eps", "classification", "eps", 1, "thm9_cls", True, -1.0, 0.01, "consistent")])
    return base


def test_the_table_holds_the_primary_n_rows_of_the_surface(results):
    table = exponent_table(results)
    assert list(table.columns) == COLUMNS
    assert list(zip(table.experiment, table.d)) == [("cls_a", 1), ("reg_b", 1), ("reg_b", 2)]
    cls, reg1, reg2 = (table.iloc[k] for k in range(3))
    assert (cls.beta, cls.gamma, cls.rate) == (0.5, 0.5, "thm10_lower")
    assert cls.stated == pytest.approx(-0.25) and cls.measured == pytest.approx(-0.245)
    assert (cls.ci_low, cls.ci_high, cls.half_width) == pytest.approx((-0.247, -0.243, 0.002))
    assert bool(cls.decisive)
    assert reg1.beta == 0.75 and np.isnan(reg1.gamma) and reg1.stated == pytest.approx(-0.75 / 1.75)
    assert reg2.stated == pytest.approx(-0.75 / 2.75) and not bool(reg2.decisive)  # pre-asymptotic, wide


def test_the_figure_and_table_are_written_the_same_twice(results, tmp_path):
    out = tmp_path / "fig" / "exponents.png"
    table = write_exponents(results, out)
    files = [out, out.with_suffix(".svg"), out.with_suffix(".csv")]
    first = [f.read_bytes() for f in files]
    assert all(first) and len(table) == 3
    pd.testing.assert_frame_equal(pd.read_csv(out.with_suffix(".csv")), table, check_dtype=False)
    write_exponents(results, out)
    assert [f.read_bytes() for f in files] == first


def test_an_empty_folder_writes_nothing(tmp_path):
    assert exponent_table(tmp_path).empty
    assert write_exponents(tmp_path).empty and not (tmp_path / "exponents.png").exists()


@pytest.mark.parametrize("name", sorted(SURFACE))
def test_each_surface_config_validates(make_cfg, tmp_path, name):
    spec = validate_user_law_free(make_cfg([f"experiment={name}", f"paths.results_dir={tmp_path}"]))
    task, beta, gamma = SURFACE[name]
    assert spec.name == name and spec.task == task
    assert spec.family_params["beta"] == beta and spec.family_params.get("gamma") == gamma
    # Theorem 10's family needs β in (0, 1] and γβ <= 1; neither run repeats β = γ = 1
    assert 0 < beta <= 1 and (gamma is None or gamma * beta <= 1) and (beta, gamma) not in ((1.0, 1.0), (1.0, None))
    assert spec.rates[0] == {"classification": "thm10_lower", "regression": "thm12_lower"}[task]
    assert list(spec.sweeps) == ["n"]
    points = spec.sweeps["n"]
    assert {(p.m, p.eps, p.d) for p in points} == {(1024, 0.5, 1)}
    assert min(p.n for p in points) <= 10 ** 10 and max(p.n for p in points) == 10 ** 13
