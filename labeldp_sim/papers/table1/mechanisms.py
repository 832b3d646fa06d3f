"""Table I mechanisms (papers/000): label-LDP, label-CDP, full LDP and full CDP, eqs. (11)-(34).

Each mechanism subclasses one protocol of :mod:`labeldp_sim.privacy.protocols`,
clips and adds noise in one method, and says in its docstring why it is ε-DP.
Inputs are checked at the protocol's boundary (``report``, or the
:class:`~labeldp_sim.privacy.protocols.CubeData` a central release reads) before
any of that happens.

These are simulation mechanisms, not for releasing real data: they draw from the
papers' laws in floating point.  Floating-point Laplace noise leaks through its
low-order bits (Mironov 2012), and RAPPOR's bits and the exponential mechanism's
Gumbel-max draw compare float64 uniforms (a grid of 2^-53) with their
probabilities.  The audit measures the low-bit leak and reports it as a known,
stated limitation (docs/audit.md, "Privacy: threat model and what the audit covers").

To add a mechanism: subclass a protocol, implement its abstract methods, state
``privacy``/``tasks`` and the proof, declare ``parameters`` (its keyword parameters
and what each accepts) and ``audit_cases`` (what the privacy audit runs for it: the
recipes here are in :mod:`labeldp_sim.papers.table1.audit`, a new class may state its own
inline); add ``conf/table1/mechanism/<name>.yaml``.  The audit and the tests iterate the
registries and the configs (``tests/test_paths.py`` runs both paths of every config),
so nothing else is edited.
"""

from __future__ import annotations

import numpy as np

from labeldp_sim.privacy.choice_law import ChoiceLaw
from labeldp_sim.harness.components import Interval, Nullable
from labeldp_sim.harness.errors import check
from labeldp_sim.harness.memory import Need
from labeldp_sim.privacy.protocols import (FULL_CENTRAL, FULL_LOCAL, LABEL_CENTRAL, LABEL_LOCAL, LOG_ODDS_LIMIT,
                                 CentralMechanism, CubeMeanMoments, CubeSumMechanism, NoisyLabel, require_K,
                                 check_cells, mean_of_n_labels,
                                 audit_recipe, check_classes, epsilon_parameter, laplace_sum, noise_scale, shown)
from labeldp_sim.privacy.grid import RAPPOR_EPSILON_LIMIT
from labeldp_sim.privacy.rappor import RAPPOR, RAPPOR_LIMIT, bit_report_needs
from labeldp_sim.papers.table1.noisy_ratio import floored_ratio_moments

__all__ = ["RAPPOR", "JointRAPPOR", "ExponentialMechanism", "ExponentialMechanismFull", "LaplaceLabel",
           "LaplaceCubeMean", "LaplaceCubeMeanFull", "JointLaplace"]

# the parameters several mechanisms declare
CHUNK = Interval(int, 1, None, note="reports per block")
# T comes from the experiment (the config's T, 'theory' or a number, times T_scale), never NaN or inf
CLIP_LEVEL = Interval(float, 0, None, closed="neither", note="the clipping level")
AUDIT = "labeldp_sim.papers.table1.audit"  # the recipes of these classes (imported by the audit only)

# --------------------------------------------------------------------------- classification


