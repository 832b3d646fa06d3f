"""The experiment figures stay readable (issue 33, item 5): theory lines over the data and in the
legend, hollow markers explained, titles inside the figure, legible heat maps, same bytes twice."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from labeldp_sim.papers.table1.law_free import plots  # noqa: E402
from labeldp_sim.papers.userlevel.law_free import fit as ul_fit  # noqa: E402
from labeldp_sim.report import figures  # noqa: E402

TITLE = "reg_label_cdp (laplace_cube, cube_mean, β = 0.5)"


@pytest.fixture
def drawn(monkeypatch):
    """The figures the plotting functions close, kept open for inspection."""
    kept, close = [], plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    yield kept
    for fig in kept:
        close(fig)


def _inside(fig, artist) -> bool:
    """Whether ``artist`` lies within the figure's canvas (nothing of it clipped at an edge)."""
    renderer = fig.canvas.get_renderer()
    box, page = artist.get_window_extent(renderer), fig.bbox
    return box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1


def _legend_texts(ax) -> list:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _theory_lines(ax) -> list:
    return [line for line in ax.get_lines() if line.get_gid() == "theory"]


def _data_zorder(ax) -> float:
    return max(line.get_zorder() for line in ax.get_lines() if line.get_gid() != "theory")


# --------------------------------------------------------------------------- law-tied: plot_rates


def _law_tied():
    x = np.logspace(5, 10, 6)
    rows = [{"axis": "N", "d": d, "N": v, "mean": v ** -0.5 * d, "se": 1e-3 * v ** -0.5, "in_regime": i > 0}
            for d in (1, 2) for i, v in enumerate(x)]
    fits = pd.DataFrame([{"axis": "N", "d": d, "primary": True, "slope": -0.5, "ci_low": -0.52, "ci_high": -0.48,
                          "intercept": np.log(d), "x_min": x[1], "x_max": x[-1], "theory": -0.5,
                          "verdict": "consistent"} for d in (1, 2)])
    return pd.DataFrame(rows), fits


def test_rates_theory_over_data_hollow_explained_ci_kept(drawn, tmp_path):
    summary, fits = _law_tied()
    figures.plot_rates(summary, fits, tmp_path / "rate.png", "cls_label_ldp", subtitle="rappor, cube_argmax, β = 1")
    fig = drawn[-1]
    ax = fig.axes[0]
    theory = _theory_lines(ax)
    assert len(theory) == 2 and all(line.get_zorder() > _data_zorder(ax) for line in theory)
    texts = _legend_texts(ax)
    assert figures.HOLLOW_LABEL in texts
    assert "fit -0.500, 95% CI [-0.520, -0.480]" in texts  # the verdict's interval, as before
    assert any(t.startswith("theory -0.500") for t in texts)
    assert "Birge" in ax.get_legend().get_title().get_text()
    assert fig._suptitle.get_text() == "cls_label_ldp (rappor, cube_argmax, β = 1)"
    assert _inside(fig, fig._suptitle) and _inside(fig, ax.title)


def test_rates_without_hollow_points_has_no_hollow_entry(drawn, tmp_path):
    summary, fits = _law_tied()
    figures.plot_rates(summary.assign(in_regime=True), fits, tmp_path / "rate.png", "cls_label_ldp")
    assert figures.HOLLOW_LABEL not in _legend_texts(drawn[-1].axes[0])
    assert drawn[-1]._suptitle.get_text() == "cls_label_ldp"


def test_long_titles_are_wrapped_inside_the_figure(drawn, tmp_path):
    summary, fits = _law_tied()
    long = "a_rather_long_experiment_name " * 6
    figures.plot_rates(summary, fits, tmp_path / "rate.png", long.strip(), subtitle="laplace_cube, cube_mean, β = 0.5")
    fig = drawn[-1]
    assert "\n" in fig._suptitle.get_text() and _inside(fig, fig._suptitle)


def test_figures_are_deterministic(tmp_path):
    summary, fits = _law_tied()
    for name in ("a", "b"):
        figures.plot_rates(summary, fits, tmp_path / f"{name}.png", "x", subtitle="y, z, β = 1")
    for suffix in (".png", ".svg"):
        assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()


# --------------------------------------------------------------------------- law-free Table I


def _law_free_points(n: int = 21):
    eps = np.logspace(-12, -7, n)
    rows = []
    for d in (1, 2):
        for i, e in enumerate(eps):
            m = e ** -0.4
            rows.append({"axis": "eps", "d": d, "N": 1e15, "eps": e, "M": m, "M_se": 1e-3 * m, "S": 3 * m,
                         "S_se": 1e-3 * m, "law_tied": 3 * m, "law_tied_se": 1e-3 * m,
                         "edge": "lower" if i == 0 else "", "pre_asymptotic": "", "opt_T": np.nan})
    fits = pd.DataFrame([{"axis": "eps", "d": d, "quantity": q, "primary": True, "deep_slope": -0.4,
                          "deep_ci_low": -0.41, "deep_ci_high": -0.39, "deep_window_lo": 1e-9,
                          "deep_window_hi": 1e-7, "theory": -0.4, "verdict": "consistent"}
                         for d in (1, 2) for q in ("M", "S", "law_tied")])
    return pd.DataFrame(rows), fits


