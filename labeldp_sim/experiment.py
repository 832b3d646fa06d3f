"""From a composed configuration to validated objects, before any computation.

Every bad value becomes one :class:`~labeldp_sim.errors.ConfigError` line that
names the config key and the allowed values.  :func:`labeldp_sim.cli.validate_job` is the
entry point for every kind of job (``rates``, ``kclass``, ``digits``).  It only
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
"""

from __future__ import annotations

import importlib
import inspect
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .errors import MISSING, ConfigError, check, first_line, is_int, is_number
from .grid import FLOAT_ERRORS, MAX_CUBES, Point, make_points
from .provenance import config_key
from .theory import CELLS, Cell

__all__ = ["Experiment", "RunnerSettings", "JobBasics", "build_experiment", "job_kind",
           "validate_runner", "validate_results_dir", "validate_common", "config_node",
           "CONF_DIR", "GROUPS", "KINDS", "PATHS", "BACKENDS", "MAX_N", "EPS_MIN", "EPS_MAX",
           "group_options", "is_int", "is_number", "eps_allowed", "check_list"]

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
GROUPS = ("distribution", "mechanism", "estimator", "grid", "runner", "experiment")
OBJECT_GROUPS = ("distribution", "mechanism", "estimator")
KINDS = ("rates", "kclass", "digits")
# the root node that each accuracy kind adds to the configuration
KIND_NODES = {"kclass": "kclass", "digits": "digits"}
ROOT_KEYS = ("kind", "mode", "law_free", "experiment_name", "cell", "seed", "paths", "fit",
             "distribution", "mechanism", "estimator", "grid", "runner")
RUNNER_KEYS = ("n_jobs", "backend", "path", "chunk", "progress", "reuse")
PATHS_KEYS = ("results_dir",)
FIT_KEYS = ("tol", "min_points")
GRID_KEYS = ("d", "reps", "reps_per_d", "sweeps")
AXES = ("N", "eps")
PATHS = ("auto", "per_sample", "sufficient")
# multiprocessing is not offered: joblib cannot hand its results back as they finish,
# and the trial store writes each chunk as soon as it is done
BACKENDS = ("loky", "threading", "sequential")
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
class RunnerSettings:
    """How trials run (``runner.*``); the numbers never depend on these.

    Attributes
    ----------
    n_jobs : int
        joblib workers, non-zero (-1 = all cores).
    backend : str
        One of :data:`BACKENDS`.
    chunk : int
        Trials per joblib task and per store transaction, >= 1.
    progress : bool
        Show a progress bar.
    reuse : bool
        Reuse stored trials of the same config key (false recomputes them).
    """

    n_jobs: int
    backend: str
    chunk: int
    progress: bool
    reuse: bool


def validate_runner(cfg) -> RunnerSettings:
    """Check ``cfg.runner`` (keys exactly :data:`RUNNER_KEYS`) and return its settings.

    ``runner.path`` is checked here against :data:`PATHS` for every kind (the
    accuracy kinds ignore it); :func:`build_experiment` checks it against the
    experiment's distribution and estimator.
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
    return RunnerSettings(n_jobs=int(n_jobs), backend=str(runner["backend"]), chunk=int(chunk),
                          progress=runner["progress"], reuse=runner["reuse"])


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

    The root keys are :data:`ROOT_KEYS`, plus the node of an accuracy kind
    (``kclass`` or ``digits``).  A ``kind`` that does not match the experiment
    (``kind=kclass`` on a Table I cell) is blamed on ``kind``.
    """
    check(isinstance(cfg, DictConfig), "config", type(cfg).__name__, "a composed DictConfig")
    check(kind in KINDS, "kind", kind, KINDS)
    name = _root_value(cfg, "experiment_name")
    check(name is not None, "experiment", None, group_options("experiment"))
    present = [k for k, node in KIND_NODES.items() if node in cfg]
    own = KIND_NODES.get(kind)
    if (own is None and present) or (own is not None and own not in cfg):
        right = present[0] if len(present) == 1 else "rates"
        raise ConfigError("kind", kind, f"{right} (the kind of experiment {name})")
    allowed = ROOT_KEYS + ((own,) if own else ())
    for key in cfg.keys():
        # "hydra" is there only when composed with return_hydra_config=True
        if key not in allowed and key != "hydra":
            raise ConfigError(str(key), OmegaConf.to_container(cfg, resolve=False)[key], list(allowed))
    # the name is a directory under results_dir: one plain path component
    check(isinstance(name, str) and name not in ("", ".", "..") and not set(name) & set("/\\\0"),
          "experiment_name", name, "a non-empty name without / or \\ (it names results/<name>/)")
    seed = _validate_seed(cfg)
    results_dir = validate_results_dir(cfg)
    runner = validate_runner(cfg)
    tol, min_points = _validate_fit(cfg)
    return JobBasics(name, seed, runner, results_dir, tol, min_points)


