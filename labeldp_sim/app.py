"""The labeldp-sim application: the harness core with every paper package plugged in.

The harness (:mod:`labeldp_sim.harness`) knows no paper, and importing ``labeldp_sim``
loads none.  The papers are the subpackages of :mod:`labeldp_sim.papers`, found on
disk (:func:`papers`): a new paper is a new subpackage there, with no edit here.  Importing a paper package registers its
experiment kinds and components; importing its ``audit`` module, where it has
one, registers its audit recipes (only ``labeldp-sim audit`` needs them, so
they stay out of every run's and every worker's start-up).

Papers and mechanisms may also live outside the repository:
``LABELDP_SIM_PLUGINS`` names further packages (comma-separated importable
module names, imported after the built-in papers, :func:`plugins`), and
``LABELDP_SIM_CONF_PATH`` further config directories
(:mod:`labeldp_sim.harness.conf_path`).  A bad value of either ends the program
with one line naming the variable, and exit status 2, before anything else.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys

from labeldp_sim.harness import interrupts
from labeldp_sim.harness.logs import get_logger

# The package imports this module's parent first; in a ``labeldp-sim`` process, a Ctrl-C or
# SIGTERM from here on (numpy, pandas, Hydra and the papers loading) gives one line, not a traceback.
interrupts.install_for_cli()

__all__ = ["PLUGINS_VARIABLE", "papers", "plugins", "load_papers", "load_audits", "load_sites", "main"]

PLUGINS_VARIABLE = "LABELDP_SIM_PLUGINS"
MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
PLUGINS_ALLOWED = ("comma-separated importable module names (e.g. mylab.toy_paper; the folder that holds "
                   "them on PYTHONPATH)")


def papers() -> tuple:
    """The paper packages' full names (``labeldp_sim.papers.kclass``, ``labeldp_sim.papers.table1``...), sorted."""
    from labeldp_sim.harness.provenance import paper_packages

    return tuple(f"{__package__}.papers.{name}" for name in paper_packages())


def plugins() -> tuple:
    """The plug-in packages ``LABELDP_SIM_PLUGINS`` names, in its order (checked, not imported).

    Raises
    ------
    ConfigError
        A name that is not a module name, or that no module on ``sys.path`` has.
    """
    from labeldp_sim.harness.errors import ConfigError

    names = []
    for name in (part.strip() for part in os.environ.get(PLUGINS_VARIABLE, "").split(",")):
        if not name or name in names:
            continue
        if not MODULE_NAME.fullmatch(name) or not _importable(name):
            raise ConfigError(PLUGINS_VARIABLE, name, PLUGINS_ALLOWED + (
                "; this one is not a module name" if not MODULE_NAME.fullmatch(name)
                else f"; no module {name} on sys.path"))
        names.append(name)
    return tuple(names)


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent package that does not exist (or is not a package)
        return False


def load_papers() -> None:
    """Register every paper's experiment kinds (and its components): the built-in papers, then the plug-ins."""
    for name in (*papers(), *plugins()):
        importlib.import_module(name)


def load_audits() -> None:
    """Register every paper's audit recipes (``<paper>.audit``, for the papers and plug-ins that have one)."""
    _load_submodules("audit")


def load_sites() -> None:
    """Register every paper's parts of the HTML report (``<paper>.site``, for those that have one)."""
    _load_submodules("site")


def _load_submodules(submodule: str) -> None:
    load_papers()
    for name in (*papers(), *plugins()):
        if _is_package(name) and importlib.util.find_spec(f"{name}.{submodule}") is not None:
            importlib.import_module(f"{name}.{submodule}")


def _is_package(name: str) -> bool:
    # a plug-in may be one module rather than a package: only a package (it has __path__) has submodules
    return hasattr(sys.modules.get(name) or importlib.import_module(name), "__path__")


def _audit(argv: list) -> int:
    """``labeldp-sim audit [options]``: the privacy audit of every registered mechanism."""
    load_audits()
    from labeldp_sim.privacy.audit import main as audit

    return audit(argv)


def _report(argv: list) -> int:
    """``labeldp-sim report [--results DIR]``: results/index.html and the experiment pages.

    The arguments are checked before any paper's site module loads: a bad one is one line
    and exit status 2 (:func:`~labeldp_sim.harness.cli.report_arguments`).
    """
    from labeldp_sim.harness.cli import report_arguments
    from labeldp_sim.harness.errors import ConfigError

    try:
        argv = report_arguments(argv)
    except ConfigError as err:
        get_logger("app").error(f"labeldp-sim report: error: {err}")
        return 2
    load_sites()
    from labeldp_sim.report.build import main as report

    return report(argv)


def _load() -> None:
    """The config directories checked and the papers loaded, or one line and exit status 2."""
    from labeldp_sim.harness.conf_path import conf_dirs
    from labeldp_sim.harness.errors import ConfigError

    try:
        conf_dirs()
        load_papers()
    except ConfigError as err:
        get_logger("app").error(f"labeldp-sim: error: {err}")
        raise SystemExit(2) from None


def main(argv: list | None = None) -> None:
    """Entry point of ``python -m labeldp_sim`` and ``labeldp-sim``.

    SIGINT and SIGTERM end it with one line and exit status 130 (143), at any
    instant (:mod:`labeldp_sim.harness.interrupts`).
    """
    try:
        _load()
        from labeldp_sim.harness.cli import main as cli_main

        cli_main(argv, commands={"audit": _audit, "report": _report})
    except SystemExit as err:
        if not interrupts.is_cli():
            raise
        interrupts.leave(err.code)
    interrupts.leave(0)  # the labeldp-sim process: exits here (os._exit), past the interpreter's teardown
