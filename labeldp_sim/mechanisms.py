r"""Privacy mechanisms.

A mechanism states its ε and what it protects (:class:`~labeldp_sim.theory.Privacy`)
and provides, for the cube estimators, three things:

``privatize(y, rng, cells, n_cells)``
    the per-sample reports (local mechanisms act on one sample at a time;
    non-private and central mechanisms pass the data through);
``cell_sums(reports, cells, n_cells, K)``
    the per-cube statistic S_lj the estimator aggregates, (12);
``sample_cell_sums(counts, N, rng)``
    the same statistic drawn exactly in distribution from the per-cube label
    counts n_lj alone (the sufficient-statistic path, SPEC §4);
``select(scores, rng)``
    the class released per cube: argmax with uniform tie-breaking (13), or the
    exponential mechanism for central models (17), (31).

To add a mechanism: subclass :class:`Mechanism`, add ``conf/mechanism/<name>.yaml``
with its ``_target_`` and a test in ``tests/test_mechanisms.py``.
"""

from __future__ import annotations

import numpy as np

from .errors import check
from .theory import FULL_CENTRAL, FULL_LOCAL, LABEL_CENTRAL, LABEL_LOCAL, NONE, Privacy

__all__ = ["Mechanism", "NoPrivacy", "RAPPOR", "JointRAPPOR", "ExponentialMechanism",
           "argmax_random_ties"]


