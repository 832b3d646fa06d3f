r"""Exact expected risk of the ℓ∞ kNN mean (20) on the regression bump families, averaged over the signs.

**The law given the ball** (:mod:`.knn_marginal`).  At a query x the ball reaching
the k-th of the N uniform points has mass U ~ Beta(k, N − k + 1); given U its
k − 1 inner labels are i.i.d. with the label law at η̄_in (the box average of η)
and the k-th with the law at η̄_∂ (the face average).  The report of a label is
Z = c(Y) + noise, with E[c(Y) | η] = α0 + α1 η and E[c(Y)² | η] = β0 + β1 η
(``clipped_label_moments``, the family's) and a noise of variance σ² per report
(``report_moments``, the mechanism's).  So, given U and the signs v,
η̂ = ΣZ/k has mean α0 + α1 ((k−1) η̄_in + η̄_∂)/k and variance
((k−1) Var(c | η̄_in) + Var(c | η̄_∂) + kσ²)/k².

**Signs.**  η, η̄_in, η̄_∂ are linear in the independent signs (E v = 0,
E v_j v_l = δ_jl), so E_v of every square or product is a sum over bumps of
products of per-bump integrals, and the cos² bumps are products over axes:
with â_m the integral of the profile sin²(πX) (X = xG, column units) over
column m ∩ box, P = Σ_m â_m², and per face at t: F = â_{col t} sin²(πt),
H = sin²(πt) sin²(πx) 1[col t = col x],

    E_v η̄_in² = h² Π_i P_i / V²,           E_v η̄_in η̄_∂ = h² Σ_faces F Π_(other axes) P / (V A),
    E_v η̄_in η = h² Π_i F0_i / V,          E_v η̄_∂ η = h² Σ_faces H Π_(other axes) F0 / A,

F0_i = â_{col x_i} sin²(πx_i), V the box volume and A its face area inside the
cube (h = L G^-β).  The risk of one query is then, with t1..t4 these four
(in units of h²),

    E (η̂ − η)² = α0² + (β0 − α0² + σ²)/k + h² [α1² ((k−1)(k−2) t1 + 2(k−1) t2)/k²
                 − 2 α1 ((k−1) t3 + t4)/k + E_v η²]

(E η̄_∂² drops out: its bias and variance parts cancel).

**The query integral** g_t(U) = ∫ t(x, r(x, U)) dx, for each U, on [0,1]^d:

* *interior* (the ball inside the cube, r fixed): a sum of products of one-axis
  integrals over [r, 1 − r], each an integral of a 1-periodic function (the
  bump pattern, in column units) = whole periods + a remainder, by 16-point
  Gauss–Legendre on the ≤ 3 analytic pieces of a period (breakpoints where the
  box ends or the query cross a column edge).  The integrands are trigonometric
  polynomials of frequency ≤ 4π times polynomials of degree ≤ 2 on pieces of
  length ≤ 1, so the rule's error, ℓ^33 (16!)^4 / (33 (32!)^3) max|f^(32)|, is
  below 1e-16: exact to rounding;
* *layers* (the ball cut by c faces, c = 1 … d; by symmetry one side of each
  cut axis, times C(d, c) 2^c): the cut axes are parametrised by
  (r, Λ_1 … Λ_(c−1)) (Λ = the cut box's side, Π Λ_i (2r)^u = U, u = d − c), on
  which the region has explicit bounds, dY = Λ_c (A/V) dr dΛ, and the uncut axes
  integrate as in the interior.  In d = 1 the layer is in closed form.  In d ≥ 2
  the rule is composite 8-point Gauss–Legendre with panels per column crossed
  (``RHO_PANELS``, ``LAM_PANELS``) while the ball spans at most
  ``RHO_HOMOGENISED[c]`` columns: doubling every panel moves g by < 1e-6 of ∫η²
  (tests).  Beyond, the cut axes' column patterns are replaced by their column
  means: their η-terms are then O((3ρ)^-d) of ∫η² and the replacement errs by
  O(1/ρ) of those, < 3e-5 of ∫η² at the thresholds (tests);
* *large balls* (U > 2^(1−d), i.e. k ≳ N 2^(1−d), d ≥ 2, where a ball can reach
  both faces of an axis): a tensor 6-point rule over the folded cube with r found
  at every node; kinks where an axis changes state make its error O(n^-2),
  < 1e-4 of ∫η² for g1, g3, and faces that leave the cube make g2, g4 (weight
  1/k ≤ 2^(d−1)/N in the risk) jump: < 5e-3 of ∫η² (tests).

**The ball mass.**  g is tabulated per (d, G) against ξ = logit U (log U for small
balls, log 1/(1 − U) near U = 1), at ball half-sides ρ0 = G U^(1/d)/2 (columns,
away from the faces) from ``RHO_MIN`` to U = 1 − ``TOP_GAP`` (:func:`table_grid`),
and interpolated by a cubic spline: < 1e-4 of ∫η² for g1, g3 and < 5e-3 for g2, g4
between the points (tests).  Below ρ_MIN the first value is taken (error
≤ d (2π ρ_MIN)²/2 ≈ 2e-7 d of ∫η², the second-order Taylor terms of the box and
face averages), above U = 1 − TOP_GAP the last (error ≤ TOP_GAP max|dg/dU|, for
k > N (1 − 1e-5) only).  E over U ~ Beta(k, N−k+1) is a composite Gauss–Legendre
rule in s = log U over the window where the log-concave density of s is within
e^-36 of its mode (the mass left out is below 1e-15), self-normalised, so no Beta
function of arguments up to 10^15 is formed (:func:`beta_log_nodes`).

In all, an entry's relative error is below ~1e-4 (g1, g3 enter with weight
O(1) against a risk ≥ h² · O(1) or the variance), except near k ≈ N.  The tables
depend on neither N, ε, k nor the mechanism: a process computes each (d, G)
once (0.1–2 s), after which a risk matrix (all G_inst × all k × clip levels of a
point) costs a spline evaluation per Beta node.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations_with_replacement
from math import comb, factorial

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq

__all__ = ["axis_factors", "combine", "uncut_integrals", "query_terms", "g_terms", "table_grid", "table_abscissa",
           "g_table", "beta_log_nodes", "mean_g", "expected_knn_risks"]

RHO_MIN = 1e-4          # smallest tabulated ball half-side, in columns
PER_DECADE = 20         # table points per decade of ρ0 above ρ0 = 0.02
COARSE = 10             # below ρ0 = 0.02
RESOLVE_G = {1: 1024, 2: 8, 3: 8}  # G up to which the table resolves the faces' column positions
TOP_GAP = 1e-5          # the table stops at U = 1 − TOP_GAP
NEAR_TOP = 0.4          # towards U = 1 the points close in by this ratio of the distance left
TAIL = 36.0             # log-density drop that bounds the Beta window (e^-36 ≈ 2e-16)
RHO_HOMOGENISED = {1: 24.0, 2: 6.0, 3: 2.0}  # resolved layers up to this ρ0 (columns), by cut axes
BRUTE_PANELS = {2: 12, 3: 4}                 # large-ball rule: panels per axis of the folded cube
# panels per unit of ρ and of Λ (columns) of the resolved layer rules, by cut axes (8-point rules)
RHO_PANELS = {1: 1.0, 2: 1.0, 3: 1.0}
LAM_PANELS = {2: 2.0, 3: 1.0}
CHUNK = 2 ** 17         # nodes per batch of the layer rules (memory)
REFINE = 1              # panel multiplier of the layer rules (the tests raise it to measure their error)
GL16 = np.polynomial.legendre.leggauss(16)
GL8 = np.polynomial.legendre.leggauss(8)
GL6 = np.polynomial.legendre.leggauss(6)
# mean over a column of Σ_m â_m² − Λ/4 for the box [0, Λ] (the partial column's excess): −1/24 + 5/(32π²)
_P_EXCESS = -1.0 / 24.0 + 5.0 / (32.0 * np.pi ** 2)
ETA2 = 3.0 / 8.0        # ∫_0^1 sin⁴(πX) dX: E_v η² per axis, in units of h²


# ----------------------------------------------------------------------------- one axis


def sin2(t):
    """sin²(πt), reduced to the column first (precision at X ~ 10^6)."""
    t = np.asarray(t, dtype=float)
    f = t - np.floor(t)
    # sin²(πf) = sin²(π(1 − f)): the distance to the nearer column edge keeps f → 1⁻ precise (sin near π)
    return np.sin(np.pi * np.minimum(f, 1 - f)) ** 2


def J(a, b):
    """∫_a^b sin²(πs) ds = (x − sin x)/(2π) + sin x · sin²(π(a+b)/2)/π, x = π(b − a).

    Written so that a short interval near a column edge (where the profile is
    ~ (πs)²) keeps its relative precision: x − sin x by its series below 0.1.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    x = np.pi * (b - a)
    sin_x = np.sin(x)  # once: the sines are most of the time of the exact kNN cells
    x2 = x * x
    series = x * x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42 * (1 - x2 / 72 * (1 - x2 / 110))))
    x_minus_sin = np.where(np.abs(x) < 0.1, series, x - sin_x)
    mid = a + b
    mid = mid - 2 * np.floor(mid / 2)
    mid = np.minimum(mid, 2 - mid)  # sin²(πm/2) is symmetric about m = 1: mid → 2⁻ is sin near π otherwise
    return x_minus_sin / (2 * np.pi) + sin_x * np.sin(np.pi * mid / 2) ** 2 / np.pi


