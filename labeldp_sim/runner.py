"""Monte-Carlo runner: trials keyed on stable ids, joblib-parallel, stored as they finish.

Replicate r of grid point p draws all its randomness from
``SeedSequence(seed, spawn_key=(*sha256(p.id)[:16 bytes], r))``, so a trial's
numbers do not depend on n_jobs, backend, chunking, order, or on which other
points are in the grid.

Every experiment kind hands :func:`execute` a :class:`Plan`: the records it
wants (in export order) and how to compute any subset of them.  ``execute``
reuses what the trial store already holds under the same config key (which
hashes the code), says so in one line before computing, computes the rest in
parallel and stores each finished chunk in one transaction.  Only this driver
process writes to the store; a crash, Ctrl-C or ``kill -9`` loses at most the
chunks in flight, and the same command resumes.
"""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from tqdm.auto import tqdm

from .grid import Point
from .provenance import code_fingerprint, git_commit
from .store import STORE_NAME, Column, Schema, TrialStore

if TYPE_CHECKING:  # for annotations only: workers need not import the validation layer
    from .experiment import Experiment

__all__ = ["Plan", "SweepPlan", "RunStats", "execute", "run_trial", "run_sweep", "trial_rng",
           "RATE_TRIALS"]


class Plan(ABC):
    """What one experiment wants computed.

    Attributes
    ----------
    experiment, config_key : the first two key columns of every record
    schema : the :class:`~labeldp_sim.store.Schema` its records are stored under
    runner : the :class:`~labeldp_sim.experiment.RunnerSettings`
    """

    experiment: str
    config_key: str
    schema: Schema
    runner: object

    @abstractmethod
    def wanted(self) -> list:
        """Row keys (tuples of ``schema.row_key`` values) of every record, in export order."""

    @abstractmethod
    def tasks(self, todo: list) -> list:
        """joblib ``delayed`` calls that compute the records of ``todo`` (row keys).

        Each call returns a DataFrame of records with every schema column except
        ``experiment``, ``config_key``, ``run_id`` and ``computed_by``.
        """

    def label(self) -> str:
        return self.experiment


@dataclass
class RunStats:
    """What a run reused and computed, for the reuse line and provenance."""

    store: str
    config_key: str
    wanted: int
    reused: int
    computed: int
    computed_by: dict
    run_id: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _commits(frame: pd.DataFrame) -> dict:
    return dict(Counter(frame.computed_by.fillna("unknown"))) if len(frame) else {}


def _describe_commits(commits: dict) -> str:
    return ", ".join(f"{n:,} by {c[:12]}{'+dirty' if c.endswith('+dirty') else ''}"
                     for c, n in sorted(commits.items(), key=lambda kv: -kv[1]))


