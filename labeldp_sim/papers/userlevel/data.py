r"""The data of a group of users, on either simulation path (papers/003, SPEC §7).

Every user i holds m i.i.d. samples X_i1..X_im.  All statistics the user-level
mechanisms need are functions of the user's *empirical measure*, i.e. of how
many of its m samples fall on each point of a finite sample support
s_1..s_q: the user mean is X̄_i = Σ_a c_ia s_a / m and a per-sample
transformation sums as Σ_j f(X_ij) = Σ_a c_ia f(s_a).

:class:`UserValues` stores a group of users as a multiset: distinct *atoms*
(one row per distinct user) with a multiplicity ``counts``.  An atom is either

* a count vector c ∈ ℕ^q over ``support`` (Σ_a c_a = m), the user's exact
  sufficient statistic, or
* when ``support`` is None, the user statistic itself (e.g. a user mean of ±1
  values), for callers that only need means.

The two simulation paths give the same object:

* ``per_user`` — one atom per user (counts = 1), built from each user's m
  literal samples; mechanisms add each user's noise separately;
* ``sufficient`` — the group's multiset drawn directly, e.g. for a two-point
  support the first atom's count is Bin(m, π), so the group's counts over
  the m+1 possible users are Multinomial(n_group, Binomial(m, π) pmf); for
  larger supports, one Multinomial(m, probs) count vector per user (O(n q)
  work, never an (n, m) array).  Mechanisms then draw the group's noise as one
  exact sum (Gamma differences, :func:`laplace_sum`).

Both are exact in law, so every mechanism runs the same code on both.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special, stats

from labeldp_sim.harness.errors import check

__all__ = ["UserValues", "draw_users", "merge_support", "PATHS"]

PATHS = ("per_user", "sufficient")

# Samples drawn at once on the per-user path: bounds memory, not the law.
_CHUNK = 1 << 22
# Sufficient path, q >= 3 support points: the group's multiset is drawn over the user types (count
# vectors) when there are at most this many of them and that is cheaper than a count vector per user.
_TYPES_MAX = 1 << 17


class UserValues:
    """A multiset of users: ``counts[a]`` users whose data are ``atoms[a]``.

    Parameters
    ----------
    atoms : ndarray, shape (k, q) of int when ``support`` is given, else (k,) or (k, d)
        Per-user sample counts over ``support`` (each row sums to m), or the
        per-user statistics themselves.
    counts : ndarray of int, shape (k,)
        Number of users holding each atom.
    per_user : bool
        True on the per-user path: every atom is one user whose report noise
        is drawn separately.  False: a mechanism may draw the group's summed
        noise in one exact draw.
    support : ndarray, shape (q,) or (q, d), optional
        The sample values that count vectors refer to.
    m : int, optional
        Samples per user; inferred from the count vectors when ``support`` is given.
    """

    def __init__(self, atoms, counts, per_user, support=None, m=None):
        self.atoms = np.asarray(atoms)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.per_user = bool(per_user)
        self.support = None if support is None else np.asarray(support, dtype=float)
        if self.support is not None:
            check(self.atoms.ndim == 2 and self.atoms.shape[1] == len(self.support), "atoms",
                  self.atoms.shape, f"count vectors over the {len(self.support)} support points")
            if m is None:
                m = int(self.atoms[0].sum()) if len(self.atoms) else 0
        check(len(self.atoms) == len(self.counts), "counts", self.counts.shape, f"one count per atom ({len(self.atoms)})")
        check(not self.per_user or bool(np.all(self.counts == 1)), "counts", "per_user path",
              "every atom one user (counts = 1)")
        self.m = None if m is None else int(m)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_statistics(cls, stats, counts=None, per_user=None):
        """Users given by their statistic (e.g. a user mean); ``counts`` None = one user each."""
        stats = np.asarray(stats, dtype=float)
        if counts is None:
            counts = np.ones(len(stats), dtype=np.int64)
            per_user = True if per_user is None else per_user
        return cls(stats, counts, bool(per_user), support=None)

    @classmethod
    def from_samples(cls, samples, support=None):
        """Per-user path from literal samples, shape (n, m) or (n, m, d), one atom per user.

        The samples must take few distinct values (``support``; inferred when None).
        """
        x = np.asarray(samples, dtype=float)
        n, m = x.shape[:2]
        flat = x.reshape(n * m, -1)
        if support is None:
            support, inverse = np.unique(flat, axis=0, return_inverse=True)
        else:
            support = np.asarray(support, dtype=float).reshape(-1, flat.shape[1])
            eq = np.all(flat[:, None, :] == support[None, :, :], axis=2)
            check(bool(np.all(eq.any(axis=1))), "samples", "values off the support", "support points only")
            inverse = np.argmax(eq, axis=1)
        q = len(support)
        atoms = np.bincount(np.arange(n).repeat(m) * q + inverse.ravel(), minlength=n * q).reshape(n, q)
        if x.ndim == 2:
            support = support[:, 0]
        return cls(atoms, np.ones(n, dtype=np.int64), True, support=support, m=m)

    # ------------------------------------------------------------------ queries

    @property
    def n(self) -> int:
        """Number of users in the group."""
        return int(self.counts.sum())

    def means(self) -> np.ndarray:
        """Per-atom user mean X̄ = Σ_a c_a s_a / m, shape (k,) or (k, d)."""
        if self.support is None:
            return self.atoms.astype(float, copy=False)
        return (self.atoms @ self.support) / self.m

    def sample_sums(self, f) -> np.ndarray:
        """Per-atom Σ_j f(X_j) for a per-sample map ``f`` (e.g. a per-sample clip).

        ``f`` acts row-wise on an array of samples.  Needs the sample support:
        a per-sample transformation is not a function of the user mean.
        """
        check(self.support is not None, "values", "user statistics only", "count vectors over a sample support")
        return self.atoms @ f(self.support)

    def map_samples(self, f, linear=False) -> "UserValues":
        """The same users with every sample replaced by f(sample).

        With a support, only the q support points are mapped (exact for any f).
        Without one the atoms are user means, and mapping them is exact only
        for a linear f (e.g. selecting coordinates): ``linear=True`` says so.
        """
        if self.support is not None:
            return UserValues(self.atoms, self.counts, self.per_user, support=f(self.support), m=self.m)
        check(linear, "f", "non-linear map of user means", "linear maps only when the support is unknown")
        return UserValues(f(self.atoms), self.counts, self.per_user, support=None, m=self.m)

    def __repr__(self):
        kind = "per-user" if self.per_user else "sufficient"
        return f"UserValues({kind}, users={self.n}, atoms={len(self.atoms)}, m={self.m})"


def merge_support(support, probs):
    """Merge equal support points (a pushforward): returns (support, probs) without duplicates."""
    support = np.asarray(support, dtype=float)
    flat = support.reshape(len(support), -1)
    if flat.shape[1] == 1:  # scalar samples: the 1-D unique (same points, same order) is much cheaper
        uniq, inverse = np.unique(flat[:, 0], return_inverse=True)
        uniq = uniq[:, None]
    else:
        uniq, inverse = np.unique(flat, axis=0, return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=np.asarray(probs, dtype=float), minlength=len(uniq))
    keep = merged > 0
    uniq, merged = uniq[keep], merged[keep]
    return (uniq[:, 0] if support.ndim == 1 else uniq.reshape((-1,) + support.shape[1:])), merged / merged.sum()


@lru_cache(maxsize=256)
def _binomial_users(m: int, p: float):
    """(j, pmf): the values j of Bin(m, p) with pmf(j) > 0 and their normalised pmf, mode first.

    The law of the group's counts over 0..m is Multinomial(n_users, pmf) whatever order the
    categories come in, and categories of probability 0 (pmf underflowing to 0.0) never
    receive a user, so this is the same law as the full grid 0..m in increasing order.
    The order only saves work: numpy's multinomial draws one conditional binomial per
    category and stops once every user is placed, which, mode first, happens after the
    few standard deviations around m·p that hold the users instead of after ~m·p + 5 sd
    categories.  Cached: the pmf depends only on (m, p), which repeat across trials.
    """
    j = np.arange(m + 1)
    pmf = stats.binom.pmf(j, m, p)
    pmf = pmf / pmf.sum()
    keep = np.flatnonzero(pmf > 0)
    order = keep[np.argsort(-pmf[keep], kind="stable")]
    j, pmf = j[order], pmf[order]
    j.setflags(write=False)
    pmf.setflags(write=False)
    return j, pmf


@lru_cache(maxsize=64)
def _compositions(m: int, q: int) -> np.ndarray:
    """Every count vector of m samples over q points (rows summing to m), shape (C(m+q−1, q−1), q)."""
    if q == 1:
        return np.full((1, 1), m, dtype=np.int64)
    parts = []
    for first in range(m + 1):
        rest = _compositions(m - first, q - 1)
        parts.append(np.column_stack([np.full(len(rest), first, dtype=np.int64), rest]))
    out = np.concatenate(parts)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=32)
def _multinomial_users(m: int, probs: tuple):
    """(types, pmf, tail): the count vectors c of Multinomial(m, probs) with pmf(c) > 0, their
    normalised pmf, most probable first, and tail[i] = Σ_{j >= i} pmf[j].

    The group-level analogue of :func:`_binomial_users` for q >= 3 points: a user is fixed by its
    count vector, so the group's counts over the types are Multinomial(n_users, pmf).
    pmf(c) = m!/Π c_a! · Π p_a^{c_a}, computed in logs.  Cached on (m, probs).
    """
    types = _compositions(m, len(probs))
    logp = np.log(np.asarray(probs, dtype=float))
    logpmf = special.gammaln(m + 1.0) - special.gammaln(types + 1.0).sum(axis=1) + types @ logp
    pmf = np.exp(logpmf - logpmf.max())
    pmf = pmf / pmf.sum()
    keep = np.flatnonzero(pmf > 0)
    order = keep[np.argsort(-pmf[keep], kind="stable")]
    types, pmf = types[order], pmf[order]
    tail = np.cumsum(pmf[::-1])[::-1].copy()  # summed from the small end: exact enough for tiny tails
    for a in (types, pmf, tail):
        a.setflags(write=False)
    return types, pmf, tail


def _types_cheaper(n_users: int, m: int, q: int) -> bool:
    """Whether drawing the group over the user types beats one Multinomial(m, probs) per user.

    Only a question of speed (both are exact).  Measured: ~90 ns per point and user for one count
    vector per user; ~12 ns per type over the types (a pass over all of them, plus one binomial per
    type visited before every user is placed).
    """
    n_types = math.comb(m + q - 1, q - 1)
    return n_types <= _TYPES_MAX and 12 * n_types < 90 * q * n_users


def _draw_types(rng, n_users: int, m: int, probs) -> tuple:
    """(atoms, counts): the distinct count vectors of ``n_users`` users and how many users hold each.

    Multinomial(n_users, pmf) over the types, most probable first, drawn block by block: the users
    in a block of types are Bin(users left, block mass / mass left), then spread over the block by a
    multinomial; every user is placed after the few blocks that hold the probable types, so the
    (many, improbable) types after them cost nothing.  The blocks only order the work: it is the
    sequential-conditional form of the same multinomial.
    """
    probs = np.asarray(probs, dtype=float)
    perm = np.argsort(-probs, kind="stable")  # canonical order of the points: one cache entry per law
    types, pmf, tail = _multinomial_users(m, tuple(float(x) for x in probs[perm]))
    hits, held = [], []
    left, start, size = int(n_users), 0, 1024
    while left > 0:
        stop = min(start + size, len(pmf))
        block = pmf[start:stop]
        mass = float(block.sum())
        k = left if stop == len(pmf) else int(rng.binomial(left, min(1.0, mass / float(tail[start]))))
        if k:
            c = rng.multinomial(k, block / mass)
            h = np.flatnonzero(c)
            hits.append(start + h)
            held.append(c[h])
        left -= k
        start, size = stop, 2 * size
    hit = np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)
    atoms = np.empty((len(hit), len(probs)), dtype=np.int64)
    atoms[:, perm] = types[hit]
    return atoms, (np.concatenate(held) if held else np.zeros(0, dtype=np.int64))


def draw_users(rng, n_users, m, support, probs, path, transform=None) -> UserValues:
    """Draw ``n_users`` users with m i.i.d. samples from the law Σ_a probs[a] δ_{support[a]}.

    Parameters
    ----------
    rng : numpy.random.Generator
        Every draw comes from it.
    support : ndarray, shape (q,) or (q, d)
    probs : ndarray, shape (q,)
    path : {"per_user", "sufficient"}
        ``per_user``: each user's m literal samples (O(n m) work, in chunks),
        counted over the support.  ``sufficient``: for two support points the
        group's multiset directly (counts ~ Multinomial(n, Binomial(m, π) pmf),
        O(m) work); otherwise one Multinomial(m, probs) count vector per user, or,
        when the count vectors are few (small m and q) and that is cheaper, the
        group's multiset over them (counts ~ Multinomial(n, Multinomial(m, probs) pmf)).
    transform : callable, optional
        A per-sample map applied to the support first (samples are then
        f(X_ij)); equal images are merged, so e.g. one ±D coordinate of a
        d-dimensional sample becomes a two-point law and the cheap group-level
        path applies.
    """
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    check(path in PATHS, "path", path, PATHS)
    check(int(n_users) >= 0, "n_users", n_users, ">= 0")
    check(int(m) >= 1, "m", m, ">= 1")
    support = np.asarray(support, dtype=float)
    if transform is not None:
        support = np.asarray(transform(support), dtype=float)
    support, probs = merge_support(support, probs)
    n_users, m, q = int(n_users), int(m), len(support)
    if path == "per_user":
        atoms = np.empty((n_users, q), dtype=np.int64)
        cum = np.cumsum(probs)[:-1]
        rows = max(1, _CHUNK // m)
        for start in range(0, n_users, rows):
            k = min(rows, n_users - start)
            idx = np.searchsorted(cum, rng.random((k, m)), side="right")
            atoms[start:start + k] = np.bincount((np.arange(k)[:, None] * q + idx).ravel(),
                                                 minlength=k * q).reshape(k, q)
        return UserValues(atoms, np.ones(n_users, dtype=np.int64), True, support=support, m=m)
    if q == 1:
        return UserValues(np.full((1, 1), m), np.array([n_users]), False, support=support, m=m)
    if q == 2:
        # A user is fixed by how many of its samples hit the first point: Bin(m, π); the group's
        # counts over j = 0..m are Multinomial(n_users, Bin(m, π) pmf) (see _binomial_users).
        j, pmf = _binomial_users(m, float(probs[0]))
        counts = rng.multinomial(n_users, pmf)
        hit = np.flatnonzero(counts)
        hit = hit[np.argsort(j[hit])]  # atoms in increasing j, as the full 0..m grid gives them
        atoms = np.stack([j[hit], m - j[hit]], axis=1)
        return UserValues(atoms, counts[hit], False, support=support, m=m)
    if _types_cheaper(n_users, m, q):
        atoms, counts = _draw_types(rng, n_users, m, probs)
        return UserValues(atoms, counts, False, support=support, m=m)
    atoms = rng.multinomial(m, probs, size=n_users)
    return UserValues(atoms, np.ones(n_users, dtype=np.int64), False, support=support, m=m)
