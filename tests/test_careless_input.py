"""Careless inputs are refused at the mechanism boundary; the floating-point limitation is stated (issue 18).

Every refusal below ran before the boundary checks existed: the call returned (a label 0.5 echoed by
RR, a cube index past n_cells grown into the release, NaN through every clip, samples of shape (m, 2)
read as 2m samples, a keep probability of exactly 1.0) or died with a numpy traceback.  A refusal is
one :class:`ConfigError` line that names the argument.
"""

import contextlib
import inspect
import io
import math

import numpy as np
import pytest

from labeldp_sim.app import load_audits
from labeldp_sim.harness.errors import ConfigError
from labeldp_sim.papers.kclass import mechanisms as kclass_mechanisms
from labeldp_sim.papers.kclass.mechanisms import ALIBI, RandomizedResponse, RRWithPrior
from labeldp_sim.privacy import audit, protocols, rappor
from labeldp_sim.privacy.audit import CARELESS, careless_cases, low_bit_codes, run_careless
from labeldp_sim.privacy.grid import RAPPOR_EPSILON_LIMIT, RR_EPSILON_LIMIT
from labeldp_sim.privacy.protocols import (CubeData, Mechanism, NoPrivacy, check_cells,
                                           check_classes, check_reals)
from labeldp_sim.privacy.rappor import RAPPOR
from labeldp_sim.papers.table1 import mechanisms as table1_mechanisms
from labeldp_sim.papers.table1.mechanisms import (ExponentialMechanism, ExponentialMechanismFull, JointLaplace, JointRAPPOR,
                                                 LaplaceCubeMeanFull, LaplaceCubeMean,
                                           LaplaceLabel)
from labeldp_sim.papers.userlevel import mechanisms as userlevel_mechanisms
from labeldp_sim.papers.userlevel import randomizer as userlevel_randomizer
from labeldp_sim.papers.userlevel.data import UserValues
from labeldp_sim.papers.userlevel.mechanisms import (BinHistogram, ClippedMean, ItemLevelLaplace, MappedSamples,
                                              OneSampleLaplace, UserRandomizer, coordinate)

load_audits()
CARELESS_CASES = {c.name: c for c in careless_cases()}


def rng():
    return np.random.default_rng(0)


def refused(key):
    """The one-line refusal naming ``key``."""
    return pytest.raises(ConfigError, match=rf"^{key}: got [^\n]*; allowed: [^\n]*$")


# --------------------------------------------------------------------------- the audit's careless cases


@pytest.mark.parametrize("name", list(CARELESS_CASES))
def test_every_careless_input_of_the_audit_is_refused(name):
    result = run_careless(CARELESS_CASES[name])
    assert result.verdict == "refused" and result.ok, result.message
    assert result.message.startswith(f"{CARELESS_CASES[name].key}: got ")


class _PassThroughRR(RandomizedResponse):
    """Planted: a report that skips the boundary, and no cap on ε — what the careless cases exist to catch."""

    max_epsilon = math.inf

    def report(self, y, rng, *, K=None, cells=None, n_cells=None):
        return self._report(np.asarray(y), rng, K=K)


class _PassThroughHistogram(BinHistogram):
    """Planted: a law that reads the samples unchecked."""

    def law(self, x_user):
        return self._law(np.asarray(x_user, dtype=float))


def _planted(case, cls, *args):
    mechanism = cls if isinstance(case.mechanism, type) else cls(*args)
    return audit.Careless(case.name, mechanism, case.call, case.key, case.careless)


def test_a_planted_non_validating_mechanism_fails_its_careless_cases():
    rr_cases = [c for name, c in CARELESS_CASES.items() if name.startswith("rr:")]
    assert len(rr_cases) >= 3
    for case in rr_cases:
        result = run_careless(_planted(case, _PassThroughRR, 1.0))
        assert result.verdict == "ACCEPTED" and not result.ok, (case.name, result)
    # the example: BinHistogram on (m, 2) samples spends 2ε when nothing checks them
    case = CARELESS_CASES["ul_alg1_stage1: samples (m, 2), d = 1"]
    planted = _planted(case, _PassThroughHistogram, 1.0, -1.0, 0.5, 4)
    assert planted.call(planted.mechanism) == pytest.approx(2.0, abs=1e-12)  # two bins moved, over 2/ε
    assert run_careless(planted).verdict == "ACCEPTED"


def test_a_traceback_or_the_wrong_key_is_not_a_refusal():
    def index_error(mech):
        return np.zeros(2)[5]

    assert run_careless(audit.Careless("x: index", None, index_error, "y", "")).verdict == "WRONG ERROR"
    other_key = audit.Careless("rr: label −1", RandomizedResponse(1.0),
                               audit.calls("report", np.array([-1]), rng(), K=4), "K", "")
    assert run_careless(other_key).verdict == "WRONG ERROR"


