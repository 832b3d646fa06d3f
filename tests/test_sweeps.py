"""The one sweep validator of the core (harness/sweeps.py): lists of axis values and sweep mappings."""

import pytest

from labeldp_sim.harness.components import Interval
from labeldp_sim.harness.errors import ConfigError, is_int
from labeldp_sim.harness.sweeps import Rule, sweep_mapping, sweep_values

N = Rule(lambda v: is_int(v) and v >= 2, "integers >= 2", int)
EPS = Interval(float, 0, None, closed="neither")


def _error(call):
    with pytest.raises(ConfigError) as err:
        call()
    assert "\n" not in str(err.value)
    return err.value


def test_values_are_a_non_empty_list_of_accepted_distinct_values():
    assert sweep_values("a.values", [2, 4.0], EPS) == [2, 4.0]
    assert sweep_values("a.values", [2, 3], N) == [2, 3] and all(type(v) is int for v in sweep_values(
        "a.values", [2, 3], N))
    err = _error(lambda: sweep_values("a.values", 3, N, "a.values=[2,3]"))
    assert err.key == "a.values" and err.allowed == "a non-empty list of integers >= 2 (e.g. a.values=[2,3])"
    err = _error(lambda: sweep_values("a.values", [2, 1], N))
    assert (err.key, err.got, err.allowed) == ("a.values", 1, "integers >= 2")
    err = _error(lambda: sweep_values("a.values", [2, 2.0], EPS))  # 2 and 2.0: the same trials twice
    assert err.allowed == f"distinct {EPS.describe()}"
    assert _error(lambda: sweep_values("a.values", [2, 2], N, repeated="one each")).allowed == "one each"


def test_a_sweep_mapping_holds_the_values_and_each_other_axis_fixed():
    rules = {"n": N, "eps": EPS}
    got = sweep_mapping("s", {"n": {"values": [2, 4], "eps": 1.0}, "eps": {"values": [0.5], "n": 8}},
                        rules, ("n", "eps"))
    assert got == {"n": {"values": [2, 4], "eps": 1.0}, "eps": {"values": [0.5], "n": 8}}
    for sweeps, key in [({}, "s"), ({"d": {}}, "s.d"), ({"n": [2]}, "s.n"),
                        ({"n": {"values": [2], "eps": 1.0, "m": 3}}, "s.n.m"),
                        ({"n": {"values": [2]}}, "s.n.eps"), ({"n": {"values": [1], "eps": 1.0}}, "s.n.values"),
                        ({"n": {"values": [2], "eps": 0}}, "s.n.eps")]:
        assert _error(lambda: sweep_mapping("s", sweeps, rules, ("n", "eps"))).key == key


def test_a_sweep_mapping_names_what_is_missing_and_passes_its_wording_on():
    rules = {"n": N, "eps": EPS}
    err = _error(lambda: sweep_mapping("s", {"n": {"values": [2]}}, rules, ("n", "eps")))
    assert (err.key, err.allowed) == ("s.n.eps", "a value (the fixed eps of the n sweep)")
    err = _error(lambda: sweep_mapping("s", {"n": {"values": 2, "eps": 1.0}}, rules, ("n", "eps"),
                                       {"n": "s.n.values=[2,4]", "eps": "s.eps.values=[0.5]"}))
    assert err.allowed == "a non-empty list of integers >= 2 (e.g. s.n.values=[2,4])"
    err = _error(lambda: sweep_mapping("s", {"n": {"values": [2, 2], "eps": 1.0}}, rules, ("n", "eps"),
                                       repeated="one each"))
    assert (err.key, err.allowed) == ("s.n.values", "one each")
