"""The registry of audited mechanisms: recipes, cases and careless inputs, registered by the paper packages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..protocols import Mechanism

EPSILON = 1.0          # the claimed ε of every audited mechanism
T = 1.0                # clipping level; neighbours use labels ±10T, beyond it
BIG = 10 * T
K_BB = 4               # classes in the black-box pairs of the K-class mechanisms


@dataclass(frozen=True)
class Recipe:
    """How one family of mechanisms is audited.

    Attributes
    ----------
    neighbours : str
        The neighbour relation, in words.
    pair : str
        The black box's pair (D, D'), in words.
    exact : callable
        ``exact(mech) -> (loss, method)`` from the mechanism's law methods.
    draw : callable
        ``draw(mech, side, n, rng) -> outputs`` under D (side 0) or D' (side 1).
    """

    neighbours: str
    pair: str
    exact: Callable
    draw: Callable


LABEL_NB = "label neighbours: one user's label changed, features kept"
FULL_NB = "one record replaced: features and label"


@dataclass(frozen=True)
class Careless:
    """A careless input: ``call(mechanism)`` must raise one :class:`ConfigError` line naming ``key``.

    Attributes
    ----------
    name : str
        The row's name, ``"<audited mechanism>: <what>"``, e.g. ``"rr: label 0.5"``.
    mechanism : object
        A mechanism, or its class when the call builds one (an ε the class refuses).
    call : callable
        ``call(mechanism)``; what a careless caller would run.
    key : str
        The argument the refusal must name.
    careless : str
        What is careless, in words.
    """

    name: str
    mechanism: object
    call: Callable
    key: str
    careless: str


@dataclass
class Case:
    """One audited mechanism: a real one (``mutant_of`` None) or a planted mutant."""

    name: str
    mechanism: Mechanism
    recipe: Recipe
    mutant_of: str | None = None
    broken: str = ""

    @property
    def expected(self) -> str:
        return "private" if self.mutant_of is None else "caught"


_PROVIDERS: list = []
_CARELESS: list = []


def register_cases(provider: Callable) -> Callable:
    """Register ``provider(eps) -> (cases, mutants)``: a paper package's audited mechanisms.

    Each paper package registers the recipes of its own mechanisms when it is
    imported (``labeldp_sim/<paper>/audit.py``), so this module knows no paper.
    """
    if provider not in _PROVIDERS:
        _PROVIDERS.append(provider)
    return provider


def register_careless(provider: Callable) -> Callable:
    """Register ``provider(eps) -> list of Careless``: a paper package's careless inputs."""
    if provider not in _CARELESS:
        _CARELESS.append(provider)
    return provider


def careless_cases(eps: float = EPSILON) -> list[Careless]:
    """Every registered careless input, in registration order."""
    return [case for provider in _CARELESS for case in provider(eps)]


def calls(method: str, *args, **kwargs) -> Callable:
    """The ``call`` of a :class:`Careless` that runs ``mechanism.<method>(*args, **kwargs)``."""
    return lambda mechanism: getattr(mechanism, method)(*args, **kwargs)


def builds(*args, **kwargs) -> Callable:
    """The ``call`` of a :class:`Careless` that builds the mechanism class with these arguments."""
    return lambda cls: cls(*args, **kwargs)


def cases(eps: float = EPSILON, mutants: bool = True) -> list[Case]:
    """The registry: every real mechanism, then (with ``mutants``) every planted mutant.

    Parameters
    ----------
    eps : float
        The claimed ε each mechanism is built with.
    mutants : bool
        Include the planted mutants (test fixtures of the audit).

    Returns
    -------
    list of Case
        In the order the paper packages registered them (shared RAPPOR first).
    """
    real, planted = [], []
    for provider in _PROVIDERS:
        got, broken = provider(eps)
        real += got
        planted += broken
    return real + (planted if mutants else [])
