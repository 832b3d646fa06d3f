r"""User-level LDP experiments (papers/003): a family, estimators and sweeps in n, m, ε and d.

An experiment (``kind: userlevel``) names one task, one family and the
estimators to compare on it, each with the rate of the theory registry
(:mod:`.theory`) its slopes are compared with::

    userlevel:
      task: mean
      family: {name: fixed, D: 1.0, s: 0.3}
      estimators: {alg1: {rate: thm1_alg1}, naive: {rate: naive_laplace}}
      d: [1]
      trials: 200
      path: sufficient
      sweeps:
        n: {values: [8192, 32768, 131072], m: 4096, eps: 1.0}
        m: {values: [16, 256, 4096], n: 32768, eps: 1.0}

A trial is one (estimator, point (n, m, ε, d), replicate); its random stream is
keyed on exactly those, so a point shared by two sweeps is computed once and a
trial's numbers do not depend on the rest of the grid.  Trials go through the
core runner and trial store (resume, reuse line, Ctrl-C), like every other kind.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import delayed

from labeldp_sim.harness.components import by_name, instantiate
from labeldp_sim.harness.config import (EPS_MAX, EPS_MIN, MAX_N, Need, check_memory, check_plan_size, config_node,
                           eps_allowed, validate_common)
from labeldp_sim.harness.errors import ConfigError, check, is_int, is_number
from labeldp_sim.harness.kinds import JobSpec, code_packages
from labeldp_sim.harness.points import keyed_rng
from labeldp_sim.harness.runner import Plan
from labeldp_sim.harness.store import Column, Schema
from labeldp_sim.harness.sweeps import Rule, sweep_mapping, sweep_values
from labeldp_sim.papers.userlevel.contract import ESTIMATOR_GROUP, FAMILY_GROUP
from labeldp_sim.papers.userlevel.theory import RATES

__all__ = ["UserLevelSpec", "UserPoint", "validate_userlevel", "UserLevelPlan", "USERLEVEL_TRIALS",
           "TASKS", "AXES", "families", "estimators"]

TASKS = ("mean", "so", "classification", "regression")
AXES = ("n", "m", "eps", "d")
NODE_KEYS = ("task", "family", "estimators", "d", "trials", "path", "sweeps", "min_stage1_success")
PATHS = ("sufficient", "per_user", "exact")  # exact: each trial is E[error | its instance] (:mod:`.exact`)
MAX_D = 4096


def _registered(group: str, task: str) -> dict:
    """name -> class of ``group`` for ``task``: the registry's, once the modules defining them are loaded."""
    from labeldp_sim.papers.userlevel import families as _families, learning as _learning, mean as _mean  # noqa: F401 - they register

    return {name: cls for name, cls in by_name(group).items() if _task_of(cls, task)}


def families(task: str) -> dict:
    """name -> family class of one task (group ``userlevel.family``)."""
    return _registered(FAMILY_GROUP, task)


def estimators(task: str) -> dict:
    """name -> estimator class of one task (group ``userlevel.estimator``)."""
    return _registered(ESTIMATOR_GROUP, task)


def _task_of(cls, task: str) -> bool:
    return cls.task == task


@dataclass(frozen=True)
class UserPoint:
    """One point of a sweep: n users, m samples each, ε, dimension d."""

    n: int
    m: int
    eps: float
    d: int

    @property
    def key(self) -> str:
        return f"n{self.n}-m{self.m}-e{self.eps!r}-d{self.d}"

    def coordinate(self, axis: str):
        """The point's value on ``axis`` (n, m, eps or d), as it is stored."""
        return {"n": self.n, "m": self.m, "eps": self.eps, "d": self.d}[axis]

    def value(self, axis: str) -> float:
        return float(self.coordinate(axis))


