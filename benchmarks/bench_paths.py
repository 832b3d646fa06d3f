"""Benchmark section: the per-sample reference path, against the sufficient-statistic path and
against the cost of drawing its own random numbers.

All from this one run, d = 2, G = 8 (64 cubes), K = 2, ε = 1, every cube mechanism of
``conf/table1/mechanism`` (``rr`` and ``alibi`` from papers/002 included):

1. seconds per trial of both paths and their ratio at N = 10^4, 10^5, 10^6;
2. at N = 10^6, the per-sample path against its *random-number floor*: the time numpy's
   Generator takes to draw exactly the random numbers that path draws, in the same
   shapes (and, for the vector reports, the same chunks), the features and labels held
   to the end of the trial as the path holds them.  Beside it, the minor page faults
   of a trial, and the same trials in a child process whose glibc heap is never given
   back to the kernel (``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_``): on a
   machine where first touches of memory are dear, that difference is what the path
   pays for its working set, and the floor, whose few arrays stay in the heap, does not;
3. one label-LDP trial at N = 10^9 on the sufficient-statistic path.

Every time is the median of several trials, after a warm-up trial; nothing is asserted.
``python benchmarks/bench_paths.py`` prints the section.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from labeldp_sim.papers.table1.points import Point
from labeldp_sim.papers.kclass.mechanisms import ALIBI, RandomizedResponse
from labeldp_sim.privacy.protocols import NoPrivacy
from labeldp_sim.privacy.rappor import RAPPOR
from labeldp_sim.papers.table1.estimators import CubeArgmax, CubeMean
from labeldp_sim.papers.table1.families import BoundedBump, HolderBump
from labeldp_sim.papers.table1.mechanisms import (ExponentialMechanism, JointLaplace, JointRAPPOR,
                                           LaplaceCubeMean, LaplaceLabel)
from labeldp_sim.papers.table1.sweep import run_trial
from labeldp_sim.papers.table1.theory import CELLS

D, G, K, EPS, H_SCALE = 2, 8, 2, 1.0, 2.0
C = G ** D
NS = (10_000, 100_000, 1_000_000)
TOP = NS[-1]
# glibc keeps freed memory in the heap: no trims, and every block up to the 32 MiB maximum
# threshold from the heap rather than from its own mmap
HEAP_KEPT = {"MALLOC_TRIM_THRESHOLD_": str(2 ** 40), "MALLOC_MMAP_THRESHOLD_": str(2 ** 25)}


def mechanisms():
    """(key, mechanism, distribution, estimator) for every cube mechanism with both paths."""
    cls, reg = HolderBump(d=D, K=K, h_scale=H_SCALE), BoundedBump(d=D, h_scale=H_SCALE)
    argmax, mean = CubeArgmax(H_SCALE), CubeMean(H_SCALE)
    return [
        ("none", NoPrivacy(), cls, argmax),
        ("rappor", RAPPOR(EPS), cls, argmax),
        ("rr", RandomizedResponse(EPS), cls, argmax),
        ("alibi", ALIBI(EPS), cls, argmax),
        ("joint_rappor", JointRAPPOR(EPS), cls, argmax),
        ("exponential", ExponentialMechanism(EPS), cls, argmax),
        ("exponential_full", ExponentialMechanism(EPS, "features+label"), cls, argmax),
        ("none (regression)", NoPrivacy(), reg, mean),
        ("laplace", LaplaceLabel(EPS, 1.0), reg, mean),
        ("laplace_cube", LaplaceCubeMean(EPS, 1.0), reg, mean),
        ("laplace_cube_full", LaplaceCubeMean(EPS, 1.0, "features+label"), reg, mean),
        ("joint_laplace", JointLaplace(EPS, 1.0), reg, mean),
    ]


# --------------------------------------------------------------------------- the floor

def _in_chunks(rng, chunk, draw):
    """``draw(rng, m)`` for blocks of m ≤ chunk of the N = 10^6 users, each let go before the next."""
    for start in range(0, TOP, chunk):
        draw(rng, min(chunk, TOP - start))


def _ties(rng):
    rng.random((C, K))  # argmax_random_ties over the cube scores


# What each per-sample trial draws beyond the features (N × d uniforms) and one uniform per
# label, as (text, draw).  The instance's O(cubes) draws (one class or sign per bump) are left out.
FLOOR_EXTRA = {
    "none": ("", _ties),
    "rappor": (" + N·K uniforms", lambda rng: (rng.random((TOP, K)), _ties(rng))),
    "rr": (" + N uniforms + N integers",
           lambda rng: (rng.random(TOP), rng.integers(1, K, size=TOP), _ties(rng))),
    "alibi": (" + N·K Laplace", lambda rng: (rng.laplace(size=(TOP, K)), _ties(rng))),
    "joint_rappor": (" + N·C·K uniforms, 4096 users at a time",
                     lambda rng: (_in_chunks(rng, 4096, lambda r, m: r.random((m, C * K))), _ties(rng))),
    "exponential": (" + C·K Gumbel", lambda rng: rng.gumbel(size=(C, K))),
    "exponential_full": (" + C·K Gumbel", lambda rng: rng.gumbel(size=(C, K))),
    "none (regression)": ("", lambda rng: None),
    "laplace": (" + N Laplace", lambda rng: rng.laplace(size=TOP)),
    "laplace_cube": (" + C Laplace", lambda rng: rng.laplace(size=C)),
    "laplace_cube_full": (" + C Laplace", lambda rng: rng.laplace(size=C)),
    "joint_laplace": (" + N·2C Laplace, 2048 users at a time",
                      lambda rng: _in_chunks(rng, 2048, lambda r, m: (r.laplace(size=(m, C)),
                                                                      r.laplace(size=(m, C))))),
}


def _faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _median(call, reps):
    """Median seconds and minor page faults of ``call(r)`` over r = 1..reps, after a warm-up call."""
    call(0)
    seconds, faults = [], []
    for r in range(1, reps + 1):
        before, start = _faults(), time.perf_counter()
        call(r)
        seconds.append(time.perf_counter() - start)
        faults.append(_faults() - before)
    return statistics.median(seconds), statistics.median(faults)


def trial_seconds(dist, mech, est, N, path, reps):
    """Median seconds (and page faults) of one trial of ``path`` at N."""
    point = Point("bench", "N", D, N, EPS, N, EPS, G=G, h=1 / G, in_regime=True, G_est=G)
    return _median(lambda r: run_trial(dist, mech, est, point, r, 0, path), reps)


def floor_seconds(key, reps):
    """Median seconds (and page faults) to draw the random numbers of a per-sample trial at N = 10^6."""
    def draw(r):
        rng = np.random.default_rng(r)
        held = (rng.random((TOP, D)), rng.random(TOP))  # features, one uniform per label
        FLOOR_EXTRA[key][1](rng)
        return held
    return _median(draw, reps)


def _reps(key, N):
    if key.startswith("joint"):
        return {10_000: 7, 100_000: 3, TOP: 3}[N]
    return {10_000: 15, 100_000: 9, TOP: 11}[N]


def _floor_reps(key):
    return 3 if key.startswith("joint") else 25  # a few ms each: more, against a shared machine's noise


def at_top() -> dict:
    """{key: (per-sample seconds, page faults, floor seconds)} at N = 10^6."""
    out = {}
    for key, mech, dist, est in mechanisms():
        path, faults = trial_seconds(dist, mech, est, TOP, "per_sample", _reps(key, TOP))
        out[key] = (path, faults, floor_seconds(key, _floor_reps(key))[0])
    return out


def _heap_kept() -> dict:
    """:func:`at_top` in a child process whose glibc heap is never given back to the kernel."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--heap-kept"],
                          env={**os.environ, **HEAP_KEPT}, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# --------------------------------------------------------------------------- the section

