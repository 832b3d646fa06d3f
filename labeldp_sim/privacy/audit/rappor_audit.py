"""The audit of the shared mechanism RAPPOR (``privacy/rappor.py``): its recipe, mutants and careless inputs.

:meth:`RAPPOR.audit_cases <labeldp_sim.privacy.rappor.RAPPOR.audit_cases>` returns :func:`rappor_audit`.
"""

from __future__ import annotations

import numpy as np

from ..rappor import RAPPOR
from .blackbox import bits_code
from .maths import bits_loss
from .mutants import _MutantFullEpsRAPPOR, _MutantInferredKRAPPOR
from .registry import K_BB, LABEL_NB, AuditCases, Careless, Case, Recipe, builds, calls


def _rappor_exact(mech: RAPPOR):
    return max(bits_loss(mech.bit_probabilities(np.arange(K), K)) for K in (2, 3, 4, 8)), (
        "per-bit worst ratio of bit_probabilities (11), all label pairs, K ∈ {2,3,4,8} (15)")


def _draw_rappor(mech, side, n, rng):
    y = np.full(n, (0, K_BB - 1)[side])
    return bits_code(mech.report(y, rng, K=K_BB))


RAPPOR_RECIPE = Recipe(LABEL_NB, "y = 0 vs y' = 3, K = 4", _rappor_exact, _draw_rappor)


def rappor_audit(eps) -> AuditCases:
    """RAPPOR as every paper builds it, its two mutants and its careless inputs."""
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
         Careless("rappor: ε = 80", RAPPOR, builds(80.0), "epsilon",
                  "ε = 80: p = e^(ε/2)/(e^(ε/2)+1) rounds to 1 in float64")])
