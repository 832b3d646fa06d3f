r"""Law-free user-level rows (papers/003, issue 21): hard instances searched, tuning by oracle, exact risks.

A fixed instance with constants tuned on it can only show that an upper bound
holds there.  A minimax rate is about the worst instance of a class, for the
best tuning, so this mode measures, at each point (n, m, ε, d) of a sweep,

.. math:: M = \min_{t \in \text{tuning grid}}\ \max_{c \in \text{scale grid}}\ E_v\,E[\text{error} \mid \text{instance}(c, v), t]

* **instances**: the family's lower-bound construction (``Family.minimax_hard``:
  Theorem 2's two-point law, Theorems 10/12's bump classes) with its scale
  constant ``c`` searched on a fixed geometric grid (the proof fixes the scale's
  rate in (n, m, ε), not its constant); the hidden signs v are averaged over
  ``signs`` draws keyed on (point, c, draw), the same for every tuning, or
  (``signs: exact``) over all 2^k sign patterns: the exact expectation, for
  families with few signs (Theorem 10's corner block: k = C_K at d = γβ = 1);
* **tuning**: one of the estimator's constants (Algorithm 1's h and Δ constants,
  Algorithms 4/5's cube-length constant c_l) on a fixed geometric grid: the
  oracle picks the best at each point.  No constant is chosen by looking at the
  evaluation family;
* **risks**: each estimator's ``expected_error`` (:mod:`.exact`): closed forms
  and 1-D integrals, no trial is drawn, so points go to n·m = 10^15.  A tuning
  whose protocol leaves its regime at a point (a stage I group with
  size·(ε²∧1) < ``min_stage1``: the exact formulas assume stage I works; or,
  where the estimator states one, outside its theorem's regime, as Theorem 3's
  nε² ≥ 6^{2p} m^{p−2}) is not offered to the oracle there.

The entries go through the trial store (one record per point × tuning × scale
× sign draw, reused on rerun); :mod:`.fit` takes the min–max, fits
local slopes over sliding windows (:mod:`labeldp_sim.stats.windows`, Table I's
rule) and writes ``results/userlevel/law_free/``.

Config (``kind: userlevel_minimax``, ``mode: law_free``)::

    userlevel_minimax:
      task: classification
      family: {name: thm10, beta: 1.0, gamma: 1.0}
      scale: {key: c, lo: 0.25, hi: 4, per_octave: 1}
      estimator: {name: alg4}
      tuning: {key: c_l, lo: 0.5, hi: 16, per_octave: 2}
      signs: 4
      d: [1]
      rates: [thm10_lower, thm9_cls]      # the verdict's rate first (the minimax rate), the others beside
      sweeps:
        n: {values: {lo: 1e6, hi: 1e12, per_decade: 4}, m: 1024, eps: 0.5}

``one_sided: true`` makes a worst-case row where the paper proves no lower bound (heavy tails, Remark 2):
the estimator at its theorem's tuning (a one-value tuning grid), the family's scale searched, the first
rate an upper bound tested one-sidedly.

``item_level: true`` measures Table 1's item-level column with the same estimator: each point (n, m) runs on
N = nm users of one sample (user-level ε-LDP with m = 1 is item-level ε-LDP), the family scaled to N.

A sweep over ``d`` (``d: {values: [2, 4, 8], n: ..., m: ..., eps: ...}``) fits the d-exponent at fixed n,
m, ε (Theorems 6 and 7's factors d and d²); the list ``d`` is then the dimensions of the other sweeps only.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import delayed

from labeldp_sim.harness.components import instantiate
from labeldp_sim.harness.config import config_node, validate_common
from labeldp_sim.harness.errors import ConfigError, check, is_int, is_number
from labeldp_sim.harness.kinds import JobSpec, code_packages
from labeldp_sim.harness.points import keyed_rng
from labeldp_sim.harness.runner import Plan
from labeldp_sim.harness.store import Column, Schema
from labeldp_sim.harness.sweeps import Rule, sweep_values
from labeldp_sim.papers.userlevel.experiments import AXIS_RULES, UserPoint, estimators, families
from labeldp_sim.papers.userlevel.theory import RATES

__all__ = ["UserLawFreeSpec", "validate_user_law_free", "UserLawFreePlan", "USERLEVEL_LAW_FREE", "NODE",
           "geometric"]

NODE = "userlevel_minimax"
NODE_KEYS = ("task", "family", "scale", "estimator", "tuning", "signs", "d", "rates", "sweeps", "min_stage1",
             "window_decades", "one_sided", "item_level")
TASKS = ("mean", "so", "classification", "regression")
MAX_GRID = 64  # values of one searched grid; a larger one is a typo (and a slow run)
MAX_SWEEP = 200
MAX_EXACT_SIGNS = 10  # signs: exact enumerates all 2^k patterns (Theorem 10's ramp breaks the global-flip symmetry)


def geometric(lo: float, hi: float, per: float, base: float) -> list:
    """``per`` points per factor ``base`` from ``lo`` to ``hi`` (both included when hi/lo is a whole number of steps)."""
    steps = int(math.floor(per * math.log(hi / lo) / math.log(base) + 1e-9))
    return [float(lo * base ** (k / per)) for k in range(steps + 1)]


def _grid(node, key: str, per_key: str, base: float, cast=float) -> list:
    """A searched grid or a sweep's values: a list, or {lo, hi, per_octave | per_decade} (geometric)."""
    if isinstance(node, list):
        return node
    allowed = ("lo", "hi", per_key)
    check(isinstance(node, dict) and set(node) == set(allowed), key, node,
          f"a list, or a mapping with keys {', '.join(allowed)} (a geometric grid)")
    lo, hi, per = node["lo"], node["hi"], node[per_key]
    check(is_number(lo) and lo > 0, f"{key}.lo", lo, "a number > 0")
    check(is_number(hi) and hi >= lo, f"{key}.hi", hi, f"a number >= lo = {lo}")
    check(is_number(per) and 0 < per <= 24, f"{key}.{per_key}", per, "a number in (0, 24]")
    values = geometric(float(lo), float(hi), float(per), base)
    if cast is int:
        values = list(dict.fromkeys(int(round(v)) for v in values))
    return values


