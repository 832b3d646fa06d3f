"""runner.backend=dask (SPEC §9): the same exports as loky, validated keys, a cluster always closed.

A LocalCluster of two one-thread worker processes computes a small sweep; its
exported ``trials.csv`` must equal loky's field for field, apart from the
columns that record when and by which run a trial was computed.  The SLURM
keys are validated without dask-jobqueue (an optional extra, not installed in
CI); a SLURMCluster is built from them only where it is installed.
"""

from __future__ import annotations

import csv
import http.server
import logging
import operator
import os
import pickle
import re
import signal
import socket
import socketserver
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from joblib import delayed

from labeldp_sim.harness import cluster as cluster_module
from labeldp_sim.harness import config as config_module
from labeldp_sim.harness.cli import run_experiment, validate_job
from labeldp_sim.harness.cluster import (ClusterError, TaskLost, check_scheduler, dask_client,
                                      fingerprint_on_worker, local_workers)
from labeldp_sim.harness.config import DaskSettings, RunnerSettings, SlurmSettings
from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.harness.runner import pre_dispatch_of, execute, shared_arguments
from labeldp_sim.harness.store import STORE_NAME, TrialStore
from labeldp_sim.papers.table1.experiment import build_experiment
from labeldp_sim.papers.table1.sweep import SweepPlan, run_sweep

ROOT = Path(__file__).resolve().parent.parent
NP = "experiment=cls_nonprivate"
# a sweep small enough for seconds, with chunks small enough that results arrive out of order
# Monte Carlo (runner.path=sufficient): the tasks, chunks and workers are what these tests are about
SWEEP = ["experiment=cls_label_ldp", "grid.d=[1]", "grid.reps=24", "runner.chunk=4", "runner.path=sufficient",
         "runner.progress=false", "grid.sweeps.N.values=[20000,200000,2000000]",
         "grid.sweeps.eps.values=[0.1,0.3,1.0]"]
DASK = ["runner.backend=dask", "runner.n_jobs=2"]
# columns that say when and by which run a trial was computed, not what it computed
NOT_NUMBERS = ("seconds", "run_id")


def _fields(path: Path, drop=()) -> list:
    """The CSV's fields as written (strings, no parsing), without the columns ``drop``."""
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert set(drop) <= set(rows[0]), f"{path.name} has no column {set(drop) - set(rows[0])}"
    keep = [i for i, name in enumerate(rows[0]) if name not in drop]
    return [[row[i] for i in keep] for row in rows]


def _spawned_since(before: set) -> list:
    """Child processes of this test process started since ``before`` and still running."""
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            # multiprocessing's resource tracker serves this process until it exits, not a run
            if (child.pid not in before and child.status() != psutil.STATUS_ZOMBIE
                    and "resource_tracker" not in " ".join(child.cmdline())):
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


def _assert_no_process_left(before: set) -> None:
    deadline = time.time() + 10
    while _spawned_since(before) and time.time() < deadline:
        time.sleep(0.1)
    assert not _spawned_since(before), "Dask worker processes outlived the run"


def _children() -> set:
    return {child.pid for child in psutil.Process().children(recursive=True)}


@pytest.fixture
def local_clusters(monkeypatch):
    """The LocalClusters the runner starts during the test, kept to check they were closed."""
    made = []
    start = cluster_module._local_cluster

    def recording():
        made.append(start())
        return made[-1]

    monkeypatch.setattr(cluster_module, "_local_cluster", recording)
    return made


def _closed(cluster) -> bool:
    from distributed.core import Status

    return cluster.status == Status.closed


# --------------------------------------------------------------------------- same numbers


