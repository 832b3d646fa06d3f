"""The plug-in contract: every component declares exactly its parameters, and configs reach them.

Every module of the package is imported first, so that the registries hold
every component a paper defines (a component registers itself when its module
is imported).
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil

import pytest
from omegaconf import OmegaConf

import labeldp_sim
from labeldp_sim.harness.components import (AnyOf, Boolean, Component, Constraint, Interval, Nullable, Options, Text,
                                         WithNote, build, by_name, check_arguments, components)
from labeldp_sim.harness.conf_path import conf_file
from labeldp_sim.harness.config import GROUPS, group_options
from labeldp_sim.harness.errors import ConfigError


def _import_everything() -> None:
    for info in pkgutil.walk_packages(labeldp_sim.__path__, f"{labeldp_sim.__name__}."):
        if not info.name.endswith("__main__"):  # a __main__ module runs its command when imported
            importlib.import_module(info.name)


_import_everything()
REGISTERED = [(group, path, cls) for group, table in sorted(components().items())
              for path, cls in sorted(table.items())]


def _keyword_parameters(cls) -> set:
    signature = inspect.signature(cls.__init__)
    return {p.name for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"}


def test_every_paper_registers_components():
    groups = components()
    for group in ("distribution", "mechanism", "estimator"):
        assert groups.get(group), f"no {group} registered"


@pytest.mark.parametrize("group,path,cls", [pytest.param(*entry, id=entry[1]) for entry in REGISTERED])
def test_declared_parameters_are_the_keyword_parameters_of_init(group, path, cls):
    assert cls.group == group
    assert not any(p.kind is p.VAR_KEYWORD for p in inspect.signature(cls.__init__).parameters.values()), \
        "a component takes named parameters only: **kwargs cannot be declared"
    assert set(cls.parameters) == _keyword_parameters(cls)
    for name, constraint in cls.parameters.items():
        assert isinstance(constraint, Constraint), name
        assert constraint.describe() and "\n" not in constraint.describe(), name


def _yaml_names():
    for group in GROUPS:
        for path in sorted(conf_file(group, name) for name in group_options(group)):
            node = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
            if isinstance(node, dict) and "name" in node:
                yield pytest.param(group, path.stem, node, id=f"{group}/{path.stem}")


@pytest.mark.parametrize("group,option,node", list(_yaml_names()))
def test_every_yaml_names_a_registered_component_of_its_group_by_its_file_name(group, option, node):
    # one address: the option a user types (mechanism=laplace_cube) is the registered name, the label
    # of the outputs; a dotted _target_ would be a second one
    assert "_target_" not in node
    assert node["name"] == option
    assert option in by_name(group), f"{option} is not a registered concrete {group} component"


@pytest.mark.parametrize("group,path,cls", [pytest.param(*entry, id=entry[1]) for entry in REGISTERED])
def test_every_registered_component_has_a_name_a_config_can_use(group, path, cls):
    assert isinstance(cls.name, str) and cls.name, f"{path} is registered but no config can reach it"
    assert by_name(group)[cls.name] is cls


def test_every_object_group_has_yaml_options():
    groups = {param.values[0] for param in _yaml_names()}
    assert {"distribution", "mechanism", "estimator"} <= groups


# --------------------------------------------------------------------------- constraints


@pytest.mark.parametrize("constraint,text", [
    (Interval(float, 0, 1, closed="right"), "finite numbers in (0, 1]"),
    (Interval(float, 0, closed="neither"), "finite numbers > 0"),
    (Interval(int, 2), "integers >= 2"),
    (Interval(float, high=1, closed="left"), "finite numbers < 1"),
    (Interval(float), "finite numbers"),
    (Interval(int, 2, note="a power of 2"), "integers >= 2 (a power of 2)"),
    (Options("cos2", "linear_edge"), "cos2, linear_edge"),
    (Boolean(), "true, false"),
    (Text("a class name"), "a class name"),
    (Nullable(Interval(int, 1), "the theorem's law"), "null (the theorem's law) or integers >= 1"),
    (AnyOf(Interval(int, 1), Options("all")), "integers >= 1 or all"),
    (WithNote(Options("a", "b"), "why"), "a, b (why)"),
])
def test_constraint_descriptions(constraint, text):
    assert constraint.describe() == text


@pytest.mark.parametrize("constraint,good,bad", [
    (Interval(float, 0, 1, closed="right"), [1, 0.5, 1.0], [0, 0.0, 1.5, float("nan"), float("inf"), True, "0.5"]),
    (Interval(int, 2), [2, 10 ** 30], [1, 2.0, True, "3", None]),
    (Options("a", "b"), ["a"], ["c", None, True, ["a"]]),
    (Boolean(), [True, False], [1, 0, "true", None]),
    (Text(), ["x"], ["", None, 1]),
    (Nullable(Interval(int, 1)), [None, 3], [0, "x"]),
    (AnyOf(Interval(int, 1), Options("all")), [1, "all"], [0, "none"]),
])
def test_constraints_accept_and_refuse(constraint, good, bad):
    assert all(constraint.accepts(v) for v in good)
    assert not any(constraint.accepts(v) for v in bad)


# --------------------------------------------------------------------------- build


class Toy(Component):
    """A component of a group no paper uses, for the tests below (registered: its name has no "_")."""

    group = "test.toy"
    name = "toy"
    parameters = {"rate": Interval(float, 0, closed="neither"), "count": Interval(int, 1),
                  "shape": Options("round", "square"), "size": Nullable(Interval(int, 1))}

    def __init__(self, rate=1.0, count=1, shape="round", size=None):
        self.rate, self.count, self.shape, self.size = rate, count, shape, size


def _refusal(node, **kwargs) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        build("test.toy", {"name": "toy", **node}, **kwargs)
    assert "\n" not in str(err.value) and "allowed:" in str(err.value)
    return err.value


def test_build_passes_the_node_and_the_callers_arguments():
    toy = build("test.toy", {"name": "toy", "rate": 2.5}, supplied={"count": "the grid"}, count=4)
    assert (toy.rate, toy.count, toy.shape) == (2.5, 4, "round")


def test_build_refuses_an_unknown_key_naming_the_allowed_ones():
    err = _refusal({"colour": "red"})
    assert err.key == "test.toy.colour" and err.allowed == "name, rate, count, shape, size"


def test_build_refuses_nan_and_a_bool_for_an_integer():
    err = _refusal({"rate": math.nan})
    assert err.key == "test.toy.rate" and err.allowed == "finite numbers > 0"
    assert str(err).startswith("test.toy.rate: got nan; allowed: finite numbers > 0")
    err = _refusal({"count": True})
    assert err.key == "test.toy.count" and err.allowed == "integers >= 1"


def test_build_refuses_a_value_the_caller_supplies():
    err = _refusal({"count": 3}, supplied={"count": "grid.count"}, count=3)
    assert err.key == "test.toy.count" and "comes from grid.count" in err.allowed


def test_build_refuses_a_name_outside_the_group():
    for name in ("dict", "laplace", None):
        with pytest.raises(ConfigError) as err:
            build("test.toy", {"name": name})
        assert err.value.key == "test.toy.name" and "\n" not in str(err.value)
        assert err.value.allowed == "toy"


class _Planted(Toy):
    """An unregistered subclass (its name starts with "_", as mutants' and fixtures' do)."""

    name = "planted"


def test_an_unregistered_class_is_not_reachable_by_its_name():
    assert _Planted not in components("test.toy").values()
    with pytest.raises(ConfigError) as err:
        build("test.toy", {"name": "planted"})
    assert err.value.key == "test.toy.name" and err.value.allowed == "toy"


def test_two_classes_claiming_one_name_is_refused():
    class First(Component):
        group, name = "test.twins", "same"

    class Second(Component):
        group, name = "test.twins", "same"

    with pytest.raises(TypeError, match="'same' claimed by"):
        by_name("test.twins")


def test_check_arguments_reads_no_instance():
    class _Exploding(Component):
        group = "test.exploding"
        parameters = {"x": Interval(float, 0)}

        def __init__(self, x=0.0):
            raise AssertionError("validation must not build the class")

    check_arguments("test.exploding", _Exploding, {"x": 1.0})
    with pytest.raises(ConfigError, match="allowed: finite numbers >= 0"):
        check_arguments("test.exploding", _Exploding, {"x": -1.0})


def test_a_component_built_directly_checks_its_declared_parameters():
    from labeldp_sim.papers.table1.families import HolderBump

    with pytest.raises(ConfigError) as err:
        HolderBump(beta=1.5)
    assert err.value.key == "beta" and err.value.allowed == "finite numbers in (0, 1]"


# ---------------------------------------------------------------- declared capabilities

# each declared capability -> the methods it promises (what the exact paths and the memory model call)
CAPABILITIES = {
    "exact_cube_mean": ("cube_mean_moments",),
    "exact_report": ("report_moments",),
    "exact_choice": ("argmax_choice_law",),
    "exact_tilt_law": ("tilt_measure",),
    "exact_sign_average": ("sign_averaged_cubes", "sign_averaged_bias", "clipped_label_moments"),
    "exact_expected_error": ("expected_error",),
}


@pytest.mark.parametrize("group, path, cls", REGISTERED, ids=[p for _, p, _ in REGISTERED])
def test_declared_capabilities_are_the_methods_a_component_has(group, path, cls):
    """A capability flag is True exactly where the class has the methods it promises: the exact
    paths ask the flag and then call the methods, so a flag without them would fail mid-run and
    methods without the flag would silently fall back to Monte Carlo."""
    for flag, methods in CAPABILITIES.items():
        if flag in dir(cls):
            has = all(callable(getattr(cls, m, None)) for m in methods)
            # an expected_error that is not exact says what it leaves out (user-level SO's bound), never both
            approximate = bool(getattr(cls, "approximate_expected_error", "")) if flag == "exact_expected_error" else False
            assert getattr(cls, flag) is (has and not approximate), (path, flag, methods)
            assert not approximate or has, (path, "approximate_expected_error without expected_error")


def test_table1_estimators_declare_the_point_field_of_their_tuning():
    from labeldp_sim.papers.table1.estimators import Estimator
    from labeldp_sim.papers.table1.points import Point

    point = Point(experiment="x", axis="N", d=1, N=1000, eps=1.0, N_requested=1000.0, eps_requested=1.0, G=10, h=0.1,
                  in_regime=True, G_est=7, k=33.0)
    estimators = [cls for _, _, cls in REGISTERED if issubclass(cls, Estimator)]
    assert {cls.tuning for cls in estimators} == {"G_est", "k"}
    for cls in estimators:
        assert cls.tuning_at(cls.__new__(cls), point) == getattr(point, cls.tuning), cls


def test_code_packages_come_from_the_built_components():
    from labeldp_sim.harness.kinds import code_packages
    from labeldp_sim.papers.kclass.mechanisms import RandomizedResponse
    from labeldp_sim.papers.table1.estimators import CubeArgmax
    from labeldp_sim.privacy.rappor import RAPPOR

    plugin = type("Plugged", (), {"__module__": "mylab.mechanisms"})
    assert code_packages("table1", [CubeArgmax, RAPPOR]) == ("table1",)  # privacy is always hashed
    assert code_packages("table1", [CubeArgmax, RandomizedResponse]) == ("kclass", "table1")
    assert code_packages("userlevel", [plugin]) == ("mylab", "userlevel")
