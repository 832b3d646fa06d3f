"""Benchmark section: kNN trials from their exact marginal law against the per-sample path.

Seconds per trial (median of several) of a `reg_label_ldp` trial, 256 test
points, k and G from the cell's law at ε = 1/2:

* the marginal-law path against the per-sample path (data, reports, cKDTree
  build and queries) at N = 10^5 and 10^6, d = 2 and 3;
* the marginal-law trial at N = 10^6 against N = 10^12 for d = 1, 2, 3 (flat:
  its cost depends on the number of test points, not on N or k).

Timings only: nothing here is asserted.
"""

from __future__ import annotations

import statistics
import time

from labeldp_sim.papers.table1.points import Point
from labeldp_sim.papers.table1.estimators import KNNMean
from labeldp_sim.papers.table1.families import BoundedBump
from labeldp_sim.papers.table1.mechanisms import LaplaceLabel
from labeldp_sim.papers.table1.sweep import run_trial
from labeldp_sim.papers.table1.theory import CELLS

EPS = 0.5


def _point(d: int, N: int, estimator: KNNMean) -> Point:
    cell = CELLS["reg_label_ldp"]
    G = max(1, round(1 / cell.bandwidth(N, EPS, 1.0, d)))
    k = estimator.neighbours(cell, N, EPS, 1.0, d)
    return Point("bench", "N", d, N, EPS, N, EPS, G=G, h=1 / G, in_regime=True, G_est=G, k=k)


def seconds_per_trial(d: int, N: int, path: str, reps: int) -> float:
    """Median seconds of one trial over ``reps`` trials (after one warm-up trial)."""
    estimator = KNNMean()
    point = _point(d, N, estimator)
    args = (BoundedBump(d=d), LaplaceLabel(EPS, 1.0), estimator, point)
    run_trial(*args, 0, 0, path)
    times = []
    for r in range(1, reps + 1):
        start = time.perf_counter()
        run_trial(*args, r, 0, path)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run() -> list[str]:
    lines = ["## kNN trials: exact marginal law vs per sample",
             "",
             "Seconds per `reg_label_ldp` trial (median), 256 test points, k and G from the cell's law "
             "at ε = 1/2, ℓ∞ neighbours. The per-sample path draws N samples and their reports, builds a "
             "cKDTree and queries it; the marginal-law path draws each test point's estimate from its "
             "exact law.",
             "",
             "| d | N | k | per-sample (s) | marginal law (s) | per-sample / marginal |",
             "|---|---|---|---|---|---|"]
    for d in (2, 3):
        for N in (10 ** 5, 10 ** 6):
            slow = seconds_per_trial(d, N, "per_sample", 3 if N >= 10 ** 6 else 5)
            fast = seconds_per_trial(d, N, "sufficient", 50)
            k = _point(d, N, KNNMean()).k
            lines.append(f"| {d} | {N:.0e} | {k:,} | {slow:.4f} | {fast:.5f} | {slow / fast:,.0f}× |")
    lines += ["",
              "The marginal-law trial at N = 10^6 and at N = 10^12 (flat means a ratio near 1; the "
              "acceptance bound is 2×):",
              "",
              "| d | s/trial at 10^6 | s/trial at 10^12 | k at 10^12 | bumps at 10^12 | 10^12 / 10^6 |",
              "|---|---|---|---|---|---|"]
    for d in (1, 2, 3):
        small = seconds_per_trial(d, 10 ** 6, "sufficient", 50)
        large = seconds_per_trial(d, 10 ** 12, "sufficient", 50)
        point = _point(d, 10 ** 12, KNNMean())
        lines.append(f"| {d} | {small:.5f} | {large:.5f} | {point.k:,} | {point.G ** d:,} | {large / small:.2f} |")
    return lines


if __name__ == "__main__":
    import bench_args

    bench_args.parse(__doc__, "benchmarks/bench_knn.py")
    print("\n".join(run()))
