r"""Mean-estimation families of papers/003 (SPEC §6): finite-support laws scaled by (n, m, ε).

Every family draws, per trial, a :class:`MeanInstance`: a law Σ_a p_a δ_{s_a}
on finitely many sample values, which knows its true mean μ = Σ_a p_a s_a and
draws the per-user data of any group of users as
:class:`~labeldp_sim.papers.userlevel.data.UserValues` on either path (see
:func:`~labeldp_sim.papers.userlevel.data.draw_users`).  Hidden signs v are drawn
from the trial's rng, so a fixed seed reproduces the trial.

=========  ===============================================================  ==============
name       law of one sample                                                minimax-hard
=========  ===============================================================  ==============
fixed      X = ±D, P(+D) = (1+s)/2, s = 0.3                                 no
thm2       X = ±D, P(+D) = (1+sv)/2, s = min(½, (nm(ε²∧1))^{−1/2}) (57)     yes (Thm 2)
thm6       X = ±D e_k w.p. (1 ± s v_k)/(2d), s = min(½, cd/√(mn(ε²∧ε)))     yes (Thm 6)
thm7       X = ±D h_k (Hadamard columns), same probabilities               yes (Thm 7)
spike      X = a w.p. δ else 0, δ = c/(m√(nε²)), a = (M_p/δ)^{1/p}          yes (SPEC §6)
=========  ===============================================================  ==============
"""

from __future__ import annotations

import math

from abc import abstractmethod

import numpy as np
from scipy.linalg import hadamard

from labeldp_sim.harness.components import Interval
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.contract import POSITIVE, Family
from labeldp_sim.papers.userlevel.data import UserValues, draw_users

__all__ = ["MeanInstance", "Family", "MeanFamily", "FixedSign", "Thm2Hard", "Thm6Hard", "Thm7Hard", "Spike",
           "FAMILIES"]


class MeanInstance:
    """One trial's law of a sample: support points, probabilities, true mean.

    Attributes
    ----------
    support : ndarray, shape (q,) for d = 1, else (q, d)
    probs : ndarray, shape (q,)
    mu : float (d = 1) or ndarray (d,)
        The true mean E X = Σ_a p_a s_a, exact.
    d, m : int
    params : dict
        The family's scaled parameters (s, v, δ, a, ...) for diagnostics.
    """

    def __init__(self, support, probs, d, m, params=None):
        self.support = np.asarray(support, dtype=float)
        self.probs = np.asarray(probs, dtype=float)
        self.d, self.m = int(d), int(m)
        self.params = dict(params or {})
        mu = self.probs @ self.support
        self.mu = float(mu) if self.d == 1 else mu

    def draw(self, rng, n_users, path="sufficient", transform=None) -> UserValues:
        """The data of ``n_users`` fresh users (m samples each), as UserValues on ``path``.

        ``transform`` maps samples first (rows = samples, e.g. some coordinates
        or Kashin coefficients); see :func:`~labeldp_sim.papers.userlevel.data.draw_users`.
        """
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return draw_users(rng, n_users, self.m, self.support, self.probs, path, transform=transform)

    def expect(self, f):
        """E f(X) = Σ_a p_a f(s_a) for a per-sample map f acting on rows."""
        return self.probs @ np.asarray(f(self.support), dtype=float)

    def bound(self, norm="inf") -> float:
        """max over the support of |x| (d = 1), ||x||_∞ (``"inf"``) or ||x||_2 (``"l2"``)."""
        check(norm in ("inf", "l2"), "norm", norm, ("inf", "l2"))
        s = self.support.reshape(len(self.support), -1)
        return float(np.max(np.abs(s).max(axis=1) if norm == "inf" else np.linalg.norm(s, axis=1)))

    def moment(self, p) -> float:
        """E ||X||_2^p (E|X|^p in 1-D), exact."""
        s = self.support.reshape(len(self.support), -1)
        return float(self.probs @ np.linalg.norm(s, axis=1) ** p)

    def __repr__(self):
        return f"MeanInstance(d={self.d}, m={self.m}, q={len(self.support)}, {self.params})"


