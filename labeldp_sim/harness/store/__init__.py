"""The trial store: every computed trial, once, in one SQLite database per results directory.

``<results_dir>/trials.sqlite`` holds one table per record kind (Table I rate
trials, K-class trials, digits trials).  A record is keyed on (experiment,
config key, seed key[, method]); the config key hashes the configuration *and*
the code that computes the numbers (:func:`labeldp_sim.harness.provenance.config_key`),
so a code change never reuses old trials.

Five modules, each one concern:

* :mod:`.schema`: what a record is (:class:`Column`, :class:`Schema`), its SQL
  values and its checksum;
* :mod:`.database`: the file, trusted only once checked (integrity, format
  version, table shapes) and the errors a damaged or foreign store raises;
* :mod:`.trials`: :class:`TrialStore`, loading and writing records in
  transactions, and the ``runs`` table;
* :mod:`.memo`: intermediate values (no trial) kept across processes and runs in
  ``<results_dir>/memo.sqlite``, keyed on the code (:func:`memoized`);
* :mod:`.exports`: files written whole (:func:`atomic_write`, :func:`locked`,
  :func:`staged`), which every export and report uses.

Import from here: the names below are the store's whole public surface.
"""

from labeldp_sim.harness.store.database import (
    STORE_NAME, STORE_VERSION, StoreDamaged, StoreError, StoreMismatch)
from labeldp_sim.harness.store.exports import MANIFEST, STAGING_PREFIX, atomic_write, locked, staged
from labeldp_sim.harness.store.memo import MEMO_NAME, memo_count, memo_in, memoized
from labeldp_sim.harness.store.schema import Column, Schema
from labeldp_sim.harness.store.trials import TrialStore

__all__ = ["Column", "Schema", "TrialStore", "atomic_write", "locked", "staged", "STORE_NAME",
           "StoreError", "StoreDamaged", "StoreMismatch", "STORE_VERSION", "MANIFEST", "STAGING_PREFIX",
           "MEMO_NAME", "memo_count", "memo_in", "memoized"]
