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
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel
from tqdm.auto import tqdm

from .points import Point
from .provenance import code_fingerprint, git_commit
from .store import Schema, TrialStore

__all__ = ["Plan", "RunStats", "execute", "trial_rng"]


class Plan(ABC):
    """What one experiment wants computed.

    Attributes
    ----------
    experiment, config_key : the first two key columns of every record
    schema : the :class:`~labeldp_sim.core.store.Schema` its records are stored under
    runner : the :class:`~labeldp_sim.core.config.RunnerSettings`
    """

    experiment: str
    config_key: str
    schema: Schema
    runner: object

    def __init__(self, spec):
        """``spec``: a validated experiment with ``name``, ``config_key``, ``runner`` and
        ``packages`` (the paper packages whose code its trials run; their fingerprint is recorded)."""
        self.spec = spec
        self.experiment = spec.name
        self.config_key = spec.config_key
        self.runner = spec.runner

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

    run_id = store.start_run(schema, plan.experiment, plan.config_key, commit, code_fingerprint(plan.spec.packages),
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


# --------------------------------------------------------------------------- seeds


def trial_rng(seed: int, point: Point, replicate: int) -> np.random.Generator:
    """The random stream of one trial."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*point.seed_words, replicate)))
