"""What papers/000 (Table I) declares to the harness: its modules that only present numbers.

Paths relative to this package; :func:`labeldp_sim.harness.provenance.code_fingerprint`
hashes every other module of the package, so editing one of these leaves the
stored trials valid.
"""

PRESENTATION_MODULES = ("__init__.py", "paper.py", "audit.py", "fit.py", "kind.py", "law_free/__init__.py", "law_free/fit.py",
                        "law_free/plots.py", "law_free/table.py", "law_free/matrices.py", "parameters.py", "report.py",
                        "site.py")
