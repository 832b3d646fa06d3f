"""Audit recipes of the Table I mechanisms (papers/000): exact losses, black-box pairs, planted mutants.

One function per mechanism class (``joint_rappor_audit``, ``exponential_audit``...), which
the class's ``audit_cases`` returns: its real cases as the product builds them
(``conf/table1/mechanism/*.yaml``), its planted mutants and its careless inputs.
``labeldp-sim audit`` runs them with every other registered mechanism's.  The method of
each exact check is described in :mod:`labeldp_sim.privacy.audit`.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from labeldp_sim.privacy.audit import (BIG, FULL_NB, LABEL_NB, AuditCases, CapCheck, Careless, Case, Recipe, log_ratio,
                             bits_code, bits_loss, builds, calls, T)
from labeldp_sim.privacy.audit.mutants import full_eps_bits
from labeldp_sim.privacy.grid import grid_probability
from labeldp_sim.privacy.protocols import LOG_ODDS_LIMIT, CubeData
from labeldp_sim.papers.table1.mechanisms import (ExponentialMechanism, ExponentialMechanismFull, JointLaplace, JointRAPPOR,
                                                 LaplaceCubeMean, LaplaceCubeMeanFull, LaplaceLabel)

__all__ = ["laplace_release_loss", "joint_rappor_realised_loss", "joint_rappor_audit", "exponential_audit",
           "laplace_audit", "laplace_cube_audit", "joint_laplace_audit"]


def _joint_rappor_losses(mech: JointRAPPOR, realised: bool):
    for n_cells, K in product((1, 2, 3), (2, 3)):
        cells, y = np.repeat(np.arange(n_cells), K), np.tile(np.arange(K), n_cells)
        P = mech.bit_probabilities(y, K, cells, n_cells)
        yield bits_loss(grid_probability(P) if realised else P)


def joint_rappor_realised_loss(mech: JointRAPPOR) -> float:
    """The loss :meth:`JointRAPPOR.report` realises on the 2^-53 grid: each bit is 1{U < p} (own pair) or
    1{U < q}, so 1 with probability ⌈P·2^53⌉/2^53; :func:`bits_loss` of those, all (cube, label) pairs,
    C ∈ {1,2,3} cubes, K ∈ {2,3}."""
    return max(_joint_rappor_losses(mech, realised=True))


def _joint_rappor_exact(mech: JointRAPPOR):
    return max(max(_joint_rappor_losses(mech, realised=False)), joint_rappor_realised_loss(mech)), (
        "per-bit worst ratio of bit_probabilities and of their rounding onto the 2^-53 grid (what report "
        "realises), all (cube, label) pairs, C ∈ {1,2,3} cubes, K ∈ {2,3}")


EXP_RANGE = 8  # count vectors enumerated over [0, EXP_RANGE]^K


def _count_vectors(K):
    return np.array(list(product(range(EXP_RANGE + 1), repeat=K)))


def _selection(mech: ExponentialMechanism, V, K):
    # through CubeData, as release() reads the counts
    return mech.selection_probabilities(CubeData.from_counts(V, np.arange(K)).label_counts(K))


def _pair_loss(P, Q):
    return float(np.max(np.abs(log_ratio(P, Q)))) if len(P) else 0.0


def _exp_losses(mech: ExponentialMechanism, K):
    """(one label moved within a cube, one record added to/removed from a cube), enumerated."""
    V = _count_vectors(K)
    move_a, move_b, add_a, add_b = [], [], [], []
    for j in range(K):
        has = V[:, j] >= 1
        add_a.append(V[has])
        add_b.append(V[has] - np.eye(K, dtype=int)[j])
        for k in range(K):
            if k != j:
                move_a.append(V[has])
                move_b.append(V[has] - np.eye(K, dtype=int)[j] + np.eye(K, dtype=int)[k])
    def loss(a, b):
        return _pair_loss(_selection(mech, np.concatenate(a), K), _selection(mech, np.concatenate(b), K))

    move, add = loss(move_a, move_b), loss(add_a, add_b)
    return move, add


def _exponential_exact(mech: ExponentialMechanism):
    r"""Label neighbours change one cube's counts by a move e_j → e_k (17)."""
    move = max(_exp_losses(mech, K)[0] for K in (2, 3))
    return move, (f"selection_probabilities (17) over all count vectors in [0,{EXP_RANGE}]^K, "
                  f"K ∈ {{2,3}}, one label moved (closed-form sup: 2·weight)")


