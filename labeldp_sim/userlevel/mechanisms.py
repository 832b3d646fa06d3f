r"""User-level randomizers of papers/003: the only place where clipping and noise happen.

Every randomizer is a :class:`UserRandomizer`: it maps the *whole* data set of
one user (its m samples) to one report, and satisfies user-level ε-LDP in the
sense of Definition 1, Eq. (1): for all x, x' ∈ X^m (one user's whole data set
replaced) and all S, P(Z ∈ S | X_i = x) ≤ e^ε P(Z ∈ S | X_i = x').

All randomizers here are Laplace mechanisms, possibly mixed: the report's law
given x is Σ_c w_c ⊗_r Lap(loc_c(x)_r, b).  For one component the privacy loss
of a pair of data sets is exactly ||loc(x) − loc(x')||₁ / b, so user-level
ε-LDP is

.. math:: \sup_{x, x' \in \mathcal X^m} \|loc(x) - loc(x')\|_1 \,/\, b \;\le\; \epsilon,

the ℓ1 sensitivity of the user statistic *over the whole data set* divided by
the scale.  A mixture with common weights is ε-LDP when every pair of
components is (quasi-convexity of the ratio), which :meth:`privacy_loss`
reports.

Interface (for the exact audit and for the simulator)
-----------------------------------------------------
``law(x_user)``       component locations (c, r) and weights (c,) of the report's law;
``scale``, ``sensitivity``  b and the claimed sup ℓ1 distance of locations;
``randomize(x_user, rng)``  one user's report (what the audit runs on neighbours);
``release_sum(values, rng)`` Σ of the reports of every user in a
:class:`~labeldp_sim.userlevel.data.UserValues`, exact in law: per-user atoms
get per-user noise, a sufficient-statistic multiset gets ``laplace_sum`` (a
Gamma difference).  Both paths call the same clipping method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..core.errors import check
from ..privacy.protocols import USER_LOCAL, Privacy, laplace_sum
from .data import UserValues

__all__ = ["UserRandomizer", "BinHistogram", "ClippedMean", "ItemLevelLaplace", "OneSampleLaplace",
           "MappedSamples", "coordinate", "laplace_total"]

# Laplace draws at once on the per-user path: bounds memory, not the law.
_CHUNK = 1 << 22


def laplace_total(n_reports, size, scale, per_user, rng) -> np.ndarray:
    """Σ over ``n_reports`` reports of i.i.d. Lap(scale) noise vectors of length ``size``.

    ``per_user``: drawn report by report (the literal protocol, in chunks);
    otherwise one Gamma difference per coordinate (:func:`laplace_sum`), the
    same law.
    """
    n_reports = int(n_reports)
    if not per_user:
        return laplace_sum(np.full(size, n_reports), scale, rng)
    total = np.zeros(size)
    rows = max(1, _CHUNK // max(size, 1))
    for start in range(0, n_reports, rows):
        total += rng.laplace(0.0, scale, size=(min(rows, n_reports - start), size)).sum(axis=0)
    return total


def _user_mean(x_user) -> np.ndarray:
    """X̄ = (1/m) Σ_j X_j of one user's samples, shape () or (d,)."""
    x = np.asarray(x_user, dtype=float)
    check(x.ndim in (1, 2) and len(x) >= 1, "x_user", x.shape, "one user's m samples, shape (m,) or (m, d)")
    return x.mean(axis=0)


