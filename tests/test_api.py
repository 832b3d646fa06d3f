"""The Python API (docs/python.md): run, compose, Result, the reprs and the rng contract."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import signal
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from omegaconf import DictConfig

import labeldp_sim
from labeldp_sim.harness.components import Component, components
from labeldp_sim.privacy.protocols import CentralMechanism, CubeData, CubeSumMechanism, LocalMechanism

TINY = ["grid.d=[1]", "grid.reps=2", "grid.sweeps.N.values=[1000,2000,4000]", "grid.sweeps.eps.values=[0.5,1.0]",
        "grid.sweeps.eps.N=1000", "runner.backend=sequential"]


def _import_everything() -> None:
    for info in pkgutil.walk_packages(labeldp_sim.__path__, f"{labeldp_sim.__name__}."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


_import_everything()


def _registered(group: str) -> list:
    return [cls for _, cls in sorted(components(group).items())]


# ------------------------------------------------------------------ run, compose, Result

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    return labeldp_sim.run("cls_label_ldp", TINY, results_dir=tmp_path_factory.mktemp("results"))


def test_run_returns_the_tables_of_the_cell(tiny_run):
    result = tiny_run
    assert result.directory.is_dir() and result.directory.name == "cls_label_ldp"
    assert (result.directory / "config.yaml").is_file()
    assert {"fit", "summary", "trials"} <= set(result.tables)
    assert all(isinstance(frame, pd.DataFrame) for frame in result.tables.values())
    assert {"axis", "d", "slope", "ci_low", "ci_high", "theory", "verdict"} <= set(result.fits.columns)
    assert {"axis", "N", "eps", "mean", "se", "in_regime"} <= set(result.points.columns)
    assert list(result.verdicts.axis) == ["N", "eps"] and "verdict" in result.verdicts
    assert result.spec.name == "cls_label_ldp"
    assert "cls_label_ldp" in repr(result)


def test_run_again_reuses_the_store_and_gives_the_same_tables(tiny_run):
    again = labeldp_sim.run("cls_label_ldp", TINY, results_dir=tiny_run.directory.parent)
    pd.testing.assert_frame_equal(again.points.drop(columns="seconds"), tiny_run.points.drop(columns="seconds"))


def test_plot_returns_a_figure(tiny_run):
    from matplotlib.figure import Figure

    assert isinstance(tiny_run.plot(), Figure)


@pytest.mark.parametrize("overrides, key", [(["grid.reps=-1"], "grid.reps"), (["grid.nope=1"], "grid.nope"),
                                            (["mechanism=nope"], "mechanism"), (["grid.reps=1,2"], "grid.reps"),
                                            ("grid.reps=2", "overrides"), (["experiment=cls_full_ldp"], "overrides")])
def test_a_bad_override_is_one_config_error_naming_the_key(overrides, key, tmp_path):
    with pytest.raises(labeldp_sim.ConfigError) as info:
        labeldp_sim.run("cls_label_ldp", overrides, results_dir=tmp_path)
    assert info.value.key == key and "\n" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_an_unknown_experiment_lists_the_experiments():
    with pytest.raises(labeldp_sim.ConfigError, match="cls_label_ldp") as info:
        labeldp_sim.compose("no_such_experiment")
    assert info.value.key == "experiment"


def test_compose_returns_the_validated_config():
    cfg = labeldp_sim.compose("cls_label_ldp", ["grid.reps=3", "seed=7"])
    assert isinstance(cfg, DictConfig)
    assert (cfg.grid.reps, cfg.seed, cfg.experiment_name) == (3, 7, "cls_label_ldp")


def test_importing_the_package_leaves_sigint_alone():
    code = ("import signal; before = signal.getsignal(signal.SIGINT); import labeldp_sim, labeldp_sim.app; "
            "print(signal.getsignal(signal.SIGINT) is before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_run_leaves_the_handlers_as_they_were(tiny_run):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    labeldp_sim.run("cls_label_ldp", TINY, results_dir=tiny_run.directory.parent)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


# ------------------------------------------------------------------ reprs

def test_the_repr_of_a_component_shows_its_parameters():
    from labeldp_sim.papers.table1.families import HolderBump
    from labeldp_sim.harness.components import by_name

    assert repr(HolderBump(d=2)).startswith("HolderBump(d=2, beta=")
    rr = by_name("mechanism")["rr"]
    assert repr(rr(epsilon=1.0)) == f"{rr.__name__}(epsilon=1.0)"


@pytest.mark.parametrize("cls", [cls for table in components().values() for cls in table.values()],
                         ids=lambda cls: cls.__qualname__)
def test_every_component_class_has_a_repr_of_its_own_or_the_generic_one(cls):
    assert issubclass(cls, Component) and cls.__repr__ is not object.__repr__


# ------------------------------------------------------------------ the rng contract

def _same(a, b) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _contract(call) -> None:
    """``call(rng)`` gives the same with 0 as with default_rng(0), and runs with None."""
    _same(call(0), call(np.random.default_rng(0)))
    call(None)


def _family(cls):
    for kwargs in ({"d": 1}, {"d": 2}):
        try:
            return cls(**kwargs)
        except (TypeError, ValueError):
            continue
    pytest.skip(f"{cls.__name__} needs more than d")


@pytest.mark.parametrize("cls", _registered("distribution"), ids=lambda cls: cls.name)
def test_families_take_a_seed_a_generator_or_none(cls):
    family = _family(cls)
    G = 4 if family.construction_valid(4) else 2
    _contract(lambda rng: family.draw(rng, G).sample(200, np.random.default_rng(1)))
    instance = family.draw(np.random.default_rng(3), G)
    _contract(lambda rng: instance.sample(200, rng))


def _mechanism(cls):
    for kwargs in ({"epsilon": 1.0}, {"epsilon": 1.0, "T": 1.0}):
        try:
            return cls(**kwargs)
        except (TypeError, ValueError):
            continue
    pytest.skip(f"{cls.__name__} needs more than epsilon")


@pytest.mark.parametrize("cls", _registered("mechanism"), ids=lambda cls: cls.name)
def test_mechanisms_take_a_seed_a_generator_or_none(cls):
    mech = _mechanism(cls)
    data_rng = np.random.default_rng(7)
    n, n_cells = 300, 4
    cells = data_rng.integers(n_cells, size=n)
    classes = "classification" in mech.tasks
    K = 2 if classes else None
    y = data_rng.integers(2, size=n) if classes else data_rng.normal(size=n)
    given = {"prior": np.full((n, 2), 0.5)} if cls.name == "rr_with_prior" else {}  # its one extra argument
    if isinstance(mech, LocalMechanism):
        _contract(lambda rng: mech.report(y, rng, K=K, cells=cells, n_cells=n_cells, **given))
    if isinstance(mech, CentralMechanism):
        data = CubeData.from_samples(cells, y, n_cells)
        _contract(lambda rng: mech.release(data, rng, n, 0.5, 2, K=K))
    if isinstance(mech, CubeSumMechanism):  # the protocol's other boundaries
        _contract(lambda rng: mech.collect(y, rng, K=K, cells=cells, n_cells=n_cells))
        data = CubeData.from_samples(cells, y, n_cells)
        _contract(lambda rng: mech.sample_aggregate(data, n, rng, K=K))


RANDOMIZERS = {"clipped_mean": {"lo": 0.0, "hi": 1.0}, "item_level": {"D": 1.0, "m": 3},
               "one_sample": {"D": 1.0, "m": 3}, "bin_histogram": {"lo": 0.0, "width": 0.5, "bins": 2}}


@pytest.mark.parametrize("cls", _registered("userlevel.randomizer"), ids=lambda cls: cls.name)
def test_randomizers_take_a_seed_a_generator_or_none(cls):
    from labeldp_sim.papers.userlevel.data import UserValues

    args = RANDOMIZERS.get(cls.name)
    if args is None:
        pytest.skip(f"{cls.__name__}: no small parameters listed here")
    kwargs = {k: v for k, v in args.items() if k in inspect.signature(cls).parameters}
    randomizer = cls(epsilon=1.0, **kwargs)
    x_user = np.array([0.2, 0.4, 0.9])
    _contract(lambda rng: randomizer.randomize(x_user, rng))
    values = UserValues.from_samples(np.random.default_rng(2).integers(3, size=(5, 3)) / 2)
    _contract(lambda rng: randomizer.release_sum(values, rng))
