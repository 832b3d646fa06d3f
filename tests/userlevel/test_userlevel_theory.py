"""Theory registry of papers/003: full stated rates and their local slopes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeldp_sim.papers.userlevel.theory import (RATES, SLIPS, TABLE1_ROWS, Rate, expected_slope,
                                          get_rate)


def _ols_slope(x, y):
    """Plain-Python OLS slope of y on x (independent of the module under test)."""
    mx, my = sum(x) / len(x), sum(y) / len(y)
    return (sum((a - mx) * (b - my) for a, b in zip(x, y))
            / sum((a - mx) ** 2 for a in x))


def test_eq2_m_slope_is_minus_one_at_eps_1():
    ms = [2.0 ** k for k in range(4, 17)]
    assert expected_slope("thm1_alg1", "m", ms, {"n": 2 ** 15, "eps": 1.0}) == pytest.approx(
        -1.0, abs=1e-12)


def test_eq2_n_slope_includes_the_ln_n_factor():
    # (2) = D²/(nm)·(1 + ln n/ε²): log rate = −log n − log m + log(1 + ln n) at ε = 1,
    # so the OLS slope is −1 + OLS slope of log(1 + ln n) on log n.
    ns = [2.0 ** k for k in range(13, 20)]
    lx = [math.log(n) for n in ns]
    hand = -1.0 + _ols_slope(lx, [math.log(1.0 + math.log(n)) for n in ns])
    got = expected_slope("thm1_alg1", "n", ns, {"m": 2 ** 12, "eps": 1.0})
    assert got == pytest.approx(hand, abs=1e-12)
    assert -1.0 < got < -0.85                      # slightly above −1
    # close to the local derivative −1 + 1/(ε² + ln n) at the grid's geometric middle
    assert got == pytest.approx(-1.0 + 1.0 / (1.0 + math.log(2.0 ** 16)), abs=0.01)


def test_baseline_m_slopes():
    ms = [2.0 ** k for k in range(10, 17)]
    fixed = {"n": 2 ** 15, "eps": 1.0}
    assert expected_slope("p1a_item_level", "m", ms, fixed) == pytest.approx(1.0, abs=1e-3)
    assert expected_slope("p1b_one_sample", "m", ms, fixed) == pytest.approx(0.0, abs=1e-12)
    assert expected_slope("naive_laplace", "m", ms, fixed) == pytest.approx(0.0, abs=1e-3)


def test_d_exponents_linf_vs_l2_for_small_eps():
    ds = [2, 4, 8, 16]
    fixed = {"n": 2 ** 20, "m": 2 ** 10, "eps": 0.1}
    assert expected_slope("thm4_linf", "d", ds, fixed) == pytest.approx(2.0, abs=0.01)
    assert expected_slope("thm5_l2", "d", ds, fixed) == pytest.approx(1.0, abs=0.01)
    assert expected_slope("thm7_lower", "d", ds, fixed) == pytest.approx(2.0, abs=1e-12)
    assert expected_slope("thm6_lower", "d", ds, fixed) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n", [2 ** 10, 2 ** 26])
def test_eq4_m_slope_at_p2_matches_the_formula(n):
    # (4) at p = 2, M_p = 1: max(ln m/(mnε²), (m²nε²)^(−1/2)) + 1/(mn)
    ms = [4.0, 16.0, 64.0, 256.0, 1024.0]
    eps = 1.0
    vals = [max(math.log(m) / (m * n * eps ** 2), (m * m * n * eps ** 2) ** -0.5) + 1 / (m * n)
            for m in ms]
    hand = _ols_slope([math.log(m) for m in ms], [math.log(v) for v in vals])
    got = expected_slope("thm3_heavy", "m", ms, {"n": n, "eps": eps, "p": 2.0})
    assert got == pytest.approx(hand, abs=1e-12)


def test_eq4_spike_regime_slopes():
    # where (m²nε²)^(−(1−1/p)) dominates: m-slope −2(1−1/p), n-slope → −(1−1/p)
    ms = [4.0, 16.0, 64.0, 256.0, 1024.0]
    assert expected_slope("thm3_heavy", "m", ms, {"n": 2 ** 26, "eps": 1.0, "p": 2.0}) == \
        pytest.approx(-1.0, abs=1e-9)
    assert expected_slope("thm3_heavy", "m", ms, {"n": 2 ** 26, "eps": 1.0, "p": 3.0}) == \
        pytest.approx(-4.0 / 3.0, abs=0.01)
    assert expected_slope("spike_lower", "n", [2.0 ** 16, 2.0 ** 20], {"m": 16, "eps": 1.0,
                                                                       "p": 3.0}) == \
        pytest.approx(-2.0 / 3.0, abs=1e-12)


def test_value_of_eq8_by_hand():
    # (8): D²d/(nm)·(1 + d ln n/(ε²∧ε)); at ε = 0.5, ε²∧ε = 0.25
    n, m, d, D, eps = 1000.0, 50.0, 4.0, 2.0, 0.5
    hand = D ** 2 * d / (n * m) * (1 + d * math.log(n) / 0.25)
    assert RATES["thm4_linf"].value(n, m, eps, d=d, D=D) == pytest.approx(hand, rel=1e-12)
    # ε ≥ 1 uses ε²∧ε = ε
    hand3 = D ** 2 * d / (n * m) * (1 + d * math.log(n) / 3.0)
    assert RATES["thm4_linf"].value(n, m, 3.0, d=d, D=D) == pytest.approx(hand3, rel=1e-12)


def test_value_is_vectorised_and_scalar_in_scalar_out():
    r = get_rate("thm1_alg1")
    v = r.value(np.array([100.0, 1000.0]), 10, 1.0)
    assert isinstance(v, np.ndarray) and v.shape == (2,)
    assert v[1] == pytest.approx(1 / (1000 * 10) * (1 + math.log(1000)))
    assert isinstance(r.value(100, 10, 1.0), float)
    assert get_rate("naive_laplace").value(10, 4, 2.0, D=1.0, sigma2=0.5) == pytest.approx(
        0.5 / 40 + 8 / (10 * 4))


def test_every_rate_is_documented_and_positive():
    kinds = {"upper", "lower", "baseline"}
    for name, r in RATES.items():
        assert isinstance(r, Rate) and r.name == name
        assert r.source.strip() and r.formula.strip() and r.condition.strip()
        assert r.kind in kinds
        assert r.log_factors.strip()
        v = r.value(np.array([2.0 ** 6, 2.0 ** 16]), 64, 0.5, d=2)
        assert np.all(np.isfinite(v)) and v[0] > 0 and v[1] >= 0, name


def test_table1_and_slips_reference_registered_rates():
    assert {row.key for row in TABLE1_ROWS} >= {"mean_bounded_l2", "mean_bounded_linf",
                                                "mean_heavy", "so", "classification",
                                                "regression"}
    for row in TABLE1_ROWS:
        assert row.upper in RATES and (row.lower is None or row.lower in RATES)
        assert RATES[row.upper].kind == "upper"
        assert row.lower is None or RATES[row.lower].kind == "lower"
        assert row.entry.strip() and row.source.strip()
    keys = [s.key for s in SLIPS]
    assert len(keys) == len(set(keys))
    assert {str(i) for i in range(1, 11)} <= set(keys) and {"A2", "L1"} <= set(keys)
    for s in SLIPS:
        assert s.where and s.what and s.harness
        assert all(name in RATES for name in s.rates), s.key


def test_expected_slope_rejects_bad_input():
    with pytest.raises(ValueError):
        expected_slope("thm1_alg1", "k", [1, 2], {"n": 10, "eps": 1})
    with pytest.raises(ValueError):
        expected_slope("thm1_alg1", "m", [4, 4], {"n": 10, "eps": 1})
    with pytest.raises(ValueError):
        expected_slope("thm1_alg1", "m", [4, 8], {"eps": 1})
    with pytest.raises(KeyError):
        expected_slope("no_such_rate", "m", [4, 8], {"n": 10, "eps": 1})
