r"""Tunings of the law-free search (SPEC §5a): their grids, and the common random numbers they share.

The search evaluates, on one drawn instance, a set of *columns*: an
estimator's tuning (its :attr:`~.estimators.Estimator.tuning`, G_est or k) under
one mechanism (the point's own, or one clip level T of the oracle grid).  The
estimator computes them all from its own data draws
(:meth:`~.estimators.Estimator.tuned_risks`); the streams it draws from are
named here, so that every tuning sees common random numbers and the law's
column its own:

* the instance stream (tag 0), which drew the instance; an estimator that
  draws one sample for every tuning continues it;
* the data stream of one tuning (tag 1, the tuning, the column's ``draw``);
* the noise stream of one tuning and mechanism (tag 2, the tuning, the
  column's ``slot``): a mechanism's noise is shared by the tunings of one data
  draw, and an estimator whose data do not depend on the tuning asks for tuning 0.

``draw`` and ``slot`` are 0 and the clip level's index on the oracle grid,
:data:`LAW_SLOT` in the law's column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeldp_sim.harness.seeds import derive_rng

__all__ = ["geometric_grid", "LAW_SLOT", "Column", "CommonDraws"]

LAW_SLOT = 1_000_000  # stream tag of the law's tuning / instance (never a grid value)


def geometric_grid(lo: float, hi: float, per_octave: int, integer: bool = True) -> np.ndarray:
    """lo · 2^(j/per_octave) up to hi (rounded and deduplicated for integers), hi included."""
    steps = int(np.floor(per_octave * np.log2(hi / lo) + 1e-9))
    values = lo * 2.0 ** (np.arange(steps + 1) / per_octave)
    if integer:
        values = np.unique(np.round(values).astype(np.int64))
        if values[-1] != int(hi):
            values = np.append(values, int(hi))
        return values
    values = np.append(values, hi) if values[-1] < hi * (1 - 1e-9) else values
    return values


@dataclass(frozen=True)
class Column:
    """One entry of a risk matrix row: the estimator at ``tuning`` under ``mechanism``.

    ``slot`` names the mechanism's noise stream, ``draw`` the data stream (see
    the module docstring); ``T`` is the clip level the row reports (None: the
    mechanism does not clip).
    """

    tuning: int
    mechanism: object
    slot: int
    draw: int
    T: float | None = None


class CommonDraws:
    """The random streams of one instance of one replicate at one grid point.

    ``n_test`` is the number of test points of a risk integral by quadrature
    (``law_free.n_test``), for estimators that integrate their risk so.
    """

    def __init__(self, seed: int, point, replicate: int, inst_tag: int, n_test: int):
        self.seed, self.words = seed, (*point.seed_words, replicate, inst_tag)
        self.n_test = n_test
        self.instance = self._rng(0)

    def _rng(self, *tags: int) -> np.random.Generator:
        return derive_rng(self.seed, *self.words, *tags)

    def data(self, tuning: int, draw: int) -> np.random.Generator:
        """The stream of the data drawn for ``tuning`` (a new generator at each call)."""
        return self._rng(1, int(tuning), draw)

    def noise(self, tuning: int, slot: int) -> np.random.Generator:
        """The stream of one mechanism's noise on the data of ``tuning`` (a new generator at each call)."""
        return self._rng(2, int(tuning), slot)
