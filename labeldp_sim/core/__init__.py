"""The harness every paper shares: points and seeds, the trial store, the runner, fits, plots,
validation helpers and the CLI.  It imports no paper package; papers register experiment kinds
(:mod:`.kinds`)."""
