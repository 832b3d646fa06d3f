"""Transition probabilities against the paper's formulas, and exact privacy loss."""

import itertools

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.mechanisms import RAPPOR, ExponentialMechanism, JointRAPPOR, NoPrivacy


def _rappor_output_prob(mech, z, y):
    p = np.where(np.arange(len(z)) == y, mech.p, mech.q)
    return np.prod(np.where(z, p, 1 - p))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("K", [2, 3, 5])
def test_rappor_probabilities_are_eq_11_and_exactly_eps_ldp(eps, K):
    mech = RAPPOR(eps)
    e = np.exp(eps / 2)
    assert mech.p == pytest.approx(e / (e + 1)) and mech.q == pytest.approx(1 / (e + 1))
    probs = mech.bit_probabilities(np.arange(K), K)
    assert np.allclose(np.diag(probs), mech.p) and np.allclose(probs[~np.eye(K, dtype=bool)], mech.q)
    # exact privacy loss: enumerate every output z and every pair of labels
    worst = max(abs(np.log(_rappor_output_prob(mech, z, y) / _rappor_output_prob(mech, z, y2)))
                for z in itertools.product([0, 1], repeat=K) for y in range(K) for y2 in range(K))
    assert worst == pytest.approx(eps)


def test_rappor_bits_follow_their_probabilities():
    rng = np.random.default_rng(5)
    mech, K, n = RAPPOR(1.0), 3, 60_000
    y = rng.integers(K, size=n)
    Z = mech.privatize(y, rng, K=K)
    own = Z[np.arange(n), y]
    for observed, prob in ((own, mech.p), (Z[np.arange(n), (y + 1) % K], mech.q)):
        assert stats.binomtest(int(observed.sum()), n, prob).pvalue > 1e-6


def test_joint_rappor_is_eps_dp_for_features_and_label():
    mech, cells, K, eps = JointRAPPOR(0.8), 2, 2, 0.8
    width = cells * K

    def prob(z, pos):
        p = np.where(np.arange(width) == pos, mech.p, mech.q)
        return np.prod(np.where(z, p, 1 - p))

    worst = max(abs(np.log(prob(z, a) / prob(z, b)))
                for z in itertools.product([0, 1], repeat=width)
                for a in range(width) for b in range(width))
    assert worst == pytest.approx(eps)


def test_joint_rappor_per_sample_sums_match_binomial_law():
    rng = np.random.default_rng(1)
    mech, n_cells, K, N = JointRAPPOR(1.0, chunk=500), 3, 2, 3000
    cells, y = rng.integers(n_cells, size=N), rng.integers(K, size=N)
    sums = np.array([mech.cell_sums(mech.privatize(y, rng, cells=cells, n_cells=n_cells, K=K),
                                    cells, n_cells, K) for _ in range(200)])
    counts = np.bincount(cells * K + y, minlength=n_cells * K).reshape(n_cells, K)
    mean = counts * mech.p + (N - counts) * mech.q
    var = counts * mech.p * (1 - mech.p) + (N - counts) * mech.q * (1 - mech.q)
    z = (sums.mean(axis=0) - mean) / np.sqrt(var / 200)
    assert np.all(np.abs(z) < 5.3)  # two-sided α ≈ 1e-7 per entry


@pytest.mark.parametrize("protection,weight", [("label", 0.5), ("features+label", 0.25)])
def test_exponential_mechanism_is_eq_17_and_31(protection, weight):
    eps = 1.3
    mech = ExponentialMechanism(eps, protection)
    scores = np.array([[3, 7, 5], [0, 0, 1]])
    expected = np.exp(weight * eps * scores)
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(mech.selection_probabilities(scores), expected)
    rng = np.random.default_rng(2)
    draws = np.array([mech.select(scores, rng) for _ in range(20_000)])
    for row in range(2):
        observed = np.bincount(draws[:, row], minlength=3)
        assert stats.chisquare(observed, 20_000 * expected[row]).pvalue > 1e-6


def test_exponential_mechanism_privacy_loss():
    eps = 0.9
    label = ExponentialMechanism(eps, "label")
    n = np.array([[4, 6, 2]])
    # one label moves from class 0 to class 1 in the same cube
    moved = n + np.array([[-1, 1, 0]])
    ratio = np.log(label.selection_probabilities(n) / label.selection_probabilities(moved))
    assert np.abs(ratio).max() <= eps + 1e-12
    full = ExponentialMechanism(eps, "features+label")
    # one sample leaves this cube for another: each cube's loss is at most ε/2
    left = n + np.array([[-1, 0, 0]])
    ratio = np.log(full.selection_probabilities(n) / full.selection_probabilities(left))
    assert np.abs(ratio).max() <= eps / 2 + 1e-12


def test_no_privacy_is_majority_vote():
    rng = np.random.default_rng(0)
    mech = NoPrivacy()
    scores = np.array([[5, 2], [1, 9], [3, 3]])
    picks = np.array([mech.select(scores, rng) for _ in range(2000)])
    assert (picks[:, 0] == 0).all() and (picks[:, 1] == 1).all()
    assert 0.45 < picks[:, 2].mean() < 0.55  # ties broken at random


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_mechanisms_reject_bad_epsilon(bad):
    from labeldp_sim.errors import ConfigError

    for cls in (RAPPOR, JointRAPPOR, ExponentialMechanism):
        with pytest.raises(ConfigError, match="epsilon"):
            cls(bad)
