"""Test-only classes referenced by ``_target_`` overrides."""

from labeldp_sim.privacy.rappor import RAPPOR


class RegressionOnlyRAPPOR(RAPPOR):
    """A label-LDP mechanism that claims to fit regression only."""

    tasks = ("regression",)
