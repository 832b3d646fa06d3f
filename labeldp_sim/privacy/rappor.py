"""RAPPOR, eq. (11) of papers/000: the label-LDP vector mechanism both Table I and
papers/002 (its "vector approximation") use, so it sits below both paper packages.

A simulation mechanism, not for releasing real data: its bits come from comparing
float64 uniforms (a grid of 2^-53) with p and q, so they realise the grid-rounded
⌈p·2^53⌉/2^53 and ⌈q·2^53⌉/2^53, and ε is capped where the loss that rounding
realises stays within 1e-9 of ε (:data:`~labeldp_sim.privacy.grid.RAPPOR_EPSILON_LIMIT`);
see :mod:`labeldp_sim.privacy.protocols` for the floating-point limitation.
"""

from __future__ import annotations

import numpy as np

from labeldp_sim.privacy.choice_law import ChoiceLaw
from labeldp_sim.harness.errors import check
from labeldp_sim.harness.memory import Need
from labeldp_sim.privacy.grid import RAPPOR_EPSILON_LIMIT
from labeldp_sim.privacy.protocols import LABEL_LOCAL, CubeSumMechanism, require_K, audit_recipe, check_classes, epsilon_parameter

__all__ = ["RAPPOR", "bit_sums", "bit_report_needs", "RAPPOR_LIMIT"]

# why RAPPOR and joint RAPPOR refuse a larger ε (the refusal's one line says it)
RAPPOR_LIMIT = ("beyond it 1 − p = 1/(e^(ε/2)+1), drawn on the 2^-53 grid of uniforms in each of the two bits "
                "that differ, realises a loss more than 1e-9 above ε")


def bit_sums(bits, cells, n_cells):
    """S_lj = Σ_{i: cell i = l} bits_ij, shape (n_cells, K), for an (N, K) array of 0/1 reports.

    Where K ≤ 8 and the n_cells · 2^K (cube, bit pattern) pairs are fewer than the
    users, each user's K bits are read as one byte, its bit pattern, and a single
    bincount over (cube, pattern) pairs counts them (three to four times faster
    than K bincounts with float weights at N = 10^6, K = 2); else one bincount per bit.
    """
    N, K = bits.shape
    if K > 8 or n_cells << K > max(N, 1):
        return np.stack([np.bincount(cells, weights=bits[:, j], minlength=n_cells)
                         for j in range(K)], axis=1).astype(np.int64)
    as_bytes = bits.view(np.uint8) if bits.dtype == bool else bits.astype(np.uint8)
    pair = np.left_shift(cells, K, dtype=np.int64)  # the cube's 2^K patterns ...
    for j in range(K):
        pair |= as_bytes[:, j] << j  # ... and this user's
    counts = np.bincount(pair, minlength=n_cells << K).reshape(n_cells, 1 << K)
    pattern_bits = (np.arange(1 << K)[:, None] >> np.arange(K)) & 1  # (2^K, K)
    return counts @ pattern_bits


def bit_report_needs(size, width) -> list:
    """What RAPPOR-style bit reports hold in a per-sample trial of ``size``: all N × K bits and
    their uniforms (9 B each), or ``width`` reports × cubes × K at a time when they come in chunks."""
    if not size.per_sample:
        return []  # the sufficient path draws the bit sums per cube (binomials), no report
    K, cubes, key_K = size.K, size.cubes, {"distribution.K": (int(size.K), size.K)}
    if width:
        return [Need(9.0 * min(float(width), float(size.N)) * cubes * K, f"{width:,} reports × {cubes:,.0f} "
                     f"cubes × K = {K:,.0f} bits and uniforms (mechanism.chunk)",
                     {size.key: (size.got, cubes), **key_K, "mechanism.chunk": (width, float(width))})]
    return [Need(9.0 * float(size.N) * K, f"N × K = {size.N:,} × {K:,.0f} report bits and uniforms",
                 {size.key: (size.got, float(size.N)), **key_K})]


