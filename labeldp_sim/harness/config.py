"""From a composed configuration to validated settings, before any computation.

Every bad value becomes one :class:`~labeldp_sim.harness.errors.ConfigError` line that
names the config key and the allowed values.  :func:`labeldp_sim.harness.cli.validate_job` is the
entry point for every kind of job; it dispatches to the registered kind
(:mod:`labeldp_sim.harness.kinds`), whose validator builds on the helpers here and on
the declared parameters of its components (:mod:`labeldp_sim.harness.components`).  It
only reads: it computes no trial and creates no file or directory, so a refused run
leaves no trace and a multirun can validate all its jobs before the first one
starts.

What is checked, for every kind:

* **Keys.** Every node's keys are checked, and an unknown one (``+grid.foo=1``)
  is refused with the node's allowed keys (:func:`config_node`; a component's
  node: its class's declared parameters).
* **Values, each blamed on its own key.** A number must be a finite real
  number (``'abc'``, ``inf`` and ``true`` are refused where a number is
  expected); a flag must be ``true`` or ``false``.
* **Ranges that keep float64 exact.** N ≤ 2**53 (:data:`MAX_N`: counts are exact
  float64 integers only up to there; :data:`MAX_N_LAW` = 10**18 where the risk is an
  exact law in which N is a real parameter, e.g. law-free exact classification), ε ∈ [1e-12, 100], seed in [0, 2**63).
* **The results directory** can be created, or is a writable directory
  (:func:`validate_results_dir`).
* **The runner**: ``runner.*``, its Dask cluster and SLURM settings
  (:func:`validate_runner`, :mod:`labeldp_sim.harness.settings`).
* **Sizes that fit in memory** (:mod:`labeldp_sim.harness.memory`, re-exported here).
* **Keys another kind reads.**  A paper's keys and groups come with its own
  experiments (Table I's from ``conf/table1/table1.yaml``), so a K-class or
  user-level job has no ``grid`` or ``mechanism`` and an override of one is
  refused at composition; a key that another kind reads and the root config
  sets must keep the root's value.

The config directories (``conf/``, the papers' ``conf/<paper>/`` and those of
``LABELDP_SIM_CONF_PATH``) and each group's options come from
:mod:`labeldp_sim.harness.conf_path`, re-exported here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from labeldp_sim.harness.conf_path import (CONF_DIR, CONF_PATH_VARIABLE, GROUPS, conf_dirs, conf_file, config_groups,
                        group_options, top_config)
from labeldp_sim.harness.errors import MISSING, ConfigError, check, first_line, is_int, is_number
from labeldp_sim.harness.kinds import ROOT_KEYS, registered
from labeldp_sim.harness.memory import (PLAN_BYTES_PER_TRIAL, MemoryBudget, Need, check_memory, check_plan_size, machine_memory,
                     memory_budget)
from labeldp_sim.harness.settings import DaskSettings, RunnerSettings, SlurmSettings, parse_memory

__all__ = ["RunnerSettings", "DaskSettings", "SlurmSettings", "JobBasics", "job_kind", "validate_runner",
           "validate_results_dir", "validate_common", "config_node", "root_value", "plain",
           "CONF_DIR", "CONF_PATH_VARIABLE", "GROUPS", "conf_dirs", "conf_file", "config_groups", "top_config",
           "PATHS", "BACKENDS", "DASK_KEYS", "SLURM_KEYS", "CLUSTERS",
           "MAX_N", "MAX_N_LAW", "EPS_MIN", "EPS_MAX", "PER_SAMPLE_MAX_N", "group_options", "is_int", "is_number",
           "eps_allowed", "Need", "MemoryBudget", "memory_budget", "machine_memory",
           "check_memory", "PLAN_BYTES_PER_TRIAL", "experiments_of_kind", "check_plan_size"]

RUNNER_KEYS = ("n_jobs", "backend", "path", "chunk", "progress", "reuse", "dask")
DASK_KEYS = ("cluster", "scheduler", "startup_timeout", "slurm")
SLURM_KEYS = ("jobs", "cores", "processes", "memory", "walltime", "account", "partition", "interface",
              "job_extra_directives", "job_script_prologue")
CLUSTERS = ("local", "slurm")
PATHS_KEYS = ("results_dir",)
FIT_KEYS = ("tol", "min_points")
# runner.path: how a trial's data are drawn, where a kind offers a choice
# (exact: the expected risk in closed form, no Monte Carlo; auto takes it where the estimator states one)
PATHS = ("auto", "per_sample", "sufficient", "exact")
# multiprocessing is not offered: joblib cannot hand its results back as they finish,
# and the trial store writes each chunk as soon as it is done
BACKENDS = ("loky", "threading", "sequential", "dask")
# schemes a Client can reach without extra packages; tls and ws(s) read their certificates
# from Dask's own configuration
SCHEDULER_ADDRESS = re.compile(r"(tcp|tls|ws|wss)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:(\d{1,5}))?")
# what sbatch accepts for --time: minutes, minutes:seconds, hours:minutes:seconds,
# days-hours, days-hours:minutes and days-hours:minutes:seconds
SLURM_TIME = re.compile(r"\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2}")
# a SLURM queue may hold jobs for days, but an event loop's timer must stay a sane float;
# below a millisecond no worker can answer and the time-out is a typo (1e-300)
MAX_STARTUP_TIMEOUT = 30 * 86400
MIN_STARTUP_TIMEOUT = 1e-3
# runner.n_jobs on this machine (loky, threading, a LocalCluster): this many workers per core at
# most.  Each loky or Dask worker is a Python process of about 40 MB before it holds any data, and
# beyond a few per core they only queue for the CPU; n_jobs=100000 would fork until memory ran out.
JOBS_PER_CORE = 4
# runner.n_jobs where the workers are elsewhere (a scheduler address, SLURM): it sizes nothing
# there (the cluster does), but a number beyond any real cluster is a typo
MAX_REMOTE_JOBS = 100_000
# trials per task and per store transaction: one chunk's DataFrame (a few hundred bytes a row) is
# built on a worker and sent back whole; beyond this a chunk is hundreds of MB and the run one task
MAX_CHUNK = 1_000_000
# account, partition and interface land in #SBATCH lines and worker options: one word
SLURM_NAME = re.compile(r"[A-Za-z0-9_.,:+@-]+")
# runner.path=per_sample holds the N samples of a trial: beyond this, only sufficient statistics
PER_SAMPLE_MAX_N = 10_000_000
# float64 holds every integer up to 2**53 exactly; above it counts and N·h^d round
MAX_N = 2 ** 53
# an exact law that takes N as a real parameter (the choice law's N·log φ, privacy/choice_law.py) has no
# count to round: past 2**53 only N itself rounds (relative error 2**-53), which moves such a risk by
# |d log R / d log N|·2**-53 < 1e-15 relative.  10**18: the choice law's stated reach
MAX_N_LAW = 10 ** 18
# ε outside this range over- or underflows e^ε, ε² or the laws' powers of εN
EPS_MIN, EPS_MAX = 1e-12, 100.0
SEED_LIMIT = 2 ** 63


# --------------------------------------------------------------------------- value helpers


def eps_allowed() -> str:
    """The allowed-values text of every ε."""
    return f"numbers in [{EPS_MIN:g}, {EPS_MAX:g}]"


def _join(prefix: str, key) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def root_value(cfg, key: str, default=None):
    """``cfg[key]`` resolved, or ``default``; a broken interpolation is blamed on ``key``."""
    try:
        return plain(cfg.get(key, default))
    except OmegaConfBaseException as err:
        raw = OmegaConf.to_container(cfg, resolve=False).get(key)
        raise ConfigError(key, raw, f"a value that resolves ({first_line(err)})") from None


def plain(value):
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
    check(isinstance(node, (DictConfig, dict)), key, plain(node), shape)
    out = {}
    for name in node.keys():
        try:
            out[name] = plain(node[name])
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


def validate_runner(cfg) -> RunnerSettings:
    """Check ``cfg.runner`` (keys exactly :data:`RUNNER_KEYS`) and return its settings.

    ``runner.path`` is checked here against :data:`PATHS` for every kind (a kind
    without a choice of data path ignores it; one with a choice checks it against
    the paths its objects offer).  ``runner.dask`` is checked by
    :func:`validate_dask`.
    """
    runner = config_node(cfg, "runner", RUNNER_KEYS, required=RUNNER_KEYS)
    check(runner["path"] in PATHS, "runner.path", runner["path"], PATHS)
    check(runner["backend"] in BACKENDS, "runner.backend", runner["backend"],
          f"{', '.join(BACKENDS)} (not multiprocessing: joblib cannot return its results as they finish)")
    n_jobs = runner["n_jobs"]
    check(is_int(n_jobs) and n_jobs != 0, "runner.n_jobs", n_jobs, jobs_allowed(None))
    chunk = runner["chunk"]
    check(is_int(chunk) and 1 <= chunk <= MAX_CHUNK, "runner.chunk", chunk,
          f"an integer in [1, {MAX_CHUNK:,}] (trials per task and per store transaction)")
    for flag in ("progress", "reuse"):
        # a real bool only: 'maybe', 1 or 'yes' would otherwise be read as true
        check(isinstance(runner[flag], bool), f"runner.{flag}", runner[flag], "true, false")
    dask = validate_dask(cfg, str(runner["backend"]))
    # checked once the backend and the cluster are known: they decide where the workers start
    remote = runner["backend"] == "dask" and (dask.scheduler is not None or dask.cluster == "slurm")
    low, high = jobs_range(remote)
    check(low <= n_jobs <= high, "runner.n_jobs", n_jobs, jobs_allowed(remote))
    return RunnerSettings(n_jobs=int(n_jobs), backend=str(runner["backend"]), chunk=int(chunk),
                          progress=runner["progress"], reuse=runner["reuse"], dask=dask)


def jobs_range(remote: bool) -> tuple[int, int]:
    """The allowed ``runner.n_jobs`` (0 excepted): ``(-cores, JOBS_PER_CORE × cores)`` on this
    machine, ``(-cores, MAX_REMOTE_JOBS)`` where the workers are elsewhere (``remote``).

    A negative value counts back from the cores as joblib does (-1 all of them, -2 all but
    one); below -cores it would mean one worker whatever was written, so it is refused.
    """
    cores = os.cpu_count() or 1
    return -cores, (MAX_REMOTE_JOBS if remote else JOBS_PER_CORE * cores)


def jobs_allowed(remote: bool | None) -> str:
    """The allowed-values text of ``runner.n_jobs``: the range that applies (``remote``), and
    the other one; None (the backend not known yet): both."""
    cores = os.cpu_count() or 1
    local = (f"a non-zero integer in [-{cores}, {JOBS_PER_CORE * cores}] on this machine "
             f"({JOBS_PER_CORE} workers per core of its {cores}; -1 = all cores, -2 all but one)")
    elsewhere = (f"up to {MAX_REMOTE_JOBS:,} with runner.backend=dask and a scheduler address or "
                 "runner=slurm (the cluster sizes itself)")
    if remote:
        return f"a non-zero integer in [-{cores}, {MAX_REMOTE_JOBS:,}] (the cluster sizes itself)"
    return f"{local}; {elsewhere}"


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
    check(is_number(timeout) and MIN_STARTUP_TIMEOUT <= timeout <= MAX_STARTUP_TIMEOUT,
          "runner.dask.startup_timeout", timeout,
          f"a number of seconds in [{MIN_STARTUP_TIMEOUT:g}, {MAX_STARTUP_TIMEOUT}] (30 days)")
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
    check(isinstance(memory, str) and parse_memory(memory) > 0, f"{prefix}.memory", memory,
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
    seed = root_value(cfg, "seed", MISSING)
    check(is_int(seed) and 0 <= seed < SEED_LIMIT, "seed", seed, "an integer in [0, 2**63)")
    return int(seed)


def _validate_fit(cfg) -> tuple[float, int]:
    fit = config_node(cfg, "fit", FIT_KEYS, required=FIT_KEYS)
    # a margin on a rate exponent (slopes of order 1): at 1 or more every fitted slope is
    # "equivalent" to the theory's and the verdict says nothing
    check(is_number(fit["tol"]) and 0 < fit["tol"] < 1, "fit.tol", fit["tol"],
          "a number in (0, 1) (the equivalence margin on a slope, e.g. 0.05)")
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
    name = root_value(cfg, "experiment_name")
    present = [k for k, spec in kinds.items() if spec.node and spec.node in cfg]
    own = kinds[kind].node
    if (own is None and present) or (own is not None and own not in cfg):
        default = next((k for k, spec in kinds.items() if spec.node is None), "?")
        right = present[0] if len(present) == 1 else default
        raise ConfigError("kind", kind, f"{right} (the kind of experiment {name})")
    # a kind's experiments bring its root keys, and an experiment of one kind may carry another's
    # (userlevel_minimax sets Table I's mode); a kind's own node only in its own experiments
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
def root_defaults() -> dict:
    """The root config's own values and its default group choices, as written (unresolved).

    Read from the YAML files, not composed with Hydra: validation may run inside
    another Hydra context.  Only the keys every paper shares are there (a paper's
    own come with its experiments).
    """
    root = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"), resolve=False)  # the root is the package's
    out = {k: v for k, v in root.items() if k != "defaults"}
    for entry in root.get("defaults", []):
        if isinstance(entry, dict):
            for group, choice in entry.items():
                if group in GROUPS and choice is not None:
                    node = OmegaConf.load(conf_file(group, choice))
                    out[group] = {k: v for k, v in OmegaConf.to_container(node, resolve=False).items()
                                  if k != "defaults"}
    return out


@lru_cache(maxsize=1)
def experiments_of_kind() -> dict:
    """kind -> names of the experiments (``conf/<paper>/experiment/*.yaml``) of that kind, read from
    their ``kind:`` line or that of the config they include first (``ul_cls`` for ``ul_cls_paper``,
    ``/table1`` for a Table I cell; default: the root config's kind)."""
    default = str(root_defaults().get("kind", ""))
    kinds = {}

    def included(entry: str) -> Path:
        # a defaults entry without a group: "/name" is a config at the top of a config directory,
        # "name" one of the experiment group (Hydra's paths relative to the including config)
        return top_config(entry) if entry.startswith("/") else conf_file("experiment", entry)

    def kind_of(path: Path, seen=()):
        if path in seen or not path.exists():
            return default
        node = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        if "kind" in node:
            return str(node["kind"])
        parents = [e for e in node.get("defaults", []) if isinstance(e, str) and e != "_self_"]
        return kind_of(included(parents[0]), (*seen, path)) if parents else default

    for name in group_options("experiment"):
        kinds.setdefault(kind_of(conf_file("experiment", name)), []).append(name)
    return kinds


def _name_patterns(names: list, others: list) -> str:
    """``cls_*, reg_*, ul_minimax_cls``: a prefix's pattern where no other name shares it, the names otherwise."""
    taken = {o.split("_")[0] for o in others if "_" in o}
    out = []
    for n in names:
        prefix = n.split("_")[0]
        item = f"{prefix}_*" if "_" in n and prefix not in taken else n
        if item not in out:
            out.append(item)
    return ", ".join(out)


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
    # true == 1 to Python, never to a user: a bool where a number was (or the reverse) differs
    same = got == default and isinstance(got, bool) == isinstance(default, bool)
    return None if same else (key, got)


def _first_leaf(value, key: str) -> tuple:
    """(dotted key, value) of the first leaf of ``value`` (``value`` itself if not a non-empty mapping)."""
    while isinstance(value, dict) and value:
        first = next(iter(value))
        key, value = f"{key}.{first}", value[first]
    return key, value


def _check_unread_keys(cfg, kind: str, name: str, keys: list) -> None:
    """Refuse a change to a root key this kind never reads (another kind's: ``mode``, ``grid``...).

    Such a key is in a job whose experiment carries it for its own kind
    (``mode`` in a userlevel_minimax job) or whose root config sets it; a change
    there would otherwise be accepted and ignored.
    """
    defaults = root_defaults()
    kinds = registered()
    by_kind = experiments_of_kind()
    for top in keys:
        if top not in cfg:
            continue
        try:
            got = OmegaConf.to_container(cfg, resolve=False)[top]
        except OmegaConfBaseException:  # pragma: no cover - a node that cannot be read is a change
            got = MISSING
        # a key the root config does not set is another paper's, added to this job (+mode=law_free,
        # +mechanism=rappor): any value is a change, blamed on its first leaf
        found = (_first_difference(got, defaults[top], top) if top in defaults
                 else _first_leaf(got, top))
        if found is None:
            continue
        key, value = found
        default = defaults.get(top, MISSING)
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


def job_kind(cfg) -> str:
    """The validated ``kind`` of a composed job: one of the registered kinds."""
    if isinstance(cfg, DictConfig) and "kind" not in cfg and (
            "experiment_name" not in cfg or OmegaConf.is_missing(cfg, "experiment_name")):
        # the experiments bring the kind: none chosen is blamed on experiment, not on kind
        raise ConfigError("experiment", None, group_options("experiment"))
    kind = root_value(cfg, "kind") if isinstance(cfg, DictConfig) else None
    kinds = list(registered())
    check(kind in kinds, "kind", kind, kinds)
    return kind
