r"""Exact expected risk of a cube classifier (K = 2): the law of the cubes' tilts, and the choice curve.

Classes 0 and 1; on an estimator cube B_r the bumps k it meets put masses
W_rk = ∫_{B_r ∩ bump k} g on their preferred classes c_k (independent, uniform).
With D_r = Σ_k s_k W_rk (s_k = ±1 for c_k = 1, 0), T_r = Σ_k W_rk and Ψ the
mechanism's choice bias (P(class 1) − P(class 0), :mod:`labeldp_sim.privacy.choice_law`),
the released class costs (8) S_−(½ + ½Ψ) + S_+(½ − ½Ψ) = T_r/2 − D_r Ψ(D_r)/2, so

    E R = ½ (Σ_r T_r − Σ_r E_s F(|D_r|)),   F(D) = D Ψ(D)   (even, 0 ≤ F(D) ≤ D).

The expectation is exact in the data and the noise (Ψ) and in the classes:
equal weights of a cube are grouped, D_r = Σ_g W_g (2B_g − m_g) with B_g ~ Bin(m_g, ½),
and cubes with the same group counts share that law (one matrix product for all of
them, each binomial cut at ±40 sd, X and −X counted once).  Two objects carry it,
so that the geometry (per instance and estimator scale) and the mechanism (per N
and ε) are each computed once:

* :class:`TiltMeasure` — ν = Σ_r law(|D_r|) compressed on bins of |D|
  (``BINS_PER_OCTAVE`` per factor 2, ``NODES`` Chebyshev points each): the weight
  of a node is ∫ ℓ_j dν, ℓ_j its Lagrange polynomial, so ∫ F dν is exact for F
  polynomial of degree < ``NODES`` on each bin;
* :class:`ChoiceCurve` — F at the nodes of the bins a measure uses (cached).

Errors.  (i) Interpolation: per bin ≤ (1 + Λ) · min-max error of F there
(Λ < 2.5, the Lebesgue constant of 8 Chebyshev nodes); :meth:`ChoiceCurve.error`
estimates it from the two last Chebyshev coefficients (an estimate, not a bound:
against F at every tilt it exceeded the error seen by factors of 10 to 10^4, and that
error stayed below 3e-8 relative; tests/test_exact_classification.py).  (ii) A cube meeting so
many bumps that the law of D_r has more than ``EXACT_SUPPORT`` values is given
the normal law of the same variance; the Wasserstein-1 distance of a Rademacher
sum to it is at most Σ_k W_rk³ / σ_r² (Goldstein 2010), so ∫ F dν moves by at
most Lip(F) times the measure's ``stein`` budget (:meth:`ChoiceCurve.error` adds it).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln

from labeldp_sim.privacy.choice_law import ChoiceLaw

__all__ = ["TiltMeasure", "ChoiceCurve", "choice_curve", "BINS_PER_OCTAVE", "NODES", "tilt_laws"]

BINS_PER_OCTAVE = 2
NODES = 8
EXACT_SUPPORT = 1 << 16   # values of the law of one D_r before the normal replacement
PREFETCH = 6              # bins evaluated on each side of those a measure asks for
_X = np.cos((2 * np.arange(NODES) + 1) * np.pi / (2 * NODES))  # Chebyshev points on [−1, 1]


def bin_edges(bins):
    """[lo, hi) of bins b: 2^(b/BINS_PER_OCTAVE) … 2^((b+1)/BINS_PER_OCTAVE)."""
    b = np.asarray(bins, dtype=float)
    return 2.0 ** (b / BINS_PER_OCTAVE), 2.0 ** ((b + 1) / BINS_PER_OCTAVE)


def bin_nodes(bins) -> np.ndarray:
    """The Chebyshev nodes of each bin, shape (len(bins), NODES)."""
    lo, hi = bin_edges(bins)
    return lo[:, None] + (hi - lo)[:, None] * (_X[None, :] + 1.0) / 2.0


# ℓ_j(y) = (1/NODES) Σ_k c_k T_k(x_j) T_k(y), c_0 = 1, c_k = 2 (discrete orthogonality of the nodes):
# a bin's node weights are this matrix times its Chebyshev moments Σ mass · T_k(y)
_TO_NODES = np.cos(np.outer(np.arccos(_X), np.arange(NODES))) * np.r_[1.0, 2.0 * np.ones(NODES - 1)] / NODES


def _node_weights(values, masses):
    """(bins, weights (len(bins), NODES)): Σ masses · ℓ_j(value) per bin, for values > 0."""
    bins = np.floor(BINS_PER_OCTAVE * np.log2(values)).astype(np.int64)
    b0 = int(bins.min())
    slot = bins - b0
    present = np.bincount(slot)
    edges = 2.0 ** ((np.arange(len(present) + 1) + b0) / BINS_PER_OCTAVE)
    y = 2.0 * (values - edges[slot]) / (edges[slot + 1] - edges[slot]) - 1.0
    moments = np.empty((len(present), NODES))
    prev, cur = np.ones_like(y), y
    moments[:, 0] = np.bincount(slot, weights=masses, minlength=len(present))
    for k in range(1, NODES):
        moments[:, k] = np.bincount(slot, weights=masses * cur, minlength=len(present))
        prev, cur = cur, 2.0 * y * cur - prev
    used = present > 0
    return np.flatnonzero(used) + b0, moments[used] @ _TO_NODES.T


class TiltMeasure:
    """ν = Σ_r law(|D_r|) on the node bins, with Σ_r T_r (``mass``) and the normal-law ``stein`` budget.

    Attributes
    ----------
    bins : ndarray of int, sorted
    weights : ndarray (len(bins), NODES)
    mass : float
        Σ_r T_r, the total bump mass the estimator's cubes see.
    stein : float
        Σ over normal-replaced cubes of count · Σ_k W_k³ / σ² (module docstring).
    """

    def __init__(self, bins, weights, mass, stein=0.0):
        self.bins, self.weights, self.mass, self.stein = bins, weights, float(mass), float(stein)

    @classmethod
    def from_points(cls, values, masses, mass, stein=0.0) -> "TiltMeasure":
        """The measure Σ masses_i δ(values_i) (values ≤ 0 carry F = 0 and are dropped)."""
        values, masses = np.asarray(values, float).ravel(), np.asarray(masses, float).ravel()
        keep = (values > 0) & (masses != 0)
        if not keep.any():
            return cls(np.zeros(0, np.int64), np.zeros((0, NODES)), mass, stein)
        bins, weights = _node_weights(values[keep], masses[keep])
        return cls(bins, weights, mass, stein)

    @classmethod
    def sum(cls, parts) -> "TiltMeasure":
        parts = [p for p in parts if p is not None]
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros((0, NODES)), 0.0)
        bins = np.concatenate([p.bins for p in parts])
        uniq, inv = np.unique(bins, return_inverse=True)
        weights = np.zeros((len(uniq), NODES))
        np.add.at(weights, inv, np.concatenate([p.weights for p in parts]))
        return cls(uniq, weights, sum(p.mass for p in parts), sum(p.stein for p in parts))


_LEGENDRE_12 = np.polynomial.legendre.leggauss(12)


def _half_normal(sigma, count):
    """count × the law of |σ Z| on the bins, by Gauss–Legendre (12 nodes) on each bin up to 40σ, for
    arrays of σ and count at once (points and weights flattened).

    The mass below 2^-40 σ (< 10^-12 of it, where F ≤ D is below 10^-12 σ) is left out.  Every σ gets the
    same number of bins, those from its first up to one past 40σ (the last ones, where 40σ falls early in
    its bin, hold a density below e^-800).
    """
    x, w = _LEGENDRE_12
    sigma, count = np.atleast_1d(np.asarray(sigma, float)), np.atleast_1d(np.asarray(count, float))
    b0 = np.floor(BINS_PER_OCTAVE * np.log2(sigma * 2.0 ** -40)).astype(np.int64)
    b1 = np.floor(BINS_PER_OCTAVE * np.log2(sigma * 40.0)).astype(np.int64) + 1
    bins = b0[:, None] + np.arange(int(np.max(b1 - b0)))[None, :]
    lo, hi = bin_edges(bins)
    pts = lo[..., None] + (hi - lo)[..., None] * (x + 1) / 2
    s = sigma[:, None, None]
    dens = np.sqrt(2.0 / np.pi) / s * np.exp(-0.5 * (pts / s) ** 2)
    wts = (hi - lo)[..., None] / 2 * w * dens * count[:, None, None]
    return pts.ravel(), wts.ravel()


def _signature_law(mult):
    """:func:`_signature_of` of the counts ``mult`` (any sequence of ints), kept: cubes of many types
    share a signature.  The arrays are read-only."""
    return _signature_of(tuple(int(m) for m in mult), EXACT_SUPPORT)


@lru_cache(maxsize=256)  # a law has at most EXACT_SUPPORT values: a few MB at the very most
def _signature_of(mult, max_support):
    """The law of X_g = 2 B_g − m_g, B_g ~ Bin(m_g, ½) independent: (X (k, S), probabilities (S,)), or
    None where it has more than ``max_support`` values (the caller's ``EXACT_SUPPORT``: a key of the cache).

    Each binomial is cut at ±40 standard deviations (mass < e^-800 left out).  X and −X have
    the same probability and give the same |D|: only the first of each pair is kept, twice.
    """
    axes, logp, support = [], [], 1
    for m in mult:
        sd = np.sqrt(m) / 2.0
        j = np.arange(max(0, int(np.floor(m / 2 - 40 * sd))), min(int(m), int(np.ceil(m / 2 + 40 * sd))) + 1)
        axes.append(2.0 * j - m)
        logp.append(gammaln(m + 1) - gammaln(j + 1) - gammaln(m - j + 1) - m * np.log(2.0))
        support *= len(j)
    if support > max_support:
        return None
    X = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")])
    prob = np.exp(sum(g.ravel() for g in np.meshgrid(*logp, indexing="ij")))
    nonzero = X != 0
    first = np.where(nonzero.any(axis=0), X[np.argmax(nonzero, axis=0), np.arange(X.shape[1])], 0.0)
    keep = first >= 0
    X, prob = X[:, keep], np.where(first[keep] > 0, 2.0, 1.0) * prob[keep]
    X.flags.writeable = prob.flags.writeable = False
    return X, prob


def _unique_rows(rows):
    """``np.unique(rows, axis=0, return_inverse=True)`` for rows of non-negative integers.

    Each row is coded as one integer in base max + 1, whose order is the rows' lexicographic order,
    so the distinct rows come out in the same order; numpy's row-wise unique sorts the rows as opaque
    bytes, most of a shifted classification cell's tilt-measure time.
    """
    base, width = int(rows.max()) + 1, rows.shape[1]
    if width * np.log2(base) >= 62:
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
        return uniq, inv.ravel()
    code = np.zeros(len(rows), np.int64)
    for j in range(width):
        code = code * base + rows[:, j]
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return rows[first], inv.ravel()


def _merge_equal(owner, W, mult):
    """Bumps of one cube with equal weights merged (their counts added), sorted by count then weight."""
    order = np.lexsort((W, owner))
    owner, W, mult = owner[order], W[order], mult[order]
    new = np.r_[True, (owner[1:] != owner[:-1]) | (W[1:] != W[:-1])]
    group = np.cumsum(new) - 1
    mult = np.bincount(group, weights=mult)
    owner, W = owner[new], W[new]
    order = np.lexsort((W, mult, owner))
    return owner[order], W[order], mult[order].round().astype(np.int64)


def tilt_laws(types, scale=1.0) -> TiltMeasure:
    """The measure of a :class:`~.families.tilt_geometry.TypeTable`, weights times ``scale``.

    Equal weights of a cube are merged into groups; cubes with the same group counts
    (m_1, …, m_k) share the law of (2B_g − m_g), so |D| = |Σ_g W_g (2B_g − m_g)| is one
    matrix product for all of them.  Past ``EXACT_SUPPORT`` values a cube gets the normal
    law of its variance (module docstring).
    """
    counts = np.asarray(types.counts, dtype=float)
    owner = np.repeat(np.arange(len(counts)), np.diff(types.ptr))
    W, mult = np.asarray(types.W, float) * scale, np.asarray(types.mult, float)
    mass = float(np.dot(counts[owner], W * mult))
    keep = (W > 0) & (mult > 0)
    owner, W, mult = owner[keep], W[keep], mult[keep].round().astype(np.int64)
    # cubes meeting a few bumps once each keep their lists (every sign pattern is enumerated anyway);
    # the others get equal weights merged, which keeps their laws small
    n_entries = np.bincount(owner, minlength=len(counts))
    plain = (n_entries <= 10) & (np.bincount(owner, weights=mult > 1, minlength=len(counts)) == 0)
    rest = ~plain[owner]
    if rest.any():
        o, w, m = _merge_equal(owner[rest], W[rest], mult[rest])
        owner, W, mult = np.r_[owner[~rest], o], np.r_[W[~rest], w], np.r_[mult[~rest], m]
        order = np.argsort(owner, kind="stable")
        owner, W, mult = owner[order], W[order], mult[order]
    k = np.bincount(owner, minlength=len(counts))
    start = np.r_[0, np.cumsum(k)[:-1]]
    parts, stein = [], 0.0
    for n_groups in np.unique(k[k > 0]):
        cubes = np.flatnonzero(k == n_groups)
        cols = start[cubes][:, None] + np.arange(n_groups)[None, :]
        if (mult[cols] == 1).all():  # the common case: each bump once
            sigs, which = np.ones((1, n_groups), np.int64), np.zeros(len(cubes), np.int64)
        else:
            sigs, which = _unique_rows(mult[cols])
        for s, sig in enumerate(sigs):
            rows = cols[which.ravel() == s]
            law = _signature_law(sig)
            if law is None:  # the normal law of the same variance, a block of cubes at a time
                for lo in range(0, len(rows), 2048):
                    block = rows[lo:lo + 2048]
                    sigma2 = np.einsum("rk,rk->r", mult[block], W[block] ** 2)
                    c = counts[owner[block[:, 0]]]
                    stein += float(np.sum(c * np.einsum("rk,rk->r", mult[block], W[block] ** 3) / sigma2))
                    pts, wts = _half_normal(np.sqrt(sigma2), c)
                    parts.append(TiltMeasure.from_points(pts, wts, 0.0))
                continue
            X, prob = law
            step = max(1, (1 << 21) // X.shape[1])
            for lo in range(0, len(rows), step):
                block = rows[lo:lo + step]
                values = np.abs(W[block] @ X)
                parts.append(TiltMeasure.from_points(values, counts[owner[block[:, 0]]][:, None] * prob[None, :],
                                                     0.0))
    total = TiltMeasure.sum(parts)
    return TiltMeasure(total.bins, total.weights, mass, stein)


class ChoiceCurve:
    """F(D) = D Ψ(D) of one :class:`~labeldp_sim.privacy.choice_law.ChoiceLaw` at the node bins, cached."""

    def __init__(self, law: ChoiceLaw):
        self.law = law
        self._cache = {}

    def values(self, bins) -> np.ndarray:
        """F at the nodes of ``bins``, shape (len(bins), NODES)."""
        missing = [int(b) for b in bins if int(b) not in self._cache]
        if missing:  # the neighbours too: the next instance scale asks for bins nearby (one batch, not many)
            missing = [b for b in range(min(missing) - PREFETCH, max(missing) + PREFETCH + 1) if b not in self._cache]
            nodes = bin_nodes(np.array(missing))
            F = nodes * self.law.bias(nodes)
            for b, row in zip(missing, F):
                self._cache[b] = row
        return np.array([self._cache[int(b)] for b in bins]).reshape(len(bins), NODES)

    def integral(self, measure: TiltMeasure) -> float:
        """∫ F dν (exact for F polynomial of degree < NODES on each bin)."""
        if len(measure.bins) == 0:
            return 0.0
        return float(np.sum(measure.weights * self.values(measure.bins)))

    def expected_risk(self, measure: TiltMeasure) -> float:
        """½ (Σ_r T_r − ∫ F dν): E (8) of the cube classifier (module docstring), never below 0.

        The difference is not a rounding problem (∫ D dν, exact for the node rule, is Σ_r E|D_r|, and
        T_r − |D_r| ≥ 0 cube by cube), but the interpolation of F = D − D(1 − Ψ) errs by about as much
        as that of D(1 − Ψ), which falls off faster than a polynomial on a bin: where the risk is
        ~0 (every cube inside one bump, Ψ ≈ 1) the value may come out a little below 0.  Within
        :meth:`error` (plus 64 ε of the mass for the sums) that is the stated error and the risk is
        0; beyond it, an error.
        """
        risk = 0.5 * (measure.mass - self.integral(measure))
        if risk >= 0:
            return risk
        bound = self.error(measure) + 64 * np.finfo(float).eps * abs(measure.mass)
        if risk < -bound:
            raise ValueError(f"negative expected risk {risk:.6g} of the cube classifier (mass {measure.mass:.6g}, "
                             f"N = {self.law.N}): beyond its error bound {bound:.3g}")
        return 0.0

    def error(self, measure: TiltMeasure) -> float:
        """An estimate of |error| of :meth:`expected_risk`: the interpolation tail and the normal budget."""
        if len(measure.bins) == 0:
            return 0.0
        F = self.values(measure.bins)
        k = np.arange(NODES)
        T = np.cos(np.outer(k, np.arccos(_X)))          # T_k(x_j)
        coef = 2.0 / NODES * F @ T.T
        tail = (np.abs(coef[:, -1]) + np.abs(coef[:, -2])) * 3.5 * np.abs(measure.weights).sum(axis=1)
        lo, hi = bin_edges(measure.bins)
        slope = np.abs(coef[:, 1:] * k[1:] ** 2).sum(axis=1) * 2.0 / (hi - lo)   # |F'| ≤ Σ k² |c_k| (2/width)
        return 0.5 * (float(tail.sum()) + float(slope.max()) * measure.stein)


@lru_cache(maxsize=1024)
def choice_curve(law: ChoiceLaw) -> ChoiceCurve:
    """The :class:`ChoiceCurve` of ``law``, one per process (its node values are cached in it)."""
    return ChoiceCurve(law)
