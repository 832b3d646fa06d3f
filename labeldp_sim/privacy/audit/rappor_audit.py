"""The audit of the shared mechanism RAPPOR (``privacy/rappor.py``): its recipe, mutants and careless inputs.

Imported by the package before any paper package registers, so RAPPOR's rows come first.
"""

from __future__ import annotations

import numpy as np

from ..rappor import RAPPOR
from .blackbox import bits_code
from .maths import bits_loss
from .mutants import _MutantFullEpsRAPPOR, _MutantInferredKRAPPOR
from .registry import K_BB, LABEL_NB, Careless, Case, Recipe, builds, calls, register_careless, register_cases


def _rappor_exact(mech: RAPPOR):
    return max(bits_loss(mech.bit_probabilities(np.arange(K), K)) for K in (2, 3, 4, 8)), (
        "per-bit worst ratio of bit_probabilities (11), all label pairs, K ∈ {2,3,4,8} (15)")


def _draw_rappor(mech, side, n, rng):
    y = np.full(n, (0, K_BB - 1)[side])
    return bits_code(mech.report(y, rng, K=K_BB))


RAPPOR_RECIPE = Recipe(LABEL_NB, "y = 0 vs y' = 3, K = 4", _rappor_exact, _draw_rappor)


@register_cases
def _rappor_cases(eps):
    return ([Case("rappor", RAPPOR(eps), RAPPOR_RECIPE)],
            [Case("rappor: e^ε per bit", _MutantFullEpsRAPPOR(eps), RAPPOR_RECIPE, "rappor", "p = e^ε/(e^ε+1)"),
             Case("rappor: K inferred from labels", _MutantInferredKRAPPOR(eps), RAPPOR_RECIPE, "rappor",
                  "K = max(y)+1")])


@register_careless
def _rappor_careless(eps):
    rng = np.random.default_rng(0)
    return [Careless("rappor: label 0.5", RAPPOR(eps), calls("report", np.array([0.5, 1.0]), rng, K=K_BB), "y",
                     "y = 0.5: no class, so no bit of its own"),
            Careless("rappor: label K", RAPPOR(eps), calls("report", np.array([K_BB]), rng, K=K_BB), "y",
                     f"y = {K_BB} with K = {K_BB}"),
            Careless("rappor: ε = 80", RAPPOR, builds(80.0), "epsilon",
                     "ε = 80: p = e^(ε/2)/(e^(ε/2)+1) rounds to 1 in float64")]
