"""The wheel works outside the checkout: built from the sdist, installed into a folder of its own,
run from another folder, it reads the configuration it carries (``labeldp_sim/conf/``).

``pip install .`` once gave a ``labeldp-sim`` that crashed on ``--help``: ``conf/`` sat beside
the package in the checkout and was not shipped.  A test run from the checkout cannot see that
(the editable install reads the checkout's ``conf/``), so this one builds the sdist and, from it,
the wheel (as ``python -m build`` does), installs the wheel with ``pip install --target`` (no
network: the dependencies are this interpreter's own), and runs the README's sequence (help, a
small law-free run, its report, the audit's help) with the current directory outside the checkout
and ``PYTHONPATH`` naming only the install.  It checks that the package and the configuration
came from there, and that the runs wrote nothing into the install.  CI's ``.ci/run`` does the
same into a fresh virtual environment with the dependencies from the registry.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# what the sdist is made of: the files setup.py and pyproject.toml read, the package and conf/
SOURCES = ("pyproject.toml", "setup.py", "README.md", "MANIFEST.in", "labeldp_sim", "conf")
# a law-free run of one cell in seconds: d = 1, a few cube counts, three privacy levels (exact path)
LAW_FREE = ["experiment=reg_label_cdp", "mode=law_free", "law_free.d=[1]", "law_free.G_max={1:64}",
            "law_free.sweeps.eps.values=[1e-9,1e-8,1e-7]", "runner.n_jobs=1", "runner.progress=false",
            "paths.results_dir=runs/x"]
PROBE = "wheel_probe"  # an experiment only the installed copy of conf/ has


def _version(name: str) -> tuple:
    try:
        return tuple(int(part) for part in metadata.version(name).split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return ()


def _missing_build_tools() -> str | None:
    """Why this interpreter cannot build the wheel without the network, or None.

    ``pyproject.toml`` asks for setuptools>=68; its ``bdist_wheel`` comes with setuptools>=70.1,
    from the ``wheel`` package before that.
    """
    setuptools = _version("setuptools")
    if not setuptools or setuptools < (68, 0):
        return f"setuptools>=68 is needed to build the wheel (found {'.'.join(map(str, setuptools)) or 'none'})"
    if setuptools < (70, 1) and importlib.util.find_spec("wheel") is None:
        return "bdist_wheel is needed: setuptools>=70.1, or the wheel package beside an older setuptools"
    return None


def _build(tmp: Path) -> Path:
    """The wheel, built from the sdist of a copy of the sources (the checkout is not written to)."""
    source = tmp / "src"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        elif path.is_file():
            shutil.copy2(path, source / name)
    dist = tmp / "dist"
    if importlib.util.find_spec("build") is not None:  # the sdist, then the wheel from it
        command = [sys.executable, "-m", "build", "--no-isolation", "--skip-dependency-check",
                   "--outdir", str(dist), str(source)]
    else:
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist),
                   str(source)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = sorted(dist.glob("labeldp_sim-*.whl"))
    assert len(wheels) == 1, sorted(p.name for p in dist.iterdir())
    if command[2] == "build":
        assert len(list(dist.glob("labeldp_sim-*.tar.gz"))) == 1
    return wheels[0]


def _files(folder: Path) -> set:
    """Every file under ``folder`` but the bytecode caches that importing writes."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_wheel_runs_outside_the_checkout(tmp_path):
    reason = _missing_build_tools()
    if reason:
        pytest.skip(reason)
    wheel = _build(tmp_path)
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                           "--disable-pip-version-check", "--target", str(site), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (site / "labeldp_sim" / "conf" / "config.yaml").is_file()
    assert sorted(p.name for p in (site / "labeldp_sim" / "report" / "assets").iterdir()) == ["sort.js", "style.css"]
    assert not (site / "conf").exists() and not (site / "experiments").exists()
    # an experiment that only the installed configuration has: --help lists it if that one is read
    experiments = site / "labeldp_sim" / "conf" / "table1" / "experiment"
    probe = (experiments / "reg_label_cdp.yaml").read_text().replace("experiment_name: reg_label_cdp",
                                                                    f"experiment_name: {PROBE}")
    (experiments / f"{PROBE}.yaml").write_text(probe)
    installed = _files(site)

    work = tmp_path / "work"  # the current directory: outside the checkout and the install
    work.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "LABELDP_SIM_CONF_PATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(site)
    script = site / "bin" / "labeldp-sim"

    def run(*command):
        proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{command[1:]}: {proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        return proc.stdout

    where = run(sys.executable, "-c", "import labeldp_sim, labeldp_sim.harness.conf_path as c; "
                "print(labeldp_sim.__file__); print(c.CONF_DIR); print(labeldp_sim.__version__)").splitlines()
    assert Path(where[0]).resolve() == (site / "labeldp_sim" / "__init__.py").resolve()
    assert Path(where[1]).resolve() == (site / "labeldp_sim" / "conf").resolve()
    assert where[2] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

    assert PROBE in run(str(script), "--help")
    run(str(script), *LAW_FREE)
    assert (work / "runs" / "x" / "minimax" / "reg_label_cdp" / "points.csv").is_file()
    run(str(script), "report", "--results", "runs/x")
    assert (work / "runs" / "x" / "index.html").is_file()
    assert "--quick" in run(str(script), "audit", "--help")
    assert _files(site) == installed, "a command wrote into the install"


def test_a_source_tree_reads_its_own_conf():
    """Run from the checkout (in place or installed editable), the configuration is the checkout's
    ``conf/``, so that an edit there counts without a reinstall; the packaged copy is the wheel's."""
    import labeldp_sim
    from labeldp_sim.harness.conf_path import CONF_DIR

    if Path(labeldp_sim.__file__).resolve().parent != ROOT / "labeldp_sim":
        pytest.skip(f"labeldp_sim is imported from {labeldp_sim.__file__}, not from this checkout")
    assert CONF_DIR == ROOT / "conf"
    assert not (ROOT / "labeldp_sim" / "conf").exists(), "conf/ has one copy: the top-level one"