def job_kind(cfg) -> str:
    """The validated ``kind`` of a composed job: rates, kclass or digits."""
    kind = _root_value(cfg, "kind") if isinstance(cfg, DictConfig) else None
    check(kind in KINDS, "kind", kind, KINDS)
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


def _clip_level(mech_node, distribution, h):
    """The mechanism's T at cube side h: a number, or 'theory'.

    'theory': the label bound T for bounded labels (Assumption 2); for heavy
    tails T = T_scale · (M_p h^(−β)/2)^(1/(p−1)), the tail of (174) — the same
    law as Theorem 10's T ~ (kε²)^(1/(2p)) and Theorem 12's T ~ (εNh^d)^(1/p)
    at the cell's h and k.
    """
    if "T" not in mech_node:
        return None
    T = mech_node["T"]
    labels = getattr(distribution, "labels", "classes")
    if T is None:
        if labels == "bounded":
            return distribution.T
        raise ConfigError("mechanism.T", None,
                          "a clipping level > 0 or 'theory' (labels are not bounded)")
    if T == "theory":
        if labels == "bounded":
            return distribution.T
        scale = mech_node.get("T_scale", 1.0)
        check(is_number(scale) and scale > 0, "mechanism.T_scale", scale, "a finite number > 0")
        return float(scale) * (distribution.M_p * h ** (-distribution.beta) / 2) ** (1 / (distribution.p - 1))
    check(is_number(T) and float(T) > 0, "mechanism.T", T, "a clipping level > 0 or 'theory'")
    return float(T)


@dataclass
class Experiment:
    """Everything a Table I sweep needs, validated.

    Attributes
    ----------
    name, cell : the experiment name and its Table I cell
    distributions : dict d -> distribution object
    mechanisms : dict point id -> mechanism object (ε and clipping level T per point)
    estimator : the estimator
    points : list of :class:`~labeldp_sim.grid.Point`
    reps, reps_per_d : replicates per point (``reps_per_d[d]`` overrides ``reps``)
    seed : root seed
    path : ``runner.path`` (auto, per_sample or sufficient)
    runner : :class:`RunnerSettings`
    results_dir : ``paths.results_dir`` (validated, not created)
    config_key : :func:`~labeldp_sim.provenance.config_key` of everything that
        determines a trial's numbers except its grid point (and the code)
    labels : names of the chosen distribution, mechanism and estimator
    tol, min_points : ``fit.*``
    """

    name: str
    cell: Cell
    distributions: dict
    mechanisms: dict
    estimator: object
    points: list
    reps: int
    reps_per_d: dict
    seed: int
    path: str
    runner: RunnerSettings
    results_dir: Path
    config_key: str
    labels: dict
    tol: float
    min_points: int

    def replicates(self, point: Point) -> int:
        """Replicates at a point: ``grid.reps_per_d[d]`` if given, else ``grid.reps``."""
        return self.reps_per_d.get(point.d, self.reps)

    def trial_path(self, point: Point) -> str:
        """The data path a point's trials use: ``auto`` takes sufficient statistics when
        both the distribution and the estimator have them."""
        if self.path != "auto":
            return self.path
        return "sufficient" if _sufficient_possible(self.distributions[point.d], self.estimator) else "per_sample"