def test_dask_exports_the_same_trials_as_loky(make_cfg, tmp_path, local_clusters):
    outs = {}
    for backend, extra in (("loky", ["runner.backend=loky", "runner.n_jobs=2"]), ("dask", DASK)):
        before = _children()  # loky keeps its workers for the next call: only Dask's must be gone
        cfg = make_cfg([*SWEEP, *extra, f"paths.results_dir={tmp_path / backend}"])
        outs[backend] = run_experiment(cfg)["out"]
    loky, dask = outs["loky"], outs["dask"]
    assert len(_fields(dask / "trials.csv")) == 1 + 6 * 24
    assert _fields(dask / "trials.csv", NOT_NUMBERS) == _fields(loky / "trials.csv", NOT_NUMBERS)
    assert _fields(dask / "summary.csv", ["seconds"]) == _fields(loky / "summary.csv", ["seconds"])
    assert (dask / "fit.csv").read_bytes() == (loky / "fit.csv").read_bytes()
    assert len(local_clusters) == 1 and _closed(local_clusters[0])
    _assert_no_process_left(before)


def test_joining_a_running_scheduler_leaves_it_running(make_cfg, tmp_path):
    from distributed import Client, LocalCluster

    # worker threads in this process: the quickest cluster to start that a Client reaches by address
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=":0") as running:
        cfg = make_cfg([*SWEEP, "runner.backend=dask", f"runner.dask.scheduler={running.scheduler_address}",
                        f"paths.results_dir={tmp_path / 'joined'}"])
        joined = run_experiment(cfg)["out"]
        with Client(running, set_as_default=False) as client:
            assert len(client.scheduler_info(n_workers=-1)["workers"]) == 2
    reference = run_experiment(make_cfg([*SWEEP, "runner.backend=sequential",
                                         f"paths.results_dir={tmp_path / 'seq'}"]))["out"]
    assert _fields(joined / "trials.csv", NOT_NUMBERS) == _fields(reference / "trials.csv", NOT_NUMBERS)


# --------------------------------------------------------------------------- always closed


class _FailingPlan(SweepPlan):
    """The sweep's tasks plus one that fails on its worker (1 / 0)."""

    def tasks(self, todo):
        return [*super().tasks(todo), delayed(operator.truediv)(1, 0)]


def test_an_error_on_a_worker_closes_the_cluster(make_cfg, tmp_path, local_clusters):
    before = _children()
    exp = build_experiment(make_cfg([*SWEEP, *DASK, f"paths.results_dir={tmp_path}"]))
    with pytest.raises(ZeroDivisionError):
        execute(_FailingPlan(exp), TrialStore(tmp_path / STORE_NAME))
    assert len(local_clusters) == 1 and _closed(local_clusters[0])
    _assert_no_process_left(before)


def test_an_error_in_the_driver_closes_the_cluster(make_cfg, tmp_path, local_clusters, monkeypatch):
    before = _children()
    exp = build_experiment(make_cfg([*SWEEP, *DASK, f"paths.results_dir={tmp_path}"]))
    store = TrialStore(tmp_path / STORE_NAME)
    writes = []

    def write_then_fail(schema, frame, replace=False):
        writes.append(len(frame))
        if len(writes) == 2:
            raise OSError("disk full")
        return TrialStore.write(store, schema, frame, replace=replace)

    monkeypatch.setattr(store, "write", write_then_fail)
    with pytest.raises(OSError, match="disk full"):
        execute(SweepPlan(exp), store)
    assert len(local_clusters) == 1 and _closed(local_clusters[0])
    _assert_no_process_left(before)


def test_workers_that_do_not_start_in_time_give_one_line_and_exit_1(make_cfg, tmp_path, capsys,
                                                                        local_clusters):
    before = _children()
    exp = build_experiment(make_cfg([*SWEEP, *DASK, "runner.dask.startup_timeout=0.001",
                                     f"paths.results_dir={tmp_path}"]))
    with pytest.raises(SystemExit) as exit_info:
        execute(SweepPlan(exp), TrialStore(tmp_path / STORE_NAME))
    assert exit_info.value.code == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("labeldp-sim: error: runner.dask.startup_timeout: "), lines
    assert "of 2 Dask worker(s) started within 0.001 s" in lines[0]
    assert len(local_clusters) == 1 and _closed(local_clusters[0])
    _assert_no_process_left(before)


