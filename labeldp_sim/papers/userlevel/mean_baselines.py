"""Proposition 1's naive user-level baselines and the item-level column of Table 1 (papers/003).

P1a (``item``: every sample at (ε/m)-LDP), P1b (``one_sample``: one sample per user at ε-LDP), the naive
clipped user mean (``naive``, SPEC §3), and the item-level ε-LDP estimator (``item_ldp``: every sample at ε,
the guarantee per item, Table 1's right column).  Each is one round of a Laplace mechanism of
:mod:`.mechanisms`, so each has its expected error in closed form (:class:`_Baseline`).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.contract import positive_or_none
from labeldp_sim.papers.userlevel.families import MeanInstance
from labeldp_sim.papers.userlevel.mean_base import MeanEstimator, check_mean_point, check_positive
from labeldp_sim.papers.userlevel.mechanisms import ClippedMean, ItemLevelLaplace, OneSampleLaplace

__all__ = ["ItemLevel", "OneSample", "NaiveLaplace", "ItemLevelLDP"]

_USER_BLOCK = 1 << 20  # users per block when every user carries its own count vector


class _Baseline(MeanEstimator):
    r"""Shared constructor of the one-round baselines: D = clipping level (None = the instance's ℓ∞ bound).

    Each baseline averages k reports, every one a clipped sample (or clipped user mean) plus
    Laplace noise of the mechanism's own ``scale`` b per coordinate, so its expected error is a
    closed form on any finite-support instance (``exact_expected_error``)::

        E||μ̂ − μ||² = ||E c − μ||² + (E||c − E c||² + 2 d b²) / k,

    with c the clipped statistic of one report and Var Lap(b) = 2b²: squared clipping bias,
    sampling variance and Laplace variance over the number of reports averaged.  An oracle
    clipping level (the law-free tuning key ``D``) trades the bias against the noise.
    """

    parameters = {"D": positive_or_none("the instance's max ||x||_inf")}
    exact_expected_error = True

    def __init__(self, D=None):
        self.D = check_positive("D", D, allow_none=True)

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

    @staticmethod
    def _clipped_moments(values, probs, mu, D) -> tuple:
        """(||E c − μ||², E||c − E c||²) of c = clip(V, ±D) (per coordinate), V on atoms ``values``, ``probs``."""
        c = np.clip(np.asarray(values, dtype=float).reshape(len(probs), -1), -D, D)
        mean = probs @ c
        bias2 = float(np.sum((mean - np.atleast_1d(np.asarray(mu, dtype=float))) ** 2))
        return bias2, float(probs @ np.sum((c - mean) ** 2, axis=1))

    def _check_exact(self, inst, n, m, eps, d) -> tuple:
        check_mean_point(n, m, eps, d, "sufficient")
        n, m, d, eps = int(n), int(m), int(d), float(eps)
        self.check_point(None, n, m, eps, d)
        check(isinstance(inst, MeanInstance) and inst.d == d, "family", inst, f"a mean instance of dimension d = {d}")
        return n, m, eps, d, self._level(inst)

    @staticmethod
    def _averaged(bias2, var, scale, d, reports, D) -> dict:
        noise = 2.0 * d * scale ** 2
        return {"error": bias2 + (var + noise) / reports, "bias2": bias2, "variance": var / reports,
                "noise": noise / reports, "reports": reports, "noise_scale": scale, "D": D,
                "stage1_ok": None, "in_regime": True, "groups": 1}

    def expected_error(self, inst: MeanInstance, n, m, eps, d) -> dict:
        """E||μ̂ − μ||² given the instance, in closed form (see the class docstring); keys ``error``,
        ``bias2``, ``variance``, ``noise`` (the three terms), ``reports``, ``noise_scale``, ``D``."""
        n, m, eps, d, D = self._check_exact(inst, n, m, eps, d)
        mech, reports = self._mechanism(eps, D, m, d, n)
        bias2, var = self._clipped_moments(inst.support, inst.probs, inst.mu, D)
        return self._averaged(bias2, var, mech.scale, d, reports, D)

    def _mechanism(self, eps, D, m, d, n) -> tuple:
        """(the randomizer of one report, the number of reports averaged) of a per-sample baseline."""
        raise NotImplementedError


class ItemLevel(_Baseline):
    r"""Proposition 1, P1a: item-level (ε/m)-LDP on every sample, μ̂ = Σ_ij Z_ij/(nm).

    Z_ij = clip(X_ij, ±D) + Lap(2Dmd/ε) per coordinate (:class:`~.mechanisms.ItemLevelLaplace`:
    a user's m reports compose to user-level ε); rate D²m/(nε²) + D²/(nm) in 1-D (SPEC §3).
    Despite its name this is NOT Table 1's item-level column (every sample at ε, user-level
    only mε): that is :class:`ItemLevelLDP` (``item_ldp``).

    Exact error, c = clip(X, ±D), b = 2Dmd/ε:
    ||E c − μ||² + E||c − E c||²/(nm) + 2d b²/(nm) = bias² + Var c/(nm) + 8D²md³/(nε²).
    """

    name = "item"

    def _mechanism(self, eps, D, m, d, n):
        return ItemLevelLaplace(eps, D, m, d), n * m

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self._level(inst)
        mech = ItemLevelLaplace(eps, D, m, d)
        return self._release(mech, inst, n, rng, path) / (n * m), {"D": D}


class OneSample(_Baseline):
    r"""Proposition 1, P1b: one random sample per user at item-level ε, μ̂ = Σ_i Z_i/n.

    Z_i = clip(X_iJ, ±D) + Lap(2Dd/ε) per coordinate (:class:`~.mechanisms.OneSampleLaplace`);
    rate D²/(n(ε²∧1)) (SPEC §3).

    Exact error (X_iJ has the law of X: the m samples are i.i.d.), b = 2Dd/ε:
    ||E c − μ||² + E||c − E c||²/n + 2d b²/n = bias² + Var c/n + 8D²d³/(nε²).
    """

    name = "one_sample"

    def _mechanism(self, eps, D, m, d, n):
        return OneSampleLaplace(eps, D, d), n

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self._level(inst)
        mech = OneSampleLaplace(eps, D, d)
        return self._release(mech, inst, n, rng, path) / n, {"D": D}


class NaiveLaplace(_Baseline):
    r"""Naive baseline (SPEC §3, not in the paper): clip(X̄_i, ±D) + Lap(2Dd/ε) per coordinate.

    Rate σ²/(nm) + 8D²/(nε²) in 1-D.  Exact error, b = 2Dd/ε:
    ||E clip(X̄) − μ||² + E||clip(X̄) − E clip(X̄)||²/n + 2d b²/n, with the law of X̄ exact where
    it is known: any instance when D ≥ its ℓ∞ bound (no clipping: bias 0, variance tr Cov X/m),
    else a one-dimensional two-point instance (X̄ = (J a + (m − J) b)/m, J binomial).
    """

    name = "naive"

    def expected_error(self, inst: MeanInstance, n, m, eps, d) -> dict:
        n, m, eps, d, D = self._check_exact(inst, n, m, eps, d)
        scale = ClippedMean(eps, np.full(d, -D), np.full(d, D)).scale
        if D >= inst.bound("inf"):  # X̄ lies in the box: nothing clipped
            return self._averaged(0.0, self._clipped_moments(inst.support, inst.probs, inst.mu, np.inf)[1] / m,
                                  scale, d, n, D)
        check(d == 1 and len(inst.support) == 2, "family", inst,
              "a one-dimensional two-point instance, or a clipping level D >= its max |x| (exact user-mean law)")
        j = np.arange(m + 1)
        values = (j * inst.support[0] + (m - j) * inst.support[1]) / m
        bias2, var = self._clipped_moments(values, stats.binom.pmf(j, m, inst.probs[0]), inst.mu, D)
        return self._averaged(bias2, var, scale, d, n, D)

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self._level(inst)
        mech = ClippedMean(eps, np.full(d, -D), np.full(d, D))
        return self._release(mech, inst, n, rng, path) / n, {"D": D}


class ItemLevelLDP(_Baseline):
    r"""Table 1's item-level column for the bounded mean: every one of the nm samples ε-LDP on its own.

    Z_ij = clip(X_ij, ±D) + W_ij, W_ij ~ Lap(2Dd/ε) per coordinate (Lap(2D/ε) in 1-D), and
    μ̂ = Σ_ij Z_ij/(nm).  Each report is the randomizer
    :class:`~.mechanisms.ItemLevelLaplace` with m = 1 (its privacy unit is one sample: ℓ1 range
    2Dd over the scale 2Dd/ε, item-level ε-LDP) run on the nm samples as nm one-sample units.

    This is the comparison column of papers/003's Table 1 ("item-level, nm samples"; row
    "Mean, bounded": O(d/(nm(ε²∧ε))), Asi et al., 2022; Sec. 4.2 cites Duchi et al., 2018 for
    the Laplace rates), the rate ``item_bounded``.  It is NOT user-level ε-LDP: a user's m reports
    compose to user-level mε (that conversion at ε/m per sample is P1a, :class:`ItemLevel`).
    It is here as the reference that user-level Algorithm 1 matches (papers/003, Sec. 1: "the
    same convergence rates ... for distributions with bounded support").

    Exact error, c = clip(X, ±D), b = 2Dd/ε:
    ||E c − μ||² + (E||c − E c||² + 2d b²)/(nm); in 1-D bias² + (Var c + 8D²/ε²)/(nm).

    Parameters
    ----------
    D : float, optional
        Per-coordinate clipping level; None = the instance's max ||x||_∞.
    """

    name = "item_ldp"

    def _mechanism(self, eps, D, m, d, n):
        return ItemLevelLaplace(eps, D, 1, d), n * m

    def _estimate(self, inst, n, m, eps, d, rng, path):
        D = self._level(inst)
        mech, reports = self._mechanism(eps, D, m, d, n)
        items = MeanInstance(inst.support, inst.probs, inst.d, 1)  # the nm samples, each its own privacy unit
        return self._release(mech, items, reports, rng, path) / reports, {
            "D": D, "noise_scale": mech.scale, "epsilon_item": eps, "epsilon_user": m * eps}