class JointRAPPOR(CubeSumMechanism):
    r"""RAPPOR on the joint one-hot of (cube, label): ε-LDP for features and label.

    The report is a bit vector over all C·K (cube, class) pairs, with
    P(bit = 1) = p = e^(ε/2)/(e^(ε/2)+1) at the sample's own pair and
    q = 1/(e^(ε/2)+1) elsewhere.

    Privacy: two inputs (x, y), (x', y') map to one-hot vectors that differ in
    at most two positions; as in (15) each changes the output's probability by
    a factor at most e^(ε/2), so the ratio is at most e^ε for any change of
    features and label.

    The estimator sums reports per pair, S_lj = Σ_i Z_i(l, j): every user
    adds noise to every cube, so the noise per cube is ~ √N/ε.  Debiasing
    (S − Nq)/(p − q) is affine with the same offset in every pair, so the
    cube argmax is unchanged by it.

    Sufficient statistic: S_lj = Bin(n_lj, p) + Bin(N − n_lj, q).

    ε ≤ RAPPOR_EPSILON_LIMIT = 29.82, as for RAPPOR: the bits are drawn the same way
    (U < p at the own pair, U < q elsewhere, U on the 2^-53 grid), and two bits differ
    between neighbours.

    Simulation mechanism, not for releasing real data (module docstring).
    """

    name = "joint_rappor"
    privacy = FULL_LOCAL
    needs_cells = True
    exact_choice = True
    max_epsilon = RAPPOR_EPSILON_LIMIT
    epsilon_limit = RAPPOR_LIMIT
    parameters = {"epsilon": epsilon_parameter(max_epsilon, epsilon_limit), "chunk": CHUNK}
    audit_cases = audit_recipe(AUDIT, "joint_rappor_audit")

    def __init__(self, epsilon, chunk=4096):
        super().__init__(epsilon)
        e = np.exp(self.epsilon / 2)
        self.p, self.q = e / (e + 1), 1 / (e + 1)
        self.check_parameters(chunk=chunk)
        self.chunk = int(chunk)  # N × C·K bits are never held at once

    def trial_needs(self, size) -> list:
        """A per-sample trial holds ``chunk`` reports of cubes × K bits and their uniforms at a time."""
        return bit_report_needs(size, self.chunk)

    def bit_probabilities(self, y, K, cells, n_cells):
        """P(bit (l, j) = 1) for each user, shape (len(y), n_cells·K)."""
        K = require_K(K)
        probs = np.full((len(y), n_cells * K), self.q)
        own = check_cells(cells, n_cells, len(y)) * K + check_classes(y, K)
        probs[np.arange(len(y)), own] = self.p
        return probs

    def _report(self, y, rng, *, K, cells, n_cells):
        """Bit (l, j) = 1{U < p} at the user's own pair, 1{U < q} elsewhere, U i.i.d. uniform.

        The same uniforms and bits as comparing U with :meth:`bit_probabilities`,
        without building that (N, C·K) array, which costs as much as the uniforms:
        one comparison with q, then each user's own bit against p instead.
        """
        own = cells * K + y  # the user's own (cube, label) pair
        uniforms = rng.random((len(y), n_cells * K))
        bits = uniforms < self.q
        rows = np.arange(len(y))
        bits[rows, own] = uniforms[rows, own] < self.p
        return bits

    def aggregate(self, reports, cells, n_cells, K):
        return reports.sum(axis=0).reshape(n_cells, K)

    def _sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        return rng.binomial(counts, self.p) + rng.binomial(N - counts, self.q)

    def argmax_choice_law(self, N, mass, K=2) -> ChoiceLaw:
        """The argmax of a cube's two pair sums in law (:class:`~labeldp_sim.privacy.choice_law.ChoiceLaw`, K = 2).

        S_l1 − S_l0 = Σ_i (Z_i(l, 1) − Z_i(l, 0)) over *all* N users, bits independent: a
        user of pair (l, 1) moves it by +1 w.p. p², −1 w.p. q²; (l, 0) the other way; any
        other user by ±1 w.p. pq each.  Rate μ(p² + q²) + (1 − μ)·2pq, gain p − q; ties uniform.
        """
        check(int(K) == 2, "K", K, "2 (the exact choice law compares two classes)")
        mass = float(mass)
        rate = mass * (self.p ** 2 + self.q ** 2) + (1.0 - mass) * 2.0 * self.p * self.q
        return ChoiceLaw(int(N), rate, self.p - self.q)

    def argmax_choice_probability(self, N, mass, tilt, K=2):
        """P(the argmax picks the class of larger mass in the cube), tilt = the mass difference."""
        return self.argmax_choice_law(N, mass, K).probability(abs(tilt))


