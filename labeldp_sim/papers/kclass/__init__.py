"""papers/002: K-class label LDP (RR, RRWithPrior/LP-2ST, ALIBI, the vector approximation).

Family (:mod:`.families`), mechanisms (:mod:`.mechanisms`), methods ending in a
kNN learner (:mod:`.methods`: components of group ``kclass.method``, found by the
names the YAML lists), experiments and their plans (:mod:`.experiments`),
outputs (:mod:`.report`), the paper's claims checked against the data
(:mod:`.claims`) and the audit recipes (:mod:`.audit`).  Importing the package
registers its kinds (``kclass``, ``digits``) and its components, mechanisms
included (a Table I cell names ``rr`` or ``alibi``); :mod:`.audit` registers its
audit recipes when the audit loads it (:func:`labeldp_sim.app.load_audits`).
"""

# importing registers the kinds and the components; the audit recipes load with the audit
from labeldp_sim.papers.kclass import kind, mechanisms  # noqa: F401

__all__ = ["kind", "mechanisms"]
