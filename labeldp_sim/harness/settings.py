"""How trials run: the validated ``runner.*`` settings (SPEC §9); the numbers never depend on them.

:func:`labeldp_sim.harness.config.validate_runner` builds them from a composed
config; :mod:`labeldp_sim.harness.cluster` and :mod:`labeldp_sim.harness.runner` read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["RunnerSettings", "DaskSettings", "SlurmSettings", "parse_memory"]


@dataclass(frozen=True)
class SlurmSettings:
    """A dask-jobqueue SLURMCluster (``runner.dask.slurm.*``, from ``runner=slurm``).

    Attributes
    ----------
    jobs : int
        SLURM jobs the cluster scales to, >= 1.
    cores : int
        Cores per job (``sbatch --cpus-per-task``), >= 1.
    processes : int
        One-thread worker processes per job, in [1, cores].
    memory : str
        Memory per job (``sbatch --mem``), e.g. ``"16GB"``, shared by its workers.
    walltime : str
        Time limit per job, in one of sbatch's ``--time`` forms.
    account, partition, interface : str or None
        ``sbatch -A``, ``sbatch -p`` (dask-jobqueue's ``queue``), and the network
        interface of the workers and scheduler; None leaves SLURM's default.
    job_extra_directives, job_script_prologue : tuple of str
        More ``#SBATCH`` options, and shell lines run before each worker starts.
    """

    jobs: int
    cores: int
    processes: int
    memory: str
    walltime: str
    account: str | None = None
    partition: str | None = None
    interface: str | None = None
    job_extra_directives: tuple = ()
    job_script_prologue: tuple = ()

    def cluster_kwargs(self) -> dict:
        """The keyword arguments of ``dask_jobqueue.SLURMCluster`` for these settings.

        ``jobs`` is not among them: the cluster is scaled to it once it exists
        (:mod:`labeldp_sim.harness.cluster`).
        """
        kwargs = dict(cores=self.cores, processes=self.processes, memory=self.memory,
                      walltime=self.walltime, job_extra_directives=list(self.job_extra_directives),
                      job_script_prologue=list(self.job_script_prologue))
        # None would be written as such into the job script by some dask-jobqueue versions:
        # an unset option is left out so that dask-jobqueue's own configuration applies
        for key, value in (("account", self.account), ("queue", self.partition),
                           ("interface", self.interface)):
            if value is not None:
                kwargs[key] = value
        return kwargs


@dataclass(frozen=True)
class DaskSettings:
    """Where ``runner.backend=dask`` runs (``runner.dask.*``).

    Attributes
    ----------
    cluster : str
        ``"local"``: a LocalCluster of ``runner.n_jobs`` one-thread worker
        processes; ``"slurm"``: a SLURMCluster from :attr:`slurm`.  Not used
        when :attr:`scheduler` is set.
    scheduler : str or None
        Address of a running scheduler to join (``tcp://host:8786``).
    startup_timeout : float
        Seconds allowed for the workers to start: all of a LocalCluster's, the
        first one of a scheduler's or of a SLURM cluster's.
    slurm : SlurmSettings or None
        The SLURM cluster (``runner=slurm``).
    """

    cluster: str = "local"
    scheduler: str | None = None
    startup_timeout: float = 60.0
    slurm: SlurmSettings | None = None


@dataclass(frozen=True)
class RunnerSettings:
    """How trials run (``runner.*``); the numbers never depend on these.

    Attributes
    ----------
    n_jobs : int
        Workers, non-zero (-1 = all cores): joblib's, or a Dask LocalCluster's.
    backend : str
        One of :data:`BACKENDS`.
    chunk : int
        Trials per task and per store transaction, >= 1.
    progress : bool
        Show a progress bar.
    reuse : bool
        Reuse stored trials of the same config key (false recomputes them).
    dask : DaskSettings
        The Dask cluster of ``backend="dask"`` (checked whatever the backend).
    """

    n_jobs: int
    backend: str
    chunk: int
    progress: bool
    reuse: bool
    dask: DaskSettings = DaskSettings()


def parse_memory(text: str) -> float:
    """``text`` in bytes by Dask's reading (the one dask-jobqueue uses), or 0 when it reads none.

    A unit is required: a bare number would be bytes to Dask and megabytes to sbatch.
    """
    from dask.utils import parse_bytes

    if not re.search(r"[A-Za-z]", text):
        return 0
    try:
        return parse_bytes(text)
    except (ValueError, TypeError):
        return 0