class ExponentialMechanism(CentralMechanism):
    r"""Exponential mechanism per cube (17): ε-label CDP.

    P(c_l = j) ∝ exp(ε' n_lj) with ε' = ε/2 (``share`` = 2).

    Privacy.  Changing one label changes the counts n_l· of one cube only,
    each by at most 1 (sensitivity 1), and the exponential mechanism with
    weights exp(ε u/2) is ε-DP for a score of sensitivity 1 [68].  The other
    cubes' releases do not change.

    Sampling uses the Gumbel-max trick: argmax_j(ε' n_lj + Gumbel) has exactly
    the law (17).  numpy's Gumbel draws are −ln(−ln U) with U = 1 − k·2^-53 on the
    grid of uniforms, so they lie in [−3.604, 36.737], and a class whose weighted
    score trails by more than ≈ 40.34 is never chosen: ε' ≤ LOG_ODDS_LIMIT ≈ 36.04
    keeps a class one count behind at probability ≥ 2^-52; the constructor refuses
    a larger ε.  No cap on ε makes the drawn law ε-DP, unlike the grid caps of RR
    and RAPPOR (:mod:`labeldp_sim.privacy.grid`): at every ε' the count gaps g with
    ε' g < 40.34 ≤ ε' (g + 2) — a label moved in a cube of ~80 samples at ε = 1 —
    give a class drawn with a positive probability under one neighbour and never
    under the other, an unbounded realised loss.  Like the low-order bits of
    Laplace noise, a limitation of this simulation mechanism (the audit's exact
    check enumerates counts up to 8, where the tail is far from the grid's edge).

    Simulation mechanism, not for releasing real data (module docstring).
    """

    name = "exponential"
    privacy = LABEL_CENTRAL
    share = 2.0  # ε' = ε / share: the budget one cube's release spends per unit of count
    exact_choice = True
    epsilon_limit = ("beyond it a class one count behind has probability 1/(1+e^ε') < 2^-52, "
                     "which the Gumbel-max draw cannot represent")
    parameters = {"epsilon": epsilon_parameter(2 * LOG_ODDS_LIMIT, "2·36.04: ε' = ε/2 <= 36.04")}
    audit_cases = audit_recipe(AUDIT, "exponential_audit")

    def __init__(self, epsilon):
        self.max_epsilon = LOG_ODDS_LIMIT * self.share
        super().__init__(epsilon)
        self.weight = self.epsilon / self.share

    def selection_probabilities(self, scores):
        """The law (17)/(31) of the released class per cube, shape like scores."""
        z = self.weight * (scores - scores.max(axis=1, keepdims=True))
        w = np.exp(z)
        return w / w.sum(axis=1, keepdims=True)

    def _release(self, data, rng, N, h, d, K=None):
        scores = data.label_counts(K)
        return np.argmax(self.weight * scores + rng.gumbel(size=scores.shape), axis=1)

    def argmax_choice_law(self, N, mass, K=2) -> ChoiceLaw:
        """The release (17)/(31) in law (:class:`~labeldp_sim.privacy.choice_law.ChoiceLaw`, K = 2).

        P(class 1 | counts) = σ(ε' (n_l1 − n_l0)), and n_l1 − n_l0 is the majority vote's
        step sum: rate μ, gain 1, weight ε'.
        """
        check(int(K) == 2, "K", K, "2 (the exact choice law compares two classes)")
        return ChoiceLaw(int(N), float(mass), 1.0, self.weight)

    def argmax_choice_probability(self, N, mass, tilt, K=2):
        """P(the release is the class of larger mass in the cube), tilt = the mass difference."""
        return self.argmax_choice_law(N, mass, K).probability(abs(tilt))