def test_law_free_rates_theory_over_data_and_hollow_in_legend(drawn, tmp_path):
    points, fits = _law_free_points()
    plots.plot_rates_law_free(points, fits, tmp_path / "rate.png", TITLE)
    fig = drawn[-1]
    for ax in fig.axes:
        theory = _theory_lines(ax)
        assert len(theory) == 1 and theory[0].get_zorder() > _data_zorder(ax)
        texts = _legend_texts(ax)
        assert plots.HOLLOW_M in texts and any(t.startswith("theory") for t in texts)
        assert _inside(fig, ax.get_legend())
    assert fig._suptitle.get_text() == TITLE and _inside(fig, fig._suptitle)


def test_heatmaps_are_few_large_and_legible(drawn, monkeypatch, tmp_path):
    points, _ = _law_free_points(n=31)
    trials = points[["axis", "d", "N", "eps"]].copy()
    insts = np.geomspace(1, 2 ** 12, 25)
    tunes = [(g, -1.0) for g in np.geomspace(1, 2 ** 12, 30)]
    rng = np.random.default_rng(0)
    mats = {"R": rng.uniform(0.1, 1.0, (2, len(insts), len(tunes))), "insts": insts, "tunes": tunes,
            "tune_col": "G_est"}
    monkeypatch.setattr(plots, "point_matrices", lambda part, tune_col: mats)
    plots.plot_heatmaps(trials, points, tmp_path / "heatmap.png", TITLE, "G_est")
    fig = drawn[-1]
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.images]
    assert len(panels) == 2 * plots.HEATMAP_COLUMNS and plots.HEATMAP_COLUMNS <= 4
    renderer = fig.canvas.get_renderer()
    for ax in panels:
        assert ax.get_window_extent(renderer).width / fig.dpi >= 2.0  # the image; its colour bar beside it
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            shown = [t for t in axis.get_majorticklocs() if lo <= t <= hi]
            assert 2 <= len(shown) <= plots.HEATMAP_TICKS + 1
            assert all(label.get_fontsize() >= 7 for label in axis.get_ticklabels())
    assert fig.get_size_inches()[0] / plots.HEATMAP_COLUMNS >= 3.0
    assert fig._suptitle.get_text().startswith(TITLE) and _inside(fig, fig._suptitle)


def _convergence_fits(decades=2.0):
    centres = np.logspace(-11, -8, 13)
    rows = [{"axis": "eps", "d": 1, "quantity": "M", "primary": True, "theory": -0.4, "tol": 0.05, "slope": -0.41,
             "verdict": "consistent", "window_decades": decades, "statement": "Theorem 7"},
            {"axis": "eps", "d": 1, "quantity": "M", "primary": False, "theory": -0.33, "tol": 0.05, "slope": -0.41,
             "verdict": "inconsistent", "window_decades": decades, "statement": "Theorem 7"}]
    for i, c in enumerate(centres):
        rows.append({"axis": "eps", "d": 1, "quantity": "M_window", "primary": False, "window_centre": c,
                     "slope": -0.4, "ci_low": -0.42, "ci_high": -0.38, "deepest": i == len(centres) - 1,
                     "previous": i == len(centres) - 5, "theory": -0.4})
    return pd.DataFrame(rows)


def test_convergence_title_fits_a_single_panel(drawn, tmp_path):
    plots.plot_convergence(_convergence_fits(), tmp_path / "convergence.png", TITLE)
    fig = drawn[-1]
    assert _inside(fig, fig._suptitle)
    renderer = fig.canvas.get_renderer()
    ax = [a for a in fig.axes if a.get_visible()][0]
    # the suptitle sits above the panel's own title, not over it
    assert fig._suptitle.get_window_extent(renderer).y0 >= ax.title.get_window_extent(renderer).y1 - 1


# --------------------------------------------------------------------------- user-level law-free


def test_userlevel_convergence_draws_the_theory_line(drawn, tmp_path):
    n = np.logspace(6, 13, 29)
    points = pd.DataFrame({"axis": "n", "n": n, "m": 1024, "eps": 0.5, "d": 1, "M": n ** -0.5,
                           "flag": ["oracle c_l = 2 on the grid's edge"] + [""] * (len(n) - 1)})
    windows = pd.DataFrame([{"axis": "n", "d": 1, "window_lo": 1e11, "window_hi": 1e13, "slope": -0.49,
                             "deepest": True, "previous": False},
                            {"axis": "n", "d": 1, "window_lo": 1e10, "window_hi": 1e12, "slope": -0.5,
                             "deepest": False, "previous": True}])
    fits = pd.DataFrame([{"axis": "n", "d": 1, "primary": True, "rate": "thm12_lower", "theory": -0.5,
                          "deep_lo": 1e11, "deep_hi": 1e13, "verdict": "consistent"},
                         {"axis": "n", "d": 1, "primary": False, "rate": "thm11_reg", "theory": -0.46,
                          "deep_lo": 1e11, "deep_hi": 1e13, "verdict": "upper bound respected"}])
    spec = SimpleNamespace(name="ul_minimax_reg", estimator_name="alg5", family_name="thm12")
    ul_fit.plot_convergence(points, windows, spec, tmp_path / "convergence.png", fits)
    fig = drawn[-1]
    ax = fig.axes[0]
    theory = _theory_lines(ax)
    assert len(theory) == 1 and theory[0].get_zorder() > _data_zorder(ax)
    slope = np.diff(np.log(theory[0].get_ydata())) / np.diff(np.log(theory[0].get_xdata()))
    assert slope == pytest.approx(-0.5)
    texts = _legend_texts(ax)
    assert any(t.startswith("theory -0.500 (thm12_lower)") for t in texts)
    assert any(t.startswith("hollow") for t in texts)
    assert _inside(fig, fig._suptitle)
    assert Path(tmp_path / "convergence.svg").exists()
