"""The harness every paper shares: points and seeds, the trial store, the runner, fits, plots,
validation helpers and the CLI.  It imports no paper package; papers register experiment kinds
(:mod:`.kinds`) and components (:mod:`.components`), and declare their presentation modules
(:mod:`.provenance`)."""

from importlib.metadata import PackageNotFoundError, version

# The package's version, from its metadata (pyproject.toml is the one place it is written): part of
# every code fingerprint (:mod:`.provenance`).  Here, not in the package root, so that the core never
# imports the root.  A source tree that was never installed has no metadata: "0+unknown" says so.
try:
    __version__ = version("labeldp-sim")
except PackageNotFoundError:
    __version__ = "0+unknown"
