"""The K-class label-LDP methods of papers/002, each ending in the same kNN learner.

Every method's prediction at x is the argmax of the mean, over the k nearest
training points, of a per-sample label vector: one-hot of the privatized label
(RR, LP-2ST), ALIBI's soft label (29), or the RAPPOR bit vector (vector
approximation, (12)-(13) then (16)).

Each method is a :class:`~labeldp_sim.harness.components.Component` of group
``kclass.method`` whose ``name`` is the one the YAML lists (``kclass.methods:
[rr, alibi]``); :func:`method_classes` finds them.  A new method is a class here (or in
a module the package imports) with a ``name``, a ``label``, the mechanisms it
releases through and a ``predict``.

ALIBI's reading: the paper's Figure 2 does not say how the learner consumes
ALIBI's output.  ``alibi`` (the default, named "ALIBI (averaged soft labels)")
averages each neighbour's Bayesian soft label; ``alibi_sampled`` draws one
label from each soft label and votes with its one-hot, the other reading.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
from scipy.spatial import cKDTree

from labeldp_sim.harness.components import Component, Interval, by_name
from labeldp_sim.privacy.rappor import RAPPOR
from labeldp_sim.papers.kclass.mechanisms import ALIBI, RandomizedResponse, RRWithPrior

__all__ = ["GROUP", "KClassMethod", "method_classes", "method", "method_scores", "max_epsilon"]

GROUP = "kclass.method"
# ε and LP-2ST's split are validated by the experiment's keys (kclass.eps, kclass.split)
_EPSILON = Interval(float, 0, None, closed="neither")
_SPLIT = Interval(float, 0, 1, closed="neither")


def _one_hot(labels, K):
    out = np.zeros((len(labels), K))
    out[np.arange(len(labels)), labels] = 1.0
    return out


def _knn_vote(vectors, neighbours, rng):
    """argmax of the mean label vector over each query's neighbours, ties at random."""
    scores = vectors[neighbours].mean(axis=1)
    scores = scores + 1e-9 * rng.random(scores.shape)
    return np.argmax(scores, axis=1)


class KClassMethod(Component, ABC):
    """One ε-label-LDP method (or the non-private reference) ending in the kNN vote.

    Attributes
    ----------
    name : str
        Its name in ``kclass.methods`` / ``digits.methods`` and in the ``method`` column.
    label : str
        Its name in tables and legends.
    mechanisms : tuple of classes
        The mechanisms it releases through: their float64 limits on ε bound the method's.
    staged : bool
        Whether it spends the first ``split`` share of the samples on a first stage (LP-2ST):
        the experiment then checks that both stages are large enough.
    """

    group: ClassVar[str] = GROUP
    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    mechanisms: ClassVar[tuple] = ()
    staged: ClassVar[bool] = False
    parameters: ClassVar[dict] = {"eps": _EPSILON}

    def __init__(self, eps: float):
        self.eps = eps

    @classmethod
    def max_epsilon(cls) -> float:
        """The largest ε the method can release at (the least ``max_epsilon`` of its mechanisms)."""
        return min((mech.max_epsilon for mech in cls.mechanisms), default=float("inf"))

    @abstractmethod
    def predict(self, X, y, K, neighbours, rng, k):
        """Predicted class at the queries whose training neighbours are ``neighbours`` (n_q, k).

        ``X``, ``y``: the training features and labels (in stream order), ``K`` classes, ``rng``
        the method's own stream, ``k`` the kNN's neighbours.
        """


class RRMethod(KClassMethod):
    name, label = "rr", "RR"
    mechanisms = (RandomizedResponse,)

    def predict(self, X, y, K, neighbours, rng, k):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return _knn_vote(_one_hot(RandomizedResponse(self.eps).report(y, rng, K=K), K), neighbours, rng)


