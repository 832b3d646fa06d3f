"""Bad input: one ConfigError naming the key and the allowed values, before any computation.

These tests validate composed configurations directly (``validate_job`` and
``build_experiment``); ``tests/test_bad_input.py`` runs the same kind of cases
through the command line.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.harness.cli import validate_job
from labeldp_sim.harness.config import BACKENDS, RunnerSettings, group_options, validate_results_dir
from labeldp_sim.papers.table1.experiment import MAX_N, Experiment, build_experiment

from . import helpers  # noqa: F401  (registers regression_only_rappor, a mechanism of the user's own)
from .conftest import SMALL_GRID


@pytest.fixture
def results(tmp_path):
    """A results directory that does not exist yet (validation must not create it)."""
    return tmp_path / "out"


def _error(make_cfg, *overrides):
    with pytest.raises(ConfigError) as err:
        build_experiment(make_cfg([*SMALL_GRID, *overrides]))
    message = str(err.value)
    assert "\n" not in message and "allowed:" in message
    return err.value


def _job_error(make_cfg, results, *overrides):
    """validate_job's error for ``overrides``; checks one line and that nothing was created."""
    with pytest.raises(ConfigError) as err:
        validate_job(make_cfg([*overrides, f"paths.results_dir={results}"]))
    message = str(err.value)
    assert "\n" not in message and "allowed:" in message, message
    assert not results.exists()
    return err.value


@pytest.mark.parametrize("overrides,key", [
    (["experiment=cls_label_ldp", "grid.sweeps.N.eps=0"], "grid.sweeps.N.eps"),
    (["experiment=cls_label_ldp", "grid.sweeps.eps.values=[0.1,-0.5]"], "grid.sweeps.eps.values"),
    (["experiment=cls_label_cdp", "grid.sweeps.eps.values=[0]"], "grid.sweeps.eps.values"),
    (["experiment=cls_label_ldp", "grid.sweeps.N.values=[0,100]"], "grid.sweeps.N.values"),
    (["experiment=cls_label_cdp", "grid.sweeps.eps.N=0.5"], "grid.sweeps.eps.N"),
    (["experiment=cls_nonprivate", "distribution.beta=1.5"], "distribution.beta"),
    (["experiment=cls_nonprivate", "distribution.beta=0"], "distribution.beta"),
    (["experiment=cls_nonprivate", "distribution.gamma=-1"], "distribution.gamma"),
    (["experiment=cls_nonprivate", "distribution.K=1"], "distribution.K"),
    (["experiment=cls_nonprivate", "grid.d=[0]"], "grid.d"),
    (["experiment=cls_nonprivate", "grid.reps=0"], "grid.reps"),
    (["experiment=cls_nonprivate", "estimator.h_scale=-1"], "estimator.h_scale"),
    (["experiment=cls_nonprivate", "runner.path=magic"], "runner.path"),
    (["experiment=cls_nonprivate", "runner.n_jobs=0"], "runner.n_jobs"),
    (["experiment=cls_nonprivate", "runner.backend=ray"], "runner.backend"),
    (["experiment=cls_nonprivate", "runner.backend=multiprocessing"], "runner.backend"),
    (["experiment=cls_nonprivate", "runner.path=per_sample"], "runner.path"),  # N = 1e9 per sample
    (["experiment=cls_nonprivate", "fit.tol=0"], "fit.tol"),
    (["experiment=cls_nonprivate", "cell=cls_unknown"], "cell"),
])
def test_bad_values_name_their_key(make_cfg, overrides, key):
    assert _error(make_cfg, *overrides).key == key


def test_no_experiment_is_blamed_on_experiment(make_cfg):
    # the root config is paper-free: without an experiment there is no kind to validate
    with pytest.raises(ConfigError) as err:
        validate_job(make_cfg([]))
    assert err.value.key == "experiment" and "cls_label_ldp" in err.value.allowed


def test_mechanism_with_the_wrong_privacy_lists_the_right_ones(make_cfg):
    err = _error(make_cfg, "experiment=cls_label_ldp", "mechanism=exponential")
    assert err.key == "mechanism" and err.got == "exponential" and "rappor" in err.allowed


def test_mechanism_that_does_not_fit_the_task(make_cfg):
    err = _error(make_cfg, "experiment=cls_label_ldp",
                 "mechanism.name=regression_only_rappor")
    assert err.key == "mechanism"


def test_estimator_that_does_not_fit_the_task(make_cfg):
    err = _error(make_cfg, "experiment=cls_label_ldp", "estimator.name=cube_mean")
    assert err.key.startswith("estimator")


