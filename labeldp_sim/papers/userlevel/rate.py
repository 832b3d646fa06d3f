"""One stated rate of papers/003 (:class:`Rate`): its formula, source, conditions and full form.

The registry of every rate the paper states is :data:`~.theory.RATES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Rate"]


@dataclass(frozen=True)
class Rate:
    r"""One stated rate (upper bound, lower bound or baseline) of papers/003.

    Attributes
    ----------
    name : str
        Registry key, e.g. ``"thm1_alg1"``.
    formula : str
        The formula as the paper (or the SPEC) writes it.
    source : str
        Where it is stated, e.g. ``"Theorem 1, eq. (2)"``.
    kind : {"upper", "lower", "baseline"}
    condition : str
        The condition the statement is made under (sample-size condition, support,
        moment assumption, privacy range).
    log_factors : str
        Which log factors the full form includes ("none" when it has none).
    notes : str
        Slips (numbers of :data:`SLIPS`) and reading choices that apply.
    metric : str
        What is bounded: MSE ``E||μ̂−μ||²``, ``E||θ̂−θ*||₂`` (SO, unsquared),
        excess risk ``R − R*`` (classification), ``E∫(η̂−η)²f`` (regression).
    fn : callable
        ``fn(n, m, eps, d, p, D, M_p, beta, gamma, sigma2)`` → the full stated rate
        with all constants set to 1.
    """

    name: str
    formula: str
    source: str
    kind: str
    condition: str
    log_factors: str
    notes: str
    metric: str
    fn: Callable = field(repr=False, compare=False)

    def value(self, n, m, eps, d=1, p=2.0, D=1.0, M_p=1.0, *, beta=1.0, gamma=1.0,
              sigma2=None):
        r"""The FULL stated rate at (n, m, ε, d), log factors included, constants = 1.

        Parameters
        ----------
        n, m : float or array_like
            Users and samples per user (≥ 1).
        eps : float or array_like
            Privacy parameter ε > 0.
        d : float or array_like, default 1
            Dimension.
        p : float, default 2.0
            Moment order of the heavy-tailed rates (p ≥ 2 in Theorem 3).
        D : float, default 1.0
            Support radius (mean estimation) or gradient bound (SO).
        M_p : float, default 1.0
            Moment bound ``E|X|^p ≤ M_p`` (heavy-tailed rates).
        beta, gamma : float, default 1.0
            Hölder exponent and Tsybakov noise exponent (classification, regression).
        sigma2 : float, optional
            Per-sample variance of the naive baseline; ``None`` means D².

        Returns
        -------
        float or numpy.ndarray
            A float when every argument is a scalar, else the broadcast array.
        """
        args = [np.asarray(a, dtype=float) for a in (n, m, eps, d)]
        n_, m_, eps_, d_ = args
        if np.any(n_ < 1) or np.any(m_ < 1) or np.any(eps_ <= 0) or np.any(d_ < 1):
            raise ValueError(f"{self.name}: need n ≥ 1, m ≥ 1, eps > 0, d ≥ 1")
        s2 = float(D) ** 2 if sigma2 is None else float(sigma2)
        out = self.fn(n_, m_, eps_, d_, float(p), float(D), float(M_p), float(beta),
                      float(gamma), s2)
        out = np.asarray(out, dtype=float)
        return float(out) if out.ndim == 0 else out
