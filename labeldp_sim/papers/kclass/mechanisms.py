"""K-class label-LDP mechanisms of papers/002: RR, RRWithPrior (LP-2ST's stage), ALIBI.

Each is a :class:`~labeldp_sim.privacy.protocols.LocalMechanism`: ``report`` checks
the labels at the boundary (integers in 0..K−1, K given) and ``_report`` is the one
place its noise is drawn; the proofs are in the docstrings.  Each declares its
``parameters`` and its ``audit_cases``, whose recipes are in :mod:`labeldp_sim.papers.kclass.audit`.

These are simulation mechanisms, not for releasing real data.  RR and RRWithPrior
compare float64 uniforms (a grid of 2^-53) with their keep probabilities, so they
draw with the grid-rounded probability ⌈p·2^53⌉/2^53, and ε is capped where the
loss that rounding realises stays within 1e-9 of ε
(:data:`~labeldp_sim.privacy.grid.RR_EPSILON_LIMIT` = 15.6, far below the edge of the
grid at ln(2^52 − 1) ≈ 36.04, where it exceeds ε by up to 0.22); ALIBI's
floating-point Laplace noise leaks through its low-order bits (Mironov 2012), a
limitation the audit measures and states.
"""

from __future__ import annotations

import numpy as np

from labeldp_sim.harness.errors import ConfigError, check
from labeldp_sim.harness.memory import Need
from labeldp_sim.privacy.grid import RR_EPSILON_LIMIT
from labeldp_sim.privacy.protocols import (LABEL_LOCAL, CubeSumMechanism, LocalMechanism, cube_label_counts,
                                 require_K, audit_recipe, check_classes, check_finite, epsilon_parameter,
                                 laplace_sum, noise_scale, shown)

# RR at K = 2 (and RRWithPrior's sets of two) flip with probability 1/(e^ε + 1), the smallest of any K:
# the keep probability's rounding onto the 2^-53 grid of uniforms moves the loss most there
_RR_LIMIT = ("beyond it the flip probability 1/(e^ε+1) of two classes, drawn on the 2^-53 grid of uniforms, "
             "realises a loss more than 1e-9 above ε")
AUDIT = "labeldp_sim.papers.kclass.audit"  # the recipes of these classes (imported by the audit only)

__all__ = ["RandomizedResponse", "RRWithPrior", "ALIBI"]

# (papers/002: the baselines of the vector-approximation paper; RAPPOR above is its method)


class _RRBudget:
    """What RR and RRWithPrior state alike: label LDP, and an ε whose flip probability float64 keeps."""

    privacy = LABEL_LOCAL
    max_epsilon, epsilon_limit = RR_EPSILON_LIMIT, _RR_LIMIT
    parameters = {"epsilon": epsilon_parameter(RR_EPSILON_LIMIT, _RR_LIMIT)}


