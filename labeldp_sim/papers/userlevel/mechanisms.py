r"""User-level randomizers of papers/003: the only place where clipping and noise happen.

Each is a :class:`~labeldp_sim.papers.userlevel.randomizer.UserRandomizer` (the protocol, with
the privacy argument every randomizer here follows: a Laplace mechanism, possibly mixed,
whose loss for two whole user data sets is the ℓ1 distance of its locations over the
scale): it maps the *whole* data set of one user (its m samples) to one report and is
user-level ε-LDP (Definition 1, Eq. (1)).  Each declares its ``parameters``; the privacy
audit runs the cases of :mod:`labeldp_sim.papers.userlevel.audit` that hold a randomizer of its
class.  The proofs are in the docstrings.

These are simulation mechanisms, not for releasing real data: floating-point
Laplace noise leaks through its low-order bits (Mironov 2012).  The audit
measures that leak and reports it as a known, stated limitation.
"""

from __future__ import annotations

import numpy as np

from labeldp_sim.harness.components import Boolean, Constraint, Interval, Nullable
from labeldp_sim.harness.errors import check
from labeldp_sim.privacy.protocols import epsilon_parameter, shown
from labeldp_sim.papers.userlevel.randomizer import UserRandomizer, laplace_total

__all__ = ["UserRandomizer", "BinHistogram", "ClippedMean", "ItemLevelLaplace", "OneSampleLaplace",
           "MappedSamples", "coordinate", "laplace_total"]


class _Satisfies(Constraint):
    """A value ``test`` accepts, said as ``what`` (objects no config holds: randomizers, maps, boxes)."""

    def __init__(self, test, what: str):
        self.test, self.what = test, what

    def accepts(self, value) -> bool:
        return bool(self.test(value))

    def describe(self) -> str:
        return self.what


def _finite_coordinates(value) -> bool:
    if isinstance(value, (bool, str)):
        return False
    try:
        x = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return False
    return x.ndim <= 1 and x.size >= 1 and bool(np.isfinite(x).all())


EPSILON = epsilon_parameter()
POSITIVE = Interval(float, 0, None, closed="neither")
COUNT = Interval(int, 1, None)
PRE_CLIP = Nullable(POSITIVE, "no clip of the user mean")
COORDINATES = _Satisfies(_finite_coordinates, "a finite number, or one per coordinate (shape (d,))")


def _user_mean(x) -> np.ndarray:
    """X̄ = (1/m) Σ_j X_j of one user's checked samples, shape () or (d,)."""
    return x.mean(axis=0)


def _single(loc) -> tuple[np.ndarray, np.ndarray]:
    return np.atleast_1d(np.asarray(loc, dtype=float))[None, :], np.ones(1)


def _check_pre_clip(pre_clip):
    check(pre_clip is None or (np.isfinite(pre_clip) and pre_clip > 0), "pre_clip", pre_clip, "None or > 0")
    return None if pre_clip is None else float(pre_clip)


