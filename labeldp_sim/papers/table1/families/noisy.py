r"""Regression families that are *not* minimax-hard: a fixed smooth η plus continuous label noise.

One class per noise law (:class:`NoisyGaussian`, :class:`NoisyStudentT`,
:class:`NoisyPareto`), each declaring only the parameters its law reads and
stating its own condition for a finite p-th moment: no family tests which law
it has, and no parameter of another law is accepted and ignored.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from labeldp_sim.harness.components import Interval
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.table1.families.base import BETA, D, H_SCALE, MOMENT, POSITIVE, RegressionFamily
from labeldp_sim.papers.table1.families.cells import RegressionCellModel

__all__ = ["NoisyRegression", "NoisyGaussian", "NoisyStudentT", "NoisyPareto", "NoisyRegressionInstance"]


class NoisyRegression(RegressionFamily, ABC):
    r"""A fixed smooth regression function with continuous label noise — *not minimax-hard*.

    η(x) = A sin(2π x₁) (Lipschitz, so β ≤ 1 holds), Y = η(X) + ξ with ξ of the
    subclass's law, symmetric with mean 0.  The instance does not change with
    N; reports never call a mismatch with Table I a failure.  The noise law is
    continuous, so trials use the per-sample path.

    Parameters
    ----------
    d, beta : as elsewhere (β is used for the estimator's tuning)
    scale : float > 0
        σ of the Gaussian, scale of the t, minimum x_m of the Pareto.
    p : float ≥ 2
        Moment order the instance is meant to have.
    M_p : float > 0
        Moment bound used by clipping rules (``T: theory``).
    A : float
        Amplitude of η.
    tail : float > p (Student-t ``df``, Pareto ``alpha``; not for the Gaussian)
        The tail parameter: E|ξ|^p < ∞ needs it > p.
    """

    minimax_hard = False
    supports_sufficient = False
    labels = "noisy"
    parameters = {"d": D, "beta": BETA, "scale": POSITIVE, "p": MOMENT, "M_p": POSITIVE, "A": Interval(float),
                  "h_scale": H_SCALE}

    def __init__(self, d=1, beta=1.0, scale=0.5, p=3.0, M_p=1.0, A=0.5, h_scale=1.0):
        self.check_parameters(d=d, beta=beta, scale=scale, p=p, M_p=M_p, A=A, h_scale=h_scale)
        self.d, self.beta, self.scale = int(d), float(beta), float(scale)
        self.p, self.M_p, self.A = float(p), float(M_p), float(A)
        self.h_scale, self.T = float(h_scale), float("nan")

    def tail_parameter(self, key: str, value) -> float:
        """A tail parameter of the noise law, checked: E|ξ|^p < ∞ needs it > p."""
        self.check_parameters(**{key: value})
        check(value > self.p, key, value, f"finite numbers > p = {self.p:g} (finite p-th moment)")
        return float(value)

    @abstractmethod
    def noise(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n i.i.d. draws of ξ."""

    def n_bumps(self, G=None) -> int:
        return 0

    def construction_valid(self, G=None) -> bool:
        return True

    def draw(self, rng, G=None):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return NoisyRegressionInstance(self)


class NoisyGaussian(NoisyRegression):
    """ξ ~ N(0, scale²)."""

    name = "noisy_gaussian"

    def noise(self, n, rng):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return self.scale * rng.standard_normal(n)


class NoisyStudentT(NoisyRegression):
    """ξ = scale · t_df; E|ξ|^p < ∞ needs df > p."""

    name = "noisy_student_t"
    parameters = {**NoisyRegression.parameters, "df": POSITIVE}

    def __init__(self, d=1, beta=1.0, scale=0.5, df=5.0, p=3.0, M_p=1.0, A=0.5, h_scale=1.0):
        super().__init__(d, beta, scale, p, M_p, A, h_scale)
        self.df = self.tail_parameter("df", df)

    def noise(self, n, rng):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return self.scale * rng.standard_t(self.df, n)


class NoisyPareto(NoisyRegression):
    """ξ = ±scale · (1 + Lomax(alpha)), a random sign: symmetric Pareto with minimum scale; needs alpha > p."""

    name = "noisy_pareto"
    parameters = {**NoisyRegression.parameters, "alpha": POSITIVE}

    def __init__(self, d=1, beta=1.0, scale=0.5, alpha=4.0, p=3.0, M_p=1.0, A=0.5, h_scale=1.0):
        super().__init__(d, beta, scale, p, M_p, A, h_scale)
        self.alpha = self.tail_parameter("alpha", alpha)

    def noise(self, n, rng):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        sign = rng.choice(np.array([-1.0, 1.0]), size=n)
        return sign * self.scale * (1 + rng.pareto(self.alpha, n))  # symmetric: mean 0


class NoisyRegressionInstance:
    """The one instance of a :class:`NoisyRegression` (it does not depend on G)."""

    def __init__(self, family: NoisyRegression):
        self.family = family
        self.values = None

    def eta(self, X):
        return self.family.A * np.sin(2 * np.pi * X[:, 0])

    def noise(self, n, rng):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        return self.family.noise(n, rng)

    def sample(self, N, rng):
        rng = np.random.default_rng(rng)  # None, a seed or a Generator (passed through unchanged)
        X = rng.random((N, self.family.d))
        return X, self.eta(X) + self.noise(N, rng)

    def cell_model(self, G_est: int) -> RegressionCellModel:
        d, G, A = self.family.d, int(G_est), self.family.A
        edges = np.arange(G + 1) / G
        # ∫ sin(2πx) and ∫ sin²(2πx) over each interval of the first axis
        i1 = (np.cos(2 * np.pi * edges[:-1]) - np.cos(2 * np.pi * edges[1:])) / (2 * np.pi)
        i2 = (np.diff(edges) / 2 - (np.sin(4 * np.pi * edges[1:]) - np.sin(4 * np.pi * edges[:-1])) / (8 * np.pi))
        first = np.unravel_index(np.arange(G ** d), (G,) * d)[0]
        other = float(G) ** (-(d - 1))
        mass = np.full(G ** d, float(G) ** (-d))
        return RegressionCellModel(G ** d, mass, None, None, A * other * i1[first], A ** 2 * other * i2[first])
