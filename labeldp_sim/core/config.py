"""From a composed configuration to validated objects, before any computation.

Every bad value becomes one :class:`~labeldp_sim.errors.ConfigError` line that
names the config key and the allowed values.  :func:`labeldp_sim.core.cli.validate_job` is the
entry point for every kind of job; it dispatches to the registered kind
(:mod:`labeldp_sim.core.kinds`), whose validator builds on the helpers here.  It only
reads: it computes no trial and creates no file or directory, so a refused run
leaves no trace and a multirun can validate all its jobs before the first one
starts.

What is checked, for every kind:

* **Keys.** Every node's keys are checked, and an unknown one (``+grid.foo=1``)
  is refused with the node's allowed keys.  For the object groups
  (``distribution``, ``mechanism``, ``estimator``) the class's ``__init__``
  signature decides.  ``distribution.d`` and ``mechanism.epsilon`` come from the
  grid and cannot be set.
* **Values, each blamed on its own key.** A number must be a finite real
  number (``'abc'``, ``inf`` and ``true`` are refused where a number is
  expected); a flag must be ``true`` or ``false``.
* **Ranges that keep float64 exact.** N ≤ 2**53 (requested and snapped: counts
  are exact float64 integers only up to there), ε ∈ [1e-12, 100], seed in
  [0, 2**63).  Snapping and tuning run under ``np.errstate(all="raise")``.
* **The results directory** can be created, or is a writable directory
  (:func:`validate_results_dir`).
* **Sizes that fit in memory.**  Each kind estimates the arrays one trial
  holds (bytes per element × elements, a lower bound from its sizes: N, n_test,
  K, m, cube counts...) and :func:`check_memory` refuses a trial that cannot
  fit in its worker's share of memory (:func:`memory_budget`), naming the key
  whose value makes it large and the limit.
* **Keys another kind reads.**  The root config composes every kind's groups,
  so a K-class or user-level job carries ``mode``, ``grid``, ``mechanism``...
  it never reads; a value there that differs from the default is refused
  (``mode=law_free`` on ``ul_mean_1d`` would otherwise run as if unset).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .errors import MISSING, ConfigError, check, first_line, is_int, is_number
from .kinds import registered

__all__ = ["RunnerSettings", "DaskSettings", "SlurmSettings", "JobBasics", "job_kind", "validate_runner",
           "validate_results_dir",
           "validate_common", "config_node", "CONF_DIR", "GROUPS", "PATHS", "BACKENDS",
           "DASK_KEYS", "SLURM_KEYS", "CLUSTERS",
           "MAX_N", "EPS_MIN", "EPS_MAX", "group_options", "is_int", "is_number", "eps_allowed", "check_list",
           "Need", "MemoryBudget", "memory_budget", "machine_memory", "check_memory", "PLAN_BYTES_PER_TRIAL",
           "experiments_of_kind", "check_plan_size"]

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
GROUPS = ("distribution", "mechanism", "estimator", "grid", "runner", "experiment")
OBJECT_GROUPS = ("distribution", "mechanism", "estimator")
# the root keys every kind has; a kind adds its own (ExperimentKind.root_keys and .node)
ROOT_KEYS = ("kind", "experiment_name", "seed", "paths", "fit", "runner")
RUNNER_KEYS = ("n_jobs", "backend", "path", "chunk", "progress", "reuse", "dask")
DASK_KEYS = ("cluster", "scheduler", "startup_timeout", "slurm")
SLURM_KEYS = ("jobs", "cores", "processes", "memory", "walltime", "account", "partition", "interface",
              "job_extra_directives", "job_script_prologue")
CLUSTERS = ("local", "slurm")
PATHS_KEYS = ("results_dir",)
FIT_KEYS = ("tol", "min_points")
PATHS = ("auto", "per_sample", "sufficient")
# multiprocessing is not offered: joblib cannot hand its results back as they finish,
# and the trial store writes each chunk as soon as it is done
BACKENDS = ("loky", "threading", "sequential", "dask")
# schemes a Client can reach without extra packages; tls and ws(s) read their certificates
# from Dask's own configuration
SCHEDULER_ADDRESS = re.compile(r"(tcp|tls|ws|wss)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:(\d{1,5}))?")
# what sbatch accepts for --time: minutes, minutes:seconds, hours:minutes:seconds,
# days-hours, days-hours:minutes and days-hours:minutes:seconds
SLURM_TIME = re.compile(r"\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2}")
# a SLURM queue may hold jobs for days, but an event loop's timer must stay a sane float
MAX_STARTUP_TIMEOUT = 30 * 86400
# account, partition and interface land in #SBATCH lines and worker options: one word
SLURM_NAME = re.compile(r"[A-Za-z0-9_.,:+@-]+")
PER_SAMPLE_MAX_N = 10_000_000
# float64 holds every integer up to 2**53 exactly; above it counts and N·h^d round
MAX_N = 2 ** 53
# ε outside this range over- or underflows e^ε, ε² or the laws' powers of εN
EPS_MIN, EPS_MAX = 1e-12, 100.0
SEED_LIMIT = 2 ** 63


def group_options(group: str) -> list[str]:
    """Names of the YAML files of one config group."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