class RAPPOR(CubeSumMechanism):
    r"""RAPPOR label vector, eq. (11): ε-label LDP.

    Each sample reports Z ∈ {0,1}^K with independent bits
    P(Z(j) = 1) = p = e^(ε/2)/(e^(ε/2)+1) if j = y, else q = 1/(e^(ε/2)+1).

    Privacy (15): changing y to y' changes the law of the two bits y and y'
    only, each by a factor at most e^(ε/2), so every output's probability
    changes by at most e^ε.  Features are untouched (label privacy only).
    K is an argument: a vector whose length followed the labels would leak them.

    Sufficient statistic: given n_lj, S_lj = Bin(n_lj, p) + Bin(n_l − n_lj, q)
    independently over (l, j), the exact law of (12).

    ε ≤ RAPPOR_EPSILON_LIMIT = 29.82 (:mod:`labeldp_sim.privacy.grid`): a bit is
    1{U < p} or 1{U < q} with U = k·2^-53, so it is 1 with probability p̃ = ⌈p·2^53⌉/2^53
    (q̃ likewise), and the realised loss is
    ln(p̃/q̃) + ln((1 − q̃)/(1 − p̃)) (bit y at 1, bit y' at 0).  1 − p̃ carries a
    rounding error of up to 3·2^-54, which moves a bit's log-odds by
    ≈ 3·2^-54·e^(ε/2); the cap bounds both bits' errors together by 1e-9 (a
    conservative bound: q̃ = ⌈q·2^53⌉/2^53 is rounded up, which lowers ln(p̃/q̃), so
    the realised loss stays below ε over the audit's sweep up to the cap).  Near
    the edge of the grid, 2·ln(2^52 − 1) ≈ 72.1, the realised loss exceeds ε by up
    to 0.04.  The constructor refuses a larger ε.

    Simulation mechanism, not for releasing real data (module docstring).
    """

    name = "rappor"
    privacy = LABEL_LOCAL
    exact_choice = True
    max_epsilon = RAPPOR_EPSILON_LIMIT
    epsilon_limit = RAPPOR_LIMIT
    parameters = {"epsilon": epsilon_parameter(max_epsilon, epsilon_limit)}
    audit_cases = audit_recipe("labeldp_sim.privacy.audit.rappor_audit", "rappor_audit")

    def __init__(self, epsilon):
        super().__init__(epsilon)
        e = np.exp(self.epsilon / 2)
        self.p, self.q = e / (e + 1), 1 / (e + 1)

    def bit_probabilities(self, y, K):
        """P(Z(j) = 1 | Y = y) for each row y, shape (len(y), K), (11)."""
        probs = np.full((len(y), require_K(K)), self.q)
        probs[np.arange(len(y)), check_classes(y, K)] = self.p
        return probs

    def trial_needs(self, size) -> list:
        """A per-sample trial holds all N × K report bits and their uniforms (9 B each)."""
        return bit_report_needs(size, None)

    def _report(self, y, rng, *, K, cells=None, n_cells=None):
        """Bits Z(j) = 1{U_j < p} for j = y and 1{U_j < q} otherwise, U i.i.d. uniform, (11).

        The same uniforms and bits as comparing U with :meth:`bit_probabilities`,
        without building that (N, K) array, which took as long as drawing U: one
        comparison with q, then each class's own bits against p (q < p), a column
        at a time.
        """
        uniforms = rng.random((len(y), K))
        bits = uniforms < self.q
        for j in range(K):
            own = y == j
            own &= uniforms[:, j] < self.p
            bits[:, j] |= own
        return bits

    def aggregate(self, reports, cells, n_cells, K):
        return bit_sums(reports, cells, n_cells)

    def _sample_aggregate(self, data, N, rng, K=None):
        counts = data.label_counts(K)
        n_cell = counts.sum(axis=1, keepdims=True)
        return rng.binomial(counts, self.p) + rng.binomial(n_cell - counts, self.q)

    def argmax_choice_law(self, N, mass, K=2) -> ChoiceLaw:
        """The argmax of the RAPPOR sums in law (:class:`~labeldp_sim.privacy.choice_law.ChoiceLaw`, K = 2).

        S_l1 − S_l0 = Σ_i (Z_i(1) − Z_i(0)) over the samples in the cube; the two bits are
        independent, so a label-1 sample moves it by +1 w.p. p(1 − q) = p², by −1 w.p. q²,
        a label-0 sample the other way: rate μ(p² + q²), gain p² − q² = p − q; ties uniform.
        """
        check(int(K) == 2, "K", K, "2 (the exact choice law compares two classes)")
        return ChoiceLaw(int(N), float(mass) * (self.p ** 2 + self.q ** 2), self.p - self.q)

    def argmax_choice_probability(self, N, mass, tilt, K=2):
        """P(the argmax picks the class of larger mass in the cube), tilt = the mass difference."""
        return self.argmax_choice_law(N, mass, K).probability(abs(tilt))
