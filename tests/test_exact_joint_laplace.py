"""The exact path of the full-LDP ratio (JointLaplace): its moments and risks against sampling and exact laws.

Statistical checks use α = 1e-6 (z = 4.89) and show that a planted error of
5 % would be rejected, so the standard errors are well below 1 % of the value.
"""

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from labeldp_sim.privacy.count_law import CountLaw
from labeldp_sim.privacy.protocols import laplace_sum
from labeldp_sim.papers.table1 import noisy_ratio
from labeldp_sim.papers.table1.estimators import CubeMean
from labeldp_sim.papers.table1.families import BoundedBump, HeavyTailBump
from labeldp_sim.papers.table1.mechanisms import JointLaplace
from labeldp_sim.papers.table1.noisy_ratio import floored_inverse_moments, floored_ratio_moments
from labeldp_sim.papers.table1.points import Point
from labeldp_sim.papers.table1.tuning import Column

Z = stats.norm.isf(0.5e-6)  # two-sided α = 1e-6
PLANTED = 1.05
SQRT_2PI = math.sqrt(2 * math.pi)


def agrees(samples, exact):
    """The mean of ``samples`` matches ``exact`` at α, and would not match exact · 1.05."""
    mean, se = samples.mean(), samples.std(ddof=1) / np.sqrt(len(samples))
    return abs(mean - exact) <= Z * se and abs(mean - PLANTED * exact) > Z * se


@pytest.mark.parametrize("N,mass,eps", [
    (10 ** 6, 1 / 512, 2.0),       # the floor binds a third of the time (f = 0.35 σ)
    (10 ** 6, 1 / 512, 30.0),      # it (almost) never binds (f = 5 σ)
    (10 ** 5, 5e-6, 1.0),          # n is 0 or 1: D is the floor or the noise
    (10 ** 9, 1e-3, 0.2),          # the count law's quadrature branch (Nμ = 10^6)
])
def test_moments_match_sampling(N, mass, eps):
    mech = JointLaplace(eps, 1.0)
    counts = CountLaw(N, mass)
    moments = floored_ratio_moments(counts, mech.count_scale * np.sqrt(2 * N), 0.5 * N * mass, N)
    rng = np.random.default_rng(7)
    n = rng.binomial(N, mass, size=400_000).astype(float)
    D = np.maximum(n + laplace_sum(np.full(len(n), N), mech.count_scale, rng), 0.5 * N * mass)
    for samples, exact in zip((n / D, n * (n - 1) / D ** 2, n / D ** 2, 1 / D ** 2), moments):
        if np.any(samples):  # E[n(n−1)/D²] is 0 where n ≤ 1
            assert agrees(samples, exact)
    # and the mechanism states them so (b0 = Var(Z_S) E[1/D²])
    stated = mech.cube_mean_moments(counts, N, mass, 1)
    assert (stated.a, stated.b2, stated.b1) == moments[:3]
    assert stated.b0 == pytest.approx(2 * N * (4 / eps) ** 2 * moments[3], rel=1e-12)


CASES = [  # (family, d, G_inst, G_est, T, ε): binding ε then non-binding ε
    (BoundedBump(d=1), 1, 8, 512, 1.0, 2.0), (BoundedBump(d=1), 1, 8, 512, 1.0, 30.0),
    (HeavyTailBump(d=1), 1, 8, 512, 1.5, 2.0), (HeavyTailBump(d=1), 1, 8, 512, 1.5, 30.0),
    (BoundedBump(d=2), 2, 4, 24, 1.0, 2.0), (BoundedBump(d=2), 2, 4, 24, 1.0, 40.0),
    (HeavyTailBump(d=2), 2, 4, 24, 1.5, 2.0), (HeavyTailBump(d=2), 2, 4, 24, 1.5, 40.0),
]


@pytest.mark.parametrize("family,d,G,G_est,T,eps", CASES)
def test_exact_risk_matches_trials(family, d, G, G_est, T, eps):
    N = 10 ** 6
    mech, estimator = JointLaplace(eps, T), CubeMean()
    assert estimator.exact_for(family, mech)
    point = Point("x", "N", d, N, eps, N, eps, G, 1 / G, True, G_est=G_est)
    exact = estimator.expected_risks(family, G, point, [Column(G_est, mech, 0, 0)])[0]
    rng = np.random.default_rng(G_est + int(eps))
    risks = np.array([estimator.trial(family.draw(rng, G), point, mech, rng, "sufficient")["excess_risk"]
                      for _ in range(250)])
    assert agrees(risks, exact)