@dataclass(kw_only=True)
class UserLawFreeSpec(JobSpec):
    """A validated ``kind: userlevel_minimax`` experiment.

    Attributes
    ----------
    task, family_name, family_params : the searched family (its scale key set per entry)
    scale_key, scales : the family constant searched and its grid
    estimator_name, estimator_params : the estimator (its tuning key set per entry)
    tuning_key, tunings : the estimator constant the oracle picks, and its grid
    signs : hidden-sign draws averaged per (point, scale); 0 = ``exact`` (every sign pattern, one entry)
    sweeps : axis -> list of :class:`~.experiments.UserPoint` (axes n, m, eps at each listed d; d at fixed n, m, ε)
    rates : rate names; the first gives the verdict
    min_stage1 : a tuning is offered only where every stage I group has size·(ε²∧1) >= this
    window_decades : span of the sliding windows of the local slopes (2; a short sweep may use 1)
    one_sided : the first rate is an upper bound, tested one-sidedly: a worst-case row (the family's scale
        searched, the estimator at its theorem's tuning, a one-value grid) where the paper proves no lower bound
    item_level : Table 1's item-level column: every point (n, m) is run as N = nm users of one sample each, so
        each report privatizes one sample (ε-LDP per item) and the family is scaled to N samples
    """

    task: str
    family_name: str
    family_params: dict
    scale_key: str
    scales: list
    estimator_name: str
    estimator_params: dict
    tuning_key: str
    tunings: list
    signs: int
    sweeps: dict
    rates: list
    min_stage1: float
    window_decades: float = 2.0
    one_sided: bool = False
    item_level: bool = False

    def run_size(self, pt) -> tuple:
        """(users, samples per user) the estimator runs on at ``pt``: (n, m), or (nm, 1) for the item-level column."""
        return (pt.n * pt.m, 1) if self.item_level else (pt.n, pt.m)

    def points(self) -> list:
        return list(dict.fromkeys(pt for pts in self.sweeps.values() for pt in pts))

    def family(self, scale: float):
        return families(self.task)[self.family_name](**{**self.family_params, self.scale_key: scale})

    def estimator(self, tuning: float):
        return estimators(self.task)[self.estimator_name](**{**self.estimator_params, self.tuning_key: tuning})


def _searched(node: dict, key: str, classes: dict, what: str, eligible) -> tuple:
    """(name, fixed params) of the family or estimator node: a class that is ``eligible``, built once."""
    sub = node[key]
    check(isinstance(sub, dict) and "name" in sub, f"{NODE}.{key}", sub, f"a mapping with the {what}'s name")
    name = sub["name"]
    check(isinstance(name, str) and name in classes, f"{NODE}.{key}.name", name, sorted(classes))
    check(eligible(classes[name]), f"{NODE}.{key}.name", name, sorted(k for k, c in classes.items() if eligible(c)))
    params = {k: v for k, v in sub.items() if k != "name"}
    instantiate(f"{NODE}.{key}", classes[name], params)
    return str(name), params


