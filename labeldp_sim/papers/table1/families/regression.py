r"""Minimax-hard regression families: a bump on every cube, bounded or heavy-tailed labels (Appendix F, J).

η_v(x) = Σ_k v_k L h^β φ((x − c_k)/h) over *all* G^d cubes of side h = 1/G,
φ(u) = Π cos²(πu_i), with signs v drawn per trial (:class:`BumpSigns`).  The
label law given x is affine in η(x) (:meth:`BoundedBump.label_probs`,
:meth:`HeavyTailBump.label_probs`), so cube and region averages of η give the
label law of a cube or region, which the sufficient-statistic paths draw from.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from labeldp_sim.harness.components import Nullable
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.table1.families.base import BETA, D, H_SCALE, MOMENT, POSITIVE, UNIT, RegressionFamily
from labeldp_sim.papers.table1.families.cells import RegressionCellModel, cube_index
from labeldp_sim.papers.table1.families.geometry import (COS2, COS2_SQUARE_INTEGRAL, full_bump_geometry, full_bump_row_sums, cos2_overlap_square_sum,
                       cos2_projection_deficit)

__all__ = ["BumpSigns", "BoundedBump", "HeavyTailBump", "RegressionBumpInstance"]


class _RegressionBump(RegressionFamily):
    """Shared part of the regression bump families (Appendix F, J): every cube carries a bump."""

    minimax_hard = True
    supports_sufficient = True
    exact_sign_average = True

    def _set_common(self, d, beta, L, h_scale):
        self.d, self.beta, self.L, self.h_scale = int(d), float(beta), float(L), float(h_scale)

    def n_bumps(self, G: int) -> int:
        return G ** self.d

    def draw(self, rng, G: int):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return RegressionBumpInstance(self, int(G), BumpSigns(G ** self.d, rng))

    @lru_cache(maxsize=1 << 16)
    def sign_averaged_cubes(self, G: int, G_est: int) -> tuple[float, float]:
        r"""(∫η², Σ_r E_v (∫_{B_r} η)² / P(B_r)) for the instance at h = 1/G and G_est^d estimator cubes.

        Exact and averaged over the independent signs v: ∫η² = (L h^β)² (3/8)^d
        whatever the signs, and E_v (∫_{B_r} η)² = (L h^β)² Σ_k W_rk² with the
        product overlaps W of :func:`~.geometry.cos2_overlap_square_sum` (P(B_r) = G_est^-d).
        The second is the squared norm of η's projection on the cubes.
        """
        height2 = (self.L * float(G) ** (-self.beta)) ** 2
        return (height2 * COS2_SQUARE_INTEGRAL ** self.d,
                height2 * float(G_est) ** self.d * cos2_overlap_square_sum(int(G), int(G_est)) ** self.d)

    @lru_cache(maxsize=1 << 16)
    def sign_averaged_bias(self, G: int, G_est: int) -> float:
        r"""∫η² − Σ_r E_v (∫_{B_r} η)² / P(B_r): the difference of :meth:`sign_averaged_cubes`, not cancelling.

        The squared bias of the cube mean with exact cell means, (L h^β)² ((3/8)^d − (3/8 − D)^d)
        with D the per-axis deficit (:func:`~.geometry.cos2_projection_deficit`), written
        (L h^β)² D Σ_i (3/8)^i (3/8 − D)^(d−1−i): non-negative terms only.  Forming it from the two
        numbers :meth:`sign_averaged_cubes` returns leaves an absolute error of a few ε ∫η², which is
        (G_est/G)² relative for G_est ≫ G (it is of order (G/G_est)² ∫η²).
        """
        height2 = (self.L * float(G) ** (-self.beta)) ** 2
        D = cos2_projection_deficit(int(G), int(G_est))
        x, y = COS2_SQUARE_INTEGRAL, COS2_SQUARE_INTEGRAL - D
        return height2 * D * sum(x ** i * y ** (self.d - 1 - i) for i in range(self.d))

    @lru_cache(maxsize=1 << 16)
    def clipped_label_moments(self, G: int, T) -> tuple[float, float, float, float]:
        """(α0, α1, β0, β1) with E[c(Y) | η] = α0 + α1 η and E[c(Y)² | η] = β0 + β1 η, c = Clip(·, T).

        The label law given x is affine in η(x) (:meth:`label_probs`), so both are affine
        in η; T = None leaves the labels as they are.
        """
        values = self.label_law(int(G))
        clipped = values if T is None else np.clip(values, -T, T)
        at0, at1 = self.label_probs(np.array([0.0, 1.0]), values)
        slope = at1 - at0
        return (float(clipped @ at0), float(clipped @ slope), float(clipped ** 2 @ at0),
                float(clipped ** 2 @ slope))


class BumpSigns:
    """The signs v ∈ {−1, +1}^n of n bumps, i.i.d. uniform, each drawn when first looked at.

    A kNN trial drawn from its marginal law looks at the few bumps its query
    regions meet, while G^d grows with N (10^7 bumps at d = 3, N = 10^12): the
    signs it never looks at need not exist, and leaving them undrawn does not
    change the law of the ones it does.  Up to ``EAGER`` bumps all signs are
    drawn at once, which is cheaper than the bookkeeping.  The signs come from
    their own stream, spawned from the trial's, so the order of lookups fixes
    the numbers for a given seed.
    """

    EAGER = 2 ** 16

    def __init__(self, n: int, rng: np.random.Generator):
        self.n = int(n)
        self._rng = rng.spawn(1)[0]
        self._all = self._draw(self.n) if self.n <= self.EAGER else None
        self._keys = np.empty(0, dtype=np.int64)
        self._values = np.empty(0)

    def _draw(self, size):
        return self._rng.choice(np.array([-1.0, 1.0]), size=size)

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if self._all is not None:
            return self._all[index]
        index = np.asarray(index, dtype=np.int64)
        wanted = np.unique(index)
        new = np.setdiff1d(wanted, self._keys, assume_unique=True)
        if len(new):
            keys = np.concatenate([self._keys, new])
            order = np.argsort(keys, kind="stable")
            self._keys, self._values = keys[order], np.concatenate([self._values, self._draw(len(new))])[order]
        return self._values[np.searchsorted(self._keys, index)]

    def __array__(self, dtype=None, copy=None):
        """Every sign (drawing those not yet looked at)."""
        if self._all is None:
            everything = self._draw(self.n)
            everything[self._keys] = self._values
            self._all = everything
        return self._all if dtype is None else self._all.astype(dtype)


class BoundedBump(_RegressionBump):
    r"""Bounded labels Y = ±T with E[Y|x] = η_v(x) (Appendix F, with T in place of 1).

    η_v(x) = Σ_k v_k L h^β φ((x − c_k)/h) over *all* G^d cubes, φ(u) = Π cos²(πu_i);
    P(Y = T | x) = (1 + η_v(x)/T)/2.  With h tied to N, ε as in (138)/(111) the
    risk of the cube and kNN estimators scales as h^(2β) (137), (153).

    Parameters
    ----------
    d, beta, L, h_scale : as in :class:`HolderBump`
    T : float > 0
        Label bound (Assumption 2); needs L ≤ T.
    """

    name = "bounded_bump"
    labels = "bounded"
    parameters = {"d": D, "beta": BETA, "T": POSITIVE, "L": UNIT, "h_scale": H_SCALE}

    def __init__(self, d=1, beta=1.0, T=1.0, L=1.0, h_scale=1.0):
        self.check_parameters(d=d, beta=beta, T=T, L=L, h_scale=h_scale)
        check(L <= T, "L", L, f"finite numbers <= T = {T} (|η| must stay below the label bound)")
        self._set_common(d, beta, L, h_scale)
        self.T, self.p, self.M_p = float(T), float("nan"), float("nan")

    @property
    def label_bound(self) -> float:
        """The label bound T: the clip level of ``mechanism.T: theory`` (or null)."""
        return self.T

    def construction_valid(self, G: int) -> bool:
        return True

    def label_law(self, G: int):
        return np.array([-self.T, self.T])

    def label_probs(self, eta, values):
        """P(Y = ±T | η): (1 ∓ η/T)/2, for an array of η."""
        up = (1 + eta / self.T) / 2
        return np.stack([1 - up, up], axis=-1)


class HeavyTailBump(_RegressionBump):
    r"""Heavy-tailed labels: the three-point law (171) with T_h from (174).

    Y ∈ {−T_h, 0, T_h}, P(Y = ±T_h | x) = (M_p/T_h^p ± η_v(x)/T_h)/2, so
    E|Y|^p = M_p (172) and E[Y|x] = η_v(x) (173), with
    T_h = (M_p h^(−β)/2)^(1/(p−1)) (174) growing as h shrinks.

    Parameters
    ----------
    d, beta, L, h_scale : as in :class:`BoundedBump`
    p : float ≥ 2
        Moment order.
    M_p : float > 0
        Moment bound E|Y|^p ≤ M_p.
    tail_level : float > 0 or None
        None: T_h from (174) (the private cells' lower bounds).  A number
        fixes T_h (the non-private lower bound needs no growing tail, and a
        fixed law keeps the label variance constant across N).
    """

    name = "heavy_bump"
    labels = "heavy"
    parameters = {"d": D, "beta": BETA, "p": MOMENT, "M_p": POSITIVE, "L": UNIT, "h_scale": H_SCALE,
                  "tail_level": Nullable(POSITIVE, "T_h from (174)")}

    def __init__(self, d=1, beta=1.0, p=3.0, M_p=1.0, L=1.0, h_scale=1.0, tail_level=None):
        self.check_parameters(d=d, beta=beta, p=p, M_p=M_p, L=L, h_scale=h_scale, tail_level=tail_level)
        check(tail_level is None or tail_level ** p >= M_p, "tail_level", tail_level,
              f"null (T_h from (174)) or numbers >= M_p^(1/p) = {M_p ** (1 / p):.4g} (so that P(Y = 0) >= 0)")
        self._set_common(d, beta, L, h_scale)
        self.p, self.M_p, self.tail_level = float(p), float(M_p), tail_level
        self.T = float("nan")

    def tail(self, G: int) -> float:
        """T_h of (174) at h = 1/G (or the fixed tail level)."""
        if self.tail_level is not None:
            return float(self.tail_level)
        return (self.M_p * float(G) ** self.beta / 2) ** (1 / (self.p - 1))

    def construction_valid(self, G: int) -> bool:
        """(171) is a law when M_p/T_h^p ≤ 1 and |η| ≤ M_p T_h^(1−p)."""
        T = self.tail(G)
        return self.M_p / T ** self.p <= 1 and self.L * (1 / G) ** self.beta <= self.M_p * T ** (1 - self.p) + 1e-12

    def label_law(self, G: int):
        T = self.tail(G)
        return np.array([-T, 0.0, T])

    def label_probs(self, eta, values):
        """P(Y = −T_h, 0, T_h | η) of (171), for an array of η (``values``: the instance's label law)."""
        T = values[-1]
        base = self.M_p / T ** self.p
        return np.stack([(base - eta / T) / 2, np.full_like(eta, 1 - base), (base + eta / T) / 2], axis=-1)


class RegressionBumpInstance:
    """One draw η_v of a regression bump family at cube count G."""

    def __init__(self, family, G: int, signs: np.ndarray):
        self.family, self.G, self.signs = family, G, signs
        self.height = family.L * (1.0 / G) ** family.beta
        self.values = family.label_law(G)

    def label_probs(self, eta):
        """P(Y = values[v] | η) for an array of η (local, cube or region averages: the law is affine in η)."""
        return self.family.label_probs(eta, self.values)

    def cell_model(self, G_est: int) -> RegressionCellModel:
        d = self.family.d
        n_cells = int(G_est) ** d
        eta_int = self.height * (full_bump_geometry(d, self.G, int(G_est), 1) @ np.asarray(self.signs))
        eta2_int = self.height ** 2 * full_bump_row_sums(d, self.G, int(G_est))
        mass = np.full(n_cells, float(G_est) ** (-d))
        return RegressionCellModel(n_cells, mass, self.values, self.label_probs(eta_int / mass),
                                   eta_int, eta2_int)

    def eta(self, X: np.ndarray) -> np.ndarray:
        """η_v at each row of X."""
        eta = COS2.values(X, self.G)
        eta *= self.height
        eta *= self.signs[cube_index(X, self.G)]
        return eta

    def sample(self, N: int, rng):
        """N i.i.d. pairs (X, Y): Y by inverting the label CDF at one uniform u per sample.

        Y = values[v] for the number v of steps F_v(η(X)) = P(Y ≤ values[v] | X) below
        u.  F_v is affine in η (:meth:`label_probs`) and |η| ≤ L h^β, so F_v lies in a band
        [lo_v, hi_v] of width ~ L h^β / T whatever X is, and a u outside every band
        gives Y without η.  η, the costly part (a cosine per axis), is computed only
        for the samples whose u falls in a band, a share ~ L h^β / T of them.  The
        law is the inversion's, exactly.
        """
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        X = rng.random((N, self.family.d))
        u = rng.random(N)
        F = np.cumsum(self.label_probs(np.array([-self.height, self.height])), axis=1)[:, :-1]  # (2, V−1)
        lo, hi = F.min(axis=0), F.max(axis=0)
        centre, slope = F.mean(axis=0), (F[1] - F[0]) / (2 * self.height)  # F_v(η) = centre + slope·η
        steps_below = np.zeros(N, dtype=np.uint8)  # v: a few label values
        unsure = np.zeros(N, dtype=bool)
        for v in range(len(lo)):
            steps_below += u > hi[v]
            unsure |= (u >= lo[v]) & (u <= hi[v])
        rows = np.flatnonzero(unsure)
        u, eta = u[rows], self.eta(X.take(rows, axis=0))
        exact = np.zeros(len(rows), dtype=np.uint8)
        for v in range(len(lo)):
            exact += u > centre[v] + slope[v] * eta
        steps_below[rows] = exact
        return X, self.values.take(steps_below)

