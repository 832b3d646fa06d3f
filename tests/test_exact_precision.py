"""The exact paths' closed forms against 50-digit mpmath evaluations at extreme ratios (issue 30, item 9).

Tolerances are stated per form, as a multiple of the float64 unit roundoff ε = 2^-53·2 ≈ 2.2e-16:
a closed form written without cancellation sums or multiplies a handful of non-negative terms, each
to a few ulps, so its relative error is a small multiple of ε whatever G_est/G_inst is; one that
subtracts nearly equal numbers errs by ε times their ratio to the result, which at the ratios
here (to 2^20) is 10^6 to 10^12 times more and fails these tolerances.
"""

from __future__ import annotations

from math import gcd

import numpy as np
import pandas as pd
import pytest

mp = pytest.importorskip("mpmath").mp

from labeldp_sim.papers.table1.argmax_law import ChoiceCurve, TiltMeasure  # noqa: E402
from labeldp_sim.papers.table1.estimators import CubeMean  # noqa: E402
from labeldp_sim.papers.table1.families.geometry import (cos2_interval, x_minus_sin, cos2_overlap_square_sum,  # noqa: E402
                                                  cos2_projection_deficit)
from labeldp_sim.papers.table1.families.regression import BoundedBump  # noqa: E402
from labeldp_sim.papers.table1.families.tilt_geometry import edge_power_integral  # noqa: E402
from labeldp_sim.papers.table1.knn_exact import J, sin2  # noqa: E402
from labeldp_sim.papers.table1.law_free.matrices import ROUNDING, NegativeRiskError, checked_risks  # noqa: E402
from labeldp_sim.papers.table1.tuning import Column  # noqa: E402

EPS = np.finfo(float).eps
mp.dps = 50

# (G_dist, G_est): ratios 1 … 2^20 both ways, coprime and not, small and large counts
PAIRS = [(1, 1), (1, 2), (2, 1), (3, 7), (7, 3), (4, 6), (16, 9), (64, 65), (1000, 1001), (1000, 333),
         (1, 1025), (3, 3073), (7, 7169), (2, 65537), (1, 2 ** 15 + 1), (64, 65537), (3, 98305),
         (1, 2 ** 20), (1, 2 ** 20 + 2), (2, 2 ** 21 - 1), (1000, 1024001), (2 ** 20, 1), (2 ** 20, 1024), (999, 2)]


def _tail(delta):
    """∫_0^δ sin²(πt) dt in mpmath."""
    x = 2 * mp.pi * delta
    return (x - mp.sin(x)) / (4 * mp.pi)


def _mp_A1(Gd, Ge):
    """A₁ in mpmath from the closed form's algebra (checked against the segment sum by :func:`_mp_A1_segments`)."""
    g = gcd(Gd, Ge)
    Gd, Ge = Gd // g, Ge // g
    split = mp.mpf(0)
    if Ge >= Gd:
        r = mp.mpf(Gd) / Ge
        C = Ge if (2 * Gd) % Ge == 0 else 0
        whole = Ge * r * r / 4 + (Ge - C) * (1 - mp.cos(2 * mp.pi * r)) / (16 * mp.pi ** 2)
        for k in range(1, Gd):
            if (k * Ge) % Gd:
                j = (k * Ge) // Gd
                split += _tail(mp.mpf(k * Ge - j * Gd) / Ge) * _tail(mp.mpf((j + 1) * Gd - k * Ge) / Ge)
    else:
        whole = mp.mpf(Gd) / 4
        for j in range(1, Ge):
            if (j * Gd) % Ge:
                k = (j * Gd) // Ge
                split += _tail(mp.mpf(j * Gd - k * Ge) / Ge) * _tail(mp.mpf((k + 1) * Ge - j * Gd) / Ge)
    return (whole - 2 * split) / Gd ** 2 / g


