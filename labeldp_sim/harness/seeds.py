"""The one derivation of a random stream from the root seed.

Every stream of every paper is ``default_rng(SeedSequence(seed, spawn_key=words))``
for some tuple of words (non-negative integers) naming it: a trial's
(``*point.seed_words, replicate``), a keyed stream's ``stable_words(repr(key))``,
a law-free instance's (``*point.seed_words, replicate, ...``).  Streams of
different words are independent, and a stream does not depend on which other
streams a run draws, their order, or the process drawing it.  Deriving them all
here keeps that one rule in one place: a second recipe would be a second set of
streams to reason about.
"""

from __future__ import annotations

import numpy as np

__all__ = ["derive_rng"]


def derive_rng(seed: int, *words: int) -> np.random.Generator:
    """The random stream named by ``words`` under the root ``seed``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=words))