# --------------------------------------------------------------------------- value helpers


def eps_allowed() -> str:
    """The allowed-values text of every ε."""
    return f"numbers in [{EPS_MIN:g}, {EPS_MAX:g}]"


def check_list(key: str, values, ok, allowed: str, example: str | None = None) -> list:
    """``values`` as a list: non-empty, every item passing ``ok``, no item twice.

    ``allowed`` describes the items (``"integers >= 2"``).  A value that is not
    a list (``kclass.K=3``) is refused as a whole, with ``example`` showing the
    list syntax; a bad item is refused on its own; a repeated item too, since
    it would name the same trials twice.
    """
    hint = f" (e.g. {example})" if example else ""
    check(isinstance(values, list) and len(values) > 0, key, values, f"a non-empty list of {allowed}{hint}")
    for v in values:
        check(ok(v), key, v, allowed)
    distinct = {float(v) if is_number(v) else repr(v) for v in values}
    check(len(distinct) == len(values), key, values, f"distinct {allowed}")
    return list(values)


def _join(prefix: str, key) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _root_value(cfg, key: str, default=None):
    """``cfg[key]`` resolved, or ``default``; a broken interpolation is blamed on ``key``."""
    try:
        return _plain(cfg.get(key, default))
    except OmegaConfBaseException as err:
        raw = OmegaConf.to_container(cfg, resolve=False).get(key)
        raise ConfigError(key, raw, f"a value that resolves ({first_line(err)})") from None


def _plain(value):
    """A config value as plain Python, for messages and checks (containers resolved)."""
    if isinstance(value, (DictConfig, ListConfig)):
        try:
            return OmegaConf.to_container(value, resolve=True)
        except OmegaConfBaseException:
            return OmegaConf.to_container(value, resolve=False)
    return value


def config_node(cfg, key: str, allowed=None, required=(), missing_allowed=None) -> dict:
    """The mapping at dotted ``key`` of ``cfg`` as a plain dict, its keys checked.

    Parameters
    ----------
    cfg : DictConfig
    key : str
        Dotted key of the node (``"grid"``, ``"grid.sweeps.N"``...).
    allowed : sequence of str, optional
        Its allowed keys; any other key is refused, naming the allowed ones.
    required : sequence of str
        Keys that must be present.
    missing_allowed : str, optional
        The allowed-values text for a missing required key.

    Raises
    ------
    ConfigError
        When the node is absent or not a mapping, a value does not resolve
        (a broken ``${...}`` interpolation), a key is unknown or a required key
        is absent.
    """
    node = OmegaConf.select(cfg, key, throw_on_missing=False) if isinstance(cfg, DictConfig) else cfg
    shape = f"a mapping with keys {', '.join(allowed)}" if allowed else "a mapping"
    check(isinstance(node, (DictConfig, dict)), key, _plain(node), shape)
    out = {}
    for name in node.keys():
        try:
            out[name] = _plain(node[name])
        except OmegaConfBaseException as err:
            raw = (OmegaConf.to_container(node, resolve=False).get(name)
                   if isinstance(node, DictConfig) else None)
            raise ConfigError(_join(key, name), raw, f"a value that resolves ({first_line(err)})") from None
    if allowed is not None:
        for name, value in out.items():
            check(name in allowed, _join(key, name), value, list(allowed))
    for name in required:
        check(name in out, _join(key, name), MISSING,
              missing_allowed or f"a value ({key} needs {', '.join(required)})")
    return out


