"""The harness every paper shares: points and seeds, the trial store, the runner, fits, plots,
validation helpers and the CLI.  It imports no paper package; papers register experiment kinds
(:mod:`.kinds`) and components (:mod:`.components`), and declare their presentation modules
(:mod:`.provenance`)."""

# The package's version: part of every code fingerprint (:mod:`.provenance`).  Here, not in the
# package root, so that the core never imports the root.
__version__ = "0.2.0"
