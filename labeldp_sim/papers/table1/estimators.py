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
``conf/estimator/`` and a test.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from functools import lru_cache
from typing import ClassVar

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import qmc

from labeldp_sim.papers.table1.argmax_law import choice_curve
from labeldp_sim.papers.table1.families import CellModel, cube_index
from labeldp_sim.papers.table1.knn_exact import expected_knn_risks
from labeldp_sim.papers.table1.knn_marginal import draw_knn_estimates
from labeldp_sim.harness.components import Component, Interval, Nullable, Options, WithNote
from labeldp_sim.privacy.count_law import count_law
from labeldp_sim.harness.errors import check
from labeldp_sim.privacy.protocols import CentralMechanism, CubeData, CubeSumMechanism, NoisyLabel, argmax_random_ties
from labeldp_sim.papers.table1.tuning import geometric_grid

__all__ = ["Estimator", "CubeArgmax", "CubeMean", "KNNMean", "knn_mean", "SortedLine"]


def draw_cell_counts(mass, probs, N, rng):
    """Per-cube counts of each label category, exactly in law.

    One multinomial over (cube, category) pairs with probabilities mass_r · probs_rc,
    plus a lumped "rest" category for the cubes left out; shape like ``probs``.
    """
    pvals = (mass[:, None] * probs).ravel()
    counts = rng.multinomial(int(N), np.append(pvals, max(0.0, 1.0 - pvals.sum())))[:-1]
    return counts.reshape(probs.shape)


class Estimator(Component, ABC):
    """What every Table I estimator states: its trials, its tuning, and its risk over tunings.

    Class attributes
    ----------------
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
    """

    tuning: ClassVar[str] = "G_est"
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

    @abstractmethod
    def log_bandwidth(self, log_tuning, N: int, d: int):
        """log h of the cube side (or neighbourhood) a tuning amounts to at N samples in d dimensions."""

    @abstractmethod
    def grid_capped(self, top, N: int) -> bool:
        """Whether ``top``, the largest tuning of a grid, is a cap rather than the end of what exists."""

    def exact_for(self, family, mechanism) -> bool:
        """Whether :meth:`expected_risks` is exact for ``family`` under ``mechanism`` (the ``exact`` path).

        The default is False: no closed form, the risks are Monte-Carlo trials.
        """
        return False

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


class _BandwidthTuned(Estimator):
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