class ExponentialMechanismFull(ExponentialMechanism):
    r"""Exponential mechanism per cube with ε/4 (31): ε-DP for features and label (Theorem 13).

    P(c_l = j) ∝ exp(ε' n_lj) with ε' = ε/4 (``share`` = 4).

    Privacy.  Replacing one sample (x, y) can change two cubes' counts; each
    cube's release is (ε/2)-DP by the argument of (17) with ε/4, and the two
    compose to ε (Theorem 13).  The other cubes' releases do not change.  The
    Gumbel-max sampler's limit is :class:`ExponentialMechanism`'s, at ε' = ε/4.

    Simulation mechanism, not for releasing real data (module docstring).
    """

    name = "exponential_full"
    privacy = FULL_CENTRAL
    share = 4.0
    parameters = {"epsilon": epsilon_parameter(4 * LOG_ODDS_LIMIT, "4·36.04: ε' = ε/4 <= 36.04")}
    audit_cases = audit_recipe(AUDIT, "exponential_full_audit")


# --------------------------------------------------------------------------- regression


def _check_T(T):
    check(T is not None and np.isfinite(T) and T > 0, "T", T,
          "a clipping level > 0, or 'theory' (the theorem's law)")
    return float(T)


class LaplaceLabel(CubeSumMechanism, NoisyLabel):
    r"""Z = Clip(Y, T) + Lap(2T/ε): ε-label LDP (Theorem 6; Theorem 10 with clipping).

    Privacy: Clip(Y, T) ∈ [−T, T], so two labels move the Laplace location by at
    most 2T; the density ratio of Lap(2T/ε) at two locations 2T apart is at most
    e^ε.  Features are released as they are (label privacy).  For |Y| < T
    (Assumption 2) the clip is the identity.

    Sufficient statistic: the per-cube sum is Σ Clip(Y) + Σ Lap, and a sum of n
    i.i.d. Lap(b) is b·(Gamma(n) − Gamma(n)).

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).
    """

    name = "laplace"
    privacy = LABEL_LOCAL
    tasks = ("regression",)
    exact_cube_mean = exact_report = True
    parameters = {"epsilon": epsilon_parameter(), "T": CLIP_LEVEL}
    audit_cases = audit_recipe(AUDIT, "laplace_audit")

    def __init__(self, epsilon, T):
        super().__init__(epsilon)
        self.T = _check_T(T)
        self.scale = noise_scale(2 * self.T, self.epsilon, "2T/ε")

    def location(self, y):
        """The Laplace location of each report: Clip(y, T)."""
        return np.clip(y, -self.T, self.T)

    def _report(self, y, rng, *, K=None, cells=None, n_cells=None):
        z = rng.laplace(0.0, self.scale, size=len(y))
        z += self.location(y)  # in place: no third array of N
        return z

    def aggregate(self, reports, cells, n_cells, K):
        return (np.bincount(cells, minlength=n_cells).astype(float),
                np.bincount(cells, weights=reports, minlength=n_cells))

    def _sample_aggregate(self, data, N, rng, K=None):
        n = data.n()
        return n, data.clipped_sums(self.T) + laplace_sum(n, self.scale, rng)

    def cube_mean_moments(self, counts, N, h, d) -> CubeMeanMoments:
        """Moments of S/n with S = Σ (Clip(Y, T) + Lap(2T/ε)): each report adds variance 2·(2T/ε)²."""
        return mean_of_n_labels(counts, 2 * self.scale ** 2, self.T)

    def report_moments(self) -> CubeMeanMoments:
        """Moments of one report Z = Clip(Y, T) + Lap(2T/ε) given its label (a mean of n = 1):
        E Z = E Clip(Y, T), E Z² = E Clip(Y, T)² + 2·(2T/ε)² (what the exact kNN risk needs)."""
        return CubeMeanMoments(self.T, 1.0, 0.0, 1.0, 2 * self.scale ** 2)

    def __repr__(self):
        return f"LaplaceLabel(epsilon={self.epsilon}, T={self.T:.4g})"


