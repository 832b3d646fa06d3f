r"""Hadamard coding of per-cube statistics (papers/003, Appendix E.1, (133)-(138)).

Algorithms 4 and 5 estimate Q = H_K q rather than q: every sample then
carries ±1 in every coordinate, so each coordinate's user means are bounded
by 1 whatever the number of cubes K.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.linalg import hadamard

from labeldp_sim.harness.errors import check

__all__ = ["hadamard_matrix", "hadamard_encode", "hadamard_decode", "fwht"]


@lru_cache(maxsize=32)
def hadamard_matrix(K: int) -> np.ndarray:
    """Sylvester's Hadamard matrix H_K (K a power of 2): symmetric, entries ±1, H_K H_K = K I."""
    check(int(K) == K and K >= 1 and (int(K) & (int(K) - 1)) == 0, "K", K, "a power of 2")
    H = hadamard(int(K)).astype(float)
    H.setflags(write=False)
    return H


def hadamard_encode(q) -> np.ndarray:
    r"""Q = H_K q (134): Q_k = Σ_l H_kl q_l = ∫_{T_k} fη − ∫_{T_k^c} fη (133), K = len(q)."""
    q = np.asarray(q, dtype=float)
    return hadamard_matrix(len(q)) @ q


def hadamard_decode(Q) -> np.ndarray:
    r"""q̂ = H_K^{-1} Q̂ = H_K Q̂ / K (138): exact inverse of :func:`hadamard_encode`."""
    Q = np.asarray(Q, dtype=float)
    return hadamard_matrix(len(Q)) @ Q / len(Q)


def fwht(x) -> np.ndarray:
    r"""H_K x for Sylvester's H_K (K = x.shape[-1], a power of 2) in O(K log K), along the last axis.

    The butterflies of H_{2k} = [[H, H], [H, −H]]: equal to ``x @ scipy.linalg.hadamard(K)`` (H is
    symmetric) without the K×K matrix (K reaches 2^16 on deep points).
    """
    y = np.array(x, dtype=float)
    shape, K = y.shape, y.shape[-1]
    h = 1
    while h < K:
        y = y.reshape(*shape[:-1], -1, 2, h)
        y = np.stack([y[..., 0, :] + y[..., 1, :], y[..., 0, :] - y[..., 1, :]], axis=-2).reshape(shape)
        h *= 2
    return y