# --------------------------------------------------------------------------- runner, paths, seed


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
        (:mod:`labeldp_sim.core.cluster`).
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


def validate_runner(cfg) -> RunnerSettings:
    """Check ``cfg.runner`` (keys exactly :data:`RUNNER_KEYS`) and return its settings.

    ``runner.path`` is checked here against :data:`PATHS` for every kind (the
    accuracy kinds ignore it); :func:`build_experiment` checks it against the
    experiment's distribution and estimator.  ``runner.dask`` is checked by
    :func:`validate_dask`.
    """
    runner = config_node(cfg, "runner", RUNNER_KEYS, required=RUNNER_KEYS)
    check(runner["path"] in PATHS, "runner.path", runner["path"], PATHS)
    check(runner["backend"] in BACKENDS, "runner.backend", runner["backend"],
          f"{', '.join(BACKENDS)} (not multiprocessing: joblib cannot return its results as they finish)")
    n_jobs = runner["n_jobs"]
    check(is_int(n_jobs) and n_jobs != 0, "runner.n_jobs", n_jobs, "a non-zero integer (-1 = all cores)")
    chunk = runner["chunk"]
    check(is_int(chunk) and chunk >= 1, "runner.chunk", chunk, "integer >= 1")
    for flag in ("progress", "reuse"):
        # a real bool only: 'maybe', 1 or 'yes' would otherwise be read as true
        check(isinstance(runner[flag], bool), f"runner.{flag}", runner[flag], "true, false")
    dask = validate_dask(cfg, str(runner["backend"]))
    return RunnerSettings(n_jobs=int(n_jobs), backend=str(runner["backend"]), chunk=int(chunk),
                          progress=runner["progress"], reuse=runner["reuse"], dask=dask)


def jobqueue_available() -> bool:
    """Whether the optional dask-jobqueue (``pip install -e '.[slurm]'``) can be imported."""
    return importlib.util.find_spec("dask_jobqueue") is not None


def validate_dask(cfg, backend: str) -> DaskSettings:
    """Check ``cfg.runner.dask`` (keys :data:`DASK_KEYS`) and return its settings.

    Every key is checked whatever ``runner.backend`` is, so a typo never waits
    for the day the backend is switched.  A scheduler address or a SLURM
    cluster with another backend is refused on ``runner.backend``: the run would
    silently stay on this machine.  The SLURM keys are checked before
    dask-jobqueue is looked for, so that they can be checked without it.
    """
    node = config_node(cfg, "runner.dask", DASK_KEYS, required=("cluster", "scheduler", "startup_timeout"))
    cluster, scheduler, timeout = node["cluster"], node["scheduler"], node["startup_timeout"]
    check(cluster in CLUSTERS, "runner.dask.cluster", cluster,
          "local (a LocalCluster of runner.n_jobs workers), slurm (select runner=slurm)")
    address = SCHEDULER_ADDRESS.fullmatch(scheduler) if isinstance(scheduler, str) else None
    check(scheduler is None or (address is not None and (address.group(4) is None
                                                         or 1 <= int(address.group(4)) <= 65535)),
          "runner.dask.scheduler", scheduler,
          "null (start a cluster), or a scheduler address scheme://host[:port] with scheme tcp, tls, "
          "ws or wss (e.g. tcp://10.0.0.5:8786)")
    check(is_number(timeout) and 0 < timeout <= MAX_STARTUP_TIMEOUT, "runner.dask.startup_timeout", timeout,
          f"a number of seconds in (0, {MAX_STARTUP_TIMEOUT}] (30 days)")
    slurm = _validate_slurm(cfg) if node.get("slurm") is not None else None
    if cluster == "slurm":
        check(slurm is not None, "runner.dask.slurm", node.get("slurm", MISSING),
              "the SLURM settings of runner=slurm (select runner=slurm, not runner.dask.cluster=slurm alone)")
        check(scheduler is None, "runner.dask.scheduler", scheduler,
              "null with runner.dask.cluster=slurm (a SLURM cluster starts its own scheduler)")
    if scheduler is not None or cluster == "slurm":
        which = "runner.dask.scheduler is set" if scheduler is not None else "runner.dask.cluster is slurm"
        check(backend == "dask", "runner.backend", backend,
              f"dask ({which}; with another backend the trials would run on this machine)")
    if backend == "dask" and cluster == "slurm" and scheduler is None:
        check(jobqueue_available(), "runner.dask.cluster", cluster,
              "local; slurm needs the optional dask-jobqueue: pip install -e '.[slurm]'")
    return DaskSettings(cluster=cluster, scheduler=scheduler, startup_timeout=float(timeout), slurm=slurm)


