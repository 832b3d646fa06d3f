"""The law-free rows of papers/003's Table 1: the search (:mod:`.search`) and its fits (:mod:`.fit`)."""
