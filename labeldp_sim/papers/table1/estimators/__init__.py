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

Every estimator is an :class:`Estimator`: ``trial(instance, point, mechanism,
rng, path)`` runs one Monte-Carlo trial on a drawn instance and returns its
exact excess risk; the estimator also states its tuning parameter
(:attr:`~Estimator.tuning`), the tuning its cell's law gives at a point
(:meth:`~Estimator.tune`), the oracle grid the law-free search tries
(:meth:`~Estimator.tuning_grid`) and the risks of a set of tunings on one
instance from common random numbers (:meth:`~Estimator.tuned_risks`).

To add an estimator: a subclass of :class:`Estimator` with ``tasks``,
``accepts`` and ``supports_sufficient``, a YAML file under
``conf/table1/estimator/`` and a test.
"""


from labeldp_sim.papers.table1.estimators.base import BandwidthTuned, Estimator, draw_cell_counts
from labeldp_sim.papers.table1.estimators.cube import CubeArgmax, CubeMean
from labeldp_sim.papers.table1.estimators.knn import METRICS, KNNMean, SortedLine, knn_mean, knn_windows_1d

__all__ = ["Estimator", "BandwidthTuned", "CubeArgmax", "CubeMean", "KNNMean", "knn_mean", "knn_windows_1d",
           "SortedLine", "METRICS", "draw_cell_counts"]