def axis_factors(X, lo, hi, face_lo, face_hi):
    """One axis of a box [lo, hi] (column units) about a query at X: (P, F0, ΣF, ΣH, faces, side).

    P = Σ_m â_m²; F0 = â_{col X} sin²(πX); ΣF, ΣH the sums over the box's faces
    inside the cube (``face_lo``, ``face_hi``: 0/1) of F and H (module docstring).
    """
    X, lo, hi = (np.asarray(v, dtype=float) for v in (X, lo, hi))
    first = np.floor(lo)
    last = np.maximum(np.ceil(hi) - 1, first)
    a_first = J(lo, np.minimum(hi, first + 1))
    a_last = J(np.maximum(lo, last), hi)
    P = np.where(first == last, a_first ** 2, a_first ** 2 + a_last ** 2 + (last - first - 1) / 4)
    col = np.clip(np.floor(X), first, last)
    s_x, s_hi, s_lo = sin2(X), sin2(hi), sin2(lo)
    F0 = J(np.maximum(lo, col), np.minimum(hi, col + 1)) * s_x
    F = face_hi * a_last * s_hi + face_lo * a_first * s_lo
    H = s_x * (face_hi * s_hi * (col == last) + face_lo * s_lo * (col == first))
    return P, F0, F, H, face_lo + face_hi, hi - lo


