"""What a fixed instance can show (issue 21, item 3) and where each stated rate's rows go (item 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labeldp_sim.papers.userlevel.report import (BOUND_RESPECTED, BOUND_VIOLATED, ROW_OF_RATE, bound_verdict, reverdict,
                                          write_table1)
from labeldp_sim.papers.userlevel.theory import RATES


@pytest.mark.parametrize("ci,expected", [
    ((-0.70, -0.60), BOUND_RESPECTED),   # faster than the bound (−0.5): allowed
    ((-0.52, -0.46), BOUND_RESPECTED),   # on the bound, inside + tol
    ((-0.44, -0.38), BOUND_VIOLATED),    # slower than the bound + tol
    ((-0.50, -0.40), "inconclusive"),    # straddles the bound + tol
])
def test_one_sided_rule(ci, expected):
    assert bound_verdict(*ci, -0.5, 0.05) == expected


def test_one_sided_rule_on_a_growing_error_axis():
    """On the d axis the error grows: growing faster than the bound violates it, slower respects it."""
    assert bound_verdict(1.1, 1.2, 1.0, 0.05) == BOUND_VIOLATED
    assert bound_verdict(0.5, 0.9, 1.0, 0.05) == BOUND_RESPECTED


def _fit_row(**kw) -> dict:
    row = {"experiment": "e", "family": "f", "minimax_hard": False, "estimator": "alg", "axis": "n", "d": 1,
           "fixed": "m=4, eps=1, d=1", "rate": "thm10_lower", "rate_formula": "", "rate_source": "",
           "log_factors": "none", "tol": 0.05, "points": 5, "points_total": 5, "flagged": 0, "primary": True,
           "slope": -0.49, "se": 0.005, "ci_low": -0.5, "ci_high": -0.48, "theory": -0.25,
           "verdict": "inconsistent", "reason": "as written"}
    row.update(kw)
    return row


def test_law_tied_rows_get_the_one_sided_verdict_against_upper_bounds():
    """Theorem 10's classification n-slope (−0.49) against the upper bound (−0.25): the fixed row was
    'inconsistent'; it is 'upper bound respected'.  So is the lower-bound family at fixed constants (law-tied:
    one instance per point; the minimax verdict is the law-free row's).  A row against a lower bound stays as
    written (no one-sided statement there)."""
    fits = pd.DataFrame([_fit_row(rate="thm9_cls"), _fit_row(rate="thm9_cls", minimax_hard=True),
                         _fit_row(rate="thm10_lower"), _fit_row(rate="thm9_cls", slope=-0.1, ci_low=-0.12,
                                                                ci_high=-0.08)])
    out = reverdict(fits)
    assert out.verdict.tolist() == [BOUND_RESPECTED, BOUND_RESPECTED, "inconsistent", BOUND_VIOLATED]
    assert "no minimax verdict" in out.reason[0] and "faster than the bound" in out.reason[0]
    assert out.reason[1].startswith("lower-bound family at fixed constants")
    assert out.reason[2] == "as written"
    pd.testing.assert_frame_equal(reverdict(out), out)  # idempotent


def test_every_stated_bound_has_its_table1_row():
    missing = [name for name, rate in RATES.items() if rate.kind != "baseline" and name not in ROW_OF_RATE]
    assert not missing


def test_kashin_rows_sit_under_the_l2_heading(tmp_path):
    """Theorem 5's constant form (kashin_constants) is the ℓ2 row's, not a baseline's."""
    out = tmp_path / "ul_mean_l2"
    out.mkdir()
    pd.DataFrame([_fit_row(experiment="ul_mean_l2", estimator="kashin", rate="kashin_constants",
                           minimax_hard=True, slope=-1.0, ci_low=-1.02, ci_high=-0.98, theory=-1.0,
                           verdict="consistent", reason="")]).to_csv(out / "fit.csv", index=False)
    write_table1(tmp_path)
    table = (tmp_path / "table1.md").read_text()
    l2 = table.index("## Mean, bounded (ℓ2 support)")
    assert "| ul_mean_l2 | kashin |" in table[l2:]
    assert "## Baselines" not in table
    assert np.isfinite(pd.read_csv(tmp_path / "table1.csv").slope).all()
