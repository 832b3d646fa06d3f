"""The data paths of a Table I trial (``runner.path``), one enum every module asks."""

from __future__ import annotations

import enum

__all__ = ["DataPath"]


class DataPath(enum.StrEnum):
    """How a trial gets its data; the values are ``runner.path``'s spellings.

    A :class:`enum.StrEnum` so that configs, stored rows and messages keep the
    plain strings (``str(DataPath.SUFFICIENT) == "sufficient"``).

    AUTO
        the exact expected risk where the estimator states one, else sufficient
        statistics where the family and the estimator have them, else per sample
        (an experiment resolves it per point; no trial runs on it);
    PER_SAMPLE
        the reference: N samples, the mechanism's report per sample;
    SUFFICIENT
        the per-cube counts (or the kNN marginal law) drawn exactly in law;
    EXACT
        the expected risk in closed form: no data are drawn.
    """

    AUTO = "auto"
    PER_SAMPLE = "per_sample"
    SUFFICIENT = "sufficient"
    EXACT = "exact"
