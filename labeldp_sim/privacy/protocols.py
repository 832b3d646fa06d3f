r"""Privacy protocols shared by every paper package: what a mechanism states and what it must implement.

Every mechanism states its ε, what it protects (:class:`Privacy`) and the tasks it fits, and belongs to
exactly one protocol.  Each protocol's privacy-relevant methods are abstract, so a half-written mechanism
cannot be instantiated, and clipping and noise happen in one method per mechanism:

:class:`LocalMechanism` — ``report(y, rng, *, K, cells, n_cells)``
    maps each user's record to its report, checked, clipping and noise in ``_report``.

:class:`CubeSumMechanism` (local) — what a cube estimator aggregates:
    ``aggregate(reports, cells, n_cells, K)``: the per-cube statistic (12), a sum of reports;
    ``sample_aggregate(data, N, rng, K)``: the same statistic drawn exactly in law from the per-cube label
    counts (the mechanism's own sufficient-statistic sampler ``_sample_aggregate``, SPEC §4); ``collect``:
    reports of the samples in chunks, aggregated as they are drawn.

:class:`NoisyLabel` (local) — one number per user, which a kNN averages.

:class:`CentralMechanism` — ``release(data, rng, N, h, d)``
    maps a checked :class:`CubeData` to the released per-cube output (in ``_release``).

:class:`NoPrivacy` is explicit: its report is the label (a read-only view).  K is always an argument for
classification mechanisms, never inferred from the labels.

Every mechanism is a :class:`~labeldp_sim.harness.components.Component` (group ``mechanism`` here; the
user-level randomizers have their own): it declares its keyword parameters (``parameters``), and its
``audit_cases`` names what the privacy audit runs for it.  A protocol's boundary methods (``boundary``) cannot
be overridden by a public concrete mechanism: the class is refused when it is defined.

**Careless inputs are refused at the boundary** (:mod:`labeldp_sim.privacy.checks`), in one line that names
the argument (a :class:`~labeldp_sim.harness.errors.ConfigError`, a ``ValueError``): labels that are not
integers in 0..K−1, cube indices outside 0..n_cells−1, NaN or ±inf in labels, arrays of the wrong shape, and
an ε whose probabilities float64 cannot represent (:data:`LOG_ODDS_LIMIT`), whose draws on the grid of
uniforms would realise a loss above ε (:mod:`labeldp_sim.privacy.grid`), or whose noise scale overflows.  The
checks are O(n) numpy reductions and return the arrays as given (no copy, no change of dtype) and draw
nothing, so a valid call draws exactly the numbers it drew before the checks existed.

**Simulation mechanisms, not for releasing real data.**  The mechanisms here draw from the papers' laws in
floating point, which is what the rate theory is about.  Floating-point Laplace noise leaks through its
low-order bits (Mironov 2012): the set of floats ``location + noise`` can take depends on the location, so an
event on the last mantissa bit tells neighbours apart far beyond e^ε.  Samplers that compare a uniform with a
probability realise it on the grid of 2^-53 that uniforms live on (⌈p·2^53⌉/2^53); RR and RAPPOR cap ε where
the loss that realises stays within 1e-9 of ε (:mod:`labeldp_sim.privacy.grid`).  ``labeldp-sim audit``
measures the low-bit leak of every Laplace-based mechanism and reports it as a known, stated limitation; to
release data, use a floating-point-safe library (e.g. OpenDP's discrete Laplace).

User-level protocols (papers/003) live with their paper in :mod:`labeldp_sim.papers.userlevel.mechanisms`, on
top of :class:`Privacy`, :func:`laplace_sum` and the checks here.
"""

from __future__ import annotations

import importlib
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from labeldp_sim.harness.components import Component, Nullable
from labeldp_sim.harness.errors import ConfigError, check
# the data a mechanism reads and the moments it states (re-exported, like the checks below)
from labeldp_sim.privacy.cube_data import CubeData, CubeMeanMoments, cube_label_counts, mean_of_n_labels
# the boundary checks (re-exported: the mechanisms of every paper import them from here)
from labeldp_sim.privacy.checks import (LOG_ODDS_LIMIT, check_cells, check_classes, check_epsilon, check_finite,
                                        check_n_cells, check_noise_scale, check_reals, epsilon_parameter, noise_scale,
                                        require_K, shown)

