"""K-class label LDP (papers/002): transition probabilities against the formulas, Bayes accuracy."""


import numpy as np
import pytest
from scipy import stats

from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.papers.kclass.families import GaussianCircle
from labeldp_sim.papers.kclass.methods import method_scores
from labeldp_sim.papers.kclass.mechanisms import ALIBI, RandomizedResponse, RRWithPrior

ALPHA = 1e-6


def _empirical(mech, K, rng, n=120_000, **kw):
    y = np.repeat(np.arange(K), n // K)
    z = mech.report(y, rng, K=K, **kw)
    return y, z


@pytest.mark.parametrize("eps,K", [(1.0, 2), (1.0, 7), (2.5, 12)])
def test_randomized_response_matches_its_formula(eps, K):
    mech = RandomizedResponse(eps)
    M = mech.transition_matrix(K)
    e = np.exp(eps)
    assert np.allclose(np.diag(M), e / (e + K - 1)) and np.allclose(M.sum(axis=1), 1)
    assert np.log(M.max(axis=0) / M.min(axis=0)).max() == pytest.approx(eps)  # exactly ε-LDP
    y, z = _empirical(mech, K, np.random.default_rng(K))
    for i in range(K):
        observed = np.bincount(z[y == i], minlength=K)
        assert stats.chisquare(observed, observed.sum() * M[i]).pvalue > ALPHA


def _brute_force_k(prior, eps):
    ordered = np.sort(prior)[::-1]
    e = np.exp(eps)
    return 1 + int(np.argmax([e / (e + k - 1) * ordered[:k].sum() for k in range(1, len(prior) + 1)]))


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_rr_with_prior_top_k_and_transitions(eps):
    rng = np.random.default_rng(int(eps * 10))
    mech = RRWithPrior(eps)
    for _ in range(50):
        prior = rng.dirichlet(np.full(6, 0.4))
        _, k_star = mech.top_k_sets(prior[None, :])
        assert k_star[0] == _brute_force_k(prior, eps)  # maximises e^ε/(e^ε+k−1) · P(top k)
    prior = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
    M = mech.transition_matrix(prior)
    assert np.allclose(M.sum(axis=1), 1)
    support = M.max(axis=0) > 0
    assert np.log(M[:, support].max(axis=0) / M[:, support].min(axis=0)).max() <= eps + 1e-12
    y, z = _empirical(mech, 6, rng, prior=np.tile(prior, (120_000, 1)))
    for i in range(6):
        observed = np.bincount(z[y == i], minlength=6)[support]
        assert stats.chisquare(observed, observed.sum() * M[i, support]).pvalue > ALPHA


@pytest.mark.parametrize("eps,K", [(1.0, 4), (2.0, 10)])
def test_alibi_noise_soft_labels_and_privacy(eps, K):
    mech = ALIBI(eps)
    rng = np.random.default_rng(7)
    y = rng.integers(K, size=30_000)
    noisy = mech.report(y, rng, K=K)
    noise = noisy - np.eye(K)[y]
    assert stats.kstest(noise.ravel()[:50_000], stats.laplace(scale=2 / eps).cdf).pvalue > ALPHA
    # (29): softmax_c(f(o, c)/λ), f(o, c) = −Σ_k |o_k − [c = k]|
    f = -np.abs(noisy[:200, None, :] - np.eye(K)[None, :, :]).sum(axis=2)
    expected = np.exp(f / mech.scale - (f / mech.scale).max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(mech.soft_labels(noisy[:200]), expected)
    # one-hot vectors differ by 2 in ℓ1: worst density ratio of Lap(2/ε) per coordinate is e^ε
    o = np.linspace(-5, 5, 2001)
    ratio = (stats.laplace.logpdf(o, 1, mech.scale) + stats.laplace.logpdf(0, 0, mech.scale)
             - stats.laplace.logpdf(o, 0, mech.scale) - stats.laplace.logpdf(0, 1, mech.scale))
    assert np.abs(ratio).max() <= eps + 1e-9


@pytest.mark.parametrize("K,sigma", [(3, 0.3), (12, 0.08), (40, 0.05), (25, "2/K")])
def test_bayes_accuracy_to_1e_3(K, sigma):
    family = GaussianCircle(K, sigma)
    rng = np.random.default_rng(K)
    X, y = family.sample(300_000, rng)
    correct = np.argmax(family.posterior(X), axis=1) == y
    se = correct.std() / np.sqrt(len(y))
    assert abs(family.bayes_accuracy() - correct.mean()) < max(5.3 * se, 1e-3)
    assert np.allclose(family.posterior(X[:10]).sum(axis=1), 1)


def test_vector_approximation_beats_rr_at_large_K():
    """A small version of Figure 2(a): at K = 40 the vector approximation is well ahead of RR."""
    family = GaussianCircle(40, 0.05)
    from scipy.spatial import cKDTree

    accuracy = {"rr": [], "vector_approximation": []}
    for t in range(6):
        rng = np.random.default_rng(100 + t)
        X, y = family.sample(10_000, rng)
        X_test, _ = family.sample(500, rng)
        eta = family.posterior(X_test)
        _, neighbours = cKDTree(X).query(X_test, k=200)
        for method in accuracy:
            predictions = method_scores(method, X, y, 40, 1.0, neighbours, rng, 200)
            accuracy[method].append(eta[np.arange(500), predictions].mean())
    assert np.mean(accuracy["vector_approximation"]) > np.mean(accuracy["rr"]) + 0.1


@pytest.mark.parametrize("override,key", [("kclass.sigma=bad", "kclass.sigma"), ("kclass.K=[1,4]", "kclass.K"),
                                          ("kclass.methods=[rr,magic]", "kclass.methods"),
                                          ("kclass.eps=0", "kclass.eps")])
def test_kclass_bad_input(make_cfg, override, key):
    from labeldp_sim.papers.kclass.experiments import validate_kclass

    with pytest.raises(ConfigError) as err:
        validate_kclass(make_cfg(["experiment=kclass_fig2b", override]))
    assert err.value.key == key and "\n" not in str(err.value)


# Golden values computed by the pre-move code (commit 84971ec, labeldp_sim/kclass.py's
# synthetic_trial and digits_records): the move onto the shared core (keyed_rng for the
# old _stream, methods.py, experiments.py) must give the same numbers from the same seeds.
GOLDEN_SYNTHETIC = {"rr": 0.5396873464606368, "lp_2st": 0.5414853842679304, "alibi": 0.5468249586305369,
                    "vector_approximation": 0.52972539949281, "non_private": 0.6974860666288746}
GOLDEN_DIGITS = {"rr": 0.62708719851577, "lp_2st": 0.738404452690167, "alibi": 0.6549165120593692,
                 "vector_approximation": 0.673469387755102, "non_private": 0.9573283858998145}


def test_kclass_numbers_are_unchanged_by_the_move_onto_the_shared_core():
    from labeldp_sim.papers.kclass.experiments import digits_records, synthetic_trial

    methods = list(GOLDEN_SYNTHETIC)
    rows = synthetic_trial("kclass_fig2a", 10, 0.3, 2000, 50, 1.0, 200, 0.5, methods, 20261122, 3)
    synthetic = {r["method"]: r["accuracy"] for r in rows}
    digits = digits_records(1.0, methods, 25, 0.3, 20261122, 2, 0.5)
    for got, golden in ((synthetic, GOLDEN_SYNTHETIC), (dict(zip(digits.method, digits.accuracy)), GOLDEN_DIGITS)):
        assert set(got) == set(golden)
        # The predictions are integers and identical on every machine; the accuracies are means
        # of posteriors whose last bits depend on the CPU's BLAS kernels and summation order
        # (seen: ...746 vs ...747).  rtol 1e-12 allows that; a changed prediction would move an
        # accuracy by (eta_a - eta_b) / n_test, far above 1e-12 unless two classes tie exactly.
        for method, value in golden.items():
            assert got[method] == pytest.approx(value, rel=1e-12, abs=0), method


def test_methods_are_components_found_by_name():
    """Each method is a class of group kclass.method, found by its YAML name, whose declared
    parameters are exactly its constructor's keywords; ε limits and labels come from the classes."""
    import inspect

    from labeldp_sim.harness.components import by_name
    from labeldp_sim.papers.kclass.methods import GROUP, max_epsilon, method
    from labeldp_sim.privacy.rappor import RAPPOR

    table = by_name(GROUP)
    assert list(table) == ["rr", "lp_2st", "alibi", "alibi_sampled", "vector_approximation", "non_private"]
    for name, cls in table.items():
        keywords = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
        assert keywords == list(cls.parameters), name
        assert cls.label and method(name, 1.0).predict
    assert max_epsilon(["vector_approximation"]) == RAPPOR.max_epsilon
    assert max_epsilon(["rr", "vector_approximation"]) == RandomizedResponse.max_epsilon
    assert max_epsilon(["non_private"]) == float("inf")
    assert method("lp_2st", 2.0, 0.3).split == 0.3


def test_alibi_sampled_draws_as_before():
    """alibi_sampled (not in the golden trial above): its stream, drawn the way the pre-component
    code drew it (report, then one uniform per sample, then the vote's tie-breaking uniforms)."""
    from labeldp_sim.papers.kclass.methods import method_scores

    family = GaussianCircle(6, 0.3)
    rng = np.random.default_rng(5)
    X, y = family.sample(400, rng)
    X_test, _ = family.sample(50, rng)
    from scipy.spatial import cKDTree

    _, neighbours = cKDTree(X).query(X_test, k=15)
    got = method_scores("alibi_sampled", X, y, 6, 1.0, neighbours, np.random.default_rng(9), 15)
    stream = np.random.default_rng(9)
    mech = ALIBI(1.0)
    soft = mech.soft_labels(mech.report(y, stream, K=6))
    sampled = (soft.cumsum(axis=1) < stream.random((len(soft), 1))).sum(axis=1).clip(max=5)
    scores = np.eye(6)[sampled][neighbours].mean(axis=1) + 1e-9 * stream.random((50, 6))
    np.testing.assert_array_equal(got, np.argmax(scores, axis=1))
