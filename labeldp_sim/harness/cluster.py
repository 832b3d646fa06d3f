"""The Dask cluster of ``runner.backend=dask``: start or join it, wait for its workers, close it.

:func:`dask_client` is the one place where a cluster lives.  It yields a
:class:`distributed.Client` once the workers have started and closes the client
and any cluster it started on the way out, whatever the way out is: the end of
the run, an exception, or Ctrl-C (``KeyboardInterrupt``).  Three clusters are
possible (``runner.dask``, :class:`~labeldp_sim.harness.config.DaskSettings`):

* ``cluster: local`` (the default): a LocalCluster on this machine of
  ``runner.n_jobs`` worker processes with one thread each, like loky's
  workers (much of a trial holds the GIL: processes scale where threads
  would not);
* ``scheduler: tcp://host:8786``: a running scheduler's workers (the cluster
  is left running; only the client is closed);
* ``cluster: slurm`` (``runner=slurm``): a dask-jobqueue SLURMCluster scaled to
  ``runner.dask.slurm.jobs`` batch jobs, cancelled when the run ends.

Workers only compute: they return DataFrames, and the driver alone writes the
trial store (:mod:`labeldp_sim.harness.runner`), so a worker that dies loses
nothing stored and the store never sees two writers on other machines.

A cluster that cannot start raises :class:`ClusterError`, one line naming the
config key to change: a scheduler address where no Dask scheduler answers (a
web server, the dashboard's port) is found out by a handshake with a time-out
before any Client is made (:func:`check_scheduler`); a worker of a LocalCluster
or SLURMCluster that fails to start ends the wait at once, with its reason.
Once the run is computing, a task that Dask gives up on (its workers died on
every try: ``KilledWorker``) or a scheduler that is lost raises a
:class:`TaskLost` instead of leaving joblib waiting forever
(:func:`dask_backend`).  The constructors that start a cluster or a client
hold SIGINT and SIGTERM (:func:`labeldp_sim.harness.interrupts.deferred`), so an
interrupt never leaves a half-made object behind that nobody closes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import time
from contextlib import contextmanager
from typing import Iterator

from labeldp_sim.harness import interrupts
from labeldp_sim.harness.errors import first_line
from labeldp_sim.harness.logs import get_logger

__all__ = ["ClusterError", "TaskLost", "dask_client", "dask_backend", "check_scheduler", "local_workers",
           "fingerprint_on_worker"]

# the loggers of the driver process that report transfers cut short by closing the client
SHUTDOWN_LOGGERS = ("distributed.scheduler", "distributed.client", "distributed.core", "tornado.application",
                    "asyncio")
# seconds that closing a client or a cluster may take before it is abandoned; a worker busy
# with a long trial does not delay the shutdown, it is killed with its process
CLOSE_TIMEOUT = 20
# seconds a LocalCluster worker gets to close when the run stops early before it is killed
STOP_AFTER = 0.5
# the logger that reports an exception in an event-loop callback: a worker that failed to start
START_LOGGER = "tornado.application"
# what a scheduler in this process (LocalCluster, SLURM) logs as errors when a worker dies during
# the run: results it could not fetch (fetched again), and the task it gives up on, which ends the
# run with its own line (TaskLost)
SCHEDULER_LOGGER = "distributed.scheduler"
WORKER_DEATHS = ("Couldn't gather keys", "workers died while trying to run it",
                 "caused the cluster to lose scattered data")


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


class TaskLost(ClusterError):
    """A task that the Dask cluster gave up on while the run was computing.

    Its workers died on every try (``KilledWorker``: out of memory, killed,
    a crash), or the scheduler or the connection to it was lost.  The trials
    stored before it are kept; the same command resumes.
    """

    def __init__(self, message: str):
        super().__init__("runner.dask", message)

    def __reduce__(self):
        return type(self), (self.message,)


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
        When no Dask scheduler answers at ``runner.dask.scheduler``
        (:func:`check_scheduler`), a worker of a cluster started here fails to
        start, or the workers (every worker of a LocalCluster, the first one
        otherwise) do not start within ``runner.dask.startup_timeout`` seconds.

    Notes
    -----
    When the body raises (or is interrupted), a LocalCluster's workers are
    stopped at once (:func:`_stop_workers_now`), then the client and the
    cluster are closed.  Signal checkpoints for tests
    (:func:`labeldp_sim.harness.interrupts.checkpoint`): ``dask.cluster``,
    ``dask.client``, ``dask.workers``, ``dask.started``.
    """
    from distributed import Client

    dask = settings.dask
    cluster = client = None
    try:
        if dask.scheduler is not None:
            address = check_scheduler(dask.scheduler, dask.startup_timeout)
            interrupts.checkpoint("dask.client")
            with interrupts.deferred():  # the Client is made whole (and closed below) or not at all
                client = _join(address, dask.startup_timeout)
            wanted, what = 1, f"the scheduler at {address}"
        else:
            interrupts.checkpoint("dask.cluster")
            with interrupts.deferred():
                cluster = _slurm_cluster(dask.slurm) if dask.cluster == "slurm" else _local_cluster()
            interrupts.checkpoint("dask.client")
            # the client first: one made for a cluster that is starting workers waits for them,
            # without a time-out
            with interrupts.deferred():
                client = Client(cluster, set_as_default=False)
            if dask.cluster == "slurm":
                cluster.scale(jobs=dask.slurm.jobs)
                wanted, what = 1, f"SLURM, {dask.slurm.jobs} job(s): see squeue and the jobs' output files"
            else:
                wanted, what = local_workers(settings.n_jobs), "LocalCluster"
                cluster.scale(wanted)
        interrupts.checkpoint("dask.workers")
        _wait_for_workers(client, wanted, dask.startup_timeout, what, watch=cluster is not None)
        interrupts.checkpoint("dask.started")
        with _dropped(SCHEDULER_LOGGER, WORKER_DEATHS):
            yield client
    except BaseException:
        _stop_workers_now(cluster)  # the run is stopping: its trials in flight are not waited for
        raise
    finally:
        _close(client, cluster)