class MeanFamily(Family):
    """A family of mean-estimation problems; ``instance`` returns a :class:`MeanInstance`."""

    task: str = "mean"


def _check_D(D):
    check(isinstance(D, (int, float, np.integer, np.floating)) and np.isfinite(D) and D > 0, "D", D, "> 0")
    return float(D)


def _check_point(n, m, eps, d):
    check(int(n) == n and n >= 1, "n", n, "an integer >= 1")
    check(int(m) == m and m >= 1, "m", m, "an integer >= 1")
    check(np.isfinite(eps) and eps > 0, "eps", eps, "> 0")
    check(int(d) == d and d >= 1, "d", d, "an integer >= 1")


def _signs(rng, size):
    return np.where(rng.random(size) < 0.5, -1.0, 1.0)


class FixedSign(MeanFamily):
    """X = ±D with P(+D) = (1+s)/2: a fixed, easy 1-D instance (μ = sD).

    Parameters
    ----------
    D : float
        Support bound, > 0.
    s : float
        Bias in (−1, 1); SPEC §7 row M1 uses 0.3.
    """

    name = "fixed"
    minimax_hard = False
    parameters = {"D": POSITIVE, "s": Interval(float, -1, 1, closed="neither")}

    def __init__(self, D=1.0, s=0.3):
        self.D = _check_D(D)
        check(isinstance(s, (int, float)) and -1 < s < 1, "s", s, "in (-1, 1)")
        self.s = float(s)

    def instance(self, rng, n, m, eps, d=1):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        _check_point(n, m, eps, d)
        check(d == 1, "d", d, "1 (a one-dimensional family)")
        return MeanInstance([self.D, -self.D], [(1 + self.s) / 2, (1 - self.s) / 2], 1, m, {"s": self.s})


class Thm2Hard(MeanFamily):
    r"""Theorem 2's two-point instance (57): X = ±D, P(+D) = (1 + sv)/2, μ = Dsv.

    s = min(½, c·(nm(ε²∧1))^{−1/2}) puts μ at the scale of the lower bound (3),
    D²/(nm(ε²∧1)) (c = 1; the law-free mode searches c); v = ±1 is drawn per trial.
    """

    name = "thm2"
    minimax_hard = True
    parameters = {"D": POSITIVE, "c": POSITIVE}

    def __init__(self, D=1.0, c=1.0):
        self.D = _check_D(D)
        check(isinstance(c, (int, float)) and math.isfinite(c) and c > 0, "c", c, "> 0")
        self.c = float(c)

    def instance(self, rng, n, m, eps, d=1):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        _check_point(n, m, eps, d)
        check(d == 1, "d", d, "1 (a one-dimensional family)")
        s = min(0.5, self.c * (n * m * min(eps ** 2, 1.0)) ** -0.5)
        v = float(_signs(rng, 1)[0])
        return MeanInstance([self.D, -self.D], [(1 + s * v) / 2, (1 - s * v) / 2], 1, m, {"s": s, "v": v})


class _SignedDirections(MeanFamily):
    r"""X = ±D g_k with probability (1 ± s v_k)/(2d), k = 1..d (90)-(91); μ = (Ds/d) Σ_k v_k g_k.

    s = min(½, c·d/√(mn(ε²∧ε))) (SPEC §6 at c = 1; the law-free mode searches c: the proof fixes the
    scale's rate, not its constant), v ∈ {±1}^d drawn per trial.  ε²∧ε is the privacy factor of the rates
    (10)-(11); the proofs' (e^ε−1)^{−2} makes the construction tight only for ε ≲ 1 (slip 1), where it is ε².
    """

    minimax_hard = True
    parameters = {"D": POSITIVE, "c": POSITIVE}

    def __init__(self, D=1.0, c=1.0):
        self.D = _check_D(D)
        check(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and c > 0, "c", c, "> 0")
        self.c = float(c)

    @abstractmethod
    def directions(self, d) -> np.ndarray:
        """The d directions g_k as rows, shape (d, d)."""

    def instance(self, rng, n, m, eps, d):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        _check_point(n, m, eps, d)
        s = min(0.5, self.c * d / math.sqrt(m * n * min(eps ** 2, eps)))
        v = _signs(rng, d)
        g = self.directions(int(d))
        support = np.vstack([self.D * g, -self.D * g])
        probs = np.concatenate([(1 + s * v), (1 - s * v)]) / (2 * d)
        return MeanInstance(support if d > 1 else support[:, 0], probs, d, m, {"s": s, "v": v})


