"""Command line: ``python -m labeldp_sim experiment=<name> [overrides]`` (or ``labeldp-sim``).

Overrides use Hydra's grammar; ``-m`` sweeps comma-separated values (Hydra
multirun).  Every job is composed with Hydra's compose API and validated
before any job computes, so bad input — in any job — ends the program with
one line on stderr (the config key and the allowed values) and exit status 2,
having computed and written nothing.

Each multirun job writes its own directory: ``results/<experiment>/`` when the
jobs differ only in ``experiment``, else ``results/<experiment>/<k=v,...>/``
named from the swept overrides.  All jobs share the results directory's trial
store.

Configs come from the package's ``conf/`` and from the directories named by
``LABELDP_SIM_CONF_PATH`` (:mod:`labeldp_sim.core.conf_path`): a mechanism or a
paper's experiments can live outside the repository.
"""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .conf_path import CONF_DIR, conf_dirs, config_groups, group_options, search_path_override
from .config import job_kind
from .errors import ConfigError, first_line
from .kinds import get_kind
from . import interrupts
from .store import StoreError, atomic_write, locked, staged

__all__ = ["main", "run_experiment", "validate_argv", "validate_job", "Job"]

USAGE = ("usage: labeldp-sim [-m] [--cfg] key=value ...   "
         "(e.g. labeldp-sim experiment=cls_label_ldp grid.reps=200; see README.md)\n"
         "       labeldp-sim audit [--quick] [--draws N] [--seed S] [--out DIR] [--no-mutants]\n"
         "       labeldp-sim report [--results DIR]   (results/index.html from the files there)")
FLAGS = {"-m": "multirun", "--multirun": "multirun", "--cfg": "cfg", "-c": "cfg",
         "-h": "help", "--help": "help"}
FLAG_NAMES = "-m/--multirun, --cfg/-c (print the composed config), -h/--help"


@dataclass
class Job:
    """One run: its overrides, its output subdirectory, its composed config and validated spec."""

    overrides: list
    subdir: str | None
    cfg: DictConfig | None = None
    spec: object = None


def validate_job(cfg: DictConfig):
    """Validate one composed job and return its spec; raise ConfigError on bad input.

    The job's ``kind`` names a registered :class:`~labeldp_sim.core.kinds.ExperimentKind`
    (Table I rates, K-class, digits, user-level...), whose validator builds the spec.
    Nothing is computed and no file or directory is created.
    """
    return get_kind(job_kind(cfg)).validate(cfg)


