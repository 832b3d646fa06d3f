r"""Privacy mechanisms.

A mechanism states its ε and what it protects (:class:`~labeldp_sim.theory.Privacy`)
and the tasks it fits.  For classification it provides, for the cube estimators:

``privatize(y, rng, cells, n_cells)``
    the per-sample reports (local mechanisms act on one sample at a time;
    non-private and central mechanisms pass the data through);
``cell_sums(reports, cells, n_cells, K)``
    the per-cube statistic S_lj the estimator aggregates, (12);
``sample_cell_sums(counts, N, rng)``
    the same statistic drawn exactly in distribution from the per-cube label
    counts n_lj alone (the sufficient-statistic path, SPEC §4);
``select(scores, rng)``
    the class released per cube: argmax with uniform tie-breaking (13), or the
    exponential mechanism for central models (17), (31).

For regression (labels clipped to [−T, T] where the mechanism has a clipping level):

``privatize(y, rng, cells, n_cells)``
    per-sample reports (Z = Y + Lap for label LDP; raw labels otherwise);
``cell_stats(reports, cells, n_cells)``
    per-cube (n_l, S_l): counts and sums of (clipped, privatized) labels;
``sample_cell_stats(counts, values, N, rng)``
    the same drawn exactly from the per-cube counts of each label value
    (a sum of n Laplace draws is a difference of two Gamma(n) variables);
``release(n, S, N, h, d, rng)``
    the per-cube estimate η̂_l: S/n, or the central mechanisms (23), (28), (33), (34).

To add a mechanism: subclass :class:`Mechanism`, add ``conf/mechanism/<name>.yaml``
with its ``_target_`` and a test in ``tests/test_mechanisms.py``.
"""

from __future__ import annotations

import numpy as np

from .errors import check, is_int
from .theory import FULL_CENTRAL, FULL_LOCAL, LABEL_CENTRAL, LABEL_LOCAL, NONE, Privacy

__all__ = ["Mechanism", "NoPrivacy", "RAPPOR", "JointRAPPOR", "ExponentialMechanism",
           "argmax_random_ties", "LaplaceLabel", "LaplaceCubeMean", "JointLaplace", "laplace_sum",
           "RandomizedResponse", "RRWithPrior", "ALIBI"]