def _join(address: str, timeout: float):
    from distributed import Client

    try:
        return Client(address, timeout=timeout, set_as_default=False)
    except (OSError, ValueError) as err:  # it answered the handshake a moment ago: it went away
        raise ClusterError("runner.dask.scheduler", f"the Dask scheduler at {address} did not take "
                           f"this client within {timeout:g} s ({first_line(err)}); check that it "
                           "is running") from None


def check_scheduler(address: str, timeout: float) -> str:
    """``address`` with its port, once a Dask scheduler has answered there; else :class:`ClusterError`.

    distributed's own connection would wait forever for a peer that never
    sends Dask's handshake (a web server) and allocate whatever another
    service's first bytes announce; :func:`~.scheduler_probe.probe_scheduler`
    connects with time-outs instead, and its one-line reason becomes the error.

    Parameters
    ----------
    address : str
        ``scheme://host[:port]`` (tcp, tls, ws, wss); without a port, Dask's
        :data:`~.scheduler_probe.DEFAULT_PORT`.  TLS settings come from Dask's
        configuration, as for a Client.
    timeout : float
        ``runner.dask.startup_timeout``: how long the connection is retried (a
        scheduler may still be starting).
    """
    from labeldp_sim.harness.scheduler_probe import probe_scheduler

    address, problem = probe_scheduler(address, timeout)
    if problem is not None:
        raise ClusterError("runner.dask.scheduler", problem)
    return address


def _local_cluster():
    from distributed import LocalCluster

    # no workers yet: they are started by scale() and waited for with the run's own time-out.
    # The scheduler's HTTP server (health checks; the dashboard where bokeh is installed) on a
    # free port: two runs on one machine would otherwise fight over 8787.  Its workers write to
    # this terminal: only their critical messages.  What goes wrong is said by the run in one
    # line (a lost task, workers that do not start); what they log at ERROR is the teardown of a
    # run stopped early (a heartbeat to a scheduler that is closing), with a traceback each.
    cluster = LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.CRITICAL)
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