@dataclass(kw_only=True)
class UserLevelSpec(JobSpec):
    """A validated ``kind: userlevel`` experiment (with the fields of every :class:`JobSpec`).

    Attributes
    ----------
    task : the task
    family : the family object; family_name its name
    estimators : dict name -> estimator object
    rates : dict estimator name -> rate names in :data:`~.theory.RATES` (the first gives the verdict;
        the others are fitted beside it, e.g. a theorem's unit-constant form next to its proof's constants)
    sweeps : dict axis -> list of :class:`UserPoint` (in sweep order)
    trials : replicates per point
    path : "sufficient" or "per_user"
    min_stage1_success : points whose stage-I success rate is below it are flagged
    """

    task: str
    family: object
    family_name: str
    family_params: dict
    estimators: dict[str, object]
    rates: dict[str, list]
    sweeps: dict[str, list]
    trials: int
    path: str
    min_stage1_success: float

    def points(self) -> list:
        """Every distinct point of every sweep, in sweep order."""
        return list(dict.fromkeys(pt for pts in self.sweeps.values() for pt in pts))


def _build(classes: dict, name, params: dict, name_key: str, prefix: str):
    """``classes[name](**params)`` (:func:`~labeldp_sim.harness.components.instantiate`): the
    arguments checked against the class's declared ``parameters`` first, its own errors
    blamed on ``prefix.<argument>``."""
    check(isinstance(name, str) and name in classes, name_key, name, sorted(classes))  # [] is unhashable
    return instantiate(prefix, classes[name], params)


# what each axis value may be (in the order of AXES)
AXIS_RULES = {
    "n": Rule(lambda v: is_int(v) and 2 <= v <= MAX_N, "integers in [2, 2**53]", int),
    "m": Rule(lambda v: is_int(v) and 1 <= v <= 2 ** 40, "integers in [1, 2**40]", int),
    "eps": Rule(lambda v: is_number(v) and EPS_MIN <= v <= EPS_MAX, eps_allowed(), float),
    "d": Rule(lambda v: is_int(v) and 1 <= v <= MAX_D, f"integers in [1, {MAX_D}]", int),
}


def _sweeps(node: dict, dims: list) -> dict:
    """axis -> its points; a sweep holds n, m and ε fixed but its own axis, and runs at every d of
    ``userlevel.d`` unless it sweeps d itself."""
    out = {}
    for axis, sweep in sweep_mapping("userlevel.sweeps", node["sweeps"], AXIS_RULES, ("n", "m", "eps"),
                                     "[1024, 4096]").items():
        values, fixed = sweep["values"], {a: v for a, v in sweep.items() if a != "values"}
        points = []
        for d in ([None] if axis == "d" else dims):
            for v in values:
                coords = {**fixed, axis: v} if axis == "d" else {**fixed, axis: v, "d": d}
                points.append(UserPoint(coords["n"], coords["m"], coords["eps"], coords["d"]))
        out[axis] = points
    return out


def _size_key(axis: str, coordinate: str, pt: "UserPoint") -> dict:
    """{key: (value, size)} of one coordinate of a point of the ``axis`` sweep."""
    key = f"userlevel.sweeps.{axis}.values" if axis == coordinate else f"userlevel.sweeps.{axis}.{coordinate}"
    value = pt.coordinate(coordinate)
    return {key: (value, float(value))}


def trial_needs(axis: str, pt: "UserPoint", estimators: dict, path: str) -> list:
    """The arrays one trial at ``pt`` holds, as lower bounds.

    On the sufficient path a two-point law (every family here at d = 1) draws a
    group's users over the m + 1 counts a user's m samples can take
    (:func:`~.data.draw_users`: an int64 and a float64 array of m + 1); an
    estimator whose class sets ``draws_coefficient_signs`` (Kashin's, d >= 2)
    draws each of its groups of about n/(4d) users over the 2d coefficient signs
    (an (n/(4d), 2d) int64 array).  The per-user path is bounded by n·m·d separately.
    """
    if path != "sufficient":
        return []
    needs = []
    if pt.d == 1:
        needs.append(Need(16.0 * (pt.m + 1), f"the m + 1 = {pt.m + 1:,} counts a user's samples can take "
                          "(int64 and float64)", _size_key(axis, "m", pt)))
    if pt.d >= 2 and any(est.draws_coefficient_signs for est in estimators.values()):
        needs.append(Need(4.0 * pt.n, f"n/(4d) = {pt.n // (4 * pt.d):,} users × 2d = {2 * pt.d} Kashin "
                          "coefficient counts (int64)", _size_key(axis, "n", pt)))
    return needs