__all__ = ["Privacy", "NONE", "LABEL_LOCAL", "LABEL_CENTRAL", "FULL_LOCAL", "FULL_CENTRAL", "USER_LOCAL",
           "Mechanism", "LocalMechanism", "CubeSumMechanism", "NoisyLabel", "CentralMechanism", "CubeData",
           "NoPrivacy", "argmax_random_ties", "laplace_sum", "LOG_ODDS_LIMIT", "check_epsilon", "check_noise_scale",
           "noise_scale", "check_classes", "check_reals", "check_cells", "check_n_cells", "check_finite",
           "shown", "epsilon_parameter", "MECHANISMS", "audit_recipe", "CubeMeanMoments", "mean_of_n_labels",
           "cube_label_counts"]


@dataclass(frozen=True)
class Privacy:
    """What a mechanism guarantees.

    Attributes
    ----------
    model : {"none", "local", "central"}
    protects : {"nothing", "label", "features+label", "user data set"}
    """

    model: str
    protects: str

    def __str__(self) -> str:
        if self.model == "none":
            return "none"
        return f"{self.protects}/{self.model}"


NONE = Privacy("none", "nothing")
LABEL_LOCAL = Privacy("local", "label")
LABEL_CENTRAL = Privacy("central", "label")
FULL_LOCAL = Privacy("local", "features+label")
FULL_CENTRAL = Privacy("central", "features+label")
USER_LOCAL = Privacy("local", "user data set")  # papers/003, Definition 1: all m samples of a user


