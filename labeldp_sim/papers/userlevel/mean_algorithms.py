r"""Algorithms 1 and 2 of papers/003 (MeanEst1d, MeanEst) as reusable functions.

The mean estimators (:mod:`.mean`) and the learning protocols (:mod:`.so`,
:mod:`.nonparametric`) run these on groups of users given as
:class:`~labeldp_sim.papers.userlevel.data.UserValues`; every privatisation goes
through the user-level randomizers of :mod:`.mechanisms`.

``twostage(stage1, stage2, D, m, n, eps, rng, *, h=None, delta=None, pre_clip=False, mu=None)``
    -> ``(estimate: float, stage1_ok: bool | None)``

    Algorithm 1 on two groups of users given as
    :class:`~labeldp_sim.papers.userlevel.data.UserValues` of 1-D samples (or user
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

Decisions where the paper is silent or slips (SPEC §2)
-----------------------------------------------------
* Step 5's "argmax_k x_k" is argmax_k s_k; k̂ is 0-based in code, L, R as printed.
* Bins are half-open; a user statistic outside [−D, −D + Bh) counts in the
  nearest end bin (B = ⌈√m/2⌉ bins reach past D, and Y = D lands in bin B+1
  when √m/2 is an integer).
* Δ's ln n uses the users of the Algorithm 1 instance (the group size in Algorithm 2).
* Algorithm 2, medium privacy: ε' = ⌊ε⌋ coordinates per group and ⌈dim/ε'⌉ groups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.data import UserValues
from labeldp_sim.papers.userlevel.mechanisms import BinHistogram, ClippedMean, coordinate

__all__ = ["TwoStageTuning", "twostage", "twostage_details", "stage_one", "stage_two", "split_sizes",
           "algorithm2_plan", "algorithm2_groups", "algorithm2_tuning", "algorithm2"]


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
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    hist = BinHistogram(eps, -tuning.D, tuning.h, tuning.bins, pre_clip=tuning.D if tuning.pre_clip else None)
    s = hist.release_sum(values, rng)
    k = int(np.argmax(s))  # Laplace sums are continuous: ties have probability 0
    return -tuning.D + (k - 1) * tuning.h, -tuning.D + (k + 2) * tuning.h, k


def stage_two(values: UserValues, tuning: TwoStageTuning, eps, L, R, rng) -> float:
    r"""Stage II of Algorithm 1 (steps 6-7): μ̂ = mean of clip(Y_i, L−Δ, R+Δ) + Lap((3h+2Δ)/ε)."""
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    mech = ClippedMean(eps, L - tuning.delta, R + tuning.delta, pre_clip=tuning.D if tuning.pre_clip else None)
    return float(mech.release_sum(values, rng)[0] / values.n)


def twostage_details(stage1: UserValues, stage2: UserValues, tuning: TwoStageTuning, eps, rng, mu=None) -> dict:
    """Algorithm 1 on the two groups with explicit tuning; see the module docstring."""
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
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
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
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


def algorithm2_tuning(D, m, size, c_h=4.0, c_delta=1.0) -> TwoStageTuning:
    """Algorithm 1's tuning in a group of ``size`` users: h = c_h·D/√m, Δ = c_Δ·D√(ln size/m) (Theorem 1's at 4, 1)."""
    return TwoStageTuning(float(D), c_h * D / math.sqrt(m), c_delta * D * math.sqrt(math.log(max(int(size), 1)) / m))


def algorithm2(draw, dim, D, m, n, eps, rng, *, truth=None, c_h=4.0, c_delta=1.0, tuning_of=None):
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
    c_h, c_delta : float
        The constants of every instance's tuning (:func:`algorithm2_tuning`; Theorem 1's by default).
    tuning_of : callable (group size, ε per instance) -> TwoStageTuning, optional
        Another tuning of the instances (Remark 2: Theorem 3's heavy-tailed one); ``D``, ``c_h`` and
        ``c_delta`` are then unused.

    Returns
    -------
    theta_hat : ndarray (dim,)
    info : dict
        regime, groups, eps_instance, min_stage1_users, stage1_ok, stage1_failures.
    """
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    regime, groups, eps_inst, sizes = algorithm2_groups(dim, eps, n)
    theta = np.zeros(dim)
    fails = 0
    for coords, size in zip(groups, sizes):
        n1 = int(size) // 2
        stage1, stage2 = draw(n1, coords), draw(int(size) - n1, coords)
        tuning = (algorithm2_tuning(D, m, size, c_h, c_delta) if tuning_of is None
                  else tuning_of(int(size), eps_inst))
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

