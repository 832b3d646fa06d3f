"""Monte-Carlo runner: trials keyed on stable ids, joblib-parallel, stored as they finish.

Replicate r of grid point p draws all its randomness from
``SeedSequence(seed, spawn_key=(*sha256(p.id)[:16 bytes], r))`` (:func:`trial_rng`, through
:func:`~labeldp_sim.harness.seeds.derive_rng`), so a trial's
numbers do not depend on n_jobs, backend, chunking, order, or on which other
points are in the grid.

Every experiment kind hands :func:`execute` a :class:`Plan`: the records it
wants (in export order) and how to compute any subset of them.  ``execute``
reuses what the trial store already holds under the same config key (which
hashes the code), says so in one line before computing, computes the rest in
parallel and stores each finished chunk in one transaction.  Only this driver
process writes to the store; a crash, Ctrl-C or ``kill -9`` loses at most the
chunks in flight, and the same command resumes.

The tasks run on joblib's loky or threading backend, in this process
(``sequential``), or on a Dask cluster (``runner.backend=dask``, SPEC §9)
through joblib's Dask backend: a LocalCluster, a running scheduler or SLURM
(:mod:`labeldp_sim.harness.cluster`).  On Dask too the workers only compute and
return DataFrames; the driver writes each one to the store as it arrives.
"""

from __future__ import annotations

import types
import warnings
from abc import ABC, abstractmethod
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, parallel_config

from labeldp_sim.harness import interrupts
from labeldp_sim.harness.cluster import ClusterError, dask_client, fingerprint_on_worker
from labeldp_sim.harness.logs import get_logger, progress
from labeldp_sim.harness.points import Point
from labeldp_sim.harness.provenance import code_fingerprint, git_commit
from labeldp_sim.harness.seeds import derive_rng
from labeldp_sim.harness.store import Schema, StoreError, TrialStore

__all__ = ["Plan", "RunStats", "execute", "shared_arguments", "trial_rng"]

# joblib's own threshold for scattering an argument on its own (which it measures with
# dask's sizeof, blind to the inside of plain objects: hence pickled bytes here)
SCATTER_MIN_BYTES = 1000
log = get_logger("runner")


