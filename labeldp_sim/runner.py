"""Monte-Carlo runner: trials keyed on stable ids, joblib-parallel, resumable.

Replicate r of grid point p draws all its randomness from
``SeedSequence(seed, spawn_key=(*sha256(p.id)[:16 bytes], r))``, so a trial's
numbers do not depend on n_jobs, backend, chunking, order, or on which other
points are in the grid.

Completed chunks are appended to ``trials.partial.csv`` as they arrive; a
crash or Ctrl-C loses at most the chunks in flight, and re-running the same
command computes only the missing trials (rows are reused when their
``config_key`` and ``seed_key`` match).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from tqdm.auto import tqdm

from .experiment import Experiment
from .grid import Point

__all__ = ["run_trial", "run_sweep", "trial_rng"]


def trial_rng(seed: int, point: Point, replicate: int) -> np.random.Generator:
    """The random stream of one trial."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*point.seed_words, replicate)))


def run_trial(distribution, mechanism, estimator, point: Point, replicate: int, seed: int,
              path: str) -> dict:
    """One Monte-Carlo trial: draw η_v, the data (or its counts), fit, exact risk (8)."""
    start = time.perf_counter()
    rng = trial_rng(seed, point, replicate)
    instance = distribution.draw(rng, point.G)
    result = estimator.trial(instance, point, mechanism, rng, path)
    return {"replicate": replicate, **result, "path": path,
            "seconds": round(time.perf_counter() - start, 6)}


def _run_chunk(parts, point, reps, seed, path):
    distribution, mechanism, estimator = parts
    return point, [run_trial(distribution, mechanism, estimator, point, r, seed, path) for r in reps]


def _point_columns(exp: Experiment, point: Point) -> dict:
    dist = exp.distributions[point.d]
    mech = exp.mechanisms[point.id]
    return {
        "experiment": exp.name,
        "cell": exp.cell.name,
        "task": exp.cell.task,
        "privacy_model": mech.privacy.model,
        "protection": mech.privacy.protects,
        "mechanism": exp.labels["mechanism"],
        "estimator": exp.labels["estimator"],
        "distribution": exp.labels["distribution"],
        "minimax_hard": bool(dist.minimax_hard),
        "axis": point.axis,
        "d": point.d,
        "beta": dist.beta,
        "gamma": dist.gamma,
        "p": dist.p,
        "K": getattr(dist, "K", np.nan),
        "N": point.N,
        "eps": point.eps,
        "N_requested": point.N_requested,
        "eps_requested": point.eps_requested,
        "h": point.h,
        "G": point.G,
        "G_est": point.G_est,
        "bumps": dist.n_bumps(point.G),
        "k": point.k,
        "T": point.T,
        "in_regime": point.in_regime,
        "config_key": exp.config_key,
    }


def _rows(exp: Experiment, point: Point, results: list[dict]) -> pd.DataFrame:
    base = _point_columns(exp, point)
    frame = pd.DataFrame(results)
    for key, value in base.items():
        frame[key] = value
    frame["seed_key"] = [point.seed_key(r) for r in frame.replicate]
    order = list(base) + ["replicate", "seed_key", "excess_risk", "regret_fraction",
                          "path", "seconds"]
    return frame[order]


def _load_done(out_dir: Path, config_key: str) -> pd.DataFrame:
    """Trials already computed with the same config_key (final and partial files)."""
    frames = [pd.read_csv(f) for f in (out_dir / "trials.csv", out_dir / "trials.partial.csv")
              if f.exists() and f.stat().st_size > 0]
    if not frames:
        return pd.DataFrame()
    done = pd.concat(frames, ignore_index=True)
    if "config_key" not in done:
        return pd.DataFrame()
    return done[done.config_key == config_key].drop_duplicates("seed_key")


def run_sweep(exp: Experiment, out_dir: Path) -> pd.DataFrame:
    """Run (or resume) every trial of ``exp``; return the trials table.

    Writes ``out_dir/trials.csv`` sorted by grid point and replicate.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / "trials.partial.csv"
    done = _load_done(out_dir, exp.config_key)
    done_keys = set(done.seed_key) if len(done) else set()

    tasks = []
    wanted_keys = []
    for point in exp.points:
        reps = exp.replicates(point)
        keys = [point.seed_key(r) for r in range(reps)]
        wanted_keys += keys
        todo = [r for r, key in zip(range(reps), keys) if key not in done_keys]
        parts = (exp.distributions[point.d], exp.mechanisms[point.id], exp.estimator)
        for start in range(0, len(todo), exp.chunk):
            tasks.append(delayed(_run_chunk)(parts, point, todo[start:start + exp.chunk], exp.seed,
                                             exp.trial_path(point)))
    if len(done):
        done.to_csv(partial, index=False)
    elif partial.exists():
        partial.unlink()

    n_todo = sum(len(t[1][2]) for t in tasks)
    if tasks:
        backend = None if exp.backend == "sequential" else exp.backend
        n_jobs = 1 if exp.backend == "sequential" else exp.n_jobs
        bar = tqdm(total=n_todo, desc=exp.name, unit="trial", delay=2.0,
                   disable=not exp.progress, leave=False)
        parallel = Parallel(n_jobs=n_jobs, backend=backend, return_as="generator_unordered")
        try:
            for point, results in parallel(tasks):
                frame = _rows(exp, point, results)
                frame.to_csv(partial, mode="a", header=not partial.exists() or partial.stat().st_size == 0,
                             index=False)
                bar.update(len(results))
        except KeyboardInterrupt:
            bar.close()
            raise SystemExit(f"interrupted: finished trials are kept in {partial}; "
                             "run the same command again to resume")
        bar.close()

    trials = pd.read_csv(partial) if partial.exists() else done
    trials = trials[trials.seed_key.isin(set(wanted_keys))].drop_duplicates("seed_key")
    order = {key: i for i, key in enumerate(wanted_keys)}
    trials = trials.assign(_order=trials.seed_key.map(order)).sort_values("_order").drop(columns="_order")
    trials = trials.reset_index(drop=True)
    trials.to_csv(out_dir / "trials.csv", index=False)
    if partial.exists():
        partial.unlink()
    return trials
