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

import numpy as np

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

    Examples
    --------
    >>> Interval(int, 1).accepts(3), Interval(int, 1).describe()
    (True, 'integers >= 1')
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

    Parameters
    ----------
    kind : {int, float}
        ``int`` (integers, never bools) or ``float`` (finite numbers, integers included).
    low, high : float, optional
        The bounds; None leaves that side open-ended.
    closed : {"both", "left", "right", "neither"}, default "both"
        Which bounds belong to the interval.
    note : str, optional
        Added to the description in parentheses.

    Examples
    --------
    >>> beta = Interval(float, 0, 1, closed="right")
    >>> beta.accepts(1.0), beta.accepts(0), beta.describe()
    (True, False, 'finite numbers in (0, 1]')
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
    """One of a fixed set of values (names, usually).

    Parameters
    ----------
    *values : str or int or float
        The values accepted.

    Examples
    --------
    >>> Options("round", "square").accepts("round"), Options("round", "square").describe()
    (True, 'round, square')
    """

    def __init__(self, *values):
        self.values = tuple(values)

    def accepts(self, value) -> bool:
        return isinstance(value, (str, int, float)) and not isinstance(value, bool) and value in self.values

    def describe(self) -> str:
        return ", ".join(str(v) for v in self.values)


class Boolean(Constraint):
    """``true`` or ``false`` (a bool: 0 and 1 are refused).

    Examples
    --------
    >>> Boolean().accepts(True), Boolean().accepts(1)
    (True, False)
    """

    def accepts(self, value) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "true, false"


class Text(Constraint):
    """Any non-empty string.

    Parameters
    ----------
    what : str, optional
        What the string is, as the ``allowed:`` part of an error.

    Examples
    --------
    >>> Text("a label").accepts(""), Text("a label").describe()
    (False, 'a label')
    """

    def __init__(self, what: str = "a non-empty string"):
        self.what = what

    def accepts(self, value) -> bool:
        return isinstance(value, str) and value != ""

    def describe(self) -> str:
        return self.what


class Nullable(Constraint):
    """``null`` (None) or whatever ``inner`` accepts.

    Parameters
    ----------
    inner : Constraint
        What a value other than None must satisfy.
    meaning : str, optional
        What null means, said in the description.

    Examples
    --------
    >>> Nullable(Interval(int, 1), "every one").describe()
    'null (every one) or integers >= 1'
    """

    def __init__(self, inner: Constraint, meaning: str = ""):
        self.inner, self.meaning = inner, meaning

    def accepts(self, value) -> bool:
        return value is None or self.inner.accepts(value)

    def describe(self) -> str:
        null = f"null ({self.meaning})" if self.meaning else "null"
        return f"{null} or {self.inner.describe()}"


class WithNote(Constraint):
    """Whatever ``inner`` accepts, described with a note in parentheses.

    Parameters
    ----------
    inner : Constraint
        What a value must satisfy.
    note : str
        Why, or what a value means.

    Examples
    --------
    >>> WithNote(Interval(int, 1), "cubes per axis").describe()
    'integers >= 1 (cubes per axis)'
    """

    def __init__(self, inner: Constraint, note: str):
        self.inner, self.note = inner, note

    def accepts(self, value) -> bool:
        return self.inner.accepts(value)

    def describe(self) -> str:
        return f"{self.inner.describe()} ({self.note})"


class AnyOf(Constraint):
    """Whatever one of ``constraints`` accepts.

    Parameters
    ----------
    *constraints : Constraint
        The alternatives.

    Examples
    --------
    >>> either = AnyOf(Options("theory"), Interval(float, 0, closed="neither"))
    >>> either.accepts("theory"), either.accepts(2.5), either.describe()
    (True, True, 'theory or finite numbers > 0')
    """

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

    Attributes
    ----------
    group : str or None
        The config group (``distribution``, ``mechanism``, ``estimator``,
        ``method``...) whose registry lists the class; None for a base class.
    name : str
        The registered name, the one way a config reaches the class
        (:func:`by_name`); "" for a base class.
    parameters : dict of str -> Constraint
        Every keyword parameter of ``__init__`` and what it accepts.  Read
        without instantiating anything; a test checks it against the signature.

    Examples
    --------
    >>> class Toy(Component):
    ...     group, name = "toy.example", "toy"
    ...     parameters = {"rate": Interval(float, 0, closed="neither")}
    ...     def __init__(self, rate=1.0):
    ...         self.check_parameters(rate=rate)
    ...         self.rate = rate
    >>> Toy(rate=2.0)
    Toy(rate=2.0)
    >>> build("toy.example", {"name": "toy", "rate": 0.5})
    Toy(rate=0.5)
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

    def __repr__(self) -> str:
        """``Class(p=value, ...)``: each declared parameter the instance stores under its own name.

        Examples
        --------
        >>> class Toy(Component):
        ...     parameters = {"beta": Interval(float, 0, 1), "d": Interval(int, 1)}
        ...     def __init__(self, beta=0.5, d=2):
        ...         self.beta, self.d = beta, d
        >>> Toy(beta=0.25)
        Toy(beta=0.25, d=2)
        """
        stored = vars(self)
        shown = ", ".join(f"{key}={_shown(stored[key])!r}" for key in self.parameters if key in stored)
        return f"{type(self).__name__}({shown})"


