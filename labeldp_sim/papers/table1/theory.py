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

from labeldp_sim.privacy.protocols import FULL_CENTRAL, FULL_LOCAL, LABEL_CENTRAL, LABEL_LOCAL, NONE, Privacy

__all__ = ["Exponent", "Cell", "CELLS", "Privacy"]




@dataclass(frozen=True)
class Exponent:
    """A theoretical slope of log excess risk on log of one axis.

    ``slope(beta, gamma, d, p)`` is negative: risk ~ axis^slope.  ``statement``
    names which statement of the paper it is when a cell has several.
    """

    slope_fn: Callable
    formula: str
    source: str
    statement: str = "Table I"

    def slope(self, beta: float, gamma: float, d: int, p: float = float("nan")) -> float:
        return float(self.slope_fn(beta, gamma, d, p))


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
        ``(N, eps, beta, d, p) -> tuple of h terms``; the law is their maximum
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
    family: str = "classification"
    labels: str = "classes"
    notes: str = ""
    alternatives: dict = field(default_factory=dict)

    def bandwidth(self, N, eps, beta, d, scale=1.0, p=float("nan")):
        """Cube side h = scale · max(terms) (dimensionless, before snapping)."""
        terms = self.bandwidth_terms(N, eps, beta, d, p)
        return scale * max(float(t) for t in terms)

    def statements(self, axis: str) -> list:
        """The exponent of Table I for ``axis`` followed by any other statement of it."""
        return [self.axes[axis], *self.alternatives.get(axis, [])]

    def in_regime(self, axis: str, N: float, eps: float, beta: float, d: int,
                  p: float = float("nan")) -> bool:
        """Whether the point lies where the ``axis`` slope of Table I applies.

        Local cells: the ε-slope needs ε ≤ 1 (the rate has ε² ∧ 1), and where
        the law has a non-private term too (heavy tails) its privacy term must win.
        Central cells: the ε-slope needs the privacy-dominated regime
        ε < N^(-β/(2β+d)), i.e. the privacy term of the bandwidth law wins.
        """
        terms = [float(t) for t in self.bandwidth_terms(N, eps, beta, d, p)]
        privacy_wins = len(terms) == 1 or terms[0] > max(terms[1:])
        if self.privacy.model == "local":
            return privacy_wins and (axis == "N" or eps <= 1.0)
        if self.privacy.model == "central":
            return privacy_wins if axis == "eps" else not privacy_wins
        return True


def _cls_np(b, g, d, p=None):
    return -b * (g + 1) / (2 * b + d)


def _cls_central(b, g, d, p=None):
    return -b * (g + 1) / (b + d)


def _cls_full_ldp(b, g, d, p=None):
    return -b * (g + 1) / (2 * b + 2 * d)


def _h_nonprivate(N, eps, b, d, p=None):
    return (N ** (-1.0 / (2 * b + d)),)


def _h_label_ldp(N, eps, b, d, p=None):
    return ((N * _eps_eff(eps)) ** (-1.0 / (2 * b + d)),)


def _h_central(N, eps, b, d, p=None):
    return ((eps * N) ** (-1.0 / (b + d)), N ** (-1.0 / (2 * b + d)))


def _h_full_ldp(N, eps, b, d, p=None):
    return ((N * _eps_eff(eps)) ** (-1.0 / (2 * b + 2 * d)),)


