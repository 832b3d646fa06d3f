"""User-level LDP experiments (papers/003) as an experiment kind of the harness (``kind: userlevel``).

Outputs go to ``results/userlevel/<experiment>/``; every run refreshes
``results/userlevel/table1.{md,csv}`` ("Table 1, measured") and its figures.
"""

from __future__ import annotations

from pathlib import Path

from labeldp_sim.harness.kinds import ExperimentKind, register
from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.reads import Unread
from labeldp_sim.stats.windows import UNDECIDED, headline

log = get_logger("userlevel")

# user-level jobs take their path from their own node
_RUNNER_PATH = {"runner.path": Unread("the default (user-level jobs read their path from their own node)")}

__all__ = ["UserLevelKind"]


class UserLevelKind(ExperimentKind):
    name = node = "userlevel"
    results_subdir = "userlevel"
    shared_lock = ".table1.lock"

    def validate(self, cfg):
        from labeldp_sim.papers.userlevel.experiments import validate_userlevel

        return validate_userlevel(cfg)

    def unkeyed(self, cfg) -> tuple:
        # a record's seed key names its point (n, m, ε, d) and trial; the floor only flags points in the fit
        return ("userlevel.sweeps", "userlevel.d", "userlevel.trials", "userlevel.min_stage1_success")

    def unread(self, cfg, spec=None) -> dict:
        return dict(_RUNNER_PATH)

    def plan(self, spec):
        from labeldp_sim.papers.userlevel.experiments import UserLevelPlan

        return UserLevelPlan(spec)

    def analyse(self, spec, trials) -> dict:
        from labeldp_sim.papers.userlevel.report import fit_userlevel, summarize

        summary = summarize(spec, trials)
        return {"summary": summary, "fits": fit_userlevel(spec, summary)}

    def write(self, spec, trials, analysis, out: Path) -> None:
        from labeldp_sim.papers.userlevel.report import write_userlevel

        write_userlevel(spec, trials, analysis["summary"], analysis["fits"], out)

    def write_shared(self, directory: Path) -> None:
        from labeldp_sim.papers.userlevel.report import write_table1

        write_table1(directory)

    def announce(self, spec, analysis, out: Path) -> None:
        summary, fits = analysis["summary"], analysis["fits"]
        flagged = summary[~summary.in_regime]
        if len(flagged):
            log.info(f"{spec.name}: {len(flagged)} point(s) flagged and left out of the fits "
                     f"(see summary.csv): {'; '.join(sorted(set(flagged.flag)))}")
        for r in fits.itertuples():
            log.info(f"{spec.name}: {r.estimator} slope on log {r.axis}"
                     + (f", d={r.d}" if r.axis != "d" else "")
                     + f": {r.slope:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] vs {r.rate} {r.theory:.3f} -> {r.verdict}")


register(UserLevelKind())


class UserLevelLawFreeKind(ExperimentKind):
    """Law-free user-level rows (``kind: userlevel_minimax``, ``mode: law_free``): hard instances searched,
    tuning by oracle, exact expected errors (:mod:`.law_free`); outputs under ``results/userlevel/law_free/``."""

    name = node = "userlevel_minimax"
    root_keys = ("mode",)
    results_subdir = "userlevel/law_free"
    shared_lock = ".table1.lock"  # the lock of results/userlevel/table1.md, which gains the law-free column

    def validate(self, cfg):
        from labeldp_sim.papers.userlevel.law_free.search import validate_user_law_free

        return validate_user_law_free(cfg)

    def unkeyed(self, cfg) -> tuple:
        return ("userlevel_minimax.window_decades",)  # the fit's window span: it reads the entries

    def unread(self, cfg, spec=None) -> dict:
        return dict(_RUNNER_PATH)

    def plan(self, spec):
        from labeldp_sim.papers.userlevel.law_free.search import UserLawFreePlan

        return UserLawFreePlan(spec)

    def analyse(self, spec, trials) -> dict:
        from labeldp_sim.papers.userlevel.law_free.fit import analyse

        points, windows, fits = analyse(trials, spec)
        return {"points": points, "windows": windows, "fits": fits}

    def write(self, spec, trials, analysis, out: Path) -> None:
        from labeldp_sim.papers.userlevel.law_free.fit import write_law_free

        write_law_free(spec, trials, analysis["points"], analysis["windows"], analysis["fits"], out)

    def shared_dir(self, spec) -> Path:
        return Path(spec.results_dir) / "userlevel"

    def write_shared(self, directory: Path) -> None:
        from labeldp_sim.harness.store import staged
        from labeldp_sim.papers.userlevel.law_free.baselines import BASELINE_EXPERIMENTS, write_m_baselines
        from labeldp_sim.papers.userlevel.law_free.exponents import write_exponents
        from labeldp_sim.papers.userlevel.law_free.fit import LAW_FREE_DIR, write_law_free_table
        from labeldp_sim.papers.userlevel.report import write_table1

        base = directory / LAW_FREE_DIR
        with staged(base):  # committed first: table1.md (staged by the template) reads it
            write_law_free_table(base)
            write_exponents(base)  # the β, γ (and d) exponents: measured against stated
            if sum((base / e / "fit.csv").exists() for e in BASELINE_EXPERIMENTS) >= 2:  # a comparison needs two
                write_m_baselines(base)
        write_table1(directory)

    def announce(self, spec, analysis, out: Path) -> None:
        for r in analysis["fits"].itertuples():
            if r.primary:
                log.info(f"{spec.name} [law-free, oracle {spec.tuning_key}, worst {spec.scale_key}]: M local slope on "
                         f"log {r.axis}, d={'swept' if r.axis == 'd' else int(r.d)}, deepest window: {r.deep_slope:.3f} [{r.deep_ci_low:.3f}, "
                         f"{r.deep_ci_high:.3f}] (previous {r.prev_slope:.3f}) vs {r.rate} {r.theory:.3f} -> {r.verdict}"
                         + (f" ({headline(r.reason)})" if r.verdict in UNDECIDED else ""))


register(UserLevelLawFreeKind())