def _sufficient_possible(distribution, estimator) -> bool:
    return bool(getattr(distribution, "supports_sufficient", False)
                and getattr(estimator, "supports_sufficient", False))


def _check_axis_value(axis: str, key: str, value) -> None:
    if axis == "N":
        check(is_number(value) and float(value).is_integer() and 1 <= value <= MAX_N, key, value,
              "integers 1 <= N <= 2**53 (float64 counts are exact up to 2**53)")
    else:
        check(is_number(value) and EPS_MIN <= value <= EPS_MAX, key, value, eps_allowed())


def _validate_grid(cfg) -> dict:
    """Check ``cfg.grid`` and return it as a plain dict (``reps_per_d`` null -> {})."""
    grid = config_node(cfg, "grid", GRID_KEYS, required=("d", "reps", "sweeps"))
    check_list("grid.d", grid["d"], lambda v: is_int(v) and v >= 1, "integers >= 1", "grid.d=[1,2]")
    check(is_int(grid["reps"]) and grid["reps"] >= 1, "grid.reps", grid["reps"], "integer >= 1")
    per_d = grid.get("reps_per_d")
    # null clears the grid file's mapping; {} cannot (OmegaConf merges mappings key by key)
    check(per_d is None or isinstance(per_d, dict), "grid.reps_per_d", per_d,
          "null or a mapping d -> integer >= 1 (e.g. {3: 500})")
    for key, value in (per_d or {}).items():
        check(is_int(key) and key >= 1, f"grid.reps_per_d.{key}", key, "integer keys d >= 1")
        check(is_int(value) and value >= 1, f"grid.reps_per_d.{key}", value, "integer >= 1")
    grid["reps_per_d"] = dict(per_d or {})
    sweeps = config_node(cfg, "grid.sweeps", AXES)
    check(len(sweeps) > 0, "grid.sweeps", sweeps, "a mapping with keys N and/or eps")
    for axis in sweeps:
        other = "eps" if axis == "N" else "N"
        prefix = f"grid.sweeps.{axis}"
        sweep = config_node(cfg, prefix, ("values", other), required=("values", other),
                            missing_allowed=f"a number (the fixed {other} of the {axis} sweep)")
        values = sweep["values"]
        check(isinstance(values, list) and len(values) > 0, f"{prefix}.values", values,
              f"a non-empty list (e.g. {prefix}.values=[1000,10000])")
        for v in values:
            _check_axis_value(axis, f"{prefix}.values", v)
        check(len({float(v) for v in values}) == len(values), f"{prefix}.values", values,
              "distinct values (a repeated value is the same grid point)")
        _check_axis_value(other, f"{prefix}.{other}", sweep[other])
    return grid


def _probe_mechanism(node: dict):
    """The mechanism of ``node`` at ε = 1 (and T = 1 if it clips): enough to know its protocol."""
    return _build("mechanism", node, epsilon=1.0, **({"T": 1.0} if "T" in node else {}))


def _check_accepts(estimator, est_name, mech_node: dict, cell: Cell) -> None:
    """The estimator must declare the mechanism protocols it accepts, and accept this one.

    A kNN averages one noisy number per user; a cube estimator sums per-cube
    statistics or takes a central release.  Any other pairing would run the
    estimator on data the mechanism never privatized.
    """
    accepts = getattr(estimator, "accepts", None)
    check(isinstance(accepts, tuple) and accepts, "estimator", est_name,
          "an estimator declaring the mechanism protocols it accepts (`accepts`)")
    mech = _probe_mechanism(mech_node)
    if isinstance(mech, accepts):
        return
    fitting = _options_that("estimator", lambda node: _build("estimator", node),
                            lambda other: cell.task in other.tasks
                            and isinstance(mech, getattr(other, "accepts", ())))
    raise ConfigError("estimator", est_name, fitting or
                      f"an estimator accepting a {type(mech).__name__} ({mech.privacy})")


