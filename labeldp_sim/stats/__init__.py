"""The statistics every paper shares: log-log slope fits with their intervals (:mod:`.fit`) and the
sliding windows whose local slopes give a law-free verdict (:mod:`.windows`).  Imports nothing of
the package."""
