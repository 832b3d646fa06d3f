"""Stochastic optimisation's worst-case rows and the item-level column (issue 34).

Algorithm 3's second-moment recursion against its own trials; the law-free search admits it in worst-case rows
only; ``item_level`` runs every point on N = nm users of one sample.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from labeldp_sim.harness.cli import compose_job, validate_job
from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.harness.points import keyed_rng
from labeldp_sim.papers.userlevel.experiments import UserPoint
from labeldp_sim.papers.userlevel.so import Algorithm3, QuadraticSO
from tests.userlevel.test_law_free_means import Z_MAX


@pytest.mark.parametrize("mean, n, m, eps, d, reps", [
    ("kashin", 2 ** 17, 1024, 3.0, 2, 40),  # Theorem 8's frame; ε ≥ 1: coefficients share a group's users
    ("linf", 2 ** 19, 256, 0.5, 4, 60),  # one coordinate per group
])
def test_the_recursion_agrees_with_the_trials(mean, n, m, eps, d, reps):
    """√E||θ̂ − θ*||² from the trials against the recursion, at points where the iterates stay inside Θ (their
    error is < a/5, so the projection the recursion leaves out is not active).  The trials' mean square is
    normal to within its SE (a sum over 40+ trials); the root's SE follows by the delta method."""
    est, fam = Algorithm3(mean=mean), QuadraticSO(s=0.5)
    squares = np.array([est.trial(fam, n, m, eps, d, keyed_rng(11, "so-recursion", r))["error"] ** 2
                        for r in range(reps)])
    rms = math.sqrt(squares.mean())
    se = squares.std(ddof=1) / math.sqrt(reps) / (2 * rms)
    out = est.expected_error(fam.instance(0, n, m, eps, d), n, m, eps, d)
    assert out["error"] < fam.a / 5
    assert abs(rms - out["error"]) <= Z_MAX * se, (rms, se, out["error"])


def test_the_recursion_follows_the_rate_in_d_and_n():
    """The privacy term of (17) carries √d and 1/√(nm): doubling d multiplies the error by √2, a factor 16 on n
    divides it by 4, both to within the log factors (t0 ~ ln(nm) and ln n in (17): under 10 % here)."""
    est, fam = Algorithm3(), QuadraticSO(s=0.5)

    def err(n, d):
        return est.expected_error(fam.instance(0, n, 64, 1.0, d), n, 64, 1.0, d)["error"]

    assert err(10 ** 12, 8) / err(10 ** 12, 4) == pytest.approx(math.sqrt(2), rel=0.1)
    assert err(16 * 10 ** 10, 4) / err(10 ** 10, 4) == pytest.approx(1 / 4, rel=0.1)


def _spec(overrides):
    return validate_job(compose_job(["experiment=ul_minimax_so", *overrides]))


def test_an_approximate_expected_error_only_enters_worst_case_rows():
    spec = _spec([])
    assert spec.task == "so" and spec.one_sided and spec.run_size(UserPoint(n=10, m=4, eps=1.0, d=4)) == (10, 4)
    with pytest.raises(ConfigError) as err:
        _spec(["userlevel_minimax.one_sided=false"])
    assert "userlevel_minimax.family.name" in str(err.value)  # no lower-bound family for SO either


def test_item_level_runs_every_point_on_nm_users_of_one_sample():
    spec = _spec(["+userlevel_minimax.item_level=true"])
    assert spec.run_size(UserPoint(n=10, m=4, eps=1.0, d=4)) == (40, 1)
    with pytest.raises(ConfigError) as err:
        _spec(["+userlevel_minimax.item_level=yes"])
    assert "userlevel_minimax.item_level" in str(err.value)


def test_the_glance_puts_item_level_rows_in_the_item_column_only():
    """ul_minimax_so_item's rate (item_so) sits under the SO row like thm8_so, and the item column alone reads it;
    likewise classification's item_cls, though its row is the baselines'."""
    import pandas as pd

    from labeldp_sim.papers.userlevel.report import _glance_cell

    def row(experiment, rate, slope, table1_row):
        return {"experiment": experiment, "axis": "n", "d": 4, "rate": rate, "primary": True, "deep_lo": 1e7,
                "verdict": "upper bound respected", "deep_slope": slope, "theory": -0.47, "table1_row": table1_row,
                "estimator": "alg3"}

    free = pd.DataFrame([row("ul_minimax_so", "thm8_so", -0.478, "so"), row("ul_minimax_so_item", "item_so", -0.475, "so"),
                         row("ul_minimax_cls_item", "item_cls", -0.49, "")])
    tied = pd.DataFrame(columns=["axis", "primary", "experiment", "verdict", "rate"])
    n_cell = _glance_cell("so", "n", tied, free)
    assert "ul_minimax_so: upper bound respected (-0.478" in n_cell and "so_item" not in n_cell
    assert _glance_cell("so", "item", tied, free) == (
        "law-free ul_minimax_so_item (alg3): n upper bound respected (-0.475 vs -0.470)")
    assert "ul_minimax_cls_item (alg3): n" in _glance_cell("classification", "item", tied, free)
    assert _glance_cell("regression", "item", tied, free).startswith("not run: ul_minimax_reg_item")