def _exponential_full_exact(mech: ExponentialMechanismFull):
    r"""A replaced record (31) moves a label within a cube, or removes a unit from one cube and adds
    one to another, whose releases are independent: that loss is the sum of two one-cube
    add/remove losses."""
    move, add = zip(*(_exp_losses(mech, K) for K in (2, 3)))
    return max(max(move), 2 * max(add)), (
        f"selection_probabilities (31) over [0,{EXP_RANGE}]^K, K ∈ {{2,3}}: max(label moved in a cube, "
        f"2 × one record added/removed) (closed-form sup: 2·weight)")


LABELS = np.array([-BIG, -T, -T / 2, 0.0, T / 2, T, BIG])  # around and beyond the clip


def _laplace_exact(mech: LaplaceLabel):
    loc = mech.location(LABELS)
    return float(np.max(np.abs(loc[:, None] - loc[None, :])) / mech.scale), (
        "max |location(y) − location(y')| / scale, y ∈ {0, ±T/2, ±T, ±10T}")


def _joint_laplace_exact(mech: JointLaplace):
    n_cells = 3
    cells = np.repeat(np.arange(n_cells), len(LABELS))
    y = np.tile(LABELS, n_cells)
    loc = mech.location(y, cells, n_cells)
    delta = np.abs(loc[:, None] - loc[None, :]).sum(axis=3)  # (pairs, pairs, 2): ℓ1 per part
    loss = delta[..., 0] / mech.count_scale + delta[..., 1] / mech.sum_scale
    return float(np.max(loss)), ("max ‖Δcount‖₁/count_scale + ‖Δsum‖₁/sum_scale of location(y, cells), "
                                 "all (cube, label) pairs, 3 cubes, y ∈ {0, ±T/2, ±T, ±10T}")


def _release_law(mech: LaplaceCubeMean, records, n_cells, N, h, d):
    cells = np.array([c for c, _ in records], dtype=int)
    y = np.array([v for _, v in records], dtype=float)
    return mech.location_and_scale(CubeData.from_samples(cells, y, n_cells), N, h, d)


def laplace_release_loss(law_a, law_b) -> float:
    r"""Σ_l |μ_l − μ'_l| / b_l for two per-cube Laplace laws (NaN scale: the cube releases μ_l as is).

    A cube released as a constant under one data set and noisy under the other, a
    constant that moves, or two different scales give an unbounded loss.
    """
    (mu_a, b_a), (mu_b, b_b) = law_a, law_b
    const_a, const_b = np.isnan(b_a), np.isnan(b_b)
    if np.any(const_a != const_b) or np.any(mu_a[const_a] != mu_b[const_a]):
        return np.inf
    noisy = ~const_a
    if not np.allclose(b_a[noisy], b_b[noisy], rtol=1e-12, atol=0):
        return np.inf
    return float(np.sum(np.abs(mu_a[noisy] - mu_b[noisy]) / b_a[noisy]))


def _cube_label_pairs():
    """Label neighbours for (23)/(28): one record's label changed, every record's cube kept.

    Cube 0 holds the changing record and n_l − 1 others, cube 1 is empty, cube 2 a bystander.
    """
    for n_l, other in product((1, 2, 3, 8), (-BIG, 0.0, BIG)):
        for a, b in ((-BIG, BIG), (BIG, -BIG), (0.0, BIG), (T / 2, -BIG), (T, -T)):
            rest = [(0, other)] * (n_l - 1) + [(2, other)] * 3
            yield [(0, a)] + rest, [(0, b)] + rest, n_l


def _cube_full_pairs(n0):
    """Records replaced for (33)/(34): a record moved from cube 0 to cube 1 (label changed too),
    or relabelled in place; each cube holds m others with m around n_0 (and 0, 1, 2n_0)."""
    sizes = sorted({0, 1, max(int(np.floor(n0)) - 1, 0), int(np.floor(n0)), int(np.ceil(n0)),
                    int(np.ceil(n0)) + 1, int(2 * n0)})
    for m_a, m_b, v_a, v_b, a, b in product(sizes, sizes, (-BIG, BIG), (-BIG, BIG), (-BIG, BIG), (-BIG, BIG)):
        rest = [(0, v_a)] * m_a + [(1, v_b)] * m_b
        yield [(0, a)] + rest, [(1, b)] + rest   # moved between cubes
        yield [(0, a)] + rest, [(0, b)] + rest   # relabelled in its cube


