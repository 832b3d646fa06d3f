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

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent

# Modules that only present, store or route numbers.  Every other module of the
# package takes part in drawing or computing a trial, so editing it (even a
# comment: conservative on purpose) invalidates the stored trials.
PRESENTATION_MODULES = frozenset({"__init__.py", "__main__.py", "audit.py", "cli.py", "errors.py",
                                  "fit.py", "minimax_fit.py", "provenance.py", "report.py",
                                  "store.py"})
NUMERIC_MODULES = "every labeldp_sim/*.py except " + ", ".join(sorted(PRESENTATION_MODULES))
# Libraries whose algorithms or random streams the trials depend on.
NUMERIC_LIBRARIES = ("numpy", "scipy", "scikit-learn")
LIBRARIES = ("labeldp-sim", "numpy", "scipy", "pandas", "matplotlib", "hydra-core", "omegaconf",
             "joblib", "statsmodels", "tqdm", "scikit-learn")


def library_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def library_versions() -> dict:
    return {name: library_version(name) for name in LIBRARIES}


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 of the package version, the numeric libraries' versions and the numeric sources.

    The sources are :data:`NUMERIC_MODULES`, read as bytes; anything else
    (reports, fits, the CLI, the store) can change without invalidating trials.
    """
    digest = hashlib.sha256()
    from . import __version__

    digest.update(f"labeldp-sim {__version__}\n".encode())
    for name in NUMERIC_LIBRARIES:
        digest.update(f"{name} {library_version(name)}\n".encode())
    for source in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = source.relative_to(PACKAGE_DIR).as_posix()
        if relative in PRESENTATION_MODULES:
            continue
        digest.update(relative.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def config_key(parts: dict) -> str:
    """The key of every trial of one configuration: ``"c"`` + 16 hex digits.

    It hashes ``parts`` (everything that determines a trial's numbers apart from
    its grid point and replicate) and :func:`code_fingerprint`.  The leading
    letter keeps the key a string through any CSV round trip.
    """
    text = json.dumps({"config": parts, "code": code_fingerprint()}, sort_keys=True, default=str)
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


def provenance(seed: int, config_key_: str, overrides=None, **extra) -> dict:
    """Package and library versions, git commit, code fingerprint, seed, command line."""
    versions = library_versions()
    return {
        "package_version": versions.pop("labeldp-sim"),
        "git_commit": git_commit(),
        "code_fingerprint": code_fingerprint(),
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
