r"""User-level LDP mean estimators of papers/003 (Section 4, Proposition 1).

Each estimator is a :class:`~labeldp_sim.papers.userlevel.contract.Estimator` of task
``mean`` (group ``userlevel.estimator``) with a ``name``, declared
``parameters`` and ``trial(family, n, m, eps, d, rng, path="sufficient") -> dict``
with at least ``error`` (||μ̂ − μ||², exact given μ̂), ``stage1_ok``,
``in_regime``, ``groups``.  Every random draw of a trial comes from ``rng``.
The protocols they run are the reusable Algorithms 1 and 2 of
:mod:`.mean_algorithms` and the Kashin coefficients of :mod:`.kashin`, whose
names this module re-exports (``from .mean import twostage`` keeps working).

Decisions where the paper is silent or slips (SPEC §2 followed throughout)
-------------------------------------------------------------------------
* Stage I takes users 1..⌊n/2⌋, stage II the rest; (55) for n/2 stage II users
  reads Var μ̂ = (2/n)(Var Y + 2((3h+2Δ)/ε)²) (the printed σ²/(mn) + 2(3h+2Δ)²/(nε²)
  drops the factor 2 of using half the users).
* Heavy tails: D = c_D·(Δ ∨ M_p^{1/p}) within (86), see :class:`HeavyTailed`.
* Kashin: nonlinear coefficients, K measured per basis; stage I success is
  checked on θ = E a(X) (≠ Uμ: a is nonlinear).
* ``in_regime``: n(ε²∧1) ≥ c1·d·ln m (c1 unspecified by the paper, default 1)
  and every stage I group has (size)·(ε_inst²∧1) ≥ 1000 (SPEC §7).
"""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np
from scipy import stats

from labeldp_sim.harness.components import Interval
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.contract import POSITIVE, Estimator, positive_or_none
from labeldp_sim.papers.userlevel.data import PATHS
from labeldp_sim.papers.userlevel.exact import alg1_expected_error
from labeldp_sim.papers.userlevel.families import MeanInstance
from labeldp_sim.papers.userlevel.kashin import KASHIN_K, KashinBasis
from labeldp_sim.papers.userlevel.mean_algorithms import (TwoStageTuning, algorithm2, algorithm2_groups, algorithm2_plan, split_sizes, stage_one,
                              stage_two, twostage, twostage_details)
from labeldp_sim.papers.userlevel.mechanisms import ClippedMean, ItemLevelLaplace, OneSampleLaplace

__all__ = ["TwoStageTuning", "twostage", "twostage_details", "stage_one", "stage_two",
           "algorithm2_plan", "algorithm2_groups", "algorithm2", "split_sizes", "KashinBasis",
           "MeanEstimator", "Algorithm1", "HeavyTailed", "Algorithm2", "KashinL2", "ItemLevel",
           "OneSample", "NaiveLaplace", "ESTIMATORS", "STAGE1_MIN", "KASHIN_K"]

STAGE1_MIN = 1000.0  # SPEC §7: stage I needs (group size)·(ε²∧1) ≳ 1000
_USER_BLOCK = 1 << 20  # users per block when every user carries its own count vector


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


class MeanEstimator(Estimator):
    """A user-level ε-LDP mean estimator: one trial at a point of the grid.

    Subclasses implement ``_estimate(instance, n, m, eps, d, rng, path) -> (mu_hat, info)``.
    """

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
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
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


class _TwoStageRegime:
    """Regime checks shared by the two-stage estimators.

    ``c1`` is Theorem 1's unspecified constant in n(ε²∧1) ≥ c1 (d) ln m (default 1:
    the SPEC §7 check, stage I group size·(ε_inst²∧1) ≥ ``min_stage1``, is the
    binding one in practice).
    """

    REGIME_PARAMETERS = {"c1": POSITIVE, "min_stage1": POSITIVE}

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
    parameters = {"D": positive_or_none("the instance's max |x|"), "c_h": POSITIVE,
                  "c_delta": Interval(float, 0, None, closed="left"), **_TwoStageRegime.REGIME_PARAMETERS}

    def __init__(self, D=None, c_h=4.0, c_delta=1.0, c1=1.0, min_stage1=STAGE1_MIN):
        self.D = _check_positive("D", D, allow_none=True)
        self.c_h = _check_positive("c_h", c_h)
        check(isinstance(c_delta, (int, float)) and math.isfinite(c_delta) and c_delta >= 0, "c_delta", c_delta,
              ">= 0 (0: no margin beyond the three bins)")
        self.c_delta = float(c_delta)
        self._init_regime(c1, min_stage1)

    def check_point(self, family, n, m, eps, d):
        check(d == 1, "d", d, "1 (Algorithm 1 is one-dimensional)")

    def _tuning(self, D, m, n) -> TwoStageTuning:
        """h = c_h·D/√m, Δ = c_Δ·D√(ln n/m): Theorem 1's at c_h = 4, c_Δ = 1 (the law-free oracle searches both)."""
        return TwoStageTuning(float(D), self.c_h * D / math.sqrt(m), self.c_delta * D * math.sqrt(math.log(max(n, 1)) / m))

    exact_expected_error = True

    def expected_error(self, inst: MeanInstance, n, m, eps, d) -> dict:
        """E(μ̂ − μ)² on a two-point instance (Y = X̄ binomial), :func:`~.exact.alg1_expected_error`."""
        n, m, eps, d = int(n), int(m), float(eps), int(d)
        check(d == 1 and len(inst.support) == 2, "family", inst, "a one-dimensional two-point family (exact path)")
        D = self.D if self.D is not None else inst.bound()
        a, b = inst.support
        j = np.arange(m + 1)
        values = (j * a + (m - j) * b) / m
        n1 = n // 2
        tuning = self._tuning(D, m, n)
        out = alg1_expected_error(values, stats.binom.pmf(j, m, inst.probs[0]), inst.mu, D, tuning.h, tuning.delta,
                                  eps, n1, n - n1)
        out.update(self._regime(n, m, eps, 1, n1, eps), h=tuning.h, delta=tuning.delta)
        return out

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self.D if self.D is not None else inst.bound()
        n1 = n // 2
        out = twostage_details(inst.draw(rng, n1, path), inst.draw(rng, n - n1, path),
                               self._tuning(D, m, n), eps, rng, mu=inst.mu)
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
    parameters = {"p": Interval(float, 2), "M_p": positive_or_none("the instance's exact E|X|^p"),
                  "c": POSITIVE, "c_D": POSITIVE, **_TwoStageRegime.REGIME_PARAMETERS}

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
    parameters = {"D": positive_or_none("the instance's max ||x||_inf"), **_TwoStageRegime.REGIME_PARAMETERS}

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
    # its sufficient path draws each group's users over the 2d coefficient signs (experiments.trial_needs)
    draws_coefficient_signs = True
    parameters = {"D": positive_or_none("the instance's max ||x||_2"),
                  "K": positive_or_none(f"max({KASHIN_K}, the basis' measured K)"),
                  "basis_seed": Interval(int, 0), **_TwoStageRegime.REGIME_PARAMETERS}

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

    parameters = {"D": positive_or_none("the instance's max ||x||_inf")}

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