def _wait_for_workers(client, wanted: int, timeout: float, what: str, watch: bool = False) -> None:
    """Wait until ``wanted`` workers have joined, at most ``timeout`` seconds.

    With ``watch`` (a cluster started here), a worker that fails to start ends
    the wait at once: the cluster does not try again, so waiting on would only
    run out the time-out.  Its failure, which distributed reports as a
    traceback of an event-loop callback, is held back and named in the error.
    """
    failures = _StartFailures()
    logger = logging.getLogger(START_LOGGER)
    if watch:
        logger.addFilter(failures)
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            try:
                client.wait_for_workers(wanted, timeout=max(0.001, min(left, 0.5) if watch else left))
                return
            except TimeoutError as err:  # distributed's WorkerStartTimeoutError says how many came
                # duck typing of a third-party error: only distributed's WorkerStartTimeoutError carries the count
                started = getattr(err, "available_workers", "fewer")
                if failures.reasons:
                    raise ClusterError("runner.dask", f"a Dask worker failed to start ({what}; "
                                       f"{failures.reasons[0]}); {started} of {wanted} started; run "
                                       "the same command again to retry") from None
                if time.monotonic() >= deadline:
                    raise ClusterError("runner.dask.startup_timeout",
                                       f"{started} of {wanted} Dask worker(s) started within {timeout:g} s "
                                       f"({what}); raise runner.dask.startup_timeout or find why the "
                                       "workers do not start") from None
    finally:
        if watch:
            logger.removeFilter(failures)


class _StartFailures(logging.Filter):
    """Holds back the tracebacks of cluster workers that failed to start, and keeps why."""

    def __init__(self):
        super().__init__()
        self.reasons: list = []

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None or "_correct_state" not in record.getMessage():
            return True
        for _ in range(32):  # down to the first thing that went wrong
            if (error.__cause__ or error.__context__) is None:
                break
            error = error.__cause__ or error.__context__
        self.reasons.append(first_line(error) if str(error) else type(error).__name__)
        return False


def _stop_workers_now(cluster) -> None:
    """Stop the worker processes of a LocalCluster at once: killed if not gone in :data:`STOP_AFTER` s.

    Closed the ordinary way, a worker busy with a trial is waited for (5 s
    each).  A run that stops early (an interrupt, an error) needs nothing
    from its workers (only the driver writes the store), so they are closed
    with a short time-out, before the client and the scheduler.  Best effort,
    never raises; a SLURM cluster's jobs are left to ``close``.
    """
    from distributed import LocalCluster

    if not isinstance(cluster, LocalCluster):
        return

    async def stop(nannies):
        await asyncio.gather(*(nanny.close(timeout=STOP_AFTER, reason="labeldp-sim: the run stopped")
                               for nanny in nannies), return_exceptions=True)

    with _quiet(SHUTDOWN_LOGGERS):
        try:
            cluster.sync(stop, list(cluster.workers.values()), callback_timeout=CLOSE_TIMEOUT)
        except BaseException:  # noqa: BLE001 - cluster.close() follows and tries again
            pass


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
            try:
                if cluster is not None:
                    _try(cluster.close, "cluster", timeout=CLOSE_TIMEOUT)
            finally:
                if client is not None and client.status != "closed":
                    # closing it was cut short (a time-out, a second Ctrl-C): it is not tried
                    # again from Client.__del__ at exit, when the event loop is gone and it
                    # could only print a traceback
                    client.status = "closed"


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


