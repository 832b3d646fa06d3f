"""The K-class experiments of papers/002 as experiment kinds of the harness.

``kind: kclass`` (Figures 2-4: accuracy vs K on the Gaussian circle) and
``kind: digits`` (the same methods on scikit-learn's digits).
"""

from __future__ import annotations

from pathlib import Path

from ..core.kinds import ExperimentKind, register
from ..core.store import STORE_NAME, TrialStore, locked, staged

__all__ = ["KClassKind", "DigitsKind"]


class _AccuracyKind(ExperimentKind):
    """Accuracy per method through the store, then the summary, plot, table and claims."""

    def run(self, cfg, spec, overrides, subdir, export) -> dict:
        out = self.output_dir(spec, subdir)
        out.mkdir(parents=True, exist_ok=True)
        trials, stats = self.execute(spec, TrialStore(Path(spec.results_dir) / STORE_NAME))
        result = {}
        export(out, spec, stats, lambda: result.setdefault("summary", self.write(spec, trials, out)))
        if not subdir:
            from .report import write_claims

            with locked(Path(spec.results_dir), ".kclass_claims.lock"), staged(Path(spec.results_dir)):
                write_claims(Path(spec.results_dir))
        print((out / "accuracy.md").read_text())
        return {"trials": trials, "summary": result["summary"], "out": out, "run": stats}


class KClassKind(_AccuracyKind):
    name = node = "kclass"

    def validate(self, cfg):
        from .experiments import validate_kclass

        return validate_kclass(cfg)

    def execute(self, spec, store):
        from .experiments import run_kclass

        return run_kclass(spec, store)

    def write(self, spec, trials, out):
        from .report import write_kclass

        return write_kclass(spec, trials, out)


class DigitsKind(_AccuracyKind):
    name = node = "digits"

    def validate(self, cfg):
        from .experiments import validate_digits

        return validate_digits(cfg)

    def execute(self, spec, store):
        from .experiments import run_digits

        return run_digits(spec, store)

    def write(self, spec, trials, out):
        from .report import write_digits

        return write_digits(spec, trials, out)


register(KClassKind())
register(DigitsKind())