def test_an_accepted_careless_input_fails_the_audit_run(monkeypatch, tmp_path):
    case = CARELESS_CASES["rr: label 0.5"]
    # patched where the runner looks them up
    monkeypatch.setattr(audit.runner, "cases", lambda eps, mutants=True: [])
    monkeypatch.setattr(audit.runner, "careless_cases", lambda eps: [case, _planted(case, _PassThroughRR, 1.0)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = audit.main(["--draws", "1000", "--out", str(tmp_path)])
    assert rc == 1
    lines = [line for line in out.getvalue().splitlines() if line.startswith("rr: label 0.5")]
    assert "refused" in lines[0] and "ACCEPTED" in lines[1] and "<-- expected refused" in lines[1]
    text = (tmp_path / "audit.md").read_text(encoding="utf-8")
    assert "| ACCEPTED |" in text and "| refused |" in text


# --------------------------------------------------------------------------- the cases, directly


def test_samples_of_the_wrong_dimension_are_refused():
    # the issue: BinHistogram(1, −1, .5, 4) on (4, 2) samples gave a loss of 2.0
    with refused("x_user"):
        BinHistogram(1.0, -1, .5, 4).privacy_loss(np.array([[-1, .9]] * 4), np.array([[-.4, .1]] * 4))
    x2 = np.zeros((8, 2))
    for mech in (ItemLevelLaplace(1.0, 1.0, 8), ClippedMean(1.0, -1.0, 1.0), OneSampleLaplace(1.0, 1.0)):
        with refused("x_user"):
            mech.randomize(x2, rng())
    with refused("x_user"):
        ItemLevelLaplace(1.0, 1.0, 8, 2).law(np.zeros((8, 3)))
    with refused("x_user"):
        ItemLevelLaplace(1.0, 1.0, 8).law(np.zeros(7))  # m is declared
    with refused("x_user"):
        ClippedMean(1.0, [-1.0, -1.0], [1.0, 1.0]).law(np.zeros(8))
    with refused("x_user"):
        BinHistogram(1.0, -1, .5, 4).law(np.zeros((0,)))
    mapped = MappedSamples(BinHistogram(1.0, -1.0, 1.0, 2), coordinate(1), linear=True, d=2)
    with refused("x_user"):
        mapped.law(np.zeros((8, 3)))
    with refused("f"):  # a map that merges samples changes what one user is
        MappedSamples(ClippedMean(1.0, -1.0, 1.0), lambda x: x.reshape(-1)[:1]).law(np.zeros((8, 2)))
    # what is allowed still works: (m,) and (m, 1) for d = 1, (m, d) otherwise
    # (a loss is an ℓ1 distance over the scale: 2/2 here, exact up to one rounding)
    naive = ClippedMean(1.0, -1.0, 1.0)
    assert naive.privacy_loss(np.full((8, 1), -5.0), np.full(8, 5.0)) == pytest.approx(1.0, abs=1e-12)
    low, high = np.tile([0.0, -5.0], (8, 1)), np.tile([0.0, 5.0], (8, 1))
    assert mapped.privacy_loss(low, high) == pytest.approx(1.0, abs=1e-12)


def test_user_groups_of_the_wrong_dimension_or_with_nan_are_refused():
    with refused("values"):
        ClippedMean(1.0, -1.0, 1.0).release_sum(UserValues.from_statistics(np.zeros((4, 2))), rng())
    with refused("values"):
        BinHistogram(1.0, -1, .5, 4).release_sum(UserValues.from_statistics(np.array([np.nan, 0.0])), rng())
    on_support = UserValues(np.array([[3, 1]]), np.ones(1, dtype=np.int64), True, support=np.array([0.0, np.inf]))
    with refused("values"):
        OneSampleLaplace(1.0, 1.0).release_sum(on_support, rng())
    with refused("values.m"):
        ItemLevelLaplace(1.0, 1.0, 8).release_sum(UserValues.from_samples(np.zeros((3, 4))), rng())
    with refused("values"):
        ClippedMean(1.0, -1.0, 1.0).release_sum(np.zeros(4), rng())


def test_labels_that_are_not_classes_are_refused():
    # the issue: RRWithPrior returned y = −1 unchecked, RR echoed y = 0.5
    prior = np.full((1, 4), 0.25)
    with refused("y"):
        RRWithPrior(1.0).report(np.array([-1]), rng(), K=4, prior=prior)
    for y in (np.array([0.5]), np.array([1.0]), np.array([4]), np.array([-1]), np.array([True]), np.zeros((2, 1), int)):
        for mech in (RandomizedResponse(1.0), RAPPOR(1.0), ALIBI(1.0)):
            with refused("y"):
                mech.report(y, rng(), K=4)
        with refused("y"):
            JointRAPPOR(1.0).report(y, rng(), K=4, cells=np.zeros(len(y), int), n_cells=2)
        with refused("y"):
            NoPrivacy().report(y, rng(), K=4)
    with refused("y"):
        ExponentialMechanism(1.0).release(CubeData.from_samples([0, 0], [0, 2], 1), rng(), 2, 1.0, 1, K=2)
    with refused("prior"):
        RRWithPrior(1.0).report(np.array([0]), rng(), K=4, prior=np.array([[np.nan, 0.5, 0.25, 0.25]]))
    with refused("prior"):
        RRWithPrior(1.0).report(np.array([0, 1]), rng(), K=4, prior=prior)


def test_cube_indices_outside_the_cubes_are_refused():
    # the issue: LaplaceCubeMean (features + label) grew an entry for a cube index >= n_cells
    with refused("cells"):
        LaplaceCubeMeanFull(1.0, 1.0).release(
            CubeData.from_samples(np.array([0, 2]), np.array([0.5, 0.5]), 2), rng(), 128, 0.25, 1)
    for cells in (np.array([-1]), np.array([2]), np.array([0.0]), np.array([0, 1])):
        with refused("cells"):
            JointRAPPOR(1.0).report(np.array([0]), rng(), K=2, cells=cells, n_cells=2)
        with refused("cells"):
            JointLaplace(1.0, 1.0).report(np.array([0.5]), rng(), cells=cells, n_cells=2)
        with refused("cells"):
            RAPPOR(1.0).collect(np.array([0]), rng(), K=2, cells=cells, n_cells=2)
    with refused("cells"):
        JointLaplace(1.0, 1.0).report(np.array([0.5]), rng())
    with refused("n_cells"):
        JointRAPPOR(1.0).report(np.array([0]), rng(), K=2, cells=np.array([0]), n_cells=0)


def test_nan_and_inf_are_refused_everywhere():
    for bad in (np.nan, np.inf, -np.inf):
        y = np.array([0.5, bad])
        for mech in (LaplaceLabel(1.0, 1.0), NoPrivacy()):
            with refused("y"):
                mech.report(y, rng())
        with refused("y"):
            CubeData.from_samples(np.array([0, 0]), y, 1)
        with refused("values"):
            CubeData.from_counts(np.array([[1, 1]]), np.array([0.5, bad]))
        with refused("counts"):
            CubeData.from_counts(np.array([[1.0, bad]]), np.array([0.5, 1.0]))
        with refused("x_user"):
            ClippedMean(1.0, -1.0, 1.0).randomize(np.r_[np.zeros(7), [bad]], rng())
    with refused("counts"):
        CubeData.from_counts(np.array([[1, -1]]), np.array([0.5, 1.0]))
    with refused("counts"):
        CubeData.from_counts(np.array([[1.5, 1.0]]), np.array([0.5, 1.0]))


def test_epsilon_beyond_float64_is_refused_and_keep_probabilities_stay_below_one():
    # the issue: RandomizedResponse(40).keep_probability(4) == 1.0, NaN from 709.8; RAPPOR's p = 1.0 above 74
    for eps in (40.0, 709.8, 1e6):
        for cls in (RandomizedResponse, RRWithPrior):
            with refused("epsilon"):
                cls(eps)
    for eps in (72.1, 80.0):
        for cls in (RAPPOR, JointRAPPOR, ExponentialMechanism):
            with refused("epsilon"):
                cls(eps)
    # issue 30: the cap is where the loss realised on the 2^-53 grid of uniforms stays ≤ ε, not the grid's edge
    with pytest.raises(ConfigError, match=r"\(0, 15\.6\]: .*2\^-53 grid"):
        RandomizedResponse(36.0)
    for cls in (RAPPOR, JointRAPPOR):
        with refused("epsilon"):
            cls(40.0)
    with refused("epsilon"):
        ExponentialMechanismFull(145.0)
    for eps in np.r_[np.geomspace(1e-3, RR_EPSILON_LIMIT, 40), RR_EPSILON_LIMIT]:
        rr = RandomizedResponse(eps)
        for K in (2, 3, 10):
            keep = rr.keep_probability(K)
            assert np.isfinite(keep) and 0 < keep < 1 and 1 - keep >= 2.0 ** -52
            assert np.all(rr.transition_matrix(K) > 0)
        bits = RAPPOR(min(2 * eps, RAPPOR_EPSILON_LIMIT))
        assert 0 < bits.q < bits.p < 1 and 1 - bits.p >= 2.0 ** -52
    # a tiny ε overflows every Laplace scale: refused, never ±inf or NaN reports
    for build in (lambda e: LaplaceLabel(e, 1.0), ALIBI, lambda e: JointLaplace(e, 1.0)):
        with refused("epsilon"):
            build(1e-320)
    with refused("epsilon"):
        ClippedMean(1e-320, -1.0, 1.0).randomize(np.zeros(4), rng())
    with refused("epsilon"):
        LaplaceCubeMean(1e-308, 1.0).release(CubeData.from_samples([0], [0.5], 1), rng(), 1, 1.0, 1)
    for bad in (0, -1.0, np.nan, np.inf, True, "1", None):
        with refused("epsilon"):
            RandomizedResponse(bad)
        with refused("epsilon"):
            BinHistogram(bad, -1.0, 0.5, 4)


def test_valid_calls_draw_the_same_numbers_as_the_law():
    """The boundary returns the arrays as given and draws nothing: reports are the law's own draws."""
    y = np.array([0, 3, 1, 2, 2, 0])
    assert check_classes(y, 4) is y and check_cells(y, 4, len(y)) is y
    z = np.array([0.5, -20.0, 3.0])
    assert check_reals(z) is z
    data = CubeData.from_samples(y, z.repeat(2), 4)
    assert data.cells is y
    rr = RandomizedResponse(1.3)
    expected_rng = np.random.default_rng(7)
    keep = expected_rng.random(len(y)) < rr.keep_probability(4)
    expected = np.where(keep, y, (y + expected_rng.integers(1, 4, size=len(y))) % 4)
    assert np.array_equal(rr.report(y, np.random.default_rng(7), K=4), expected)
    lap = LaplaceLabel(0.7, 1.0)
    expected = np.random.default_rng(8).laplace(0.0, lap.scale, size=3) + np.clip(z, -1.0, 1.0)
    assert np.array_equal(lap.report(z, np.random.default_rng(8)), expected)


# --------------------------------------------------------------------------- part 4: the stated limitation


def _mechanism_classes():
    """Every concrete mechanism of the package, from the registries the audit iterates."""
    found = [cls for cls in audit.audited_classes() if cls.__module__.startswith("labeldp_sim.")]
    assert {RAPPOR, JointRAPPOR, ALIBI, BinHistogram, MappedSamples} <= set(found)
    assert all(issubclass(cls, Mechanism) and not inspect.isabstract(cls) for cls in found)
    return sorted(set(found) - {NoPrivacy}, key=lambda cls: cls.__name__)


@pytest.mark.parametrize("cls", _mechanism_classes(), ids=lambda cls: cls.__name__)
def test_every_mechanism_says_it_is_a_simulation_mechanism(cls):
    doc = " ".join(cls.__doc__.split())
    assert "not for releasing real data" in doc
    if "Laplace" in cls.__name__ or issubclass(cls, (UserRandomizer, ALIBI, LaplaceCubeMean)):
        assert "floating-point Laplace noise leaks through its low-order bits (Mironov 2012)" in doc


def test_module_docstrings_state_the_limitation():
    for module in (protocols, table1_mechanisms, kclass_mechanisms, userlevel_mechanisms, userlevel_randomizer, rappor,
                   audit):
        doc = " ".join(module.__doc__.split())
        assert "Mironov 2012" in doc or "floating-point" in doc.lower(), module.__name__
        if module is not audit:
            assert "not for releasing real data" in doc, module.__name__


def test_the_low_bit_event_shows_the_leak_the_docstrings_state():
    """LaplaceLabel(1, T=1) on +1 vs −1 (the issue's example): the last mantissa bit gives ε_lower ≫ ε."""
    mech, n = LaplaceLabel(1.0, 1.0), 100_000
    plus = mech.report(np.ones(n), np.random.default_rng(1))
    minus = mech.report(-np.ones(n), np.random.default_rng(2))
    assert audit.black_box(low_bit_codes(plus), low_bit_codes(minus)).eps_lower > 3.0
    # the same location on both sides: no leak (a valid lower bound, so none beyond 0 up to α)
    again = mech.report(np.ones(n), np.random.default_rng(3))
    assert audit.black_box(low_bit_codes(plus), low_bit_codes(again)).eps_lower <= 0.1
    codes = low_bit_codes(np.array([[1.0, 9.0], [1.0 + 2.0 ** -52, 9.0], [-1.0, 9.0]]))
    assert codes[0] != codes[1] and codes[0] != codes[2] and (codes[0] & 1) == 0 and (codes[1] & 1) == 1


def test_the_careless_rows_are_their_own_kind():
    result = run_careless(CARELESS_CASES["rr: label 0.5"])
    assert result.kind == CARELESS and result.expected == "refused" and math.isnan(result.eps_lower)