@contextmanager
def _dropped(name: str, fragments):
    """The records of logger ``name`` whose message holds one of ``fragments``, dropped for the duration."""
    class Drop(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a record that cannot be formatted is not ours to judge
                return True
            return not any(fragment in message for fragment in fragments)

    logger, drop = logging.getLogger(name), Drop()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _try(close, what: str, *args, **kwargs) -> None:
    try:
        close(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - best effort on the way out
        get_logger("cluster").warning(f"labeldp-sim: warning: closing the Dask {what} failed ({first_line(err)})")


def dask_backend(client, scatter: list):
    """joblib's Dask backend on ``client``, where a task the cluster gives up on ends the run.

    joblib 1.6's backend hands a task's own exception back as a result (it is
    raised in the driver, as with loky), but a task that Dask itself fails
    (``KilledWorker`` once its workers died on every try, by default 4) only
    sets the exception on a future that joblib never looks at: the run would
    wait for it forever.  Here that failure, and a task cancelled because the
    scheduler went away, are raised from joblib's generator as a
    :class:`TaskLost` (one line; the trials stored before it are kept).

    Parameters
    ----------
    client : distributed.Client
        From :func:`dask_client`, which has already waited for the workers (so
        joblib does not wait again).
    scatter : list
        The arguments to send to every worker once (``runner.shared_arguments``).
    """
    return _backend_class()(client=client, scatter=scatter, wait_for_workers_timeout=0)


@functools.cache
def _backend_class():
    from joblib._dask import DaskDistributedBackend  # joblib is pinned (pyproject.toml)

    class LostTasksRaised(DaskDistributedBackend):
        async def _to_func_args(self, func):
            batch, tasks = await super()._to_func_args(func)
            return _Calls(repr(batch)), tasks

        def submit(self, func, callback=None):
            future = super().submit(func, callback)
            what = _calls(func)

            def on_done(done):
                # joblib calls ``callback`` for a result (a task's own exception included)
                # but not for a future that failed: that is this
                if callback is not None and not done.cancelled() and done.exception() is not None:
                    callback(_lost(done.exception(), what))

            future.add_done_callback(on_done)
            return future

        def retrieve_result_callback(self, out):
            from concurrent.futures import CancelledError

            if isinstance(out, CancelledError):  # distributed's FutureCancelledError: no result
                raise _lost(out, "")
            return super().retrieve_result_callback(out)

    return LostTasksRaised


class _Calls:
    """A batch of joblib calls, run one after the other on a Dask worker.

    joblib's own batch sets its Dask backend around the calls, for joblib
    calls nested inside them; that opens a client from every worker back to
    the scheduler.  The trials make no such calls, and those clients only
    complain (``Client.__del__``, "IOLoop is closed") when a worker exits
    while the run is stopped early.
    """

    def __init__(self, name: str):
        self.name = name

    def __call__(self, tasks=None):
        return [func(*args, **kwargs) for func, args, kwargs in tasks]

    def __repr__(self) -> str:  # the task's key on the dashboard
        return self.name


def _calls(batch) -> str:
    """``3 calls of _run_chunk``: what a joblib batch of this run's tasks computes."""
    names = []
    # duck typing of joblib's BatchedCalls (internal): other batches list no items
    for _, args, _ in getattr(batch, "items", ()):
        # each task is fingerprint_on_worker(expected, packages, func, *args)
        func = args[2] if len(args) > 2 else None
        # duck typing: a partial or callable object has no __name__
        names.append(getattr(func, "__name__", "a task"))
    if not names:
        return ""
    return f"{len(names)} call(s) of {', '.join(sorted(set(names)))}"


def _lost(error: BaseException, what: str) -> TaskLost:
    from distributed import KilledWorker

    task = f"a task of this run ({what})" if what else "a task of this run"
    kept = "the trials stored before it are kept; run the same command again to resume"
    if isinstance(error, KilledWorker):
        return TaskLost(f"{task} failed: the Dask workers running it died, {error.allowed_failures + 1} "
                        "tries in all (KilledWorker: out of memory, killed, or crashed); " + kept)
    cause = first_line(error) if str(error) else type(error).__name__
    if isinstance(error, Exception) and type(error).__name__.endswith("CancelledError"):
        cause = getattr(error, "reason", None) or cause  # duck typing: only distributed's CancelledError has a reason
        return TaskLost(f"{task} was cancelled by Dask ({cause}): the scheduler or the connection to "
                        f"it was lost; {kept}")
    return TaskLost(f"{task} failed on the Dask cluster ({cause}); {kept}")


def fingerprint_on_worker(expected: str, packages, func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` on a worker whose code fingerprint is ``expected``.

    A scheduler's or a SLURM cluster's workers may run another checkout or
    other numeric library versions than the driver; their trials would then be
    stored under the driver's config key with numbers it would not compute.
    The fingerprint is cached per worker process, so this costs one hash of the
    sources per worker.
    """
    from labeldp_sim.harness.provenance import code_fingerprint

    found = code_fingerprint(packages)
    if found != expected:
        raise ClusterError("runner.dask", f"a Dask worker runs other code than the driver (code "
                           f"fingerprint {found}, driver {expected}); run the workers from the same "
                           "checkout and environment")
    return func(*args, **kwargs)
