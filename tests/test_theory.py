import numpy as np
import pytest

from labeldp_sim.papers.table1.points import snap
from labeldp_sim.papers.table1.theory import CELLS


@pytest.mark.parametrize("d", [1, 2, 3])
def test_classification_exponents_match_spec(d):
    beta, gamma = 0.7, 1.5
    r_cls = beta * (gamma + 1) / (2 * beta + d)
    expect = {
        ("cls_nonprivate", "N"): -r_cls,
        ("cls_label_ldp", "N"): -r_cls,
        ("cls_label_ldp", "eps"): -2 * r_cls,
        ("cls_label_cdp", "eps"): -beta * (gamma + 1) / (beta + d),
        ("cls_full_ldp", "N"): -beta * (gamma + 1) / (2 * beta + 2 * d),
        ("cls_full_ldp", "eps"): -2 * beta * (gamma + 1) / (2 * beta + 2 * d),
        ("cls_full_cdp", "eps"): -beta * (gamma + 1) / (beta + d),
    }
    for (name, axis), value in expect.items():
        exponent = CELLS[name].axes[axis]
        assert exponent.slope(beta, gamma, d) == pytest.approx(value)
        assert exponent.source and exponent.formula


@pytest.mark.parametrize("name,axis,N,eps", [
    ("cls_label_ldp", "N", 123_456, 0.5), ("cls_label_ldp", "eps", 10**8, 0.07),
    ("cls_label_cdp", "eps", 10**9, 3e-5), ("cls_full_ldp", "N", 10**7, 0.5),
    ("cls_nonprivate", "N", 5_000, 1.0),
])
def test_snapping_makes_h_a_whole_fraction(name, axis, N, eps):
    cell = CELLS[name]
    N2, eps2, G = snap(cell, axis, N, eps, 1.0, 2, 2.0)
    h = cell.bandwidth(N2, eps2, 1.0, 2, 2.0)
    assert h * G == pytest.approx(1.0, rel=1e-5)
    moved = N2 / N if axis == "N" else eps2 / eps
    assert 0.3 < moved < 3  # moved to the nearest whole G, not anywhere


def test_central_regime_is_privacy_dominated():
    cell = CELLS["cls_label_cdp"]
    N = 10**9
    assert cell.in_regime("eps", N, 1e-5, 1.0, 1)
    assert not cell.in_regime("eps", N, 0.01, 1.0, 1)  # ε > N^(-β/(2β+d)) = 1e-3
    assert cell.in_regime("eps", N, 0.5, 1.0, 1) is False
    assert np.isclose(N ** (-1 / 3), 1e-3)
