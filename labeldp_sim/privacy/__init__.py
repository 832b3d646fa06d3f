"""Privacy at the ground of every paper: mechanism protocols (:mod:`.protocols`), the shared
RAPPOR mechanism (:mod:`.rappor`) and the audit machinery (:mod:`.audit`), to which each paper
registers the recipes of its own mechanisms."""
