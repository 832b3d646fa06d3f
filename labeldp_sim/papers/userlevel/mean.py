r"""User-level LDP mean estimators of papers/003 (Section 4, Proposition 1).

Each estimator is a :class:`~labeldp_sim.papers.userlevel.contract.Estimator` of task
``mean`` (group ``userlevel.estimator``) with a ``name``, declared
``parameters`` and ``trial(family, n, m, eps, d, rng, path="sufficient") -> dict``
with at least ``error`` (||μ̂ − μ||², exact given μ̂), ``stage1_ok``,
``in_regime``, ``groups``.  Every random draw of a trial comes from ``rng``.
The protocols they run are the reusable Algorithms 1 and 2 of
:mod:`.mean_algorithms` and the Kashin coefficients of :mod:`.kashin`, whose
names this module re-exports (``from .mean import twostage`` keeps working), as it
re-exports Proposition 1's baselines and the item-level estimator (:mod:`.mean_baselines`).

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

import numpy as np

from labeldp_sim.harness.components import Interval
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.contract import POSITIVE, positive_or_none
from labeldp_sim.papers.userlevel.exact import alg1_expected_error, user_mean_law
from labeldp_sim.papers.userlevel.families import MeanInstance
from labeldp_sim.papers.userlevel.kashin import KASHIN_K, KashinBasis
from labeldp_sim.papers.userlevel.mean_algorithms import (TwoStageTuning, algorithm2, algorithm2_groups, algorithm2_plan,
                              algorithm2_tuning, split_sizes, stage_one,
                              stage_two, twostage, twostage_details)
from labeldp_sim.papers.userlevel.mean_base import MeanEstimator, check_positive, sample_columns
from labeldp_sim.papers.userlevel.mean_baselines import ItemLevel, ItemLevelLDP, NaiveLaplace, OneSample

__all__ = ["TwoStageTuning", "twostage", "twostage_details", "stage_one", "stage_two",
           "algorithm2_plan", "algorithm2_groups", "algorithm2", "algorithm2_error_moments", "split_sizes", "KashinBasis",
           "MeanEstimator", "Algorithm1", "HeavyTailed", "HeavyCoordinate", "Algorithm2", "KashinL2", "ItemLevel",
           "OneSample", "NaiveLaplace", "ItemLevelLDP", "ESTIMATORS", "STAGE1_MIN", "KASHIN_K"]

STAGE1_MIN = 1000.0  # SPEC §7: stage I needs (group size)·(ε²∧1) ≳ 1000


_TUNING_PARAMETERS = {"c_h": POSITIVE, "c_delta": Interval(float, 0, None, closed="left")}


def _check_tuning(c_h, c_delta) -> tuple:
    """(c_h, c_Δ) of Algorithm 1's h = c_h·D/√m and Δ = c_Δ·D√(ln n/m): Theorem 1's at 4 and 1."""
    c_h = check_positive("c_h", c_h)
    check(isinstance(c_delta, (int, float)) and not isinstance(c_delta, bool) and math.isfinite(c_delta)
          and c_delta >= 0, "c_delta", c_delta, ">= 0 (0: no margin beyond the three bins)")
    return c_h, float(c_delta)


def _coordinate_errors(support, probs, dim, m, n, eps, tuning_of) -> tuple:
    """Algorithm 2's instances in closed form: (one :func:`~.exact.alg1_expected_error` dict per coordinate, info).

    Coordinate l of a group of ``size`` users runs Algorithm 1 on ⌊size/2⌋ + ⌈size/2⌉ users at ε per
    instance with the tuning ``tuning_of(size, ε per instance)`` (its ``pre_clip`` clips the user means to
    [−D, D] first, Theorem 3); coordinates whose user-mean law and group size coincide share one evaluation
    (Theorem 7's Hadamard coordinates take few distinct laws, a spike's coordinates one).
    """
    regime, groups, eps_inst, sizes = algorithm2_groups(dim, eps, n)
    per = [None] * dim
    seen = {}
    stage2 = []
    for coords, size in zip(groups, sizes):
        size = int(size)
        n1 = size // 2
        stage2.append(size - n1)
        tuning = tuning_of(size, eps_inst)
        for l in coords:
            atoms, inverse = np.unique(support[:, l], return_inverse=True)
            weights = np.bincount(inverse, weights=probs)
            key = (size, atoms.tobytes(), weights.tobytes())
            if key not in seen:
                values, law, exact = user_mean_law(atoms, weights, m)
                if tuning.pre_clip:
                    values = np.clip(values, -tuning.D, tuning.D)
                seen[key] = dict(alg1_expected_error(values, law, float(weights @ atoms), tuning.D, tuning.h,
                                                     tuning.delta, eps_inst, n1, size - n1), exact_law=exact)
            per[l] = seen[key]
    info = {"regime": regime, "groups": len(groups), "eps_instance": eps_inst,
            "min_stage1_users": int(sizes.min()) // 2, "coordinate_groups": groups, "stage2_users": stage2}
    return per, info


def algorithm2_error_moments(support, probs, m, n, eps, tuning_of) -> tuple:
    r"""Algorithm 2's error e = θ̂ − θ on the law Σ_a probs[a] δ_{support[a]}: (E e, E[e eᵀ], info), closed form.

    E e_l² and E e_l are coordinate l's Algorithm 1 error and bias (:func:`~.exact.alg1_expected_error` on the
    law of its user mean, :func:`~.exact.user_mean_law`: exact for a two-point coordinate, discretised normal
    otherwise); E[e_l e_l'] = b_l b_l' for coordinates of different groups (disjoint users), plus
    Cov(X_l, X_l')/(m n₂) for two coordinates of one group (ε ≥ 1: their stage II users are shared; the
    clipping of those users' means is left out of this covariance, as the stage II window lies ≥ 4 sd of a user
    mean from the modal bin).  ``info`` adds ``exact_law`` (every coordinate's user-mean law exact) to
    Algorithm 2's grouping (regime, groups, eps_instance, min_stage1_users, stage2_users).
    """
    support = np.asarray(support, dtype=float)
    support = support.reshape(len(support), -1)
    probs = np.asarray(probs, dtype=float)
    dim = support.shape[1]
    per, info = _coordinate_errors(support, probs, dim, m, n, eps, tuning_of)
    bias = np.array([o["bias"] for o in per])
    second = np.outer(bias, bias)
    np.fill_diagonal(second, [o["error"] for o in per])
    theta = probs @ support
    cov = (support * probs[:, None]).T @ support - np.outer(theta, theta)
    for coords, n2 in zip(info.pop("coordinate_groups"), info["stage2_users"]):
        idx = np.asarray(coords)
        block = cov[np.ix_(idx, idx)] / (m * n2)
        np.fill_diagonal(block, 0.0)
        second[np.ix_(idx, idx)] += block
    info["exact_law"] = all(o["exact_law"] for o in per)
    return bias, second, info


class _TwoStageRegime:
    """Regime checks shared by the two-stage estimators.

    ``c1`` is Theorem 1's unspecified constant in n(ε²∧1) ≥ c1 (d) ln m (default 1:
    the SPEC §7 check, stage I group size·(ε_inst²∧1) ≥ ``min_stage1``, is the
    binding one in practice).
    """

    REGIME_PARAMETERS = {"c1": POSITIVE, "min_stage1": POSITIVE}

    def _init_regime(self, c1, min_stage1):
        self.c1 = check_positive("c1", c1)
        self.min_stage1 = check_positive("min_stage1", min_stage1)

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
    parameters = {"D": positive_or_none("the instance's max |x|"), **_TUNING_PARAMETERS,
                  **_TwoStageRegime.REGIME_PARAMETERS}

    def __init__(self, D=None, c_h=4.0, c_delta=1.0, c1=1.0, min_stage1=STAGE1_MIN):
        self.D = check_positive("D", D, allow_none=True)
        self.c_h, self.c_delta = _check_tuning(c_h, c_delta)
        self._init_regime(c1, min_stage1)

    def check_point(self, family, n, m, eps, d):
        check(d == 1, "d", d, "1 (Algorithm 1 is one-dimensional)")

    def _tuning(self, D, m, n) -> TwoStageTuning:
        """h = c_h·D/√m, Δ = c_Δ·D√(ln n/m): Theorem 1's at c_h = 4, c_Δ = 1 (the law-free oracle searches both)."""
        return algorithm2_tuning(D, m, n, self.c_h, self.c_delta)

    exact_expected_error = True

    def expected_error(self, inst: MeanInstance, n, m, eps, d) -> dict:
        """E(μ̂ − μ)² on a two-point instance (Y = X̄ binomial), :func:`~.exact.alg1_expected_error`."""
        n, m, eps, d = int(n), int(m), float(eps), int(d)
        check(d == 1 and len(inst.support) == 2, "family", inst, "a one-dimensional two-point family (exact path)")
        D = self.D if self.D is not None else inst.bound()
        values, law, _ = user_mean_law(inst.support, inst.probs, m)  # exact: binomial
        n1 = n // 2
        tuning = self._tuning(D, m, n)
        out = alg1_expected_error(values, law, inst.mu, D, tuning.h, tuning.delta, eps, n1, n - n1)
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
        self.M_p = check_positive("M_p", M_p, allow_none=True)
        self.c = check_positive("c", c)
        self.c_D = check_positive("c_D", c_D)
        self._init_regime(c1, min_stage1)

    def tuning(self, M_p, n, m, eps) -> TwoStageTuning:
        """(D, h, Δ) of Theorem 3 at (n, m, ε) for moment bound M_p."""
        p, r = self.p, M_p ** (1.0 / self.p)
        delta = max(self.c * r * math.sqrt(math.log(m) / m), r * (n * eps ** 2) ** (1 / (2 * p)) * m ** -(1 - 1 / p))
        D = self.c_D * max(delta, r)
        return TwoStageTuning(D, 4.0 * r / math.sqrt(m), delta, pre_clip=True)

    def check_point(self, family, n, m, eps, d):
        check(d == 1, "d", d, "1 (Theorem 3 is one-dimensional)")

    exact_expected_error = True

    def expected_error(self, inst: MeanInstance, n, m, eps, d) -> dict:
        """E(μ̂ − μ)²: Algorithm 1 on clip(X̄, ±D) (:func:`~.exact.alg1_expected_error`), the user mean's law exact for
        a two-point law (the spike: a·Bin(m, δ)/m), else normal (:func:`~.exact.user_mean_law`)."""
        n, m, eps, d = int(n), int(m), float(eps), int(d)
        check(d == 1, "d", d, "1 (Theorem 3 is one-dimensional)")
        M_p = self.M_p if self.M_p is not None else inst.moment(self.p)
        tuning = self.tuning(M_p, n, m, eps)
        values, law, exact = user_mean_law(inst.support, inst.probs, m)
        n1 = n // 2
        out = alg1_expected_error(np.clip(values, -tuning.D, tuning.D), law, inst.mu, tuning.D, tuning.h, tuning.delta,
                                  eps, n1, n - n1)
        out.update(self._regime(n, m, eps, 1, n1, eps), M_p=M_p, exact_law=exact, h=tuning.h, delta=tuning.delta)
        out["tail_ratio"] = self._tail_ratio(n, m, eps)
        out["theorem_regime"] = bool(out["tail_ratio"] >= 1)
        return out

    def _tail_ratio(self, n, m, eps) -> float:
        """nε²/(6^{2p} m^{p−2}): SPEC §7's tail regime of Theorem 3 (>= 1 where (4) is stated to hold)."""
        return n * eps ** 2 / (6.0 ** (2 * self.p) * m ** (self.p - 2))

    def _estimate(self, inst, n, m, eps, d, rng, path):
        M_p = self.M_p if self.M_p is not None else inst.moment(self.p)
        tuning = self.tuning(M_p, n, m, eps)
        n1 = n // 2
        out = twostage_details(inst.draw(rng, n1, path), inst.draw(rng, n - n1, path), tuning, eps, rng, mu=inst.mu)
        info = {k: out[k] for k in ("stage1_ok", "L", "R", "h", "delta", "bins")}
        info.update(self._regime(n, m, eps, 1, n1, eps), D=tuning.D, M_p=M_p)
        info["tail_ratio"] = self._tail_ratio(n, m, eps)
        info["in_regime"] = bool(info["in_regime"] and info["tail_ratio"] >= 1)
        return out["estimate"], info


class HeavyCoordinate(HeavyTailed):
    r"""Remark 2, (12): Algorithm 2 whose instances are Theorem 3's heavy-tailed Algorithm 1 (coordinatewise moments).

    For E|X_k|^p ≤ M_p, k = 1..d (Appendix B.4): Algorithm 2's groups (:func:`algorithm2_plan`), each
    coordinate's instance clipping the user means to [−D, D] with Theorem 3's tuning (:meth:`HeavyTailed.tuning`)
    at its group's size and ε per instance.  Rate (12): M_p^{2/p}[d² ln m/(mn(ε²∧ε)) ∨ (d/(m²n(ε²∧ε)))^{1−1/p}
    + d/(mn)], whose second term lacks a factor d (slip R2: summing d coordinates of Theorem 3 gives
    d·(d/(m²n(ε²∧ε)))^{1−1/p}).

    Parameters
    ----------
    p, M_p, c, c_D, c1, min_stage1 : as :class:`HeavyTailed` (M_p None: the instance's largest E|X_k|^p).
    """

    name = "heavy_coord"

    def check_point(self, family, n, m, eps, d):
        algorithm2_groups(d, eps, n)

    def _moment(self, inst) -> float:
        s = inst.support.reshape(len(inst.support), -1)
        return self.M_p if self.M_p is not None else float(np.max(inst.probs @ np.abs(s) ** self.p))

    def expected_error(self, inst: MeanInstance, n, m, eps, d) -> dict:
        """E||μ̂ − μ||² = Σ_k E(μ̂_k − μ_k)², every coordinate's instance in closed form (:func:`_coordinate_errors`)."""
        n, m, eps, d = int(n), int(m), float(eps), int(d)
        M_p = self._moment(inst)
        per, info = _coordinate_errors(inst.support.reshape(len(inst.support), -1), inst.probs, d, m, n, eps,
                                       lambda size, e: self.tuning(M_p, size, m, e))
        out = {"error": float(sum(o["error"] for o in per)), "exact_law": all(o["exact_law"] for o in per)}
        out.update(self._regime(n, m, eps, d, info["min_stage1_users"], info["eps_instance"]), M_p=M_p,
                   **{k: info[k] for k in ("regime", "groups", "eps_instance", "min_stage1_users")})
        # Theorem 3's tail regime in the smallest group, at ε per instance
        out["tail_ratio"] = self._tail_ratio(2 * info["min_stage1_users"], m, info["eps_instance"])
        out["theorem_regime"] = bool(out["tail_ratio"] >= 1)
        return out

    def _estimate(self, inst, n, m, eps, d, rng, path):
        M_p = self._moment(inst)

        def draw(n_users, coords):
            return inst.draw(rng, n_users, path, transform=sample_columns(coords))

        theta, info = algorithm2(draw, d, None, m, n, eps, rng, truth=np.atleast_1d(inst.mu),
                                 tuning_of=lambda size, e: self.tuning(M_p, size, m, e))
        info.update(self._regime(n, m, eps, d, info["min_stage1_users"], info["eps_instance"]), M_p=M_p)
        return theta, info


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
    parameters = {"D": positive_or_none("the instance's max ||x||_inf"), **_TUNING_PARAMETERS,
                  **_TwoStageRegime.REGIME_PARAMETERS}

    def __init__(self, D=None, c_h=4.0, c_delta=1.0, c1=1.0, min_stage1=STAGE1_MIN):
        self.D = check_positive("D", D, allow_none=True)
        self.c_h, self.c_delta = _check_tuning(c_h, c_delta)
        self._init_regime(c1, min_stage1)

    def check_point(self, family, n, m, eps, d):
        algorithm2_groups(d, eps, n)

    exact_expected_error = True

    def expected_error(self, inst: MeanInstance, n, m, eps, d) -> dict:
        r"""E||θ̂ − μ||² = Σ_l E(θ̂_l − μ_l)²: every coordinate's Algorithm 1 instance in closed form.

        The squared error is a sum over coordinates whatever the coordinates' dependence (a group's
        instances share its users at ε ≥ 1), so each term is :func:`~.exact.alg1_expected_error` of its
        instance (its group's size, ε per instance, the tuning of :func:`algorithm2_tuning`) on the law of
        the user mean of that coordinate (:func:`~.exact.user_mean_law`: exact for a two-point
        coordinate, as Theorem 7's Hadamard family has).
        """
        n, m, eps, d = int(n), int(m), float(eps), int(d)
        D = self.D if self.D is not None else inst.bound("inf")
        support = inst.support.reshape(len(inst.support), -1)
        per, info = _coordinate_errors(support, inst.probs, d, m, n, eps,
                                       lambda size, _: algorithm2_tuning(D, m, size, self.c_h, self.c_delta))
        out = {"error": float(sum(o["error"] for o in per)), "exact_law": all(o["exact_law"] for o in per)}
        out.update(self._regime(n, m, eps, d, info["min_stage1_users"], info["eps_instance"]),
                   **{k: info[k] for k in ("regime", "groups", "eps_instance", "min_stage1_users")})
        return out

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self.D if self.D is not None else inst.bound("inf")

        def draw(n_users, coords):
            return inst.draw(rng, n_users, path, transform=sample_columns(coords))

        theta, info = algorithm2(draw, d, D, m, n, eps, rng, truth=np.atleast_1d(inst.mu), c_h=self.c_h,
                                 c_delta=self.c_delta)
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
                  "basis_seed": Interval(int, 0), **_TUNING_PARAMETERS, **_TwoStageRegime.REGIME_PARAMETERS}

    def __init__(self, D=None, K=None, basis_seed=0, c_h=4.0, c_delta=1.0, c1=1.0, min_stage1=STAGE1_MIN):
        self.D = check_positive("D", D, allow_none=True)
        self.K = check_positive("K", K, allow_none=True)
        check(isinstance(basis_seed, (int, np.integer)) and not isinstance(basis_seed, bool) and basis_seed >= 0,
              "basis_seed", basis_seed, "an integer >= 0")
        self.basis_seed = int(basis_seed)
        self.c_h, self.c_delta = _check_tuning(c_h, c_delta)
        self._init_regime(c1, min_stage1)

    def check_point(self, family, n, m, eps, d):
        algorithm2_groups(2 * d, eps, n)

    def _coefficients(self, inst, d):
        """(basis, K, the law of a(X): the same probabilities on the support points' coefficients)."""
        basis = KashinBasis(d, self.basis_seed)
        K = self.K if self.K is not None else max(KASHIN_K, basis.K)
        return basis, K, MeanInstance(basis.coefficients(inst.support), inst.probs, 2 * d, inst.m)

    exact_expected_error = True

    def expected_error(self, inst: MeanInstance, n, m, eps, d) -> dict:
        r"""E||Uᵀθ̂ − μ||² in closed form from the 2d coefficient instances of Algorithm 2.

        With e = θ̂ − θ (θ = E a(X)) and μ̂ − μ = Uᵀe, E||μ̂ − μ||² = Σ_{l,l'} (UUᵀ)_{ll'} E[e_l e_l'], the
        second moments of :func:`algorithm2_error_moments` on the law of a(X).
        """
        n, m, eps, d = int(n), int(m), float(eps), int(d)
        D = self.D if self.D is not None else inst.bound("l2")
        basis, K, coef = self._coefficients(inst, d)
        support = coef.support.reshape(len(coef.support), -1)
        D_coef = K * D / math.sqrt(d)
        _, second, info = algorithm2_error_moments(
            support, coef.probs, m, n, eps, lambda size, _: algorithm2_tuning(D_coef, m, size, self.c_h, self.c_delta))
        proj = basis.U @ basis.U.T
        out = {"error": max(0.0, float(np.sum(proj * second))), "exact_law": info["exact_law"], "kashin_K": K}
        out.update(self._regime(n, m, eps, d, info["min_stage1_users"], info["eps_instance"]),
                   **{k: info[k] for k in ("regime", "groups", "eps_instance", "min_stage1_users")})
        return out

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self.D if self.D is not None else inst.bound("l2")
        basis, K, coef = self._coefficients(inst, d)

        def draw(n_users, coords):
            return coef.draw(rng, n_users, path, transform=sample_columns(coords))

        theta_true = coef.mu
        theta, info = algorithm2(draw, 2 * d, K * D / math.sqrt(d), m, n, eps, rng, truth=theta_true, c_h=self.c_h,
                                 c_delta=self.c_delta)
        info.update(self._regime(n, m, eps, d, info["min_stage1_users"], info["eps_instance"]), D=D, kashin_K=K)
        return basis.reconstruct(theta[None, :])[0], info


ESTIMATORS = {cls.name: cls for cls in (Algorithm1, HeavyTailed, HeavyCoordinate, Algorithm2, KashinL2, ItemLevel, OneSample,
                                        NaiveLaplace, ItemLevelLDP)}
