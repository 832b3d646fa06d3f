"""Privacy at the ground of every paper: mechanism protocols (:mod:`.protocols`), the shared
RAPPOR mechanism (:mod:`.rappor`) and the audit machinery (:mod:`.audit`), to which each paper
registers the recipes, planted mutants and careless inputs of its own mechanisms.

The protocols check every input at the mechanism boundary and refuse a careless one in one line.
The mechanisms are simulation mechanisms, not for releasing real data: their floating-point
Laplace noise leaks through its low-order bits (Mironov 2012), a limitation the audit measures
and states."""
