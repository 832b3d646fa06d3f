"""Shared fixtures: compose configs with Hydra's compose API.

Importing ``labeldp_sim`` loads no paper: the tests load them all here, as
``labeldp-sim`` does, so that every experiment kind and component is registered.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from labeldp_sim.harness.cli import compose_job

from labeldp_sim.app import load_papers

load_papers()


@pytest.fixture
def make_cfg():
    """make_cfg(overrides) -> composed DictConfig (no Hydra app, no side effects)."""

    def _compose(overrides=()):
        return compose_job(list(overrides))

    return _compose


@pytest.fixture
def quick_plots(monkeypatch):
    """Figures replaced by a line of text: tests of the store and the export, not of plotting."""
    from labeldp_sim.report import figures as report
    from labeldp_sim.papers.table1 import report as table1_report

    # both files, each written whole, as save_figure writes them
    monkeypatch.setattr(report, "plot_rates",
                        lambda *a, **k: report.write_figure(Path(a[2]), lambda p: Path(p).write_text("figure\n")))
    monkeypatch.setattr(table1_report, "plot_exponents",
                        lambda t, path, task: report.write_figure(Path(path), lambda p: Path(p).write_text("x\n")))


# Monte Carlo (runner.path=sufficient): these tests are about trials, chunks and streams, not the exact path
SMALL_GRID = ["grid.reps=12", "grid.d=[1]", "runner.n_jobs=1", "runner.progress=false", "runner.path=sufficient"]
