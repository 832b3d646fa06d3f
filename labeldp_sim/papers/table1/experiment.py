"""Table I experiments (papers/000): from a composed config to a validated :class:`Experiment`.

Validates the grid, builds the distribution, mechanism and estimator of a rate
cell from their config groups (:mod:`.groups`), snaps the grid to the cell's law
(:mod:`.points`), tunes every point and checks that the three fit the cell and
each other and that a trial fits in memory — all before any trial is computed.
The checks every kind shares are in :mod:`labeldp_sim.harness.config`.

The build is three steps the law-free search (:mod:`.law_free.search`) runs too,
with its own arguments instead of a rewritten config: :func:`read_cell` (the
nodes, a searched family's parameter overrides applied), :func:`build_components`
(at a list of dimensions) and :func:`plan_points` (from a sweeps mapping, its
errors naming the key the user typed it under).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from omegaconf import DictConfig

from labeldp_sim.harness.config import (EPS_MAX, EPS_MIN, MAX_N, MAX_N_LAW, PER_SAMPLE_MAX_N, JobBasics, Need,
                                         check_memory, check_plan_size, config_node, eps_allowed, group_options,
                                         plain, root_value, validate_common)
from labeldp_sim.harness.components import ADDRESS
from labeldp_sim.harness.errors import ConfigError, check, first_line, is_int, is_number
from labeldp_sim.harness.kinds import JobSpec, code_packages
from labeldp_sim.harness.memory import TrialSize
from labeldp_sim.harness.sweeps import Rule, sweep_mapping, sweep_values
from labeldp_sim.papers.table1.groups import (OBJECT_GROUPS, build_object, check_accepts, check_mechanism_fits,
                                              check_node, clip_level, group_class, mismatch, probe_mechanism)
from labeldp_sim.papers.table1.paths import DataPath
from labeldp_sim.papers.table1.points import FLOAT_ERRORS, MAX_CUBES, Point, make_points
from labeldp_sim.papers.table1.theory import CELLS, Cell

__all__ = ["Experiment", "CellNodes", "Components", "build_experiment", "read_cell", "build_components",
           "plan_points", "build_mechanism", "mechanism_key", "trial_needs", "point_needs", "validate_sweeps",
           "d_mapping", "GRID_KEYS", "AXES", "DIMENSIONS"]

GRID_KEYS = ("d", "reps", "reps_per_d", "sweeps")
# the cube geometry indexes the G^d cubes through d-axis arrays: numpy's index functions take
# at most 32 axes
MAX_D = 32
# a Laplace noise scale past this makes the squared estimates of the exact risk overflow float64
MAX_NOISE_SCALE = 1e100
AXES = ("N", "eps")
# what one d of grid.d (and law_free.d) may be
DIMENSIONS = Rule(lambda v: is_int(v) and 1 <= v <= MAX_D, f"integers in [1, {MAX_D}] (numpy indexes at most 32 axes)",
                  int)


@dataclass(kw_only=True)
class Experiment(JobSpec):
    """Everything a law-tied Table I sweep needs, validated (the job's basics: :class:`JobSpec`).

    Attributes
    ----------
    cell : the experiment's Table I cell
    distributions : dict d -> distribution object
    mechanisms : dict point id -> mechanism object (ε and clipping level T per point)
    estimator : the estimator
    points : list of :class:`~labeldp_sim.grid.Point`
    reps, reps_per_d : replicates per point (``reps_per_d[d]`` overrides ``reps``)
    path : ``runner.path`` as a :class:`~.paths.DataPath` (auto, per_sample, sufficient or exact)
    labels : names of the chosen distribution, mechanism and estimator

    ``config_key`` (:class:`JobSpec`) hashes everything that determines a trial's
    numbers except its grid point (and the code of ``packages``: table1, and any
    package a component's class comes from).
    """

    cell: Cell
    distributions: dict
    mechanisms: dict
    estimator: object
    points: list
    reps: int
    reps_per_d: dict
    path: DataPath
    labels: dict

    def replicates(self, point: Point) -> int:
        """Replicates at a point: ``grid.reps_per_d[d]`` if given, else ``grid.reps``; one exact entry
        on the exact path."""
        if self.trial_path(point) is DataPath.EXACT:
            return 1
        return self.reps_per_d.get(point.d, self.reps)

    def exact_everywhere(self) -> bool:
        """Whether the estimator states the exact expected risk at every point."""
        return all(self.exact_at(pt) for pt in self.points)

    def exact_possible(self) -> bool:
        """Whether ``runner.path`` (exact or auto) takes exact expected risks at every point."""
        return self.path in (DataPath.EXACT, DataPath.AUTO) and self.exact_everywhere()

    def exact_at(self, point: Point) -> bool:
        """Whether the estimator states the exact expected risk at ``point`` (its family and mechanism)."""
        return bool(self.estimator.exact_for(self.distributions[point.d], self.mechanisms[point.id]))

    def trial_path(self, point: Point) -> DataPath:
        """The path a point's trials use: ``auto`` takes the exact expected risk where the estimator
        states one, else sufficient statistics when both the distribution and the estimator have them."""
        if self.path is not DataPath.AUTO:
            return self.path
        if self.exact_at(point):
            return DataPath.EXACT
        if _sufficient_possible(self.distributions[point.d], self.estimator):
            return DataPath.SUFFICIENT
        return DataPath.PER_SAMPLE


def _sufficient_possible(distribution, estimator) -> bool:
    return bool(distribution.supports_sufficient and estimator.supports_sufficient)


# past 2**53 only an exact law in N is exact (harness.config.MAX_N_LAW)
_DEEPER = "; N up to 10**18 in mode=law_free with exact cube_argmax classification entries"

# what a swept or fixed value of each axis may be
AXIS_RULES = {
    "N": Rule(lambda v: is_number(v) and float(v).is_integer() and 1 <= v <= MAX_N_LAW,
              "integers 1 <= N <= 2**53 (float64 counts are exact up to 2**53), or up to 10**18 in "
              "law-free runs whose entries are exact laws in N (cube_argmax classification)"),
    "eps": Rule(lambda v: is_number(v) and EPS_MIN <= v <= EPS_MAX, eps_allowed()),
}


def d_mapping(mapping, key: str, ok, allowed: str, null_means: str | None = None) -> dict:
    """A mapping d -> value (``grid.reps_per_d``, ``law_free.G_max``) as {int d: value}.

    A key may come as a digit string: Hydra's dotted form ``+grid.reps_per_d.3=1000``
    writes the key '3' beside the file's integer 3.  The string's value wins (only
    the command line writes string keys).  With ``null_means``, a null value
    drops its d (it means ``null_means``); else null is refused like any bad value.
    """
    out, from_text = {}, set()
    for raw, value in mapping.items():
        text = raw.strip() if isinstance(raw, str) else None
        d = int(text) if text is not None and text.isdigit() else raw
        check(is_int(d) and d >= 1, f"{key}.{raw}", raw, f"integer keys d >= 1 (e.g. {key}={{3: ...}})")
        if value is None and null_means is not None:
            continue
        check(ok(value), f"{key}.{raw}", value, allowed + (f" (or null: {null_means})" if null_means else ""))
        if text is not None or int(d) not in from_text:
            out[int(d)] = value
        if text is not None:
            from_text.add(int(d))
    return out


def _reps_per_d(per_d, key: str = "grid.reps_per_d") -> dict:
    """``grid.reps_per_d`` as {d: reps}: integer keys d >= 1, integer values >= 1, null values dropped
    (null: grid.reps).  The grid files list every d, null where grid.reps applies, so that
    ``grid.reps_per_d={1: 300}`` can be merged into them (Hydra merges a mapping key by key and
    refuses a key the file lacks)."""
    check(per_d is None or isinstance(per_d, dict), key, per_d,
          "null or a mapping d -> integer >= 1 (e.g. {3: 500}; add a d with +grid.reps_per_d.4=500)")
    return {d: int(v) for d, v in d_mapping(per_d or {}, key, lambda v: is_int(v) and v >= 1, "integer >= 1",
                                              "grid.reps").items()}


def validate_sweeps(cfg, prefix: str = "grid.sweeps") -> dict:
    """Check the sweeps at ``prefix`` (``grid.sweeps``, or ``law_free.sweeps``) and return them."""
    return sweep_mapping(prefix, config_node(cfg, prefix, AXES), AXIS_RULES, AXES,
                         {axis: f"{prefix}.{axis}.values={example}"
                          for axis, example in (("N", "[1000,10000]"), ("eps", "[0.1,1.0]"))},
                         repeated="distinct values (a repeated value is the same grid point)")


def _validate_grid(cfg) -> dict:
    """Check ``cfg.grid`` and return it as a plain dict (``reps_per_d`` as {d: reps})."""
    grid = config_node(cfg, "grid", GRID_KEYS, required=("d", "reps", "sweeps"))
    sweep_values("grid.d", grid["d"], DIMENSIONS, "grid.d=[1,2]")
    check(is_int(grid["reps"]) and grid["reps"] >= 1, "grid.reps", grid["reps"], "integer >= 1")
    # null clears the grid file's mapping; {} cannot (OmegaConf merges mappings key by key)
    grid["reps_per_d"] = _reps_per_d(grid.get("reps_per_d"))
    validate_sweeps(cfg)
    return grid


def _point_key(pt: Point, sweeps: str = "grid.sweeps") -> tuple[str, float]:
    """The swept key of a point under the sweeps at ``sweeps`` and the value requested there (for errors)."""
    if pt.axis == "N":
        return f"{sweeps}.N.values", int(pt.N_requested)  # integral: checked by AXIS_RULES
    return f"{sweeps}.eps.values", pt.eps_requested


def _count(n) -> str:
    """An integer for a message: with thousands separators, or in e-notation past 10^15."""
    return f"{n:,}" if abs(n) < 10 ** 15 else f"{float(n):.3g}"


def _check_noise_scale(mech, pt: Point, mech_node: dict, sweeps: str) -> None:
    """A central full-DP cube mean's noise scale 6T/(n_0 ε), n_0 = n0_fraction · N h^d, must be > 0
    and at most :data:`MAX_NOISE_SCALE` at every point: the exact risk squares the released
    estimates, which overflow to inf (NaN risks, found only after the trials ran) beyond it."""
    try:
        with np.errstate(all="raise"):
            scale = mech.fixed_noise_scale(pt.N, 1.0 / pt.G_est, pt.d)
        if scale is None:
            return  # the noise follows each cube's count: nothing fixed to bound here
        ok = bool(0 < scale <= MAX_NOISE_SCALE)  # the risk squares the estimates: they must stay finite
    except (ConfigError, *FLOAT_ERRORS):
        ok = False
    if not ok:
        key, got = ("mechanism.n0_fraction", mech_node.get("n0_fraction"))
        if got is None:
            key, got = _point_key(pt, sweeps)
        raise ConfigError(key, got, f"values keeping the noise scale 6T/(n_0 eps) in (0, {MAX_NOISE_SCALE:g}] "
                                    f"(n_0 = n0_fraction·N·h^d at N = {pt.N:,}, d = {pt.d}, eps = {pt.eps:g})")


def _smallest_N(estimator, cell: Cell, eps: float, beta: float, d: int, p: float) -> int | None:
    """The smallest N at which the estimator's law gives k <= N (None if none up to 2**53)."""
    def fits(N):
        try:
            with np.errstate(all="ignore"):
                return 1 <= estimator.neighbours(cell, N, eps, beta, d, p) <= N
        except FLOAT_ERRORS:
            return False

    if not fits(MAX_N):
        return None
    lo, hi = 0, MAX_N  # fits(hi); k/N falls as N grows (h shrinks), so the first fit is found by bisection
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def _too_few_samples(estimator, cell: Cell, pt: Point, k, beta: float, p: float, sweeps: str) -> ConfigError:
    """k > N at a grid point: a fixed ``estimator.k`` is to blame, else the point's N (or ε)."""
    if estimator.k is not None:  # only kNN estimators reach here (tuning k)
        return ConfigError("estimator.k", k, f"1 <= k <= N (N = {pt.N:,} at d = {pt.d}, eps = {pt.eps:g})")
    smallest = _smallest_N(estimator, cell, pt.eps, beta, pt.d, p)
    if smallest is None:
        return ConfigError("estimator.k_scale", estimator.k_scale,
                           f"values giving k <= N at some N <= 2**53 (k = k_scale·N·h^d; k = {k:,} neighbours "
                           f"at N = {pt.N:,}, d = {pt.d}, eps = {pt.eps:g})")
    at_least = f"N >= {smallest:,} at d = {pt.d}, eps = {pt.eps:g}"
    key, got = _point_key(pt, sweeps) if pt.axis == "N" else (f"{sweeps}.eps.N", pt.N)
    return ConfigError(key, got, f"{at_least} (the kNN law gives k = {k:,} neighbours at N = {pt.N:,}; "
                                 "k must be <= N; or lower estimator.k_scale)")


@dataclass(frozen=True)
class CellNodes:
    """A cell's validated config nodes, before anything is built from them.

    Attributes
    ----------
    basics : the job's :class:`~labeldp_sim.harness.config.JobBasics`
    name, cell : the experiment name and its Table I cell
    nodes : dict group -> plain node (the distribution's with the caller's parameter overrides)
    classes : dict group -> the class its ``name`` resolves to
    path : ``runner.path`` as a :class:`~.paths.DataPath`
    """

    basics: JobBasics
    name: str
    cell: Cell
    nodes: dict
    classes: dict
    path: DataPath


@dataclass(frozen=True)
class Components:
    """The objects one cell runs, built once from its :class:`CellNodes` for a list of dimensions.

    Attributes
    ----------
    distributions : dict d -> distribution object
    estimator : the estimator
    labels : names of the chosen distribution, mechanism and estimator
    packages : the paper packages whose code the trials run (table1, and any a class comes from)
    """

    distributions: dict
    estimator: object
    labels: dict
    packages: tuple


def read_cell(cfg: DictConfig, distribution: dict | None = None) -> CellNodes:
    """Validate the job's basics, its cell and the nodes of its component groups.

    ``distribution`` overrides parameters of the distribution node (the law-free
    search's linear-edge family: ``{"shape": "linear_edge", "C_M": 8.0}``) before
    the node is checked, so a searched family is validated as if the user had
    typed it, while the composed ``cfg`` (whose key names the job) stays as typed.
    """
    kind = root_value(cfg, "kind", "rates")
    basics = validate_common(cfg, kind)
    check(kind == "rates", "kind", kind, "rates (labeldp_sim.cli.validate_job dispatches kclass and digits)")
    name = basics.name
    cell_name = root_value(cfg, "cell", name)
    check(isinstance(cell_name, str) and cell_name in CELLS, "cell", cell_name, sorted(CELLS))
    # keys and values of every group before anything is built; the distribution first:
    # estimator.h_scale interpolates ${distribution.h_scale}, and a bad value there is the distribution's
    nodes, classes = {}, {}
    for group in OBJECT_GROUPS:
        check(group in cfg and isinstance(cfg[group], DictConfig) and ADDRESS in cfg[group],
              group, plain(cfg.get(group)), group_options(group))
        nodes[group] = config_node(cfg, group)
        if group == "distribution":
            nodes[group].update(distribution or {})
        classes[group] = group_class(group, nodes[group])
        check_node(group, nodes[group], classes[group])
    path = DataPath(str(cfg.runner.path))  # checked against PATHS by validate_runner
    return CellNodes(basics=basics, name=name, cell=CELLS[cell_name], nodes=nodes, classes=classes, path=path)


def build_components(parts: CellNodes, dims: list) -> Components:
    """The distribution at each d of ``dims``, the estimator, and their fit to the cell and the mechanism.

    The mechanism is probed here (built at a valid ε) but built per point by
    :func:`plan_points`: its ε and clip level are the point's.
    """
    nodes, cell, name = parts.nodes, parts.cell, parts.name
    distributions = {int(d): build_object("distribution", nodes["distribution"], d=int(d)) for d in dims}
    first = next(iter(distributions.values()))
    if first.task != cell.task:
        raise mismatch("distribution", nodes["distribution"].get("name"),
                       f"a {cell.task} distribution for cell {cell.name}", cell, name, lambda c: c.task == first.task)

    estimator = build_object("estimator", nodes["estimator"])
    est_tasks = estimator.tasks
    if cell.task not in est_tasks:
        raise mismatch("estimator", nodes["estimator"].get("name"), f"an estimator for {cell.task}",
                       cell, name, lambda c: c.task in est_tasks)

    # the mechanism against the cell before the estimator against the mechanism, and both before
    # any tuning: a regression mechanism on a classification cell would otherwise reach its clip
    # level, which classification laws do not have
    probe = probe_mechanism(nodes["mechanism"])
    check_mechanism_fits(probe, nodes["mechanism"].get("name"), cell, name)
    check_accepts(estimator, nodes["estimator"].get("name"), nodes["mechanism"], cell)
    return Components(distributions=distributions, estimator=estimator,
                      labels={g: str(nodes[g].get("name", g)) for g in OBJECT_GROUPS},
                      packages=code_packages("table1", parts.classes.values()))


def mechanism_key(eps: float, T) -> tuple:
    """The key of the mechanism at ε with clip level ``T`` (None or NaN: it does not clip) in a
    cache of built mechanisms: a mechanism is a function of (ε, T) alone."""
    return float(eps), None if T is None or np.isnan(T) else float(T)


def build_mechanism(node: dict, built: dict, eps: float, T=None):
    """The mechanism of ``node`` at ε and clip level ``T``, built once per (ε, T) into ``built``
    (an N sweep's points share their ε, and the law-free oracle clip levels reuse the law's)."""
    key = mechanism_key(eps, T)
    if key not in built:
        extra = {} if key[1] is None else {"T": key[1]}
        built[key] = build_object("mechanism", node, epsilon=key[0], **extra)
    return built[key]


def plan_points(parts: CellNodes, comps: Components, sweeps: dict, dims: list, sweeps_key: str = "grid.sweeps",
                snapped: bool = True, built: dict | None = None, max_N: int = MAX_N) -> tuple[list, dict]:
    """The cell's points of ``sweeps`` at each d of ``dims``, tuned, and the mechanism of each.

    Parameters
    ----------
    parts, comps : the cell (:func:`read_cell`) and its components (:func:`build_components` at ``dims``)
    sweeps : the plain sweeps mapping (validated by :func:`validate_sweeps` at ``sweeps_key``)
    dims : the dimensions
    sweeps_key : where the user typed ``sweeps`` (``grid.sweeps`` or ``law_free.sweeps``): every
        error about a point names a key under it
    snapped : False (law-free runs) keeps every point at its requested N and ε
        (:func:`~.points.make_points`); the point's tuning, clip level and mechanism follow
        the law there, validated as law-tied ones
    built : cache (ε, T) -> mechanism (:func:`build_mechanism`), filled here
    max_N : the largest N: :data:`~labeldp_sim.harness.config.MAX_N` (float64 counts), or
        ``MAX_N_LAW`` where the caller checks that the entries are exact laws in N

    Returns
    -------
    points : list of tuned :class:`~.points.Point`
    mechanisms : dict point id -> the mechanism at the point's ε and clip level
    """
    nodes, cell, name, path = parts.nodes, parts.cell, parts.name, parts.path
    first, estimator = next(iter(comps.distributions.values())), comps.estimator
    built = {} if built is None else built
    beta, p_moment = first.beta, first.p
    points = make_points(name, cell, {"d": dims, "sweeps": sweeps}, beta, first.h_scale, p_moment, snapped,
                         sweeps_key)
    bound, deeper = ("10**18", "") if max_N == MAX_N_LAW else ("2**53", _DEEPER)
    tuned = []
    for pt in points:
        key, requested = _point_key(pt, sweeps_key)
        check(1 <= pt.N <= max_N, key, requested,
              f"values whose snapped N stays <= {bound} (it snaps to {pt.N:.6g}){deeper}")
        check(EPS_MIN <= pt.eps <= EPS_MAX, key, requested,
              f"values whose snapped eps stays in {eps_allowed()} (it snaps to {pt.eps:.6g})")
        dist = comps.distributions[pt.d]
        try:
            with np.errstate(all="raise"):
                law = estimator.tune(pt, cell, dist)  # the estimator's own law: G_est, and k for a kNN
                G_est, k = law.G_est, law.k
                if estimator.tuning == "k" and not 1 <= k <= pt.N:
                    raise _too_few_samples(estimator, cell, pt, k, beta, p_moment, sweeps_key)
                T = clip_level(nodes["mechanism"], dist, pt.h)
                valid = dist.construction_valid(pt.G)
        except FLOAT_ERRORS as err:
            raise ConfigError(key, requested, f"values whose tuning stays within float64 at d = {pt.d} "
                              f"({first_line(err)})") from None
        # cube indices are int64 and cube counts float64: both need G^d <= 2**53
        check(max(pt.G, G_est) ** pt.d <= MAX_CUBES, key, requested,
              f"values whose cube count stays <= 2**53 (G = {_count(max(pt.G, G_est))} per axis at d = {pt.d}; "
              "see distribution.h_scale and estimator.h_scale)")
        tuned.append(replace(pt, G_est=G_est, k=k, T=float("nan") if T is None else T,
                             in_regime=pt.in_regime and valid))
    points = tuned

    mechanisms = {}
    for pt in points:
        try:
            with np.errstate(all="raise"):
                mechanisms[pt.id] = build_mechanism(nodes["mechanism"], built, pt.eps, pt.T)
        except FLOAT_ERRORS as err:
            key, requested = _point_key(pt, sweeps_key)
            raise ConfigError(key, requested, f"values the mechanism can use in float64 "
                              f"({first_line(err)})") from None
        except ConfigError as err:
            if err.key != "mechanism.epsilon":
                raise
            # ε comes from the sweeps, so their key is the one the user typed
            key, requested = _point_key(pt, sweeps_key) if pt.axis == "eps" else (f"{sweeps_key}.N.eps", pt.eps)
            raise ConfigError(key, requested, f"eps values this mechanism takes: {err.allowed}") from None
    check_mechanism_fits(next(iter(mechanisms.values())), nodes["mechanism"].get("name"), cell, name)
    for pt in points:
        _check_noise_scale(mechanisms[pt.id], pt, nodes["mechanism"], sweeps_key)
    if not _sufficient_possible(first, estimator) and path is DataPath.SUFFICIENT:
        raise ConfigError("runner.path", "sufficient",
                          "auto or per_sample (this distribution/estimator has no sufficient statistics)")
    if path is DataPath.PER_SAMPLE or (path is not DataPath.EXACT and not _sufficient_possible(first, estimator)):
        too_big = [pt.N for pt in points if pt.N > PER_SAMPLE_MAX_N]
        check(not too_big, "runner.path", str(path),
              f"N <= {PER_SAMPLE_MAX_N:,} for per-sample trials (grid has N = {max(too_big or [0]):,})")
    labels = comps.labels
    exact = all(estimator.exact_for(comps.distributions[pt.d], mechanisms[pt.id]) for pt in points)
    check(path is not DataPath.EXACT or exact, "runner.path", str(path),
          f"auto, per_sample or sufficient ({labels['estimator']} states no exact expected risk "
          f"under {labels['mechanism']} on {labels['distribution']}: Monte Carlo)")
    return points, mechanisms


def build_experiment(cfg: DictConfig) -> Experiment:
    """Validate a ``kind: rates`` configuration and build its law-tied :class:`Experiment`.

    Raises ConfigError on the first bad key or value, before any computation;
    creates nothing.  The steps (:func:`read_cell`, :func:`build_components`,
    :func:`plan_points`) are the law-free search's too, which passes its own
    dimensions, sweeps and family.
    """
    parts = read_cell(cfg)
    grid = _validate_grid(cfg)
    comps = build_components(parts, grid["d"])
    points, mechanisms = plan_points(parts, comps, grid["sweeps"], grid["d"])
    exp = Experiment.of(parts.basics, cfg, comps.packages,
                        cell=parts.cell, distributions=comps.distributions, mechanisms=mechanisms,
                        estimator=comps.estimator, points=points, reps=int(grid["reps"]),
                        reps_per_d=dict(grid["reps_per_d"]), path=parts.path, labels=comps.labels)
    needs = {pt.id: trial_needs(exp, pt) for pt in points}
    worst = max(points, key=lambda pt: sum(n.bytes for n in needs[pt.id]))
    check_memory(needs[worst.id], exp.runner, f"at N = {worst.N:,}, eps = {worst.eps:g}, d = {worst.d}")
    per_d = {d: reps for d, reps in exp.reps_per_d.items() if d in exp.distributions}
    check_plan_size(sum(exp.replicates(pt) for pt in points), next(
        (f"grid.reps_per_d.{d}" for d, reps in per_d.items() if reps > exp.reps), "grid.reps"),
        max([exp.reps, *per_d.values()]), exp.runner)
    return exp


def trial_needs(exp: Experiment, pt: Point, path: DataPath | None = None, G_inst: int | None = None) -> list:
    """The arrays one trial of ``exp`` at ``pt`` holds (:func:`point_needs` on ``exp``'s path there)."""
    return point_needs(exp.distributions[pt.d], exp.mechanisms[pt.id], exp.estimator, pt,
                       DataPath(path or exp.trial_path(pt)), G_inst)


def point_needs(dist, mech, est, pt: Point, path: DataPath, G_inst: int | None = None,
                sweeps_key: str = "grid.sweeps") -> list:
    """The arrays one trial at ``pt`` holds, as lower bounds (:class:`~labeldp_sim.harness.config.Need`).

    The N samples on the per-sample path (N × (d + 1) float64: features and cube
    index), then what the estimator and the mechanism each declare for the
    trial's :class:`~labeldp_sim.harness.memory.TrialSize` (their ``trial_needs``:
    kNN test points and query chunks, per-cube counts or the cell model, report
    bits or one-hots, the randomized-response matrix...).  ``G_inst`` is the
    instance's cube count (default: the point's G).  The needs name the point's
    key under ``sweeps_key``, where the user typed its sweeps.
    """
    path = DataPath(path)
    if path is DataPath.EXACT:
        return []  # an expected risk in closed form holds a few numbers per cube count
    key, got = _point_key(pt, sweeps_key)
    if pt.axis == "eps":  # the size comes from the sweep's fixed N
        key, got = f"{sweeps_key}.eps.N", pt.N
    size = TrialSize(N=pt.N, d=pt.d, K=float(dist.K or 0), cubes=float(pt.G_est) ** pt.d, key=key, got=got,
                     per_sample=path is DataPath.PER_SAMPLE, sufficient=path is DataPath.SUFFICIENT)
    needs = []
    if size.per_sample:
        N = float(pt.N)
        needs.append(Need(8.0 * N * (pt.d + 1), f"N = {pt.N:,} samples × (d + 1) float64", {key: (got, N)}))
    return needs + est.trial_needs(size, pt, dist, G_inst or pt.G) + mech.trial_needs(size)