def argmax_random_ties(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax of integer scores, ties broken uniformly at random (13)."""
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    return np.argmax(scores + 0.5 * rng.random(scores.shape), axis=1)


def laplace_sum(n, scale, rng):
    """Σ of n i.i.d. Lap(scale), exactly in law: scale·(Gamma(n, 1) − Gamma(n, 1))."""
    rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
    n = np.asarray(n, dtype=float)
    return scale * (rng.gamma(n) - rng.gamma(n))


# the component group of the label-privacy mechanisms, the one conf/table1/mechanism/*.yaml name
MECHANISMS = "mechanism"


class Mechanism(Component, ABC):
    """What every mechanism states: its ε, what it protects, the tasks it fits.

    A :class:`~labeldp_sim.harness.components.Component`: the protocols below give their mechanisms the group
    ``mechanism`` (a config reaches one by its registered ``name``; the privacy audit iterates the registries
    of every group holding mechanisms), and each concrete class declares ``parameters``, its keyword
    parameters and what each accepts, and says what the audit runs for it (:meth:`audit_cases`).

    Attributes
    ----------
    name : str
    privacy : Privacy
    tasks : tuple of str
    epsilon : float (None only for :class:`NoPrivacy`)
    max_epsilon : float
        The largest ε whose probabilities float64 represents (inf where none is set); the constructor refuses
        a larger one, saying ``epsilon_limit``.
    boundary : tuple of str
        The protocol's methods that check the data and hand them to the mechanism's clipping and noise.  A
        public concrete subclass that overrides one is refused when it is defined, so no mechanism a config
        can name skips the checks (``_…`` classes — planted mutants, test fixtures — are not registered).
    exact_cube_mean : bool
        Whether it states the moments of the cube mean it releases given a cube count
        (``cube_mean_moments(counts, N, h, d)`` → :class:`CubeMeanMoments`): what an exact expected risk of a
        cube mean needs.
    exact_report : bool
        Whether it states the moments of one report (``report_moments()`` → :class:`CubeMeanMoments`): what an
        exact expected kNN risk needs.
    exact_choice : bool
        Whether it states the law of the class it picks on one cube (``argmax_choice_law(N, mass, K)`` →
        :class:`~labeldp_sim.privacy.choice_law.ChoiceLaw`): what an exact expected argmax risk needs.

    Parameters
    ----------
    epsilon : float
        The budget ε, > 0 and at most ``max_epsilon`` (else a :class:`ConfigError`).

    Examples
    --------
    >>> from labeldp_sim.privacy.rappor import RAPPOR
    >>> RAPPOR.name, str(RAPPOR.privacy), RAPPOR.tasks, RAPPOR(1.0).epsilon
    ('rappor', 'label/local', ('classification',), 1.0)
    """

    group = None  # no registry lists this base: each protocol names its group
    parameters = {"epsilon": epsilon_parameter()}
    boundary: ClassVar[tuple] = ()
    name: str = ""
    privacy: Privacy
    tasks: tuple = ("classification",)
    T = None  # clipping level of mechanisms that clip
    max_epsilon: float = math.inf
    epsilon_limit: str = ""
    exact_cube_mean: ClassVar[bool] = False
    exact_report: ClassVar[bool] = False
    exact_choice: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        # before the registry sees the class: a refused class must not be listed
        if not cls.__name__.startswith("_") and not _abstract_methods(cls):
            for method in sorted({m for k in cls.__mro__ for m in vars(k).get("boundary", ())}):
                owner = next(k for k in cls.__mro__ if method in vars(k))
                if method not in vars(owner).get("boundary", ()):
                    protocol = next(k for k in cls.__mro__ if method in vars(k).get("boundary", ()))
                    raise TypeError(f"{cls.__name__}: {owner.__name__} may not override {protocol.__name__}.{method}, "
                                    f"the protocol's boundary (it checks the data); implement the protocol's hook "
                                    f"(_report, _release, _law...) instead")
        super().__init_subclass__(**kwargs)

    def __init__(self, epsilon):
        self.epsilon = check_epsilon(epsilon, self.max_epsilon, self.epsilon_limit)

    @classmethod
    def audit_cases(cls, eps):
        """What the privacy audit runs for this class at the claimed ε = ``eps``: an
        :class:`~labeldp_sim.privacy.audit.AuditCases` (real cases of exactly this class, planted mutants,
        careless inputs).  Each concrete mechanism states its own, usually as ``audit_cases =
        audit_recipe(module, function)``; None (this default) stops the audit.
        """
        return None

    def trial_needs(self, size) -> list:
        """The arrays this mechanism adds to one trial of ``size`` (a
        :class:`~labeldp_sim.harness.memory.TrialSize`), as :class:`~labeldp_sim.harness.memory.Need` lower
        bounds.  The default: none beyond the estimator's (its reports are no larger than the labels, or come
        in chunks).
        """
        return []

    def fixed_noise_scale(self, N, h, d):
        """The one noise scale a central release adds to every cube at N samples and cube side h in d
        dimensions, where it does not depend on the data (it must stay finite and > 0 for an exact risk, which
        squares the estimates); None (this default) where there is none."""
        return None


def audit_recipe(module: str, function: str, with_class: bool = False) -> classmethod:
    """The ``audit_cases`` of a mechanism class whose audit is ``module.function(eps)``.

    ``module.function(cls, eps)`` ``with_class``: named by its dotted path, and imported only when the audit
    asks — the audit's machinery stays out of every run's start-up, and no module imports its recipes'.

    Parameters
    ----------
    module, function : str
        The dotted path of the audit's module, and the function's name in it.
    with_class : bool, default False
        Whether the function takes the asking class too, ``function(cls, eps)``.

    Returns
    -------
    classmethod
        ``audit_cases(cls, eps)``: imports ``module`` when called, returns the function's answer.

    Examples
    --------
    >>> class Demo:  # a stand-in audit from the standard library
    ...     audit_cases = audit_recipe("math", "sqrt")
    >>> Demo.audit_cases(4.0)
    2.0
    """
    def audit_cases(cls, eps):
        # a function named as a string, resolved when the audit asks
        recipe = getattr(importlib.import_module(module), function)
        return recipe(cls, eps) if with_class else recipe(eps)

    audit_cases.__doc__ = f"What the privacy audit runs for this class: ``{module}.{function}``."
    return classmethod(audit_cases)


def _abstract_methods(cls) -> set:
    """The abstract methods ``cls`` leaves unimplemented (ABCMeta has not computed them yet)."""
    # class introspection: ABCMeta sets __abstractmethods__ only after __init_subclass__
    return {name for name in dir(cls) if getattr(getattr(cls, name, None), "__isabstractmethod__", False)}


class LocalMechanism(Mechanism):
    """A mechanism applied by each user to its own record before anything is collected.

    :meth:`report` is the boundary: it checks the data (:meth:`check_inputs`) and hands them to
    :meth:`_report`, which every mechanism implements and which is the only place it clips or adds noise.  No
    path reaches ``_report`` with unchecked data.  Everything after it is post-processing.

    Parameters
    ----------
    epsilon : float
        The budget ε (:class:`Mechanism`).

    Examples
    --------
    >>> NoPrivacy().report(np.array([0, 1, 1]), 0, K=2).flags.writeable  # the labels, a read-only view
    False
    """

    group = MECHANISMS
    boundary = ("report", "check_inputs")
    needs_cells = False  # the report depends on each user's cube (the features are protected)

    def report(self, y, rng, *, K=None, cells=None, n_cells=None, **given):
        """The reports of the users whose labels are ``y`` (and cubes ``cells``), one row per user.

        Raises
        ------
        ConfigError
            One line naming the argument, for any input :meth:`check_inputs` refuses.
        """
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        y, K, cells, n_cells = self.check_inputs(y, K=K, cells=cells, n_cells=n_cells)
        return self._report(y, rng, K=K, cells=cells, n_cells=n_cells, **given)

    def check_inputs(self, y, *, K=None, cells=None, n_cells=None):
        """``(y, K, cells, n_cells)`` checked, the arrays as given; else a one-line :class:`ConfigError`.

        Labels are classes — integers in 0..K−1, K given — for a mechanism of classification, and finite reals
        for one of regression; a mechanism of both (:class:`NoPrivacy`) reads the task from K.  Cube indices,
        whenever they are given (or needed: ``needs_cells``), are integers in 0..n_cells−1, one per label.
        """
        classes = "regression" not in self.tasks or (K is not None and "classification" in self.tasks)
        if classes:
            K = require_K(K)
            y = check_classes(y, K)
        else:
            y = check_reals(y)
        if self.needs_cells and cells is None:
            raise ConfigError("cells", None, "the cube of each user: this mechanism protects the features too")
        if self.needs_cells or cells is not None or n_cells is not None:
            n_cells = check_n_cells(n_cells)
            cells = check_cells(cells, n_cells, len(y))
        return y, K, cells, n_cells

    @abstractmethod
    def _report(self, y, rng, *, K, cells, n_cells):
        """The reports of checked data: the mechanism's clipping and noise."""