def _searched_grid(node: dict, key: str, cls, per_key="per_octave") -> tuple:
    sub = node[key]
    check(isinstance(sub, dict) and "key" in sub, f"{NODE}.{key}", sub,
          f"a mapping {{key: <a parameter of {cls.__name__}>, lo, hi, {per_key}}} or {{key, values: [...]}}")
    name = sub["key"]
    declared = sorted(cls.parameters)
    check(name in declared, f"{NODE}.{key}.key", name, declared)
    grid_node = sub.get("values", {k: v for k, v in sub.items() if k != "key"})
    where = f"{NODE}.{key}.values" if "values" in sub else f"{NODE}.{key}"  # the key the user wrote
    values = sweep_values(where, _grid(grid_node, where, per_key, 2.0),
                          Rule(lambda v: is_number(v) and v >= 0, "numbers >= 0", float))
    values = sorted(values)
    check(len(values) <= MAX_GRID, where, f"{len(values)} values", f"at most {MAX_GRID} values")
    return str(name), values


SWEPT_AXES = ("n", "m", "eps", "d")


def _sweeps(node: dict, dims: list) -> dict:
    """axis -> its points: an n, m or ε sweep at every d of ``dims``; a d sweep at its fixed n, m and ε."""
    sweeps = node["sweeps"]
    check(isinstance(sweeps, dict) and sweeps, f"{NODE}.sweeps", sweeps, "a mapping axis -> {values, fixed axes}")
    out = {}
    for axis, sweep in sweeps.items():
        check(axis in SWEPT_AXES, f"{NODE}.sweeps", axis, list(SWEPT_AXES))
        fixed_axes = [a for a in ("n", "m", "eps") if a != axis]
        check(isinstance(sweep, dict) and set(sweep) == {"values", *fixed_axes}, f"{NODE}.sweeps.{axis}", sweep,
              f"a mapping with keys values, {', '.join(fixed_axes)}")
        rule = AXIS_RULES[axis]
        raw = _grid(sweep["values"], f"{NODE}.sweeps.{axis}.values", "per_decade", 10.0,
                    int if axis in ("n", "m", "d") else float)
        values = sweep_values(f"{NODE}.sweeps.{axis}.values", raw, rule)
        check(len(values) <= MAX_SWEEP, f"{NODE}.sweeps.{axis}.values", f"{len(values)} values",
              f"at most {MAX_SWEEP} values")
        fixed = {}
        for a in fixed_axes:
            check(AXIS_RULES[a].accepts(sweep[a]), f"{NODE}.sweeps.{axis}.{a}", sweep[a], AXIS_RULES[a].describe())
            fixed[a] = AXIS_RULES[a].cast(sweep[a])
        out[axis] = ([UserPoint(**{**fixed, "d": v}) for v in values] if axis == "d" else
                     [UserPoint(**{**fixed, axis: v, "d": d}) for d in dims for v in values])
    return out


