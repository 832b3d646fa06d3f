"""Where numbers come from: the code fingerprint, config keys, git commit, library versions.

A stored trial is reused only under the same *config key*, and the config key
hashes the code that produces the numbers (:func:`code_fingerprint`), so a
change to that code recomputes instead of silently reusing old trials.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path

__all__ = ["code_fingerprint", "config_key", "git_commit", "library_versions", "provenance",
           "NUMERIC_MODULES", "NUMERIC_LIBRARIES"]

PACKAGE_DIR = Path(__file__).resolve().parents[1]
ROOT = PACKAGE_DIR.parent

# Modules that only present, store, route or validate numbers (paths relative to the
# package).  Every other module takes part in drawing or computing a trial, so editing
# it (even a comment: conservative on purpose) invalidates the stored trials.
PRESENTATION_MODULES = frozenset({
    "__init__.py", "__main__.py", "app.py",
    "core/__init__.py", "core/cli.py", "core/cluster.py", "core/config.py", "core/errors.py", "core/fit.py",
    "core/interrupts.py", "core/kinds.py",
    "core/provenance.py", "core/report.py", "core/store.py",
    "privacy/__init__.py",
    "table1/__init__.py", "table1/audit.py", "table1/kind.py", "table1/minimax_fit.py", "table1/report.py",
    "kclass/__init__.py", "kclass/audit.py", "kclass/claims.py", "kclass/kind.py", "kclass/report.py",
    "userlevel/__init__.py", "userlevel/audit.py", "userlevel/kind.py", "userlevel/report.py",
    "userlevel/theory.py",
})
# Folders whose every module is a presentation module (the privacy audit's subpackage).
PRESENTATION_FOLDERS = ("privacy/audit/",)
# What the trials of every paper share: the core and the privacy protocols.
SHARED_PACKAGES = ("core", "privacy")
NUMERIC_MODULES = ("labeldp_sim/{core,privacy}/*.py and the paper package's own modules, except "
                   + ", ".join(sorted(PRESENTATION_MODULES)) + " and every module under "
                   + ", ".join(PRESENTATION_FOLDERS))
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


@lru_cache(maxsize=8)
def code_fingerprint(package: str | tuple | None = None) -> str:
    """sha256 of the package version, the numeric libraries' versions and the numeric sources.

    The sources are :data:`NUMERIC_MODULES`: the shared core and privacy
    modules plus those of the paper packages named by ``package`` (one name,
    e.g. ``"table1"``, or a tuple of names; None hashes every package), read as bytes.  Anything else (reports, fits,
    the CLI, the store, other papers) can change without invalidating trials.
    """
    own = (package,) if isinstance(package, str) else tuple(package or ())
    digest = hashlib.sha256()
    from .. import __version__

    digest.update(f"labeldp-sim {__version__}\n".encode())
    for name in NUMERIC_LIBRARIES:
        digest.update(f"{name} {library_version(name)}\n".encode())
    for source in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = source.relative_to(PACKAGE_DIR).as_posix()
        top = relative.split("/")[0]
        if relative in PRESENTATION_MODULES or relative.startswith(PRESENTATION_FOLDERS) or (
                package is not None and "/" in relative and top not in (*SHARED_PACKAGES, *own)):
            continue
        digest.update(relative.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def config_key(parts: dict, package: str | tuple | None = None) -> str:
    """The key of every trial of one configuration: ``"c"`` + 16 hex digits.

    It hashes ``parts`` (everything that determines a trial's numbers apart from
    its grid point and replicate) and :func:`code_fingerprint` of ``package``.  The leading
    letter keeps the key a string through any CSV round trip.
    """
    text = json.dumps({"config": parts, "code": code_fingerprint(package)}, sort_keys=True, default=str)
    return "c" + hashlib.sha256(text.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def git_commit() -> str:
    """HEAD's commit, with ``+dirty`` when tracked files outside ``results/`` differ from it."""
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
