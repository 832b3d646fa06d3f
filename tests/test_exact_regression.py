"""The exact path of the cube mean (SPEC §5a, issue 20): expected risks against Monte Carlo.

For every mechanism that states its cube-mean moments, the Monte-Carlo mean of
the sufficient-statistic trials (fresh signs, data and noise per replicate)
agrees with :meth:`CubeMean.expected_risks` at α = 1e-6, and the same test
rejects the exact value scaled by 1.05 (a planted 5 % error): the test has the
power to see an error of that size.
"""

import numpy as np
import pytest
from scipy import stats

from labeldp_sim.privacy.count_law import CountLaw
from labeldp_sim.privacy.protocols import NoPrivacy
from labeldp_sim.papers.table1.estimators import CubeMean
from labeldp_sim.papers.table1.families import BoundedBump, HeavyTailBump
from labeldp_sim.papers.table1.families.geometry import full_bump_geometry, cos2_overlap_square_sum
from labeldp_sim.papers.table1.mechanisms import JointLaplace, LaplaceCubeMean, LaplaceCubeMeanFull, LaplaceLabel
from labeldp_sim.papers.table1.points import Point
from labeldp_sim.papers.table1.tuning import Column

Z = stats.norm.isf(0.5e-6)  # two-sided α = 1e-6

MECHANISMS = {
    "none": lambda T: NoPrivacy(),
    "laplace": lambda T: LaplaceLabel(1.0, T),
    "laplace_cube": lambda T: LaplaceCubeMean(0.5, T),
    "laplace_cube_full": lambda T: LaplaceCubeMeanFull(8.0, T),  # noise below the bias
}
# enough bumps and cubes that one trial's risk spreads little: 1 % of the mean needs few replicates
FAMILIES = {"bounded": (BoundedBump(d=2), 1.0, 12, 16), "heavy": (HeavyTailBump(d=2), 1.5, 12, 8)}


def _monte_carlo(family, G, point, mech, reps, seed):
    rng = np.random.default_rng(seed)
    est = CubeMean()
    risks = [est.trial(family.draw(rng, G), point, mech, rng, "sufficient")["excess_risk"] for _ in range(reps)]
    return np.mean(risks), np.std(risks, ddof=1) / np.sqrt(reps)


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_monte_carlo_agrees_with_the_exact_risk_and_sees_a_5_percent_error(family, mechanism):
    fam, T, G, G_est = FAMILIES[family]
    mech = MECHANISMS[mechanism](T)
    N = 3000
    point = Point("x", "N", fam.d, N, 1.0, N, 1.0, G, 1 / G, True, G_est=G_est)
    exact = CubeMean().expected_risks(fam, G, point, [Column(G_est, mech, 0, 0)])[0]
    mean, se = _monte_carlo(fam, G, point, mech, 400, seed=7)
    assert abs(mean - exact) <= Z * se, (mean, se, exact)
    assert abs(mean - 1.05 * exact) > Z * se, (mean, se, exact)


def test_joint_laplace_has_no_exact_path_where_it_states_no_moments():
    est, fam = CubeMean(), BoundedBump(d=1)
    assert est.exact_for(fam, LaplaceLabel(1.0, 1.0))
    assert est.exact_for(fam, JointLaplace(1.0, 1.0)) == callable(getattr(JointLaplace, "cube_mean_moments", None))


@pytest.mark.parametrize("G,G_est", [(3, 5), (8, 12), (100, 37), (1, 9), (9, 1), (7, 7)])
def test_one_axis_overlap_sum_is_the_sparse_geometry(G, G_est):
    W = full_bump_geometry(1, G, G_est, 1)
    # the same integrals summed in another order: agreement to float64 rounding of ~G + G_est terms
    assert cos2_overlap_square_sum(G, G_est) == pytest.approx(W.multiply(W).sum(), rel=1e-12)
    W2 = full_bump_geometry(2, G, G_est, 1)
    assert cos2_overlap_square_sum(G, G_est) ** 2 == pytest.approx(W2.multiply(W2).sum(), rel=1e-12)


@pytest.mark.parametrize("N,mass", [(50, 0.1), (10 ** 6, 0.3), (10 ** 9, 0.5), (10 ** 12, 1e-3)])
def test_count_law_inverse_moments(N, mass):
    law = CountLaw(N, mass)
    lam, q = N * mass, 1 - mass
    if law.summed:  # the window sum against scipy's binomial law on its whole support
        n = np.arange(1, N + 1)
        pmf = stats.binom.pmf(n, N, mass)
        assert law.inverse == pytest.approx(np.sum(pmf / n), rel=1e-12)
        assert law.inverse_square == pytest.approx(np.sum(pmf / n ** 2), rel=1e-12)
    else:  # the quadrature branch against the delta-method series 1/λ (1 + q/λ + ...), error O(λ^-2)
        assert law.inverse == pytest.approx((1 + q / lam) / lam, rel=10 / lam ** 2)
        assert law.inverse_square == pytest.approx((1 + 3 * q / lam) / lam ** 2, rel=30 / lam ** 2)


def test_count_law_branches_meet():
    """Either side of the switch (variance ≈ 61,900) the two branches give the same E[1/n] to 1e-9."""
    lo, hi = CountLaw(4 * 61_000, 0.5), CountLaw(4 * 63_000, 0.5)
    assert lo.summed and not hi.summed
    for law in (lo, hi):
        assert law.inverse * law.mean == pytest.approx(1 + 0.5 / law.mean + 3 * 0.25 / law.mean ** 2, rel=1e-9)
