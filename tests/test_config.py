"""Bad input: one ConfigError naming the key and the allowed values, before any computation."""

import pytest

from labeldp_sim.cli import check_group_choices
from labeldp_sim.errors import ConfigError
from labeldp_sim.experiment import build_experiment

from .conftest import SMALL_GRID


def _error(make_cfg, *overrides):
    with pytest.raises(ConfigError) as err:
        build_experiment(make_cfg([*SMALL_GRID, *overrides]))
    message = str(err.value)
    assert "\n" not in message and "allowed:" in message
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
    (["experiment=cls_nonprivate", "runner.backend=dask"], "runner.backend"),
    (["experiment=cls_nonprivate", "runner.path=per_sample"], "runner.path"),  # N = 1e9 per sample
    (["experiment=cls_nonprivate", "fit.tol=0"], "fit.tol"),
    (["experiment=cls_nonprivate", "cell=cls_unknown"], "cell"),
    ([], "experiment"),
])
def test_bad_values_name_their_key(make_cfg, overrides, key):
    assert _error(make_cfg, *overrides).key == key


def test_mechanism_with_the_wrong_privacy_lists_the_right_ones(make_cfg):
    err = _error(make_cfg, "experiment=cls_label_ldp", "mechanism=exponential")
    assert err.key == "mechanism" and err.got == "exponential" and "rappor" in err.allowed


def test_mechanism_that_does_not_fit_the_task(make_cfg):
    err = _error(make_cfg, "experiment=cls_label_ldp",
                 "mechanism._target_=tests.helpers.RegressionOnlyRAPPOR")
    assert err.key == "mechanism"


def test_estimator_that_does_not_fit_the_task(make_cfg):
    err = _error(make_cfg, "experiment=cls_label_ldp", "estimator._target_=builtins.dict")
    assert err.key.startswith("estimator")


@pytest.mark.parametrize("arg,key", [("mechanism=foo", "mechanism"), ("estimator=knn_magic", "estimator"),
                                     ("experiment=cls_label_ldp,nope", "experiment"),
                                     ("distribution=bogus", "distribution")])
def test_unknown_group_choices_are_one_line(arg, key):
    with pytest.raises(ConfigError) as err:
        check_group_choices(["experiment=cls_label_ldp", arg])
    assert err.value.key == key and "\n" not in str(err.value)


def test_known_choices_pass():
    check_group_choices(["-m", "experiment=cls_label_ldp,cls_label_cdp", "mechanism=rappor",
                         "grid.reps=3", "+foo=bar"])


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
    (["experiment=reg_label_ldp", "runner.path=sufficient"], "runner.path"),  # kNN: per sample only
    (["experiment=reg_label_ldp", "grid.sweeps.N.values=[100000000]"], "runner.path"),  # too big per sample
    (["experiment=reg_nonprivate", "distribution=noisy_student_t", "distribution.df=2"], "distribution.df"),
    (["experiment=reg_nonprivate", "distribution=noisy_pareto", "distribution.alpha=3"], "distribution.alpha"),
    (["experiment=reg_nonprivate", "distribution=noisy_gaussian", "distribution.noise=cauchy"], "distribution.noise"),
    (["experiment=reg_label_cdp", "mechanism=exponential"], "mechanism"),
    (["experiment=reg_nonprivate", "distribution=holder_bump"], "distribution"),  # task mismatch
    (["experiment=cls_nonprivate", "estimator=cube_mean"], "estimator"),
    (["experiment=reg_full_cdp", "mechanism.n0_fraction=2"], "mechanism.n0_fraction"),
])
def test_bad_regression_values_name_their_key(make_cfg, overrides, key):
    assert _error(make_cfg, *overrides).key == key
