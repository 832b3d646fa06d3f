r"""How a user-level randomizer (papers/003) is audited: neighbours, exact losses, data sets, draws.

The recipes :mod:`labeldp_sim.papers.userlevel.audit` gives each audited randomizer are built
here (:func:`make_recipe`), with the constants of the audited instances.

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
with each family below (``mean_sets``, ``sample_sets``, ``vector_sets``,
``coordinate_sets``, ``kashin_sets``).

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
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from labeldp_sim.privacy.audit import Recipe

__all__ = ["D", "M", "N", "BIG", "DIM", "HEAVY", "KASHIN_COEF", "USER_NB", "ITEM_NB", "LAW_NOTE", "RAND_NOTE",
           "RANDOMIZE_SHARE", "mixture_loss", "exact_loss", "law_draw", "randomize_draw", "item_level_recipe"]

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


def mean_sets(scale_d, m=M):
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


def sample_sets(scale_d=D, m=M):
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


def vector_sets(scale_d=D, m=M, d=DIM):
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


def coordinate_sets(coord, scale_d=D, m=M, d=DIM):
    r"""d-dimensional data sets for Algorithm 2's per-coordinate instance (MappedSamples).

    The instance sees the user mean of coordinate ``coord`` only: its 1-D values run
    over :func:`mean_sets`' grid while the other coordinates take −10D, 0 or 10D (they
    must not matter).
    """
    sets = []
    for other in (-BIG * scale_d, 0.0, BIG * scale_d):
        for col in mean_sets(scale_d, m):
            x = np.full((m, d), other)
            x[:, coord] = col
            sets.append(x)
    return sets


def kashin_sets(basis, m=M, directions=72):
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


def make_recipe(neighbours, pair_text, datasets, set_text, pair, randomize=False, pairs=None):
    note = RAND_NOTE if randomize else LAW_NOTE
    return Recipe(neighbours, f"{pair_text}; {note}", _exact_fn(datasets, set_text, pairs),
                  (randomize_draw if randomize else law_draw)(pair))


def constant_pair(value, m=M, d=None):
    shape = (m,) if d is None else (m, d)
    return np.full(shape, -value), np.full(shape, value)


def item_level_recipe(scale_d=D, m=M):
    r"""Item-level neighbours for P1a (one sample changed) — for the tests, never registered.

    Exact check over data sets of :func:`sample_sets` against the same sets with
    sample 0 replaced by each of {0, ±D, ±10D}; black-box pair: all samples at −10D
    vs the same with sample 0 at +10D.  A P1a whose noise has the item-level scale
    2D/ε (no factor m) passes this relation and fails the user-level one.
    """
    base = sample_sets(scale_d, m)
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
    return make_recipe(ITEM_NB, "all m samples at −10D vs the same with sample 0 at +10D", sets,
                   f"{len(base)} data sets × sample 0 replaced by 0, ±D, ±10D", (x0, x1), pairs=pairs)
