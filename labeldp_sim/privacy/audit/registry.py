"""What the audit runs: recipes, cases and careless inputs, collected from the mechanism registries.

Every concrete mechanism class (a :class:`~labeldp_sim.privacy.protocols.Mechanism` registered
in any component group: ``mechanism``, ``userlevel.randomizer``...) states what the audit runs
for it in its :meth:`~labeldp_sim.privacy.protocols.Mechanism.audit_cases`, beside the class.
:func:`collect` iterates the registries, so a new mechanism is audited without any list here
being edited — and one without a recipe stops the audit (:class:`MissingRecipe`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from labeldp_sim.harness.components import ADDRESS, component_class, components
from labeldp_sim.privacy.protocols import MECHANISMS, NONE, Mechanism

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


@dataclass(frozen=True)
class CapCheck:
    r"""The check of a class's ε cap: the loss its draws realise on the 2^-53 grid stays ≤ ε up to the cap.

    A mechanism that compares ``rng.random()`` with a probability p draws with probability
    ⌈p·2^53⌉/2^53 (:mod:`labeldp_sim.privacy.grid`); the check builds ``cls(ε)`` over
    :func:`~labeldp_sim.privacy.grid.cap_sweep` of ``cls.max_epsilon`` (the cap last) and
    requires ``realised(mech) − ε`` ≤ TOL at each, and the rounding bound
    :func:`~labeldp_sim.privacy.grid.worst_excess` at the cap ≤ TOL (it grows with ε, so
    it covers every ε below the cap).

    Attributes
    ----------
    name : str
        The row's name, ``"<audited mechanism>: ε cap"``.
    cls : type
        The class whose ``max_epsilon`` is checked (a planted mutant: a class with a cap
        the check must refuse).
    realised : callable
        ``realised(mech) -> loss``: the exact loss of the grid-rounded law, from the
        mechanism's own law methods (the same function its exact check uses).
    comparisons : int
        How many draws of log-odds ε/``comparisons`` differ between neighbours (1: RR; 2:
        RAPPOR's bits y and y').
    method : str
        What ``realised`` computes, in words.
    mutant_of : str, optional
        For a planted mutant: the name of the real check it breaks.
    broken : str
        For a planted mutant: what is broken.
    """

    name: str
    cls: type
    realised: Callable
    comparisons: int
    method: str
    mutant_of: str | None = None
    broken: str = ""

    @property
    def expected(self) -> str:
        return "holds" if self.mutant_of is None else "caught"


@dataclass
class AuditCases:
    """What a mechanism class's ``audit_cases(eps)`` returns: the audit's rows for that class.

    Attributes
    ----------
    cases : list of Case
        Real cases: mechanisms of exactly this class, as the product builds them.
    mutants : list of Case
        Planted mutants (test fixtures of the audit), each ``mutant_of`` one of ``cases``.
    careless : list of Careless
        Careless inputs to mechanisms of this class (or to the class itself).
    caps : list of CapCheck
        Checks of the class's ``max_epsilon`` on the 2^-53 grid (classes that draw by comparing
        a uniform with a probability, and cap ε), with their planted mutants.
    """

    cases: list = field(default_factory=list)
    mutants: list = field(default_factory=list)
    careless: list = field(default_factory=list)
    caps: list = field(default_factory=list)


def nothing_claimed(eps) -> AuditCases:
    """The audit of a mechanism that claims no privacy (:class:`~labeldp_sim.privacy.protocols.NoPrivacy`): no row."""
    return AuditCases()


class MissingRecipe(TypeError):
    """A registered mechanism the audit cannot audit: no recipe, or one that is not its own."""


# A subclass that sets only these keeps its parent's recipe: they change no law.
PRIVACY_NEUTRAL = frozenset({"name", "tasks"})


def audited_classes() -> list[type]:
    """Every registered concrete mechanism, of every component group, in module order.

    The shared ones (``labeldp_sim.privacy``) first, then by module and definition order
    within it, so the rows do not depend on which paper was imported first.
    """
    shared = Mechanism.__module__.rpartition(".")[0] + "."
    found = {}
    for table in components().values():
        for cls in table.values():
            if issubclass(cls, Mechanism):
                found.setdefault(cls, len(found))
    return sorted(found, key=lambda cls: (not cls.__module__.startswith(shared), cls.__module__, found[cls]))


def load_configured() -> None:
    """Import the class each config of the mechanism group names (``mechanism/*.yaml`` of every config
    directory: the papers' ``conf/<paper>/``, e.g. ``conf/table1/mechanism/``, and those of
    ``LABELDP_SIM_CONF_PATH``).

    A mechanism a config can run must be registered (its module imported by its
    paper or by ``LABELDP_SIM_PLUGINS``), and so audited: a ``name`` that is not a
    registered mechanism stops the audit (ConfigError).
    """
    from omegaconf import OmegaConf

    from labeldp_sim.harness.config import conf_file, group_options

    for name in group_options(MECHANISMS):
        node = OmegaConf.to_container(OmegaConf.load(conf_file(MECHANISMS, name)), resolve=False)
        component_class(MECHANISMS, node.get(ADDRESS), f"{MECHANISMS}/{name}.yaml: {ADDRESS}")


def _inherits_rows(cls) -> bool:
    """Whether ``cls`` is covered by the rows of the class it inherits its recipe from.

    True for a subclass that takes its parent's ``audit_cases`` and changes nothing but
    :data:`PRIVACY_NEUTRAL` attributes; its parent's rows are its own.
    """
    owner = next(k for k in cls.__mro__ if "audit_cases" in vars(k))
    changed = {k for k in vars(cls) if not k.startswith("__") and k != "_abc_impl"} - PRIVACY_NEUTRAL
    return owner is not cls and owner is not Mechanism and not inspect.isabstract(owner) and not changed


def _problems(cls, plan) -> list[str]:
    """What is wrong with the ``plan`` of ``cls``: nothing when each row belongs to the class."""
    where = f"{cls.__qualname__}.audit_cases"
    if plan is None:
        return [f"{cls.__qualname__} ({cls.__module__}) states no audit recipe (its audit_cases returns None)"]
    if not isinstance(plan, AuditCases):
        return [f"{where} returned {type(plan).__name__}, not an AuditCases"]
    out = []
    # the audit also inspects careless classes, which may not state their privacy: it reports, not crashes
    if getattr(cls, "privacy", None) != NONE and not any(type(c.mechanism) is cls for c in plan.cases):
        out.append(f"{cls.__qualname__} ({cls.__module__}) has no audit recipe: its audit_cases gives no "
                   f"real case of a {cls.__qualname__}")
    real = {c.name for c in plan.cases}
    out += [f"{where}: case {c.name!r} is not a {cls.__qualname__}" for c in plan.cases + plan.mutants
            if not isinstance(c.mechanism, cls)]
    out += [f"{where}: mutant {c.name!r} is of {c.mutant_of!r}, not of one of its cases" for c in plan.mutants
            if c.mutant_of not in real]
    out += [f"{where}: careless input {c.name!r} is not given to a {cls.__qualname__}" for c in plan.careless
            if not (isinstance(c.mechanism, cls) or (isinstance(c.mechanism, type) and issubclass(c.mechanism, cls)))]
    out += [f"{where}: ε cap {c.name!r} is not of a {cls.__qualname__}" for c in plan.caps
            if not (isinstance(c.cls, type) and issubclass(c.cls, cls))]
    return out


def collect(eps: float = EPSILON, classes=None) -> AuditCases:
    """Every audited row: the ``audit_cases(eps)`` of each class of ``classes``, joined.

    Parameters
    ----------
    eps : float
        The claimed ε each mechanism is built with.
    classes : list of type, optional
        The classes to audit; default: :func:`audited_classes` once the mechanism
        configs' classes are loaded (:func:`load_configured`).

    Raises
    ------
    MissingRecipe
        One line naming every class without a recipe — its ``audit_cases`` returns None, or
        no real case of exactly that class (a class that inherits a recipe and changes only
        :data:`PRIVACY_NEUTRAL` attributes is covered by its parent's) — every row given to
        another class and every name used twice.
    """
    if classes is None:
        load_configured()
        classes = audited_classes()
    joined, problems = AuditCases(), []
    for cls in classes:
        if _inherits_rows(cls):
            continue
        plan = cls.audit_cases(eps)
        found = _problems(cls, plan)
        problems += found
        if not found:
            joined.cases += plan.cases
            joined.mutants += plan.mutants
            joined.careless += plan.careless
            joined.caps += plan.caps
    names = [c.name for c in joined.cases + joined.mutants + joined.careless + joined.caps]
    problems += [f"the name {name!r} is used twice" for name in sorted({n for n in names if names.count(n) > 1})]
    if problems:
        raise MissingRecipe("; ".join(problems))
    return joined


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
        Class by class, in :func:`audited_classes`' order.
    """
    joined = collect(eps)
    return joined.cases + (joined.mutants if mutants else [])


def careless_cases(eps: float = EPSILON) -> list[Careless]:
    """Every careless input, class by class."""
    return collect(eps).careless


def cap_checks(eps: float = EPSILON, mutants: bool = True) -> list[CapCheck]:
    """Every ε-cap check, class by class (with ``mutants``, their planted mutants too)."""
    return [c for c in collect(eps).caps if mutants or c.mutant_of is None]


def calls(method: str, *args, **kwargs) -> Callable:
    """The ``call`` of a :class:`Careless` that runs ``mechanism.<method>(*args, **kwargs)``."""
    # the method is named by the careless case, so one case definition covers every mechanism that has it
    return lambda mechanism: getattr(mechanism, method)(*args, **kwargs)


def builds(*args, **kwargs) -> Callable:
    """The ``call`` of a :class:`Careless` that builds the mechanism class with these arguments."""
    return lambda cls: cls(*args, **kwargs)
