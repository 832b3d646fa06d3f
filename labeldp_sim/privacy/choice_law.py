r"""The choice between two classes that a noisy count difference drives, in law (exact risks, SPEC §5a).

A cube classifier with K = 2 releases class 1 or class 0 from a statistic
whose difference Δ = S_1 − S_0 is, for every mechanism of Table I, a sum of
N i.i.d. steps V_i ∈ {−1, 0, +1} (each of the N users moves it by one at most):

    P(V = ±1) = (rate ± drift)/2,  drift = gain · tilt,

``tilt`` = P(X ∈ B, Y = 1) − P(X ∈ B, Y = 0), the difference of the two
classes' masses in the cube.  The mechanism states N, rate, gain
(:class:`ChoiceLaw`) and how Δ picks the class: the argmax with uniform ties,
P(class 1 | Δ) = 1{Δ > 0} + ½ 1{Δ = 0}, or the exponential mechanism's
softmax σ(ε' Δ).  Either way P(class 1) = ½ (1 + Ψ(tilt)) with
Ψ = E ψ(Δ), ψ odd: sign(Δ) (0 at a tie) or tanh(c Δ), c = ε'/2.

Ψ is computed from the characteristic function φ(t) = (1 − rate + rate cos t
+ i·drift·sin t)^N.  For an odd ψ on the integers with sine kernel K,
ψ(k) = (1/π) ∫_0^π sin(k t) K(t) dt, so

    Ψ = (1/π) ∫_0^π Im φ(t) K(t) dt,
    K(t) = cot(t/2)                                   (sign),
    K(t) = (π/c) Σ_m csch(π (t + 2πm) / (2c))          (tanh(c·), Poisson summation)
         = cot(t/2) − 4 Σ_{j ≥ 1} sin(j t) / (e^{2cj} + 1).

Branches (:func:`choice_bias`), each with its error stated:

* **saturated** — Bernstein's inequality bounds 1 − Ψ by ``SATURATED`` = 1e-16:
  Ψ = 1 to double precision;
* **exact** — the law of Δ by an FFT of φ on n ≥ 2 k_max + 1 points, where
  |Δ| ≤ #{V ≠ 0} ~ Bin(N, rate) exceeds k_max = N·rate + 40 √(N·rate) + 200
  with probability below e^-300 (Bernstein): exact up to that aliasing and
  float64 rounding (~1e-14), used while k_max ≤ ``EXACT_MAX``;
* **taylor** (tanh, c·sd(Δ) ≤ 1e-3) — E tanh(cΔ) expanded to fourth order
  about c·E Δ with the exact cumulants of Δ; remainder below 1e-15;
* **fourier** — the integral above by Gauss–Legendre panels (16 nodes) over
  the t where |φ(t)|^N > e^-45 (found in closed form: |φ|² = 1 − x B(x),
  x = 1 − cos t, a concave quadratic in x), panel widths ≤ 2 rad of the phase
  N·arg φ, ≤ 2.5 decay scales of |φ|^N and ≤ 2c for the tanh kernel (its poles
  are at ±2ic); no count is too large (N up to 10^18).
  Its error is checked against the exact branch where both apply
  (tests/test_exact_classification.py: below 1e-12).

The module is paper-free: the mechanisms (``argmax_choice_law``) state their law here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.polynomial import polynomial as npoly

__all__ = ["ChoiceLaw", "choice_bias", "SATURATED", "EXACT_MAX"]

SATURATED = 1e-16      # 1 − Ψ below this is Ψ = 1
EXACT_MAX = 2048       # k_max of the exact (FFT) branch
LOG_CUT = 45.0         # |φ|^N below e^-45 is left out of the integral
GL_NODES = 16
PHASE_PER_PANEL = 2.0  # radians of N·arg φ per panel
MAX_PANELS = 1 << 14
TAYLOR_MAX = 1e-3      # c·sd(Δ) of the tanh Taylor branch
_CHUNK = 256           # tilts per block of the FFT and quadrature branches
_GAUSS = np.polynomial.legendre.leggauss(GL_NODES)


class ChoiceLaw(NamedTuple):
    r"""How a mechanism's per-cube statistic chooses between two classes (module docstring).

    Attributes
    ----------
    N : int
        Steps: the users whose report can move Δ = S_1 − S_0.
    rate : float
        P(V ≠ 0) of one step.
    gain : float
        E V = gain · tilt.
    weight : float or None
        None: the argmax with uniform ties; ε' > 0: the softmax exp(ε' S_j).
    """

    N: int
    rate: float
    gain: float
    weight: float | None = None

    def bias(self, tilt, method: str = "auto") -> np.ndarray:
        """Ψ(tilt) = P(class 1) − P(class 0) (:func:`choice_bias`)."""
        return choice_bias(self, tilt, method)

    def probability(self, tilt, method: str = "auto") -> np.ndarray:
        """P(the released class is class 1) = ½ (1 + Ψ(tilt))."""
        return 0.5 * (1.0 + choice_bias(self, tilt, method))


def _log_phi(N, s, u, t):
    """N log φ(t) for the step law, accurate for t → 0 (a complex log1p)."""
    half = np.sin(0.5 * t)
    re = -2.0 * s * half ** 2                     # A − 1 = −s (1 − cos t)
    im = u * np.sin(t)
    with np.errstate(divide="ignore"):  # |φ| = 0 (rate 1, t = π/2... ): log 0 = −inf, φ = 0
        real = 0.5 * np.log1p(2.0 * re + re ** 2 + im ** 2)
    return N * real + 1j * N * np.arctan2(im, 1.0 + re)


def _bernstein(y, variance, N):
    """exp(−y² / (2 (N·variance + 2y/3))): P(Σ(V − EV) ≤ −y), |V − EV| ≤ 2."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.exp(-y ** 2 / (2.0 * (N * variance + 2.0 * y / 3.0)))


