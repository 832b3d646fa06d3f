"""The theory a user-level row is checked against is computed from every parameter of its run (issue 30).

A law-free heavy-tailed (spike) run at p = 4 was compared with the p = 2 rate: the law-free fit
passed only β, γ and D to the rates.  Both fits (per-trial and law-free) now take the rate's
arguments from one function; these tests change each parameter a rate depends on and check that
the expected exponent moves as the rate's formula says.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from labeldp_sim.papers.userlevel import report
from labeldp_sim.papers.userlevel.law_free import fit as law_free_fit
from labeldp_sim.papers.userlevel.experiments import TASKS, families
from labeldp_sim.papers.userlevel.theory import FAMILY_RATE_ARGUMENTS, Rate, expected_slope

POINT = {"n": 1e6, "m": 64.0, "eps": 1.0, "d": 1}
NS = np.logspace(6, 9, 7)


def test_every_family_parameter_a_rate_takes_is_passed():
    """A family parameter named like an argument of Rate.value reaches the rate."""
    rate_args = set(inspect.signature(Rate.value).parameters) - {"self", "n", "m", "eps", "d"}
    assert set(FAMILY_RATE_ARGUMENTS) == rate_args
    for task in TASKS:
        for name, cls in families(task).items():
            params = set(inspect.signature(cls.__init__).parameters) - {"self"}
            assert params & rate_args <= set(FAMILY_RATE_ARGUMENTS), (task, name)


def _law_free_theory(rate, family_params):
    spec = SimpleNamespace(family_params=family_params)
    frame = pd.DataFrame([POINT])
    return expected_slope(rate, "n", NS, law_free_fit._fixed(spec, "n", frame, 1))


def _trial_theory(rate, family_params):
    spec = SimpleNamespace(family_params=family_params)
    fixed = {k: v for k, v in report._fixed(spec, SimpleNamespace(**POINT)).items() if k != "n"}
    return expected_slope(rate, "n", NS, fixed)


@pytest.mark.parametrize("theory", [_law_free_theory, _trial_theory], ids=["law_free", "per_trial"])
def test_spike_rate_follows_p(theory):
    # M_p^{2/p}(m²nε²)^{−(1−1/p)}: the n-exponent is −(1 − 1/p), exactly (one power term)
    for p in (2.0, 4.0, 8.0):
        assert theory("spike_lower", {"p": p, "M_p": 3.0}) == pytest.approx(-(1 - 1 / p), abs=1e-9)


@pytest.mark.parametrize("theory", [_law_free_theory, _trial_theory], ids=["law_free", "per_trial"])
@pytest.mark.parametrize("beta, gamma", [(1.0, 1.0), (0.5, 1.0), (1.0, 2.0), (0.5, 0.5)])
def test_classification_rate_follows_beta_and_gamma(theory, beta, gamma):
    # (nmε²)^{−β(1+γ)/(2(d+β))} + (mn)^{−β(1+γ)/(2β+d)}: at ε = 1, m = 64 the private term
    # dominates over n ∈ [1e6, 1e9], so the local slope sits near −β(1+γ)/(2(1+β)); the
    # non-private term (smaller by a power of n) moves it by less than 0.02 there
    slope = theory("thm10_lower", {"beta": beta, "gamma": gamma, "c": 1.0})
    assert slope == pytest.approx(-beta * (1 + gamma) / (2 * (1 + beta)), abs=0.02)


def test_heavy_rate_follows_p_and_not_its_default():
    at_2 = _law_free_theory("spike_lower", {"p": 2.0})
    at_4 = _law_free_theory("spike_lower", {"p": 4.0})
    assert at_4 - at_2 == pytest.approx(-0.25, abs=1e-9)
