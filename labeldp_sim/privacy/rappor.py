"""RAPPOR, eq. (11) of papers/000: the label-LDP vector mechanism both Table I and
papers/002 (its "vector approximation") use, so it sits below both paper packages."""

from __future__ import annotations

import numpy as np

from .protocols import LABEL_LOCAL, CubeSumMechanism, _check_labels, _require_K

__all__ = ["RAPPOR"]


class RAPPOR(CubeSumMechanism):
    r"""RAPPOR label vector, eq. (11): ε-label LDP.

    Each sample reports Z ∈ {0,1}^K with independent bits
    P(Z(j) = 1) = p = e^(ε/2)/(e^(ε/2)+1) if j = y, else q = 1/(e^(ε/2)+1).

    Privacy (15): changing y to y' changes the law of the two bits y and y'
    only, each by a factor at most e^(ε/2), so every output's probability
    changes by at most e^ε.  Features are untouched (label privacy only).
    K is an argument: a vector whose length followed the labels would leak them.

    Sufficient statistic: given n_lj, S_lj = Bin(n_lj, p) + Bin(n_l − n_lj, q)
    independently over (l, j), the exact law of (12).
    """

    name = "rappor"
    privacy = LABEL_LOCAL

    def __init__(self, epsilon):
        super().__init__(epsilon)
        e = np.exp(self.epsilon / 2)
        self.p, self.q = e / (e + 1), 1 / (e + 1)

    def bit_probabilities(self, y, K):
        """P(Z(j) = 1 | Y = y) for each row y, shape (len(y), K), (11)."""
        probs = np.full((len(y), _require_K(K)), self.q)
        probs[np.arange(len(y)), _check_labels(y, K)] = self.p
        return probs

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        probs = self.bit_probabilities(y, K)
        return rng.random(probs.shape) < probs

    def aggregate(self, reports, cells, n_cells, K):
        return np.stack([np.bincount(cells, weights=reports[:, j], minlength=n_cells)
                         for j in range(K)], axis=1).astype(np.int64)

    def sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        n_cell = counts.sum(axis=1, keepdims=True)
        return rng.binomial(counts, self.p) + rng.binomial(n_cell - counts, self.q)
