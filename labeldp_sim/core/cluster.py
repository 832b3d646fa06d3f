"""The Dask cluster of ``runner.backend=dask``: start or join it, wait for its workers, close it.

:func:`dask_client` is the one place where a cluster lives.  It yields a
:class:`distributed.Client` once the workers have started and closes the client
and any cluster it started on the way out, whatever the way out is: the end of
the run, an exception, or Ctrl-C (``KeyboardInterrupt``).  Three clusters are
possible (``runner.dask``, :class:`~labeldp_sim.core.config.DaskSettings`):

* ``cluster: local`` (the default): a LocalCluster on this machine of
  ``runner.n_jobs`` worker processes with one thread each, like loky's
  workers (much of a trial holds the GIL: processes scale where threads
  would not);
* ``scheduler: tcp://host:8786``: a running scheduler's workers (the cluster
  is left running; only the client is closed);
* ``cluster: slurm`` (``runner=slurm``): a dask-jobqueue SLURMCluster scaled to
  ``runner.dask.slurm.jobs`` batch jobs, cancelled when the run ends.

Workers only compute: they return DataFrames, and the driver alone writes the
trial store (:mod:`labeldp_sim.core.runner`), so a worker that dies loses
nothing stored and the store never sees two writers on other machines.

A cluster that cannot start raises :class:`ClusterError`, one line naming the
config key to change.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from contextlib import contextmanager
from typing import Iterator

from .errors import first_line

__all__ = ["ClusterError", "dask_client", "local_workers", "fingerprint_on_worker"]

# the loggers of the driver process that report transfers cut short by closing the client
SHUTDOWN_LOGGERS = ("distributed.scheduler", "distributed.client", "distributed.core", "tornado.application",
                    "asyncio")
# seconds that closing a client or a cluster may take before it is abandoned; a worker busy
# with a long trial does not delay the shutdown, it is killed with its process
CLOSE_TIMEOUT = 20


class ClusterError(RuntimeError):
    """A Dask cluster that did not start, could not be reached, or runs other code.

    Parameters
    ----------
    key : str
        The config key to look at (``runner.dask.startup_timeout``...).
    message : str
        What happened and what to do, one line.
    """

    def __init__(self, key: str, message: str):
        self.key, self.message = key, message
        super().__init__(f"{key}: {message}")

    def __reduce__(self):  # raised on a worker, it travels back to the driver pickled
        return type(self), (self.key, self.message)


def local_workers(n_jobs: int) -> int:
    """Workers of a LocalCluster for ``runner.n_jobs``, read as joblib reads it.

    A positive value is the count; -1 is every core, -2 all but one, and so on,
    never fewer than one.
    """
    return n_jobs if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + n_jobs)


@contextmanager
def dask_client(settings) -> Iterator:
    """A connected Client whose workers have started; client and cluster closed on exit.

    Parameters
    ----------
    settings : RunnerSettings
        ``n_jobs`` and ``dask`` are read.

    Yields
    ------
    distributed.Client
        Not set as Dask's default client, so nothing else in the process picks it up.

    Raises
    ------
    ClusterError
        When the scheduler cannot be reached, or the workers (every worker of a
        LocalCluster, the first one otherwise) do not start within
        ``runner.dask.startup_timeout`` seconds.
    """
    from distributed import Client

    dask = settings.dask
    cluster = client = None
    try:
        if dask.scheduler is not None:
            try:
                client = Client(dask.scheduler, timeout=dask.startup_timeout, set_as_default=False)
            except OSError as err:  # distributed's connect time-out is an OSError too
                raise ClusterError("runner.dask.scheduler", f"no scheduler answered at {dask.scheduler} "
                                   f"within {dask.startup_timeout:g} s ({first_line(err)}); start it or "
                                   "fix the address") from None
            wanted, what = 1, f"the scheduler at {dask.scheduler}"
        else:
            cluster = _slurm_cluster(dask.slurm) if dask.cluster == "slurm" else _local_cluster()
            # the client first: one made for a cluster that is starting workers waits for them,
            # without a time-out
            client = Client(cluster, set_as_default=False)
            if dask.cluster == "slurm":
                cluster.scale(jobs=dask.slurm.jobs)
                wanted, what = 1, f"SLURM, {dask.slurm.jobs} job(s): see squeue and the jobs' output files"
            else:
                wanted, what = local_workers(settings.n_jobs), "LocalCluster"
                cluster.scale(wanted)
        _wait_for_workers(client, wanted, dask.startup_timeout, what)
        yield client
    finally:
        _close(client, cluster)


def _local_cluster():
    from distributed import LocalCluster

    # no workers yet: they are started by scale() and waited for with the run's own time-out.
    # The scheduler's HTTP server (health checks; the dashboard where bokeh is installed) on a
    # free port: two runs on one machine would otherwise fight over 8787.
    cluster = LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR)
    _keep_ctrl_c()
    cluster.sync(_leave_ctrl_c_to_the_driver)
    return cluster


async def _leave_ctrl_c_to_the_driver() -> None:
    """Block SIGINT in the event-loop thread, whose threads start the worker processes.

    A Ctrl-C on a terminal reaches every process of the foreground group, the
    local workers included, and each would die with tracebacks of its own
    while the driver is closing them in order.  A process starts with the
    signal mask of the thread that started it, and a blocked SIGINT is never
    delivered; so the workers, from their first instruction (before any handler
    of theirs could be set) and after a restart, leave Ctrl-C to the driver
    (:func:`_close`).  The driver itself still gets it: Python runs signal
    handlers in the main thread, whose mask is untouched.

    multiprocessing's resource tracker is started first: starting it blocks
    SIGINT for a moment and then unblocks it, which would undo this block.
    """
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _keep_ctrl_c() -> None:
    """Stop the garbage-collector timing that a scheduler in this process switches on.

    It runs Python callbacks inside every collection, and a Ctrl-C arriving
    during one is swallowed ("Exception ignored in ... _gc_callback") and the
    run goes on.  It only feeds a log warning about long collections.
    """
    from distributed.gc import disable_gc_diagnosis

    disable_gc_diagnosis(force=True)


def _slurm_cluster(slurm):
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as err:  # validation found it; it may have gone since
        raise ClusterError("runner.dask.cluster", f"slurm needs dask-jobqueue ({first_line(err)}): "
                           "pip install -e '.[slurm]'") from None
    cluster = SLURMCluster(**slurm.cluster_kwargs())
    _keep_ctrl_c()  # its scheduler runs in this process too
    return cluster


def _wait_for_workers(client, wanted: int, timeout: float, what: str) -> None:
    try:
        client.wait_for_workers(wanted, timeout=timeout)
    except TimeoutError as err:  # distributed's WorkerStartTimeoutError says how many came
        started = getattr(err, "available_workers", "fewer")
        raise ClusterError("runner.dask.startup_timeout",
                           f"{started} of {wanted} Dask worker(s) started within {timeout:g} s ({what}); "
                           "raise runner.dask.startup_timeout or find why the workers do not start") from None


def _close(client, cluster) -> None:
    """Close the client, then the cluster (a joined scheduler's is left running).

    The cluster is closed even when closing the client fails, a second Ctrl-C
    included.  Closing the client releases its tasks: those still queued on a
    joined scheduler are dropped.  A failure to close is reported on stderr and
    not raised: it must not hide the exception (or the Ctrl-C) ending the run.
    """
    with _quiet(SHUTDOWN_LOGGERS):
        try:
            if client is not None:
                _try(client.close, "client", timeout=CLOSE_TIMEOUT)
        finally:
            if cluster is not None:
                _try(cluster.close, "cluster", timeout=CLOSE_TIMEOUT)


@contextmanager
def _quiet(names):
    """The loggers ``names`` switched off for the duration.

    When a run stops early, joblib no longer listens, but its Dask backend
    still fetches the results of tasks that finish, and a fetch under way as
    the client closes fails: the scheduler logs that it could not hand the
    result over, and tornado that the fetch failed, each with a traceback.
    Nothing is lost by it (the run is stopping; the trials stored are kept),
    so these loggers, and only these, are silent while the cluster closes.
    """
    loggers = [logging.getLogger(name) for name in names]
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, was in zip(loggers, before):
            logger.disabled = was


def _try(close, what: str, *args, **kwargs) -> None:
    try:
        close(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - best effort on the way out
        print(f"labeldp-sim: warning: closing the Dask {what} failed ({first_line(err)})", file=sys.stderr)


def fingerprint_on_worker(expected: str, packages, func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` on a worker whose code fingerprint is ``expected``.

    A scheduler's or a SLURM cluster's workers may run another checkout or
    other numeric library versions than the driver; their trials would then be
    stored under the driver's config key with numbers it would not compute.
    The fingerprint is cached per worker process, so this costs one hash of the
    sources per worker.
    """
    from .provenance import code_fingerprint

    found = code_fingerprint(packages)
    if found != expected:
        raise ClusterError("runner.dask", f"a Dask worker runs other code than the driver (code "
                           f"fingerprint {found}, driver {expected}); run the workers from the same "
                           "checkout and environment")
    return func(*args, **kwargs)
