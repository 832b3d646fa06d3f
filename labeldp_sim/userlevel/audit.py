r"""Audit recipes of the user-level randomizers (papers/003): exact losses, black-box pairs, planted mutants.

Registered with :func:`labeldp_sim.privacy.audit.register_cases` on import;
``labeldp-sim audit`` runs them with every other paper's.

**Neighbours are user-level** (Definition 1 of papers/003): x ~ x' when one
user's *whole* data set of m samples is replaced, x, x' ∈ X^m arbitrary —
all m samples at −10D against all at +10D, samples beyond every clip,
mixed data sets.  (Item-level neighbours, one sample changed, are a much
weaker relation: :data:`ITEM_NB` and :func:`item_level_recipe` show it on the
P1a mechanism, for the tests only; nothing registers them.)

**Exact check.**  Every randomizer's report has the law
Σ_c w_c ⊗_r Lap(loc_c(x)_r, b) given by its own ``law(x)`` and ``scale``.

* One component (:class:`BinHistogram`, :class:`ClippedMean`,
  :class:`ItemLevelLaplace`, :class:`MappedSamples` of those): the loss of a
  pair is exactly ‖loc(x) − loc(x')‖₁ / b (attained on a quadrant).  It is
  computed from ``law``/``scale`` for every pair of an enumerated family of
  whole data sets (vectorised), and the mechanism's own ``privacy_loss`` is
  called on the worst pair as a cross-check (the larger of the two is
  reported, so a wrong ``privacy_loss`` cannot hide a loss).
* A mixture (:class:`OneSampleLaplace`): the exact
  sup_z |log p_x(z)/p_x'(z)| of the two mixture densities,
  :func:`mixture_loss`.  It is attained on the lattice of the components'
  location coordinates ("knots"): inside a cell of that lattice every
  |z_r − a_cr| is affine in z_r, so for the other coordinates fixed
  p_x/p_x' = (A t + B)/(A' t + B') with t = e^{2 z_r/b} and A, B, A', B' ≥ 0
  — a linear-fractional map of t, monotone — and beyond the last knot it is
  constant; moving one coordinate at a time to the better end of its cell
  ends on a knot without lowering the ratio.  So the max over the knot
  lattice is the exact sup (no grid error, tails included).  The
  component-pair bound ``privacy_loss`` (quasi-convexity) is reported beside it.

The enumerated data sets, and why they contain the worst pairs, are stated
with each family below (``_mean_sets``, ``_sample_sets``, ``_vector_sets``,
``_coordinate_sets``, ``_kashin_sets``).

**Black box.**  ``draw(mech, side, n, rng)`` returns n reports for the user's
data set x (side 0) or x' (side 1).  Calling ``randomize`` costs ≈ 13 µs, so
2·10⁶ draws per side would take a minute per case; the main cases therefore
draw *from the law*: a component from ``law``'s weights plus
Lap(``scale``) noise per coordinate — the black box then tests the law, and
says so in its pair.  Every randomizer class also has a case "… (randomize)"
whose draws call the mechanism's own ``randomize`` once per report, with
1 in :data:`RANDOMIZE_SHARE` of the stated draw count (its p̂, q̂ are over
those reports); the planted "report skips noise" mutant, invisible to the
law methods, is audited on that path.

Parameters are those the estimators use (:mod:`labeldp_sim.userlevel.mean`):
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
from scipy.special import logsumexp

from ..privacy.audit import Careless, Case, Recipe, builds, calls, register_careless, register_cases
from .data import UserValues
from .mean import KASHIN_K, HeavyTailed, KashinBasis, TwoStageTuning, algorithm2_plan, split_sizes
from .mechanisms import BinHistogram, ClippedMean, ItemLevelLaplace, MappedSamples, OneSampleLaplace, coordinate

__all__ = ["USER_NB", "ITEM_NB", "LAW_NOTE", "RAND_NOTE", "RANDOMIZE_SHARE", "mixture_loss", "exact_loss", "law_draw",
           "randomize_draw", "item_level_recipe", "userlevel_cases", "userlevel_careless"]

D = 1.0                # support bound of the 1-D and ℓ∞/ℓ2 instances
M = 16                 # samples per user
N = 32768              # users of the Algorithm 1 instance (enters Δ = D√(ln n/m))
BIG = 10.0             # samples at ±BIG·D: beyond every clip
DIM = 2                # dimension of the d > 1 cases
HEAVY = dict(p=2.0, M_p=1.0, n=65536)   # Theorem 3's instance: D = 4, h = 1, Δ = 4 at ε = 1
KASHIN_COEF = 3        # the Kashin coefficient audited (the widest range on the unit circle, d = 2)
RANDOMIZE_SHARE = 10   # "(randomize)" cases: one report per randomize() call, 1 in 10 of the stated draws
MAX_LATTICE = 1 << 21  # knot-lattice points per pair in mixture_loss

USER_NB = "user-level (Definition 1): one user's whole data set of m samples replaced"
ITEM_NB = "item-level: one sample of one user's data set changed (NOT the claimed relation)"
LAW_NOTE = "draws from law() + Lap(scale): tests the law"
RAND_NOTE = f"draws through randomize(), 1 in {RANDOMIZE_SHARE} of the stated count"


# --------------------------------------------------------------------------- exact losses


def mixture_loss(locs_a, w_a, locs_b, w_b, scale) -> float:
    r"""Exact sup_z |log p_a(z)/p_b(z)| of two Laplace mixtures with a common scale.

    p(z) = Σ_c w_c Π_r exp(−|z_r − loc_cr|/b)/(2b).  The sup is a max over the
    lattice of the components' location coordinates (module docstring).

    Parameters
    ----------
    locs_a, locs_b : ndarray (c, r)
    w_a, w_b : ndarray (c,)
    scale : float

    Returns
    -------
    float
        ∞ when the report lengths differ.
    """
    la, lb = np.atleast_2d(np.asarray(locs_a, dtype=float)), np.atleast_2d(np.asarray(locs_b, dtype=float))
    if la.shape[1] != lb.shape[1]:
        return math.inf
    knots = [np.unique(np.concatenate([la[:, k], lb[:, k]])) for k in range(la.shape[1])]
    size = math.prod(len(k) for k in knots)
    if size > MAX_LATTICE:
        raise ValueError(f"knot lattice of {size} points: too large for the exact mixture sup")
    grid = np.stack(np.meshgrid(*knots, indexing="ij"), axis=-1).reshape(-1, la.shape[1])

    def log_density(locs, w):  # up to the common −r log(2b)
        w = np.asarray(w, dtype=float)
        keep = w > 0
        dist = np.abs(grid[:, None, :] - locs[None, keep, :]).sum(axis=2)
        return logsumexp(np.log(w[keep])[None, :] - dist / scale, axis=1)

    return float(np.max(np.abs(log_density(la, w_a) - log_density(lb, w_b))))


def exact_loss(mech, datasets, pairs=None) -> tuple[float, str]:
    r"""Max privacy loss of ``mech`` over pairs of whole user data sets.

    Parameters
    ----------
    mech : UserRandomizer
    datasets : list of ndarray
        Whole data sets (m samples each).
    pairs : list of (int, int), optional
        The neighbouring pairs (indices into ``datasets``); None = every pair
        (user-level neighbours: any data set against any other).

    Returns
    -------
    (loss, method)
        One component: max ‖Δloc‖₁/scale from ``law``/``scale`` (vectorised),
        checked against ``privacy_loss`` on the worst pair.  Mixtures: the max
        of :func:`mixture_loss`, with the component-pair bound in the method.
    """
    laws = [mech.law(x) for x in datasets]
    b = mech.scale
    if pairs is None:
        i, j = np.triu_indices(len(datasets), k=1)
        pairs = list(zip(i.tolist(), j.tolist()))
    if all(len(locs) == 1 for locs, _ in laws):
        widths = {locs.shape[1] for locs, _ in laws}
        if len(widths) > 1:
            return math.inf, "report length depends on the data set"
        locs = np.stack([locs[0] for locs, _ in laws])
        ia, ib = np.array(pairs).T
        dist = np.abs(locs[ia] - locs[ib]).sum(axis=1) / b
        worst = int(np.argmax(dist))
        own = mech.privacy_loss(datasets[ia[worst]], datasets[ib[worst]])
        loss = max(float(dist[worst]), float(own))
        agree = "agrees" if abs(own - dist[worst]) <= 1e-9 * max(1.0, abs(own)) else f"DISAGREES ({own:.6g})"
        return loss, (f"max ‖loc(x) − loc(x')‖₁/scale from law()/scale over {len(pairs)} pairs of "
                      f"{len(datasets)} data sets; privacy_loss() on the worst pair {agree}")
    exact = max(mixture_loss(*laws[a], *laws[c], b) for a, c in pairs)
    bound = max(mech.privacy_loss(datasets[a], datasets[c]) for a, c in pairs)
    return exact, (f"exact sup of |log p_x/p_x'| of the Laplace mixtures of law() (max over the knot lattice) "
                   f"over {len(pairs)} pairs of {len(datasets)} data sets; component-pair bound "
                   f"privacy_loss() = {bound:.4f}")


# --------------------------------------------------------------------------- data-set families
# Each family is a list of whole data sets of one user; the exact check takes every pair.


def _mean_sets(scale_d, m=M):
    r"""1-D data sets for randomizers that see the user mean only (BinHistogram, ClippedMean).

    Their location is a monotone function of Y = x̄ (clamp(Y), or the one-hot of the
    clamped bin of Y, after the optional pre-clip), so a pair's loss is a function of
    (Y, Y') that is largest with Y and Y' at the two far ends, beyond every clip.
    Constant data sets at a grid from −10D to 10D (step D/20 on [−2D, 2D], so every bin
    edge of the audited histograms is on it, and points past both ends of every clip)
    realise such Y; mixed data sets
    (half at ±10D, one outlier at 10mD dragging the mean to ≈ 9D, alternating ±D,
    uniform) check that only the mean matters.
    """
    s = float(scale_d)
    values = np.unique(np.round(np.r_[np.linspace(-BIG * s, BIG * s, 41), np.linspace(-2 * s, 2 * s, 81)], 12))
    sets = [np.full(m, v) for v in values]
    half = m // 2
    rng = np.random.default_rng(0)
    sets += [np.r_[np.full(half, -BIG * s), np.full(m - half, BIG * s)],
             np.where(np.arange(m) % 2 == 0, s, -s),
             np.r_[np.full(m - 1, -s), [BIG * m * s]],
             np.r_[np.full(m - 1, s), [-BIG * m * s]]]
    sets += [rng.uniform(-s, s, m) for _ in range(3)]
    return sets


def _sample_sets(scale_d=D, m=M):
    r"""1-D data sets for per-sample randomizers (ItemLevelLaplace, OneSampleLaplace).

    P1a's loss Σ_j |clip x_j − clip x'_j|/b is separable over samples, largest with
    every sample at opposite ends (all −D vs all +D, or beyond: ±10D; alternating vs
    its reverse).  P1b's mixture has every component in [−D, D]; its loss is ≤ the
    component-pair bound, reached by all samples at −D vs all at +D.  Mixed sets (one
    sample changed, half/half, 15 + 1, uniform) exercise the mixture sup.
    """
    s = float(scale_d)
    alt = np.where(np.arange(m) % 2 == 0, s, -s)
    half = m // 2
    rng = np.random.default_rng(1)
    sets = [np.full(m, v) for v in (-BIG * s, -s, -s / 2, 0.0, s / 2, s, BIG * s)]
    sets += [alt, -alt, BIG * alt, np.r_[np.full(half, -s), np.full(m - half, s)],
             np.r_[np.full(m - 1, -BIG * s), [BIG * s]], np.r_[np.full(m - 1, BIG * s), [-BIG * s]],
             np.r_[[s], np.full(m - 1, -s)], np.r_[np.full(m - 1, s / 2), [-s]]]
    sets += [rng.uniform(-2 * s, 2 * s, m) for _ in range(3)]
    return sets


def _vector_sets(scale_d=D, m=M, d=DIM):
    r"""d-dimensional data sets (rows = samples): the naive box mean and P1b in d = 2.

    ClippedMean's ℓ1 distance Σ_r |clip Y_r − clip Y'_r| is largest at opposite corners
    beyond the box; P1b's components lie in [−D, D]^d, so the component-pair bound 2Dd
    is reached by all samples at one corner against all at the opposite one.  Constant
    sets at every point of {0, ±D/2, ±D, ±10D}^d, plus mixed ones.
    """
    s = float(scale_d)
    levels = np.array([-BIG * s, -s, -s / 2, 0.0, s / 2, s, BIG * s])
    points = np.stack(np.meshgrid(*([levels] * d), indexing="ij"), axis=-1).reshape(-1, d)
    sets = [np.tile(p, (m, 1)) for p in points]
    half = m // 2
    corner = np.full(d, s)
    rng = np.random.default_rng(2)
    sets += [np.r_[np.tile(-BIG * corner, (half, 1)), np.tile(BIG * corner, (m - half, 1))],
             np.where((np.arange(m) % 2 == 0)[:, None], corner, -corner),
             np.r_[np.tile(-corner, (m - 1, 1)), [BIG * corner]]]
    sets += [rng.uniform(-s, s, (m, d)) for _ in range(3)]
    return sets


def _coordinate_sets(coord, scale_d=D, m=M, d=DIM):
    r"""d-dimensional data sets for Algorithm 2's per-coordinate instance (MappedSamples).

    The instance sees the user mean of coordinate ``coord`` only: its 1-D values run
    over :func:`_mean_sets`' grid while the other coordinates take −10D, 0 or 10D (they
    must not matter).
    """
    sets = []
    for other in (-BIG * scale_d, 0.0, BIG * scale_d):
        for col in _mean_sets(scale_d, m):
            x = np.full((m, d), other)
            x[:, coord] = col
            sets.append(x)
    return sets


def _kashin_sets(basis, m=M, directions=72):
    r"""2-D data sets for one Kashin coefficient (MappedSamples, Theorem 5).

    The coefficient map a(·) is odd and positively homogeneous, so the user mean of
    a_l(X_j) over constant data sets t·u runs over t·a_l(u); directions u on a fine
    circle at radii D (the ℓ2 support) and 10D (beyond it, past the inner clip) reach
    both ends of the inner box.  Mixed sets (half at u, half at −u or at the orthogonal
    direction) check the nonlinearity does not matter: the inner randomizer clips
    whatever the coefficients are.
    """
    theta = np.linspace(0.0, 2 * np.pi, directions, endpoint=False)
    units = np.c_[np.cos(theta), np.sin(theta)]
    sets = [np.tile(r * u, (m, 1)) for u in units for r in (D, BIG * D)] + [np.zeros((m, 2))]
    half = m // 2
    for u in units[:: directions // 8]:
        v = np.array([-u[1], u[0]])
        sets += [np.r_[np.tile(BIG * u, (half, 1)), np.tile(-BIG * u, (m - half, 1))],
                 np.r_[np.tile(D * u, (half, 1)), np.tile(D * v, (m - half, 1))]]
    return sets


# --------------------------------------------------------------------------- black-box draws


def law_draw(pair):
    """``draw(mech, side, n, rng)`` from the law: a component of ``law(pair[side])`` + Lap(scale)."""
    def draw(mech, side, n, rng):
        locs, w = mech.law(pair[side])
        comp = rng.choice(len(w), size=n, p=w) if len(w) > 1 else np.zeros(n, dtype=np.int64)
        return locs[comp] + rng.laplace(0.0, mech.scale, size=(n, locs.shape[1]))
    draw.pair = pair
    return draw


def randomize_draw(pair):
    """``draw(mech, side, n, rng)`` through ``randomize``: n // RANDOMIZE_SHARE reports, one call each."""
    def draw(mech, side, n, rng):
        x = pair[side]
        k = max(1, n // RANDOMIZE_SHARE)
        return np.stack([np.atleast_1d(np.asarray(mech.randomize(x, rng), dtype=float)) for _ in range(k)])
    draw.pair = pair
    return draw


def _exact_fn(datasets, text, pairs=None):
    def exact(mech):
        loss, method = exact_loss(mech, datasets, pairs)
        return loss, f"{method}: {text}"
    return exact


def _recipe(neighbours, pair_text, datasets, set_text, pair, randomize=False, pairs=None):
    note = RAND_NOTE if randomize else LAW_NOTE
    return Recipe(neighbours, f"{pair_text}; {note}", _exact_fn(datasets, set_text, pairs),
                  (randomize_draw if randomize else law_draw)(pair))


def _constant_pair(value, m=M, d=None):
    shape = (m,) if d is None else (m, d)
    return np.full(shape, -value), np.full(shape, value)


def item_level_recipe(scale_d=D, m=M):
    r"""Item-level neighbours for P1a (one sample changed) — for the tests, never registered.

    Exact check over data sets of :func:`_sample_sets` against the same sets with
    sample 0 replaced by each of {0, ±D, ±10D}; black-box pair: all samples at −10D
    vs the same with sample 0 at +10D.  A P1a whose noise has the item-level scale
    2D/ε (no factor m) passes this relation and fails the user-level one.
    """
    base = _sample_sets(scale_d, m)
    sets, pairs = [], []
    for x in base:
        sets.append(x)
        a = len(sets) - 1
        for v in (-BIG * scale_d, -scale_d, 0.0, scale_d, BIG * scale_d):
            y = x.copy()
            y[0] = v
            sets.append(y)
            pairs.append((a, len(sets) - 1))
    x0 = np.full(m, -BIG * scale_d)
    x1 = x0.copy()
    x1[0] = BIG * scale_d
    return _recipe(ITEM_NB, "all m samples at −10D vs the same with sample 0 at +10D", sets,
                   f"{len(base)} data sets × sample 0 replaced by 0, ±D, ±10D", (x0, x1), pairs=pairs)


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

    mean1, meanh = _mean_sets(D), _mean_sets(th.D)
    samples, vectors = _sample_sets(), _vector_sets()
    coords, kashin = _coordinate_sets(1), _kashin_sets(basis)
    mean_text = "constant data sets on a grid over [−10D, 10D] and mixed ones (mean-only statistic)"
    sample_text = "constant, alternating, one-changed, 15+1 and uniform data sets (per-sample statistic)"
    vector_text = "constant data sets on {0, ±D/2, ±D, ±10D}² and mixed ones"
    coord_text = "coordinate 1 on the 1-D grid, coordinate 0 ∈ {0, ±10D}"
    kashin_text = "72 directions × radii {D, 10D} and mixed data sets"

    big = _constant_pair(BIG * D)
    bigh = _constant_pair(BIG * th.D)
    big2 = _constant_pair(BIG * D, d=DIM)
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
        "ul_alg1_stage1": (stage1(), _recipe(
            nb(f"Algorithm 1 stage I, D = 1, m = {M}, h = 4D/√m, B = {t1.bins}, Lap(2/ε); {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D (bins 0 vs B−1)", mean1, mean_text, big)),
        "ul_alg1_stage2": (ClippedMean(eps, lo1, hi1), _recipe(
            nb(f"Algorithm 1 stage II, k̂ = {k1}: clip to [L−Δ, R+Δ] = [{lo1:.3f}, {hi1:.3f}], "
               f"Δ = D√(ln n/m) at n = {N}, Lap((3h+2Δ)/ε); {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", mean1, mean_text, big)),
        "ul_heavy_stage1": (BinHistogram(eps, -th.D, th.h, th.bins, pre_clip=th.D), _recipe(
            nb(f"Theorem 3 stage I, p = 2, M_p = 1, n = {HEAVY['n']}: D = {th.D:g}, h = {th.h:g}, "
               f"B = {th.bins}, user mean pre-clipped to ±D; samples at ±10D = ±{BIG * th.D:g}"),
            f"{ALL} −{BIG * th.D:g} vs {ALL} +{BIG * th.D:g}", meanh, mean_text + " (D = 4)", bigh)),
        "ul_heavy_stage2": (ClippedMean(eps, loh, hih, pre_clip=th.D), _recipe(
            nb(f"Theorem 3 stage II, k̂ = {kh}: box [{loh:g}, {hih:g}] ⊃ pre-clip [−{th.D:g}, {th.D:g}], "
               f"Lap((3h+2Δ)/ε); samples at ±{BIG * th.D:g}"),
            f"{ALL} −{BIG * th.D:g} vs {ALL} +{BIG * th.D:g}", meanh, mean_text + " (D = 4)", bigh)),
        "ul_naive": (naive(), _recipe(
            nb(f"naive baseline clip(X̄, ±D) + Lap(2D/ε), d = 1; {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", mean1, mean_text, big)),
        "ul_naive_d2": (ClippedMean(eps, np.full(DIM, -D), np.full(DIM, D)), _recipe(
            nb(f"naive baseline, d = {DIM}: clip to [−D, D]^d + Lap(2Dd/ε) per coordinate; {samples_beyond}"),
            f"{ALL} (−10D, −10D) vs {ALL} (+10D, +10D)", vectors, vector_text, big2)),
        "ul_item_level": (item(), _recipe(
            nb(f"P1a, m = {M}: every sample clip(X_j, ±D) + Lap(2Dm/ε); {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", samples, sample_text, big)),
        "ul_one_sample": (one(), _recipe(
            nb(f"P1b: one uniform sample clip(X_J, ±D) + Lap(2D/ε), a mixture of m = {M} components; "
               f"{samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", samples, sample_text, big)),
        "ul_one_sample_d2": (OneSampleLaplace(eps, D, DIM), _recipe(
            nb(f"P1b, d = {DIM}: Lap(2Dd/ε) per coordinate; {samples_beyond}"),
            f"{ALL} (−10D, −10D) vs {ALL} (+10D, +10D)", vectors, vector_text, big2)),
        "ul_alg2_coordinate": (alg2(), _recipe(
            nb(f"Algorithm 2 (ℓ∞, d = {DIM}), stage I on coordinate 1 at ε_inst = {eps2:g} "
               f"(algorithm2_plan), B = {t2.bins}; {samples_beyond}"),
            f"{ALL} (+10D, −10D) vs {ALL} (−10D, +10D)", coords, coord_text, coord_pair)),
        "ul_kashin_stage2": (MappedSamples(ClippedMean(eps5, lo5, hi5), _kashin_map(basis, KASHIN_COEF),
                                           label=f"kashin_{KASHIN_COEF}", d=DIM), _recipe(
            nb(f"Theorem 5 (ℓ2, d = {DIM}): stage II on Kashin coefficient {KASHIN_COEF}, K = {K:g}, "
               f"box [{lo5:.3f}, {hi5:.3f}] at ε_inst = {eps5:g}; samples at radius 10D"),
            f"{ALL} −10D·u vs {ALL} +10D·u (u maximising a_{KASHIN_COEF} on the unit circle)",
            kashin, kashin_text, kashin_pair)),
        # the randomize() path, one case per randomizer class (1 in RANDOMIZE_SHARE of the draws)
        "ul_alg1_stage1 (randomize)": (stage1(), _recipe(
            nb(f"Algorithm 1 stage I as above; {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", mean1, mean_text, big, randomize=True)),
        "ul_naive (randomize)": (naive(), _recipe(
            nb(f"naive baseline as above; {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", mean1, mean_text, big, randomize=True)),
        "ul_item_level (randomize)": (item(), _recipe(
            nb(f"P1a as above; {samples_beyond}"),
            f"{ALL} −10D vs {ALL} +10D", samples, sample_text, big, randomize=True)),
        "ul_one_sample (randomize)": (one(), _recipe(
            nb(f"P1b as above; {samples_beyond}"),
            f"15 samples at −10D and one at +10D vs {ALL} +10D (pair loss log(15e^ε/16 + 1/16))",
            samples, sample_text, mixed, randomize=True)),
        "ul_alg2_coordinate (randomize)": (alg2(), _recipe(
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


@register_cases
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


@register_careless
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
