"""Where numbers come from: the code fingerprint, config keys, git commit, library versions.

A stored trial is reused only under the same *config key*, and the config key
hashes the code that produces the numbers (:func:`code_fingerprint`), so a
change to that code recomputes instead of silently reusing old trials.

The core names no paper: a paper package says which of its modules only
present numbers in its ``paper`` module (``labeldp_sim.papers.<paper>.paper``), a
tuple ``PRESENTATION_MODULES`` of paths relative to the paper package (a path
ending in ``/`` names a folder).  It is read when a fingerprint is asked for,
not when this module is imported.

A package outside ``labeldp_sim`` (a plug-in: a paper loaded through
``LABELDP_SIM_PLUGINS``, or a module of components it imports) is fingerprinted the same way, under its import name: every
module of it, less those its own ``<name>.paper`` declares (:func:`package_of`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import pkgutil
import platform
import subprocess
import sys
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from labeldp_sim.harness import __version__

__all__ = ["code_fingerprint", "config_key", "git_commit", "library_versions", "provenance",
           "presentation_modules", "package_of", "paper_packages", "NUMERIC_MODULES", "NUMERIC_LIBRARIES"]

PACKAGE_DIR = Path(__file__).resolve().parents[1]
PACKAGE = __package__.rpartition(".")[0]  # labeldp_sim
ROOT = PACKAGE_DIR.parent
# The wing that holds one package per paper: labeldp_sim/papers/<paper>/.
PAPERS = "papers"
# The shared modules that only present, store, route, fit or validate numbers (paths relative to
# the package; a path ending in / is a folder).  Every other shared module (the harness's points,
# seeds and runner, the privacy protocols and laws) takes part in drawing or computing a trial, so
# editing it (even a comment: conservative on purpose) invalidates the stored trials.
SHARED_PRESENTATION = (
    "__init__.py", "__main__.py", "api.py", "app.py", f"{PAPERS}/__init__.py",
    "harness/__init__.py", "harness/cli.py", "harness/cli_help.py", "harness/cluster.py",
    "harness/components.py", "harness/conf_path.py", "harness/config.py", "harness/errors.py",
    "harness/interrupts.py", "harness/kinds.py", "harness/logs.py", "harness/memory.py",
    "harness/multirun.py", "harness/provenance.py", "harness/reads.py", "harness/run_folders.py",
    "harness/scheduler_probe.py", "harness/settings.py", "harness/store/", "harness/sweeps.py",
    "stats/", "report/", "privacy/__init__.py", "privacy/audit/",
)
# The module of a paper package that declares its presentation modules, and the name it uses.
DECLARATION, DECLARED = "paper", "PRESENTATION_MODULES"
NUMERIC_MODULES = ("labeldp_sim/{harness,privacy}/*.py and the paper package's own modules (a plug-in's: "
                   "every module of it), except " + ", ".join(SHARED_PRESENTATION) + " and the modules "
                   f"each paper declares in labeldp_sim/{PAPERS}/<paper>/{DECLARATION}.py (a plug-in: "
                   f"<name>/{DECLARATION}.py) ({DECLARED})")
# Libraries whose algorithms or random streams the trials depend on.
NUMERIC_LIBRARIES = ("numpy", "scipy", "scikit-learn")
LIBRARIES = ("labeldp-sim", "numpy", "scipy", "pandas", "matplotlib", "hydra-core", "omegaconf",
             "joblib", "dask", "distributed", "statsmodels", "tqdm", "scikit-learn")


def library_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def library_versions() -> dict:
    return {name: library_version(name) for name in LIBRARIES}


def paper_packages() -> tuple:
    """The paper packages' names: every subpackage of ``labeldp_sim.papers`` (found on disk)."""
    return tuple(sorted(info.name for info in pkgutil.iter_modules([str(PACKAGE_DIR / PAPERS)]) if info.ispkg))


def package_of(module: str) -> str | None:
    """The package whose code a class of ``module`` runs, as :func:`code_fingerprint` names it.

    ``table1`` for ``labeldp_sim.papers.table1.mechanisms``; None for the shared wings
    (harness, privacy...: always hashed) and the package's own top modules; the top-level
    package of any other module (``mylab`` for ``mylab.mechanisms``: a plug-in).
    """
    parts = module.split(".")
    if parts[0] == PACKAGE:
        return parts[2] if len(parts) > 3 and parts[1] == PAPERS else None
    return parts[0]


def presentation_modules(paper: str) -> tuple:
    """The presentation modules ``paper`` declares, as paths relative to the package.

    Read from ``labeldp_sim.papers.<paper>.paper`` (a plug-in's: ``<paper>.paper``; imported
    here, at call time); a paper without that module declares none, so every one of
    its modules counts.
    """
    own = paper in paper_packages()
    name = f"{PACKAGE}.{PAPERS}.{paper}.{DECLARATION}" if own else f"{paper}.{DECLARATION}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name != name:
            raise
        return ()
    prefix = f"{PAPERS}/{paper}/" if own else f"{paper}/"
    # optional attribute of a paper or plug-in package: the presentation modules it declares
    return tuple(prefix + path for path in getattr(module, DECLARED, ()))