def _mp_A1_segments(Gd, Ge):
    """A₁ = Σ over the common refinement's segments of (∫ cos² bump)², directly (O(G_dist + G_est))."""
    cuts = sorted({mp.mpf(k) / Gd for k in range(Gd + 1)} | {mp.mpf(j) / Ge for j in range(Ge + 1)})
    total = mp.mpf(0)
    for a, b in zip(cuts[:-1], cuts[1:]):
        k = int(mp.floor((a + b) / 2 * Gd))
        ua, ub = a * Gd - k - mp.mpf(1) / 2, b * Gd - k - mp.mpf(1) / 2
        total += (((ub - ua) / 2 + (mp.sin(2 * mp.pi * ub) - mp.sin(2 * mp.pi * ua)) / (4 * mp.pi)) / Gd) ** 2
    return total


@pytest.mark.parametrize("Gd, Ge", [(1, 1), (1, 2), (2, 1), (3, 7), (7, 3), (5, 12), (12, 5), (4, 6), (16, 9),
                                    (1, 40)])
def test_the_reference_closed_form_is_the_segment_sum(Gd, Ge):
    assert abs(_mp_A1(Gd, Ge) - _mp_A1_segments(Gd, Ge)) < mp.mpf(10) ** -40


def test_x_minus_sin():
    """Series below 1, the difference above: relative error ≤ 8ε (the difference loses ≤ 3 bits at x ≥ 1)."""
    x = np.r_[np.geomspace(1e-9, 1.0, 60), np.linspace(1.0, 2 * np.pi, 30)]
    got = x_minus_sin(x)
    ref = np.array([float(mp.mpf(v) - mp.sin(mp.mpf(v))) for v in x])
    assert np.max(np.abs(got / ref - 1)) < 8 * EPS


@pytest.mark.parametrize("Gd, Ge", PAIRS)
def test_overlap_square_sum_to_a_few_ulps(Gd, Ge):
    """A₁: non-negative terms, 2Σab ≤ half the first sum: 16ε relative (the old 1 − cos 2πr: 8e-7 at 2^20)."""
    ref = _mp_A1(Gd, Ge)
    assert abs(mp.mpf(cos2_overlap_square_sum(Gd, Ge)) / ref - 1) < 16 * EPS


@pytest.mark.parametrize("Gd, Ge", PAIRS)
def test_projection_deficit_to_a_few_ulps(Gd, Ge):
    """D = 3/8 − G_est A₁ as non-negative terms: 16ε relative, where 3/8 − G_est·A₁ in float64 is off by
    ~ε (G_est/G_dist)² relative (1e-4 at 2^20)."""
    ref = mp.mpf(3) / 8 - Ge * _mp_A1(Gd, Ge)
    assert abs(mp.mpf(cos2_projection_deficit(Gd, Ge)) / ref - 1) < 16 * EPS


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("Gd, Ge", [(1, 2 ** 20), (3, 98305), (64, 65), (1000, 333), (2 ** 20, 1024)])
def test_sign_averaged_bias_to_a_few_ulps(d, Gd, Ge):
    """(L h^β)² ((3/8)^d − (G_est A₁)^d) from the deficit: 32ε relative (d terms of the factorised difference)."""
    family = BoundedBump(d=d, beta=1.0, T=1.0, L=1.0)
    ref = (mp.mpf(Gd) ** -2) * ((mp.mpf(3) / 8) ** d - (Ge * _mp_A1(Gd, Ge)) ** d)
    assert abs(mp.mpf(family.sign_averaged_bias(Gd, Ge)) / ref - 1) < 32 * EPS


