"""The one packaging rule ``pyproject.toml`` cannot declare: the package list plus ``labeldp_sim.conf``.

The repository keeps its configuration at the top, in ``conf/`` (one copy, the one Hydra and the
docs point at).  An installed labeldp-sim has no checkout around it, so the wheel carries that
folder inside the package, as ``labeldp_sim/conf/``: ``pyproject.toml`` maps the package
``labeldp_sim.conf`` onto ``conf/`` (``[tool.setuptools.package-dir]``) and ships its YAML files
(``[tool.setuptools.package-data]``); :mod:`labeldp_sim.harness.conf_path` reads the checkout's
``conf/`` in a source tree (an editable install included) and the packaged copy otherwise.

Declaring ``packages`` in ``pyproject.toml`` allows either a fixed list or a search
(``packages.find``), not a search plus one mapped folder, and a fixed list would have to be edited
for every new paper package: hence this file, which only adds that package to the search.
"""

from setuptools import find_namespace_packages, setup

# Every folder of the package and of conf/ is listed, data folders (report/assets/, conf/runner/...)
# included: setuptools treats any folder under a package as a package, and warns of each one the
# list lacks.  Their files are package data (pyproject.toml), found by the globs of their parents.
PACKAGES = find_namespace_packages(include=["labeldp_sim", "labeldp_sim.*"], exclude=["*.__pycache__"])
CONF_PACKAGES = ["labeldp_sim.conf", *(f"labeldp_sim.conf.{name}" for name in find_namespace_packages(where="conf"))]

setup(packages=[*PACKAGES, *CONF_PACKAGES])
