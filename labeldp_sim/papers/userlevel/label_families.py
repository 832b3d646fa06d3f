r"""Classification and regression families of papers/003 (Section 6, SPEC §§6-7).

Each family (group ``userlevel.family``) draws, per trial, a
:class:`LabelInstance`: the law of (X, Y) on [0, 1]^d × {±1} with f ≡ 1 and
P(Y = 1 | x) = (1 + η(x))/2, which knows its exact per-cube integrals
(:class:`~.integrals.CubeMoments`) on any estimator grid.

=========  ===================================================  ==============  ==============
name       η(x)                                                 task            minimax-hard
=========  ===================================================  ==============  ==============
linear     x₁ − x0, x0 ~ U[lo, hi] per trial                    classification  no
sine       a sin(2πx₁)                                          regression      no
thm10      signed bumps on a corner block, a ramp off it        classification  yes (Thm 10)
thm12      signed bumps on every instance cube                  regression      yes (Thm 12)
=========  ===================================================  ==============  ==============

Theorem 10's instance: η = 0 off the perturbed cubes violates Assumption 2(a)
(SPEC slip 9).  The perturbed cubes form one block [0, A]^d at the corner,
A = k·l, k^d ≈ C_K l^{γβ−d}, and off the block
η(x) = min(dist_∞(x, [0, A]^d), ρ)^β ≥ 0: continuous, Hölder-β, carrying no
information about v.  The bump's own zero set makes the margin condition hold
only for γβ ≤ 1 (P(|η| < t) ∝ t^{1/β} near the bumps' edges), which implies
the SPEC's γβ ≤ d.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from labeldp_sim.harness.components import Interval
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.contract import POSITIVE, Family
from labeldp_sim.papers.userlevel.integrals import CubeMoments, bump_overlaps, axis_edges, ramp_moments
from labeldp_sim.papers.userlevel.learning_base import family_point, is_number, positive

__all__ = ["LabelInstance", "LabelFamily", "LinearMargin", "SineRegression", "Thm10Hard", "Thm12Hard"]

# β of Assumption 2(b): Hölder-β with β > 1 forces a constant η
BETA = Interval(float, 0, 1, closed="right", note="Hölder-β with β > 1 forces constant η")


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
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        x = rng.random((int(size), self.d))
        y = np.where(rng.random(int(size)) < (1 + self.eta(x)) / 2, 1.0, -1.0)
        return x, y

    def __repr__(self):
        return f"{type(self).__name__}(d={self.d}, m={self.m}, {self.params})"


class LabelFamily(Family):
    """A classification or regression family; ``instance`` returns a :class:`LabelInstance`
    whose random parameters (x0, signs v) come from ``rng``."""


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
        e = axis_edges(B_axis)
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
    parameters = {"lo": Interval(float, 0, 1), "hi": Interval(float, 0, 1, note="and >= lo")}

    def __init__(self, lo=0.4, hi=0.6):
        check(is_number(lo) and 0 <= lo <= 1, "lo", lo, "in [0, 1]")
        check(is_number(hi) and lo <= hi <= 1, "hi", hi, f"in [lo = {lo}, 1]")
        self.lo, self.hi = float(lo), float(hi)

    def instance(self, rng, n, m, eps, d=1):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        family_point(n, m, eps, d)
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
    parameters = {"amp": Interval(float, 0, 1, closed="right")}

    def __init__(self, amp=0.5):
        check(is_number(amp) and 0 < amp <= 1, "amp", amp, "in (0, 1]")
        self.amp = float(amp)

    def instance(self, rng, n, m, eps, d=1):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        family_point(n, m, eps, d)
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
        est, inst, w = bump_overlaps(int(B_axis), self.Bi, d, (b, 2 * b))
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
            ramp = ramp_moments(int(B_axis), d, self.ramp_A, self.rho, (b, 2 * b))
            pos, sq = pos + ramp[:, 0], sq + ramp[:, 1]
        return CubeMoments(np.full(n_cubes, (1.0 / B_axis) ** d), pos - neg, pos, neg, sq)


def _hard_l(c, n, m, eps, d, beta):
    """l = c (nm(ε²∧ε))^{−1/(2(d+β))} ((187); SPEC slip 8 for Theorem 12), as 1/B_i with B_i = ⌈1/l⌉.

    The theorems are stated for small ε, where ε²∧ε = ε²; above 1 the scale follows the upper bounds'
    ε²∧ε (Theorems 9, 11), so that the searched constant c stays inside a fixed grid on an ε > 1 sweep.
    """
    raw = c * (n * m * min(eps ** 2, eps)) ** (-1.0 / (2 * (d + beta)))
    return max(1, math.ceil(1.0 / raw - 1e-12)), raw


class Thm10Hard(LabelFamily):
    r"""Theorem 10's hard classification instance (Appendix E.3, (174)-(175), (187)), with slip 9 fixed.

    f ≡ 1 on [0, 1]^d, cut into B_i = ⌈1/l⌉^d cubes of side l' = 1/⌈1/l⌉ ≤ l,
    l = c(nm(ε²∧ε))^{−1/(2(d+β))} (187).  The perturbed cubes are the k^d cubes of
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
    parameters = {"beta": BETA, "gamma": Interval(float, 0, None, closed="neither", note="and gamma·beta <= 1"),
                  "c": POSITIVE, "C_K": POSITIVE, "rho": Interval(float, 0, 0.5, closed="right")}

    def __init__(self, beta=1.0, gamma=1.0, c=1.0, C_K=4.0, rho=0.5):
        check(is_number(beta) and 0 < beta <= 1, "beta", beta, "in (0, 1] (Hölder-β with β > 1 forces constant η)")
        check(is_number(gamma) and gamma > 0, "gamma", gamma, "> 0")
        check(gamma * beta <= 1 + 1e-12, "gamma", gamma, f"<= 1/beta = {1 / beta:g} (margin at the bumps' edges)")
        self.beta, self.gamma = float(beta), float(gamma)
        self.c = positive("c", c)
        self.C_K = positive("C_K", C_K)
        check(is_number(rho) and 0 < rho <= 0.5, "rho", rho, "in (0, 0.5]")
        self.rho = float(rho)

    def margin_constant(self, d, k, l, A) -> float:
        """sup_t (bound on P(|η(X)| < t)) / t^γ, over a fine log grid of t (see the class docstring)."""
        gb = self.gamma * self.beta
        s = np.geomspace(1e-12, self.rho, 4000)
        bound = np.minimum(2 * d * k ** d * l ** (d - 1) * s, k ** d * l ** d) + np.minimum(A + s, 1.0) ** d - A ** d
        return float(max(np.max(bound / s ** gb), self.rho ** -gb))

    def instance(self, rng, n, m, eps, d=1):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        family_point(n, m, eps, d)
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
    trial, l = c(nm(ε²∧ε))^{−1/(2(d+β))}; R ≳ l^{2β} (SPEC slip 8 for (230)-(232)).
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
    parameters = {"beta": BETA, "c": POSITIVE}

    def __init__(self, beta=1.0, c=1.0):
        check(is_number(beta) and 0 < beta <= 1, "beta", beta, "in (0, 1] (Hölder-β with β > 1 forces constant η)")
        self.beta = float(beta)
        self.c = positive("c", c)

    def instance(self, rng, n, m, eps, d=1):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        family_point(n, m, eps, d)
        d = int(d)
        Bi, raw = _hard_l(self.c, n, m, eps, d, self.beta)
        v = np.where(rng.random(Bi ** d) < 0.5, -1.0, 1.0)
        params = {"l": 1.0 / Bi, "l_formula": raw, "cubes": Bi ** d, "perturbed": Bi ** d, "beta": self.beta,
                  "C_b": 2.0, "f_L": 1.0, "v": v}
        return _BumpInstance(Bi, self.beta, v, d, m, params)