@pytest.mark.parametrize("N", [10 ** 12, 10 ** 15])
def test_cube_mean_exact_risk_at_extreme_ratios(N):
    """E (9) of the non-private cube mean on G_inst = 1 … 64 with G_est to 2^20 (issue 30: negative before).

    Reference: (∫η² − Π) in mpmath, plus (1 − P)Π + E[1/n](T² − Π) with the count law's P, E[1/n].
    The estimator still forms ∫η² − Π from two floats, which leaves ~8ε ∫η² absolutely; so the
    tolerance is 16ε ∫η² + 1e-13 relative (the count law's quadrature is good to 3e-10 of the
    variance term, but the same P, E[1/n] enter both sides).
    """
    from labeldp_sim.privacy.count_law import count_law
    from labeldp_sim.privacy.protocols import NoPrivacy
    family, est, mech = BoundedBump(d=1, beta=1.0, T=1.0, L=1.0), CubeMean(), NoPrivacy()
    point = type("P", (), {"d": 1, "N": N})()
    for G in (1, 3, 64):
        tunings = [G, 2 * G + 1, 1024 * G + 1, 2 ** 20 + 1]
        got = est.expected_risks(family, G, point, [Column(t, mech, 0, 0, None) for t in tunings])
        for G_est, risk in zip(tunings, got):
            law = count_law(N, 1.0 / G_est)
            height2 = mp.mpf(G) ** -2
            proj = height2 * G_est * _mp_A1(G, G_est)
            ref = (height2 * mp.mpf(3) / 8 - proj) + (1 - mp.mpf(law.p_occupied)) * proj \
                + mp.mpf(law.inverse) * (1 - proj)
            assert risk >= 0
            assert abs(mp.mpf(risk) - ref) <= 16 * EPS * height2 * mp.mpf(3) / 8 + 1e-13 * ref


def _mp_cos2(lo, hi):
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    return (hi - lo) / 2 + (mp.sin(2 * mp.pi * hi) - mp.sin(2 * mp.pi * lo)) / (4 * mp.pi)


def test_cos2_piece_integrals_near_edges_and_centre():
    """∫ cos² over pieces of length 2^-20 … 1 anywhere in the bump, from exact (dyadic) ends: 16ε relative.

    (A difference of the antiderivative at the two ends keeps only ε/2 absolutely: ~1 relative for a
    piece of 2^-20 at the edge, whose integral is ~ (π 2^-20)² 2^-20/3.)
    """
    ends = []
    for w in 2.0 ** -np.arange(0, 21, 4):
        for lo in (-0.5, -0.5 + w, -0.25, -w / 2, 0.0, 0.25, 0.5 - 2 * w):
            if -0.5 <= lo and lo + w <= 0.5:
                ends.append((lo, lo + w))
    lo, hi = np.array(ends).T
    got = cos2_interval(lo, hi)
    ref = np.array([float(_mp_cos2(a, b)) for a, b in ends])
    assert np.max(np.abs(got / ref - 1)) < 16 * EPS


def test_linear_edge_piece_integrals():
    """∫ (½ − |u|)^β over short pieces near u = 0 (where the antiderivative's two ends nearly agree),
    via expm1/log1p: 16ε relative for β = 1, 0.5, 2.5 (the old form: ε/(piece length))."""
    for beta in (1.0, 0.5, 2.5):
        pieces = [(a, a + w) for w in 2.0 ** -np.arange(1, 41, 6)
                  for a in (0.0, 2.0 ** -30, -w, -w / 2, 0.5 - w) if a + w <= 0.5]
        a, b = np.array(pieces).T
        got = edge_power_integral(a, b, beta)
        f = lambda u: (mp.mpf(1) / 2 - abs(u)) ** beta  # noqa: E731
        ref = np.array([float(mp.quad(f, [mp.mpf(x), 0, mp.mpf(y)] if x < 0 < y else [mp.mpf(x), mp.mpf(y)]))
                        for x, y in pieces])
        assert np.max(np.abs(got / ref - 1)) < 16 * EPS, beta


def test_knn_one_axis_integrals_near_column_edges():
    """knn_exact's ∫ sin² and sin² itself at points just below a column edge: 16ε relative."""
    t = np.array([1 - 2.0 ** -k for k in (3, 10, 20, 30)] + [5 - 2.0 ** -25, 2.0 ** -25])
    ref = np.array([float(mp.sin(mp.pi * mp.mpf(v)) ** 2) for v in t])
    assert np.max(np.abs(sin2(t) / ref - 1)) < 16 * EPS
    for w in (2.0 ** -10, 2.0 ** -20):
        for b in (1.0, 3.0, 1.0 - w):
            a = b - w
            ma, mb = mp.mpf(a), mp.mpf(b)
            ref = (mb - ma) / 2 - (mp.sin(2 * mp.pi * mb) - mp.sin(2 * mp.pi * ma)) / (4 * mp.pi)
            assert abs(mp.mpf(float(J(a, b))) / ref - 1) < 16 * EPS


