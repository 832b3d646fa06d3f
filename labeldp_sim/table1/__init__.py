"""papers/000 (Table I): classification and regression under label and full DP.

Families (:mod:`.families`), mechanisms (:mod:`.mechanisms`), estimators
(:mod:`.estimators`), the theory registry (:mod:`.theory`), the law-tied sweep
(:mod:`.experiment`, :mod:`.sweep`), the law-free search (:mod:`.minimax`,
:mod:`.minimax_fit`), the "Table I, measured" report (:mod:`.report`) and the
audit recipes of its mechanisms (:mod:`.audit`).  Importing the package
registers its experiment kind (``kind: rates``); :mod:`.audit` registers
its audit recipes when the audit loads it (:func:`labeldp_sim.app.load_audits`).
"""

from . import kind  # noqa: E402,F401  (registers the kind; the audit recipes load with the audit)

__all__ = ["kind"]
