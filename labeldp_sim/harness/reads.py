"""What a job reads: the settings that key its stored numbers, and the overrides it would ignore.

One declaration per kind serves both.  A kind names the root keys its jobs read
(:meth:`~labeldp_sim.harness.kinds.ExperimentKind.reads`), the settings among them that never
change a stored number (:meth:`~labeldp_sim.harness.kinds.ExperimentKind.unkeyed`: how a run goes,
or which points and replicates it asks for, each of which its record's seed key names), and the
settings a particular job leaves unread (:meth:`~labeldp_sim.harness.kinds.ExperimentKind.unread`).

* :func:`settings_key` hashes everything else of the resolved config, with the code: a setting
  is keyed unless declared otherwise, so a new setting is keyed the day it is added
  (``tests/test_record_key.py`` perturbs every setting of every kind and checks that the key
  moves or the numbers stay identical).
* :func:`check_overrides` refuses a command-line override the job does not read, in one line,
  or returns a note for one a user reasonably sets for every job of a multirun
  (``grid.reps`` on the exact path); and refuses an override that composition swallowed
  (``userlevel.estimators={}`` merges into the mapping and changes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig, ListConfig, OmegaConf

from labeldp_sim.harness.errors import ConfigError

__all__ = ["RUN_SETTINGS", "Unread", "settings_key", "keyed_settings", "check_overrides"]

# How a run goes, never what it computes: parallelism, chunking, reuse and the cluster (SPEC §5:
# streams are keyed on the point and replicate), where the files go, and the fit, which reads
# the stored numbers and makes none.
RUN_SETTINGS = ("paths", "fit", "runner.n_jobs", "runner.backend", "runner.chunk", "runner.progress",
                "runner.reuse", "runner.dask")


@dataclass(frozen=True)
class Unread:
    """A setting a job does not read: refused when overridden, or noted once when ``refuse`` is False."""

    why: str
    refuse: bool = True


def _drop(tree: dict, dotted: str) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        tree = tree.get(part) if isinstance(tree, dict) else None
        if not isinstance(tree, dict):
            return
    tree.pop(leaf, None)


def _string_keys(node):
    """``node`` with every mapping key a string: ``+grid.reps_per_d.3=1000`` adds the key '3' beside
    the YAML's 3, and the validators read the string one (:mod:`.cli`), so here too it wins."""
    if isinstance(node, dict):
        ordered = sorted(node.items(), key=lambda kv: isinstance(kv[0], str))
        return {str(k): _string_keys(v) for k, v in ordered}
    if isinstance(node, list):
        return [_string_keys(v) for v in node]
    return node


def keyed_settings(cfg: DictConfig, kind) -> dict:
    """The resolved settings of ``cfg`` that can change a number its job stores.

    The root keys ``kind`` reads, less :data:`RUN_SETTINGS`, the kind's unkeyed settings and
    those this job leaves unread.
    """
    tree = OmegaConf.to_container(cfg, resolve=True)
    reads = set(kind.reads(cfg))
    tree = _string_keys({key: value for key, value in tree.items() if key in reads})
    for dotted in (*RUN_SETTINGS, *kind.unkeyed(cfg), *kind.unread(cfg, None)):
        _drop(tree, dotted)
    return tree


def settings_key(cfg: DictConfig, kind, packages) -> str:
    """The config key of ``cfg``'s records: :func:`keyed_settings` with the code of ``packages``."""
    from labeldp_sim.harness.provenance import config_key

    return config_key(keyed_settings(cfg, kind), packages)


def _override_key(line: str) -> tuple[str, str]:
    key, _, value = line.partition("=")
    return key.lstrip("+~"), value


def _select(cfg, key: str):
    try:
        return OmegaConf.select(cfg, key, throw_on_missing=False)
    except Exception:  # noqa: BLE001 - an interpolation that does not resolve: nothing to compare
        return None


def _contains(got, value) -> bool:
    """Whether ``got`` holds ``value``: equal, or for a mapping, each typed key holds its value."""
    if isinstance(value, dict):
        if not isinstance(got, dict):
            return False
        got = {str(k): v for k, v in got.items()}  # YAML's 1 and the override's '1' name one key
        return (bool(value) or not got) and all(str(k) in got and _contains(got[str(k)], v)
                                                for k, v in value.items())
    return got == value


def _swallowed(cfg: DictConfig, parsed) -> ConfigError | None:
    """A mapping or list override whose value the composed config does not hold.

    Hydra merges a mapping override into the node: ``grid.reps_per_d={1: 300}`` sets d = 1 and
    keeps the others (as meant), but ``userlevel.estimators={}`` merges nothing and leaves the
    node as it was, so the job would run with what the user meant to remove.
    """
    if parsed.is_delete() or parsed.is_sweep_override():
        return None
    value = parsed.value()
    if not isinstance(value, (dict, list)):
        return None
    key = parsed.key_or_group
    got = _select(cfg, key)
    got = OmegaConf.to_container(got, resolve=True) if isinstance(got, (DictConfig, ListConfig)) else got
    if _contains(got, value):
        return None
    return ConfigError(key, value, f"a value {key} can hold: Hydra merges a mapping into the node, which stays "
                       f"{got!r}; to replace the whole node, delete it first: '~{key}' '+{key}=...'")


def check_overrides(cfg: DictConfig, kind, overrides, spec=None) -> list[str]:
    """Refuse an override of ``overrides`` this job does not read (ConfigError); return notes.

    ``kind`` is the job's :class:`~labeldp_sim.harness.kinds.ExperimentKind` (for its mode) and
    ``spec`` its validated spec, which tells what the job runs (the exact path, say).  A note (one line
    each) is for a setting the job does not read but a user reasonably sets for every job
    (:class:`Unread` with ``refuse=False``).
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    unread = kind.unread(cfg, spec)
    notes = []
    parser = OverridesParser.create()
    last = {_override_key(line)[0]: line for line in overrides or ()}  # the one composition kept
    for line in last.values():
        key, value = _override_key(line)
        for prefix, why in unread.items():
            if key == prefix or key.startswith(prefix + "."):
                if why.refuse:
                    raise ConfigError(key, value, why.why)
                notes.append(f"{key} has no effect here: {why.why}")
        try:
            parsed = parser.parse_overrides([line])[0]
        except Exception:  # noqa: BLE001 - composition already parsed it; a group choice or sweep
            continue
        if parsed.key_or_group in _groups():
            continue
        err = _swallowed(cfg, parsed)
        if err is not None:
            raise err
    return notes


def _groups() -> tuple:
    from labeldp_sim.harness.conf_path import config_groups

    return tuple(config_groups())
