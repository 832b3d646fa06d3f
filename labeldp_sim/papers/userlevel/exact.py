r"""Expected risks of the user-level protocols in closed form (papers/003; no Monte Carlo).

The law-free mode (:mod:`.minimax`) needs E[error | instance] for many
instances × tunings × points, up to n·m = 10^15 and beyond what a trial can
draw.  Every protocol here ends in Algorithm 1's stage II: an average of n₂
users' clipped means plus their Laplace noise, so its output is a sum of n₂
i.i.d. bounded terms.  The formulas below are exact given what they state, and
each states what it approximates; :mod:`tests.userlevel.test_userlevel_exact`
checks every one against the Monte-Carlo trials of the same protocol (the
sample mean of the trial errors within 3 standard errors).

Algorithm 1 (:func:`alg1_expected_error`)
    Stage I's noisy argmax k̂ picks bin j with probability P_j
    (:func:`stage_one_choice`: the noisy counts are sums of n₁ independent
    terms, taken as independent normals, a 1-D integral).  Given k̂ = j, stage
    II's estimate has mean E clip_j(Y) and variance (Var clip_j(Y) + 2b²)/n₂,
    b = (3h + 2Δ)/ε, with the law of Y = X̄ exact (Binomial(m, ·) for a
    two-point X), so

    .. math:: \mathrm{MSE} = \sum_j P_j\Big[(E\,\mathrm{clip}_j Y-\mu)^2
              + \frac{\mathrm{Var\,clip}_j Y + 2b^2}{n_2}\Big]

    ((55) with the clipping bias and stage I's choice kept: an oracle that
    narrows the bins pays for the bins stage I can no longer find).

Algorithms 4 and 5 (:func:`decoded_sd`, :func:`decoded_variance`, :func:`classification_risk`, :func:`regression_risk_gaussian`)
    With one coordinate per group (ε < 2: Algorithm 2's high-privacy regime,
    and the medium one at ⌊ε⌋ = 1) the K coordinate estimates Q̂_k are
    independent (larger ε: a group's coordinates share its users, and
    :func:`decoded_variance` adds their covariances), each with mean Q_k (the clipping window [L − Δ, R + Δ] lies
    ≥ 4 standard deviations of a user mean from the modal bin: its bias is
    below 10^-4 of the noise) and variance ((1 − Q_k²)/m + 2λ²)/n₂,k, λ =
    (3h + 2Δ)/ε.  Then q̂_b = (H_K Q̂)_b/K has mean q_b and the same variance
    σ² = Σ_k Var Q̂_k / K² for every cube b; it is a sum of K·n₂ independent
    bounded terms, and it is taken as normal (the central limit theorem; the
    Berry–Esseen error is O((K n₂)^{-1/2})); with shared users σ² depends on b.  Classification: (156) in
    expectation, Σ_b Φ(−q_b/σ)∫η₊ + Φ(q_b/σ)∫η₋.  Regression: q̂_b and p̂_b come
    from disjoint groups (independent); for each p̂ on a Gauss–Hermite rule, E
    clip(q̂/p̂, ±T) and its square are closed forms of the normal law.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special, stats

from labeldp_sim.papers.userlevel.hadamard import fwht, hadamard_matrix

__all__ = ["decoded_variance", "alg1_expected_error", "stage_one_choice", "user_mean_law", "NORMAL_LAW_POINTS", "coordinate_variances", "decoded_sd",
           "classification_risk", "clipped_normal_moments", "regression_risk_gaussian", "GH_NODES"]

GH_NODES = 48  # Gauss–Hermite nodes over p̂: the integrand is smooth in p̂ (error < 1e-12 relative)
# computed once, not per call (numpy solves an eigenproblem for them each time); the weights sum to 1
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(GH_NODES)
_GH_W = _GH_W / _GH_W.sum()
_GH_X.flags.writeable = _GH_W.flags.writeable = False


FWHT_BATCH = 1 << 22  # entries of the groups × K matrix transformed at once (32 MiB of float64)


def _aligned_width(groups, K: int) -> int:
    """w when the groups are the blocks [s, s + w) of {0..K−1}, w a power of 2 (Algorithm 2 at ⌊ε⌋ = w); else 0."""
    w = len(groups[0])
    if w & (w - 1) or w * len(groups) != K:
        return 0
    starts = np.array([g[0] for g in groups])
    ok = all(len(g) == w for g in groups) and np.array_equal(starts, np.arange(0, K, w))  # in order: n2 pairs by row
    return w if ok and all(np.array_equal(np.asarray(g), np.arange(g[0], g[0] + w)) for g in groups) else 0


def _aligned_variance(w: int, K: int, T, P, m: int, lam: float, n2) -> np.ndarray:
    r""":func:`decoded_variance` for aligned blocks of width w, in O(K w): s ⊕ j = s + j for j < w, so
    H_{b,s+j} = H_{b,s}H_{b,j}; then c_S = w·1{j < w}, and G_S(b)² = (Σ_{j<w} H_{b mod w, j} T_{s+j})²
    (H_{b,j}, j < w, depends on b's low bits only)."""
    inv = 1.0 / n2  # groups in start order, as _aligned_width checked
    A = T.reshape(K // w, w) @ hadamard_matrix(w)  # row g: G_{S_g}(b) for b mod w = 0..w−1, up to H_{b,s} = ±1
    g2 = (A * A * inv[:, None]).sum(axis=0)
    counts = np.zeros(K)
    counts[:w] = w * inv.sum()
    F = fwht(counts * P)
    noise = 2.0 * lam ** 2 * w * inv.sum()
    return (noise + (F - np.tile(g2, K // w)) / m) / K ** 2


def decoded_variance(groups, K: int, T, P, m: int, lam: float, n2) -> np.ndarray:
    r"""Var of the decoded block (H_K X̂)_b/K, per cube b, when a group's coordinates share its users.

    Each group g runs Algorithm 1 on its coordinates S_g ⊂ {0..K−1} of one block
    (X̂ = Q̂ with means T = Q, or P̂ with T = P) over n₂,g stage II users, each
    coordinate with its own Lap(λ).  A sample's statistics are ±H_K[k, cube] (times
    its label for Q), so E[X_k X_k'] = P_{k⊕k'} (Sylvester: H_kc H_k'c = H_{k⊕k',c};
    P = H_K p, P_0 = 1) and, for W = Σ_{k∈S} H_bk X_k,
    Var W = F_S(b) − G_S(b)² with F_S = H_K(c_S ⊙ P), c_S(j) = #{(k, k') ∈ S²: k ⊕ k' = j},
    and G_S = H_K(T ⊙ 1_S).  So

    .. math:: \mathrm{Var}\,\hat x_b = \frac{1}{K^2}\sum_g \frac{1}{n_{2,g}}
              \Big(2\lambda^2|S_g| + \frac{F_{S_g}(b) - G_{S_g}(b)^2}{m}\Big).

    One coordinate per group gives ((1 − T_k²)/m + 2λ²)/n₂,k summed over k, as
    :func:`coordinate_variances`.  ``groups``: index arrays S_g; ``n2``: their stage II users.
    """
    T, P = np.asarray(T, dtype=float), np.asarray(P, dtype=float)
    aligned = _aligned_width(groups, K)
    if aligned:
        return _aligned_variance(aligned, K, T, P, m, lam, np.asarray(n2, dtype=float))
    counts = np.zeros(K)
    noise = 0.0
    g2 = np.zeros(K)
    batch = max(1, FWHT_BATCH // K)
    for start in range(0, len(groups), batch):
        part = groups[start:start + batch]
        rows = np.zeros((len(part), K))
        for i, (S, w) in enumerate(zip(part, n2[start:start + batch])):
            S = np.asarray(S, dtype=np.int64)
            if len(S) == K:  # every j is the xor of exactly K ordered pairs
                counts += K / w
            else:
                counts += np.bincount(np.bitwise_xor.outer(S, S).ravel(), minlength=K) / w
            noise += 2.0 * lam ** 2 * len(S) / w
            rows[i, S] = T[S]
        g = fwht(rows)
        g2 += np.sum(g * g / np.asarray(n2[start:start + batch], dtype=float)[:, None], axis=0)
    F = fwht(counts * P)
    return (noise + (F - g2) / m) / K ** 2


STAGE_ONE_SDS = 12.0  # bins whose noisy count is this many sd below the modal bin's are never chosen (P < 1e-30)
STAGE_ONE_GRID = 2001  # points of the 1-D integral over the winning count


def stage_one_choice(bin_probs, n1: int, eps: float) -> tuple:
    r"""(bins, P(k̂ = bin)) of stage I's noisy argmax, over the bins that can win.

    s_j = N_j + Σ_{i ≤ n₁} L_ij, N multinomial(n₁, p), L_ij ~ Lap(2/ε): each s_j is
    a sum of n₁ independent terms, taken as normal with variance
    n₁p_j(1 − p_j) + 8n₁/ε².  The counts' covariance −n₁p_jp_k is dropped: the
    noise variance 8n₁/ε² is at least 8/p(1 − p) ≥ 32 times larger at ε ≤ 1.  Then
    P(k̂ = j) = ∫ φ_j(t) Π_{i≠j} Φ_i(t) dt (trapezoid rule on ``STAGE_ONE_GRID``
    points over ±``STAGE_ONE_SDS`` sd), normalised over the bins within
    ``STAGE_ONE_SDS`` sd of the largest mean.
    """
    p = np.asarray(bin_probs, dtype=float)
    mean = n1 * p
    sd = np.sqrt(n1 * p * (1 - p) + 8.0 * n1 / eps ** 2)
    top = int(np.argmax(mean))
    near = np.flatnonzero(mean >= mean[top] - STAGE_ONE_SDS * np.hypot(sd, sd[top]))
    if len(near) == 1:
        return near, np.ones(1)
    mu, s = mean[near], sd[near]
    t = np.linspace((mu - STAGE_ONE_SDS * s).max(), (mu + STAGE_ONE_SDS * s).max(), STAGE_ONE_GRID)
    z = (t[None, :] - mu[:, None]) / s[:, None]
    log_cdf = special.log_ndtr(z)
    others = log_cdf.sum(axis=0)[None, :] - log_cdf  # Π_{i≠j} Φ_i(t), in logs
    dens = np.exp(-0.5 * z * z + others) / (s[:, None] * math.sqrt(2 * math.pi))
    prob = integrate.trapezoid(dens, t, axis=1)
    return near, prob / prob.sum()


def alg1_expected_error(values, probs, mu: float, D: float, h: float, delta: float, eps: float,
                        n1: int, n2: int) -> dict:
    r"""E (μ̂ − μ)² of Algorithm 1 for user means with the exact law (``values``, ``probs``).

    Σ_j P(k̂ = j)·[(E clip_j Y − μ)² + (Var clip_j Y + 2b²)/n₂], clip_j the
    stage II window [L_j − Δ, R_j + Δ] of bin j, with P(k̂ = j) from
    :func:`stage_one_choice` and the clipped moments exact.

    Parameters
    ----------
    values, probs : array_like
        The support and probabilities of one user's mean Y = X̄ (e.g. D(2J/m − 1), J ~ Bin(m, π)).
    mu : float
        The true mean.
    D, h, delta : float
        Range [−D, D], bin length, stage II margin Δ (:class:`~.mean_algorithms.TwoStageTuning`).
    eps : float
        The instance's budget.
    n1, n2 : int
        Users of stage I and stage II.

    Returns
    -------
    dict
        ``error``, ``bias2`` and ``variance`` (of μ̂, averaged over k̂), ``modal_share`` (P(k̂ is the modal bin)).
    """
    y = np.asarray(values, dtype=float)
    w = np.asarray(probs, dtype=float)
    bins = max(1, math.ceil(2 * D / h - 1e-9))
    # as BinHistogram: half-open bins from −D, the values outside count in the end bins
    idx = np.clip(np.floor((y + D) / h), 0, bins - 1).astype(np.int64)
    bin_probs = np.bincount(idx, weights=w, minlength=bins)
    chosen, chance = stage_one_choice(bin_probs, n1, eps)
    lo = -D + (chosen - 1) * h - delta
    hi = -D + (chosen + 2) * h + delta
    c = np.clip(y[None, :], lo[:, None], hi[:, None])
    mean_c = c @ w
    var_c = (c - mean_c[:, None]) ** 2 @ w
    b = (3 * h + 2 * delta) / eps
    bias2 = float(chance @ (mean_c - mu) ** 2)
    variance = float(chance @ ((var_c + 2 * b * b) / n2))
    modal = chance[chosen == int(np.argmax(bin_probs))]
    return {"error": bias2 + variance, "bias2": bias2, "variance": variance,
            "bias": float(chance @ (mean_c - mu)), "modal_share": float(modal[0]) if len(modal) else 0.0}


NORMAL_LAW_POINTS = 801  # atoms of the discretised normal law of a user mean (±NORMAL_LAW_SDS sd)
NORMAL_LAW_SDS = 8.0


def user_mean_law(values, probs, m: int) -> tuple:
    r"""(support, probabilities, exact) of one user's mean Y = (1/m) Σ_j X_j of m i.i.d. samples of a finite law.

    A two-point law gives Y = (J a + (m − J) b)/m, J ~ Bin(m, p_a): exact.  Any other
    law is taken as normal with Y's exact mean and variance (the central limit
    theorem over the user's m samples; Berry–Esseen error O(m^{−1/2}) in the
    law, less in the moments that stage II's clipped mean uses: its clipping window
    lies ≥ 4 sd of Y from the modal bin), discretised on ``NORMAL_LAW_POINTS``
    atoms over ±``NORMAL_LAW_SDS`` sd with the normal's cell probabilities, the
    atoms recentred so that the discrete law keeps the mean exactly.
    """
    x = np.asarray(values, dtype=float)
    w = np.asarray(probs, dtype=float)
    keep = w > 0
    x, w = x[keep], w[keep]
    atoms, inverse = np.unique(x, return_inverse=True)
    weights = np.bincount(inverse, weights=w)
    if len(atoms) == 1:
        return atoms, np.ones(1), True
    if len(atoms) == 2:
        j = np.arange(m + 1)
        return (j * atoms[1] + (m - j) * atoms[0]) / m, stats.binom.pmf(j, m, weights[1]), True
    mean = float(weights @ atoms)
    sd = math.sqrt(max(float(weights @ (atoms - mean) ** 2), 0.0) / m)
    if sd == 0:
        return np.array([mean]), np.ones(1), True
    edges = np.linspace(-NORMAL_LAW_SDS, NORMAL_LAW_SDS, NORMAL_LAW_POINTS + 1)
    cells = np.diff(special.ndtr(edges))
    mids = 0.5 * (edges[1:] + edges[:-1])
    cells = cells / cells.sum()
    support = mean + sd * (mids - cells @ mids)
    return support, cells, False



def coordinate_variances(truth, m: int, lam, n2) -> np.ndarray:
    r"""Var Q̂_k = ((1 − Q_k²)/m + 2λ_k²)/n₂,k: a ±1 statistic's user mean plus Lap(λ_k), over n₂,k users."""
    truth = np.asarray(truth, dtype=float)
    return ((1.0 - truth ** 2) / m + 2.0 * np.square(lam)) / np.asarray(n2, dtype=float)


def decoded_sd(variances) -> float:
    r"""sd of q̂_b = (H_K Q̂)_b / K for independent Q̂_k: √(Σ_k Var Q̂_k)/K, the same for every b (H² = 1)."""
    v = np.asarray(variances, dtype=float)
    return float(math.sqrt(v.sum()) / len(v))


def classification_risk(mom, sd: float) -> float:
    r"""E(R − R*) of ĝ = sign(q̂_b) with q̂_b ~ N(q_b, sd²): Σ_b Φ(−q_b/sd)∫η₊ + Φ(q_b/sd)∫η₋ ((156))."""
    z = np.asarray(mom.q, dtype=float) / sd
    return float(np.sum(special.ndtr(-z) * mom.pos + special.ndtr(z) * mom.neg))


def clipped_normal_moments(mean, sd, T: float) -> tuple:
    r"""E clip(Z, ±T) and E clip(Z, ±T)² for Z ~ N(mean, sd²), elementwise (closed forms).

    With α = (−T − μ)/s, β = (T − μ)/s:
    E c = −TΦ(α) + T(1 − Φ(β)) + μ(Φ(β) − Φ(α)) + s(φ(α) − φ(β)),
    E c² = T²(Φ(α) + 1 − Φ(β)) + (μ² + s²)(Φ(β) − Φ(α)) + s((μ − T)φ(α) − (μ + T)φ(β)).
    """
    mu, s = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
    a, b = (-T - mu) / s, (T - mu) / s
    Fa, Fb = special.ndtr(a), special.ndtr(b)
    upper = special.ndtr(-b)  # 1 − Φ(β), not a difference from 1 (which is 0 past β ≈ 8.3)
    fa, fb = np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi), np.exp(-0.5 * b * b) / math.sqrt(2 * math.pi)
    # P(α < Z < β) from the tail it lies in: two upper tails when α > 0 (there Φ(β), Φ(α) both near 1)
    inside = np.where(a > 0, special.ndtr(-a) - upper, Fb - Fa)
    first = -T * Fa + T * upper + mu * inside + s * (fa - fb)
    second = T * T * (Fa + upper) + (mu * mu + s * s) * inside + s * ((mu - T) * fa - (mu + T) * fb)
    return first, second


def regression_risk_gaussian(mom, sd_q: float, sd_p: float, T: float) -> float:
    r"""E ∫(η̂ − η)² f for η̂_b = clip(q̂_b/p̂_b, ±T) (0 where p̂_b ≤ 0), q̂_b ~ N(q_b, sd_q²) ⊥ p̂_b ~ N(p_b, sd_p²).

    Σ_b p_b E η̂_b² − 2 q_b E η̂_b + ∫_{C_b} η² f, the expectation over p̂_b by
    Gauss–Hermite (``GH_NODES`` nodes), over q̂_b given p̂_b in closed form
    (:func:`clipped_normal_moments` of q̂_b/p̂_b ~ N(q_b/p̂_b, (sd_q/p̂_b)²)).
    """
    x, wts = _GH_X, _GH_W
    p, q = np.asarray(mom.p, dtype=float), np.asarray(mom.q, dtype=float)
    first = np.zeros_like(q)
    second = np.zeros_like(q)
    for node, wt in zip(x, wts):
        ph = p + sd_p * node  # the same node for every cube: p̂_b's are not jointly needed (linearity)
        pos = ph > 0
        safe = np.where(pos, ph, 1.0)
        e1, e2 = clipped_normal_moments(q / safe, sd_q / safe, T)
        first += wt * np.where(pos, e1, 0.0)
        second += wt * np.where(pos, e2, 0.0)
    return max(0.0, float(np.sum(p * second - 2 * q * first + mom.sq)))
