r"""Privacy mechanisms as protocols with no privacy default (SPEC §8).

Every mechanism states its ε, what it protects (:class:`~labeldp_sim.theory.Privacy`)
and the tasks it fits, and belongs to exactly one protocol.  Each protocol's
privacy-relevant methods are abstract, so a half-written mechanism cannot be
instantiated, and clipping and noise happen in one method per mechanism:

:class:`LocalMechanism` — ``report(y, rng, *, K, cells, n_cells)``
    maps each user's record to its report; the only place a local mechanism
    clips or adds noise.  Everything after it is post-processing.

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
    per-cube output, clipping and noise included.

:class:`NoPrivacy` is explicit: its report is a copy of the label.  K is always
an argument for classification mechanisms, never inferred from the labels.

To add a mechanism: subclass one protocol, implement its abstract methods,
state ``privacy``/``tasks`` and why it is ε-DP in the docstring; add
``conf/mechanism/<name>.yaml``; add it to the tests (``tests/test_paths.py`` fails
for a YAML without a path test) and to the audit (``labeldp_sim/audit.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .errors import ConfigError, check, is_int
from .theory import FULL_CENTRAL, FULL_LOCAL, LABEL_CENTRAL, LABEL_LOCAL, NONE, Privacy

__all__ = ["Mechanism", "LocalMechanism", "CubeSumMechanism", "NoisyLabel", "CentralMechanism",
           "CubeData", "NoPrivacy", "RAPPOR", "JointRAPPOR", "ExponentialMechanism",
           "argmax_random_ties", "LaplaceLabel", "LaplaceCubeMean", "JointLaplace", "laplace_sum",
           "RandomizedResponse", "RRWithPrior", "ALIBI"]


def argmax_random_ties(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax of integer scores, ties broken uniformly at random (13)."""
    return np.argmax(scores + 0.5 * rng.random(scores.shape), axis=1)


def _check_labels(y, K):
    """Classes must lie in 0..K−1: an index outside would be counted in another cube or bit."""
    if len(y) and (np.min(y) < 0 or np.max(y) >= K):
        raise ValueError(f"labels must lie in 0..{K - 1}; got {np.min(y)}..{np.max(y)}")
    return y


def _counts(cells, y, n_cells, K):
    """n_lj = #{i: X_i ∈ B_l, Y_i = j}, shape (n_cells, K)."""
    return np.bincount(cells * K + _check_labels(y, K), minlength=n_cells * K).reshape(n_cells, K)


def laplace_sum(n, scale, rng):
    """Σ of n i.i.d. Lap(scale), exactly in law: scale·(Gamma(n, 1) − Gamma(n, 1))."""
    n = np.asarray(n, dtype=float)
    return scale * (rng.gamma(n) - rng.gamma(n))


def _require_K(K):
    """K from the caller: a report whose length depended on the data would leak it."""
    if not is_int(K) or K < 2:
        raise ConfigError("K", K, "the number of classes (an integer >= 2), given, never inferred")
    return int(K)


