"""Table I rate cells as an experiment kind of the harness (``kind: rates``).

``mode: law_tied`` runs the grid at the cell's own law (SPEC §5) and fits
slopes; ``mode: law_free`` searches instances and tunings (SPEC §5a).  Each mode
states the hooks of the core's one run template
(:meth:`~labeldp_sim.harness.kinds.ExperimentKind.run`).
"""

from __future__ import annotations

from pathlib import Path

from labeldp_sim.harness.kinds import ExperimentKind, register
from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.reads import Unread
from labeldp_sim.harness.store import atomic_write, staged
from labeldp_sim.papers.table1.paths import DataPath
from labeldp_sim.stats.windows import UNDECIDED, headline

log = get_logger("table1")

__all__ = ["RatesKind"]


class RatesKind(ExperimentKind):
    """A Table I cell: distribution, mechanism and estimator from their config groups (law-tied mode)."""

    name = "rates"
    node = None
    root_keys = ("mode", "law_free", "cell", "distribution", "mechanism", "estimator", "grid")
    shared_lock = ".table1.lock"

    def validate(self, cfg):
        from labeldp_sim.papers.table1.experiment import build_experiment
        from labeldp_sim.papers.table1.law_free.search import build_law_free, validate_mode

        if validate_mode(cfg) != "law_free":
            return build_experiment(cfg)
        return build_law_free(cfg)  # kNN cells: N <= PER_SAMPLE_MAX_N there (they run per sample)

    def for_spec(self, cfg, spec) -> ExperimentKind:
        return _LAW_FREE if cfg.get("mode", "law_tied") == "law_free" else self

    def reads(self, cfg) -> tuple:
        return tuple(key for key in super().reads(cfg) if key != "law_free")

    def unkeyed(self, cfg) -> tuple:
        # a point's streams are named by its requested (axis, d, N, ε) and replicate (TablePoint.id)
        return ("grid",)

    def unread(self, cfg, spec=None) -> dict:
        unread = {"law_free": Unread("the default (law_free.* is read with mode=law_free only)")}
        if spec is not None and all(spec.trial_path(pt) is DataPath.EXACT for pt in spec.points):
            for key in ("grid.reps", "grid.reps_per_d"):
                unread[key] = Unread("one exact expected risk per point on the exact path", refuse=False)
        return unread

    def plan(self, spec):
        from labeldp_sim.papers.table1.sweep import SweepPlan

        return SweepPlan(spec)

    def analyse(self, spec, trials) -> dict:
        from labeldp_sim.papers.table1.fit import fit_rates, summarize

        summary = summarize(trials)
        return {"summary": summary, "fits": fit_rates(summary, spec.cell, spec.tol, spec.min_points)}

    def write(self, spec, trials, analysis, out: Path) -> None:
        from labeldp_sim.papers.table1.parameters import parameters_text, spec_parameters
        from labeldp_sim.report.figures import plot_rates

        summary, fits = analysis["summary"], analysis["fits"]
        atomic_write(out / "trials.csv", lambda p: trials.to_csv(p, index=False))
        atomic_write(out / "summary.csv", lambda p: summary.to_csv(p, index=False))
        atomic_write(out / "fit.csv", lambda p: fits.to_csv(p, index=False))
        subtitle = parameters_text(spec_parameters(spec))
        plot_rates(summary, fits, out / "rate.png", spec.name, subtitle=subtitle)

    def write_shared(self, directory: Path) -> None:
        from labeldp_sim.papers.table1.report import write_table1

        write_table1(directory)

    def announce(self, spec, analysis, out: Path) -> None:
        for _, r in analysis["fits"].iterrows():
            log.info(f"{spec.name}: slope on log {r.axis}, d={r.d}: {r.slope:.3f} "
                     f"[{r.ci_low:.3f}, {r.ci_high:.3f}] vs theory {r.theory:.3f} -> {r.verdict}")


class _LawFreeRates(RatesKind):
    """The law-free mode: matrices through the store, then M, S, fits, plots, and the minimax and
    Table I tables (outputs under ``results/minimax/``)."""

    results_subdir = "minimax"

    def for_spec(self, cfg, spec) -> ExperimentKind:
        return self

    def reads(self, cfg) -> tuple:
        return ExperimentKind.reads(self, cfg)

    def unkeyed(self, cfg) -> tuple:
        # how the fit reads the entries (window span, fewest points, margin): it makes no number
        return ("law_free.window_decades", "law_free.window_points", "law_free.tol")

    def unread(self, cfg, spec=None) -> dict:
        reps = "the default (with mode=law_free, replicates per matrix entry are law_free.reps)"
        unread = {"grid.reps": Unread(reps), "grid.reps_per_d": Unread(reps),
                  "fit.tol": Unread("the default (with mode=law_free, the verdicts' margin is law_free.tol)"),
                  "grid.d": Unread("the default (with mode=law_free, the dimensions are law_free.d)")}
        if cfg.law_free.get("sweeps") is not None:
            unread["grid.sweeps"] = Unread("the default (this job's law_free.sweeps replace grid.sweeps)")
        per_d = cfg.law_free.get("sweeps_per_d")
        if per_d is not None and {int(d) for d in per_d} >= {int(d) for d in cfg.law_free.d}:
            replaced = "law_free.sweeps" if cfg.law_free.get("sweeps") is not None else "grid.sweeps"
            unread[replaced] = Unread(f"the default (law_free.sweeps_per_d replaces {replaced} at every law_free.d)")
        if spec is not None:
            if spec.exact:
                unread["law_free.reps"] = Unread("the entries are exact expectations, one per entry", refuse=False)
            if spec.T_grid == (None,):
                unread["law_free.T_range"] = Unread("only heavy-tailed cells search a clip level", refuse=False)
            if spec.estimator.tuning != "k":
                unread["law_free.n_test"] = Unread("only kNN cells integrate over test points", refuse=False)
        return unread

    def shared_dir(self, spec) -> Path:
        return Path(spec.results_dir)  # Table I's lock: the law-tied runs refresh table1.md too

    def plan(self, spec):
        from labeldp_sim.papers.table1.law_free.search import LawFreePlan

        return LawFreePlan(spec)

    def memoizes(self, spec) -> bool:
        return spec.memoizes

    def analyse(self, spec, trials) -> dict:
        from labeldp_sim.papers.table1.law_free.fit import analyse

        points, fits = analyse(trials, spec)
        return {"points": points, "fits": fits}

    def write(self, spec, trials, analysis, out: Path) -> None:
        from labeldp_sim.papers.table1.law_free.fit import write_law_free

        write_law_free(spec, trials, analysis["points"], analysis["fits"], out)

    def write_shared(self, directory: Path) -> None:
        from labeldp_sim.papers.table1.law_free.fit import write_minimax_table

        base = directory / self.results_subdir
        with staged(base):  # committed first: Table I (staged by the template) reads it
            write_minimax_table(base)
        super().write_shared(directory)

    def announce(self, spec, analysis, out: Path) -> None:
        fits = analysis["fits"]
        for _, r in fits[fits.quantity == "M"].iterrows():
            log.info(f"{spec.name} [law-free, oracle tuning]: M local slope on log {r.axis}, d={r.d}, deepest window: "
                     f"{r.deep_slope:.3f} [{r.deep_ci_low:.3f}, {r.deep_ci_high:.3f}] (previous {r.prev_slope:.3f}) "
                     f"vs {r.statement} {r.theory:.3f} -> {r.verdict}"
                     + (f" ({headline(r.reason)})" if r.verdict in UNDECIDED else ""))


_LAW_FREE = _LawFreeRates()
register(RatesKind())