class CubeSumMechanism(LocalMechanism):
    """A local mechanism whose reports a cube estimator sums per cube.

    The statistic is a per-cube score matrix (n_cells, K) for classification, and the pair (n, S) of per-cube
    counts and sums for regression. :meth:`collect` and :meth:`sample_aggregate` are boundaries too: the first
    checks the whole arrays, the second takes a :class:`CubeData` only (its arrays checked when it was built)
    and hands it to :meth:`_sample_aggregate`.

    Parameters
    ----------
    epsilon : float
        The budget ε (:class:`Mechanism`).

    Examples
    --------
    >>> NoPrivacy().sample_aggregate(CubeData.from_samples([0, 0, 1], [0, 1, 1], 2), 3, 0, K=2).tolist()
    [[1, 1], [0, 1]]
    """

    boundary = ("collect", "sample_aggregate")
    chunk = None  # users per block in collect: None = all at once

    @abstractmethod
    def aggregate(self, reports, cells, n_cells, K):
        """The per-cube statistic of a block of reports (post-processing)."""

    def sample_aggregate(self, data: CubeData, N, rng, K=None):
        """The per-cube statistic drawn exactly in law from ``data``'s per-cube label counts."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return self._sample_aggregate(_check_data(data), N, rng, K)

    @abstractmethod
    def _sample_aggregate(self, data: CubeData, N, rng, K=None):
        """:meth:`sample_aggregate` of a checked :class:`CubeData`: the mechanism's noise, in law."""

    def collect(self, y, rng, *, K=None, cells=None, n_cells=None):
        """``aggregate`` of every user's ``report``, in blocks of ``chunk`` users."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        # whole arrays first: a block would hide a cells array longer than y
        y, K, cells, n_cells = self.check_inputs(y, K=K, cells=cells, n_cells=n_cells)
        step = len(y) if not self.chunk else self.chunk
        total = None
        for start in range(0, max(len(y), 1), max(step, 1)):
            block = slice(start, start + step)
            stat = self.aggregate(self.report(y[block], rng, K=K, cells=cells[block], n_cells=n_cells),
                                  cells[block], n_cells, K)
            total = stat if total is None else _add(total, stat)
        return total

    def estimate(self, n, S, N, h, d):
        """Regression: the per-cube estimate S_l/n_l (0 on empty cubes), post-processing."""
        return np.divide(S, n, out=np.zeros_like(S, dtype=float), where=n > 0)


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b)) if isinstance(a, tuple) else a + b


class NoisyLabel(LocalMechanism):
    """A local mechanism whose report is one number per user (a kNN averages them).

    Parameters
    ----------
    epsilon : float
        The budget ε (:class:`Mechanism`).

    Examples
    --------
    >>> NoPrivacy().report(np.array([0.5, -1.0]), 0)  # no privacy: the label itself
    array([ 0.5, -1. ])
    """


def _check_data(data) -> CubeData:
    """``data`` unchanged when it is a :class:`CubeData` (whose arrays were checked when it was built)."""
    check(isinstance(data, CubeData), "data", shown(type(data).__name__),
          "a CubeData: the samples or their per-cube label counts, checked when it is built")
    return data


class CentralMechanism(Mechanism):
    """A mechanism run by a curator on the whole data set (a :class:`CubeData`, checked when built).

    :meth:`release` is the boundary: it takes a :class:`CubeData` only and hands it to :meth:`_release`, the
    one place the mechanism clips and adds noise.  Both paths (the samples, or their per-cube label counts)
    run this same code.

    Parameters
    ----------
    epsilon : float
        The budget ε (:class:`Mechanism`).

    Examples
    --------
    >>> from labeldp_sim.papers.table1.mechanisms import ExponentialMechanism
    >>> ExponentialMechanism(1.0).release(CubeData.from_samples([0, 0, 1], [0, 1, 1], 2), 0, 3, 0.5, 1, K=2).shape
    (2,)
    """

    group = MECHANISMS
    boundary = ("release",)

    def release(self, data: CubeData, rng, N, h, d, K=None):
        """The released per-cube output (classes or estimates), clipping and noise included."""
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return self._release(_check_data(data), rng, N, h, d, K)

    @abstractmethod
    def _release(self, data: CubeData, rng, N, h, d, K=None):
        """:meth:`release` of a checked :class:`CubeData`: the mechanism's clipping and noise."""


