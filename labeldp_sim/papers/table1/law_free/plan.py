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
It then refines the oracle tuning (``law_free.refine``): the tunings of the grid
``refine`` times denser that lie strictly between the coarse optimum's two
neighbours get a column each (over every instance), keyed by their slot
(``oracle~±j``) because their values depend on the coarse optimum.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from joblib import delayed

from labeldp_sim.harness.provenance import code_fingerprint
from labeldp_sim.harness.runner import Plan
from labeldp_sim.harness.store import MEMO_NAME, Schema, memo_in
from labeldp_sim.harness.store import Column as StoreColumn
from labeldp_sim.papers.table1.tuning import LAW_SLOT, Column, CommonDraws

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


# the clip level of an exact oracle column, resolved in its task (its key carries no T)
RESOLVED = float("inf")
RESOLVED_SLOT = LAW_SLOT + 1
REFINED = "oracle~"  # key label of a refined oracle column (its store row is labelled "oracle")


def _seed_key(point, r: int, inst: str, G_inst: int, tuning: str, G_est, k, T) -> str:
    T_txt = "-" if T is None else ("opt" if T is RESOLVED else f"{T:.6g}")
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


def _row_plan(spec, point, G_inst: int, oracle: list | None = None) -> list:
    """The rows of one replicate at ``G_inst``: the grid instance's, and (at the first G_inst) the law's.

    ``oracle``: the point's ``spec.oracle_columns(point)``, where the caller has them already (they
    are the same at every G_inst, and building them is most of a plan's cost)."""
    law = ("law", spec.law_column(point))
    oracle = spec.oracle_columns(point) if oracle is None else oracle
    plan = [_Row("grid", int(G_inst), int(G_inst), spec.admitted.get((point.d, int(G_inst)), True),
                 [("oracle", c) for c in oracle] + [law])]
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


def _refined_slots(spec, d: int) -> list:
    """The slots ±1 … ±(refine − 1) of the refined oracle columns at ``d`` (none where ``law_free.refine`` = 1)."""
    return [j for k in range(1, spec.refine_for(d)) for j in (-k, k)]


def _exact_row_plan(spec, point, G_inst: int, oracle: list | None = None) -> list:
    """:func:`_row_plan` of the exact path: where T is searched, one oracle column per tuning whose
    clip level is resolved in the task (:func:`_best_clip`), keyed without its T; then the refined
    oracle columns (:func:`_refined_tunings`), keyed by their slot."""
    plan = _row_plan(spec, point, G_inst, oracle)
    grid, law = plan[0], plan[0].labelled[-1]
    T_key = RESOLVED if spec.searches_T else None
    oracle = grid.labelled[:-1]
    if spec.searches_T:
        tunings = dict.fromkeys(int(c.tuning) for _, c in oracle)
        oracle = [("oracle", Column(t, None, 0, 0, RESOLVED)) for t in tunings]
    refined = [(f"{REFINED}{j:+d}", Column(0, None, RESOLVED_SLOT, 0, T_key)) for j in _refined_slots(spec, point.d)]
    plan[0] = grid._replace(labelled=oracle + refined + [law])
    return plan


def _refined_tunings(spec, point, worst: np.ndarray) -> dict:
    """slot -> tuning: the finer grid's values strictly between the neighbours of the coarse optimum.

    ``worst`` is the worst admitted risk of each coarse tuning (``spec.est_grids``).  The finer
    grid (``law_free.refine`` times denser) contains the coarse one; slot −k is the k-th value
    below the optimum, +k above.  A slot with no value there (the optimum at a grid end, or
    small integers that round together) repeats the optimum, a column the matrix already has.
    """
    coarse, fine = spec.est_grids[point.id], spec.fine_grids[point.id]
    j = int(np.argmin(worst))
    lo, hi = coarse[max(j - 1, 0)], coarse[min(j + 1, len(coarse) - 1)]
    known = set(int(t) for t in coarse)
    inside = [int(t) for t in fine if lo < t < hi and int(t) not in known]
    below = [t for t in reversed(inside) if t < coarse[j]]
    above = [t for t in inside if t > coarse[j]]
    slots = {}
    for j_slot in _refined_slots(spec, point.d):
        side = below if j_slot < 0 else above
        k = abs(j_slot) - 1
        slots[j_slot] = side[k] if k < len(side) else int(coarse[j])
    return slots


def _best_clip(spec, point, tuning: int, G_insts, admitted) -> Column:
    """The clip level of ``tuning`` that minimises the worst admitted risk: the best on the T grid,
    or the vertex of the parabola in log T through it and its neighbours where that is better.

    T is a continuous tuning: resolving it here (exactly, at one more column) removes the
    grid's discreteness in T from M instead of storing every T of the grid.
    """
    dist, est = spec.distributions[point.d], spec.estimator_at(point.d)
    columns = [Column(tuning, spec.mechanisms[(point.id, T)], slot, 0, T) for slot, T in enumerate(spec.T_grid)]
    worst = np.max([est.expected_risks(dist, int(G), point, columns) for G in G_insts[admitted]], axis=0)
    j = int(np.argmin(worst))
    best = columns[j]
    if 0 < j < len(columns) - 1 and np.all(worst[j - 1:j + 2] > 0):
        x = np.log(spec.T_grid[j - 1:j + 2])
        a, b, _ = np.polyfit(x, np.log(worst[j - 1:j + 2]), 2)
        if a > 0:
            T = float(np.exp(np.clip(-b / (2 * a), x[0], x[2])))
            vertex = Column(tuning, spec.mechanism_at(point, T), RESOLVED_SLOT, 0, T)
            if max(est.expected_risks(dist, int(G), point, [vertex])[0] for G in G_insts[admitted]) < worst[j]:
                best = vertex
    return best