def _fmt(seconds):
    return f"{seconds:.4f}" if seconds >= 1e-3 else f"{seconds:.2e}"


def run() -> list[str]:
    lines = ["## Data paths: per sample, sufficient statistics, and the random-number floor",
             "",
             f"Seconds per Table I cube trial (median), d = {D}, G = {G} ({C} cubes), K = {K}, "
             f"ε = {EPS:g}: the per-sample reference path (N samples, one report each, aggregated "
             "per cube) against the sufficient-statistic path (per-cube counts from one "
             "multinomial, the mechanism's statistic drawn from them).",
             "",
             "| mechanism | task | N | per-sample (s) | sufficient (s) | per-sample / sufficient |",
             "|---|---|---|---|---|---|"]
    top = {}
    for key, mech, dist, est in mechanisms():
        for N in NS:
            slow, faults = trial_seconds(dist, mech, est, N, "per_sample", _reps(key, N))
            fast, _ = trial_seconds(dist, mech, est, N, "sufficient", 15)
            if N == TOP:
                top[key] = (slow, faults, floor_seconds(key, _floor_reps(key))[0])
            lines.append(f"| {key} | {dist.task} | {N:.0e} | {_fmt(slow)} | {_fmt(fast)} | "
                         f"{slow / fast:,.0f} |")
    kept = _heap_kept()
    lines += ["",
              f"The per-sample path at N = {TOP:.0e} against its random-number floor: the time numpy's "
              "Generator takes to draw the path's random numbers (N·d feature uniforms, one uniform "
              "per label, the mechanism's noise; C cubes, K classes) in the path's shapes and chunks. "
              "Then the minor page faults of a per-sample trial (the floor's: none), and both again "
              "in a process whose glibc heap is kept (`" + " ".join(f"{k}={v}" for k, v in HEAP_KEPT.items())
              + "`): the difference is the price of first touches of memory on this machine.",
              "",
              "| mechanism | floor draws | per-sample (s) | floor (s) | per-sample / floor | within 3× "
              "| page faults / trial | heap kept: per-sample (s) | floor (s) | per-sample / floor "
              "| within 3× |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, (slow, faults, floor) in top.items():
        kept_slow, _, kept_floor = kept[key]
        lines.append(f"| {key} | N·d + N uniforms{FLOOR_EXTRA[key][0]} | {_fmt(slow)} | {_fmt(floor)} | "
                     f"{slow / floor:.2f} | {'yes' if slow <= 3 * floor else 'no'} | {faults:,.0f} | "
                     f"{_fmt(kept_slow)} | {_fmt(kept_floor)} | {kept_slow / kept_floor:.2f} | "
                     f"{'yes' if kept_slow <= 3 * kept_floor else 'no'} |")
    lines += ["", _billion_line()]
    return lines


def _billion_line() -> str:
    cell, h_scale = CELLS["cls_label_ldp"], 3.5
    dist, N = HolderBump(d=D, h_scale=h_scale), 10 ** 9
    G_law = max(1, round(1 / cell.bandwidth(N, EPS, 1.0, D, h_scale)))
    point = Point("bench", "N", D, N, EPS, N, EPS, G=G_law, h=1 / G_law, in_regime=True, G_est=G_law)
    start = time.perf_counter()
    run_trial(dist, RAPPOR(EPS), CubeArgmax(h_scale), point, 0, 0, "sufficient")
    first = time.perf_counter() - start  # includes the bump geometry, cached afterwards
    steady, _ = _median(lambda r: run_trial(dist, RAPPOR(EPS), CubeArgmax(h_scale), point, r, 0,
                                            "sufficient"), 15)
    return (f"`cls_label_ldp` at N = 10^9, d = {D} (G = {G_law}, {dist.n_bumps(G_law)} bumps), "
            f"sufficient statistics: first trial {first:.4f} s (bump geometry included), then "
            f"{steady:.5f} s per trial.")


if __name__ == "__main__":
    import argparse

    import bench_args

    def _options(parser):
        # the child process of section 2 (a heap never given back): not for people
        parser.add_argument("--heap-kept", action="store_true", help=argparse.SUPPRESS)

    if bench_args.parse(__doc__, "benchmarks/bench_paths.py", configure=_options).heap_kept:
        print(json.dumps(at_top()))
    else:
        print("\n".join(run()))
