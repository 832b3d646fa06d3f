r"""kNN estimates drawn from their exact marginal law at each query point: O(queries), not O(N).

The expected excess risk (9) of a kNN mean, E ∫ (η̂(x) − η(x))² dx, depends on the
data only through the law of η̂(x) at each x.  Under X uniform on [0,1]^d that law
has a closed description (order statistics of the distances D_i = ρ(X_i, x)):

1. **Radius.**  The region B(x, r) ∩ [0,1]^d has mass V(r), continuous and
   increasing from 0 to 1, and V(D_i) is uniform on (0, 1); so the mass of the
   region reaching the k-th neighbour is the k-th order statistic of N uniforms,
   U ~ Beta(k, N − k + 1), and the radius is R = V^(-1)(U).
2. **Inner points.**  Given R = r, the k − 1 nearer points are i.i.d. uniform on
   B(x, r) ∩ [0,1]^d.  The bump families' label law P(Y = v | X) is affine in
   η(X), so each inner label has the law p_v(η̄_in) with η̄_in the region average of
   η, and their value counts are Multinomial(k − 1, p(η̄_in)) (binomial for ±T).
3. **The k-th point** lies on the boundary {ρ(X, x) = r} ∩ [0,1]^d, with density
   proportional to its surface measure; its label has the law p(η̄_∂), η̄_∂ the
   surface average of η.
4. **Privacy.**  The k value counts go through the mechanism's own
   ``sample_aggregate`` (clipping and noise in one place, e.g. Σ Lap as a gamma
   difference), and η̂(x) = S/k.

With the ℓ∞ ball the region is a box, and η (sums of products of cos² bumps)
integrates over boxes and their faces in closed form, so every step is exact.
In d = 1 every norm is |x − x'|, so the Euclidean kNN of the paper is covered.
For the Euclidean ball in d ≥ 2 the integrals have no closed form: that metric
runs per sample.

Queries are independent given the instance, while on the per-sample path they
share one data set: each query's estimate has the same law on both paths, so
the mean risk is the same, but the per-trial spread of the marginal-law risk is
smaller (and is what the reported standard errors measure).
"""

from __future__ import annotations

import numpy as np

from labeldp_sim.privacy.protocols import CubeData
from labeldp_sim.papers.table1.families.geometry import cos2_antiderivative

__all__ = ["region_mass", "radius_for_mass", "draw_knn_estimates", "box_and_boundary_means"]

# bisection halvings: (1/2)^70 of the unit side is below float64 resolution at any radius
_HALVINGS = 70


def _box(queries: np.ndarray, r: np.ndarray):
    """The ℓ∞ ball of radius r about each query, cut to the unit cube: (lo, hi), shape (Q, d)."""
    r = np.asarray(r, dtype=float)[:, None]
    return np.maximum(queries - r, 0.0), np.minimum(queries + r, 1.0)


def region_mass(queries: np.ndarray, r: np.ndarray) -> np.ndarray:
    """V(r) = |B_∞(x, r) ∩ [0,1]^d| = Π_i (min(r, x_i) + min(r, 1 − x_i)) per query.

    Each side is summed from its two halves rather than taken as hi − lo, which
    would lose all precision for a radius far below the query's coordinates.
    """
    return np.prod(_sides(queries, r), axis=1)