def _oracle_column(spec, point, tuning: int, G_all, admitted) -> Column:
    """The oracle column of ``tuning`` (its clip level resolved where T is searched)."""
    if spec.searches_T:
        return _best_clip(spec, point, tuning, G_all, admitted)
    return Column(tuning, spec.mechanisms[(point.id, None)], 0, 0, None)


def run_exact(spec, point, fixed) -> pd.DataFrame:
    """Every row of one point's matrix (and the law's own entry) as exact expectations.

    The whole point in one task: the refined columns need the coarse optimum, hence every row.
    The intermediates that depend on neither N nor ε (the classification tilt measures) are kept in
    ``<results_dir>/memo.sqlite`` for every worker and every later run of the same code.
    """
    if not spec.memoizes:  # nothing of a regression entry is kept
        return _run_exact(spec, point, fixed)
    with memo_in(Path(spec.results_dir) / MEMO_NAME, code_fingerprint(spec.packages)):
        return _run_exact(spec, point, fixed)


def _run_exact(spec, point, fixed) -> pd.DataFrame:
    dist, est = spec.distributions[point.d], spec.estimator_at(point.d)
    G_all = np.asarray(spec.inst_grids[point.id])
    admitted = np.array([spec.admitted.get((point.d, int(G)), True) for G in G_all])
    coarse = {int(t): _oracle_column(spec, point, int(t), G_all, admitted) for t in spec.est_grids[point.id]}
    oracle = spec.oracle_columns(point)
    plans = [_exact_row_plan(spec, point, int(G), oracle) for G in G_all]
    risks = {}  # (role, G, label) -> (columns, risks, seconds per entry)
    for plan in plans:
        for row in plan:
            start = time.perf_counter()
            columns = [coarse[int(c.tuning)] if label == "oracle" else c
                       for label, c in row.labelled if not label.startswith(REFINED)]
            values = est.expected_risks(dist, row.G, point, columns)
            risks[(row.role, row.G)] = (columns, values, (time.perf_counter() - start) / len(values))
    refined = {}
    if spec.refine_for(point.d) > 1:
        worst = np.max([risks[("grid", int(G))][1][:len(coarse)] for G in G_all[admitted]], axis=0)
        slots = _refined_tunings(spec, point, worst)
        by_tuning = {t: _oracle_column(spec, point, t, G_all, admitted) for t in set(slots.values())}
        refined = {j: by_tuning[t] for j, t in slots.items()}
    rows = []
    for plan in plans:
        for row in plan:
            columns, values, seconds = risks[(row.role, row.G)]
            if row.role == "grid" and refined:
                extra = [refined[int(label[len(REFINED):])] for label, _ in row.labelled if label.startswith(REFINED)]
                start = time.perf_counter()
                more = est.expected_risks(dist, row.G, point, extra)
                seconds = (seconds * len(values) + time.perf_counter() - start) / (len(values) + len(more))
                columns, values = columns[:-1] + extra + columns[-1:], list(values[:-1]) + list(more) + [values[-1]]
            records = _row_records(spec, point, 0, row, row.labelled, values, seconds, fixed)
            for record, column in zip(records, columns):
                record["T"] = float("nan") if column.T is None else column.T  # the resolved clip level
                record.update(_tuning_fields(spec, column.tuning))             # a refined column's own value
                record["tuning"] = "oracle" if record["tuning"].startswith(REFINED) else record["tuning"]
            rows += records
    return pd.DataFrame(rows)


def _run_unit(spec, point, G_inst, reps, fixed) -> pd.DataFrame:
    dist = spec.distributions[point.d]
    rows = []
    plan = _row_plan(spec, point, G_inst)
    for r in reps:
        for role, G, tag, admitted, labelled in plan:
            draws = CommonDraws(spec.seed, point, r, tag, spec.n_test)
            start = time.perf_counter()
            instance = dist.draw(draws.instance, G)
            risks = spec.estimator_at(point.d).tuned_risks(instance, point, [c for _, c in labelled], draws)
            seconds = (time.perf_counter() - start) / len(risks)
            rows += _row_records(spec, point, r, _Row(role, G, tag, admitted, labelled), labelled, risks,
                                 seconds, fixed)
    return pd.DataFrame(rows)


def fixed_columns(spec, point) -> dict:
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
        row_plan = _exact_row_plan if spec.exact else _row_plan
        for point in spec.points:
            oracle = spec.oracle_columns(point)
            for G_inst in spec.inst_grids[point.id]:
                rows = row_plan(spec, point, int(G_inst), oracle)
                for r in range(spec.replicates):
                    for role, G, _, _, labelled in rows:
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
            points = {point.id: point for point, _, _ in groups.values()}
            return [delayed(run_exact)(spec, point, fixed_columns(spec, point)) for point in points.values()]
        for point, G_inst, reps in groups.values():
            reps = sorted(reps)
            fixed = fixed_columns(spec, point)
            for start in range(0, len(reps), chunk):
                calls.append(delayed(_run_unit)(spec, point, G_inst, reps[start:start + chunk], fixed))
        return calls
