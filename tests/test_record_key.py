"""A stored number is keyed on every setting that can change it (issue 30).

For one small job of each experiment kind (and mode), the test walks every leaf of the composed
config itself, so a setting added tomorrow is covered without editing it.  It changes one leaf
at a time to a value the validator accepts and checks that either the record key moves, or the
records of the changed job are identical, number for number, to those of the base job wherever
the two name the same record (a changed grid names other points: those records are new, none is
reused).  Equal means bit-equal: both jobs run the same code on the same streams on this machine.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from labeldp_sim.harness.cli import validate_job
from labeldp_sim.harness.config import job_kind
from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.harness.kinds import get_kind
from labeldp_sim.harness.reads import RUN_SETTINGS
from labeldp_sim.harness.runner import execute
from labeldp_sim.harness.store import STORE_NAME, TrialStore

QUIET = ["runner.n_jobs=1", "runner.backend=sequential", "runner.progress=false"]

# one small job per kind and mode: seconds each, every leaf of its config still present
JOBS = {
    "rates_exact": ["experiment=reg_label_cdp", "grid.d=[1]", "grid.reps=3",
                    "grid.sweeps.eps.values=[0.00001,0.0001]"],
    "rates_monte_carlo": ["experiment=cls_label_ldp", "grid.d=[1]", "grid.reps=3", "runner.path=sufficient",
                          "grid.sweeps.N.values=[10000,100000]"],
    "rates_law_free": ["experiment=reg_label_cdp", "mode=law_free", "law_free.d=[1]", "law_free.G_max={1: 64}",
                       "law_free.refine={1: 2}", "law_free.per_octave=2", "law_free.reps=4",
                       "law_free.sweeps={eps: {values: [0.0001, 0.001, 0.01], N: 100000}}"],
    "kclass": ["experiment=kclass_fig2a", "kclass.K=[2,3]", "kclass.trials=2", "kclass.N=300", "kclass.k=10",
               "kclass.n_test=40"],
    "digits": ["experiment=kclass_digits", "digits.eps=[1,2]", "digits.splits=2", "digits.methods=[rr,alibi]"],
    "userlevel": ["experiment=ul_mean_1d", "userlevel.trials=3",
                  "userlevel.sweeps={n: {values: [64, 128], m: 16, eps: 1.0}, m: {values: [16, 32], n: 64, eps: 1.0}}"],
    "userlevel_minimax": ["experiment=ul_minimax_mean",
                          "userlevel_minimax.sweeps.n.values.hi=1e5", "userlevel_minimax.sweeps.m.values=[16,64]",
                          "userlevel_minimax.sweeps.eps.values.lo=0.1", "userlevel_minimax.sweeps.eps.values.per_decade=2",
                          "userlevel_minimax.sweeps.m.n=1000", "userlevel_minimax.sweeps.eps.n=1000"],
}

# not numbers a run stores: its timing and its provenance
NOT_NUMBERS = {"seconds", "run_id", "computed_by", "config_key", "started"}


def _leaves(node, prefix=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def _candidates(cfg, key, value):
    """Values to try for one leaf, most likely accepted first."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value * 2, value - 1, 0]
    if isinstance(value, float):
        return [value * 1.25, value * 0.8, value + 1]
    if isinstance(value, list):
        if len(value) > 1:
            return [value[:-1], value[1:]]
        return [[*value, value[0] * 2]] if value and isinstance(value[0], (int, float)) else []
    if isinstance(value, str):
        # the validator names the allowed values of a choice
        try:
            _validate(cfg, key, "__not_a_value__")
        except ConfigError as err:
            if err.key == key:
                return [v.strip() for v in err.allowed.split(",")
                        if v.strip() not in ("", value) and not set(v) & set("${}")][:3]
        return []
    return []


def _changed(cfg, key, value):
    out = copy.deepcopy(cfg)
    OmegaConf.set_struct(out, False)
    OmegaConf.update(out, key, value, merge=False)
    return out


def _validate(cfg, key, value):
    return validate_job(_changed(cfg, key, value))


def _records(cfg, spec, directory) -> pd.DataFrame:
    kind = get_kind(job_kind(cfg)).for_spec(cfg, spec)
    trials, _ = execute(kind.plan(spec), TrialStore(directory / STORE_NAME))
    return trials


def _compare(base: pd.DataFrame, other: pd.DataFrame, schema_key, label: str) -> None:
    on = [c for c in schema_key if c not in ("experiment", "config_key")]
    both = base.merge(other, on=on, suffixes=("", "__changed"))
    for column in base.columns:
        if column in NOT_NUMBERS or column in on or f"{column}__changed" not in both:
            continue
        a, b = both[column].to_numpy(), both[f"{column}__changed"].to_numpy()
        if a.dtype.kind in "fc":
            same = np.array_equal(a, b, equal_nan=True)
        else:
            same = list(a) == list(b)
        assert same, f"{label}: same record key, different {column}"


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_setting_is_keyed_or_changes_no_number(job, make_cfg, tmp_path, capsys):
    base_cfg = make_cfg([*JOBS[job], *QUIET, f"paths.results_dir={tmp_path / 'base'}"])
    base_spec = validate_job(base_cfg)
    kind = get_kind(job_kind(base_cfg)).for_spec(base_cfg, base_spec)
    schema_key = kind.plan(base_spec).schema.key
    base = _records(base_cfg, base_spec, tmp_path / "base")
    assert len(base)

    leaves = dict(_leaves(OmegaConf.to_container(base_cfg, resolve=True)))
    keyed, neutral, fixed = [], [], []
    for i, (key, value) in enumerate(leaves.items()):
        if key == "paths.results_dir":
            candidates = [str(tmp_path / "elsewhere")]
        else:
            candidates = _candidates(base_cfg, key, value)
        for candidate in candidates:
            try:
                spec = _validate(base_cfg, key, candidate)
            except ConfigError:
                continue
            if spec.config_key != base_spec.config_key:
                keyed.append(key)
                break
            cfg = _changed(base_cfg, key, candidate)
            run_dir = tmp_path / f"run{i}"
            OmegaConf.update(cfg, "paths.results_dir", str(run_dir), merge=False)
            spec = validate_job(cfg)
            assert spec.config_key == base_spec.config_key  # where the files go is not part of a number
            _compare(base, _records(cfg, spec, run_dir), schema_key, f"{key}={candidate!r}")
            neutral.append(key)
            break
        else:
            fixed.append(key)
    capsys.readouterr()
    # the test saw the settings it must: the seed moves every key, and the runner's are run and compared
    assert "seed" in keyed, (keyed, neutral)
    assert {"runner.n_jobs", "runner.chunk", "fit.tol"} <= set(neutral), neutral
    # most settings the job reads can be changed (some only to values its validator refuses here)
    read = [key for key in leaves if key.split(".")[0] in kind.reads(base_cfg)]
    assert len(set(keyed + neutral) & set(read)) >= len(read) // 2, (keyed, neutral, fixed)


def test_path_is_keyed(make_cfg, tmp_path):
    """The exact expectation is never a Monte-Carlo replicate: runner.path moves the key."""
    keys = {path: validate_job(make_cfg([*JOBS["rates_exact"], *QUIET, f"runner.path={path}",
                                         f"paths.results_dir={tmp_path}"])).config_key
            for path in ("exact", "sufficient")}
    assert len(set(keys.values())) == 2, keys


def test_run_settings_are_declared_once():
    assert "runner.path" not in RUN_SETTINGS  # how a trial is computed changes its number
