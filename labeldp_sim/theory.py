"""Theory registry: the cells of Table I, their exponents and their tuning laws.

Every exponent is stored with the formula as the paper writes it and its
source (table, theorem, equation) in ``papers/000_9aa8bf7a55167adb.txt``.
A *cell* is one row of Table I: a task, a privacy model and what the
mechanism protects.  The registry is the single place that knows

* the expected slope of ``log(excess risk)`` against ``log N`` and/or
  ``log eps`` (``Cell.axes``);
* the bandwidth law ``h(N, eps)`` shared by the matching lower-bound
  construction and the upper-bound estimator (``Cell.bandwidth``);
* the regime in which each slope is meant to hold (``Cell.in_regime``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Exponent", "Cell", "CELLS", "get_cell", "Privacy"]


@dataclass(frozen=True)
class Privacy:
    """What a mechanism guarantees.

    Attributes
    ----------
    model : {"none", "local", "central"}
    protects : {"nothing", "label", "features+label"}
    """

    model: str
    protects: str

    def __str__(self) -> str:
        if self.model == "none":
            return "none"
        return f"{self.protects}/{self.model}"


NONE = Privacy("none", "nothing")
LABEL_LOCAL = Privacy("local", "label")
LABEL_CENTRAL = Privacy("central", "label")
FULL_LOCAL = Privacy("local", "features+label")
FULL_CENTRAL = Privacy("central", "features+label")


@dataclass(frozen=True)
class Exponent:
    """A theoretical slope of log excess risk on log of one axis.

    ``slope(beta, gamma, d)`` is negative: risk ~ axis^slope.
    """

    slope_fn: Callable[[float, float, int], float]
    formula: str
    source: str

    def slope(self, beta: float, gamma: float, d: int) -> float:
        return float(self.slope_fn(beta, gamma, d))


def _eps_eff(eps):
    """ε² ∧ 1, the privacy factor of every local rate in Table I."""
    return np.minimum(np.square(eps), 1.0)


@dataclass(frozen=True)
class Cell:
    """One cell of Table I.

    Parameters
    ----------
    name : str
        Experiment name, e.g. ``"cls_label_ldp"``.
    task : {"classification", "regression"}
    privacy : Privacy
    rate : str
        The rate as Table I writes it.
    axes : dict
        Axis name (``"N"`` or ``"eps"``) -> :class:`Exponent`.
    bandwidth_terms : callable
        ``(N, eps, beta, d) -> tuple of h terms``; the law is their maximum
        (``a + b`` and ``a ∨ b`` are the same up to a factor 2, and the max
        keeps each regime an exact power law).  The first term is the one
        that carries the privacy cost.
    bandwidth_source : str
    """

    name: str
    task: str
    privacy: Privacy
    rate: str
    axes: dict
    bandwidth_terms: Callable
    bandwidth_source: str
    notes: str = ""
    alternatives: dict = field(default_factory=dict)

    def bandwidth(self, N, eps, beta, d, scale=1.0):
        """Cube side h = scale · max(terms) (dimensionless, before snapping)."""
        terms = self.bandwidth_terms(N, eps, beta, d)
        return scale * max(float(t) for t in terms)

    def in_regime(self, axis: str, N: float, eps: float, beta: float, d: int) -> bool:
        """Whether the point lies where the ``axis`` slope of Table I applies.

        Local cells: the ε-slope needs ε ≤ 1 (the rate has ε² ∧ 1).
        Central cells: the ε-slope needs the privacy-dominated regime
        ε < N^(-β/(2β+d)), i.e. the privacy term of the bandwidth law wins.
        """
        if axis == "eps" and self.privacy.model == "local":
            return eps <= 1.0
        if axis == "eps" and self.privacy.model == "central":
            terms = self.bandwidth_terms(N, eps, beta, d)
            return float(terms[0]) > max(float(t) for t in terms[1:])
        if axis == "N" and self.privacy.model == "central":
            terms = self.bandwidth_terms(N, eps, beta, d)
            return float(terms[0]) < max(float(t) for t in terms[1:])
        return True


def _cls_np(b, g, d):
    return -b * (g + 1) / (2 * b + d)


def _cls_central(b, g, d):
    return -b * (g + 1) / (b + d)


def _cls_full_ldp(b, g, d):
    return -b * (g + 1) / (2 * b + 2 * d)


def _h_nonprivate(N, eps, b, d):
    return (N ** (-1.0 / (2 * b + d)),)


def _h_label_ldp(N, eps, b, d):
    return ((N * _eps_eff(eps)) ** (-1.0 / (2 * b + d)),)


def _h_central(N, eps, b, d):
    return ((eps * N) ** (-1.0 / (b + d)), N ** (-1.0 / (2 * b + d)))


def _h_full_ldp(N, eps, b, d):
    return ((N * _eps_eff(eps)) ** (-1.0 / (2 * b + 2 * d)),)


_CLS_NP = Exponent(_cls_np, "-β(γ+1)/(2β+d)", "Table I; (113) classical bound [39]")

CELLS: dict[str, Cell] = {}


def _register(cell: Cell) -> Cell:
    CELLS[cell.name] = cell
    return cell


_register(Cell(
    name="cls_nonprivate",
    task="classification",
    privacy=NONE,
    rate="N^(-β(γ+1)/(2β+d))",
    axes={"N": _CLS_NP},
    bandwidth_terms=_h_nonprivate,
    bandwidth_source="h ~ N^(-1/(2β+d)) ((59) with ε ≥ 1)",
))

_register(Cell(
    name="cls_label_ldp",
    task="classification",
    privacy=LABEL_LOCAL,
    rate="(N(ε²∧1))^(-β(γ+1)/(2β+d))",
    axes={
        "N": Exponent(_cls_np, "-β(γ+1)/(2β+d)", "Table I; Theorem 1 (10), Theorem 2 (14)"),
        "eps": Exponent(lambda b, g, d: 2 * _cls_np(b, g, d), "-2β(γ+1)/(2β+d)",
                        "Table I; Theorem 1 (10), Theorem 2 (14), ε ≤ 1"),
    },
    bandwidth_terms=_h_label_ldp,
    bandwidth_source="(59); Theorem 2: h ~ (N(ε²∧1))^(-1/(2β+d))",
))

_register(Cell(
    name="cls_label_cdp",
    task="classification",
    privacy=LABEL_CENTRAL,
    rate="N^(-β(γ+1)/(2β+d)) + (εN)^(-β(γ+1)/(β+d))",
    axes={"eps": Exponent(_cls_central, "-β(γ+1)/(β+d)",
                          "Table I; Theorem 3 (16), Theorem 4 (18)")},
    bandwidth_terms=_h_central,
    bandwidth_source="(111), (129): h ~ (εN)^(-1/(β+d)) ∨ N^(-1/(2β+d))",
))

_register(Cell(
    name="cls_full_ldp",
    task="classification",
    privacy=FULL_LOCAL,
    rate="(N(ε²∧1))^(-β(γ+1)/(2β+2d))",
    axes={
        "N": Exponent(_cls_full_ldp, "-β(γ+1)/(2β+2d)", "Table I; Remark 1.2 (cites [24], [38])"),
        "eps": Exponent(lambda b, g, d: 2 * _cls_full_ldp(b, g, d), "-2β(γ+1)/(2β+2d)",
                        "Table I; Remark 1.2, ε ≤ 1"),
    },
    bandwidth_terms=_h_full_ldp,
    bandwidth_source="h ~ (N(ε²∧1))^(-1/(2β+2d)) (joint-mechanism noise ~ √N/ε per cube)",
))

_register(Cell(
    name="cls_full_cdp",
    task="classification",
    privacy=FULL_CENTRAL,
    rate="N^(-β(γ+1)/(2β+d)) + (εN)^(-β(γ+1)/(β+d))",
    axes={"eps": Exponent(_cls_central, "-β(γ+1)/(β+d)",
                          "Table I; Theorem 13 (32), lower bound (30) with (16)")},
    bandwidth_terms=_h_central,
    bandwidth_source="Theorem 13: h ~ (εN)^(-1/(β+d)) ∨ N^(-1/(2β+d))",
))


def get_cell(name: str) -> Cell:
    """Look a cell up by name; a clear error lists the known ones."""
    from .errors import ConfigError

    if name not in CELLS:
        raise ConfigError("cell", name, sorted(CELLS))
    return CELLS[name]