class Plan(ABC):
    """What one experiment wants computed.

    Attributes
    ----------
    experiment, config_key : the first two key columns of every record
    schema : the :class:`~labeldp_sim.harness.store.Schema` its records are stored under
    runner : the :class:`~labeldp_sim.harness.config.RunnerSettings`
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
    log.info(f"{plan.label()}: {len(wanted):,} trials: {len(reused_keys):,} reused {where}, "
             f"{len(todo):,} to compute [config {plan.config_key}; {how}]")

    stored_now = [0]  # records this run inserted and committed: exact through an interrupt
    status = "interrupted"
    run_id = None
    interrupts.describe(lambda: (plan.label(), f"{stored_now[0]:,} trials of this run are kept in "
                                               f"{store.path}; run the same command again to resume"))
    try:
        with interrupts.deferred():  # the run is recorded, with its id, or not at all
            run_id = store.start_run(schema, plan.experiment, plan.config_key, commit,
                                     code_fingerprint(plan.spec.packages), len(wanted), len(reused_keys))
        if todo:
            _compute(plan, store, todo, run_id, commit, stored_now)
        status = "finished"
    except ClusterError as err:  # the cluster did not start, or lost a task: one line, like bad input
        status = "failed"
        kept = (f" ({stored_now[0]:,} trials of this run are kept in {store.path})"
                if stored_now[0] else "")
        log.error(f"labeldp-sim: error: {err}{kept}")
        raise SystemExit(1) from None
    except Exception:  # a store that fails (a full disk: StoreError), or a fault of the code
        status = "failed"
        raise
    finally:
        if run_id is not None:
            with interrupts.deferred():  # the status, and the line that matches it
                try:
                    store.finish_run(run_id, status, stored_now[0])
                except StoreError:
                    # the store failing again (still full): the first fault is the one to report
                    if status == "finished":
                        raise
                if status == "finished":
                    interrupts.describe(lambda: (
                        plan.label(), f"all {len(wanted):,} trials are stored in {store.path} "
                                      f"({stored_now[0]:,} computed by this run); the exported files are "
                                      "left as they were; run the same command again to write them"))
    computed = stored_now[0]

    # the reused records were verified by the first load; the others were written just now
    records = (store.load(schema, plan.experiment, plan.config_key, verify=False) if todo
               else reused_frame)  # nothing was written: the store holds what the first load read
    keys = list(records[list(schema.row_key)].itertuples(index=False, name=None))
    order = {key: i for i, key in enumerate(wanted)}
    position = np.array([order.get(key, -1) for key in keys], dtype=np.int64)
    records = records[position >= 0].iloc[np.argsort(position[position >= 0], kind="stable")]
    records = records.reset_index(drop=True)
    if len(records) != len(wanted):  # a concurrent reuse=false run may be replacing rows: never export a gap
        # a StoreError: one line and exit status 1 (cli), not a traceback
        raise StoreError(f"{plan.label()}: {len(wanted) - len(records):,} of the {len(wanted):,} wanted "
                         f"records are missing from {store.path} after the run (another run with "
                         "runner.reuse=false replacing them?); run the same command again")
    stats = RunStats(str(store.path), plan.config_key, len(wanted), len(reused_keys), computed,
                     _commits(records), run_id)
    return records, stats


def _compute(plan: Plan, store: TrialStore, todo: list, run_id: str, commit: str,
             stored_now: list) -> None:
    settings = plan.runner
    # a tqdm bar on a terminal, else a line every so often; none with runner.progress=false
    bar = progress(plan.label(), len(todo), settings.progress)
    try:
        with _finished_frames(plan, plan.tasks(todo)) as frames:
            for frame in frames:
                frame = frame.assign(experiment=plan.experiment, config_key=plan.config_key,
                                     run_id=run_id, computed_by=commit)
                with interrupts.deferred():  # the chunk and its count: both or neither
                    # rows a concurrent run stored first are not this run's (INSERT OR IGNORE)
                    stored_now[0] += store.write(plan.schema, frame, replace=not settings.reuse)
                bar.update(len(frame))
    finally:
        bar.close()


@contextmanager
def _finished_frames(plan: Plan, tasks: list):
    """The DataFrames of ``tasks`` as they finish, in any order, on the configured backend.

    The generator is closed before the context ends, so that on Dask no task is
    still being collected when the client and cluster close.
    """
    settings = plan.runner
    if settings.backend != "dask":
        backend = None if settings.backend == "sequential" else settings.backend
        n_jobs = 1 if settings.backend == "sequential" else settings.n_jobs
        parallel = Parallel(n_jobs=n_jobs, backend=backend, return_as="generator_unordered",
                            **_worker_setup(settings.backend))
        with ExitStack() as stack:
            # loky's workers start with Ctrl-C blocked: it is the driver's
            with interrupts.spawning(processes=settings.backend == "loky" and n_jobs != 1):
                frames = stack.enter_context(_closing(parallel(tasks)))
            yield frames
        return
    expected = code_fingerprint(plan.spec.packages)
    tasks = [(fingerprint_on_worker, (expected, plan.spec.packages, func, *args), kwargs)
             for func, args, kwargs in tasks]
    # joblib 1.6's Dask backend hands results back as they finish (return_as=
    # "generator_unordered"), so the driver stores each frame on arrival, as with loky.
    # dask_backend: a task that Dask gives up on (KilledWorker) raises TaskLost (a
    # ClusterError) instead of being waited for forever; joblib does not wait for the
    # workers again (dask_client has, with the run's own time-out)
    from labeldp_sim.harness.cluster import dask_backend

    with dask_client(settings) as client, \
            parallel_config(backend=dask_backend(client, shared_arguments(tasks))):
        parallel = Parallel(n_jobs=-1, return_as="generator_unordered",
                            pre_dispatch=pre_dispatch_of(settings))
        with _closing(parallel(tasks)) as frames:
            yield frames


def _worker_setup(backend: str) -> dict:
    """loky workers: SIGINT ignored, and leave when the driver is gone (``kill -9``)."""
    if backend != "loky":
        return {}
    import os

    return {"initializer": interrupts.worker_setup, "initargs": (os.getpid(),)}


def pre_dispatch_of(settings):
    """How many tasks joblib keeps handed to Dask ahead of the results.

    joblib's default, twice the worker threads it finds when the run starts,
    would hold a SLURM cluster whose jobs are still queued to the workers of
    its first job; so there it is twice the workers all its jobs bring.  (Handing
    every task over at once is no answer: joblib then cannot group small tasks
    into batches, and many small tasks cost the scheduler dearly.)  A joined
    scheduler's workers are counted when the run starts.
    """
    dask = settings.dask
    if dask.cluster == "slurm" and dask.scheduler is None:
        return 2 * dask.slurm.jobs * dask.slurm.processes
    return "2*n_jobs"


@contextmanager
def _closing(frames):
    """``frames`` (a joblib generator), closed on the way out.

    Closed early (an exception or Ctrl-C while a frame is being stored), joblib
    cancels the remaining tasks and warns that their results go unused; that
    is what an interrupted run means, and the interrupt line says what was
    kept, so the warning is not shown.
    """
    try:
        yield frames
    finally:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*(been successfully executed|been cancelled)",
                                    category=UserWarning)
            frames.close()


def shared_arguments(tasks: list, min_bytes: int | None = None) -> list:
    """The large arguments that more than one task receives as the very same object.

    A plan passes the same distribution, mechanism, estimator or spec objects
    to many tasks (a law-free spec pickles to about 25 kB, in every one of
    hundreds of tasks).  Given to joblib's Dask backend as ``scatter``, each is
    sent to every worker once, and the tasks carry a reference instead of a
    pickled copy each.  Objects that pickle to fewer than ``min_bytes``
    (default :data:`SCATTER_MIN_BYTES`) are left out: a reference and the
    scheduler's bookkeeping for it cost about as much.  Sharing one object
    between the tasks of a worker is safe: the threading backend already does
    it, and the tasks do not mutate their arguments (``tests/test_runner.py``
    compares the backends' numbers).
    """
    import cloudpickle

    min_bytes = SCATTER_MIN_BYTES if min_bytes is None else min_bytes
    # numbers, strings and functions (which travel as their qualified names) are never large
    small = (int, float, complex, str, bytes, bool, type(None), np.generic, type,
             types.FunctionType, types.BuiltinFunctionType)
    seen: dict = {}
    for _, args, kwargs in tasks:
        for arg in (*args, *kwargs.values()):
            if not isinstance(arg, small):
                seen.setdefault(id(arg), [arg, 0])[1] += 1
    return [arg for arg, count in seen.values()
            if count > 1 and len(cloudpickle.dumps(arg)) >= min_bytes]


# --------------------------------------------------------------------------- seeds


def trial_rng(seed: int, point: Point, replicate: int) -> np.random.Generator:
    """The random stream of one trial: replicate ``replicate`` of ``point``."""
    return derive_rng(seed, *point.seed_words, replicate)