class BinHistogram(UserRandomizer):
    r"""Stage I of Algorithm 1: the one-hot bin of the user mean plus Lap(2/ε) per bin.

    Z_ik = 1(Y_i ∈ B_k) + W_ik, W_ik ~ Lap(2/ε), k = 1..B (Algorithm 1 step 3),
    with Y_i = X̄_i, or Y_i = clip(X̄_i, ±pre_clip) for Theorem 3 (68).  Bins
    are B_k = [lo + (k−1)h, lo + kh); a Y outside the bins counts in the
    nearest end bin (clipping Y to the bins' range), so the statistic is a
    one-hot vector for *every* data set.

    Privacy (Appendix B.1).  Two data sets x, x' give one-hot vectors e_k,
    e_k' and ||e_k − e_k'||₁ ≤ 2 whatever the m samples are, so with scale
    2/ε the privacy loss is ≤ 2/(2/ε) = ε: user-level ε-LDP (1).  Samples are
    1-D (d = 1): an (m, 2) array would give two bins and 2ε, and is refused.

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).

    Parameters
    ----------
    epsilon : float
    lo : float
        Left end of the first bin (−D in Algorithm 1).
    width : float
        Bin length h > 0.
    bins : int
        Number of bins B ≥ 1.
    pre_clip : float, optional
        Clip the user mean to [−pre_clip, pre_clip] first (Theorem 3).
    """

    name = "bin_histogram"
    parameters = {"epsilon": EPSILON, "lo": Interval(float), "width": POSITIVE, "bins": COUNT, "pre_clip": PRE_CLIP}

    def __init__(self, epsilon, lo, width, bins, pre_clip=None):
        super().__init__(epsilon)
        check(np.isfinite(lo), "lo", lo, "finite")
        check(np.isfinite(width) and width > 0, "width", width, "> 0")
        check(int(bins) == bins and bins >= 1, "bins", bins, "an integer >= 1")
        self.lo, self.width, self.bins = float(lo), float(width), int(bins)
        self.pre_clip = _check_pre_clip(pre_clip)

    def bin_index(self, y) -> np.ndarray:
        """The clipping step: bin of each user statistic, clipped into 0..B−1."""
        y = np.asarray(y, dtype=float)
        if self.pre_clip is not None:
            y = np.clip(y, -self.pre_clip, self.pre_clip)
        k = np.floor((y - self.lo) / self.width)
        return np.clip(k, 0, self.bins - 1).astype(np.int64)

    @property
    def scale(self) -> float:
        return 2.0 / self.epsilon

    @property
    def sensitivity(self) -> float:
        return 2.0

    def _law(self, x):
        loc = np.zeros(self.bins)
        loc[self.bin_index(_user_mean(x))] = 1.0
        return _single(loc)

    def _release_sum(self, values, rng):
        """s_k = Σ_i Z_ik (Algorithm 1 step 4): bin counts plus the summed per-bin noise."""
        bins = self.bin_index(values.means()).reshape(-1)  # (k, 1) statistics: one bin per user
        hist = np.bincount(bins, weights=values.counts, minlength=self.bins)
        return hist + laplace_total(values.n, self.bins, self.scale, values.per_user, rng)


class ClippedMean(UserRandomizer):
    r"""The user mean clipped to a box plus Laplace noise: stage II of Algorithm 1 and the naive baseline.

    Z_i = clip(Y_i, lo, hi) + W_i, W_i ~ Lap(Σ_r (hi_r − lo_r)/ε) per coordinate,
    with Y_i = X̄_i (or clip(X̄_i, ±pre_clip), (68)).

    * Stage II (Algorithm 1 step 6): lo = L − Δ, hi = R + Δ, so the scale is
      (3h + 2Δ)/ε since R − L = 3h.
    * Naive baseline (SPEC §3): lo = −D, hi = D: Lap(2D/ε) in 1-D, and
      Lap(2Dd/ε) per coordinate for d coordinates in [−D, D].

    Privacy (Appendix B.1).  Whatever the user's m samples, clip(Y, lo, hi)
    lies in the box, so two data sets differ by at most Σ_r (hi_r − lo_r) in ℓ1;
    that over the scale is ε: user-level ε-LDP (1).

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).

    Parameters
    ----------
    epsilon : float
    lo, hi : float or array of shape (d,)
        The box, hi > lo in every coordinate; its length is the declared d of a sample.
    pre_clip : float, optional
        Clip the user mean to [−pre_clip, pre_clip] first (Theorem 3).
    """

    name = "clipped_mean"
    parameters = {"epsilon": EPSILON, "lo": COORDINATES, "hi": COORDINATES, "pre_clip": PRE_CLIP}

    def __init__(self, epsilon, lo, hi, pre_clip=None):
        super().__init__(epsilon)
        lo, hi = np.atleast_1d(np.asarray(lo, dtype=float)), np.atleast_1d(np.asarray(hi, dtype=float))
        check(lo.shape == hi.shape and lo.ndim == 1, "hi", hi.shape, f"the shape of lo {lo.shape}")
        check(bool(np.all(np.isfinite(lo) & np.isfinite(hi) & (hi > lo))), "hi", hi, "finite and > lo")
        self.lo, self.hi = lo, hi
        self.pre_clip = _check_pre_clip(pre_clip)

    @property
    def dim(self) -> int:
        return len(self.lo)

    def clip(self, y) -> np.ndarray:
        """The clipping step, rows = users: shape (k, d) in the box."""
        y = np.asarray(y, dtype=float).reshape(-1, len(self.lo))
        if self.pre_clip is not None:
            y = np.clip(y, -self.pre_clip, self.pre_clip)
        return np.clip(y, self.lo, self.hi)

    @property
    def scale(self) -> float:
        return self.sensitivity / self.epsilon

    @property
    def sensitivity(self) -> float:
        return float(np.sum(self.hi - self.lo))

    def _law(self, x):
        return _single(self.clip(_user_mean(x))[0])

    def _release_sum(self, values, rng):
        total = values.counts @ self.clip(values.means())
        return total + laplace_total(values.n, len(self.lo), self.scale, values.per_user, rng)