def test_an_unreachable_scheduler_is_named():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = RunnerSettings(n_jobs=2, backend="dask", chunk=1, progress=False, reuse=True,
                              dask=DaskSettings(scheduler=f"tcp://127.0.0.1:{port}", startup_timeout=1))
    with pytest.raises(ClusterError) as err:
        with dask_client(settings):
            pass
    assert err.value.key == "runner.dask.scheduler" and f"tcp://127.0.0.1:{port}" in str(err.value)
    assert "\n" not in str(err.value)


@contextmanager
def _service(first_bytes: bytes | None = None):
    """A TCP service on a free port of this machine, on a thread: ``tcp://127.0.0.1:<port>``.

    Without ``first_bytes``, a plain HTTP server (it waits for a request, as a
    dashboard does); with them, a service that sends them first (an SSH server
    sends its banner).
    """
    if first_bytes is None:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _QuietHandler)
    else:
        class Banner(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.sendall(first_bytes)
                time.sleep(0.5)

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Banner)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.parametrize("first_bytes,why", [
    (None, "no Dask handshake within 1 s"),  # a web server (the dashboard's port) waits for a request
    # an SSH server's banner: read as a length, distributed allocated 3 EiB for it
    (b"SSH-2.0-OpenSSH_9.6\r\n", "announce 3,256,153,323,631,825,747 bytes"),
    (b"\x10" + bytes(7) + b"not a Dask frame", "garbled frames"),
])
def test_a_service_that_is_not_a_scheduler_is_refused_in_one_line(first_bytes, why):
    with _service(first_bytes) as address:
        with pytest.raises(ClusterError) as err:
            check_scheduler(address, 1)
    message = str(err.value)
    assert err.value.key == "runner.dask.scheduler" and "\n" not in message
    assert f"{address} accepted the connection but is not a Dask scheduler" in message and why in message


def test_a_scheduler_address_gets_the_default_port_and_passes_the_check():
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, protocol="tcp", dashboard_address=":0") as running:
        assert check_scheduler(running.scheduler_address, 5) == running.scheduler_address
    with pytest.raises(ClusterError) as err:  # nobody on Dask's port 8786 here (it is found closed)
        check_scheduler("tcp://127.0.0.1", 0.2)
    assert "tcp://127.0.0.1:8786" in str(err.value)


def test_a_web_server_given_as_the_scheduler_ends_the_run_with_one_line(tmp_path):
    """It used to hold the run for 646 s, then print a Client.__del__ traceback at exit."""
    args = [NP, "runner.progress=false", "runner.backend=dask",
            "runner.dask.startup_timeout=1", f"paths.results_dir={tmp_path}"]
    with _service() as address:
        proc = subprocess.run([sys.executable, "-m", "labeldp_sim", *args, f"runner.dask.scheduler={address}"],
                              cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                              text=True, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"labeldp-sim: error: runner.dask.scheduler: {address} accepted the connection "
                               "but is not a Dask scheduler (no Dask handshake within 1 s)"), lines


# a sweep with one task, among the others, whose worker process dies every time it runs it
DYING_RUN = """
import os, sys
from labeldp_sim.harness.cli import compose_job
from joblib import delayed
from labeldp_sim.harness.runner import execute
from labeldp_sim.harness.store import TrialStore
from labeldp_sim.papers.table1.experiment import build_experiment
from labeldp_sim.papers.table1.sweep import SweepPlan

class DyingPlan(SweepPlan):
    def tasks(self, todo):
        tasks = super().tasks(todo)
        return [*tasks[:4], delayed(os._exit)(3), *tasks[4:]]

cfg = compose_job(sys.argv[2:])
execute(DyingPlan(build_experiment(cfg)), TrialStore(sys.argv[1]))
"""