def _validate_slurm(cfg) -> SlurmSettings:
    """Check ``runner.dask.slurm`` (keys exactly :data:`SLURM_KEYS`); needs no dask-jobqueue."""
    prefix = "runner.dask.slurm"
    node = config_node(cfg, prefix, SLURM_KEYS, required=SLURM_KEYS)
    for name in ("jobs", "cores"):
        check(is_int(node[name]) and node[name] >= 1, f"{prefix}.{name}", node[name], "integer >= 1")
    cores = int(node["cores"])
    processes = node["processes"]
    check(processes is None or (is_int(processes) and 1 <= processes <= cores), f"{prefix}.processes",
          processes, f"null (= cores, one thread per worker) or an integer in [1, {cores}] (the cores)")
    memory = node["memory"]
    check(isinstance(memory, str) and _bytes(memory) > 0, f"{prefix}.memory", memory,
          "a positive amount of memory per job with a unit, e.g. 16GB or 4GiB")
    walltime = node["walltime"]
    if is_int(walltime) and walltime > 0:  # sbatch reads a bare number as minutes
        walltime = str(walltime)
    check(isinstance(walltime, str) and SLURM_TIME.fullmatch(walltime) is not None
          and any(c in "123456789" for c in walltime), f"{prefix}.walltime", walltime,
          "a positive sbatch time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. '01:00:00')")
    for name in ("account", "partition", "interface"):
        check(node[name] is None or (isinstance(node[name], str) and SLURM_NAME.fullmatch(node[name])),
              f"{prefix}.{name}", node[name],
              "null (SLURM's default) or one word of letters, digits and _.,:+@-")
    directives = node["job_extra_directives"]
    check(isinstance(directives, list) and all(isinstance(d, str) and d.startswith("-") and _one_line(d)
                                                for d in directives),
          f"{prefix}.job_extra_directives", directives,
          "a list of sbatch options, each one line starting with - (e.g. ['--qos=normal'])")
    prologue = node["job_script_prologue"]
    check(isinstance(prologue, list) and all(isinstance(line, str) and _one_line(line) for line in prologue),
          f"{prefix}.job_script_prologue", prologue,
          "a list of shell lines, one line each (e.g. ['module load python/3.11'])")
    return SlurmSettings(jobs=int(node["jobs"]), cores=cores,
                         processes=cores if processes is None else int(processes), memory=memory,
                         walltime=walltime, account=node["account"], partition=node["partition"],
                         interface=node["interface"], job_extra_directives=tuple(directives),
                         job_script_prologue=tuple(prologue))


def _one_line(text: str) -> bool:
    return text.strip() != "" and "\n" not in text and "\r" not in text and "\0" not in text


def _bytes(text: str) -> float:
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


def _name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


def _writable(directory: Path) -> bool:
    """Whether files can be created in ``directory``, found without leaving one there.

    ``os.access`` answers from the permission bits and from a read-only mount,
    but it says yes to root for every directory and knows nothing of ACLs or of
    file systems that refuse new files (procfs, sysfs).  So an anonymous
    temporary file is opened there too: on Linux it is ``O_TMPFILE`` and never
    has a name; elsewhere Python unlinks the named file at once.  Nothing
    remains either way.
    """
    effective = os.access in os.supports_effective_ids
    if not os.access(directory, os.W_OK | os.X_OK, effective_ids=effective):
        return False
    try:
        with tempfile.TemporaryFile(dir=directory):
            return True
    except OSError:
        return False


