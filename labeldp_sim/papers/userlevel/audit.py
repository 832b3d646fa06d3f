r"""What the privacy audit runs for the user-level randomizers (papers/003): cases, mutants, careless inputs.

The randomizers are built as the estimators build them (:func:`_build`); each randomizer class's
``audit_cases`` returns :func:`randomizer_audit` of itself: the cases whose randomizer is exactly
of that class, their planted mutants and the careless inputs to it.  How each case is audited —
user-level neighbours, exact losses, enumerated data sets, draws — is in
:mod:`labeldp_sim.papers.userlevel.audit_recipes`, whose names are re-exported here.

Parameters are those the estimators use (:mod:`labeldp_sim.papers.userlevel.mean`):
D = 1, m = 16, Algorithm 1 with Theorem 1's h = 4D/√m = 1 (B = ⌈√m/2⌉ = 2
bins) and Δ = D√(ln n/m) at n = 32768; Theorem 3's tuning at p = 2,
M_p = 1, n = 65536 (D = 4, h = 1, Δ = 4, B = 8, pre-clip to ±4); the
naive baseline Lap(2Dd/ε); P1a with m = 16; P1b in d = 1 and d = 2;
Algorithm 2 (ℓ∞, d = 2) on one coordinate and Theorem 5 on one Kashin
coefficient (d = 2), each instance at the ε that :func:`algorithm2_plan`
gives it.

**Planted mutants** (test fixtures of the audit, never used by the product):
each breaks one randomizer in one way; the audit must call it "caught".
"""

from __future__ import annotations

import math

import numpy as np

from labeldp_sim.privacy.audit import AuditCases, Careless, Case, calls
from labeldp_sim.papers.userlevel.audit_recipes import (BIG, D, DIM, HEAVY, ITEM_NB, KASHIN_COEF, LAW_NOTE, M, MAX_LATTICE, N, RAND_NOTE,
                            RANDOMIZE_SHARE, USER_NB, coordinate_sets, constant_pair, kashin_sets, mean_sets,
                            make_recipe, sample_sets, vector_sets, exact_loss, item_level_recipe, law_draw,
                            mixture_loss, randomize_draw)
from labeldp_sim.papers.userlevel.data import UserValues
from labeldp_sim.papers.userlevel.mean import KASHIN_K, HeavyTailed, KashinBasis, TwoStageTuning, algorithm2_plan, split_sizes
from labeldp_sim.papers.userlevel.mechanisms import BinHistogram, ClippedMean, ItemLevelLaplace, MappedSamples, OneSampleLaplace, coordinate

__all__ = ["USER_NB", "ITEM_NB", "LAW_NOTE", "RAND_NOTE", "RANDOMIZE_SHARE", "MAX_LATTICE", "D", "M", "N", "BIG", "DIM",
           "mixture_loss", "exact_loss", "law_draw", "randomize_draw", "item_level_recipe", "userlevel_cases",
           "userlevel_careless", "randomizer_audit"]


# --------------------------------------------------------------------------- the audited randomizers


def _stage_two_box(tuning: TwoStageTuning, k):
    """[L − Δ, R + Δ] for stage I's bin k̂ (0-based): L = −D + (k̂−1)h, R = −D + (k̂+2)h (``stage_one``)."""
    L, R = -tuning.D + (k - 1) * tuning.h, -tuning.D + (k + 2) * tuning.h
    return L - tuning.delta, R + tuning.delta


def _kashin_map(basis, coef):
    def f(x):
        return basis.coefficients(x)[:, coef]
    f.__name__ = f"kashin_{coef}"
    return f


