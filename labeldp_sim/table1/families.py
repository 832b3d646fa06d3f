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
from scipy import special

from ..core.errors import check

__all__ = ["CellModel", "HolderBump", "SmoothMargin", "cube_index", "RegressionCellModel",
           "BoundedBump", "HeavyTailBump", "NoisyRegression"]


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
    """Linear (C-order) index of the cube of side 1/G holding each row of X.

    Horner's rule over the axes, one column at a time and in place.  In int32
    where the index fits: float64 → int32 casts are vectorised on x86-64 (AVX2)
    and float64 → int64 casts are not, which makes this three times faster at
    N = 10^6 than an (N, d) int64 index array (the per-sample path calls it once
    per trial).
    """
    X = np.asarray(X)
    dtype = np.int32 if G ** X.shape[1] < 2 ** 31 else np.int64
    index = None
    for axis in range(X.shape[1]):
        coordinate = (X[:, axis] * G).astype(dtype)  # truncation is the floor for X ≥ 0
        np.minimum(coordinate, G - 1, out=coordinate)  # X = 1 belongs to the last cube
        if index is None:
            index = coordinate
        else:
            index *= G
            index += coordinate
    return index.astype(np.int64)


def _tilt_model(n_cells, cells, mass, W, comp_class, K) -> CellModel:
    """CellModel from W (R × components, sparse or dense) and component classes."""
    onehot = np.zeros((len(comp_class), K))
    onehot[np.arange(len(comp_class)), comp_class] = 1.0
    W_on_class = np.asarray(W @ onehot)  # (R, K): ∫ g over parts preferring j
    W_total = W_on_class.sum(axis=1, keepdims=True)
    class_probs = 1.0 / K + (W_on_class - W_total / K) / mass[:, None]
    regret = W_total - W_on_class
    return CellModel(n_cells, cells, mass, class_probs, regret)


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
    shape : {"cos2", "linear_edge"}
        The bump profile φ.  ``cos2``: Π cos²(π u_i), the law-tied construction.
        ``linear_edge``: (1/2 − ‖u‖∞)₊^β, g = L (h/2 − ‖x − c_k‖∞)₊^β, which is
        β-Hölder with constant L and keeps the margin condition with one constant
        C_γ at every scale when γβ ≤ 1 (:meth:`margin_ratio`); cos² edges are
        quadratic and act like γ = 1/2 at coarse scales.  The law-free mode
        (SPEC §5a) uses it.
    """

    task = "classification"
    minimax_hard = True
    supports_sufficient = True
    p = float("nan")
    SHAPES = ("cos2", "linear_edge")

    def __init__(self, d=1, beta=1.0, gamma=1.0, K=2, L=1.0, C_M=4.0, h_scale=1.0, shape="cos2"):
        check(int(d) == d and d >= 1, "d", d, "integer >= 1")
        check(0 < beta <= 1, "beta", beta, "(0, 1]")
        check(gamma >= 0, "gamma", gamma, ">= 0")
        check(int(K) == K and K >= 2, "K", K, "integer >= 2")
        check(0 < L <= 1, "L", L, "(0, 1]")
        check(C_M > 0, "C_M", C_M, "> 0")
        check(h_scale > 0, "h_scale", h_scale, "> 0")
        # (47) uses m ~ C_M h^(γβ−d) bumps: with γβ > d that is a vanishing number of
        # bumps as h → 0, and no non-trivial β-Hölder η with a γ-margin exists under a
        # density bounded below (Audibert & Tsybakov 2007).  Refused
        # here rather than clamped to one bump, which would run a different problem.
        check(gamma * beta <= d, "gamma", gamma,
              f"gamma*beta <= d (d = {int(d)}, beta = {float(beta):g}: gamma <= {d / beta:g}): "
              "with a density bounded below, gamma*beta > d admits only trivial problems "
              "(Audibert & Tsybakov 2007)")
        check(shape in self.SHAPES, "shape", shape, self.SHAPES)
        self.d, self.beta, self.gamma, self.K = int(d), float(beta), float(gamma), int(K)
        self.L, self.C_M, self.h_scale, self.shape = float(L), float(C_M), float(h_scale), shape

    def margin_ratio(self, G: int) -> float:
        r"""sup_t P(0 < η*(X) − η_s(X) ≤ t) / t^γ of the instance at h = 1/G, in closed form.

        Only for ``shape="linear_edge"`` with γβ ≤ 1.  With m bumps of height
        L h^β φ: P(0 < g ≤ t) = m h^d (1 − (1 − 2 (t / (L h^β))^(1/β))^d) below the
        peak L (h/2)^β and m h^d above it, so the supremum is
        m h^(d − γβ) L^(−γ) c_d(γβ) (:func:`linf_margin_factor`).
        """
        check(self.shape == "linear_edge", "distribution.shape", self.shape,
              "linear_edge (the margin condition is checked for linear-edge bumps only)")
        check(self.gamma * self.beta <= 1 + 1e-12, "distribution.gamma", self.gamma,
              f"gamma*beta <= 1 (beta = {self.beta:g}): a continuous η with a density bounded "
              "below has P(0 < |η| <= t) >= c t^(1/β), so no instance keeps C_γ t^γ for γβ > 1")
        h = 1.0 / G
        return (self.n_bumps(G) * h ** (self.d - self.gamma * self.beta) * self.L ** (-self.gamma)
                * linf_margin_factor(self.d, self.gamma * self.beta))

    @property
    def margin_constant(self) -> float:
        """The declared C_γ of the class: C_M L^(−γ) c_d(γβ), the ratio of (47)'s unrounded count.

        Every instance with m ≤ C_M h^(γβ−d) bumps has :meth:`margin_ratio` ≤ C_γ;
        one whose count was raised to a single bump (C_M h^(γβ−d) < 1) may not.
        """
        return self.C_M * self.L ** (-self.gamma) * linf_margin_factor(self.d, self.gamma * self.beta)

    def admitted(self, G: int) -> bool:
        """Whether the instance at h = 1/G satisfies the margin condition with :attr:`margin_constant`."""
        return self.margin_ratio(G) <= self.margin_constant * (1 + 1e-9)

    def _bump_budget(self, G: int) -> float:
        """C_M h^(γβ−d) at h = 1/G: the bump count of (47) before rounding and capping."""
        return self.C_M * float(G) ** (self.d - self.gamma * self.beta)

    def n_bumps(self, G: int) -> int:
        """m = min(G^d, ⌊C_M h^(γβ−d)⌋), at least 1 (47).

        The floor of one bump keeps a trial well defined where (47) asks for
        less than one; :meth:`construction_valid` flags those points, so they are
        never fitted as if the construction held.
        """
        m = np.floor(self._bump_budget(G) + 1e-9)
        return int(max(1, min(G ** self.d, m)))

    def construction_valid(self, G: int) -> bool:
        """Whether (47) holds unclamped: 1 ≤ C_M h^(γβ−d) ≤ G^d.

        Where the cap m = G^d binds, every cube carries a bump and the
        instance no longer has the γ-margin scaling of the construction.
        Where C_M h^(γβ−d) < 1 (γβ = d with C_M < 1, or small G), (47) asks for
        less than one bump and :meth:`n_bumps` raises it to one.  Either way the
        point is kept in the outputs (``in_regime`` False) but left out of the
        rate fits.
        """
        budget = self._bump_budget(G)
        return 1.0 - 1e-9 <= budget <= G ** self.d + 1e-9

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
        if self.family.shape == "linear_edge":
            cells, W = _linear_edge_geometry(d, self.G, int(G_est), self.bumps, self.family.beta)
        else:
            cells, W = _bump_geometry(d, self.G, int(G_est), self.bumps)
        mass = np.full(len(cells), float(G_est) ** (-d))
        return _tilt_model(G_est ** d, cells, mass, W * self.height, self.classes, self.family.K)

    def g_and_class(self, X: np.ndarray):
        """g(x) and the preferred class a(x) at each row of X (g = 0 and a = 0 off the bumps)."""
        G, d = self.G, self.family.d
        lookup = np.full(G ** d, -1, dtype=np.int64)
        lookup[list(self.bumps)] = np.arange(len(self.bumps))
        k = lookup[cube_index(X, G)]
        on = np.flatnonzero(k >= 0)  # the profile (a cosine per axis) only where a bump is
        g, a = np.zeros(len(X)), np.zeros(len(X), dtype=np.int64)
        g[on] = self.height * _bump_profile(X.take(on, axis=0), G, self.family.shape, self.family.beta)
        a[on] = self.classes[k[on]]
        return g, a

    def sample(self, N: int, rng: np.random.Generator):
        """N i.i.d. pairs (X, Y): Y = a(X) if a coin falls below g(X), else a uniform class.

        One uniform per label gives both the uniform class and the coin
        (:func:`_class_and_coin`).  g ≤ L h^β everywhere, so a coin at or above
        L h^β keeps the uniform class whatever X is: g and a, the costly part (a
        cosine per axis), are computed only for the samples whose coin falls below
        L h^β, a share L h^β of them.  The law is the tilt's, exactly.
        """
        X = rng.random((N, self.family.d))
        y, coin = _class_and_coin(rng.random(N), self.family.K)
        maybe = np.flatnonzero(coin < self.height)
        g, a = self.g_and_class(X.take(maybe, axis=0))  # take: X[maybe] is ten times slower
        tilted = coin[maybe] < g
        y[maybe[tilted]] = a[tilted]
        return X, y


def _bump_profile(X: np.ndarray, G: int, shape: str = "cos2", beta: float = 1.0) -> np.ndarray:
    """φ((x − c)/h) at each row x of X, c the centre of the cube of side h = 1/G holding x.

    ``cos2``: φ(u) = Π_i cos²(π u_i); ``linear_edge``: φ(u) = (1/2 − ‖u‖∞)₊^β.
    One axis at a time and in place (an (N, d) product costs twice as much).
    """
    profile = np.ones(len(X)) if shape == "cos2" else np.zeros(len(X))
    for axis in range(X.shape[1]):
        u = X[:, axis] * G  # the position in the own cube, centred: u ∈ [−1/2, 1/2]
        u -= np.minimum(np.floor(u), G - 1)
        u -= 0.5
        if shape == "cos2":
            u *= np.pi
            np.cos(u, out=u)
            profile *= u
            profile *= u
        else:  # ‖u‖∞ so far
            np.maximum(profile, np.abs(u), out=profile)
    if shape == "linear_edge":
        profile = np.clip(0.5 - profile, 0.0, None) ** beta
    return profile


def _class_and_coin(u, K):
    """A uniform class on 0..K−1 and an independent U[0, 1) coin, both from the uniforms u.

    K·u = class + coin: the integer part is uniform on 0..K−1 and the fractional
    part is uniform on [0, 1) and independent of it (exactly for K a power of two,
    else up to the rounding of K·u, 2^-52 relative).  u < 1, so K·u < K after
    rounding.  ``u`` is overwritten by the coin.  The classes are int32: float64 →
    int32 casts are vectorised on x86-64 and float64 → int64 casts are not.
    """
    u *= K
    label = u.astype(np.int32)
    u -= label
    return label, u


def _tilted_labels(g, a, K, rng):
    """Y = a with probability g, else uniform on K classes (the tilt above), one uniform per label."""
    uniform, coin = _class_and_coin(rng.random(len(g)), K)
    return np.where(coin < g, a, uniform)


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
    supports_sufficient = True
    p = float("nan")

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


# --------------------------------------------------------------------------- regression


@dataclass
class RegressionCellModel:
    """What the exact squared-error risk (9) of a cube estimator and the counts need.

    Every cube of the estimator's partition is listed (a non-zero estimate on a
    cube where η = 0 still costs risk).

    Attributes
    ----------
    n_cells : int
    mass : ndarray (R,)
        P(X ∈ B_r).
    values : ndarray (V,) or None
        The finitely many label values, when the label law is discrete.
    value_probs : ndarray (R, V) or None
        P(Y = values[v] | X ∈ B_r).
    eta_int, eta2_int : ndarray (R,)
        ∫_{B_r} η and ∫_{B_r} η².
    """

    n_cells: int
    mass: np.ndarray
    values: np.ndarray | None
    value_probs: np.ndarray | None
    eta_int: np.ndarray
    eta2_int: np.ndarray

    def excess_risk(self, estimates: np.ndarray) -> float:
        """Exact (9) for η̂ constant on cubes: Σ_r ∫_{B_r} (η̂_r − η)²."""
        return float(np.sum(self.mass * estimates ** 2 - 2 * estimates * self.eta_int + self.eta2_int))


class _RegressionBump:
    """Shared part of the regression bump families (Appendix F, J): every cube carries a bump."""

    task = "regression"
    minimax_hard = True
    supports_sufficient = True
    gamma = float("nan")

    def _check_common(self, d, beta, L, h_scale):
        check(int(d) == d and d >= 1, "d", d, "integer >= 1")
        check(0 < beta <= 1, "beta", beta, "(0, 1]")
        check(0 < L <= 1, "L", L, "(0, 1]")
        check(h_scale > 0, "h_scale", h_scale, "> 0")
        self.d, self.beta, self.L, self.h_scale = int(d), float(beta), float(L), float(h_scale)

    def n_bumps(self, G: int) -> int:
        return G ** self.d

    def draw(self, rng, G: int):
        return RegressionBumpInstance(self, int(G), BumpSigns(G ** self.d, rng))


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

    labels = "bounded"

    def __init__(self, d=1, beta=1.0, T=1.0, L=1.0, h_scale=1.0):
        self._check_common(d, beta, L, h_scale)
        check(np.isfinite(T) and T > 0, "T", T, "> 0")
        check(L <= T, "L", L, f"<= T = {T} (|η| must stay below the label bound)")
        self.T, self.p, self.M_p = float(T), float("nan"), float("nan")

    def construction_valid(self, G: int) -> bool:
        return True

    def label_law(self, G: int):
        return np.array([-self.T, self.T])


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

    labels = "heavy"

    def __init__(self, d=1, beta=1.0, p=3.0, M_p=1.0, L=1.0, h_scale=1.0, tail_level=None):
        self._check_common(d, beta, L, h_scale)
        check(np.isfinite(p) and p >= 2, "p", p, ">= 2")
        check(np.isfinite(M_p) and M_p > 0, "M_p", M_p, "> 0")
        if tail_level is not None:
            check(np.isfinite(tail_level) and tail_level > 0, "tail_level", tail_level,
                  "null (T_h from (174)) or a number > 0")
            check(tail_level ** p >= M_p, "tail_level", tail_level,
                  f">= M_p^(1/p) = {M_p ** (1 / p):.4g} (so that P(Y = 0) >= 0)")
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


class RegressionBumpInstance:
    """One draw η_v of a regression bump family at cube count G."""

    def __init__(self, family, G: int, signs: np.ndarray):
        self.family, self.G, self.signs = family, G, signs
        self.height = family.L * (1.0 / G) ** family.beta
        self.values = family.label_law(G)

    def label_probs(self, eta):
        """P(Y = values[v] | η) for an array of η (local, cube or region averages: the law is affine in η)."""
        fam, values = self.family, self.values
        if fam.labels == "bounded":
            up = (1 + eta / fam.T) / 2
            return np.stack([1 - up, up], axis=-1)
        T = values[-1]
        base = fam.M_p / T ** fam.p
        return np.stack([(base - eta / T) / 2, np.full_like(eta, 1 - base), (base + eta / T) / 2],
                        axis=-1)

    def cell_model(self, G_est: int) -> RegressionCellModel:
        d = self.family.d
        n_cells = int(G_est) ** d
        eta_int = self.height * (_full_bump_geometry(d, self.G, int(G_est), 1) @ np.asarray(self.signs))
        eta2_int = self.height ** 2 * _full_bump_row_sums(d, self.G, int(G_est))
        mass = np.full(n_cells, float(G_est) ** (-d))
        return RegressionCellModel(n_cells, mass, self.values, self.label_probs(eta_int / mass),
                                   eta_int, eta2_int)

    def eta(self, X: np.ndarray) -> np.ndarray:
        """η_v at each row of X."""
        eta = _bump_profile(X, self.G)
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


class NoisyRegression:
    r"""A fixed smooth regression function with continuous label noise — *not minimax-hard*.

    η(x) = A sin(2π x₁) (Lipschitz, so β ≤ 1 holds), Y = η(X) + ξ with ξ
    Gaussian, Student-t or symmetric Pareto.  The instance does not change
    with N; reports never call a mismatch with Table I a failure.  The noise
    law is continuous, so trials use the per-sample path.

    Parameters
    ----------
    d, beta : as elsewhere (β is used for the estimator's tuning)
    noise : {"gaussian", "student_t", "pareto"}
    scale : float > 0
        σ of the Gaussian, scale of the t, minimum x_m of the Pareto.
    df : float
        Student-t degrees of freedom; E|ξ|^p < ∞ needs df > p.
    alpha : float
        Pareto shape; E|ξ|^p < ∞ needs alpha > p.
    p : float ≥ 2
        Moment order the instance is meant to have.
    M_p : float > 0
        Moment bound used by clipping rules (``T: theory``).
    A : float
        Amplitude of η.
    """

    task = "regression"
    minimax_hard = False
    supports_sufficient = False
    labels = "noisy"
    gamma = float("nan")
    NOISES = ("gaussian", "student_t", "pareto")

    def __init__(self, d=1, beta=1.0, noise="gaussian", scale=0.5, df=5.0, alpha=4.0, p=3.0,
                 M_p=1.0, A=0.5, h_scale=1.0):
        check(int(d) == d and d >= 1, "d", d, "integer >= 1")
        check(0 < beta <= 1, "beta", beta, "(0, 1]")
        check(noise in self.NOISES, "noise", noise, self.NOISES)
        check(np.isfinite(scale) and scale > 0, "scale", scale, "> 0")
        check(np.isfinite(p) and p >= 2, "p", p, ">= 2")
        check(np.isfinite(M_p) and M_p > 0, "M_p", M_p, "> 0")
        if noise == "student_t":
            check(df > p, "df", df, f"> p = {p} (finite p-th moment)")
        if noise == "pareto":
            check(alpha > p, "alpha", alpha, f"> p = {p} (finite p-th moment)")
        check(h_scale > 0, "h_scale", h_scale, "> 0")
        self.d, self.beta, self.noise, self.scale = int(d), float(beta), noise, float(scale)
        self.df, self.alpha, self.p, self.M_p, self.A = float(df), float(alpha), float(p), float(M_p), float(A)
        self.h_scale, self.T = float(h_scale), float("nan")

    def n_bumps(self, G=None) -> int:
        return 0

    def construction_valid(self, G=None) -> bool:
        return True

    def draw(self, rng, G=None):
        return NoisyRegressionInstance(self)


class NoisyRegressionInstance:
    def __init__(self, family: NoisyRegression):
        self.family = family
        self.values = None

    def eta(self, X):
        return self.family.A * np.sin(2 * np.pi * X[:, 0])

    def noise(self, n, rng):
        fam = self.family
        if fam.noise == "gaussian":
            return fam.scale * rng.standard_normal(n)
        if fam.noise == "student_t":
            return fam.scale * rng.standard_t(fam.df, n)
        sign = rng.choice(np.array([-1.0, 1.0]), size=n)
        return sign * fam.scale * (1 + rng.pareto(fam.alpha, n))  # symmetric: mean 0

    def sample(self, N, rng):
        X = rng.random((N, self.family.d))
        return X, self.eta(X) + self.noise(N, rng)

    def cell_model(self, G_est: int) -> RegressionCellModel:
        d, G, A = self.family.d, int(G_est), self.family.A
        edges = np.arange(G + 1) / G
        # ∫ sin(2πx) and ∫ sin²(2πx) over each interval of the first axis
        i1 = (np.cos(2 * np.pi * edges[:-1]) - np.cos(2 * np.pi * edges[1:])) / (2 * np.pi)
        i2 = (np.diff(edges) / 2 - (np.sin(4 * np.pi * edges[1:]) - np.sin(4 * np.pi * edges[:-1])) / (8 * np.pi))
        first = np.unravel_index(np.arange(G ** d), (G,) * d)[0]
        other = float(G) ** (-(d - 1))
        mass = np.full(G ** d, float(G) ** (-d))
        return RegressionCellModel(G ** d, mass, None, None, A * other * i1[first], A ** 2 * other * i2[first])