def validate_results_dir(cfg) -> Path:
    """Check ``paths.results_dir`` and return it as a Path; create nothing.

    It must be a non-empty string naming either an existing writable
    directory, or a path whose nearest existing ancestor is a writable
    directory (the run creates the rest).  A file, a dangling symlink, a
    read-only directory or a file system that refuses new files is refused
    (see :func:`_writable` for how writability is found, as root too).
    """
    paths = config_node(cfg, "paths", PATHS_KEYS, required=PATHS_KEYS)
    key, value = "paths.results_dir", paths["results_dir"]
    wanted = "a non-empty path of a writable directory, or of one that can be created"
    check(isinstance(value, str) and value.strip() != "" and "\0" not in value, key, value,
          wanted + " (quote a number: paths.results_dir='2024')" if is_number(value) else wanted)
    full = Path(value).absolute()
    existing = full
    # lexists: a dangling symlink is something mkdir would trip over, not free space
    while not os.path.lexists(existing):
        existing = existing.parent
    if existing == full:
        check(full.is_dir(), key, value, f"{wanted} (it exists and is not a directory)")
    else:
        check(existing.is_dir(), key, value, f"{wanted} ({existing} is not a directory)")
        longest = max(len(os.fsencode(part)) for part in full.relative_to(existing).parts)
        check(longest <= _name_max(existing), key, value, f"{wanted} (a name is too long)")
    check(_writable(existing), key, value, f"{wanted} ({existing} is not writable)")
    return Path(value)


def _validate_seed(cfg) -> int:
    seed = _root_value(cfg, "seed", MISSING)
    check(is_int(seed) and 0 <= seed < SEED_LIMIT, "seed", seed, "an integer in [0, 2**63)")
    return int(seed)


def _validate_fit(cfg) -> tuple[float, int]:
    fit = config_node(cfg, "fit", FIT_KEYS, required=FIT_KEYS)
    check(is_number(fit["tol"]) and fit["tol"] > 0, "fit.tol", fit["tol"], "a finite number > 0")
    check(is_int(fit["min_points"]) and fit["min_points"] >= 2, "fit.min_points", fit["min_points"],
          "integer >= 2")
    return float(fit["tol"]), int(fit["min_points"])


class JobBasics(NamedTuple):
    """What every kind of job has: its name, seed, runner settings and results directory."""

    name: str
    seed: int
    runner: RunnerSettings
    results_dir: Path
    tol: float
    min_points: int


