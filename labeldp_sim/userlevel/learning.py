r"""User-level LDP learning of papers/003: stochastic optimisation, classification, regression.

Users i = 1..n each hold m i.i.d. samples and send ONE report of their whole
data set (user-level ε-LDP, Definition 1, Eq. (1)).  This module holds the
families of Sections 5-6 (with the hard instances of Theorems 10 and 12) and
the three learning protocols:

* :class:`Algorithm3` — stochastic optimisation (Section 5, Algorithm 3,
  update (15), Theorem 8, (16)-(17));
* :class:`Algorithm4` — nonparametric classification on cubes with
  Hadamard-coded user statistics (Appendix E.1, (130)-(139), Theorem 9);
* :class:`Algorithm5` — nonparametric regression, 2K groups (Appendix F.1,
  (190)-(195), Theorem 11).

Every privatisation goes through the user-level randomizers of
:mod:`.mechanisms` via the reusable Algorithm 1 / Algorithm 2 code of
:mod:`.mean` (:func:`~.mean.twostage_details`, :func:`~.mean.algorithm2`);
users' data are :class:`~.data.UserValues` on both simulation paths, so the
same randomizer code runs on the per-user path (literal samples) and on the
sufficient-statistic path.

Public API
----------
Families (``name``, ``task``, ``minimax_hard``, ``instance(rng, n, m, eps, d)``):
    :class:`QuadraticSO` ("quadratic", so), :class:`LinearMargin` ("linear",
    classification), :class:`SineRegression` ("sine", regression),
    :class:`Thm10Hard` ("thm10", classification), :class:`Thm12Hard` ("thm12",
    regression); :data:`FAMILIES`.
Estimators (``name``, ``task``, ``trial(family, n, m, eps, d, rng, path)``):
    :class:`Algorithm3` ("alg3"), :class:`Algorithm4` ("alg4"),
    :class:`Algorithm5` ("alg5"); :data:`ESTIMATORS`.
Helpers: :func:`hadamard_encode`, :func:`hadamard_decode`,
:func:`excess_risk`, :func:`regression_risk`, :func:`cube_index`,
:class:`CubeMoments`, :func:`box_radial_integral`.

Exact risks (SPEC §7)
---------------------
For a cube estimator constant on the cubes C_1..C_B of the estimator's grid,
everything depends on the family only through five per-cube integrals
(:class:`CubeMoments`): p_k = ∫_{C_k} f, q_k = ∫_{C_k} fη (132),
∫_{C_k} fη₊, ∫_{C_k} fη₋ and ∫_{C_k} fη².  Then, exactly,

.. math::

   R - R^* = \sum_k [\hat q_k < 0]\int_{C_k}\eta_+ f + [\hat q_k \ge 0]\int_{C_k}\eta_- f
   \quad\text{((156) with the tie } \hat q_k = 0 \mapsto +1\text{)},

   \int(\hat\eta-\eta)^2 f = \sum_k \hat\eta_k^2 p_k - 2\hat\eta_k q_k + \int_{C_k}\eta^2 f
   \quad\text{((199), first term exact)}.

Every family's X has the uniform density f ≡ 1 on [0, 1]^d (f_L = 1 in
Assumption 2(c)); the integrals are closed forms (linear, sine) or exact
piecewise-polynomial integrals (:func:`box_radial_integral`, hard instances).

Sufficient statistics (SPEC §7)
-------------------------------
A sample (X, Y) falls in one of 2B *cells* (cube b, label y) with
P(b, y) = (p_b + y q_b)/2, because P(Y = 1 | x) = (1 + η(x))/2.  The
per-sample statistic of coordinate k is a function of the cell:
U_k = y·H_K[k, b] (136) or V_k = H_K[k, b] (192), so a user is described
exactly by its m samples' cell counts.  On the sufficient path a group's users
are drawn by :func:`~.data.draw_users` over the cells' statistic vectors;
when the group runs one coordinate the cells merge into the two points ±1
with P(U_k = +1) = π_k = (1 + Q_k)/2, Q_k = Σ_l H_kl q_l (134), and the
group's users are Multinomial(n_group, Binomial(m, π_k) pmf) over the m + 1
atoms.  The per-user path draws every user's m samples (X_ij, Y_ij) from f
and η and counts their cells: it is the reference.

Decisions (see also SPEC §§4-7)
-------------------------------
* Cubes: B_1 = ⌈1/l⌉ cubes per axis of length 1/B_1 ≤ l, B = B_1^d, and
  K = 2^⌈log₂ B⌉ (130); cubes B+1..K carry q = 0 (132).
* Algorithm 1 per coordinate with D = 1, h = 4/√m and Δ = √(ln n/m), n the
  number of users of the whole protocol (Lemma 6's Δ = D√(ln(Kn)/m) with n the
  group size).  The ε regimes follow Algorithm 2 (:func:`~.mean.algorithm2_plan`):
  K (classification) or 2K (regression) coordinates.
* The cube length l is chosen before the regime: l from the ε ≤ 1 / medium
  formula, and the low-privacy formula when ε ≥ K ln n for the resulting K.
* Regression: η̂_k = clip(q̂_k/p̂_k, ±T) when p̂_k > 0, and 0 when p̂_k ≤ 0
  (the ratio has no meaning there; (212)-(213) assume p̂_k ≥ p_k/2).
* SO: Θ is the ball of radius ½ (it holds θ* = E X and the support of X), and
  θ_{t+1} = Π_Θ(θ_t − ηg_t).  The projection is 1-Lipschitz and fixes θ*, so
  (124)-(129) hold unchanged, and it gives Assumption 1(b) with D = 1: for
  θ ∈ Θ, ||∇l(X, θ)|| = ||θ − X|| ≤ ½ + ½.
* Theorem 10's instance: η = 0 off the perturbed cubes violates Assumption
  2(a) (SPEC slip 9).  The perturbed cubes form one block [0, A]^d at the
  corner, A = k·l, k^d ≈ C_K l^{γβ−d}, and off the block
  η(x) = min(dist_∞(x, [0, A]^d), ρ)^β ≥ 0: continuous, Hölder-β, carrying no
  information about v.  The bump's own zero set makes the margin condition
  hold only for γβ ≤ 1 (P(|η| < t) ∝ t^{1/β} near the bumps' edges), which
  implies the SPEC's γβ ≤ d.
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.polynomial import polynomial as P
from scipy.linalg import hadamard

from ..core.errors import ConfigError, check
from .data import PATHS, UserValues, draw_users
from .families import Family
from .mean import (KASHIN_K, STAGE1_MIN, KashinBasis, TwoStageTuning, algorithm2, algorithm2_groups, algorithm2_plan,
                   split_sizes, twostage_details)
from .mechanisms import coordinate

__all__ = ["CubeMoments", "LabelInstance", "LabelFamily", "LinearMargin", "SineRegression", "Thm10Hard",
           "Thm12Hard", "SOInstance", "QuadraticSO", "hadamard_matrix", "hadamard_encode", "hadamard_decode",
           "cube_index", "box_radial_integral", "excess_risk", "regression_risk", "LearningEstimator",
           "Algorithm3", "Algorithm4", "Algorithm5", "FAMILIES", "ESTIMATORS", "MAX_CUBES"]

MAX_CUBES = 1 << 16  # estimator cubes B (and Hadamard order K ≤ 2B): bounds the K×K Hadamard matrix
_SAMPLES_CHUNK = 1 << 21  # samples drawn at once on the per-user path: bounds memory, not the law


# =========================================================================== checks


def _number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)) \
        and bool(np.isfinite(x))


def _positive(key, value, allow_none=False):
    if allow_none and value is None:
        return None
    check(_number(value) and value > 0, key, value, "None or > 0" if allow_none else "> 0")
    return float(value)


def _check_point(n, m, eps, d, path):
    check(_number(n) and int(n) == n and n >= 2, "n", n, "an integer >= 2")
    check(_number(m) and int(m) == m and m >= 1, "m", m, "an integer >= 1")
    check(_number(eps) and eps > 0, "eps", eps, "> 0")
    check(_number(d) and int(d) == d and d >= 1, "d", d, "an integer >= 1")
    check(path in PATHS, "path", path, PATHS)
    return int(n), int(m), float(eps), int(d)


# =========================================================================== Hadamard coding


@lru_cache(maxsize=32)
def hadamard_matrix(K: int) -> np.ndarray:
    """Sylvester's Hadamard matrix H_K (K a power of 2): symmetric, entries ±1, H_K H_K = K I."""
    check(int(K) == K and K >= 1 and (int(K) & (int(K) - 1)) == 0, "K", K, "a power of 2")
    H = hadamard(int(K)).astype(float)
    H.setflags(write=False)
    return H


