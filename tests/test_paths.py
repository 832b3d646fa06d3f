"""The sufficient-statistic path agrees in distribution with the per-sample path."""

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.table1.families import HolderBump
from labeldp_sim.table1.estimators import CubeArgmax
from labeldp_sim.core.points import Point
from labeldp_sim.core.config import group_options
from labeldp_sim.kclass.mechanisms import ALIBI, RandomizedResponse
from labeldp_sim.privacy.rappor import RAPPOR
from labeldp_sim.table1.mechanisms import ExponentialMechanism, JointRAPPOR
from labeldp_sim.privacy.protocols import NoPrivacy
from labeldp_sim.table1.sweep import run_trial

from .test_regression import REG_MECHANISMS

ALPHA = 1e-6
REPS = 300

MECHANISMS = {
    "none": lambda: NoPrivacy(),
    "rappor": lambda: RAPPOR(1.0),
    "joint_rappor": lambda: JointRAPPOR(2.0),
    "exponential": lambda: ExponentialMechanism(0.1),
    "exponential_full": lambda: ExponentialMechanism(0.1, "features+label"),
    "rr": lambda: RandomizedResponse(1.0),
    "alibi": lambda: ALIBI(1.0),
}


def _risks(mech, point, path, K, seed):
    dist = HolderBump(d=point.d, K=K, C_M=2.0, h_scale=2.0)
    return np.array([run_trial(dist, mech, CubeArgmax(2.0), point, r, seed, path)["excess_risk"]
                     for r in range(REPS)])


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("d,N,G,G_est,K", [(1, 800, 4, 4, 2), (2, 3000, 4, 5, 3), (2, 6000, 6, 6, 2),
                                           (2, 40, 4, 10, 3)])  # 40 samples in 100 cubes: most empty
def test_paths_agree_in_distribution(name, d, N, G, G_est, K):
    point = Point("paths", "N", d, N, 1.0, N, 1.0, G=G, h=1 / G, in_regime=True, G_est=G_est)
    mech = MECHANISMS[name]()
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


def test_every_mechanism_config_has_a_path_test():
    tested = set(MECHANISMS) | set(REG_MECHANISMS)
    assert set(group_options("mechanism")) <= tested, set(group_options("mechanism")) - tested