def _shown(value):
    """A numpy scalar as the Python number it holds (``0.5``, not ``np.float64(0.5)``)."""
    return value.item() if isinstance(value, np.generic) else value


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
    """The registered concrete components of ``group`` by name: the names a config may use.

    Two classes claiming one name is a programming error (a plug-in shadowing a
    built-in one included); a concrete class without a name is unreachable, which
    ``tests/test_components.py`` refuses.

    Parameters
    ----------
    group : str
        The component group (``mechanism``, ``distribution``...).

    Returns
    -------
    dict of str to type
        ``{cls.name: cls}``; empty when no module of the group is imported.

    Raises
    ------
    TypeError
        When two classes claim one name.

    Examples
    --------
    >>> import labeldp_sim.papers.table1
    >>> "laplace_cube" in by_name("mechanism")
    True
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

    Parameters
    ----------
    group : str
        The component group.
    name : str
        The registered name.
    key : str, optional
        The config key an error names (default ``<group>.name``).

    Returns
    -------
    type
        The component class.

    Raises
    ------
    ConfigError
        Under ``key``, listing the group's registered names, when none is called ``name``.

    Examples
    --------
    >>> import labeldp_sim.papers.table1
    >>> component_class("distribution", "holder_bump").__name__
    'HolderBump'
    """
    table = by_name(group)
    check(isinstance(name, str) and name in table, key or f"{group}.{ADDRESS}", name,
          sorted(table) or f"a registered {group} (none is imported)")
    return table[name]


def check_arguments(group: str, cls: type, args: dict, supplied: dict | None = None) -> None:
    """Check ``args`` against ``cls.parameters`` before anything is built.

    Parameters
    ----------
    group : str
        The component group, the prefix of the keys an error names.
    cls : type
        The :class:`Component` class.
    args : dict
        The parameters a config gives.
    supplied : dict of str to str, optional
        The parameters the caller sets itself, mapped to where their value comes from
        (``{"d": "grid.d"}``): such a key in ``args`` is refused, it would be ignored.

    Raises
    ------
    ConfigError
        For an unknown key or a value its constraint refuses, naming ``group.key`` and the
        allowed values.

    Examples
    --------
    >>> import labeldp_sim.papers.table1
    >>> cls = component_class("distribution", "holder_bump")
    >>> check_arguments("distribution", cls, {"beta": 2.0})
    Traceback (most recent call last):
    ...
    labeldp_sim.harness.errors.ConfigError: distribution.beta: got 2.0; allowed: finite numbers in (0, 1]
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

    Parameters
    ----------
    group : str
        The component group.
    node : dict
        A plain dict whose ``name`` is a registered component of ``group``; its keys
        other than ``ignore`` are checked by :func:`check_arguments`.
    supplied : dict of str to str, optional
        Parameters the caller sets itself (see :func:`check_arguments`).
    ignore : tuple of str, default ("name",)
        Keys of ``node`` that are not parameters.
    **extra
        Further arguments of the constructor, not checked (the caller validated them).

    Returns
    -------
    Component
        The built component.

    Raises
    ------
    ConfigError
        For a bad node; a ConfigError the class raises gets the ``group.`` prefix, and any
        other failure of the constructor names the group and the class.

    Examples
    --------
    >>> import labeldp_sim.papers.table1
    >>> build("distribution", {"name": "holder_bump", "beta": 0.5}, supplied={"d": "grid.d"}, d=1)
    HolderBump(d=1, beta=0.5, ...)
    """
    cls = component_class(group, node.get(ADDRESS))
    return instantiate(group, cls, {k: v for k, v in node.items() if k not in ignore}, supplied, **extra)


def instantiate(group: str, cls: type, args: dict, supplied: dict | None = None, **extra):
    """``cls(**args, **extra)``, ``args`` checked by :func:`check_arguments` first.

    For a caller that found the class itself (:func:`component_class`, or a
    paper's own lookup among the names a task allows).

    Parameters
    ----------
    group : str
        The component group.
    cls : type
        The :class:`Component` class.
    args : dict
        The parameters a config gives, checked.
    supplied : dict of str to str, optional
        Parameters the caller sets itself (see :func:`check_arguments`).
    **extra
        Further arguments of the constructor, not checked.

    Returns
    -------
    Component
        The built component.

    Raises
    ------
    ConfigError
        As :func:`build`.

    Examples
    --------
    >>> import labeldp_sim.papers.table1
    >>> instantiate("mechanism", component_class("mechanism", "laplace_cube"), {"epsilon": 1.0, "T": 2.0})
    LaplaceCubeMean(epsilon=1.0, T=2)
    """
    check_arguments(group, cls, args, supplied)
    try:
        return cls(**args, **extra)
    except ConfigError as err:
        raise err.under(group) from None
    except (TypeError, ValueError, ArithmeticError) as err:
        raise ConfigError(group, args, f"parameters of {cls.__name__} ({first_line(err)})") from None
