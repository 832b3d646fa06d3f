"""The public API and the plug-in contract have numpydoc docstrings whose Examples run.

Checked with ``numpydoc.validate.validate`` for a stated set of checks (:data:`CHECKS`):
GL08 (a docstring), PR01 (every parameter documented), PR02 (no unknown parameter), RT01 (a
Returns section, for a function that returns), EX01 (an Examples section); then each object's
Examples run as doctests, and any failure fails.
"""

from __future__ import annotations

import doctest
import importlib

import pytest
from numpydoc.validate import validate

import labeldp_sim.app  # noqa: F401 - the papers' modules import it

CHECKS = ("GL08", "PR01", "PR02", "RT01", "EX01")

OBJECTS = [
    "labeldp_sim.api.run", "labeldp_sim.api.compose", "labeldp_sim.api.Result", "labeldp_sim.api.Result.read",
    "labeldp_sim.harness.components.Component", "labeldp_sim.harness.components.Constraint",
    "labeldp_sim.harness.components.Interval", "labeldp_sim.harness.components.Options",
    "labeldp_sim.harness.components.Boolean", "labeldp_sim.harness.components.Text",
    "labeldp_sim.harness.components.Nullable", "labeldp_sim.harness.components.WithNote",
    "labeldp_sim.harness.components.AnyOf", "labeldp_sim.harness.components.build",
    "labeldp_sim.harness.components.by_name", "labeldp_sim.harness.components.component_class",
    "labeldp_sim.harness.components.check_arguments", "labeldp_sim.harness.components.instantiate",
    "labeldp_sim.harness.kinds.JobSpec", "labeldp_sim.harness.kinds.ExperimentKind",
    "labeldp_sim.harness.kinds.register", "labeldp_sim.harness.kinds.code_packages",
    "labeldp_sim.privacy.protocols.Mechanism", "labeldp_sim.privacy.protocols.LocalMechanism",
    "labeldp_sim.privacy.protocols.CubeSumMechanism", "labeldp_sim.privacy.protocols.NoisyLabel",
    "labeldp_sim.privacy.protocols.CentralMechanism", "labeldp_sim.privacy.protocols.CubeData",
    "labeldp_sim.privacy.protocols.audit_recipe",
    "labeldp_sim.papers.table1.families.base.Family", "labeldp_sim.papers.table1.estimators.base.Estimator",
    "labeldp_sim.papers.userlevel.randomizer.UserRandomizer",
]

# the plug-in contract's objects whose docstrings still lack sections (PR01, EX01...): listed
# so that each one completed must leave this list (strict xfail)
PENDING: set = set()
CHECKED = [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="docstring incomplete"))
           if name in PENDING else name for name in OBJECTS]


def _resolve(name: str):
    module, _, attr = name.rpartition(".")
    try:
        owner = importlib.import_module(module)
    except ModuleNotFoundError:  # a method: Class.method
        return vars(_resolve(module))[attr]
    return vars(owner)[attr]


@pytest.mark.parametrize("name", CHECKED)
def test_numpydoc_docstring(name):
    errors = [f"{code}: {message}" for code, message in validate(name)["errors"] if code in CHECKS]
    assert not errors, f"{name}: " + "; ".join(errors)


@pytest.mark.parametrize("name", OBJECTS)
def test_examples_run(name):
    obj = _resolve(name)
    obj = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
    module = importlib.import_module(obj.__module__)
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(obj, name, module=module, globs=dict(vars(module))):
        runner.run(test)
    assert runner.failures == 0, f"{name}: {runner.failures} failing example(s)"