@pytest.mark.parametrize("arg,key", [("mechanism=foo", "mechanism"), ("estimator=knn_magic", "estimator"),
                                     ("experiment=cls_label_ldp,nope", "experiment"),
                                     ("distribution=bogus", "distribution")])
def test_unknown_group_choices_are_one_line(arg, key):
    from labeldp_sim.harness.cli import validate_argv

    with pytest.raises(ConfigError) as err:
        validate_argv(["-m", "experiment=cls_label_ldp", arg])
    assert err.value.key == key and "\n" not in str(err.value)


def test_known_choices_pass(tmp_path):
    from labeldp_sim.harness.cli import validate_argv

    # every job is composed and validated (the old check only looked the choices up)
    _, jobs = validate_argv(["-m", "experiment=cls_label_ldp,cls_label_cdp", "grid.reps=3",
                             f"paths.results_dir={tmp_path / 'out'}"])
    assert [job.spec.name for job in jobs] == ["cls_label_ldp", "cls_label_cdp"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("overrides,key", [
    (["experiment=heavy_label_cdp", "distribution.p=1.5"], "distribution.p"),
    (["experiment=heavy_label_cdp", "distribution.M_p=0"], "distribution.M_p"),
    (["experiment=reg_label_cdp", "distribution.T=0"], "distribution.T"),
    (["experiment=reg_label_cdp", "mechanism.T=-1"], "mechanism.T"),
    (["experiment=heavy_label_cdp", "mechanism.T=null"], "mechanism.T"),  # heavy tails need a clip
    (["experiment=heavy_label_cdp", "mechanism.T_scale=0"], "mechanism.T_scale"),
    (["experiment=reg_label_ldp", "estimator.k=0"], "estimator.k"),
    (["experiment=reg_label_ldp", "estimator.k=100000000"], "estimator.k"),  # k > N
    (["experiment=reg_label_ldp", "estimator.n_test=1000"], "estimator.n_test"),
    (["experiment=reg_label_ldp", "runner.path=sufficient", "estimator.metric=euclidean"],
     "runner.path"),  # Euclidean kNN: per sample only
    (["experiment=reg_label_ldp", "runner.path=per_sample"], "runner.path"),  # N = 1e9 too big per sample
    (["experiment=reg_nonprivate", "distribution=noisy_student_t", "distribution.df=2"], "distribution.df"),
    (["experiment=reg_nonprivate", "distribution=noisy_pareto", "distribution.alpha=3"], "distribution.alpha"),
    # one class per noise law: the law is the name, and another law's tail parameter is refused, not ignored
    (["experiment=reg_nonprivate", "distribution=noisy_gaussian", "+distribution.noise=cauchy"], "distribution.noise"),
    (["experiment=reg_nonprivate", "distribution=noisy_gaussian", "+distribution.df=6"], "distribution.df"),
    (["experiment=reg_label_cdp", "mechanism=exponential"], "mechanism"),
    (["experiment=reg_nonprivate", "distribution=holder_bump"], "distribution"),  # task mismatch
    (["experiment=cls_nonprivate", "estimator=cube_mean"], "estimator"),
    (["experiment=reg_full_cdp", "mechanism.n0_fraction=2"], "mechanism.n0_fraction"),
])
def test_bad_regression_values_name_their_key(make_cfg, overrides, key):
    assert _error(make_cfg, *overrides).key == key


# --------------------------------------------------------------------------- validate_job

LDP, NP = "experiment=cls_label_ldp", "experiment=cls_nonprivate"
KC, DG = "experiment=kclass_fig2a", "experiment=kclass_digits"


@pytest.mark.parametrize("overrides,key", [
    # unknown keys, on every node
    ([LDP, "+grid.foo=1"], "grid.foo"),
    ([LDP, "+grid.sweeps.N.foo=1"], "grid.sweeps.N.foo"),
    ([LDP, "+distribution.foo=1"], "distribution.foo"),
    ([LDP, "+mechanism.T=1"], "mechanism.T"),  # RAPPOR takes no clipping level
    ([LDP, "+estimator.foo=1"], "estimator.foo"),
    ([LDP, "+runner.foo=1"], "runner.foo"),
    ([LDP, "+fit.foo=1"], "fit.foo"),
    ([LDP, "+paths.foo=1"], "paths.foo"),
    ([LDP, "+foo=1"], "foo"),
    ([LDP, "+kclass.K=[2]"], "kind"),  # a kclass node on a rates experiment
    ([KC, "+kclass.foo=1"], "kclass.foo"),
    ([DG, "+digits.foo=1"], "digits.foo"),
    # set by the grid, not by the group
    ([LDP, "+distribution.d=3"], "distribution.d"),
    ([LDP, "+mechanism.epsilon=1"], "mechanism.epsilon"),
    # numbers, each blamed on its own key
    ([LDP, "distribution.beta=abc"], "distribution.beta"),
    ([LDP, "distribution.gamma=inf"], "distribution.gamma"),
    ([LDP, "distribution.h_scale=inf"], "distribution.h_scale"),  # not estimator.h_scale
    ([NP, "distribution.K=2.5"], "distribution.K"),
    ([NP, "distribution.C_M=true"], "distribution.C_M"),
    (["experiment=heavy_label_cdp", "distribution.tail_level=abc"], "distribution.tail_level"),
    (["experiment=heavy_label_cdp", "mechanism.T=abc"], "mechanism.T"),
    (["experiment=reg_label_ldp", "estimator.k=abc"], "estimator.k"),
    ([LDP, "mechanism.name=nope"], "mechanism.name"),
    # the margin construction needs gamma*beta <= d
    ([LDP, "distribution.gamma=3"], "distribution.gamma"),
    ([LDP, "distribution.gamma=2", "distribution.beta=0.6"], "distribution.gamma"),
    # the grid
    ([LDP, "grid.d=[]"], "grid.d"),
    ([LDP, "grid.d=3"], "grid.d"),
    ([LDP, "grid.d=[1,1]"], "grid.d"),
    ([LDP, "grid.d=[true]"], "grid.d"),
    ([LDP, "grid.reps_per_d=5"], "grid.reps_per_d"),
    ([LDP, "grid.reps_per_d={3:0}"], "grid.reps_per_d.3"),
    ([LDP, "grid.sweeps.N.values=abc"], "grid.sweeps.N.values"),
    ([LDP, "grid.sweeps.N.values=[1e4,1e4]"], "grid.sweeps.N.values"),
    ([LDP, "~grid.sweeps.N.eps"], "grid.sweeps.N.eps"),
    ([LDP, "grid.sweeps.N.values=[1e19]"], "grid.sweeps.N.values"),
    ([LDP, "grid.sweeps.eps.N=1e19"], "grid.sweeps.eps.N"),
    ([NP, "grid.d=[1]", "grid.sweeps.N.values=[9007199254740000]"], "grid.sweeps.N.values"),  # snaps above 2^53
    ([LDP, "grid.sweeps.eps.values=[1e-300]"], "grid.sweeps.eps.values"),
    ([LDP, "grid.sweeps.eps.values=[1000]"], "grid.sweeps.eps.values"),
    ([NP, "distribution.h_scale=1e-300"], "grid.sweeps.N.values"),  # 1/h overflows
    ([NP, "estimator.h_scale=1e-12"], "grid.sweeps.N.values"),  # G^d > 2^53 cubes
    # broken interpolations are blamed where they are written
    ([LDP, "distribution.beta=${nope}"], "distribution.beta"),
    ([LDP, "seed=${nope}"], "seed"),
    ([LDP, "cell=${nope}"], "cell"),
    # cell, seed, kind, name
    ([LDP, "cell=reg_label_ldp"], "cell"),
    ([NP, "seed=-1"], "seed"),
    ([NP, "seed=abc"], "seed"),
    ([NP, "seed=9223372036854775808"], "seed"),
    ([NP, "kind=foo"], "kind"),
    ([LDP, "kind=kclass"], "kind"),
    ([KC, "kind=rates"], "kind"),
    ([NP, "experiment_name=.."], "experiment_name"),
    ([NP, "experiment_name=a/b"], "experiment_name"),
    # runner: flags are real bools
    ([NP, "runner.progress=maybe"], "runner.progress"),
    ([NP, "runner.reuse=maybe"], "runner.reuse"),
    ([NP, "runner.reuse=1"], "runner.reuse"),
    ([NP, "runner.n_jobs=true"], "runner.n_jobs"),
    ([NP, "runner.chunk=0"], "runner.chunk"),
    ([NP, "~runner.reuse"], "runner.reuse"),
    ([NP, "fit.tol=abc"], "fit.tol"),
    ([NP, "fit.min_points=1"], "fit.min_points"),
    # kclass
    ([KC, "kclass.K=3"], "kclass.K"),
    ([KC, "kclass.K=[1,4]"], "kclass.K"),
    ([KC, "kclass.K=[2,true]"], "kclass.K"),
    ([KC, "kclass.eps=abc"], "kclass.eps"),
    ([KC, "kclass.eps=1e-300"], "kclass.eps"),
    ([KC, "kclass.sigma=bad"], "kclass.sigma"),
    ([KC, "kclass.sigma=inf"], "kclass.sigma"),
    ([KC, "kclass.split=0.01"], "kclass.split"),  # split·N < k
    ([KC, "kclass.k=20000"], "kclass.k"),
    ([KC, "kclass.N=1.5"], "kclass.N"),
    ([KC, "kclass.n_test=0"], "kclass.n_test"),
    ([KC, "kclass.methods=[rr,magic]"], "kclass.methods"),
    ([KC, "kclass.methods=[rr,rr]"], "kclass.methods"),
    ([KC, "runner.n_jobs=0"], "runner.n_jobs"),
    ([KC, "runner.backend=ray"], "runner.backend"),
    ([KC, "runner.path=magic"], "runner.path"),
    # digits
    ([DG, "digits.eps=[]"], "digits.eps"),
    ([DG, "digits.eps=abc"], "digits.eps"),
    ([DG, "digits.k=5000"], "digits.k"),
    ([DG, "digits.k=700"], "digits.k"),  # fits the training set, not LP-2ST's stage 1
    ([DG, "digits.test_fraction=0"], "digits.test_fraction"),
    ([DG, "digits.test_fraction=0.0001"], "digits.test_fraction"),  # no test image
    ([DG, "digits.split=0.9999"], "digits.split"),
    ([DG, "digits.splits=0"], "digits.splits"),
    ([DG, "digits.methods=[magic]"], "digits.methods"),
    ([DG, "runner.progress=maybe"], "runner.progress"),
])
def test_validate_job_names_the_key_and_creates_nothing(make_cfg, results, overrides, key):
    assert _job_error(make_cfg, results, *overrides).key == key


def test_each_value_is_blamed_with_its_allowed_values(make_cfg, results):
    err = _job_error(make_cfg, results, LDP, "distribution.beta=abc")
    assert str(err) == "distribution.beta: got 'abc'; allowed: finite numbers in (0, 1]"
    err = _job_error(make_cfg, results, LDP, "+grid.foo=1")
    assert str(err) == "grid.foo: got 1; allowed: d, reps, reps_per_d, sweeps"
    err = _job_error(make_cfg, results, LDP, "distribution.gamma=3")
    assert "gamma*beta <= d" in err.allowed and "Audibert & Tsybakov 2007" in err.allowed
    err = _job_error(make_cfg, results, KC, "kclass.K=3")
    assert "non-empty list of integers >= 2" in err.allowed
    err = _job_error(make_cfg, results, LDP, "cell=reg_label_ldp")
    assert "cls_label_ldp" in err.allowed and "reg_label_ldp" not in err.allowed
    err = _job_error(make_cfg, results, NP, "runner.backend=multiprocessing")
    assert err.allowed.startswith("loky, threading, sequential")


def test_config_error_is_one_short_line():
    err = ConfigError("a.b", {"x": list(range(1000)), "y": "two\nlines"}, "p\nq")
    assert "\n" not in str(err) and len(str(err)) < 140
    assert err.got["x"][-1] == 999  # the value itself is kept whole
    assert "\n" not in str(ConfigError("k", np.eye(3), ["a", "b"]))


# --------------------------------------------------------------------------- what a valid job carries


@pytest.mark.parametrize("experiment", group_options("experiment"))
def test_every_shipped_experiment_validates(make_cfg, results, experiment):
    spec = validate_job(make_cfg([f"experiment={experiment}", f"paths.results_dir={results}"]))
    assert spec.name == experiment and spec.results_dir == results
    assert isinstance(spec.runner, RunnerSettings) and spec.runner.backend in BACKENDS
    assert spec.config_key.startswith("c") and len(spec.config_key) == 17
    assert not results.exists()


def test_experiment_carries_runner_settings_and_results_dir(make_cfg, results):
    exp = validate_job(make_cfg([NP, "runner.n_jobs=3", "runner.backend=threading", "runner.chunk=7",
                                 "runner.progress=false", "runner.reuse=false",
                                 f"paths.results_dir={results}"]))
    assert isinstance(exp, Experiment) and exp.path == "auto"
    assert exp.runner == RunnerSettings(n_jobs=3, backend="threading", chunk=7, progress=False, reuse=False)
    assert exp.results_dir == results
    for removed in ("n_jobs", "backend", "chunk", "progress"):
        assert not hasattr(exp, removed)


def test_runner_path_is_checked_but_ignored_for_accuracy_kinds(make_cfg, results):
    for experiment in (KC, DG):
        assert validate_job(make_cfg([experiment, "runner.path=sufficient", f"paths.results_dir={results}"]))


def test_rates_config_key_covers_what_sets_the_numbers(make_cfg, results):
    def key(*overrides):
        return validate_job(make_cfg([LDP, *SMALL_GRID, f"paths.results_dir={results}", *overrides])).config_key

    base = key()
    assert key("grid.reps=99", "runner.chunk=3", "runner.reuse=false") == base
    assert key(f"paths.results_dir={results}2") == base
    assert key("distribution.L=0.5") != base and key("seed=1") != base
    assert key("estimator.h_scale=3") != base and key("cell=cls_full_ldp", "mechanism=joint_rappor") != base


def test_kclass_config_key_is_per_record(make_cfg, results):
    def key(*overrides):
        return validate_job(make_cfg([KC, f"paths.results_dir={results}", *overrides])).config_key

    base = key()
    # K, the number of trials and the methods pick records; each record keeps its key
    assert key("kclass.K=[2,7]", "kclass.trials=3", "kclass.methods=[rr]") == base
    assert key("kclass.eps=2") != base and key("kclass.N=5000") != base
    assert key("kclass.sigma=2/K") != base and key("experiment_name=other") != base


def test_digits_config_key_is_per_record(make_cfg, results):
    def spec(*overrides):
        return validate_job(make_cfg([DG, f"paths.results_dir={results}", *overrides]))

    base = spec()
    assert base.eps == [0.5, 1.0, 2.0, 4.0, 8.0] and all(isinstance(e, float) for e in base.eps)
    assert (base.splits, base.test_fraction, base.k, base.split) == (20, 0.3, 25, 0.5)
    assert spec("digits.eps=[1]", "digits.splits=2", "digits.methods=[rr]").config_key == base.config_key
    assert spec("digits.k=10").config_key != base.config_key
    assert spec("digits.test_fraction=0.2").config_key != base.config_key


def test_digits_sample_count_matches_the_bundled_data_set():
    from sklearn.datasets import load_digits

    from labeldp_sim.papers.kclass.experiments import DIGITS_SAMPLES

    assert load_digits().target.size == DIGITS_SAMPLES


# --------------------------------------------------------------------------- the results directory


def test_results_dir_may_exist_or_be_created_later(make_cfg, tmp_path):
    existing = tmp_path / "there"
    existing.mkdir()
    assert validate_results_dir(make_cfg([NP, f"paths.results_dir={existing}"])) == existing
    nested = tmp_path / "a" / "b" / "c"
    assert validate_results_dir(make_cfg([NP, f"paths.results_dir={nested}"])) == nested
    assert sorted(p.name for p in tmp_path.iterdir()) == ["there"]  # nothing created, no probe left


@pytest.mark.parametrize("value", ["''", "null", "@FILE", "@FILE/sub", "'   '", "2024"])
def test_results_dir_refusals(make_cfg, tmp_path, value):
    (tmp_path / "file").write_text("x")
    value = value.replace("@FILE", str(tmp_path / "file"))
    with pytest.raises(ConfigError) as err:
        validate_results_dir(make_cfg([NP, f"paths.results_dir={value}"]))
    assert err.value.key == "paths.results_dir" and "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_read_only_results_parent_is_refused(make_cfg, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root can write into a 0o555 directory, so the run would succeed")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(ConfigError, match="not writable"):
            validate_results_dir(make_cfg([NP, f"paths.results_dir={locked / 'out'}"]))
    finally:
        locked.chmod(0o755)