def validate_common(cfg, kind: str) -> JobBasics:
    """The checks every kind shares: ``kind``, the root keys, ``experiment_name``,
    ``seed``, ``paths``, ``runner`` and ``fit``.

    The root keys are :data:`ROOT_KEYS`, plus the kind's own root keys and node
    (``kclass``, ``digits``, ``userlevel``).  A ``kind`` that does not match the experiment
    (``kind=kclass`` on a Table I cell) is blamed on ``kind``.  The root keys of
    other kinds that this kind does not read must keep their defaults
    (:func:`_check_unread_keys`).

    ``experiment_name`` is ``???`` (missing) in the root config, so that no
    ``experiment=`` is told apart from ``experiment_name=null``: the first is
    blamed on ``experiment``, the second on ``experiment_name``.
    """
    check(isinstance(cfg, DictConfig), "config", type(cfg).__name__, "a composed DictConfig")
    kinds = registered()
    check(kind in kinds, "kind", kind, list(kinds))
    if "experiment_name" not in cfg or OmegaConf.is_missing(cfg, "experiment_name"):
        raise ConfigError("experiment", None, group_options("experiment"))
    name = _root_value(cfg, "experiment_name")
    present = [k for k, spec in kinds.items() if spec.node and spec.node in cfg]
    own = kinds[kind].node
    if (own is None and present) or (own is not None and own not in cfg):
        default = next((k for k, spec in kinds.items() if spec.node is None), "?")
        right = present[0] if len(present) == 1 else default
        raise ConfigError("kind", kind, f"{right} (the kind of experiment {name})")
    # the root config composes the config groups of every kind (conf/config.yaml's defaults), so
    # every kind's root keys may be present; a kind's own node only in its own experiments
    shared = tuple(dict.fromkeys(key for spec in kinds.values() for key in spec.root_keys))
    allowed = ROOT_KEYS + shared + ((own,) if own else ())
    for key in cfg.keys():
        # "hydra" is there only when composed with return_hydra_config=True
        if key not in allowed and key != "hydra":
            raise ConfigError(str(key), OmegaConf.to_container(cfg, resolve=False)[key], list(allowed))
    # the name is a directory under results_dir: one plain path component
    check(isinstance(name, str) and name not in ("", ".", "..") and not set(name) & set("/\\\0"),
          "experiment_name", name, "a non-empty name without / or \\ (it names results/<name>/)")
    _check_unread_keys(cfg, kind, name, [key for key in shared if key not in kinds[kind].root_keys])
    seed = _validate_seed(cfg)
    results_dir = validate_results_dir(cfg)
    runner = validate_runner(cfg)
    tol, min_points = _validate_fit(cfg)
    return JobBasics(name, seed, runner, results_dir, tol, min_points)


@lru_cache(maxsize=1)
def _root_defaults() -> dict:
    """The root config's own values and its default group choices, as written (unresolved).

    Read from the YAML files, not composed with Hydra: validation may run inside
    another Hydra context.
    """
    root = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"), resolve=False)
    out = {k: v for k, v in root.items() if k != "defaults"}
    for entry in root.get("defaults", []):
        if isinstance(entry, dict):
            for group, choice in entry.items():
                if group in GROUPS and choice is not None:
                    node = OmegaConf.load(CONF_DIR / group / f"{choice}.yaml")
                    out[group] = {k: v for k, v in OmegaConf.to_container(node, resolve=False).items()
                                  if k != "defaults"}
    return out


@lru_cache(maxsize=1)
def experiments_of_kind() -> dict:
    """kind -> names of the experiments (conf/experiment/*.yaml) of that kind, read from their
    ``kind:`` line or that of the experiment they extend (default: the root config's kind)."""
    default = str(_root_defaults().get("kind", ""))
    kinds = {}

    def kind_of(name, seen=()):
        path = CONF_DIR / "experiment" / f"{name}.yaml"
        if name in seen or not path.exists():
            return default
        node = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        if "kind" in node:
            return str(node["kind"])
        parents = [e for e in node.get("defaults", []) if isinstance(e, str) and e != "_self_"]
        return kind_of(parents[0], (*seen, name)) if parents else default

    for name in group_options("experiment"):
        kinds.setdefault(kind_of(name), []).append(name)
    return kinds


def _name_patterns(names: list, others: list) -> str:
    """``cls_*, reg_*`` for names sharing prefixes that no other name has; the names otherwise."""
    prefixes = sorted({n.split("_")[0] for n in names})
    if all("_" in n for n in names) and not any(o.split("_")[0] in prefixes for o in others):
        return ", ".join(f"{p}_*" for p in prefixes)
    return ", ".join(names)


def _first_difference(got, default, key: str):
    """(dotted key, got value) of the first leaf where ``got`` differs from ``default``; None if equal."""
    if isinstance(got, dict) and isinstance(default, dict):
        for k in list(got) + [k for k in default if k not in got]:
            if k not in got or k not in default:
                return f"{key}.{k}", got.get(k, MISSING)
            found = _first_difference(got[k], default[k], f"{key}.{k}")
            if found:
                return found
        return None
    return None if got == default else (key, got)


