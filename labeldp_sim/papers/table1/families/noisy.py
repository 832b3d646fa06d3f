r"""A regression family that is *not* minimax-hard: a fixed smooth η plus continuous label noise.

The noise law is a :class:`NoiseLaw` named by the family's ``noise`` parameter:
it draws the noise and states its own condition for a finite p-th moment, so
the family never tests which law it has.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from labeldp_sim.harness.components import Interval, Options
from labeldp_sim.harness.errors import check
from labeldp_sim.papers.table1.families.base import BETA, D, H_SCALE, MOMENT, POSITIVE, RegressionFamily
from labeldp_sim.papers.table1.families.cells import RegressionCellModel

__all__ = ["NoisyRegression", "NoisyRegressionInstance", "NoiseLaw", "NOISE_LAWS"]


class NoiseLaw(ABC):
    """The law of the label noise ξ of :class:`NoisyRegression`, symmetric with mean 0."""

    name: str
    # the family's parameter that must exceed p for E|ξ|^p < ∞ (None: every moment is finite)
    tail: str | None = None

    def check(self, parameters: dict) -> None:
        """Refuse the family's ``parameters`` (as given) under which ξ has no finite p-th moment."""
        if self.tail is not None:
            value, p = parameters[self.tail], parameters["p"]
            check(value > p, self.tail, value, f"finite numbers > p = {p} (finite p-th moment)")

    @abstractmethod
    def draw(self, family: "NoisyRegression", n: int, rng: np.random.Generator) -> np.ndarray:
        """n i.i.d. draws of ξ."""


class GaussianNoise(NoiseLaw):
    """ξ ~ N(0, scale²)."""

    name = "gaussian"

    def draw(self, family, n, rng):
        return family.scale * rng.standard_normal(n)


class StudentTNoise(NoiseLaw):
    """ξ = scale · t_df; E|ξ|^p < ∞ needs df > p."""

    name, tail = "student_t", "df"

    def draw(self, family, n, rng):
        return family.scale * rng.standard_t(family.df, n)


class ParetoNoise(NoiseLaw):
    """ξ = ±scale · (1 + Lomax(alpha)), a random sign: symmetric Pareto with minimum scale; needs alpha > p."""

    name, tail = "pareto", "alpha"

    def draw(self, family, n, rng):
        sign = rng.choice(np.array([-1.0, 1.0]), size=n)
        return sign * family.scale * (1 + rng.pareto(family.alpha, n))  # symmetric: mean 0


NOISE_LAWS = {law.name: law for law in (GaussianNoise(), StudentTNoise(), ParetoNoise())}


class NoisyRegression(RegressionFamily):
    r"""A fixed smooth regression function with continuous label noise — *not minimax-hard*.

    η(x) = A sin(2π x₁) (Lipschitz, so β ≤ 1 holds), Y = η(X) + ξ with ξ
    Gaussian, Student-t or symmetric Pareto.  The instance does not change
    with N; reports never call a mismatch with Table I a failure.  The noise
    law is continuous, so trials use the per-sample path.

    Parameters
    ----------
    d, beta : as elsewhere (β is used for the estimator's tuning)
    noise : {"gaussian", "student_t", "pareto"}
    scale : float > 0
        σ of the Gaussian, scale of the t, minimum x_m of the Pareto.
    df : float
        Student-t degrees of freedom; E|ξ|^p < ∞ needs df > p.
    alpha : float
        Pareto shape; E|ξ|^p < ∞ needs alpha > p.
    p : float ≥ 2
        Moment order the instance is meant to have.
    M_p : float > 0
        Moment bound used by clipping rules (``T: theory``).
    A : float
        Amplitude of η.
    """

    minimax_hard = False
    supports_sufficient = False
    labels = "noisy"
    parameters = {"d": D, "beta": BETA, "noise": Options(*NOISE_LAWS), "scale": POSITIVE, "df": POSITIVE,
                  "alpha": POSITIVE, "p": MOMENT, "M_p": POSITIVE, "A": Interval(float), "h_scale": H_SCALE}

    def __init__(self, d=1, beta=1.0, noise="gaussian", scale=0.5, df=5.0, alpha=4.0, p=3.0,
                 M_p=1.0, A=0.5, h_scale=1.0):
        self.check_parameters(d=d, beta=beta, noise=noise, scale=scale, df=df, alpha=alpha, p=p, M_p=M_p, A=A,
                              h_scale=h_scale)
        NOISE_LAWS[noise].check({"df": df, "alpha": alpha, "p": p})
        self.d, self.beta, self.noise, self.scale = int(d), float(beta), noise, float(scale)
        self.df, self.alpha, self.p, self.M_p, self.A = float(df), float(alpha), float(p), float(M_p), float(A)
        self.h_scale, self.T = float(h_scale), float("nan")

    @property
    def noise_law(self) -> NoiseLaw:
        """The law of ξ that ``noise`` names."""
        return NOISE_LAWS[self.noise]

    def n_bumps(self, G=None) -> int:
        return 0

    def construction_valid(self, G=None) -> bool:
        return True

    def draw(self, rng, G=None):
        return NoisyRegressionInstance(self)


class NoisyRegressionInstance:
    """The one instance of :class:`NoisyRegression` (it does not depend on G)."""

    def __init__(self, family: NoisyRegression):
        self.family = family
        self.values = None

    def eta(self, X):
        return self.family.A * np.sin(2 * np.pi * X[:, 0])

    def noise(self, n, rng):
        return self.family.noise_law.draw(self.family, n, rng)

    def sample(self, N, rng):
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