def _sides(queries: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Side lengths of the ℓ∞ ball cut to the cube, min(r, x_i) + min(r, 1 − x_i), shape (Q, d)."""
    r = np.asarray(r, dtype=float)[:, None]
    return np.minimum(r, queries) + np.minimum(r, 1.0 - queries)


def radius_for_mass(queries: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """V^(-1)(mass) per query, by bisection on the continuous increasing V.

    Away from the cube's faces V(r) = (2r)^d; that closed form is taken where
    it holds, and bisection (to float64 resolution) elsewhere.
    """
    mass = np.asarray(mass, dtype=float)
    d = queries.shape[1]
    r = 0.5 * mass ** (1.0 / d)
    inside = r <= np.min(np.minimum(queries, 1.0 - queries), axis=1)
    if np.all(inside):
        return r
    todo = ~inside
    x, target = queries[todo], mass[todo]
    lo = np.zeros(len(x))
    hi = np.max(np.maximum(x, 1.0 - x), axis=1)  # V(hi) = 1
    for _ in range(_HALVINGS):
        mid = 0.5 * (lo + hi)
        below = region_mass(x, mid) < target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    r[todo] = 0.5 * (lo + hi)
    return r


def _axis_columns(lo: np.ndarray, hi: np.ndarray, G: int):
    """Bump columns j (side 1/G) met by [lo, hi] on each axis: first column and count, (Q, d)."""
    first = np.minimum(np.floor(lo * G), G - 1).astype(np.int64)
    last = np.minimum(np.floor(hi * G), G - 1).astype(np.int64)
    return first, last - first + 1


def _tuple_signs(signs, G: int, first: np.ndarray, M: int) -> np.ndarray:
    """sign(j) of the bump at each column tuple (first_i + m_i)_i, shape (Q, M, …, M) (d axes).

    Looked up once per trial: the box and every face sum over the same tuples.
    """
    Q, d = first.shape
    flat = np.zeros((Q,) + (M,) * d, dtype=np.int64)
    for i in range(d):
        shape = [Q] + [1] * d
        shape[1 + i] = M
        flat = flat * G + np.minimum(first[:, i, None] + np.arange(M), G - 1).reshape(shape)
    return signs[flat]


def _signed_sum(tuple_signs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    r"""Σ over column tuples of sign · Π_i weights[q, i, m_i], per query.

    ``weights`` (Q, d, M) is zero past each axis's last column; the sum runs
    over the M^d tuples by broadcasting (M is a few columns: the region spans
    about one bump per axis under the cell's tuning).
    """
    Q, d, M = weights.shape
    product = tuple_signs
    for i in range(d):
        shape = [Q] + [1] * d
        shape[1 + i] = M
        product = product * weights[:, i, :].reshape(shape)
    return np.sum(product, axis=tuple(range(1, d + 1)))


def box_and_boundary_means(instance, queries: np.ndarray, r: np.ndarray):
    r"""Region and boundary averages of η_v for the ℓ∞ ball of radius r about each query.

    η_v(x) = v_{j(x)} · L h^β · Π_i cos²(π u_i), u = local coordinate in the bump
    column (Appendix F); each axis integral is the closed-form antiderivative of
    cos², so both averages are exact:

    η̄_in = ∫_{box} η / |box|,   η̄_∂ = Σ_faces ∫_face η / Σ_faces |face|,

    the faces being those of {‖X − x‖_∞ = r} that lie inside the unit cube
    (in d = 1: the points x ± r inside [0, 1], each with weight 1).
    """
    G, signs, height = instance.G, instance.signs, instance.height
    lo, hi = _box(queries, r)
    Q, d = queries.shape
    first, count = _axis_columns(lo, hi, G)
    M = int(count.max())
    cols = first[:, :, None] + np.arange(M)  # (Q, d, M)
    valid = np.arange(M) < count[:, :, None]

    def local(t):  # u of coordinate t in column cols, (Q, d, M)
        return t[:, :, None] * G - cols - 0.5

    axis_int = np.where(valid, (cos2_antiderivative(local(hi)) - cos2_antiderivative(local(lo))) / G, 0.0)
    side = _sides(queries, r)
    tuple_signs = _tuple_signs(signs, G, first, M)
    mean_in = height * _signed_sum(tuple_signs, axis_int) / np.prod(side, axis=1)

    face_int = np.zeros(Q)
    face_area = np.zeros(Q)
    for i in range(d):
        other = np.prod(np.delete(side, i, axis=1), axis=1)
        for coordinate, present in ((hi[:, i], queries[:, i] + r < 1.0), (lo[:, i], queries[:, i] - r > 0.0)):
            if not np.any(present):
                continue
            column = np.minimum(np.floor(coordinate * G), G - 1).astype(np.int64)
            at = (column - first[:, i])[:, None] == np.arange(M)
            weights = axis_int.copy()
            weights[:, i, :] = np.where(at, np.cos(np.pi * (coordinate * G - column - 0.5))[:, None] ** 2, 0.0)
            face_int += np.where(present, _signed_sum(tuple_signs, weights), 0.0)
            face_area += np.where(present, other, 0.0)
    # the whole cube inside the ball (k = N) leaves no face: the k-th point is any point
    mean_boundary = np.divide(height * face_int, face_area, out=mean_in.copy(), where=face_area > 0)
    return mean_in, mean_boundary


def draw_knn_estimates(instance, queries: np.ndarray, N: int, k: int, mechanism, rng) -> np.ndarray:
    """η̂(x) of the kNN mean (20) at each query, each exactly in its marginal law (module docstring).

    ``instance`` is a regression bump instance (a discrete label law affine in η);
    ``mechanism`` a label-local mechanism with ``sample_aggregate``.
    """
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    Q = len(queries)
    mass = rng.beta(k, N - k + 1, size=Q)
    r = radius_for_mass(queries, mass)
    mean_in, mean_boundary = box_and_boundary_means(instance, queries, r)
    counts = rng.multinomial(k - 1, instance.label_probs(mean_in))
    counts += rng.multinomial(1, instance.label_probs(mean_boundary))  # the k-th point's label
    _, S = mechanism.sample_aggregate(CubeData.from_counts(counts, instance.values), N, rng)
    return S / k