CUBE_FULL_SETTINGS = ((128, 0.25, 1), (40, 0.25, 1), (512, 0.25, 2))  # (N, h, d): n_0 = 8, 2.5, 4


def _laplace_cube_exact(mech: LaplaceCubeMean):
    # label (23)/(28) ignore N, h, d
    law = [(_release_law(mech, a, 3, 1, 1.0, 1), _release_law(mech, b, 3, 1, 1.0, 1))
           for a, b, _ in _cube_label_pairs()]
    losses = [laplace_release_loss(la, lb) for la, lb in law]
    return max(losses), ("Σ_l |Δμ_l|/b_l of location_and_scale (23)/(28): one label changed, "
                         "n_l ∈ {1,2,3,8}, labels in {0, T/2, ±T, ±10T}")


def _laplace_cube_full_exact(mech: LaplaceCubeMeanFull):
    losses = []
    for N, h, d in CUBE_FULL_SETTINGS:
        n0 = mech.n0(N, h, d)
        losses += [laplace_release_loss(_release_law(mech, a, 3, N, h, d), _release_law(mech, b, 3, N, h, d))
                   for a, b in _cube_full_pairs(n0)]
    return max(losses), ("Σ_l |Δμ_l|/b_l of location_and_scale (33)/(34): one record moved between "
                         "cubes or relabelled, n around n_0 ∈ {2.5, 4, 8} and 0, 1, 2n_0, labels ±10T")


def _draw_joint_rappor(mech, side, n, rng):
    cells, y = np.full(n, side), np.full(n, side)  # (cube 0, label 0) vs (cube 1, label 1)
    return bits_code(mech.report(y, rng, K=2, cells=cells, n_cells=2))


def _draw_laplace(mech, side, n, rng):
    y = np.full(n, (BIG, -BIG)[side])
    return np.asarray(mech.report(y, rng), dtype=float).reshape(n, 1)


def _draw_joint_laplace(mech, side, n, rng):
    cells, y = np.full(n, side), np.full(n, (BIG, -BIG)[side])  # (cube 0, +10T) vs (cube 1, −10T)
    return np.asarray(mech.report(y, rng, cells=cells, n_cells=2), dtype=float).reshape(n, 4)


def _draw_laplace_cube(mech, side, n, rng):
    # n cubes of one record each (n_l = 1): label +10T vs −10T
    data = CubeData.from_samples(np.arange(n), np.full(n, (BIG, -BIG)[side]), n)
    return np.asarray(mech.release(data, rng, n, 1.0 / n, 1), dtype=float).reshape(n, 1)


FULL_BB = (128, 0.25, 1)  # (N, h, d) of the black-box pair: n_0 = 8 with the default n0_fraction


def _draw_laplace_cube_full(mech, side, n, rng):
    # copies of two cubes: the record (+10T) alone in cube A, vs the record (−10T) alone in cube B:
    # small n against n_0, where the floor n_l ∨ n_0 bounds the sensitivity
    N, h, d = FULL_BB
    cells = 2 * np.arange(n) + side
    data = CubeData.from_samples(cells, np.full(n, (BIG, -BIG)[side]), 2 * n)
    return np.asarray(mech.release(data, rng, N, h, d), dtype=float).reshape(n, 2)


def _cube_copies(n, per_copy_labels):
    """cells, labels of n copies of one cube holding ``per_copy_labels``."""
    m = len(per_copy_labels)
    return np.repeat(np.arange(n), m), np.tile(np.asarray(per_copy_labels), n)


def _draw_exponential(mech, side, n, rng):
    # one cube, K = 2: counts (1, 5) vs (0, 6), one label changed 0 → 1 (a tail of (17))
    cells, y = _cube_copies(n, ([0] + [1] * 5, [1] * 6)[side])
    data = CubeData.from_samples(cells, y, n)
    return np.asarray(mech.release(data, rng, n * 6, 1.0 / n, 1, K=2), dtype=np.int64)