def _check_dimensions(family, name: str, sweeps: dict) -> None:
    """Each d of the sweeps must be one the family is defined in (``fixed`` is one-dimensional,
    ``thm7`` needs a power of 2): its law is built once per d, at that d's first point, and the
    family's refusal is blamed on the key that set d (a trial would otherwise fail in a worker)."""
    first = {}
    for axis, pts in sweeps.items():
        for pt in pts:
            first.setdefault(pt.d, (axis, pt))
    for d, (axis, pt) in first.items():
        try:
            family.instance(np.random.default_rng(0), pt.n, pt.m, pt.eps, d)
        except ConfigError as err:
            if err.key != "d":
                raise err.under("userlevel.family") from None
            key = "userlevel.sweeps.d.values" if axis == "d" else "userlevel.d"
            raise ConfigError(key, d, f"{err.allowed} for family {name}") from None


def _coordinate_key(axis: str, coordinate: str) -> str:
    """The key that set one coordinate of a point of the ``axis`` sweep."""
    if coordinate == axis:
        return f"userlevel.sweeps.{axis}.values"
    return "userlevel.d" if coordinate == "d" else f"userlevel.sweeps.{axis}.{coordinate}"


def _passes(est, family, pt: "UserPoint", n: int) -> bool:
    try:
        est.check_point(family, n, pt.m, pt.eps, pt.d)
    except ConfigError:
        return False
    return True


def _smallest_n(est, family, pt: "UserPoint"):
    """An n > pt.n at which ``est.check_point`` passes (m, ε, d fixed) whose predecessor fails, by
    doubling and bisection on the estimator's own check; None if none up to MAX_N passes.  It is the
    smallest such n wherever the rule is monotone in n (users per group grow with n); Algorithm 2's
    switch to one group at ε >= dim·ln n can make a smaller n pass as well."""
    lo, hi = pt.n, pt.n
    while True:
        hi = min(2 * hi, MAX_N)
        if _passes(est, family, pt, hi):
            break
        if hi == MAX_N:
            return None
        lo = hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _passes(est, family, pt, mid) else (mid, hi)
    return hi


def _check_points(sweeps: dict, estimators: dict, family) -> None:
    """Every point of every sweep must be one each estimator can run a trial at: its own
    ``check_point`` (the rule its trial applies: dimension, users per group, number of cubes),
    blamed on the key that set the offending coordinate (a trial would fail in a worker)."""
    seen = set()
    for axis, pts in sweeps.items():
        for pt in pts:
            if pt in seen:
                continue
            seen.add(pt)
            for name, est in estimators.items():
                try:
                    est.check_point(family, pt.n, pt.m, pt.eps, pt.d)
                except ConfigError as err:
                    raise _point_error(err, axis, pt, name, est, family) from None