class CubeArgmax(_BandwidthTuned):
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
    supports_sufficient = True
    accepts = (CubeSumMechanism, CentralMechanism)

    def predict_per_sample(self, X, y, G, K, mechanism, rng):
        """Predicted class of every cube (length G^d) from N samples."""
        d = X.shape[1]
        n_cells = G ** d
        cells = cube_index(X, G)
        if isinstance(mechanism, CentralMechanism):
            return mechanism.release(CubeData.from_samples(cells, y, n_cells), rng, len(y), 1.0 / G, d, K)
        scores = mechanism.collect(y, rng, K=K, cells=cells, n_cells=n_cells)
        return argmax_random_ties(scores, rng)

    def predict_from_counts(self, model: CellModel, N, mechanism, rng, G, d):
        """Predicted class of the relevant cubes of ``model``, exactly in law."""
        counts = draw_cell_counts(model.mass, model.class_probs, N, rng)
        K = counts.shape[1]
        data = CubeData.from_counts(counts, np.arange(K))
        if isinstance(mechanism, CentralMechanism):
            return mechanism.release(data, rng, int(N), 1.0 / G, d, K)
        return argmax_random_ties(mechanism.sample_aggregate(data, int(N), rng, K), rng)

    def trial(self, instance, point, mechanism, rng, path) -> dict:
        """Exact (8) of one fitted cube classifier, and the share of attainable regret."""
        model = instance.cell_model(point.G_est)
        if path == "sufficient":
            predictions = self.predict_from_counts(model, point.N, mechanism, rng, point.G_est, point.d)
        else:
            X, y = instance.sample(point.N, rng)
            predictions = self.predict_per_sample(X, y, point.G_est, instance.family.K, mechanism,
                                                  rng)[model.cells]
        return {"excess_risk": model.excess_risk(predictions),
                "regret_fraction": model.regret_fraction(predictions)}

    def exact_for(self, family, mechanism) -> bool:
        """Exact for two classes on a family that states the law of its cubes' tilts (``tilt_measure``)
        under a mechanism that states its choice law (``argmax_choice_law``)."""
        return (getattr(family, "K", None) == 2 and callable(getattr(family, "tilt_measure", None))
                and callable(getattr(mechanism, "argmax_choice_law", None)))

    def expected_risks(self, family, G_inst: int, point, columns) -> list:
        r"""E (8) of each column, exactly (:mod:`~labeldp_sim.papers.table1.argmax_law`):

            E R = ½ (Σ_r T_r − ∫ F dν),  F(D) = D Ψ(D),

        ν the law of the cubes' tilts over the random classes (the family's ``tilt_measure``,
        per (G_inst, G_est)), Ψ the mechanism's choice bias on a cube of mass G_est^-d
        (its ``argmax_choice_law``, per (N, ε, G_est)).  Errors: :meth:`exact_errors`.
        """
        return [choice_curve(self._choice_law(c, point)).expected_risk(family.tilt_measure(G_inst, int(c.tuning)))
                for c in columns]

    def exact_errors(self, family, G_inst: int, point, columns) -> list:
        """An estimate of the absolute error of each :meth:`expected_risks` entry (:meth:`ChoiceCurve.error
        <labeldp_sim.papers.table1.argmax_law.ChoiceCurve.error>`: interpolation tail, normal-law budget)."""
        return [choice_curve(self._choice_law(c, point)).error(family.tilt_measure(G_inst, int(c.tuning)))
                for c in columns]

    @staticmethod
    def _choice_law(column, point):
        return column.mechanism.argmax_choice_law(int(point.N), float(column.tuning) ** (-point.d))

    def tuned_risks(self, instance, point, columns, draws) -> list:
        """One trial per column: the data and the release share the column's data stream, as in :meth:`trial`."""
        return [self.trial(instance, replace(point, G_est=int(c.tuning)), c.mechanism, draws.data(c.tuning, c.draw),
                           "sufficient")["excess_risk"] for c in columns]


