"""What papers/000 (Table I) declares to the harness: its modules that only present numbers.

Paths relative to this package; :func:`labeldp_sim.core.provenance.code_fingerprint`
hashes every other module of the package, so editing one of these leaves the
stored trials valid.
"""

PRESENTATION_MODULES = ("__init__.py", "paper.py", "audit.py", "fit.py", "kind.py", "minimax_fit.py",
                        "minimax_plots.py", "minimax_table.py", "minimax_matrices.py", "report.py", "site.py")