class RandomizedResponse(_RRBudget, CubeSumMechanism):
    r"""K-ary randomized response: keep y with probability e^ε/(e^ε+K−1), else a uniform other class.

    Privacy: every output's probability is e^ε/(e^ε+K−1) or 1/(e^ε+K−1), a ratio of at
    most e^ε between any two labels (ε-label LDP).

    As a cube mechanism the statistic is the per-cube count of each reported
    class; given n_lj it is Σ_j Multinomial(n_lj, M[j, ·]), drawn exactly.

    ε ≤ RR_EPSILON_LIMIT = 15.6 (:mod:`labeldp_sim.privacy.grid`): the report keeps y
    when a uniform U = k·2^-53 is < the keep probability κ, so it keeps with
    probability κ̃ = ⌈κ·2^53⌉/2^53, and the realised loss is ln(κ̃(K−1)/(1−κ̃)).  For
    K = 2 the flip probability 1/(e^ε+1) carries a rounding error of up to 3·2^-54,
    which moves the loss by ≈ 3·2^-54·e^ε: ≤ 1e-9 up to the cap, 0.22 near
    ln(2^52 − 1) ≈ 36.04.  The constructor refuses a larger ε.

    Simulation mechanism, not for releasing real data (module docstring).
    """

    name = "rr"
    audit_cases = audit_recipe(AUDIT, "rr_audit")

    def trial_needs(self, size) -> list:
        """Every trial that draws data holds the K × K transition matrix (:meth:`transition_matrix`)."""
        if not (size.per_sample or size.sufficient):
            return []
        return [Need(8.0 * size.K * size.K, f"the K × K = {size.K:,.0f}² randomized-response matrix",
                     {"distribution.K": (int(size.K), size.K)})]

    def keep_probability(self, K):
        e = np.exp(self.epsilon)
        return e / (e + require_K(K) - 1)

    def transition_matrix(self, K):
        """M[i, j] = P(Z = j | Y = i)."""
        K = require_K(K)
        e = np.exp(self.epsilon)
        M = np.full((K, K), 1.0 / (e + K - 1))
        np.fill_diagonal(M, e / (e + K - 1))
        return M

    def _report(self, y, rng, *, K, cells=None, n_cells=None):
        keep = rng.random(len(y)) < self.keep_probability(K)
        other = (y + rng.integers(1, K, size=len(y))) % K  # uniform over the K-1 other classes
        return np.where(keep, y, other)

    def aggregate(self, reports, cells, n_cells, K):
        return cube_label_counts(cells, reports, n_cells, K)

    def _sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        M = self.transition_matrix(K)
        return sum(rng.multinomial(counts[:, j], M[j]) for j in range(K))


class RRWithPrior(_RRBudget, LocalMechanism):
    r"""RRWithPrior (Ghazi et al., 2021): randomized response restricted to a top-k set.

    Given a prior p over the K classes for this sample, take the k classes with
    the largest prior, k* = argmax_k e^ε/(e^ε+k−1) · P(top k); output y with
    probability e^ε/(e^ε+k*−1) if y is in the set and each other member with
    1/(e^ε+k*−1); if y is not in the set, output a uniform member.

    Privacy: for a fixed prior (computed without this sample's label), every
    output in the set has probability in [1/(e^ε+k*−1), e^ε/(e^ε+k*−1)] whatever y
    is, and outputs outside it have probability 0 for every y: ε-label LDP.
    The prior is an argument of :meth:`report`; it must not depend on the label.
    ε ≤ RR_EPSILON_LIMIT, as for RR: a set of k* = 2 is RR on two classes, and the
    keep draw U < e^ε/(e^ε+k*−1) is rounded onto the same grid.

    Simulation mechanism, not for releasing real data (module docstring).
    """

    name = "rr_with_prior"
    audit_cases = audit_recipe(AUDIT, "rr_with_prior_audit")

    def top_k_sets(self, prior):
        """(order, k*) per row: classes by decreasing prior and the chosen set size."""
        order = np.argsort(-prior, axis=1, kind="stable")
        mass = np.cumsum(np.take_along_axis(prior, order, axis=1), axis=1)
        e = np.exp(self.epsilon)
        sizes = np.arange(1, prior.shape[1] + 1)
        k_star = np.argmax(e / (e + sizes - 1) * mass, axis=1) + 1
        return order, k_star

    def transition_matrix(self, prior_row):
        """M[i, j] = P(Z = j | Y = i) for one prior."""
        K = len(prior_row)
        order, k_star = self.top_k_sets(prior_row[None, :])
        members, k = order[0, :k_star[0]], int(k_star[0])
        e = np.exp(self.epsilon)
        M = np.zeros((K, K))
        M[:, members] = 1.0 / k  # y outside the set: uniform on the set
        for i in members:
            M[i, members] = 1.0 / (e + k - 1)
            M[i, i] = e / (e + k - 1)
        return M

    def _report(self, y, rng, *, K, cells=None, n_cells=None, prior=None):
        prior = self.check_prior(prior, len(y), K)
        order, k_star = self.top_k_sets(prior)
        n = len(y)
        rank = np.argsort(order, axis=1)[np.arange(n), y]  # position of y in the order
        inside = rank < k_star
        e = np.exp(self.epsilon)
        keep = inside & (rng.random(n) < e / (e + k_star - 1))
        # an other member of the set (uniform over the k*-1 others), or any member if y is outside
        pick_other = (rank + rng.integers(1, np.maximum(k_star, 2), size=n)) % np.maximum(k_star, 1)
        pick_any = rng.integers(0, k_star)
        position = np.where(inside, pick_other, pick_any)
        return np.where(keep, y, order[np.arange(n), position])

    @staticmethod
    def check_prior(prior, n, K):
        """One prior row per user over the K classes: finite and ≥ 0 (how it was made, without the
        label, no check can see)."""
        allowed = f"a prior per user, computed without its label: shape ({n}, {K}), finite, >= 0"
        if prior is None:
            raise ConfigError("prior", None, allowed)
        prior = np.asarray(prior)
        if prior.ndim != 2 or prior.dtype.kind not in "iuf" or len(prior) != n:
            raise ConfigError("prior", shown(f"an array of shape {prior.shape}"), allowed)
        check(prior.shape[1] == K, "K", K, f"the prior's {prior.shape[1]} classes")
        check_finite(prior, "prior", allowed)
        check(not (prior < 0).any(), "prior", shown("a negative entry"), allowed)
        return prior


