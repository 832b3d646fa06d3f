"""The law-free search of Table I (SPEC §5a): the plan of grids, the exact risk matrices, the
oracle tuning and worst instance, the convergence-window fits, the table and the plots."""