def _homogenised_cut(Lam):
    """The cut axis [0, Λ] with its column patterns replaced by their means (ρ ≥ 1: the query's column
    is full and H = 0)."""
    Lam = np.asarray(Lam, dtype=float)
    one = np.ones_like(Lam)
    return Lam / 4 + _P_EXCESS, 0.25 * one, 0.125 * one, 0.0 * one, one, Lam


def combine(axes):
    """(t1, t2, t3, t4) of the module docstring from per-axis factors (arrays that broadcast)."""
    P, F0, F, H, nf, side = (list(v) for v in zip(*axes))

    def others(values, i):
        out = 1.0
        for j, v in enumerate(values):
            if j != i:
                out = out * v
        return out

    d = len(axes)
    V = others(side, -1)
    A = sum(nf[i] * others(side, i) for i in range(d))
    t1 = others(P, -1) / V ** 2
    t3 = others(F0, -1) / V
    with np.errstate(divide="ignore", invalid="ignore"):
        t2 = sum(F[i] * others(P, i) for i in range(d)) / (V * A)
        t4 = sum(H[i] * others(F0, i) for i in range(d)) / A
    # the whole cube inside the ball leaves no face: the k-th point is any point (knn_marginal)
    return t1, np.where(A > 0, t2, t1), t3, np.where(A > 0, t4, t3)


# ----------------------------------------------------------------------------- quadrature helpers


def _pieces(edges, rule):
    """Gauss–Legendre nodes and weights on consecutive pieces of sorted ``edges`` (..., E)."""
    x, w = rule
    a, b = edges[..., :-1, None], edges[..., 1:, None]
    shape = edges.shape[:-1] + (-1,)
    return ((a + b) / 2 + (b - a) / 2 * x).reshape(shape), ((b - a) / 2 * w).reshape(shape)