def validate_user_law_free(cfg) -> UserLawFreeSpec:
    """Validate a ``kind: userlevel_minimax`` config; compute nothing (the family at both ends of its scale
    grid and the estimator at both ends of its tuning grid are built; ``signs: exact`` is checked at the
    sweeps' first and last points)."""
    basics = validate_common(cfg, NODE)
    mode = cfg.get("mode", "law_free")
    check(mode == "law_free", "mode", mode, ["law_free"] + [" (a userlevel_minimax experiment is law-free; "
                                                            "its law-tied rows are the ul_* experiments)"])
    node = config_node(cfg, NODE, NODE_KEYS, required=("task", "family", "scale", "estimator", "tuning",
                                                       "rates", "sweeps"))
    task = node["task"]
    check(task in TASKS, f"{NODE}.task", task, list(TASKS))
    fam_classes, est_classes = families(task), estimators(task)
    one_sided = node.get("one_sided", False)
    check(isinstance(one_sided, bool), f"{NODE}.one_sided", one_sided, "true or false")
    # a lower-bound construction and an estimator with an exact expected error; a worst-case row (one_sided)
    # searches any family of the task, and admits an expected error that bounds the exact one (SO's recursion)
    family_name, family_params = _searched(node, "family", fam_classes, "family",
                                           lambda c: c.minimax_hard or one_sided)
    est_name, est_params = _searched(node, "estimator", est_classes, "estimator",
                                     lambda c: c.exact_expected_error
                                     or (one_sided and bool(c.approximate_expected_error)))
    scale_key, scales = _searched_grid(node, "scale", fam_classes[family_name])
    tuning_key, tunings = _searched_grid(node, "tuning", est_classes[est_name])
    signs = node.get("signs", 4)
    check(signs == "exact" or (is_int(signs) and 1 <= signs <= 256), f"{NODE}.signs", signs,
          "an integer in [1, 256] (sign draws), or exact (every sign pattern)")
    signs = 0 if signs == "exact" else int(signs)
    rates = node["rates"]
    rates = rates if isinstance(rates, list) and rates else [rates]
    for r in rates:
        check(isinstance(r, str) and r in RATES, f"{NODE}.rates", r, f"rates of the registry: {', '.join(sorted(RATES))}")
    sweeps_node = node["sweeps"]
    # d: the dimensions of the n, m and ε sweeps; a d sweep names its own (so d is then required only
    # where another axis is swept too, and refused where it would be ignored)
    only_d = isinstance(sweeps_node, dict) and set(sweeps_node) == {"d"}
    check(not (only_d and "d" in node), f"{NODE}.d", node.get("d"),
          "absent: the only sweep is over d, whose values are in sweeps.d.values")
    check(only_d or "d" in node, f"{NODE}.d", "(missing)", "a list of dimensions for the n, m and ε sweeps, e.g. [1]")
    dims = [] if only_d else sweep_values(f"{NODE}.d", node["d"], AXIS_RULES["d"], "[1]")
    floor = node.get("min_stage1", 1000.0)
    check(is_number(floor) and floor > 0, f"{NODE}.min_stage1", floor, "a number > 0")
    check(not one_sided or RATES[rates[0]].kind == "upper", f"{NODE}.rates", rates[0],
          "an upper bound first (one_sided: true tests the first rate one-sidedly): "
          + ", ".join(sorted(k for k, r in RATES.items() if r.kind == "upper")))
    item_level = node.get("item_level", False)
    check(isinstance(item_level, bool), f"{NODE}.item_level", item_level, "true or false")
    window = node.get("window_decades", 2.0)
    check(is_number(window) and 0.3 <= window <= 10, f"{NODE}.window_decades", window, "a number in [0.3, 10]")
    sweeps = _sweeps(node, dims)
    spec = UserLawFreeSpec.of(
        basics, cfg, code_packages("userlevel", [fam_classes[family_name], est_classes[est_name]]),
        task=task, family_name=family_name,
        family_params=family_params, scale_key=scale_key, scales=scales, estimator_name=est_name,
        estimator_params=est_params, tuning_key=tuning_key, tunings=tunings, signs=signs, sweeps=sweeps,
        rates=[str(r) for r in rates], min_stage1=float(floor), window_decades=float(window), one_sided=one_sided,
        item_level=item_level)
    for s in (scales[0], scales[-1]):  # the family's own checks of its constant, and its number of signs
        fam = instantiate(f"{NODE}.scale", fam_classes[family_name], {**family_params, scale_key: s})
        if signs == 0:
            for pt in (spec.points()[0], spec.points()[-1]):
                _sign_count(fam, spec, pt)
    for t in (tunings[0], tunings[-1]):
        instantiate(f"{NODE}.tuning", est_classes[est_name], {**est_params, tuning_key: t})
    return spec


USERLEVEL_LAW_FREE = Schema("userlevel_law_free", (
    Column("experiment", "TEXT"), Column("config_key", "TEXT"), Column("seed_key", "TEXT"),
    Column("axis", "TEXT"), Column("n", "INTEGER"), Column("m", "INTEGER"), Column("eps", "REAL"),
    Column("d", "INTEGER"), Column("tuning", "REAL"), Column("scale", "REAL"), Column("sign_draw", "INTEGER"),
    Column("error", "REAL"), Column("admitted", "BOOLEAN"), Column("length", "REAL"), Column("seconds", "REAL"),
), key=("experiment", "config_key", "seed_key"))


def _entry_key(pt: UserPoint, tuning: float, scale: float, draw: int) -> str:
    return f"{pt.key}|t{tuning!r}|c{scale!r}|v{draw}"