def test_results_dir_on_a_file_system_that_refuses_files(make_cfg):
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux procfs")
    # the check holds as root too: it opens an anonymous file there instead of trusting access()
    with pytest.raises(ConfigError, match="not writable"):
        validate_results_dir(make_cfg([NP, "paths.results_dir=/proc/labeldp-sim-out"]))


# --------------------------------------------------------------------------- margin, replicates, float64


def test_gamma_beta_up_to_d_is_accepted(make_cfg, results):
    exp = validate_job(make_cfg([LDP, "distribution.gamma=2", "grid.d=[2,3]", f"paths.results_dir={results}"]))
    assert {pt.d for pt in exp.points} == {2, 3}


def test_less_than_one_bump_is_flagged_not_clamped(make_cfg, results):
    from labeldp_sim.papers.table1.families import HolderBump

    family = HolderBump(d=1, gamma=1.0, beta=1.0, C_M=0.5)  # γβ = d: C_M h^(γβ−d) = 0.5 bumps
    assert family.n_bumps(10) == 1 and not family.construction_valid(10)
    assert HolderBump(d=2, gamma=1.0, C_M=0.5).construction_valid(10)  # 0.5·10 = 5 bumps
    exp = validate_job(make_cfg([NP, "distribution.C_M=0.5", "grid.d=[1,2]", f"paths.results_dir={results}"]))
    assert not any(pt.in_regime for pt in exp.points if pt.d == 1)
    assert all(pt.in_regime for pt in exp.points if pt.d == 2)


