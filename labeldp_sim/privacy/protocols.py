r"""Privacy protocols shared by every paper package: what a mechanism states and what it must implement.

Every mechanism states its ε, what it protects (:class:`Privacy`) and the tasks it
fits, and belongs to exactly one protocol.  Each protocol's privacy-relevant
methods are abstract, so a half-written mechanism cannot be instantiated, and
clipping and noise happen in one method per mechanism:

:class:`LocalMechanism` — ``report(y, rng, *, K, cells, n_cells)``
    maps each user's record to its report.  ``report`` is the boundary: it checks
    the data (:meth:`LocalMechanism.check_inputs`) and hands them to the
    mechanism's ``_report``, the only place a local mechanism clips or adds noise.
    Everything after it is post-processing.

:class:`CubeSumMechanism` (local) — what a cube estimator aggregates:
    ``aggregate(reports, cells, n_cells, K)``: the per-cube statistic (12), a sum
    of reports; ``sample_aggregate(data, N, rng, K)``: the same statistic drawn
    exactly in law from the per-cube label counts (the mechanism's own
    sufficient-statistic sampler, SPEC §4); ``collect``: reports of the samples
    in chunks, aggregated as they are drawn.

:class:`NoisyLabel` (local) — one number per user, which a kNN averages.

:class:`CentralMechanism` — ``release(data, rng, N, h, d)``
    maps the data set, given as a :class:`CubeData` (the samples, or their
    per-cube label counts: both paths run this same code), to the released
    per-cube output, clipping and noise included.  A :class:`CubeData` checks
    its arrays when it is built, so no release reads unchecked data.

:class:`NoPrivacy` is explicit: its report is the label (a read-only view).  K is always
an argument for classification mechanisms, never inferred from the labels.

**Careless inputs are refused at the boundary**, in one line that names the
argument (a :class:`~labeldp_sim.core.errors.ConfigError`, a ``ValueError``):
labels that are not integers in 0..K−1, cube indices outside 0..n_cells−1, NaN
or ±inf in labels, arrays of the wrong shape, and an ε whose probabilities
float64 cannot represent (:data:`LOG_ODDS_LIMIT`) or whose noise scale
overflows.  The checks are O(n) numpy reductions and return the arrays as given
(no copy, no change of dtype) and draw nothing, so a valid call draws exactly
the numbers it drew before the checks existed.

**Simulation mechanisms, not for releasing real data.**  The mechanisms here
draw from the papers' laws in floating point, which is what the rate theory is
about.  Floating-point Laplace noise leaks through its low-order bits
(Mironov 2012): the set of floats ``location + noise`` can take depends on the
location, so an event on the last mantissa bit tells neighbours apart far beyond
e^ε.  Samplers that compare a uniform with a probability realise it on the grid
of 2^-53 that uniforms live on.  ``labeldp-sim audit`` measures the low-bit leak
of every Laplace-based mechanism and reports it as a known, stated limitation;
to release data, use a floating-point-safe library (e.g. OpenDP's discrete
Laplace).

User-level protocols (papers/003) live with their paper in
:mod:`labeldp_sim.userlevel.mechanisms`, on top of :class:`Privacy`, :func:`laplace_sum`
and the checks here.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError, check, is_int, is_number

__all__ = ["Privacy", "NONE", "LABEL_LOCAL", "LABEL_CENTRAL", "FULL_LOCAL", "FULL_CENTRAL", "USER_LOCAL",
           "Mechanism", "LocalMechanism", "CubeSumMechanism", "NoisyLabel", "CentralMechanism", "CubeData",
           "NoPrivacy", "argmax_random_ties", "laplace_sum", "LOG_ODDS_LIMIT", "check_epsilon", "check_noise_scale",
           "noise_scale", "check_classes", "check_reals", "check_cells", "check_n_cells", "check_finite",
           "shown"]


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
    return np.argmax(scores + 0.5 * rng.random(scores.shape), axis=1)


def laplace_sum(n, scale, rng):
    """Σ of n i.i.d. Lap(scale), exactly in law: scale·(Gamma(n, 1) − Gamma(n, 1))."""
    n = np.asarray(n, dtype=float)
    return scale * (rng.gamma(n) - rng.gamma(n))


# --------------------------------------------------------------------------- the boundary
# Why each check exists: a label outside 0..K−1 lands in another class's bit or cube (a negative
# one wraps round to the last); a cube index past n_cells grows the output by an entry whose
# presence names the record; NaN passes every clip and comes out as NaN; a 2-D array where one
# number per user is expected changes what "one user" means.

# A sampler compares uniforms on the grid of 2^-53 with its probabilities, so an outcome less
# likely than one grid step is never drawn: a keep probability that rounds to 1.0 never flips
# (an infinite loss), and past ε ≈ 709.8 e^ε overflows and the probability is NaN.  The rarer
# outcome of one neighbour step of the finite-output mechanisms has probability 1/(1 + e^a)
# (a = ε for RR, ε/2 for a RAPPOR bit, the weight for the exponential mechanism); a ≤ this limit
# keeps it ≥ 2^-52, two grid steps.  No log-space form helps: the samplers compare a uniform
# with the keep probability itself, and drawing the flip instead would change every draw.
LOG_ODDS_LIMIT = math.log(2.0 ** 52 - 1)  # ≈ 36.04


class _Shown(str):
    """A description shown as it is after "got" in a :class:`ConfigError` (``repr`` would quote it)."""

    def __repr__(self) -> str:
        return str(self)


def shown(text) -> _Shown:
    """``text`` as the ``got`` of a :class:`ConfigError`, unquoted (e.g. "nan at index 3")."""
    return _Shown(text)


def _describe(x: np.ndarray) -> _Shown:
    if x.ndim == 0:
        return shown(repr(x.item()))
    return shown(f"an array of shape {x.shape} and dtype {x.dtype}")


def _array(x, name, allowed) -> np.ndarray:
    """``x`` as an array, or a one-line refusal (a ragged list or an object numpy cannot read)."""
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        raise ConfigError(name, shown(type(x).__name__), allowed) from None


def _refuse_first(name, x, bad, allowed):
    """Refuse, showing the first entry of ``x`` where ``bad`` holds (the error path only)."""
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = index[0] if len(index) == 1 else index
    raise ConfigError(name, shown(f"{x[index].item()!r} at index {where}"), allowed)


def check_finite(x: np.ndarray, name: str, allowed: str) -> np.ndarray:
    """``x`` unchanged when every entry is finite (one pass over float arrays; integers always are)."""
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        _refuse_first(name, x, ~np.isfinite(x), allowed)
    return x


def _vector(x, name, allowed) -> np.ndarray:
    """One real number per user: a 1-D array of integers or floats (no bools, objects, strings)."""
    x = _array(x, name, allowed)
    if x.ndim != 1 or (len(x) and x.dtype.kind not in "iuf"):
        raise ConfigError(name, _describe(x), allowed)
    return x


def _require_K(K):
    """K from the caller: a report whose length depended on the data would leak it."""
    if not is_int(K) or K < 2:
        raise ConfigError("K", K, "the number of classes (an integer >= 2), given, never inferred")
    return int(K)


def _indices(x: np.ndarray, name, high, allowed) -> np.ndarray:
    """``x`` unchanged when it is an integer array with values in 0..high−1 (or empty)."""
    if not len(x):
        return x
    if x.dtype.kind not in "iu":
        raise ConfigError(name, _describe(x), allowed)
    if x.min() < 0 or x.max() >= high:
        _refuse_first(name, x, (x < 0) | (x >= high), allowed)
    return x


def check_classes(y, K, name="y") -> np.ndarray:
    """Class labels: a 1-D integer array with values in 0..K−1, returned as given.

    A float label is refused even when it is whole: RR would echo 0.5 as a report,
    RAPPOR would give it no bit of its own, and an index must be an integer.
    """
    K = _require_K(K)
    allowed = f"integers in 0..{K - 1}, one per user"
    return _indices(_vector(y, name, allowed), name, K, allowed)


def check_reals(y, name="y") -> np.ndarray:
    """Real labels: a 1-D array of finite numbers, returned as given (NaN passes every clip)."""
    allowed = "finite real numbers, one per user"
    return check_finite(_vector(y, name, allowed), name, allowed)


def check_n_cells(n_cells, low=1) -> int:
    """The number of cubes: an integer ≥ ``low``."""
    check(is_int(n_cells) and n_cells >= low, "n_cells", n_cells, f"the number of cubes, an integer >= {low}")
    return int(n_cells)


def check_cells(cells, n_cells, n, name="cells") -> np.ndarray:
    """Cube indices: a 1-D integer array of ``n`` values in 0..n_cells−1, returned as given.

    An index ≥ n_cells would add an entry to a per-cube output (its presence names
    the record), and a negative one would count the record in the last cube.
    """
    allowed = f"integers in 0..{n_cells - 1}, one per user"
    if cells is None:
        raise ConfigError(name, None, f"the cube of each user ({allowed})")
    cells = _vector(cells, name, allowed)
    check(len(cells) == n, name, shown(f"{len(cells)} cube indices"), f"one per label ({n})")
    return _indices(cells, name, n_cells, allowed)


def check_epsilon(epsilon, limit=math.inf, why="") -> float:
    """ε as a float: a finite number > 0, and at most ``limit`` where float64 sets one (``why``)."""
    if math.isinf(limit):
        check(is_number(epsilon) and epsilon > 0, "epsilon", epsilon, "a finite number > 0")
    else:
        check(is_number(epsilon) and 0 < epsilon <= limit, "epsilon", epsilon,
              f"a number in (0, {limit:.6g}]: {why}")
    return float(epsilon)


def noise_scale(numerator, epsilon, formula) -> float:
    """The Laplace scale ``numerator / epsilon``, refused unless finite and > 0 in float64.

    A tiny ε overflows it to inf (every report ±inf or NaN); a huge one, or a tiny
    numerator, underflows it to 0 (no noise at all).
    """
    return check_noise_scale(numerator / epsilon, epsilon, formula)


def check_noise_scale(scale, epsilon, formula="") -> float:
    """``scale`` unchanged when finite and > 0 in float64; else a one-line error on ``epsilon``."""
    what = f"the noise scale {formula}" if formula else "the noise scale"
    check(math.isfinite(scale) and scale > 0, "epsilon", epsilon,
          f"a number > 0 that keeps {what} finite and > 0 in float64 (it is {scale:g})")
    return scale


def _counts(cells, y, n_cells, K):
    """n_lj = #{i: X_i ∈ B_l, Y_i = j}, shape (n_cells, K)."""
    pair = np.multiply(cells, K, dtype=np.int64)  # the (cube, label) pair, in place: N can be 10^7
    pair += check_classes(y, K)
    return np.bincount(pair, minlength=n_cells * K).reshape(n_cells, K)


