r"""Theory registry of papers/003 (*Learning with User-Level Local Differential Privacy*).

Every rate the paper states is kept here with the formula as the paper (or
``SPEC-userlevel.md``) writes it, its source (Table 1 row, theorem, equation
number in ``papers/003_2a8dbad7786cac1d.txt``), the condition it is stated
under, the log factors its full form contains and the slips that touch it.

The harness compares measured log-log slopes with :func:`expected_slope`: the
ordinary least-squares slope of ``log rate.value`` on ``log axis`` over the
*fitted grid*, using the FULL stated rate (log factors such as the ln n of (2)
included) with all constants set to 1.  Table 1's Õ-exponents are the limits
of these slopes; over a finite grid the full forms can differ from them (e.g.
(2) has an n-slope of −1 + 1/(ε² + ln n) rather than −1).

Notation: ``ε²∧ε = min(ε², ε)``, ``ε²∧1 = min(ε², 1)``, ``a ∨ b = max(a, b)``.
In (4), (12), (13) the bracket ``[a ∨ b + c]`` is read as ``(a ∨ b) + c``.

Public API
----------
Rate (:mod:`.rate`), RATES, get_rate, expected_slope; Slip, SLIPS (:mod:`.slips`) and Table1Row,
TABLE1_ROWS (:mod:`.table1_rows`) are re-exported from their own modules.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from labeldp_sim.papers.userlevel.rate import Rate
from labeldp_sim.papers.userlevel.slips import SLIPS, Slip
from labeldp_sim.papers.userlevel.table1_rows import TABLE1_ROWS, Table1Row

__all__ = ["Rate", "RATES", "get_rate", "Slip", "SLIPS", "Table1Row", "TABLE1_ROWS",
           "expected_slope", "AXES"]

AXES = ("n", "m", "eps", "d")


# --------------------------------------------------------------------------- helpers

def _e2e(eps):
    """ε² ∧ ε, the privacy factor of the multi-dimensional rates (8), (9), (13), (17), (19), (21)."""
    return np.minimum(np.square(eps), eps)


def _e21(eps):
    """ε² ∧ 1, the privacy factor of Theorem 2 (3) and Proposition 1's P1b."""
    return np.minimum(np.square(eps), 1.0)


# --------------------------------------------------------------------------- rate formulas
# Each takes (n, m, eps, d, p, D, M_p, beta, gamma, sigma2); unused ones are ignored.