def execute(plan: Plan, store: TrialStore) -> tuple[pd.DataFrame, RunStats]:
    """Run (or resume) every record of ``plan``; return them in export order, and the stats."""
    settings = plan.runner
    schema = plan.schema
    wanted = plan.wanted()
    stored = store.load(schema, plan.experiment, plan.config_key)
    stored_keys = list(stored[list(schema.row_key)].itertuples(index=False, name=None))
    reused_keys = set(stored_keys) & set(wanted) if settings.reuse else set()
    todo = [key for key in wanted if key not in reused_keys]
    reused_frame = stored[[key in reused_keys for key in stored_keys]]
    commit = git_commit()
    prior = _commits(reused_frame)
    where = f"from {store.path}" + (f" (computed by {_describe_commits(prior)})" if prior else "")
    how = ("runner.reuse=false recomputes" if settings.reuse
           else "runner.reuse=false: stored trials are recomputed and replaced")
    print(f"{plan.label()}: {len(wanted):,} trials: {len(reused_keys):,} reused {where}, "
          f"{len(todo):,} to compute [config {plan.config_key}; {how}]", flush=True)

    run_id = store.start_run(schema, plan.experiment, plan.config_key, commit, code_fingerprint(),
                             len(wanted), len(reused_keys))
    stored_now = [0]  # trials of this run committed so far, kept through an interrupt
    status = "interrupted"
    try:
        if todo:
            _compute(plan, store, todo, run_id, commit, stored_now)
        status = "finished"
    except KeyboardInterrupt:
        print(f"{plan.label()}: interrupted: {stored_now[0]:,} trials of this run are kept in "
              f"{store.path}; run the same command again to resume", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        store.finish_run(run_id, status, stored_now[0])
    computed = stored_now[0]

    records = store.load(schema, plan.experiment, plan.config_key)
    keys = list(records[list(schema.row_key)].itertuples(index=False, name=None))
    order = {key: i for i, key in enumerate(wanted)}
    position = np.array([order.get(key, -1) for key in keys], dtype=np.int64)
    records = records[position >= 0].iloc[np.argsort(position[position >= 0], kind="stable")]
    records = records.reset_index(drop=True)
    if len(records) != len(wanted):  # a concurrent reuse=false run may be replacing rows: never export a gap
        raise RuntimeError(f"{plan.label()}: {len(wanted) - len(records)} wanted records missing "
                           f"from {store.path} after the run")
    stats = RunStats(str(store.path), plan.config_key, len(wanted), len(reused_keys), computed,
                     _commits(records), run_id)
    return records, stats


def _compute(plan: Plan, store: TrialStore, todo: list, run_id: str, commit: str,
             stored_now: list) -> None:
    settings = plan.runner
    backend = None if settings.backend == "sequential" else settings.backend
    n_jobs = 1 if settings.backend == "sequential" else settings.n_jobs
    bar = tqdm(total=len(todo), desc=plan.label(), unit="trial", delay=2.0, leave=False,
               disable=not settings.progress or not sys.stderr.isatty())
    parallel = Parallel(n_jobs=n_jobs, backend=backend, return_as="generator_unordered")
    try:
        for frame in parallel(plan.tasks(todo)):
            frame = frame.assign(experiment=plan.experiment, config_key=plan.config_key,
                                 run_id=run_id, computed_by=commit)
            store.write(plan.schema, frame, replace=not settings.reuse)
            stored_now[0] += len(frame)
            bar.update(len(frame))
    finally:
        bar.close()


# --------------------------------------------------------------------------- Table I sweeps

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


RATE_TRIALS = Schema("rate_trials", (
    Column("experiment", "TEXT"), Column("cell", "TEXT"), Column("task", "TEXT"),
    Column("privacy_model", "TEXT"), Column("protection", "TEXT"), Column("mechanism", "TEXT"),
    Column("estimator", "TEXT"), Column("distribution", "TEXT"), Column("minimax_hard", "BOOLEAN"),
    Column("axis", "TEXT"), Column("d", "INTEGER"), Column("beta", "REAL"), Column("gamma", "REAL"),
    Column("p", "REAL"), Column("K", "REAL", sql="K_classes"), Column("N", "INTEGER"),
    Column("eps", "REAL"), Column("N_requested", "REAL"), Column("eps_requested", "REAL"),
    Column("h", "REAL"), Column("G", "INTEGER"), Column("G_est", "INTEGER"),
    Column("bumps", "INTEGER"), Column("k", "REAL"), Column("T", "REAL"),
    Column("in_regime", "BOOLEAN"), Column("config_key", "TEXT"), Column("replicate", "INTEGER"),
    Column("seed_key", "TEXT"), Column("excess_risk", "REAL"), Column("regret_fraction", "REAL"),
    Column("path", "TEXT"), Column("seconds", "REAL"),
), key=("experiment", "config_key", "seed_key"))


def _point_columns(exp: Experiment, point: Point) -> dict:
    dist = exp.distributions[point.d]
    mech = exp.mechanisms[point.id]
    return {
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
    }


def _run_chunk(parts, point, columns, reps, seed, path) -> pd.DataFrame:
    distribution, mechanism, estimator = parts
    frame = pd.DataFrame([run_trial(distribution, mechanism, estimator, point, r, seed, path)
                          for r in reps])
    for key, value in columns.items():
        frame[key] = value
    frame["seed_key"] = [point.seed_key(r) for r in frame.replicate]
    return frame


class SweepPlan(Plan):
    """The trials of one Table I experiment: every grid point × its replicates."""

    schema = RATE_TRIALS

    def __init__(self, exp: Experiment):
        self.exp = exp
        self.experiment = exp.name
        self.config_key = exp.config_key
        self.runner = exp.runner
        self._points = {}
        for point in exp.points:
            for r in range(exp.replicates(point)):
                self._points[point.seed_key(r)] = (point, r)

    def wanted(self) -> list:
        return [(key,) for key in self._points]

    def tasks(self, todo: list) -> list:
        exp = self.exp
        by_point: dict = {}
        for (key,) in todo:
            point, r = self._points[key]
            by_point.setdefault(point.id, (point, []))[1].append(r)
        calls = []
        for point, reps in by_point.values():
            parts = (exp.distributions[point.d], exp.mechanisms[point.id], exp.estimator)
            columns = _point_columns(exp, point)
            for start in range(0, len(reps), exp.runner.chunk):
                calls.append(delayed(_run_chunk)(parts, point, columns,
                                                 reps[start:start + exp.runner.chunk], exp.seed,
                                                 exp.trial_path(point)))
        return calls


def run_sweep(exp: Experiment, store: TrialStore | None = None) -> pd.DataFrame:
    """Run (or resume) every trial of ``exp`` through the store; return the trials table.

    The store defaults to ``<results_dir>/trials.sqlite``.  The table has one row
    per trial, sorted by grid point and replicate; ``.attrs["run"]`` holds the
    :class:`RunStats`.
    """
    store = store or TrialStore(exp.results_dir / STORE_NAME)
    trials, stats = execute(SweepPlan(exp), store)
    trials.attrs["run"] = stats
    return trials