def _laplace_sum_law(N):
    """Density and distribution function of a sum of N i.i.d. Lap(1), exactly (finite sums)."""
    j = np.arange(N)
    log_c = (special.gammaln(2 * N - 1 - j) + (j - 2 * N + 1) * np.log(2) - special.gammaln(N)
             - special.gammaln(j + 1) - special.gammaln(N - j))

    def density(z):
        x = abs(z)
        terms = log_c + j * np.log(x) if x > 0 else np.where(j == 0, log_c, -np.inf)
        return np.exp(special.logsumexp(terms) - x)

    def cdf(t):
        lower = np.sum(np.exp(log_c + special.gammaln(j + 1)) * special.gammaincc(j + 1, abs(t)))
        return lower if t <= 0 else 1 - lower

    return density, cdf


def _exact_inverse_moment(x, f, N, k):
    """E[max(x + Z, f)^-k], Z a sum of N Lap(1), by adaptive quadrature of the exact law."""
    density, cdf = _laplace_sum_law(N)
    sd, pieces = np.sqrt(2 * N), cdf(f - x) / f ** k
    edges = sorted({f, max(f, x), max(f, x) + 60 * np.sqrt(2 * N)})
    for a, b in zip(edges[:-1], edges[1:]):  # in log u: the weight u^-k varies on the scale u
        pieces += integrate.quad(lambda v: density(np.exp(v) - x) * np.exp((1 - k) * v), np.log(a), np.log(b),
                                 epsabs=0, epsrel=1e-12, limit=200)[0]
    return pieces, sd


@pytest.mark.parametrize("r0,c", [(0.3, 0.6), (1.0, 2.0), (0.01, 0.5)])
def test_series_against_the_exact_laplace_sum_law(r0, c):
    """At N = 100 the Edgeworth law is within 10^-6 of the exact one (the module docstring's table)."""
    N = 100
    for k in (1, 2):
        exact, sd = _exact_inverse_moment(c * np.sqrt(2 * N), r0 * np.sqrt(2 * N), N, k)
        series = floored_inverse_moments(np.array([c * sd]), sd, r0 * sd, N)[k - 1][0]
        assert series == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("r0", [1e-20, 1e-3, 0.3, 30.0])
def test_quadrature_against_adaptive_quadrature(r0):
    """The composite rule against scipy's quad on the normal law, from a floor at 10^-20 σ to 30 σ."""
    c = np.array([0.0, 0.05, 1.0, 3.0, 12.0, 1e3, r0, 2 * r0])
    m1, m2 = floored_inverse_moments(c, 1.0, r0)
    for k, got in ((1, m1), (2, m2)):
        for ci, g in zip(c, got):
            ref = special.ndtr(r0 - ci) / r0 ** k
            edges = sorted({r0, max(r0, 1.0), max(r0, ci - 12), max(r0, ci), ci + 12})
            for a, b in zip(edges[:-1], edges[1:]):
                if a < 1:  # below σ in log r: the weight r^-k varies on the scale r
                    ref += integrate.quad(lambda v: math.exp(-0.5 * (math.exp(v) - ci) ** 2 + (1 - k) * v),
                                          math.log(a), math.log(b), epsabs=0, epsrel=1e-13)[0] / SQRT_2PI
                elif b > a:
                    ref += integrate.quad(lambda r: math.exp(-0.5 * (r - ci) ** 2) * r ** -k, a, b,
                                          epsabs=0, epsrel=1e-13)[0] / SQRT_2PI
            assert g == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("N,mass,eps", [(10 ** 7, 1e-3, 1.0), (10 ** 7, 1e-3, 300.0)])
def test_window_interpolation_matches_every_count(N, mass, eps, monkeypatch):
    """Pruned, Chebyshev-interpolated counts (ε = 1) or refused interpolation (ε = 300) = every count evaluated."""
    sigma, f = 4 / eps * np.sqrt(2 * N), 0.5 * N * mass
    fast = floored_ratio_moments(CountLaw(N, mass), sigma, f, N)
    monkeypatch.setattr(noisy_ratio, "DIRECT", 10 ** 9)
    slow = floored_ratio_moments(CountLaw(N, mass), sigma, f, N)
    assert fast == pytest.approx(slow, rel=1e-10)