def hadamard_encode(q) -> np.ndarray:
    r"""Q = H_K q (134): Q_k = Σ_l H_kl q_l = ∫_{T_k} fη − ∫_{T_k^c} fη (133), K = len(q)."""
    q = np.asarray(q, dtype=float)
    return hadamard_matrix(len(q)) @ q


def hadamard_decode(Q) -> np.ndarray:
    r"""q̂ = H_K^{-1} Q̂ = H_K Q̂ / K (138): exact inverse of :func:`hadamard_encode`."""
    Q = np.asarray(Q, dtype=float)
    return hadamard_matrix(len(Q)) @ Q / len(Q)


# =========================================================================== cubes and exact integrals


def cube_index(x, B_axis: int) -> np.ndarray:
    """Index of the estimator cube holding each row of x ∈ [0, 1]^d: C-order over (B_1,)*d cubes of side 1/B_1."""
    x = np.asarray(x, dtype=float)
    x = x.reshape(len(x), -1)
    idx = np.clip(np.floor(x * B_axis), 0, B_axis - 1).astype(np.int64)
    return np.ravel_multi_index(tuple(idx.T), (B_axis,) * x.shape[1])


def _edges(B_axis):
    return np.arange(B_axis + 1) / B_axis


def box_radial_integral(lo, hi, a0, a1, b0, b1, r0, r1, kind, p, rho=math.inf) -> float:
    r"""∫_{(r0, r1]} g(r) dV(r), exactly, for a box and nested boxes S(r).

    V(r) = Π_i |[lo_i, hi_i] ∩ [a0_i + a1_i r, b0_i + b1_i r]| is the volume of
    the box inside the sublevel set S(r) = {T ≤ r} of a function T whose
    sublevel sets are boxes with affine sides, so ∫_{box ∩ {r0 < T ≤ r1}} g(T) dx
    is this Stieltjes integral.  V is piecewise polynomial of degree d (each
    factor is piecewise affine, with kinks where a side crosses lo_i or hi_i),
    and on each piece the integral against g is a closed form:

    * ``kind="bump"``: g(r) = (½ − r)^p, T = ||u||_∞ (Theorems 10/12's
      φ(u)^{p/β}; S(r) = [−r, r]^d, r ∈ (0, ½]);
    * ``kind="ramp"``: g(r) = min(r, ρ)^p, T = dist_∞(x, [0, A]^d)
      (S(r) = [0, A + r]^d).

    Parameters
    ----------
    lo, hi : array (d,)
        The box.
    a0, a1, b0, b1 : array (d,)
        Sides of S(r): [a0 + a1 r, b0 + b1 r] per axis.
    r0, r1 : float
        Range of T integrated over (the atom at r0 excluded).
    kind : {"bump", "ramp"}
    p : float
        Power, > 0.
    rho : float
        Cap of the ramp.
    """
    lo, hi, a0, a1, b0, b1 = (np.asarray(v, dtype=float) for v in (lo, hi, a0, a1, b0, b1))

    def lengths(r):
        return np.maximum(0.0, np.minimum(hi, b0 + b1 * r) - np.maximum(lo, a0 + a1 * r))

    cand = [r0, r1]
    for c0, c1 in ((a0, a1), (b0, b1)):
        nz = c1 != 0
        for edge in (lo, hi):
            cand.extend(((edge[nz] - c0[nz]) / c1[nz]).tolist())
    if kind == "ramp" and np.isfinite(rho):
        cand.append(rho)
    pts = np.unique(np.clip(np.asarray(cand, dtype=float), r0, r1))
    total = 0.0
    for ra, rb in zip(pts[:-1], pts[1:]):
        if rb <= ra:
            continue
        la, lb = lengths(ra), lengths(rb)
        if not np.any(lb - la):
            continue  # V constant on the piece
        slope = (lb - la) / (rb - ra)
        poly = np.array([1.0])
        for i in range(len(lo)):
            poly = P.polymul(poly, [la[i] - slope[i] * ra, slope[i]])
        if kind == "ramp" and ra >= rho:
            total += rho ** p * (P.polyval(rb, poly) - P.polyval(ra, poly))
            continue
        dv = P.polyder(poly)
        j = np.arange(len(dv)) + p + 1.0
        if kind == "bump":
            # s = ½ − r: ∫_{ra}^{rb} (½ − r)^p V'(r) dr = ∫_{½−rb}^{½−ra} s^p V'(½ − s) ds.
            c = np.polynomial.Polynomial(dv)(np.polynomial.Polynomial([0.5, -1.0])).coef
            c = np.pad(c, (0, len(j) - len(c)))
            sa, sb = max(0.5 - ra, 0.0), max(0.5 - rb, 0.0)
            total += float(np.sum(c * (sa ** j - sb ** j) / j))
        else:
            total += float(np.sum(dv * (rb ** j - ra ** j) / j))
    return total


def _phi_norm(d, p):
    r"""∫_{[−½,½]^d} (½ − ||u||_∞)^p du = d 2^{−p} B(d, p + 1) (||φ||_1 for p = β, ||φ||_2² for p = 2β)."""
    return d * 2.0 ** -p * math.exp(math.lgamma(d) + math.lgamma(p + 1) - math.lgamma(d + p + 1))


@lru_cache(maxsize=64)
def _bump_overlaps(Be, Bi, d, powers):
    r"""Overlaps of the estimator grid (Be per axis) with the instance's bump grid (Bi per axis).

    Returns (est, inst, w) with w[:, a] = ∫_{C_est ∩ C_inst} φ((x − c)/l)^{powers[a]/β·β} dx in x
    units, i.e. l^d ∫ (½ − ||u||_∞)^{powers[a]} du over the piece (u local coordinates of the bump).
    """
    pts = np.union1d(_edges(Be), _edges(Bi))
    lo, hi = pts[:-1], pts[1:]
    keep = hi - lo > 1e-15
    lo, hi = lo[keep], hi[keep]
    mid = (lo + hi) / 2
    je = np.clip(np.floor(mid * Be), 0, Be - 1).astype(np.int64)
    ji = np.clip(np.floor(mid * Bi), 0, Bi - 1).astype(np.int64)
    ulo, uhi = np.clip(lo * Bi - ji - 0.5, -0.5, 0.5), np.clip(hi * Bi - ji - 0.5, -0.5, 0.5)
    segs = range(len(lo))
    est, inst, w = [], [], []
    zeros, ones = np.zeros(d), np.ones(d)
    vol = (1.0 / Bi) ** d
    for combo in itertools.product(segs, repeat=d):
        c = list(combo)
        est.append(np.ravel_multi_index(tuple(je[c]), (Be,) * d))
        inst.append(np.ravel_multi_index(tuple(ji[c]), (Bi,) * d))
        w.append([vol * box_radial_integral(ulo[c], uhi[c], zeros, -ones, zeros, ones, 0.0, 0.5, "bump", p)
                  for p in powers])
    out = np.asarray(est), np.asarray(inst), np.asarray(w)
    for a in out:
        a.setflags(write=False)
    return out


