"""What papers/002 (K-class label LDP) declares to the harness: its modules that only present numbers.

Paths relative to this package; :func:`labeldp_sim.harness.provenance.code_fingerprint`
hashes every other module of the package, so editing one of these leaves the
stored trials valid.
"""

PRESENTATION_MODULES = ("__init__.py", "paper.py", "audit.py", "claims.py", "kind.py", "report.py", "site.py")