def _matching_mechanisms(cell: Cell) -> list[str]:
    """Mechanism configs whose privacy is the cell's (for the error message)."""
    return _options_that("mechanism", _probe_mechanism,
                         lambda mech: mech.privacy == cell.privacy and cell.task in mech.tasks)


def _options_that(group: str, build, fits) -> list[str]:
    """The YAML options of ``group`` whose object ``build(node)`` builds and ``fits`` (for messages).

    Values interpolated from other groups (``${distribution.h_scale}``) are left
    to the class's defaults: only the object's kind matters here.
    """
    names = []
    for name in group_options(group):
        node = OmegaConf.to_container(OmegaConf.load(CONF_DIR / group / f"{name}.yaml"))
        node = {k: v for k, v in node.items() if not (isinstance(v, str) and "${" in v)}
        try:
            obj = build(node)
        except ConfigError:
            continue
        if fits(obj):
            names.append(name)
    return names


def _mismatch(group: str, got, allowed, cell: Cell, name: str, fits) -> ConfigError:
    """The error for a ``group`` that does not fit ``cell``.

    When the experiment is itself a Table I cell that ``group`` fits, the
    user moved ``cell`` away from it: ``cell`` is blamed, listing the cells
    that fit.
    """
    own = CELLS.get(name)
    if own is not None and own.name != cell.name and fits(own):
        cells = ", ".join(c for c in sorted(CELLS) if fits(CELLS[c]))
        return ConfigError("cell", cell.name, f"{cells} (the cells that {group} {got} fits)")
    return ConfigError(group, got, allowed)


def _point_key(pt: Point) -> tuple[str, float]:
    """The swept key of a point and the value requested there (for errors)."""
    if pt.axis == "N":
        return "grid.sweeps.N.values", int(pt.N_requested)  # integral: checked by _check_axis_value
    return "grid.sweeps.eps.values", pt.eps_requested


