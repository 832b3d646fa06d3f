r"""Problem families: distributions of (X, Y) with a known regression function.

Features are X ~ Uniform[0, 1]^d (density f = 1, Assumption 1(c), (d)).
Labels take K classes, coded 0..K-1 (the paper's 1..K).

Every family here is a *tilt* of the uniform label law: at x a preferred class
a(x) gets probability

.. math:: \eta_{a}(x) = 1/K + (K-1) g(x)/K, \qquad \eta_j(x) = 1/K - g(x)/K \ (j \ne a),

so that η* − η_s = g(x).  For K = 2 this is the paper's η = η₂ − η₁ = ±g
with P(Y=2|x) = (1 + η)/2, (44).  Sampling is one line: with probability
g(x) draw Y = a(x), otherwise Y uniform on the K classes.

The excess risk (8) of a classifier constant on cubes needs only, per cube
B_l and per *component* (a piece of the support where a(x) is constant),
W_{lc} = ∫_{B_l ∩ component} g(x) dx: predicting class c on B_l costs
Σ_components W·1(c ≠ a).  :class:`CellModel` holds exactly that.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from .errors import check

__all__ = ["CellModel", "HolderBump", "SmoothMargin", "cube_index"]


@dataclass
class CellModel:
    """Everything about a partition that the excess risk and the counts need.

    Only *relevant* cells (those where some class choice costs risk) are
    listed; elsewhere η is uniform and every prediction is Bayes-optimal.

    Attributes
    ----------
    n_cells : int
        Number of cells of the estimator's partition (G_est^d).
    cells : ndarray of int, shape (R,)
        Linear indices of the relevant cells.
    mass : ndarray, shape (R,)
        P(X ∈ B_r).
    class_probs : ndarray, shape (R, K)
        P(Y = j | X ∈ B_r).
    regret : ndarray, shape (R, K)
        ∫_{B_r} (η*(x) − η_j(x)) f(x) dx: the excess risk (8) paid on B_r by
        predicting class j there.
    """

    n_cells: int
    cells: np.ndarray
    mass: np.ndarray
    class_probs: np.ndarray
    regret: np.ndarray

    def excess_risk(self, predictions: np.ndarray) -> float:
        """Exact (8) for a cube classifier; ``predictions`` has shape (R,)."""
        return float(self.regret[np.arange(len(self.cells)), predictions].sum())

    def regret_fraction(self, predictions: np.ndarray) -> float:
        """Excess risk over the worst attainable one (≈ share of wrong bump cubes)."""
        worst = self.regret.max(axis=1).sum()
        return self.excess_risk(predictions) / worst if worst > 0 else 0.0


def cube_index(X: np.ndarray, G: int) -> np.ndarray:
    """Linear (C-order) index of the cube of side 1/G holding each row of X."""
    idx = np.minimum((X * G).astype(np.int64), G - 1)
    return np.ravel_multi_index(tuple(idx.T), (G,) * X.shape[1])


def _tilt_model(n_cells, cells, mass, W, comp_class, K) -> CellModel:
    """CellModel from W (R × components, sparse or dense) and component classes."""
    onehot = np.zeros((len(comp_class), K))
    onehot[np.arange(len(comp_class)), comp_class] = 1.0
    W_on_class = np.asarray(W @ onehot)  # (R, K): ∫ g over parts preferring j
    W_total = W_on_class.sum(axis=1, keepdims=True)
    class_probs = 1.0 / K + (W_on_class - W_total / K) / mass[:, None]
    regret = W_total - W_on_class
    return CellModel(n_cells, cells, mass, class_probs, regret)


def _cos2_antiderivative(u):
    """Φ(u) = ∫_{-1/2}^{u} cos²(πs) ds for the 1-d bump, u clipped to [-1/2, 1/2]."""
    u = np.clip(u, -0.5, 0.5)
    return u / 2 + np.sin(2 * np.pi * u) / (4 * np.pi) + 0.25


@lru_cache(maxsize=64)
def _bump_geometry(d: int, G_dist: int, G_est: int, bumps: tuple):
    """Sparse overlap of the estimator's cubes with the bump cubes.

    Returns (cells, W) with W[r, k] = ∫_{B_r ∩ bump k} φ((x − c_k)/h) dx,
    φ(u) = Π cos²(π u_i) (so ‖φ‖₁ = 2^(−d)), h = 1/G_dist.
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
        vals = (_cos2_antiderivative((np.minimum(right, hi) - centre) * G_dist)
                - _cos2_antiderivative((np.maximum(left, lo) - centre) * G_dist)) / G_dist
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


