"""The checks at every mechanism's boundary: careless inputs refused in one line that names the argument.

Each returns the array as given (no copy, no change of dtype) and draws nothing, so a valid
call draws exactly the numbers it drew before the checks existed; a refusal is one
:class:`~labeldp_sim.harness.errors.ConfigError` line.  The protocols
(:mod:`labeldp_sim.privacy.protocols`) call them before any clipping or noise, and re-export
them.
"""

from __future__ import annotations

import math

import numpy as np

from labeldp_sim.harness.components import Interval
from labeldp_sim.harness.errors import ConfigError, check, is_int, is_number

__all__ = ["LOG_ODDS_LIMIT", "shown", "check_finite", "check_classes", "check_reals", "check_n_cells", "check_cells",
           "check_epsilon", "epsilon_parameter", "noise_scale", "check_noise_scale"]

# Why each check exists: a label outside 0..K−1 lands in another class's bit or cube (a negative
# one wraps round to the last); a cube index past n_cells grows the output by an entry whose
# presence names the record; NaN passes every clip and comes out as NaN; a 2-D array where one
# number per user is expected changes what "one user" means.

# A sampler compares uniforms on the grid of 2^-53 with its probabilities, so an outcome less
# likely than one grid step is never drawn: a keep probability that rounds to 1.0 never flips
# (an infinite loss), and past ε ≈ 709.8 e^ε overflows and the probability is NaN.  The rarer
# outcome of one neighbour step of the finite-output mechanisms has probability 1/(1 + e^a)
# (a = ε for RR, ε/2 for a RAPPOR bit, the weight for the exponential mechanism); a ≤ this limit
# keeps it ≥ 2^-52, two grid steps.  No log-space form helps: the samplers compare a uniform
# with the keep probability itself, and drawing the flip instead would change every draw.
# This is the edge of the grid, not where the claim holds: near it the rounding of p onto the
# grid moves the realised loss well above ε, so RR and RAPPOR cap ε lower, where it stays within
# 1e-9 (labeldp_sim.privacy.grid: RR_EPSILON_LIMIT, RAPPOR_EPSILON_LIMIT).
LOG_ODDS_LIMIT = math.log(2.0 ** 52 - 1)  # ≈ 36.04

class _Shown(str):
    """A description shown as it is after "got" in a :class:`ConfigError` (``repr`` would quote it)."""

    def __repr__(self) -> str:
        return str(self)


def shown(text) -> _Shown:
    """``text`` as the ``got`` of a :class:`ConfigError`, unquoted (e.g. "nan at index 3")."""
    return _Shown(text)


def describe(x: np.ndarray) -> _Shown:
    if x.ndim == 0:
        return shown(repr(x.item()))
    return shown(f"an array of shape {x.shape} and dtype {x.dtype}")


def checked_array(x, name, allowed) -> np.ndarray:
    """``x`` as an array, or a one-line refusal (a ragged list or an object numpy cannot read)."""
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        raise ConfigError(name, shown(type(x).__name__), allowed) from None


def refuse_first(name, x, bad, allowed):
    """Refuse, showing the first entry of ``x`` where ``bad`` holds (the error path only)."""
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = index[0] if len(index) == 1 else index
    raise ConfigError(name, shown(f"{x[index].item()!r} at index {where}"), allowed)


def check_finite(x: np.ndarray, name: str, allowed: str) -> np.ndarray:
    """``x`` unchanged when every entry is finite (one pass over float arrays; integers always are)."""
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        refuse_first(name, x, ~np.isfinite(x), allowed)
    return x


def _vector(x, name, allowed) -> np.ndarray:
    """One real number per user: a 1-D array of integers or floats (no bools, objects, strings)."""
    x = checked_array(x, name, allowed)
    if x.ndim != 1 or (len(x) and x.dtype.kind not in "iuf"):
        raise ConfigError(name, describe(x), allowed)
    return x


