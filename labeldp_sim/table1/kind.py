"""Table I rate cells as an experiment kind of the harness (``kind: rates``).

``mode: law_tied`` runs the grid at the cell's own law (SPEC §5) and fits
slopes; ``mode: law_free`` searches instances and tunings (SPEC §5a).
"""

from __future__ import annotations

from pathlib import Path

from ..core.kinds import ExperimentKind, register
from ..core.store import STORE_NAME, TrialStore, atomic_write, locked, staged

__all__ = ["RatesKind"]


class RatesKind(ExperimentKind):
    """A Table I cell: distribution, mechanism and estimator from their config groups."""

    name = "rates"
    node = None
    root_keys = ("mode", "law_free", "cell", "distribution", "mechanism", "estimator", "grid")

    def validate(self, cfg):
        from .experiment import build_experiment
        from .minimax import build_law_free, validate_mode

        if validate_mode(cfg) != "law_free":
            return build_experiment(cfg)
        return build_law_free(cfg)  # kNN cells: N <= PER_SAMPLE_MAX_N there (they run per sample)

    def run(self, cfg, spec, overrides, subdir, export) -> dict:
        if cfg.get("mode", "law_tied") == "law_free":
            return self._run_law_free(spec, subdir, export)
        from ..core.fit import fit_rates, summarize
        from ..core.report import plot_rates
        from .report import write_table1
        from .sweep import run_sweep

        results_dir = Path(spec.results_dir)
        out = self.output_dir(spec, subdir)
        out.mkdir(parents=True, exist_ok=True)
        trials = run_sweep(spec, TrialStore(results_dir / STORE_NAME))
        stats = trials.attrs["run"]
        summary = summarize(trials)
        fits = fit_rates(summary, spec.cell, spec.tol, spec.min_points)

        def write():
            atomic_write(out / "trials.csv", lambda p: trials.to_csv(p, index=False))
            atomic_write(out / "summary.csv", lambda p: summary.to_csv(p, index=False))
            atomic_write(out / "fit.csv", lambda p: fits.to_csv(p, index=False))
            atomic_write(out / "rate.png", lambda p: plot_rates(summary, fits, p, spec.name))

        export(out, spec, stats, write)
        if not subdir:  # the tables and figures of the results directory land together
            with locked(results_dir, ".table1.lock"), staged(results_dir):
                write_table1(results_dir)
        for _, r in fits.iterrows():
            print(f"{spec.name}: slope on log {r.axis}, d={r.d}: {r.slope:.3f} "
                  f"[{r.ci_low:.3f}, {r.ci_high:.3f}] vs theory {r.theory:.3f} -> {r.verdict}")
        return {"trials": trials, "summary": summary, "fits": fits, "out": out, "run": stats}

    def _run_law_free(self, spec, subdir, export) -> dict:
        """The law-free mode: matrices through the store, then M, S, fits, plots and the tables."""
        from ..core.runner import execute
        from .minimax import LawFreePlan
        from .minimax_fit import analyse, write_law_free, write_minimax_table
        from .report import write_table1

        results_dir = Path(spec.results_dir)
        base = results_dir / "minimax"
        out = base / spec.name / subdir if subdir else base / spec.name
        out.mkdir(parents=True, exist_ok=True)
        trials, stats = execute(LawFreePlan(spec), TrialStore(results_dir / STORE_NAME))
        points, fits = analyse(trials, spec)
        export(out, spec, stats, lambda: write_law_free(spec, trials, points, fits, out))
        if not subdir:
            with locked(results_dir, ".table1.lock"):
                with staged(base):
                    write_minimax_table(base)
                with staged(results_dir):  # reads the minimax table just written
                    write_table1(results_dir)
        for _, r in fits[fits.quantity == "M"].iterrows():
            print(f"{spec.name} [law-free, oracle tuning]: M slope on log {r.axis}, d={r.d}: {r.slope:.3f} "
                  f"[{r.ci_low:.3f}, {r.ci_high:.3f}] vs {r.statement} {r.theory:.3f} -> {r.verdict}")
        return {"trials": trials, "points": points, "fits": fits, "out": out, "run": stats}


register(RatesKind())
