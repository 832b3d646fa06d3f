"""Table I grid points: which (d, N, ε) a sweep visits, snapped so that h = 1/G exactly.

A sweep varies one *axis* (``N`` or ``eps``) and holds the other fixed.  The
cube side of the cell's bandwidth law must be a whole fraction 1/G of the
unit side, so each requested value is moved to the nearest value where it is:
G = round(1/h(requested)), then the axis value solves h(value) = 1/G (N is
then rounded to an integer, which moves h by a relative 1/N at most).  Where
h does not depend on the axis (ε for a non-private cell, ε > 1 for a local
one) the value is kept and G is the rounding of 1/h.  Both the requested
and the snapped values are written to every output row.

Law-free runs (:mod:`.minimax`) leave every point where it was asked for:
there only the law's own columns may depend on the law, so its G is rounded
instead of the point being moved (``make_points(..., snapped=False)``).
"""

from __future__ import annotations

import json
from functools import cached_property
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from labeldp_sim.harness import points as core_points
from labeldp_sim.harness.errors import ConfigError

__all__ = ["Point", "snap", "make_points", "MAX_CUBES", "FLOAT_ERRORS"]

# Cubes per axis (and cubes in all) above this cannot be counted exactly in float64.
MAX_CUBES = 2 ** 53
# What float64 arithmetic can throw while snapping a requested value.
FLOAT_ERRORS = (FloatingPointError, OverflowError, ZeroDivisionError)


@dataclass(frozen=True)
class Point(core_points.Point):
    """One grid point of one Table I experiment.

    Its :attr:`id` is the requested (d, N, ε) on its axis, so snapping, tuning
    (``G_est``, ``k``, ``T``) and the other points leave its streams alone.
    """

    experiment: str
    axis: str
    d: int
    N: int
    eps: float
    N_requested: float
    eps_requested: float
    G: int
    h: float
    in_regime: bool
    G_est: int = 0
    k: float = float("nan")
    T: float = float("nan")

    @cached_property
    def id(self) -> str:
        """Stable identity (does not depend on order or on other points); computed once (frozen)."""
        return json.dumps({"experiment": self.experiment, "axis": self.axis, "d": self.d,
                           "N": self.N_requested, "eps": self.eps_requested}, sort_keys=True)


def snap(cell, axis, N, eps, beta, d, scale, p=float("nan")):
    """(N, eps, G) with ``axis`` moved so that the law gives h = 1/G exactly."""
    h0 = cell.bandwidth(N, eps, beta, d, scale, p)
    if not 1.0 / h0 <= MAX_CUBES:
        # a wider count cannot index cubes in int64 (and makes G an exact int
        # numpy cannot take the log of): an overflow, reported by make_points
        raise OverflowError(f"1/h = {1.0 / h0:.3g} cubes per axis exceeds 2**53")
    G = max(1, int(round(1.0 / h0)))
    x0 = N if axis == "N" else eps

    def gap(logx):
        x = np.exp(logx)
        args = (x, eps) if axis == "N" else (N, x)
        return np.log(cell.bandwidth(*args, beta, d, scale, p)) + np.log(G)

    lo, hi = np.log(x0) - 20.0, np.log(x0) + 20.0
    flat = abs(gap(np.log(x0) + 0.01) - gap(np.log(x0))) < 1e-12
    if flat or G == 1 or gap(lo) * gap(hi) > 0:
        return N, eps, G
    x = float(np.exp(brentq(gap, lo, hi, xtol=1e-13)))
    if axis == "N":
        return max(1, int(round(x))), eps, G
    return N, x, G


def make_points(name, cell, grid_cfg, beta, scale, p=float("nan"), snapped: bool = True,
                sweeps_key: str = "grid.sweeps") -> list[Point]:
    """All points of ``grid_cfg`` (validated earlier) in a stable order.

    Snapping runs under ``np.errstate(all="raise")``: a value whose law
    overflows or underflows float64 would otherwise snap silently to a wrong
    point (with only a RuntimeWarning), so it becomes a
    :class:`~labeldp_sim.harness.errors.ConfigError` on the swept key instead
    (under ``sweeps_key``, where the user typed the sweeps: ``grid.sweeps`` or ``law_free.sweeps``).

    With ``snapped=False`` each point stays at its requested N (an integer)
    and ε, with G = round(1/h) of the law there and h = 1/G; the snap is still
    computed, for its float64 checks and for ``in_regime``, which stays the
    snapped point's.
    """
    points = []
    for d in grid_cfg["d"]:
        for axis, sweep in grid_cfg["sweeps"].items():
            for value in sweep["values"]:
                N_req = float(value) if axis == "N" else float(sweep["N"])
                eps_req = float(value) if axis == "eps" else float(sweep["eps"])
                try:
                    with np.errstate(all="raise"):
                        N, eps, G = snap(cell, axis, N_req, eps_req, beta, int(d), scale, p)
                        in_regime = cell.in_regime(axis, N, eps, beta, int(d), p)
                        N_int = int(round(N))
                        if not snapped:
                            N_int, eps = int(N_req), eps_req
                            G = max(1, int(round(1.0 / cell.bandwidth(N_int, eps, beta, int(d), scale, p))))
                except FLOAT_ERRORS as err:
                    raise ConfigError(f"{sweeps_key}.{axis}.values", value,
                                      f"values whose bandwidth law stays within float64 at d = {d} "
                                      f"({type(err).__name__}: {err})") from None
                points.append(Point(
                    experiment=name, axis=axis, d=int(d), N=N_int, eps=float(eps),
                    N_requested=N_req, eps_requested=eps_req, G=G, h=1.0 / G,
                    in_regime=in_regime,
                ))
    return points