class _ClippedSamples(UserRandomizer):
    """Randomizers that clip every sample to [−D, D]^d and add Laplace noise of scale
    sensitivity/ε: the clip and the scale live here once, for P1a and P1b."""

    parameters = {"epsilon": EPSILON, "D": POSITIVE, "d": COUNT}

    def __init__(self, epsilon, D, d=1):
        super().__init__(epsilon)
        check(np.isfinite(D) and D > 0, "D", D, "> 0")
        check(int(d) == d and d >= 1, "d", d, "an integer >= 1")
        self.D, self.d = float(D), int(d)

    @property
    def dim(self) -> int:
        return self.d

    def clip(self, samples) -> np.ndarray:
        """The clipping step, per sample and coordinate: rows = samples, shape (q, d)."""
        return np.clip(np.asarray(samples, dtype=float).reshape(-1, self.d), -self.D, self.D)

    @property
    def scale(self) -> float:
        return self.sensitivity / self.epsilon


class ItemLevelLaplace(_ClippedSamples):
    r"""Proposition 1 baseline P1a: item-level (ε/m)-LDP on every sample.

    The report is the m noisy samples clip(X_ij, ±D) + W_ij with
    W_ij ~ Lap(2Dmd/ε) per coordinate (X_ij + Lap(2Dm/ε) in 1-D, SPEC §3);
    :meth:`release_sum` returns their sum over users and samples (a
    post-processing of the reports).

    Privacy.  Each clipped sample has ℓ1 range 2Dd, so replacing all m samples
    of a user moves the location by at most 2Dmd in ℓ1; over the scale
    2Dmd/ε that is ε: user-level ε-LDP (1) (group privacy, Proposition 1).

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).

    Parameters
    ----------
    epsilon : float
    D : float
        Per-coordinate clipping level, > 0.
    m : int
        Samples per user (public: the report length may not depend on the data).
    d : int
        Dimension of a sample (default 1: an (m, 2) array is refused, not read as 2m samples).
    """

    name = "item_level"
    parameters = {"epsilon": EPSILON, "D": POSITIVE, "m": COUNT, "d": COUNT}

    def __init__(self, epsilon, D, m, d=1):
        super().__init__(epsilon, D, d)
        check(int(m) == m and m >= 1, "m", m, "an integer >= 1")
        self.m = int(m)  # declared: check_samples and check_values hold every user to it

    @property
    def sensitivity(self) -> float:
        return 2.0 * self.D * self.m * self.d

    def _law(self, x):
        return _single(self.clip(x).ravel())

    def _release_sum(self, values, rng):
        """Σ_i Σ_j (clip(X_ij) + W_ij), shape (d,)."""
        total = values.counts @ values.sample_sums(self.clip)
        return total + laplace_total(values.n * self.m, self.d, self.scale, values.per_user, rng)


