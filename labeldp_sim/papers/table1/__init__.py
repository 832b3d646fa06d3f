"""papers/000 (Table I): classification and regression under label and full DP.

Families (:mod:`.families`), mechanisms (:mod:`.mechanisms`), estimators
(:mod:`.estimators`), the theory registry (:mod:`.theory`), grid points
(:mod:`.points`), the law-tied sweep (:mod:`.groups`, :mod:`.experiment`,
:mod:`.sweep`, :mod:`.fit`), the law-free search (:mod:`.law_free`),
the "Table I, measured" report (:mod:`.report`), the audit
recipes of its mechanisms (:mod:`.audit`) and what it declares to the harness
(:mod:`.paper`).  Importing the package registers its experiment kind
(``kind: rates``) and its components (the ``distribution``, ``mechanism`` and
``estimator`` groups); :mod:`.audit` registers its audit recipes when the audit
loads it (:func:`labeldp_sim.app.load_audits`).
"""

from labeldp_sim.papers.table1 import estimators, families, kind, mechanisms  # noqa: F401  (register the kind and the components)

__all__ = ["kind", "families", "mechanisms", "estimators"]