def test_reps_per_d_null_clears_the_grid_mapping(make_cfg, results):
    # Monte Carlo (runner.path=sufficient): the exact path has one entry per point whatever grid.reps says
    exp = validate_job(make_cfg(["experiment=reg_nonprivate", "runner.path=sufficient", f"paths.results_dir={results}"]))
    assert exp.reps_per_d == {} and {exp.replicates(pt) for pt in exp.points} == {100}
    exact = validate_job(make_cfg(["experiment=reg_nonprivate", f"paths.results_dir={results}"]))
    assert {exact.trial_path(pt) for pt in exact.points} == {"exact"}
    assert {exact.replicates(pt) for pt in exact.points} == {1}
    cleared = validate_job(make_cfg([LDP, "grid.reps_per_d=null", "runner.path=sufficient",
                                     f"paths.results_dir={results}"]))
    assert cleared.reps_per_d == {} and {cleared.replicates(pt) for pt in cleared.points} == {2000}
    kept = validate_job(make_cfg([LDP, f"paths.results_dir={results}"]))
    assert kept.reps_per_d == {3: 500}


def test_no_experiment_relies_on_an_empty_mapping_to_clear_reps_per_d():
    # OmegaConf merges mappings, so `reps_per_d: {}` keeps the grid file's {3: 500}
    for path in (Path(__file__).resolve().parent.parent / "conf").rglob("*.yaml"):
        assert "reps_per_d: {}" not in path.read_text(), path


