"""Experiment kinds: how a paper package plugs into the harness.

The core knows no paper.  Each paper package (``labeldp_sim.table1``,
``labeldp_sim.kclass``, ``labeldp_sim.userlevel``) defines one
:class:`ExperimentKind` per kind of experiment it runs and registers it with
:func:`register` when it is imported; ``labeldp_sim.app`` imports the paper
packages, then hands over to :mod:`labeldp_sim.core.cli`.  The core calls a kind
through this one protocol: validate a composed config into a spec (computing
nothing), run the spec through the trial store and export, and list its
mechanisms for the privacy audit.

To add an experiment kind: subclass :class:`ExperimentKind` in the paper's
package, register an instance, and write ``conf/experiment/<name>.yaml`` with
``kind: <its name>``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

__all__ = ["ExperimentKind", "register", "registered", "get_kind"]


class ExperimentKind(ABC):
    """One kind of experiment (the ``kind:`` of its config).

    Attributes
    ----------
    name : str
        The value of ``kind`` in the config.
    node : str or None
        The root config node the kind owns (``kclass``, ``userlevel``...), whose
        presence tells the kind of an experiment; None for a kind built from
        config groups.
    root_keys : tuple of str
        Root keys the kind adds to the core's (``kind``, ``experiment_name``,
        ``seed``, ``paths``, ``fit``, ``runner``).
    """

    name: str = ""
    node: str | None = None
    root_keys: tuple = ()

    @abstractmethod
    def validate(self, cfg):
        """A validated spec of the composed ``cfg``; raise ConfigError on bad input.

        Computes nothing and creates no file.  The spec has at least ``name``,
        ``seed``, ``config_key``, ``runner``, ``results_dir`` and ``packages`` (the
        paper packages whose code its trials run: the code fingerprint of its
        config key, its store runs and its provenance).
        """

    @abstractmethod
    def run(self, cfg, spec, overrides, subdir: str | None, export) -> dict:
        """Run ``spec`` through the trial store, write its outputs, return them.

        ``export(out, spec, stats, write)`` writes one run's files under the
        directory lock, ``write()`` first, then config.yaml and provenance.json.
        """

    def output_dir(self, spec, subdir: str | None) -> Path:
        base = Path(spec.results_dir) / spec.name
        return base / subdir if subdir else base


_KINDS: dict = {}


def register(kind: ExperimentKind) -> ExperimentKind:
    """Make ``kind`` available to the CLI (idempotent by name)."""
    _KINDS[kind.name] = kind
    return kind


def registered() -> dict:
    """name -> kind of every registered kind, in registration order."""
    return dict(_KINDS)


def get_kind(name: str) -> ExperimentKind:
    return _KINDS[name]
