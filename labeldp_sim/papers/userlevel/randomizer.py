r"""The user-level protocol of papers/003: :class:`UserRandomizer`, what every user-level randomizer
states and implements (the randomizers themselves are in :mod:`labeldp_sim.papers.userlevel.mechanisms`).

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
                      every other per-user method (``randomize``, ``privacy_loss``,
                      ``location``) goes through it;
``scale``, ``sensitivity``  b and the claimed sup ℓ1 distance of locations;
``randomize(x_user, rng)``  one user's report (what the audit runs on neighbours);
``release_sum(values, rng)`` Σ of the reports of every user in a
:class:`~labeldp_sim.papers.userlevel.data.UserValues`, exact in law: per-user atoms
get per-user noise, a sufficient-statistic multiset gets ``laplace_sum`` (a
Gamma difference).  Both paths call the same clipping method.

``law`` and ``release_sum`` are the boundary: they check the data
(:meth:`UserRandomizer.check_samples`, :meth:`UserRandomizer.check_values`) against
the randomizer's declared sample dimension d (and m where it declares one), refuse
NaN and ±inf, and refuse a noise scale that is not finite and > 0, each in one line
naming the argument; then the subclass's ``_law`` / ``_release_sum`` runs.  A
sample array of shape (m, 2) given to a randomizer of d = 1 would otherwise count
as 2m samples or two statistics and spend twice its ε.

A :class:`UserRandomizer` is a :class:`~labeldp_sim.privacy.protocols.Mechanism`
(a :class:`~labeldp_sim.harness.components.Component`) of group
``userlevel.randomizer``, not ``mechanism``: the estimators of papers/003 build it
(from tunings, boxes and maps), no config names it, and a Table I ``_target_``
cannot reach it.  It declares its ``parameters``; its ``audit_cases`` gives the
privacy audit the cases of :mod:`labeldp_sim.papers.userlevel.audit` that hold a
randomizer of exactly its class.  ``law``, ``release_sum``, ``randomize`` and the
checks are the protocol's ``boundary``: a public randomizer cannot override them.

These are simulation mechanisms, not for releasing real data: floating-point
Laplace noise leaks through its low-order bits (Mironov 2012).  The audit
measures that leak and reports it as a known, stated limitation.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from labeldp_sim.harness.errors import ConfigError, check
from labeldp_sim.privacy.protocols import (USER_LOCAL, Mechanism, Privacy, audit_recipe, check_finite, check_noise_scale,
                                 epsilon_parameter, laplace_sum, shown)
from labeldp_sim.papers.userlevel.data import UserValues

__all__ = ["UserRandomizer", "laplace_total"]

# Laplace draws at once on the per-user path: bounds memory, not the law.
_CHUNK = 1 << 22


def laplace_total(n_reports, size, scale, per_user, rng) -> np.ndarray:
    """Σ over ``n_reports`` reports of i.i.d. Lap(scale) noise vectors of length ``size``.

    ``per_user``: drawn report by report (the literal protocol, in chunks);
    otherwise one Gamma difference per coordinate (:func:`laplace_sum`), the
    same law.
    """
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    n_reports = int(n_reports)
    if not per_user:
        return laplace_sum(np.full(size, n_reports), scale, rng)
    total = np.zeros(size)
    rows = max(1, _CHUNK // max(size, 1))
    for start in range(0, n_reports, rows):
        total += rng.laplace(0.0, scale, size=(min(rows, n_reports - start), size)).sum(axis=0)
    return total


def _rows(x, dim) -> bool:
    """Rows of samples (or statistics) of dimension ``dim``: shape (n,) or (n, 1) for d = 1, (n, d)
    otherwise; any (n,) or (n, r) when ``dim`` is None."""
    if dim is None:
        return x.ndim in (1, 2)
    return (x.ndim == 2 and x.shape[1] == dim) or (dim == 1 and x.ndim == 1)


def _shape_text(dim, m="m") -> str:
    if dim is None:
        return f"shape ({m},) or ({m}, d)"
    return f"shape ({m},) or ({m}, 1): d = 1" if dim == 1 else f"shape ({m}, {dim}): d = {dim}"


class UserRandomizer(Mechanism):
    r"""A user-level ε-LDP randomizer (Definition 1): one report from a user's whole data set.

    Subclasses state the law of the report (:meth:`law`, :attr:`scale`,
    :attr:`sensitivity`) and draw the group sum (:meth:`release_sum`); all of
    these are abstract, so a half-written randomizer cannot be instantiated,
    and none defaults to passing data through.

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).

    :meth:`law` and :meth:`release_sum` are the boundary: they check their data
    (:meth:`check_samples`, :meth:`check_values`) and call the subclass's
    :meth:`_law` / :meth:`_release_sum`, so no path reaches the clipping with
    unchecked data.

    All randomizers here are Laplace mechanisms, possibly mixed: the report's law
    given x is Σ_c w_c ⊗_r Lap(loc_c(x)_r, b), and user-level ε-LDP (Definition 1,
    Eq. (1)) holds when

    .. math:: \sup_{x, x' \in \mathcal X^m} \|loc(x) - loc(x')\|_1 \,/\, b \;\le\; \epsilon,

    the ℓ1 sensitivity of the user statistic over the whole data set
    (:attr:`sensitivity`) divided by the scale b (:attr:`scale`), which
    :attr:`epsilon_bound` states and :meth:`privacy_loss` measures.

    Parameters
    ----------
    epsilon : float
        The user-level budget, > 0.

    Attributes
    ----------
    dim : int or None
        The declared dimension d of one sample (None: any, for a map's input).
    m : int or None
        The declared number of samples per user (None: any).
    group : str
        ``"userlevel.randomizer"``: the estimators of papers/003 build it, no
        config names it.
    privacy : Privacy
        :data:`~labeldp_sim.privacy.protocols.USER_LOCAL`, all m samples of a user.
    boundary : tuple of str
        ``law``, ``release_sum``, ``randomize`` and the checks: no public
        randomizer may override them.

    Examples
    --------
    The clipped user mean on the box [−1, 1] (:class:`~labeldp_sim.papers.userlevel.mechanisms.ClippedMean`):
    a single Laplace component at the clipped mean, of scale 2/ε.

    >>> from labeldp_sim.papers.userlevel.data import UserValues
    >>> from labeldp_sim.papers.userlevel.mechanisms import ClippedMean
    >>> randomizer = ClippedMean(1.0, lo=-1.0, hi=1.0)
    >>> randomizer.scale, randomizer.sensitivity, randomizer.epsilon_bound
    (2.0, 2.0, 1.0)
    >>> locations, weights = randomizer.law([0.5, 3.0])
    >>> locations.tolist(), weights.tolist()
    ([[1.0]], [1.0])
    >>> randomizer.privacy_loss([-5.0], [5.0])
    1.0
    >>> randomizer.randomize([0.5, 3.0], 0).shape
    (1,)
    >>> randomizer.release_sum(UserValues.from_samples([[0.5, 1.0], [0.0, 3.0]]), 0).shape
    (1,)

    Samples of the wrong dimension are refused, in one line:

    >>> randomizer.law(np.zeros((3, 2)))
    Traceback (most recent call last):
    ...
    labeldp_sim.harness.errors.ConfigError: x_user: got an array of shape (3, 2); allowed: ...
    """

    group = "userlevel.randomizer"
    parameters = {"epsilon": epsilon_parameter()}
    boundary = ("law", "release_sum", "randomize", "check_samples", "check_values")
    name: str = ""
    privacy: Privacy = USER_LOCAL
    tasks = ("mean estimation",)
    dim: int | None = 1
    m: int | None = None

    # the cases of labeldp_sim.papers.userlevel.audit whose randomizer is exactly of the class asking
    audit_cases = audit_recipe("labeldp_sim.papers.userlevel.audit", "randomizer_audit", with_class=True)

    def law(self, x_user) -> tuple[np.ndarray, np.ndarray]:
        """The report's law given the user's samples: locations (c, r), weights (c,).

        Raises
        ------
        ConfigError
            One line naming ``x_user`` (or ``epsilon``) for data :meth:`check_samples` refuses.
        """
        return self._law(self.check_samples(x_user))

    def release_sum(self, values: UserValues, rng) -> np.ndarray:
        """Σ of the reports of all users in ``values``, drawn exactly in law, shape (r,).

        Raises
        ------
        ConfigError
            One line naming ``values`` (or ``epsilon``) for data :meth:`check_values` refuses.
        """
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return self._release_sum(self.check_values(values), rng)

    def check_samples(self, x_user) -> np.ndarray:
        """One user's whole data set as a float array, checked; else a one-line :class:`ConfigError`.

        The m ≥ 1 samples must have the declared dimension (shape (m,) or (m, 1)
        for d = 1, (m, d) otherwise), the declared m if any, and be finite.
        """
        self._check_scale()
        try:
            x = np.asarray(x_user, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError("x_user", shown(type(x_user).__name__), self._samples_allowed()) from None
        if not (_rows(x, self.dim) and len(x) >= 1 and self.m in (None, len(x))):
            raise ConfigError("x_user", shown(f"an array of shape {x.shape}"), self._samples_allowed())
        if not np.isfinite(x).all():  # the per-report path: the message is built on refusal only
            check_finite(x, "x_user", self._samples_allowed())
        return x

    def _samples_allowed(self) -> str:
        return f"one user's samples, {_shape_text(self.dim, self.m or 'm')}, finite"

    def check_values(self, values) -> UserValues:
        """A group of users, checked: its sample support (or, without one, its user statistics)
        has the declared dimension and is finite, and its m is the declared one."""
        self._check_scale()
        check(isinstance(values, UserValues), "values", shown(type(values).__name__), "a UserValues")
        # the sample support when there is one (the statistics are functions of it), else the statistics
        if values.support is not None:
            rows, what, n = values.support, "sample support", "q"
        else:
            rows, what, n = values.atoms, "user statistics", "k"
        allowed = f"{what} of {_shape_text(self.dim, n)}, finite"
        if not _rows(rows, self.dim) or rows.dtype.kind not in "iuf":
            raise ConfigError("values", shown(f"{what} of shape {rows.shape}"), allowed)
        check_finite(rows, "values", allowed)
        if self.m is not None:
            check(values.m == self.m, "values.m", values.m, f"m = {self.m}")
        return values

    def _check_scale(self) -> None:
        # a tiny ε overflows sensitivity/ε to inf (±inf or NaN reports), a huge one underflows it to 0
        check_noise_scale(self.scale, self.epsilon)

    @abstractmethod
    def _law(self, x) -> tuple[np.ndarray, np.ndarray]:
        """The report's law given checked samples: the randomizer's clipping."""

    @property
    @abstractmethod
    def scale(self) -> float:
        """Laplace scale b of every report coordinate."""

    @property
    @abstractmethod
    def sensitivity(self) -> float:
        """sup over pairs of whole user data sets of the ℓ1 distance between report locations."""

    @abstractmethod
    def _release_sum(self, values: UserValues, rng) -> np.ndarray:
        """Σ of the reports of all users in checked ``values``, drawn exactly in law."""

    # ------------------------------------------------------------------ derived, for the audit

    def location(self, x_user) -> np.ndarray:
        """The report's location when its law is a single Laplace component."""
        locs, _ = self.law(x_user)
        check(len(locs) == 1, "law", f"{len(locs)} components", "a single Laplace location")
        return locs[0]

    def randomize(self, x_user, rng) -> np.ndarray:
        """One user's report from its whole data set: a component of :meth:`law` plus Lap(scale)."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        locs, weights = self.law(x_user)
        c = 0 if len(locs) == 1 else rng.choice(len(locs), p=weights)
        return locs[c] + rng.laplace(0.0, self.scale, size=locs.shape[1])

    def privacy_loss(self, x_user, x_other) -> float:
        """``sup_z |ln p(z | x) / p(z | x')|``: exact for one component, an upper bound for mixtures."""
        a, _ = self.law(x_user)
        b, _ = self.law(x_other)
        dist = np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
        return float(dist.max() / self.scale)

    @property
    def epsilon_bound(self) -> float:
        """sensitivity / scale: the ε the proof gives (≤ :attr:`epsilon`)."""
        return self.sensitivity / self.scale