class _LaplaceCubeRelease(CentralMechanism):
    """What the two central Laplace cube means share: a clip level T and a release that adds
    Laplace noise of the scales :meth:`location_and_scale` states (NaN: the cube is released as is)."""

    tasks = ("regression",)
    exact_cube_mean = True

    def __init__(self, epsilon, T):
        super().__init__(epsilon)
        self.T = _check_T(T)

    def _release(self, data, rng, N, h, d, K=None):
        location, scale = self.location_and_scale(data, N, h, d)
        noisy = ~np.isnan(scale)
        # a tiny ε overflows 2T/(n_l ε) or 6T/(n_0 ε) to inf (NaN estimates), a huge one underflows it to 0
        check(bool(np.all(np.isfinite(scale[noisy]) & (scale[noisy] > 0))), "epsilon", self.epsilon,
              "a number > 0 that keeps every cube's noise scale finite and > 0 in float64")
        estimate = location.copy()
        estimate[noisy] += rng.laplace(0.0, scale[noisy])
        return estimate


class LaplaceCubeMean(_LaplaceCubeRelease):
    r"""Central label-DP Laplace cube means, (23) and clipped (28): ε-label CDP.

    η̂_l = (1/n_l) Σ_{X_i ∈ B_l} Clip(Y_i, T) + Lap(2T/(n_l ε)), η̂_l = 0 on empty
    cubes.  Privacy: with the features fixed, changing one label moves one
    cube's clipped mean by at most 2T/n_l, the Laplace scale over ε, so the
    release is ε-label CDP (Theorems 8, 12).

    Clipping and noise both happen in :meth:`release`, on either path.

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).
    """

    name = "laplace_cube"
    privacy = LABEL_CENTRAL
    parameters = {"epsilon": epsilon_parameter(), "T": CLIP_LEVEL}
    audit_cases = audit_recipe(AUDIT, "laplace_cube_audit")

    def location_and_scale(self, data, N, h, d):
        """The law of the release: per-cube Laplace location and scale (NaN scale: released 0)."""
        n, S = data.n(), data.clipped_sums(self.T)
        occupied = n > 0
        location = np.divide(S, n, out=np.zeros_like(S, dtype=float), where=occupied)
        scale = np.full(len(S), np.nan)
        with np.errstate(over="ignore"):  # an infinite scale is refused by release, in one line
            scale[occupied] = 2 * self.T / (n[occupied] * self.epsilon)
        return location, scale

    def cube_mean_moments(self, counts, N, h, d) -> CubeMeanMoments:
        """Moments of :meth:`release` over the cube's count n (:class:`CubeMeanMoments`): the clipped
        mean plus Lap(2T/(nε)) on occupied cubes, variance 8T²/(ε² n²)."""
        m = mean_of_n_labels(counts, T=self.T)
        return m._replace(b0=8 * self.T ** 2 / self.epsilon ** 2 * counts.inverse_square)

    def __repr__(self):
        return f"LaplaceCubeMean(epsilon={self.epsilon}, T={self.T:.4g})"


