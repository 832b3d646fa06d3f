r"""What a draw ``rng.random() < p`` realises on the uniform grid of 2^-53, and the ε caps that follow.

numpy's ``Generator.random`` returns U = k·2^-53 with k uniform on 0..2^53 − 1, so a
mechanism that compares a uniform with a probability p draws the event with probability

.. math:: \tilde p \;=\; P(U < p) \;=\; \lceil p\,2^{53} \rceil \,/\, 2^{53}
          \qquad (0 \le p \le 1;\ p\,2^{53} \text{ is exact in float64}),

not p (:func:`grid_probability`).  The privacy loss the mechanism *realises* is its loss
computed from p̃ rather than from p.  Where the rarer outcome has probability
f = 1/(1 + e^a) (a = ε for a keep-or-flip draw, randomized response; a = ε/2 for each
bit of RAPPOR), an error δ in f moves the log-odds ln((1 − f)/f) by up to

.. math:: \Delta(f) \;=\; \ln\!\Big(1 + \frac{\delta}{1-f}\Big) - \ln\!\Big(1 - \frac{\delta}{f}\Big)
          \;\approx\; \delta\, e^{a},

which grows without bound as f shrinks: near the edge of the grid (f ≈ 2^-52,
a ≈ 36.04) randomized response realises a loss ln(5/4) ≈ 0.22 above its claim
(f·2^53 = 2.5 drawn as 2).
:func:`worst_excess` bounds it, with

    δ = 3·2^-54 + 4·2^-53·f:

half a grid step for rounding the keep probability e^a/(e^a + c) onto the grid of
2^-53 (where it is ≥ 1/2, float64's spacing is the grid's), one grid step for
rounding the sum e^a + c where it crosses a power of two, and a few ulps of f
for exp and the quotient.  :func:`log_odds_cap` is the largest log-odds a (floored
to two decimals, so that the number a refusal message shows is itself accepted)
at which ``comparisons`` such draws together stay within :data:`LOSS_TOLERANCE`
of the claim; Δ increases with a, so it holds at every smaller a too.  The caps:

* :data:`RR_EPSILON_LIMIT` — randomized response and RRWithPrior (a = ε, one
  comparison: the keep probability; the other class is an exact uniform integer);
* :data:`RAPPOR_EPSILON_LIMIT` — RAPPOR and joint RAPPOR (a = ε/2 per bit, two bits
  differ between neighbours; the bound counts δ in both, which is conservative: the
  rare bit probability q is rounded *up* by the ceiling, which lowers ln(p̃/q̃), so
  the realised excess is second order — ln(1 + 1/(4j(j+1))) at q·2^53 ≈ j + 1/2,
  0.04 at the edge of the grid).

The audit computes the realised loss of each capped mechanism on the grid
(:func:`grid_probability`, :func:`keep_or_flip_matrix`) at its claimed ε and over a
sweep of ε up to its cap (:func:`cap_sweep`), and checks :func:`worst_excess` at the cap.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["GRID", "LOSS_TOLERANCE", "ROUNDING", "grid_probability", "keep_or_flip_matrix", "worst_excess",
           "log_odds_cap", "cap_sweep", "RR_EPSILON_LIMIT", "RAPPOR_EPSILON_LIMIT"]

GRID = 2 ** 53             # uniforms are k / GRID, k = 0..GRID − 1
LOSS_TOLERANCE = 1e-9      # a realised loss within this of the claim holds it (float rounding of log e^ε)
ROUNDING = 3 * 2.0 ** -54  # the absolute part of δ (module docstring)
_RELATIVE = 4 * 2.0 ** -53  # the part of δ relative to f: exp, the sum and the quotient, an ulp or so each


def grid_probability(p):
    """P(U < p) for U = ``rng.random()``: ⌈p·2^53⌉/2^53, elementwise, exact in float64.

    Parameters
    ----------
    p : float or array of float in [0, 1]
        The probability a mechanism compares its uniform with.

    Returns
    -------
    ndarray
        The probability the draw realises: a multiple of 2^-53 (so 1 − p̃ is exact too).
    """
    p = np.asarray(p, dtype=float)
    # p·2^53 is exact (a power of two), ceil is exact, and the count ≤ 2^53 divides back exactly
    return np.minimum(np.ceil(p * GRID), GRID) / GRID


def keep_or_flip_matrix(keep, K):
    """The realised channel of "keep y if U < keep, else a uniform one of the K − 1 others".

    M̃[i, i] = p̃ = :func:`grid_probability` (keep), M̃[i, j] = (1 − p̃)/(K − 1): the other
    class is drawn by ``rng.integers``, which is exactly uniform (rejection sampling).
    """
    kept = float(grid_probability(keep))
    M = np.full((K, K), (1.0 - kept) / (K - 1))
    np.fill_diagonal(M, kept)
    return M


def worst_excess(rare, comparisons=1):
    """A bound on (realised − claimed loss) of ``comparisons`` draws whose rarer outcome has probability ``rare``.

    Δ(f) = ln(1 + δ/(1 − f)) − ln(1 − δ/f) per comparison, δ = 3·2^-54 + 4·2^-53·f (module
    docstring); ∞ where δ ≥ f (the outcome may round away altogether).
    """
    f = float(rare)
    delta = ROUNDING + _RELATIVE * f
    if not 0 < f <= 0.5 or delta >= f:
        return math.inf
    return comparisons * (math.log1p(delta / (1.0 - f)) - math.log1p(-delta / f))


def rare_probability(a):
    """1/(1 + e^a), the rarer outcome of a draw of log-odds a ≥ 0."""
    return 1.0 / (1.0 + math.exp(a))


def log_odds_cap(comparisons=1, tolerance=LOSS_TOLERANCE) -> float:
    """The largest log-odds a, floored to two decimals, with ``worst_excess(1/(1+e^a), comparisons)`` ≤ ``tolerance``.

    Δ increases with a (f decreases), so every a below the cap keeps the bound too.
    """
    lo, hi = 0.0, math.log(2.0 ** 52 - 1)  # the bound is finite at 0 and ∞ past the grid's edge
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if worst_excess(rare_probability(mid), comparisons) <= tolerance else (lo, mid)
    return math.floor(lo * 100) / 100


def cap_sweep(cap, width=2.0, points=4001) -> np.ndarray:
    """ε values in [cap − width, cap], the cap last: where the realised excess is largest below it.

    The realised excess depends on where p·2^53 falls between grid points, so it jumps
    about as ε moves; 2 units of ε cover a full grid step of the rarer probability even at
    the edge of the grid (f·2^53 ≈ 2), where one step moves a by ln(3/2).
    """
    return np.linspace(max(cap - width, cap / 2), cap, points)


# randomized response (K = 2 is the worst K: its flip probability is the smallest) and RRWithPrior
RR_EPSILON_LIMIT = log_odds_cap(1)
# RAPPOR and joint RAPPOR: bits y and y' each at log-odds ε/2
RAPPOR_EPSILON_LIMIT = 2 * log_odds_cap(2)