def test_a_task_whose_workers_die_ends_the_run_with_one_line_and_keeps_the_trials(make_cfg, tmp_path):
    """Dask gives the task up (KilledWorker) once its workers died; joblib waited for it forever."""
    store = tmp_path / STORE_NAME
    # given up when its first worker dies instead of the fourth: the same path, sooner
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    proc = subprocess.run([sys.executable, "-c", DYING_RUN, str(store), *SWEEP, *DASK,
                           f"paths.results_dir={tmp_path}"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    # the task that dies, or one that was waiting on the same worker (Dask counts the death
    # against every task the worker held)
    assert re.match(r"labeldp-sim: error: runner\.dask: a task of this run \(\d+ call\(s\) of [\w, ]+\) ",
                    lines[0]), lines
    assert "failed: the Dask workers running it died, 1 tries in all (KilledWorker" in lines[0], lines
    assert "the trials stored before it are kept; run the same command again to resume" in lines[0]
    kept = _stored(store)
    # the count the line gives is the rows this run inserted (execute's exact count)
    assert lines[0].endswith(f"({kept:,} trials of this run are kept in {store})") or kept == 0, lines
    # the same sweep resumes (here in this process, to skip a second start-up)
    trials = run_sweep(build_experiment(make_cfg([*SWEEP, "runner.backend=sequential",
                                                  f"paths.results_dir={tmp_path}"])), TrialStore(store))
    assert trials.attrs["run"].reused == kept and len(trials) == 6 * 24


def test_a_task_that_dask_cancels_is_a_lost_task():
    from distributed.client import FutureCancelledError

    backend = cluster_module._backend_class()
    backend = backend.__new__(backend)  # no client needed to hand a result over
    with pytest.raises(TaskLost) as err:
        backend.retrieve_result_callback(FutureCancelledError("k", "scheduler-connection-lost"))
    assert err.value.key == "runner.dask" and "cancelled by Dask" in str(err.value)
    assert "run the same command again to resume" in str(err.value) and "\n" not in str(err.value)
    assert backend.retrieve_result_callback(7) == 7  # a result passes


def test_a_worker_that_fails_to_start_is_named_not_printed():
    """A LocalCluster's worker that fails to start: its traceback is held back, its reason kept."""
    failures = cluster_module._StartFailures()
    try:
        try:
            raise OSError("no space left on device")
        except OSError as cause:
            raise RuntimeError("Nanny failed to start.") from cause
    except RuntimeError:
        record = logging.LogRecord(cluster_module.START_LOGGER, logging.ERROR, __file__, 1,
                                   "Exception in callback %s", ("<SpecCluster._correct_state_internal()>",),
                                   sys.exc_info())
    other = logging.LogRecord(cluster_module.START_LOGGER, logging.ERROR, __file__, 1, "another callback",
                              (), None)
    assert failures.filter(record) is False and failures.filter(other) is True
    assert failures.reasons == ["OSError: no space left on device"]


@pytest.mark.parametrize("instant", [
    "dask.workers",  # the workers are starting
    pytest.param("dask.cluster", marks=pytest.mark.slow),
    pytest.param("dask.client", marks=pytest.mark.slow),
    pytest.param("dask.started", marks=pytest.mark.slow),
])
def test_ctrl_c_during_the_dask_start_up_gives_the_interrupt_line(tmp_path, instant):
    """A terminal's Ctrl-C (the whole process group) while the cluster starts: 130, one line, no process left."""
    args = [NP, "runner.progress=false", *DASK, f"paths.results_dir={tmp_path}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LABELDP_SIM_TEST_SIGNAL": f"{instant}:1:SIGINT:group"}
    proc = subprocess.Popen([sys.executable, "-m", "labeldp_sim", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=120)
        deadline = time.time() + 10
        while _group(proc.pid) and time.time() < deadline:
            time.sleep(0.1)
    finally:
        left = _group(proc.pid)
        if proc.poll() is None or left:
            os.killpg(proc.pid, signal.SIGKILL)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130 and len(lines) == 1, err
    assert "interrupted" in lines[0] and "run the same command again" in lines[0], lines
    assert not left, "processes of the run outlived it"


def _group(group: int) -> list:
    """The running processes of process group ``group``."""
    alive = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == group and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return alive


def _stored(store: Path) -> int:
    try:
        with sqlite3.connect(store, timeout=5) as con:
            return con.execute("SELECT count(*) FROM rate_trials_v1").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_ctrl_c_closes_the_cluster_keeps_the_trials_and_resumes(make_cfg, tmp_path):
    """A terminal's Ctrl-C: SIGINT to the whole process group, the driver and its workers."""
    args = ["experiment=cls_label_cdp", "grid.reps=400", "grid.d=[1]", "runner.chunk=10", "runner.path=sufficient",
            "runner.progress=false", f"paths.results_dir={tmp_path}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "labeldp_sim", *args, *DASK], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    store = tmp_path / STORE_NAME
    deadline = time.time() + 120
    while time.time() < deadline and _stored(store) < 100 and proc.poll() is None:
        time.sleep(0.05)
    workers = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the sweep finished before the interrupt arrived")
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    # one line: no traceback from this package, from distributed's teardown (a worker's failed
    # heartbeat, Client.__del__ at exit) or from the workers
    assert len(lines) == 1 and "interrupted" in lines[0] and "run the same command again" in lines[0], err
    assert workers, "no worker process was seen"
    psutil.wait_procs(workers, timeout=10)
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    kept = _stored(store)
    assert 0 < kept < 5 * 400
    # the same sweep resumes on any backend (here in this process, to skip a second start-up)
    trials = run_sweep(build_experiment(make_cfg([*args, "runner.n_jobs=2"])))
    assert trials.attrs["run"].reused == kept and len(trials) == 5 * 400


# --------------------------------------------------------------------------- pieces


def test_shared_arguments_are_the_large_objects_given_to_several_tasks():
    big, small, alone = list(range(1000)), [1, 2], list(range(2000))
    tasks = [delayed(len)(big), delayed(len)(big), delayed(len)(small), delayed(len)(small),
             delayed(len)(alone), delayed(max)(3, "text")]
    assert shared_arguments(tasks) == [big]
    assert shared_arguments(tasks, min_bytes=0) == [big, small]


def test_a_worker_running_other_code_is_refused():
    from labeldp_sim.harness.provenance import code_fingerprint

    packages = ("table1",)
    assert fingerprint_on_worker(code_fingerprint(packages), packages, operator.add, 1, 2) == 3
    with pytest.raises(ClusterError) as err:
        fingerprint_on_worker("0123456789abcdef", packages, operator.add, 1, 2)
    assert err.value.key == "runner.dask" and "other code" in str(err.value)
    back = pickle.loads(pickle.dumps(err.value))  # it travels from the worker to the driver
    assert str(back) == str(err.value) and back.key == err.value.key


def test_local_workers_read_n_jobs_as_joblib_does():
    cores = os.cpu_count() or 1
    assert local_workers(3) == 3 and local_workers(-1) == cores
    assert local_workers(-2) == max(1, cores - 1) and local_workers(-1000) == 1


# --------------------------------------------------------------------------- validation


def _job_error(make_cfg, tmp_path, *overrides) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        validate_job(make_cfg([*overrides, f"paths.results_dir={tmp_path / 'out'}"]))
    message = str(err.value)
    assert "\n" not in message and "allowed:" in message
    assert not (tmp_path / "out").exists()
    return err.value


@pytest.mark.parametrize("overrides,key", [
    (["runner.dask.cluster=kubernetes"], "runner.dask.cluster"),
    (["runner.backend=dask", "runner.dask.scheduler=8786"], "runner.dask.scheduler"),
    (["runner.backend=dask", "runner.dask.scheduler=host:8786"], "runner.dask.scheduler"),
    (["runner.backend=dask", "runner.dask.scheduler=tcp://host:99999"], "runner.dask.scheduler"),
    (["runner.backend=dask", "runner.dask.scheduler=udp://host:8786"], "runner.dask.scheduler"),
    (["runner.dask.startup_timeout=0"], "runner.dask.startup_timeout"),
    (["runner.dask.startup_timeout=inf"], "runner.dask.startup_timeout"),
    (["runner.dask.startup_timeout=abc"], "runner.dask.startup_timeout"),
    (["+runner.dask.workers=4"], "runner.dask.workers"),
    (["~runner.dask.startup_timeout"], "runner.dask.startup_timeout"),
    # a scheduler or SLURM with another backend would quietly run here
    (["runner.dask.scheduler=tcp://10.0.0.5:8786"], "runner.backend"),
    (["runner=slurm", "runner.backend=loky"], "runner.backend"),
    # cluster=slurm needs the SLURM settings that only runner=slurm has
    (["runner.backend=dask", "runner.dask.cluster=slurm"], "runner.dask.slurm"),
    (["runner=slurm", "runner.dask.scheduler=tcp://10.0.0.5:8786"], "runner.dask.scheduler"),
])
def test_bad_dask_keys_name_their_key(make_cfg, tmp_path, overrides, key):
    assert _job_error(make_cfg, tmp_path, NP, *overrides).key == key


def test_every_dask_key_is_checked_whatever_the_backend(make_cfg, tmp_path):
    err = _job_error(make_cfg, tmp_path, NP, "runner.backend=loky", "runner.dask.startup_timeout=-1")
    assert err.key == "runner.dask.startup_timeout"


def test_good_dask_settings(make_cfg, tmp_path):
    spec = validate_job(make_cfg([NP, "runner.backend=dask", "runner.dask.scheduler=tcp://10.0.0.5:8786",
                                  "runner.dask.startup_timeout=5", f"paths.results_dir={tmp_path}"]))
    assert spec.runner.dask == DaskSettings(cluster="local", scheduler="tcp://10.0.0.5:8786",
                                            startup_timeout=5.0)
    default = validate_job(make_cfg([NP, f"paths.results_dir={tmp_path}"]))
    assert default.runner.dask == DaskSettings()  # the YAML and the dataclass agree


# --------------------------------------------------------------------------- SLURM


@pytest.fixture
def jobqueue(monkeypatch):
    """Pretend dask-jobqueue is installed (or not): ``jobqueue(True)``."""
    return lambda present: monkeypatch.setattr(config_module, "jobqueue_available", lambda: present)


def test_slurm_without_dask_jobqueue_says_how_to_install_it(make_cfg, tmp_path, jobqueue):
    jobqueue(False)
    err = _job_error(make_cfg, tmp_path, NP, "runner=slurm")
    assert err.key == "runner.dask.cluster" and "pip install -e '.[slurm]'" in str(err)


def test_slurm_without_dask_jobqueue_exits_2_with_one_line(tmp_path, capsys, monkeypatch, jobqueue):
    from labeldp_sim.app import main

    jobqueue(False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main([NP, "runner=slurm", f"paths.results_dir={tmp_path / 'out'}"])
    assert exit_info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("labeldp-sim: error: runner.dask.cluster: got 'slurm'")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("override,key", [
    ("runner.dask.slurm.jobs=0", "jobs"),
    ("runner.dask.slurm.cores=2.5", "cores"),
    ("runner.dask.slurm.processes=9", "processes"),  # more than the 8 cores
    ("runner.dask.slurm.processes=0", "processes"),
    ("runner.dask.slurm.memory=16", "memory"),  # no unit: bytes to Dask, megabytes to sbatch
    ("runner.dask.slurm.memory=lots", "memory"),
    ("runner.dask.slurm.memory=0GB", "memory"),
    ("runner.dask.slurm.walltime=1h", "walltime"),
    ("runner.dask.slurm.walltime=00:00:00", "walltime"),
    ("runner.dask.slurm.walltime=true", "walltime"),
    ("runner.dask.slurm.account='my account'", "account"),
    ("runner.dask.slurm.partition=''", "partition"),
    ("runner.dask.slurm.interface=7", "interface"),
    ("runner.dask.slurm.job_extra_directives=['qos=normal']", "job_extra_directives"),  # not an option
    ("runner.dask.slurm.job_extra_directives='--qos=normal'", "job_extra_directives"),  # not a list
    ("runner.dask.slurm.job_script_prologue=['']", "job_script_prologue"),
    ("+runner.dask.slurm.queue=short", "queue"),
    ("~runner.dask.slurm.memory", "memory"),
])
@pytest.mark.parametrize("installed", [False, True])
def test_bad_slurm_keys_are_named_with_or_without_dask_jobqueue(make_cfg, tmp_path, jobqueue, override,
                                                                key, installed):
    jobqueue(installed)
    assert _job_error(make_cfg, tmp_path, NP, "runner=slurm", override).key == f"runner.dask.slurm.{key}"


def test_slurm_settings_become_slurmcluster_arguments(make_cfg, tmp_path, jobqueue):
    jobqueue(True)
    spec = validate_job(make_cfg([
        NP, "runner=slurm", "runner.dask.slurm.jobs=4", "runner.dask.slurm.cores=16",
        "runner.dask.slurm.memory=64GiB", "runner.dask.slurm.walltime=2-12:00:00",
        "runner.dask.slurm.account=proj42", "runner.dask.slurm.partition=compute",
        "runner.dask.slurm.job_extra_directives=['--qos=long']",
        "runner.dask.slurm.job_script_prologue=['module load python/3.11']",
        f"paths.results_dir={tmp_path}"]))
    dask = spec.runner.dask
    assert spec.runner.backend == "dask" and dask.cluster == "slurm" and dask.startup_timeout == 600
    assert dask.slurm == SlurmSettings(jobs=4, cores=16, processes=16, memory="64GiB", walltime="2-12:00:00",
                                       account="proj42", partition="compute",
                                       job_extra_directives=("--qos=long",),
                                       job_script_prologue=("module load python/3.11",))
    assert dask.slurm.cluster_kwargs() == {
        "cores": 16, "processes": 16, "memory": "64GiB", "walltime": "2-12:00:00",
        "account": "proj42", "queue": "compute", "job_extra_directives": ["--qos=long"],
        "job_script_prologue": ["module load python/3.11"]}
    # joblib keeps twice the workers of every job busy, not only of the jobs started first
    assert pre_dispatch_of(spec.runner) == 2 * 4 * 16 and pre_dispatch_of(RunnerSettings(2, "dask", 1, False, True)) \
        == "2*n_jobs"
    minutes = validate_job(make_cfg([NP, "runner=slurm", "runner.dask.slurm.walltime=90",
                                     "runner.dask.slurm.processes=4", f"paths.results_dir={tmp_path}"]))
    assert minutes.runner.dask.slurm.walltime == "90" and minutes.runner.dask.slurm.processes == 4


def test_slurm_job_script_where_dask_jobqueue_is_installed(make_cfg, tmp_path):
    """Runs only with the extra installed (``pip install -e '.[slurm]'``): no job is submitted."""
    jobqueue = pytest.importorskip("dask_jobqueue")
    spec = validate_job(make_cfg([NP, "runner=slurm", "runner.dask.slurm.cores=4",
                                  "runner.dask.slurm.account=proj42", "runner.dask.slurm.partition=compute",
                                  f"paths.results_dir={tmp_path}"]))
    with jobqueue.SLURMCluster(**spec.runner.dask.slurm.cluster_kwargs()) as cluster:
        script = cluster.job_script()
    for line in ("#SBATCH -A proj42", "#SBATCH -p compute", "#SBATCH --cpus-per-task=4",
                 "#SBATCH -t 01:00:00"):
        assert line in script, script
    assert "--nworkers 4" in script and "--nthreads 1" in script, script
