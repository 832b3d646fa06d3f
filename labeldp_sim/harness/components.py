"""The plug-in contract: components that declare their parameters, reached by their registered name.

Every object a config names — a family, a mechanism, an estimator, a K-class
method, a user-level randomizer — is a :class:`Component`.  Like
scikit-learn's ``_parameter_constraints``, the class *declares* its keyword
parameters and what each accepts (:class:`Interval`, :class:`Options`,
:class:`Boolean`, :class:`Text`, :class:`Nullable`, :class:`AnyOf`, :class:`WithNote`), so the
harness validates a config node, and says what is allowed, without building
anything (:func:`check_arguments`, :func:`build`).  Constraints that tie two
parameters together (``L <= T``) stay in the class's ``__init__``; their
:class:`~labeldp_sim.harness.errors.ConfigError` gets the group prefix.

A concrete subclass with a ``group`` and a ``name`` is registered when its module
is imported (:func:`components`): the tests and the privacy audit iterate these
registries, so a new mechanism is a class, its YAML and (optionally) its test.

**One address.**  A config reaches a component by its registered ``name`` only
(``mechanism: {name: laplace_cube, T: theory}``, ``methods: [rr, alibi]``), never by
a dotted ``_target_`` path: the name is what the outputs label, it survives a
module moving, and a list of components (K-class methods, user-level
estimators) reads as names.  A class outside the package registers by being
imported (``LABELDP_SIM_PLUGINS``); two classes claiming one name is an error.

The core knows no paper: the groups are plain strings chosen by the papers.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from typing import ClassVar

from labeldp_sim.harness.errors import ConfigError, check, first_line, is_int, is_number

__all__ = ["Constraint", "Interval", "Options", "Boolean", "Text", "Nullable", "AnyOf", "WithNote", "Component",
           "components", "by_name", "component_class", "check_arguments", "build", "instantiate",
           "ADDRESS"]

# the key of a config node that names its component (the registered name)
ADDRESS = "name"


class Constraint(ABC):
    """What one parameter accepts, and how to say it.

    ``cast``, where not None, turns an accepted value into the one the kind uses
    (``int``, ``float``: a sweep's :class:`~labeldp_sim.harness.sweeps.Rule`); None keeps it.
    """

    cast = None

    @abstractmethod
    def accepts(self, value) -> bool:
        """Whether ``value`` is allowed."""

    @abstractmethod
    def describe(self) -> str:
        """The allowed values, as the ``allowed:`` part of an error."""


class Interval(Constraint):
    """A number in an interval: ``Interval(float, 0, 1, closed="right")`` is (0, 1].

    ``kind`` is ``int`` (integers, never bools) or ``float`` (finite numbers,
    integers included).  ``None`` for a bound leaves that side open-ended.
    ``note`` is added to the description in parentheses.
    """

    def __init__(self, kind: type, low=None, high=None, closed: str = "both", note: str = ""):
        check(kind in (int, float), "kind", kind, "int, float")
        check(closed in ("both", "left", "right", "neither"), "closed", closed, "both, left, right, neither")
        self.kind, self.low, self.high, self.closed, self.note = kind, low, high, closed, note

    def accepts(self, value) -> bool:
        if not (is_int(value) if self.kind is int else is_number(value)):
            return False
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and not (value >= self.low if left else value > self.low):
            return False
        return self.high is None or (value <= self.high if right else value < self.high)

    def describe(self) -> str:
        kind = "integers" if self.kind is int else "finite numbers"
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and self.high is not None:
            text = f"{kind} in {'[' if left else '('}{self.low:g}, {self.high:g}{']' if right else ')'}"
        elif self.low is not None:
            text = f"{kind} {'>=' if left else '>'} {self.low:g}"
        elif self.high is not None:
            text = f"{kind} {'<=' if right else '<'} {self.high:g}"
        else:
            text = kind
        return f"{text} ({self.note})" if self.note else text


class Options(Constraint):
    """One of a fixed set of values (names, usually)."""

    def __init__(self, *values):
        self.values = tuple(values)

    def accepts(self, value) -> bool:
        return isinstance(value, (str, int, float)) and not isinstance(value, bool) and value in self.values

    def describe(self) -> str:
        return ", ".join(str(v) for v in self.values)


class Boolean(Constraint):
    def accepts(self, value) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "true, false"


class Text(Constraint):
    """Any non-empty string (``what`` says which)."""

    def __init__(self, what: str = "a non-empty string"):
        self.what = what

    def accepts(self, value) -> bool:
        return isinstance(value, str) and value != ""

    def describe(self) -> str:
        return self.what


class Nullable(Constraint):
    """``null`` (None) or whatever ``inner`` accepts; ``meaning`` says what null means."""

    def __init__(self, inner: Constraint, meaning: str = ""):
        self.inner, self.meaning = inner, meaning

    def accepts(self, value) -> bool:
        return value is None or self.inner.accepts(value)

    def describe(self) -> str:
        null = f"null ({self.meaning})" if self.meaning else "null"
        return f"{null} or {self.inner.describe()}"


class WithNote(Constraint):
    """Whatever ``inner`` accepts, described with ``note`` in parentheses (why, or what a value means)."""

    def __init__(self, inner: Constraint, note: str):
        self.inner, self.note = inner, note

    def accepts(self, value) -> bool:
        return self.inner.accepts(value)

    def describe(self) -> str:
        return f"{self.inner.describe()} ({self.note})"


class AnyOf(Constraint):
    """Whatever one of ``constraints`` accepts."""

    def __init__(self, *constraints: Constraint):
        self.constraints = constraints

    def accepts(self, value) -> bool:
        return any(c.accepts(value) for c in self.constraints)

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.constraints)


# group -> {dotted class path: class}, filled as component modules are imported
_REGISTRY: dict = {}


class Component:
    """A configurable object of one ``group`` with declared ``parameters``.

    Class attributes
    ----------------
    group : str or None
        The config group (``distribution``, ``mechanism``, ``estimator``,
        ``method``...) whose registry lists the class; None for a base class.
    name : str
        The registered name, the one way a config reaches the class
        (:func:`by_name`); "" for a base class.
    parameters : dict of str -> Constraint
        Every keyword parameter of ``__init__`` and what it accepts.  Read
        without instantiating anything; a test checks it against the signature.
    """

    group: ClassVar[str | None] = None
    parameters: ClassVar[dict] = {}
    name = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.group and not cls.__name__.startswith("_"):
            _REGISTRY.setdefault(cls.group, {})[f"{cls.__module__}.{cls.__qualname__}"] = cls

    def check_parameters(self, **values) -> None:
        """Refuse a value its declared constraint does not accept: a ConfigError naming the parameter.

        For a component built directly rather than from a config (:func:`build`
        checks a config's values before building): ``__init__`` calls
        ``self.check_parameters(beta=beta, ...)`` before its cross-parameter checks,
        so the declaration stays the one statement of what each parameter accepts.
        """
        for key, value in values.items():
            _check_value(key, value, self.parameters[key])


def _check_value(key: str, value, constraint: Constraint) -> None:
    """Refuse ``value`` under ``key`` unless ``constraint`` accepts it (NaN never passes)."""
    if isinstance(value, float) and math.isnan(value) or not constraint.accepts(value):
        raise ConfigError(key, value, constraint.describe())


def components(group: str | None = None) -> dict:
    """Registered concrete components: ``{path: class}`` of ``group``, or ``{group: {...}}``.

    Only classes whose modules have been imported are listed; abstract ones are
    left out (``ABCMeta`` decides abstractness after ``__init_subclass__``).
    """
    def concrete(table):
        return {path: cls for path, cls in table.items() if not inspect.isabstract(cls)}

    if group is not None:
        return concrete(_REGISTRY.get(group, {}))
    return {g: concrete(table) for g, table in _REGISTRY.items()}


def by_name(group: str) -> dict:
    """``{cls.name: cls}`` of the registered concrete components of ``group``: the names a config may use.

    Two classes claiming one name is a programming error (a plug-in shadowing a
    built-in one included); a concrete class without a name is unreachable, which
    ``tests/test_components.py`` refuses.
    """
    table = {}
    for path, cls in components(group).items():
        name = cls.name
        if not isinstance(name, str) or not name:
            continue
        if name in table and table[name] is not cls:
            raise TypeError(f"{group} name {name!r} claimed by {table[name].__qualname__} and {path}")
        table[name] = cls
    return table


def component_class(group: str, name, key: str | None = None) -> type:
    """The registered concrete :class:`Component` of ``group`` called ``name``.

    ConfigError under ``key`` (default ``<group>.name``) listing the group's
    registered names otherwise.
    """
    table = by_name(group)
    check(isinstance(name, str) and name in table, key or f"{group}.{ADDRESS}", name,
          sorted(table) or f"a registered {group} (none is imported)")
    return table[name]


def check_arguments(group: str, cls: type, args: dict, supplied: dict | None = None) -> None:
    """Check ``args`` against ``cls.parameters`` before anything is built.

    ``supplied`` maps the parameters the caller sets itself to where their value
    comes from (``{"d": "grid.d"}``): such a key in ``args`` is refused, it
    would be ignored.  Unknown keys and values a constraint refuses raise
    :class:`ConfigError` naming ``group.key`` and the allowed values.
    """
    supplied = supplied or {}
    allowed = [name for name in cls.parameters if name not in supplied]
    for key, value in args.items():
        if key in supplied:
            raise ConfigError(f"{group}.{key}", value, f"no value here: {key} comes from {supplied[key]}")
        check(key in cls.parameters, f"{group}.{key}", value, [ADDRESS, *allowed])
        _check_value(f"{group}.{key}", value, cls.parameters[key])


def build(group: str, node: dict, supplied: dict | None = None, ignore=(ADDRESS,), **extra):
    """The component ``node`` describes, built with ``extra`` (the caller's arguments).

    ``node`` is a plain dict whose ``name`` is a registered component of
    ``group``; its keys other than ``ignore`` are checked by
    :func:`check_arguments`, ``extra`` is not (the caller validated it).  A
    ConfigError the class raises gets the ``group.`` prefix; any other failure
    of the constructor names the group and the class.
    """
    cls = component_class(group, node.get(ADDRESS))
    return instantiate(group, cls, {k: v for k, v in node.items() if k not in ignore}, supplied, **extra)


def instantiate(group: str, cls: type, args: dict, supplied: dict | None = None, **extra):
    """``cls(**args, **extra)``, ``args`` checked by :func:`check_arguments` first.

    For a caller that found the class itself (:func:`component_class`, or a
    paper's own lookup among the names a task allows).  A ConfigError the class raises
    gets the ``group.`` prefix; any other failure of the constructor names the
    group and the class.
    """
    check_arguments(group, cls, args, supplied)
    try:
        return cls(**args, **extra)
    except ConfigError as err:
        raise err.under(group) from None
    except (TypeError, ValueError, ArithmeticError) as err:
        raise ConfigError(group, args, f"parameters of {cls.__name__} ({first_line(err)})") from None