@lru_cache(maxsize=64)
def _ramp_moments(Be, d, A, rho, powers):
    r"""Per estimator cube: ∫_{C ∖ [0,A]^d} min(dist_∞(x, [0, A]^d), ρ)^p dx for p in ``powers``."""
    e = _edges(Be)
    out = np.zeros((Be ** d, len(powers)))
    zeros, ones = np.zeros(d), np.ones(d)
    for flat, idx in enumerate(itertools.product(range(Be), repeat=d)):
        idx = np.asarray(idx)
        lo, hi = e[idx], e[idx + 1]
        R = float(np.max(hi - A))
        if R <= 0:
            continue
        out[flat] = [box_radial_integral(lo, hi, zeros, zeros, np.full(d, A), ones, 0.0, R, "ramp", p, rho)
                     for p in powers]
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class CubeMoments:
    r"""Exact per-cube integrals of a family on the estimator's grid (C-order, B = B_1^d cubes).

    Attributes
    ----------
    p : ∫_{C_k} f  (p_k of F.1)
    q : ∫_{C_k} fη  (q_k, (132))
    pos, neg : ∫_{C_k} fη₊ and ∫_{C_k} fη₋ (η = η₊ − η₋)
    sq : ∫_{C_k} fη²
    """

    p: np.ndarray
    q: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    sq: np.ndarray

    @property
    def B(self) -> int:
        return len(self.p)


def excess_risk(q_hat, mom: CubeMoments) -> float:
    r"""Exact R − R* (156) of the cube classifier ĝ = sign(q̂_k) on C_k (139), ties → +1.

    Predicting −1 on C_k costs ∫_{C_k} η₊ f over the Bayes rule, predicting +1
    costs ∫_{C_k} η₋ f: R − R* = Σ_k [q̂_k < 0]∫η₊f + [q̂_k ≥ 0]∫η₋f.
    """
    q_hat = np.asarray(q_hat, dtype=float)[:mom.B]
    return float(np.sum(np.where(q_hat < 0, mom.pos, mom.neg)))


def regression_risk(eta_hat, mom: CubeMoments) -> float:
    r"""Exact ∫(η̂ − η)² f for η̂ ≡ η̂_k on C_k: Σ_k η̂_k² p_k − 2η̂_k q_k + ∫_{C_k} η² f (≥ 0)."""
    e = np.asarray(eta_hat, dtype=float)[:mom.B]
    return max(0.0, float(np.sum(e * e * mom.p - 2 * e * mom.q + mom.sq)))


# =========================================================================== label families


class LabelInstance(ABC):
    r"""One trial's law of (X, Y) on [0, 1]^d × {±1}: f ≡ 1 and P(Y = 1 | x) = (1 + η(x))/2.

    Attributes
    ----------
    d, m : int
    params : dict
        The family's scaled parameters (l, v, number of perturbed cubes, Hölder
        and margin constants ...).
    """

    def __init__(self, d, m, params=None):
        self.d, self.m = int(d), int(m)
        self.params = dict(params or {})

    @abstractmethod
    def eta(self, x) -> np.ndarray:
        """η(x) = E[Y | X = x] for rows x, shape (N, d) -> (N,)."""

    @abstractmethod
    def moments(self, B_axis: int) -> CubeMoments:
        """Exact per-cube integrals on the grid of B_axis^d cubes of side 1/B_axis."""

    def sample(self, rng, size):
        """``size`` i.i.d. samples (X, Y): X ~ f = U[0, 1]^d, then Y = ±1 with P(Y = 1 | X) = (1 + η(X))/2."""
        x = rng.random((int(size), self.d))
        y = np.where(rng.random(int(size)) < (1 + self.eta(x)) / 2, 1.0, -1.0)
        return x, y

    def __repr__(self):
        return f"{type(self).__name__}(d={self.d}, m={self.m}, {self.params})"


class LabelFamily(Family):
    """A classification or regression family; ``instance`` returns a :class:`LabelInstance`
    whose random parameters (x0, signs v) come from ``rng``."""


def _family_point(n, m, eps, d):
    check(_number(n) and int(n) == n and n >= 1, "n", n, "an integer >= 1")
    check(_number(m) and int(m) == m and m >= 1, "m", m, "an integer >= 1")
    check(_number(eps) and eps > 0, "eps", eps, "> 0")
    check(_number(d) and int(d) == d and d >= 1, "d", d, "an integer >= 1")


class _SeparableInstance(LabelInstance):
    """η(x) = η₁(x₁): integrals over a cube are the 1-D integrals over its first side × (1/B_1)^{d−1}."""

    @abstractmethod
    def eta1(self, t) -> np.ndarray:
        """η as a function of the first coordinate."""

    @abstractmethod
    def integrals1(self, a, b) -> tuple:
        """(∫η₁, ∫η₁₊, ∫η₁₋, ∫η₁²) over [a, b], arrays."""

    def eta(self, x):
        x = np.asarray(x, dtype=float).reshape(-1, self.d)
        return self.eta1(x[:, 0])

    def moments(self, B_axis):
        e = _edges(B_axis)
        q, pos, neg, sq = self.integrals1(e[:-1], e[1:])
        rest = B_axis ** (self.d - 1)
        w = (1.0 / B_axis) ** (self.d - 1)
        rep = [np.repeat(v * w, rest) for v in (q, pos, neg, sq)]
        return CubeMoments(np.full(B_axis ** self.d, (1.0 / B_axis) ** self.d), *rep)


class _LinearInstance(_SeparableInstance):
    def __init__(self, x0, d, m, params):
        super().__init__(d, m, params)
        self.x0 = float(x0)

    def eta1(self, t):
        return np.asarray(t, dtype=float) - self.x0

    def integrals1(self, a, b):
        ua, ub = a - self.x0, b - self.x0
        pos = 0.5 * (np.maximum(ub, 0) ** 2 - np.maximum(ua, 0) ** 2)
        neg = 0.5 * (np.maximum(-ua, 0) ** 2 - np.maximum(-ub, 0) ** 2)
        return pos - neg, pos, neg, (ub ** 3 - ua ** 3) / 3.0


class LinearMargin(LabelFamily):
    r"""Classification, SPEC §7 row CLS: f uniform on [0, 1]^d, η(x) = x₁ − x0, x0 ~ U[lo, hi] per trial.

    Assumption 2 holds with β = 1, C_b = 1 (η is 1-Lipschitz), γ = 1,
    C_a = 2 (P(|η(X)| < t) = |[x0 − t, x0 + t] ∩ [0, 1]| ≤ 2t) and f_L = 1.
    |η| ≤ max(x0, 1 − x0) < 1.  Fixed, not minimax-hard; the SPEC default is d = 1.

    Parameters
    ----------
    lo, hi : float
        Range of x0, 0 ≤ lo ≤ hi ≤ 1 (SPEC: [0.4, 0.6]).
    """

    name = "linear"
    task = "classification"
    minimax_hard = False

    def __init__(self, lo=0.4, hi=0.6):
        check(_number(lo) and 0 <= lo <= 1, "lo", lo, "in [0, 1]")
        check(_number(hi) and lo <= hi <= 1, "hi", hi, f"in [lo = {lo}, 1]")
        self.lo, self.hi = float(lo), float(hi)

    def instance(self, rng, n, m, eps, d=1):
        _family_point(n, m, eps, d)
        x0 = self.lo + (self.hi - self.lo) * rng.random()
        return _LinearInstance(x0, d, m, {"x0": x0, "beta": 1.0, "gamma": 1.0, "C_b": 1.0, "C_a": 2.0})


class _SineInstance(_SeparableInstance):
    def __init__(self, amp, d, m, params):
        super().__init__(d, m, params)
        self.amp = float(amp)

    def eta1(self, t):
        return self.amp * np.sin(2 * np.pi * np.asarray(t, dtype=float))

    def _F(self, t):
        return -self.amp * np.cos(2 * np.pi * t) / (2 * np.pi)  # ∫ amp sin 2πt

    def integrals1(self, a, b):
        q = self._F(b) - self._F(a)
        pos = self._F(np.clip(b, 0, 0.5)) - self._F(np.clip(a, 0, 0.5))  # sin ≥ 0 on [0, ½]
        neg = -(self._F(np.clip(b, 0.5, 1)) - self._F(np.clip(a, 0.5, 1)))
        G = lambda t: self.amp ** 2 * (t / 2 - np.sin(4 * np.pi * t) / (8 * np.pi))  # noqa: E731  ∫ amp² sin²
        return q, pos, neg, G(b) - G(a)


