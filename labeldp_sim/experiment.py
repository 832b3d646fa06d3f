"""From a composed configuration to validated objects, before any computation.

Every bad value becomes one :class:`~labeldp_sim.errors.ConfigError` line that
names the config key and the allowed values.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from .errors import ConfigError, check
from .grid import Point, make_points
from .theory import CELLS, Cell

__all__ = ["Experiment", "build_experiment", "CONF_DIR", "group_options"]

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
GROUPS = ("distribution", "mechanism", "estimator", "grid", "runner", "experiment")
PATHS = ("auto", "per_sample", "sufficient")
BACKENDS = ("loky", "threading", "multiprocessing", "sequential")
PER_SAMPLE_MAX_N = 10_000_000


def group_options(group: str) -> list[str]:
    """Names of the YAML files of one config group."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


# config keys that describe how to tune an object, not constructor arguments
_NOT_ARGS = ("_target_", "name", "T_scale")


def _build(group: str, node, **extra):
    """Instantiate ``node`` (its ``_target_``, minus ``name``) with extra kwargs.

    Errors raised by the class's own validation get the group prefix.
    """
    params = {k: v for k, v in node.items() if k not in _NOT_ARGS}
    params.update(extra)
    try:
        cls = get_class(node["_target_"])
    except Exception:
        raise ConfigError(f"{group}._target_", node.get("_target_"), "an importable class")
    try:
        return cls(**params)
    except ConfigError as err:
        raise err.under(group) from None
    except TypeError as err:
        raise ConfigError(group, dict(params), f"parameters of {cls.__name__} ({err})") from None


@dataclass
class Experiment:
    """Everything a sweep needs, validated.

    Attributes
    ----------
    name, cell : the experiment name and its Table I cell
    distributions : dict d -> distribution object
    mechanisms : dict point id -> mechanism object (ε and clipping level T per point)
    estimator : the estimator
    points : list of :class:`~labeldp_sim.grid.Point`
    reps, seed, path, n_jobs, backend, chunk : runner settings
    config_key : hash of everything that determines a trial's numbers except the grid
    labels : names of the chosen distribution, mechanism and estimator
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
    n_jobs: int
    backend: str
    chunk: int
    progress: bool
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
        check(_positive_number(scale) and scale > 0, "mechanism.T_scale", scale, "> 0")
        return float(scale) * (distribution.M_p * h ** (-distribution.beta) / 2) ** (1 / (distribution.p - 1))
    check(_positive_number(T) and float(T) > 0, "mechanism.T", T, "a clipping level > 0 or 'theory'")
    return float(T)


def _positive_number(x) -> bool:
    try:
        return bool(np.isfinite(float(x)))
    except (TypeError, ValueError):
        return False


def _validate_grid(grid) -> None:
    d = grid.get("d")
    check(isinstance(d, (list, tuple)) or OmegaConf.is_list(d), "grid.d", d, "a list of integers >= 1")
    for v in d:
        check(isinstance(v, int) and v >= 1, "grid.d", v, "integers >= 1")
    reps = grid.get("reps")
    check(isinstance(reps, int) and reps >= 1, "grid.reps", reps, "integer >= 1")
    for key, value in (grid.get("reps_per_d") or {}).items():
        check(isinstance(value, int) and value >= 1, f"grid.reps_per_d.{key}", value, "integer >= 1")
    sweeps = grid.get("sweeps")
    check(sweeps is not None and len(sweeps) > 0, "grid.sweeps", sweeps, "a mapping with keys N and/or eps")
    for axis, sweep in sweeps.items():
        check(axis in ("N", "eps"), f"grid.sweeps.{axis}", axis, ["N", "eps"])
        values = sweep.get("values")
        check(values is not None and len(values) > 0, f"grid.sweeps.{axis}.values", values,
              "a non-empty list")
        other = "eps" if axis == "N" else "N"
        check(other in sweep, f"grid.sweeps.{axis}.{other}", None, "a number (the fixed value)")
        for key, vals in ((f"grid.sweeps.{axis}.values", values), (f"grid.sweeps.{axis}.{other}", [sweep[other]])):
            is_n = key.endswith(".N") or (axis == "N" and key.endswith("values"))
            for v in vals:
                if is_n:
                    check(_positive_number(v) and float(v) >= 1 and float(v) == int(float(v)),
                          key, v, "integers N >= 1")
                else:
                    check(_positive_number(v) and float(v) > 0, key, v, "eps > 0")


def _config_key(cfg: DictConfig) -> str:
    """Hash of the parts that determine a trial's numbers (not grid, runner, paths)."""
    keep = {k: OmegaConf.to_container(cfg[k], resolve=True)
            for k in ("distribution", "mechanism", "estimator") if k in cfg}
    keep["seed"] = int(cfg.seed)
    keep["cell"] = str(cfg.cell)
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def _matching_mechanisms(cell: Cell) -> list[str]:
    """Mechanism configs whose privacy is the cell's (for the error message)."""
    names = []
    for name in group_options("mechanism"):
        node = OmegaConf.load(CONF_DIR / "mechanism" / f"{name}.yaml")
        try:
            mech = _build("mechanism", node, epsilon=1.0, **({"T": 1.0} if "T" in node else {}))
        except ConfigError:
            continue
        if mech.privacy == cell.privacy and cell.task in mech.tasks:
            names.append(name)
    return names