def _draw_exponential_full(mech, side, n, rng):
    # two cubes, K = 2, five records of label 1 each; the record (label 0) sits in cube A under D,
    # and is replaced by one of label 1 in cube B under D'
    base = [(0, 1)] * 5 + [(1, 1)] * 5
    records = base + [((0, 0), (1, 1))[side]]
    local_cells = np.array([c for c, _ in records])
    labels = np.array([v for _, v in records])
    cells = (2 * np.arange(n)[:, None] + local_cells[None, :]).ravel()
    data = CubeData.from_samples(cells, np.tile(labels, n), 2 * n)
    out = np.asarray(mech.release(data, rng, n * len(records), 0.5 / n, 1, K=2), dtype=np.int64)
    return out.reshape(n, 2) @ np.array([2, 1])  # the pair (c_A, c_B) as one code


class _MutantHalfScaleLaplace(LaplaceLabel):
    """Fixture: Lap(T/ε) instead of Lap(2T/ε) (loss 2ε)."""

    def __init__(self, epsilon, T):
        super().__init__(epsilon, T)
        self.scale /= 2


class _MutantUnclippedLaplace(LaplaceLabel):
    """Fixture: no clip, the location is the raw label (loss 10ε at ±10T)."""

    def location(self, y):
        return np.asarray(y, dtype=float)


class _MutantNoiselessLaplace(LaplaceLabel):
    """Fixture: report skips the noise; the law methods still say Lap(2T/ε)."""

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        return self.location(y).astype(float)


class _MutantUnclippedCubeMean(LaplaceCubeMean):
    """Fixture: (23) without the clip of (28): the mean of raw labels + Lap(2T/(n_l ε))."""

    def location_and_scale(self, data, N, h, d):
        n, S = data.n(), data.clipped_sums(None)
        occupied = n > 0
        location = np.divide(S, n, out=np.zeros_like(S, dtype=float), where=occupied)
        scale = np.full(len(S), np.nan)
        scale[occupied] = 2 * self.T / (n[occupied] * self.epsilon)
        return location, scale


class _MutantNoFloorCubeMean(LaplaceCubeMeanFull):
    """Fixture: (34) with n_l instead of n_l ∨ n_0 in the denominator."""

    def location_and_scale(self, data, N, h, d):
        n, S = data.n(), data.clipped_sums(self.T)
        n0 = self.n0(N, h, d)
        return S / np.maximum(n, 1), np.full(len(S), 6 * self.T / (n0 * self.epsilon))


class _MutantFullEpsJointRAPPOR(JointRAPPOR):
    """Fixture: e^ε per bit of the joint one-hot (loss 2ε)."""

    def __init__(self, epsilon):
        super().__init__(epsilon)
        full_eps_bits(self)


class _MutantEdgeCapJointRAPPOR(JointRAPPOR):
    """Fixture: joint RAPPOR capped at the edge of the grid, 2·ln(2^52 − 1) ≈ 72.09."""

    max_epsilon = 2 * LOG_ODDS_LIMIT


class _MutantFullWeightExponential(ExponentialMechanism):
    """Fixture: weights exp(ε n_lj) instead of exp(ε n_lj/2) (sup loss 2ε)."""

    def __init__(self, epsilon):
        super().__init__(epsilon)
        self.weight = self.epsilon


class _MutantHalfCountJointLaplace(JointLaplace):
    """Fixture: count noise Lap(2/ε) instead of Lap(4/ε) (loss 1.5ε)."""

    def __init__(self, epsilon, T):
        super().__init__(epsilon, T)
        self.count_scale /= 2


JOINT_RAPPOR_CAP_METHOD = ("per-bit worst ratio of bit_probabilities rounded onto the 2^-53 grid, "
                           "C ∈ {1,2,3} cubes, K ∈ {2,3}")
JOINT_RAPPOR = Recipe(FULL_NB + " (cube and label)", "(cube 0, y 0) vs (cube 1, y 1), 2 cubes, K = 2",
                      _joint_rappor_exact, _draw_joint_rappor)
EXPONENTIAL = Recipe("label neighbours: one label changed in a cube, counts n_l fixed",
                     "one cube, counts (1, 5) vs (0, 6), K = 2", _exponential_exact, _draw_exponential)
