"""The estimator contract of Table I (:class:`Estimator`) and the bandwidth-tuned base of the
cube and kNN estimators (:class:`BandwidthTuned`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from typing import ClassVar

import numpy as np

from labeldp_sim.harness.components import Component, Interval
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.table1.tuning import geometric_grid

__all__ = ["Estimator", "BandwidthTuned", "draw_cell_counts"]


def draw_cell_counts(mass, probs, N, rng):
    """Per-cube counts of each label category, exactly in law.

    One multinomial over (cube, category) pairs with probabilities mass_r · probs_rc,
    plus a lumped "rest" category for the cubes left out; shape like ``probs``.
    """
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    pvals = (mass[:, None] * probs).ravel()
    counts = rng.multinomial(int(N), np.append(pvals, max(0.0, 1.0 - pvals.sum())))[:-1]
    return counts.reshape(probs.shape)


class Estimator(Component, ABC):
    """What every Table I estimator states: its trials, its tuning, and its risk over tunings.

    A :class:`~labeldp_sim.harness.components.Component`: a trial
    (:meth:`trial`) runs it at the point's own tuning; the law-tied mode tunes
    it by the cell's bandwidth law (:meth:`tune`); the law-free mode searches
    the oracle grid :meth:`tuning_grid` and scores every tuning on one drawn
    instance (:meth:`tuned_risks`), or in expectation where a closed form
    exists (:meth:`exact_for`, :meth:`expected_risks`).  This base takes no
    parameters; :class:`BandwidthTuned` takes ``h_scale``.

    Attributes
    ----------
    name, tasks, accepts, supports_sufficient
        The option name, the tasks it learns, the mechanism protocols it takes
        and whether it has a sufficient-statistic path.
    tuning : str
        The :class:`~.points.Point` field (and ``minimax_trials`` column) of its
        tuning parameter: ``G_est`` (cubes per axis) or ``k`` (neighbours).
    tuned_risks_samples : bool
        Whether :meth:`tuned_risks` draws the N samples themselves (its memory
        and its N are then bounded as per-sample trials are).
    tuned_risks_dims : tuple of int or None
        The dimensions :meth:`tuned_risks` handles (None: every d).

    Examples
    --------
    The cube classifier, its oracle grid of cube counts, and one trial on a
    Hölder bump instance under RAPPOR:

    >>> from labeldp_sim.papers.table1.estimators.cube import CubeArgmax
    >>> from labeldp_sim.papers.table1.families.classification import HolderBump
    >>> from labeldp_sim.papers.table1.points import Point
    >>> from labeldp_sim.privacy.rappor import RAPPOR
    >>> estimator = CubeArgmax(h_scale=1.0)
    >>> estimator.tasks, estimator.tuning
    (('classification',), 'G_est')
    >>> estimator.tuning_grid(1000, 16, 1)
    array([ 1,  2,  4,  8, 16])
    >>> point = Point(experiment="demo", axis="N", d=1, N=1000, eps=1.0, N_requested=1000,
    ...               eps_requested=1.0, G=8, h=1 / 8, in_regime=True, G_est=8)
    >>> instance = HolderBump(d=1).draw(0, G=8)
    >>> result = estimator.trial(instance, point, RAPPOR(1.0), 0, "per_sample")
    >>> sorted(result)
    ['excess_risk', 'regret_fraction']
    >>> bool(result["excess_risk"] >= 0)
    True
    """

    tasks: ClassVar[tuple] = ()
    accepts: ClassVar[tuple] = ()
    tuning: ClassVar[str] = "G_est"
    supports_sufficient: ClassVar[bool] = False
    tuned_risks_samples: ClassVar[bool] = False
    tuned_risks_dims: ClassVar[tuple | None] = None

    @abstractmethod
    def trial(self, instance, point, mechanism, rng, path) -> dict:
        """One Monte-Carlo trial at the point's own tuning: ``excess_risk`` and ``regret_fraction``."""

    @abstractmethod
    def tune(self, point, cell, distribution):
        """``point`` with the tuning the cell's bandwidth law gives at its N and ε (law-tied runs)."""

    @abstractmethod
    def tuning_grid(self, N: int, G_cap: int, per_octave: int) -> np.ndarray:
        """The oracle grid of :attr:`tuning` the law-free search tries at N samples.

        ``G_cap`` is the finest cube count the search allows there (data and
        ``law_free.G_max``); no exponent of the theory enters the grid.
        """

    def instance_grid(self, G_cap: int, per_octave: int) -> np.ndarray:
        """The instance cube counts G_inst the law-free search tries: 1 … ``G_cap``, ``per_octave`` per factor 2.

        The worst case is taken over these instances; an estimator whose exact risk costs far
        more at some cube counts than at their neighbours may move the grid's values off them.
        """
        return geometric_grid(1, G_cap, per_octave)

    @abstractmethod
    def log_bandwidth(self, log_tuning, N: int, d: int):
        """log h of the cube side (or neighbourhood) a tuning amounts to at N samples in d dimensions."""

    @abstractmethod
    def grid_capped(self, top, N: int) -> bool:
        """Whether ``top``, the largest tuning of a grid, is a cap rather than the end of what exists."""

    def tuning_at(self, point) -> int:
        """The point's value of :attr:`tuning`: its cube count G_est (kNN: its k)."""
        return point.G_est

    def trivial_tuning(self, value, N: int) -> bool:
        """Whether the tuning ``value`` is the trivial estimator at N samples (one global average):
        a law-free point whose oracle picks it has not left the pre-asymptotic range.  The
        default: no tuning is known to be trivial."""
        return False

    #: whether :meth:`expected_risks` takes N as a real parameter, with no count summed over, so that it
    #: stays exact past 2**53 where float64 counts round (``law_free.sweeps`` up to 10**18)
    exact_in_real_N = False

    def exact_for(self, family, mechanism) -> bool:
        """Whether :meth:`expected_risks` is exact for ``family`` under ``mechanism`` (the ``exact`` path).

        The default is False: no closed form, the risks are Monte-Carlo trials.
        """
        return False

    def trial_needs(self, size, point, family, G_inst: int) -> list:
        """The arrays one of its trials of ``size`` (a :class:`~labeldp_sim.harness.memory.TrialSize`)
        holds beyond the N samples, as :class:`~labeldp_sim.harness.memory.Need` lower bounds;
        ``G_inst`` is the instance's cube count (the cell model's cubes follow it).  The default:
        none (an estimator whose arrays are no larger than the samples)."""
        return []

    def expected_risks(self, family, G_inst: int, point, columns) -> list:
        """E of the excess risk of each :class:`~.tuning.Column` on the family's instance at ``G_inst``.

        The expectation is over the instance's random signs (or classes), the N
        samples and the mechanism's noise, in closed form (or a quadrature with a
        stated error bound); only called where :meth:`exact_for` is True.
        """
        raise NotImplementedError(f"{type(self).__name__} states no exact expected risk (exact_for is False)")

    @abstractmethod
    def tuned_risks(self, instance, point, columns, draws) -> list:
        """Exact excess risk of each :class:`~.tuning.Column` on one drawn instance, in order.

        Common random numbers: the data and the mechanism noise come from the
        streams of ``draws`` (:class:`~.tuning.CommonDraws`) that the column
        names, so tunings that share a data draw see the same data, and
        mechanisms the same noise.  ``point`` carries N, ε and d; the column's
        tuning replaces the point's own.
        """


