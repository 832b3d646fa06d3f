"""K-class label-LDP mechanisms of papers/002: RR, RRWithPrior (LP-2ST's stage), ALIBI.

Each is a :class:`~labeldp_sim.privacy.protocols.LocalMechanism` whose ``report``
is the one place its noise is drawn; the proofs are in the docstrings.  The audit
recipes are in :mod:`labeldp_sim.kclass.audit`.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError, check
from ..privacy.protocols import (LABEL_LOCAL, CubeSumMechanism, LocalMechanism, _check_labels, _counts,
                                 _require_K, laplace_sum)

__all__ = ["RandomizedResponse", "RRWithPrior", "ALIBI"]

# (papers/002: the baselines of the vector-approximation paper; RAPPOR above is its method)


class RandomizedResponse(CubeSumMechanism):
    r"""K-ary randomized response: keep y with probability e^ε/(e^ε+K−1), else a uniform other class.

    Privacy: every output's probability is e^ε/(e^ε+K−1) or 1/(e^ε+K−1), a ratio of at
    most e^ε between any two labels (ε-label LDP).

    As a cube mechanism the statistic is the per-cube count of each reported
    class; given n_lj it is Σ_j Multinomial(n_lj, M[j, ·]), drawn exactly.
    """

    name = "rr"
    privacy = LABEL_LOCAL

    def keep_probability(self, K):
        e = np.exp(self.epsilon)
        return e / (e + _require_K(K) - 1)

    def transition_matrix(self, K):
        """M[i, j] = P(Z = j | Y = i)."""
        K = _require_K(K)
        e = np.exp(self.epsilon)
        M = np.full((K, K), 1.0 / (e + K - 1))
        np.fill_diagonal(M, e / (e + K - 1))
        return M

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        _check_labels(y, _require_K(K))
        keep = rng.random(len(y)) < self.keep_probability(K)
        other = (y + rng.integers(1, K, size=len(y))) % K  # uniform over the K-1 other classes
        return np.where(keep, y, other)

    def aggregate(self, reports, cells, n_cells, K):
        return _counts(cells, reports, n_cells, K)

    def sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        M = self.transition_matrix(K)
        return sum(rng.multinomial(counts[:, j], M[j]) for j in range(K))


class RRWithPrior(LocalMechanism):
    r"""RRWithPrior (Ghazi et al., 2021): randomized response restricted to a top-k set.

    Given a prior p over the K classes for this sample, take the k classes with
    the largest prior, k* = argmax_k e^ε/(e^ε+k−1) · P(top k); output y with
    probability e^ε/(e^ε+k*−1) if y is in the set and each other member with
    1/(e^ε+k*−1); if y is not in the set, output a uniform member.

    Privacy: for a fixed prior (computed without this sample's label), every
    output in the set has probability in [1/(e^ε+k*−1), e^ε/(e^ε+k*−1)] whatever y
    is, and outputs outside it have probability 0 for every y: ε-label LDP.
    The prior is an argument of :meth:`report`; it must not depend on the label.
    """

    name = "rr_with_prior"
    privacy = LABEL_LOCAL

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

    def report(self, y, rng, *, K=None, cells=None, n_cells=None, prior=None):
        if prior is None:
            raise ConfigError("prior", None, "a prior per user, computed without its label")
        prior = np.asarray(prior)
        check(prior.shape[1] == _require_K(K), "K", K, f"the prior's {prior.shape[1]} classes")
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


class ALIBI(CubeSumMechanism):
    r"""ALIBI (Malek Esmaeili et al., 2021): one-hot + Lap(2/ε), Bayesian soft labels (29).

    o = OneHot(y) + W, W_k ~ Lap(λ) i.i.d., λ = 2/ε.  Privacy: two one-hot vectors
    differ by 2 in ℓ1, and Lap(2/ε) per coordinate gives ε-label LDP.
    Soft label with a uniform prior (29): p(c | o) = softmax_c(f(o, c)/λ),
    f(o, c) = −Σ_k |o_k − [c = k]|, computed as softmax_c((|o_c| − |o_c − 1|)/λ)
    since the other terms do not depend on c.

    As a cube mechanism the statistic is the per-cube sum of the noisy one-hot
    vectors: n_lj + a sum of n_l Laplace draws per class, drawn exactly.
    """

    name = "alibi"
    privacy = LABEL_LOCAL

    def __init__(self, epsilon):
        super().__init__(epsilon)
        self.scale = 2.0 / self.epsilon

    def location(self, y, K):
        """The Laplace location of each report: OneHot(y), shape (len(y), K)."""
        loc = np.zeros((len(y), _require_K(K)))
        loc[np.arange(len(y)), _check_labels(y, K)] = 1.0
        return loc

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        noisy = rng.laplace(0.0, self.scale, size=(len(y), _require_K(K)))
        return noisy + self.location(y, K)

    def aggregate(self, reports, cells, n_cells, K):
        return np.stack([np.bincount(cells, weights=reports[:, j], minlength=n_cells)
                         for j in range(K)], axis=1)

    def sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        n = counts.sum(axis=1, keepdims=True)
        return counts + laplace_sum(np.broadcast_to(n, counts.shape), self.scale, rng)

    def soft_labels(self, noisy):
        logits = (np.abs(noisy) - np.abs(noisy - 1.0)) / self.scale
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        return weights / weights.sum(axis=1, keepdims=True)
