"""The black-box test: an event chosen on half the draws, bounded on the other half (DP-Sniper / StatDP style).

See :mod:`labeldp_sim.privacy.audit` for the argument that P(ε_lower > true loss) ≤ α.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeldp_sim.privacy.audit.maths import log_bound

ALPHA = 1e-6           # black-box: P(ε_lower > true loss) ≤ ALPHA per mechanism
N_BINS = 50            # quantile bins per real coordinate in the black box's score
MAX_THRESHOLDS = 2000  # candidate thresholds of the score


# --------------------------------------------------------------------------- black-box draws
# Each draw(mech, side, n, rng) returns n outputs under D (side 0) or D' (side 1): int64 codes for
# finite outputs, an (n, k) float array for real ones.  Central mechanisms are run on data sets
# of n independent copies of a small cube configuration: cubes are released independently, so one
# release gives n draws of the configuration's output.


def bits_code(Z: np.ndarray) -> np.ndarray:
    """One int64 per row of bits, with a leading 1 so that rows of different lengths differ."""
    Z = np.asarray(Z, dtype=np.int64)
    L = Z.shape[1]
    if L > 62:
        raise ValueError(f"{L} bits do not fit one int64 code")
    return Z @ (np.int64(1) << np.arange(L, dtype=np.int64)) + (np.int64(1) << np.int64(L))


# --------------------------------------------------------------------------- black-box statistics


def score_function(train0, train1):
    """An estimated log likelihood ratio log P(x|D)/P(x|D') fitted on the first halves.

    Finite outputs: the smoothed histogram of the codes.  Real vectors: per coordinate,
    the smoothed histogram on N_BINS quantile bins of the pooled draws, summed over the
    coordinates (naive Bayes; exact in form for independent Laplace noise per coordinate).
    Returns a function from outputs to scores.
    """
    if train0.ndim == 1:
        codes = np.unique(np.concatenate([train0, train1]))
        c0 = np.bincount(np.searchsorted(codes, train0), minlength=len(codes))
        c1 = np.bincount(np.searchsorted(codes, train1), minlength=len(codes))
        table = np.log((c0 + 0.5) / (c1 + 0.5))

        def score(x):
            idx = np.clip(np.searchsorted(codes, x), 0, len(codes) - 1)
            return np.where(codes[idx] == x, table[idx], 0.0)  # an unseen output scores 0

        return score
    edges, tables = [], []
    for c in range(train0.shape[1]):
        pooled = np.concatenate([train0[:, c], train1[:, c]])
        e = np.unique(np.quantile(pooled, np.linspace(0, 1, N_BINS + 1)[1:-1]))
        c0 = np.bincount(np.searchsorted(e, train0[:, c], side="right"), minlength=len(e) + 1)
        c1 = np.bincount(np.searchsorted(e, train1[:, c], side="right"), minlength=len(e) + 1)
        edges.append(e)
        tables.append(np.log((c0 + 0.5) / (c1 + 0.5)))

    def score(x):
        return sum(table[np.searchsorted(e, x[:, c], side="right")]
                   for c, (e, table) in enumerate(zip(edges, tables)))

    return score


def count_at_least(sorted_values, thresholds):
    return len(sorted_values) - np.searchsorted(sorted_values, thresholds, side="left")


@dataclass
class Direction:
    """One direction of the black box: the event {±score ≥ threshold} and its test counts."""

    eps_lower: float
    threshold: float
    k_p: int
    k_q: int
    n: int
    label: str


def one_direction(s_p_train, s_q_train, s_p_test, s_q_test, a, label):
    """Choose t on the training halves (best bound there), then bound on the test halves."""
    sp, sq = np.sort(s_p_train), np.sort(s_q_train)
    candidates = np.unique(np.concatenate([sp, sq]))
    if len(candidates) > MAX_THRESHOLDS:
        candidates = np.unique(np.quantile(candidates, np.linspace(0, 1, MAX_THRESHOLDS)))
    objective = log_bound(count_at_least(sp, candidates), count_at_least(sq, candidates), len(sp), a)
    t = candidates[int(np.argmax(objective))]
    k_p, k_q = int(np.sum(s_p_test >= t)), int(np.sum(s_q_test >= t))
    eps = float(log_bound(k_p, k_q, len(s_p_test), a))
    return Direction(eps, float(t), k_p, k_q, len(s_p_test), label)


def black_box(x0: np.ndarray, x1: np.ndarray, alpha: float = ALPHA) -> Direction:
    r"""ε_lower from outputs ``x0`` ~ M(D) and ``x1`` ~ M(D') (equal numbers of draws).

    The first halves choose, for each direction, an event E = {±score ≥ t}; the second
    halves give k_P, k_Q hits out of m and

        ε_lower = log( CP_lower(k_P; m, α/4) / CP_upper(k_Q; m, α/4) ),

    the larger over the two directions (P, Q) = (D, D') and (D', D).  The events depend
    on the first halves only, so the four one-sided bounds hold together with
    probability ≥ 1 − α and P(ε_lower > sup_E log P(E|D)/P(E|D')) ≤ α.
    """
    n = min(len(x0), len(x1)) // 2
    train0, test0, train1, test1 = x0[:n], x0[n:2 * n], x1[:n], x1[n:2 * n]
    score = score_function(train0, train1)
    s0_tr, s1_tr, s0_te, s1_te = score(train0), score(train1), score(test0), score(test1)
    a = alpha / 4
    forward = one_direction(s0_tr, s1_tr, s0_te, s1_te, a, "D vs D'")
    backward = one_direction(-s1_tr, -s0_tr, -s1_te, -s0_te, a, "D' vs D")
    return max(forward, backward, key=lambda r: r.eps_lower)


def low_bit_codes(x: np.ndarray) -> np.ndarray:
    """Sign, binade (exponent) and last mantissa bit of each output's first coordinate, as int64 codes.

    An event on these codes is a post-processing of the output, so for a mechanism
    whose floats really had its law it could not give ε_lower > ε; floating-point
    Laplace noise makes the last bit depend on the location (Mironov 2012).
    """
    first = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(len(x), -1)[:, 0])
    bits = first.view(np.uint64)
    return ((bits >> np.uint64(52)) << np.uint64(1) | (bits & np.uint64(1))).astype(np.int64)
