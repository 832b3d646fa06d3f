"""The planted bugs the audits' mutants share: TEST FIXTURES OF THE AUDIT.

A mutant breaks one mechanism in one way; the audit must call every one of them
"caught".  Each audit module defines its own mutants (private classes, which the
protocols' boundary checks and the registry leave alone) from these bugs:
RAPPOR's in :mod:`.rappor_audit`, each paper's in its ``audit.py``.
"""

from __future__ import annotations

import numpy as np


def full_eps_bits(mech) -> None:
    """The planted bug of the RAPPOR-style mutants: bits at e^ε/(e^ε+1) and 1/(e^ε+1), not at e^(ε/2)."""
    e = np.exp(mech.epsilon)
    mech.p, mech.q = e / (e + 1), 1 / (e + 1)
