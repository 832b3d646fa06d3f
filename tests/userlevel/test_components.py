"""User-level families and estimators under the plug-in contract: registries and declared parameters."""

from __future__ import annotations

import inspect

import pytest

from labeldp_sim.harness.components import Interval, Nullable, by_name, components
from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.papers.userlevel import families, learning, mean
from labeldp_sim.papers.userlevel.contract import ESTIMATOR_GROUP, FAMILY_GROUP

FAMILIES = {**families.FAMILIES, **learning.FAMILIES}
ESTIMATORS = {**mean.ESTIMATORS, **learning.ESTIMATORS}
CLASSES = [*FAMILIES.values(), *ESTIMATORS.values()]

# values the probes try on every parameter
PROBES = (-2.0, -1, -0.5, 0, 0.25, 0.5, 1, 1.5, 2, 3.0, 7, 1e9, None, "kashin", "linf", "x")
# (class name, parameter, value): accepted by the constraint of one parameter, refused by the
# __init__ through another one it is tied to (the defaults of the others are used)
TIED = ({("LinearMargin", "hi", v) for v in (0, 0.25)} | {("LinearMargin", "lo", 1)}
        | {("Thm10Hard", "gamma", v) for v in (1.5, 2, 3.0, 7, 1e9)})


def _init_parameters(cls) -> dict:
    sig = inspect.signature(cls.__init__)
    return {name: p.default for name, p in list(sig.parameters.items())[1:]}


def _ours(table: dict) -> dict:
    """The entries of a registry that this package defines (a test may register toys of its own)."""
    return {key: cls for key, cls in table.items() if cls.__module__.startswith("labeldp_sim.papers.userlevel.")}


def test_the_registries_list_every_family_and_estimator_by_its_name():
    assert _ours(by_name(FAMILY_GROUP)) == FAMILIES
    assert _ours(by_name(ESTIMATOR_GROUP)) == ESTIMATORS
    # the abstract bases and the private shared classes are not offered
    listed = set(_ours(components(FAMILY_GROUP)).values()) | set(_ours(components(ESTIMATOR_GROUP)).values())
    assert listed == set(CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_parameters_declare_exactly_the_init_keywords_and_accept_their_defaults(cls):
    init = _init_parameters(cls)
    assert set(cls.parameters) == set(init), cls.__name__
    for name, default in init.items():
        assert cls.parameters[name].accepts(default), (cls.__name__, name, default)
    cls()  # the defaults build


def _init_accepts(cls, name, value) -> bool:
    try:
        cls(**{name: value})
    except ConfigError:
        return False
    return True


def _integral_float(constraint, value) -> bool:
    """An integral float for an integer parameter: the __init__ takes 3.0 for 3, YAML never gives one."""
    inner = constraint.inner if isinstance(constraint, Nullable) else constraint
    return isinstance(inner, Interval) and inner.kind is int and isinstance(value, float) and value.is_integer()


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_declared_constraint_accepts_what_the_init_accepts(cls):
    """Read without building anything, the constraints say what ``cls(**{name: value})`` does."""
    for name, constraint in cls.parameters.items():
        for value in PROBES:
            declared = constraint.accepts(value)
            if (cls.__name__, name, value) in TIED:
                assert declared and not _init_accepts(cls, name, value)
            elif not _integral_float(constraint, value):
                assert declared == _init_accepts(cls, name, value), (cls.__name__, name, value)