class SineRegression(LabelFamily):
    r"""Regression, SPEC §7 row REG: f uniform, η(x) = a sin(2πx₁) with a = ½, Y = ±1, P(Y=1|x) = (1+η)/2.

    Assumption 2(b) with β = 1, C_b = 2πa; f_L = 1; |Y| = 1 < T for any T > 1
    (Theorem 11 with T = 1 also works: |η| ≤ 1).  Fixed, not minimax-hard.

    Parameters
    ----------
    amp : float
        Amplitude a ∈ (0, 1].
    """

    name = "sine"
    task = "regression"
    minimax_hard = False

    def __init__(self, amp=0.5):
        check(_number(amp) and 0 < amp <= 1, "amp", amp, "in (0, 1]")
        self.amp = float(amp)

    def instance(self, rng, n, m, eps, d=1):
        _family_point(n, m, eps, d)
        return _SineInstance(self.amp, d, m, {"amp": self.amp, "beta": 1.0, "C_b": 2 * np.pi * self.amp})


class _BumpInstance(LabelInstance):
    r"""η(x) = v_I φ((x − c_I)/l) l^β on instance cube I (side l = 1/B_i), φ(u) = (½ − ||u||_∞)₊^β.

    ``v`` has one entry per instance cube (C-order); v_I = 0 marks a cube that is
    not perturbed, where Thm 10's instance puts its ramp (``ramp_A`` > 0).
    """

    def __init__(self, Bi, beta, v, d, m, params, ramp_A=0.0, rho=0.5, k_block=None):
        super().__init__(d, m, params)
        self.Bi, self.beta, self.l = int(Bi), float(beta), 1.0 / int(Bi)
        self.v = np.asarray(v, dtype=float)
        self.ramp_A, self.rho = float(ramp_A), float(rho)
        self.k_block = k_block

    def _bump(self, x):
        idx = np.clip(np.floor(x * self.Bi), 0, self.Bi - 1).astype(np.int64)
        u = x * self.Bi - idx - 0.5
        phi = np.maximum(0.5 - np.abs(u).max(axis=1), 0.0) ** self.beta * self.l ** self.beta
        return idx, phi

    def eta(self, x):
        x = np.asarray(x, dtype=float).reshape(-1, self.d)
        idx, phi = self._bump(x)
        if self.k_block is None:
            return self.v[np.ravel_multi_index(tuple(idx.T), (self.Bi,) * self.d)] * phi
        inside = np.all(idx < self.k_block, axis=1)
        out = np.minimum(np.maximum(x - self.ramp_A, 0.0).max(axis=1), self.rho) ** self.beta
        if inside.any():
            vi = self.v[np.ravel_multi_index(tuple(idx[inside].T), (self.k_block,) * self.d)]
            out[inside] = vi * phi[inside]
        return out

    def moments(self, B_axis):
        d, b = self.d, self.beta
        est, inst, w = _bump_overlaps(int(B_axis), self.Bi, d, (b, 2 * b))
        if self.k_block is None:
            v = self.v[inst]
        else:  # the block's cubes, in C-order over (k,)*d, among the instance cubes
            multi = np.stack(np.unravel_index(inst, (self.Bi,) * d), axis=1)
            inside = np.all(multi < self.k_block, axis=1)
            v = np.zeros(len(inst))
            v[inside] = self.v[np.ravel_multi_index(tuple(multi[inside].T), (self.k_block,) * d)]
        n_cubes = int(B_axis) ** d
        lb = self.l ** b
        pos = np.bincount(est, weights=np.maximum(v, 0) * lb * w[:, 0], minlength=n_cubes)
        neg = np.bincount(est, weights=np.maximum(-v, 0) * lb * w[:, 0], minlength=n_cubes)
        sq = np.bincount(est, weights=np.abs(v) * lb ** 2 * w[:, 1], minlength=n_cubes)
        if self.k_block is not None:
            ramp = _ramp_moments(int(B_axis), d, self.ramp_A, self.rho, (b, 2 * b))
            pos, sq = pos + ramp[:, 0], sq + ramp[:, 1]
        return CubeMoments(np.full(n_cubes, (1.0 / B_axis) ** d), pos - neg, pos, neg, sq)


def _hard_l(c, n, m, eps, d, beta):
    """l = c (nmε²)^{−1/(2(d+β))} ((187); SPEC slip 8 for Theorem 12), as 1/B_i with B_i = ⌈1/l⌉."""
    raw = c * (n * m * eps ** 2) ** (-1.0 / (2 * (d + beta)))
    return max(1, math.ceil(1.0 / raw - 1e-12)), raw


class Thm10Hard(LabelFamily):
    r"""Theorem 10's hard classification instance (Appendix E.3, (174)-(175), (187)), with slip 9 fixed.

    f ≡ 1 on [0, 1]^d, cut into B_i = ⌈1/l⌉^d cubes of side l' = 1/⌈1/l⌉ ≤ l,
    l = c(nmε²)^{−1/(2(d+β))} (187).  The perturbed cubes are the k^d cubes of
    the corner block [0, A]^d, A = k l', k = max(1, round((C_K l'^{γβ−d})^{1/d}))
    ∧ ⌈1/l⌉ (so about C_K l^{γβ−d} cubes, (188)), with

    .. math:: \eta(x) = v_k\,\phi\Big(\frac{x - c_k}{l'}\Big) l'^\beta,\qquad
              \phi(u) = (\tfrac12 - \|u\|_\infty)_+^\beta,\qquad v \in \{\pm1\}^{k^d}

    drawn per trial.  The paper sets η = 0 on the other cubes, which violates
    Assumption 2(a) (SPEC slip 9: P(|η| < t) does not vanish with t).  Here
    η(x) = min(dist_∞(x, [0, A]^d), ρ)^β off the block: it does not depend on
    v (so the Fano/Assouad argument (176)-(189) is unchanged) and makes the
    class conditions hold with n-free constants:

    * |η| ≤ max((l'/2)^β, ρ^β) ≤ ½ < 1 (ρ ≤ ½);
    * Hölder (b): each piece is Hölder-β with constant 1 in ||·||_∞, and η = 0
      on every piece boundary, so |η(x) − η(x')| ≤ 2||x − x'||_∞^β ≤ 2||x − x'||₂^β
      (``C_b`` = 2);
    * margin (a) with γ ≤ 1/β: with s = t^{1/β}, P(|η| < t) ≤
      min(2d k^d l'^{d−1} s, k^d l'^d) + (min(A + s, 1)^d − A^d) for t < ρ^β, and
      ≤ 1 ≤ ρ^{−βγ} t^γ above; ``C_a`` (:meth:`margin_constant`) is the sup
      over t of this bound / t^γ, at most (2d)^{γβ}k^d l'^{d−γβ} + d 2^{d−1} +
      ρ^{−γβ}, bounded in n since k^d l'^{d−γβ} ≈ C_K.  The bumps' own edges
      give P ≳ t^{1/β}, so γβ ≤ 1 is needed (stronger than the SPEC's γβ ≤ d);
    * f_L = 1.

    Parameters
    ----------
    beta, gamma : float
        Hölder and margin exponents, β ∈ (0, 1], γ > 0, γβ ≤ 1.
    c : float
        Constant of l.
    C_K : float
        Constant of the number of perturbed cubes.
    rho : float
        Cap of the ramp off the block, in (0, ½].
    """

    name = "thm10"
    task = "classification"
    minimax_hard = True

    def __init__(self, beta=1.0, gamma=1.0, c=1.0, C_K=4.0, rho=0.5):
        check(_number(beta) and 0 < beta <= 1, "beta", beta, "in (0, 1] (Hölder-β with β > 1 forces constant η)")
        check(_number(gamma) and gamma > 0, "gamma", gamma, "> 0")
        check(gamma * beta <= 1 + 1e-12, "gamma", gamma, f"<= 1/beta = {1 / beta:g} (margin at the bumps' edges)")
        self.beta, self.gamma = float(beta), float(gamma)
        self.c = _positive("c", c)
        self.C_K = _positive("C_K", C_K)
        check(_number(rho) and 0 < rho <= 0.5, "rho", rho, "in (0, 0.5]")
        self.rho = float(rho)

    def margin_constant(self, d, k, l, A) -> float:
        """sup_t (bound on P(|η(X)| < t)) / t^γ, over a fine log grid of t (see the class docstring)."""
        gb = self.gamma * self.beta
        s = np.geomspace(1e-12, self.rho, 4000)
        bound = np.minimum(2 * d * k ** d * l ** (d - 1) * s, k ** d * l ** d) + np.minimum(A + s, 1.0) ** d - A ** d
        return float(max(np.max(bound / s ** gb), self.rho ** -gb))

    def instance(self, rng, n, m, eps, d=1):
        _family_point(n, m, eps, d)
        d = int(d)
        Bi, raw = _hard_l(self.c, n, m, eps, d, self.beta)
        l = 1.0 / Bi
        target = self.C_K * l ** (self.gamma * self.beta - d)
        k = int(min(Bi, max(1, round(target ** (1.0 / d)))))
        A = k * l
        v = np.where(rng.random(k ** d) < 0.5, -1.0, 1.0)
        params = {"l": l, "l_formula": raw, "cubes": Bi ** d, "perturbed": k ** d, "perturbed_target": target,
                  "block_side": A, "beta": self.beta, "gamma": self.gamma, "C_b": 2.0,
                  "C_a": self.margin_constant(d, k, l, A), "f_L": 1.0, "v": v}
        return _BumpInstance(Bi, self.beta, v, d, m, params, ramp_A=A, rho=self.rho, k_block=k)


