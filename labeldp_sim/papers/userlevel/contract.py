"""The user-level plug-in contract (papers/003): what a family and an estimator are.

A family (group ``userlevel.family``) scales a problem to a point (n, m, ε, d)
and draws one trial's law; an estimator (group ``userlevel.estimator``) runs
one trial of a user-level ε-LDP protocol at that point and scores it exactly.
Both are :class:`~labeldp_sim.harness.components.Component` classes: a concrete
subclass carries a ``name`` (the name an experiment's YAML gives it), a
``task`` (mean, so, classification, regression) and ``parameters``, the
declared constraints of its ``__init__`` keywords, so the harness can check a
YAML node and list the choices (:func:`~labeldp_sim.harness.components.by_name`)
without building anything.  Constraints tying two parameters together
(``lo <= hi``, ``gamma * beta <= 1``) stay in the ``__init__``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from labeldp_sim.harness.components import Component, Interval, Nullable

__all__ = ["Family", "Estimator", "FAMILY_GROUP", "ESTIMATOR_GROUP", "POSITIVE", "positive_or_none"]

FAMILY_GROUP = "userlevel.family"
ESTIMATOR_GROUP = "userlevel.estimator"

# the most common constraint of a user-level parameter: a finite number > 0
POSITIVE = Interval(float, 0, None, closed="neither")


def positive_or_none(meaning: str) -> Nullable:
    """null (``meaning`` says what the estimator then uses) or a finite number > 0."""
    return Nullable(POSITIVE, meaning)


class _Described:
    """``Class(field=value, ...)`` from the instance's attributes (its validated parameters)."""

    def __repr__(self):
        fields = ", ".join(f"{k}={v}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Family(_Described, Component, ABC):
    """A family of problems of one task; ``instance`` scales it to a point (n, m, ε, d).

    ``minimax_hard`` marks the lower-bound constructions; fixed instances are not.
    """

    group: ClassVar[str] = FAMILY_GROUP
    name: str = ""
    task: str = ""
    minimax_hard: bool = False

    @abstractmethod
    def instance(self, rng, n, m, eps, d):
        """The trial's law at (n, m, ε, d); its random parameters (hidden signs, ...) come from ``rng``."""


class Estimator(_Described, Component, ABC):
    """A user-level ε-LDP protocol: one trial at a point of the grid, scored exactly.

    ``trial(family, n, m, eps, d, rng, path) -> dict`` returns at least
    ``error``, ``stage1_ok``, ``in_regime`` and ``groups``; every random draw
    of a trial comes from ``rng``.
    """

    group: ClassVar[str] = ESTIMATOR_GROUP
    name: str = ""
    task: str = ""
    #: Whether it states E[error | instance] in closed form (``expected_error(inst, n, m, eps, d)``):
    #: what ``userlevel.path: exact`` and the law-free search need.
    exact_expected_error: ClassVar[bool] = False
    #: Non-empty where ``expected_error`` is not exact but an upper bound computed without trials (what it
    #: leaves out, in a sentence): the law-free search admits it in worst-case (one-sided) rows only.
    approximate_expected_error: ClassVar[str] = ""
    #: Whether its sufficient path draws each group's users over the 2d coefficient signs (Kashin's
    #: basis, d >= 2): an (n/(4d), 2d) int64 array per trial (:func:`~.experiments.trial_needs`).
    draws_coefficient_signs: ClassVar[bool] = False
    #: The fixed cube length of an estimator that takes one (None: tuned, or no cubes).
    l: float | None = None

    @abstractmethod
    def trial(self, family, n, m, eps, d, rng, path="sufficient") -> dict:
        """One trial at (n, m, ε, d): draw the instance from ``rng``, run the protocol, score it."""

    @abstractmethod
    def check_point(self, family, n, m, eps, d) -> None:
        """Raise a one-line :class:`~labeldp_sim.harness.errors.ConfigError` unless a trial can run at (n, m, ε, d).

        The rule :meth:`trial` applies before drawing anything (tuning, groups,
        users per group); the experiment validator applies it to every point
        of a grid before computing anything.
        """