class LP2STMethod(KClassMethod):
    """LP-2ST: the first ``split`` share of the samples (in stream order) gets RR labels; a kNN on
    them gives each remaining sample a prior (its k nearest stage-1 RR labels, debiased through
    RR's transition matrix); RRWithPrior privatizes the rest.  The final kNN uses every sample's
    privatized label."""

    name, label = "lp_2st", "LP-2ST (RRWithPrior)"
    mechanisms = (RandomizedResponse, RRWithPrior)
    staged = True
    parameters: ClassVar[dict] = {"eps": _EPSILON, "split": _SPLIT}

    def __init__(self, eps: float, split: float = 0.5):
        super().__init__(eps)
        self.split = split

    def predict(self, X, y, K, neighbours, rng, k):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        eps = self.eps
        n1 = max(k, int(round(self.split * len(y))))
        rr = RandomizedResponse(eps)
        z1 = rr.report(y[:n1], rng, K=K)
        _, idx = cKDTree(X[:n1]).query(X[n1:], k=min(k, n1))
        freq = _one_hot(z1, K)[idx.reshape(len(idx), -1)].mean(axis=1)
        e = np.exp(eps)
        keep, other = e / (e + K - 1), 1 / (e + K - 1)
        prior = np.clip((freq - other) / (keep - other), 0, None) + 1e-12
        prior /= prior.sum(axis=1, keepdims=True)
        z2 = RRWithPrior(eps).report(y[n1:], rng, K=K, prior=prior)
        return _knn_vote(_one_hot(np.concatenate([z1, z2]), K), neighbours, rng)


class AlibiMethod(KClassMethod):
    """Each neighbour's Bayesian soft label (29), averaged."""

    name, label = "alibi", "ALIBI (averaged soft labels)"
    mechanisms = (ALIBI,)

    def predict(self, X, y, K, neighbours, rng, k):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        mech = ALIBI(self.eps)
        return _knn_vote(mech.soft_labels(mech.report(y, rng, K=K)), neighbours, rng)


class AlibiSampledMethod(KClassMethod):
    """One label drawn from each soft label; the kNN votes with its one-hot."""

    name, label = "alibi_sampled", "ALIBI (one label sampled per soft label)"
    mechanisms = (ALIBI,)

    def predict(self, X, y, K, neighbours, rng, k):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        mech = ALIBI(self.eps)
        soft = mech.soft_labels(mech.report(y, rng, K=K))
        sampled = (soft.cumsum(axis=1) < rng.random((len(soft), 1))).sum(axis=1).clip(max=K - 1)
        return _knn_vote(_one_hot(sampled, K), neighbours, rng)


class VectorApproximationMethod(KClassMethod):
    """papers/002's method: the RAPPOR bit vector of each label, averaged."""

    name, label = "vector_approximation", "vector approximation (RAPPOR)"
    mechanisms = (RAPPOR,)

    def predict(self, X, y, K, neighbours, rng, k):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return _knn_vote(RAPPOR(self.eps).report(y, rng, K=K).astype(float), neighbours, rng)


class NonPrivateMethod(KClassMethod):
    name, label = "non_private", "non-private"
    parameters: ClassVar[dict] = {}

    def __init__(self):  # it releases nothing: no ε
        self.eps = None

    def predict(self, X, y, K, neighbours, rng, k):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return _knn_vote(_one_hot(y, K), neighbours, rng)


def method_classes() -> dict:
    """name -> class of every registered K-class method, in definition order."""
    return by_name(GROUP)


def method(name: str, eps: float, split: float = 0.5) -> KClassMethod:
    """The method ``name`` at ε = ``eps`` (LP-2ST's first stage: the ``split`` share of the samples);
    each class takes the arguments it declares."""
    cls = method_classes()[name]
    given = {"eps": eps, "split": split}
    return cls(**{key: given[key] for key in cls.parameters})


def method_scores(name, X, y, K, eps, neighbours, rng, k, split=0.5):
    """Predicted class of method ``name`` at the queries whose training neighbours are ``neighbours``."""
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    return method(name, eps, split).predict(X, y, K, neighbours, rng, k)


def max_epsilon(names) -> float:
    """The largest ε every method of ``names`` can release at."""
    table = method_classes()
    return min((table[name].max_epsilon() for name in names), default=float("inf"))
