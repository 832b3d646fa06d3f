"""Sizes that fit in memory: what one trial may hold, and the check every kind makes before it runs.

Each kind estimates the arrays one trial holds (bytes per element × elements, a
lower bound from its sizes: N, n_test, K, m, cube counts...) as :class:`Need`
rows; :func:`check_memory` refuses a trial that cannot fit in its worker's share
of memory (:func:`memory_budget`), naming the key whose value makes it large
and the limit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from labeldp_sim.harness.errors import ConfigError, check
from labeldp_sim.harness.settings import RunnerSettings, parse_memory

__all__ = ["Need", "TrialSize", "MemoryBudget", "memory_budget", "machine_memory", "check_memory", "check_plan_size",
           "PLAN_BYTES_PER_TRIAL", "MEMORY_SHARE"]

# Share of this machine's memory the trials running at once may hold between them: the
# estimates are lower bounds of what a trial allocates, and the driver, the store and the
# interpreter need the rest.
MEMORY_SHARE = 0.9
# A worker of a scheduler this process cannot see (runner.dask.scheduler): assumed no larger.
REMOTE_WORKER_MEMORY = 2 ** 40
# The driver's plan and store keep a few hundred bytes per trial (its key, its row).
PLAN_BYTES_PER_TRIAL = 500


def _gib(n: float) -> str:
    for unit, size in (("EiB", 2 ** 60), ("PiB", 2 ** 50), ("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 2 ** 10:.3g} KiB"


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its cgroup's limit if lower."""
    import psutil

    total = int(psutil.virtual_memory().total)
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


@dataclass(frozen=True)
class MemoryBudget:
    """What one trial may hold: ``per_trial`` bytes, ``workers`` of them at once."""

    per_trial: float
    workers: int
    text: str


def memory_budget(runner: RunnerSettings) -> MemoryBudget:
    """The memory one trial may hold under ``runner``.

    Local workers (loky, threading, sequential, a Dask LocalCluster) share
    :data:`MEMORY_SHARE` of :func:`machine_memory`; a SLURM worker has its
    job's ``memory`` over its ``processes``; a worker of a remote scheduler is
    assumed to have at most :data:`REMOTE_WORKER_MEMORY`.
    """
    dask = runner.dask
    if runner.backend == "dask" and dask.scheduler is not None:
        return MemoryBudget(REMOTE_WORKER_MEMORY, 1, f"{_gib(REMOTE_WORKER_MEMORY)} assumed for a worker of "
                                                     "runner.dask.scheduler")
    if runner.backend == "dask" and dask.cluster == "slurm" and dask.slurm is not None:
        per = parse_memory(dask.slurm.memory) / dask.slurm.processes
        return MemoryBudget(per, 1, f"runner.dask.slurm.memory {dask.slurm.memory} over "
                                    f"{dask.slurm.processes} worker process(es) per job")
    if runner.backend == "sequential":
        workers = 1
    else:
        workers = runner.n_jobs if runner.n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + runner.n_jobs)
    total = MEMORY_SHARE * machine_memory()
    return MemoryBudget(total / workers, workers,
                        f"{MEMORY_SHARE:.0%} of this machine's {_gib(machine_memory())}"
                        + (f" shared by {workers} workers (runner.n_jobs)" if workers > 1 else ""))


class Need(NamedTuple):
    """One array (or set of arrays) a trial holds: its ``bytes``, what it is, and the config
    keys its size comes from, each as ``key -> (value shown in an error, its size factor)``."""

    bytes: float
    what: str
    keys: dict


class TrialSize(NamedTuple):
    """The sizes one trial's components size their arrays by (each component's ``trial_needs``).

    ``N`` samples in ``d`` dimensions, ``K`` classes (0 for regression), ``cubes``
    estimator cubes; ``key`` and ``got`` name the config key (and its value) an
    error blames for N.  ``per_sample`` and ``sufficient`` say which data path the
    trial takes (neither: an exact expected risk, which holds a few numbers per cube).
    """

    N: int
    d: int
    K: float
    cubes: float
    key: str
    got: object
    per_sample: bool
    sufficient: bool


def check_memory(needs: list, runner: RunnerSettings, where: str) -> None:
    """Refuse a trial whose arrays (``needs``, lower bounds) cannot fit in its memory.

    The key blamed is the one with the largest size factor in the largest
    need (``kclass.n_test`` in n_test × k × K when n_test is the large one).
    When one trial fits but ``runner.n_jobs`` of them at once do not,
    ``runner.n_jobs`` is blamed instead, with the number of workers that fit.
    """
    needs = [n for n in needs if n.bytes > 0]
    if not needs:
        return
    total = float(sum(n.bytes for n in needs))
    budget = memory_budget(runner)
    if total <= budget.per_trial:
        return
    big = max(needs, key=lambda n: n.bytes)
    detail = f"{where}: a trial holds >= {_gib(total)}, mostly {big.what}"
    if budget.workers > 1 and total <= budget.per_trial * budget.workers:
        fit = int(budget.per_trial * budget.workers // total)
        raise ConfigError("runner.n_jobs", runner.n_jobs,
                          f"at most {fit} worker{'s' if fit > 1 else ''} at this size ({detail}; {budget.text})")
    key, (got, _) = max(big.keys.items(), key=lambda item: item[1][1])
    raise ConfigError(key, got, f"values whose trial fits in memory ({detail}; the limit is "
                                f"{_gib(budget.per_trial)} per trial: {budget.text})")


def check_plan_size(trials: int, key: str, got, runner: RunnerSettings) -> None:
    """Refuse a run whose trial count alone cannot be planned in the driver's memory."""
    need = trials * PLAN_BYTES_PER_TRIAL
    limit = MEMORY_SHARE * machine_memory()
    check(need <= limit, key, got, f"values giving at most {int(limit // PLAN_BYTES_PER_TRIAL):,} trials in "
          f"one run (this one has {trials:,}; the run's plan and store keep ~{PLAN_BYTES_PER_TRIAL} B per "
          f"trial: {_gib(need)} of this machine's {_gib(machine_memory())})")