class CubeData:
    """The data a cube estimator sees, on either path: the samples or their per-cube counts.

    ``from_samples(cells, y, n_cells)`` keeps each sample's cube and label;
    ``from_counts(counts, values)`` keeps the number of samples of each label
    value per cube (shape (n_cells, len(values))), as the sufficient-statistic
    path draws them.  Both answer the same questions, so a mechanism's release
    runs the same code on both paths.
    """

    def __init__(self, n_cells, cells=None, y=None, counts=None, values=None):
        self.n_cells = int(n_cells)
        self.cells, self.y, self.counts, self.values = cells, y, counts, values

    @classmethod
    def from_samples(cls, cells, y, n_cells):
        return cls(n_cells, cells=np.asarray(cells), y=np.asarray(y))

    @classmethod
    def from_counts(cls, counts, values):
        counts = np.asarray(counts)
        return cls(counts.shape[0], counts=counts, values=np.asarray(values, dtype=float))

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
    """

    name: str = ""
    privacy: Privacy
    tasks: tuple = ("classification",)
    T = None  # clipping level of mechanisms that clip

    def __init__(self, epsilon):
        check(epsilon is not None and np.isfinite(epsilon) and epsilon > 0, "epsilon", epsilon, "> 0")
        self.epsilon = float(epsilon)

    def __repr__(self):
        return f"{type(self).__name__}(epsilon={self.epsilon})"


class LocalMechanism(Mechanism):
    """A mechanism applied by each user to its own record before anything is collected."""

    @abstractmethod
    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        """The reports of the users whose labels are ``y`` (and cubes ``cells``), one row per user."""


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
    """A mechanism run by a curator on the whole data set."""

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

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        return np.array(y, copy=True)

    def aggregate(self, reports, cells, n_cells, K):
        if K is None:  # regression: counts and sums of the labels
            return (np.bincount(cells, minlength=n_cells).astype(float),
                    np.bincount(cells, weights=reports, minlength=n_cells))
        return _counts(cells, reports, n_cells, _require_K(K))

    def sample_aggregate(self, data, N, rng, K=None):
        if K is None:
            return data.n(), data.clipped_sums(None)
        return data.label_counts(K)


# --------------------------------------------------------------------------- classification


class RAPPOR(CubeSumMechanism):
    r"""RAPPOR label vector, eq. (11): ε-label LDP.

    Each sample reports Z ∈ {0,1}^K with independent bits
    P(Z(j) = 1) = p = e^(ε/2)/(e^(ε/2)+1) if j = y, else q = 1/(e^(ε/2)+1).

    Privacy (15): changing y to y' changes the law of the two bits y and y'
    only, each by a factor at most e^(ε/2), so every output's probability
    changes by at most e^ε.  Features are untouched (label privacy only).
    K is an argument: a vector whose length followed the labels would leak them.

    Sufficient statistic: given n_lj, S_lj = Bin(n_lj, p) + Bin(n_l − n_lj, q)
    independently over (l, j), the exact law of (12).
    """

    name = "rappor"
    privacy = LABEL_LOCAL

    def __init__(self, epsilon):
        super().__init__(epsilon)
        e = np.exp(self.epsilon / 2)
        self.p, self.q = e / (e + 1), 1 / (e + 1)

    def bit_probabilities(self, y, K):
        """P(Z(j) = 1 | Y = y) for each row y, shape (len(y), K), (11)."""
        probs = np.full((len(y), _require_K(K)), self.q)
        probs[np.arange(len(y)), _check_labels(y, K)] = self.p
        return probs

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        probs = self.bit_probabilities(y, K)
        return rng.random(probs.shape) < probs

    def aggregate(self, reports, cells, n_cells, K):
        return np.stack([np.bincount(cells, weights=reports[:, j], minlength=n_cells)
                         for j in range(K)], axis=1).astype(np.int64)

    def sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        n_cell = counts.sum(axis=1, keepdims=True)
        return rng.binomial(counts, self.p) + rng.binomial(n_cell - counts, self.q)


class JointRAPPOR(CubeSumMechanism):
    r"""RAPPOR on the joint one-hot of (cube, label): ε-LDP for features and label.

    The report is a bit vector over all C·K (cube, class) pairs, with
    P(bit = 1) = p = e^(ε/2)/(e^(ε/2)+1) at the sample's own pair and
    q = 1/(e^(ε/2)+1) elsewhere.

    Privacy: two inputs (x, y), (x', y') map to one-hot vectors that differ in
    at most two positions; as in (15) each changes the output's probability by
    a factor at most e^(ε/2), so the ratio is at most e^ε for any change of
    features and label.

    The estimator sums reports per pair, S_lj = Σ_i Z_i(l, j): every user
    adds noise to every cube, so the noise per cube is ~ √N/ε.  Debiasing
    (S − Nq)/(p − q) is affine with the same offset in every pair, so the
    cube argmax is unchanged by it.

    Sufficient statistic: S_lj = Bin(n_lj, p) + Bin(N − n_lj, q).
    """

    name = "joint_rappor"
    privacy = FULL_LOCAL

    def __init__(self, epsilon, chunk=4096):
        super().__init__(epsilon)
        e = np.exp(self.epsilon / 2)
        self.p, self.q = e / (e + 1), 1 / (e + 1)
        check(is_int(chunk) and chunk >= 1, "chunk", chunk, "integer >= 1 (reports per block)")
        self.chunk = int(chunk)  # N × C·K bits are never held at once

    def bit_probabilities(self, y, K, cells, n_cells):
        """P(bit (l, j) = 1) for each user, shape (len(y), n_cells·K)."""
        K = _require_K(K)
        probs = np.full((len(y), n_cells * K), self.q)
        probs[np.arange(len(y)), np.asarray(cells) * K + _check_labels(y, K)] = self.p
        return probs

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        probs = self.bit_probabilities(y, K, cells, n_cells)
        return rng.random(probs.shape) < probs

    def aggregate(self, reports, cells, n_cells, K):
        return reports.sum(axis=0).reshape(n_cells, K)

    def sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        return rng.binomial(counts, self.p) + rng.binomial(N - counts, self.q)


class ExponentialMechanism(CentralMechanism):
    r"""Exponential mechanism per cube, (17) and (31): ε-label CDP or ε-DP.

    P(c_l = j) ∝ exp(ε' n_lj) with ε' = ε/2 for label privacy (17) and
    ε' = ε/4 for features and label (31).

    Privacy.  Label CDP: changing one label changes the counts n_l· of one
    cube only, each by at most 1 (sensitivity 1), and the exponential
    mechanism with weights exp(ε u/2) is ε-DP for a score of sensitivity 1
    [68].  Full DP: replacing one sample (x, y) can change two cubes' counts;
    each cube's release is (ε/2)-DP by the same argument with ε/4, and the
    two compose to ε (Theorem 13).  The other cubes' releases do not change.

    Sampling uses the Gumbel-max trick: argmax_j(ε' n_lj + Gumbel) has exactly
    the law (17).
    """

    name = "exponential"

    def __init__(self, epsilon, protection="label"):
        super().__init__(epsilon)
        check(protection in ("label", "features+label"), "protection", protection,
              ["label", "features+label"])
        self.protection = protection
        self.privacy = LABEL_CENTRAL if protection == "label" else FULL_CENTRAL
        self.weight = self.epsilon / (2.0 if protection == "label" else 4.0)

    def selection_probabilities(self, scores):
        """The law (17)/(31) of the released class per cube, shape like scores."""
        z = self.weight * (scores - scores.max(axis=1, keepdims=True))
        w = np.exp(z)
        return w / w.sum(axis=1, keepdims=True)

    def release(self, data, rng, N, h, d, K=None):
        scores = data.label_counts(K)
        return np.argmax(self.weight * scores + rng.gumbel(size=scores.shape), axis=1)

    def __repr__(self):
        return f"ExponentialMechanism(epsilon={self.epsilon}, protection={self.protection!r})"


# --------------------------------------------------------------------------- regression


def _check_T(T):
    check(T is not None and np.isfinite(T) and T > 0, "T", T,
          "a clipping level > 0, or 'theory' (the theorem's law)")
    return float(T)


class LaplaceLabel(CubeSumMechanism, NoisyLabel):
    r"""Z = Clip(Y, T) + Lap(2T/ε): ε-label LDP (Theorem 6; Theorem 10 with clipping).

    Privacy: Clip(Y, T) ∈ [−T, T], so two labels move the Laplace location by at
    most 2T; the density ratio of Lap(2T/ε) at two locations 2T apart is at most
    e^ε.  Features are released as they are (label privacy).  For |Y| < T
    (Assumption 2) the clip is the identity.

    Sufficient statistic: the per-cube sum is Σ Clip(Y) + Σ Lap, and a sum of n
    i.i.d. Lap(b) is b·(Gamma(n) − Gamma(n)).
    """

    name = "laplace"
    privacy = LABEL_LOCAL
    tasks = ("regression",)

    def __init__(self, epsilon, T):
        super().__init__(epsilon)
        self.T = _check_T(T)
        self.scale = 2 * self.T / self.epsilon

    def location(self, y):
        """The Laplace location of each report: Clip(y, T)."""
        return np.clip(y, -self.T, self.T)

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        return self.location(y) + rng.laplace(0.0, self.scale, size=len(y))

    def aggregate(self, reports, cells, n_cells, K):
        return (np.bincount(cells, minlength=n_cells).astype(float),
                np.bincount(cells, weights=reports, minlength=n_cells))

    def sample_aggregate(self, data, N, rng, K=None):
        n = data.n()
        return n, data.clipped_sums(self.T) + laplace_sum(n, self.scale, rng)

    def __repr__(self):
        return f"LaplaceLabel(epsilon={self.epsilon}, T={self.T:.4g})"


class LaplaceCubeMean(CentralMechanism):
    r"""Central Laplace cube means: (23), (28) for labels; (33), (34) for features and labels.

    ``protection="label"``:  η̂_l = (1/n_l) Σ_{X_i ∈ B_l} Clip(Y_i, T) + Lap(2T/(n_l ε)),
    η̂_l = 0 on empty cubes.  Privacy: with the features fixed, changing one
    label moves one cube's clipped mean by at most 2T/n_l, the Laplace scale
    over ε, so the release is ε-label CDP (Theorems 8, 12).

    ``protection="features+label"``:  η̂_l = Σ Clip(Y_i, T)/(n_l ∨ n_0) + Lap(6T/(n_0 ε)),
    n_0 = n0_fraction · N h^d (35), default c θ/2 with c = 1 and θ = 2^(−d)
    for the uniform density on [0,1]^d.  Privacy (Theorem 14): replacing one
    sample changes at most two cubes; in each, S/(n ∨ n_0) moves by at most
    T/n_0 + |S|·|1/(n∨n_0) − 1/((n±1)∨n_0)| ≤ 2T/n_0, so the ℓ1 sensitivity
    of the vector of cube estimates is at most 4T/n_0 ≤ 6T/n_0 and Lap(6T/(n_0 ε))
    per cube gives ε-DP.

    Clipping and noise both happen in :meth:`release`, on either path.
    """

    name = "laplace_cube"
    tasks = ("regression",)

    def __init__(self, epsilon, T, protection="label", n0_fraction=None):
        super().__init__(epsilon)
        self.T = _check_T(T)
        check(protection in ("label", "features+label"), "protection", protection,
              ["label", "features+label"])
        if n0_fraction is not None:
            check(np.isfinite(n0_fraction) and 0 < n0_fraction <= 1, "n0_fraction", n0_fraction,
                  "null (c θ / 2 = 2^-(d+1)) or a number in (0, 1]")
        self.protection, self.n0_fraction = protection, n0_fraction
        self.privacy = LABEL_CENTRAL if protection == "label" else FULL_CENTRAL

    def n0(self, N, h, d):
        """(35): n_0 = N c θ h^d / 2."""
        fraction = self.n0_fraction if self.n0_fraction is not None else 0.5 * 2.0 ** (-d)
        return fraction * N * h ** d

    def location_and_scale(self, data, N, h, d):
        """The law of the release: per-cube Laplace location and scale (NaN scale: released 0)."""
        n, S = data.n(), data.clipped_sums(self.T)
        if self.protection == "label":
            occupied = n > 0
            location = np.divide(S, n, out=np.zeros_like(S, dtype=float), where=occupied)
            scale = np.full(len(S), np.nan)
            scale[occupied] = 2 * self.T / (n[occupied] * self.epsilon)
            return location, scale
        n0 = self.n0(N, h, d)
        return S / np.maximum(n, n0), np.full(len(S), 6 * self.T / (n0 * self.epsilon))

    def release(self, data, rng, N, h, d, K=None):
        location, scale = self.location_and_scale(data, N, h, d)
        if self.protection == "label":
            occupied = ~np.isnan(scale)
            estimate = location.copy()
            estimate[occupied] += rng.laplace(0.0, scale[occupied])
            return estimate
        return location + rng.laplace(0.0, scale[0], size=len(location))

    def __repr__(self):
        return f"LaplaceCubeMean(epsilon={self.epsilon}, T={self.T:.4g}, protection={self.protection!r})"


class JointLaplace(CubeSumMechanism):
    r"""Laplace on the joint vector (cube one-hot, cube one-hot · Clip(Y, T)): ε-LDP for both.

    Each user reports the 2C-vector (e_l, e_l·Clip(y, T)) for its cube l, with
    independent Lap(4/ε) noise on the C count coordinates and Lap(4T/ε) on the
    C sum coordinates.  Privacy: replacing (x, y) by (x', y') changes the count
    part by at most 2 in ℓ1 and the sum part by at most 2T, so the privacy loss
    is at most 2/(4/ε) + 2T/(4T/ε) = ε.

    The estimator sums reports, n̂_l = n_l + Σ_{N} Lap(4/ε), Ŝ_l = S_l + Σ_N Lap(4T/ε)
    (every user adds noise to every cube: ~ √N/ε per cube), and releases the
    ratio η̂_l = Ŝ_l / max(n̂_l, floor_fraction · N h^d).
    """

    name = "joint_laplace"
    privacy = FULL_LOCAL
    tasks = ("regression",)

    def __init__(self, epsilon, T, floor_fraction=0.5, chunk=2048):
        super().__init__(epsilon)
        self.T = _check_T(T)
        check(np.isfinite(floor_fraction) and 0 < floor_fraction <= 1, "floor_fraction",
              floor_fraction, "(0, 1]")
        check(is_int(chunk) and chunk >= 1, "chunk", chunk, "integer >= 1 (reports per block)")
        self.floor_fraction, self.chunk = float(floor_fraction), int(chunk)
        self.count_scale, self.sum_scale = 4 / self.epsilon, 4 * self.T / self.epsilon

    def location(self, y, cells, n_cells):
        """The Laplace locations of each report: (e_l, e_l·Clip(y, T)), shape (len(y), 2, C)."""
        loc = np.zeros((len(y), 2, n_cells))
        rows = np.arange(len(y))
        loc[rows, 0, cells] = 1.0
        loc[rows, 1, cells] = np.clip(y, -self.T, self.T)
        return loc

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        m = len(y)
        counts = rng.laplace(0.0, self.count_scale, size=(m, n_cells))
        sums = rng.laplace(0.0, self.sum_scale, size=(m, n_cells))
        return self.location(y, cells, n_cells) + np.stack([counts, sums], axis=1)

    def aggregate(self, reports, cells, n_cells, K):
        return reports[:, 0].sum(axis=0), reports[:, 1].sum(axis=0)

    def sample_aggregate(self, data, N, rng, K=None):
        n, S = data.n(), data.clipped_sums(self.T)
        return (n + laplace_sum(np.full(len(n), N), self.count_scale, rng),
                S + laplace_sum(np.full(len(n), N), self.sum_scale, rng))

    def estimate(self, n, S, N, h, d):
        return S / np.maximum(n, self.floor_fraction * N * h ** d)

    def __repr__(self):
        return f"JointLaplace(epsilon={self.epsilon}, T={self.T:.4g})"


# --------------------------------------------------------------------------- K-class label LDP
# (papers/002: the baselines of the vector-approximation paper; RAPPOR above is its method)


class RandomizedResponse(CubeSumMechanism):
    r"""K-ary randomized response: keep y with probability e^ε/(e^ε+K−1), else a uniform other class.

    Privacy: every output's probability is e^ε/(e^ε+K−1) or 1/(e^ε+K−1), a ratio of at
    most e^ε between any two labels (ε-label LDP).

    As a cube mechanism the statistic is the per-cube count of each reported
    class; given n_lj it is Σ_j Multinomial(n_lj, M[j, ·]), drawn exactly.
    """

    name = "rr"
    privacy = LABEL_LOCAL

    def keep_probability(self, K):
        e = np.exp(self.epsilon)
        return e / (e + _require_K(K) - 1)

    def transition_matrix(self, K):
        """M[i, j] = P(Z = j | Y = i)."""
        K = _require_K(K)
        e = np.exp(self.epsilon)
        M = np.full((K, K), 1.0 / (e + K - 1))
        np.fill_diagonal(M, e / (e + K - 1))
        return M

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        _check_labels(y, _require_K(K))
        keep = rng.random(len(y)) < self.keep_probability(K)
        other = (y + rng.integers(1, K, size=len(y))) % K  # uniform over the K-1 other classes
        return np.where(keep, y, other)

    def aggregate(self, reports, cells, n_cells, K):
        return _counts(cells, reports, n_cells, K)

    def sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        M = self.transition_matrix(K)
        return sum(rng.multinomial(counts[:, j], M[j]) for j in range(K))


class RRWithPrior(LocalMechanism):
    r"""RRWithPrior (Ghazi et al., 2021): randomized response restricted to a top-k set.

    Given a prior p over the K classes for this sample, take the k classes with
    the largest prior, k* = argmax_k e^ε/(e^ε+k−1) · P(top k); output y with
    probability e^ε/(e^ε+k*−1) if y is in the set and each other member with
    1/(e^ε+k*−1); if y is not in the set, output a uniform member.

    Privacy: for a fixed prior (computed without this sample's label), every
    output in the set has probability in [1/(e^ε+k*−1), e^ε/(e^ε+k*−1)] whatever y
    is, and outputs outside it have probability 0 for every y: ε-label LDP.
    The prior is an argument of :meth:`report`; it must not depend on the label.
    """

    name = "rr_with_prior"
    privacy = LABEL_LOCAL

    def top_k_sets(self, prior):
        """(order, k*) per row: classes by decreasing prior and the chosen set size."""
        order = np.argsort(-prior, axis=1, kind="stable")
        mass = np.cumsum(np.take_along_axis(prior, order, axis=1), axis=1)
        e = np.exp(self.epsilon)
        sizes = np.arange(1, prior.shape[1] + 1)
        k_star = np.argmax(e / (e + sizes - 1) * mass, axis=1) + 1
        return order, k_star

    def transition_matrix(self, prior_row):
        """M[i, j] = P(Z = j | Y = i) for one prior."""
        K = len(prior_row)
        order, k_star = self.top_k_sets(prior_row[None, :])
        members, k = order[0, :k_star[0]], int(k_star[0])
        e = np.exp(self.epsilon)
        M = np.zeros((K, K))
        M[:, members] = 1.0 / k  # y outside the set: uniform on the set
        for i in members:
            M[i, members] = 1.0 / (e + k - 1)
            M[i, i] = e / (e + k - 1)
        return M

    def report(self, y, rng, *, K=None, cells=None, n_cells=None, prior=None):
        if prior is None:
            raise ConfigError("prior", None, "a prior per user, computed without its label")
        prior = np.asarray(prior)
        check(prior.shape[1] == _require_K(K), "K", K, f"the prior's {prior.shape[1]} classes")
        order, k_star = self.top_k_sets(prior)
        n = len(y)
        rank = np.argsort(order, axis=1)[np.arange(n), y]  # position of y in the order
        inside = rank < k_star
        e = np.exp(self.epsilon)
        keep = inside & (rng.random(n) < e / (e + k_star - 1))
        # an other member of the set (uniform over the k*-1 others), or any member if y is outside
        pick_other = (rank + rng.integers(1, np.maximum(k_star, 2), size=n)) % np.maximum(k_star, 1)
        pick_any = rng.integers(0, k_star)
        position = np.where(inside, pick_other, pick_any)
        return np.where(keep, y, order[np.arange(n), position])


class ALIBI(CubeSumMechanism):
    r"""ALIBI (Malek Esmaeili et al., 2021): one-hot + Lap(2/ε), Bayesian soft labels (29).

    o = OneHot(y) + W, W_k ~ Lap(λ) i.i.d., λ = 2/ε.  Privacy: two one-hot vectors
    differ by 2 in ℓ1, and Lap(2/ε) per coordinate gives ε-label LDP.
    Soft label with a uniform prior (29): p(c | o) = softmax_c(f(o, c)/λ),
    f(o, c) = −Σ_k |o_k − [c = k]|, computed as softmax_c((|o_c| − |o_c − 1|)/λ)
    since the other terms do not depend on c.

    As a cube mechanism the statistic is the per-cube sum of the noisy one-hot
    vectors: n_lj + a sum of n_l Laplace draws per class, drawn exactly.
    """

    name = "alibi"
    privacy = LABEL_LOCAL

    def __init__(self, epsilon):
        super().__init__(epsilon)
        self.scale = 2.0 / self.epsilon

    def location(self, y, K):
        """The Laplace location of each report: OneHot(y), shape (len(y), K)."""
        loc = np.zeros((len(y), _require_K(K)))
        loc[np.arange(len(y)), _check_labels(y, K)] = 1.0
        return loc

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        noisy = rng.laplace(0.0, self.scale, size=(len(y), _require_K(K)))
        return noisy + self.location(y, K)

    def aggregate(self, reports, cells, n_cells, K):
        return np.stack([np.bincount(cells, weights=reports[:, j], minlength=n_cells)
                         for j in range(K)], axis=1)

    def sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        n = counts.sum(axis=1, keepdims=True)
        return counts + laplace_sum(np.broadcast_to(n, counts.shape), self.scale, rng)

    def soft_labels(self, noisy):
        logits = (np.abs(noisy) - np.abs(noisy - 1.0)) / self.scale
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        return weights / weights.sum(axis=1, keepdims=True)
