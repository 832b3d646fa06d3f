"""papers/000 (Table I): classification and regression under label and full DP.

Families (:mod:`.families`), mechanisms (:mod:`.mechanisms`), estimators
(:mod:`.estimators`), the theory registry (:mod:`.theory`), the law-tied sweep
(:mod:`.experiment`, :mod:`.sweep`), the law-free search (:mod:`.minimax`,
:mod:`.minimax_fit`), the "Table I, measured" report (:mod:`.report`) and the
audit recipes of its mechanisms (:mod:`.audit`).  Importing the package
registers its experiment kind (``kind: rates``).
"""

from . import audit, kind  # noqa: F401  (registers the kind and the audit recipes)

__all__ = ["audit", "kind"]
