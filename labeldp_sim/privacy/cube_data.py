"""The data a cube mechanism reads, and the moments of what it releases.

:class:`CubeData` is what every central release and sufficient-statistic sampler takes: the samples (each
one's cube and label) or their per-cube label counts, checked when it is built — the boundary of those
mechanisms (:mod:`labeldp_sim.privacy.protocols`).  :class:`CubeMeanMoments` is what a mechanism states
about its released cube means for the exact risks (SPEC §5a).  Both are re-exported by
:mod:`labeldp_sim.privacy.protocols`, where the mechanisms of every paper import them from.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from labeldp_sim.harness.errors import ConfigError, check
from labeldp_sim.privacy.checks import (check_cells, check_classes, check_finite, check_n_cells, check_reals,
                                        checked_array, describe, refuse_first, require_K)

__all__ = ["CubeData", "CubeMeanMoments", "mean_of_n_labels", "cube_label_counts"]


class CubeMeanMoments(NamedTuple):
    r"""The first two moments of a released cube mean, given the cube's count law (exact risks, SPEC §5a).

    With c(Y) the mechanism's clipped label (``T``; None: no clip) and n the cube's sample count,

        E[η̂]  = a · E[c(Y)],
        E[η̂²] = b2 · E[c(Y)]² + b1 · E[c(Y)²] + b0,

    the expectations over n, the labels given n (i.i.d. given the cube) and the mechanism's noise.  A
    mechanism states its own (``cube_mean_moments``), from the same clip level and noise scale its release
    uses.
    """

    T: float | None
    a: float
    b2: float
    b1: float
    b0: float


def mean_of_n_labels(counts, noise_variance: float = 0.0, T=None) -> CubeMeanMoments:
    """S/n on occupied cubes (0 on empty ones), S a sum of n clipped labels plus noise of variance
    ``noise_variance`` per label: E[S²|n] = n E c² + n(n−1) (E c)² + n·noise."""
    P, inv = counts.p_occupied, counts.inverse
    return CubeMeanMoments(T, P, P - inv, inv, noise_variance * inv)


def cube_label_counts(cells, y, n_cells, K):
    """n_lj = #{i: X_i ∈ B_l, Y_i = j}, shape (n_cells, K)."""
    pair = np.multiply(cells, K, dtype=np.int64)  # the (cube, label) pair, in place: N can be 10^7
    pair += check_classes(y, K)
    return np.bincount(pair, minlength=n_cells * K).reshape(n_cells, K)


def _check_counts(counts, values):
    """Per-cube counts of each label value: whole numbers ≥ 0, shape (n_cells, len(values))."""
    allowed = "per-cube counts of each label value: whole numbers >= 0, shape (n_cells, values)"
    counts = checked_array(counts, "counts", allowed)
    if counts.ndim != 2 or (counts.size and counts.dtype.kind not in "iuf"):
        raise ConfigError("counts", describe(counts), allowed)
    if counts.size and counts.dtype.kind == "f":
        whole = np.isfinite(counts)
        whole[whole] = counts[whole] == np.floor(counts[whole])
        if not whole.all():
            refuse_first("counts", counts, ~whole, allowed)
    if counts.size and counts.min() < 0:
        refuse_first("counts", counts, counts < 0, allowed)
    values_allowed = f"finite label values, one per column of counts ({counts.shape[1]})"
    values = np.asarray(checked_array(values, "values", values_allowed), dtype=float)
    check(values.shape == (counts.shape[1],), "values", describe(values), values_allowed)
    return counts, check_finite(values, "values", values_allowed)


class CubeData:
    """The data a cube estimator sees, on either path: the samples or their per-cube counts.

    ``from_samples(cells, y, n_cells)`` keeps each sample's cube and label; ``from_counts(counts, values)``
    keeps the number of samples of each label value per cube (shape (n_cells, len(values))), as the
    sufficient-statistic path draws them.  Both answer the same questions, so a mechanism's release runs the
    same code on both paths.

    The arrays are checked when the object is built — the boundary of every central mechanism and sampler:
    cube indices in 0..n_cells−1, finite labels (classes are checked against K when counted), whole counts
    ≥ 0, finite label values.  A refusal is one :class:`ConfigError` line naming the array.

    Parameters
    ----------
    n_cells : int
        The number of cubes (the rows of ``counts`` when they are given).
    cells, y : array of shape (n,), optional
        Each sample's cube, in 0..n_cells−1, and its finite label: the samples path.
    counts, values : arrays of shape (n_cells, len(values)) and (len(values),), optional
        The samples of each finite label value per cube: the sufficient-statistic path.

    Examples
    --------
    >>> CubeData.from_samples([0, 0, 1, 1, 1], [0, 1, 1, 1, 0], n_cells=2).label_counts(2).tolist()
    [[1, 1], [1, 2]]
    >>> CubeData.from_counts(np.array([[1, 1], [1, 2]]), [0.0, 1.0]).clipped_sums(0.5)
    array([0.5, 1. ])
    """

    def __init__(self, n_cells, cells=None, y=None, counts=None, values=None):
        if counts is not None:
            counts, values = _check_counts(counts, values)
            n_cells = counts.shape[0]
        self.n_cells = check_n_cells(n_cells, low=0)
        if counts is None:
            y = check_reals(y)
            cells = check_cells(cells, self.n_cells, len(y))
        self.cells, self.y, self.counts, self.values = cells, y, counts, values

    @classmethod
    def from_samples(cls, cells, y, n_cells):
        return cls(n_cells, cells=cells, y=y)

    @classmethod
    def from_counts(cls, counts, values):
        return cls(None, counts=counts, values=values)

    def n(self) -> np.ndarray:
        """Samples per cube, n_l."""
        if self.counts is not None:
            return self.counts.sum(axis=1).astype(float)
        return np.bincount(self.cells, minlength=self.n_cells).astype(float)

    def label_counts(self, K) -> np.ndarray:
        """n_lj for classes 0..K−1, shape (n_cells, K)."""
        K = require_K(K)
        if self.counts is not None:
            check(self.counts.shape[1] == K, "K", K, f"the {self.counts.shape[1]} label values counted")
            return self.counts
        return cube_label_counts(self.cells, self.y, self.n_cells, K)

    def clipped_sums(self, T) -> np.ndarray:
        """Σ_{X_i ∈ B_l} Clip(Y_i, T) per cube; T = None sums the labels as they are."""
        if self.counts is not None:
            values = self.values if T is None else np.clip(self.values, -T, T)
            return self.counts @ values
        y = self.y if T is None else np.clip(self.y, -T, T)
        return np.bincount(self.cells, weights=y, minlength=self.n_cells)