def _point_error(err: ConfigError, axis: str, pt: "UserPoint", name: str, est, family) -> ConfigError:
    """``err`` of ``est.check_point`` at ``pt`` as an error on the key the user typed."""
    others = f"m = {pt.m:,}, eps = {pt.eps:g}, d = {pt.d}"
    where = f"n = {pt.n:,}, {others}"
    if err.key == "n":
        least = _smallest_n(est, family, pt)
        need = f"n >= {least:,}" if least is not None else "n up to 2**53 never suffices"
        return ConfigError(_coordinate_key(axis, "n"), pt.n,
                           f"{need} for estimator {name} at {others} (n = {pt.n:,}: {err.allowed})")
    if err.key in AXES:
        return ConfigError(_coordinate_key(axis, err.key), pt.coordinate(err.key),
                           f"{err.allowed} for estimator {name} (at {where})")
    if err.key == "l" and est.l is not None:
        return ConfigError(f"userlevel.estimators.{name}.l", est.l, f"{err.allowed} at {where}")
    return ConfigError(f"userlevel.sweeps.{axis}.values", pt.coordinate(axis),
                       f"values at which estimator {name} can run (at {where} its {err.key} would be "
                       f"{err.got!r}; allowed: {err.allowed})")


def _check_sizes(sweeps: dict, estimators: dict, path: str, trials: int, runner) -> None:
    """Refuse sweeps whose trials, or whose number of trials, cannot fit in memory."""
    needs = {(axis, pt): trial_needs(axis, pt, estimators, path) for axis, pts in sweeps.items() for pt in pts}
    axis, worst = max(needs, key=lambda ap: sum(n.bytes for n in needs[ap]))
    check_memory(needs[(axis, worst)], runner, f"at n = {worst.n:,}, m = {worst.m:,}, eps = {worst.eps:g}, "
                                              f"d = {worst.d}")
    points = len({pt for pts in sweeps.values() for pt in pts})
    check_plan_size(points * trials * len(estimators), "userlevel.trials", trials, runner)


def validate_userlevel(cfg) -> UserLevelSpec:
    """Validate a ``kind: userlevel`` config into a :class:`UserLevelSpec`; compute nothing."""
    basics = validate_common(cfg, "userlevel")
    node = config_node(cfg, "userlevel", NODE_KEYS, required=("task", "family", "estimators", "d", "trials",
                                                              "sweeps"))
    task = node["task"]
    check(task in TASKS, "userlevel.task", task, list(TASKS))
    fam_node = node["family"]
    check(isinstance(fam_node, dict) and "name" in fam_node, "userlevel.family", fam_node,
          "a mapping with a name and the family's parameters")
    fam_params = {k: v for k, v in fam_node.items() if k != "name"}
    family = _build(families(task), fam_node["name"], fam_params, "userlevel.family.name", "userlevel.family")
    est_node = node["estimators"]
    check(isinstance(est_node, dict) and est_node, "userlevel.estimators", est_node,
          "a mapping estimator name -> {rate: <registry name>, parameters...}")
    classes = estimators(task)
    built, rates = {}, {}
    for name, params in est_node.items():
        params = dict(params or {})
        check(name in classes, "userlevel.estimators", name, sorted(classes))
        rate = params.pop("rate", None)
        listed = rate if isinstance(rate, list) and rate else [rate]
        for r in listed:
            check(isinstance(r, str) and r in RATES, f"userlevel.estimators.{name}.rate", r,
                  f"a rate of the registry, or a list of them (the first is the verdict's): {', '.join(sorted(RATES))}")
        built[name] = _build(classes, name, params, "userlevel.estimators", f"userlevel.estimators.{name}")
        rates[name] = [str(r) for r in listed]
    dims = sweep_values("userlevel.d", node["d"], AXIS_RULES["d"], "[1, 8]")
    trials = node["trials"]
    check(is_int(trials) and 2 <= trials <= 1_000_000, "userlevel.trials", trials, "an integer in [2, 10**6]")
    path = node.get("path", "sufficient")
    check(path in PATHS, "userlevel.path", path, list(PATHS))
    if path == "exact":
        lacking = sorted(name for name, est in built.items() if not est.exact_expected_error)
        check(not lacking, "userlevel.path", path, f"sufficient or per_user ({', '.join(lacking)} has no exact "
              f"expected error; those that do: alg1 on two-point families, alg4, alg5)")
    floor = node.get("min_stage1_success", 0.99)
    check(is_number(floor) and 0 <= floor <= 1, "userlevel.min_stage1_success", floor, "a number in [0, 1]")
    sweeps = _sweeps(node, dims)
    if path == "per_user":
        big = max(pt.n * pt.m * pt.d for pts in sweeps.values() for pt in pts)
        check(big <= 50_000_000, "userlevel.path", path,
              f"sufficient (per-user samples n·m·d <= 5e7; the grid reaches {big:.3g})")
    _check_dimensions(family, str(fam_node["name"]), sweeps)
    _check_points(sweeps, built, family)
    _check_sizes(sweeps, built, path, int(trials), basics.runner)
    return UserLevelSpec.of(
        basics, cfg, code_packages("userlevel", [type(family), *map(type, built.values())]), task=task, family=family, family_name=str(fam_node["name"]),
        family_params=fam_params, estimators=built, rates=rates, sweeps=sweeps, trials=int(trials), path=path,
        min_stage1_success=float(floor))


