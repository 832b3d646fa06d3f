"""What every Table I problem family is: a :class:`~labeldp_sim.harness.components.Component` of the
``distribution`` group, drawn once per trial at the grid point's cube count G.

Features are X ~ Uniform[0, 1]^d (density f = 1, Assumption 1(c), (d)).  A
family declares its keyword parameters (``parameters``; ``d`` comes from
``grid.d``) and checks them with :meth:`~labeldp_sim.harness.components.Component.check_parameters`;
the cross-parameter conditions (γβ ≤ d, L ≤ T...) stay in its ``__init__``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from labeldp_sim.harness.components import Component, Interval

__all__ = ["Family", "RegressionFamily", "D", "BETA", "H_SCALE", "POSITIVE", "CLASSES", "UNIT", "MOMENT"]

# the constraints several families share
D = Interval(int, 1)
BETA = Interval(float, 0, 1, closed="right")
POSITIVE = Interval(float, 0, closed="neither")
H_SCALE = POSITIVE
UNIT = Interval(float, 0, 1, closed="right")
CLASSES = Interval(int, 2)
MOMENT = Interval(float, 2)


class Family(Component, ABC):
    """A law of (X, Y) with a known regression function η, for one Table I task.

    Features are X ~ Uniform[0, 1]^d (density f = 1, Assumption 1(c), (d)).  A
    family is a :class:`~labeldp_sim.harness.components.Component` of the
    ``distribution`` group, drawn once per trial at the grid point's cube count
    G (h = 1/G): :meth:`draw` gives an instance that samples (X, Y) and gives
    its cell model and η.  A concrete family declares its keyword parameters
    (``parameters``; ``d`` comes from ``grid.d``), checks them with
    :meth:`~labeldp_sim.harness.components.Component.check_parameters`, and
    keeps the cross-parameter conditions (γβ ≤ d, L ≤ T...) in its ``__init__``;
    this base takes no parameters.

    Attributes
    ----------
    group : str
        ``"distribution"``, the component group configs name.
    task : {"classification", "regression"}
    minimax_hard : bool
        Whether it is the lower-bound construction (its slopes are Table I's).
    supports_sufficient : bool
        Whether its trials can draw sufficient statistics (a cell model).
    label_bound : float or None
        The label bound T of Assumption 2 when labels are bounded (an instance
        attribute there); None otherwise.
    K : int or None
        The number of classes (an instance attribute of classification
        families); None for regression.
    exact_tilt_law : bool
        Whether it states the law of its cubes' tilts over the random classes
        (``tilt_measure(G, G_est)``), what an exact expected argmax risk needs.
    exact_shifted_tilt_law : bool
        Whether it states that law also for an estimator partition shifted at random
        (``tilt_measure(G, G_est, shifts)``, :class:`~.estimators.cube.CubeArgmax`'s ``shifts``).
    exact_sign_average : bool
        Whether it states its cubes' integrals averaged over the random signs
        (``sign_averaged_cubes``, ``sign_averaged_bias``) and its clipped label
        moments (``clipped_label_moments``), what the exact expected risks of
        cube means and kNN means need.

    Examples
    --------
    The minimax-hard Hölder bump family in one dimension, drawn at G = 8 cubes:

    >>> from labeldp_sim.papers.table1.families.classification import HolderBump
    >>> family = HolderBump(d=1)
    >>> family.task, family.minimax_hard, family.K
    ('classification', True, 2)
    >>> family.n_bumps(8), family.construction_valid(8)
    (4, True)
    >>> instance = family.draw(0, G=8)
    >>> X, y = instance.sample(5, 0)
    >>> X.shape, y.shape
    ((5, 1), (5,))
    """

    group = "distribution"
    task: ClassVar[str]
    minimax_hard: ClassVar[bool]
    supports_sufficient: ClassVar[bool] = False
    label_bound = None
    K: int | None = None
    exact_tilt_law: ClassVar[bool] = False
    exact_shifted_tilt_law: ClassVar[bool] = False
    exact_sign_average: ClassVar[bool] = False

    def relevant_cubes(self, G: int, G_est: int, d: int) -> float:
        """Fewest of the G_est^d estimator cubes its cell model at h = 1/G lists (a memory bound).

        The default lists every cube; a family whose labels are uniform away from
        its bumps lists only the cubes the bumps meet.
        """
        return float(G_est) ** d

    @abstractmethod
    def n_bumps(self, G: int) -> int:
        """Bumps of the instance at h = 1/G (0 for a family without bumps)."""

    @abstractmethod
    def construction_valid(self, G: int) -> bool:
        """Whether the construction holds at h = 1/G (a point where it does not is left out of the fits)."""

    @abstractmethod
    def draw(self, rng, G: int):
        """One instance at h = 1/G: it samples (X, Y), and gives its cell model and η."""


class RegressionFamily(Family, ABC):
    """A regression family: real labels, squared-error risk (9)."""

    task = "regression"
    gamma = float("nan")

    def tail_clip(self, h: float) -> float:
        """The clip level of labels with a p-th moment M_p at cube side h: (M_p h^(−β)/2)^(1/(p−1)).

        The tail of (174), the same law as Theorem 10's T ~ (kε²)^(1/(2p)) and
        Theorem 12's T ~ (εNh^d)^(1/p) at the cell's h and k.
        """
        return (self.M_p * h ** (-self.beta) / 2) ** (1 / (self.p - 1))
