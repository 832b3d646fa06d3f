r"""Law-free empirical minimax (SPEC §5a): risk matrices whose optima the data decide.

The law-tied sweep ties the hard instance's scale and the estimator's tuning
to the cell's bandwidth law h(N, ε), so its slope can only confirm that law.
Here, at every grid point (N or ε, and d), replicate r fills a matrix

    R[G_inst, tuning] = exact excess risk of the estimator tuned by ``tuning``
                        on the hard instance of cube count G_inst,

with G_inst on a fixed geometric grid from 1 to a cap set by the data
(G^d ≤ N: at least one expected sample per cube) and by computation
(``law_free.G_max[d]``), and tunings on grids of the same kind: G_est for cube
estimators, k for kNN, and the clip level T for heavy-tailed labels.  The
tuning is an **oracle** (the best on the grid for the worst instance); no
exponent of the theory enters either grid.  One more column holds the law's
tuning (for S, the theorem-tuned worst case) and one more entry the law's
own instance at the law's tuning (the law-tied value).  :mod:`.minimax_fit`
turns the matrices into M = min max R, S, fits and verdicts.

Every instance searched lies in the class the theorem is about, with fixed
constants: regression bumps are L-Hölder at every scale and the heavy-tailed
law (171) has E|Y|^p = M_p; classification uses linear-edge bumps
(:class:`~labeldp_sim.distributions.HolderBump` with ``shape="linear_edge"``)
whose margin ratio is checked in closed form against the declared C_γ, and
each instance's admission is recorded.

Random streams: the instance of (point, r, G_inst) is shared by every tuning
(common random numbers); the data of each G_est (or, for kNN, of the
instance) and the mechanism noise of each clip level have their own keys.
Clip levels of one G_est share that G_est's data draw.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from joblib import delayed
from omegaconf import DictConfig, OmegaConf
from scipy.stats import qmc

from ..core.errors import ConfigError, check, is_int, is_number
from .estimators import CubeArgmax, CubeMean, KNNMean, knn_windows_1d
from ..core.config import PER_SAMPLE_MAX_N, Need, check_memory, check_plan_size
from .experiment import (MAX_D, Experiment, _build, _relevant_cubes, build_experiment, check_list, config_node,
                         d_mapping, trial_needs, validate_sweeps)
from ..core.points import Point
from ..core.provenance import config_key
from ..core.runner import Plan
from ..core.store import Column, Schema

__all__ = ["LawFreeSpec", "LawFreePlan", "MINIMAX_TRIALS", "build_law_free", "geometric_grid",
           "MODES", "LAW_FREE_KEYS"]

MODES = ("law_tied", "law_free")
LAW_FREE_KEYS = ("d", "reps", "per_octave", "G_max", "T_range", "n_test", "sweeps", "C_M")
LAW_SLOT = 1_000_000  # stream tag of the law's tuning / instance (never a grid value)


def geometric_grid(lo: float, hi: float, per_octave: int, integer: bool = True) -> np.ndarray:
    """lo · 2^(j/per_octave) up to hi (rounded and deduplicated for integers), hi included."""
    steps = int(np.floor(per_octave * np.log2(hi / lo) + 1e-9))
    values = lo * 2.0 ** (np.arange(steps + 1) / per_octave)
    if integer:
        values = np.unique(np.round(values).astype(np.int64))
        if values[-1] != int(hi):
            values = np.append(values, int(hi))
        return values
    values = np.append(values, hi) if values[-1] < hi * (1 - 1e-9) else values
    return values


MINIMAX_TRIALS = Schema("minimax_trials", (
    Column("experiment", "TEXT"), Column("config_key", "TEXT"), Column("seed_key", "TEXT"),
    Column("cell", "TEXT"), Column("axis", "TEXT"), Column("d", "INTEGER"),
    Column("N", "INTEGER"), Column("eps", "REAL"), Column("N_requested", "REAL"),
    Column("eps_requested", "REAL"), Column("replicate", "INTEGER"),
    Column("instance", "TEXT"), Column("G_inst", "INTEGER"), Column("admitted", "BOOLEAN"),
    Column("tuning", "TEXT"), Column("G_est", "INTEGER"), Column("k", "INTEGER"),
    Column("T", "REAL"), Column("excess_risk", "REAL"), Column("seconds", "REAL"),
), key=("experiment", "config_key", "seed_key"))


@dataclass
class LawFreeSpec:
    """A validated law-free run of one Table I cell.

    Attributes
    ----------
    exp : the law-tied :class:`~labeldp_sim.experiment.Experiment` at ``law_free.d``
        (its points, law tunings and mechanisms; classification families use
        linear-edge bumps)
    inst_grids : dict point id -> G_inst values (before admission)
    admitted : dict (d, G_inst) -> bool, the margin check (True for regression)
    est_grids : dict point id -> G_est values (cube estimators) or k values (kNN)
    T_grid : oracle clip levels, or (None,) where the mechanism does not clip
    mechanisms : dict (point id, T) -> mechanism, T None for the law's (the point's) one
    reps, per_octave, n_test : ``law_free.*``
    """

    exp: Experiment
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
    config_key: str
    settings: dict

    @property
    def name(self):
        return self.exp.name

    @property
    def cell(self):
        return self.exp.cell

    @property
    def seed(self):
        return self.exp.seed

    @property
    def runner(self):
        return self.exp.runner

    @property
    def results_dir(self):
        return self.exp.results_dir

    @property
    def packages(self):
        return self.exp.packages

    @property
    def tol(self):
        return self.exp.tol

    @property
    def min_points(self):
        return self.exp.min_points

    @property
    def knn(self) -> bool:
        return isinstance(self.exp.estimator, KNNMean)


def _law_free_settings(cfg) -> dict:
    node = config_node(cfg, "law_free", LAW_FREE_KEYS, required=LAW_FREE_KEYS)
    d = check_list("law_free.d", node["d"], lambda v: is_int(v) and 1 <= v <= MAX_D,
                   f"integers in [1, {MAX_D}] (numpy indexes at most 32 axes)", "law_free.d=[1,2]")
    check(is_int(node["reps"]) and node["reps"] >= 4 and node["reps"] % 2 == 0, "law_free.reps",
          node["reps"], "an even integer >= 4 (even and odd replicates cross-fit the selection)")
    check(is_int(node["per_octave"]) and node["per_octave"] >= 2, "law_free.per_octave",
          node["per_octave"], "an integer >= 2 (grid points per factor 2; the maximum must be located)")
    G_max = node["G_max"]
    check(isinstance(G_max, dict), "law_free.G_max", G_max, "a mapping d -> integer >= 2 (e.g. {1: 2048, 2: 64})")
    G_max = d_mapping(G_max, "law_free.G_max", lambda v: is_int(v) and v >= 2, "an integer >= 2")
    for dim in d:
        check(dim in G_max, "law_free.G_max", G_max, f"a cap for every law_free.d (missing d = {dim})")
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
    check(node["C_M"] is None or (is_number(node["C_M"]) and node["C_M"] > 0), "law_free.C_M", node["C_M"],
          "null (the distribution's C_M) or a number > 0")
    node["G_max"] = {int(k): int(v) for k, v in G_max.items()}
    node["d"] = [int(v) for v in d]
    return node


def build_law_free(cfg: DictConfig) -> LawFreeSpec:
    """Validate a ``mode: law_free`` job and build its :class:`LawFreeSpec` (computes nothing)."""
    settings = _law_free_settings(cfg)
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    OmegaConf.set_struct(cfg, False)
    cfg.grid.d = settings["d"]
    if settings["sweeps"] is not None:
        # the law-free points of a central cell sit deeper in the privacy-dominated regime than the
        # law-tied ones: there the rate is a sum of two terms, not the law's maximum of them
        cfg.grid.sweeps = settings["sweeps"]
    classification = cfg.distribution.get("_target_", "").endswith("HolderBump")
    if classification:
        shape = cfg.distribution.get("shape", "cos2")
        check(shape in ("cos2", "linear_edge"), "distribution.shape", shape, ("cos2", "linear_edge"))
        # cos² edges break the margin condition at coarse scales: the search uses linear edges
        cfg.distribution.shape = "linear_edge"
        if settings["C_M"] is not None:
            # more bumps per instance (a larger, declared C_γ) cut the spread of the classification risk
            cfg.distribution.C_M = settings["C_M"]
    cfg.mode = "law_tied"  # build the law-tied experiment: its points, law tunings, mechanisms
    try:
        exp = build_experiment(cfg)
    except ConfigError as err:
        raise _law_free_key(err, settings) from None
    estimator = exp.estimator
    check(isinstance(estimator, (CubeArgmax, CubeMean, KNNMean)), "estimator", exp.labels["estimator"],
          "cube_argmax, cube_mean or knn_mean (the law-free mode knows their tunings)")
    if isinstance(estimator, KNNMean):
        check(settings["d"] == [1], "law_free.d", settings["d"],
              "[1] for kNN cells (all k from one sort and prefix sums, d = 1)")

    mech_node = config_node(cfg, "mechanism")
    exp.points = [_unsnapped(exp, pt, mech_node) for pt in exp.points]
    per_octave = settings["per_octave"]
    inst_grids, est_grids, admitted, margin = {}, {}, {}, {}
    for d, dist in exp.distributions.items():
        margin[d] = dist.margin_constant if classification else float("nan")  # γβ > 1 raises here
        for G in geometric_grid(1, settings["G_max"][d], per_octave):
            # classification: the margin condition with C_γ; regression: a law of the class
            # (the heavy-tailed (171) needs M_p/T_h^p <= 1 and |η| <= M_p T_h^(1-p))
            admitted[(d, int(G))] = bool(dist.admitted(int(G)) if classification
                                         else dist.construction_valid(int(G)))
    for pt in exp.points:
        cap = min(settings["G_max"][pt.d], int(np.floor(pt.N ** (1.0 / pt.d) + 1e-9)))
        check(cap >= 2, "law_free.G_max", settings["G_max"], f"room for G >= 2 at N = {pt.N:,}, d = {pt.d}")
        grid = geometric_grid(1, cap, per_octave)
        inst_grids[pt.id] = np.array([G for G in grid if admitted.get((pt.d, int(G)), True)])
        check(len(inst_grids[pt.id]) >= 3, "law_free.G_max", settings["G_max"],
              f"at least 3 admitted instance scales at N = {pt.N:,}, d = {pt.d}")
        est_grids[pt.id] = (geometric_grid(1, pt.N, per_octave) if isinstance(estimator, KNNMean)
                            else geometric_grid(1, cap, per_octave))

    heavy = getattr(exp.distributions[settings["d"][0]], "labels", "") == "heavy"
    clips = heavy and "T" in mech_node
    T_grid = (tuple(float(t) for t in geometric_grid(*settings["T_range"], per_octave, integer=False))
              if clips else (None,))
    mechanisms = {}
    for pt in exp.points:
        extra = {} if np.isnan(pt.T) else {"T": pt.T}
        mechanisms[(pt.id, None)] = _build("mechanism", mech_node, epsilon=pt.eps, **extra)
        if clips:
            for T in T_grid:
                mechanisms[(pt.id, T)] = _build("mechanism", mech_node, epsilon=pt.eps, T=T)
    key = config_key({"experiment": exp.config_key, "law_free": settings, "mode": "law_free",
                      "shape": "linear_edge" if classification else None}, exp.packages)
    spec = LawFreeSpec(exp=exp, inst_grids=inst_grids, admitted=admitted, est_grids=est_grids,
                       T_grid=T_grid, mechanisms=mechanisms, reps=settings["reps"],
                       per_octave=per_octave, n_test=settings["n_test"], G_max=settings["G_max"],
                       margin_constant=margin, config_key=key, settings=settings)
    _check_law_free_size(spec)
    return spec


def _unit_needs(spec: LawFreeSpec, pt: Point) -> list:
    """The arrays one law-free task at ``pt`` holds at once (lower bounds).

    kNN: the N samples (per sample, as :func:`~.experiment.trial_needs` counts
    them) and one window array of n_test starts per k of the grid; cube
    estimators: the cell model of the largest G_inst and G_est (law_free.G_max
    caps both), as the law-tied sufficient path counts it.
    """
    exp = spec.exp
    if spec.knn:
        ks = len(spec.est_grids[pt.id]) + 1
        needs = [_law_free_need(n, spec) for n in trial_needs(exp, pt, path="per_sample")]
        return needs + [Need(8.0 * spec.n_test * ks, f"{ks} k values × n_test = {spec.n_test:,} window starts (int64)",
                             {"law_free.n_test": (spec.n_test, float(spec.n_test))})]
    top = int(max(spec.inst_grids[pt.id].max(), spec.est_grids[pt.id].max()))
    G_max = {"law_free.G_max": (spec.G_max, float(top) ** pt.d)}
    # the most relevant cubes: the coarsest instance's bumps cut by the finest estimator
    G_inst = max((int(G) for G in spec.inst_grids[pt.id]),
                 key=lambda G: _relevant_cubes(exp.distributions[pt.d], G, top, pt.d))
    needs = trial_needs(exp, replace(pt, G_est=top), path="sufficient", G_inst=G_inst)
    # the cube counts come from law_free.G_max here, not from the grid point
    return [Need(n.bytes, n.what + f" (G = {top:,}: law_free.G_max)",
                 {**{k: v for k, v in n.keys.items() if not k.startswith("grid.")},
                  **(G_max if any(k.startswith("grid.") for k in n.keys) else {})})
            for n in needs]


def _law_free_need(need: Need, spec: LawFreeSpec) -> Need:
    keys = {}
    for k, v in need.keys.items():
        err = _law_free_key(ConfigError(k, v[0], ""), spec.settings)
        keys[err.key] = v
    return Need(need.bytes, need.what, keys)


def _check_law_free_size(spec: LawFreeSpec) -> None:
    """Refuse a law-free run whose tasks or trial count cannot fit in memory.

    kNN cells draw every sample in this mode (one data set for all k, T and
    G_inst): their N is capped as per-sample trials are, before the memory check.
    """
    exp = spec.exp
    if spec.knn:
        largest = max(pt.N for pt in exp.points)
        check(largest <= PER_SAMPLE_MAX_N, "law_free.sweeps", spec.settings["sweeps"],
              f"sweeps with N <= {PER_SAMPLE_MAX_N:,} for kNN cells, which run per sample in this "
              f"mode (the grid reaches N = {largest:,}; set law_free.sweeps)")
    needs = {pt.id: _unit_needs(spec, pt) for pt in exp.points}
    worst = max(exp.points, key=lambda pt: sum(n.bytes for n in needs[pt.id]))
    check_memory(needs[worst.id], exp.runner, f"law-free, at N = {worst.N:,}, eps = {worst.eps:g}, d = {worst.d}")
    units = sum(len(spec.inst_grids[pt.id]) * spec.reps * (len(spec.est_grids[pt.id]) * len(spec.T_grid) + 2)
                for pt in exp.points)
    check_plan_size(units, "law_free.reps", spec.reps, exp.runner)


def _law_free_key(err: ConfigError, settings: dict) -> ConfigError:
    """An error of the law-tied build on the grid keys law_free replaced, blamed on law_free's own.

    The build runs on ``grid.d = law_free.d`` and, when set, ``grid.sweeps =
    law_free.sweeps``: a bad point there is the user's law_free value.
    """
    for grid_key, own, replaced in (("grid.sweeps", "law_free.sweeps", settings["sweeps"] is not None),
                                    ("grid.d", "law_free.d", True)):
        if replaced and (err.key == grid_key or err.key.startswith(grid_key + ".")):
            return ConfigError(own + err.key[len(grid_key):], err.got, err.allowed)
    return err


def _unsnapped(exp: Experiment, pt: Point, mech_node: dict) -> Point:
    """The point at its requested N and ε, with the law's instance and tuning there.

    The law-tied sweep moves each point so that the law's h is exactly 1/G; here
    nothing but the law column may depend on the law, so the points stay where
    they were asked for and the law's G, G_est, k and T are rounded instead.
    """
    from .experiment import _clip_level

    N, eps, d = int(pt.N_requested), float(pt.eps_requested), pt.d
    dist, cell, est = exp.distributions[d], exp.cell, exp.estimator
    h = cell.bandwidth(N, eps, dist.beta, d, dist.h_scale, dist.p)
    G = max(1, int(round(1.0 / h)))
    G_est = est.n_cubes(cell, N, eps, dist.beta, d, dist.p)
    k = float(min(N, est.neighbours(cell, N, eps, dist.beta, d, dist.p))) if isinstance(est, KNNMean) else np.nan
    T = _clip_level(mech_node, dist, 1.0 / G)
    return replace(pt, N=N, eps=eps, G=G, h=1.0 / G, G_est=G_est, k=k, T=np.nan if T is None else T)


def validate_mode(cfg) -> str:
    mode = cfg.get("mode", "law_tied") if isinstance(cfg, DictConfig) else "law_tied"
    check(mode in MODES, "mode", mode, MODES)
    if isinstance(cfg, DictConfig) and "law_free" in cfg:
        _law_free_settings(cfg)  # a bad law_free key is refused in either mode
    if mode == "law_free":
        check(cfg.get("kind", "rates") == "rates", "mode", mode, "law_tied (kclass and digits have no law)")
    return mode


# --------------------------------------------------------------------------- trials


def _rng(seed: int, point: Point, replicate: int, *tags: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*point.seed_words, replicate,
                                                                          *tags)))


def _seed_key(point: Point, r: int, inst: str, G_inst: int, tuning: str, G_est, k, T) -> str:
    T_txt = "-" if T is None else f"{T:.6g}"
    return f"{point.seed_key(r)}|{inst}{G_inst}|{tuning}|g{G_est}|k{k}|T{T_txt}"


def _cube_column_risks(spec, point, instance, r, inst_tag, G_est, clips, law) -> list:
    """Risks of one G_est on one instance: one per clip level (``clips`` T values, or law's)."""
    est = spec.exp.estimator
    tuned = replace(point, G_est=int(G_est))
    data_rng = _rng(spec.seed, point, r, inst_tag, 1, int(G_est), LAW_SLOT if law else 0)
    if isinstance(est, CubeArgmax):
        mech = spec.mechanisms[(point.id, None)]
        return [(None, est.trial(instance, tuned, mech, data_rng, "sufficient")["excess_risk"])]
    model = instance.cell_model(int(G_est))
    data = est.draw_data(instance, model, tuned, data_rng, "sufficient")
    out = []
    for slot, T in enumerate(clips):
        mech = spec.mechanisms[(point.id, None if law else T)]
        noise_rng = _rng(spec.seed, point, r, inst_tag, 2, int(G_est), LAW_SLOT if law else slot)
        out.append((T, est.risk(model, data, tuned, mech, noise_rng, "sufficient")))
    return out


def _law_T(spec, point):
    mech = spec.mechanisms[(point.id, None)]
    return None if getattr(mech, "T", None) is None else float(mech.T)


def _cube_records(spec, point, G_inst, reps, columns) -> list:
    dist = spec.exp.distributions[point.d]
    admitted = spec.admitted.get((point.d, int(G_inst)), True)
    law_G, law_T = int(point.G_est), _law_T(spec, point)
    rows = []
    for r in reps:
        for role, G in (("grid", int(G_inst)), ("law", int(point.G))):
            if role == "law" and G_inst != spec.inst_grids[point.id][0]:
                continue  # the law's instance is computed once per replicate, with the first G_inst
            inst_tag = G if role == "grid" else LAW_SLOT + G
            instance = dist.draw(_rng(spec.seed, point, r, inst_tag, 0), G)
            plan = [] if role == "law" else [(g, spec.T_grid, False) for g in spec.est_grids[point.id]]
            plan.append((law_G, (None,), True))
            for G_est, clips, law in plan:
                start = time.perf_counter()
                risks = _cube_column_risks(spec, point, instance, r, inst_tag, G_est, clips, law)
                seconds = (time.perf_counter() - start) / len(risks)
                for T, risk in risks:
                    T_out = law_T if law else T  # the law's column runs the point's own mechanism
                    rows.append({**columns, "replicate": r, "instance": role, "G_inst": G,
                                 "admitted": admitted if role == "grid" else True,
                                 "tuning": "law" if law else "oracle", "G_est": int(G_est), "k": -1,
                                 "T": np.nan if T_out is None else T_out, "excess_risk": risk,
                                 "seconds": seconds,
                                 "seed_key": _seed_key(point, r, role, G, "law" if law else "oracle",
                                                       int(G_est), -1, T_out)})
    return rows


def _knn_records(spec, point, G_inst, reps, columns) -> list:
    """kNN (d = 1): one sample per (replicate, instance); all k from one sort and prefix sums."""
    dist = spec.exp.distributions[point.d]
    law_k, law_T = int(point.k), _law_T(spec, point)
    rows = []
    for r in reps:
        for role, G in (("grid", int(G_inst)), ("law", int(point.G))):
            if role == "law" and G_inst != spec.inst_grids[point.id][0]:
                continue
            start = time.perf_counter()
            inst_tag = G if role == "grid" else LAW_SLOT + G
            rng = _rng(spec.seed, point, r, inst_tag, 0)
            instance = dist.draw(rng, G)
            X, y = instance.sample(int(point.N), rng)
            order = np.argsort(X[:, 0], kind="stable")
            x_sorted = X[order, 0]
            queries = qmc.Sobol(d=1, scramble=True, seed=rng).random_base2(int(np.log2(spec.n_test)))
            truth = instance.eta(queries)
            ks = [] if role == "law" else [int(k) for k in spec.est_grids[point.id]]
            windows = {k: knn_windows_1d(x_sorted, queries[:, 0], k) for k in set(ks) | {law_k}}
            columns_T = [] if role == "law" else [(T, slot, False) for slot, T in enumerate(spec.T_grid)]
            columns_T.append((law_T, LAW_SLOT, True))
            results = []
            for T, slot, law in columns_T:
                mech = spec.mechanisms[(point.id, None if law else T)]
                Z = mech.report(y, _rng(spec.seed, point, r, inst_tag, 2, 0, slot))
                prefix = np.concatenate([[0.0], np.cumsum(Z[order])])
                for k in ([law_k] if law else ks):
                    lo = windows[k]
                    estimate = (prefix[lo + k] - prefix[lo]) / k
                    results.append((T if not law else law_T, k, law,
                                    float(np.mean((estimate - truth) ** 2))))
            seconds = (time.perf_counter() - start) / len(results)
            for T, k, law, risk in results:
                rows.append({**columns, "replicate": r, "instance": role, "G_inst": G, "admitted": True,
                             "tuning": "law" if law else "oracle", "G_est": -1, "k": k,
                             "T": np.nan if T is None else T, "excess_risk": risk, "seconds": seconds,
                             "seed_key": _seed_key(point, r, role, G, "law" if law else "oracle", -1,
                                                   k, T)})
    return rows


def _run_unit(spec, point, G_inst, reps, columns) -> pd.DataFrame:
    build = _knn_records if spec.knn else _cube_records
    return pd.DataFrame(build(spec, point, G_inst, reps, columns))


class LawFreePlan(Plan):
    """Every matrix entry of every point × replicate of one law-free run.

    A task is one (point, G_inst, chunk of replicates): it draws each
    replicate's instance once and evaluates every tuning on it.
    """

    schema = MINIMAX_TRIALS

    def __init__(self, spec: LawFreeSpec):
        super().__init__(spec)
        self.experiment = f"minimax/{spec.name}"  # its own rows in the store, beside the law-tied run
        self._units = {}  # seed_key -> (point, G_inst, replicate)
        for point in spec.exp.points:
            for G_inst in spec.inst_grids[point.id]:
                for r in range(spec.reps):
                    for key in self._unit_keys(point, int(G_inst), r):
                        self._units[key] = (point, int(G_inst), r)

    def label(self) -> str:
        return f"{self.spec.name} (law-free)"

    def _unit_keys(self, point, G_inst, r) -> list:
        spec = self.spec
        law_T = _law_T(spec, point)
        keys = []
        first = G_inst == spec.inst_grids[point.id][0]
        if spec.knn:
            ks = [int(k) for k in spec.est_grids[point.id]]
            keys += [_seed_key(point, r, "grid", G_inst, "oracle", -1, k, T) for T in spec.T_grid for k in ks]
            keys.append(_seed_key(point, r, "grid", G_inst, "law", -1, int(point.k), law_T))
            if first:
                keys.append(_seed_key(point, r, "law", int(point.G), "law", -1, int(point.k), law_T))
            return keys
        for g in spec.est_grids[point.id]:
            keys += [_seed_key(point, r, "grid", G_inst, "oracle", int(g), -1, T) for T in spec.T_grid]
        keys.append(_seed_key(point, r, "grid", G_inst, "law", int(point.G_est), -1, law_T))
        if first:
            keys.append(_seed_key(point, r, "law", int(point.G), "law", int(point.G_est), -1, law_T))
        return keys

    def wanted(self) -> list:
        return [(key,) for key in self._units]

    def tasks(self, todo: list) -> list:
        spec = self.spec
        groups: dict = {}
        for (key,) in todo:
            point, G_inst, r = self._units[key]
            groups.setdefault((point.id, G_inst), (point, G_inst, set()))[2].add(r)
        calls = []
        chunk = max(1, spec.runner.chunk // 8)
        for point, G_inst, reps in groups.values():
            reps = sorted(reps)
            columns = {"cell": spec.cell.name, "axis": point.axis, "d": point.d, "N": point.N,
                       "eps": point.eps, "N_requested": point.N_requested,
                       "eps_requested": point.eps_requested}
            for start in range(0, len(reps), chunk):
                calls.append(delayed(_run_unit)(spec, point, G_inst, reps[start:start + chunk], columns))
        return calls

