"""Points of an experiment's plan, and the keys that name their random streams.

A paper's grid point (Table I's (d, N, ε), a user-level (n, m, ε)...) subclasses
:class:`Point` and says only what identifies it (:attr:`Point.id`).  Every
stream of its trials is keyed on a hash of that id, so a trial's numbers do not
depend on run order, on the other points of the grid or on the process drawing
them.  The core knows no paper: what a point carries beyond its id is the
paper's.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from functools import cached_property

import numpy as np

from labeldp_sim.harness.seeds import derive_rng

__all__ = ["Point", "stable_words", "keyed_rng"]


def stable_words(text: str) -> tuple:
    """Four 32-bit words of sha256(text): a spawn key that does not depend on run order."""
    digest = hashlib.sha256(text.encode()).digest()
    return tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))


def keyed_rng(seed: int, *key) -> np.random.Generator:
    """The random stream named by ``key`` (any values with a stable repr) under the root ``seed``.

    Streams of different keys are independent, and a stream does not depend on
    which other streams a run draws, their order, or the process drawing it.
    """
    return derive_rng(seed, *stable_words(repr(key)))


class Point(ABC):
    """One point of one experiment: its :attr:`id` names the streams of its trials.

    Subclasses are usually frozen dataclasses; :attr:`seed_words` is cached in
    the instance's ``__dict__``, which a frozen dataclass still has.
    """

    @property
    @abstractmethod
    def id(self) -> str:
        """Stable identity: the same text for the same point, whatever else the run holds."""

    @cached_property
    def seed_words(self) -> tuple:
        """The spawn key of this point's streams: :func:`stable_words` of its id."""
        return stable_words(self.id)

    def seed_key(self, replicate: int) -> str:
        """The ``seed_key`` column of one replicate: point hash and replicate index."""
        return f"{self.seed_words[0]:08x}{self.seed_words[1]:08x}-{replicate}"
