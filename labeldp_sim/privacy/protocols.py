r"""Privacy protocols shared by every paper package: what a mechanism states and what it must implement.

Every mechanism states its ε, what it protects (:class:`Privacy`) and the tasks it
fits, and belongs to exactly one protocol.  Each protocol's privacy-relevant
methods are abstract, so a half-written mechanism cannot be instantiated, and
clipping and noise happen in one method per mechanism:

:class:`LocalMechanism` — ``report(y, rng, *, K, cells, n_cells)``
    maps each user's record to its report; the only place a local mechanism
    clips or adds noise.  Everything after it is post-processing.

:class:`CubeSumMechanism` (local) — what a cube estimator aggregates:
    ``aggregate(reports, cells, n_cells, K)``: the per-cube statistic (12), a sum
    of reports; ``sample_aggregate(data, N, rng, K)``: the same statistic drawn
    exactly in law from the per-cube label counts (the mechanism's own
    sufficient-statistic sampler, SPEC §4); ``collect``: reports of the samples
    in chunks, aggregated as they are drawn.

:class:`NoisyLabel` (local) — one number per user, which a kNN averages.

:class:`CentralMechanism` — ``release(data, rng, N, h, d)``
    maps the data set, given as a :class:`CubeData` (the samples, or their
    per-cube label counts: both paths run this same code), to the released
    per-cube output, clipping and noise included.

:class:`NoPrivacy` is explicit: its report is the label (a read-only view).  K is always
an argument for classification mechanisms, never inferred from the labels.

User-level protocols (papers/003) live with their paper in
:mod:`labeldp_sim.userlevel.mechanisms`, on top of :class:`Privacy` and :func:`laplace_sum`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError, check, is_int

__all__ = ["Privacy", "NONE", "LABEL_LOCAL", "LABEL_CENTRAL", "FULL_LOCAL", "FULL_CENTRAL", "USER_LOCAL",
           "Mechanism", "LocalMechanism", "CubeSumMechanism", "NoisyLabel", "CentralMechanism", "CubeData",
           "NoPrivacy", "argmax_random_ties", "laplace_sum"]


@dataclass(frozen=True)
class Privacy:
    """What a mechanism guarantees.

    Attributes
    ----------
    model : {"none", "local", "central"}
    protects : {"nothing", "label", "features+label", "user data set"}
    """

    model: str
    protects: str

    def __str__(self) -> str:
        if self.model == "none":
            return "none"
        return f"{self.protects}/{self.model}"


NONE = Privacy("none", "nothing")
LABEL_LOCAL = Privacy("local", "label")
LABEL_CENTRAL = Privacy("central", "label")
FULL_LOCAL = Privacy("local", "features+label")
FULL_CENTRAL = Privacy("central", "features+label")
USER_LOCAL = Privacy("local", "user data set")  # papers/003, Definition 1: all m samples of a user


def argmax_random_ties(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax of integer scores, ties broken uniformly at random (13)."""
    return np.argmax(scores + 0.5 * rng.random(scores.shape), axis=1)


def _check_labels(y, K):
    """Classes must lie in 0..K−1: an index outside would be counted in another cube or bit."""
    if len(y) and (np.min(y) < 0 or np.max(y) >= K):
        raise ValueError(f"labels must lie in 0..{K - 1}; got {np.min(y)}..{np.max(y)}")
    return y


def _counts(cells, y, n_cells, K):
    """n_lj = #{i: X_i ∈ B_l, Y_i = j}, shape (n_cells, K)."""
    pair = np.multiply(cells, K, dtype=np.int64)  # the (cube, label) pair, in place: N can be 10^7
    pair += _check_labels(y, K)
    return np.bincount(pair, minlength=n_cells * K).reshape(n_cells, K)


def laplace_sum(n, scale, rng):
    """Σ of n i.i.d. Lap(scale), exactly in law: scale·(Gamma(n, 1) − Gamma(n, 1))."""
    n = np.asarray(n, dtype=float)
    return scale * (rng.gamma(n) - rng.gamma(n))


def _require_K(K):
    """K from the caller: a report whose length depended on the data would leak it."""
    if not is_int(K) or K < 2:
        raise ConfigError("K", K, "the number of classes (an integer >= 2), given, never inferred")
    return int(K)