def test_default_grids_are_valid_under_float_traps(make_cfg, results):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning while snapping would be a silent error
        for experiment in group_options("experiment"):
            validate_job(make_cfg([f"experiment={experiment}", f"paths.results_dir={results}"]))


def test_largest_exact_N_is_accepted(make_cfg, results):
    exp = validate_job(make_cfg([LDP, "grid.d=[1]", "grid.sweeps.N.values=[1e15]", "~grid.sweeps.eps",
                                 f"paths.results_dir={results}"]))
    assert all(pt.N <= MAX_N for pt in exp.points)


# --------------------------------------------------------------------------- issue 18: sizes and careless inputs

UL = "experiment=ul_mean_1d"


def test_a_size_that_cannot_fit_names_its_key_and_the_limit(make_cfg, results):
    err = _job_error(make_cfg, results, KC, "kclass.n_test=1000000000000000")
    assert err.key == "kclass.n_test" and err.got == 10 ** 15
    assert "the limit is" in err.allowed and "this machine's" in err.allowed and "EiB" in err.allowed
    err = _job_error(make_cfg, results, UL, "userlevel.sweeps.m.values=[1099511627776]")
    assert err.key == "userlevel.sweeps.m.values" and "m + 1" in err.allowed


def test_runner_n_jobs_is_blamed_when_one_trial_fits_but_not_the_workers(make_cfg, results, monkeypatch):
    from labeldp_sim.harness import memory

    monkeypatch.setattr(memory, "machine_memory", lambda: 2 ** 30)  # 1 GiB; a kclass_fig2a trial holds ~320 MiB
    err = _job_error(make_cfg, results, KC, "runner.n_jobs=4")
    assert err.key == "runner.n_jobs" and "at most 2 workers" in err.allowed
    for fits in ("runner.n_jobs=2", "runner.backend=sequential"):
        assert validate_job(make_cfg([KC, "runner.n_jobs=4", fits, f"paths.results_dir={results}"]))
    monkeypatch.setattr(memory, "machine_memory", lambda: 2 ** 28)  # 256 MiB: not even one trial
    assert _job_error(make_cfg, results, KC, "runner.n_jobs=1").key == "kclass.N"