def _sign_kernel(t):
    return 1.0 / np.tan(0.5 * t)


def _tanh_kernel(c):
    """K_c(t) for tanh(c·) on the integers (module docstring): csch sum (c ≤ 1) or the cot form."""
    if c > 1.0:
        j = np.arange(1, int(np.ceil(25.0 / c)) + 1)
        coef = 4.0 / (np.exp(2.0 * c * j) + 1.0)

        def kernel(t):
            return 1.0 / np.tan(0.5 * t) - np.sin(np.multiply.outer(t, j)) @ coef
        return kernel
    m = np.arange(-int(np.ceil(60.0 * c / np.pi ** 2)) - 1, int(np.ceil(60.0 * c / np.pi ** 2)) + 2)

    def kernel(t):
        y = np.pi * np.add.outer(t, 2 * np.pi * m) / (2.0 * c)
        a = np.minimum(np.abs(y), 700.0)
        csch = np.sign(y) * 2.0 * np.exp(-a) / -np.expm1(-2.0 * a)
        return (np.pi / c) * csch.sum(axis=-1)
    return kernel


def choice_bias(law: ChoiceLaw, tilt, method: str = "auto") -> np.ndarray:
    """Ψ = E ψ(Δ) for each tilt (array), ψ = sign or tanh(ε'Δ/2) (module docstring).

    ``method``: "auto" picks the branch; "exact", "fourier" and "taylor" force
    one where it applies (the tests compare them).
    """
    tilt = np.asarray(tilt, dtype=float)
    u = law.gain * np.abs(tilt).ravel()
    N, s = int(law.N), float(law.rate)
    c = None if law.weight is None else 0.5 * float(law.weight)
    out = np.zeros_like(u)
    variance = np.maximum(s - u ** 2, 0.0)
    mean = N * u
    if c is None:
        tail = 2.0 * _bernstein(mean, variance, N)
    else:
        tail = 2.0 * _bernstein(0.5 * mean, variance, N) + 2.0 * np.exp(-c * mean)
    live = (u > 0) & ~((tail <= SATURATED) if method == "auto" else np.zeros_like(u, dtype=bool))
    out[(u > 0) & ~live] = 1.0
    k_max = int(min(N, np.ceil(N * s + 40.0 * np.sqrt(N * s) + 200.0)))
    idx = np.flatnonzero(live)
    if method == "exact" or (method == "auto" and k_max <= EXACT_MAX):
        out[idx] = _exact(N, s, u[idx], c, k_max)
    else:
        taylor = np.zeros(len(idx), dtype=bool)
        if c is not None and method in ("auto", "taylor"):
            taylor = c * np.sqrt(N * variance[idx]) <= TAYLOR_MAX
            if method == "taylor" and not taylor.all():
                raise ValueError("the Taylor branch needs c·sd(Δ) <= 1e-3 for every tilt")
        if taylor.any():
            out[idx[taylor]] = _taylor(N, s, u[idx[taylor]], c)
        out[idx[~taylor]] = _fourier(N, s, u[idx[~taylor]], c)
    return (np.sign(tilt).ravel() * out).reshape(tilt.shape)