class Thm12Hard(LabelFamily):
    r"""Theorem 12's hard regression instance (Appendix F.3, (221)-(222)), l per SPEC slip 8.

    f ≡ 1; all B_i = ⌈1/l⌉^d cubes of side l' = 1/⌈1/l⌉ carry
    η(x) = v_k φ((x − c_k)/l') l'^β, φ(u) = (½ − ||u||_∞)₊^β, v ∈ {±1}^{B_i} drawn per
    trial, l = c(nmε²)^{−1/(2(d+β))}; R ≳ l^{2β} (SPEC slip 8 for (230)-(232)).
    |η| ≤ (l'/2)^β ≤ ½; Hölder-β with ``C_b`` = 2 (as for :class:`Thm10Hard`);
    f_L = 1; |Y| = 1.

    Parameters
    ----------
    beta : float
        β ∈ (0, 1].
    c : float
        Constant of l.
    """

    name = "thm12"
    task = "regression"
    minimax_hard = True

    def __init__(self, beta=1.0, c=1.0):
        check(_number(beta) and 0 < beta <= 1, "beta", beta, "in (0, 1] (Hölder-β with β > 1 forces constant η)")
        self.beta = float(beta)
        self.c = _positive("c", c)

    def instance(self, rng, n, m, eps, d=1):
        _family_point(n, m, eps, d)
        d = int(d)
        Bi, raw = _hard_l(self.c, n, m, eps, d, self.beta)
        v = np.where(rng.random(Bi ** d) < 0.5, -1.0, 1.0)
        params = {"l": 1.0 / Bi, "l_formula": raw, "cubes": Bi ** d, "perturbed": Bi ** d, "beta": self.beta,
                  "C_b": 2.0, "f_L": 1.0, "v": v}
        return _BumpInstance(Bi, self.beta, v, d, m, params)


# =========================================================================== SO family


class SOInstance:
    r"""One trial's SO problem: X ~ Σ_a p_a δ_{s_a}, l(x, θ) = ½||θ − x||², Θ = ball of radius ``radius``.

    L(θ) = E l(X, θ) = ½||θ − μ||² + const, θ* = μ = E X (14); Assumption 1:
    G = 1 (∇l(x, ·) is 1-Lipschitz), γ = 1 (strong convexity), and for θ ∈ Θ,
    ||∇l(X, θ)||₂ = ||θ − X||₂ ≤ radius + max ||s_a|| = ``grad_bound``.

    Attributes
    ----------
    support : ndarray (q, d); probs : ndarray (q,); theta_star : ndarray (d,)
    G, gamma, radius, grad_bound : float
    d, m : int; params : dict
    """

    def __init__(self, support, probs, d, m, radius, params=None):
        self.support = np.asarray(support, dtype=float).reshape(len(probs), int(d))
        self.probs = np.asarray(probs, dtype=float)
        self.d, self.m = int(d), int(m)
        self.theta_star = self.probs @ self.support
        self.G, self.gamma = 1.0, 1.0
        self.radius = float(radius)
        self.grad_bound = self.radius + float(np.max(np.linalg.norm(self.support, axis=1)))
        self.params = dict(params or {})

    def grad_support(self, theta) -> np.ndarray:
        """∇_θ l(s_a, θ) = θ − s_a for every support point, shape (q, d)."""
        return np.asarray(theta, dtype=float)[None, :] - self.support

    def gradient(self, theta) -> np.ndarray:
        """∇L(θ) = θ − θ*, exact."""
        return np.asarray(theta, dtype=float) - self.theta_star

    def project(self, theta) -> np.ndarray:
        """Π_Θ: the nearest point of the ball ||θ|| ≤ radius (1-Lipschitz, fixes θ* ∈ Θ)."""
        theta = np.asarray(theta, dtype=float)
        norm = float(np.linalg.norm(theta))
        return theta if norm <= self.radius else theta * (self.radius / norm)

    def __repr__(self):
        return f"SOInstance(d={self.d}, m={self.m}, {self.params})"


class QuadraticSO:
    r"""SPEC §7 row SO: l(x, θ) = ½||θ − x||², X = ±a e_k with a = ½.

    P(X = +a e_k) = (1 + s)/(2d), P(X = −a e_k) = (1 − s)/(2d), k = 1..d, so
    θ* = E X = (a s/d)·(1, …, 1), ||θ*|| = a s/√d.  Θ = ball of radius a (it
    holds every sample and θ*), so the gradient bound is D = 2a = 1 (SPEC d = 4,
    step η = ½).  Fixed, not minimax-hard (the paper has no SO lower bound).

    Parameters
    ----------
    s : float
        Bias in [−1, 1].
    a : float
        Size of a sample, > 0.
    """

    name = "quadratic"
    task = "so"
    minimax_hard = False

    def __init__(self, s=0.3, a=0.5):
        check(_number(s) and -1 <= s <= 1, "s", s, "in [-1, 1]")
        self.s = float(s)
        self.a = _positive("a", a)

    def instance(self, rng, n, m, eps, d=4) -> SOInstance:
        _family_point(n, m, eps, d)
        d = int(d)
        eye = np.eye(d)
        support = np.vstack([self.a * eye, -self.a * eye])
        probs = np.concatenate([np.full(d, (1 + self.s) / (2 * d)), np.full(d, (1 - self.s) / (2 * d))])
        return SOInstance(support, probs, d, m, radius=self.a, params={"s": self.s, "a": self.a})

    def __repr__(self):
        return f"QuadraticSO(s={self.s}, a={self.a})"


# =========================================================================== users' cube statistics


def _cell_probs(mom: CubeMoments) -> np.ndarray:
    """P(cube b, Y = y) = (p_b + y q_b)/2, cells ordered (b, +1), (b, −1)."""
    probs = np.stack([(mom.p + mom.q) / 2, (mom.p - mom.q) / 2], axis=1).ravel()
    probs = np.maximum(probs, 0.0)
    return probs / probs.sum()


def _cell_stats(H, B, K, coords) -> np.ndarray:
    r"""Per-cell statistic of each coordinate, shape (2B, len(coords)).

    Coordinate k < K: U_k = y H_K[k, b] (136); k ≥ K (regression): V_{k−K} = H_K[k−K, b] (192).
    """
    cols = []
    for k in coords:
        h = H[k % K, :B]
        cols.append(np.stack([h, -h] if k < K else [h, h], axis=1).ravel())
    return np.stack(cols, axis=1)