EXPONENTIAL_FULL = Recipe(FULL_NB + ": moved between cubes or relabelled, N fixed",
                          "two cubes (1,5),(0,5) vs (0,5),(0,6): record moved and relabelled",
                          _exponential_full_exact, _draw_exponential_full)
LAPLACE = Recipe(LABEL_NB + "; labels beyond the clip (±10T)", "y = +10T vs y' = −10T", _laplace_exact, _draw_laplace)
LAPLACE_CUBE = Recipe("label neighbours: one label changed, cubes kept; smallest cubes n_l = 1, labels ±10T",
                      "one record per cube (n_l = 1), +10T vs −10T", _laplace_cube_exact, _draw_laplace_cube)
LAPLACE_CUBE_FULL = Recipe(FULL_NB + ": moved between cubes of n around n_0 (and n_l = 0, 1), labels ±10T, N fixed",
                           "N = 128, h = 1/4, d = 1 (n_0 = 8): +10T alone in cube A vs −10T alone in B",
                           _laplace_cube_full_exact, _draw_laplace_cube_full)
JOINT_LAPLACE = Recipe(FULL_NB + " (cube and label), labels ±10T", "(cube 0, +10T) vs (cube 1, −10T)",
                       _joint_laplace_exact, _draw_joint_laplace)

# Each function below is the audit of one class, as the product builds it (conf/table1/mechanism/*.yaml):
# its real cases, its planted mutants, and careless inputs to it — each must be refused in one
# line naming the argument.


def _release(cells, y, n_cells, K=None):
    """The careless call: ``release`` on a data set built from these samples (the (N, h, d) of FULL_BB)."""
    return lambda mech: mech.release(CubeData.from_samples(np.asarray(cells), np.asarray(y), n_cells),
                                     np.random.default_rng(0), *FULL_BB, K=K)


def joint_rappor_audit(eps) -> AuditCases:
    """:class:`JointRAPPOR` (``joint_rappor``)."""
    rng = np.random.default_rng(0)
    joint = JointRAPPOR(eps)

    def joint_report(y, cells):
        return calls("report", np.asarray(y), rng, K=2, cells=np.asarray(cells), n_cells=2)

    return AuditCases(
        [Case("joint_rappor", JointRAPPOR(eps), JOINT_RAPPOR)],
        [Case("joint_rappor: e^ε per bit", _MutantFullEpsJointRAPPOR(eps), JOINT_RAPPOR, "joint_rappor",
              "p = e^ε/(e^ε+1)")],
        [Careless("joint_rappor: cell −1", joint, joint_report([0], [-1]), "cells",
                  "cube index −1: wraps round to the last (cube, label) pair"),
         Careless("joint_rappor: cell n_cells", joint, joint_report([0], [2]), "cells",
                  "cube index 2 with n_cells = 2"),
         Careless("joint_rappor: label 0.5", joint, joint_report([0.5], [0]), "y", "y = 0.5, K = 2"),
         Careless("joint_rappor: ε = 80", JointRAPPOR, builds(80.0), "epsilon", "ε = 80: p rounds to 1 in float64")],
        [CapCheck("joint_rappor: ε cap", JointRAPPOR, joint_rappor_realised_loss, 2, JOINT_RAPPOR_CAP_METHOD),
         CapCheck("joint_rappor: ε cap at the edge of the grid", _MutantEdgeCapJointRAPPOR,
                  joint_rappor_realised_loss, 2, JOINT_RAPPOR_CAP_METHOD, "joint_rappor: ε cap",
                  "max_epsilon = 2·ln(2^52 − 1) ≈ 72.09, the edge of the grid (1 − p ≥ 2^-52)")])


def exponential_audit(eps) -> AuditCases:
    """:class:`ExponentialMechanism` (``exponential``, (17))."""
    return AuditCases(
        [Case("exponential", ExponentialMechanism(eps), EXPONENTIAL)],
        [Case("exponential: weight ε", _MutantFullWeightExponential(eps), EXPONENTIAL, "exponential",
              "exp(ε n_lj)")],
        [Careless("exponential: ε = 100", ExponentialMechanism, builds(100.0), "epsilon",
                  "ε = 100: a class one count behind is never drawn by the Gumbel-max sampler"),
         Careless("exponential: label K", ExponentialMechanism(eps), _release([0, 0], [0, 2], 1, K=2), "y",
                  "y = 2 with K = 2")])