def _twice(n_slope):
    """The ε-slope of a local cell: its rates depend on N(ε²∧1), so twice the N-slope."""
    return lambda b, g, d, p: 2 * n_slope(b, g, d, p)


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
        "eps": Exponent(_twice(_cls_np), "-2β(γ+1)/(2β+d)",
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
        "eps": Exponent(_twice(_cls_full_ldp), "-2β(γ+1)/(2β+2d)",
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


# --- regression with bounded labels |Y| < T (Section V, VII.B) -------------------------------


def _reg_np(b, g, d, p=None):
    return -2 * b / (2 * b + d)


def _reg_central(b, g, d, p=None):
    return -2 * b / (b + d)


def _reg_full_ldp(b, g, d, p=None):
    return -b / (b + d)


_REG_NP = Exponent(_reg_np, "-2β/(2β+d)", "Table I; (155) classical bound [39]")
def _reg_thm7(b, g, d, p=None):
    """Theorem 7's statement of the central exponent on εN."""
    return -2 * b / (d + 2 * b)


_THM7 = "Theorem 7 (22): (εN)^(-2β/(d+2β)) (a slip: Table I, Theorem 8 and (154) give 2β/(d+β))"

_register(Cell(
    name="reg_nonprivate", task="regression", family="regression", labels="bounded",
    privacy=NONE, rate="N^(-2β/(2β+d))", axes={"N": _REG_NP},
    bandwidth_terms=_h_nonprivate, bandwidth_source="h ~ N^(-1/(2β+d))",
))

_register(Cell(
    name="reg_label_ldp", task="regression", family="regression", labels="bounded",
    privacy=LABEL_LOCAL, rate="(N(ε²∧1))^(-2β/(2β+d))",
    axes={
        "N": Exponent(_reg_np, "-2β/(2β+d)", "Table I; Theorem 5 (19), Theorem 6 (21)"),
        "eps": Exponent(_twice(_reg_np), "-4β/(2β+d)",
                        "Table I; Theorem 5 (19), Theorem 6 (21), ε ≤ 1"),
    },
    bandwidth_terms=_h_label_ldp,
    bandwidth_source="(138): h ~ (N(ε∧1)²)^(-1/(2β+d)); kNN k = N h^d ((151), Theorem 6)",
))

_register(Cell(
    name="reg_label_cdp", task="regression", family="regression", labels="bounded",
    privacy=LABEL_CENTRAL, rate="N^(-2β/(2β+d)) + (εN)^(-2β/(β+d))",
    axes={"eps": Exponent(_reg_central, "-2β/(β+d)", "Table I; Theorem 8 (24); (154)",
                          statement="Table I / Theorem 8")},
    alternatives={"eps": [Exponent(_reg_thm7, "-2β/(d+2β)", _THM7,
                                   statement="Theorem 7")]},
    bandwidth_terms=_h_central,
    bandwidth_source="(111), (164): h ~ (εN)^(-1/(β+d)) ∨ N^(-1/(2β+d))",
))

_register(Cell(
    name="reg_full_ldp", task="regression", family="regression", labels="bounded",
    privacy=FULL_LOCAL, rate="(N(ε²∧1))^(-β/(β+d))",
    axes={
        "N": Exponent(_reg_full_ldp, "-β/(β+d)", "Table I (cites [24], [38])"),
        "eps": Exponent(_twice(_reg_full_ldp), "-2β/(β+d)",
                        "Table I (cites [24], [38]), ε ≤ 1"),
    },
    bandwidth_terms=_h_full_ldp,
    bandwidth_source="h ~ (N(ε²∧1))^(-1/(2β+2d)) (joint-mechanism noise ~ √N/ε per cube)",
))

_register(Cell(
    name="reg_full_cdp", task="regression", family="regression", labels="bounded",
    privacy=FULL_CENTRAL, rate="N^(-2β/(2β+d)) + (εN)^(-2β/(β+d))",
    axes={"eps": Exponent(_reg_central, "-2β/(β+d)", "Table I; Theorem 14(1) (37)",
                          statement="Table I / Theorem 8")},
    alternatives={"eps": [Exponent(_reg_thm7, "-2β/(d+2β)",
                                   _THM7 + " via (30)", statement="Theorem 7")]},
    bandwidth_terms=_h_central,
    bandwidth_source="Theorem 14(1): h ~ (εN)^(-1/(β+d)) ∨ N^(-1/(2β+d))",
))


# --- regression with heavy-tailed labels E|Y|^p ≤ M_p (Section VI, VII.B) ---------------------


def _heavy_ldp(b, g, d, p):
    return -2 * b * (p - 1) / (2 * p * b + d * (p - 1))


def _heavy_central(b, g, d, p):
    return -2 * b * (p - 1) / (p * b + d * (p - 1))


def _heavy_full_ldp(b, g, d, p):
    return -b * (p - 1) / (p * b + d * (p - 1))


def _h_heavy_ldp(N, eps, b, d, p):
    return ((N * _eps_eff(eps)) ** (-(p - 1) / (2 * p * b + d * (p - 1))), N ** (-1.0 / (2 * b + d)))


def _h_heavy_central(N, eps, b, d, p):
    return ((eps * N) ** (-(p - 1) / (p * b + d * (p - 1))), N ** (-1.0 / (2 * b + d)))


def _h_heavy_full_ldp(N, eps, b, d, p):
    return ((N * _eps_eff(eps)) ** (-(p - 1) / (2 * p * b + 2 * d * (p - 1))),
            N ** (-1.0 / (2 * b + d)))


_register(Cell(
    name="heavy_nonprivate", task="regression", family="heavy", labels="heavy",
    privacy=NONE, rate="N^(-2β/(2β+d))", axes={"N": _REG_NP},
    bandwidth_terms=_h_nonprivate, bandwidth_source="h ~ N^(-1/(2β+d))",
))

_register(Cell(
    name="heavy_label_ldp", task="regression", family="heavy", labels="heavy",
    privacy=LABEL_LOCAL, rate="(Nε²)^(-2β(p-1)/(2pβ+d(p-1))) ∨ N^(-2β/(2β+d))",
    axes={
        "N": Exponent(_heavy_ldp, "-2β(p-1)/(2pβ+d(p-1))", "Table I; Theorem 9 (25), Theorem 10 (26)"),
        "eps": Exponent(_twice(_heavy_ldp), "-4β(p-1)/(2pβ+d(p-1))",
                        "Table I; Theorem 10 (26), ε ≤ 1 (Theorem 9 has N(e^ε−1)²)"),
    },
    bandwidth_terms=_h_heavy_ldp,
    bandwidth_source="(177): h ~ (Nε²)^(-(p-1)/(2pβ+d(p-1))); k = N h^d, T = (M_p h^(-β)/2)^(1/(p-1)) (Appendix K)",
))

_register(Cell(
    name="heavy_label_cdp", task="regression", family="heavy", labels="heavy",
    privacy=LABEL_CENTRAL, rate="N^(-2β/(2β+d)) + (εN)^(-2β(p-1)/(pβ+d(p-1)))",
    axes={"eps": Exponent(_heavy_central, "-2β(p-1)/(pβ+d(p-1))",
                          "Table I; Theorem 11 (27), Theorem 12 (29)")},
    bandwidth_terms=_h_heavy_central,
    bandwidth_source="Theorem 12: h ~ (εN)^(-(p-1)/(pβ+d(p-1))) ∨ N^(-1/(2β+d)), T ~ (εNh^d)^(1/p)",
))

_register(Cell(
    name="heavy_full_ldp", task="regression", family="heavy", labels="heavy",
    privacy=FULL_LOCAL, rate="(N(ε²∧1))^(-β(p-1)/(pβ+d(p-1)))",
    axes={
        "N": Exponent(_heavy_full_ldp, "-β(p-1)/(pβ+d(p-1))", "Table I (cites [24], [38])"),
        "eps": Exponent(_twice(_heavy_full_ldp), "-2β(p-1)/(pβ+d(p-1))",
                        "Table I (cites [24], [38]), ε ≤ 1"),
    },
    bandwidth_terms=_h_heavy_full_ldp,
    bandwidth_source="h ~ (N(ε²∧1))^(-(p-1)/(2pβ+2d(p-1))) (joint noise ~ √N T/ε per cube)",
))

_register(Cell(
    name="heavy_full_cdp", task="regression", family="heavy", labels="heavy",
    privacy=FULL_CENTRAL, rate="N^(-2β/(2β+d)) + (εN)^(-2β(p-1)/(pβ+d(p-1)))",
    axes={"eps": Exponent(_heavy_central, "-2β(p-1)/(pβ+d(p-1))", "Table I; Theorem 14(2) (38)")},
    bandwidth_terms=_h_heavy_central,
    bandwidth_source="Theorem 14(2): h ~ (εN)^(-(p-1)/(pβ+d(p-1))) ∨ N^(-1/(2β+d)), T ~ (εNh^d)^(1/p)",
))
