r"""The law of a cube's sample count, n ~ Binomial(N, μ), and exact expectations of functions of it.

The exact expected risks (SPEC §5a, ``runner.path=exact``) average a cube
estimator's conditional moments over the random number n of the N samples that
fall in a cube of mass μ.  :meth:`CountLaw.expect` computes E f(n):

* **by summation** over every n within ``WINDOW`` standard deviations of Nμ
  (plus ``SLACK``) while that window has at most ``MAX_TERMS`` terms.  The
  binomial mass outside it is below exp(−WINDOW²/3) < 10^-200 (Chernoff), so
  the sum is exact to float64 for any f bounded by a polynomial in n;
* **by Gauss–Hermite quadrature** (``NODES`` nodes on the normal law with the
  binomial's mean and variance) above that.  The variance is then at least
  (MAX_TERMS / (2·WINDOW))² = 62,500, so Nμ ≥ 62,500; for the f used here
  (n^-a, n/max(n, n_0) and their products, whose j-th derivative at Nμ is of
  order f(Nμ)·(Nμ)^-j) the quadrature matches the binomial's mean and variance
  (and every moment of the normal up to order 47), and the neglected third and
  higher cumulants of the binomial contribute a relative error of order
  (Nμ)^-2 < 3·10^-10; P(n = 0) = (1 − μ)^N < e^-Nμ is 0 in float64.  (A kink of
  f within a few standard deviations of Nμ, e.g. n_0 = Nμ, would break this
  bound; the floors of the mechanisms here sit at n_0 ≤ Nμ/4.)

Both branches are deterministic: the same N and μ give the same numbers.
"""

from __future__ import annotations

from functools import cached_property, lru_cache

import numpy as np
from scipy import special, stats

__all__ = ["CountLaw", "count_law"]

WINDOW = 40.0      # standard deviations summed on each side of the mean
SLACK = 50         # extra terms on each side (small means: the law is far from normal)
MAX_TERMS = 20_000
NODES = 24         # Gauss–Hermite nodes of the large-count branch
# computed once: scipy solves an eigenproblem for them on every call, which was a quarter of the
# exact regression cells' time (heavy_full_ldp: 614,536 calls, 52 s of 210 s); read-only, as shared
_HERMITE_X, _HERMITE_W = (a.copy() for a in special.roots_hermitenorm(NODES))
_HERMITE_X.flags.writeable = _HERMITE_W.flags.writeable = False


class CountLaw:
    """n ~ Binomial(N, μ): the number of the N samples in a cube of mass μ.

    Parameters
    ----------
    N : int ≥ 1
    mass : float in (0, 1]
    """

    def __init__(self, N, mass):
        self.N, self.mass = int(N), float(mass)
        if not (self.N >= 1 and 0.0 < self.mass <= 1.0):
            raise ValueError(f"CountLaw needs N >= 1 and 0 < mass <= 1 (got N = {N}, mass = {mass})")
        self.mean = self.N * self.mass
        self.variance = self.mean * (1.0 - self.mass)

    @cached_property
    def _support(self):
        """(n, P(n)) over the summation window, or None on the quadrature branch."""
        sd = np.sqrt(self.variance)
        lo = max(0, int(np.floor(self.mean - WINDOW * sd)) - SLACK)
        hi = min(self.N, int(np.ceil(self.mean + WINDOW * sd)) + SLACK)
        if hi - lo + 1 > MAX_TERMS:
            return None
        n = np.arange(lo, hi + 1, dtype=float)
        return n, stats.binom.pmf(n, self.N, self.mass)

    @property
    def summed(self) -> bool:
        """Whether :meth:`expect` sums the law (True) or uses the quadrature branch (module docstring)."""
        return self._support is not None

    def expect(self, f) -> float:
        """E f(n) for a vectorised f (called with n > 0 on the quadrature branch).

        ``f`` is given float arrays of counts; at n = 0 it must return the value it
        means there (e.g. 0 for 1{n > 0}/n: use :meth:`positive`).
        """
        if self._support is not None:
            n, pmf = self._support
            return float(np.sum(pmf * f(n)))
        n = self.mean + np.sqrt(self.variance) * _HERMITE_X
        return float(np.sum(_HERMITE_W * f(n)) / np.sqrt(2 * np.pi))

    @staticmethod
    def positive(g):
        """f(n) = g(n) for n > 0 and 0 at n = 0 (g need not be defined at 0)."""
        def f(n):
            out = np.zeros_like(n, dtype=float)
            on = n > 0
            out[on] = g(n[on])
            return out
        return f

    @cached_property
    def p_occupied(self) -> float:
        """P(n > 0) = 1 − (1 − μ)^N."""
        return float(-np.expm1(self.N * np.log1p(-self.mass))) if self.mass < 1 else 1.0

    @cached_property
    def inverse(self) -> float:
        """E[1{n > 0} / n]."""
        return self.expect(self.positive(lambda n: 1.0 / n))

    @cached_property
    def inverse_square(self) -> float:
        """E[1{n > 0} / n²]."""
        return self.expect(self.positive(lambda n: 1.0 / n ** 2))


@lru_cache(maxsize=4096)
def count_law(N: int, mass: float) -> CountLaw:
    """The :class:`CountLaw` of (N, mass), shared: its expectations are computed once per process."""
    return CountLaw(N, mass)
