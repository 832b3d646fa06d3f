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

import numpy as np
from scipy import stats

from ..core.errors import check

__all__ = ["UserValues", "draw_users", "merge_support", "PATHS"]

PATHS = ("per_user", "sufficient")

# Samples drawn at once on the per-user path: bounds memory, not the law.
_CHUNK = 1 << 22


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
    uniq, inverse = np.unique(flat, axis=0, return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=np.asarray(probs, dtype=float), minlength=len(uniq))
    keep = merged > 0
    uniq, merged = uniq[keep], merged[keep]
    return (uniq[:, 0] if support.ndim == 1 else uniq.reshape((-1,) + support.shape[1:])), merged / merged.sum()


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
        O(m) work); otherwise one Multinomial(m, probs) count vector per user.
    transform : callable, optional
        A per-sample map applied to the support first (samples are then
        f(X_ij)); equal images are merged, so e.g. one ±D coordinate of a
        d-dimensional sample becomes a two-point law and the cheap group-level
        path applies.
    """
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
        # A user is fixed by how many of its samples hit the first point: Bin(m, π).
        j = np.arange(m + 1)
        pmf = stats.binom.pmf(j, m, probs[0])
        counts = rng.multinomial(n_users, pmf / pmf.sum())
        keep = counts > 0
        atoms = np.stack([j[keep], m - j[keep]], axis=1)
        return UserValues(atoms, counts[keep], False, support=support, m=m)
    atoms = rng.multinomial(m, probs, size=n_users)
    return UserValues(atoms, np.ones(n_users, dtype=np.int64), False, support=support, m=m)
