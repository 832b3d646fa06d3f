"""The K-class label-LDP methods of papers/002, each ending in the same kNN learner.

Every method's prediction at x is the argmax of the mean, over the k nearest
training points, of a per-sample label vector: one-hot of the privatized label
(RR, LP-2ST), ALIBI's soft label (29), or the RAPPOR bit vector (vector
approximation, (12)-(13) then (16)).

ALIBI's reading: the paper's Figure 2 does not say how the learner consumes
ALIBI's output.  ``alibi`` (the default, named "ALIBI (averaged soft labels)")
averages each neighbour's Bayesian soft label; ``alibi_sampled`` draws one
label from each soft label and votes with its one-hot, the other reading.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from ..privacy.rappor import RAPPOR
from .mechanisms import ALIBI, RandomizedResponse, RRWithPrior

__all__ = ["METHODS", "LABELS", "method_scores", "max_epsilon"]

METHODS = ("rr", "lp_2st", "alibi", "alibi_sampled", "vector_approximation", "non_private")
LABELS = {"rr": "RR", "lp_2st": "LP-2ST (RRWithPrior)", "alibi": "ALIBI (averaged soft labels)",
          "alibi_sampled": "ALIBI (one label sampled per soft label)",
          "vector_approximation": "vector approximation (RAPPOR)", "non_private": "non-private"}
# the mechanisms each method releases through: their float64 limits on ε bound the method's
MECHANISMS = {"rr": (RandomizedResponse,), "lp_2st": (RandomizedResponse, RRWithPrior),
              "alibi": (ALIBI,), "alibi_sampled": (ALIBI,), "vector_approximation": (RAPPOR,),
              "non_private": ()}


def max_epsilon(methods) -> float:
    """The largest ε every method of ``methods`` can release at (``max_epsilon`` of its mechanisms)."""
    return min((mech.max_epsilon for m in methods for mech in MECHANISMS[m]), default=float("inf"))


def _one_hot(labels, K):
    out = np.zeros((len(labels), K))
    out[np.arange(len(labels)), labels] = 1.0
    return out


def _knn_vote(vectors, neighbours, rng):
    """argmax of the mean label vector over each query's neighbours, ties at random."""
    scores = vectors[neighbours].mean(axis=1)
    scores = scores + 1e-9 * rng.random(scores.shape)
    return np.argmax(scores, axis=1)


def method_scores(method, X, y, K, eps, neighbours, rng, k, split=0.5):
    """Predicted class at the queries whose training neighbours are ``neighbours`` (n_q, k).

    ``lp_2st``: the first ``split`` share of the samples (in stream order) gets RR
    labels; a kNN on them gives each remaining sample a prior (its k nearest
    stage-1 RR labels, debiased through RR's transition matrix); RRWithPrior
    privatizes the rest.  The final kNN uses every sample's privatized label.
    """
    if method == "non_private":
        return _knn_vote(_one_hot(y, K), neighbours, rng)
    if method == "rr":
        return _knn_vote(_one_hot(RandomizedResponse(eps).report(y, rng, K=K), K), neighbours, rng)
    if method == "alibi":
        mech = ALIBI(eps)
        return _knn_vote(mech.soft_labels(mech.report(y, rng, K=K)), neighbours, rng)
    if method == "alibi_sampled":
        mech = ALIBI(eps)
        soft = mech.soft_labels(mech.report(y, rng, K=K))
        sampled = (soft.cumsum(axis=1) < rng.random((len(soft), 1))).sum(axis=1).clip(max=K - 1)
        return _knn_vote(_one_hot(sampled, K), neighbours, rng)
    if method == "vector_approximation":
        return _knn_vote(RAPPOR(eps).report(y, rng, K=K).astype(float), neighbours, rng)
    if method == "lp_2st":
        n1 = max(k, int(round(split * len(y))))
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
    raise ValueError(method)
