r"""Integrals of the bump profiles over the estimator's cubes, and the profiles themselves.

A bump of the Table I families sits on a cube of side h = 1/G_dist with profile
φ on u = (x − c)/h ∈ [−1/2, 1/2]^d.  The exact risks need W[r, k] = ∫_{B_r ∩ bump k} φ
for every estimator cube B_r of side 1/G_est that bump k meets: a product over
axes of one-dimensional integrals for the cos² profile, incomplete beta
functions for the linear-edge one (:func:`_linf_box_integral`).  A profile is
a :class:`BumpProfile`: its values at sample points and its cube integrals, so
a family names its profile and never tests which one it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import lru_cache

import numpy as np
import scipy.sparse as sp
from scipy import special

__all__ = ["BumpProfile", "Cos2Profile", "LinearEdgeProfile", "PROFILES", "COS2", "linf_margin_factor",
           "cos2_overlap_square_sum", "COS2_SQUARE_INTEGRAL"]

COS2_SQUARE_INTEGRAL = 3.0 / 8.0  # ∫_{-1/2}^{1/2} cos⁴(πu) du: ‖φ‖₂² per axis


def _cos2_antiderivative(u, power=1):
    """∫_{-1/2}^{u} cos^(2·power)(πs) ds for the 1-d bump (power 1: φ, 2: φ²), u clipped."""
    u = np.clip(u, -0.5, 0.5)
    if power == 1:
        return u / 2 + np.sin(2 * np.pi * u) / (4 * np.pi) + 0.25
    return (3 * u / 8 + np.sin(2 * np.pi * u) / (4 * np.pi) + np.sin(4 * np.pi * u) / (32 * np.pi)
            + 3 / 16)


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
        est = np.arange(a0, min(a1, G_est))
        left, right = est / G_est, (est + 1) / G_est
        centre = (k + 0.5) / G_dist
        vals = (_cos2_antiderivative((np.minimum(right, hi) - centre) * G_dist, power)
                - _cos2_antiderivative((np.maximum(left, lo) - centre) * G_dist, power)) / G_dist
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


def _linf_box_integral(a: np.ndarray, b: np.ndarray, beta: float) -> np.ndarray:
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
    lo = np.maximum(est / G_est, coords[:, None] / G_dist) * G_dist - coords[:, None] - 0.5
    hi = np.minimum((est + 1) / G_est, (coords[:, None] + 1) / G_dist) * G_dist - coords[:, None] - 0.5
    valid &= hi > lo
    return est, np.clip(lo, -0.5, 0.5), np.clip(hi, -0.5, 0.5), valid


@lru_cache(maxsize=256)
def _linear_edge_geometry(d: int, G_dist: int, G_est: int, bumps: tuple, beta: float):
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
    vals = _linf_box_integral(a, b, beta) * float(G_dist) ** (-d)
    rows = np.ravel_multi_index(tuple(box_est[k_idx, :, c_idx].T), (G_est,) * d)
    keep = vals > 0
    cells, inverse = np.unique(rows[keep], return_inverse=True)
    W = sp.csr_matrix((vals[keep], (inverse, k_idx[keep])), shape=(len(cells), m))
    return cells, W


@lru_cache(maxsize=256)
def _full_bump_geometry(d: int, G_dist: int, G_est: int, power: int):
    """W[r, k] = ∫_{B_r ∩ bump k} φ^power for bumps on *all* G_dist^d cubes (regression).

    φ = Π cos²(π u_i) is a product over axes and the bumps tile the cube, so W is
    the d-fold Kronecker power (C order) of the one-axis overlap matrix: no loop
    over bumps, which matters at G = 2048.
    """
    coords = np.arange(G_dist)
    est, lo, hi, valid = _axis_pieces(coords, G_dist, G_est)
    vals = (_cos2_antiderivative(hi, power) - _cos2_antiderivative(lo, power)) / G_dist
    bump = np.broadcast_to(coords[:, None], est.shape)
    keep = valid & (vals > 0)
    axis = sp.csr_matrix((vals[keep], (est[keep], bump[keep])), shape=(G_est, G_dist))
    W = axis
    for _ in range(d - 1):
        W = sp.kron(W, axis, format="csr")
    return W


def _phase_sin(numerator, denominator: int) -> np.ndarray:
    """sin(2π · numerator/denominator) for integer arrays, reduced mod denominator first (exact phases)."""
    return np.sin(2 * np.pi * (np.asarray(numerator, dtype=np.int64) % denominator) / denominator)


@lru_cache(maxsize=65536)
def cos2_overlap_square_sum(G_dist: int, G_est: int) -> float:
    r"""A₁ = Σ_{r, k} (∫_{B_r ∩ bump k} φ((x − c_k)/h) dx)² on [0, 1] for the cos² bumps tiling it.

    B_r are the G_est intervals of the estimator, the bumps the G_dist intervals
    of side h = 1/G_dist.  In d dimensions the overlaps of product bumps are
    products of these (:func:`_full_bump_geometry` is a Kronecker power), so the
    d-dimensional sum is A₁^d: what the sign-averaged projection of η on the
    estimator's cubes needs (E_v (∫_{B_r} η)² = (L h^β)² Σ_k W_rk², independent signs).

    Exact, in O(min(G_dist, G_est)) operations.  With u = x·G_dist − 1/2 the
    profile's antiderivative is global, Φ(u) = u/2 + sin(2πu)/(4π), so an
    interval's integral needs Φ at its ends only.  Each interval of the finer
    partition holds at most one boundary of the coarser one, so
    Σ_segments W² = Σ_{finer intervals} (whole integral)² − 2 Σ_{split ones} a·b,
    a, b the two parts of a split interval.  For G_est ≥ G_dist the first sum is
    over the cells, Σ_j (r/2 + ΔS_j)² with r = G_dist/G_est and S_j = −sin(2πjr)/(4π),
    which is G_est r²/4 + (G_est − C)(1 − cos 2πr)/(16π²) in closed form (C = G_est
    where 2G_dist ≡ 0 mod G_est, else 0: sums of roots of unity); for
    G_est < G_dist it is over the bumps, G_dist/4.  Phases are reduced as integers,
    so every sine is of an angle in [0, 2π).  The pattern repeats g = gcd times:
    A₁(G, G') = A₁(G/g, G'/g)/g.
    """
    g = int(np.gcd(G_dist, G_est))
    if g > 1:
        return cos2_overlap_square_sum(G_dist // g, G_est // g) / g
    Gd, Ge = int(G_dist), int(G_est)
    four_pi = 4 * np.pi
    if Ge >= Gd:
        r = Gd / Ge
        C = Ge if (2 * Gd) % Ge == 0 else 0
        whole = Ge * r * r / 4 + (Ge - C) * (1 - np.cos(2 * np.pi * r)) / (16 * np.pi ** 2)
        # bump boundaries k/G_dist (k = 1..G_dist−1) strictly inside cell j = ⌊k G_est/G_dist⌋
        k = np.arange(1, Gd, dtype=np.int64)
        k = k[(k * Ge) % Gd != 0]
        j = (k * Ge) // Gd
        # Φ(k/G_dist) − Φ(j/G_est) and Φ((j+1)/G_est) − Φ(k/G_dist), in u-units (sin(2πk) = 0)
        a = (k - j * r) / 2 + _phase_sin(j * Gd, Ge) / four_pi
        b = ((j + 1) * r - k) / 2 - _phase_sin((j + 1) * Gd, Ge) / four_pi
    else:
        whole = Gd / 4.0  # every bump whole: ∫φ du = 1/2
        r = Gd / Ge
        # cell boundaries j/G_est (j = 1..G_est−1) strictly inside bump k = ⌊j G_dist/G_est⌋
        j = np.arange(1, Ge, dtype=np.int64)
        j = j[(j * Gd) % Ge != 0]
        k = (j * Gd) // Ge
        a = (j * r - k) / 2 - _phase_sin(j * Gd, Ge) / four_pi
        b = (k + 1 - j * r) / 2 + _phase_sin(j * Gd, Ge) / four_pi
    return float((whole - 2 * np.dot(a, b)) / Gd ** 2)


@lru_cache(maxsize=256)
def _full_bump_row_sums(d: int, G_dist: int, G_est: int) -> np.ndarray:
    """Σ_k W[r, k] for φ²: ∫_{B_r} η² / height² whatever the signs."""
    return np.asarray(_full_bump_geometry(d, G_dist, G_est, 2).sum(axis=1)).ravel()


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
        return _linear_edge_geometry(d, G_dist, G_est, bumps, beta)

    def values(self, X, G, beta=1.0):
        profile = np.zeros(len(X))  # ‖u‖∞ so far
        for axis in range(X.shape[1]):
            np.maximum(profile, np.abs(_centred(X, axis, G)), out=profile)
        return np.clip(0.5 - profile, 0.0, None) ** beta


COS2 = Cos2Profile()
PROFILES = {profile.name: profile for profile in (COS2, LinearEdgeProfile())}