USERLEVEL_TRIALS = Schema("userlevel_trials", (
    Column("experiment", "TEXT"), Column("config_key", "TEXT"), Column("seed_key", "TEXT"),
    Column("estimator", "TEXT"), Column("family", "TEXT"), Column("n", "INTEGER"), Column("m", "INTEGER"),
    Column("eps", "REAL"), Column("d", "INTEGER"), Column("replicate", "INTEGER"), Column("error", "REAL"),
    Column("stage1_ok", "REAL"), Column("in_regime", "BOOLEAN"), Column("groups", "INTEGER"),
    Column("path", "TEXT"), Column("seconds", "REAL"),
), key=("experiment", "config_key", "seed_key", "estimator"))


def _records(estimator_name, estimator, family, family_name, point: UserPoint, reps, seed, path) -> pd.DataFrame:
    rows = []
    for r in reps:
        start = time.perf_counter()
        rng = keyed_rng(seed, "userlevel", estimator_name, point.key, r)
        if path == "exact":  # the trial's instance (its hidden signs, x0...) drawn as a trial does; no protocol run
            estimator.check_point(family, point.n, point.m, point.eps, point.d)
            inst = family.instance(rng, point.n, point.m, point.eps, point.d)
            out = estimator.expected_error(inst, point.n, point.m, point.eps, point.d)
        else:
            out = estimator.trial(family, point.n, point.m, point.eps, point.d, rng, path=path)
        ok = out.get("stage1_ok")
        rows.append({"seed_key": f"{point.key}-{r}", "estimator": estimator_name, "family": family_name,
                     "n": point.n, "m": point.m, "eps": point.eps, "d": point.d, "replicate": r,
                     "error": float(out["error"]), "stage1_ok": np.nan if ok is None else float(bool(ok)),
                     "in_regime": bool(out.get("in_regime", True)), "groups": int(out.get("groups", 1)),
                     "path": path, "seconds": round(time.perf_counter() - start, 6)})
    return pd.DataFrame(rows)


class UserLevelPlan(Plan):
    """Every estimator × point × replicate of one user-level experiment."""

    schema = USERLEVEL_TRIALS

    def __init__(self, spec: UserLevelSpec):
        super().__init__(spec)
        self._points = {f"{pt.key}-{r}": (pt, r) for pt in spec.points() for r in range(spec.trials)}

    def wanted(self) -> list:
        return [(key, name) for name in self.spec.estimators for key in self._points]

    def tasks(self, todo: list) -> list:
        s = self.spec
        groups: dict = {}
        for key, name in todo:
            point, r = self._points[key]
            groups.setdefault((name, point), []).append(r)
        calls = []
        for (name, point), reps in groups.items():
            for start in range(0, len(reps), s.runner.chunk):
                calls.append(delayed(_records)(name, s.estimators[name], s.family, s.family_name, point,
                                               reps[start:start + s.runner.chunk], s.seed, s.path))
        return calls
