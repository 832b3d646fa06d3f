"""Swept values: the one validator of every kind's lists of axis values and sweep mappings.

A kind sweeps its trials over lists of values (``kclass.K``, ``digits.eps``,
``userlevel.d``) and over sweep mappings, one per swept axis, each holding the
axis's ``values`` and the fixed value of every other axis::

    sweeps:
      n: {values: [8192, 32768], m: 4096, eps: 1.0}
      m: {values: [16, 256], n: 32768, eps: 1.0}

What one value of an axis may be is a
:class:`~labeldp_sim.harness.components.Constraint` (an ``Interval``, ``Options``...,
or a :class:`Rule` for a test with its own wording).  Every refusal is one
:class:`~labeldp_sim.harness.errors.ConfigError` naming the key and the allowed values.
"""

from __future__ import annotations

from labeldp_sim.harness.components import Constraint
from labeldp_sim.harness.errors import MISSING, check, is_number

__all__ = ["Rule", "sweep_values", "sweep_mapping"]


class Rule(Constraint):
    """What one value of an axis may be: ``test(value)``, described as ``allowed``; ``cast`` turns
    an accepted value into the one the kind uses (``int``, ``float``)."""

    def __init__(self, test, allowed: str, cast=None):
        self.test, self.allowed, self.cast = test, allowed, cast

    def accepts(self, value) -> bool:
        return bool(self.test(value))

    def describe(self) -> str:
        return self.allowed


def _cast(rule: Constraint, value):
    return rule.cast(value) if rule.cast is not None else value


def sweep_values(key: str, values, rule: Constraint, example: str | None = None,
                 repeated: str | None = None) -> list:
    """``values`` validated: a non-empty list, each value accepted by ``rule``, no value twice.

    A value that is not a list (``kclass.K=3``) is refused as a whole, ``example``
    showing the list syntax; a value ``rule`` refuses is refused on its own; a
    repeated value too (it would name the same trials twice: ``repeated`` is the
    allowed text of that error, ``distinct <allowed>`` by default; numbers compare
    as floats, so 1 and 1.0 are the same value).  Returns the values, each through
    the rule's ``cast`` when it has one.
    """
    allowed = rule.describe()
    hint = f" (e.g. {example})" if example else ""
    check(isinstance(values, list) and len(values) > 0, key, values, f"a non-empty list of {allowed}{hint}")
    for v in values:
        check(rule.accepts(v), key, v, allowed)
    distinct = {float(v) if is_number(v) else repr(v) for v in values}
    check(len(distinct) == len(values), key, values, repeated or f"distinct {allowed}")
    return [_cast(rule, v) for v in values]


def sweep_mapping(key: str, sweeps, rules: dict, fixed: tuple, example: str | dict | None = None,
                  repeated: str | None = None) -> dict:
    """The sweep mapping at ``key`` validated: ``{axis: {"values": [...], <fixed axis>: value}}``.

    ``rules`` maps every axis that may be swept to its :class:`Constraint`.
    ``sweeps`` must be a non-empty mapping from such axes to sweeps; a sweep
    must be a mapping with exactly ``values`` (checked by :func:`sweep_values`,
    ``example`` showing the list syntax, one for all axes or one per axis;
    ``repeated`` as there) and the fixed value of each axis of ``fixed`` other
    than the swept one (checked by that axis's rule).  Values come back through
    the rules' ``cast``, in the order given.
    """
    axes = tuple(rules)
    check(isinstance(sweeps, dict) and sweeps, key, sweeps,
          f"a mapping axis -> {{values, and the other axes}}, axes in {axes}")
    out = {}
    for axis, sweep in sweeps.items():
        check(axis in rules, f"{key}.{axis}", sweep, list(axes))
        others = [a for a in fixed if a != axis]
        allowed = ["values", *others]
        check(isinstance(sweep, dict), f"{key}.{axis}", sweep, f"a mapping with keys {allowed}")
        for name in sweep:
            check(name in allowed, f"{key}.{axis}.{name}", sweep[name], allowed)
        for name in allowed:
            check(name in sweep, f"{key}.{axis}.{name}", MISSING,
                  f"the swept {axis} values (a list)" if name == "values"
                  else f"a value (the fixed {name} of the {axis} sweep)")
        hint = example.get(axis) if isinstance(example, dict) else example
        values = sweep_values(f"{key}.{axis}.values", sweep["values"], rules[axis], hint, repeated)
        out[axis] = {"values": values}
        for other in others:
            rule = rules[other]
            check(rule.accepts(sweep[other]), f"{key}.{axis}.{other}", sweep[other], rule.describe())
            out[axis][other] = _cast(rule, sweep[other])
    return out