class ALIBI(CubeSumMechanism):
    r"""ALIBI (Malek Esmaeili et al., 2021): one-hot + Lap(2/ε), Bayesian soft labels (29).

    o = OneHot(y) + W, W_k ~ Lap(λ) i.i.d., λ = 2/ε.  Privacy: two one-hot vectors
    differ by 2 in ℓ1, and Lap(2/ε) per coordinate gives ε-label LDP.
    Soft label with a uniform prior (29): p(c | o) = softmax_c(f(o, c)/λ),
    f(o, c) = −Σ_k |o_k − [c = k]|, computed as softmax_c((|o_c| − |o_c − 1|)/λ)
    since the other terms do not depend on c.

    As a cube mechanism the statistic is the per-cube sum of the noisy one-hot
    vectors: n_lj + a sum of n_l Laplace draws per class, drawn exactly.

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).
    """

    name = "alibi"
    privacy = LABEL_LOCAL
    parameters = {"epsilon": epsilon_parameter()}
    audit_cases = audit_recipe(AUDIT, "alibi_audit")

    def __init__(self, epsilon):
        super().__init__(epsilon)
        self.scale = noise_scale(2.0, self.epsilon, "2/ε")

    def trial_needs(self, size) -> list:
        """A per-sample trial holds the N noisy one-hots (N × K float64) and their noise."""
        if not size.per_sample:
            return []
        return [Need(16.0 * float(size.N) * size.K, f"N × K = {size.N:,} × {size.K:,.0f} noisy one-hots (float64)",
                     {size.key: (size.got, float(size.N)), "distribution.K": (int(size.K), size.K)})]

    def location(self, y, K):
        """The Laplace location of each report: OneHot(y), shape (len(y), K)."""
        loc = np.zeros((len(y), require_K(K)))
        loc[np.arange(len(y)), check_classes(y, K)] = 1.0
        return loc

    def _report(self, y, rng, *, K, cells=None, n_cells=None):
        noisy = rng.laplace(0.0, self.scale, size=(len(y), K))
        return noisy + self.location(y, K)

    def aggregate(self, reports, cells, n_cells, K):
        return np.stack([np.bincount(cells, weights=reports[:, j], minlength=n_cells)
                         for j in range(K)], axis=1)

    def _sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        n = counts.sum(axis=1, keepdims=True)
        return counts + laplace_sum(np.broadcast_to(n, counts.shape), self.scale, rng)

    def soft_labels(self, noisy):
        logits = (np.abs(noisy) - np.abs(noisy - 1.0)) / self.scale
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        return weights / weights.sum(axis=1, keepdims=True)