def _panels(lo, hi, n, rule):
    """Composite rule with ``n`` equal panels on [lo, hi] (arrays), nodes on a new last axis."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    edges = lo[..., None] + (hi - lo)[..., None] * np.arange(n + 1) / n
    return _pieces(edges, rule)


# ----------------------------------------------------------------------------- uncut axes


def uncut_integrals(rho, G: int):
    """(1/G) ∫_ρ^(G−ρ) of (P, F0, F_hi, H_hi) for the box [X − ρ, X + ρ], per ρ (zero where ρ ≥ G/2).

    1-periodic integrands: whole periods plus the remainder, each split at the
    breakpoints X ∈ ℤ, ℤ ± ρ and integrated by 16-point Gauss–Legendre (exact to
    rounding, module docstring).  The faces at X − ρ give the same integrals
    (the range and the pattern are symmetric about G/2).
    """
    rho = np.atleast_1d(np.asarray(rho, dtype=float))
    frac = rho - np.floor(rho)
    span = np.maximum(G - 2 * rho, 0.0)
    whole = np.floor(span)
    end = frac + (span - whole)
    zero = np.zeros_like(rho)
    period = np.sort(np.stack([zero, frac, 1 - frac, zero + 1], -1), -1)
    cand = np.stack([frac, end, zero + 1, zero + 2, 1 + frac, 1 - frac, 2 - frac], -1)
    rest = np.sort(np.clip(cand, frac[:, None], end[:, None]), -1)
    out = []
    for edges, scale in ((period, whole), (rest, 1.0)):
        X, w = _pieces(edges, GL16)
        r = rho[:, None]
        P, F0, F, H, _, _ = axis_factors(X, X - r, X + r, 0.0, 1.0)  # F, H of the face at X + ρ
        out.append([scale * np.sum(w * f, axis=-1) for f in (P, F0, F, H)])
    return tuple(np.where(span > 0, (p + q) / G, 0.0) for p, q in zip(*out))


def _uncut_axis(rho, G):
    """An uncut axis integrated over its range at ρ (any shape), in the form :func:`combine` takes."""
    rho = np.asarray(rho, dtype=float)
    IP, IF0, IF, IH = (v.reshape(rho.shape) for v in uncut_integrals(rho.ravel(), G))
    return IP, IF0, 2 * IF, 2 * IH, 2.0, 2 * rho


# ----------------------------------------------------------------------------- the regions at one U


def _cut_axis(rho, Lam, homogenised: bool):
    """The cut axis [0, Λ] (face at Λ) about the query at Y = Λ − ρ (folded: the cube's face at 0)."""
    if homogenised:
        return _homogenised_cut(Lam)
    return axis_factors(Lam - rho, 0.0, Lam, 0.0, 1.0)


def _count(hom, fixed, per_unit, span):
    """Panels of a rule: ``fixed`` when homogenised, else ``per_unit`` per column of ``span`` (≥ 1)."""
    return REFINE * (fixed if hom else max(1, int(np.ceil(per_unit * np.max(span)))))


def _on_pieces(edges, n):
    """Composite 8-point rule with ``n`` panels on each piece of ``edges`` (B, E): nodes (B, (E−1)·8n)."""
    parts = [_panels(edges[:, i], edges[:, i + 1], n, GL8) for i in range(edges.shape[1] - 1)]
    return np.concatenate([p[0] for p in parts], axis=1), np.concatenate([p[1] for p in parts], axis=1)


def _region(d, G, rho0, c, hom):
    """∫ (t1..t4) dY over the c cut axes' region, per ρ0 of the batch (B,): shape (B, 4).

    The cut axes are parametrised by (ρ, Λ_1 … Λ_(c−1)) with every cut Λ_i ∈ [ρ, 2ρ)
    (Y_i = Λ_i − ρ ∈ [0, ρ)) and Π Λ_i (2ρ)^u = Û; dY = Λ_c (A/V) dρ dΛ_1 …
    (module docstring).  Explicit bounds, valid while U ≤ 2^(1−d) (no axis reaches
    the far face).  Divide by G^c for the measure in x.
    """
    u = d - c
    Uh = (2 * rho0) ** d
    top = (Uh / 2.0 ** u) ** (1.0 / d)  # every cut query at its face: Λ_i = ρ
    if c == 1:
        rho, w = _panels(rho0, top, _count(hom, 6, RHO_PANELS[1] * (1 + 2 * u), top - rho0), GL8)
        Lam = Uh[:, None] / (2 * rho) ** u
        axes = [_cut_axis(rho, Lam, hom)] + [_uncut_axis(rho, G)] * u
        jac = 1 + u * Lam / rho
    elif c == 2:
        mid = (Uh / 2.0 ** (u + 1)) ** (1.0 / d)  # where the bounds of Λ1 switch
        n = _count(hom, 3, RHO_PANELS[2] * (2 + 2 * u), top - rho0)
        rho, w = _on_pieces(np.stack([rho0, mid, top], 1), n)
        W = Uh[:, None] / (2 * rho) ** u
        lo, hi = np.maximum(rho, W / (2 * rho)), np.minimum(2 * rho, W / rho)
        Lam1, w1 = _panels(lo, hi, _count(hom, 6, LAM_PANELS[2], hi - lo), GL8)
        r = rho[:, :, None]
        Lam2 = W[:, :, None] / Lam1
        axes = [_cut_axis(r, Lam1, hom), _cut_axis(r, Lam2, hom)] + [_uncut_axis(r, G)] * u
        jac = 1 + Lam2 / Lam1 + u * Lam2 / r
        w = w[:, :, None] * w1
    else:  # c = d = 3
        n = _count(hom, 2, RHO_PANELS[3], top - rho0)
        rho, w = _on_pieces(np.stack([rho0, (Uh / 4) ** (1 / 3), (Uh / 2) ** (1 / 3), top], 1), n)
        U3 = Uh[:, None]
        lo1, hi1 = np.maximum(rho, U3 / (4 * rho ** 2)), np.minimum(2 * rho, U3 / rho ** 2)
        split = np.clip(U3 / (2 * rho ** 2), lo1, hi1)  # where the bounds of Λ2 switch
        n1 = _count(hom, 2, LAM_PANELS[3], hi1 - lo1)
        parts = [_panels(lo1, split, n1, GL8), _panels(split, hi1, n1, GL8)]
        Lam1 = np.concatenate([p[0] for p in parts], axis=-1)
        w1 = np.concatenate([p[1] for p in parts], axis=-1)
        r, U3 = rho[:, :, None], U3[:, :, None]
        lo2, hi2 = np.maximum(r, U3 / (2 * r * Lam1)), np.minimum(2 * r, U3 / (r * Lam1))
        Lam2, w2 = _panels(lo2, hi2, _count(hom, 2, LAM_PANELS[3], hi2 - lo2), GL8)
        r, Lam1, U3 = r[..., None], Lam1[..., None], U3[..., None]
        Lam3 = U3 / (Lam1 * Lam2)
        axes = [_cut_axis(r, L, hom) for L in (Lam1, Lam2, Lam3)]
        jac = 1 + Lam3 / Lam1 + Lam3 / Lam2
        w = w[:, :, None, None] * w1[..., None] * w2
    B = len(rho0)
    return np.stack([np.sum((w * jac * t).reshape(B, -1), axis=1) for t in combine(axes)], axis=1)


def _nodes(d, G, rho0, c, hom):
    """About how many nodes :func:`_region` takes at ρ0 (the batches' budget)."""
    u = d - c
    span = (2 ** (c / d) - 1) * rho0 + 1
    n_rho = 8 * (6 if hom else max(1.0, RHO_PANELS[c] * (1 + 2 * u) * span)) * c
    n_lam = (8 * (6 if hom else max(1.0, LAM_PANELS.get(c, 1) * 2 * span))) ** (c - 1)
    return n_rho * (n_lam + 200 * u)


def _layers(d, G, rho0):
    """Σ_c C(d,c) 2^c / G^c × :func:`_region` for ρ0 (B,) sorted, in batches of about ``CHUNK`` nodes."""
    out = np.zeros((len(rho0), 4))
    for c in range(1, d + 1):
        for hom in (False, True):
            idx = np.flatnonzero((rho0 > RHO_HOMOGENISED[c]) == hom)
            start = 0
            while start < len(idx):
                stop = start + 1
                while stop < len(idx) and (stop - start + 1) * _nodes(d, G, rho0[idx[stop]], c, hom) <= CHUNK:
                    stop += 1
                part = idx[start:stop]
                out[part] += comb(d, c) * 2 ** c / float(G) ** c * _region(d, G, rho0[part], c, hom)
                start = stop
    return out


def _layer_1d(G, rho0):
    """The d = 1 layer, exactly: box [0, Λ] with Λ = 2ρ0 for every query Y ∈ [0, ρ0) (folded)."""
    Lam = 2 * rho0
    P, _, F, _, _, _ = axis_factors(0.0, 0.0, Lam, 0.0, 1.0)
    last = np.maximum(np.ceil(Lam) - 1, 0.0)
    a_last = J(last, Lam)
    own = np.where(rho0 > last, J(last, rho0), 0.0)  # ∫ sin² over the queries in the box's last column
    F0_int = 0.5 * J(0.0, np.minimum(rho0, last)) + a_last * own
    H_int = sin2(Lam) * own
    return np.stack([rho0 * P / Lam ** 2, rho0 * F / Lam, F0_int / Lam, H_int], axis=1)


def _ball_radius(Y, G, Uh):
    """ρ with V(ρ) = Π_i (min(ρ, Y_i) + min(ρ, G − Y_i)) = Û per query (column units, anywhere in the cube).

    Each side is affine between the breakpoints Y_i, G − Y_i: the piece where V
    crosses Û is found first; on it V^(1/m) (m sides growing) is a geometric mean
    of affine functions, concave, so Newton's iterates from its left end rise
    monotonically to the root (quadratically: 8 steps reach float64 resolution).
    """
    d = Y.shape[-1]
    breaks = np.sort(np.concatenate([Y, G - Y], axis=-1), axis=-1)

    def sides(rho):
        return np.minimum(rho[..., None], Y) + np.minimum(rho[..., None], G - Y)

    below = np.prod(sides(breaks.reshape(-1, 2 * d).T.reshape((2 * d,) + Y.shape[:-1])), axis=-1) < Uh
    j = np.sum(below, axis=0)  # breakpoints left of the root
    left = np.where(j > 0, np.take_along_axis(breaks, np.maximum(j - 1, 0)[..., None], -1)[..., 0], 0.0)
    right = np.where(j < 2 * d, np.take_along_axis(breaks, np.minimum(j, 2 * d - 1)[..., None], -1)[..., 0],
                     float(G))
    mid = 0.5 * (left + right)
    slope = 1.0 * (mid[..., None] < Y) + 1.0 * (mid[..., None] < G - Y)  # each min grows below its bound
    m = np.maximum(np.sum(slope > 0, axis=-1), 1)
    rho = np.where(left > 0, left, 0.5 * Uh ** (1.0 / d))  # on [0, min Y] V = (2ρ)^d: the root itself
    target = Uh ** (1.0 / m)
    for _ in range(8):
        s = sides(rho)
        root = np.prod(s, axis=-1) ** (1.0 / m)
        grad = root / m * np.sum(slope / s, axis=-1)
        rho = np.minimum(rho + np.where(grad > 0, (target - root) / np.where(grad > 0, grad, 1.0), 0.0), right)
    return rho


def query_terms(Y, G: int, Uh: float):
    """(t1..t4) at queries Y (column units, shape (..., d)) whose ball has mass Û/G^d: any position."""
    rho = _ball_radius(Y, G, Uh)[..., None]
    lo, hi = np.maximum(Y - rho, 0.0), np.minimum(Y + rho, float(G))
    axes = [axis_factors(Y[..., i], lo[..., i], hi[..., i], (Y[..., i] - rho[..., 0] > 0).astype(float),
                         (Y[..., i] + rho[..., 0] < G).astype(float)) for i in range(Y.shape[-1])]
    return combine(axes)


def _large_ball(d, G, Uh, panels=None):
    """g_t for a ball that may reach both faces of an axis: tensor rule over the folded cube [0, G/2]^d."""
    cap = BRUTE_PANELS[d]
    panels = panels or (G * (cap // G) if G <= cap else cap)  # up to the cap, an edge on every column edge
    y, w = _panels(0.0, G / 2, panels, GL6)
    idx, count = _sorted_tuples(len(y), d)  # the integrand is symmetric in the axes
    W = count * np.prod(w[idx], axis=-1)
    return [float(2 ** d * np.sum(W * t)) / G ** d for t in query_terms(y[idx], G, Uh)]


@lru_cache(maxsize=16)
def _sorted_tuples(n: int, d: int):
    """Index tuples i_1 ≤ … ≤ i_d of a tensor rule with n nodes an axis, and their permutation counts."""
    idx = np.array(list(combinations_with_replacement(range(n), d)))
    same = np.array([np.unique(row, return_counts=True)[1] for row in idx], dtype=object)
    count = np.array([factorial(d) / np.prod([factorial(c) for c in row]) for row in same])
    return idx, count


def g_terms(d: int, G: int, rho0) -> np.ndarray:
    """(g1..g4) = ∫ (t1..t4) dx over [0,1]^d per ball of half-side ρ0 columns away from the faces: (B, 4).

    U = (2ρ0/G)^d.  Interior + layers (module docstring) while U ≤ 2^(1−d), the
    large-ball rule beyond.
    """
    rho0 = np.atleast_1d(np.asarray(rho0, dtype=float))
    out = np.zeros((len(rho0), 4))
    big = (d >= 2) & ((2 * rho0 / G) ** d > 2.0 ** (1 - d) * (1 + 1e-12))
    small = np.flatnonzero(~big)
    if len(small):
        r = rho0[small]
        out[small] = np.stack(combine([_uncut_axis(r, G)] * d), axis=1)
        out[small] += 2.0 / G * _layer_1d(G, r) if d == 1 else _layers(d, G, r)
    for i in np.flatnonzero(big):
        out[i] = _large_ball(d, G, (2 * rho0[i]) ** d)
    return out


# ----------------------------------------------------------------------------- tables and the ball mass


def table_grid(d: int, G: int) -> np.ndarray:
    """The ρ0 of a table, up to U = 1 − ``TOP_GAP`` (U = 1 itself has no faces: the limit is taken).

    ``COARSE`` points a decade below ρ0 = 0.02 (g is ~ quadratic there), ``PER_DECADE``
    above; at most 1/16 of a column apart where G ≤ ``RESOLVE_G[d]`` (g moves with the
    faces' position in their columns, period 1/2 in ρ0, by an amount that falls like
    1/G); and geometrically closer towards U = 1 (ratio ``NEAR_TOP`` of the distance).
    """
    half = G / 2.0
    top = half * (1 - TOP_GAP) ** (1.0 / d)
    points, rho = [], RHO_MIN
    while rho < top:
        points.append(rho)
        step = rho * (10.0 ** (1.0 / (COARSE if rho < 0.02 else PER_DECADE)) - 1)
        if G <= RESOLVE_G[d]:
            step = min(step, 1.0 / 16, G / 64.0)
        rho += min(step, NEAR_TOP * (half - rho))
    return np.array(points + [top])


def table_abscissa(log_U):
    """ξ = logit U, the spline's abscissa: log U below (= d log ρ0 + const), log 1/(1 − U) near U = 1."""
    log_U = np.asarray(log_U, dtype=float)
    return log_U - _log1m_exp(log_U)


@lru_cache(maxsize=1024)
def g_table(d: int, G: int) -> CubicSpline:
    """(g1..g4) against ξ = logit U on :func:`table_grid`, a cubic spline (module docstring)."""
    rho0 = table_grid(d, G)
    return CubicSpline(table_abscissa(d * np.log(2 * rho0 / G)), g_terms(d, G, rho0), axis=0)


def _log1m_exp(s):
    """log(1 − e^s) for s < 0, to full relative precision at both ends."""
    s = np.minimum(np.asarray(s, dtype=float), -1e-300)
    with np.errstate(divide="ignore"):  # both branches are evaluated; each is used where it is precise
        return np.where(s < -np.log(2), np.log1p(-np.exp(s)), np.log(-np.expm1(s)))


@lru_cache(maxsize=4096)
def beta_log_nodes(k: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes s = log U and weights (summing to 1) of U ~ Beta(k, N − k + 1) (module docstring).

    The log-density of s, ℓ(s) = k s + (N − k) log(1 − e^s) + const, is concave;
    the window is where it lies within ``TAIL`` of its mode (concavity bounds the
    mass outside by e^-TAIL · width / TAIL of the mode's density), cut into panels of
    at most two standard deviations (and half a unit of s: the tables move on that
    scale) with an 8-point rule each.  Differences of ℓ are formed directly, so no
    Beta function of arguments up to 10^15 is evaluated.
    """
    k, N = int(k), int(N)
    if k == N:  # ℓ(s) = N s on s < 0: the mode sits at U = 1
        lo, hi, sd = -TAIL / N, 0.0, 1.0 / N

        def ell(s):
            return N * s
    else:
        mode = np.log1p(-(N - k) / N)
        base = _log1m_exp(mode)
        sd = np.sqrt((N - k) / (k * float(N)))

        def ell(s):
            return k * (s - mode) + (N - k) * (_log1m_exp(s) - base)

        step = sd
        while ell(mode - step) > -TAIL:
            step *= 2
        lo = brentq(lambda s: ell(s) + TAIL, mode - step, mode, xtol=1e-14 * (1 + abs(mode)))
        right = [mode + sd * 2 ** j for j in range(60) if mode + sd * 2 ** j < mode / 2]
        right += [mode * 2.0 ** -j for j in range(1, 1070)]
        b = next(s for s in right if ell(s) < -TAIL)
        hi = brentq(lambda s: ell(s) + TAIL, mode, b, xtol=1e-14 * (1 + abs(mode)))
    panels = int(min(400, np.ceil((hi - lo) / min(2 * sd, 0.5))))
    s, w = _panels(lo, hi, max(panels, 1), GL8)
    w = w * np.exp(ell(s) - np.max(ell(s)))
    return s, w / np.sum(w)


@lru_cache(maxsize=256)
def _stacked_nodes(ks: tuple, N: int):
    """:func:`beta_log_nodes` of every k, stacked: (ξ, weights, segment starts)."""
    nodes = [beta_log_nodes(k, N) for k in ks]
    starts = np.cumsum([0] + [len(s) for s, _ in nodes[:-1]])
    return (table_abscissa(np.concatenate([s for s, _ in nodes])), np.concatenate([w for _, w in nodes]),
            starts)


def mean_g(d: int, G: int, ks, N: int) -> np.ndarray:
    """E over U ~ Beta(k, N−k+1) of (g1..g4) at cube count G, per k of ``ks``: (len(ks), 4).

    The table is clamped at its ends (module docstring).
    """
    xi, w, starts = _stacked_nodes(tuple(int(k) for k in ks), int(N))
    spline = g_table(d, G)
    values = spline(np.clip(xi, spline.x[0], spline.x[-1]))
    return np.add.reduceat(w[:, None] * values, starts, axis=0)


def expected_knn_risks(d: int, G: int, height: float, N: int, ks, moments) -> list:
    r"""E of the kNN mean's excess risk for each k of ``ks`` with label/report moments ``moments``.

    ``moments``: (α0, α1, β0, σ²) per entry (module docstring); ``height`` = L G^-β.
    E (η̂ − η)² = α0² + (β0 − α0² + σ²)/k + h² [α1² ((k−1)(k−2) g1 + 2(k−1) g2)/k²
    − 2 α1 ((k−1) g3 + g4)/k + (3/8)^d], g the Beta means of the tables.
    """
    ks = np.array([int(k) for k in ks])
    unique, where = np.unique(ks, return_inverse=True)
    g1, g2, g3, g4 = mean_g(d, G, unique, N)[where].T
    a0, a1, b0, noise = (np.array(m, dtype=float) for m in zip(*moments))
    k = ks.astype(float)
    bias = a1 ** 2 * ((k - 1) * (k - 2) * g1 + 2 * (k - 1) * g2) / k ** 2 - 2 * a1 * ((k - 1) * g3 + g4) / k
    return [float(r) for r in a0 ** 2 + (b0 - a0 ** 2 + noise) / k + height ** 2 * (bias + ETA2 ** d)]