class LaplaceCubeMeanFull(_LaplaceCubeRelease):
    r"""Central Laplace cube means for features and labels, (33) and (34): ε-DP.

    η̂_l = Σ Clip(Y_i, T)/(n_l ∨ n_0) + Lap(6T/(n_0 ε)), n_0 = n0_fraction · N h^d
    (35), default c θ/2 with c = 1 and θ = 2^(−d) for the uniform density on
    [0,1]^d.  Privacy (Theorem 14): replacing one sample changes at most two
    cubes; in each, S/(n ∨ n_0) moves by at most
    T/n_0 + |S|·|1/(n∨n_0) − 1/((n±1)∨n_0)| ≤ 2T/n_0, so the ℓ1 sensitivity
    of the vector of cube estimates is at most 4T/n_0 ≤ 6T/n_0 and Lap(6T/(n_0 ε))
    per cube gives ε-DP.

    Clipping and noise both happen in :meth:`release`, on either path.

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).
    """

    name = "laplace_cube_full"
    privacy = FULL_CENTRAL
    parameters = {"epsilon": epsilon_parameter(), "T": CLIP_LEVEL,
                  "n0_fraction": Nullable(Interval(float, 0, 1, closed="right"), "c θ / 2 = 2^-(d+1)")}
    audit_cases = audit_recipe(AUDIT, "laplace_cube_full_audit")

    def __init__(self, epsilon, T, n0_fraction=None):
        super().__init__(epsilon, T)
        self.check_parameters(n0_fraction=n0_fraction)
        self.n0_fraction = n0_fraction

    def n0(self, N, h, d):
        """(35): n_0 = N c θ h^d / 2."""
        fraction = self.n0_fraction if self.n0_fraction is not None else 0.5 * 2.0 ** (-d)
        n0 = fraction * N * h ** d
        # any n_0 > 0 bounds the sensitivity (4T/n_0 against the scale 6T/(n_0 ε)); 0 or NaN does not
        check(np.isfinite(n0) and n0 > 0, "N, h, d", shown(f"N = {N}, h = {h}, d = {d}"),
              "values that make n_0 = N c θ h^d / 2 finite and > 0")
        return n0

    def fixed_noise_scale(self, N, h, d):
        """The one Laplace scale 6T/(n_0 ε) of every cube."""
        return 6.0 * self.T / (self.n0(N, h, d) * self.epsilon)

    def location_and_scale(self, data, N, h, d):
        """The law of the release: per-cube Laplace location S/(n ∨ n_0) and the one scale 6T/(n_0 ε)."""
        n, S = data.n(), data.clipped_sums(self.T)
        n0 = self.n0(N, h, d)
        return S / np.maximum(n, n0), np.full(len(S), 6 * self.T / (n0 * self.epsilon))

    def cube_mean_moments(self, counts, N, h, d) -> CubeMeanMoments:
        """Moments of :meth:`release` over the cube's count n (:class:`CubeMeanMoments`):
        Σ Clip(Y)/(n ∨ n_0) plus Lap(6T/(n_0 ε))."""
        n0 = self.n0(N, h, d)
        a = counts.expect(lambda n: n / np.maximum(n, n0))
        b2 = counts.expect(lambda n: n * (n - 1) / np.maximum(n, n0) ** 2)
        b1 = counts.expect(lambda n: n / np.maximum(n, n0) ** 2)
        return CubeMeanMoments(self.T, a, b2, b1, 2 * (6 * self.T / (n0 * self.epsilon)) ** 2)

    def __repr__(self):
        return f"LaplaceCubeMeanFull(epsilon={self.epsilon}, T={self.T:.4g}, n0_fraction={self.n0_fraction})"