# --------------------------------------------------------------------------- no privacy


class NoPrivacy(CubeSumMechanism, NoisyLabel):
    """No privacy: every estimator sees the labels (majority vote or mean per cube, kNN mean)."""

    name = "none"
    privacy = NONE
    tasks = ("classification", "regression")
    exact_cube_mean = exact_report = exact_choice = True
    parameters = {"epsilon": Nullable(epsilon_parameter(), "no budget: any one given is not spent")}
    audit_cases = audit_recipe("labeldp_sim.privacy.audit.registry", "nothing_claimed")  # no row

    def __init__(self, epsilon=None):
        self.epsilon = None  # a budget, if the grid gives one, is not spent

    def _report(self, y, rng, *, K=None, cells=None, n_cells=None):
        report = np.asarray(y).view()  # no copy of N labels, and no way to change them through it
        report.flags.writeable = False
        return report

    def aggregate(self, reports, cells, n_cells, K):
        if K is None:  # regression: counts and sums of the labels
            return (np.bincount(cells, minlength=n_cells).astype(float),
                    np.bincount(cells, weights=reports, minlength=n_cells))
        return cube_label_counts(cells, reports, n_cells, require_K(K))

    def _sample_aggregate(self, data, N, rng, K=None):
        if K is None:
            return data.n(), data.clipped_sums(None)
        return data.label_counts(K)

    def cube_mean_moments(self, counts, N, h, d) -> CubeMeanMoments:
        """Moments of the plain cube mean S/n (:class:`CubeMeanMoments`): no clip, no noise."""
        return mean_of_n_labels(counts)

    def report_moments(self) -> CubeMeanMoments:
        """Moments of one report Z = Y (a mean of n = 1, :class:`CubeMeanMoments`): no clip, no noise."""
        return CubeMeanMoments(None, 1.0, 0.0, 1.0, 0.0)

    def argmax_choice_law(self, N, mass, K=2):
        """The cube majority vote (13) in law (:class:`~labeldp_sim.privacy.choice_law.ChoiceLaw`, K = 2).

        n_l1 − n_l0 is a sum over the N samples of +1 (in the cube, label 1), −1 (label 0)
        or 0 (elsewhere): rate P(X ∈ B_l) = ``mass``, gain 1; ties broken uniformly.
        """
        from labeldp_sim.privacy.choice_law import ChoiceLaw  # the step law of the choice (paper-free core)
        check(int(K) == 2, "K", K, "2 (the exact choice law compares two classes)")
        return ChoiceLaw(int(N), float(mass), 1.0)

    def argmax_choice_probability(self, N, mass, tilt, K=2):
        """P(the vote picks the class of larger mass in the cube), tilt = the two classes' mass difference."""
        return self.argmax_choice_law(N, mass, K).probability(abs(tilt))
