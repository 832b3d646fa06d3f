"""Experiment kinds: how a paper package plugs into the harness.

The core knows no paper.  Each paper package (``labeldp_sim.papers.table1``,
``labeldp_sim.papers.kclass``, ``labeldp_sim.papers.userlevel``) defines one
:class:`ExperimentKind` per kind of experiment it runs and registers it with
:func:`register` when it is imported; ``labeldp_sim.app`` imports the paper
packages, then hands over to :mod:`labeldp_sim.harness.cli`.  The core calls a kind
through this one protocol: validate a composed config into a spec (computing
nothing), then run the spec through the trial store and export.

Every kind runs through the one template :meth:`ExperimentKind.run`: its trials
through the store (:meth:`~ExperimentKind.plan`), what it derives from them
(:meth:`~ExperimentKind.analyse`), its files, written under the directory lock
with config.yaml and provenance.json (:meth:`~ExperimentKind.write`), the tables
of the whole results directory (:meth:`~ExperimentKind.write_shared`), and its
lines on stdout (:meth:`~ExperimentKind.announce`).  A kind states only those.

To add an experiment kind: subclass :class:`ExperimentKind` in the paper's
package (``validate``, ``plan``, ``write``, and the optional hooks), its spec
extending :class:`JobSpec`; register an instance, and write
``conf/<paper>/experiment/<name>.yaml`` with ``kind: <its name>``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.provenance import code_fingerprint, package_of
from labeldp_sim.harness.store import MEMO_NAME, STORE_NAME, TrialStore, locked, staged, memo_count

# the root keys every kind has; a kind adds its own (ExperimentKind.root_keys and .node)
ROOT_KEYS = ("kind", "experiment_name", "seed", "paths", "fit", "runner")

__all__ = ["ExperimentKind", "JobSpec", "register", "registered", "get_kind", "code_packages"]


def code_packages(paper: str, classes=()) -> tuple:
    """The packages whose code a job's trials run, for :attr:`JobSpec.packages`.

    Derived from what the job builds, never listed by hand: forgetting a package would keep
    stale trials valid after an edit of its code.

    Parameters
    ----------
    paper : str
        The kind's own paper package (``table1``; a plug-in's import name).
    classes : iterable of type
        The component classes the job builds; each adds its package
        (:func:`~labeldp_sim.harness.provenance.package_of`: another paper's, such as a
        Table I cell running K-class mechanisms, or a plug-in's).  The shared wings
        (harness, privacy...) add none: they are always hashed.

    Returns
    -------
    tuple of str
        The packages, sorted.

    Examples
    --------
    >>> class ShareRR:  # a mechanism of a plug-in package
    ...     __module__ = "mylab.mechanisms"
    >>> class RAPPOR:  # a shared mechanism
    ...     __module__ = "labeldp_sim.privacy.rappor"
    >>> code_packages("table1", [ShareRR, RAPPOR])
    ('mylab', 'table1')
    """
    packages = {paper} | {package_of(cls.__module__) for cls in classes}
    return tuple(sorted(packages - {None}))


@dataclass(kw_only=True)
class JobSpec:
    """What the spec of every kind holds; a kind's spec extends it with its own fields.

    A kind's ``validate`` returns one, computing nothing (usually through :meth:`of`, which
    fills the basics and the config key); the run template reads only these fields.

    Parameters
    ----------
    name : str
        ``experiment_name``.
    seed : int
        ``seed``: every stream of the job derives from it.
    runner : labeldp_sim.harness.settings.RunnerSettings
        The validated ``runner.*`` settings.
    results_dir : pathlib.Path
        ``paths.results_dir`` (validated, not created).
    tol : float
        ``fit.tol``, the verdict's tolerance.
    min_points : int
        ``fit.min_points``, the fewest points a slope is fitted on.
    config_key : str
        Key of the job's records: a hash of every setting that can change a trial's numbers
        (:func:`~labeldp_sim.harness.reads.settings_key`) and of the code.
    packages : tuple of str
        The paper packages whose code its trials run (:func:`code_packages`: the code
        fingerprint of its config key, its store runs and its provenance).

    Examples
    --------
    >>> from pathlib import Path
    >>> spec = JobSpec(name="toy", seed=0, runner=None, results_dir=Path("results"), tol=0.05,
    ...                min_points=3, config_key="c0ffee", packages=("table1",))
    >>> spec.name, spec.packages
    ('toy', ('table1',))
    """

    name: str
    seed: int
    runner: object
    results_dir: Path
    tol: float
    min_points: int
    config_key: str
    packages: tuple = ()

    @classmethod
    def of(cls, basics, cfg, packages: tuple, **fields):
        """The spec of a validated job: ``basics`` (a :class:`~labeldp_sim.harness.config.JobBasics`),
        its own ``fields``, and the config key of the composed ``cfg``
        (:func:`~labeldp_sim.harness.reads.settings_key`: every setting of it that can change a
        stored number) with the code of ``packages``."""
        from labeldp_sim.harness.reads import settings_key

        return cls(name=basics.name, seed=basics.seed, runner=basics.runner, results_dir=basics.results_dir,
                   tol=basics.tol, min_points=basics.min_points,
                   config_key=settings_key(cfg, get_kind(cfg.kind).for_spec(cfg, None), packages),
                   packages=tuple(packages), **fields)


class ExperimentKind(ABC):
    """One kind of experiment (the ``kind:`` of its config).

    A paper subclasses it once per kind of experiment it runs, states ``validate``, ``plan``
    and ``write`` (and optionally ``analyse``, ``write_shared``, ``announce``), and
    registers an instance (:func:`register`) when its package is imported; :meth:`run` is the one
    template every kind runs through (the store, reuse, resume, the locked export, provenance).

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
    results_subdir : str
        The run's files go to ``<results_dir>/<results_subdir>/<experiment>[/<subdir>]``.
    shared_lock : str or None
        The lock file (in :meth:`shared_dir`) under which :meth:`write_shared` refreshes the
        tables of the whole results directory; None when the kind has none.

    Examples
    --------
    >>> from labeldp_sim.app import load_papers
    >>> load_papers()
    >>> kind = get_kind("rates")
    >>> isinstance(kind, ExperimentKind), kind.name, kind.results_subdir
    (True, 'rates', '')
    """

    name: str = ""
    node: str | None = None
    root_keys: tuple = ()
    results_subdir: str = ""
    shared_lock: str | None = None

    @abstractmethod
    def validate(self, cfg):
        """A validated spec (a :class:`JobSpec`) of the composed ``cfg``; raise ConfigError on bad input.

        Computes nothing and creates no file.
        """

    # ------------------------------------------------------------------ what a job reads (:mod:`.reads`)

    def reads(self, cfg) -> tuple:
        """The root keys a job of this kind reads: the core's, the kind's own and its node."""
        return (*ROOT_KEYS, *self.root_keys, *((self.node,) if self.node else ()))

    def unkeyed(self, cfg) -> tuple:
        """Dotted settings this kind reads that never change a stored number, beyond the core's
        :data:`~labeldp_sim.harness.reads.RUN_SETTINGS`: those that only pick which points and
        replicates a run asks for (each record's seed key names its point and replicate).
        Anything not declared here is keyed."""
        return ()

    def unread(self, cfg, spec=None) -> dict:
        """Dotted settings ``cfg``'s job (validated as ``spec``, when given) does not read -> :class:`~labeldp_sim.harness.reads.Unread`
        (why; refused or noted when overridden).  Kept out of the key."""
        return {}

    def shared_target(self, cfg, spec, subdir: str | None):
        """What :meth:`run` refreshes after ``spec``'s own files (the kind and :meth:`shared_dir`), or None.

        None for the jobs of a parameter sweep (``subdir``) and for kinds without shared tables.
        Two jobs with the same target refresh the same files: a multirun of several experiments
        refreshes them once, after the last of its jobs with that target.
        """
        kind = self.for_spec(cfg, spec)
        if subdir or not kind.shared_lock:
            return None
        return type(kind).__qualname__, str(kind.shared_dir(spec))

    def refresh_shared(self, spec) -> None:
        """:meth:`write_shared` under the shared lock, its tables and figures landing together."""
        shared = self.shared_dir(spec)
        with locked(shared, self.shared_lock), staged(shared):
            self.write_shared(shared)

    def run(self, cfg, spec, overrides, subdir: str | None, export, refresh_shared: bool = True) -> dict:
        """Run ``spec`` through the trial store, write its outputs, return them.

        ``export(out, spec, stats, write)`` writes one run's files under the
        directory lock, ``write()`` first, then config.yaml and provenance.json.
        The tables of the results directory are refreshed by a single run, not
        by the jobs of a parameter sweep (``subdir``), nor where ``refresh_shared``
        is false (a later job of the same command refreshes them:
        :meth:`shared_target`).  Returns the trials, what
        :meth:`analyse` derived, the output directory (``out``) and the run's
        :class:`~labeldp_sim.harness.runner.RunStats` (``run``).
        """
        from labeldp_sim.harness.runner import execute

        kind = self.for_spec(cfg, spec)
        out = kind.output_dir(spec, subdir)
        out.mkdir(parents=True, exist_ok=True)
        plan, memo = kind.plan(spec), Path(spec.results_dir) / MEMO_NAME
        fingerprint = code_fingerprint(spec.packages) if kind.memoizes(spec) else None
        before = memo_count(memo, fingerprint) if fingerprint else 0
        trials, stats = execute(plan, TrialStore(Path(spec.results_dir) / STORE_NAME))
        if fingerprint:
            added = memo_count(memo, fingerprint) - before
            get_logger("runner").info(f"{plan.label()}: intermediate values in {memo}: {before:,} of this code "
                                      f"were there (reused where asked), {added:,} computed and added")
        analysis = kind.analyse(spec, trials)
        export(out, spec, stats, lambda: kind.write(spec, trials, analysis, out))
        if refresh_shared and not subdir and kind.shared_lock:
            kind.refresh_shared(spec)
        kind.announce(spec, analysis, out)
        return {"trials": trials, **analysis, "out": out, "run": stats}

    # ------------------------------------------------------------------ hooks of the template

    def for_spec(self, cfg, spec) -> "ExperimentKind":
        """The kind whose hooks run ``spec``: itself, or that of the spec's mode for a kind with modes."""
        return self

    def memoizes(self, spec) -> bool:
        """Whether ``spec``'s trials rest on intermediates kept in ``<results_dir>/memo.sqlite``
        (:mod:`labeldp_sim.harness.store.memo`): the run then says how many it found and added."""
        return False

    @abstractmethod
    def plan(self, spec):
        """The :class:`~labeldp_sim.harness.runner.Plan` of ``spec``'s trials."""

    def analyse(self, spec, trials) -> dict:
        """What the run derives from its trials (summaries, fits...), by name; written and returned."""
        return {}

    @abstractmethod
    def write(self, spec, trials, analysis: dict, out: Path) -> None:
        """The run's own files in ``out`` (staged: they land together with config.yaml and provenance.json)."""

    def write_shared(self, directory: Path) -> None:
        """Refresh the tables of the whole results directory (under :attr:`shared_lock`, staged)."""

    def announce(self, spec, analysis: dict, out: Path) -> None:
        """The run's lines on stdout, once its files are written."""

    def output_dir(self, spec, subdir: str | None) -> Path:
        base = Path(spec.results_dir) / self.results_subdir / spec.name
        return base / subdir if subdir else base

    def shared_dir(self, spec) -> Path:
        """Where :meth:`write_shared` writes (and its lock lies)."""
        return Path(spec.results_dir) / self.results_subdir


_KINDS: dict = {}


def register(kind: ExperimentKind) -> ExperimentKind:
    """Make ``kind`` available to the CLI and the API, under its ``name`` (idempotent by name).

    Parameters
    ----------
    kind : ExperimentKind
        An instance of the kind; a paper's ``__init__.py`` registers each of its kinds.

    Returns
    -------
    ExperimentKind
        ``kind`` itself.

    Examples
    --------
    >>> from labeldp_sim.app import load_papers
    >>> load_papers()
    >>> register(get_kind("rates")) is get_kind("rates")
    True
    """
    _KINDS[kind.name] = kind
    return kind


def registered() -> dict:
    """name -> kind of every registered kind, in registration order."""
    return dict(_KINDS)


def get_kind(name: str) -> ExperimentKind:
    return _KINDS[name]
