"""The K-class experiments of papers/002 as experiment kinds of the harness.

``kind: kclass`` (Figures 2-4: accuracy vs K on the Gaussian circle) and
``kind: digits`` (the same methods on scikit-learn's digits).  Both state the
hooks of the core's one run template
(:meth:`~labeldp_sim.harness.kinds.ExperimentKind.run`); every run refreshes
``results/kclass_claims.{md,csv}``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from labeldp_sim.harness.kinds import ExperimentKind, register
from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.reads import Unread

log = get_logger("kclass")

__all__ = ["KClassKind", "DigitsKind"]


def _lazy(module: str, name: str):
    """``name`` of ``labeldp_sim.papers.kclass.<module>``, imported when a run first asks."""
    # a kind names its hooks as strings so that importing the package (every worker does) stays light
    return getattr(importlib.import_module(f"labeldp_sim.papers.kclass.{module}"), name)


def _experiments(name: str):
    return _lazy("experiments", name)


def _report(name: str):
    return _lazy("report", name)


class _AccuracyKind(ExperimentKind):
    """Accuracy per method through the store, then the summary, plot, table and claims.

    A subclass names its ``validator(cfg)`` and ``plan_class(spec)`` in :mod:`.experiments`, its
    ``summarizer(spec, trials)`` and ``writer(spec, trials, summary, out)`` in :mod:`.report`:
    imported when a run needs them, so that importing the package (as every worker does) loads
    no plotting or fitting code.
    """

    shared_lock = ".kclass_claims.lock"
    validator = plan_class = summarizer = writer = ""
    point_keys: tuple = ()

    def validate(self, cfg):
        return _experiments(self.validator)(cfg)

    def unkeyed(self, cfg) -> tuple:
        # each record's seed key names its point and trial, and its key column the method
        return tuple(f"{self.node}.{key}" for key in self.point_keys)

    def unread(self, cfg, spec=None) -> dict:
        return {"runner.path": Unread("the default (K-class trials draw every sample: they have no other path)")}

    def plan(self, spec):
        return _experiments(self.plan_class)(spec)

    def analyse(self, spec, trials) -> dict:
        return {"summary": _report(self.summarizer)(spec, trials)}

    def write(self, spec, trials, analysis, out: Path) -> None:
        _report(self.writer)(spec, trials, analysis["summary"], out)

    def write_shared(self, directory: Path) -> None:
        _report("write_claims")(directory)

    def announce(self, spec, analysis, out: Path) -> None:
        log.info((out / "accuracy.md").read_text())


class KClassKind(_AccuracyKind):
    name = node = "kclass"
    validator, plan_class, summarizer, writer = "validate_kclass", "KClassPlan", "summarize_kclass", "write_kclass"
    point_keys = ("K", "trials", "methods")


class DigitsKind(_AccuracyKind):
    name = node = "digits"
    validator, plan_class, summarizer, writer = "validate_digits", "DigitsPlan", "summarize_digits", "write_digits"
    point_keys = ("eps", "splits", "methods")


register(KClassKind())
register(DigitsKind())
