"""The labeldp-sim application: the harness core with every paper package plugged in.

The core (:mod:`labeldp_sim.core`) knows no paper; importing a paper package
registers its experiment kinds, and importing its ``audit`` module registers its
audit recipes (only ``labeldp-sim audit`` needs them, so they stay out of every
run's and every worker's start-up).  This module is the one place that lists
the papers — add a paper here.
"""

from __future__ import annotations

import importlib

from .core import interrupts

# The package imports this module before it loads the papers (numpy, pandas, Hydra...):
# in a ``labeldp-sim`` process, a Ctrl-C or SIGTERM from here on gives one line, not a traceback.
interrupts.install_for_cli()

PAPERS = ("labeldp_sim.table1", "labeldp_sim.kclass", "labeldp_sim.userlevel")


def load_papers() -> None:
    """Register every paper's experiment kinds."""
    for name in PAPERS:
        importlib.import_module(name)


def load_audits() -> None:
    """Register every paper's audit recipes (``<paper>.audit``)."""
    for name in PAPERS:
        importlib.import_module(f"{name}.audit")


def _audit(argv: list) -> int:
    """``labeldp-sim audit [options]``: the privacy audit of every registered mechanism."""
    load_audits()
    from .privacy.audit import main as audit

    return audit(argv)


def main(argv: list | None = None) -> None:
    """Entry point of ``python -m labeldp_sim`` and ``labeldp-sim``.

    SIGINT and SIGTERM end it with one line and exit status 130 (143), at any
    instant (:mod:`labeldp_sim.core.interrupts`).
    """
    load_papers()
    from .core.cli import main as cli_main

    try:
        cli_main(argv, commands={"audit": _audit})
    except SystemExit as err:
        if not interrupts.is_cli():
            raise
        interrupts.leave(err.code)
    interrupts.leave(0)  # the labeldp-sim process: exits here (os._exit), past the interpreter's teardown
