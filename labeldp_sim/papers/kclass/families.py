"""The synthetic family of papers/002's Figures 2-4: K Gaussian classes on the unit circle."""

from __future__ import annotations

import numpy as np
from scipy import integrate
from scipy.special import erf, logsumexp

from labeldp_sim.harness.errors import check

__all__ = ["GaussianCircle"]


class GaussianCircle:
    r"""K isotropic Gaussian classes N(μ_j, σ²I) in R², μ_j = (cos 2πj/K, sin 2πj/K), uniform prior.

    Parameters
    ----------
    K : int ≥ 2
    sigma : float > 0 or the string "2/K"
    """

    def __init__(self, K, sigma):
        check(int(K) == K and K >= 2, "K", K, "integer >= 2")
        if isinstance(sigma, str):
            check(sigma.replace(" ", "") == "2/K", "sigma", sigma, "a number > 0 or '2/K'")
            sigma = 2.0 / K
        check(np.isfinite(sigma) and sigma > 0, "sigma", sigma, "a number > 0 or '2/K'")
        self.K, self.sigma = int(K), float(sigma)
        angles = 2 * np.pi * np.arange(self.K) / self.K
        self.means = np.stack([np.cos(angles), np.sin(angles)], axis=1)

    def sample(self, n, rng):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        y = rng.integers(self.K, size=n)
        return self.means[y] + self.sigma * rng.standard_normal((n, 2)), y

    def posterior(self, X):
        """η_j(x) = P(Y = j | x), shape (n, K)."""
        sq = ((X[:, None, :] - self.means[None, :, :]) ** 2).sum(axis=2)
        logits = -sq / (2 * self.sigma ** 2)
        return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))

    def bayes_accuracy(self) -> float:
        r"""P(c*(X) = Y): the Bayes rule picks the nearest mean, so this is the mass of a
        N((1, 0), σ²I) in the sector |θ| < π/K, integrated in polar coordinates (error < 1e-8)."""
        s, half = self.sigma, np.pi / self.K

        def radial(theta):
            # ∫_0^∞ r φ(r cosθ − 1) φ(r sinθ) dr in closed form
            c = np.cos(theta)
            a = c / s
            tail = np.exp(-1 / (2 * s ** 2)) / (2 * np.pi)
            gauss = np.exp(-(np.sin(theta) ** 2) / (2 * s ** 2)) * a / np.sqrt(2 * np.pi)
            return tail + gauss * (0.5 * (1 + erf(a / np.sqrt(2))))

        value, _ = integrate.quad(radial, -half, half, epsabs=1e-10, epsrel=1e-10, limit=200)
        return float(value)