class BandwidthTuned(Estimator):
    """Shared tuning: the constant of h = h_scale · (bandwidth law of the cell); G_est cubes per axis."""

    group = "estimator"
    parameters = {"h_scale": Interval(float, 0, closed="neither")}

    def __init__(self, h_scale=1.0):
        check(np.isfinite(h_scale) and h_scale > 0, "h_scale", h_scale, "> 0")
        self.h_scale = float(h_scale)

    def n_cubes(self, cell, N, eps, beta, d, p=float("nan")) -> int:
        """G = round(1/h) with h from the cell's bandwidth law, at least 1."""
        h = cell.bandwidth(N, eps, beta, d, self.h_scale, p)
        return max(1, int(round(1.0 / h)))

    def tune(self, point, cell, distribution):
        """``point`` with G_est = :meth:`n_cubes` at its N and ε."""
        return replace(point, G_est=self.n_cubes(cell, point.N, point.eps, distribution.beta, point.d,
                                                 distribution.p))

    def tuning_grid(self, N: int, G_cap: int, per_octave: int) -> np.ndarray:
        """Cube counts 1 … G_cap, ``per_octave`` per factor 2."""
        return geometric_grid(1, G_cap, per_octave)

    def log_bandwidth(self, log_tuning, N: int, d: int):
        """h = 1/G_est."""
        return -log_tuning

    def grid_capped(self, top, N: int) -> bool:
        """G_est = 1 is one cube; the fine end is always where the grid stops (law_free.G_max, G^d <= N)."""
        return True

    def trivial_tuning(self, value, N: int) -> bool:
        """Whether the tuning ``value`` is the trivial estimator: G_est = 1, one cube (the global mean/vote).

        A law-free point whose oracle picks it has not left the pre-asymptotic range.
        """
        return int(value) <= 1


