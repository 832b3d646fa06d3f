"""Transition probabilities against the paper's formulas, and exact privacy loss."""

import itertools

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.privacy.rappor import RAPPOR
from labeldp_sim.privacy.protocols import CubeData, NoPrivacy, argmax_random_ties
from labeldp_sim.papers.table1.mechanisms import ExponentialMechanism, ExponentialMechanismFull, JointRAPPOR


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
    Z = mech.report(y, rng, K=K)
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
    sums = np.array([mech.collect(y, rng, cells=cells, n_cells=n_cells, K=K) for _ in range(200)])
    counts = np.bincount(cells * K + y, minlength=n_cells * K).reshape(n_cells, K)
    mean = counts * mech.p + (N - counts) * mech.q
    var = counts * mech.p * (1 - mech.p) + (N - counts) * mech.q * (1 - mech.q)
    z = (sums.mean(axis=0) - mean) / np.sqrt(var / 200)
    assert np.all(np.abs(z) < 5.3)  # two-sided α ≈ 1e-7 per entry


@pytest.mark.parametrize("cls,weight", [(ExponentialMechanism, 0.5), (ExponentialMechanismFull, 0.25)])
def test_exponential_mechanism_is_eq_17_and_31(cls, weight):
    eps = 1.3
    mech = cls(eps)
    scores = np.array([[3, 7, 5], [0, 0, 1]])
    expected = np.exp(weight * eps * scores)
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(mech.selection_probabilities(scores), expected)
    rng = np.random.default_rng(2)
    data = CubeData.from_counts(scores, np.arange(3))
    draws = np.array([mech.release(data, rng, 10, 0.5, 1, K=3) for _ in range(20_000)])
    for row in range(2):
        observed = np.bincount(draws[:, row], minlength=3)
        assert stats.chisquare(observed, 20_000 * expected[row]).pvalue > 1e-6


def test_exponential_mechanism_privacy_loss():
    eps = 0.9
    label = ExponentialMechanism(eps)
    n = np.array([[4, 6, 2]])
    # one label moves from class 0 to class 1 in the same cube
    moved = n + np.array([[-1, 1, 0]])
    ratio = np.log(label.selection_probabilities(n) / label.selection_probabilities(moved))
    assert np.abs(ratio).max() <= eps + 1e-12
    full = ExponentialMechanismFull(eps)
    # one sample leaves this cube for another: each cube's loss is at most ε/2
    left = n + np.array([[-1, 0, 0]])
    ratio = np.log(full.selection_probabilities(n) / full.selection_probabilities(left))
    assert np.abs(ratio).max() <= eps / 2 + 1e-12


def test_no_privacy_is_majority_vote():
    rng = np.random.default_rng(0)
    mech = NoPrivacy()
    cells = np.repeat([0, 0, 1, 2], [5, 2, 10, 6])
    y = np.concatenate([[0] * 5, [1] * 2, [1] * 9, [0], [0] * 3, [1] * 3])
    scores = mech.collect(y, rng, K=2, cells=cells, n_cells=3)
    assert scores.tolist() == [[5, 2], [1, 9], [3, 3]]
    picks = np.array([argmax_random_ties(scores, rng) for _ in range(2000)])
    assert (picks[:, 0] == 0).all() and (picks[:, 1] == 1).all()
    assert 0.45 < picks[:, 2].mean() < 0.55  # ties broken at random


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_mechanisms_reject_bad_epsilon(bad):
    from labeldp_sim.harness.errors import ConfigError

    for cls in (RAPPOR, JointRAPPOR, ExponentialMechanism):
        with pytest.raises(ConfigError, match="epsilon"):
            cls(bad)


# --------------------------------------------------------------------------- the component contract


def _registered_mechanisms():
    """Every concrete mechanism class of the package, as the registries list them once its modules load."""
    import labeldp_sim.papers.kclass.mechanisms  # noqa: F401
    import labeldp_sim.papers.table1.mechanisms  # noqa: F401
    import labeldp_sim.papers.userlevel.mechanisms  # noqa: F401
    from labeldp_sim.privacy.audit import audited_classes

    return [cls for cls in audited_classes() if cls.__module__.startswith("labeldp_sim.")]


