"""Where configs come from: ``conf/``, each paper's ``conf/<paper>/``, then ``LABELDP_SIM_CONF_PATH``.

``conf/`` (:data:`CONF_DIR`) is the checkout's top-level folder when labeldp-sim runs from a
source tree (an editable install included), and the copy the wheel ships inside the package
(``labeldp_sim/conf/``) when it is installed: the repository keeps one copy, which the build maps
into the wheel (``setup.py``, ``pyproject.toml``), so that ``labeldp-sim`` works from any folder.

``conf/`` mirrors the package: the root config and the groups every paper shares
(``runner/``) sit at its top, and each paper package of ``labeldp_sim.papers``
(:func:`~labeldp_sim.harness.provenance.paper_packages`) has its configs in
``conf/<paper>/``, laid out like ``conf/`` (one folder per config group:
``experiment/``, ``mechanism/``...).  The paper folders are found from the
discovered packages, never named here, so the harness stays paper-free.

A researcher adds a mechanism, an experiment or a whole paper's configs without
editing the repository: ``LABELDP_SIM_CONF_PATH`` names further directories
(separated by ``os.pathsep``, ``:`` on POSIX), each laid out like a paper folder.
Every reader of configs goes through here, so they all see the same files:
composition (Hydra's ``hydra.searchpath``, :func:`search_path_override`), the
option lists of the groups (:func:`group_options`, the CLI's checks and
messages) and the code that loads one YAML of a group (:func:`conf_file`: the
Table I groups' checks, the privacy audit's mechanism configs).

Hydra searches the directories in order and takes the first file it finds, so an
option of an extra directory that an earlier directory already has would be
silently hidden: it is refused instead, as is a directory that does not exist or
that holds YAML files at its top but no group folder (the folder of one group
named instead of its parent).  The variable is read when asked
(:func:`conf_dirs`); a bad one is one :class:`~labeldp_sim.harness.errors.ConfigError`
line naming it.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.harness.provenance import ROOT, paper_packages, source_tree

__all__ = ["CONF_DIR", "CONF_PATH_VARIABLE", "GROUPS", "conf_dirs", "conf_file", "config_groups",
           "group_options", "paper_conf_dirs", "search_path_override", "top_config", "hydra_quoted"]

CONF_PATH_VARIABLE = "LABELDP_SIM_CONF_PATH"


def _package_conf_dir() -> Path:
    """The package's own configuration: the checkout's ``conf/`` in a source tree, else the copy
    the wheel ships as ``labeldp_sim/conf/``.

    The repository keeps one copy, at its top (``setup.py`` maps it into the wheel), so a source
    tree (run in place, or installed editable) must read that one: an edit of ``conf/`` then
    counts at once, with no reinstall.  A source tree is recognised by its ``pyproject.toml``
    beside ``conf/config.yaml``, next to the package folder: an installed package's parent is
    ``site-packages``, which has neither.

    Returns
    -------
    Path
        The folder that holds ``config.yaml``, the shared groups and the paper folders.

    Raises
    ------
    FileNotFoundError
        Neither holds ``config.yaml`` (a wheel built without its configuration, or a damaged
        install): said here, at import, rather than as a missing file deep inside Hydra.
    """
    checkout = ROOT
    if source_tree():
        return checkout / "conf"
    packaged = Path(__file__).resolve().parents[1] / "conf"
    if not (packaged / "config.yaml").is_file():
        raise FileNotFoundError(f"labeldp-sim's configuration is missing: neither {checkout / 'conf'} (a source "
                                f"tree) nor {packaged} (an installed wheel) holds config.yaml; reinstall the package")
    return packaged


CONF_DIR = _package_conf_dir()


def paper_conf_dirs() -> tuple:
    """``conf/<paper>/`` of every paper package that has one, in the packages' order."""
    return tuple(CONF_DIR / name for name in paper_packages() if (CONF_DIR / name).is_dir())


def _groups(directory: Path) -> set:
    return {p.name for p in directory.iterdir() if p.is_dir()}


# the package's own config groups, one YAML per choice: the shared ones of conf/ (a paper's folder is
# not a group) and those of the paper folders
GROUPS = tuple(sorted((_groups(CONF_DIR) - {d.name for d in paper_conf_dirs()}).union(
    *(_groups(d) for d in paper_conf_dirs()))))