def _build(eps):
    """name -> (mechanism, recipe) of every real case, and the context the mutants reuse."""
    t1 = TwoStageTuning.theorem1(D, M, N)                       # h = 1, Δ = 0.806, B = 2
    th = HeavyTailed(p=HEAVY["p"]).tuning(HEAVY["M_p"], HEAVY["n"], M, eps)  # D = 4, h = 1, Δ = 4, B = 8
    k1 = 1                                                      # μ = 0.3 of the fixed family: bin 1
    kh = int(np.floor(th.D / th.h))                             # μ ≈ 0: the middle bin
    lo1, hi1 = _stage_two_box(t1, k1)
    loh, hih = _stage_two_box(th, kh)

    # Algorithm 2 (ℓ∞, d = 2): one coordinate's stage I at the plan's ε per instance
    _, groups2, eps2 = algorithm2_plan(DIM, eps, N)
    size2 = int(split_sizes(N, len(groups2)).min())
    t2 = TwoStageTuning.theorem1(D, M, size2)
    # Theorem 5 (ℓ2, d = 2): Algorithm 2 on the 2d Kashin coefficients, sup-norm K·D/√d
    basis = KashinBasis(DIM, 0)
    K = max(KASHIN_K, basis.K)
    _, groups5, eps5 = algorithm2_plan(2 * DIM, eps, N)
    t5 = TwoStageTuning.theorem1(K * D / math.sqrt(DIM), M, int(split_sizes(N, len(groups5)).min()))
    lo5, hi5 = _stage_two_box(t5, 1)

    mean1, meanh = mean_sets(D), mean_sets(th.D)
    samples, vectors = sample_sets(), vector_sets()
    coords, kashin = coordinate_sets(1), kashin_sets(basis)
    mean_text = "constant data sets on a grid over [−10D, 10D] and mixed ones (mean-only statistic)"
    sample_text = "constant, alternating, one-changed, 15+1 and uniform data sets (per-sample statistic)"
    vector_text = "constant data sets on {0, ±D/2, ±D, ±10D}² and mixed ones"
    coord_text = "coordinate 1 on the 1-D grid, coordinate 0 ∈ {0, ±10D}"
    kashin_text = "72 directions × radii {D, 10D} and mixed data sets"

    big = constant_pair(BIG * D)
    bigh = constant_pair(BIG * th.D)
    big2 = constant_pair(BIG * D, d=DIM)
    mixed = (np.r_[np.full(M - 1, -BIG * D), [BIG * D]], np.full(M, BIG * D))
    coord_pair = (np.tile([BIG * D, -BIG * D], (M, 1)), np.tile([-BIG * D, BIG * D], (M, 1)))
    grid = np.linspace(0.0, 2 * np.pi, 360, endpoint=False)
    units = np.c_[np.cos(grid), np.sin(grid)]
    u = units[int(np.argmax(basis.coefficients(units)[:, KASHIN_COEF]))]
    kashin_pair = (np.tile(-BIG * D * u, (M, 1)), np.tile(BIG * D * u, (M, 1)))
    ALL = "all m samples at"

    def nb(extra=""):
        return USER_NB + (f"; {extra}" if extra else "")

    stage1 = lambda: BinHistogram(eps, -t1.D, t1.h, t1.bins)  # noqa: E731
    naive = lambda: ClippedMean(eps, -D, D)  # noqa: E731
    item = lambda: ItemLevelLaplace(eps, D, M, 1)  # noqa: E731
    one = lambda: OneSampleLaplace(eps, D, 1)  # noqa: E731
    alg2 = lambda: MappedSamples(BinHistogram(eps2, -t2.D, t2.h, t2.bins), coordinate(1), linear=True,  # noqa: E731
                                 label="coordinate_1", d=DIM)
    samples_beyond = "samples beyond the clip (±10D)"
    real = {
        "ul_alg1_stage1": (stage1(), make_recipe(
            nb(f"Algorithm 1 stage I, D = 1, m = {M}, h = 4D/√m, B = {t1.bins}, Lap(2/ε); {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D (bins 0 vs B−1)", mean1, mean_text, big)),
        "ul_alg1_stage2": (ClippedMean(eps, lo1, hi1), make_recipe(
            nb(f"Algorithm 1 stage II, k̂ = {k1}: clip to [L−Δ, R+Δ] = [{lo1:.3f}, {hi1:.3f}], "
               f"Δ = D√(ln n/m) at n = {N}, Lap((3h+2Δ)/ε); {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", mean1, mean_text, big)),
        "ul_heavy_stage1": (BinHistogram(eps, -th.D, th.h, th.bins, pre_clip=th.D), make_recipe(
            nb(f"Theorem 3 stage I, p = 2, M_p = 1, n = {HEAVY['n']}: D = {th.D:g}, h = {th.h:g}, "
               f"B = {th.bins}, user mean pre-clipped to ±D; samples at ±10D = ±{BIG * th.D:g}"),
            f"{ALL} −{BIG * th.D:g} vs {ALL} +{BIG * th.D:g}", meanh, mean_text + " (D = 4)", bigh)),
        "ul_heavy_stage2": (ClippedMean(eps, loh, hih, pre_clip=th.D), make_recipe(
            nb(f"Theorem 3 stage II, k̂ = {kh}: box [{loh:g}, {hih:g}] ⊃ pre-clip [−{th.D:g}, {th.D:g}], "
               f"Lap((3h+2Δ)/ε); samples at ±{BIG * th.D:g}"),
            f"{ALL} −{BIG * th.D:g} vs {ALL} +{BIG * th.D:g}", meanh, mean_text + " (D = 4)", bigh)),
        "ul_naive": (naive(), make_recipe(
            nb(f"naive baseline clip(X̄, ±D) + Lap(2D/ε), d = 1; {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", mean1, mean_text, big)),
        "ul_naive_d2": (ClippedMean(eps, np.full(DIM, -D), np.full(DIM, D)), make_recipe(
            nb(f"naive baseline, d = {DIM}: clip to [−D, D]^d + Lap(2Dd/ε) per coordinate; {samples_beyond}"),
            f"{ALL} (−10D, −10D) vs {ALL} (+10D, +10D)", vectors, vector_text, big2)),
        "ul_item_level": (item(), make_recipe(
            nb(f"P1a, m = {M}: every sample clip(X_j, ±D) + Lap(2Dm/ε); {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", samples, sample_text, big)),
        "ul_one_sample": (one(), make_recipe(
            nb(f"P1b: one uniform sample clip(X_J, ±D) + Lap(2D/ε), a mixture of m = {M} components; "
               f"{samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", samples, sample_text, big)),
        "ul_one_sample_d2": (OneSampleLaplace(eps, D, DIM), make_recipe(
            nb(f"P1b, d = {DIM}: Lap(2Dd/ε) per coordinate; {samples_beyond}"),
            f"{ALL} (−10D, −10D) vs {ALL} (+10D, +10D)", vectors, vector_text, big2)),
        "ul_alg2_coordinate": (alg2(), make_recipe(
            nb(f"Algorithm 2 (ℓ∞, d = {DIM}), stage I on coordinate 1 at ε_inst = {eps2:g} "
               f"(algorithm2_plan), B = {t2.bins}; {samples_beyond}"),
            f"{ALL} (+10D, −10D) vs {ALL} (−10D, +10D)", coords, coord_text, coord_pair)),
        "ul_kashin_stage2": (MappedSamples(ClippedMean(eps5, lo5, hi5), _kashin_map(basis, KASHIN_COEF),
                                           label=f"kashin_{KASHIN_COEF}", d=DIM), make_recipe(
            nb(f"Theorem 5 (ℓ2, d = {DIM}): stage II on Kashin coefficient {KASHIN_COEF}, K = {K:g}, "
               f"box [{lo5:.3f}, {hi5:.3f}] at ε_inst = {eps5:g}; samples at radius 10D"),
            f"{ALL} −10D·u vs {ALL} +10D·u (u maximising a_{KASHIN_COEF} on the unit circle)",
            kashin, kashin_text, kashin_pair)),
        # the randomize() path, one case per randomizer class (1 in RANDOMIZE_SHARE of the draws)
        "ul_alg1_stage1 (randomize)": (stage1(), make_recipe(
            nb(f"Algorithm 1 stage I as above; {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", mean1, mean_text, big, randomize=True)),
        "ul_naive (randomize)": (naive(), make_recipe(
            nb(f"naive baseline as above; {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", mean1, mean_text, big, randomize=True)),
        "ul_item_level (randomize)": (item(), make_recipe(
            nb(f"P1a as above; {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", samples, sample_text, big, randomize=True)),
        "ul_one_sample (randomize)": (one(), make_recipe(
            nb(f"P1b as above; {samples_beyond}"),
            f"15 samples at −10D and one at +10D vs {ALL} +10D (pair loss log(15e^ε/16 + 1/16))",
            samples, sample_text, mixed, randomize=True)),
        "ul_alg2_coordinate (randomize)": (alg2(), make_recipe(
            nb(f"Algorithm 2 coordinate instance as above; {samples_beyond}"),
            f"{ALL} (+10D, −10D) vs {ALL} (−10D, +10D)", coords, coord_text, coord_pair, randomize=True)),
    }
    context = {"t1": t1, "box1": (lo1, hi1)}
    return real, context


# --------------------------------------------------------------------------- planted mutants
# TEST FIXTURES OF THE AUDIT.  Each class breaks one randomizer in one way; the audit must call
# every one of them "caught".  Nothing in the product uses them.


class _MutantHalfScaleHistogram(BinHistogram):
    """Fixture: stage I noise Lap(1/ε) instead of Lap(2/ε) (loss 2ε: two bins move)."""

    @property
    def scale(self) -> float:
        return 1.0 / self.epsilon


class _MutantUnclippedStageTwo(ClippedMean):
    """Fixture: stage II without the clip: the raw user mean enters (unbounded loss; 20D/b at ±10D)."""

    def clip(self, y):
        return np.asarray(y, dtype=float).reshape(-1, len(self.lo))


class _MutantOneDeltaStageTwo(ClippedMean):
    """Fixture: stage II scale (3h+Δ)/ε, one Δ short of the box width 3h+2Δ (loss (3h+2Δ)/(3h+Δ)·ε)."""

    def __init__(self, epsilon, lo, hi, delta):
        super().__init__(epsilon, lo, hi)
        self.delta = float(delta)

    @property
    def scale(self) -> float:
        return (self.sensitivity - self.delta) / self.epsilon


class _MutantItemScaleItemLevel(ItemLevelLaplace):
    """Fixture: P1a noise Lap(2Dd/ε) from the item-level sensitivity, without the factor m.

    ε per sample instead of ε/m: item-level ε-LDP, but m·ε at the user level.
    """

    @property
    def scale(self) -> float:
        return 2.0 * self.D * self.d / self.epsilon


class _MutantNoiselessNaive(ClippedMean):
    """Fixture: the naive report skips its noise; the law methods still say Lap(2D/ε)."""

    def randomize(self, x_user, rng):
        return self.location(x_user).astype(float)


class _MutantUnclippedOneSample(OneSampleLaplace):
    """Fixture: P1b without the per-sample clip (loss 10ε at ±10D)."""

    def clip(self, samples):
        return np.asarray(samples, dtype=float).reshape(-1, self.d)


def userlevel_cases(eps):
    """The user-level randomizers as the estimators of papers/003 build them, and their mutants."""
    real, ctx = _build(eps)
    t1, (lo1, hi1) = ctx["t1"], ctx["box1"]
    mutants = [
        ("ul_alg1_stage1: Lap(1/ε)", "ul_alg1_stage1", _MutantHalfScaleHistogram(eps, -t1.D, t1.h, t1.bins),
         "histogram noise Lap(1/ε), not Lap(2/ε)"),
        ("ul_alg1_stage2: clip removed", "ul_alg1_stage2", _MutantUnclippedStageTwo(eps, lo1, hi1),
         "user mean enters unclipped"),
        ("ul_alg1_stage2: scale (3h+Δ)/ε", "ul_alg1_stage2", _MutantOneDeltaStageTwo(eps, lo1, hi1, t1.delta),
         "Lap((3h+Δ)/ε), box width 3h+2Δ"),
        ("ul_item_level: ε per sample", "ul_item_level", _MutantItemScaleItemLevel(eps, D, M, 1),
         "Lap(2D/ε): item-level scale, no factor m"),
        ("ul_naive: report skips noise", "ul_naive (randomize)", _MutantNoiselessNaive(eps, -D, D),
         "randomize() returns clip(X̄)"),
        ("ul_one_sample: clip removed", "ul_one_sample", _MutantUnclippedOneSample(eps, D, 1),
         "X_J unclipped"),
    ]
    return ([Case(name, mech, recipe) for name, (mech, recipe) in real.items()],
            [Case(name, mech, real[parent][1], parent, broken) for name, parent, mech, broken in mutants])


def userlevel_careless(eps):
    """Careless inputs to the user-level randomizers: wrong sample shapes for the declared d, NaN and
    ±inf in samples or user statistics, an ε whose noise scale overflows; each must be refused in one
    line naming the argument."""
    rng = np.random.default_rng(0)
    wide = (np.array([[-1.0, 0.9]] * 4), np.array([[-0.4, 0.1]] * 4))   # the (m, 2) pair of the issue
    pair2 = (np.full((M, DIM), -BIG * D), np.full((M, DIM), BIG * D))
    nan_set = np.r_[np.full(M - 1, D), [np.nan]]
    histogram, naive, item = BinHistogram(eps, -1.0, 0.5, 4), ClippedMean(eps, -D, D), ItemLevelLaplace(eps, D, M)
    inf_support = UserValues(np.array([[M - 1, 1]]), np.ones(1, dtype=np.int64), True,
                             support=np.array([0.0, np.inf]), m=M)
    alg2 = MappedSamples(BinHistogram(eps, -D, D, 2), coordinate(1), linear=True, label="coordinate_1", d=DIM)
    return [
        Careless("ul_alg1_stage1: samples (m, 2), d = 1", histogram, calls("privacy_loss", *wide), "x_user",
                 "BinHistogram(ε, −1, .5, 4) on (4, 2) samples: two bins per user, loss 2ε"),
        Careless("ul_item_level: samples (m, 2), d omitted", item, calls("privacy_loss", *pair2), "x_user",
                 "read as 2m samples of d = 1: loss 2ε"),
        Careless("ul_naive: samples (m, 2), d = 1", naive, calls("privacy_loss", *pair2), "x_user",
                 "only the first coordinate of the mean is read"),
        Careless("ul_one_sample: samples (m, 2), d = 1", OneSampleLaplace(eps, D), calls("privacy_loss", *pair2),
                 "x_user", "2m mixture components for m weights"),
        Careless("ul_alg2_coordinate: samples (m, 3), d = 2", alg2, calls("randomize", np.zeros((M, 3)), rng),
                 "x_user", "a third coordinate the instance does not declare"),
        Careless("ul_alg1_stage1: NaN sample", histogram, calls("randomize", nan_set, rng), "x_user",
                 "NaN: its bin index is INT_MIN, an IndexError traceback"),
        Careless("ul_naive: NaN sample", naive, calls("randomize", nan_set, rng), "x_user",
                 "NaN passes the clip and comes out NaN"),
        Careless("ul_naive: 2-D users in release_sum, d = 1", naive,
                 calls("release_sum", UserValues.from_statistics(np.zeros((4, 2))), rng), "values",
                 "user means of dimension 2 for a box of dimension 1"),
        Careless("ul_alg1_stage1: NaN user mean in release_sum", histogram,
                 calls("release_sum", UserValues.from_statistics(np.array([np.nan, 0.0])), rng), "values",
                 "a NaN user mean: bin index INT_MIN, a traceback from bincount"),
        Careless("ul_item_level: inf sample in release_sum", item, calls("release_sum", inf_support, rng), "values",
                 "a sample support point at +inf"),
        Careless("ul_naive: ε = 1e-320", ClippedMean, lambda cls: cls(1e-320, -D, D).randomize(np.zeros(M), rng),
                 "epsilon", "ε = 1e-320: the noise scale 2D/ε overflows to inf"),
    ]


def _owner(mechanism) -> type:
    return mechanism if isinstance(mechanism, type) else type(mechanism)


def randomizer_audit(cls, eps) -> AuditCases:
    """The rows of randomizer class ``cls``: the real cases whose randomizer is exactly a ``cls``,
    the mutants of those cases and the careless inputs to a ``cls``.

    What :meth:`UserRandomizer.audit_cases <labeldp_sim.papers.userlevel.randomizer.UserRandomizer.audit_cases>`
    returns: a randomizer class none of these cases holds gets no row, and the audit refuses to run.
    """
    real, mutants = userlevel_cases(eps)
    own = [c for c in real if type(c.mechanism) is cls]
    names = {c.name for c in own}
    return AuditCases(own, [c for c in mutants if c.mutant_of in names],
                      [c for c in userlevel_careless(eps) if _owner(c.mechanism) is cls])