class Thm6Hard(_SignedDirections):
    """Theorem 6's instance: ±D e_k (ℓ1 and ℓ2 support ball of radius D)."""

    name = "thm6"

    def directions(self, d):
        return np.eye(d)


class Thm7Hard(_SignedDirections):
    """Theorem 7's instance: ±D h_k with h_k the columns of the d×d Hadamard matrix (ℓ∞ ball).

    d must be a power of 2 (Sylvester construction).
    """

    name = "thm7"

    def directions(self, d):
        check(d & (d - 1) == 0, "d", d, "a power of 2 (Hadamard columns)")
        return hadamard(d).T.astype(float)


class Spike(MeanFamily):
    r"""Heavy-tailed spike (SPEC §6, derived for the notes): X = a w.p. δ, else 0.

    δ = min(1, c/(m√(nε²))) and a = (M_p/δ)^{1/p}, so E|X|^p = M_p exactly and
    μ = aδ = M_p^{1/p} δ^{1−1/p}.  A user's sum is a·Bin(m, δ).  The lower
    bound it gives is (m²nε²)^{−(1−1/p)} (Theorem 3's second term); c = 1 is
    SPEC §6's instance, and the worst-case rows search c.

    At d > 1 (Remark 2's coordinatewise class E|X_k|^p ≤ M_p, (12)): X = a e_K w.p.
    δ, K uniform on {1..d}, else 0, with a = (M_p d/δ)^{1/p}: every coordinate is
    the spike {a, 0} with probability δ/d, so E|X_k|^p = M_p exactly.

    Parameters
    ----------
    p : float
        Moment order, ≥ 2 (Theorem 3).
    M_p : float
        p-th moment, > 0.
    c : float
        Constant of δ, > 0.
    """

    name = "spike"
    minimax_hard = True
    parameters = {"p": Interval(float, 2), "M_p": POSITIVE, "c": POSITIVE}

    def __init__(self, p=2.0, M_p=1.0, c=1.0):
        check(isinstance(p, (int, float)) and np.isfinite(p) and p >= 2, "p", p, ">= 2")
        check(isinstance(M_p, (int, float)) and np.isfinite(M_p) and M_p > 0, "M_p", M_p, "> 0")
        check(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and c > 0, "c", c, "> 0")
        self.p, self.M_p, self.c = float(p), float(M_p), float(c)

    def instance(self, rng, n, m, eps, d=1):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        _check_point(n, m, eps, d)
        delta = min(1.0, self.c / (m * np.sqrt(n * eps ** 2)))
        if d == 1:
            a = (self.M_p / delta) ** (1.0 / self.p)
            return MeanInstance([a, 0.0], [delta, 1.0 - delta], 1, m, {"delta": delta, "a": a})
        a = (self.M_p * d / delta) ** (1.0 / self.p)
        support = np.vstack([a * np.eye(int(d)), np.zeros((1, int(d)))])
        probs = np.append(np.full(int(d), delta / d), 1.0 - delta)
        return MeanInstance(support, probs, d, m, {"delta": delta, "a": a})


FAMILIES = {cls.name: cls for cls in (FixedSign, Thm2Hard, Thm6Hard, Thm7Hard, Spike)}
