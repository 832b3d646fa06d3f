"""The sufficient-statistic path agrees in distribution with the per-sample path.

Every mechanism config (``conf/table1/mechanism/*.yaml``) is tested on the tasks its class fits,
built from its YAML: a new mechanism is covered without editing this file.
"""

import numpy as np
import pytest
from omegaconf import OmegaConf
from scipy import stats

from labeldp_sim.papers.table1.families import BoundedBump, HeavyTailBump, HolderBump, SmoothMargin, cube_index
from labeldp_sim.papers.table1.estimators import CubeArgmax, CubeMean
from labeldp_sim.papers.table1.points import Point
from labeldp_sim.harness.components import build, component_class
from labeldp_sim.harness.conf_path import conf_file
from labeldp_sim.harness.config import group_options
from labeldp_sim.privacy.rappor import RAPPOR, bit_sums
from labeldp_sim.papers.table1.mechanisms import JointRAPPOR
from labeldp_sim.papers.table1.sweep import run_trial

ALPHA = 1e-6
REPS = 300

CONFIGS = {name: OmegaConf.to_container(OmegaConf.load(conf_file("mechanism", name)), resolve=False)
           for name in group_options("mechanism")}
CLASSES = {name: component_class("mechanism", node["name"]) for name, node in CONFIGS.items()}
CLASSIFICATION = sorted(name for name, cls in CLASSES.items() if "classification" in cls.tasks)
REGRESSION = sorted(name for name, cls in CLASSES.items() if "regression" in cls.tasks)
# ε where the default 1 leaves the per-cube argmax too rarely wrong to compare two laws
EPSILONS = {"joint_rappor": 2.0, "exponential": 0.1, "exponential_full": 0.1}


def _mechanism(name, epsilon, T=None):
    """The mechanism ``conf/table1/mechanism/<name>.yaml`` describes, at ``epsilon`` (and clipping level ``T``).

    The experiment sets ε from the grid and T from the config's T ('theory' or a number) and T_scale.
    """
    extra = {"T": T} if "T" in CLASSES[name].parameters else {}
    return build("mechanism", CONFIGS[name], ignore=("name", "T", "T_scale"), epsilon=epsilon, **extra)


def _risks(mech, point, path, K, seed):
    dist = HolderBump(d=point.d, K=K, C_M=2.0, h_scale=2.0)
    return np.array([run_trial(dist, mech, CubeArgmax(2.0), point, r, seed, path)["excess_risk"]
                     for r in range(REPS)])


@pytest.mark.parametrize("name", CLASSIFICATION)
@pytest.mark.parametrize("d,N,G,G_est,K", [(1, 800, 4, 4, 2), (2, 3000, 4, 5, 3), (2, 6000, 6, 6, 2),
                                           (2, 40, 4, 10, 3)])  # 40 samples in 100 cubes: most empty
def test_paths_agree_in_distribution(name, d, N, G, G_est, K):
    point = Point("paths", "N", d, N, 1.0, N, 1.0, G=G, h=1 / G, in_regime=True, G_est=G_est)
    mech = _mechanism(name, EPSILONS.get(name, 1.0))
    per_sample = _risks(mech, point, "per_sample", K, seed=1)
    sufficient = _risks(mech, point, "sufficient", K, seed=2)
    assert per_sample.std() > 0 and sufficient.std() > 0
    assert stats.ks_2samp(per_sample, sufficient, method="asymp").pvalue > ALPHA


def test_the_agreement_test_has_power():
    """A sufficient-statistic path with the wrong ε is caught at the same α."""
    point = Point("paths", "N", 1, 8000, 1.0, 8000, 1.0, G=4, h=1 / 4, in_regime=True, G_est=4)
    per_sample = _risks(RAPPOR(1.0), point, "per_sample", 2, seed=1)
    right = _risks(RAPPOR(1.0), point, "sufficient", 2, seed=2)
    wrong = _risks(RAPPOR(0.25), point, "sufficient", 2, seed=2)
    assert stats.ks_2samp(per_sample, right, method="asymp").pvalue > ALPHA
    assert stats.ks_2samp(per_sample, wrong, method="asymp").pvalue < ALPHA


def test_sufficient_path_reaches_n_1e9():
    """N = 10^9, d = 2, label LDP: the per-sample path could not; this one costs O(#bumps)."""
    dist = HolderBump(d=2, h_scale=3.5)
    point = Point("paths", "N", 2, 10**9, 1.0, 10**9, 1.0, G=51, h=1 / 51, in_regime=True, G_est=51)
    result = run_trial(dist, RAPPOR(1.0), CubeArgmax(3.5), point, 0, 0, "sufficient")
    assert 0 < result["excess_risk"] < 1e-3 and 0 < result["regret_fraction"] < 0.5


@pytest.mark.parametrize("name", REGRESSION)
def test_regression_paths_agree_in_distribution(name):
    """Cube means, labels beyond the clip level (tests/test_regression.py has more settings)."""
    family = BoundedBump(d=2, T=1.5)
    point = Point("paths", "N", 2, 500, 1.0, 500, 1.0, G=3, h=1 / 3, in_regime=True, G_est=4)
    mech = _mechanism(name, 1.0, T=0.5 * family.T)
    per_sample, sufficient = (np.array([run_trial(family, mech, CubeMean(), point, r, seed, path)["excess_risk"]
                                        for r in range(REPS)]) for seed, path in ((1, "per_sample"), (2, "sufficient")))
    assert per_sample.std() > 0 and sufficient.std() > 0
    assert stats.ks_2samp(per_sample, sufficient).pvalue > ALPHA