def argmax_random_ties(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax of integer scores, ties broken uniformly at random."""
    return np.argmax(scores + 0.5 * rng.random(scores.shape), axis=1)


def _counts(cells, y, n_cells, K):
    """n_lj = #{i: X_i ∈ B_l, Y_i = j}, shape (n_cells, K)."""
    return np.bincount(cells * K + y, minlength=n_cells * K).reshape(n_cells, K)


class Mechanism:
    """Base class: the non-private pass-through behaviour.

    Attributes
    ----------
    name : str
    privacy : Privacy
    tasks : tuple of str
        Tasks this mechanism fits.
    epsilon : float or None
    """

    name = "base"
    privacy: Privacy = NONE
    tasks: tuple = ("classification",)

    def __init__(self, epsilon=None):
        if epsilon is not None:
            check(np.isfinite(epsilon) and epsilon > 0, "epsilon", epsilon, "> 0")
            epsilon = float(epsilon)
        self.epsilon = epsilon

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        return y

    def cell_sums(self, reports, cells, n_cells, K):
        return _counts(cells, reports, n_cells, K)

    def sample_cell_sums(self, counts, N, rng):
        return counts

    def select(self, scores, rng):
        return argmax_random_ties(scores, rng)

    def __repr__(self):
        return f"{type(self).__name__}(epsilon={self.epsilon})"


class NoPrivacy(Mechanism):
    """No privacy: the estimator sees the labels (majority vote per cube)."""

    name = "none"
    privacy = NONE


class RAPPOR(Mechanism):
    r"""RAPPOR label vector, eq. (11): ε-label LDP.

    Each sample reports Z ∈ {0,1}^K with independent bits
    P(Z(j) = 1) = p = e^(ε/2)/(e^(ε/2)+1) if j = y, else q = 1/(e^(ε/2)+1).

    Privacy (15): changing y to y' changes the law of the two bits y and y'
    only, each by a factor at most e^(ε/2), so every output's probability
    changes by at most e^ε.  Features are untouched (label privacy only).

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
        probs = np.full((len(y), K), self.q)
        probs[np.arange(len(y)), y] = self.p
        return probs

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        K = int(y.max()) + 1 if K is None else K
        return rng.random((len(y), K)) < self.bit_probabilities(y, K)

    def cell_sums(self, reports, cells, n_cells, K):
        return np.stack([np.bincount(cells, weights=reports[:, j], minlength=n_cells)
                         for j in range(K)], axis=1).astype(np.int64)

    def sample_cell_sums(self, counts, N, rng):
        n_cell = counts.sum(axis=1, keepdims=True)
        return rng.binomial(counts, self.p) + rng.binomial(n_cell - counts, self.q)


class JointRAPPOR(Mechanism):
    r"""RAPPOR on the joint one-hot of (cube, label): ε-LDP for features and label.

    The report is a bit vector over all C·K (cube, class) pairs, with
    P(bit = 1) = p = e^(ε/2)/(e^(ε/2)+1) at the sample's own pair and
    q = 1/(e^(ε/2)+1) elsewhere.

    Privacy: two inputs (x, y), (x', y') map to one-hot vectors that differ in
    at most two positions; as in (15) each changes the output's probability by
    a factor at most e^(ε/2), so the ratio is at most e^ε for any change of
    features and label.

    The estimator sums reports per pair, S_lj = Σ_i Z_i(l, j): every user
    adds noise to every cube, so the noise per cube is ~ √N/ε.  Debiasing
    (S − Nq)/(p − q) is affine with the same offset in every pair, so the
    cube argmax is unchanged by it.

    Sufficient statistic: S_lj = Bin(n_lj, p) + Bin(N − n_lj, q).
    """

    name = "joint_rappor"
    privacy = FULL_LOCAL

    def __init__(self, epsilon, chunk=4096):
        super().__init__(epsilon)
        e = np.exp(self.epsilon / 2)
        self.p, self.q = e / (e + 1), 1 / (e + 1)
        self.chunk = int(chunk)

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        """Per-sample reports, summed on the fly (N × C·K bits never held at once)."""
        K = int(y.max()) + 1 if K is None else K
        width = n_cells * K
        total = np.zeros(width, dtype=np.int64)
        for start in range(0, len(y), self.chunk):
            stop = min(start + self.chunk, len(y))
            probs = np.full((stop - start, width), self.q)
            probs[np.arange(stop - start), cells[start:stop] * K + y[start:stop]] = self.p
            total += (rng.random(probs.shape) < probs).sum(axis=0)
        return total

    def cell_sums(self, reports, cells, n_cells, K):
        return reports.reshape(n_cells, K)

    def sample_cell_sums(self, counts, N, rng):
        return rng.binomial(counts, self.p) + rng.binomial(N - counts, self.q)


class ExponentialMechanism(Mechanism):
    r"""Exponential mechanism per cube, (17) and (31): ε-label CDP or ε-DP.

    P(c_l = j) ∝ exp(ε' n_lj) with ε' = ε/2 for label privacy (17) and
    ε' = ε/4 for features and label (31).

    Privacy.  Label CDP: changing one label changes the counts n_l· of one
    cube only, each by at most 1 (sensitivity 1), and the exponential
    mechanism with weights exp(ε u/2) is ε-DP for a score of sensitivity 1
    [68].  Full DP: replacing one sample (x, y) can change two cubes' counts;
    each cube's release is (ε/2)-DP by the same argument with ε/4, and the
    two compose to ε (Theorem 13).  The other cubes' releases do not change.

    Sampling uses the Gumbel-max trick: argmax_j(ε' n_lj + Gumbel) has exactly
    the law (17).
    """

    name = "exponential"

    def __init__(self, epsilon, protection="label"):
        super().__init__(epsilon)
        check(protection in ("label", "features+label"), "protection", protection,
              ["label", "features+label"])
        self.protection = protection
        self.privacy = LABEL_CENTRAL if protection == "label" else FULL_CENTRAL
        self.weight = self.epsilon / (2.0 if protection == "label" else 4.0)

    def selection_probabilities(self, scores):
        """The law (17)/(31) of the released class per cube, shape like scores."""
        z = self.weight * (scores - scores.max(axis=1, keepdims=True))
        w = np.exp(z)
        return w / w.sum(axis=1, keepdims=True)

    def select(self, scores, rng):
        return np.argmax(self.weight * scores + rng.gumbel(size=scores.shape), axis=1)

    def __repr__(self):
        return f"ExponentialMechanism(epsilon={self.epsilon}, protection={self.protection!r})"
