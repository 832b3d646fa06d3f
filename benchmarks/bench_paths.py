"""Benchmark: sufficient-statistic path against the per-sample reference path.

Reports seconds per trial of each path and their ratio, measured in this one
run, for every classification mechanism; then one label-LDP trial at
N = 10^9, d = 2 on the sufficient-statistic path (the per-sample path would
need ~10^9 draws).  Timings only: nothing here is asserted.
"""

from __future__ import annotations

import time

import numpy as np

from labeldp_sim.table1.families import HolderBump
from labeldp_sim.table1.estimators import CubeArgmax
from labeldp_sim.core.points import Point
from labeldp_sim.privacy.rappor import RAPPOR
from labeldp_sim.table1.mechanisms import ExponentialMechanism, JointRAPPOR
from labeldp_sim.privacy.protocols import NoPrivacy
from labeldp_sim.table1.sweep import run_trial
from labeldp_sim.table1.theory import CELLS


def seconds_per_trial(dist, mech, point, path, reps):
    start = time.perf_counter()
    for r in range(reps):
        run_trial(dist, mech, CubeArgmax(dist.h_scale), point, r, 0, path)
    return (time.perf_counter() - start) / reps


def main():
    print("path timing, d = 2, seconds per trial (one run)")
    print(f"{'mechanism':<40}{'N':>10}{'per-sample':>14}{'sufficient':>14}{'ratio':>10}")
    for mech in (NoPrivacy(), RAPPOR(1.0), JointRAPPOR(1.0), ExponentialMechanism(1.0),
                 ExponentialMechanism(1.0, "features+label")):
        for N in (10_000, 100_000, 1_000_000):
            if isinstance(mech, JointRAPPOR) and N > 100_000:
                continue  # N × (cubes·K) bits per trial: the reference path is the bottleneck
            dist = HolderBump(d=2, h_scale=2.0)
            G = 8
            point = Point("bench", "N", 2, N, 1.0, N, 1.0, G=G, h=1 / G, in_regime=True, G_est=G)
            reps = 3 if N >= 1_000_000 else 10
            slow = seconds_per_trial(dist, mech, point, "per_sample", reps)
            fast = seconds_per_trial(dist, mech, point, "sufficient", 50)
            label = f"{type(mech).__name__} ({mech.privacy})"
            print(f"{label:<40}{N:>10,}{slow:>14.5f}{fast:>14.6f}{slow / fast:>10.0f}x")

    cell = CELLS["cls_label_ldp"]
    dist = HolderBump(d=2, h_scale=3.5)
    N, eps = 1_000_000_000, 1.0
    G = max(1, round(1 / cell.bandwidth(N, eps, 1.0, 2, 3.5)))
    point = Point("bench", "N", 2, N, eps, N, eps, G=G, h=1 / G, in_regime=True, G_est=G)
    first = seconds_per_trial(dist, RAPPOR(eps), point, "sufficient", 1)  # includes geometry cache
    steady = seconds_per_trial(dist, RAPPOR(eps), point, "sufficient", 20)
    print(f"\ncls_label_ldp, N = 10^9, d = 2 (G = {G}, {dist.n_bumps(G)} bumps): "
          f"first trial {first:.4f} s, then {steady:.5f} s per trial (sufficient statistics)")


if __name__ == "__main__":
    main()
