r"""User-level LDP mean estimators of papers/003 (Section 4, Proposition 1).

Reusable core (imported by ``learning.py``)
-------------------------------------------
``twostage(stage1, stage2, D, m, n, eps, rng, *, h=None, delta=None, pre_clip=False, mu=None)``
    -> ``(estimate: float, stage1_ok: bool | None)``

    Algorithm 1 on two groups of users given as
    :class:`~labeldp_sim.userlevel.data.UserValues` of 1-D samples (or user
    statistics) in [−D, D]: ``stage1`` locates [L, R] with the noisy
    histogram, ``stage2`` averages the clipped, noised user means.  ``n`` is
    the instance's number of users (it enters Δ = D√(ln n/m)), ``m`` the
    samples per user; h and Δ default to Theorem 1's 4D/√m and D√(ln n/m).
    ``stage1_ok`` is μ ∈ [L, R] when the true ``mu`` is given, else None.
    ``twostage_details`` takes a :class:`TwoStageTuning` and returns a dict
    (estimate, L, R, k_hat, stage1_ok, h, delta, bins).

``algorithm2(draw, dim, D, m, n, eps, rng, *, truth=None)`` -> ``(theta_hat (dim,), info dict)``
    Algorithm 2 (ℓ∞ support, the three ε regimes of Theorem 4);
    ``draw(n_users, coords)`` returns UserValues whose samples are the
    ``coords`` coordinates of fresh users' samples.

Decisions where the paper is silent or slips (SPEC §2 followed throughout)
-------------------------------------------------------------------------
* Step 5's "argmax_k x_k" is argmax_k s_k; k̂ is 0-based in code, L, R as printed.
* Bins are half-open; a user statistic outside [−D, −D + Bh) counts in the
  nearest end bin (B = ⌈√m/2⌉ bins reach past D, and Y = D lands in bin B+1
  when √m/2 is an integer).
* Δ's ln n uses the users of the Algorithm 1 instance (the group size in Algorithm 2).
* Stage I takes users 1..⌊n/2⌋, stage II the rest; (55) for n/2 stage II users
  reads Var μ̂ = (2/n)(Var Y + 2((3h+2Δ)/ε)²) (the printed σ²/(mn) + 2(3h+2Δ)²/(nε²)
  drops the factor 2 of using half the users).
* Algorithm 2, medium privacy: ε' = ⌊ε⌋ coordinates per group and ⌈dim/ε'⌉ groups.
* Heavy tails: D = c_D·(Δ ∨ M_p^{1/p}) within (86), see :class:`HeavyTailed`.
* Kashin: nonlinear coefficients, K measured per basis; stage I success is
  checked on θ = E a(X) (≠ Uμ: a is nonlinear).
* ``in_regime``: n(ε²∧1) ≥ c1·d·ln m (c1 unspecified by the paper, default 1)
  and every stage I group has (size)·(ε_inst²∧1) ≥ 1000 (SPEC §7).

Estimators
----------
Each estimator has ``name``, ``task = "mean"``, validated constructor
arguments, and ``trial(family, n, m, eps, d, rng, path="sufficient") -> dict``
with at least ``error`` (||μ̂ − μ||², exact given μ̂), ``stage1_ok``,
``in_regime``, ``groups``.  Every random draw of a trial comes from ``rng``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..core.errors import check
from .data import PATHS, UserValues
from .families import MeanInstance
from .mechanisms import BinHistogram, ClippedMean, ItemLevelLaplace, OneSampleLaplace, coordinate

__all__ = ["TwoStageTuning", "twostage", "twostage_details", "stage_one", "stage_two",
           "algorithm2_plan", "algorithm2_groups", "algorithm2", "split_sizes", "KashinBasis",
           "MeanEstimator", "Algorithm1", "HeavyTailed", "Algorithm2", "KashinL2", "ItemLevel",
           "OneSample", "NaiveLaplace", "ESTIMATORS", "STAGE1_MIN", "KASHIN_K"]

STAGE1_MIN = 1000.0  # SPEC §7: stage I needs (group size)·(ε²∧1) ≳ 1000
KASHIN_K = 2.7  # d-free Kashin constant: ≥ 1.1 × measured sup √d||a(x)||_∞/||x|| up to d = 256 (SPEC: ≈ 2.4)
_USER_BLOCK = 1 << 20  # users per block when every user carries its own count vector


# =========================================================================== Algorithm 1


@dataclass(frozen=True)
class TwoStageTuning:
    r"""Parameters of Algorithm 1: range [−D, D], bin length h, stage II margin Δ.

    B = ⌈2D/h⌉ bins B_k = [−D + (k−1)h, −D + kh) cover [−D, D]; with Theorem 1's
    h = 4D/√m this is B = ⌈√m/2⌉.  ``pre_clip`` clips the user mean to
    [−D, D] first (Theorem 3, (68)).
    """

    D: float
    h: float
    delta: float
    pre_clip: bool = False

    def __post_init__(self):
        check(np.isfinite(self.D) and self.D > 0, "D", self.D, "> 0")
        check(np.isfinite(self.h) and self.h > 0, "h", self.h, "> 0")
        check(np.isfinite(self.delta) and self.delta >= 0, "delta", self.delta, ">= 0")

    @property
    def bins(self) -> int:
        # The tolerance keeps ⌈√m/2⌉ exact when 2D/h is an integer up to rounding.
        return max(1, math.ceil(2 * self.D / self.h - 1e-9))

    @classmethod
    def theorem1(cls, D, m, n):
        """Theorem 1: h = 4D/√m, Δ = D√(ln n / m)."""
        return cls(float(D), 4.0 * D / math.sqrt(m), D * math.sqrt(math.log(max(n, 1)) / m))


def stage_one(values: UserValues, tuning: TwoStageTuning, eps, rng):
    r"""Stage I of Algorithm 1 (steps 2-5): returns (L, R, k̂) with k̂ 0-based.

    s_k = Σ_i Z_ik, k̂ = argmax_k s_k (the printed "argmax_k x_k" is a slip for
    s_k), L = −D + (k̂*−2)h and R = −D + (k̂*+1)h with k̂* = k̂ + 1 the paper's
    1-based index: [L, R] is the union of bins k̂*−1, k̂*, k̂*+1.
    """
    hist = BinHistogram(eps, -tuning.D, tuning.h, tuning.bins, pre_clip=tuning.D if tuning.pre_clip else None)
    s = hist.release_sum(values, rng)
    k = int(np.argmax(s))  # Laplace sums are continuous: ties have probability 0
    return -tuning.D + (k - 1) * tuning.h, -tuning.D + (k + 2) * tuning.h, k


def stage_two(values: UserValues, tuning: TwoStageTuning, eps, L, R, rng) -> float:
    r"""Stage II of Algorithm 1 (steps 6-7): μ̂ = mean of clip(Y_i, L−Δ, R+Δ) + Lap((3h+2Δ)/ε)."""
    mech = ClippedMean(eps, L - tuning.delta, R + tuning.delta, pre_clip=tuning.D if tuning.pre_clip else None)
    return float(mech.release_sum(values, rng)[0] / values.n)


def twostage_details(stage1: UserValues, stage2: UserValues, tuning: TwoStageTuning, eps, rng, mu=None) -> dict:
    """Algorithm 1 on the two groups with explicit tuning; see the module docstring."""
    check(stage1.n >= 1, "n", stage1.n, "at least one stage I user per Algorithm 1 instance")
    check(stage2.n >= 1, "n", stage2.n, "at least one stage II user per Algorithm 1 instance")
    L, R, k = stage_one(stage1, tuning, eps, rng)
    est = stage_two(stage2, tuning, eps, L, R, rng)
    ok = None if mu is None else bool(L <= mu <= R)
    return {"estimate": est, "L": L, "R": R, "k_hat": k, "stage1_ok": ok,
            "h": tuning.h, "delta": tuning.delta, "bins": tuning.bins}


def twostage(stage1: UserValues, stage2: UserValues, D, m, n, eps, rng, *, h=None, delta=None,
             pre_clip=False, mu=None):
    """Algorithm 1 (MeanEst1d) on a stage I and a stage II group: returns (estimate, stage1_ok).

    Parameters
    ----------
    stage1, stage2 : UserValues
        1-D samples or user statistics, nominally in [−D, D].
    D : float
        Support bound.
    m, n : int
        Samples per user; users of this Algorithm 1 instance (both stages).
    eps : float
        User-level budget of this instance.
    rng : numpy.random.Generator
    h, delta : float, optional
        Default to Theorem 1: 4D/√m and D√(ln n/m).
    pre_clip : bool
        Clip user means to [−D, D] (Theorem 3).
    mu : float, optional
        True mean, only for the stage I success flag.
    """
    base = TwoStageTuning.theorem1(D, m, n)
    tuning = TwoStageTuning(float(D), base.h if h is None else float(h), base.delta if delta is None else float(delta),
                            bool(pre_clip))
    out = twostage_details(stage1, stage2, tuning, eps, rng, mu=mu)
    return out["estimate"], out["stage1_ok"]


# =========================================================================== Algorithm 2


def split_sizes(n, groups) -> np.ndarray:
    """Sizes of ``groups`` groups of n users as equal as possible (random division: users are i.i.d.)."""
    n, groups = int(n), int(groups)
    return np.full(groups, n // groups) + (np.arange(groups) < n % groups)


def algorithm2_plan(dim, eps, n):
    r"""The grouping of Algorithm 2 (Theorem 4): (regime, coordinate groups, ε per Algorithm 1 instance).

    * ε < 1 ("high" privacy): dim groups, group k runs Algorithm 1 on coordinate k at ε.
    * 1 ≤ ε < dim·ln n ("medium"): with ε' = ⌊ε⌋ (the paper's "WLOG ε integer"),
      ⌈dim/ε'⌉ groups, each running ε' Algorithm 1 instances (its coordinates)
      at 1-LDP: ε' ≤ ε by basic composition.  The printed loop bound ⌊d/ε⌋
      would skip the last group (SPEC §2); ⌈dim/ε⌉ groups would not cover all
      coordinates for non-integer ε (e.g. ε = 1.5, ⌈8/1.5⌉ = 6 < 8), hence ε'.
    * ε ≥ dim·ln n ("low"): one group of all users, every coordinate at ε/dim.
    """
    if eps < 1:
        return "high", [[k] for k in range(dim)], float(eps)
    if eps < dim * math.log(n):
        per = int(math.floor(eps))
        return "medium", [list(range(s, min(s + per, dim))) for s in range(0, dim, per)], 1.0
    return "low", [list(range(dim))], float(eps) / dim


def algorithm2_groups(dim, eps, n):
    """(regime, coordinate groups, ε per instance, group sizes) of Algorithm 2 on n users, checked.

    Every group needs 2 users (one per stage of Algorithm 1), else a one-line
    :class:`ConfigError` on ``n``: the rule :func:`algorithm2` applies, and the one
    the experiment validator applies to every point of a grid before computing.
    """
    regime, groups, eps_inst = algorithm2_plan(dim, eps, n)
    sizes = split_sizes(n, len(groups))
    check(int(sizes.min()) >= 2, "n", n, f"at least {2 * len(groups)} users: Algorithm 2 splits them into "
          f"{len(groups)} groups ({regime} privacy, {dim} coordinates), each with a stage I and a stage II user")
    return regime, groups, eps_inst, sizes


def algorithm2(draw, dim, D, m, n, eps, rng, *, truth=None):
    r"""Algorithm 2 (MeanEst, ℓ∞ support ||X||_∞ ≤ D): θ̂ coordinate by coordinate.

    Each group's users are split in halves (stage I, stage II) shared by the
    group's Algorithm 1 instances, which use Theorem 1's tuning with the
    group's size for n.  Privacy: a user takes part in the instances of its
    group only, each ε_inst-LDP, ε_inst·(coordinates per group) ≤ ε (basic
    composition, Theorem 4's proof).

    Parameters
    ----------
    draw : callable (n_users, coords) -> UserValues
        Fresh users' samples restricted to the coordinates ``coords``.
    dim : int
    D : float
        ℓ∞ bound of a sample.
    truth : ndarray (dim,), optional
        True mean, for the stage I success flags.

    Returns
    -------
    theta_hat : ndarray (dim,)
    info : dict
        regime, groups, eps_instance, min_stage1_users, stage1_ok, stage1_failures.
    """
    regime, groups, eps_inst, sizes = algorithm2_groups(dim, eps, n)
    theta = np.zeros(dim)
    fails = 0
    for coords, size in zip(groups, sizes):
        n1 = int(size) // 2
        stage1, stage2 = draw(n1, coords), draw(int(size) - n1, coords)
        tuning = TwoStageTuning.theorem1(D, m, int(size))
        for j, l in enumerate(coords):
            f = coordinate(j)
            out = twostage_details(stage1.map_samples(f, linear=True), stage2.map_samples(f, linear=True),
                                   tuning, eps_inst, rng, mu=None if truth is None else float(truth[l]))
            theta[l] = out["estimate"]
            fails += out["stage1_ok"] is False
    info = {"regime": regime, "groups": len(groups), "eps_instance": eps_inst,
            "min_stage1_users": int(sizes.min()) // 2,
            "stage1_ok": None if truth is None else fails == 0, "stage1_failures": int(fails)}
    return theta, info


# =========================================================================== Kashin


class KashinBasis:
    r"""Kashin representations in the frame U = d columns of a random orthogonal 2d×2d matrix.

    Lemma 1 is false as a *linear* map (SPEC §2: the row u_j with the largest
    norm gives ||Ux||_∞ ≥ ||u_j|| ≥ 1/√2 at x = u_j/||u_j||), so coefficients
    are the nonlinear Lyubarskii–Vershynin ones: from r = x, a = 0, repeat

    .. math:: b = \mathrm{clip}(U r, \pm 1.5\|r\|/\sqrt{2d}),\quad a \mathrel{+}= b,\quad r \mathrel{-}= U^\top b

    until ||r|| ≤ 10⁻¹³||x||, then add the remainder U r exactly, so
    Uᵀa(x) = x (UᵀU = I) and ||a(x)||_∞ ≤ K||x||/√d.  The map is odd and
    positively homogeneous.

    K ("auto") is measured once per basis: 1.1 × the largest √d||a(x)||_∞/||x||
    over the directions u_j/||u_j|| (the worst case of the linear map), the
    coordinate axes and 4096 Gaussian directions; SPEC §2 reports K ≈ 2.4.

    Parameters
    ----------
    d : int
    seed : int
        Fixes U (a public parameter, not data-dependent).
    """

    FACTOR = 1.5
    TOL = 1e-13
    MAX_ITER = 1000

    def __init__(self, d, seed=0):
        self.d, self.seed = int(d), int(seed)
        self.U = _orthogonal_columns(self.d, self.seed)
        self.K = _measured_K(self.d, self.seed)

    def coefficients(self, x) -> np.ndarray:
        """a(x) for rows x, shape (k, d) -> (k, 2d)."""
        x = np.asarray(x, dtype=float).reshape(-1, self.d)
        return _lv_coefficients(self.U, x, self.FACTOR, self.TOL, self.MAX_ITER)

    def reconstruct(self, a) -> np.ndarray:
        """Uᵀa for rows a, shape (k, 2d) -> (k, d)."""
        return np.asarray(a, dtype=float) @ self.U


@lru_cache(maxsize=32)
def _orthogonal_columns(d, seed):
    g = np.random.default_rng(seed).standard_normal((2 * d, 2 * d))
    q, r = np.linalg.qr(g)
    q = q * np.sign(np.diag(r))  # Haar measure: fix the signs of the QR factor
    return np.ascontiguousarray(q[:, :d])


def _lv_coefficients(U, x, factor, tol, max_iter):
    d2 = U.shape[0]
    r = x.copy()
    a = np.zeros((len(x), d2))
    target = tol * np.linalg.norm(x, axis=1)
    for _ in range(max_iter):
        nr = np.linalg.norm(r, axis=1)
        if np.all(nr <= target):
            break
        level = (factor * nr / math.sqrt(d2))[:, None]
        b = np.clip(r @ U.T, -level, level)
        a += b
        r -= b @ U
    return a + r @ U.T  # the tiny remainder, exactly: Uᵀ(U r) = r


@lru_cache(maxsize=32)
def _measured_K(d, seed):
    U = _orthogonal_columns(d, seed)
    probe = np.vstack([U / np.linalg.norm(U, axis=1)[:, None], np.eye(d),
                       np.random.default_rng(seed + 1).standard_normal((4096, d))])
    a = _lv_coefficients(U, probe, KashinBasis.FACTOR, KashinBasis.TOL, KashinBasis.MAX_ITER)
    ratio = math.sqrt(d) * np.abs(a).max(axis=1) / np.linalg.norm(probe, axis=1)
    return 1.1 * float(ratio.max())


# =========================================================================== estimators


def _check_point(n, m, eps, d, path):
    check(int(n) == n and n >= 2, "n", n, "an integer >= 2")
    check(int(m) == m and m >= 1, "m", m, "an integer >= 1")
    check(np.isfinite(eps) and eps > 0, "eps", eps, "> 0")
    check(int(d) == d and d >= 1, "d", d, "an integer >= 1")
    check(path in PATHS, "path", path, PATHS)


def _check_positive(key, value, allow_none=False):
    if allow_none and value is None:
        return None
    check(isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
          and np.isfinite(value) and value > 0, key, value, "None or > 0" if allow_none else "> 0")
    return float(value)


def _columns(coords):
    """Per-sample map: the ``coords`` coordinates of each row (any d, 1-D samples included)."""
    def f(s):
        s = np.asarray(s, dtype=float)
        return s.reshape(len(s), -1)[:, coords]
    return f


class MeanEstimator(ABC):
    """A user-level ε-LDP mean estimator: one trial at a point of the grid.

    Subclasses implement ``_estimate(instance, n, m, eps, d, rng, path) -> (mu_hat, info)``.
    """

    name: str = ""
    task: str = "mean"

    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        """One trial: draw the instance (hidden signs from ``rng``), estimate, score.

        Returns
        -------
        dict
            ``error`` = ||μ̂ − μ||² (exact given μ̂), ``stage1_ok`` (None without
            stage I), ``in_regime``, ``groups``, ``mu_hat_1`` / ``mu_1`` (first
            coordinates, for law checks) and estimator diagnostics.
        """
        _check_point(n, m, eps, d, path)
        n, m, d, eps = int(n), int(m), int(d), float(eps)
        self.check_point(family, n, m, eps, d)
        inst = family.instance(rng, n, m, eps, d)
        mu_hat, info = self._estimate(inst, n, m, eps, d, rng, path)
        mu_hat = np.atleast_1d(np.asarray(mu_hat, dtype=float))
        mu = np.atleast_1d(np.asarray(inst.mu, dtype=float))
        out = {"error": float(np.sum((mu_hat - mu) ** 2)), "stage1_ok": None, "in_regime": True, "groups": 1,
               "mu_hat_1": float(mu_hat[0]), "mu_1": float(mu[0]), "mu_norm2": float(mu @ mu)}
        out.update(info)
        return out

    def check_point(self, family, n, m, eps, d) -> None:
        """Raise a one-line :class:`ConfigError` unless a trial can run at (n, m, ε, d).

        The rule :meth:`trial` applies before drawing anything; the experiment
        validator applies it to every point of a grid.  None here beyond
        ``_check_point``; estimators with a dimension or a group-size rule override it.
        """

    @abstractmethod
    def _estimate(self, inst, n, m, eps, d, rng, path):
        """(μ̂, diagnostics) for one trial."""

    def __repr__(self):
        fields = ", ".join(f"{k}={v}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class _TwoStageRegime:
    """Regime checks shared by the two-stage estimators.

    ``c1`` is Theorem 1's unspecified constant in n(ε²∧1) ≥ c1 (d) ln m (default 1:
    the SPEC §7 check, stage I group size·(ε_inst²∧1) ≥ ``min_stage1``, is the
    binding one in practice).
    """

    def _init_regime(self, c1, min_stage1):
        self.c1 = _check_positive("c1", c1)
        self.min_stage1 = _check_positive("min_stage1", min_stage1)

    def _regime(self, n, m, eps, dim, stage1_users, eps_inst):
        cond = n * min(eps ** 2, 1.0) / (dim * max(math.log(m), 1e-300)) if m > 1 else math.inf
        stage1 = stage1_users * min(eps_inst ** 2, 1.0)
        return {"condition_ratio": cond / self.c1, "stage1_size_eps2": stage1,
                "in_regime": bool(cond >= self.c1 and stage1 >= self.min_stage1)}


class Algorithm1(MeanEstimator, _TwoStageRegime):
    r"""Algorithm 1 (MeanEst1d), X ∈ [−D, D], Theorem 1's tuning.

    Users 1..⌊n/2⌋ run stage I (histogram of Y_i = X̄_i over B = ⌈√m/2⌉
    bins of length h = 4D/√m, Lap(2/ε)), the others stage II
    (clip(Y_i, L−Δ, R+Δ) + Lap((3h+2Δ)/ε), Δ = D√(ln n/m)); μ̂ is the stage II
    average.  Rate (2): D²/(nm)·(1 + ln n/ε²) if n(ε²∧1) ≥ c1 ln m.  Given
    stage I success the MSE is ≈ (2/n)(Var Y + 2((3h+2Δ)/ε)²) (55).

    Parameters
    ----------
    D : float, optional
        Support bound; None = the instance's max |x|.
    c1, min_stage1 : float
        Regime thresholds (see ``in_regime``).
    """

    name = "alg1"

    def __init__(self, D=None, c1=1.0, min_stage1=STAGE1_MIN):
        self.D = _check_positive("D", D, allow_none=True)
        self._init_regime(c1, min_stage1)

    def check_point(self, family, n, m, eps, d):
        check(d == 1, "d", d, "1 (Algorithm 1 is one-dimensional)")

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self.D if self.D is not None else inst.bound()
        n1 = n // 2
        out = twostage_details(inst.draw(rng, n1, path), inst.draw(rng, n - n1, path),
                               TwoStageTuning.theorem1(D, m, n), eps, rng, mu=inst.mu)
        info = {k: out[k] for k in ("stage1_ok", "L", "R", "h", "delta", "bins")}
        info.update(self._regime(n, m, eps, 1, n1, eps), D=D, noise_scale=(3 * out["h"] + 2 * out["delta"]) / eps)
        return out["estimate"], info


class HeavyTailed(MeanEstimator, _TwoStageRegime):
    r"""Theorem 3: Algorithm 1 with Y_i = clip(X̄_i, ±D) for E|X|^p ≤ M_p, p ≥ 2.

    Tuning (SPEC §2), with r = M_p^{1/p}:

    * Δ = c·r√(ln m/m) ∨ r(nε²)^{1/(2p)} m^{−(1−1/p)}, (84) with the SPEC's
      correction (the printed M_p² inside the root is a slip, cf. (85));
    * h = 4r/√m (unspecified in the paper), B = ⌈2D/h⌉ bins over [−D, D];
    * D = c_D·(Δ ∨ r).  (86) asks Δ ≲ D ≲ e^{c2 nε²}: D ≥ Δ keeps the
      clipping bias term D^{−2(p−1)}m^{−2(p−1)} of (85) below the Δ term, and
      D ≥ r ≥ E|X| ≥ |μ| keeps μ inside the bins; taking the smallest such D
      keeps the number of bins, hence stage I's failure probability
      (≤ B e^{−c0 nε²}, Lemma 2), small.

    Rate (4): M_p^{2/p}[ln m/(mnε²) ∨ (m²nε²)^{−(1−1/p)} + 1/(mn)].
    ``in_regime`` also requires the SPEC §7 tail regime nε² ≥ 6^{2p} m^{p−2}
    (reported as ``tail_ratio``).

    Parameters
    ----------
    p : float
        Moment order, ≥ 2.
    M_p : float, optional
        Moment bound; None = the instance's exact E|X|^p.
    c, c_D : float
        Constants of Δ (84) and of D.
    c1, min_stage1 : float
        Regime thresholds.
    """

    name = "heavy"

    def __init__(self, p=2.0, M_p=None, c=1.0, c_D=1.0, c1=1.0, min_stage1=STAGE1_MIN):
        check(isinstance(p, (int, float)) and not isinstance(p, bool) and np.isfinite(p) and p >= 2, "p", p, ">= 2")
        self.p = float(p)
        self.M_p = _check_positive("M_p", M_p, allow_none=True)
        self.c = _check_positive("c", c)
        self.c_D = _check_positive("c_D", c_D)
        self._init_regime(c1, min_stage1)

    def tuning(self, M_p, n, m, eps) -> TwoStageTuning:
        """(D, h, Δ) of Theorem 3 at (n, m, ε) for moment bound M_p."""
        p, r = self.p, M_p ** (1.0 / self.p)
        delta = max(self.c * r * math.sqrt(math.log(m) / m), r * (n * eps ** 2) ** (1 / (2 * p)) * m ** -(1 - 1 / p))
        D = self.c_D * max(delta, r)
        return TwoStageTuning(D, 4.0 * r / math.sqrt(m), delta, pre_clip=True)

    def check_point(self, family, n, m, eps, d):
        check(d == 1, "d", d, "1 (Theorem 3 is one-dimensional)")

    def _estimate(self, inst, n, m, eps, d, rng, path):
        M_p = self.M_p if self.M_p is not None else inst.moment(self.p)
        tuning = self.tuning(M_p, n, m, eps)
        n1 = n // 2
        out = twostage_details(inst.draw(rng, n1, path), inst.draw(rng, n - n1, path), tuning, eps, rng, mu=inst.mu)
        info = {k: out[k] for k in ("stage1_ok", "L", "R", "h", "delta", "bins")}
        info.update(self._regime(n, m, eps, 1, n1, eps), D=tuning.D, M_p=M_p)
        info["tail_ratio"] = n * eps ** 2 / (6.0 ** (2 * self.p) * m ** (self.p - 2))
        info["in_regime"] = bool(info["in_regime"] and info["tail_ratio"] >= 1)
        return out["estimate"], info


class Algorithm2(MeanEstimator, _TwoStageRegime):
    r"""Algorithm 2 (ℓ∞ support ||X||_∞ ≤ D), Theorem 4.

    See :func:`algorithm2_plan` for the three ε regimes (with the corrected
    loop bound).  Rate (8): D²d/(nm)·(1 + d ln n/(ε²∧ε)) if
    n(ε²∧1) ≥ c1 d ln m.  ``stage1_ok``: every coordinate's μ_l ∈ [L_l, R_l].

    Parameters
    ----------
    D : float, optional
        ℓ∞ bound; None = the instance's max ||x||_∞.
    c1, min_stage1 : float
    """

    name = "alg2"

    def __init__(self, D=None, c1=1.0, min_stage1=STAGE1_MIN):
        self.D = _check_positive("D", D, allow_none=True)
        self._init_regime(c1, min_stage1)

    def check_point(self, family, n, m, eps, d):
        algorithm2_groups(d, eps, n)

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self.D if self.D is not None else inst.bound("inf")

        def draw(n_users, coords):
            return inst.draw(rng, n_users, path, transform=_columns(coords))

        theta, info = algorithm2(draw, d, D, m, n, eps, rng, truth=np.atleast_1d(inst.mu))
        info.update(self._regime(n, m, eps, d, info["min_stage1_users"], info["eps_instance"]), D=D)
        return theta, info


class KashinL2(MeanEstimator, _TwoStageRegime):
    r"""ℓ2 support ||X||_2 ≤ D (Theorem 5): Algorithm 2 on Kashin coefficients.

    Each sample is replaced by its 2d coefficients a(X_ij) (:class:`KashinBasis`,
    nonlinear Lyubarskii–Vershynin, SPEC §2), whose sup-norm is ≤ K·D/√d;
    Algorithm 2 (dimension 2d, sup-norm K·D/√d) estimates θ = E a(X), and
    μ̂ = Uᵀθ̂ (Uᵀθ = E Uᵀa(X) = μ).  Since a is nonlinear, user statistics are
    means of a(X_ij) over the user's samples, computed from its sample counts.
    Rate (9): D²/(nm)·(1 + d ln n/(ε²∧ε)).  ``stage1_ok``: every θ_l ∈ [L_l, R_l].

    Parameters
    ----------
    D : float, optional
        ℓ2 bound; None = the instance's max ||x||_2.
    K : float, optional
        Kashin constant; None = max(``KASHIN_K`` = 2.7, the basis' measured K).
        Lemma 1's K does not depend on d; the measured one grows from 1.1
        (d = 1) to ≈ 2.7 (d ≥ 64, with its 10% margin), which would add a
        spurious d-slope (≈ +0.5 over d = 2..16) to the error.
    basis_seed : int
        Seed of the random orthogonal frame.
    c1, min_stage1 : float
    """

    name = "kashin"

    def __init__(self, D=None, K=None, basis_seed=0, c1=1.0, min_stage1=STAGE1_MIN):
        self.D = _check_positive("D", D, allow_none=True)
        self.K = _check_positive("K", K, allow_none=True)
        check(isinstance(basis_seed, (int, np.integer)) and not isinstance(basis_seed, bool) and basis_seed >= 0,
              "basis_seed", basis_seed, "an integer >= 0")
        self.basis_seed = int(basis_seed)
        self._init_regime(c1, min_stage1)

    def check_point(self, family, n, m, eps, d):
        algorithm2_groups(2 * d, eps, n)

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self.D if self.D is not None else inst.bound("l2")
        basis = KashinBasis(d, self.basis_seed)
        K = self.K if self.K is not None else max(KASHIN_K, basis.K)
        # The law of a(X): same probabilities on the coefficients of the support points.
        coef = MeanInstance(basis.coefficients(inst.support), inst.probs, 2 * d, m)

        def draw(n_users, coords):
            return coef.draw(rng, n_users, path, transform=_columns(coords))

        theta_true = coef.mu
        theta, info = algorithm2(draw, 2 * d, K * D / math.sqrt(d), m, n, eps, rng, truth=theta_true)
        info.update(self._regime(n, m, eps, d, info["min_stage1_users"], info["eps_instance"]), D=D, kashin_K=K)
        return basis.reconstruct(theta[None, :])[0], info


class _Baseline(MeanEstimator):
    """Shared constructor of the one-round baselines: D = clipping level (None = the instance's ℓ∞ bound)."""

    def __init__(self, D=None):
        self.D = _check_positive("D", D, allow_none=True)

    def _level(self, inst):
        return self.D if self.D is not None else inst.bound("inf")

    @staticmethod
    def _release(mech, inst, n, rng, path):
        """Σ of all n users' reports, drawn in blocks of users when each user needs its own count vector.

        The sum of independent block sums has the law of the full sum; blocks
        only bound memory (n up to 2^22 users × 2d atoms).
        """
        block = n if len(inst.support) <= 2 else _USER_BLOCK
        total = 0.0
        for start in range(0, n, block):
            total = total + mech.release_sum(inst.draw(rng, min(block, n - start), path), rng)
        return total


class ItemLevel(_Baseline):
    r"""Proposition 1, P1a: item-level (ε/m)-LDP on every sample, μ̂ = Σ_ij Z_ij/(nm).

    Z_ij = clip(X_ij, ±D) + Lap(2Dmd/ε) per coordinate; rate D²m/(nε²) + D²/(nm)
    in 1-D (SPEC §3).
    """

    name = "item"

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self._level(inst)
        mech = ItemLevelLaplace(eps, D, m, d)
        return self._release(mech, inst, n, rng, path) / (n * m), {"D": D}


class OneSample(_Baseline):
    r"""Proposition 1, P1b: one random sample per user at item-level ε, μ̂ = Σ_i Z_i/n.

    Z_i = clip(X_iJ, ±D) + Lap(2Dd/ε) per coordinate; rate D²/(n(ε²∧1)) (SPEC §3).
    """

    name = "one_sample"

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self._level(inst)
        mech = OneSampleLaplace(eps, D, d)
        return self._release(mech, inst, n, rng, path) / n, {"D": D}


class NaiveLaplace(_Baseline):
    r"""Naive baseline (SPEC §3, not in the paper): clip(X̄_i, ±D) + Lap(2Dd/ε) per coordinate.

    Rate σ²/(nm) + 8D²/(nε²) in 1-D.
    """

    name = "naive"

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self._level(inst)
        mech = ClippedMean(eps, np.full(d, -D), np.full(d, D))
        return self._release(mech, inst, n, rng, path) / n, {"D": D}


ESTIMATORS = {cls.name: cls for cls in (Algorithm1, HeavyTailed, Algorithm2, KashinL2, ItemLevel, OneSample,
                                        NaiveLaplace)}
