"""The Python API: run an experiment from a notebook or a script, and read its tables.

:func:`run` does what ``labeldp-sim experiment=<name> [overrides]`` does — the same
composition, the same validation (one :class:`~labeldp_sim.harness.errors.ConfigError`
line naming the key), the same trial store and files — and returns a :class:`Result`
holding the run's tables as pandas DataFrames.  :func:`compose` returns the validated
config without running anything.

Unlike the command line, nothing here exits the process, prints a traceback or touches
the signal handlers: a Ctrl-C (a notebook's "interrupt kernel") raises
``KeyboardInterrupt`` as anywhere in Python, and every chunk of trials stored
before it is kept (the store commits each chunk whole), so the same call resumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["run", "compose", "Result"]

# the figure each kind writes, in order of preference (Table I and user-level cells,
# the law-free searches, K-class and digits)
FIGURES = ("rate.png", "convergence.png", "accuracy.png")
OVERRIDES_ALLOWED = "a list of Hydra key=value overrides, e.g. ['grid.reps=2', 'seed=7']"


@dataclass(frozen=True)
class Result:
    """What one run wrote: its tables, its directory and its validated spec.

    Parameters
    ----------
    directory : pathlib.Path
        The run's output directory (``<results_dir>/<experiment>``, or
        ``<results_dir>/minimax/<experiment>`` for a law-free search; a run of its own,
        ``.../<experiment>/<k=v,...>``).
    spec : labeldp_sim.harness.kinds.JobSpec
        The validated spec the run ran (its kind's own dataclass).
    tables : dict of str to pandas.DataFrame
        Every CSV file the run wrote in ``directory``, by file stem
        (``trials``, ``summary``, ``fit``, ``points``, ``windows``...).

    Examples
    --------
    A result is what :func:`run` returns; built by hand it reads the same way:

    >>> import pandas as pd
    >>> from pathlib import Path
    >>> fit = pd.DataFrame({"axis": ["N"], "slope": [-0.5], "theory": [-0.5], "verdict": ["consistent"]})
    >>> result = Result(directory=Path("results/demo"), spec=None, tables={"fit": fit})
    >>> result.fits.slope.tolist()
    [-0.5]
    >>> result.verdicts.verdict.tolist()
    ['consistent']
    >>> sorted(result.tables)
    ['fit']
    """

    directory: Path
    spec: object
    tables: dict = field(default_factory=dict)

    @classmethod
    def read(cls, directory, spec=None) -> "Result":
        """The result of the run whose files are in ``directory``.

        Parameters
        ----------
        directory : str or pathlib.Path
            A run's output directory (it holds ``config.yaml`` and its CSV files).
        spec : labeldp_sim.harness.kinds.JobSpec, optional
            The run's spec, where the caller has it.

        Returns
        -------
        Result
            Its tables read from every ``*.csv`` in ``directory``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "fit.csv").write_text("axis,slope,verdict\\nN,-0.5,consistent\\n")
        >>> Result.read(folder).fits.slope.tolist()
        [-0.5]
        """
        import pandas as pd

        directory = Path(directory)
        tables = {path.stem: pd.read_csv(path) for path in sorted(directory.glob("*.csv"))}
        return cls(directory=directory, spec=spec, tables=tables)

    @property
    def fits(self):
        """The fit table (``fit.csv``): one row per fitted slope, with its theory and verdict; None if the kind fits nothing."""
        return self.tables.get("fit")

    @property
    def points(self):
        """The points the fits read: ``points.csv`` (law-free searches), else ``summary.csv``
        (mean error per grid point); None where the run wrote neither."""
        return self.tables.get("points", self.tables.get("summary"))

    @property
    def trials(self):
        """Every trial of the run (``trials.csv``); None where the kind writes none."""
        return self.tables.get("trials")

    @property
    def verdicts(self):
        """The rows of :attr:`fits` that carry a verdict, with their identifying and slope
        columns; None where the run fits nothing."""
        fits = self.fits
        if fits is None or "verdict" not in fits:
            return None
        rows = fits[fits["verdict"].notna()]
        if "primary" in rows:
            rows = rows[rows["primary"].astype(bool)]
        wanted = ("quantity", "estimator", "axis", "d", "statement", "rate", "slope", "deep_slope",
                  "ci_low", "ci_high", "deep_ci_low", "deep_ci_high", "theory", "verdict", "reason")
        return rows[[c for c in wanted if c in rows]].reset_index(drop=True)

    def plot(self):
        """The run's figure as a matplotlib Figure (the ``rate.png`` or ``convergence.png`` it wrote).

        Returns
        -------
        matplotlib.figure.Figure
            The figure the kind wrote, shown at its own size; a notebook displays it.

        Raises
        ------
        FileNotFoundError
            When the run wrote no figure in :attr:`directory`.
        """
        import matplotlib.image
        from matplotlib.figure import Figure

        names = [*FIGURES, *sorted(p.name for p in self.directory.glob("*.png"))]
        path = next((self.directory / n for n in names if (self.directory / n).is_file()), None)
        if path is None:
            raise FileNotFoundError(f"{self.directory}: no figure (the run wrote no .png file)")
        image = matplotlib.image.imread(path)
        dpi = 110  # the figures' own (labeldp_sim.report.figures)
        figure = Figure(figsize=(image.shape[1] / dpi, image.shape[0] / dpi), dpi=dpi)
        axes = figure.add_axes((0, 0, 1, 1))
        axes.imshow(image)
        axes.set_axis_off()
        return figure

    def __repr__(self) -> str:
        shapes = ", ".join(f"{name}: {len(frame)} rows" for name, frame in self.tables.items())
        return f"Result(directory={str(self.directory)!r}, tables={{{shapes}}})"


def _arguments(experiment, overrides, results_dir=None) -> list:
    """The command line's override list for ``experiment``; ConfigError on a misuse."""
    from labeldp_sim.harness.conf_path import group_options, hydra_quoted
    from labeldp_sim.harness.errors import ConfigError, check

    options = group_options("experiment")
    check(isinstance(experiment, str) and experiment in options, "experiment", experiment, options)
    if isinstance(overrides, (str, bytes)) or not isinstance(overrides, (list, tuple)):
        raise ConfigError("overrides", overrides, OVERRIDES_ALLOWED)
    for line in overrides:
        check(isinstance(line, str) and "=" in line or isinstance(line, str) and line.startswith("~"),
              "overrides", line, OVERRIDES_ALLOWED)
        key = line.partition("=")[0].lstrip("+~")
        check(key != "experiment", "overrides", line, "overrides of the experiment's keys: the experiment "
              "is run's (compose's) first argument")
        check(results_dir is None or key != "paths.results_dir", "overrides", line,
              "paths.results_dir or results_dir=, not both")
    arguments = [f"experiment={experiment}", *overrides]
    if results_dir is not None:
        check(isinstance(results_dir, (str, Path)) and str(results_dir).strip() != "", "results_dir",
              results_dir, "a path (str or pathlib.Path) of the results directory")
        arguments.append(f"paths.results_dir={hydra_quoted(str(results_dir))}")
    return arguments