def _check_unread_keys(cfg, kind: str, name: str, keys: list) -> None:
    """Refuse a change to a root key this kind never reads (another kind's: ``mode``, ``grid``...).

    Such a key is in every composed job (conf/config.yaml composes every kind's
    groups), so ``mode=law_free`` or ``grid.reps=-1`` on a user-level experiment
    would otherwise be accepted and ignored.
    """
    defaults = _root_defaults()
    kinds = registered()
    by_kind = experiments_of_kind()
    for top in keys:
        if top not in cfg or top not in defaults:
            continue
        try:
            got = OmegaConf.to_container(cfg, resolve=False)[top]
        except OmegaConfBaseException:  # pragma: no cover - a node that cannot be read is a change
            got = MISSING
        found = _first_difference(got, defaults[top], top)
        if found is None:
            continue
        key, value = found
        default = defaults[top]
        for part in key.split(".")[1:]:
            default = default.get(part, MISSING) if isinstance(default, dict) else MISSING
        owners = [k for k, spec in kinds.items() if top in spec.root_keys]
        readers = [n for k in owners for n in by_kind.get(k, [])]
        others = [n for k, names in by_kind.items() if k not in owners for n in names]
        own_node = kinds[kind].node
        where = f"; its own settings are under {own_node}" if own_node else ""
        lead = f"no {key}" if default is MISSING else f"the default {default!r}"
        raise ConfigError(key, value, f"{lead} (experiment {name} is of kind {kind} and does not read {top}"
                          f"{where}; {top} is read by the {'/'.join(owners)} experiments: "
                          f"{_name_patterns(readers, others)})")


# --------------------------------------------------------------------------- memory

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
        per = _bytes(dask.slurm.memory) / dask.slurm.processes
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


def job_kind(cfg) -> str:
    """The validated ``kind`` of a composed job: one of the registered kinds."""
    kind = _root_value(cfg, "kind") if isinstance(cfg, DictConfig) else None
    kinds = list(registered())
    check(kind in kinds, "kind", kind, kinds)
    return kind


# --------------------------------------------------------------------------- object groups


# config keys that describe how to build or tune an object, not constructor arguments
_NOT_ARGS = ("_target_", "name", "T_scale")
# constructor arguments that come from the grid, never from the group's node
_FROM_GRID = {"distribution": {"d": "grid.d"},
              "mechanism": {"epsilon": "grid.sweeps (the eps axis or its fixed eps)"}}


def _parameters(cls) -> dict | None:
    """Keyword parameters of ``cls(...)`` and their defaults; None when it takes any keyword."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    params = {}
    for p in signature.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            return None
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            params[p.name] = p.default
    return params


def _import_class(path: str) -> type:
    """The class at dotted ``path``.

    Not ``hydra.utils.get_class``: on failure it logs a multi-line error to
    stderr before raising, and bad input must give exactly one line.
    """
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        if isinstance(obj, type):
            return obj
        break
    raise ImportError(path)


def _target_class(group: str, node: dict):
    target = node.get("_target_")
    try:
        return _import_class(target)
    except Exception:  # noqa: BLE001 - whatever the import raised, the key is to blame
        raise ConfigError(f"{group}._target_", target, "an importable class (package.module.Class)") from None


def _check_group_keys(group: str, node: dict, params: dict | None) -> None:
    """Refuse keys that are not constructor arguments of the group's class.

    Allowed: ``_target_``, ``name``, the class's keyword parameters except the
    ones the grid sets, and ``T_scale`` for a mechanism that takes ``T``.  A key the
    grid sets (``distribution.d``, ``mechanism.epsilon``) is refused: it would be ignored.
    """
    if params is None:  # a class taking **kwargs, or one without a signature
        return
    from_grid = _FROM_GRID.get(group, {})
    allowed = ["_target_", "name", *(p for p in params if p not in from_grid)]
    if group == "mechanism" and "T" in params:
        allowed.append("T_scale")
    for key, value in node.items():
        if key in from_grid:
            raise ConfigError(f"{group}.{key}", value, f"no value here: {key} comes from {from_grid[key]}"
                              + (f" (e.g. grid.d=[{value}])" if key == "d" and is_int(value) else ""))
        check(key in allowed, f"{group}.{key}", value, allowed)


def _probe_allowed(cls, args: dict, key: str, probe) -> str | None:
    """The class's own allowed-values text for ``key``.

    Found by building the class with ``key = probe`` (NaN for a float, 0.5 for
    an integer), which every range check of the classes refuses: the
    ConfigError it raises carries the text.  None when the class does not say.
    """
    trial = {**args, key: probe}
    try:
        with np.errstate(all="ignore"):
            cls(**trial)
    except ConfigError as err:
        if err.key == key:
            return err.allowed
    except Exception:  # noqa: BLE001 - any other failure just means no text
        pass
    return None


def _number_allowed(cls, args: dict, key: str, integer: bool, nullable: bool = False) -> str:
    """The allowed text of a numeric argument: the class's own words, said of numbers.

    A nullable argument may be an integer or a float: both probes are tried.
    """
    probes = [float("nan"), 0.5] if nullable else [0.5 if integer else float("nan")]
    text = next((t for t in (_probe_allowed(cls, args, key, p) for p in probes) if t), None)
    out = _of_numbers(text, integer)
    return out if not nullable or "null" in out else f"null or {out}"


def _of_numbers(text: str | None, integer: bool = False) -> str:
    """A class's bare range said of numbers: "> 0" -> "finite numbers > 0"."""
    kind = "integers" if integer else "finite numbers"
    if text is None:
        return kind
    if text[:1] in "<>":
        return f"{kind} {text}"
    if text[:1] in "([":  # "(0, 1]" -> "finite numbers in (0, 1]"
        return f"{kind} in {text}"
    return text  # already a sentence: "integer >= 2", "null (...) or a number > 0"