class CubeMean(_BandwidthTuned):
    r"""Cube regression estimate η̂(x) = η̂_l for x ∈ B_l (Theorems 8, 12, 14; also non-private).

    The per-cube statistic (n_l, S_l) and the release rule come from the
    mechanism: S_l/n_l without privacy or with local label noise, (23)/(28)
    for central label DP, (33)/(34) for central full DP, the ratio estimate for
    the joint local mechanism.  The excess risk (9) is exact:
    Σ_l (η̂_l² P(B_l) − 2 η̂_l ∫_{B_l} η + ∫_{B_l} η²).

    Parameters
    ----------
    h_scale : float > 0
        Constant c in h = c · (bandwidth law of the cell), Theorems 8, 12, 14.
    """

    name = "cube_mean"
    tasks = ("regression",)
    supports_sufficient = True
    accepts = (CubeSumMechanism, CentralMechanism)

    def trial(self, instance, point, mechanism, rng, path) -> dict:
        model = instance.cell_model(point.G_est)
        data = self.draw_data(instance, model, point, rng, path)
        return {"excess_risk": self.risk(model, data, point, mechanism, rng, path),
                "regret_fraction": np.nan}

    def draw_data(self, instance, model, point, rng, path) -> CubeData:
        """The data of one trial on the estimator's cubes: per-cube counts, or the samples."""
        if path == "sufficient":
            return CubeData.from_counts(draw_cell_counts(model.mass, model.value_probs, point.N, rng),
                                        model.values)
        X, y = instance.sample(int(point.N), rng)
        return CubeData.from_samples(cube_index(X, point.G_est), y, model.n_cells)

    def risk(self, model, data: CubeData, point, mechanism, rng, path) -> float:
        """Exact (9) of the estimate the mechanism releases (or lets us compute) from ``data``.

        ``data`` is not modified, so one draw can be privatized by several
        mechanisms (the law-free mode's clip levels share their data).
        """
        d, N, h = point.d, int(point.N), 1.0 / point.G_est
        if isinstance(mechanism, CentralMechanism):
            estimates = mechanism.release(data, rng, N, h, d)
        else:
            if path == "sufficient":
                n, S = mechanism.sample_aggregate(data, N, rng)
            else:
                n, S = mechanism.collect(data.y, rng, cells=data.cells, n_cells=model.n_cells)
            estimates = mechanism.estimate(n, S, N, h, d)
        return model.excess_risk(estimates)

    def exact_for(self, family, mechanism) -> bool:
        """Exact for the bump families (signs averaged in closed form) under a mechanism that states
        the moments of its cube mean (``cube_mean_moments``; the joint local ratio states them through
        :mod:`.noisy_ratio`)."""
        return (callable(getattr(family, "sign_averaged_cubes", None))
                and callable(getattr(mechanism, "cube_mean_moments", None)))

    def expected_risks(self, family, G_inst: int, point, columns) -> list:
        r"""E (9) of each column, exactly: with P(B_r) = μ, I_r = ∫_{B_r} η, J_r = ∫_{B_r} η²,

            E Σ_r (μ η̂_r² − 2 η̂_r I_r + J_r)
              = b2 (α0² + α1² Π) + b1 β0 + b0 − 2 a α1 Π + ∫η²
              = b2 α0² + ((a α1 − 1)² + α1² (b2 − a²)) Π + b1 β0 + b0 + (∫η² − Π),

        Π = Σ_r E_v I_r²/μ (the projection, :meth:`~.families.regression._RegressionBump.sign_averaged_cubes`),
        (a, b2, b1, b0) the mechanism's :class:`~labeldp_sim.privacy.protocols.CubeMeanMoments` over the
        cube count n ~ Bin(N, μ) (:class:`~labeldp_sim.privacy.count_law.CountLaw`), (α, β) the clipped
        label moments (E v = 0 removes the terms linear in η).
        """
        d, N, risks = point.d, int(point.N), []
        for c in columns:
            G_est = int(c.tuning)
            mom = _cube_mean_moments(c.mechanism, N, G_est, d)
            a0, a1, b0_label, _ = family.clipped_label_moments(G_inst, mom.T)
            eta2, proj = family.sign_averaged_cubes(G_inst, G_est)
            # ∫η² − Π (the bias) is tiny beside both when G_est ≫ G_inst: taken from the family's
            # cancellation-free form, and the Π terms grouped as ((a α1 − 1)² + α1² (b2 − a²)) Π
            bias = (family.sign_averaged_bias(G_inst, G_est) if hasattr(family, "sign_averaged_bias")
                    else eta2 - proj)
            spread = (mom.a * a1 - 1.0) ** 2 + a1 ** 2 * (mom.b2 - mom.a ** 2)
            risks.append(float(mom.b2 * a0 ** 2 + spread * proj + mom.b1 * b0_label + mom.b0 + bias))
        return risks

    def tuned_risks(self, instance, point, columns, draws) -> list:
        """One data draw per (G_est, draw), privatized by each of its columns' mechanisms (clip levels)."""
        risks, drawn = [], None
        for c in columns:
            key = (int(c.tuning), c.draw)
            if drawn is None or drawn[0] != key:  # columns come grouped: hold one draw at a time
                tuned = replace(point, G_est=key[0])
                model = instance.cell_model(key[0])
                drawn = (key, tuned, model, self.draw_data(instance, model, tuned, draws.data(*key), "sufficient"))
            _, tuned, model, data = drawn
            risks.append(self.risk(model, data, tuned, c.mechanism, draws.noise(c.tuning, c.slot), "sufficient"))
        return risks


