"""User-level LDP experiments (papers/003) as an experiment kind of the harness (``kind: userlevel``).

Outputs go to ``results/userlevel/<experiment>/``; every run refreshes
``results/userlevel/table1.{md,csv}`` ("Table 1, measured") and its figures.
"""

from __future__ import annotations

from pathlib import Path

from ..core.kinds import ExperimentKind, register

__all__ = ["UserLevelKind"]


class UserLevelKind(ExperimentKind):
    name = node = "userlevel"
    results_subdir = "userlevel"
    shared_lock = ".table1.lock"

    def validate(self, cfg):
        from .experiments import validate_userlevel

        return validate_userlevel(cfg)

    def plan(self, spec):
        from .experiments import UserLevelPlan

        return UserLevelPlan(spec)

    def analyse(self, spec, trials) -> dict:
        from .report import fit_userlevel, summarize

        summary = summarize(spec, trials)
        return {"summary": summary, "fits": fit_userlevel(spec, summary)}

    def write(self, spec, trials, analysis, out: Path) -> None:
        from .report import write_userlevel

        write_userlevel(spec, trials, analysis["summary"], analysis["fits"], out)

    def write_shared(self, directory: Path) -> None:
        from .report import write_table1

        write_table1(directory)

    def announce(self, spec, analysis, out: Path) -> None:
        summary, fits = analysis["summary"], analysis["fits"]
        flagged = summary[~summary.in_regime]
        if len(flagged):
            print(f"{spec.name}: {len(flagged)} point(s) flagged and left out of the fits "
                  f"(see summary.csv): {'; '.join(sorted(set(flagged.flag)))}")
        for r in fits.itertuples():
            print(f"{spec.name}: {r.estimator} slope on log {r.axis}"
                  + (f", d={r.d}" if r.axis != "d" else "")
                  + f": {r.slope:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] vs {r.rate} {r.theory:.3f} -> {r.verdict}")


register(UserLevelKind())
