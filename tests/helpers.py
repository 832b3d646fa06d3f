"""Test-only components, reached by their registered names once this module is imported."""

from labeldp_sim.privacy.rappor import RAPPOR


class RegressionOnlyRAPPOR(RAPPOR):
    """A label-LDP mechanism that claims to fit regression only."""

    name = "regression_only_rappor"
    tasks = ("regression",)
