r"""Law-free empirical minimax (SPEC §5a): risk matrices whose optima the data decide.

The law-tied sweep ties the hard instance's scale and the estimator's tuning
to the cell's bandwidth law h(N, ε), so its slope can only confirm that law.
Here, at every grid point (N or ε, and d), replicate r fills a matrix

    R[G_inst, tuning] = exact excess risk of the estimator tuned by ``tuning``
                        on the hard instance of cube count G_inst,

with G_inst on a fixed geometric grid from 1 to a cap set by the data
(G^d ≤ N: at least one expected sample per cube) and by computation
(``law_free.G_max[d]``), and tunings on grids the estimator states
(:meth:`~.estimators.Estimator.tuning_grid`: G_est for cube estimators, k for
kNN), times the clip level T for heavy-tailed labels.  The tuning is an
**oracle** (the best on the grid for the worst instance); no exponent of the
theory enters either grid.  One more column holds the law's tuning (for S, the
theorem-tuned worst case) and one more entry the law's own instance at the
law's tuning (the law-tied value).  :mod:`.plan` computes the entries,
:mod:`.fit` turns the matrices into M = min max R, S, fits and verdicts.

Every instance searched lies in the class the theorem is about, with fixed
constants: regression bumps are L-Hölder at every scale and the heavy-tailed
law (171) has E|Y|^p = M_p; classification uses linear-edge bumps
(:class:`~labeldp_sim.papers.table1.families.HolderBump` with ``shape="linear_edge"``)
whose margin ratio is checked in closed form against the declared C_γ, and
each instance's admission is recorded.

Random streams (:mod:`.tuning`): the instance of (point, r, G_inst) is shared
by every tuning (common random numbers); the data of each G_est (or, for kNN,
of the instance) and the mechanism noise of each clip level have their own
keys.  Clip levels of one G_est share that G_est's data draw.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
from omegaconf import DictConfig, OmegaConf

from labeldp_sim.harness.config import MAX_N, MAX_N_LAW, PER_SAMPLE_MAX_N, config_node, top_config
from labeldp_sim.harness.errors import ConfigError, check, is_int, is_number
from labeldp_sim.harness.memory import Need, check_memory, check_plan_size
from labeldp_sim.harness.kinds import JobSpec
from labeldp_sim.harness.sweeps import sweep_values
from labeldp_sim.papers.table1.estimators import CubeArgmax, Estimator
from labeldp_sim.papers.table1.experiment import (DIMENSIONS, build_components, build_mechanism, d_mapping,
                                                  plan_points, point_needs, read_cell, validate_sweeps)
from labeldp_sim.papers.table1.families import HeavyTailBump, HolderBump
from labeldp_sim.papers.table1.groups import group_class
from labeldp_sim.papers.table1.law_free.plan import MINIMAX_TRIALS, LawFreePlan
from labeldp_sim.papers.table1.paths import DataPath
from labeldp_sim.papers.table1.theory import Cell
from labeldp_sim.papers.table1.tuning import LAW_SLOT, Column, geometric_grid

__all__ = ["LawFreeSpec", "LawFreePlan", "MINIMAX_TRIALS", "build_law_free", "validate_mode", "MODES",
           "LAW_FREE_KEYS"]

MODES = ("law_tied", "law_free")
LAW_FREE_KEYS = ("d", "reps", "per_octave", "refine", "G_max", "T_range", "n_test", "sweeps", "sweeps_per_d",
                 "C_M", "window_decades", "window_points", "tol", "shifts")


@dataclass(kw_only=True)
class LawFreeSpec(JobSpec):
    """A validated law-free run of one Table I cell (the job's basics: :class:`JobSpec`).

    Attributes
    ----------
    cell : the experiment's Table I cell
    points : the cell's points at ``law_free.d`` and their requested N and ε, with the law's
        instance and tunings there (:func:`~labeldp_sim.papers.table1.experiment.plan_points`)
    distributions : dict d -> the searched family (classification: linear-edge bumps)
    estimator : the cell's estimator
    labels : names of the chosen distribution, mechanism and estimator
    sweeps_key : where the points' sweeps were typed (``law_free.sweeps``, or ``grid.sweeps`` when
        that is null): the key errors and memory needs about a point name
    inst_grids : dict point id -> G_inst values (before admission)
    admitted : dict (d, G_inst) -> bool, the margin check (the construction's validity for regression)
    est_grids : dict point id -> the estimator's oracle tunings (G_est or k)
    T_grid : oracle clip levels, or (None,) where the mechanism's T is not searched
    mechanisms : dict (point id, T) -> mechanism of the oracle clip level T (None: the law's)
    fine_grids : dict point id -> the oracle tunings of the grid ``refine`` times denser (exact path:
        the refined columns are taken from it around the coarse optimum, :mod:`.plan`)
    reps, per_octave, n_test : ``law_free.*`` (``settings["refine"]``: d -> refinement factor)
    """

    cell: Cell
    points: list
    distributions: dict
    estimator: Estimator
    labels: dict
    sweeps_key: str
    inst_grids: dict
    admitted: dict
    est_grids: dict
    T_grid: tuple
    mechanisms: dict
    reps: int
    per_octave: int
    n_test: int
    G_max: dict
    margin_constant: dict
    settings: dict
    exact: bool = False
    mechanism_node: dict | None = None
    fine_grids: dict | None = None
    estimators: dict | None = None  # d -> the estimator at d (law_free.shifts); None: ``estimator`` everywhere
    # (ε, T) -> the mechanism built there (:func:`~labeldp_sim.papers.table1.experiment.build_mechanism`):
    # an N sweep's points share their ε, and a mechanism is a function of (ε, T) alone, so each is
    # built once: the law's, the oracle clip levels' and the exact path's refined ones
    built: dict = field(default_factory=dict, repr=False)

    def estimator_at(self, d: int) -> Estimator:
        """The estimator the search runs at ``d``: ``estimator`` with ``law_free.shifts[d]`` where set."""
        return self.estimator if self.estimators is None else self.estimators[d]

    def refine_for(self, d: int) -> int:
        """How many times denser the refined oracle grid is at ``d`` (1: no refinement; exact entries only)."""
        return int(self.settings["refine"][d]) if self.exact else 1

    @property
    def window_decades(self) -> float:
        """The span of one local-slope window (``law_free.window_decades``)."""
        return float(self.settings["window_decades"])

    @property
    def window_points(self) -> int:
        """The fewest points of one local-slope window (``law_free.window_points``)."""
        return int(self.settings["window_points"])

    def mechanism_at(self, point, T):
        """The cell's mechanism at ``point``'s ε with clip level ``T`` (None or NaN: it does not clip),
        built once per (ε, T)."""
        return build_mechanism(self.mechanism_node, self.built, point.eps, T)

    @property
    def searches_T(self) -> bool:
        """Whether the clip level is an oracle tuning of its own (heavy-tailed labels)."""
        return self.T_grid != (None,)

    @property
    def memoizes(self) -> bool:
        """Whether its tasks keep intermediates in ``memo.sqlite``: the exact classification entries'
        tilt measures (:mod:`~labeldp_sim.papers.table1.families.classification`), which depend on
        neither N nor ε."""
        return self.exact and any(isinstance(dist, HolderBump) for dist in self.distributions.values())

    @property
    def replicates(self) -> int:
        """Replicates of each entry: one where entries are exact expectations, else ``law_free.reps``."""
        return 1 if self.exact else self.reps

    def oracle_columns(self, point) -> list:
        """The oracle grid's columns at ``point``: every tuning × every clip level (data draw 0)."""
        return [Column(int(t), self.mechanisms[(point.id, T)], slot, 0, T)
                for t in self.est_grids[point.id] for slot, T in enumerate(self.T_grid)]

    def law_column(self, point) -> Column:
        """The law's tuning under the point's own mechanism (its own data and noise streams)."""
        mech = self.mechanism_at(point, point.T)
        T = mech.T
        return Column(int(self.estimator.tuning_at(point)), mech, LAW_SLOT, LAW_SLOT,
                      None if T is None else float(T))


PER_OCTAVE_MAX = 24


@lru_cache(maxsize=1)
def _packaged_law_free() -> dict:
    """The d keys of law_free.G_max and law_free.refine in Table I's keys (``/table1``, the config every
    Table I experiment includes first: conf/table1/table1.yaml; None: a number, which covers every d)."""
    node = OmegaConf.load(top_config("table1")).law_free
    return {name: {int(k) for k in node[name]} if isinstance(node[name], DictConfig) else None
            for name in ("G_max", "refine")}


def _law_free_settings(cfg) -> dict:
    node = config_node(cfg, "law_free", LAW_FREE_KEYS, required=LAW_FREE_KEYS)
    d = sweep_values("law_free.d", node["d"], DIMENSIONS, "law_free.d=[1,2]")
    check(is_int(node["reps"]) and node["reps"] >= 4 and node["reps"] % 2 == 0, "law_free.reps",
          node["reps"], "an even integer >= 4 (even and odd replicates cross-fit the selection)")
    # each matrix is (instances × tunings), both grids per_octave points per factor 2: the work grows
    # as per_octave², and 24 (8× the default) already resolves an optimum to 3 % of its scale
    check(is_int(node["per_octave"]) and 2 <= node["per_octave"] <= PER_OCTAVE_MAX, "law_free.per_octave",
          node["per_octave"], f"an integer in [2, {PER_OCTAVE_MAX}] (grid points per factor 2; the maximum must "
          "be located, and the matrices grow as its square)")
    refine_ok, refine_allowed = (lambda v: is_int(v) and 1 <= v <= 64), \
        "an integer in [1, 64] (the refined oracle grid is that many times denser; 1: no refinement)"
    refine = node["refine"]
    if isinstance(refine, dict):
        refine = d_mapping(refine, "law_free.refine", refine_ok, refine_allowed)
    else:
        check(refine_ok(refine), "law_free.refine", refine, refine_allowed + ", or a mapping d -> such an integer")
        refine = {dim: refine for dim in d}
    G_max = node["G_max"]
    check(isinstance(G_max, dict), "law_free.G_max", G_max, "a mapping d -> integer >= 2 (e.g. {1: 2048, 2: 64})")
    G_max = d_mapping(G_max, "law_free.G_max", lambda v: is_int(v) and v >= 2, "an integer >= 2")
    packaged = _packaged_law_free()
    for dim in d:
        # a d the packaged mappings have too: the user's mapping dropped it; else the user's d is new
        for name, mapping, allowed in (("G_max", G_max, "integer >= 2"), ("refine", refine, "integer in [1, 64]")):
            if dim in mapping:
                continue
            if packaged[name] is None or dim in packaged[name]:
                raise ConfigError(f"law_free.{name}", node[name], f"an entry for every law_free.d (missing d = {dim})")
            raise ConfigError("law_free.d", node["d"], f"dimensions with an entry in law_free.{name} "
                              f"({', '.join(map(str, sorted(mapping)))}); for d = {dim} add one: "
                              f"+law_free.{name}.{dim}=<{allowed}>")
    T_range = node["T_range"]
    check(isinstance(T_range, list) and len(T_range) == 2 and all(is_number(t) and t > 0 for t in T_range)
          and T_range[0] < T_range[1], "law_free.T_range", T_range,
          "[T_min, T_max] with 0 < T_min < T_max (oracle clip levels of heavy-tailed cells)")
    check(is_int(node["n_test"]) and node["n_test"] >= 2 and (node["n_test"] & (node["n_test"] - 1)) == 0,
          "law_free.n_test", node["n_test"], "a power of 2 >= 2 (kNN test points)")
    check(node["sweeps"] is None or isinstance(node["sweeps"], dict), "law_free.sweeps", node["sweeps"],
          "null (the experiment's grid.sweeps) or a mapping like grid.sweeps")
    if node["sweeps"] is not None:
        validate_sweeps(cfg, "law_free.sweeps")
    per_d = node["sweeps_per_d"]
    check(per_d is None or isinstance(per_d, dict), "law_free.sweeps_per_d", per_d,
          "null (the same sweeps at every d) or a mapping d -> a sweeps mapping like grid.sweeps")
    if per_d is not None:
        typed = d_mapping(per_d, "law_free.sweeps_per_d", lambda v: isinstance(v, dict),
                          "a sweeps mapping like grid.sweeps")
        node["sweeps_per_d"] = {d: validate_sweeps(v, f"law_free.sweeps_per_d.{d}") for d, v in typed.items()}
    check(node["C_M"] is None or (is_number(node["C_M"]) and node["C_M"] > 0), "law_free.C_M", node["C_M"],
          "null (the distribution's C_M) or a number > 0")
    check(is_number(node["window_decades"]) and 0.5 <= node["window_decades"] <= 5, "law_free.window_decades",
          node["window_decades"], "a number of decades in [0.5, 5] (the span of one local-slope window)")
    check(is_int(node["window_points"]) and 4 <= node["window_points"] <= 50, "law_free.window_points",
          node["window_points"], "an integer in [4, 50] (fewest points of one local-slope window)")
    check(is_number(node["tol"]) and 0 < node["tol"] < 1, "law_free.tol", node["tol"],
          "a number in (0, 1) (the equivalence margin of the law-free verdicts)")
    shifts, allowed = node["shifts"], CubeArgmax.parameters["shifts"]
    check(shifts is None or isinstance(shifts, dict), "law_free.shifts", shifts,
          f"null (the estimator's own estimator.shifts at every d) or a mapping d -> {allowed.describe()}")
    if shifts is not None:  # d_mapping's keys are int; a value 4.0 that the interval accepts becomes 4
        shifts = {d: int(v) for d, v in d_mapping(shifts, "law_free.shifts", allowed.accepts,
                                                   allowed.describe()).items()}
    node["shifts"] = shifts
    node["G_max"] = {int(k): int(v) for k, v in G_max.items()}
    node["refine"] = {int(k): int(v) for k, v in refine.items() if int(k) in d}
    node["d"] = [int(v) for v in d]
    return node


def _searches_margins(distribution_node) -> bool:
    """Whether the family is the margin-classed bump family (its instances are admitted by C_γ)."""
    try:
        cls = group_class("distribution", distribution_node)
    except ConfigError:
        return False  # the law-tied build names the bad name
    return issubclass(cls, HolderBump)


def _searched_family(cfg, settings: dict) -> dict:
    """The distribution parameters the search overrides (:func:`~labeldp_sim.papers.table1.experiment.read_cell`).

    A margin-classed family uses linear-edge bumps (and ``law_free.C_M`` when
    set); other families are searched as configured (no override).
    """
    node = cfg.get("distribution")
    if not isinstance(node, DictConfig) or not _searches_margins(node):
        return {}
    shape = node.get("shape", "cos2")
    check(shape in ("cos2", "linear_edge"), "distribution.shape", shape, ("cos2", "linear_edge"))
    # cos² edges break the margin condition at coarse scales: the search uses linear edges
    overrides = {"shape": "linear_edge"}
    if settings["C_M"] is not None:
        # more bumps per instance (a larger, declared C_γ) cut the spread of the classification risk
        overrides["C_M"] = settings["C_M"]
    return overrides


def _searched_sweeps(cfg, settings: dict) -> tuple[str, dict]:
    """Where the law-free points' sweeps were typed and the plain sweeps mapping there.

    ``law_free.sweeps`` when set (validated with the law_free node): the law-free
    points of a central cell sit deeper in the privacy-dominated regime than the
    law-tied ones, where the rate is a sum of two terms, not the law's maximum of
    them; else the experiment's ``grid.sweeps``.
    """
    if settings["sweeps"] is not None:
        return "law_free.sweeps", settings["sweeps"]
    validate_sweeps(cfg)
    return "grid.sweeps", config_node(cfg, "grid.sweeps")


def build_law_free(cfg: DictConfig) -> LawFreeSpec:
    """Validate a ``mode: law_free`` job and build its :class:`LawFreeSpec` (computes nothing).

    The cell's components are built by the law-tied steps
    (:func:`~labeldp_sim.papers.table1.experiment.read_cell`, ``build_components``,
    ``plan_points``) at ``law_free.d``, the searched family and the law-free
    sweeps, so every error names the key the user typed.
    """
    settings = _law_free_settings(cfg)
    family = _searched_family(cfg, settings)
    parts = read_cell(cfg, distribution=family)
    sweeps_key, sweeps = _searched_sweeps(cfg, settings)
    comps = build_components(parts, settings["d"])
    built = {}  # (ε, T) -> mechanism: the law's here, the oracle clip levels' below, refined ones in the tasks
    points, law_mechanisms, keys = [], {}, {}
    for key, dims_sweeps, dims in _sweeps_by_d(sweeps_key, sweeps, settings):
        planned, mechanisms = plan_points(parts, comps, dims_sweeps, dims, key, snapped=False, built=built,
                                          max_N=MAX_N_LAW)
        points += planned
        law_mechanisms.update(mechanisms)
        keys.update(dict.fromkeys(dims, key))
    est, distributions, labels = comps.estimator, comps.distributions, comps.labels
    check(isinstance(est, Estimator), "estimator", labels["estimator"],
          "an estimator of labeldp_sim.papers.table1.estimators.Estimator (it states its tunings and their risks)")
    estimators = _estimators_by_d(est, settings, labels["estimator"])
    # runner.path=exact without an exact risk was refused by plan_points
    exact = parts.path in (DataPath.EXACT, DataPath.AUTO) and all(
        estimators[pt.d].exact_for(distributions[pt.d], law_mechanisms[pt.id]) for pt in points)
    if est.tuned_risks_dims is not None and not exact:
        check(set(settings["d"]) <= set(est.tuned_risks_dims), "law_free.d", settings["d"],
              f"{sorted(est.tuned_risks_dims)} for {labels['estimator']} cells (the d its law-free path handles)")

    mech_node = parts.nodes["mechanism"]
    per_octave = settings["per_octave"]
    inst_grids, est_grids, fine_grids, admitted, margin = {}, {}, {}, {}, {}
    for d, dist in distributions.items():
        margin[d] = dist.margin_constant if isinstance(dist, HolderBump) else float("nan")  # γβ > 1 raises here
    for pt in points:
        cap = min(settings["G_max"][pt.d], int(np.floor(pt.N ** (1.0 / pt.d) + 1e-9)))
        check(cap >= 2, "law_free.G_max", settings["G_max"], f"room for G >= 2 at N = {pt.N:,}, d = {pt.d}")
        dist, grid = distributions[pt.d], estimators[pt.d].instance_grid(cap, per_octave)
        for G in grid:
            if (pt.d, int(G)) not in admitted:
                # classification: the margin condition with C_γ; regression: a law of the class
                # (the heavy-tailed (171) needs M_p/T_h^p <= 1 and |η| <= M_p T_h^(1-p))
                admitted[(pt.d, int(G))] = bool(dist.admitted(int(G)) if isinstance(dist, HolderBump)
                                                else dist.construction_valid(int(G)))
        inst_grids[pt.id] = np.array([G for G in grid if admitted[(pt.d, int(G))]])
        check(len(inst_grids[pt.id]) >= 3, "law_free.G_max", settings["G_max"],
              f"at least 3 admitted instance scales at N = {pt.N:,}, d = {pt.d}")
        est_grids[pt.id] = est.tuning_grid(pt.N, cap, per_octave)
        fine_grids[pt.id] = est.tuning_grid(pt.N, cap, per_octave * settings["refine"][pt.d])

    # heavy tails: the clip level is a tuning of its own (bounded labels clip at their bound)
    clips = isinstance(distributions[settings["d"][0]], HeavyTailBump) and "T" in mech_node
    T_grid = (tuple(float(t) for t in geometric_grid(*settings["T_range"], per_octave, integer=False))
              if clips else (None,))
    mechanisms = {(pt.id, T): law_mechanisms[pt.id] if T is None else build_mechanism(mech_node, built, pt.eps, T)
                  for pt in points for T in T_grid}
    if exact:  # the T grid's mechanisms too must state their moments
        d_of = {pt.id: pt.d for pt in points}
        exact = all(estimators[d_of[pid]].exact_for(distributions[d_of[pid]], m)
                    for (pid, _), m in mechanisms.items())
    _check_depth(points, keys, exact and all(estimators[d].exact_in_real_N for d in estimators), labels)
    # the searched shape and the exact path follow from the settings and the code: both in the key
    spec = LawFreeSpec.of(parts.basics, cfg, comps.packages, cell=parts.cell, points=points,
                          distributions=distributions, estimator=est, labels=labels, sweeps_key=sweeps_key,
                          inst_grids=inst_grids, admitted=admitted, est_grids=est_grids, T_grid=T_grid,
                          mechanisms=mechanisms, reps=settings["reps"], per_octave=per_octave,
                          n_test=settings["n_test"], G_max=settings["G_max"], margin_constant=margin,
                          settings=settings, exact=exact, mechanism_node=dict(mech_node),
                          fine_grids=fine_grids, built=built, estimators=estimators)
    spec.tol = float(settings["tol"])  # the law-free verdicts' margin (fit.tol is the law-tied fits')
    _check_law_free_size(spec)
    return spec


def _sweeps_by_d(sweeps_key: str, sweeps: dict, settings: dict) -> list:
    """(key, sweeps, dims) in the order of ``law_free.d``: the dimensions that share ``sweeps`` in one
    group, each d of ``law_free.sweeps_per_d`` alone with its own (typed at ``law_free.sweeps_per_d.<d>``)."""
    per_d = settings["sweeps_per_d"] or {}
    groups = []
    for d in settings["d"]:
        key, own = (f"law_free.sweeps_per_d.{d}", per_d[d]) if d in per_d else (sweeps_key, sweeps)
        if groups and groups[-1][0] == key:
            groups[-1][2].append(d)
        else:
            groups.append((key, own, [d]))
    return groups


def _check_depth(points: list, keys: dict, real_N: bool, labels: dict) -> None:
    """Refuse N past 2**53 unless every entry is an exact law that takes N as a real parameter.

    Float64 counts are exact integers only up to 2**53 (:data:`~labeldp_sim.harness.config.MAX_N`):
    Monte-Carlo trials, and exact laws that sum over counts (the regression cells' binomial
    :mod:`~labeldp_sim.privacy.count_law`), stop there.  The cube classifier's exact risk takes N
    as the exponent of a characteristic function (:mod:`~labeldp_sim.privacy.choice_law`), so only
    N itself rounds beyond it (``MAX_N_LAW``).
    """
    deepest = max(points, key=lambda pt: pt.N)
    if deepest.N <= MAX_N or real_N:
        return
    key = f"{keys[deepest.d]}.N.values" if deepest.axis == "N" else f"{keys[deepest.d]}.eps.N"
    raise ConfigError(key, int(deepest.N_requested),
                      f"N <= 2**53 for estimator={labels['estimator']} on this path (float64 counts are exact "
                      "up to there); N up to 10**18 only where every entry is an exact law in N (cube_argmax "
                      "classification, runner.path=exact or auto)")


def _estimators_by_d(est, settings: dict, name: str) -> dict:
    """d -> the estimator the search runs there: ``est``, or with ``law_free.shifts[d]`` shifts of its partition."""
    shifts = settings["shifts"]
    if shifts is None:
        return {d: est for d in settings["d"]}
    check(isinstance(est, CubeArgmax), "law_free.shifts", shifts,
          f"null for estimator={name} (shifted partitions are cube_argmax's: estimator.shifts)")
    return {d: est.with_shifts(shifts.get(d, est.shifts)) for d in settings["d"]}


def _unit_needs(spec: LawFreeSpec, pt) -> list:
    """The arrays one law-free task at ``pt`` holds at once (lower bounds).

    An estimator that draws the samples (kNN): the N samples (per sample, as
    :func:`~labeldp_sim.papers.table1.experiment.point_needs` counts them) and one
    window array of n_test starts per tuning of the grid; cube estimators: the
    cell model of the largest G_inst and G_est (law_free.G_max caps both), as the
    law-tied sufficient path counts it.
    """
    est, dist = spec.estimator_at(pt.d), spec.distributions[pt.d]
    mech = spec.mechanism_at(pt, pt.T)  # the law's: a clip level changes no array size
    if est.tuned_risks_samples:
        n = len(spec.est_grids[pt.id]) + 1
        needs = point_needs(dist, mech, est, pt, DataPath.PER_SAMPLE, sweeps_key=spec.sweeps_key)
        return needs + [Need(8.0 * spec.n_test * n, f"{n} {est.tuning} values × n_test = {spec.n_test:,} window "
                             "starts (int64)", {"law_free.n_test": (spec.n_test, float(spec.n_test))})]
    top = int(max(spec.inst_grids[pt.id].max(), spec.est_grids[pt.id].max()))
    G_max = {"law_free.G_max": (spec.G_max, float(top) ** pt.d)}
    # the most relevant cubes: the coarsest instance's bumps cut by the finest estimator
    G_inst = max((int(G) for G in spec.inst_grids[pt.id]), key=lambda G: dist.relevant_cubes(G, top, pt.d))
    needs = point_needs(dist, mech, est, replace(pt, G_est=top), DataPath.SUFFICIENT, G_inst,
                        sweeps_key=spec.sweeps_key)
    # the cube counts come from law_free.G_max here, not from the grid point
    point_key = spec.sweeps_key + "."
    return [Need(n.bytes, n.what + f" (G = {top:,}: law_free.G_max)",
                 {**{k: v for k, v in n.keys.items() if not k.startswith(point_key)},
                  **(G_max if any(k.startswith(point_key) for k in n.keys) else {})})
            for n in needs]


def _check_law_free_size(spec: LawFreeSpec) -> None:
    """Refuse a law-free run whose tasks or trial count cannot fit in memory.

    An estimator that draws every sample in this mode (kNN: one data set for
    all k, T and G_inst) has its N capped as per-sample trials are, before the
    memory check.  The law-tied trial sizes and ``grid.reps`` are not this
    mode's: only its own tasks are checked.
    """
    if spec.exact:  # a few numbers per entry; the geometry caches are bounded (lru_cache)
        return
    if spec.estimator.tuned_risks_samples:
        largest = max(pt.N for pt in spec.points)
        check(largest <= PER_SAMPLE_MAX_N, "law_free.sweeps", spec.settings["sweeps"],
              f"sweeps with N <= {PER_SAMPLE_MAX_N:,} for {spec.labels['estimator']} cells, which run per sample "
              f"in this mode (the grid reaches N = {largest:,}; set law_free.sweeps)")
    needs = {pt.id: _unit_needs(spec, pt) for pt in spec.points}
    worst = max(spec.points, key=lambda pt: sum(n.bytes for n in needs[pt.id]))
    check_memory(needs[worst.id], spec.runner, f"law-free, at N = {worst.N:,}, eps = {worst.eps:g}, d = {worst.d}")
    units = sum(len(spec.inst_grids[pt.id]) * spec.reps * (len(spec.est_grids[pt.id]) * len(spec.T_grid) + 2)
                for pt in spec.points)
    check_plan_size(units, "law_free.reps", spec.reps, spec.runner)


def validate_mode(cfg) -> str:
    mode = cfg.get("mode", "law_tied") if isinstance(cfg, DictConfig) else "law_tied"
    check(mode in MODES, "mode", mode, MODES)
    if isinstance(cfg, DictConfig) and "law_free" in cfg:
        _law_free_settings(cfg)  # a bad law_free key is refused in either mode
    if mode == "law_free":
        check(cfg.get("kind", "rates") == "rates", "mode", mode, "law_tied (kclass and digits have no law)")
    return mode
