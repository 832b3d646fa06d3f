"""The three object groups of a Table I cell: distribution, mechanism and estimator.

Each node names a :class:`~labeldp_sim.harness.components.Component` of its group
by its registered ``name`` (the option's file name, and the label of the outputs); the class's declared ``parameters`` say which keys the node
may hold and what each accepts (:func:`check_node`), and :func:`build_object`
builds it with what the grid supplies per point: ``distribution.d`` comes from
``grid.d`` and ``mechanism.epsilon`` from the sweeps, so neither may be set.
A mechanism that clips takes its ``T`` per point: ``mechanism.T`` is ``theory``,
a number or null and ``mechanism.T_scale`` the constant of the theory's level
(:func:`clip_level`), neither a constructor argument.

Then the three must fit the cell and each other: the task and privacy model of
the cell, and the protocols the estimator accepts.
"""

from __future__ import annotations

from omegaconf import OmegaConf

from labeldp_sim.harness.components import ADDRESS, build, check_arguments, component_class
from labeldp_sim.harness.config import conf_file, group_options
from labeldp_sim.harness.errors import ConfigError, check, is_int, is_number
from labeldp_sim.papers.table1.theory import CELLS, Cell

__all__ = ["OBJECT_GROUPS", "FROM_GRID", "group_class", "check_node", "build_object", "clip_level",
           "probe_mechanism", "check_mechanism_fits", "check_accepts", "mismatch"]

OBJECT_GROUPS = ("distribution", "mechanism", "estimator")
# constructor arguments that come from the grid, never from the group's node
FROM_GRID = {"distribution": {"d": "grid.d"},
             "mechanism": {"epsilon": "grid.sweeps (the eps axis or its fixed eps)"}}
# per group, a parameter the sweep sets at each point and the node's keys that say how (they
# are allowed, and are not constructor arguments, only when the class takes that parameter)
TUNED = {"mechanism": {"T": ("T", "T_scale")}}
LABEL_KEYS = (ADDRESS,)


def group_class(group: str, node: dict) -> type:
    """The component class ``<group>.name`` names (ConfigError listing the group's names otherwise)."""
    return component_class(group, node.get(ADDRESS))


def _tuning_keys(group: str, cls: type) -> tuple:
    return tuple(key for parameter, keys in TUNED.get(group, {}).items() if parameter in cls.parameters
                 for key in keys)


def _supplied(group: str, node: dict) -> dict:
    """Where each grid-set parameter comes from, with the way to set it for a value set in the node."""
    supplied = dict(FROM_GRID.get(group, {}))
    if "d" in supplied and is_int(node.get("d")):
        supplied["d"] += f" (e.g. grid.d=[{node['d']}])"
    return supplied


def check_node(group: str, node: dict, cls: type) -> None:
    """Refuse a key of ``node`` that the class does not take, or a value its declaration refuses.

    Allowed: ``name``, the class's declared parameters except the
    ones the grid sets, and the tuning keys of a parameter set per point
    (``mechanism.T_scale`` for a mechanism that takes ``T``).
    """
    supplied, tuning = _supplied(group, node), _tuning_keys(group, cls)
    allowed = [*LABEL_KEYS, *(p for p in cls.parameters if p not in supplied and p not in tuning), *tuning]
    for key, value in node.items():
        check(key in allowed or key in supplied, f"{group}.{key}", value, allowed)
    check_arguments(group, cls, {k: v for k, v in node.items() if k not in (*LABEL_KEYS, *tuning)}, supplied)


def build_object(group: str, node: dict, **extra):
    """The object of ``node``, built with the grid's ``extra`` (``d``, ``epsilon``, ``T``).

    ConfigErrors the class raises name ``<group>.<key>``; any other failure of
    its constructor names the group and the class.
    """
    cls = group_class(group, node)
    return build(group, node, supplied=_supplied(group, node), ignore=(*LABEL_KEYS, *_tuning_keys(group, cls)),
                 **extra)