def exponential_full_audit(eps) -> AuditCases:
    """:class:`ExponentialMechanismFull` (``exponential_full``, (31))."""
    return AuditCases([Case("exponential_full", ExponentialMechanismFull(eps), EXPONENTIAL_FULL)])


def laplace_audit(eps) -> AuditCases:
    """:class:`LaplaceLabel` (``laplace``)."""
    rng = np.random.default_rng(0)
    laplace = LaplaceLabel(eps, T)
    return AuditCases(
        [Case("laplace", LaplaceLabel(eps, T), LAPLACE)],
        [Case("laplace: noise scale halved", _MutantHalfScaleLaplace(eps, T), LAPLACE, "laplace", "Lap(T/ε)"),
         Case("laplace: clip removed", _MutantUnclippedLaplace(eps, T), LAPLACE, "laplace", "no Clip(Y, T)"),
         Case("laplace: report skips noise", _MutantNoiselessLaplace(eps, T), LAPLACE, "laplace",
              "Z = Clip(Y, T)")],
        [Careless("laplace: label NaN", laplace, calls("report", np.array([0.5, np.nan]), rng), "y",
                  "y = NaN: passes the clip, comes out NaN"),
         Careless("laplace: label inf", laplace, calls("report", np.array([np.inf]), rng), "y", "y = +inf"),
         Careless("laplace: labels of shape (n, 2)", laplace, calls("report", np.zeros((3, 2)), rng), "y",
                  "two numbers per user"),
         Careless("laplace: ε = 1e-320", LaplaceLabel, builds(1e-320, T), "epsilon",
                  "ε = 1e-320: the noise scale 2T/ε overflows to inf")])


def laplace_cube_audit(eps) -> AuditCases:
    """:class:`LaplaceCubeMean` (``laplace_cube``, (23)/(28))."""
    return AuditCases(
        [Case("laplace_cube", LaplaceCubeMean(eps, T), LAPLACE_CUBE)],
        [Case("laplace_cube: clip removed", _MutantUnclippedCubeMean(eps, T), LAPLACE_CUBE,
              "laplace_cube", "(23) on labels beyond T")],
        [Careless("laplace_cube: label NaN", LaplaceCubeMean(eps, T), _release([0, 0], [0.5, np.nan], 1), "y",
                  "y = NaN: the cube's estimate comes out NaN")])


def laplace_cube_full_audit(eps) -> AuditCases:
    """:class:`LaplaceCubeMeanFull` (``laplace_cube_full``, (33)/(34))."""
    return AuditCases(
        [Case("laplace_cube_full", LaplaceCubeMeanFull(eps, T), LAPLACE_CUBE_FULL)],
        [Case("laplace_cube_full: no n_0 floor", _MutantNoFloorCubeMean(eps, T), LAPLACE_CUBE_FULL,
              "laplace_cube_full", "S/n_l instead of S/(n_l ∨ n_0)")],
        [Careless("laplace_cube_full: cell n_cells", LaplaceCubeMeanFull(eps, T),
                  _release([0, 2], [0.5, 0.5], 2), "cells",
                  "cube index 2 with n_cells = 2: the release grows an entry that names the record")])


def joint_laplace_audit(eps) -> AuditCases:
    """:class:`JointLaplace` (``joint_laplace``)."""
    rng = np.random.default_rng(0)
    return AuditCases(
        [Case("joint_laplace", JointLaplace(eps, T), JOINT_LAPLACE)],
        [Case("joint_laplace: count noise halved", _MutantHalfCountJointLaplace(eps, T), JOINT_LAPLACE,
              "joint_laplace", "count noise Lap(2/ε)")],
        [Careless("joint_laplace: cell −1", JointLaplace(eps, T),
                  calls("report", np.array([0.5]), rng, cells=np.array([-1]), n_cells=2), "cells",
                  "cube index −1: counted in the last cube"),
         Careless("joint_laplace: cells missing", JointLaplace(eps, T), calls("report", np.array([0.5]), rng),
                  "cells", "no cube indices for a mechanism that protects them")])