def _check_counts(counts, values):
    """Per-cube counts of each label value: whole numbers ≥ 0, shape (n_cells, len(values))."""
    allowed = "per-cube counts of each label value: whole numbers >= 0, shape (n_cells, values)"
    counts = _array(counts, "counts", allowed)
    if counts.ndim != 2 or (counts.size and counts.dtype.kind not in "iuf"):
        raise ConfigError("counts", _describe(counts), allowed)
    if counts.size and counts.dtype.kind == "f":
        whole = np.isfinite(counts)
        whole[whole] = counts[whole] == np.floor(counts[whole])
        if not whole.all():
            _refuse_first("counts", counts, ~whole, allowed)
    if counts.size and counts.min() < 0:
        _refuse_first("counts", counts, counts < 0, allowed)
    values_allowed = f"finite label values, one per column of counts ({counts.shape[1]})"
    values = np.asarray(_array(values, "values", values_allowed), dtype=float)
    check(values.shape == (counts.shape[1],), "values", _describe(values), values_allowed)
    return counts, check_finite(values, "values", values_allowed)


class CubeData:
    """The data a cube estimator sees, on either path: the samples or their per-cube counts.

    ``from_samples(cells, y, n_cells)`` keeps each sample's cube and label;
    ``from_counts(counts, values)`` keeps the number of samples of each label
    value per cube (shape (n_cells, len(values))), as the sufficient-statistic
    path draws them.  Both answer the same questions, so a mechanism's release
    runs the same code on both paths.

    The arrays are checked when the object is built — the boundary of every
    central mechanism and sampler: cube indices in 0..n_cells−1, finite labels
    (classes are checked against K when counted), whole counts ≥ 0, finite
    label values.  A refusal is one :class:`ConfigError` line naming the array.
    """

    def __init__(self, n_cells, cells=None, y=None, counts=None, values=None):
        if counts is not None:
            counts, values = _check_counts(counts, values)
            n_cells = counts.shape[0]
        self.n_cells = check_n_cells(n_cells, low=0)
        if counts is None:
            y = check_reals(y)
            cells = check_cells(cells, self.n_cells, len(y))
        self.cells, self.y, self.counts, self.values = cells, y, counts, values

    @classmethod
    def from_samples(cls, cells, y, n_cells):
        return cls(n_cells, cells=cells, y=y)

    @classmethod
    def from_counts(cls, counts, values):
        return cls(None, counts=counts, values=values)

    def n(self) -> np.ndarray:
        """Samples per cube, n_l."""
        if self.counts is not None:
            return self.counts.sum(axis=1).astype(float)
        return np.bincount(self.cells, minlength=self.n_cells).astype(float)

    def label_counts(self, K) -> np.ndarray:
        """n_lj for classes 0..K−1, shape (n_cells, K)."""
        K = _require_K(K)
        if self.counts is not None:
            check(self.counts.shape[1] == K, "K", K, f"the {self.counts.shape[1]} label values counted")
            return self.counts
        return _counts(self.cells, self.y, self.n_cells, K)

    def clipped_sums(self, T) -> np.ndarray:
        """Σ_{X_i ∈ B_l} Clip(Y_i, T) per cube; T = None sums the labels as they are."""
        if self.counts is not None:
            values = self.values if T is None else np.clip(self.values, -T, T)
            return self.counts @ values
        y = self.y if T is None else np.clip(self.y, -T, T)
        return np.bincount(self.cells, weights=y, minlength=self.n_cells)


