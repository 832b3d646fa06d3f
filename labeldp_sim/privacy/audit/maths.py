"""The audit's maths: exact privacy losses of closed-form laws and Clopper–Pearson bounds.

See :mod:`labeldp_sim.privacy.audit` for what each loss means.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import beta

# --------------------------------------------------------------------------- exact losses


def log_ratio(a, b):
    """log(a/b) elementwise with the conventions of a privacy loss: 0/0 → −∞ (no output), a/0 → ∞."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(a) - np.log(b)
    return np.where(a == 0, -np.inf, np.where(b == 0, np.inf, out))


def bits_loss(P: np.ndarray) -> float:
    r"""Exact loss of independent bits: row i of ``P`` is P(Z_j = 1 | input i).

    For a product law the worst output z picks, bit by bit, the larger ratio:
    L = max_{i,i'} Σ_j max(log P_ij/P_i'j, log (1−P_ij)/(1−P_i'j)).  For RAPPOR
    (11) the two bits y, y' each give ε/2 and the rest 0, so L = ε (15).
    """
    P = np.asarray(P, dtype=float)
    up = log_ratio(P[:, None, :], P[None, :, :])
    down = log_ratio(1 - P[:, None, :], 1 - P[None, :, :])
    return float(np.max(np.maximum(up, down).sum(axis=2)))


def matrix_loss(M: np.ndarray) -> float:
    r"""Exact loss of a finite channel: L = max_{i,i',j} log M[i,j]/M[i',j] (M[i,j] = P(Z=j | Y=i))."""
    M = np.asarray(M, dtype=float)
    return float(np.max(log_ratio(M[:, None, :], M[None, :, :])))


def clopper_pearson_lower(k, n, a):
    """One-sided lower Clopper–Pearson bound: P(p < bound) ≤ a; 0 when k = 0."""
    k = np.asarray(k, dtype=float)
    return np.where(k > 0, beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)


def clopper_pearson_upper(k, n, a):
    """One-sided upper Clopper–Pearson bound: P(p > bound) ≤ a; 1 when k = n."""
    k = np.asarray(k, dtype=float)
    return np.where(k < n, beta.isf(a, k + 1, np.maximum(n - k, 1)), 1.0)


def log_bound(k_p, k_q, n, a):
    """log(CP_lower(k_p)/CP_upper(k_q)), −∞ when the lower bound is 0."""
    low, up = clopper_pearson_lower(k_p, n, a), clopper_pearson_upper(k_q, n, a)
    with np.errstate(divide="ignore"):
        return np.log(low) - np.log(up)