def _compose(overrides: list) -> DictConfig:
    """The config of ``overrides``, composed from conf/ and the directories of LABELDP_SIM_CONF_PATH."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=[*overrides, *search_path_override()])


def _compose_integer_keys(overrides: list) -> DictConfig | None:
    """``grid.reps_per_d.3=1000``: Hydra reads the last part of a dotted key as the string '3' and,
    in struct mode, cannot find the YAML's integer key 3.  Such overrides are applied as
    ``+grid.reps_per_d.3=1000`` (a string key the validator reads as d = 3, winning over the
    file's 3); None when that does not compose either (the caller explains the first error)."""
    digit = [o for o in overrides if o[:1] not in "+~" and "=" in o
             and o.partition("=")[0].rpartition(".")[2].isdigit()]
    if not digit:
        return None
    try:
        return _compose([("+" + o) if o in digit else o for o in overrides])
    except (HydraException, OmegaConfBaseException, ValueError):
        return None


def _key_value(override) -> tuple[str, str]:
    """The override's key and its value as typed (a sweep keeps its commas)."""
    value = override.input_line.partition("=")[2]
    return override.key_or_group, value


def _group_choices(parsed: list) -> None:
    """``group=name`` naming no YAML file: one line instead of Hydra's listing."""
    groups = config_groups()
    for override in parsed:
        if override.key_or_group not in groups or override.is_delete():
            continue
        allowed = group_options(override.key_or_group)
        values = (list(override.sweep_string_iterator()) if override.is_sweep_override()
                  else [override.get_value_element_as_str()])
        for choice in values:
            if choice not in allowed:
                raise ConfigError(override.key_or_group, choice, allowed)


def _explain_composition(overrides: list, parsed: list, error: Exception) -> ConfigError:
    """Turn a Hydra composition error into a one-line ConfigError on the culprit override.

    The culprit is found by composing the group choices with each other
    override alone; its allowed values are the keys of its parent node.
    """
    names = config_groups()
    groups = [o.input_line for o in parsed if o.key_or_group in names]
    try:
        base = _compose(groups)
    except (HydraException, OmegaConfBaseException, ValueError):
        base = None
    for override in parsed:
        if override.key_or_group in names:
            continue
        try:
            _compose([*groups, override.input_line])
            continue
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            culprit = err
        key, value = _key_value(override)
        parent = key.rpartition(".")[0]
        node = base if not parent or base is None else OmegaConf.select(base, parent,
                                                                        throw_on_missing=False)
        if isinstance(node, DictConfig):
            keys = [str(k) for k in node.keys()]
            if override.is_delete():
                return ConfigError(key, "~ (delete)", f"existing keys: {', '.join(keys)}")
            if override.is_add():
                return ConfigError(key, value, f"a key that is not already set ({parent or 'root'} has "
                                   f"{', '.join(keys)})")
            return _validator_says(groups, override) or ConfigError(key, value, keys)
        return ConfigError(key, value, f"a value Hydra can apply ({first_line(culprit)})")
    return ConfigError("argument", " ".join(overrides), f"valid Hydra overrides ({first_line(error)})")


def _validator_says(groups: list, override) -> ConfigError | None:
    """The validator's own reason for a key the config lacks (``distribution.d`` comes from
    the grid, say), found by adding the key with ``+``; None if it has nothing to say."""
    try:
        validate_job(_compose([*groups, "+" + override.input_line]))
    except ConfigError as err:
        return err if err.key == override.key_or_group else None
    except (HydraException, OmegaConfBaseException, ValueError):
        return None
    return None


def _parse(argv: list) -> tuple[set, list, list]:
    flags, overrides = set(), []
    for arg in argv:
        if arg.startswith("-") and "=" not in arg:
            if arg not in FLAGS:
                raise ConfigError("argument", arg, FLAG_NAMES)
            flags.add(FLAGS[arg])
        else:
            overrides.append(arg)
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as err:
        bad = next((a for a in overrides if not _parses(a)), " ".join(overrides))
        raise ConfigError("argument", bad, f"key=value Hydra overrides ({first_line(err)})") from None
    return flags, overrides, parsed


def _parses(arg: str) -> bool:
    try:
        OverridesParser.create().parse_overrides([arg])
        return True
    except HydraException:
        return False


def _expand(parsed: list, multirun: bool) -> list[Job]:
    """The jobs of a command line: one, or the cartesian product of the swept values."""
    sweeps = [o for o in parsed if o.is_sweep_override()]
    if sweeps and not multirun:
        key, value = _key_value(sweeps[0])
        raise ConfigError(key, value, "one value; to sweep several, add -m (multirun)")
    choices = []
    for override in parsed:
        if override.is_sweep_override():
            prefix = override.get_key_element()
            choices.append([(override.key_or_group, f"{prefix}={v}")
                            for v in override.sweep_string_iterator()])
        else:
            choices.append([(None, override.input_line)])
    named = {o.key_or_group for o in sweeps} - {"experiment"}
    jobs = []
    for combination in itertools.product(*choices):
        lines = [line for _, line in combination]
        subdir = ",".join(line.lstrip("+~") for key, line in combination if key in named)
        jobs.append(Job(lines, subdir.replace("/", "_") or None))
    return jobs


def validate_argv(argv: list) -> tuple[set, list[Job]]:
    """Parse, compose and validate every job of a command line; raise ConfigError on the first fault."""
    flags, overrides, parsed = _parse(argv)
    _group_choices(parsed)
    jobs = _expand(parsed, "multirun" in flags)
    if "help" in flags:
        return flags, jobs
    for job in jobs:
        interrupts.checkpoint("validate")
        try:
            job.cfg = _compose(job.overrides)
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            job.cfg = _compose_integer_keys(job.overrides)
            if job.cfg is None:
                raise _explain_composition(job.overrides, OverridesParser.create().parse_overrides(
                    job.overrides), err) from None
        if "cfg" not in flags:
            job.spec = validate_job(job.cfg)
    return flags, jobs


def _exporter(cfg: DictConfig, overrides):
    """``export(out, spec, stats, write)``: one run's files under the directory's lock, all of
    them or none (:func:`~labeldp_sim.core.store.staged`): ``write()``'s files, config.yaml and
    provenance.json land together, so the directory never mixes two runs."""
    import json

    from .provenance import provenance

    def export(out: Path, spec, stats, write) -> None:
        out = Path(out)
        with locked(out), staged(out) as stage:
            interrupts.describe(lambda: _export_note(spec, stats, out, stage.committed))
            write()
            atomic_write(out / "config.yaml", lambda p: p.write_text(OmegaConf.to_yaml(cfg, resolve=True)))
            info = provenance(spec.seed, spec.config_key, overrides, package=spec.packages,
                              trials=stats.as_dict())
            atomic_write(out / "provenance.json", lambda p: p.write_text(json.dumps(info, indent=2) + "\n"))

    return export


def _export_note(spec, stats, out: Path, committed: bool) -> tuple:
    """What an interrupt during or after the export keeps (the interrupt line)."""
    stored = (f"all {stats.wanted:,} trials are stored in {stats.store} "
              f"({stats.computed:,} computed by this run)")
    if committed:
        return spec.name, f"{stored} and {out} is written; run the same command again to refresh the tables"
    return spec.name, (f"{stored}; {out} is left as it was (no file of this run was written); "
                       "run the same command again to write it")


def run_experiment(cfg: DictConfig, overrides=None, subdir: str | None = None, spec=None) -> dict:
    """Validate (unless ``spec`` is given), then let the job's kind run it through the trial
    store, fit, plot and export."""
    spec = spec if spec is not None else validate_job(cfg)
    return get_kind(job_kind(cfg)).run(cfg, spec, overrides, subdir, _exporter(cfg, overrides))


def main(argv: list | None = None, commands: dict | None = None) -> None:
    """Run the experiments of a command line; ``commands`` maps a first word (``audit``) to the
    ``main(argv) -> status`` of a subcommand the application provides (:mod:`labeldp_sim.app`).

    Exit status: 0 done; 2 bad input (one line naming the key); 1 a trial store that is
    damaged or cannot be used, or a cluster that did not start (one line); 130 (143) on
    SIGINT (SIGTERM), at any instant, with one line saying what is kept.
    """
    with interrupts.guard():
        try:
            _main(list(sys.argv[1:] if argv is None else argv), commands)
        except BrokenPipeError:  # `labeldp-sim ... | head`: the reader left; stored trials are kept
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)


def _main(argv: list, commands: dict | None) -> None:
    if argv[:1] and argv[0] in (commands or {}):
        sys.exit(commands[argv[0]](argv[1:]))
    try:
        conf_dirs()  # a bad LABELDP_SIM_CONF_PATH: one line, before any config is read
        flags, jobs = validate_argv(argv)
    except ConfigError as err:
        print(f"labeldp-sim: error: {err}", file=sys.stderr)
        sys.exit(2)
    if "help" in flags:
        print(USAGE)
        print("experiments: " + ", ".join(group_options("experiment")))
        return
    if "cfg" in flags:
        for job in jobs:
            print(OmegaConf.to_yaml(job.cfg, resolve=True))
        return
    try:
        for i, job in enumerate(jobs):
            if len(jobs) > 1:
                print(f"[job {i + 1}/{len(jobs)}] {' '.join(job.overrides)}", flush=True)
            interrupts.describe(None)
            run_experiment(job.cfg, job.overrides, job.subdir, job.spec)
    except StoreError as err:  # damaged or unusable: one line, before any trial is reused
        print(f"labeldp-sim: error: {err}", file=sys.stderr)
        sys.exit(1)
