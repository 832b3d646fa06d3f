"""User-level local differential privacy (papers/003): mean estimation and learning.

``data`` holds the per-user statistics of a group of users on either simulation
path, ``mechanisms`` the user-level randomizers (the only place where clipping
and noise happen), ``families`` the mean-estimation instances and ``mean`` the
estimators of Section 4 and the Proposition 1 baselines.
"""

from labeldp_sim.papers.userlevel import kind  # noqa: E402,F401  (registers kind: userlevel; the audit recipes load with the audit)

__all__ = ["kind"]