LAYOUT = (f"existing directories separated by {os.pathsep!r}, each laid out like a paper's conf/<paper>/ "
          "(a folder per config group: mechanism/, experiment/...)")


def conf_dirs() -> tuple:
    """The config directories in the order composition searches them: ``conf/``, the paper folders
    (:func:`paper_conf_dirs`), then the extra ones.

    Raises
    ------
    ConfigError
        ``LABELDP_SIM_CONF_PATH`` names something that is not a directory laid out
        like a paper folder, or an option that an earlier directory already has.
    """
    return _conf_dirs(os.environ.get(CONF_PATH_VARIABLE, ""))


@lru_cache(maxsize=8)
def _conf_dirs(value: str) -> tuple:
    dirs = [CONF_DIR, *paper_conf_dirs()]
    for entry in value.split(os.pathsep):
        if not entry.strip():  # an empty entry (a trailing separator) adds nothing
            continue
        path = Path(entry).expanduser()
        if not path.is_dir():
            raise ConfigError(CONF_PATH_VARIABLE, entry, f"{LAYOUT}; this one is not a directory")
        path = path.resolve()
        if path in dirs:
            continue
        loose = sorted(p.name for p in path.glob("*.yaml"))
        options = sorted(path.glob("*/*.yaml"))
        # YAML files at the top beside group folders are a paper's own configs (its experiments' base);
        # without any group folder the directory is one group's folder, named instead of its parent
        if loose and not options:
            raise ConfigError(CONF_PATH_VARIABLE, entry, f"{LAYOUT}; this one holds {loose[0]} at its top "
                              "(name the folder that holds mechanism/, experiment/..., not one group's folder)")
        for yaml in [*sorted(path.glob("*.yaml")), *options]:
            relative = yaml.relative_to(path)
            earlier = next((d for d in dirs if (d / relative).is_file()), None)
            if earlier is not None:
                raise ConfigError(CONF_PATH_VARIABLE, entry, f"{LAYOUT}, adding options of their own: "
                                  f"{relative.as_posix()} is already in {earlier} (rename the option {yaml.stem})")
        dirs.append(path)
    return tuple(dirs)


def config_groups() -> tuple:
    """The config groups of every config directory (the package's :data:`GROUPS` and any a plug-in adds)."""
    papers = {d.name for d in paper_conf_dirs()}
    return tuple(sorted({g for d in conf_dirs() for g in _groups(d) if d != CONF_DIR or g not in papers}))


def group_options(group: str) -> list[str]:
    """Names of the YAML files of one config group, in every config directory."""
    return sorted({p.stem for d in conf_dirs() for p in (d / group).glob("*.yaml")})


def conf_file(group: str, option: str) -> Path:
    """The YAML file of ``option`` of ``group``: the one composition reads (the first directory of
    :func:`conf_dirs` that holds it).

    An option no directory holds gives its path under ``conf/`` (which does not exist).
    """
    name = f"{option}.yaml"
    return next((d / group / name for d in conf_dirs() if (d / group / name).is_file()), CONF_DIR / group / name)


def top_config(name: str) -> Path:
    """The config ``/<name>`` of a defaults list (a YAML file at the top of a config directory, such
    as ``conf/table1/table1.yaml``): the one composition reads, the first directory of
    :func:`conf_dirs` that holds it.  None holds it: its path under ``conf/`` (which does not exist).
    """
    file = f"{name.strip('/')}.yaml"
    return next((d / file for d in conf_dirs() if (d / file).is_file()), CONF_DIR / file)


def search_path_override() -> list[str]:
    """The Hydra override that adds the paper folders and the extra config directories to composition."""
    extra = conf_dirs()[1:]
    return ["hydra.searchpath=[" + ",".join(hydra_quoted(f"file://{d}") for d in extra) + "]"]


def hydra_quoted(text: str) -> str:
    """``text`` as a single-quoted string of Hydra's override grammar: a quote is escaped, and so are
    the backslashes before a quote or at the end (the only ones the grammar reads as escapes)."""
    text = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", text)
    text = re.sub(r"(\\+)$", lambda m: m.group(1) * 2, text)
    return f"'{text}'"
