"""What papers/003 (user-level LDP) declares to the harness: its modules that only present numbers.

Paths relative to this package; :func:`labeldp_sim.harness.provenance.code_fingerprint`
hashes every other module of the package, so editing one of these leaves the
stored trials valid.
"""

PRESENTATION_MODULES = ("__init__.py", "paper.py", "audit.py", "kind.py", "report.py", "theory.py", "rate.py",
                        "audit_recipes.py", "slips.py", "table1_rows.py", "law_free/__init__.py", "law_free/fit.py",
                        "law_free/exponents.py", "law_free/baselines.py", "site.py")