def _draw_cells(inst: LabelInstance, rng, n_users, m, B_axis, stats, probs, path) -> UserValues:
    """``n_users`` users' data as counts over the 2B cells, with the cells' statistics as the support.

    ``per_user``: every user's m samples (X_ij, Y_ij) from f and η, counted per cell
    (the literal protocol).  ``sufficient``: :func:`~.data.draw_users` over the
    cells' statistics with P(b, y) = (p_b + y q_b)/2, equal statistics merged
    (two atoms ±1 for one coordinate: Multinomial over Binomial(m, π) users).
    """
    if path == "sufficient":
        return draw_users(rng, n_users, m, stats, probs, "sufficient")
    n_cells = len(probs)
    atoms = np.zeros((int(n_users), n_cells), dtype=np.int64)
    rows = max(1, _SAMPLES_CHUNK // (m * inst.d))
    for start in range(0, int(n_users), rows):
        k = min(rows, int(n_users) - start)
        x, y = inst.sample(rng, k * m)
        cell = 2 * cube_index(x, B_axis) + (y < 0)
        atoms[start:start + k] = np.bincount(np.arange(k).repeat(m) * n_cells + cell,
                                             minlength=k * n_cells).reshape(k, n_cells)
    return UserValues(atoms, np.ones(int(n_users), dtype=np.int64), True, support=stats, m=m)


# =========================================================================== estimators


class LearningEstimator(ABC):
    """A user-level ε-LDP learning protocol: ``trial(family, n, m, eps, d, rng, path) -> dict``."""

    name: str = ""
    task: str = ""

    @abstractmethod
    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        """One trial at (n, m, ε, d): draw the instance from ``rng``, run the protocol, score it exactly."""

    @abstractmethod
    def check_point(self, family, n, m, eps, d) -> None:
        """Raise a one-line :class:`ConfigError` unless a trial can run at (n, m, ε, d).

        The rule :meth:`trial` applies (the same code: tuning, groups, users per
        group); the experiment validator applies it to every point of a grid
        before computing anything.
        """

    def __repr__(self):
        fields = ", ".join(f"{k}={v}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _ln(x):
    return math.log(max(x, 1.0 + 1e-12))


class _CubeProtocol(LearningEstimator):
    r"""Shared code of Algorithms 4 and 5: cubes, Hadamard coordinates, Algorithm 1 per coordinate.

    ``_coords_per_cube`` = 1 (Q only) or 2 (Q and P).  Subclasses give the cube
    length ``_cube_length(n, m, eps, d, K_guess)`` and ``_score``.
    """

    _coords_per_cube = 1

    def __init__(self, c_l, beta, c2, min_stage1, l):
        self.c_l = _positive("c_l", c_l)
        check(_number(beta) and 0 < beta <= 1, "beta", beta, "in (0, 1]")
        self.beta = float(beta)
        self.c2 = _positive("c2", c2)
        self.min_stage1 = _positive("min_stage1", min_stage1)
        check(l is None or (_number(l) and 0 < l <= 1), "l", l, "None (tuned) or in (0, 1]")
        self.l = None if l is None else float(l)

    # ----------------------------------------------------------------- tuning

    @abstractmethod
    def _length(self, n, m, eps, d, low) -> float:
        """Cube length at (n, m, ε, d); ``low``: the low-privacy formula."""

    def tuning(self, n, m, eps, d) -> dict:
        """(l, B_1, B, K, regime, groups, ε per Algorithm 1 instance) at (n, m, ε, d); see the module docstring."""
        def grid(l):
            B_axis = max(1, math.ceil(1.0 / l - 1e-9))
            B = B_axis ** d
            check(B <= MAX_CUBES, "l", l, f"a cube length giving at most {MAX_CUBES} cubes (got {B})")
            return B_axis, B, 1 << max(0, math.ceil(math.log2(B) - 1e-12))

        if self.l is not None:
            l, low = self.l, False
        else:
            l = min(1.0, self._length(n, m, eps, d, low=False))
            _, _, K = grid(l)
            low = eps >= self._coords_per_cube * K * math.log(n)
            if low:
                l = min(1.0, self._length(n, m, eps, d, low=True))
        B_axis, B, K = grid(l)
        regime, groups, eps_inst = algorithm2_plan(self._coords_per_cube * K, eps, n)
        return {"l": l, "B_axis": B_axis, "B": B, "K": K, "regime": regime, "plan": groups,
                "eps_instance": eps_inst, "low_privacy_l": low}

    def groups(self, n, m, eps, d) -> tuple:
        """(tuning, group sizes) at (n, m, ε, d), checked: at most ``MAX_CUBES`` cubes, 2 users per group."""
        tun = self.tuning(n, m, eps, d)
        plan = tun["plan"]
        sizes = split_sizes(n, len(plan))
        check(int(sizes.min()) >= 2, "n", n, f"at least {2 * len(plan)} users: {len(plan)} groups ({tun['regime']} "
              f"privacy, {self._coords_per_cube * tun['K']} coordinates), each with a stage I and a stage II user")
        return tun, sizes

    def check_point(self, family, n, m, eps, d):
        n, m, eps, d = _check_point(n, m, eps, d, "sufficient")
        self.groups(n, m, eps, d)

    # ----------------------------------------------------------------- protocol

    def _run(self, family, n, m, eps, d, rng, path):
        n, m, eps, d = _check_point(n, m, eps, d, path)
        check(isinstance(family, LabelFamily), "family", family, "a classification or regression family")
        tun, sizes = self.groups(n, m, eps, d)
        inst = family.instance(rng, n, m, eps, d)
        B_axis, B, K = tun["B_axis"], tun["B"], tun["K"]
        mom = inst.moments(B_axis)
        H = hadamard_matrix(K)
        pad = np.zeros(K)
        truth = [hadamard_encode(np.concatenate([mom.q, pad[B:]]))]  # Q = H q (134)
        if self._coords_per_cube == 2:
            truth.append(hadamard_encode(np.concatenate([mom.p, pad[B:]])))  # P = H p (190)
        truth = np.concatenate(truth)
        probs = _cell_probs(mom)
        plan = tun["plan"]
        tuning = TwoStageTuning(1.0, 4.0 / math.sqrt(m), math.sqrt(math.log(n) / m))
        est = np.zeros(len(truth))
        fails = 0
        for coords, size in zip(plan, sizes):
            stats = _cell_stats(H, B, K, coords)
            n1 = int(size) // 2
            stage1 = _draw_cells(inst, rng, n1, m, B_axis, stats, probs, path)
            stage2 = _draw_cells(inst, rng, int(size) - n1, m, B_axis, stats, probs, path)
            for j, k in enumerate(coords):
                f = coordinate(j)
                out = twostage_details(stage1.map_samples(f), stage2.map_samples(f), tuning, tun["eps_instance"],
                                       rng, mu=float(truth[k]))
                est[k] = out["estimate"]
                fails += not out["stage1_ok"]
        stage1_users = int(sizes.min()) // 2
        cond = n * min(eps ** 2, 1.0) / (_ln(m) + _ln(n)) if m > 1 else math.inf
        info = {"stage1_ok": fails == 0, "stage1_failures": int(fails), "groups": len(plan),
                "l": tun["l"], "B": B, "K": K, "regime": tun["regime"], "eps_instance": tun["eps_instance"],
                "low_privacy_l": tun["low_privacy_l"], "h": tuning.h, "delta": tuning.delta,
                "bins": tuning.bins, "min_stage1_users": stage1_users,
                "stage1_size_eps2": stage1_users * min(tun["eps_instance"] ** 2, 1.0), "condition_ratio": cond}
        return inst, mom, K, est, truth, info


class Algorithm4(_CubeProtocol):
    r"""Algorithm 4: nonparametric classification under user-level ε-LDP (Appendix E.1, Theorem 9).

    1. Cut [0, 1]^d into B = B_1^d cubes of side 1/B_1 ≤ l, K = 2^⌈log₂B⌉ (130).
    2. Sample j of user i gives U_ijk = Y_ij H_K[k, cube(X_ij)] ∈ {±1} (136),
       E U_ijk = Q_k = Σ_l H_kl q_l, q_l = ∫_{C_l} fη (132)-(135).
    3. ε ≤ 1: K groups of users; group k runs Algorithm 1 with D = 1,
       h = 4/√m, Δ = √(ln n/m) on its users' means of U_·k: Q̂_k (137).
       Larger ε: the groups of Algorithm 2 with K coordinates (⌈K/⌊ε⌋⌉ groups
       of ⌊ε⌋ coordinates at 1-LDP each; one group at ε/K per coordinate when
       ε ≥ K ln n), E.1 "Medium/Low privacy".
    4. q̂ = H_K Q̂ / K (138); predict sign(q̂_k) on C_k (139).

    Var q̂_k ≈ 4λ²/n, λ = (3h + 2Δ)/ε (SPEC §5).  Rate (19):
    (mn(ε²∧ε))^{−β(1+γ)/(2(d+β))} ln^{1+γ}n + (nm/ln n)^{−β(1+γ)/(2β+d)}.

    Tuning (SPEC §5, (167), (169), (172)): l = c_l (mn e(ε))^{−1/(2(d+β))} with
    e(ε) = ε² for ε ≤ 1 and ε above (slip 4), and l = c_l (nm/ln n)^{−1/(2β+d)}
    when ε ≥ K ln n; c_l = 6 (the SPEC's l = 6(mnε²)^{−1/4} for d = β = 1).

    Privacy (user-level ε-LDP, Definition 1).  The groups are disjoint and a
    user's whole report is produced inside its group: a stage-I user sends,
    for each coordinate of its group, the one-hot bin of its user mean plus
    Lap(2/ε') per bin (:class:`~.mechanisms.BinHistogram`: ℓ1 sensitivity 2
    for any two data sets of m samples, so ε'-LDP); a stage-II user sends, per
    coordinate, clip(mean, L − Δ, R + Δ) + Lap((3h + 2Δ)/ε')
    (:class:`~.mechanisms.ClippedMean`: range 3h + 2Δ, so ε'-LDP), where L, R
    depend only on stage-I reports (sequential interaction, Eq. (1)).  With
    c coordinates per group, c·ε' = ε (ε < 1: c = 1, ε' = ε), ⌊ε⌋·1 ≤ ε
    (medium), K·ε/K = ε (low): basic composition gives ε.  q̂ and the
    classifier are post-processing.

    Parameters
    ----------
    c_l : float
        Constant of the cube length.
    beta : float
        Hölder exponent the tuning assumes, (0, 1].
    c2 : float
        Constant of Theorem 9's condition n(ε²∧1) ≥ c2(ln m + ln n).
    min_stage1 : float
        SPEC §7: every group needs (stage-I users)·(ε'²∧1) ≥ min_stage1.
    l : float, optional
        A fixed cube length instead of the tuning.

    ``trial`` returns ``error`` = R − R* (exact given q̂), ``stage1_ok``,
    ``in_regime``, ``groups``, ``q_hat_1`` / ``q_1`` (first cube), ``sign_errors``
    and the tuning (l, B, K, regime, eps_instance, h, delta, bins, ...).
    """

    name = "alg4"
    task = "classification"
    _coords_per_cube = 1

    def __init__(self, c_l=6.0, beta=1.0, c2=1.0, min_stage1=STAGE1_MIN, l=None):
        super().__init__(c_l, beta, c2, min_stage1, l)

    def _length(self, n, m, eps, d, low):
        if low:
            return self.c_l * (n * m / _ln(n)) ** (-1.0 / (2 * self.beta + d))
        return self.c_l * (m * n * min(eps ** 2, eps)) ** (-1.0 / (2 * (d + self.beta)))

    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        inst, mom, K, Q_hat, Q, info = self._run(family, n, m, eps, d, rng, path)
        q_hat = hadamard_decode(Q_hat)[:mom.B]
        info["in_regime"] = bool(info["condition_ratio"] >= self.c2 and info["stage1_size_eps2"] >= self.min_stage1)
        info.update(error=excess_risk(q_hat, mom), q_hat_1=float(q_hat[0]), q_1=float(mom.q[0]),
                    sign_errors=int(np.sum((q_hat < 0) != (mom.q < 0))))
        return info


class Algorithm5(_CubeProtocol):
    r"""Algorithm 5: nonparametric regression under user-level ε-LDP (Appendix F.1, Theorem 11).

    Cubes and K as in :class:`Algorithm4`.  2K coordinates: U_·k (136) with
    mean Q_k = (H_K q)_k, and V_ijk = H_K[k, cube(X_ij)] (192) with mean
    P_k = (H_K p)_k (190), p_k = ∫_{C_k} f.  ε ≤ 1: 2K groups, K for the Q_k
    (137) and K for the P_k (193), each Algorithm 1 with D = 1; larger ε: the
    groups of Algorithm 2 with 2K coordinates.  q̂ = H_K Q̂/K, p̂ = H_K P̂/K
    (194), η̂ = clip(q̂_k/p̂_k, ±T) on C_k (195) (0 where p̂_k ≤ 0).

    Rate (21): (mn(ε²∧ε)/ln²n)^{−β/(d+β)} + (mn/ln n)^{−2β/(2β+d)}.  Tuning
    (219): l = c_l (mn e(ε)/ln²n)^{−1/(2(d+β))}, e(ε) = ε² ∧ ε, and
    l = c_l (mn/ln n)^{−1/(2β+d)} when ε ≥ 2K ln n; default c_l = 2.5 (the SPEC
    fixes none: the error at n = 2^17 and 2^22, m = 2^10, ε = 1 on the sine
    family is smallest for c_l ∈ [2, 3] in a scan of {1.5, 2, 3, 4}).

    Privacy: as :class:`Algorithm4`, with 2K coordinates (each user in one
    group, one report of BinHistogram or ClippedMean outputs per coordinate of
    its group, at most ε in total by basic composition; V uses no label but is
    privatised the same way).

    Parameters
    ----------
    c_l, beta, c2, min_stage1, l : as :class:`Algorithm4` (Theorem 11's
        condition is n(ε²∧1) ≥ 2c2(ln m + ln n)).
    T : float
        Clip of η̂, > 0 (|Y| ≤ 1 here).

    ``trial`` returns ``error`` = ∫(η̂ − η)² f (exact given η̂), ``stage1_ok``,
    ``in_regime``, ``groups``, ``q_hat_1`` / ``q_1``, ``p_hat_1`` / ``p_1``,
    ``bias2`` (the error of η̂_k = q_k/p_k, Lemma 8) and the tuning.
    """

    name = "alg5"
    task = "regression"
    _coords_per_cube = 2

    def __init__(self, c_l=2.5, beta=1.0, T=1.0, c2=1.0, min_stage1=STAGE1_MIN, l=None):
        super().__init__(c_l, beta, c2, min_stage1, l)
        self.T = _positive("T", T)

    def _length(self, n, m, eps, d, low):
        if low:
            return self.c_l * (m * n / _ln(n)) ** (-1.0 / (2 * self.beta + d))
        return self.c_l * (m * n * min(eps ** 2, eps) / _ln(n) ** 2) ** (-1.0 / (2 * (d + self.beta)))

    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        inst, mom, K, est, truth, info = self._run(family, n, m, eps, d, rng, path)
        q_hat = hadamard_decode(est[:K])[:mom.B]
        p_hat = hadamard_decode(est[K:])[:mom.B]
        safe = np.where(p_hat > 0, p_hat, 1.0)
        eta_hat = np.where(p_hat > 0, np.clip(q_hat / safe, -self.T, self.T), 0.0)
        info["in_regime"] = bool(info["condition_ratio"] >= 2 * self.c2
                                 and info["stage1_size_eps2"] >= self.min_stage1)
        info.update(error=regression_risk(eta_hat, mom), q_hat_1=float(q_hat[0]), q_1=float(mom.q[0]),
                    p_hat_1=float(p_hat[0]), p_1=float(mom.p[0]), T=self.T,
                    bias2=regression_risk(mom.q / mom.p, mom), nonpositive_p=int(np.sum(p_hat <= 0)))
        return info


class Algorithm3(LearningEstimator):
    r"""Algorithm 3: stochastic optimisation under user-level ε-LDP (Section 5, Theorem 8).

    Users are split into t0 groups S_0..S_{t0−1}.  At step t the users of S_t
    compute their gradients ∇l(X_ij, θ_t); g_t = MeanEst of them (Algorithm 2
    on the Kashin coefficients, Theorem 5 — ``mean="kashin"``, as Theorem 8's
    proof (122) uses — or Algorithm 2 on the coordinates, ``mean="linf"``), and

    .. math:: \theta_{t+1} = \Pi_\Theta(\theta_t - \eta g_t)\qquad (15),

    θ̂ = θ_{t0} (Π_Θ: see the module docstring; Θ ∋ θ*, so (124)-(129) hold).
    Theorem 8 (16): E||θ_t − θ*|| ≤ (1 − ηγ/2)^t ||θ_0 − θ*|| +
    (2D/γ)√(C t0/(nm)·(1 + d ln n/(ε²∧ε))), and with t0 ~ ln n, (17):
    D√(ln n/(nm)·(1 + d ln n/(ε²∧ε))).

    Tuning (SPEC §5): t0 = ⌈ln(nm(ε²∧ε))/(ηγ)⌉, so the contraction term
    (1 − ηγ/2)^{t0} ≤ (nm(ε²∧ε))^{−1/2} lies below the noise term; η = ½ ≤ 1/G.
    The mean estimator's bound is the instance's D (ℓ2; also an ℓ∞ bound), and
    the Kashin sup-norm K·D/√d with K = max(``KASHIN_K``, measured K), as
    :class:`~.mean.KashinL2`.

    Privacy (user-level ε-LDP).  The t0 groups are disjoint, and inside a
    step Algorithm 2's groups are disjoint, so each user takes part in one
    Algorithm 2 group of one step only.  There it sends, per coordinate of its
    group, a :class:`~.mechanisms.BinHistogram` report (stage I) or a
    :class:`~.mechanisms.ClippedMean` report (stage II) of the mapped samples
    (Kashin coefficient or coordinate of ∇l(X_ij, θ_t)); both clip for every
    input, so they are ε'-LDP whatever θ_t is, and the coordinates of a group
    compose to ≤ ε (Theorem 4's proof; :func:`~.mean.algorithm2`).  θ_t is a
    function of earlier users' reports only (sequential interaction, Eq. (1));
    θ̂ is post-processing.

    Parameters
    ----------
    lr : float
        Step η > 0 (Theorem 8 needs η ≤ 1/G; SPEC: ½).
    mean : {"kashin", "linf"}
        The multi-dimensional mean estimator.
    t0 : int, optional
        Number of steps/groups; None = the SPEC's tuning.
    c1 : float
        Constant of Theorem 8's condition n(ε²∧1) ≥ c1·d·ln n·ln m.
    min_stage1 : float
        SPEC §7: every Algorithm 1 instance needs (stage-I users)·(ε'²∧1) ≥ min_stage1.
    basis_seed : int
        Seed of the Kashin frame.

    ``trial`` returns ``error`` = ||θ̂ − θ*||₂ (unsquared), ``stage1_ok``,
    ``in_regime``, ``groups`` (t0 × Algorithm 2 groups per step), ``t0``,
    ``lr``, ``theta_hat_1`` / ``theta_star_1``, ``grad_bound`` and Algorithm 2's
    regime diagnostics.
    """

    name = "alg3"
    task = "so"

    def __init__(self, lr=0.5, mean="kashin", t0=None, c1=1.0, min_stage1=STAGE1_MIN, basis_seed=0):
        self.lr = _positive("lr", lr)
        check(mean in ("kashin", "linf"), "mean", mean, ("kashin", "linf"))
        self.mean = mean
        check(t0 is None or (_number(t0) and int(t0) == t0 and t0 >= 1), "t0", t0, "None (tuned) or an integer >= 1")
        self.t0 = None if t0 is None else int(t0)
        self.c1 = _positive("c1", c1)
        self.min_stage1 = _positive("min_stage1", min_stage1)
        check(_number(basis_seed) and int(basis_seed) == basis_seed and basis_seed >= 0, "basis_seed", basis_seed,
              "an integer >= 0")
        self.basis_seed = int(basis_seed)

    def steps(self, n, m, eps, gamma=1.0) -> int:
        """t0 = ⌈ln(nm(ε²∧ε))/(ηγ)⌉ ≥ 1 (SPEC §5), or the fixed ``t0``."""
        if self.t0 is not None:
            return self.t0
        return max(1, math.ceil(math.log(max(n * m * min(eps ** 2, eps), 1.0)) / (self.lr * gamma)))

    def step_sizes(self, n, m, eps, d, gamma=1.0) -> tuple:
        """(t0, users per step) at (n, m, ε, d), checked: each step's Algorithm 2 has 2 users per group."""
        t0 = self.steps(n, m, eps, gamma)
        sizes = split_sizes(n, t0)
        dim = 2 * d if self.mean == "kashin" else d
        for size in sorted({int(s) for s in sizes}):
            try:
                check(size >= 2, "n", size, "at least 2 users (a stage I and a stage II user)")
                algorithm2_groups(dim, eps, size)  # the rule each step's algorithm2 applies
            except ConfigError as err:
                raise ConfigError("n", n, f"enough users for {t0} steps (n = {n} gives steps of {size} users; "
                                  f"each step's Algorithm 2 needs {err.allowed})") from None
        return t0, sizes

    def check_point(self, family, n, m, eps, d):
        n, m, eps, d = _check_point(n, m, eps, d, "sufficient")
        inst = family.instance(np.random.default_rng(0), n, m, eps, d)
        check(isinstance(inst, SOInstance), "family", family, "an SO family")
        self.step_sizes(n, m, eps, d, inst.gamma)

    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        n, m, eps, d = _check_point(n, m, eps, d, path)
        inst = family.instance(rng, n, m, eps, d)
        check(isinstance(inst, SOInstance), "family", family, "an SO family")
        t0, sizes = self.step_sizes(n, m, eps, d, inst.gamma)
        D = inst.grad_bound
        if self.mean == "kashin":
            basis = KashinBasis(d, self.basis_seed)
            K = max(KASHIN_K, basis.K)
            dim, bound = 2 * d, K * D / math.sqrt(d)
        else:
            basis, K, dim, bound = None, None, d, D
        theta = np.zeros(d)
        fails, worst = 0, math.inf
        info = {}
        for size in sizes:
            grads = inst.grad_support(theta)
            support = basis.coefficients(grads) if basis is not None else grads
            truth = inst.probs @ support

            def draw(n_users, coords, support=support):
                return draw_users(rng, n_users, m, support, inst.probs, path, transform=lambda s: s[:, coords])

            g, info = algorithm2(draw, dim, bound, m, int(size), eps, rng, truth=truth)
            if basis is not None:
                g = basis.reconstruct(g[None, :])[0]
            fails += info["stage1_failures"]
            worst = min(worst, info["min_stage1_users"] * min(info["eps_instance"] ** 2, 1.0))
            theta = inst.project(theta - self.lr * g)
        cond = n * min(eps ** 2, 1.0) / (d * _ln(n) * _ln(m)) if m > 1 else math.inf
        in_regime = cond >= self.c1 and worst >= self.min_stage1 and self.lr <= 1.0 / inst.G
        return {"error": float(np.linalg.norm(theta - inst.theta_star)), "stage1_ok": fails == 0,
                "stage1_failures": int(fails), "in_regime": bool(in_regime), "groups": t0 * info["groups"],
                "t0": t0, "lr": self.lr, "mean": self.mean, "regime": info["regime"],
                "eps_instance": info["eps_instance"], "stage1_size_eps2": worst, "condition_ratio": cond,
                "grad_bound": D, "kashin_K": K, "theta_hat_1": float(theta[0]),
                "theta_star_1": float(inst.theta_star[0])}


FAMILIES = {cls.name: cls for cls in (QuadraticSO, LinearMargin, SineRegression, Thm10Hard, Thm12Hard)}
ESTIMATORS = {cls.name: cls for cls in (Algorithm3, Algorithm4, Algorithm5)}
