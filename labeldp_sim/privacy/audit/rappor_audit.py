"""The audit of the shared mechanism RAPPOR (``privacy/rappor.py``): its recipe, mutants and careless inputs.

:meth:`RAPPOR.audit_cases <labeldp_sim.privacy.rappor.RAPPOR.audit_cases>` returns :func:`rappor_audit`.
"""

from __future__ import annotations

import numpy as np

from labeldp_sim.privacy.checks import LOG_ODDS_LIMIT
from labeldp_sim.privacy.grid import grid_probability
from labeldp_sim.privacy.rappor import RAPPOR
from labeldp_sim.privacy.audit.blackbox import bits_code
from labeldp_sim.privacy.audit.maths import bits_loss
from labeldp_sim.privacy.audit.mutants import full_eps_bits
from labeldp_sim.privacy.audit.registry import K_BB, LABEL_NB, AuditCases, CapCheck, Careless, Case, Recipe, builds, calls

RAPPOR_KS = (2, 3, 4, 8)
EDGE_CAP = "max_epsilon = 2·ln(2^52 − 1) ≈ 72.09, the edge of the grid (1 − p ≥ 2^-52)"



class _MutantFullEpsRAPPOR(RAPPOR):
    """Fixture: e^ε per bit instead of e^(ε/2) (loss 2ε)."""

    def __init__(self, epsilon):
        super().__init__(epsilon)
        full_eps_bits(self)


class _MutantInferredKRAPPOR(RAPPOR):
    """Fixture: K inferred from the labels, so the report's length depends on them."""

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        return super().report(y, rng, K=max(2, int(np.max(y)) + 1), cells=cells, n_cells=n_cells)


class _MutantEdgeCapRAPPOR(RAPPOR):
    """Fixture: RAPPOR capped at the edge of the grid, 2·ln(2^52 − 1) ≈ 72.09, where 1 − p ≥ 2^-52 but its
    rounding onto the grid of uniforms realises a loss up to 0.04 above ε."""

    max_epsilon = 2 * LOG_ODDS_LIMIT


def rappor_realised_loss(mech: RAPPOR) -> float:
    r"""The loss :meth:`RAPPOR.report` realises on the 2^-53 grid of uniforms.

    Bit j is 1{U_j < p} for j = y and 1{U_j < q} otherwise, U_j = k·2^-53, so it is 1 with
    probability ⌈P_j·2^53⌉/2^53 (P = ``bit_probabilities``); :func:`bits_loss` of those,
    over all label pairs, K ∈ {2, 3, 4, 8}: 2·max(ln p̃/q̃, ln (1 − q̃)/(1 − p̃)).
    """
    return max(bits_loss(grid_probability(mech.bit_probabilities(np.arange(K), K))) for K in RAPPOR_KS)


def _rappor_exact(mech: RAPPOR):
    law = max(bits_loss(mech.bit_probabilities(np.arange(K), K)) for K in RAPPOR_KS)
    return max(law, rappor_realised_loss(mech)), (
        "per-bit worst ratio of bit_probabilities (11) and of their rounding onto the 2^-53 grid (what "
        "report realises), all label pairs, K ∈ {2,3,4,8} (15)")


def _draw_rappor(mech, side, n, rng):
    y = np.full(n, (0, K_BB - 1)[side])
    return bits_code(mech.report(y, rng, K=K_BB))


RAPPOR_CAP_METHOD = "per-bit worst ratio of bit_probabilities rounded onto the 2^-53 grid, K ∈ {2,3,4,8}"
RAPPOR_RECIPE = Recipe(LABEL_NB, "y = 0 vs y' = 3, K = 4", _rappor_exact, _draw_rappor)


def rappor_audit(eps) -> AuditCases:
    """RAPPOR as every paper builds it, its two mutants, its careless inputs and its ε cap."""
    rng = np.random.default_rng(0)
    return AuditCases(
        [Case("rappor", RAPPOR(eps), RAPPOR_RECIPE)],
        [Case("rappor: e^ε per bit", _MutantFullEpsRAPPOR(eps), RAPPOR_RECIPE, "rappor", "p = e^ε/(e^ε+1)"),
         Case("rappor: K inferred from labels", _MutantInferredKRAPPOR(eps), RAPPOR_RECIPE, "rappor",
              "K = max(y)+1")],
        [Careless("rappor: label 0.5", RAPPOR(eps), calls("report", np.array([0.5, 1.0]), rng, K=K_BB), "y",
                  "y = 0.5: no class, so no bit of its own"),
         Careless("rappor: label K", RAPPOR(eps), calls("report", np.array([K_BB]), rng, K=K_BB), "y",
                  f"y = {K_BB} with K = {K_BB}"),
         Careless("rappor: ε = 40", RAPPOR, builds(40.0), "epsilon",
                  "ε = 40: 1 − p's rounding onto the 2^-53 grid realises a loss up to 1e-7 above ε"),
         Careless("rappor: ε = 80", RAPPOR, builds(80.0), "epsilon",
                  "ε = 80: p = e^(ε/2)/(e^(ε/2)+1) rounds to 1 in float64")],
        [CapCheck("rappor: ε cap", RAPPOR, rappor_realised_loss, 2, RAPPOR_CAP_METHOD),
         CapCheck("rappor: ε cap at the edge of the grid", _MutantEdgeCapRAPPOR, rappor_realised_loss, 2,
                  RAPPOR_CAP_METHOD, "rappor: ε cap", EDGE_CAP)])
