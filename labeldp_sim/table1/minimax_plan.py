r"""The trials of the law-free search: one risk-matrix row per (point, replicate, instance).

Each task draws an instance and asks the cell's estimator for the risks of
every column of its row (:meth:`~.estimators.Estimator.tuned_risks`): the
oracle tunings (× clip levels) and the law's tuning under the point's own
mechanism.  The law's own instance gets the law's column only, once per
replicate (with the first G_inst).  The streams are named in :mod:`.tuning`.

On the exact path (``spec.exact``) an entry is the estimator's expected risk
(:meth:`~.estimators.Estimator.expected_risks`): the expectation over the
instance's signs, the data and the noise, in closed form.  There is then one
replicate (0), no stream is drawn, and a task computes one point's whole matrix.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import pandas as pd
from joblib import delayed

from ..core.runner import Plan
from ..core.store import Column as StoreColumn
from ..core.store import Schema
from .tuning import LAW_SLOT, CommonDraws

__all__ = ["MINIMAX_TRIALS", "LawFreePlan"]

MINIMAX_TRIALS = Schema("minimax_trials", (
    StoreColumn("experiment", "TEXT"), StoreColumn("config_key", "TEXT"), StoreColumn("seed_key", "TEXT"),
    StoreColumn("cell", "TEXT"), StoreColumn("axis", "TEXT"), StoreColumn("d", "INTEGER"),
    StoreColumn("N", "INTEGER"), StoreColumn("eps", "REAL"), StoreColumn("N_requested", "REAL"),
    StoreColumn("eps_requested", "REAL"), StoreColumn("replicate", "INTEGER"),
    StoreColumn("instance", "TEXT"), StoreColumn("G_inst", "INTEGER"), StoreColumn("admitted", "BOOLEAN"),
    StoreColumn("tuning", "TEXT"), StoreColumn("G_est", "INTEGER"), StoreColumn("k", "INTEGER"),
    StoreColumn("T", "REAL"), StoreColumn("excess_risk", "REAL"), StoreColumn("seconds", "REAL"),
), key=("experiment", "config_key", "seed_key"))


def _seed_key(point, r: int, inst: str, G_inst: int, tuning: str, G_est, k, T) -> str:
    T_txt = "-" if T is None else f"{T:.6g}"
    return f"{point.seed_key(r)}|{inst}{G_inst}|{tuning}|g{G_est}|k{k}|T{T_txt}"


def _tuning_fields(spec, value) -> dict:
    """The G_est and k columns of a row: the estimator's tuning, -1 for the other."""
    return {"G_est": -1, "k": -1, spec.estimator.tuning: int(value)}


class _Row(NamedTuple):
    """One instance's row of risks: its role (``grid`` or the ``law``'s own), cube count, stream tag,
    admission, and its (tuning label, column) pairs."""

    role: str
    G: int
    tag: int
    admitted: bool
    labelled: list


def _row_plan(spec, point, G_inst: int) -> list:
    """The rows of one replicate at ``G_inst``: the grid instance's, and (at the first G_inst) the law's."""
    law = ("law", spec.law_column(point))
    plan = [_Row("grid", int(G_inst), int(G_inst), spec.admitted.get((point.d, int(G_inst)), True),
                 [("oracle", c) for c in spec.oracle_columns(point)] + [law])]
    if G_inst == spec.inst_grids[point.id][0]:  # the law's instance, once per replicate
        plan.append(_Row("law", int(point.G), LAW_SLOT + int(point.G), True, [law]))
    return plan


def _key(spec, point, r, role, G, label, column) -> str:
    fields = _tuning_fields(spec, column.tuning)
    return _seed_key(point, r, role, G, label, fields["G_est"], fields["k"], column.T)


def _row_records(spec, point, r, row, labelled, risks, seconds, fixed) -> list:
    return [{**fixed, "replicate": r, "instance": row.role, "G_inst": row.G, "admitted": row.admitted,
             "tuning": label, **_tuning_fields(spec, column.tuning),
             "T": float("nan") if column.T is None else column.T, "excess_risk": risk, "seconds": seconds,
             "seed_key": _key(spec, point, r, row.role, row.G, label, column)}
            for (label, column), risk in zip(labelled, risks)]


def _run_exact(spec, point, G_insts, fixed) -> pd.DataFrame:
    """Every row of one point's matrix (and the law's own entry) as exact expectations."""
    dist, rows = spec.exp.distributions[point.d], []
    for G_inst in G_insts:
        for row in _row_plan(spec, point, int(G_inst)):
            start = time.perf_counter()
            risks = spec.estimator.expected_risks(dist, row.G, point, [c for _, c in row.labelled])
            seconds = (time.perf_counter() - start) / len(risks)
            rows += _row_records(spec, point, 0, row, row.labelled, risks, seconds, fixed)
    return pd.DataFrame(rows)


def _run_unit(spec, point, G_inst, reps, fixed) -> pd.DataFrame:
    dist = spec.exp.distributions[point.d]
    rows = []
    for r in reps:
        for role, G, tag, admitted, labelled in _row_plan(spec, point, G_inst):
            draws = CommonDraws(spec.seed, point, r, tag, spec.n_test)
            start = time.perf_counter()
            instance = dist.draw(draws.instance, G)
            risks = spec.estimator.tuned_risks(instance, point, [c for _, c in labelled], draws)
            seconds = (time.perf_counter() - start) / len(risks)
            rows += _row_records(spec, point, r, _Row(role, G, tag, admitted, labelled), labelled, risks,
                                 seconds, fixed)
    return pd.DataFrame(rows)


def _fixed(spec, point) -> dict:
    return {"cell": spec.cell.name, "axis": point.axis, "d": point.d, "N": point.N, "eps": point.eps,
            "N_requested": point.N_requested, "eps_requested": point.eps_requested}


class LawFreePlan(Plan):
    """Every matrix entry of every point × replicate of one law-free run.

    A task is one (point, G_inst, chunk of replicates): it draws each
    replicate's instance once and evaluates every tuning on it.
    """

    schema = MINIMAX_TRIALS

    def __init__(self, spec):
        super().__init__(spec)
        self.experiment = f"minimax/{spec.name}"  # its own rows in the store, beside the law-tied run
        self._units = {}  # seed_key -> (point, G_inst, replicate)
        for point in spec.exp.points:
            for G_inst in spec.inst_grids[point.id]:
                for r in range(spec.replicates):
                    for role, G, _, _, labelled in _row_plan(spec, point, int(G_inst)):
                        for label, column in labelled:
                            self._units[_key(spec, point, r, role, G, label, column)] = (point, int(G_inst), r)

    def label(self) -> str:
        return f"{self.spec.name} (law-free)"

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
        if spec.exact:  # a point's whole matrix costs milliseconds to seconds: one task per point
            by_point: dict = {}
            for point, G_inst, _ in groups.values():
                by_point.setdefault(point.id, (point, []))[1].append(G_inst)
            return [delayed(_run_exact)(spec, point, sorted(G_insts), _fixed(spec, point))
                    for point, G_insts in by_point.values()]
        for point, G_inst, reps in groups.values():
            reps = sorted(reps)
            fixed = _fixed(spec, point)
            for start in range(0, len(reps), chunk):
                calls.append(delayed(_run_unit)(spec, point, G_inst, reps[start:start + chunk], fixed))
        return calls
