"""Planted mutants of the shared mechanism RAPPOR: TEST FIXTURES OF THE AUDIT.

Each class breaks one mechanism in one way; the audit must call every one of them
"caught".  Nothing in the product uses them.  The paper packages plant their own
mutants in their ``audit.py``.
"""

from __future__ import annotations

import numpy as np

from labeldp_sim.privacy.checks import LOG_ODDS_LIMIT
from labeldp_sim.privacy.rappor import RAPPOR


def full_eps_bits(mech) -> None:
    """The planted bug of the RAPPOR-style mutants: bits at e^ε/(e^ε+1) and 1/(e^ε+1), not at e^(ε/2)."""
    e = np.exp(mech.epsilon)
    mech.p, mech.q = e / (e + 1), 1 / (e + 1)


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