def test_memory_budget_of_each_backend(monkeypatch):
    from labeldp_sim.harness import memory
    from labeldp_sim.harness.config import DaskSettings, SlurmSettings, memory_budget

    monkeypatch.setattr(memory, "machine_memory", lambda: 10 * 2 ** 30)

    def runner(backend="loky", n_jobs=2, dask=DaskSettings()):
        return RunnerSettings(n_jobs=n_jobs, backend=backend, chunk=1, progress=False, reuse=True, dask=dask)

    assert memory_budget(runner()).per_trial == 0.9 * 10 * 2 ** 30 / 2
    assert memory_budget(runner("sequential", n_jobs=8)).workers == 1
    assert memory_budget(runner(n_jobs=-1)).workers == os.cpu_count()
    slurm = SlurmSettings(jobs=1, cores=8, processes=4, memory="16GB", walltime="01:00:00")
    budget = memory_budget(runner("dask", dask=DaskSettings(cluster="slurm", slurm=slurm)))
    assert budget.per_trial == 4e9 and "runner.dask.slurm.memory" in budget.text
    assert memory_budget(runner("dask", dask=DaskSettings(scheduler="tcp://h:8786"))).per_trial == 2 ** 40


def test_memory_estimates_are_lower_bounds():
    """An estimate above what a trial really holds would refuse runs that fit."""
    import tracemalloc

    from labeldp_sim.papers.kclass.experiments import synthetic_trial, kclass_trial_needs
    from labeldp_sim.papers.userlevel.families import FixedSign
    from labeldp_sim.papers.userlevel.mean import Algorithm1
    from labeldp_sim.papers.userlevel.experiments import UserPoint, trial_needs

    def peak(run):
        tracemalloc.start()
        try:
            run()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    for method in ("rr", "lp_2st", "vector_approximation"):
        need = sum(n.bytes for n in kclass_trial_needs(2000, 40, 200, 12, 0.5, [method]))
        assert need <= peak(lambda: synthetic_trial("t", 12, 0.2, 2000, 40, 1.0, 200, 0.5, [method], 0, 0)), method
    pt = UserPoint(n=1024, m=2 ** 20, eps=1.0, d=1)
    need = sum(n.bytes for n in trial_needs("m", pt, {"alg1": Algorithm1()}, "sufficient"))
    assert need <= peak(lambda: Algorithm1().trial(FixedSign(), pt.n, pt.m, pt.eps, pt.d, np.random.default_rng(0)))


