"""User-level LDP experiments (papers/003) as an experiment kind of the harness (``kind: userlevel``).

Outputs go to ``results/userlevel/<experiment>/``; every run refreshes
``results/userlevel/table1.{md,csv}`` ("Table 1, measured") and its figures.
"""

from __future__ import annotations

from pathlib import Path

from ..core.kinds import ExperimentKind, register
from ..core.store import STORE_NAME, TrialStore, locked, staged

__all__ = ["UserLevelKind"]


class UserLevelKind(ExperimentKind):
    name = node = "userlevel"

    def validate(self, cfg):
        from .experiments import validate_userlevel

        return validate_userlevel(cfg)

    def output_dir(self, spec, subdir):
        base = Path(spec.results_dir) / "userlevel" / spec.name
        return base / subdir if subdir else base

    def run(self, cfg, spec, overrides, subdir, export) -> dict:
        from ..core.runner import execute
        from .experiments import UserLevelPlan
        from .report import fit_userlevel, summarize, write_table1, write_userlevel

        out = self.output_dir(spec, subdir)
        out.mkdir(parents=True, exist_ok=True)
        trials, stats = execute(UserLevelPlan(spec), TrialStore(Path(spec.results_dir) / STORE_NAME))
        summary = summarize(spec, trials)
        fits = fit_userlevel(spec, summary)
        export(out, spec, stats, lambda: write_userlevel(spec, trials, summary, fits, out))
        if not subdir:
            base = Path(spec.results_dir) / "userlevel"
            with locked(base, ".table1.lock"), staged(base):  # its tables and figures land together
                write_table1(base)
        flagged = summary[~summary.in_regime]
        if len(flagged):
            print(f"{spec.name}: {len(flagged)} point(s) flagged and left out of the fits "
                  f"(see summary.csv): {'; '.join(sorted(set(flagged.flag)))}")
        for r in fits.itertuples():
            print(f"{spec.name}: {r.estimator} slope on log {r.axis}"
                  + (f", d={r.d}" if r.axis != "d" else "")
                  + f": {r.slope:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] vs {r.rate} {r.theory:.3f} -> {r.verdict}")
        return {"trials": trials, "summary": summary, "fits": fits, "out": out, "run": stats}


register(UserLevelKind())