class UserRandomizer(ABC):
    """A user-level ε-LDP randomizer (Definition 1): one report from a user's whole data set.

    Subclasses state the law of the report (:meth:`law`, :attr:`scale`,
    :attr:`sensitivity`) and draw the group sum (:meth:`release_sum`); all of
    these are abstract, so a half-written randomizer cannot be instantiated,
    and none defaults to passing data through.

    Parameters
    ----------
    epsilon : float
        The user-level budget, > 0.
    """

    name: str = ""
    privacy: Privacy = USER_LOCAL

    def __init__(self, epsilon):
        check(epsilon is not None and np.isfinite(epsilon) and epsilon > 0, "epsilon", epsilon, "> 0")
        self.epsilon = float(epsilon)

    @abstractmethod
    def law(self, x_user) -> tuple[np.ndarray, np.ndarray]:
        """The report's law given the user's samples: locations (c, r), weights (c,)."""

    @property
    @abstractmethod
    def scale(self) -> float:
        """Laplace scale b of every report coordinate."""

    @property
    @abstractmethod
    def sensitivity(self) -> float:
        """sup over pairs of whole user data sets of the ℓ1 distance between report locations."""

    @abstractmethod
    def release_sum(self, values: UserValues, rng) -> np.ndarray:
        """Σ of the reports of all users in ``values``, drawn exactly in law, shape (r,)."""

    # ------------------------------------------------------------------ derived, for the audit

    def location(self, x_user) -> np.ndarray:
        """The report's location when its law is a single Laplace component."""
        locs, _ = self.law(x_user)
        check(len(locs) == 1, "law", f"{len(locs)} components", "a single Laplace location")
        return locs[0]

    def randomize(self, x_user, rng) -> np.ndarray:
        """One user's report from its whole data set: a component of :meth:`law` plus Lap(scale)."""
        locs, weights = self.law(x_user)
        c = 0 if len(locs) == 1 else rng.choice(len(locs), p=weights)
        return locs[c] + rng.laplace(0.0, self.scale, size=locs.shape[1])

    def privacy_loss(self, x_user, x_other) -> float:
        """sup_z |ln p(z | x) / p(z | x')|: exact for one component, an upper bound for mixtures."""
        a, _ = self.law(x_user)
        b, _ = self.law(x_other)
        dist = np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
        return float(dist.max() / self.scale)

    @property
    def epsilon_bound(self) -> float:
        """sensitivity / scale: the ε the proof gives (≤ :attr:`epsilon`)."""
        return self.sensitivity / self.scale

    def __repr__(self):
        return f"{type(self).__name__}(epsilon={self.epsilon})"


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
    2/ε the privacy loss is ≤ 2/(2/ε) = ε: user-level ε-LDP (1).

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

    def law(self, x_user):
        loc = np.zeros(self.bins)
        loc[self.bin_index(_user_mean(x_user))] = 1.0
        return _single(loc)

    def release_sum(self, values, rng):
        """s_k = Σ_i Z_ik (Algorithm 1 step 4): bin counts plus the summed per-bin noise."""
        hist = np.bincount(self.bin_index(values.means()), weights=values.counts, minlength=self.bins)
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

    Parameters
    ----------
    epsilon : float
    lo, hi : float or array of shape (d,)
        The box, hi > lo in every coordinate.
    pre_clip : float, optional
        Clip the user mean to [−pre_clip, pre_clip] first (Theorem 3).
    """

    name = "clipped_mean"

    def __init__(self, epsilon, lo, hi, pre_clip=None):
        super().__init__(epsilon)
        lo, hi = np.atleast_1d(np.asarray(lo, dtype=float)), np.atleast_1d(np.asarray(hi, dtype=float))
        check(lo.shape == hi.shape and lo.ndim == 1, "hi", hi.shape, f"the shape of lo {lo.shape}")
        check(bool(np.all(np.isfinite(lo) & np.isfinite(hi) & (hi > lo))), "hi", hi, "finite and > lo")
        self.lo, self.hi = lo, hi
        self.pre_clip = _check_pre_clip(pre_clip)

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

    def law(self, x_user):
        return _single(self.clip(_user_mean(x_user))[0])

    def release_sum(self, values, rng):
        total = values.counts @ self.clip(values.means())
        return total + laplace_total(values.n, len(self.lo), self.scale, values.per_user, rng)


class _ClippedSamples(UserRandomizer):
    """Randomizers that clip every sample to [−D, D]^d and add Laplace noise of scale
    sensitivity/ε: the clip and the scale live here once, for P1a and P1b."""

    def __init__(self, epsilon, D, d=1):
        super().__init__(epsilon)
        check(np.isfinite(D) and D > 0, "D", D, "> 0")
        check(int(d) == d and d >= 1, "d", d, "an integer >= 1")
        self.D, self.d = float(D), int(d)

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

    Parameters
    ----------
    epsilon : float
    D : float
        Per-coordinate clipping level, > 0.
    m : int
        Samples per user (public: the report length may not depend on the data).
    d : int
        Dimension of a sample.
    """

    name = "item_level"

    def __init__(self, epsilon, D, m, d=1):
        super().__init__(epsilon, D, d)
        check(int(m) == m and m >= 1, "m", m, "an integer >= 1")
        self.m = int(m)

    @property
    def sensitivity(self) -> float:
        return 2.0 * self.D * self.m * self.d

    def law(self, x_user):
        x = np.asarray(x_user, dtype=float)
        check(len(x) == self.m, "x_user", x.shape, f"{self.m} samples")
        return _single(self.clip(x).ravel())

    def release_sum(self, values, rng):
        """Σ_i Σ_j (clip(X_ij) + W_ij), shape (d,)."""
        check(values.m == self.m, "values.m", values.m, f"m = {self.m}")
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
    """

    name = "one_sample"

    @property
    def sensitivity(self) -> float:
        return 2.0 * self.D * self.d

    def law(self, x_user):
        x = np.asarray(x_user, dtype=float)
        return self.clip(x), np.full(len(x), 1.0 / len(x))

    def release_sum(self, values, rng):
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

    Parameters
    ----------
    inner : UserRandomizer
    f : callable
        Per-sample map acting on rows of samples, (q, ...) → (q, ...).
    linear : bool
        f is linear, so it may also act on user means when no support is known.
    """

    name = "mapped"

    def __init__(self, inner: UserRandomizer, f, linear=False, label=""):
        check(isinstance(inner, UserRandomizer), "inner", type(inner).__name__, "a UserRandomizer")
        super().__init__(inner.epsilon)
        self.inner, self.f, self.linear, self.label = inner, f, bool(linear), label

    @property
    def scale(self) -> float:
        return self.inner.scale

    @property
    def sensitivity(self) -> float:
        return self.inner.sensitivity

    def law(self, x_user):
        return self.inner.law(self.f(np.asarray(x_user, dtype=float)))

    def release_sum(self, values, rng):
        return self.inner.release_sum(values.map_samples(self.f, linear=self.linear), rng)

    def __repr__(self):
        return f"MappedSamples({self.inner!r}, {self.label or self.f})"


def coordinate(l):
    """The per-sample map x ↦ x_l, rows = samples (linear)."""
    def f(x):
        return np.asarray(x)[:, l]
    f.__name__ = f"coordinate_{l}"
    return f