def _job(experiment, overrides, results_dir=None):
    """The one validated job of ``experiment`` with ``overrides`` (the CLI's own validation)."""
    from labeldp_sim.app import load_papers
    from labeldp_sim.harness.cli import validate_argv
    from labeldp_sim.harness.conf_path import conf_dirs
    from labeldp_sim.harness.errors import ConfigError

    try:
        conf_dirs()
        load_papers()
        _, jobs = validate_argv(_arguments(experiment, overrides, results_dir))
    except ConfigError as err:
        allowed = err.allowed.replace("add -m (multirun)", "call run() once per value")
        raise ConfigError(err.key, err.got, allowed) from None  # one line: no Hydra chain behind it
    return jobs[0]


def compose(experiment: str, overrides=()):
    """The composed and validated config of ``experiment`` with ``overrides``; nothing runs.

    Parameters
    ----------
    experiment : str
        The experiment's name (a file of ``conf/<paper>/experiment/``, e.g. ``cls_label_ldp``).
    overrides : sequence of str, optional
        Hydra overrides, as on the command line (``["grid.reps=2", "seed=7"]``).

    Returns
    -------
    omegaconf.DictConfig
        The config :func:`run` would run, checked by the experiment kind's validator.

    Raises
    ------
    labeldp_sim.ConfigError
        One line naming the key and the allowed values, for any bad override.

    Examples
    --------
    >>> import labeldp_sim
    >>> cfg = labeldp_sim.compose("cls_label_ldp", ["grid.reps=2"])
    >>> cfg.grid.reps, cfg.experiment_name
    (2, 'cls_label_ldp')
    >>> labeldp_sim.compose("cls_label_ldp", ["grid.reps=-1"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    labeldp_sim.harness.errors.ConfigError: grid.reps: got -1; allowed: ...
    """
    return _job(experiment, overrides).cfg


def run(experiment: str, overrides=(), results_dir=None) -> Result:
    """Run ``experiment`` as ``labeldp-sim experiment=<experiment> [overrides]`` does, and return its tables.

    Trials already in the results directory's store are reused, the others are computed and
    stored; the run's files (CSV tables, figure, ``config.yaml``, ``provenance.json``) are
    written as the command line writes them.

    Parameters
    ----------
    experiment : str
        The experiment's name (a file of ``conf/<paper>/experiment/``, e.g. ``cls_label_ldp``).
    overrides : sequence of str, optional
        Hydra overrides, as on the command line (``["grid.reps=2", "runner.backend=sequential"]``).
        A sweep (``a=1,2``) is refused: call :func:`run` once per value.
    results_dir : str or pathlib.Path, optional
        The results directory (its trial store included), the files in its canonical layout;
        None keeps the config's ``paths.results_dir`` (``results``, relative to the working
        directory), where a run whose overrides change a number writes a folder of its own,
        ``<experiment>/<k=v,...>/``, and leaves the experiment's own folder as it is (as the
        command line does: :mod:`labeldp_sim.harness.run_folders`).

    Returns
    -------
    Result
        The run's tables as DataFrames, its directory and its spec.

    Raises
    ------
    labeldp_sim.ConfigError
        One line naming the key and the allowed values, for any bad override; nothing is
        computed or written then.

    See Also
    --------
    compose : the validated config, without running it.

    Examples
    --------
    A tiny Table I cell (a few seconds; its trials are stored in ``results_dir``):

    >>> import tempfile, labeldp_sim
    >>> result = labeldp_sim.run("cls_label_ldp", ["grid.d=[1]", "grid.reps=2",
    ...     "grid.sweeps.N.values=[1000,2000,4000]", "grid.sweeps.eps.values=[0.5,1.0]",
    ...     "grid.sweeps.eps.N=1000", "runner.backend=sequential"],
    ...     results_dir=tempfile.mkdtemp())  # doctest: +SKIP
    >>> result.verdicts  # doctest: +SKIP
    """
    from labeldp_sim.harness.cli import run_experiment
    from labeldp_sim.harness.logs import get_logger
    from labeldp_sim.harness.run_folders import announce

    job = _job(experiment, overrides, results_dir)
    for note in job.notes:
        get_logger("api").warning(f"labeldp-sim: note: {note}")
    announce(job)
    outputs = run_experiment(job.cfg, job.overrides, job.subdir, job.spec)
    return Result.read(outputs["out"], job.spec)