def build_experiment(cfg: DictConfig) -> Experiment:
    """Validate ``cfg`` and build the :class:`Experiment`; raises ConfigError."""
    name = cfg.get("experiment_name")
    check(name is not None, "experiment", None, group_options("experiment"))
    cell_name = cfg.get("cell", name)
    check(cell_name in CELLS, "cell", cell_name, sorted(CELLS))
    cell = CELLS[cell_name]

    for group in ("distribution", "mechanism", "estimator"):
        check(group in cfg and "_target_" in cfg[group], group, cfg.get(group),
              group_options(group))
    grid = cfg.grid
    _validate_grid(grid)

    runner = cfg.runner
    check(runner.path in PATHS, "runner.path", runner.path, PATHS)
    check(runner.backend in BACKENDS, "runner.backend", runner.backend, BACKENDS)
    check(isinstance(runner.n_jobs, int) and runner.n_jobs != 0, "runner.n_jobs", runner.n_jobs,
          "a non-zero integer (-1 = all cores)")
    check(isinstance(runner.chunk, int) and runner.chunk >= 1, "runner.chunk", runner.chunk,
          "integer >= 1")
    check(isinstance(cfg.seed, int) and cfg.seed >= 0, "seed", cfg.seed, "integer >= 0")
    check(_positive_number(cfg.fit.tol) and cfg.fit.tol > 0, "fit.tol", cfg.fit.tol, "> 0")
    check(isinstance(cfg.fit.min_points, int) and cfg.fit.min_points >= 2, "fit.min_points",
          cfg.fit.min_points, "integer >= 2")

    dist_node = OmegaConf.to_container(cfg.distribution, resolve=True)
    distributions = {int(d): _build("distribution", dist_node, d=int(d)) for d in grid.d}
    first = next(iter(distributions.values()))
    check(first.task == cell.task, "distribution", cfg.distribution.get("name"),
          f"a {cell.task} distribution for cell {cell.name}")

    mech_node = OmegaConf.to_container(cfg.mechanism, resolve=True)
    est_node = OmegaConf.to_container(cfg.estimator, resolve=True)
    estimator = _build("estimator", est_node)
    check(cell.task in getattr(estimator, "tasks", ()), "estimator", est_node.get("name"),
          f"an estimator for {cell.task}")

    beta, p_moment = first.beta, first.p
    points = make_points(name, cell, OmegaConf.to_container(grid, resolve=True),
                         beta, first.h_scale, p_moment)
    tuned = []
    for pt in points:
        dist = distributions[pt.d]
        G_est = estimator.n_cubes(cell, pt.N, pt.eps, beta, pt.d, p_moment)
        k = float("nan")
        if hasattr(estimator, "neighbours"):
            k = estimator.neighbours(cell, pt.N, pt.eps, beta, pt.d, p_moment)
            check(1 <= k <= pt.N, "estimator.k", k,
                  f"1 <= k <= N (N = {pt.N:,} at d = {pt.d}, eps = {pt.eps:g})")
        T = _clip_level(mech_node, dist, pt.h)
        tuned.append(replace(pt, G_est=G_est, k=k, T=float("nan") if T is None else T,
                             in_regime=pt.in_regime and dist.construction_valid(pt.G)))
    points = tuned

    mechanisms = {}
    for pt in points:
        extra = {} if np.isnan(pt.T) else {"T": pt.T}
        mechanisms[pt.id] = _build("mechanism", mech_node, epsilon=pt.eps, **extra)
    mech = next(iter(mechanisms.values()))
    if cell.task not in getattr(mech, "tasks", ()) or getattr(mech, "privacy", None) != cell.privacy:
        raise ConfigError("mechanism", mech_node.get("name"),
                          _matching_mechanisms(cell) or f"a {cell.privacy} mechanism")
    if not _sufficient_possible(first, estimator) and runner.path == "sufficient":
        raise ConfigError("runner.path", "sufficient",
                          "auto or per_sample (this distribution/estimator has no sufficient statistics)")
    if runner.path == "per_sample" or not _sufficient_possible(first, estimator):
        too_big = [pt.N for pt in points if pt.N > PER_SAMPLE_MAX_N]
        check(not too_big, "runner.path", str(runner.path),
              f"N <= {PER_SAMPLE_MAX_N:,} for per-sample trials (grid has N = {max(too_big or [0]):,})")

    return Experiment(
        name=str(name), cell=cell, distributions=distributions, mechanisms=mechanisms,
        estimator=estimator, points=points, reps=int(grid.reps),
        reps_per_d={int(k): int(v) for k, v in (grid.get("reps_per_d") or {}).items()},
        seed=int(cfg.seed),
        path=str(runner.path), n_jobs=int(runner.n_jobs), backend=str(runner.backend),
        chunk=int(runner.chunk), progress=bool(runner.progress), config_key=_config_key(cfg),
        labels={g: str(cfg[g].get("name", g)) for g in ("distribution", "mechanism", "estimator")},
        tol=float(cfg.fit.tol), min_points=int(cfg.fit.min_points),
    )