class _SignPattern(np.random.Generator):
    """Stands in for a trial's generator when a family draws its hidden signs (``rng.random(k) < ½`` → −1):
    returns the k bits of one pattern, so that ``instance`` builds the instance of that sign vector.

    A Generator (its other draws are PCG64(0)'s, never used by ``instance``), so the rng contract
    (``np.random.default_rng(rng)``) passes it through unchanged.
    """

    def __init__(self, pattern: int):
        super().__init__(np.random.PCG64(0))
        self.pattern = pattern

    def random(self, size=None, dtype=np.float64, out=None):
        bits = (self.pattern >> np.arange(int(size))) & 1
        return np.where(bits == 1, 0.25, 0.75)


def _sign_count(fam, spec: UserLawFreeSpec, pt: UserPoint) -> int:
    """The number k of hidden signs of ``fam``'s instance at ``pt``, checked for ``signs: exact`` (2^k patterns)."""
    k = len(np.atleast_1d(fam.instance(_SignPattern(0), *spec.run_size(pt), pt.eps, pt.d).params["v"]))
    check(k <= MAX_EXACT_SIGNS, f"{NODE}.signs", "exact",
          f"a number of draws: {k} hidden signs at {pt.key} (exact needs <= {MAX_EXACT_SIGNS})")
    return k


def _instances(fam, spec: UserLawFreeSpec, pt: UserPoint, scale: float, draw: int) -> list:
    """The instances one entry averages: one sign draw, or (``signs: exact``) every sign pattern."""
    n, m = spec.run_size(pt)
    if spec.signs:
        return [fam.instance(keyed_rng(spec.seed, "userlevel-law-free", pt.key, repr(scale), draw),
                             n, m, pt.eps, pt.d)]
    return [fam.instance(_SignPattern(p), n, m, pt.eps, pt.d) for p in range(2 ** _sign_count(fam, spec, pt))]


def _point_records(spec: UserLawFreeSpec, axis: str, pt: UserPoint, todo: list) -> pd.DataFrame:
    """The entries ``todo`` (tuning, scale, draw) of one point: each the exact expected error."""
    rows = []
    families_ = {}
    ests = {}
    instances = {}
    for tuning, scale, draw in todo:
        start = time.perf_counter()
        fam = families_.setdefault(scale, spec.family(scale))
        est = ests.setdefault(tuning, spec.estimator(tuning))
        insts = instances.setdefault((scale, draw), _instances(fam, spec, pt, scale, draw))
        try:  # expected_error applies the estimator's own point rule (as check_point) first
            outs = [est.expected_error(inst, *spec.run_size(pt), pt.eps, pt.d) for inst in insts]
            # stage I's size, and the theorem's own regime where the estimator states one (Theorem 3's tail regime)
            admitted = bool(outs[0].get("stage1_size_eps2", math.inf) >= spec.min_stage1
                            and outs[0].get("theorem_regime", True))
            error = float(np.mean([out["error"] for out in outs]))
            length = float(outs[0].get("l", outs[0].get("h", np.nan)))
        except ConfigError:  # this tuning cannot run here (too many cubes, too few users per group)
            admitted, error, length = False, np.nan, np.nan
        rows.append({"seed_key": _entry_key(pt, tuning, scale, draw), "axis": axis, "n": pt.n, "m": pt.m,
                     "eps": pt.eps, "d": pt.d, "tuning": tuning, "scale": scale, "sign_draw": draw,
                     "error": error, "admitted": admitted, "length": length,
                     "seconds": round(time.perf_counter() - start, 6)})
    return pd.DataFrame(rows)


class UserLawFreePlan(Plan):
    """Every point × tuning × scale × sign draw of one law-free experiment."""

    schema = USERLEVEL_LAW_FREE

    def __init__(self, spec: UserLawFreeSpec):
        super().__init__(spec)
        self._entries = {}
        for axis, pts in spec.sweeps.items():
            for pt in pts:
                for t in spec.tunings:
                    for c in spec.scales:
                        for v in range(max(spec.signs, 1)):
                            self._entries.setdefault(_entry_key(pt, t, c, v), (axis, pt, t, c, v))

    def wanted(self) -> list:
        return [(key,) for key in self._entries]

    def tasks(self, todo: list) -> list:
        groups: dict = {}
        for (key,) in todo:
            axis, pt, t, c, v = self._entries[key]
            groups.setdefault((axis, pt), []).append((t, c, v))
        return [delayed(_point_records)(self.spec, axis, pt, entries) for (axis, pt), entries in groups.items()]