def test_every_mechanism_config_has_a_path_test():
    """Each config is in the parametrisations above, which are read from conf/table1/mechanism."""
    assert set(CONFIGS) == set(group_options("mechanism")) and len(CONFIGS) >= 11
    assert set(CONFIGS) == set(CLASSIFICATION) | set(REGRESSION), set(CONFIGS) - set(CLASSIFICATION + REGRESSION)
    # the settings this test once listed by hand are still among them
    assert {"none", "rappor", "joint_rappor", "exponential", "exponential_full", "rr", "alibi"} <= set(CLASSIFICATION)
    assert {"none", "laplace", "laplace_cube", "laplace_cube_full", "joint_laplace"} <= set(REGRESSION)


# --------------------------------------------------------------------------- the per-sample samplers
# The per-sample path draws each label from one uniform and computes g or η only where the
# label can depend on it.  Its law is held here to the closed-form cell model (exact integrals
# of the bumps, which no sampler code computes): the (cube, label) counts of one large sample
# against their probabilities, chi-square at the same α as the path tests.


def _chi2_pvalue(observed, probs):
    possible = probs > 1e-12
    assert observed[~possible].sum() == 0
    observed, probs = observed[possible], probs[possible]
    return stats.chisquare(observed, probs / probs.sum() * observed.sum()).pvalue


@pytest.mark.parametrize("family,G,G_est", [
    (HolderBump(d=1, K=2, C_M=2.0), 4, 4),
    (HolderBump(d=2, K=3, C_M=2.0), 4, 6),  # K not a power of two; cubes cut across bumps
    (HolderBump(d=2, K=2, beta=0.5, shape="linear_edge"), 4, 4),
    (SmoothMargin(d=2, K=2), None, 5),
])
def test_per_sample_labels_follow_the_cell_model(family, G, G_est):
    rng = np.random.default_rng(11)
    instance = family.draw(rng, G)
    model, K, N = instance.cell_model(G_est), family.K, 400_000
    X, y = instance.sample(N, rng)
    assert y.min() >= 0 and y.max() < K
    pos = np.minimum(np.searchsorted(model.cells, cube_index(X, G_est)), len(model.cells) - 1)
    listed = model.cells[pos] == cube_index(X, G_est)
    observed = np.concatenate([np.bincount(pos[listed] * K + y[listed], minlength=len(model.cells) * K),
                               np.bincount(y[~listed], minlength=K)])  # unlisted cubes: uniform labels
    probs = np.concatenate([(model.mass[:, None] * model.class_probs).ravel(),
                            np.full(K, (1 - model.mass.sum()) / K)])
    assert _chi2_pvalue(observed, probs) > ALPHA


@pytest.mark.parametrize("family,G,G_est", [
    (BoundedBump(d=1), 4, 4),
    (BoundedBump(d=2, T=1.5), 4, 3),
    (HeavyTailBump(d=2, p=3.0), 3, 4),  # three label values, two CDF steps
])
def test_per_sample_regression_labels_follow_the_cell_model(family, G, G_est):
    rng = np.random.default_rng(12)
    instance = family.draw(rng, G)
    model, N = instance.cell_model(G_est), 400_000
    X, y = instance.sample(N, rng)
    value = np.searchsorted(model.values, y)
    assert np.array_equal(model.values[value], y)
    V = len(model.values)
    observed = np.bincount(cube_index(X, G_est) * V + value, minlength=model.n_cells * V)
    assert _chi2_pvalue(observed, (model.mass[:, None] * model.value_probs).ravel()) > ALPHA


def test_rappor_reports_are_their_bit_probabilities_applied_to_the_same_uniforms():
    """report draws from the law methods the privacy audit reads, bit for bit."""
    rng = np.random.default_rng(13)
    for K in (2, 3, 5):
        y = rng.integers(K, size=700)
        mech = RAPPOR(0.7)
        bits = mech.report(y, np.random.default_rng(K), K=K)
        assert np.array_equal(bits, np.random.default_rng(K).random((700, K)) < mech.bit_probabilities(y, K))
        cells = rng.integers(4, size=700)
        joint = JointRAPPOR(0.7)
        bits = joint.report(y, np.random.default_rng(K), K=K, cells=cells, n_cells=4)
        assert np.array_equal(bits, np.random.default_rng(K).random((700, 4 * K))
                              < joint.bit_probabilities(y, K, cells, 4))


@pytest.mark.parametrize("N,n_cells,K", [(5000, 7, 2), (5000, 7, 5), (30, 7, 3), (5000, 3, 9), (0, 4, 2)])
def test_bit_sums_count_the_bits_of_each_cube(N, n_cells, K):
    rng = np.random.default_rng(14)
    bits, cells = rng.random((N, K)) < 0.4, rng.integers(n_cells, size=N)
    expected = np.array([bits[cells == c].sum(axis=0) for c in range(n_cells)]).reshape(n_cells, K)
    assert np.array_equal(bit_sums(bits, cells, n_cells), expected)


@pytest.mark.parametrize("d,G", [(1, 7), (2, 5), (3, 4), (2, 2 ** 16)])  # the last in int64
def test_cube_index_is_the_c_order_index_of_the_cube(d, G):
    rng = np.random.default_rng(15)
    X = np.concatenate([rng.random((500, d)), rng.integers(0, G + 1, size=(50, d)) / G])  # faces, and 1
    multi = np.minimum(np.floor(X * G).astype(np.int64), G - 1)
    index = cube_index(X, G)
    assert index.dtype == np.int64
    assert np.array_equal(index, np.ravel_multi_index(tuple(multi.T), (G,) * d))
