"""papers/002: K-class label LDP (RR, RRWithPrior/LP-2ST, ALIBI, the vector approximation).

Family (:mod:`.families`), mechanisms (:mod:`.mechanisms`), methods ending in a
kNN learner (:mod:`.methods`), experiments and their plans (:mod:`.experiments`),
outputs (:mod:`.report`), the paper's claims checked against the data
(:mod:`.claims`) and the audit recipes (:mod:`.audit`).  Importing the package
registers its kinds (``kclass``, ``digits``).
"""

from . import audit, kind  # noqa: F401  (registers the kinds and the audit recipes)

__all__ = ["audit", "kind"]