class HolderBump:
    r"""The minimax-hard Hölder bump family η_v (Appendix B (45)–(47), Appendix D).

    Cut [0,1]^d into G^d cubes of side h = 1/G.  m = min(G^d, ⌊C_M h^(γβ−d)⌋)
    of them (spread evenly) carry a bump
    g(x) = L h^β φ((x − c_k)/h), φ(u) = Π_i cos²(π u_i) on [−1/2, 1/2]^d,
    with an independent uniformly random preferred class per trial
    (v_k = ±1 for K = 2, (46)).  Elsewhere η is uniform.  Restricting the
    bumps to m ~ h^(γβ−d) cubes is what enforces the γ-Tsybakov margin (47).

    With h tied to N (and ε) as in the lower-bound proofs, the excess risk of
    the cube estimators is m · L h^(β+d) ‖φ‖₁ · P(wrong cube) ~ h^(β(γ+1)),
    i.e. exactly the rate of Table I when P(wrong cube) is scale-free.

    Parameters
    ----------
    d : int ≥ 1
    beta : float in (0, 1]
        Hölder exponent β.
    gamma : float ≥ 0
        Tsybakov margin exponent γ.
    K : int ≥ 2
        Number of classes.
    L : float in (0, 1]
        Bump height constant (g ≤ L h^β ≤ 1).
    C_M : float > 0
        Constant of the bump count m (47).
    h_scale : float > 0
        Constant c of the cube side h = c · (law of the cell).
    """

    task = "classification"
    minimax_hard = True

    def __init__(self, d=1, beta=1.0, gamma=1.0, K=2, L=1.0, C_M=4.0, h_scale=1.0):
        check(int(d) == d and d >= 1, "d", d, "integer >= 1")
        check(0 < beta <= 1, "beta", beta, "(0, 1]")
        check(gamma >= 0, "gamma", gamma, ">= 0")
        check(int(K) == K and K >= 2, "K", K, "integer >= 2")
        check(0 < L <= 1, "L", L, "(0, 1]")
        check(C_M > 0, "C_M", C_M, "> 0")
        check(h_scale > 0, "h_scale", h_scale, "> 0")
        self.d, self.beta, self.gamma, self.K = int(d), float(beta), float(gamma), int(K)
        self.L, self.C_M, self.h_scale = float(L), float(C_M), float(h_scale)

    def n_bumps(self, G: int) -> int:
        """m = min(G^d, ⌊C_M h^(γβ−d)⌋), at least 1 (47)."""
        m = np.floor(self.C_M * float(G) ** (self.d - self.gamma * self.beta) + 1e-9)
        return int(max(1, min(G ** self.d, m)))

    def construction_valid(self, G: int) -> bool:
        """Whether (47) holds uncapped: C_M h^(γβ−d) ≤ G^d.

        Where the cap m = G^d binds, every cube carries a bump and the
        instance no longer has the γ-margin scaling of the construction; such
        points are kept in the outputs but left out of the rate fits.
        """
        return self.C_M * float(G) ** (self.d - self.gamma * self.beta) <= G ** self.d + 1e-9

    def bump_cubes(self, G: int) -> tuple:
        m = self.n_bumps(G)
        return tuple(int(i) for i in np.floor(np.arange(m) * (G ** self.d / m)))

    def draw(self, rng: np.random.Generator, G: int) -> "BumpInstance":
        """One η_v: fresh random preferred classes for every bump."""
        bumps = self.bump_cubes(G)
        return BumpInstance(self, G, bumps, rng.integers(self.K, size=len(bumps)))


