"""The labeldp-sim application: the harness core with every paper package plugged in.

The core (:mod:`labeldp_sim.core`) knows no paper, and importing ``labeldp_sim``
loads none.  The papers are the package's subpackages other than the shared
``core`` and ``privacy``, found on disk (:func:`papers`): a new paper is a new
subpackage, with no edit here.  Importing a paper package registers its
experiment kinds and components; importing its ``audit`` module, where it has
one, registers its audit recipes (only ``labeldp-sim audit`` needs them, so
they stay out of every run's and every worker's start-up).
"""

from __future__ import annotations

import importlib
import importlib.util

from .core import interrupts

# The package imports this module's parent first; in a ``labeldp-sim`` process, a Ctrl-C or
# SIGTERM from here on (numpy, pandas, Hydra and the papers loading) gives one line, not a traceback.
interrupts.install_for_cli()

__all__ = ["papers", "load_papers", "load_audits", "main"]


def papers() -> tuple:
    """The paper packages' full names (``labeldp_sim.kclass``, ``labeldp_sim.table1``...), sorted."""
    from .core.provenance import paper_packages

    return tuple(f"{__package__}.{name}" for name in paper_packages())


def load_papers() -> None:
    """Register every paper's experiment kinds (and its components)."""
    for name in papers():
        importlib.import_module(name)


def load_audits() -> None:
    """Register every paper's audit recipes (``<paper>.audit``, for the papers that have one)."""
    load_papers()
    for name in papers():
        if importlib.util.find_spec(f"{name}.audit") is not None:
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
