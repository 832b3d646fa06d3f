"""Privacy at the ground of every paper: mechanism protocols (:mod:`.protocols`), the shared
RAPPOR mechanism (:mod:`.rappor`) and the audit machinery (:mod:`.audit`), which iterates the
registered mechanism classes: each states, beside it, the recipes, planted mutants and careless
inputs the audit runs for it (``audit_cases``).

The protocols check every input at the mechanism boundary and refuse a careless one in one line.
The mechanisms are simulation mechanisms, not for releasing real data: their floating-point
Laplace noise leaks through its low-order bits (Mironov 2012), a limitation the audit measures
and states."""