class JointLaplace(CubeSumMechanism):
    r"""Laplace on the joint vector (cube one-hot, cube one-hot · Clip(Y, T)): ε-LDP for both.

    Each user reports the 2C-vector (e_l, e_l·Clip(y, T)) for its cube l, with
    independent Lap(4/ε) noise on the C count coordinates and Lap(4T/ε) on the
    C sum coordinates.  Privacy: replacing (x, y) by (x', y') changes the count
    part by at most 2 in ℓ1 and the sum part by at most 2T, so the privacy loss
    is at most 2/(4/ε) + 2T/(4T/ε) = ε.

    The estimator sums reports, n̂_l = n_l + Σ_{N} Lap(4/ε), Ŝ_l = S_l + Σ_N Lap(4T/ε)
    (every user adds noise to every cube: ~ √N/ε per cube), and releases the
    ratio η̂_l = Ŝ_l / max(n̂_l, floor_fraction · N h^d).

    Simulation mechanism, not for releasing real data: floating-point Laplace
    noise leaks through its low-order bits (Mironov 2012).
    """

    name = "joint_laplace"
    privacy = FULL_LOCAL
    needs_cells = True
    tasks = ("regression",)
    exact_cube_mean = True

    parameters = {"epsilon": epsilon_parameter(), "T": CLIP_LEVEL,
                  "floor_fraction": Interval(float, 0, 1, closed="right"), "chunk": CHUNK}
    audit_cases = audit_recipe(AUDIT, "joint_laplace_audit")

    def __init__(self, epsilon, T, floor_fraction=0.5, chunk=2048):
        super().__init__(epsilon)
        self.T = _check_T(T)
        self.check_parameters(floor_fraction=floor_fraction, chunk=chunk)
        self.floor_fraction, self.chunk = float(floor_fraction), int(chunk)
        self.count_scale = noise_scale(4, self.epsilon, "4/ε")
        self.sum_scale = noise_scale(4 * self.T, self.epsilon, "4T/ε")

    def trial_needs(self, size) -> list:
        """A per-sample trial holds ``chunk`` reports of 2 × cubes float64 and their noise at a time."""
        if not (size.per_sample and self.chunk):
            return []
        cubes = size.cubes
        return [Need(32.0 * min(float(self.chunk), float(size.N)) * cubes, f"{self.chunk:,} reports × 2 × "
                     f"{cubes:,.0f} cubes × 2 float64 (mechanism.chunk)",
                     {size.key: (size.got, cubes), "mechanism.chunk": (self.chunk, self.chunk)})]

    def location(self, y, cells, n_cells):
        """The Laplace locations of each report: (e_l, e_l·Clip(y, T)), shape (len(y), 2, C)."""
        loc = np.zeros((len(y), 2, n_cells))
        rows = np.arange(len(y))
        loc[rows, 0, cells] = 1.0
        loc[rows, 1, cells] = np.clip(y, -self.T, self.T)
        return loc

    def _report(self, y, rng, *, K=None, cells, n_cells):
        z = np.empty((len(y), 2, n_cells))  # filled in place: no stacked copy of the noise
        z[:, 0] = rng.laplace(0.0, self.count_scale, size=(len(y), n_cells))
        z[:, 1] = rng.laplace(0.0, self.sum_scale, size=(len(y), n_cells))
        z += self.location(y, cells, n_cells)
        return z

    def aggregate(self, reports, cells, n_cells, K):
        return reports[:, 0].sum(axis=0), reports[:, 1].sum(axis=0)

    def _sample_aggregate(self, data, N, rng, K=None):
        n, S = data.n(), data.clipped_sums(self.T)
        return (n + laplace_sum(np.full(len(n), N), self.count_scale, rng),
                S + laplace_sum(np.full(len(n), N), self.sum_scale, rng))

    def estimate(self, n, S, N, h, d):
        return S / np.maximum(n, self.floor_fraction * N * h ** d)

    def cube_mean_moments(self, counts, N, h, d) -> CubeMeanMoments:
        """Moments of the ratio Ŝ/max(n̂, f) over n, both noises and the labels (:class:`CubeMeanMoments`).

        With D = max(n + Z_n, f): a = E[n/D], b2 = E[n(n−1)/D²], b1 = E[n/D²] and
        b0 = Var(Z_S) E[1/D²], Var(Z_S) = 2N(4T/ε)², Z_n of variance 2N(4/ε)² in its
        Edgeworth law (:mod:`~labeldp_sim.papers.table1.noisy_ratio`, which states the error bounds).
        """
        a, b2, b1, inverse_square = floored_ratio_moments(
            counts, self.count_scale * np.sqrt(2.0 * N), self.floor_fraction * N * h ** d, N)
        return CubeMeanMoments(self.T, a, b2, b1, 2.0 * N * self.sum_scale ** 2 * inverse_square)

    def __repr__(self):
        return f"JointLaplace(epsilon={self.epsilon}, T={self.T:.4g})"