def _presentation(relative: str, declared: tuple) -> bool:
    return any(relative == path or (path.endswith("/") and relative.startswith(path)) for path in declared)


@lru_cache(maxsize=8)
def code_fingerprint(package: str | tuple | None = None) -> str:
    """sha256 of the package version, the numeric libraries' versions and the numeric sources.

    The sources are :data:`NUMERIC_MODULES`: the shared core and privacy
    modules plus those of the paper packages named by ``package`` (one name,
    e.g. ``"table1"``, or a tuple of names; None hashes every package of
    ``labeldp_sim``; a name that is no paper of it is a plug-in's import name,
    whose modules are hashed too), read as bytes, less the presentation
    modules.  Anything else (reports, fits, the CLI, the store, other papers)
    can change without invalidating trials.
    """
    own = (package,) if isinstance(package, str) else paper_packages() if package is None else tuple(package)
    declared = SHARED_PRESENTATION + tuple(path for paper in own for path in presentation_modules(paper))
    digest = hashlib.sha256()
    digest.update(f"labeldp-sim {__version__}\n".encode())
    for name in NUMERIC_LIBRARIES:
        digest.update(f"{name} {library_version(name)}\n".encode())
    for source in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = source.relative_to(PACKAGE_DIR).as_posix()
        paper = relative.split("/")[1] if relative.startswith(f"{PAPERS}/") and relative.count("/") > 1 else None
        if _presentation(relative, declared) or (package is not None and paper is not None and paper not in own):
            continue
        digest.update(relative.encode() + b"\0" + source.read_bytes() + b"\0")
    plugins = sorted(set(own) - set(paper_packages()))
    for relative, source in (pair for name in plugins for pair in _plugin_sources(name)):
        if not _presentation(relative, declared):
            digest.update(relative.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _plugin_sources(name: str) -> list:
    """``(relative path, file)`` of every module of the plug-in ``name``, the paths as ``<name>/<path>``.

    Found from the imported module, or by its spec (a worker that has not imported it
    yet); a name that is neither a paper of the package nor importable is a
    programming error of the kind that declared it (ValueError).
    """
    module = sys.modules.get(name)
    if module is not None:
        # module introspection: a plain module has no __path__, a namespace package no __file__
        roots, origin = list(getattr(module, "__path__", None) or ()), getattr(module, "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise ValueError(f"code_fingerprint: {name!r} is neither a paper package of {PACKAGE} "
                             f"({', '.join(paper_packages())}) nor an importable module")
        roots, origin = list(spec.submodule_search_locations or ()), spec.origin
    if roots:
        return [(f"{name}/{source.relative_to(root).as_posix()}", source)
                for root in map(Path, roots) for source in sorted(root.rglob("*.py"))]
    return [(f"{name}/{Path(origin).name}", Path(origin))] if origin and origin.endswith(".py") else []


def config_key(parts: dict, package: str | tuple | None = None) -> str:
    """The key of every trial of one configuration: ``"c"`` + 16 hex digits.

    It hashes ``parts`` (everything that determines a trial's numbers apart from
    its grid point and replicate) and :func:`code_fingerprint` of ``package``.  The leading
    letter keeps the key a string through any CSV round trip.
    """
    text = json.dumps({"config": parts, "code": code_fingerprint(package)}, sort_keys=True, default=str)
    return "c" + hashlib.sha256(text.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def source_tree() -> bool:
    """Whether the package runs from its source tree (in place, or installed editable): the folder
    above it holds ``pyproject.toml`` and ``conf/config.yaml``.  An installed package's parent is
    ``site-packages``, which has neither."""
    return (ROOT / "pyproject.toml").is_file() and (ROOT / "conf" / "config.yaml").is_file()


def git_commit() -> str:
    """HEAD's commit, with ``+dirty`` when tracked files outside ``results/`` differ from it.

    Only for a source tree (the package beside its ``conf/``, run in place or installed editable):
    an installed wheel's folder may sit inside some other checkout (a venv in a repository), whose
    commit says nothing about this code: ``installed``.
    """
    if not source_tree():
        return "installed"
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        # outputs being rewritten by this very sweep do not make the code dirty
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)results"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def provenance(seed: int, config_key_: str, overrides=None, package: str | tuple | None = None, **extra) -> dict:
    """Package and library versions, git commit, code fingerprint, seed, command line."""
    versions = library_versions()
    return {
        "package_version": versions.pop("labeldp-sim"),
        "git_commit": git_commit(),
        "code_fingerprint": code_fingerprint(package),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": versions,
        "seed": seed,
        "config_key": config_key_,
        "command": " ".join(sys.argv),
        "overrides": list(overrides or []),
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }
