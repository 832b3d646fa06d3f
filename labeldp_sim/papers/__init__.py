"""One package per paper, discovered from this folder (:func:`labeldp_sim.harness.provenance.paper_packages`).

A paper package is named for the result it reproduces (``table1``: papers/000's Table I;
``kclass``: papers/002's K-class label LDP; ``userlevel``: papers/003's user-level LDP), holds its
configuration in ``conf/<paper>/`` and imports the harness, the statistics, the privacy wing and
the report, never another paper.
"""