def _thm1(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 / (n * m) * (1.0 + np.log(n) / eps ** 2)


def _alg1_constants(n, m, eps, d, p, D, M, b, g, s2):
    # (55) with Theorem 1's tuning: (3h + 2Δ)² = D²(12 + 2√ln n)²/m, Var Y = σ²/m
    s2 = D ** 2 if s2 is None else s2
    return 2.0 / (n * m) * (s2 + 2.0 * D ** 2 * (12.0 + 2.0 * np.sqrt(np.log(n))) ** 2 / eps ** 2)


def _alg2_constants(n, m, eps, d, p, D, M, b, g, s2):
    # Algorithm 2 as Theorem 4 runs it: G groups of n/G users, each coordinate by Algorithm 1
    # at ε_c; (55) per coordinate, summed over the d coordinates (D is the sup-norm bound)
    eps = np.asarray(eps, dtype=float)
    small = eps < 1
    eps_c = np.where(small, eps, 1.0)
    groups = np.where(small, d, np.ceil(d / np.maximum(np.floor(eps), 1.0)))
    return d * _alg1_constants(n / groups, m, eps_c, 1, p, D, M, b, g, s2)


def _kashin_constants(n, m, eps, d, p, D, M, b, g, s2):
    # Algorithm 2 on the 2d Kashin coefficients, whose sup norm is K·D/√d (K = 2.7, mean.KASHIN_K);
    # μ̂ = Uᵀθ̂ with orthonormal columns keeps about half of the coefficients' squared error
    return 0.5 * _alg2_constants(n, m, eps, 2 * d, p, 2.7 * D / np.sqrt(d), M, b, g, s2)


def _thm2(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 / (n * m * _e21(eps))


def _thm2_fixed_n(n, m, eps, d, p, D, M, b, g, s2):
    return 0.25 * D ** 2 * np.exp(-n * eps * np.expm1(eps)) + 0.0 * m


def _heavy_1d(n, m, eps, d, p, D, M, b, g, s2):
    first = np.log(m) / (m * n * eps ** 2)
    spike = (m ** 2 * n * eps ** 2) ** (-(1.0 - 1.0 / p))
    return M ** (2.0 / p) * (np.maximum(first, spike) + 1.0 / (m * n))


def _thm4(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 * d / (n * m) * (1.0 + d * np.log(n) / _e2e(eps))


def _thm5(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 / (n * m) * (1.0 + d * np.log(n) / _e2e(eps))


def _thm6(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 * d / (n * m * _e2e(eps))


def _thm7(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 * d ** 2 / (n * m * _e2e(eps))


def _rem2_coord(n, m, eps, d, p, D, M, b, g, s2):
    first = d ** 2 * np.log(m) / (m * n * _e2e(eps))
    spike = (d / (m ** 2 * n * _e2e(eps))) ** (1.0 - 1.0 / p)
    return M ** (2.0 / p) * (np.maximum(first, spike) + d / (m * n))


def _rem2_coord_summed(n, m, eps, d, p, D, M, b, g, s2):
    first = d ** 2 * np.log(m) / (m * n * _e2e(eps))
    spike = d * (d / (m ** 2 * n * _e2e(eps))) ** (1.0 - 1.0 / p)
    return M ** (2.0 / p) * (np.maximum(first, spike) + d / (m * n))


def _rem2_l2(n, m, eps, d, p, D, M, b, g, s2):
    first = d * np.log(m) / (m * n * _e2e(eps))
    spike = (d / (m ** 2 * n * _e2e(eps))) ** (1.0 - 1.0 / p)
    return M ** (2.0 / p) * (np.maximum(first, spike) + 1.0 / (m * n))


def _item_heavy(n, m, eps, d, p, D, M, b, g, s2):
    return M ** (2.0 / p) * (d / (n * m * _e2e(eps))) ** (1.0 - 1.0 / p)


def _item_bounded(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 * d / (n * m * _e2e(eps))


def _item_linf(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 * d ** 2 / (n * m * _e2e(eps))


def _item_so(n, m, eps, d, p, D, M, b, g, s2):
    return _thm8(n * m, 1.0, eps, d, p, D, M, b, g, s2)


def _item_cls(n, m, eps, d, p, D, M, b, g, s2):
    return ((n * m * _e2e(eps)) ** (-b * (1 + g) / (2 * (d + b)))
            + (n * m) ** (-b * (1 + g) / (2 * b + d)))


def _item_reg(n, m, eps, d, p, D, M, b, g, s2):
    return (n * m * _e2e(eps)) ** (-b / (d + b)) + (n * m) ** (-2 * b / (2 * b + d))


def _p1a(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 * m / (n * eps ** 2) + D ** 2 / (n * m)


def _p1b(n, m, eps, d, p, D, M, b, g, s2):
    return D ** 2 / (n * _e21(eps)) + 0.0 * m


def _naive(n, m, eps, d, p, D, M, b, g, s2):
    return s2 / (n * m) + 8.0 * D ** 2 / (n * eps ** 2)


def _thm8(n, m, eps, d, p, D, M, b, g, s2):
    return D * np.sqrt(np.log(n) / (n * m) * (1.0 + d * np.log(n) / _e2e(eps)))


def _thm9(n, m, eps, d, p, D, M, b, g, s2):
    private = (m * n * _e2e(eps)) ** (-b * (1 + g) / (2 * (d + b))) * np.log(n) ** (1 + g)
    nonprivate = (n * m / np.log(n)) ** (-b * (1 + g) / (2 * b + d))
    return private + nonprivate


def _thm10(n, m, eps, d, p, D, M, b, g, s2):
    return ((n * m * eps ** 2) ** (-b * (1 + g) / (2 * (d + b)))
            + (m * n) ** (-b * (1 + g) / (2 * b + d)))


def _thm11(n, m, eps, d, p, D, M, b, g, s2):
    return ((m * n * _e2e(eps) / np.log(n) ** 2) ** (-b / (d + b))
            + (m * n / np.log(n)) ** (-2 * b / (2 * b + d)))


def _thm12(n, m, eps, d, p, D, M, b, g, s2):
    return (n * m * eps ** 2) ** (-b / (d + b)) + (m * n) ** (-2 * b / (2 * b + d))


def _spike(n, m, eps, d, p, D, M, b, g, s2):
    return M ** (2.0 / p) * (m ** 2 * n * eps ** 2) ** (-(1.0 - 1.0 / p))


_MSE = "E||μ̂−μ||² (mean squared error)"

_RATE_LIST = [
    Rate("thm1_alg1",
         "D²/(nm)·(1 + ln n/ε²)",
         "Theorem 1, eq. (2) (Algorithm 1)",
         "upper",
         "d = 1, X ∈ [−D, D]; n(ε²∧1) ≥ c1 ln m; h = 4D/√m, Δ = D√(ln n/m); all ε",
         "ln n in the privacy term (from Δ = D√(ln n/m))",
         "Slip A1 (Algorithm 1 step 5 prints argmax_k x_k, read s_k). Stage I fails w.p. "
         "≤ √m·e^{−c0 n(ε²∧1)} (Lemma 2), so the rate needs group sizes with n(ε²∧1) ≳ 1000 "
         "in practice (SPEC §7).",
         _MSE, _thm1),
    Rate("alg1_constants",
         "(2/n)·(σ²/m + 2((3h+2Δ)/ε)²) = 2D²/(nm)·(1 + 2(12 + 2√ln n)²/ε²)",
         "Theorem 1's proof, eq. (55) (MSE given stage-I success), with Theorem 1's h and Δ",
         "upper",
         "as (2); σ² = Var X ≤ D²",
         "√ln n inside the square (from Δ = D√(ln n/m)); (2) keeps it as ln n with unit constants",
         "(2) is (55) up to constants, but the constants set how much of ln n shows over a finite "
         "grid: at ε = 1, n = 2^13..2^19 (55)'s local n-slope is −0.97, (2)'s with unit constants "
         "−0.92. The harness fits against (55) and reports (2) beside it.",
         _MSE, _alg1_constants),
    Rate("alg2_constants",
         "d·(2G/n)·(D²/m + 2((3h+2Δ_G)/ε_c)²), G = d (ε < 1) or ⌈d/⌊ε⌋⌋, ε_c = ε ∧ 1",
         "Theorem 4's proof: (55) per coordinate with Theorem 1's tuning in groups of n/G users",
         "upper",
         "ℓ∞ support, X ∈ [−D, D]^d; ε < d ln n",
         "√ln(n/G) inside the square",
         "The constant form of (8) for the ε ≤ d ln n regimes the harness runs.",
         _MSE, _alg2_constants),
    Rate("kashin_constants",
         "½·(2d)·(2G/n)·(K²D²/(dm) + 2((3h+2Δ_G)/ε_c)²), h and Δ for the sup norm KD/√d, K = 2.7",
         "Theorem 5's proof: Algorithm 2's constant form (alg2_constants) on the 2d Kashin coefficients",
         "upper",
         "ℓ2 support, ||X||₂ ≤ D; ε < 2d ln n",
         "√ln(n/G) inside the square",
         "The constant form of (9); its local slopes differ from (9)'s unit-constant form as (55)'s "
         "differ from (2)'s. The factor ½ (Uᵀ of orthonormal columns) does not move a slope.",
         _MSE, _kashin_constants),
    Rate("thm2_lower",
         "D²/(nm(ε²∧1))",
         "Theorem 2, eq. (3)",
         "lower",
         "d = 1, distributions on [−D, D]; all user-level ε-LDP mechanisms (sequentially "
         "interactive)",
         "none",
         "Matches (2) up to the ln n factor for ε ≤ 1. Hard instance: X = ±D, "
         "P(+D) = (1+sv)/2, s = min(½, (nm(ε²∧1))^{−1/2}) (SPEC §6).",
         _MSE, _thm2),
    Rate("thm2_fixed_n",
         "(1/4)·D²·e^{−nε(e^ε−1)}",
         "Theorem 2, statement after eq. (3)",
         "lower",
         "n fixed, m → ∞ (the MSE does not vanish in m)",
         "none",
         "Does not depend on m: explains why n(ε²∧1) ≳ ln m is needed.",
         _MSE, _thm2_fixed_n),
    Rate("thm3_heavy",
         "M_p^{2/p}[ln m/(mnε²) ∨ (m²nε²)^{−(1−1/p)} + 1/(mn)]",
         "Theorem 3, eq. (4)",
         "upper",
         "d = 1, E|X|^p ≤ M_p, p ≥ 2; n(ε²∧1) ≥ c1 ln m; Y_i = clip(X̄_i, ±D) with "
         "Δ ≲ D ≲ e^{c2 nε²} (86); Δ from (84); h unspecified (harness: 4M_p^{1/p}/√m)",
         "ln m in the first (Gaussian-regime) term",
         "Read as (a ∨ b) + c. Slips 6 ((84)/(85) carry an extra M_p) and 7 (Sec. 4.1's "
         "item-level comparison). Written with ε², not ε²∧ε; the phase transition is "
         "ln m/(mnε²) vs (m²nε²)^{−(1−1/p)}, boundary m* = (nε²)^{1/(p−2)} up to constants "
         "(SPEC §7).",
         _MSE, _heavy_1d),
    Rate("thm4_linf",
         "D²d/(nm)·(1 + d ln n/(ε²∧ε))",
         "Theorem 4, eq. (8) (Algorithm 2, ℓ∞ support)",
         "upper",
         "X ∈ X_∞ = {||u||∞ ≤ D}; n(ε²∧1) ≥ c1 d ln m; regimes ε < 1, 1 ≤ ε < d ln n, "
         "ε ≥ d ln n ((5)–(7))",
         "ln n in the privacy term",
         "Slip A2 (loop bound ⌊d/ε⌋ should be ⌈d/ε⌉; medium regime uses ⌊ε⌋ instances per "
         "group). d-exponent +2 where the privacy term dominates (ε small).",
         _MSE, _thm4),
    Rate("thm5_l2",
         "D²/(nm)·(1 + d ln n/(ε²∧ε))",
         "Theorem 5, eq. (9) (Algorithm 2 on Kashin coefficients, ℓ2 support)",
         "upper",
         "X ∈ X_2 = {||u||₂ ≤ D}; n(ε²∧1) ≥ c1 d ln m",
         "ln n in the privacy term",
         "Slip L1 (Lemma 1 is false as a linear map; harness uses the nonlinear "
         "Lyubarskii–Vershynin coefficients). d-exponent +1 where the privacy term "
         "dominates.",
         _MSE, _thm5),
    Rate("thm6_lower",
         "D²d/(nm(ε²∧ε))",
         "Theorem 6, eq. (10)",
         "lower",
         "support X_p = {||u||_p ≤ D}, p ∈ [1, 2]",
         "none",
         "Slip 1: the proof gives D²d/(mn(e^ε−1)²) (cf. (111)), valid only for ε ≲ 1.",
         _MSE, _thm6),
    Rate("thm7_lower",
         "D²d²/(nm(ε²∧ε))",
         "Theorem 7, eq. (11)",
         "lower",
         "support X_∞ = {||u||∞ ≤ D}",
         "none",
         "Slip 1: the proof's (111) reads D²d²/(mn(e^ε−1)²) + D²/(mn), valid only for ε ≲ 1.",
         _MSE, _thm7),
    Rate("rem2_heavy_coord",
         "M_p^{2/p}[d² ln m/(mn(ε²∧ε)) ∨ (d/(m²n(ε²∧ε)))^{1−1/p} + d/(mn)]",
         "Remark 2, eq. (12) (= (116))",
         "upper",
         "coordinatewise moments E|X_k|^p ≤ M_p for all k; nε² ≥ c1 d ln m",
         "ln m in the first term",
         "Slip R2: with coordinatewise moments the second term lacks a factor d "
         "(summing d coordinates of (115)). Slip 6 on (112)/(114). Value is the printed form.",
         _MSE, _rem2_coord),
    Rate("rem2_heavy_coord_summed",
         "M_p^{2/p}[d² ln m/(mn(ε²∧ε)) ∨ d·(d/(m²n(ε²∧ε)))^{1−1/p} + d/(mn)]",
         "Remark 2, eq. (12) with slip R2 corrected: Theorem 3's (4) summed over the d coordinates of "
         "Algorithm 2 (n/d users each at ε < 1)",
         "upper",
         "coordinatewise moments E|X_k|^p ≤ M_p for all k; nε² ≥ c1 d ln m",
         "ln m in the first term",
         "What Appendix B.4's argument gives: the printed (12) (rem2_heavy_coord) drops the factor d of the "
         "second term, so its d-exponent is 1 − 1/p where the sum has 2 − 1/p.",
         _MSE, _rem2_coord_summed),
    Rate("rem2_heavy_l2",
         "M_p^{2/p}[d ln m/(mn(ε²∧ε)) ∨ (d/(m²n(ε²∧ε)))^{1−1/p} + 1/(mn)]",
         "Remark 2, eq. (13) (= (121)); Table 1 row 'Mean, heavy-tail'",
         "upper",
         "E||X||₂^p ≤ M_p; nε² ≥ c1 d ln m (Remark 2; Table 1 writes n(ε²∧1) ≳ d ln m)",
         "ln m in the first term",
         "Read as (a ∨ b) + c. No lower bound in the paper (the spike bound of SPEC §6 is "
         "d = 1 only).",
         _MSE, _rem2_l2),
    Rate("item_heavy",
         "(d/(nm(ε²∧ε)))^{1−1/p}",
         "Table 1, item-level column, row 'Mean, heavy-tail' (Duchi et al. 2018; garbled in "
         "the extraction, reconstructed in SPEC §4)",
         "baseline",
         "item-level ε-LDP on nm samples, E|X|^p ≤ M_p",
         "none",
         "Slip 7: Sec. 4.1 writes this comparison as '(mε²)^{1−1/p}'. m-slope −(1−1/p) "
         "(−½ at p = 2).",
         _MSE, _item_heavy),
    Rate("item_bounded",
         "D²d/(nm(ε²∧ε))",
         "Table 1, item-level column, row 'Mean, bounded' (nm samples; Asi et al. 2022); Sec. 4.2 "
         "(item-level ℓ2 rate d/(n(ε²∧ε)) with n samples, Duchi et al. 2018)",
         "baseline",
         "item-level ε-LDP on every one of the nm samples (each sample its own privacy unit; a user's "
         "m reports compose to user-level mε), ℓ2 support ||X||₂ ≤ D; non-private D²/(nm) omitted "
         "as in Table 1",
         "none",
         "The column Algorithm 1 (and Theorem 5) match up to ln n: 'same' as the user-level rate. "
         "In 1-D with ε ≤ 1 it equals thm2_lower. Attained by the Laplace estimator item_ldp "
         "(clip(X, ±D) + Lap(2D/ε) per sample, exact MSE (Var X + 8D²/ε²)/(nm) with D = max|x|, "
         "1-D); per-coordinate Laplace is d² off this rate for d > 1. Not P1a (p1a_item_level): "
         "P1a runs every sample at ε/m.",
         _MSE, _item_bounded),
    Rate("item_linf",
         "D²d²/(nm(ε²∧ε))",
         "Table 1, item-level column, row 'Mean, bounded' read for ℓ∞ support (Sec. 4.2: item-level "
         "d²/(n(ε²∧ε)) with n samples, Duchi et al. 2018), N = nm samples",
         "baseline",
         "item-level ε-LDP on the nm samples (Algorithm 2 on N = nm users of one sample), ℓ∞ support "
         "||X||_∞ ≤ D; non-private D²d/(nm) omitted",
         "none",
         "Table 1 prints the ℓ2 row; ℓ∞ adds ×d as for the user-level rate (Theorems 4 and 7).",
         _MSE, _item_linf),
    Rate("item_so",
         "D√(ln N/N·(1 + d ln N/(ε²∧ε))), N = nm",
         "Table 1, item-level column, row 'Stochastic optimization' (Duchi et al. 2013: √(d/(Nε²)) on N "
         "samples, Sec. 5 after Theorem 8); the form is Theorem 8 (17) with N = nm users of one sample",
         "upper",
         "item-level ε-LDP on the nm samples: Algorithm 3 run on N = nm users with m = 1 (each report "
         "privatizes one sample); Assumption 1",
         "ln N from t0 ~ ln N groups and ln N in the privacy term (Duchi et al.'s rate has none)",
         "Table 1's column reads 'same' as the user-level rate: Theorem 8 at (n, m) and at (nm, 1) differ only "
         "in ln n against ln(nm).",
         "E||θ̂−θ*||₂ (unsquared)", _item_so),
    Rate("item_cls",
         "(N(ε²∧ε))^{−β(1+γ)/(2(d+β))} + N^{−β(1+γ)/(2β+d)}, N = nm",
         "Table 1, item-level column, row 'Classification' (Berrett & Butucea 2019, N = nm samples; Sec. 6 "
         "after Theorem 10)",
         "baseline",
         "item-level ε-LDP on the nm samples (Algorithm 4 on N = nm users of one sample); Assumption 2",
         "none",
         "Table 1's 'same': Theorem 10's lower bound (20) depends on n and m through nm only.",
         "R − R* (excess classification risk)", _item_cls),
    Rate("item_reg",
         "(N(ε²∧ε))^{−β/(d+β)} + N^{−2β/(2β+d)}, N = nm",
         "Table 1, item-level column, row 'Regression' (Berrett et al. 2021, N = nm samples)",
         "baseline",
         "item-level ε-LDP on the nm samples (Algorithm 5 on N = nm users of one sample); assumptions of "
         "Theorem 11",
         "none",
         "Table 1's 'same': Theorem 12's lower bound (22) depends on n and m through nm only.",
         "E∫(η̂−η)²f (regression risk)", _item_reg),
    Rate("p1a_item_level",
         "D²m/(nε²) + D²/(nm)",
         "Proposition 1 fact (1) (group privacy) — rate stated in Sec. 4.1 after Theorem 1",
         "baseline",
         "item-level (ε/m)-LDP on every sample, e.g. X_ij + Lap(2Dm/ε); d = 1; ε/m ≲ 1",
         "none",
         "Slip P1: Proposition 1's statement (1) is missing in the extraction (reconstructed "
         "in SPEC §3). m-slope → +1 for large m.",
         _MSE, _p1a),
    Rate("p1b_one_sample",
         "D²/(n(ε²∧1))",
         "Proposition 1 fact (2) (one sample per user) — rate stated in Sec. 4.1 after "
         "Theorem 1",
         "baseline",
         "one random sample per user at item-level ε-LDP; d = 1",
         "none",
         "Independent of m (m-slope 0).",
         _MSE, _p1b),
    Rate("naive_laplace",
         "σ²/(nm) + 8D²/(nε²)",
         "SPEC-userlevel §3 (naive user mean + Laplace; not in the paper)",
         "baseline",
         "Z_i = Y_i + Lap(2D/ε), μ̂ = mean Z_i; d = 1; σ² = Var X (default D²)",
         "none",
         "Exact MSE of the naive mechanism (Var Lap(b) = 2b²). m-slope → 0; Algorithm 1 "
         "beats it only for m ≳ 170 at the SPEC's constants (SPEC §7).",
         _MSE, _naive),
    Rate("thm8_so",
         "D√(ln n/(nm)·(1 + d ln n/(ε²∧ε)))",
         "Theorem 8, eq. (17) (Algorithm 3; from (16) with t0 ~ ln n)",
         "upper",
         "Assumption 1 (G-smooth, ||∇l|| ≤ D, γ-strongly convex), η ≤ 1/G, "
         "c_T ln n ≤ t0 ≤ C_T ln n, n(ε²∧1) ≳ d ln n ln m",
         "ln n from t0 groups and ln n in the privacy term (ln² n inside the root for "
         "small ε)",
         "Unsquared error E||θ̂−θ*||₂. Slip 2: the intro's SO rate d/(nm(ε²∧ε)) has no square "
         "root and no ln² n. Harness t0 = ⌈ln(nm(ε²∧ε))/(ηγ)⌉ (SPEC §5).",
         "E||θ̂−θ*||₂ (unsquared)", _thm8),
    Rate("thm9_cls",
         "(mn(ε²∧ε))^{−β(1+γ)/(2(d+β))}·ln^{1+γ} n + (nm/ln n)^{−β(1+γ)/(2β+d)}",
         "Theorem 9, eq. (19) (Algorithm 4)",
         "upper",
         "Assumption 2 (Tsybakov γ, Hölder β, f ≥ f_L); n(ε²∧1) ≥ c2(ln m + ln n)",
         "ln^{1+γ} n on the private term; ln n inside the non-private term",
         "Slips 3 (text after Thm 9: exponent 2β/(2β+d) should be β(1+γ)/(2β+d)), 4, 5 "
         "(group count K ignored; condition has no d), 10 (β ∈ (0, 1]).",
         "R − R* (excess classification risk)", _thm9),
    Rate("thm10_lower",
         "(nmε²)^{−β(1+γ)/(2(d+β))} + (mn)^{−β(1+γ)/(2β+d)}",
         "Theorem 10, eq. (20)",
         "lower",
         "small ε; Assumption 2",
         "none",
         "Slip 9 (η = 0 cubes violate Assumption 2(a); needs γβ ≤ d).",
         "R − R* (excess classification risk)", _thm10),
    Rate("thm11_reg",
         "(mn(ε²∧ε)/ln²n)^{−β/(d+β)} + (mn/ln n)^{−2β/(2β+d)}",
         "Theorem 11, eq. (21) (Algorithm 5)",
         "upper",
         "Assumption 2(b),(c); |Y| < T; n(ε²∧1) ≥ 2c2(ln m + ln n)",
         "ln² n in the private term; ln n in the non-private term",
         "Slips 5 (group count 2K ignored), 10 (proved only for ε ≤ 1; β ∈ (0, 1]).",
         "E∫(η̂−η)²f (regression risk)", _thm11),
    Rate("thm12_lower",
         "(nmε²)^{−β/(d+β)} + (mn)^{−2β/(2β+d)}",
         "Theorem 12, eq. (22)",
         "lower",
         "small ε; assumptions of Theorem 11",
         "none",
         "Slip 8 ((230)–(232) should read l ~ (nmε²)^{−1/(2(d+β))}, R ≳ l^{2β}).",
         "E∫(η̂−η)²f (regression risk)", _thm12),
    Rate("spike_lower",
         "M_p^{2/p}(m²nε²)^{−(1−1/p)}",
         "SPEC-userlevel §6 (heavy-tail spike instance; derived for the notes, not in the "
         "paper)",
         "lower",
         "d = 1; X = a w.p. δ else 0, δ = 1/(m√(nε²)), a = (M_p/δ)^{1/p}; small ε",
         "none",
         "Matches the second term of (4): slopes (n, m) = (−(1−1/p), −2(1−1/p)).",
         _MSE, _spike),
]

RATES: dict[str, Rate] = {r.name: r for r in _RATE_LIST}
"""Every stated rate, by name."""


def get_rate(name: str) -> Rate:
    """The :class:`Rate` named ``name`` (KeyError lists the names)."""
    try:
        return RATES[name]
    except KeyError:
        raise KeyError(f"unknown rate {name!r}; known: {sorted(RATES)}") from None


# --------------------------------------------------------------------------- slopes

# The arguments of Rate.value a family can set: a family parameter of one of these names is the
# rate's argument (Spike's p and M_p, Thm10Hard's beta and gamma, every mean family's D).
FAMILY_RATE_ARGUMENTS = ("p", "D", "M_p", "beta", "gamma", "sigma2")


def rate_arguments(family_params: Mapping, **point) -> dict:
    """The arguments of :meth:`Rate.value` at ``point`` (``n``, ``m``, ``eps``, ``d``) for a family
    built with ``family_params``: every family parameter the rates take, none dropped.

    Examples
    --------
    >>> rate_arguments({"p": 4.0, "M_p": 2.0, "name": "x"}, n=10, d=1)
    {'n': 10, 'd': 1, 'p': 4.0, 'M_p': 2.0}
    """
    return {**point, **{k: float(v) for k, v in family_params.items() if k in FAMILY_RATE_ARGUMENTS}}


def expected_slope(rate, axis: str, values: Sequence[float],
                   fixed: Mapping[str, float] | None = None) -> float:
    r"""Local slope of the FULL stated rate over the fitted range.

    The OLS slope of ``log rate.value(...)`` on ``log x`` over the grid ``values``
    of ``axis``, the other arguments taken from ``fixed``.  This is what a
    measured log-log slope over the same grid is compared to: log factors
    (e.g. the ln n of (2)) and secondary terms (e.g. the 1/(nm) of (8)) bend the
    full form away from Table 1's limit exponent.

    Parameters
    ----------
    rate : Rate or str
        A :class:`Rate` or its name in :data:`RATES`.
    axis : {"n", "m", "eps", "d"}
        The swept argument.
    values : sequence of float
        The grid values of ``axis`` used in the fit (≥ 2 distinct, > 0).
    fixed : mapping, optional
        The other arguments of :meth:`Rate.value`: ``n``, ``m``, ``eps`` (those that are
        not ``axis`` are required), and optionally ``d``, ``p``, ``D``, ``M_p``,
        ``beta``, ``gamma``, ``sigma2``.

    Returns
    -------
    float
        The slope.

    Examples
    --------
    >>> round(expected_slope("thm1_alg1", "m", [16, 64, 256], {"n": 2**15, "eps": 1.0}), 12)
    -1.0
    """
    if isinstance(rate, str):
        rate = get_rate(rate)
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, got {axis!r}")
    x = np.asarray(values, dtype=float).ravel()
    if x.size < 2 or np.any(~np.isfinite(x)) or np.any(x <= 0) or np.unique(x).size < 2:
        raise ValueError("values: need ≥ 2 distinct finite positive grid values")
    kw = dict(fixed or {})
    kw.pop(axis, None)
    allowed = {"n", "m", "eps", "d", "p", "D", "M_p", "beta", "gamma", "sigma2"}
    unknown = set(kw) - allowed
    if unknown:
        raise ValueError(f"fixed: unknown arguments {sorted(unknown)}")
    missing = {"n", "m", "eps"} - set(kw) - {axis}
    if missing:
        raise ValueError(f"fixed: missing {sorted(missing)}")
    kw[axis] = x
    y = np.broadcast_to(rate.value(**kw), x.shape)
    lx, ly = np.log(x), np.log(y)
    lx_c = lx - lx.mean()
    return float(np.sum(lx_c * (ly - ly.mean())) / np.sum(lx_c ** 2))
