r"""Kashin representations (papers/003, Lemma 1, SPEC §2): ℓ2 data as sup-norm-bounded coefficients.

Theorem 5 estimates an ℓ2-bounded mean by running Algorithm 2 on the 2d
coefficients a(X) of each sample in a random frame, whose sup norm is at most
K·||X||/√d; Algorithm 3 does the same with gradients (Theorem 8's proof).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["KashinBasis", "KASHIN_K"]

KASHIN_K = 2.7  # d-free Kashin constant: ≥ 1.1 × measured sup √d||a(x)||_∞/||x|| up to d = 256 (SPEC: ≈ 2.4)


class KashinBasis:
    r"""Kashin representations in the frame U = d columns of a random orthogonal 2d×2d matrix.

    Lemma 1 is false as a *linear* map (SPEC §2: the row u_j with the largest
    norm gives ||Ux||_∞ ≥ ||u_j|| ≥ 1/√2 at x = u_j/||u_j||), so coefficients
    are the nonlinear Lyubarskii–Vershynin ones: from r = x, a = 0, repeat

    .. math:: b = \mathrm{clip}(U r, \pm 1.5\|r\|/\sqrt{2d}),\quad a \mathrel{+}= b,\quad r \mathrel{-}= U^\top b

    until ||r|| ≤ 10⁻¹³||x||, then add the remainder U r exactly, so
    Uᵀa(x) = x (UᵀU = I) and ||a(x)||_∞ ≤ K||x||/√d.  The map is odd and
    positively homogeneous.

    K ("auto") is measured once per basis: 1.1 × the largest √d||a(x)||_∞/||x||
    over the directions u_j/||u_j|| (the worst case of the linear map), the
    coordinate axes and 4096 Gaussian directions; SPEC §2 reports K ≈ 2.4.

    Parameters
    ----------
    d : int
    seed : int
        Fixes U (a public parameter, not data-dependent).
    """

    FACTOR = 1.5
    TOL = 1e-13
    MAX_ITER = 1000

    def __init__(self, d, seed=0):
        self.d, self.seed = int(d), int(seed)
        self.U = _orthogonal_columns(self.d, self.seed)
        self.K = _measured_K(self.d, self.seed)

    def coefficients(self, x) -> np.ndarray:
        """a(x) for rows x, shape (k, d) -> (k, 2d)."""
        x = np.asarray(x, dtype=float).reshape(-1, self.d)
        return _lv_coefficients(self.U, x, self.FACTOR, self.TOL, self.MAX_ITER)

    def reconstruct(self, a) -> np.ndarray:
        """Uᵀa for rows a, shape (k, 2d) -> (k, d)."""
        return np.asarray(a, dtype=float) @ self.U


@lru_cache(maxsize=32)
def _orthogonal_columns(d, seed):
    g = np.random.default_rng(seed).standard_normal((2 * d, 2 * d))
    q, r = np.linalg.qr(g)
    q = q * np.sign(np.diag(r))  # Haar measure: fix the signs of the QR factor
    return np.ascontiguousarray(q[:, :d])


def _lv_coefficients(U, x, factor, tol, max_iter):
    d2 = U.shape[0]
    r = x.copy()
    a = np.zeros((len(x), d2))
    target = tol * np.linalg.norm(x, axis=1)
    for _ in range(max_iter):
        nr = np.linalg.norm(r, axis=1)
        if np.all(nr <= target):
            break
        level = (factor * nr / math.sqrt(d2))[:, None]
        b = np.clip(r @ U.T, -level, level)
        a += b
        r -= b @ U
    return a + r @ U.T  # the tiny remainder, exactly: Uᵀ(U r) = r


@lru_cache(maxsize=32)
def _measured_K(d, seed):
    U = _orthogonal_columns(d, seed)
    probe = np.vstack([U / np.linalg.norm(U, axis=1)[:, None], np.eye(d),
                       np.random.default_rng(seed + 1).standard_normal((4096, d))])
    a = _lv_coefficients(U, probe, KashinBasis.FACTOR, KashinBasis.TOL, KashinBasis.MAX_ITER)
    ratio = math.sqrt(d) * np.abs(a).max(axis=1) / np.linalg.norm(probe, axis=1)
    return 1.1 * float(ratio.max())