def test_table1_memory_estimates_are_lower_bounds(make_cfg, results):
    import tracemalloc

    from labeldp_sim.papers.table1.experiment import trial_needs
    from labeldp_sim.papers.table1.sweep import run_trial

    for overrides in ([LDP, "distribution.K=40", "runner.path=per_sample", "grid.sweeps.N.values=[50000]",
                       "~grid.sweeps.eps"],
                      [LDP, "distribution.K=2000", "grid.sweeps.N.values=[1000000000]", "~grid.sweeps.eps",
                       "runner.path=sufficient"],
                      ["experiment=reg_nonprivate", "grid.sweeps.N.values=[100000000]", "runner.path=sufficient"]):
        exp = validate_job(make_cfg([*overrides, "grid.d=[2]", f"paths.results_dir={results}"]))
        pt = exp.points[0]
        tracemalloc.start()
        try:
            run_trial(exp.distributions[pt.d], exp.mechanisms[pt.id], exp.estimator, pt, 0, exp.seed,
                      exp.trial_path(pt))
            held = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert 0 < sum(n.bytes for n in trial_needs(exp, pt)) <= held, overrides


def test_reps_per_d_merges_a_new_d_and_a_dotted_key_wins(make_cfg, results):
    # Monte Carlo (runner.path=sufficient): the exact path has one entry per point
    exp = validate_job(make_cfg([LDP, "grid.reps_per_d={1: 300}", "runner.path=sufficient",
                                 f"paths.results_dir={results}"]))
    assert exp.reps_per_d == {1: 300, 3: 500}
    assert {pt.d: exp.replicates(pt) for pt in exp.points} == {1: 300, 2: 2000, 3: 500}
    # Hydra writes a dotted key as the string '3', beside the grid file's integer 3
    exp = validate_job(make_cfg([LDP, "+grid.reps_per_d.3=1000", "+grid.reps_per_d.4=7",
                                 f"paths.results_dir={results}"]))
    assert exp.reps_per_d == {3: 1000, 4: 7}
    err = _job_error(make_cfg, results, LDP, "grid.reps_per_d={1: 0}")
    assert err.key == "grid.reps_per_d.1" and err.allowed.startswith("integer >= 1")


def test_reps_per_d_dotted_override_of_the_grid_file_is_accepted(results):
    from labeldp_sim.app import load_papers
    from labeldp_sim.harness.cli import validate_argv

    load_papers()
    _, jobs = validate_argv([LDP, "grid.reps_per_d.3=1000", f"paths.results_dir={results}"])
    assert jobs[0].spec.reps_per_d == {3: 1000}


