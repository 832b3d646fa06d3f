"""The base of papers/003's mean estimators: :class:`MeanEstimator` and the checks every one shares.

Split from :mod:`.mean` so that the Proposition 1 baselines (:mod:`.mean_baselines`) and the two-stage
algorithms (:mod:`.mean`) build on one trial contract without importing each other.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.contract import Estimator
from labeldp_sim.papers.userlevel.data import PATHS

__all__ = ["MeanEstimator", "check_mean_point", "check_positive", "sample_columns"]

def check_mean_point(n, m, eps, d, path):
    check(int(n) == n and n >= 2, "n", n, "an integer >= 2")
    check(int(m) == m and m >= 1, "m", m, "an integer >= 1")
    check(np.isfinite(eps) and eps > 0, "eps", eps, "> 0")
    check(int(d) == d and d >= 1, "d", d, "an integer >= 1")
    check(path in PATHS, "path", path, PATHS)


def check_positive(key, value, allow_none=False):
    if allow_none and value is None:
        return None
    check(isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
          and np.isfinite(value) and value > 0, key, value, "None or > 0" if allow_none else "> 0")
    return float(value)


def sample_columns(coords):
    """Per-sample map: the ``coords`` coordinates of each row (any d, 1-D samples included)."""
    def f(s):
        s = np.asarray(s, dtype=float)
        return s.reshape(len(s), -1)[:, coords]
    return f


class MeanEstimator(Estimator):
    """A user-level ε-LDP mean estimator: one trial at a point of the grid.

    Subclasses implement ``_estimate(instance, n, m, eps, d, rng, path) -> (mu_hat, info)``.
    """

    task: str = "mean"

    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        """One trial: draw the instance (hidden signs from ``rng``), estimate, score.

        Returns
        -------
        dict
            ``error`` = ||μ̂ − μ||² (exact given μ̂), ``stage1_ok`` (None without
            stage I), ``in_regime``, ``groups``, ``mu_hat_1`` / ``mu_1`` (first
            coordinates, for law checks) and estimator diagnostics.
        """
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        check_mean_point(n, m, eps, d, path)
        n, m, d, eps = int(n), int(m), int(d), float(eps)
        self.check_point(family, n, m, eps, d)
        inst = family.instance(rng, n, m, eps, d)
        mu_hat, info = self._estimate(inst, n, m, eps, d, rng, path)
        mu_hat = np.atleast_1d(np.asarray(mu_hat, dtype=float))
        mu = np.atleast_1d(np.asarray(inst.mu, dtype=float))
        out = {"error": float(np.sum((mu_hat - mu) ** 2)), "stage1_ok": None, "in_regime": True, "groups": 1,
               "mu_hat_1": float(mu_hat[0]), "mu_1": float(mu[0]), "mu_norm2": float(mu @ mu)}
        out.update(info)
        return out

    def check_point(self, family, n, m, eps, d) -> None:
        """Raise a one-line :class:`ConfigError` unless a trial can run at (n, m, ε, d).

        The rule :meth:`trial` applies before drawing anything; the experiment
        validator applies it to every point of a grid.  None here beyond
        ``check_mean_point``; estimators with a dimension or a group-size rule override it.
        """

    @abstractmethod
    def _estimate(self, inst, n, m, eps, d, rng, path):
        """(μ̂, diagnostics) for one trial."""