class OneSampleLaplace(_ClippedSamples):
    r"""Proposition 1 baseline P1b: one uniformly chosen sample per user, item-level ε-LDP.

    Z_i = clip(X_iJ, ±D) + W_i, J ~ U{1..m}, W_i ~ Lap(2Dd/ε) per coordinate
    (Lap(2D/ε) in 1-D).  The law is the uniform mixture over j of Laplace
    laws centred at clip(X_ij).

    Privacy.  Any two components, of any two data sets, have locations at
    ℓ1 distance ≤ 2Dd, so each density ratio of components is ≤ e^ε and so is
    the ratio of the equal-weight mixtures: user-level ε-LDP (1)
    (Proposition 1 (2)).

    On :meth:`release_sum` the chosen sample of a user with sample counts c
    is point a with probability c_a/m: the users' choices are drawn with one
    multinomial per atom, the same code on both paths.

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).
    """

    name = "one_sample"

    @property
    def sensitivity(self) -> float:
        return 2.0 * self.D * self.d

    def _law(self, x):
        return self.clip(x), np.full(len(x), 1.0 / len(x))

    def _release_sum(self, values, rng):
        check(values.support is not None, "values", "user statistics only", "count vectors over a sample support")
        picks = rng.multinomial(values.counts, values.atoms / values.m)  # (k, q): chosen samples per atom
        total = picks.sum(axis=0) @ self.clip(values.support)
        return total + laplace_total(values.n, self.d, self.scale, values.per_user, rng)


class MappedSamples(UserRandomizer):
    r"""An inner randomizer run on f(X_ij): one coordinate, or one Kashin coefficient.

    Algorithm 2 runs Algorithm 1 on coordinate l (f(x) = x_l); for ℓ2 support
    (Theorem 5) on coefficient l of the Kashin representation a(x).  The
    inner randomizer clips for every input (one-hot bin, or a box), so its
    sensitivity bound holds for the mapped samples of any data set: the
    mapped randomizer is user-level ε-LDP with the inner ε.  A user taking
    part in several instances (Algorithm 2, medium and low privacy) composes
    them: Σ of the instances' ε (basic composition).

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).

    Parameters
    ----------
    inner : UserRandomizer
    f : callable
        Per-sample map acting on rows of samples, (q, ...) → (q, ...).
    linear : bool
        f is linear, so it may also act on user means when no support is known.
    d : int, optional
        The dimension of a sample f reads; None: whatever f accepts (the inner
        randomizer checks f's output against its own d).
    """

    name = "mapped"
    parameters = {"inner": _Satisfies(lambda v: isinstance(v, UserRandomizer), "a UserRandomizer"),
                  "f": _Satisfies(callable, "a per-sample map: rows of samples in, one row out per sample"),
                  "linear": Boolean(), "label": _Satisfies(lambda v: isinstance(v, str), "a string (for its repr)"),
                  "d": Nullable(COUNT, "whatever f accepts")}

    def __init__(self, inner: UserRandomizer, f, linear=False, label="", d=None):
        check(isinstance(inner, UserRandomizer), "inner", type(inner).__name__, "a UserRandomizer")
        super().__init__(inner.epsilon)
        check(d is None or (int(d) == d and d >= 1), "d", d, "None or an integer >= 1")
        self.inner, self.f, self.linear, self.label = inner, f, bool(linear), label
        self.dim = None if d is None else int(d)

    @property
    def scale(self) -> float:
        return self.inner.scale

    @property
    def sensitivity(self) -> float:
        return self.inner.sensitivity

    def _law(self, x):
        mapped = np.asarray(self.f(x))
        # f acts on each sample: a map that merged or split samples would change what one user is
        check(mapped.ndim >= 1 and len(mapped) == len(x), "f", shown(f"{len(x)} samples mapped to shape "
              f"{mapped.shape}"), "a per-sample map: one row out per sample in")
        return self.inner.law(mapped)

    def _release_sum(self, values, rng):
        return self.inner.release_sum(values.map_samples(self.f, linear=self.linear), rng)

    def __repr__(self):
        return f"MappedSamples({self.inner!r}, {self.label or self.f})"


def coordinate(l):
    """The per-sample map x ↦ x_l, rows = samples (linear)."""
    def f(x):
        return np.asarray(x)[:, l]
    f.__name__ = f"coordinate_{l}"
    return f