def argmax_random_ties(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax of integer scores, ties broken uniformly at random."""
    return np.argmax(scores + 0.5 * rng.random(scores.shape), axis=1)


def _counts(cells, y, n_cells, K):
    """n_lj = #{i: X_i ∈ B_l, Y_i = j}, shape (n_cells, K)."""
    return np.bincount(cells * K + y, minlength=n_cells * K).reshape(n_cells, K)


def laplace_sum(n, scale, rng):
    """Σ of n i.i.d. Lap(scale), exactly in law: scale·(Gamma(n, 1) − Gamma(n, 1))."""
    n = np.asarray(n, dtype=float)
    return scale * (rng.gamma(n) - rng.gamma(n))


class Mechanism:
    """Base class: the non-private pass-through behaviour.

    Attributes
    ----------
    name : str
    privacy : Privacy
    tasks : tuple of str
        Tasks this mechanism fits.
    epsilon : float or None
    """

    name = "base"
    privacy: Privacy = NONE
    tasks: tuple = ("classification",)

    def __init__(self, epsilon=None):
        if epsilon is not None:
            check(np.isfinite(epsilon) and epsilon > 0, "epsilon", epsilon, "> 0")
            epsilon = float(epsilon)
        self.epsilon = epsilon

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        return y

    def cell_sums(self, reports, cells, n_cells, K):
        return _counts(cells, reports, n_cells, K)

    def sample_cell_sums(self, counts, N, rng):
        return counts

    def select(self, scores, rng):
        return argmax_random_ties(scores, rng)

    # --- regression: cube statistics and release ----------------------------------------
    T = None  # clipping level; None = no clipping

    def clip(self, y):
        return y if self.T is None else np.clip(y, -self.T, self.T)

    def cell_stats(self, reports, cells, n_cells):
        """(n_l, S_l): samples and sum of reports per cube."""
        n = np.bincount(cells, minlength=n_cells).astype(float)
        return n, np.bincount(cells, weights=reports, minlength=n_cells)

    def sample_cell_stats(self, counts, values, N, rng):
        """(n_l, S_l) from the per-cube counts of each label value, exactly in law."""
        return counts.sum(axis=1).astype(float), counts @ self.clip(values)

    def release(self, n, S, N, h, d, rng):
        """η̂_l = S_l/n_l, and 0 on empty cubes."""
        return np.divide(S, n, out=np.zeros_like(S, dtype=float), where=n > 0)

    def __repr__(self):
        return f"{type(self).__name__}(epsilon={self.epsilon})"


class NoPrivacy(Mechanism):
    """No privacy: the estimator sees the labels (majority vote per cube)."""

    name = "none"
    privacy = NONE
    tasks = ("classification", "regression")

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        return y


class RAPPOR(Mechanism):
    r"""RAPPOR label vector, eq. (11): ε-label LDP.

    Each sample reports Z ∈ {0,1}^K with independent bits
    P(Z(j) = 1) = p = e^(ε/2)/(e^(ε/2)+1) if j = y, else q = 1/(e^(ε/2)+1).

    Privacy (15): changing y to y' changes the law of the two bits y and y'
    only, each by a factor at most e^(ε/2), so every output's probability
    changes by at most e^ε.  Features are untouched (label privacy only).

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
        probs = np.full((len(y), K), self.q)
        probs[np.arange(len(y)), y] = self.p
        return probs

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        K = int(y.max()) + 1 if K is None else K
        return rng.random((len(y), K)) < self.bit_probabilities(y, K)

    def cell_sums(self, reports, cells, n_cells, K):
        return np.stack([np.bincount(cells, weights=reports[:, j], minlength=n_cells)
                         for j in range(K)], axis=1).astype(np.int64)

    def sample_cell_sums(self, counts, N, rng):
        n_cell = counts.sum(axis=1, keepdims=True)
        return rng.binomial(counts, self.p) + rng.binomial(n_cell - counts, self.q)


class JointRAPPOR(Mechanism):
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
        self.chunk = int(chunk)

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        """Per-sample reports, summed on the fly (N × C·K bits never held at once)."""
        K = int(y.max()) + 1 if K is None else K
        width = n_cells * K
        total = np.zeros(width, dtype=np.int64)
        for start in range(0, len(y), self.chunk):
            stop = min(start + self.chunk, len(y))
            probs = np.full((stop - start, width), self.q)
            probs[np.arange(stop - start), cells[start:stop] * K + y[start:stop]] = self.p
            total += (rng.random(probs.shape) < probs).sum(axis=0)
        return total

    def cell_sums(self, reports, cells, n_cells, K):
        return reports.reshape(n_cells, K)

    def sample_cell_sums(self, counts, N, rng):
        return rng.binomial(counts, self.p) + rng.binomial(N - counts, self.q)


class ExponentialMechanism(Mechanism):
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

    def select(self, scores, rng):
        return np.argmax(self.weight * scores + rng.gumbel(size=scores.shape), axis=1)

    def __repr__(self):
        return f"ExponentialMechanism(epsilon={self.epsilon}, protection={self.protection!r})"


# --------------------------------------------------------------------------- regression


def _check_T(T):
    check(T is not None and np.isfinite(T) and T > 0, "T", T,
          "a clipping level > 0, or 'theory' (the theorem's law)")
    return float(T)


class LaplaceLabel(Mechanism):
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

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        return self.clip(y) + rng.laplace(0.0, self.scale, size=len(y))

    def sample_cell_stats(self, counts, values, N, rng):
        n, S = super().sample_cell_stats(counts, values, N, rng)
        return n, S + laplace_sum(n, self.scale, rng)

    def __repr__(self):
        return f"LaplaceLabel(epsilon={self.epsilon}, T={self.T:.4g})"


class LaplaceCubeMean(Mechanism):
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

    The noise is added at release, so the sufficient statistics are (n_l, Σ Clip(Y)).
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

    def release(self, n, S, N, h, d, rng):
        if self.protection == "label":
            occupied = n > 0
            estimate = np.zeros_like(S, dtype=float)
            scale = 2 * self.T / (n[occupied] * self.epsilon)
            estimate[occupied] = S[occupied] / n[occupied] + rng.laplace(0.0, scale)
            return estimate
        n0 = self.n0(N, h, d)
        return S / np.maximum(n, n0) + rng.laplace(0.0, 6 * self.T / (n0 * self.epsilon), size=len(S))

    def __repr__(self):
        return f"LaplaceCubeMean(epsilon={self.epsilon}, T={self.T:.4g}, protection={self.protection!r})"


class JointLaplace(Mechanism):
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

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        """Per-sample noisy joint vectors, summed as they are drawn: shape (2, C)."""
        total = np.zeros((2, n_cells))
        clipped = self.clip(y)
        for start in range(0, len(y), self.chunk):
            stop = min(start + self.chunk, len(y))
            rows = np.arange(stop - start)
            counts = rng.laplace(0.0, self.count_scale, size=(stop - start, n_cells))
            sums = rng.laplace(0.0, self.sum_scale, size=(stop - start, n_cells))
            counts[rows, cells[start:stop]] += 1.0
            sums[rows, cells[start:stop]] += clipped[start:stop]
            total[0] += counts.sum(axis=0)
            total[1] += sums.sum(axis=0)
        return total

    def cell_stats(self, reports, cells, n_cells):
        return reports[0], reports[1]

    def sample_cell_stats(self, counts, values, N, rng):
        n, S = super().sample_cell_stats(counts, values, N, rng)
        return (n + laplace_sum(np.full(len(n), N), self.count_scale, rng),
                S + laplace_sum(np.full(len(n), N), self.sum_scale, rng))

    def release(self, n, S, N, h, d, rng):
        return S / np.maximum(n, self.floor_fraction * N * h ** d)

    def __repr__(self):
        return f"JointLaplace(epsilon={self.epsilon}, T={self.T:.4g})"


# --------------------------------------------------------------------------- K-class label LDP
# (papers/002: the baselines of the vector-approximation paper; RAPPOR above is its method)


class RandomizedResponse(Mechanism):
    r"""K-ary randomized response: keep y with probability e^ε/(e^ε+K−1), else a uniform other class.

    Privacy: every output's probability is e^ε/(e^ε+K−1) or 1/(e^ε+K−1), a ratio of at
    most e^ε between any two labels (ε-label LDP).
    """

    name = "rr"
    privacy = LABEL_LOCAL

    def transition_matrix(self, K):
        """M[i, j] = P(Z = j | Y = i)."""
        e = np.exp(self.epsilon)
        M = np.full((K, K), 1.0 / (e + K - 1))
        np.fill_diagonal(M, e / (e + K - 1))
        return M

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        e = np.exp(self.epsilon)
        keep = rng.random(len(y)) < e / (e + K - 1)
        other = (y + rng.integers(1, K, size=len(y))) % K  # uniform over the K-1 other classes
        return np.where(keep, y, other)


class RRWithPrior(Mechanism):
    r"""RRWithPrior (Ghazi et al., 2021): randomized response restricted to a top-k set.

    Given a prior p over the K classes for this sample, take the k classes with
    the largest prior, k* = argmax_k e^ε/(e^ε+k−1) · P(top k); output y with
    probability e^ε/(e^ε+k*−1) if y is in the set and each other member with
    1/(e^ε+k*−1); if y is not in the set, output a uniform member.

    Privacy: for a fixed prior (computed without this sample's label), every
    output in the set has probability in [1/(e^ε+k*−1), e^ε/(e^ε+k*−1)] whatever y
    is, and outputs outside it have probability 0 for every y: ε-label LDP.
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

    def privatize(self, y, rng, prior=None, K=None, cells=None, n_cells=None):
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


class ALIBI(Mechanism):
    r"""ALIBI (Malek Esmaeili et al., 2021): one-hot + Lap(2/ε), Bayesian soft labels (29).

    o = OneHot(y) + W, W_k ~ Lap(λ) i.i.d., λ = 2/ε.  Privacy: two one-hot vectors
    differ by 2 in ℓ1, and Lap(2/ε) per coordinate gives ε-label LDP.
    Soft label with a uniform prior (29): p(c | o) = softmax_c(f(o, c)/λ),
    f(o, c) = −Σ_k |o_k − [c = k]|, computed as softmax_c((|o_c| − |o_c − 1|)/λ)
    since the other terms do not depend on c.
    """

    name = "alibi"
    privacy = LABEL_LOCAL

    def __init__(self, epsilon):
        super().__init__(epsilon)
        self.scale = 2.0 / self.epsilon

    def privatize(self, y, rng, cells=None, n_cells=None, K=None):
        noisy = rng.laplace(0.0, self.scale, size=(len(y), K))
        noisy[np.arange(len(y)), y] += 1.0
        return noisy

    def soft_labels(self, noisy):
        logits = (np.abs(noisy) - np.abs(noisy - 1.0)) / self.scale
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        return weights / weights.sum(axis=1, keepdims=True)