class BumpInstance:
    """One draw η_v of :class:`HolderBump` at cube count G."""

    def __init__(self, family: HolderBump, G: int, bumps: tuple, classes: np.ndarray):
        self.family, self.G, self.bumps, self.classes = family, int(G), bumps, classes
        self.height = family.L * (1.0 / G) ** family.beta  # L h^β

    def cell_model(self, G_est: int) -> CellModel:
        d = self.family.d
        cells, W = _bump_geometry(d, self.G, int(G_est), self.bumps)
        mass = np.full(len(cells), float(G_est) ** (-d))
        return _tilt_model(G_est ** d, cells, mass, W * self.height, self.classes, self.family.K)

    def g_and_class(self, X: np.ndarray):
        """g(x) and the preferred class a(x) at each row of X."""
        G, d = self.G, self.family.d
        lookup = np.full(G ** d, -1, dtype=np.int64)
        lookup[list(self.bumps)] = np.arange(len(self.bumps))
        k = lookup[cube_index(X, G)]
        u = X * G - np.minimum(np.floor(X * G), G - 1) - 0.5
        g = self.height * np.prod(np.cos(np.pi * u) ** 2, axis=1) * (k >= 0)
        return g, np.where(k >= 0, self.classes[np.maximum(k, 0)], 0)

    def sample(self, N: int, rng: np.random.Generator):
        """N i.i.d. pairs (X, Y)."""
        X = rng.random((N, self.family.d))
        return X, _tilted_labels(*self.g_and_class(X), self.family.K, rng)


def _tilted_labels(g, a, K, rng):
    """Y = a with probability g, else uniform on K classes (the tilt above)."""
    uniform = rng.integers(K, size=len(g))
    return np.where(rng.random(len(g)) < g, a, uniform)


class SmoothMargin:
    r"""A fixed smooth instance with margin exponent γ — *not minimax-hard*.

    g(x) = A |2x₁ − 1|^(1/γ), preferred class 1 (the paper's class 2) where
    x₁ > 1/2 and class 0 elsewhere, so P(0 < η* − η_s < t) = (t/A)^γ
    (Assumption 1(b)), and η is min(1, 1/γ)-Hölder.  The instance does not
    change with N: its slopes may differ from Table I (usually faster), and
    reports do not call that a failure.

    Parameters
    ----------
    d, K : as in :class:`HolderBump`
    gamma : float > 0
    A : float in (0, 1]
        Amplitude.
    h_scale : float > 0
        Default constant of the estimator's h (no construction uses it).
    """

    task = "classification"
    minimax_hard = False

    def __init__(self, d=1, beta=1.0, gamma=1.0, K=2, A=0.5, h_scale=1.0):
        check(int(d) == d and d >= 1, "d", d, "integer >= 1")
        check(0 < beta <= 1, "beta", beta, "(0, 1]")
        check(gamma > 0, "gamma", gamma, "> 0 (the smooth instance needs a margin)")
        check(int(K) == K and K >= 2, "K", K, "integer >= 2")
        check(0 < A <= 1, "A", A, "(0, 1]")
        check(h_scale > 0, "h_scale", h_scale, "> 0")
        self.d, self.beta, self.gamma, self.K = int(d), float(beta), float(gamma), int(K)
        self.A, self.h_scale = float(A), float(h_scale)

    def n_bumps(self, G=None) -> int:
        return 0

    def construction_valid(self, G=None) -> bool:
        return True

    def draw(self, rng, G=None) -> "SmoothInstance":
        return SmoothInstance(self)


class SmoothInstance:
    def __init__(self, family: SmoothMargin):
        self.family = family
        self.kappa = 1.0 / family.gamma

    def _F(self, x):
        """Antiderivative of |2x − 1|^κ."""
        u = 2 * x - 1
        return np.sign(u) * np.abs(u) ** (self.kappa + 1) / (2 * (self.kappa + 1))

    def cell_model(self, G_est: int) -> CellModel:
        d, G = self.family.d, int(G_est)
        edges = np.arange(G + 1) / G
        lo, hi = edges[:-1], edges[1:]
        left = self._F(np.minimum(hi, 0.5)) - self._F(np.minimum(lo, 0.5))
        right = self._F(np.maximum(hi, 0.5)) - self._F(np.maximum(lo, 0.5))
        other = float(G) ** (-(d - 1))
        first_axis = np.unravel_index(np.arange(G ** d), (G,) * d)[0]
        W = self.family.A * other * np.stack([left[first_axis], right[first_axis]], axis=1)
        mass = np.full(G ** d, float(G) ** (-d))
        return _tilt_model(G ** d, np.arange(G ** d), mass, W, np.array([0, 1]), self.family.K)

    def sample(self, N, rng):
        X = rng.random((N, self.family.d))
        x1 = X[:, 0]
        g = self.family.A * np.abs(2 * x1 - 1) ** self.kappa
        return X, _tilted_labels(g, (x1 > 0.5).astype(np.int64), self.family.K, rng)