def _exact(N, s, u, c, k_max):
    """E ψ(Δ) from the law of Δ by an FFT of φ (exact up to an e^-300 aliasing)."""
    n = 1 << int(np.ceil(np.log2(2 * k_max + 2)))
    t = 2.0 * np.pi * np.arange(n) / n
    k = np.concatenate([np.arange(0, n // 2), np.arange(-n // 2, 0)])
    psi = np.sign(k).astype(float) if c is None else np.tanh(c * k)
    out = np.empty(len(u))
    for start in range(0, len(u), _CHUNK):
        block = u[start:start + _CHUNK]
        phi = np.exp(_log_phi(N, s, block[:, None], t[None, :]))
        pmf = np.fft.fft(phi, axis=1).real / n  # φ(−t) = conj φ(t): the law is real
        out[start:start + _CHUNK] = pmf @ psi
    return out


_TANH_DERIVATIVES = [np.array([0.0, 1.0])]
for _ in range(4):
    _TANH_DERIVATIVES.append(npoly.polymul(npoly.polyder(_TANH_DERIVATIVES[-1]), [1.0, 0.0, -1.0]))


def _taylor(N, s, u, c):
    """E tanh(cΔ) to fourth order about c·EΔ, with Δ's cumulants (N κ_j of one step)."""
    k2 = s - u ** 2
    k3 = u - 3 * u * s + 2 * u ** 3
    k4 = s - 4 * u ** 2 - 3 * s ** 2 + 12 * u ** 2 * s - 6 * u ** 4
    moments = [1.0, 0.0, N * k2, N * k3, N * k4 + 3 * (N * k2) ** 2]
    T = np.tanh(c * N * u)
    total = np.zeros_like(u)
    fact = 1.0
    for j, poly in enumerate(_TANH_DERIVATIVES):
        fact *= max(j, 1)
        total += npoly.polyval(T, poly) * c ** j * moments[j] / fact
    return total


def _live_intervals(N, s, u_max):
    """The t ∈ [0, π] where |φ(t)|^N can exceed e^-LOG_CUT, for every drift up to u_max.

    |φ|² = 1 − x B(x), x = 1 − cos t, B(x) = 2(s − u²) − x(s² − u²): x B(x) is a
    concave quadratic, so |φ| falls then rises and the set is [0, t1] ∪ [t2, π].
    A larger drift only raises |φ|, so u_max bounds them all.
    """
    beta = -np.expm1(-2.0 * LOG_CUT / N)  # 1 − |φ|² at the cut
    a2, a1 = s ** 2 - u_max ** 2, 2.0 * (s - u_max ** 2)
    # roots of a2 x² − a1 x + beta = 0 in [0, 2]
    disc = a1 ** 2 - 4.0 * a2 * beta
    if disc <= 0 or a1 <= 0:
        return [(0.0, np.pi)]
    root = np.sqrt(disc)
    x1 = 2.0 * beta / (a1 + root)
    x2 = (a1 + root) / (2.0 * a2) if a2 > 0 else np.inf
    if x1 >= 2.0:
        return [(0.0, np.pi)]
    t1 = _angle(x1)
    if x2 >= 2.0:
        return [(0.0, t1)]
    return [(0.0, t1), (_angle(x2), np.pi)]


def _angle(x):
    """t ∈ [0, π] with 1 − cos t = x, as 2 arcsin √(x/2): arccos(1 − x) loses x below 2^-53 to the
    rounding of 1 − x (x1 ~ 45/(N rate) reaches it at N·rate ≈ 10^18, which gave t1 = 0: no live interval)."""
    return float(2.0 * np.arcsin(np.sqrt(0.5 * x)))


def _phase_variation(N, s, a, b):
    """N ∫_a^b |d/dt (sin t / A(t))| dt, A = 1 − s(1 − cos t): the phase N·arg φ varies by at most
    u times this (d/dt atan(u f) = u f'/(1 + u² f²)); infinite where A changes sign in [a, b]."""
    t = np.linspace(a, b, 4097)
    A = 1.0 - 2.0 * s * np.sin(0.5 * t) ** 2
    if A.min() * A.max() <= 0:
        return np.inf
    return float(N * np.abs(np.diff(np.sin(t) / A)).sum())


def _fourier(N, s, u, c):
    """(1/π) ∫_0^π Im φ(t) K(t) dt by Gauss–Legendre panels (module docstring)."""
    if len(u) == 0:
        return np.zeros(0)
    kernel = _sign_kernel if c is None else _tanh_kernel(c)
    intervals = _live_intervals(N, s, float(u.max()))
    if c is not None:  # K_c(t) < (2π/c) e^{−πt/(2c)}: nothing beyond t_K
        t_K = 2.0 * c / np.pi * (np.log(2.0 * np.pi / c) + LOG_CUT + 5.0)
        intervals = [(a, min(b, t_K)) for a, b in intervals if a < t_K]
    x, w = _GAUSS
    out = np.zeros(len(u))
    # |φ|^N falls like exp(−N (s − u²) t²/2) near t = 0: panels of at most 2.5 of its scales
    decay = np.sqrt(N * max(s - float(u.max()) ** 2, 1e-300))
    for a, b in intervals:
        span = b - a
        panels = np.maximum(np.ceil(u * _phase_variation(N, s, a, b) / PHASE_PER_PANEL),
                            max(4.0, np.ceil(span * decay / 2.5)))
        if c is not None:  # K_c has poles at t = ±2ic: panels of width 2c keep them 2 half-widths away
            panels = np.maximum(panels, np.ceil(span / (2.0 * c)))
        groups = 2.0 ** np.ceil(np.log2(np.minimum(panels, MAX_PANELS)))
        for g in np.unique(groups):
            sel = np.flatnonzero(groups == g)
            edges = a + span * np.arange(int(g) + 1) / g
            mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * (edges[1:] - edges[:-1])
            t = (mid[:, None] + half[:, None] * x[None, :]).ravel()
            wt = (half[:, None] * w[None, :]).ravel() * kernel(t) / np.pi
            for start in range(0, len(sel), _CHUNK):
                rows = sel[start:start + _CHUNK]
                out[rows] += np.exp(_log_phi(N, s, u[rows, None], t[None, :])).imag @ wt
    return out