class Mechanism(ABC):
    """What every mechanism states: its ε, what it protects, the tasks it fits.

    Attributes
    ----------
    name : str
    privacy : Privacy
    tasks : tuple of str
    epsilon : float (None only for :class:`NoPrivacy`)
    max_epsilon : float
        The largest ε whose probabilities float64 represents (inf where none is
        set); the constructor refuses a larger one, saying ``epsilon_limit``.
    """

    name: str = ""
    privacy: Privacy
    tasks: tuple = ("classification",)
    T = None  # clipping level of mechanisms that clip
    max_epsilon: float = math.inf
    epsilon_limit: str = ""

    def __init__(self, epsilon):
        self.epsilon = check_epsilon(epsilon, self.max_epsilon, self.epsilon_limit)

    def __repr__(self):
        return f"{type(self).__name__}(epsilon={self.epsilon})"


class LocalMechanism(Mechanism):
    """A mechanism applied by each user to its own record before anything is collected.

    :meth:`report` is the boundary: it checks the data (:meth:`check_inputs`) and
    hands them to :meth:`_report`, which every mechanism implements and which is
    the only place it clips or adds noise.  No path reaches ``_report`` with
    unchecked data.
    """

    needs_cells = False  # the report depends on each user's cube (the features are protected)

    def report(self, y, rng, *, K=None, cells=None, n_cells=None, **given):
        """The reports of the users whose labels are ``y`` (and cubes ``cells``), one row per user.

        Raises
        ------
        ConfigError
            One line naming the argument, for any input :meth:`check_inputs` refuses.
        """
        y, K, cells, n_cells = self.check_inputs(y, K=K, cells=cells, n_cells=n_cells)
        return self._report(y, rng, K=K, cells=cells, n_cells=n_cells, **given)

    def check_inputs(self, y, *, K=None, cells=None, n_cells=None):
        """``(y, K, cells, n_cells)`` checked, the arrays as given; else a one-line :class:`ConfigError`.

        Labels are classes — integers in 0..K−1, K given — for a mechanism of
        classification, and finite reals for one of regression; a mechanism of
        both (:class:`NoPrivacy`) reads the task from K.  Cube indices, whenever
        they are given (or needed: ``needs_cells``), are integers in
        0..n_cells−1, one per label.
        """
        classes = "regression" not in self.tasks or (K is not None and "classification" in self.tasks)
        if classes:
            K = _require_K(K)
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

    The statistic is a per-cube score matrix (n_cells, K) for classification,
    and the pair (n, S) of per-cube counts and sums for regression.
    """

    chunk = None  # users per block in collect: None = all at once

    @abstractmethod
    def aggregate(self, reports, cells, n_cells, K):
        """The per-cube statistic of a block of reports (post-processing)."""

    @abstractmethod
    def sample_aggregate(self, data: CubeData, N, rng, K=None):
        """The per-cube statistic drawn exactly in law from ``data``'s per-cube label counts."""

    def collect(self, y, rng, *, K=None, cells=None, n_cells=None):
        """``aggregate`` of every user's ``report``, in blocks of ``chunk`` users."""
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
    """A local mechanism whose report is one number per user (a kNN averages them)."""


class CentralMechanism(Mechanism):
    """A mechanism run by a curator on the whole data set (a :class:`CubeData`, checked when built)."""

    @abstractmethod
    def release(self, data: CubeData, rng, N, h, d, K=None):
        """The released per-cube output (classes or estimates), clipping and noise included."""


# --------------------------------------------------------------------------- no privacy


class NoPrivacy(CubeSumMechanism, NoisyLabel):
    """No privacy: every estimator sees the labels (majority vote or mean per cube, kNN mean)."""

    name = "none"
    privacy = NONE
    tasks = ("classification", "regression")

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
        return _counts(cells, reports, n_cells, _require_K(K))

    def sample_aggregate(self, data, N, rng, K=None):
        if K is None:
            return data.n(), data.clipped_sums(None)
        return data.label_counts(K)