def build_experiment(cfg: DictConfig) -> Experiment:
    """Validate a ``kind: rates`` configuration and build its :class:`Experiment`.

    Raises ConfigError on the first bad key or value, before any computation;
    creates nothing.
    """
    kind = _root_value(cfg, "kind", "rates")
    basics = validate_common(cfg, kind)
    check(kind == "rates", "kind", kind, "rates (labeldp_sim.cli.validate_job dispatches kclass and digits)")
    name = basics.name
    cell_name = _root_value(cfg, "cell", name)
    check(isinstance(cell_name, str) and cell_name in CELLS, "cell", cell_name, sorted(CELLS))
    cell = CELLS[cell_name]

    nodes, classes = {}, {}
    for group in OBJECT_GROUPS:
        check(group in cfg and isinstance(cfg[group], DictConfig) and "_target_" in cfg[group],
              group, _plain(cfg.get(group)), group_options(group))
        nodes[group] = config_node(cfg, group)
        classes[group] = _target_class(group, nodes[group])
        _check_group_keys(group, nodes[group], _parameters(classes[group]))
    grid = _validate_grid(cfg)
    path = str(cfg.runner.path)  # checked against PATHS by validate_runner

    # the distribution first: estimator.h_scale interpolates ${distribution.h_scale}, and a
    # bad value there is the distribution's
    distributions = {int(d): _build("distribution", nodes["distribution"], d=int(d)) for d in grid["d"]}
    first = next(iter(distributions.values()))
    dist_label = nodes["distribution"].get("name")
    if first.task != cell.task:
        raise _mismatch("distribution", dist_label, f"a {cell.task} distribution for cell {cell.name}",
                        cell, name, lambda c: c.task == first.task)

    estimator = _build("estimator", nodes["estimator"])
    est_tasks = getattr(estimator, "tasks", ())
    if cell.task not in est_tasks:
        raise _mismatch("estimator", nodes["estimator"].get("name"), f"an estimator for {cell.task}",
                        cell, name, lambda c: c.task in est_tasks)

    _check_accepts(estimator, nodes["estimator"].get("name"), nodes["mechanism"], cell)

    beta, p_moment = first.beta, first.p
    points = make_points(name, cell, grid, beta, first.h_scale, p_moment)  # FP errors -> ConfigError
    tuned = []
    for pt in points:
        key, requested = _point_key(pt)
        check(1 <= pt.N <= MAX_N, key, requested,
              f"values whose snapped N stays <= 2**53 (it snaps to {pt.N:.6g})")
        check(EPS_MIN <= pt.eps <= EPS_MAX, key, requested,
              f"values whose snapped eps stays in {eps_allowed()} (it snaps to {pt.eps:.6g})")
        dist = distributions[pt.d]
        try:
            with np.errstate(all="raise"):
                G_est = estimator.n_cubes(cell, pt.N, pt.eps, beta, pt.d, p_moment)
                k = float("nan")
                if hasattr(estimator, "neighbours"):
                    k = estimator.neighbours(cell, pt.N, pt.eps, beta, pt.d, p_moment)
                    check(1 <= k <= pt.N, "estimator.k", k,
                          f"1 <= k <= N (N = {pt.N:,} at d = {pt.d}, eps = {pt.eps:g})")
                T = _clip_level(nodes["mechanism"], dist, pt.h)
                valid = dist.construction_valid(pt.G)
        except FLOAT_ERRORS as err:
            raise ConfigError(key, requested, f"values whose tuning stays within float64 at d = {pt.d} "
                              f"({first_line(err)})") from None
        # cube indices are int64 and cube counts float64: both need G^d <= 2**53
        check(max(pt.G, G_est) ** pt.d <= MAX_CUBES, key, requested,
              f"values whose cube count stays <= 2**53 (G = {max(pt.G, G_est):,} per axis at d = {pt.d}; "
              "see distribution.h_scale and estimator.h_scale)")
        tuned.append(replace(pt, G_est=G_est, k=k, T=float("nan") if T is None else T,
                             in_regime=pt.in_regime and valid))
    points = tuned

    mechanisms = {}
    for pt in points:
        extra = {} if np.isnan(pt.T) else {"T": pt.T}
        try:
            with np.errstate(all="raise"):
                mechanisms[pt.id] = _build("mechanism", nodes["mechanism"], epsilon=pt.eps, **extra)
        except FLOAT_ERRORS as err:
            key, requested = _point_key(pt)
            raise ConfigError(key, requested, f"values the mechanism can use in float64 "
                              f"({first_line(err)})") from None
    mech = next(iter(mechanisms.values()))
    mech_tasks, mech_privacy = getattr(mech, "tasks", ()), getattr(mech, "privacy", None)
    if cell.task not in mech_tasks or mech_privacy != cell.privacy:
        raise _mismatch("mechanism", nodes["mechanism"].get("name"),
                        _matching_mechanisms(cell) or f"a {cell.privacy} mechanism", cell, name,
                        lambda c: c.task in mech_tasks and c.privacy == mech_privacy)
    if not _sufficient_possible(first, estimator) and path == "sufficient":
        raise ConfigError("runner.path", "sufficient",
                          "auto or per_sample (this distribution/estimator has no sufficient statistics)")
    if path == "per_sample" or not _sufficient_possible(first, estimator):
        too_big = [pt.N for pt in points if pt.N > PER_SAMPLE_MAX_N]
        check(not too_big, "runner.path", path,
              f"N <= {PER_SAMPLE_MAX_N:,} for per-sample trials (grid has N = {max(too_big or [0]):,})")

    # everything that determines a trial's numbers apart from its grid point and replicate
    parts = {group: nodes[group] for group in OBJECT_GROUPS}
    parts["seed"] = basics.seed
    parts["cell"] = cell.name
    return Experiment(
        name=name, cell=cell, distributions=distributions, mechanisms=mechanisms,
        estimator=estimator, points=points, reps=int(grid["reps"]),
        reps_per_d={int(k): int(v) for k, v in grid["reps_per_d"].items()},
        seed=basics.seed, path=path, runner=basics.runner, results_dir=basics.results_dir,
        config_key=config_key(parts),
        labels={g: str(nodes[g].get("name", g)) for g in OBJECT_GROUPS},
        tol=basics.tol, min_points=basics.min_points,
    )
