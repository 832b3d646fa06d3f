"""The documentation site's generated references (docs/_ext/labeldp_reference.py), without Sphinx.

``make docs`` builds the whole site (warnings are errors); this checks, in seconds, that the
configuration reference names every config group and option, and that the component reference
names every registered component of every group with each of its declared parameters.
"""

import importlib.util
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[1] / "docs" / "_ext" / "labeldp_reference.py"


@pytest.fixture(scope="module")
def reference():
    pytest.importorskip("yaml")
    spec = importlib.util.spec_from_file_location("labeldp_reference", EXTENSION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_reference_lists_every_group_and_option(reference):
    from labeldp_sim.harness import components, conf_path

    text = reference.config_reference()  # loads every paper and component module
    for group in conf_path.config_groups():
        assert f"Group ``{group}``" in text
        for option in conf_path.group_options(group):
            # experiments are rows of their paper's table, other options headings of their own
            assert (f"``{option}``" if group == "experiment" else f"``{group}={option}``") in text
        for name, cls in components.by_name(group).items():
            if name in conf_path.group_options(group):
                for parameter in cls.parameters:
                    assert f"``{parameter}``" in text


def test_component_reference_lists_every_registered_component(reference):
    from labeldp_sim.harness import components

    text = reference.components_reference()
    groups = components.components()
    assert {"mechanism", "estimator", "distribution", "kclass.method", "userlevel.randomizer"} <= set(groups)
    for group, table in groups.items():
        assert f"Group ``{group}``" in text
        for cls in table.values():
            section = text.split(f"``{cls.name}``: {cls.__qualname__}\n", 1)[1].split("\nGroup ``", 1)[0]
            assert f"{cls.__module__}.{cls.__qualname__}" in section
            for parameter, constraint in cls.parameters.items():
                assert f"``{parameter}``" in section
