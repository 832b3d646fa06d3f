"""What the user-level learning families and protocols share (papers/003, Sections 5-6).

The argument checks of the learning families (:mod:`.label_families`,
:mod:`.so`) and protocols (:mod:`.so`, :mod:`.nonparametric`), and
:class:`LearningEstimator`, the base of Algorithms 3-5.
"""

from __future__ import annotations

import math

import numpy as np

from labeldp_sim.harness.errors import check
from labeldp_sim.papers.userlevel.contract import Estimator
from labeldp_sim.papers.userlevel.data import PATHS

__all__ = ["LearningEstimator"]


def is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)) \
        and bool(np.isfinite(x))


def positive(key, value, allow_none=False):
    if allow_none and value is None:
        return None
    check(is_number(value) and value > 0, key, value, "None or > 0" if allow_none else "> 0")
    return float(value)


def validate_point(n, m, eps, d, path):
    check(is_number(n) and int(n) == n and n >= 2, "n", n, "an integer >= 2")
    check(is_number(m) and int(m) == m and m >= 1, "m", m, "an integer >= 1")
    check(is_number(eps) and eps > 0, "eps", eps, "> 0")
    check(is_number(d) and int(d) == d and d >= 1, "d", d, "an integer >= 1")
    check(path in PATHS, "path", path, PATHS)
    return int(n), int(m), float(eps), int(d)


def family_point(n, m, eps, d):
    check(is_number(n) and int(n) == n and n >= 1, "n", n, "an integer >= 1")
    check(is_number(m) and int(m) == m and m >= 1, "m", m, "an integer >= 1")
    check(is_number(eps) and eps > 0, "eps", eps, "> 0")
    check(is_number(d) and int(d) == d and d >= 1, "d", d, "an integer >= 1")


def safe_log(x):
    return math.log(max(x, 1.0 + 1e-12))


class LearningEstimator(Estimator):
    """A user-level ε-LDP learning protocol: ``trial(family, n, m, eps, d, rng, path) -> dict``.

    ``check_point`` is the rule :meth:`trial` applies (the same code: tuning,
    groups, users per group).
    """
