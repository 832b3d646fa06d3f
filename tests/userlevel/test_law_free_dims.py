"""Law-free learning rows at d >= 2 (experiments/minimax_dims.txt): the configs validate, and their tuning and
scale grids offer the cube counts their comments say (no integer-count jumps from point to point)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from labeldp_sim.harness.cli import compose_job, validate_job
from labeldp_sim.papers.userlevel.nonparametric import MAX_CUBES, Algorithm4, Algorithm5

SUITE = Path(__file__).resolve().parents[2] / "experiments" / "minimax_dims.txt"
EXPERIMENTS = SUITE.read_text().split()


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    """Every experiment of the suite, validated once (composed as the make_cfg fixture does)."""
    results = tmp_path_factory.mktemp("results")
    return {name: validate_job(compose_job([f"experiment={name}", f"paths.results_dir={results}"]))
            for name in EXPERIMENTS}


def _count(spec, tuning, pt) -> int:
    return spec.estimator(tuning).tuning(pt.n, pt.m, pt.eps, pt.d)["B_axis"]


def test_the_suite_holds_the_learning_rows_at_d_2_and_above(specs):
    assert {"ul_minimax_cls_d2", "ul_minimax_reg_d2", "ul_minimax_cls_d3", "ul_minimax_reg_d3",
            "ul_minimax_reg_d4"} == set(specs)
    for name, spec in specs.items():
        d = int(name.rsplit("_d", 1)[1])
        assert spec.task == ("classification" if "_cls_" in name else "regression")
        assert list(spec.sweeps) == ["n"] and {(p.m, p.eps, p.d) for p in spec.sweeps["n"]} == {(1024, 0.5, d)}


@pytest.mark.parametrize("est, d, counts", [(Algorithm4, 2, (1, 2, 3, 7, 10, 31, 49, 64)),
                                             (Algorithm5, 3, (3, 11, 17, 23)), (Algorithm5, 4, (2, 5, 11))])
def test_a_cube_length_one_over_b_gives_b_cubes_per_axis(est, d, counts):
    for B in counts:
        assert est(l=1 / B).tuning(10 ** 12, 1024, 0.5, d)["B_axis"] == B


def test_an_l_grid_offers_every_count_in_its_range(specs):
    grids = {name: spec for name, spec in specs.items() if spec.tuning_key == "l"}
    assert grids  # the regression rows
    for name, spec in grids.items():
        counts = sorted(round(1 / t) for t in spec.tunings)
        assert counts == list(range(counts[0], counts[-1] + 1)), name  # every integer count, none twice
        pt = spec.sweeps["n"][-1]  # a fixed length's count does not depend on the point
        for t in spec.tunings:
            assert t == 1 / round(1 / t), name
            assert _count(spec, t, pt) == round(1 / t)
            assert round(1 / t) ** pt.d <= MAX_CUBES


def test_a_c_l_grid_aligned_with_the_n_step_offers_the_same_counts_at_every_point(specs):
    """B = ⌈X/c_l⌉ and B_i = ⌈X/c⌉, X = (nm(ε²∧ε))^(1/(2(d+β))): a grid whose ratio divides X's step by k maps
    point j + 1's value i + k to point j's value i, so the counts offered are one set, shifted."""
    grids = {name: spec for name, spec in specs.items() if spec.tuning_key == "c_l"}
    assert grids  # the classification rows
    for name, spec in grids.items():
        pts = spec.sweeps["n"]
        d = pts[0].d
        x_step = math.log(pts[1].n / pts[0].n) / (2 * (d + spec.family_params["beta"]))
        for grid, count in ((spec.tunings, lambda v, pt: _count(spec, v, pt)),
                            (spec.scales, lambda v, pt: round(spec.family(v).instance(0, pt.n, pt.m, pt.eps, d)
                                                              .params["cubes"] ** (1 / d)))):
            ratios = [math.log(b / a) for a, b in zip(grid, grid[1:])]
            assert max(ratios) - min(ratios) < 1e-12, name  # geometric
            k = x_step / ratios[0]
            assert k == pytest.approx(round(k), abs=1e-9), name
            k = round(k)
            table = [[count(v, pt) for v in grid] for pt in pts]
            for j in range(len(pts) - 1):
                assert table[j + 1][k:] == table[j][:-k], (name, pts[j].n)
            assert max(max(row) for row in table) ** d <= MAX_CUBES
