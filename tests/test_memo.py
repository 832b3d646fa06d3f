"""The memo of intermediates (harness.store.memo): exact, keyed on the code, never in the way."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from labeldp_sim.harness.cli import compose_job, run_experiment, validate_job
from labeldp_sim.harness.store import MEMO_NAME, memo_count, memo_in, memoized
from labeldp_sim.harness.store.memo import Memo
from labeldp_sim.papers.table1.families import classification


def _counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value

    return compute, calls


def test_a_value_is_computed_once_per_code_and_read_back_bit_for_bit(tmp_path):
    path = tmp_path / MEMO_NAME
    value = {"weights": np.array([0.1, 1 / 3, np.nextafter(1.0, 2.0)]), "mass": 2.0 ** -60}
    compute, calls = _counting(value)
    with memo_in(path, "code-a"):
        first = memoized("f", (1, 0.5, "x"), compute)
    with memo_in(path, "code-a"):
        again = memoized("f", (1, 0.5, "x"), compute)
        other_args = memoized("f", (1, 0.25, "x"), compute)
    with memo_in(path, "code-b"):  # another code: never the stored value
        memoized("f", (1, 0.5, "x"), compute)
    assert len(calls) == 3
    assert first is value and again is not value
    assert again["weights"].tobytes() == value["weights"].tobytes() and again["mass"] == value["mass"]
    assert other_args["mass"] == value["mass"]
    assert memo_count(path, "code-a") == 2 and memo_count(path, "code-b") == 1 and memo_count(path, "code-c") == 0


def test_no_memo_in_use_computes_and_writes_nothing(tmp_path):
    compute, calls = _counting(7)
    assert memoized("f", (1,), compute) == 7 and memoized("f", (1,), compute) == 7
    assert len(calls) == 2
    assert memo_count(tmp_path / MEMO_NAME, "code") == 0 and not (tmp_path / MEMO_NAME).exists()


def test_a_garbled_value_is_recomputed_and_replaced(tmp_path):
    path = tmp_path / MEMO_NAME
    compute, calls = _counting([1.5, 2.5])
    with memo_in(path, "code"):
        memoized("f", (3,), compute)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE memo SET value = ?", (b"\x80\x05garbage",))
    with memo_in(path, "code"):
        assert memoized("f", (3,), compute) == [1.5, 2.5]
    with memo_in(path, "code"):
        assert memoized("f", (3,), compute) == [1.5, 2.5]
    assert len(calls) == 2


@pytest.mark.parametrize("damage", ["directory", "not-sqlite", "missing-folder"])
def test_a_memo_that_cannot_be_used_is_skipped(tmp_path, damage):
    path = tmp_path / MEMO_NAME
    if damage == "directory":
        path.mkdir()
    elif damage == "not-sqlite":
        path.write_bytes(b"this is not a database" * 100)
    else:
        path = tmp_path / "gone" / MEMO_NAME
    compute, calls = _counting(4.0)
    with memo_in(path, "code"):
        assert memoized("f", (1,), compute) == 4.0
        assert memoized("f", (1,), compute) == 4.0
    assert len(calls) == 2
    with Memo(path, "code") as memo:
        assert memo.count() == 0


def _cls_run(results, reuse=True):
    overrides = ["experiment=cls_label_cdp", "mode=law_free", f"paths.results_dir={results}", "law_free.d=[2]",
                 "law_free.G_max={2:32}", "law_free.sweeps.eps.values=[0.00000001,0.0000001]",
                 "runner.backend=sequential", "runner.progress=false", f"runner.reuse={str(reuse).lower()}"]
    cfg = compose_job(overrides)
    return run_experiment(cfg, overrides, None, validate_job(cfg))


def test_a_law_free_run_keeps_its_tilt_measures_and_a_rerun_from_them_gives_the_same_numbers(
        tmp_path, monkeypatch, capsys):
    """The exact classification path memoizes its tilt measures; the numbers made from stored ones are
    the numbers made from fresh ones, to the bit (no tolerance: the same floats in the same order)."""
    first = _cls_run(tmp_path)
    stored = memo_count(tmp_path / MEMO_NAME, _fingerprint())
    assert stored > 0
    # the process's own cache would hide the memo: the rerun starts from an empty one, and counts
    # how many measures it still had to compute
    classification._tilt_measure.cache_clear()
    computed = []
    real = classification._computed_tilt_measure
    monkeypatch.setattr(classification, "_computed_tilt_measure", lambda *a: computed.append(a) or real(*a))
    capsys.readouterr()
    again = _cls_run(tmp_path, reuse=False)
    said = "".join(capsys.readouterr())
    assert computed == []
    assert memo_count(tmp_path / MEMO_NAME, _fingerprint()) == stored
    np.testing.assert_array_equal(first["trials"].excess_risk.to_numpy(), again["trials"].excess_risk.to_numpy())
    assert f"intermediate values in {tmp_path / MEMO_NAME}: {stored:,} of this code were there" in said


def _fingerprint():
    from labeldp_sim.harness.provenance import code_fingerprint

    return code_fingerprint(validate_job(compose_job(["experiment=cls_label_cdp", "mode=law_free"])).packages)
