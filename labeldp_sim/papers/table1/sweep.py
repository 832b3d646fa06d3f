"""The trials of a Table I experiment: every grid point × its replicates, through the core runner."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from joblib import delayed

from labeldp_sim.papers.table1.paths import DataPath
from labeldp_sim.papers.table1.points import Point
from labeldp_sim.harness.runner import Plan, execute, trial_rng
from labeldp_sim.harness.store import STORE_NAME, Column, Schema, TrialStore
from labeldp_sim.papers.table1.experiment import Experiment
from labeldp_sim.papers.table1.tuning import Column as TuningColumn

__all__ = ["SweepPlan", "run_trial", "run_sweep", "RATE_TRIALS"]


def run_trial(distribution, mechanism, estimator, point: Point, replicate: int, seed: int,
              path: DataPath | str) -> dict:
    """One Monte-Carlo trial: draw η_v, the data (or its counts), fit, exact risk (8).

    On the ``exact`` path the one "trial" of a point is the estimator's expected risk
    (:meth:`~.estimators.Estimator.expected_risks`: signs, data and noise averaged in closed
    form) at the point's own instance and tuning; nothing is drawn.
    """
    start = time.perf_counter()
    path = DataPath(path)
    if path is DataPath.EXACT:
        column = TuningColumn(int(estimator.tuning_at(point)), mechanism, 0, 0, mechanism.T)
        risk = estimator.expected_risks(distribution, point.G, point, [column])[0]
        return {"replicate": replicate, "excess_risk": risk, "regret_fraction": np.nan, "path": path.value,
                "seconds": round(time.perf_counter() - start, 6)}
    rng = trial_rng(seed, point, replicate)
    instance = distribution.draw(rng, point.G)
    result = estimator.trial(instance, point, mechanism, rng, path)
    return {"replicate": replicate, **result, "path": path.value,
            "seconds": round(time.perf_counter() - start, 6)}


RATE_TRIALS = Schema("rate_trials", (
    Column("experiment", "TEXT"), Column("cell", "TEXT"), Column("task", "TEXT"),
    Column("privacy_model", "TEXT"), Column("protection", "TEXT"), Column("mechanism", "TEXT"),
    Column("estimator", "TEXT"), Column("distribution", "TEXT"), Column("minimax_hard", "BOOLEAN"),
    Column("axis", "TEXT"), Column("d", "INTEGER"), Column("beta", "REAL"), Column("gamma", "REAL"),
    Column("p", "REAL"), Column("K", "REAL", sql="K_classes"), Column("N", "INTEGER"),
    Column("eps", "REAL"), Column("N_requested", "REAL"), Column("eps_requested", "REAL"),
    Column("h", "REAL"), Column("G", "INTEGER"), Column("G_est", "INTEGER"),
    Column("bumps", "INTEGER"), Column("k", "REAL"), Column("T", "REAL"),
    Column("in_regime", "BOOLEAN"), Column("config_key", "TEXT"), Column("replicate", "INTEGER"),
    Column("seed_key", "TEXT"), Column("excess_risk", "REAL"), Column("regret_fraction", "REAL"),
    Column("path", "TEXT"), Column("seconds", "REAL"),
), key=("experiment", "config_key", "seed_key"))


def _point_columns(exp: Experiment, point: Point) -> dict:
    dist = exp.distributions[point.d]
    mech = exp.mechanisms[point.id]
    return {
        "cell": exp.cell.name,
        "task": exp.cell.task,
        "privacy_model": mech.privacy.model,
        "protection": mech.privacy.protects,
        "mechanism": exp.labels["mechanism"],
        "estimator": exp.labels["estimator"],
        "distribution": exp.labels["distribution"],
        "minimax_hard": bool(dist.minimax_hard),
        "axis": point.axis,
        "d": point.d,
        "beta": dist.beta,
        "gamma": dist.gamma,
        "p": dist.p,
        "K": np.nan if dist.K is None else dist.K,
        "N": point.N,
        "eps": point.eps,
        "N_requested": point.N_requested,
        "eps_requested": point.eps_requested,
        "h": point.h,
        "G": point.G,
        "G_est": point.G_est,
        "bumps": dist.n_bumps(point.G),
        "k": point.k,
        "T": point.T,
        "in_regime": point.in_regime,
    }


def _run_chunk(parts, point, columns, reps, seed, path) -> pd.DataFrame:
    distribution, mechanism, estimator = parts
    frame = pd.DataFrame([run_trial(distribution, mechanism, estimator, point, r, seed, path)
                          for r in reps])
    for key, value in columns.items():
        frame[key] = value
    frame["seed_key"] = [point.seed_key(r) for r in frame.replicate]
    return frame


class SweepPlan(Plan):
    """The trials of one Table I experiment: every grid point × its replicates."""

    schema = RATE_TRIALS

    def __init__(self, exp: Experiment):
        super().__init__(exp)
        self.exp = exp
        self._points = {}
        for point in exp.points:
            for r in range(exp.replicates(point)):
                self._points[point.seed_key(r)] = (point, r)

    def wanted(self) -> list:
        return [(key,) for key in self._points]

    def tasks(self, todo: list) -> list:
        exp = self.exp
        by_point: dict = {}
        for (key,) in todo:
            point, r = self._points[key]
            by_point.setdefault(point.id, (point, []))[1].append(r)
        calls = []
        for point, reps in by_point.values():
            parts = (exp.distributions[point.d], exp.mechanisms[point.id], exp.estimator)
            columns = _point_columns(exp, point)
            for start in range(0, len(reps), exp.runner.chunk):
                calls.append(delayed(_run_chunk)(parts, point, columns,
                                                 reps[start:start + exp.runner.chunk], exp.seed,
                                                 exp.trial_path(point)))
        return calls


def run_sweep(exp: Experiment, store: TrialStore | None = None) -> pd.DataFrame:
    """Run (or resume) every trial of ``exp`` through the store; return the trials table.

    The store defaults to ``<results_dir>/trials.sqlite``.  The table has one row
    per trial, sorted by grid point and replicate; ``.attrs["run"]`` holds the
    :class:`RunStats`.
    """
    store = store or TrialStore(exp.results_dir / STORE_NAME)
    trials, stats = execute(SweepPlan(exp), store)
    trials.attrs["run"] = stats
    return trials
