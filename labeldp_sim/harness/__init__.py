"""The harness every paper runs on, the lowest layer of the package (docs/layout.md): the plug-in
contract (:mod:`.components`) and experiment kinds (:mod:`.kinds`), points and seeds, the runner
(:mod:`.runner`) and its cluster (:mod:`.cluster`), the trial store and atomic exports
(:mod:`.store`), config validation (:mod:`.config`, :mod:`.settings`, :mod:`.sweeps`,
:mod:`.reads`, :mod:`.conf_path`), provenance and code fingerprints (:mod:`.provenance`),
interrupts, errors and the CLI.  It imports no other wing of the package and no paper: papers
register experiment kinds and components, and declare their presentation modules."""

from importlib.metadata import PackageNotFoundError, version

# The package's version, from its metadata (pyproject.toml is the one place it is written): part of
# every code fingerprint (:mod:`.provenance`).  Here, not in the package root, so that the core never
# imports the root.  A source tree that was never installed has no metadata: "0+unknown" says so.
try:
    __version__ = version("labeldp-sim")
except PackageNotFoundError:
    __version__ = "0+unknown"
