"""One table across the jobs of a multirun (``labeldp-sim -m ...``).

A row per fitted slope of each job (experiment, the job's overrides, its output folder,
status, axis, d, estimator, slope, CI, theory, verdict), read from the ``fits`` the job's kind
returned (``fit.csv``'s rows; the law-free kinds' deepest-window slope of M); a job whose kind
fits no slope (K-class, digits), or that did not finish, gets one row with the first columns.

The table goes to ``<results_dir>/multirun/<sweep>.csv``, ``<sweep>`` a short hash of the jobs'
overrides: one file per sweep, so another sweep in the same results directory never overwrites
it, and the same sweep run again rewrites its own table with the same bytes when its numbers are
the same (a timestamped name would add a file to a committed results folder at every run).  The
folder holds no ``config.yaml``, so the report does not take it for an experiment.
"""

from __future__ import annotations

import hashlib
import math
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from labeldp_sim.harness.config import job_kind
from labeldp_sim.harness.errors import os_error_line
from labeldp_sim.harness.kinds import get_kind
from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.store import atomic_write

__all__ = ["COLUMNS", "FOLDER", "SharedTables", "finish", "job_rows", "summary_lines", "sweep_name", "write_table"]

FOLDER = "multirun"
COLUMNS = ["job", "experiment", "overrides", "status", "out", "axis", "d", "estimator", "slope", "ci_low",
           "ci_high", "theory", "verdict"]
FIT_COLUMNS = COLUMNS[5:]
# the law-free fits state the deepest window's slope of M under these names
LAW_FREE = {"deep_slope": "slope", "deep_ci_low": "ci_low", "deep_ci_high": "ci_high"}


def job_rows(number: int, experiment: str, overrides: list, status: str, result: dict | None) -> list:
    """The rows of one job: one per fitted slope, or one without slope columns."""
    base = {"job": number, "experiment": experiment, "overrides": " ".join(overrides), "status": status,
            "out": str(result["out"]) if result and "out" in result else ""}
    fits = result.get("fits") if result else None
    if not isinstance(fits, pd.DataFrame) or fits.empty:
        return [base]
    if "slope" not in fits and "deep_slope" in fits:
        fits = fits.rename(columns=LAW_FREE)
    if "quantity" in fits:  # law-free: the minimax risk M is the row the paper states
        fits = fits[fits.quantity == "M"]
    if "primary" in fits:
        fits = fits[fits.primary.astype(bool)]
    rows = [{**base, **{c: r.get(c) for c in FIT_COLUMNS}} for r in fits.to_dict("records")]
    return rows or [base]


def sweep_name(rows: list) -> str:
    """The name of a sweep's table: 12 hex digits of the SHA-256 of its jobs' overrides, in job order."""
    jobs = {r["job"]: r["overrides"] for r in rows}
    return hashlib.sha256("\n".join(jobs[j] for j in sorted(jobs)).encode()).hexdigest()[:12]


def write_table(results_dir, rows: list) -> Path:
    """``<results_dir>/multirun/<sweep>.csv`` (:func:`sweep_name`), written atomically."""
    folder = Path(results_dir) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sweep_name(rows)}.csv"
    frame = pd.DataFrame(rows, columns=COLUMNS)
    atomic_write(path, lambda p: frame.to_csv(p, index=False))
    return path


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _number(value) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def summary_lines(rows: list, path: Path) -> list:
    """The table in short: a line per row (with the overrides that differ between the jobs), then
    where the table is."""
    jobs = len({r["job"] for r in rows})
    words = [set(r["overrides"].split()) for r in rows]
    common = set.intersection(*words) if words else set()
    lines = [f"multirun: {jobs} job{'s' if jobs != 1 else ''}"
             + (f" (all with {' '.join(sorted(common))})" if common else "")]
    for r in rows:
        own = " ".join(w for w in r["overrides"].split() if w not in common)
        head = f"  [{r['job']}] {r['experiment']}" + (f" {own}" if own else "")
        if _missing(r.get("axis")):
            lines.append(f"{head}: {r['status']}" + (f" -> {r['out']}" if r["out"] else ""))
            continue
        d = "" if _missing(r.get("d")) else f", d={r['d']}"
        estimator = "" if _missing(r.get("estimator")) else f" {r['estimator']}"
        lines.append(f"{head}:{estimator} slope on log {r['axis']}{d}: {_number(r.get('slope'))} "
                     f"[{_number(r.get('ci_low'))}, {_number(r.get('ci_high'))}] vs {_number(r.get('theory'))} "
                     f"-> {r.get('verdict')}")
    lines.append(f"multirun table: {path}")
    return lines


def finish(jobs: list, rows: list) -> Path | None:
    """Write and show the table of a multirun: ``jobs`` as ``(experiment, overrides, results_dir)``,
    ``rows`` those of the jobs that ran (the others are added as "not run"); the table goes to the
    first job's results directory.  None when it cannot be written (a warning says why)."""
    log = get_logger("multirun")
    done = {r["job"] for r in rows}
    rows = rows + [job_rows(i + 1, name, overrides, "not run", None)[0]
                   for i, (name, overrides, _) in enumerate(jobs) if i + 1 not in done]
    try:
        path = write_table(jobs[0][2], rows)
    except OSError as err:  # the run's own line says what failed first
        log.warning(f"labeldp-sim: warning: the multirun table was not written ({os_error_line(err)})")
        return None
    for line in summary_lines(rows, path):
        log.info(line)
    return path


class SharedTables:
    """Which job of a command line refreshes the results directory's shared tables and figures.

    Only the last job of each target (:meth:`~labeldp_sim.harness.kinds.ExperimentKind.shared_target`)
    does: ``make minimax``'s 49 jobs refreshed Table I's and papers/003's tables after each.  A job
    that fails first has the tables of the jobs that finished refreshed before its fault is reported.

    Parameters
    ----------
    jobs : list
        The command line's jobs (``cfg``, ``spec``, ``subdir``), in the order they run.
    """

    def __init__(self, jobs: list):
        self.jobs = jobs
        self.targets = [get_kind(job_kind(job.cfg)).shared_target(job.cfg, job.spec, job.subdir) for job in jobs]
        self.pending = {}  # target -> the last finished job whose tables a later job was to refresh

    def refreshes(self, i: int) -> bool:
        """Whether job ``i`` refreshes its target's tables (no later job has the same target)."""
        return self.targets[i] is None or self.targets[i] not in self.targets[i + 1:]

    @contextmanager
    def job(self, i: int):
        """Around job ``i``'s run: yields whether it refreshes; on a fault, refreshes what is pending."""
        refresh = self.refreshes(i)
        try:
            yield refresh
        except Exception:
            self.flush()
            raise
        if self.targets[i] is not None:
            if refresh:
                self.pending.pop(self.targets[i], None)
            else:
                self.pending[self.targets[i]] = self.jobs[i]

    def flush(self) -> None:
        """Refresh the tables the finished jobs left to a job that will not come; a fault here is
        logged, so that the job's own fault is the one reported."""
        for job in self.pending.values():
            try:
                get_kind(job_kind(job.cfg)).for_spec(job.cfg, job.spec).refresh_shared(job.spec)
            except Exception as err:  # noqa: BLE001 - the job's own fault follows
                log.warning(f"labeldp-sim: the tables of {job.spec.results_dir} were not refreshed: {err}")
        self.pending.clear()
