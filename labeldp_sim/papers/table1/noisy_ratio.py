r"""Moments of a ratio with a floored noisy denominator: the cube estimate of the joint Laplace mechanism.

The full-LDP regression release (:class:`~.mechanisms.JointLaplace`; papers/000
cites the full-LDP rows of Table I from other papers, SPEC §2 names this
estimator) is, per cube, η̂ = (S + Z_S) / D with
D = max(n + Z, f): n ~ Bin(N, μ) the cube count, S the sum of its n clipped
labels, Z and Z_S sums of N i.i.d. Laplace variables (every user adds noise to
every cube), independent of each other and of the data, and f > 0 the floor.
Given n and Z the labels are i.i.d., so with c = Clip(Y, T)

    E[η̂]  = E[n/D] E c,
    E[η̂²] = E[n(n−1)/D²] (E c)² + E[n/D²] E c² + Var(Z_S) E[1/D²],

the outer expectations over n and Z.  This module computes
g_k(x) = E[max(x + Z, f)^(−k)], k = 1, 2, and their averages over the count law.

**The law of Z.**  Z/σ, σ² = Var Z, is a standardised sum of N symmetric
Laplace variables: its cumulants are λ4 = 3/N, λ6 = 30/N², odd ones 0.  Its
density is taken as the Edgeworth series to order N^(−2),

    p(w) = φ(w) [1 + λ4/24 He4(w) + λ6/720 He6(w) + λ4²/1152 He8(w)],

whose neglected terms are O(N^(−3)).  Against the exact law of the Laplace sum
(the density e^(−|z|) Σ_j (2N−2−j)! 2^j |z|^j / (2^(2N−1) (N−1)! j! (N−1−j)!)),
the largest relative error of g_1, g_2 over floors f/σ ∈ [10^-4, 4] and counts
x ∈ [f/2, 4f] or x ≤ σ is 2·10^-4, 2.2·10^-7, 2.3·10^-10 at N = 10, 100, 1000,
falling as N^-3 (the plain normal law: 3.8·10^-2, 3.8·10^-3, 3.8·10^-4, as 1/N).
Deep tails (x − f ≳ 3σ with x/f ≫ 1: a cube count far above its mean, of
negligible binomial weight) are matched less well, because g_2 is then
dominated by P(Z < f − x)/f², a tail the series only approximates: 3·10^-6
relative at N = 1000, x/f = 3·10^6.  The sweeps have N ≥ 10^3.

**The integral over Z** (:func:`floored_inverse_moments`), in units of σ
(c = x/σ, r0 = f/σ):  g_k σ^k = F(r0 − c) r0^(−k) + ∫_{r0}^{∞} p(r − c) r^(−k) dr, split at
the kink r = r0 of max(·, f); F, the series' distribution function, is closed
form.  The integral is taken over r ≤ c + 10 (the law's upper tail beyond holds
< 10^-20 of it) and r ∉ (2, c − 10) (there p(r − c) r^(−k) is log-concave, so
that piece is below its endpoint values over their log-slopes: < 10^-20 of
the total) by composite Gauss–Legendre rules of ``NODES`` = 8 nodes per panel: in log r on
[r0, 0.1] (panels of width 3) and [0.1, 2] (6 panels), where r^(−k) varies
geometrically, and in r on [max(2, c − 10), c + 10] (10 panels of width ≤ 2),
where the Gaussian sets the scale.  Checked against adaptive quadrature
(scipy ``quad``, relative tolerance 10^-13) over r0 ∈ [10^-20, 10^4],
c ∈ [0, 10^6]: relative error < 10^-11.

**The average over n** (:func:`floored_ratio_moments`) goes through
:meth:`~labeldp_sim.privacy.count_law.CountLaw.expect`.  On its summation branch,
counts whose binomial probability is below 10^-30 of the mode's are dropped
(a relative change < 10^-20: the summands grow at most as n²/f² across the
window), and where more than
``DIRECT`` remain, g_k is interpolated in n by a Chebyshev series of
``CHEBYSHEV`` terms on their range.  g_k is the convolution of a function of
n with the law of Z, smooth on the scale σ, so the series converges fast where σ
is not small against the range; it is used only when its last four
coefficients are below 10^-14 of the first, and g_k is evaluated at every
count otherwise.  On the quadrature branch (Nμ ≥ 62,500) g_k is smooth on the
scale of n's standard deviation √(Nμ(1−μ)): its kink is smoothed over σ, or
lies (1 − floor_fraction)·√(Nμ) ≥ 10 standard deviations below Nμ when
floor_fraction ≤ 0.96 (the default is 0.5), so the count law's own error
statement holds.  One call costs ≲ 4 ms (N ∈ [10^3, 10^15], μ ∈ [10^-9, 1]).
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import chebyshev, legendre
from scipy import special, stats

__all__ = ["edgeworth_coefficients", "floored_inverse_moments", "floored_ratio_moments"]

NODES = 8          # Gauss–Legendre nodes per panel
TAIL = 10.0        # standard deviations of Z integrated on each side of x
TOP = 2.0          # r = (x + Z)/σ below which the panels are geometric
MID = 0.1          # fine geometric panels on [MID, TOP], coarse ones below
FINE = 6           # panels on [MID, TOP]: width log(20)/6 ≈ 0.5 in log r
COARSE = 3.0       # width in log r of a coarse panel
UNIFORM = 10       # panels on [c − TAIL, c + TAIL]
DIRECT = 64        # counts evaluated one by one; more are interpolated
CHEBYSHEV = 48     # terms of the interpolating series
PRUNE = 69.0       # log(10^30): counts this much less likely than the mode are dropped

_X, _W = legendre.leggauss(NODES)
_SQRT_2PI = np.sqrt(2 * np.pi)


def edgeworth_coefficients(n_terms) -> tuple:
    """(λ4/24, λ6/720, λ4²/1152) for a sum of ``n_terms`` symmetric Laplace variables (None: the normal law)."""
    if n_terms is None:
        return 0.0, 0.0, 0.0
    N = float(n_terms)
    return 1 / (8 * N), 1 / (24 * N ** 2), 1 / (128 * N ** 2)


def _density(w, e):
    """The Edgeworth density: φ(w) times a polynomial in w² (He4, He6, He8 expanded)."""
    e4, e6, e8 = e
    u = w * w
    poly = (1 + 3 * e4 - 15 * e6 + 105 * e8) + u * ((-6 * e4 + 45 * e6 - 420 * e8) + u * (
        (e4 - 15 * e6 + 210 * e8) + u * ((e6 - 28 * e8) + u * e8)))
    return np.exp(-0.5 * u) / _SQRT_2PI * poly


def _cdf(t, e):
    """Its distribution function: Φ(t) − φ(t)(λ4/24 He3 + λ6/720 He5 + λ4²/1152 He7)(t)."""
    e4, e6, e8 = e
    u = t * t
    poly = (-3 * e4 + 15 * e6 - 105 * e8) + u * ((e4 - 10 * e6 + 105 * e8) + u * ((e6 - 21 * e8) + u * e8))
    return special.ndtr(t) - np.exp(-0.5 * u) / _SQRT_2PI * t * poly


def _panels(a, b, panels):
    """Nodes and weights of ``panels`` equal Gauss–Legendre panels on [a, b] (column arrays): (n, panels·NODES)."""
    t = ((np.arange(panels)[:, None] + (_X[None, :] + 1) / 2).ravel() / panels)[None, :]
    return a + (b - a) * t, (b - a) * np.tile(_W, panels)[None, :] / (2 * panels)


def _scaled_moments(c, r0, e):
    """σ^k g_k for counts c = x/σ and floor r0 = f/σ (module docstring), k = 1, 2."""
    c = c[:, None]
    lower = _cdf(r0 - c[:, 0], e)
    m1, m2 = lower / r0, lower / r0 ** 2
    top = np.maximum(r0, np.minimum(TOP, c + TAIL))  # where the geometric panels end
    pieces = []
    if r0 < MID:
        pieces.append((np.full_like(c, r0), np.maximum(r0, np.minimum(MID, top)),
                       max(1, int(np.ceil(np.log(MID / r0) / COARSE)))))
    if r0 < TOP:
        pieces.append((np.maximum(r0, np.minimum(MID, top)), top, FINE))
    for lo, hi, panels in pieces:
        v, w = _panels(np.log(lo), np.log(hi), panels)
        r = np.exp(v)
        p = _density(r - c, e) * w  # dr = r dv
        m1 = m1 + p.sum(axis=1)
        m2 = m2 + (p / r).sum(axis=1)
    lo = np.maximum(top, c - TAIL)
    r, w = _panels(lo, np.maximum(lo, c + TAIL), UNIFORM)
    p = _density(r - c, e) * w / r
    return m1 + p.sum(axis=1), m2 + (p / r).sum(axis=1)


def floored_inverse_moments(x, sigma: float, floor: float, n_terms=None):
    """(E[1/D], E[1/D²]) with D = max(x + Z, floor), for each count in ``x``.

    Parameters
    ----------
    x : array of float
        Counts (≥ 0).
    sigma : float > 0
        The standard deviation of Z.
    floor : float > 0
    n_terms : int or None
        The number of Laplace variables Z sums (its Edgeworth series, module
        docstring); None takes Z normal.
    """
    x = np.asarray(x, dtype=float)
    m1, m2 = _scaled_moments(x.ravel() / sigma, floor / sigma, edgeworth_coefficients(n_terms))
    return (m1 / sigma).reshape(x.shape), (m2 / sigma ** 2).reshape(x.shape)


def _on_counts(n, counts, evaluate):
    """(g1, g2) at the counts ``n`` the count law sums over: pruned and interpolated (module docstring)."""
    if not counts.summed or len(n) <= DIRECT:
        return evaluate(n)
    logp = stats.binom.logpmf(n, counts.N, counts.mass)
    keep = np.flatnonzero(logp > logp.max() - PRUNE)
    g1, g2 = np.zeros(len(n)), np.zeros(len(n))
    lo, hi = n[keep[0]], n[keep[-1]]
    kept = slice(keep[0], keep[-1] + 1)  # the pmf is unimodal: the kept counts are contiguous
    if len(keep) > DIRECT:
        nodes = 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.pi * (np.arange(CHEBYSHEV) + 0.5) / CHEBYSHEV)
        series = [chebyshev.chebfit((nodes - lo) / (hi - lo) * 2 - 1, g, CHEBYSHEV - 1) for g in evaluate(nodes)]
        if all(np.max(np.abs(s[-4:])) <= 1e-14 * abs(s[0]) for s in series):
            t = (n[kept] - lo) / (hi - lo) * 2 - 1
            g1[kept], g2[kept] = (chebyshev.chebval(t, s) for s in series)
            return g1, g2
    g1[kept], g2[kept] = evaluate(n[kept])
    return g1, g2


def floored_ratio_moments(counts, sigma: float, floor: float, n_terms=None) -> tuple:
    """(E[n/D], E[n(n−1)/D²], E[n/D²], E[1/D²]) with D = max(n + Z, floor), n from ``counts``.

    Parameters
    ----------
    counts : :class:`~labeldp_sim.privacy.count_law.CountLaw`
        The law of n.
    sigma, floor, n_terms
        As in :func:`floored_inverse_moments`.
    """
    if not (np.isfinite(sigma) and sigma > 0 and np.isfinite(floor) and floor > 0):
        raise ValueError(f"floored_ratio_moments needs sigma > 0 and floor > 0 (got {sigma}, {floor})")
    held = {}

    def g(n):
        key = (len(n), float(n[0]), float(n[-1]))
        if key not in held:  # the four moments share one evaluation
            held[key] = _on_counts(n, counts, lambda x: floored_inverse_moments(x, sigma, floor, n_terms))
        return held[key]

    return (counts.expect(lambda n: n * g(n)[0]), counts.expect(lambda n: n * (n - 1) * g(n)[1]),
            counts.expect(lambda n: n * g(n)[1]), counts.expect(lambda n: g(n)[1]))