def clip_level(mech_node: dict, distribution, h: float):
    """The mechanism's T at cube side h: a number, or None when the mechanism does not clip.

    ``theory`` (or null): the label bound T for bounded labels (Assumption 2);
    for heavy tails T = T_scale · (M_p h^(−β)/2)^(1/(p−1)), the tail of (174)
    (:meth:`~labeldp_sim.papers.table1.families.RegressionFamily.tail_clip`).
    """
    if "T" not in mech_node:
        return None
    T = mech_node["T"]
    if T is None or T == "theory":
        # checked even where bounded labels make it unused: a bad value is never accepted silently
        scale = mech_node.get("T_scale", 1.0)
        check(is_number(scale) and scale > 0, "mechanism.T_scale", scale, "a finite number > 0")
        bound = distribution.label_bound
        if bound is not None:
            return bound
        check(T is not None, "mechanism.T", None, "a clipping level > 0 or 'theory' (labels are not bounded)")
        return float(scale) * distribution.tail_clip(h)
    check(is_number(T) and float(T) > 0, "mechanism.T", T, "a clipping level > 0 or 'theory'")
    return float(T)


def probe_mechanism(node: dict):
    """The mechanism of ``node`` at ε = 1 (and T = 1 if it clips): enough to know its protocol."""
    return build_object("mechanism", node, epsilon=1.0, **({"T": 1.0} if "T" in node else {}))


def _options_that(group: str, fits, build_one=None) -> list[str]:
    """The YAML options of ``group`` that ``fits`` (for messages).

    ``fits`` is asked about the option's class, or about its object
    ``build_one(node)`` when the fit depends on the object (a mechanism's
    privacy is an attribute its constructor may set).  Values interpolated from other
    groups (``${distribution.h_scale}``) are left to the class's defaults: only
    the object's kind matters here.
    """
    names = []
    for name in group_options(group):
        node = OmegaConf.to_container(OmegaConf.load(conf_file(group, name)))
        node = {k: v for k, v in node.items() if not (isinstance(v, str) and "${" in v)}
        try:
            thing = build_one(node) if build_one else group_class(group, node)
        except ConfigError:
            continue
        if fits(thing):
            names.append(name)
    return names


def check_accepts(estimator, est_name, mech_node: dict, cell: Cell) -> None:
    """The estimator must declare the mechanism protocols it accepts, and accept this one.

    A kNN averages one noisy number per user; a cube estimator sums per-cube
    statistics or takes a central release.  Any other pairing would run the
    estimator on data the mechanism never privatized.
    """
    accepts = estimator.accepts
    check(isinstance(accepts, tuple) and accepts, "estimator", est_name,
          "an estimator declaring the mechanism protocols it accepts (`accepts`)")
    mech = probe_mechanism(mech_node)
    if isinstance(mech, accepts):
        return
    fitting = _options_that("estimator", lambda other: cell.task in other.tasks
                            and isinstance(mech, other.accepts))
    raise ConfigError("estimator", est_name, fitting or
                      f"an estimator accepting a {type(mech).__name__} ({mech.privacy})")


def mismatch(group: str, got, allowed, cell: Cell, name: str, fits) -> ConfigError:
    """The error for a ``group`` that does not fit ``cell``.

    When the experiment is itself a Table I cell that ``group`` fits, the
    user moved ``cell`` away from it: ``cell`` is blamed, listing the cells
    that fit.
    """
    own = CELLS.get(name)
    if own is not None and own.name != cell.name and fits(own):
        cells = ", ".join(c for c in sorted(CELLS) if fits(CELLS[c]))
        return ConfigError("cell", cell.name, f"{cells} (the cells that {group} {got} fits)")
    return ConfigError(group, got, allowed)


def check_mechanism_fits(mech, label, cell: Cell, name: str) -> None:
    """The mechanism's task and privacy model must be the cell's; else ``mechanism`` is blamed
    (or ``cell``, when the user moved the cell away from one the mechanism fits)."""
    mech_tasks, mech_privacy = mech.tasks, mech.privacy
    if cell.task not in mech_tasks or mech_privacy != cell.privacy:
        matching = _options_that("mechanism", lambda m: m.privacy == cell.privacy and cell.task in m.tasks,
                                 probe_mechanism)
        raise mismatch("mechanism", label, matching or f"a {cell.privacy} mechanism",
                       cell, name, lambda c: c.task in mech_tasks and c.privacy == mech_privacy)
