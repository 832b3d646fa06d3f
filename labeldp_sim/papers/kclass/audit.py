"""Audit recipes of the K-class mechanisms (papers/002): RR, RRWithPrior, ALIBI, and their mutants.

One function per mechanism class (``rr_audit``, ``rr_with_prior_audit``, ``alibi_audit``), which
the class's ``audit_cases`` returns: its real case, its planted mutant and its careless inputs.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from labeldp_sim.privacy.audit import (LABEL_NB, AuditCases, CapCheck, Careless, Case, Recipe, K_BB, builds, calls,
                             matrix_loss)
from labeldp_sim.privacy.grid import grid_probability, keep_or_flip_matrix
from labeldp_sim.privacy.protocols import LOG_ODDS_LIMIT
from labeldp_sim.papers.kclass.mechanisms import ALIBI, RandomizedResponse, RRWithPrior

__all__ = ["rr_audit", "rr_with_prior_audit", "alibi_audit", "rr_realised_loss", "rr_with_prior_realised_loss"]

RR_KS = (2, 3, 4, 8)


def rr_realised_loss(mech: RandomizedResponse) -> float:
    r"""The loss :meth:`RandomizedResponse.report` realises on the 2^-53 grid of uniforms.

    The report keeps y when U < κ = ``keep_probability(K)``, U = k·2^-53, so it keeps with
    probability κ̃ = ⌈κ·2^53⌉/2^53, and draws each of the K − 1 others with (1 − κ̃)/(K − 1)
    (``rng.integers`` is exactly uniform): L = max_{i,i',j} log M̃[i,j]/M̃[i',j] =
    ln(κ̃(K − 1)/(1 − κ̃)), over K ∈ {2, 3, 4, 8}.
    """
    return max(matrix_loss(keep_or_flip_matrix(mech.keep_probability(K), K)) for K in RR_KS)


def _rr_exact(mech: RandomizedResponse):
    # report() draws from keep_probability, on the grid; sample_aggregate from transition_matrix: all checked
    losses = [rr_realised_loss(mech)]
    for K in RR_KS:
        kappa = mech.keep_probability(K)
        M = np.full((K, K), (1 - kappa) / (K - 1))
        np.fill_diagonal(M, kappa)
        losses += [matrix_loss(M), matrix_loss(mech.transition_matrix(K))]
    return max(losses), ("max_{i,i',j} log M[i,j]/M[i',j], M from keep_probability (report), its "
                         "rounding onto the 2^-53 grid (what report realises) and transition_matrix "
                         "(sampler), K ∈ {2,3,4,8}")


def _priors(K=4, units=10):
    """Label-independent priors: every composition of ``units`` into K parts (ties included), /units."""
    rows = [c for c in product(range(units + 1), repeat=K) if sum(c) == units]
    return np.array(rows, dtype=float) / units


def _realised_prior_matrix(mech: RRWithPrior, prior_row) -> np.ndarray:
    """transition_matrix(prior) as :meth:`RRWithPrior.report` realises it on the 2^-53 grid.

    A label in the set is kept when U < e^ε/(e^ε+k*−1) (the float M[i, i] holds), so with
    probability ⌈M[i,i]·2^53⌉/2^53; the k* − 1 other members share the rest exactly
    (``rng.integers``), and a label outside the set gets an exactly uniform member.
    """
    M = mech.transition_matrix(prior_row)
    members = np.flatnonzero(M[0] > 0)  # every row puts mass on the set only
    k = len(members)
    for i in members:
        kept = float(grid_probability(M[i, i]))
        if k > 1:
            M[i, members] = (1.0 - kept) / (k - 1)
        M[i, i] = kept
    return M


# priors for the cap sweep: sets of 2 (the worst: RR on two classes), 3 and 4 near the cap
CAP_PRIORS = np.array([[0.5, 0.5, 0.0, 0.0], [0.6, 0.4, 0.0, 0.0], [0.7, 0.2, 0.1, 0.0], [0.4, 0.3, 0.2, 0.1]])


def rr_with_prior_realised_loss(mech: RRWithPrior, priors=CAP_PRIORS) -> float:
    """The loss :meth:`RRWithPrior.report` realises on the 2^-53 grid, max over ``priors``
    (:func:`_realised_prior_matrix`)."""
    return max(matrix_loss(_realised_prior_matrix(mech, p)) for p in priors)


def _rr_prior_exact(mech: RRWithPrior):
    priors = _priors()
    law = max(matrix_loss(mech.transition_matrix(p)) for p in priors)
    return max(law, rr_with_prior_realised_loss(mech, priors)), (
        f"max_{{i,i',j}} log M[i,j]/M[i',j] over transition_matrix(prior) and its keep draw rounded onto "
        f"the 2^-53 grid (what report realises), {len(priors)} priors on a 1/10 grid of the simplex, K = 4")


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


class _MutantEdgeCapRR(RandomizedResponse):
    """Fixture: RR capped at the edge of the grid, ln(2^52 − 1) ≈ 36.04 (the cap before the grid was counted)."""

    max_epsilon = LOG_ODDS_LIMIT


class _MutantEdgeCapRRWithPrior(RRWithPrior):
    """Fixture: RRWithPrior capped at the edge of the grid, ln(2^52 − 1) ≈ 36.04."""

    max_epsilon = LOG_ODDS_LIMIT


class _MutantSmallScaleALIBI(ALIBI):
    """Fixture: ALIBI with Lap(1/ε) instead of Lap(2/ε) (loss 2ε)."""

    def __init__(self, epsilon):
        super().__init__(epsilon)
        self.scale = 1.0 / self.epsilon


RR = Recipe(LABEL_NB, "y = 0 vs y' = 1, K = 4", _rr_exact, _draw_rr)
RR_WITH_PRIOR = Recipe(LABEL_NB + "; prior fixed, computed without the label",
                       "y = 0 vs y' = 1, K = 4, prior (.4, .3, .2, .1) (k* = 3)", _rr_prior_exact, _draw_rr_prior)
ALIBI_RECIPE = Recipe(LABEL_NB, "y = 0 vs y' = 1, K = 3", _alibi_exact, _draw_alibi)

RR_CAP_METHOD = "max_{i,i',j} log M̃[i,j]/M̃[i',j], M̃ the channel report realises on the 2^-53 grid, K ∈ {2,3,4,8}"
RR_PRIOR_CAP_METHOD = ("max_{i,i',j} log M̃[i,j]/M̃[i',j], M̃ the channel report realises on the 2^-53 grid, "
                       "priors with sets of 2, 3 and 4, K = 4")
EDGE_CAP = "max_epsilon = ln(2^52 − 1) ≈ 36.04, the edge of the grid (the flip probability ≥ 2^-52)"

# Each function below is the audit of one class, as the K-class experiments build it: its real
# case, its planted mutant, and careless inputs to it — each must be refused in one line naming
# the argument.


def _report(rng, y, **given):
    return calls("report", np.asarray(y), rng, K=K_BB, **given)


def rr_audit(eps) -> AuditCases:
    """:class:`RandomizedResponse` (``rr``)."""
    rng, rr = np.random.default_rng(0), RandomizedResponse(eps)
    return AuditCases(
        [Case("rr", RandomizedResponse(eps), RR)],
        [Case("rr: binary keep probability", _MutantBinaryKeepRR(eps), RR, "rr", "keep e^ε/(e^ε+1), K = 4")],
        [Careless("rr: label 0.5", rr, _report(rng, [0.5]), "y", "y = 0.5: echoed as the report"),
         Careless("rr: label −1", rr, _report(rng, [-1]), "y", "y = −1"),
         Careless("rr: ε = 20", RandomizedResponse, builds(20.0), "epsilon",
                  "ε = 20: the keep probability's rounding onto the 2^-53 grid realises a loss up to 3e-8 above ε"),
         Careless("rr: ε = 40", RandomizedResponse, builds(40.0), "epsilon",
                  "ε = 40: the keep probability rounds to 1 in float64, RR never flips"),
         Careless("rr: ε = 710", RandomizedResponse, builds(710.0), "epsilon",
                  "ε = 710: e^ε overflows, the keep probability is NaN")],
        [CapCheck("rr: ε cap", RandomizedResponse, rr_realised_loss, 1, RR_CAP_METHOD),
         CapCheck("rr: ε cap at the edge of the grid", _MutantEdgeCapRR, rr_realised_loss, 1, RR_CAP_METHOD,
                  "rr: ε cap", EDGE_CAP)])


def rr_with_prior_audit(eps) -> AuditCases:
    """:class:`RRWithPrior` (``rr_with_prior``, LP-2ST's stage)."""
    rng, rr_prior, prior = np.random.default_rng(0), RRWithPrior(eps), RR_PRIOR[None, :]
    return AuditCases(
        [Case("rr_with_prior", RRWithPrior(eps), RR_WITH_PRIOR)],
        [Case("rr_with_prior: prior from own label", _MutantOwnLabelPriorRR(eps), RR_WITH_PRIOR, "rr_with_prior",
              "prior ← (prior + onehot(y))/2")],
        [Careless("rr_with_prior: label −1", rr_prior, _report(rng, [-1], prior=prior), "y",
                  "y = −1: returned unchecked"),
         Careless("rr_with_prior: NaN in prior", rr_prior, _report(rng, [0], prior=[[np.nan, 0.3, 0.2, 0.1]]),
                  "prior", "a prior with NaN: the top-k set is ill-defined"),
         Careless("rr_with_prior: ε = 40", RRWithPrior, builds(40.0), "epsilon",
                  "ε = 40: the keep probability rounds to 1 for a set of two")],
        [CapCheck("rr_with_prior: ε cap", RRWithPrior, rr_with_prior_realised_loss, 1, RR_PRIOR_CAP_METHOD),
         CapCheck("rr_with_prior: ε cap at the edge of the grid", _MutantEdgeCapRRWithPrior,
                  rr_with_prior_realised_loss, 1, RR_PRIOR_CAP_METHOD, "rr_with_prior: ε cap", EDGE_CAP)])


def alibi_audit(eps) -> AuditCases:
    """:class:`ALIBI` (``alibi``)."""
    rng, alibi = np.random.default_rng(0), ALIBI(eps)
    return AuditCases(
        [Case("alibi", ALIBI(eps), ALIBI_RECIPE)],
        [Case("alibi: Lap(1/ε)", _MutantSmallScaleALIBI(eps), ALIBI_RECIPE, "alibi", "Lap(1/ε)")],
        [Careless("alibi: label 1.5", alibi, _report(rng, [1.5]), "y", "y = 1.5: no one-hot vector"),
         Careless("alibi: label K", alibi, _report(rng, [K_BB]), "y", f"y = {K_BB} with K = {K_BB}"),
         Careless("alibi: ε = 1e-320", ALIBI, builds(1e-320), "epsilon",
                  "ε = 1e-320: the noise scale 2/ε overflows")])
