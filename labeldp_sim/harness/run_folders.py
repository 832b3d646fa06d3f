"""Where a run writes: its experiment's canonical folder, or a folder of its own.

A run whose overrides change a number it writes (a mechanism, a family parameter, a grid, the
seed, the fit's tolerance) would otherwise overwrite the committed results of its experiment
(``results/<experiment>/``) and the tables built from them.  Unless the command line names a
results directory (``paths.results_dir=DIR``: the user chose a folder of their own, whose layout
stays the canonical one), such a run -- a single run or a job of a multirun -- writes
``<results_dir>/[<results_subdir>/]<experiment>/<name>/``, ``<name>`` its overrides as Hydra
names a job's output directory (``hydra.job.override_dirname``): the override lines as typed,
sorted, joined by ``,``, ``=`` between key and value, the keys of :data:`NO_FOLDER` left out.
A ``/`` becomes ``_`` (the name stays one path component) and a name longer than the file
system allows keeps a readable prefix and a hash of the whole (:func:`folder_name`).

The subfolder shares the results directory's trial store and run.log; the shared tables
(``table1.md``...) are refreshed only by canonical runs (:meth:`~labeldp_sim.harness.kinds.ExperimentKind.run`).
A run's own files land in its folder together, under its lock (:func:`exporter`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from labeldp_sim.harness import interrupts
from labeldp_sim.harness.config import job_kind
from labeldp_sim.harness.kinds import get_kind
from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.store import atomic_write, locked, staged

__all__ = ["NO_FOLDER", "names_no_folder", "naming", "folder_name", "results_dir_given", "name_folders",
           "announcement", "announce", "exporter", "export_note"]

# Overrides that name no folder: they choose the canonical folder itself (experiment, mode, kind),
# where the files go (paths), how the trials run (the runner group's options set only the keys
# below) and Hydra's own settings.  ``key.*`` stands for the key and everything under it.
# Not reads.RUN_SETTINGS: that list answers "does it change a stored trial?", and names ``fit``,
# which reads the stored numbers and makes none; but fit.tol and fit.min_points change the
# verdicts written in fit.csv, so here a fit override names a folder (as does runner.path).
NO_FOLDER = ("experiment", "mode", "kind", "paths.*", "hydra.*", "runner", "runner.n_jobs", "runner.backend",
             "runner.chunk", "runner.progress", "runner.reuse", "runner.dask.*")
# the longest file name (bytes) of the usual file systems (NAME_MAX), and the hash that keeps a
# shortened name unique
NAME_MAX = 255
HASH_DIGITS = 16
# the overrides that name the results directory: with one, the layout stays the canonical one
RESULTS_DIR_KEYS = ("paths", "paths.results_dir")
log = get_logger("cli")


def names_no_folder(key: str) -> bool:
    """Whether an override of ``key`` (dotted, without ``+``/``~``) leaves the run in its canonical folder.

    >>> names_no_folder("runner.n_jobs"), names_no_folder("paths.results_dir"), names_no_folder("fit.tol")
    (True, True, False)
    """
    for entry in NO_FOLDER:
        stem = entry.removesuffix(".*")
        if key == stem or (entry.endswith(".*") and key.startswith(stem + ".")):
            return True
    return False


def _key(line: str) -> str:
    try:
        return OverridesParser.create().parse_overrides([line])[0].key_or_group
    except Exception:  # noqa: BLE001 - every line was parsed before; fall back to its text
        return line.partition("=")[0].lstrip("+~")


def naming(lines) -> list:
    """The override lines of ``lines`` that name a folder (those that can change a number written)."""
    return [line for line in lines if not names_no_folder(_key(line))]


def folder_name(lines) -> str | None:
    """Hydra's override dirname of ``lines`` (all of them: filter them with :func:`naming`); None
    when there is none.

    >>> folder_name(["seed=7", "distribution.beta=0.5"])
    'distribution.beta=0.5,seed=7'
    >>> len(folder_name([f"grid.d=[{','.join(['1'] * 200)}]"]).encode())
    255
    """
    lines = sorted(lines)
    if not lines:
        return None
    whole = ",".join(lines)
    name = whole.replace("/", "_")
    encoded = name.encode()
    if len(encoded) <= NAME_MAX:
        return name
    digest = hashlib.sha256(whole.encode()).hexdigest()[:HASH_DIGITS]
    prefix = encoded[:NAME_MAX - HASH_DIGITS - 1].decode(errors="ignore")  # whole characters only
    return f"{prefix}-{digest}"


def results_dir_given(parsed) -> bool:
    """Whether the parsed overrides of a command line name the results directory."""
    return any(o.key_or_group in RESULTS_DIR_KEYS and not o.is_delete() for o in parsed)


def name_folders(jobs: list, parsed: list) -> None:
    """Give each job whose overrides change a number a folder of its own (``job.subdir``, and the
    lines that named it in ``job.own``), unless ``parsed`` names the results directory: then the
    jobs keep the canonical layout there (a multirun's jobs, subfolders named by the swept keys)."""
    if results_dir_given(parsed):
        return
    for job in jobs:
        job.own = sorted(naming(job.overrides))
        job.subdir = folder_name(job.own)


def announcement(job) -> str | None:
    """The line a run with a folder of its own says before computing; None for a canonical run."""
    if not job.own:
        return None
    kind = get_kind(job_kind(job.cfg)).for_spec(job.cfg, job.spec)
    canonical, own = kind.output_dir(job.spec, None), kind.output_dir(job.spec, job.subdir)
    return (f"{job.spec.name}: non-default settings ({' '.join(job.own)}): writing {own}/; "
            f"{canonical}/ is left as it is (paths.results_dir=DIR gives the run a results folder of its own)")


def announce(job) -> None:
    """Say :func:`announcement`'s line (INFO), if the job has one."""
    line = announcement(job)
    if line is not None:
        log.info(line)


def exporter(cfg, overrides):
    """``export(out, spec, stats, write)``: one run's files under the directory's lock, all of
    them or none (:func:`~labeldp_sim.harness.store.staged`): ``write()``'s files, config.yaml and
    provenance.json land together, so the directory never mixes two runs."""
    from labeldp_sim.harness.provenance import provenance

    def export(out: Path, spec, stats, write) -> None:
        out = Path(out)
        with locked(out), staged(out) as stage:
            interrupts.describe(lambda: export_note(spec, stats, out, stage.committed))
            write()
            atomic_write(out / "config.yaml", lambda p: p.write_text(OmegaConf.to_yaml(cfg, resolve=True)))
            info = provenance(spec.seed, spec.config_key, overrides, package=spec.packages,
                              trials=stats.as_dict())
            atomic_write(out / "provenance.json", lambda p: p.write_text(json.dumps(info, indent=2) + "\n"))

    return export


def export_note(spec, stats, out: Path, committed: bool) -> tuple:
    """What an interrupt during or after the export keeps (the interrupt line)."""
    stored = (f"all {stats.wanted:,} trials are stored in {stats.store} "
              f"({stats.computed:,} computed by this run)")
    if committed:
        return spec.name, f"{stored} and {out} is written; run the same command again to refresh the tables"
    return spec.name, (f"{stored}; {out} is left as it was (no file of this run was written); "
                       "run the same command again to write it")
