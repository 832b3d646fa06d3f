"""What makes a Table I run's numbers, named for a reader: mechanism, estimator and the family's
smoothness β, margin γ (classification), moment p (heavy tails) and classes K.

A figure title, a row of ``table1.md`` and a row of the report's index name a run by these, so
that a run with a swapped mechanism or β = 0.5 is never read as the committed cell.  Two
sources give the same dictionary: a validated spec (:func:`spec_parameters`, while a run
writes its figures) and a run's resolved ``config.yaml`` (:func:`config_parameters`, when a
table is assembled from the files of a results folder).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["FAMILY_PARAMETERS", "spec_parameters", "config_parameters", "parameters_text"]

# The family parameters a Table I rate depends on (config key -> the paper's symbol), in the
# order a reader expects them.
FAMILY_PARAMETERS = {"beta": "β", "gamma": "γ", "p": "p", "K": "K"}


def _number(value):
    """A family parameter as a plain number (None where the family has none: γ of a regression)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() else number


def _collect(mechanism, estimator, family: Mapping) -> dict:
    found = {"mechanism": str(mechanism), "estimator": str(estimator)}
    for key, symbol in FAMILY_PARAMETERS.items():
        value = _number(family.get(key))
        if value is not None:
            found[symbol] = value
    return found


def spec_parameters(spec) -> dict:
    """``{"mechanism": ..., "estimator": ..., "β": ..., ...}`` of a validated Table I spec (law-tied
    or law-free): its component labels and the attributes of its family (the same at every d)."""
    family = next(iter(spec.distributions.values()), None)
    # each family has the parameters of its task only (a regression family has no K): None for the others
    values = {key: getattr(family, key, None) for key in FAMILY_PARAMETERS}
    return _collect(spec.labels.get("mechanism", "?"), spec.labels.get("estimator", "?"), values)


def config_parameters(config: Mapping) -> dict:
    """The same dictionary from a run's resolved config (its ``config.yaml`` as a mapping)."""
    node = lambda name: config.get(name) if isinstance(config.get(name), Mapping) else {}  # noqa: E731
    return _collect(node("mechanism").get("name", "?"), node("estimator").get("name", "?"), node("distribution"))


def parameters_text(parameters: Mapping, *, components: bool = True) -> str:
    """``"laplace_cube, cube_mean, β = 0.5, γ = 1"``: a title's or a table cell's words for a run
    (without the components when ``components`` is False)."""
    words = [str(parameters[k]) for k in ("mechanism", "estimator") if components and k in parameters]
    words += [f"{symbol} = {parameters[symbol]:g}" for symbol in FAMILY_PARAMETERS.values() if symbol in parameters]
    return ", ".join(words)
