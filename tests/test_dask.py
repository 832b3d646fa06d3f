"""runner.backend=dask (SPEC §9): the same exports as loky, validated keys, a cluster always closed.

A LocalCluster of two one-thread worker processes computes a small sweep; its
exported ``trials.csv`` must equal loky's field for field, apart from the
columns that record when and by which run a trial was computed.  The SLURM
keys are validated without dask-jobqueue (an optional extra, not installed in
CI); a SLURMCluster is built from them only where it is installed.
"""

from __future__ import annotations

import csv
import operator
import os
import pickle
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from joblib import delayed

from labeldp_sim.core import cluster as cluster_module
from labeldp_sim.core import config as config_module
from labeldp_sim.core.cli import run_experiment, validate_job
from labeldp_sim.core.cluster import ClusterError, dask_client, fingerprint_on_worker, local_workers
from labeldp_sim.core.config import DaskSettings, RunnerSettings, SlurmSettings
from labeldp_sim.core.errors import ConfigError
from labeldp_sim.core.runner import _pre_dispatch, execute, shared_arguments
from labeldp_sim.core.store import STORE_NAME, TrialStore
from labeldp_sim.table1.experiment import build_experiment
from labeldp_sim.table1.sweep import SweepPlan, run_sweep

ROOT = Path(__file__).resolve().parent.parent
NP = "experiment=cls_nonprivate"
# a sweep small enough for seconds, with chunks small enough that results arrive out of order
SWEEP = ["experiment=cls_label_ldp", "grid.d=[1]", "grid.reps=24", "runner.chunk=4",
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
            if child.pid not in before and child.status() != psutil.STATUS_ZOMBIE:
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


def _stored(store: Path) -> int:
    try:
        with sqlite3.connect(store, timeout=5) as con:
            return con.execute("SELECT count(*) FROM rate_trials_v1").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_ctrl_c_closes_the_cluster_keeps_the_trials_and_resumes(make_cfg, tmp_path):
    """A terminal's Ctrl-C: SIGINT to the whole process group, the driver and its workers."""
    args = ["experiment=cls_label_cdp", "grid.reps=400", "grid.d=[1]", "runner.chunk=10",
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
    assert any("interrupted" in line and "run the same command again" in line for line in lines), err
    # distributed may still print "Exception ignored in Client.__del__ ... IOLoop is closed" at
    # interpreter exit when the interrupt lands inside client.close (its own teardown, nothing of
    # the run is lost); no traceback may come from this package
    assert not [line for line in lines if line.strip().startswith("File ") and "labeldp_sim" in line], err
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
    from labeldp_sim.core.provenance import code_fingerprint

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
    assert _pre_dispatch(spec.runner) == 2 * 4 * 16 and _pre_dispatch(RunnerSettings(2, "dask", 1, False, True)) \
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