def test_law_free_points_are_blamed_on_law_free_keys(make_cfg, results):
    for mode in ("law_tied", "law_free"):
        err = _job_error(make_cfg, results, "experiment=reg_label_ldp", f"mode={mode}",
                         "law_free.sweeps.eps.values=[0]")
        assert err.key == "law_free.sweeps.eps.values", mode
    err = _job_error(make_cfg, results, "experiment=reg_label_ldp", "mode=law_free", "law_free.sweeps.N.values=[1]")
    assert err.key == "law_free.sweeps.N.values" and "N >= 3" in err.allowed
    err = _job_error(make_cfg, results, LDP, "mode=law_free", "law_free.G_max={1: 1000000000000}",
                     "runner.path=sufficient")
    assert err.key == "law_free.G_max" and "the limit is" in err.allowed


def test_wrong_keys_blamed_before_are_now_the_right_ones(make_cfg, results):
    err = _job_error(make_cfg, results, "experiment=reg_label_ldp", "mechanism=rappor")
    assert err.key == "mechanism" and err.allowed == "laplace"
    err = _job_error(make_cfg, results, "experiment=reg_label_ldp", "grid.sweeps.N.values=[1]")
    assert err.key == "grid.sweeps.N.values" and err.allowed.startswith("N >= 3 at d = 1")
    assert _job_error(make_cfg, results, "experiment=reg_label_ldp", "estimator.k=100000000").key == "estimator.k"
    assert _job_error(make_cfg, results, NP, "experiment_name=null").key == "experiment_name"
    assert _job_error(make_cfg, results).key == "experiment"
    err = _job_error(make_cfg, results, LDP, "mechanism=laplace")
    assert err.key == "mechanism" and err.allowed == "alibi, rappor, rr"


def test_the_name_is_the_one_address_of_a_component(make_cfg, results):
    # an unknown name lists the registered ones, in one line
    err = _job_error(make_cfg, results, LDP, "mechanism.name=nope")
    assert err.key == "mechanism.name" and {"rappor", "rr", "laplace"} <= set(err.allowed.split(", "))
    # a name picks its class: laplace is a regression mechanism, which the cell refuses
    err = _job_error(make_cfg, results, LDP, "mechanism.name=laplace", "+mechanism.T=theory")
    assert err.key in ("mechanism", "cell")
    # no dotted path reaches a class: _target_ is not a key of the node
    err = _job_error(make_cfg, results, LDP, "+mechanism._target_=tests.helpers.RegressionOnlyRAPPOR")
    assert err.key == "mechanism._target_" and err.allowed.split(", ")[0] == "name"
    # a registered class of the user's own is reached by its name (the cell check then speaks)
    err = _job_error(make_cfg, results, LDP, "mechanism.name=regression_only_rappor")
    assert err.key == "mechanism"


def _argv_error(results, *argv):
    """validate_argv's error for ``argv`` (the CLI's path: composition errors explained too)."""
    from labeldp_sim.app import load_papers
    from labeldp_sim.harness.cli import validate_argv

    load_papers()
    with pytest.raises(ConfigError) as err:
        validate_argv([*argv, f"paths.results_dir={results}"])
    assert "\n" not in str(err.value) and "allowed:" in str(err.value)
    assert not results.exists()
    return err.value


def test_keys_another_kind_reads_are_refused(results):
    # a paper's keys and groups come with its experiments: another paper's are not there to set
    for experiment in (KC, DG, UL):
        err = _argv_error(results, experiment, "mode=law_free")
        assert err.key == "mode" and "cls_*, heavy_*, reg_*" in err.allowed and "does not read mode" in err.allowed
    assert _argv_error(results, UL, "grid.reps=-1").key == "grid.reps"
    assert _argv_error(results, KC, "mechanism=rappor").key == "mechanism.name"
    assert _argv_error(results, UL, "+law_free.foo=1").key == "law_free.foo"
    # without an experiment, a paper's key or group is blamed on the missing experiment
    assert _argv_error(results, "grid.reps=12").key == "experiment"
    assert _argv_error(results, "mechanism=rappor").key == "experiment"


def test_every_experiment_composes_and_validates(results):
    """Every option of the experiment group, in every paper folder, composes through Hydra's
    compose API and passes the CLI's validation (no trial is run)."""
    from labeldp_sim.app import load_papers
    from labeldp_sim.harness.cli import compose_job, job_kind, validate_job
    from labeldp_sim.harness.config import experiments_of_kind

    load_papers()
    names = group_options("experiment")
    assert {"cls_label_ldp", "kclass_fig2a", "ul_cls", "ul_minimax_cls"} <= set(names)
    kinds = {name: kind for kind, members in experiments_of_kind().items() for name in members}
    for name in names:
        cfg = compose_job([f"experiment={name}", f"paths.results_dir={results}"])
        assert cfg.experiment_name == name
        assert job_kind(cfg) == kinds[name], name
        validate_job(cfg)
    assert not results.exists()
