"""The kNN regression estimator (:class:`KNNMean`) and its neighbour search (:func:`knn_mean`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import qmc

from labeldp_sim.harness.components import Interval, Nullable, Options, WithNote
from labeldp_sim.harness.errors import check
from labeldp_sim.harness.memory import Need
from labeldp_sim.papers.table1.estimators.base import BandwidthTuned
from labeldp_sim.papers.table1.knn_exact import expected_knn_risks
from labeldp_sim.papers.table1.knn_marginal import draw_knn_estimates
from labeldp_sim.papers.table1.paths import DataPath
from labeldp_sim.papers.table1.tuning import geometric_grid
from labeldp_sim.privacy.protocols import NoisyLabel

__all__ = ["KNNMean", "knn_mean", "knn_windows_1d", "SortedLine", "METRICS"]


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


class KNNMean(BandwidthTuned):
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
    parameters = {**BandwidthTuned.parameters, "k_scale": Interval(float, 0, closed="neither"),
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

    def tuning_at(self, point) -> int:
        """The point's k."""
        return point.k

    def trivial_tuning(self, value, N: int) -> bool:
        """Whether k = ``value`` is the trivial estimator: k >= N, every sample's label averaged."""
        return int(value) >= int(N)

    def trial(self, instance, point, mechanism, rng, path) -> dict:
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        sobol = qmc.Sobol(d=point.d, scramble=True, seed=rng)
        queries = sobol.random_base2(int(np.log2(self.n_test)))
        N, k = int(point.N), int(point.k)
        if DataPath(path) is DataPath.SUFFICIENT:
            estimate = draw_knn_estimates(instance, queries, N, k, mechanism, rng)
        else:
            X, y = instance.sample(N, rng)
            estimate = knn_mean(X, mechanism.report(y, rng), queries, k, self.metric)
        return {"excess_risk": float(np.mean((estimate - instance.eta(queries)) ** 2)),
                "regret_fraction": np.nan}

    def exact_for(self, family, mechanism) -> bool:
        """Exact for the regression bump families (cos² on every cube, signs averaged in closed form)
        with ℓ∞ balls (any norm in d = 1), d ≤ 3, under a mechanism that declares the moments of one
        report (:attr:`~labeldp_sim.privacy.protocols.Mechanism.exact_report`):
        :mod:`~labeldp_sim.papers.table1.knn_exact`."""
        return (family.exact_sign_average and mechanism.exact_report
                and family.d in (1, 2, 3) and (self.metric == "chebyshev" or family.d == 1))

    def trial_needs(self, size, point, family, G_inst: int) -> list:
        """Its test points (n_test × (d + 2) float64, 8 times that on the marginal-law path), the
        marginal law's bump-column tuples, and per sample each KD-tree query chunk (256 × k × 24 B)."""
        d, n_test = size.d, float(self.n_test)
        # the marginal-law path draws each test point's estimate from per-query arrays: 8 (d + 2) float64
        per_query = 8 if size.sufficient else 1
        needs = [Need(8.0 * per_query * n_test * (d + 2), f"n_test = {self.n_test:,} test points × "
                      f"{per_query * (d + 2)} float64", {"estimator.n_test": (self.n_test, n_test)})]
        if size.sufficient and self.k is None:
            # the marginal law sums over the M^d bump-column tuples each query's box meets
            # (knn_marginal._tuple_signs: int64 and float64); the law's k gives boxes of about one
            # bump side, which straddle a column boundary on some axis of some query: M >= 2
            needs.append(Need(16.0 * n_test * 2.0 ** d, f"n_test × 2^d = {self.n_test:,} × {2 ** d:,} bump-column "
                              "tuples (int64 and float64)", {"estimator.n_test": (self.n_test, n_test),
                                                              "grid.d": (d, 2.0 ** d)}))
        if size.per_sample and d >= 2:
            k_key = {"estimator.k": (self.k, float(self.k))} if self.k is not None else {size.key: (size.got, point.k)}
            needs.append(Need(24.0 * min(256.0, n_test) * point.k, f"k = {point.k:,.0f} neighbours × 256 queries "
                              "× 24 B", k_key))
        return needs

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
