"""Audit recipes of the K-class mechanisms (papers/002): RR, RRWithPrior, ALIBI, and their mutants.

Registered with :func:`labeldp_sim.privacy.audit.register_cases` on import.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from ..privacy.audit import (LABEL_NB, Careless, Case, Recipe, K_BB, builds, calls, matrix_loss, register_careless,
                             register_cases)
from .mechanisms import ALIBI, RandomizedResponse, RRWithPrior

__all__ = []


def _rr_exact(mech: RandomizedResponse):
    # report() draws from keep_probability; sample_aggregate from transition_matrix: both are checked
    losses = []
    for K in (2, 3, 4, 8):
        kappa = mech.keep_probability(K)
        M = np.full((K, K), (1 - kappa) / (K - 1))
        np.fill_diagonal(M, kappa)
        losses += [matrix_loss(M), matrix_loss(mech.transition_matrix(K))]
    return max(losses), ("max_{i,i',j} log M[i,j]/M[i',j], M from keep_probability (report) "
                         "and transition_matrix (sampler), K ∈ {2,3,4,8}")


def _priors(K=4, units=10):
    """Label-independent priors: every composition of ``units`` into K parts (ties included), /units."""
    rows = [c for c in product(range(units + 1), repeat=K) if sum(c) == units]
    return np.array(rows, dtype=float) / units


def _rr_prior_exact(mech: RRWithPrior):
    priors = _priors()
    return max(matrix_loss(mech.transition_matrix(p)) for p in priors), (
        f"max_{{i,i',j}} log M[i,j]/M[i',j] over transition_matrix(prior), "
        f"{len(priors)} priors on a 1/10 grid of the simplex, K = 4")


def _alibi_exact(mech: ALIBI):
    losses = []
    for K in (2, 3, 5):
        loc = mech.location(np.arange(K), K)
        losses.append(np.max(np.abs(loc[:, None] - loc[None, :]).sum(axis=2)) / mech.scale)
    return float(max(losses)), "max ‖location(y, K) − location(y', K)‖₁ / scale, all label pairs, K ∈ {2,3,5}"


def _draw_rr(mech, side, n, rng):
    return np.asarray(mech.report(np.full(n, side), rng, K=K_BB), dtype=np.int64)


RR_PRIOR = np.array([0.4, 0.3, 0.2, 0.1])  # k* = 3 at ε = 1: labels 0 and 1 are both in the set


def _draw_rr_prior(mech, side, n, rng):
    prior = np.broadcast_to(RR_PRIOR, (n, K_BB))  # the same prior for D and D': label-free
    return np.asarray(mech.report(np.full(n, side), rng, K=K_BB, prior=prior), dtype=np.int64)


def _draw_alibi(mech, side, n, rng):
    return np.asarray(mech.report(np.full(n, side), rng, K=3), dtype=float)


class _MutantBinaryKeepRR(RandomizedResponse):
    """Fixture: K-ary RR that keeps y with the binary probability e^ε/(e^ε+1)."""

    def keep_probability(self, K):
        e = np.exp(self.epsilon)
        return e / (e + 1)


class _MutantOwnLabelPriorRR(RRWithPrior):
    """Fixture: the prior is mixed with the user's own one-hot label (prior from own label)."""

    def report(self, y, rng, *, K=None, cells=None, n_cells=None, prior=None):
        prior = np.asarray(prior, dtype=float)
        own = np.zeros_like(prior)
        own[np.arange(len(y)), y] = 1.0
        return super().report(y, rng, K=K, cells=cells, n_cells=n_cells, prior=0.5 * prior + 0.5 * own)


class _MutantSmallScaleALIBI(ALIBI):
    """Fixture: ALIBI with Lap(1/ε) instead of Lap(2/ε) (loss 2ε)."""

    def __init__(self, epsilon):
        super().__init__(epsilon)
        self.scale = 1.0 / self.epsilon


RECIPES = {
    "rr": Recipe(LABEL_NB, "y = 0 vs y' = 1, K = 4", _rr_exact, _draw_rr),
    "rr_with_prior": Recipe(LABEL_NB + "; prior fixed, computed without the label",
                            "y = 0 vs y' = 1, K = 4, prior (.4, .3, .2, .1) (k* = 3)",
                            _rr_prior_exact, _draw_rr_prior),
    "alibi": Recipe(LABEL_NB, "y = 0 vs y' = 1, K = 3", _alibi_exact, _draw_alibi),
}


@register_cases
def kclass_cases(eps):
    """RR, RRWithPrior and ALIBI as the K-class experiments build them, and their mutants."""
    real = {"rr": RandomizedResponse(eps), "rr_with_prior": RRWithPrior(eps), "alibi": ALIBI(eps)}
    mutants = [
        ("rr: binary keep probability", "rr", _MutantBinaryKeepRR(eps), "keep e^ε/(e^ε+1), K = 4"),
        ("rr_with_prior: prior from own label", "rr_with_prior", _MutantOwnLabelPriorRR(eps),
         "prior ← (prior + onehot(y))/2"),
        ("alibi: Lap(1/ε)", "alibi", _MutantSmallScaleALIBI(eps), "Lap(1/ε)"),
    ]
    return ([Case(name, mech, RECIPES[name]) for name, mech in real.items()],
            [Case(name, mech, RECIPES[parent], parent, broken) for name, parent, mech, broken in mutants])


@register_careless
def kclass_careless(eps):
    """Careless inputs to RR, RRWithPrior and ALIBI: each must be refused in one line naming the argument."""
    rng = np.random.default_rng(0)
    prior = RR_PRIOR[None, :]

    def report(y, **given):
        return calls("report", np.asarray(y), rng, K=K_BB, **given)

    rr, rr_prior, alibi = RandomizedResponse(eps), RRWithPrior(eps), ALIBI(eps)
    return [
        Careless("rr: label 0.5", rr, report([0.5]), "y", "y = 0.5: echoed as the report"),
        Careless("rr: label −1", rr, report([-1]), "y", "y = −1"),
        Careless("rr: ε = 40", RandomizedResponse, builds(40.0), "epsilon",
                 "ε = 40: the keep probability rounds to 1 in float64, RR never flips"),
        Careless("rr: ε = 710", RandomizedResponse, builds(710.0), "epsilon",
                 "ε = 710: e^ε overflows, the keep probability is NaN"),
        Careless("rr_with_prior: label −1", rr_prior, report([-1], prior=prior), "y", "y = −1: returned unchecked"),
        Careless("rr_with_prior: NaN in prior", rr_prior, report([0], prior=[[np.nan, 0.3, 0.2, 0.1]]), "prior",
                 "a prior with NaN: the top-k set is ill-defined"),
        Careless("rr_with_prior: ε = 40", RRWithPrior, builds(40.0), "epsilon",
                 "ε = 40: the keep probability rounds to 1 for a set of two"),
        Careless("alibi: label 1.5", alibi, report([1.5]), "y", "y = 1.5: no one-hot vector"),
        Careless("alibi: label K", alibi, report([K_BB]), "y", f"y = {K_BB} with K = {K_BB}"),
        Careless("alibi: ε = 1e-320", ALIBI, builds(1e-320), "epsilon", "ε = 1e-320: the noise scale 2/ε overflows"),
    ]
