r"""Integrals of the bump profiles over the estimator's cubes, and the profiles themselves.

A bump of the Table I families sits on a cube of side h = 1/G_dist with profile
φ on u = (x − c)/h ∈ [−1/2, 1/2]^d.  The exact risks need W[r, k] = ∫_{B_r ∩ bump k} φ
for every estimator cube B_r of side 1/G_est that bump k meets: a product over
axes of one-dimensional integrals for the cos² profile, incomplete beta
functions for the linear-edge one (:func:`linf_box_integral`).  A profile is
a :class:`BumpProfile`: its values at sample points and its cube integrals, so
a family names its profile and never tests which one it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import lru_cache
from math import factorial

import numpy as np
import scipy.sparse as sp
from scipy import special

__all__ = ["BumpProfile", "Cos2Profile", "LinearEdgeProfile", "PROFILES", "COS2", "linf_margin_factor",
           "cos2_overlap_square_sum", "cos2_projection_deficit", "COS2_SQUARE_INTEGRAL"]

COS2_SQUARE_INTEGRAL = 3.0 / 8.0  # ∫_{-1/2}^{1/2} cos⁴(πu) du: ‖φ‖₂² per axis


def cos2_antiderivative(u, power=1):
    """∫_{-1/2}^{u} cos^(2·power)(πs) ds for the 1-d bump (power 1: φ, 2: φ²), u clipped."""
    u = np.clip(u, -0.5, 0.5)
    if power == 1:
        return u / 2 + np.sin(2 * np.pi * u) / (4 * np.pi) + 0.25
    return (3 * u / 8 + np.sin(2 * np.pi * u) / (4 * np.pi) + np.sin(4 * np.pi * u) / (32 * np.pi)
            + 3 / 16)


def x_minus_sin(x):
    """x − sin x for x ≥ 0, to full relative precision: its Taylor series below 1 (where x and sin x
    agree in their leading digits), the plain difference above (where it loses at most 3 bits)."""
    x = np.asarray(x, dtype=float)
    x2 = x * x
    series = 0.0
    for k in range(9, 0, -1):  # Σ_{k≥1} (−1)^(k+1) x^(2k+1)/(2k+1)!: 9 terms leave < 1e-17 of it at x = 1
        series = 1.0 / factorial(2 * k + 1) - x2 * series
    return np.where(x < 1.0, x * x2 * series, x - np.sin(x))


def _sin2_tail(numerator, denominator):
    """∫_0^δ sin²(πt) dt = (x − sin x)/(4π), x = 2πδ, for δ = numerator/denominator ∈ [0, 1] (integers).

    The integral of a cos² bump from its edge (~ (πδ)³/3 for a short piece): an integer numerator
    keeps δ exact where δ would otherwise be a difference of nearly equal positions.
    """
    x = 2 * np.pi * (np.asarray(numerator, dtype=np.int64) / float(denominator))
    return x_minus_sin(x) / (4 * np.pi)


def cos2_interval(lo, hi, power=1):
    """∫_lo^hi cos^(2·power)(πs) ds for −1/2 ≤ lo ≤ hi ≤ 1/2 (clipped), without cancellation (power 1).

    Power 1: (x + sin x cos(π(lo+hi)))/(2π), x = π(hi − lo), written as the sum of the non-negative
    (x − sin x)/(2π) and sin x cos²(π(lo+hi)/2)/π, so a short piece at a bump's edge (where cos² ~
    (π·distance)²) keeps its relative precision; the difference of antiderivatives there keeps only
    an absolute one, ε/2.  Power 2 (only the Monte-Carlo cell models use it) is that difference.
    """
    lo, hi = np.clip(lo, -0.5, 0.5), np.clip(hi, -0.5, 0.5)
    if power != 1:
        return cos2_antiderivative(hi, power) - cos2_antiderivative(lo, power)
    x = np.pi * np.maximum(hi - lo, 0.0)
    # cos²(π(lo+hi)/2) = sin²(π t/2), t = 1 − |lo + hi|: near an edge t is the sum of the two distances
    # to it (exact, Sterbenz), not 1 less a number close to 1
    t = np.where(lo * hi >= 0, (0.5 - np.abs(lo)) + (0.5 - np.abs(hi)), 1 - np.abs(lo + hi))
    return x_minus_sin(x) / (2 * np.pi) + np.sin(x) * np.sin(np.pi * t / 2) ** 2 / np.pi


@lru_cache(maxsize=64)
def _bump_geometry(d: int, G_dist: int, G_est: int, bumps: tuple, power: int = 1):
    """Sparse overlap of the estimator's cubes with the bump cubes.

    Returns (cells, W) with W[r, k] = ∫_{B_r ∩ bump k} φ^power((x − c_k)/h) dx,
    φ(u) = Π cos²(π u_i) (so ‖φ‖₁ = 2^(−d), ‖φ‖₂² = (3/8)^d), h = 1/G_dist.
    """
    bump_multi = np.array(np.unravel_index(np.array(bumps), (G_dist,) * d)).T  # (m, d)
    # Per axis: for each bump coordinate k, the est intervals it meets and the 1-d integrals.
    per_axis = {}
    for k in np.unique(bump_multi):
        lo, hi = k / G_dist, (k + 1) / G_dist
        a0 = int(np.floor(lo * G_est + 1e-12))
        a1 = int(np.ceil(hi * G_est - 1e-12))
        est = np.arange(a0, min(a1, G_est), dtype=np.int64)
        # the piece in u = x·G_dist − k − 1/2, from integer numerators over 2·G_est: exact positions
        # (a difference of rounded ones would err by ε·G_dist, much of a piece of length G_dist/G_est)
        two_g = 2.0 * G_est
        u_lo = (2 * np.maximum(est * G_dist, k * G_est) - (2 * k + 1) * G_est) / two_g
        u_hi = (2 * np.minimum((est + 1) * G_dist, (k + 1) * G_est) - (2 * k + 1) * G_est) / two_g
        vals = cos2_interval(u_lo, u_hi, power) / G_dist
        keep = vals > 0
        per_axis[int(k)] = (est[keep], vals[keep])
    rows, cols, data = [], [], []
    for j, coords in enumerate(bump_multi):
        idx = [per_axis[int(c)][0] for c in coords]
        val = [per_axis[int(c)][1] for c in coords]
        mesh_idx = np.array(np.meshgrid(*idx, indexing="ij")).reshape(d, -1)
        mesh_val = np.prod(np.array(np.meshgrid(*val, indexing="ij")).reshape(d, -1), axis=0)
        rows.append(np.ravel_multi_index(tuple(mesh_idx), (G_est,) * d))
        cols.append(np.full(mesh_val.size, j))
        data.append(mesh_val)
    rows, cols, data = (np.concatenate(a) for a in (rows, cols, data))
    cells, inverse = np.unique(rows, return_inverse=True)
    W = sp.csr_matrix((data, (inverse, cols)), shape=(len(cells), len(bumps)))
    return cells, W


def linf_box_integral(a: np.ndarray, b: np.ndarray, beta: float) -> np.ndarray:
    r"""∫ over the boxes Π_i [a_i, b_i] ⊂ [−1/2, 1/2]^d of φ(u) = (1/2 − ‖u‖∞)^β, in closed form.

    With A(r) = Π_i |[a_i, b_i] ∩ [−r, r]| the box's share of the cube {‖u‖∞ ≤ r},
    integration by parts gives ∫_box φ = β ∫_0^{1/2} (1/2 − r)^(β−1) A(r) dr.
    A is a product of functions linear between the breakpoints |a_i|, |b_i|, so
    on each piece it is a polynomial of degree d in r, and its moments against
    (1/2 − r)^(β−1) are incomplete beta functions:
    ∫_{r0}^{r1} β(1/2 − r)^(β−1) r^j dr = β 2^(−(β+j)) B(j+1, β) [I_{2r}(j+1, β)]_{r0}^{r1}.

    ``a``, ``b``: arrays of shape (P, d); returns shape (P,).
    """
    P, d = a.shape
    breaks = np.concatenate([np.abs(a), np.abs(b), np.zeros((P, 1)), np.full((P, 1), 0.5)], axis=1)
    breaks = np.sort(np.clip(breaks, 0.0, 0.5), axis=1)
    r0, r1 = breaks[:, :-1], breaks[:, 1:]  # (P, S) pieces

    def side(r):  # |[a_i, b_i] ∩ [−r, r]|, shape (P, d, S)
        return np.clip(np.minimum(b[:, :, None], r[:, None, :]) - np.maximum(a[:, :, None], -r[:, None, :]),
                       0.0, None)

    width = r1 - r0
    s0, s1 = side(r0), side(r1)
    slope = (s1 - s0) / np.where(width > 0, width, 1.0)[:, None, :]
    intercept = s0 - slope * r0[:, None, :]
    coef = np.zeros(r0.shape + (d + 1,))
    coef[..., 0] = 1.0
    for i in range(d):  # multiply in (intercept_i + slope_i r)
        shifted = np.zeros_like(coef)
        shifted[..., 1:] = coef[..., :-1] * slope[:, i, :, None]
        coef = coef * intercept[:, i, :, None] + shifted
    j = np.arange(d + 1)
    if beta == 1.0:
        moments = (r1[..., None] ** (j + 1) - r0[..., None] ** (j + 1)) / (j + 1)
    else:
        inc = special.betainc(j + 1, beta, 2 * r1[..., None]) - special.betainc(j + 1, beta, 2 * r0[..., None])
        moments = beta * 2.0 ** (-(beta + j)) * special.beta(j + 1, beta) * inc
    moments = np.where(width[..., None] > 0, moments, 0.0)
    return (coef * moments).sum(axis=(1, 2))


def _axis_pieces(coords: np.ndarray, G_dist: int, G_est: int):
    """Per bump coordinate k: the estimator intervals meeting [k/G, (k+1)/G], padded.

    Returns (est, lo, hi, valid), each of shape (len(coords), width): the
    estimator index and the overlap in the bump's own coordinate u = x·G − k − 1/2.
    """
    start = np.floor(coords * G_est / G_dist + 1e-12).astype(np.int64)
    stop = np.minimum(np.ceil((coords + 1) * G_est / G_dist - 1e-12).astype(np.int64), G_est)
    width = int((stop - start).max())
    est = start[:, None] + np.arange(width)[None, :]
    valid = est < stop[:, None]
    # integer numerators over 2·G_est: exact positions (as in :func:`_bump_geometry`)
    k = coords[:, None].astype(np.int64)
    lo_num = 2 * np.maximum(est * G_dist, k * G_est) - (2 * k + 1) * G_est
    hi_num = 2 * np.minimum((est + 1) * G_dist, (k + 1) * G_est) - (2 * k + 1) * G_est
    valid &= hi_num > lo_num
    lo, hi = lo_num / (2.0 * G_est), hi_num / (2.0 * G_est)
    return est, np.clip(lo, -0.5, 0.5), np.clip(hi, -0.5, 0.5), valid


@lru_cache(maxsize=256)
def linear_edge_geometry(d: int, G_dist: int, G_est: int, bumps: tuple, beta: float):
    """Like :func:`_bump_geometry` for φ(u) = (1/2 − ‖u‖∞)₊^β (not a product over axes).

    W[r, k] = ∫_{B_r ∩ bump k} φ((x − c_k)/h) dx = h^d ∫ over the box in u of φ.
    """
    bump_multi = np.array(np.unravel_index(np.array(bumps), (G_dist,) * d)).T  # (m, d)
    est, lo, hi, valid = _axis_pieces(bump_multi.ravel(), G_dist, G_est)
    m, width = len(bumps), est.shape[1]
    est, lo, hi, valid = (v.reshape(m, d, width) for v in (est, lo, hi, valid))
    # all combinations of one interval per axis: (m, width^d) boxes
    combos = np.array(np.meshgrid(*([np.arange(width)] * d), indexing="ij")).reshape(d, -1)
    axis = np.arange(d)[:, None]
    box_est = est[:, axis, combos]  # (m, d, C)
    box_lo, box_hi = lo[:, axis, combos], hi[:, axis, combos]
    box_ok = valid[:, axis, combos].all(axis=1)  # (m, C)
    k_idx, c_idx = np.nonzero(box_ok)
    a = box_lo[k_idx, :, c_idx]
    b = box_hi[k_idx, :, c_idx]
    vals = linf_box_integral(a, b, beta) * float(G_dist) ** (-d)
    rows = np.ravel_multi_index(tuple(box_est[k_idx, :, c_idx].T), (G_est,) * d)
    keep = vals > 0
    cells, inverse = np.unique(rows[keep], return_inverse=True)
    W = sp.csr_matrix((vals[keep], (inverse, k_idx[keep])), shape=(len(cells), m))
    return cells, W


@lru_cache(maxsize=256)
def full_bump_geometry(d: int, G_dist: int, G_est: int, power: int):
    """W[r, k] = ∫_{B_r ∩ bump k} φ^power for bumps on *all* G_dist^d cubes (regression).

    φ = Π cos²(π u_i) is a product over axes and the bumps tile the cube, so W is
    the d-fold Kronecker power (C order) of the one-axis overlap matrix: no loop
    over bumps, which matters at G = 2048.
    """
    coords = np.arange(G_dist)
    est, lo, hi, valid = _axis_pieces(coords, G_dist, G_est)
    vals = cos2_interval(lo, hi, power) / G_dist
    bump = np.broadcast_to(coords[:, None], est.shape)
    keep = valid & (vals > 0)
    axis = sp.csr_matrix((vals[keep], (est[keep], bump[keep])), shape=(G_est, G_dist))
    W = axis
    for _ in range(d - 1):
        W = sp.kron(W, axis, format="csr")
    return W


def _split_products(G_dist: int, G_est: int) -> float:
    """Σ a·b over the intervals of the finer partition split by a boundary of the coarser (coprime counts).

    a, b are the two parts of the split interval's integral of the profile in u-units, each the
    integral of a cos² bump from one of its edges over a length δ = (integer)/G_est
    (:func:`_sin2_tail`): exact δ, and (x − sin x) without cancellation.
    """
    Gd, Ge = int(G_dist), int(G_est)
    if Ge >= Gd:
        # bump boundaries k/G_dist (k = 1..G_dist−1) strictly inside cell j = ⌊k G_est/G_dist⌋: the tail of
        # bump k−1 over δ_a = k − j·r and the head of bump k over δ_b = (j+1)·r − k, r = G_dist/G_est
        k = np.arange(1, Gd, dtype=np.int64)
        k = k[(k * Ge) % Gd != 0]
        j = (k * Ge) // Gd
        a = _sin2_tail(k * Ge - j * Gd, Ge)
        b = _sin2_tail((j + 1) * Gd - k * Ge, Ge)
    else:
        # cell boundaries j/G_est (j = 1..G_est−1) strictly inside bump k = ⌊j G_dist/G_est⌋: its head over
        # δ = j·r − k and its tail over 1 − δ, r = G_dist/G_est
        j = np.arange(1, Ge, dtype=np.int64)
        j = j[(j * Gd) % Ge != 0]
        k = (j * Gd) // Ge
        a = _sin2_tail(j * Gd - k * Ge, Ge)
        b = _sin2_tail((k + 1) * Ge - j * Gd, Ge)
    return float(np.dot(a, b))


def _reduced(G_dist: int, G_est: int):
    """(G_dist/g, G_est/g, g), g = gcd: the overlap pattern repeats g times."""
    g = int(np.gcd(int(G_dist), int(G_est)))
    return int(G_dist) // g, int(G_est) // g, g


@lru_cache(maxsize=65536)
def cos2_overlap_square_sum(G_dist: int, G_est: int) -> float:
    r"""A₁ = Σ_{r, k} (∫_{B_r ∩ bump k} φ((x − c_k)/h) dx)² on [0, 1] for the cos² bumps tiling it.

    B_r are the G_est intervals of the estimator, the bumps the G_dist intervals
    of side h = 1/G_dist.  In d dimensions the overlaps of product bumps are
    products of these (:func:`full_bump_geometry` is a Kronecker power), so the
    d-dimensional sum is A₁^d: what the sign-averaged projection of η on the
    estimator's cubes needs (E_v (∫_{B_r} η)² = (L h^β)² Σ_k W_rk², independent signs).

    Exact, in O(min(G_dist, G_est)) operations.  With u = x·G_dist − 1/2 the
    profile's antiderivative is global, Φ(u) = u/2 + sin(2πu)/(4π), so an
    interval's integral needs Φ at its ends only.  Each interval of the finer
    partition holds at most one boundary of the coarser one, so
    Σ_segments W² = Σ_{finer intervals} (whole integral)² − 2 Σ_{split ones} a·b,
    a, b the two parts of a split interval.  For G_est ≥ G_dist the first sum is
    over the cells, Σ_j (r/2 + ΔS_j)² with r = G_dist/G_est and S_j = −sin(2πjr)/(4π),
    which is G_est r²/4 + (G_est − C) sin²(πr)/(8π²) in closed form (C = G_est
    where 2G_dist ≡ 0 mod G_est, else 0: sums of roots of unity); for
    G_est < G_dist it is over the bumps, G_dist/4.  The pattern repeats g = gcd
    times: A₁(G, G') = A₁(G/g, G'/g)/g.

    Floating point: every term is a sum or product of non-negative numbers, each
    to a few ulps.  1 − cos 2πr is written 2 sin²(πr) (its absolute error ε is
    (2π²r²)^(-1) ε relative for r = G_dist/G_est small: 5·10^-6 at r = 2^-20),
    a and b are integrals from a bump's edge over an exact length
    (:func:`_sin2_tail`), and 2 Σ a·b ≤ half the first sum (2ab ≤ (a + b)²/2), so
    the difference loses at most one bit.  A₁ is then good to a few ε relative
    (tests/test_exact_precision.py), at every ratio.
    """
    Gd, Ge, g = _reduced(G_dist, G_est)
    if g > 1:
        return cos2_overlap_square_sum(Gd, Ge) / g
    if Ge >= Gd:
        r = Gd / Ge
        C = Ge if (2 * Gd) % Ge == 0 else 0
        whole = Ge * r * r / 4 + (Ge - C) * np.sin(np.pi * r) ** 2 / (8 * np.pi ** 2)
    else:
        whole = Gd / 4.0  # every bump whole: ∫φ du = 1/2
    return float((whole - 2 * _split_products(Gd, Ge)) / Gd ** 2)


@lru_cache(maxsize=65536)
def cos2_projection_deficit(G_dist: int, G_est: int) -> float:
    r"""D = 3/8 − G_est·A₁: per axis, ‖φ‖₂² less the squared norm of its projection on the G_est cells.

    D·(L h^β)² is ∫η² − Σ_r E_v (∫_{B_r} η)²/P(B_r) in d = 1: the sign-averaged squared bias of
    the cube mean with exact cell means.  For G_est ≫ G_dist it is of order (G_dist/G_est)²,
    so forming it as 3/8 − G_est·A₁ leaves ε/D of it (its relative error grows like
    (G_est/G_dist)²: 10^-4 at a ratio 2^20 even with A₁ to the ulp).  Written instead as a sum
    of non-negative terms, with s = sin(πr)/(πr) and r = G_dist/G_est (G_est ≥ G_dist, coprime):

        D = (1 − s)(1 + s)/8 + (C/G_est) s²/8 + 2 G_est Σ a·b / G_dist²,

    1 − s = (πr − sin πr)/(πr) without cancellation (:func:`x_minus_sin`); for G_est < G_dist,
    D = 3/8 − G_est/(4 G_dist) + 2 G_est Σ a·b / G_dist² with 3/8 − G_est/(4 G_dist) ≥ 1/8.
    The gcd reduction leaves D unchanged (G_est·A₁ is invariant).  Notation as in
    :func:`cos2_overlap_square_sum`.
    """
    Gd, Ge, _ = _reduced(G_dist, G_est)
    split = 2.0 * Ge * _split_products(Gd, Ge) / Gd ** 2
    if Ge < Gd:
        return float(3.0 / 8.0 - Ge / (4.0 * Gd) + split)
    x = np.pi * Gd / Ge
    s = np.sin(x) / x
    one_minus_s = x_minus_sin(x) / x
    C = Ge if (2 * Gd) % Ge == 0 else 0
    return float(one_minus_s * (1 + s) / 8 + C / Ge * s * s / 8 + split)


@lru_cache(maxsize=256)
def full_bump_row_sums(d: int, G_dist: int, G_est: int) -> np.ndarray:
    """Σ_k W[r, k] for φ²: ∫_{B_r} η² / height² whatever the signs."""
    return np.asarray(full_bump_geometry(d, G_dist, G_est, 2).sum(axis=1)).ravel()


def linf_margin_factor(d: int, kappa: float) -> float:
    r"""c_d(κ) = sup_{0 < a ≤ 1/2} (1 − (1 − 2a)^d) / a^κ for κ = γβ ≤ 1.

    P(0 < φ(U) ≤ s) = 1 − (1 − 2 s^(1/β))^d for U uniform on the bump's cube,
    so the margin ratio of a bump family is this factor times m h^(d − γβ) L^(−γ).
    For κ = 1 the supremum is the limit 2d at a → 0; for κ < 1 the ratio vanishes
    there and the supremum is attained inside (0, 1/2], found on a fine grid.
    """
    a = np.geomspace(1e-9, 0.5, 20001)
    ratio = (1 - (1 - 2 * a) ** d) / a ** kappa
    limit = 2.0 * d if abs(kappa - 1.0) < 1e-12 else 0.0
    return float(max(ratio.max(), limit))


def _centred(X: np.ndarray, axis: int, G: int) -> np.ndarray:
    """u = x·G − (its cube's index) − 1/2 along ``axis``: the position in the own cube, centred."""
    u = X[:, axis] * G
    u -= np.minimum(np.floor(u), G - 1)
    u -= 0.5
    return u


class BumpProfile(ABC):
    """The profile φ of a bump, on u ∈ [−1/2, 1/2]^d (``name``: the family's ``shape``)."""

    name: str

    @abstractmethod
    def overlaps(self, d: int, G_dist: int, G_est: int, bumps: tuple, beta: float):
        """(cells, W): the estimator cubes the bumps meet, W[r, k] = ∫_{B_r ∩ bump k} φ((x − c_k)/h) dx."""

    @abstractmethod
    def values(self, X: np.ndarray, G: int, beta: float = 1.0) -> np.ndarray:
        """φ((x − c)/h) at each row x of X, c the centre of the cube of side h = 1/G holding x.

        One axis at a time and in place (an (N, d) product costs twice as much).
        """


class Cos2Profile(BumpProfile):
    """φ(u) = Π_i cos²(π u_i): smooth, a product over axes (the law-tied construction)."""

    name = "cos2"

    def overlaps(self, d, G_dist, G_est, bumps, beta):
        return _bump_geometry(d, G_dist, G_est, bumps)

    def values(self, X, G, beta=1.0):
        profile = np.ones(len(X))
        for axis in range(X.shape[1]):
            u = _centred(X, axis, G)
            u *= np.pi
            np.cos(u, out=u)
            profile *= u
            profile *= u
        return profile


class LinearEdgeProfile(BumpProfile):
    """φ(u) = (1/2 − ‖u‖∞)₊^β: β-Hölder at every scale (the law-free search, SPEC §5a)."""

    name = "linear_edge"

    def overlaps(self, d, G_dist, G_est, bumps, beta):
        return linear_edge_geometry(d, G_dist, G_est, bumps, beta)

    def values(self, X, G, beta=1.0):
        profile = np.zeros(len(X))  # ‖u‖∞ so far
        for axis in range(X.shape[1]):
            np.maximum(profile, np.abs(_centred(X, axis, G)), out=profile)
        return np.clip(0.5 - profile, 0.0, None) ** beta


COS2 = Cos2Profile()
PROFILES = {profile.name: profile for profile in (COS2, LinearEdgeProfile())}