@lru_cache(maxsize=65536)
def _cube_mean_moments(mechanism, N: int, G_est: int, d: int):
    """The mechanism's :class:`~labeldp_sim.privacy.protocols.CubeMeanMoments` on G_est^d cubes (the same
    for every instance: computed once per process and mechanism)."""
    return mechanism.cube_mean_moments(count_law(N, float(G_est) ** (-d)), N, 1.0 / G_est, d)


def knn_windows_1d(x_sorted, q, k):
    """Start s of the window [s, s+k) of the k nearest sorted points to each query (d = 1).

    The smallest s in [0, N−k] with q − x_s ≤ x_{s+k} − q (monotone in s),
    found by a vectorised binary search; s = N−k if none.
    """
    N = len(x_sorted)
    lo = np.zeros(len(q), dtype=np.int64)
    hi = np.full(len(q), N - k, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        go_right = (q - x_sorted[mid]) > (x_sorted[np.minimum(mid + k, N - 1)] - q)
        go_right &= mid + k < N
        lo = np.where(go_right, mid + 1, lo)
        hi = np.where(go_right, hi, mid)
    return lo


class SortedLine:
    """A sample on [0, 1] in sorted order: k-nearest-neighbour windows and their means (d = 1).

    The k nearest neighbours of q form a window [s, s+k) of the sorted sample
    (:func:`knn_windows_1d`); window means come from prefix sums, so every k
    and every set of labels reuse one sort.
    """

    def __init__(self, x: np.ndarray):
        self.order = np.argsort(x, kind="stable")
        self.x = x[self.order]

    def windows(self, q: np.ndarray, k: int) -> np.ndarray:
        return knn_windows_1d(self.x, q, k)

    def prefix_sums(self, Z: np.ndarray) -> np.ndarray:
        """0, Z_(1), Z_(1) + Z_(2), … in the sample's sorted order."""
        return np.concatenate([[0.0], np.cumsum(Z[self.order])])

    @staticmethod
    def window_means(prefix: np.ndarray, lo: np.ndarray, k: int) -> np.ndarray:
        return (prefix[lo + k] - prefix[lo]) / k


METRICS = ("chebyshev", "euclidean")


def knn_mean(X, Z, queries, k, metric="chebyshev", chunk=256):
    """Mean of Z over the k nearest neighbours of each query point (ℓ∞ or Euclidean distance).

    d = 1: exact without a tree (both metrics are |x − x'|) — the k nearest
    neighbours of q in sorted order form a window [s, s+k) with
    q − x_s ≤ x_{s+k} − q at the first such s, found by a vectorised binary
    search; window means come from prefix sums.
    d ≥ 2: scipy's KD-tree (Minkowski p = ∞ or 2), queried in chunks to bound memory.
    """
    N, d = X.shape
    if d == 1:
        line = SortedLine(X[:, 0])
        return line.window_means(line.prefix_sums(Z), line.windows(queries[:, 0], k), k)
    tree = cKDTree(X)
    minkowski = np.inf if metric == "chebyshev" else 2
    out = np.empty(len(queries))
    for start in range(0, len(queries), chunk):
        _, idx = tree.query(queries[start:start + chunk], k=k, p=minkowski)
        idx = idx.reshape(len(idx), -1)
        out[start:start + chunk] = Z[idx].mean(axis=1)
    return out


class KNNMean(_BandwidthTuned):
    r"""k-nearest-neighbour mean of the (privatized) labels, (20).

    k = k_scale · N h^d with h the cell's bandwidth law — the same k as
    Theorem 6, k ~ N^(2β/(d+2β)) (ε∧1)^(−2d/(d+2β)), and as the balance of
    Appendix K (195) for heavy tails, k ~ N^(2pβ/D) ε^(−2d(p−1)/D),
    D = 2pβ + d(p−1).  (Appendix K writes (Nε²)^(2pβ/D), whose ε exponent does
    not balance (195); the two agree at fixed ε.)  A fixed ``k`` overrides the law.

    The excess risk (9) is integrated over ``n_test`` scrambled Sobol points
    drawn from the trial's own stream, so each trial's integral is unbiased
    and its error is part of the spread across trials, hence of the reported
    standard error.

    Two data paths, as for the cube estimators: ``per_sample`` draws the N
    samples and finds each query's neighbours; ``sufficient`` draws each
    query's estimate from its exact marginal law
    (:mod:`labeldp_sim.papers.table1.knn_marginal`), at a cost independent of N and k.
    The mean risk is the same; the per-trial spread is smaller on the second
    path, whose queries do not share one data set.  The exact path
    (:meth:`expected_risks`) takes that law's expectation over the signs, the
    data and the noise by quadrature (:mod:`~labeldp_sim.papers.table1.knn_exact`).

    Parameters
    ----------
    h_scale, k_scale : float > 0
        k = k_scale · N (h_scale · h_law)^d.
    k : int or None
        A fixed k (overrides the law).
    n_test : int, power of 2
        Test points of the risk integral.
    metric : {"chebyshev", "euclidean"}
        Neighbour distance.  The rates of Theorems 6 and 10 hold for any norm;
        the marginal-law path needs ℓ∞ in d ≥ 2 (its regions are boxes, over
        which the bumps integrate in closed form), so Euclidean runs per sample.
        In d = 1 both are |x − x'|.
    """

    name = "knn_mean"
    tasks = ("regression",)
    accepts = (NoisyLabel,)
    tuning = "k"
    tuned_risks_samples = True  # one sample for every k, T and instance: all k from one sort
    tuned_risks_dims = (1,)  # the sort is d = 1's (SortedLine)
    parameters = {**_BandwidthTuned.parameters, "k_scale": Interval(float, 0, closed="neither"),
                  "k": Nullable(Interval(int, 1), "the theorem's law"),
                  "n_test": Interval(int, 2, note="a power of 2"),
                  "metric": WithNote(Options(*METRICS), "the marginal-law path needs chebyshev in d >= 2")}

    def __init__(self, h_scale=1.0, k_scale=1.0, k=None, n_test=256, metric="chebyshev"):
        super().__init__(h_scale)
        check(np.isfinite(k_scale) and k_scale > 0, "k_scale", k_scale, "> 0")
        check(k is None or (int(k) == k and k >= 1), "k", k, "null (the theorem's law) or an integer >= 1")
        check(int(n_test) == n_test and n_test >= 2 and (int(n_test) & (int(n_test) - 1)) == 0,
              "n_test", n_test, "a power of 2 >= 2")
        check(metric in METRICS, "metric", metric,
              f"{', '.join(METRICS)} (the marginal-law path needs chebyshev in d >= 2)")
        self.k_scale = float(k_scale)
        self.k, self.n_test, self.metric = (None if k is None else int(k)), int(n_test), metric
        # Euclidean balls cut to the cube have no closed-form bump integrals in d >= 2
        self.supports_sufficient = metric == "chebyshev"

    def neighbours(self, cell, N, eps, beta, d, p=float("nan")) -> int:
        """k at this grid point (not checked against N here)."""
        if self.k is not None:
            return self.k
        h = cell.bandwidth(N, eps, beta, d, self.h_scale, p)
        return max(1, int(round(self.k_scale * N * h ** d)))

    def tune(self, point, cell, distribution):
        """``point`` with G_est and k at its N and ε (a k outside 1..N is the caller's to refuse)."""
        point = super().tune(point, cell, distribution)
        return replace(point, k=self.neighbours(cell, point.N, point.eps, distribution.beta, point.d,
                                                distribution.p))

    def tuning_grid(self, N: int, G_cap: int, per_octave: int) -> np.ndarray:
        """k = 1 … N, ``per_octave`` per factor 2 (the cube cap does not bound a kNN)."""
        return geometric_grid(1, N, per_octave)

    def log_bandwidth(self, log_tuning, N: int, d: int):
        """h = (k/N)^(1/d): the side of a cube holding k of the N samples."""
        return (log_tuning - np.log(N)) / d

    def grid_capped(self, top, N: int) -> bool:
        """k = 1 and k = N are the ends of what exists."""
        return not top >= N

    def trivial_tuning(self, value, N: int) -> bool:
        """Whether k = ``value`` is the trivial estimator: k >= N, every sample's label averaged."""
        return int(value) >= int(N)

    def trial(self, instance, point, mechanism, rng, path) -> dict:
        sobol = qmc.Sobol(d=point.d, scramble=True, seed=rng)
        queries = sobol.random_base2(int(np.log2(self.n_test)))
        N, k = int(point.N), int(point.k)
        if path == "sufficient":
            estimate = draw_knn_estimates(instance, queries, N, k, mechanism, rng)
        else:
            X, y = instance.sample(N, rng)
            estimate = knn_mean(X, mechanism.report(y, rng), queries, k, self.metric)
        return {"excess_risk": float(np.mean((estimate - instance.eta(queries)) ** 2)),
                "regret_fraction": np.nan}

    def exact_for(self, family, mechanism) -> bool:
        """Exact for the regression bump families (cos² on every cube, signs averaged in closed form)
        with ℓ∞ balls (any norm in d = 1), d ≤ 3, under a mechanism that states the moments of one
        report (``report_moments``): :mod:`~labeldp_sim.papers.table1.knn_exact`."""
        return (callable(getattr(family, "sign_averaged_cubes", None))
                and callable(getattr(family, "clipped_label_moments", None))
                and callable(getattr(mechanism, "report_moments", None))
                and getattr(family, "d", 0) in (1, 2, 3) and (self.metric == "chebyshev" or family.d == 1))

    def expected_risks(self, family, G_inst: int, point, columns) -> list:
        r"""E (9) of each column (k = ``column.tuning``) over the signs, the N samples and the noise.

        Each query's estimate has the marginal law of :mod:`.knn_marginal`; its risk
        given the ball mass U is a closed form in the clipped label moments (the
        family's, at the mechanism's clip level) and the report noise (the
        mechanism's ``report_moments``), and the query and U integrals are
        quadratures with the error bounds of :mod:`~labeldp_sim.papers.table1.knn_exact`
        (about 1e-4 of the risk at most, far less away from k ≈ N).
        """
        N, G_inst = int(point.N), int(G_inst)
        moments = []
        for c in columns:
            check(1 <= int(c.tuning) <= N, "k", c.tuning, f"an integer in 1 … N = {N}")
            report = c.mechanism.report_moments()
            a0, a1, b0, _ = family.clipped_label_moments(G_inst, report.T)
            moments.append((a0, a1, b0, report.b0))
        height = family.L * float(G_inst) ** (-family.beta)
        return expected_knn_risks(family.d, G_inst, height, N, [c.tuning for c in columns], moments)

    def tuned_risks(self, instance, point, columns, draws) -> list:
        """All columns from one sample (d = 1), drawn on the instance's stream after the instance.

        Each mechanism privatizes the labels once (its noise stream, tuning 0);
        every k reads its window means from the same prefix sums.  The risk
        integral takes ``draws.n_test`` scrambled Sobol points of the same stream.
        """
        rng = draws.instance
        X, y = instance.sample(int(point.N), rng)
        line = SortedLine(X[:, 0])
        queries = qmc.Sobol(d=1, scramble=True, seed=rng).random_base2(int(np.log2(draws.n_test)))
        truth = instance.eta(queries)
        windows = {k: line.windows(queries[:, 0], k) for k in {int(c.tuning) for c in columns}}
        risks, slot, prefix = [], None, None
        for c in columns:
            if c.slot != slot:  # columns come grouped by mechanism: one report per mechanism
                slot, prefix = c.slot, line.prefix_sums(c.mechanism.report(y, draws.noise(0, c.slot)))
            estimate = line.window_means(prefix, windows[int(c.tuning)], int(c.tuning))
            risks.append(float(np.mean((estimate - truth) ** 2)))
        return risks