def require_K(K):
    """K from the caller: a report whose length depended on the data would leak it."""
    if not is_int(K) or K < 2:
        raise ConfigError("K", K, "the number of classes (an integer >= 2), given, never inferred")
    return int(K)


def _indices(x: np.ndarray, name, high, allowed) -> np.ndarray:
    """``x`` unchanged when it is an integer array with values in 0..high−1 (or empty)."""
    if not len(x):
        return x
    if x.dtype.kind not in "iu":
        raise ConfigError(name, describe(x), allowed)
    if x.min() < 0 or x.max() >= high:
        refuse_first(name, x, (x < 0) | (x >= high), allowed)
    return x


def check_classes(y, K, name="y") -> np.ndarray:
    """Class labels: a 1-D integer array with values in 0..K−1, returned as given.

    A float label is refused even when it is whole: RR would echo 0.5 as a report,
    RAPPOR would give it no bit of its own, and an index must be an integer.
    """
    K = require_K(K)
    allowed = f"integers in 0..{K - 1}, one per user"
    return _indices(_vector(y, name, allowed), name, K, allowed)


def check_reals(y, name="y") -> np.ndarray:
    """Real labels: a 1-D array of finite numbers, returned as given (NaN passes every clip)."""
    allowed = "finite real numbers, one per user"
    return check_finite(_vector(y, name, allowed), name, allowed)


def check_n_cells(n_cells, low=1) -> int:
    """The number of cubes: an integer ≥ ``low``."""
    check(is_int(n_cells) and n_cells >= low, "n_cells", n_cells, f"the number of cubes, an integer >= {low}")
    return int(n_cells)


def check_cells(cells, n_cells, n, name="cells") -> np.ndarray:
    """Cube indices: a 1-D integer array of ``n`` values in 0..n_cells−1, returned as given.

    An index ≥ n_cells would add an entry to a per-cube output (its presence names
    the record), and a negative one would count the record in the last cube.
    """
    allowed = f"integers in 0..{n_cells - 1}, one per user"
    if cells is None:
        raise ConfigError(name, None, f"the cube of each user ({allowed})")
    cells = _vector(cells, name, allowed)
    check(len(cells) == n, name, shown(f"{len(cells)} cube indices"), f"one per label ({n})")
    return _indices(cells, name, n_cells, allowed)


def check_epsilon(epsilon, limit=math.inf, why="") -> float:
    """ε as a float: a finite number > 0, and at most ``limit`` where float64 sets one (``why``)."""
    if math.isinf(limit):
        check(is_number(epsilon) and epsilon > 0, "epsilon", epsilon, "a finite number > 0")
    else:
        check(is_number(epsilon) and 0 < epsilon <= limit, "epsilon", epsilon,
              f"a number in (0, {limit:.6g}]: {why}")
    return float(epsilon)


def epsilon_parameter(limit=math.inf, why="") -> Interval:
    """ε as a declared parameter: what :func:`check_epsilon` accepts (> 0, and ≤ ``limit`` where set)."""
    if math.isinf(limit):
        return Interval(float, 0, None, closed="neither")
    return Interval(float, 0, limit, closed="right", note=why)


def noise_scale(numerator, epsilon, formula) -> float:
    """The Laplace scale ``numerator / epsilon``, refused unless finite and > 0 in float64.

    A tiny ε overflows it to inf (every report ±inf or NaN); a huge one, or a tiny
    numerator, underflows it to 0 (no noise at all).
    """
    return check_noise_scale(numerator / epsilon, epsilon, formula)


def check_noise_scale(scale, epsilon, formula="") -> float:
    """``scale`` unchanged when finite and > 0 in float64; else a one-line error on ``epsilon``."""
    what = f"the noise scale {formula}" if formula else "the noise scale"
    check(math.isfinite(scale) and scale > 0, "epsilon", epsilon,
          f"a number > 0 that keeps {what} finite and > 0 in float64 (it is {scale:g})")
    return scale
