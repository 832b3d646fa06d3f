r"""Estimators: learn a predictor from (privatized) data.

:class:`CubeArgmax` is the paper's classifier for every classification cell:
cut [0,1]^d into G^d cubes of side h = 1/G, aggregate the mechanism's
statistic per cube (12) and release one class per cube — the argmax (13),
or the exponential mechanism for central models (17), (31).  With the
non-private pass-through it is the cube majority vote.

The estimator has two equivalent data paths:

``predict_per_sample``
    the reference: N samples, per-sample mechanism reports, aggregation;
``predict_from_counts``
    the sufficient-statistic path: draws the per-cube label counts from a
    multinomial over the relevant cubes (plus one lumped "rest" category)
    and the mechanism's statistic from them.  Its cost does not depend on N.

To add an estimator: a class with ``tasks``, ``n_cubes`` and the two
``predict_*`` methods, a YAML file under ``conf/estimator/`` and a test.
"""

from __future__ import annotations

import numpy as np

from .distributions import CellModel, cube_index
from .errors import check

__all__ = ["CubeArgmax"]


class CubeArgmax:
    """Cube classifier: argmax (or private selection) of per-cube statistics.

    Parameters
    ----------
    h_scale : float > 0
        Constant c in h = c · (bandwidth law of the cell), Theorems 2, 4, 13.
        The default configuration ties it to the distribution's constant so
        that the estimator's cubes are the construction's cubes.
    """

    name = "cube_argmax"
    tasks = ("classification",)

    def __init__(self, h_scale=1.0):
        check(np.isfinite(h_scale) and h_scale > 0, "h_scale", h_scale, "> 0")
        self.h_scale = float(h_scale)

    def n_cubes(self, cell, N, eps, beta, d) -> int:
        """G = round(1/h) with h from the cell's bandwidth law, at least 1."""
        h = cell.bandwidth(N, eps, beta, d, scale=self.h_scale)
        return max(1, int(round(1.0 / h)))

    def predict_per_sample(self, X, y, G, K, mechanism, rng):
        """Predicted class of every cube (length G^d) from N samples."""
        n_cells = G ** X.shape[1]
        cells = cube_index(X, G)
        reports = mechanism.privatize(y, rng, cells=cells, n_cells=n_cells, K=K)
        scores = mechanism.cell_sums(reports, cells, n_cells, K)
        return mechanism.select(scores, rng)

    def predict_from_counts(self, model: CellModel, N, mechanism, rng):
        """Predicted class of the relevant cubes of ``model``, exactly in law."""
        pvals = (model.mass[:, None] * model.class_probs).ravel()
        rest = max(0.0, 1.0 - pvals.sum())
        counts = rng.multinomial(int(N), np.append(pvals, rest))[:-1]
        counts = counts.reshape(model.class_probs.shape)
        scores = mechanism.sample_cell_sums(counts, int(N), rng)
        return mechanism.select(scores, rng)