def _check_arguments(group: str, cls, params: dict | None, args: dict, extra: dict) -> None:
    """Type checks the classes cannot make: a number where a number is expected.

    The parameter's default decides: a bool default wants a bool, an int
    default an integer, a float default a finite number.  (Their own range
    checks would otherwise compare ``'abc' < 1`` and fail with a TypeError,
    and let ``inf`` through.)  A parameter whose default is None is left to the
    class; see :func:`_build` for what happens when it fails on one.
    """
    if params is None:
        return
    for key, value in args.items():
        if key in extra or key not in params:
            continue
        default = params[key]
        if isinstance(default, bool):
            check(isinstance(value, bool), f"{group}.{key}", value, "true, false")
        elif isinstance(default, int):
            check(is_int(value), f"{group}.{key}", value, _number_allowed(cls, args, key, True))
        elif isinstance(default, float):
            check(is_number(value), f"{group}.{key}", value, _number_allowed(cls, args, key, False))
        elif default is None:
            check(not isinstance(value, bool), f"{group}.{key}", value,
                  _number_allowed(cls, args, key, False, nullable=True))


def _build(group: str, node: dict, **extra):
    """Instantiate ``node`` (its ``_target_``, minus ``name``) with extra kwargs.

    Errors raised by the class's own validation get the group prefix.  When
    the class fails otherwise (a TypeError from ``'abc' > 0``, say), the one
    argument that is neither null nor a finite number nor a string is blamed;
    the group as a whole only when there is no single such argument.
    """
    cls = _target_class(group, node)
    params = _parameters(cls)
    args = {k: v for k, v in node.items() if k not in _NOT_ARGS}
    args.update(extra)
    _check_arguments(group, cls, params, args, extra)
    try:
        return cls(**args)
    except ConfigError as err:
        default = (params or {}).get(err.key)
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            err = ConfigError(err.key, err.got, _of_numbers(err.allowed, isinstance(default, int)))
        raise err.under(group) from None
    except (TypeError, ValueError, ArithmeticError) as err:
        suspects = [k for k, v in args.items()
                    if k not in extra and v is not None and not is_number(v) and not isinstance(v, str)]
        suspects = suspects or [k for k, v in args.items() if k not in extra and isinstance(v, str)
                                and params is not None and params.get(k, "") is None]
        if len(suspects) == 1:
            key = suspects[0]
            raise ConfigError(f"{group}.{key}", args[key],
                              _number_allowed(cls, args, key, False, nullable=True)) from None
        shown = {k: v for k, v in args.items() if k not in extra}
        raise ConfigError(group, shown, f"parameters of {cls.__name__} ({first_line(err)})") from None