class CubeData:
    """The data a cube estimator sees, on either path: the samples or their per-cube counts.

    ``from_samples(cells, y, n_cells)`` keeps each sample's cube and label;
    ``from_counts(counts, values)`` keeps the number of samples of each label
    value per cube (shape (n_cells, len(values))), as the sufficient-statistic
    path draws them.  Both answer the same questions, so a mechanism's release
    runs the same code on both paths.
    """

    def __init__(self, n_cells, cells=None, y=None, counts=None, values=None):
        self.n_cells = int(n_cells)
        self.cells, self.y, self.counts, self.values = cells, y, counts, values

    @classmethod
    def from_samples(cls, cells, y, n_cells):
        return cls(n_cells, cells=np.asarray(cells), y=np.asarray(y))

    @classmethod
    def from_counts(cls, counts, values):
        counts = np.asarray(counts)
        return cls(counts.shape[0], counts=counts, values=np.asarray(values, dtype=float))

    def n(self) -> np.ndarray:
        """Samples per cube, n_l."""
        if self.counts is not None:
            return self.counts.sum(axis=1).astype(float)
        return np.bincount(self.cells, minlength=self.n_cells).astype(float)

    def label_counts(self, K) -> np.ndarray:
        """n_lj for classes 0..K−1, shape (n_cells, K)."""
        K = _require_K(K)
        if self.counts is not None:
            check(self.counts.shape[1] == K, "K", K, f"the {self.counts.shape[1]} label values counted")
            return self.counts
        return _counts(self.cells, self.y, self.n_cells, K)

    def clipped_sums(self, T) -> np.ndarray:
        """Σ_{X_i ∈ B_l} Clip(Y_i, T) per cube; T = None sums the labels as they are."""
        if self.counts is not None:
            values = self.values if T is None else np.clip(self.values, -T, T)
            return self.counts @ values
        y = self.y if T is None else np.clip(self.y, -T, T)
        return np.bincount(self.cells, weights=y, minlength=self.n_cells)


class Mechanism(ABC):
    """What every mechanism states: its ε, what it protects, the tasks it fits.

    Attributes
    ----------
    name : str
    privacy : Privacy
    tasks : tuple of str
    epsilon : float (None only for :class:`NoPrivacy`)
    """

    name: str = ""
    privacy: Privacy
    tasks: tuple = ("classification",)
    T = None  # clipping level of mechanisms that clip

    def __init__(self, epsilon):
        check(epsilon is not None and np.isfinite(epsilon) and epsilon > 0, "epsilon", epsilon, "> 0")
        self.epsilon = float(epsilon)

    def __repr__(self):
        return f"{type(self).__name__}(epsilon={self.epsilon})"


class LocalMechanism(Mechanism):
    """A mechanism applied by each user to its own record before anything is collected."""

    @abstractmethod
    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        """The reports of the users whose labels are ``y`` (and cubes ``cells``), one row per user."""


class CubeSumMechanism(LocalMechanism):
    """A local mechanism whose reports a cube estimator sums per cube.

    The statistic is a per-cube score matrix (n_cells, K) for classification,
    and the pair (n, S) of per-cube counts and sums for regression.
    """

    chunk = None  # users per block in collect: None = all at once

    @abstractmethod
    def aggregate(self, reports, cells, n_cells, K):
        """The per-cube statistic of a block of reports (post-processing)."""

    @abstractmethod
    def sample_aggregate(self, data: CubeData, N, rng, K=None):
        """The per-cube statistic drawn exactly in law from ``data``'s per-cube label counts."""

    def collect(self, y, rng, *, K=None, cells=None, n_cells=None):
        """``aggregate`` of every user's ``report``, in blocks of ``chunk`` users."""
        step = len(y) if not self.chunk else self.chunk
        total = None
        for start in range(0, max(len(y), 1), max(step, 1)):
            block = slice(start, start + step)
            stat = self.aggregate(self.report(y[block], rng, K=K, cells=cells[block], n_cells=n_cells),
                                  cells[block], n_cells, K)
            total = stat if total is None else _add(total, stat)
        return total

    def estimate(self, n, S, N, h, d):
        """Regression: the per-cube estimate S_l/n_l (0 on empty cubes), post-processing."""
        return np.divide(S, n, out=np.zeros_like(S, dtype=float), where=n > 0)


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b)) if isinstance(a, tuple) else a + b


class NoisyLabel(LocalMechanism):
    """A local mechanism whose report is one number per user (a kNN averages them)."""


class CentralMechanism(Mechanism):
    """A mechanism run by a curator on the whole data set."""

    @abstractmethod
    def release(self, data: CubeData, rng, N, h, d, K=None):
        """The released per-cube output (classes or estimates), clipping and noise included."""


# --------------------------------------------------------------------------- no privacy


class NoPrivacy(CubeSumMechanism, NoisyLabel):
    """No privacy: every estimator sees the labels (majority vote or mean per cube, kNN mean)."""

    name = "none"
    privacy = NONE
    tasks = ("classification", "regression")

    def __init__(self, epsilon=None):
        self.epsilon = None  # a budget, if the grid gives one, is not spent

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        report = np.asarray(y).view()  # no copy of N labels, and no way to change them through it
        report.flags.writeable = False
        return report

    def aggregate(self, reports, cells, n_cells, K):
        if K is None:  # regression: counts and sums of the labels
            return (np.bincount(cells, minlength=n_cells).astype(float),
                    np.bincount(cells, weights=reports, minlength=n_cells))
        return _counts(cells, reports, n_cells, _require_K(K))

    def sample_aggregate(self, data, N, rng, K=None):
        if K is None:
            return data.n(), data.clipped_sums(None)
        return data.label_counts(K)