def test_clipped_normal_moments_far_in_the_tails():
    """E clip(Z, ±T), E clip(Z, ±T)² for Z ~ N(μ, s²) with (±T − μ)/s out to ±90: to 4ε (T + |μ|)² absolutely
    (sums of terms of that size; the tails come from Φ(−β), not 1 − Φ(β))."""
    from labeldp_sim.papers.userlevel.exact import clipped_normal_moments
    T = 1.0
    for mu, s in ((0.0, 0.1), (0.9, 0.01), (-3.0, 0.05), (1.2, 0.02)):
        first, second = clipped_normal_moments(mu, s, T)
        Z = lambda z: mp.npdf(z, mu, s)  # noqa: E731
        lo, hi = mp.mpf(-T), mp.mpf(T)
        tails = mp.ncdf(lo, mu, s), 1 - mp.ncdf(hi, mu, s)
        ref1 = -T * tails[0] + T * tails[1] + mp.quad(lambda z: z * Z(z), [lo, mu, hi])
        ref2 = T * T * (tails[0] + tails[1]) + mp.quad(lambda z: z * z * Z(z), [lo, mu, hi])
        tol = 4 * EPS * (T + abs(mu)) ** 2
        assert abs(mp.mpf(float(first)) - ref1) <= tol and abs(mp.mpf(float(second)) - ref2) <= tol


def _row(value, G_inst=1, instance="grid", G_est=4):
    return {"cell": "reg_nonprivate", "d": 1, "N": 10 ** 15, "eps": 1.0, "replicate": 0, "instance": instance,
            "G_inst": G_inst, "tuning": "oracle", "G_est": G_est, "k": -1, "T": np.nan, "excess_risk": value}


def test_negative_entries_within_the_rounding_bound_are_zero_beyond_it_an_error():
    rows = pd.DataFrame([_row(0.3, G_est=1), _row(1e-9, G_est=2), _row(-0.3 * ROUNDING / 2, G_est=3)])
    assert list(checked_risks(rows)) == [0.3, 1e-9, 0.0]
    rows.loc[2, "excess_risk"] = -3.1e-7  # the size issue 30 measured
    with pytest.raises(NegativeRiskError, match=r"-3\.1e-07 at cell=reg_nonprivate, d=1, N=1000000000000000.*G_est=3"):
        checked_risks(rows)


def test_the_argmax_risk_is_zero_within_its_error_and_an_error_beyond():
    """½ (mass − ∫F dν) a hair below 0 (interpolation of F, not rounding) is 0; far below, an error."""
    class Flat(ChoiceCurve):
        def __init__(self, slack):
            self.slack, self._cache = slack, {}

        def integral(self, measure):
            return measure.mass + self.slack

        def error(self, measure):
            return 1e-12

    measure = TiltMeasure(np.zeros(0, np.int64), np.zeros((0, 8)), 0.5)
    assert Flat(1e-13).expected_risk(measure) == 0.0
    Flat.law = type("L", (), {"N": 10})()
    with pytest.raises(ValueError, match="negative expected risk"):
        Flat(1e-6).expected_risk(measure)


def test_the_count_law_quadrature_uses_scipy_s_nodes_computed_once_and_kept_read_only():
    from scipy import special

    from labeldp_sim.privacy import count_law

    law = count_law.CountLaw(10**12, 0.25)
    assert not law.summed  # Nμ far above the summation window: the quadrature branch
    x, w = special.roots_hermitenorm(count_law.NODES)
    n = law.mean + np.sqrt(law.variance) * x
    for f in (lambda n: 1.0 / n, lambda n: n / np.maximum(n, law.mean / 4)):
        # the same operations on the same nodes: equal to the last bit
        assert law.expect(f) == float(np.sum(w * f(n)) / np.sqrt(2 * np.pi))
    with pytest.raises(ValueError):  # no caller can alter the nodes every later law reads
        count_law._HERMITE_X[0] = 0.0