@pytest.mark.parametrize("cls", _registered_mechanisms(), ids=lambda cls: cls.__name__)
def test_every_mechanism_declares_exactly_its_keyword_parameters(cls):
    import inspect

    from labeldp_sim.harness.components import Constraint

    signature = inspect.signature(cls.__init__)
    keywords = [p.name for p in signature.parameters.values()
                if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    assert list(cls.parameters) == keywords
    assert all(isinstance(c, Constraint) for c in cls.parameters.values())
    if "epsilon" in cls.parameters:
        declared = cls.parameters["epsilon"]
        for bad in (0, -1.0, float("nan"), float("inf"), True, "1"):
            assert not declared.accepts(bad)
        assert declared.accepts(1.0)
        if cls.max_epsilon < float("inf"):  # the declared bound is the one the constructor enforces
            assert declared.accepts(cls.max_epsilon) and not declared.accepts(cls.max_epsilon * (1 + 1e-9))


def test_the_declared_parameters_are_the_checks():
    from labeldp_sim.harness.errors import ConfigError
    from labeldp_sim.papers.table1.mechanisms import JointLaplace, LaplaceCubeMeanFull

    for build, key in ((lambda: JointRAPPOR(1.0, chunk=0), "chunk"), (lambda: JointRAPPOR(1.0, chunk=2.5), "chunk"),
                       (lambda: ExponentialMechanism(72.5), "epsilon"),
                       (lambda: LaplaceCubeMeanFull(1.0, 1.0, n0_fraction=1.5), "n0_fraction"),
                       (lambda: JointLaplace(1.0, 1.0, floor_fraction=True), "floor_fraction"),
                       (lambda: JointLaplace(1.0, 1.0, floor_fraction="half"), "floor_fraction")):
        with pytest.raises(ConfigError, match=rf"^{key}: got [^\n]*; allowed: "):
            build()


def test_a_public_mechanism_cannot_override_the_boundary():
    """report, collect, sample_aggregate, release, law, release_sum, randomize: the protocol's, checked."""
    from labeldp_sim.privacy.audit import audited_classes
    from labeldp_sim.papers.table1.mechanisms import LaplaceCubeMean
    from labeldp_sim.papers.userlevel.mechanisms import ClippedMean

    before = set(audited_classes())
    with pytest.raises(TypeError, match="SkipsChecks may not override LocalMechanism.report"):
        class SkipsChecks(RAPPOR):
            def report(self, y, rng, *, K=None, cells=None, n_cells=None):
                return self._report(y, rng, K=K)
    with pytest.raises(TypeError, match="may not override CubeSumMechanism.sample_aggregate"):
        class SamplesUnchecked(RAPPOR):
            def sample_aggregate(self, data, N, rng, K=None):
                return self._sample_aggregate(data, N, rng, K)
    with pytest.raises(TypeError, match="may not override CentralMechanism.release"):
        class ReleasesUnchecked(LaplaceCubeMean):
            def release(self, data, rng, N, h, d, K=None):
                return self._release(data, rng, N, h, d, K)
    for method in ("law", "randomize", "release_sum"):
        with pytest.raises(TypeError, match=f"may not override UserRandomizer.{method},"):
            type("Bypass", (ClippedMean,), {method: lambda self, *args: None})
    assert set(audited_classes()) == before  # a refused class is not registered
    # a planted fixture (named _…) may, and stays out of the registries
    type("_Planted", (RAPPOR,), {"report": lambda self, y, rng, **given: y})
    assert set(audited_classes()) == before


def test_the_boundary_takes_cube_data_only():
    from labeldp_sim.harness.errors import ConfigError

    with pytest.raises(ConfigError, match="^data: got ndarray; allowed: a CubeData"):
        ExponentialMechanism(1.0).release(np.zeros((2, 2)), np.random.default_rng(0), 4, 0.5, 1, K=2)
    with pytest.raises(ConfigError, match="^data: got dict"):
        RAPPOR(1.0).sample_aggregate({"counts": [[1, 2]]}, 3, np.random.default_rng(0), K=2)


# --------------------------------------------------------------------------- protocols (SPEC §8)

def test_a_half_written_mechanism_cannot_be_built():
    from labeldp_sim.privacy.protocols import CentralMechanism, CubeSumMechanism, LocalMechanism

    class NoReport(LocalMechanism):
        name = "no_report"

    class NoSampler(CubeSumMechanism):
        def report(self, y, rng, *, K=None, cells=None, n_cells=None):
            return y

        def aggregate(self, reports, cells, n_cells, K):
            return reports

    class NoRelease(CentralMechanism):
        pass

    for cls in (NoReport, NoSampler, NoRelease):
        with pytest.raises(TypeError, match="abstract"):
            cls(1.0)


def test_K_is_given_never_inferred():
    from labeldp_sim.harness.errors import ConfigError
    from labeldp_sim.papers.kclass.mechanisms import ALIBI, RandomizedResponse

    y = np.array([0, 1, 1])
    for mech in (RAPPOR(1.0), RandomizedResponse(1.0), ALIBI(1.0)):
        with pytest.raises(ConfigError, match="^K:"):
            mech.report(y, np.random.default_rng(0))
    assert RAPPOR(1.0).report(np.array([0, 0]), np.random.default_rng(0), K=5).shape == (2, 5)


def test_central_release_clips_on_both_paths():
    """The per-sample path once summed raw labels: both paths now run one release on the same data."""
    from labeldp_sim.papers.table1.mechanisms import LaplaceCubeMean

    cells = np.array([0, 0, 1, 1, 1])
    y = np.array([10.0, -0.5, 0.2, 30.0, -30.0])  # labels beyond T = 1
    samples = CubeData.from_samples(cells, y, 3)
    values = np.array([10.0, -0.5, 0.2, 30.0, -30.0])
    counts = CubeData.from_counts(np.array([[1, 1, 0, 0, 0], [0, 0, 1, 1, 1], [0, 0, 0, 0, 0]]), values)
    for data in (samples, counts):
        assert data.clipped_sums(1.0).tolist() == pytest.approx([0.5, 0.2, 0.0])
        assert data.n().tolist() == [2.0, 3.0, 0.0]
    mech = LaplaceCubeMean(1.0, 1.0)
    for data in (samples, counts):
        location, scale = mech.location_and_scale(data, 5, 1 / 3, 1)
        assert location.tolist() == pytest.approx([0.25, 0.2 / 3, 0.0])
        assert scale[:2].tolist() == pytest.approx([1.0, 2 / 3]) and np.isnan(scale[2])


def test_randomized_response_on_a_cube_is_private(make_cfg, tmp_path):
    """mechanism=rr on cls_label_ldp: privatized (riskier than no privacy), not a pass-through."""
    from labeldp_sim.papers.table1.experiment import build_experiment
    from labeldp_sim.papers.table1.sweep import run_sweep

    risks = {}
    for mech in ("rr", "none"):
        exp = build_experiment(make_cfg([
            "experiment=cls_label_ldp", f"mechanism={mech}", "grid.d=[1]", "grid.reps=200",
            "grid.sweeps.N.values=[100000]", "~grid.sweeps.eps", "runner.n_jobs=1", "runner.path=sufficient",
            "runner.progress=false", f"paths.results_dir={tmp_path}"] + (
            ["cell=cls_nonprivate"] if mech == "none" else [])))
        risks[mech] = run_sweep(exp).excess_risk.to_numpy()
    gap = risks["rr"].mean() - risks["none"].mean()
    se = np.sqrt(risks["rr"].var(ddof=1) / 200 + risks["none"].var(ddof=1) / 200)
    assert gap > 5.3 * se
