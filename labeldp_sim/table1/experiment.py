"""Table I experiments (papers/000): from a composed config to a validated :class:`Experiment`.

Builds the distribution, mechanism and estimator of a rate cell from their
config groups, snaps the grid to the cell's law and checks that the estimator
accepts the mechanism's protocol — all before any trial is computed.  The
checks every kind shares are in :mod:`labeldp_sim.core.config`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, OmegaConf

from ..core.config import (CONF_DIR, EPS_MAX, EPS_MIN, MAX_N, OBJECT_GROUPS, PER_SAMPLE_MAX_N, RunnerSettings,
                           _build, _check_group_keys, _parameters, _plain, _root_value, _target_class, check_list,
                           config_node, eps_allowed, group_options, validate_common)
from ..core.errors import ConfigError, check, first_line, is_int, is_number
from ..core.points import FLOAT_ERRORS, MAX_CUBES, Point, make_points
from ..core.provenance import config_key
from .theory import CELLS, Cell

__all__ = ["Experiment", "build_experiment", "GRID_KEYS", "AXES"]

GRID_KEYS = ("d", "reps", "reps_per_d", "sweeps")
AXES = ("N", "eps")


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
    packages : the paper packages whose code the trials run (table1, and any a ``_target_`` names)
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
    packages: tuple

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


def _code_packages(nodes: dict) -> tuple:
    """The paper packages whose code a trial runs: table1, plus any other package a
    ``_target_`` names (Table I cells may use K-class mechanisms such as RR)."""
    packages = {"table1"}
    for group in OBJECT_GROUPS:
        parts = str(nodes[group].get("_target_", "")).split(".")
        if len(parts) > 2 and parts[0] == "labeldp_sim":
            packages.add(parts[1])
    return tuple(sorted(packages))


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
    packages = _code_packages(nodes)
    return Experiment(
        name=name, cell=cell, distributions=distributions, mechanisms=mechanisms,
        estimator=estimator, points=points, reps=int(grid["reps"]),
        reps_per_d={int(k): int(v) for k, v in grid["reps_per_d"].items()},
        seed=basics.seed, path=path, runner=basics.runner, results_dir=basics.results_dir,
        config_key=config_key(parts, packages), packages=packages,
        labels={g: str(nodes[g].get("name", g)) for g in OBJECT_GROUPS},
        tol=basics.tol, min_points=basics.min_points,
    )
