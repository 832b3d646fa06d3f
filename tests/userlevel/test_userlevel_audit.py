"""Privacy audit of the user-level randomizers (papers/003): exact losses, black box, mutants, neighbours.

Statistical checks use fixed seeds and the audit's α = 1e-6, so they do not flake.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import labeldp_sim.papers.userlevel.audit as ul
from labeldp_sim.privacy import audit
from labeldp_sim.privacy.audit import EPSILON, TOL, Case, cases, run_case
from labeldp_sim.privacy.protocols import USER_LOCAL
from labeldp_sim.papers.userlevel.data import UserValues
from labeldp_sim.papers.userlevel.mean import TwoStageTuning
from labeldp_sim.papers.userlevel.mechanisms import (BinHistogram, ClippedMean, ItemLevelLaplace, MappedSamples,
                                              OneSampleLaplace, UserRandomizer)

DRAWS = 40_000  # per input: moderate; the "(randomize)" cases use 1 in 10 of them
REAL, MUTANTS = ul.userlevel_cases(EPSILON)
BY_NAME = {c.name: c for c in REAL + MUTANTS}
TIGHT = ["ul_alg1_stage1", "ul_alg1_stage2", "ul_heavy_stage1", "ul_naive", "ul_naive_d2", "ul_item_level",
         "ul_one_sample", "ul_one_sample_d2", "ul_alg2_coordinate", "ul_kashin_stage2"]


def _exact(name):
    case = BY_NAME[name]
    return case.recipe.exact(case.mechanism)[0]


def test_registered_with_the_audit():
    names = {c.name for c in cases()}
    assert {c.name for c in REAL + MUTANTS} <= names
    # each randomizer class's audit_cases gives the cases of exactly that class, found in the registry
    randomizers = [cls for cls in audit.audited_classes() if issubclass(cls, UserRandomizer)]
    assert {BinHistogram, ClippedMean, ItemLevelLaplace, OneSampleLaplace, MappedSamples} <= set(randomizers)
    for cls in randomizers:
        own = cls.audit_cases(EPSILON)
        assert own.cases and all(type(c.mechanism) is cls for c in own.cases), cls
        assert {c.name for c in own.cases + own.mutants} <= names
    assert sorted(c.name for cls in randomizers for c in cls.audit_cases(EPSILON).cases) == sorted(c.name for c in REAL)
    assert len(MUTANTS) >= 4 and len({c.name for c in REAL + MUTANTS}) == len(REAL) + len(MUTANTS)
    for case in REAL + MUTANTS:
        assert case.mechanism.epsilon == EPSILON
        assert case.mechanism.privacy == USER_LOCAL
        assert case.recipe.neighbours.startswith("user-level")
    real_names = {c.name for c in REAL}
    assert all(m.mutant_of in real_names and m.broken for m in MUTANTS)
    # every randomizer class has a case whose draws go through randomize()
    through_randomize = {type(c.mechanism) for c in REAL if ul.RAND_NOTE in c.recipe.pair}
    assert through_randomize == {BinHistogram, ClippedMean, ItemLevelLaplace, OneSampleLaplace, MappedSamples}
    assert all(ul.LAW_NOTE in c.recipe.pair for c in REAL if not c.name.endswith("(randomize)"))


@pytest.mark.parametrize("name", [c.name for c in REAL])
def test_exact_loss_is_at_most_eps(name):
    case = BY_NAME[name]
    loss, method = case.recipe.exact(case.mechanism)
    assert loss <= EPSILON + TOL and method
    assert "DISAGREES" not in method


@pytest.mark.parametrize("name", TIGHT)
def test_exact_loss_is_eps_where_tight(name):
    assert _exact(name) == pytest.approx(EPSILON, abs=1e-9)


def test_heavy_stage_two_is_not_tight():
    # the pre-clip keeps the mean in [−4, 4] while the scale is the box width 3h + 2Δ = 11
    assert _exact("ul_heavy_stage2") == pytest.approx(8 / 11 * EPSILON, abs=1e-9)


def test_mutant_exact_losses_match_closed_forms():
    t = TwoStageTuning.theorem1(ul.D, ul.M, ul.N)
    width = 3 * t.h + 2 * t.delta
    assert _exact("ul_alg1_stage1: Lap(1/ε)") == pytest.approx(2 * EPSILON)
    assert _exact("ul_alg1_stage2: clip removed") == pytest.approx(2 * ul.BIG * ul.D / width * EPSILON)
    assert _exact("ul_alg1_stage2: scale (3h+Δ)/ε") == pytest.approx(width / (3 * t.h + t.delta) * EPSILON)
    assert _exact("ul_item_level: ε per sample") == pytest.approx(ul.M * EPSILON)
    assert _exact("ul_one_sample: clip removed") == pytest.approx(ul.BIG * EPSILON)
    assert _exact("ul_naive: report skips noise") <= EPSILON + TOL   # the law methods look private


@pytest.mark.parametrize("name", [c.name for c in MUTANTS])
def test_every_mutant_is_caught(name):
    result = run_case(BY_NAME[name], DRAWS, seed=0)
    assert result.verdict == "caught", result
    if name == "ul_naive: report skips noise":
        assert result.caught_by == "black-box"           # only the outputs give it away
    else:
        assert "exact" in result.caught_by


@pytest.mark.parametrize("name", [c.name for c in REAL])
def test_every_real_randomizer_passes(name):
    result = run_case(BY_NAME[name], DRAWS, seed=0)
    assert result.verdict == "private", result
    assert result.eps_lower <= EPSILON


def test_neighbour_relation_is_user_level():
    """P1a with the item-level scale (no factor m) passes item-level neighbours, fails user-level ones."""
    mutant = BY_NAME["ul_item_level: ε per sample"].mechanism
    item_recipe = ul.item_level_recipe()
    item_case = Case("item-level mutant, item-level neighbours", mutant, item_recipe, "ul_item_level", "no m")
    loss, _ = item_recipe.exact(mutant)
    assert loss == pytest.approx(EPSILON, abs=1e-9)      # ε-LDP per sample ...
    assert run_case(item_case, DRAWS, seed=0).verdict == "MISSED"
    user = run_case(BY_NAME["ul_item_level: ε per sample"], DRAWS, seed=0)
    assert user.verdict == "caught" and user.exact_loss == pytest.approx(ul.M * EPSILON)  # ... m·ε per user
    # the real P1a spends only ε/m on one sample
    real = BY_NAME["ul_item_level"].mechanism
    assert item_recipe.exact(real)[0] == pytest.approx(EPSILON / ul.M)


def _dense_sup(la, wa, lb, wb, b, grid):
    def log_density(locs, w):
        dist = np.abs(grid[:, None, :] - locs[None, :, :]).sum(axis=2)
        return np.log(np.exp(-dist / b) @ w)
    return float(np.max(np.abs(log_density(la, wa) - log_density(lb, wb))))


def test_mixture_loss_is_the_exact_sup():
    b = 2.0
    # one component each: ‖Δ‖₁/b
    assert ul.mixture_loss([[0.3, -1.0]], [1.0], [[-0.7, 0.5]], [1.0], b) == pytest.approx(2.5 / b)
    # 15 samples at −1, one at +1, against all at +1: log(15e/16 + 1/16) at scale 2
    la, wa = np.r_[np.full(15, -1.0), [1.0]][:, None], np.full(16, 1 / 16)
    lb, wb = np.ones((16, 1)), np.full(16, 1 / 16)
    assert ul.mixture_loss(la, wa, lb, wb, b) == pytest.approx(math.log(15 * math.e / 16 + 1 / 16))
    # random mixtures: a dense grid (tails included) never beats the knot lattice and comes close to it
    rng = np.random.default_rng(5)
    for r in (1, 2):
        for _ in range(5):
            la, lb = rng.uniform(-1, 1, (4, r)), rng.uniform(-1, 1, (3, r))
            wa, wb = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(3))
            axis = np.linspace(-6, 6, 1201 if r == 1 else 241)
            grid = np.stack(np.meshgrid(*([axis] * r), indexing="ij"), axis=-1).reshape(-1, r)
            exact = ul.mixture_loss(la, wa, lb, wb, 0.5)
            dense = _dense_sup(la, wa, lb, wb, 0.5, grid)
            pair_bound = np.abs(la[:, None, :] - lb[None, :, :]).sum(axis=2).max() / 0.5
            assert dense <= exact + 1e-12 and dense >= exact - 0.02 * r
            assert exact <= pair_bound + 1e-12


def test_exact_loss_of_the_one_sample_mixture_is_below_its_pair_bound():
    mech = OneSampleLaplace(EPSILON, 1.0)
    x = np.r_[np.full(15, -1.0), [1.0]]
    loss, method = ul.exact_loss(mech, [x, np.ones(16)])
    assert loss == pytest.approx(math.log(15 * math.e / 16 + 1 / 16))
    assert loss < mech.privacy_loss(x, np.ones(16)) == pytest.approx(EPSILON)
    assert "component-pair bound" in method


def test_randomize_path_calls_randomize_once_per_report():
    class _Counting(ClippedMean):  # "_": a fixture may override randomize, the boundary (and is not registered)
        calls = 0

        def randomize(self, x_user, rng):
            _Counting.calls += 1
            return super().randomize(x_user, rng)

    mech, pair = _Counting(EPSILON, -1.0, 1.0), (np.full(16, -1.0), np.full(16, 1.0))
    out = ul.randomize_draw(pair)(mech, 0, 5_000, np.random.default_rng(0))
    assert out.shape == (5_000 // ul.RANDOMIZE_SHARE, 1) and _Counting.calls == len(out)
    _Counting.calls = 0
    out = ul.law_draw(pair)(mech, 1, 5_000, np.random.default_rng(0))
    assert out.shape == (5_000, 1) and _Counting.calls == 0
    assert abs(np.median(out) - 1.0) < 0.2


def test_a_biased_but_private_choice_is_not_flagged():
    """P1b reporting the max sample instead of a random one is still ε-LDP: the audit checks privacy only."""
    class _MaxSample(OneSampleLaplace):  # "_": a fixture without a recipe, kept out of the registries
        def _law(self, x):
            return self.clip(x.reshape(len(x), -1).max(axis=0)), np.ones(1)

    recipe = BY_NAME["ul_one_sample"].recipe
    result = run_case(Case("one_sample: max sample", _MaxSample(EPSILON, 1.0), recipe), DRAWS, seed=0)
    assert result.verdict == "private" and result.exact_loss == pytest.approx(EPSILON)


@pytest.mark.parametrize("name", [c.name for c in REAL if c.name.endswith("(randomize)")])
@pytest.mark.parametrize("per_user", [True, False])
def test_release_sum_of_one_user_has_the_audited_law(name, per_user):
    """The estimators report through release_sum, not randomize: for a group of one user it must
    have the law the audit checked (law() + Lap(scale)), on both simulation paths."""
    case = BY_NAME[name]
    mech = case.mechanism
    rng = np.random.default_rng(11)
    for x in case.recipe.draw.pair:
        one = UserValues.from_samples(np.asarray(x)[None])
        one = UserValues(one.atoms, one.counts, per_user, support=one.support, m=one.m)
        got = np.stack([np.atleast_1d(mech.release_sum(one, rng)) for _ in range(2000)])
        want = ul.law_draw((x, x))(mech, 0, 20_000, rng)
        if isinstance(mech, ItemLevelLaplace):  # P1a's release_sum sums the m noisy samples
            want = want.sum(axis=1, keepdims=True)
        assert got.shape[1] == want.shape[1]
        for r in range(got.shape[1]):
            assert stats.ks_2samp(got[:, r], want[:, r]).pvalue > 1e-4, (x, r)
