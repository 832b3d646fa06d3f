"""Command line: ``python -m labeldp_sim experiment=<name> [overrides]`` (or ``labeldp-sim``).

Overrides use Hydra's grammar; ``-m`` sweeps comma-separated values (Hydra
multirun).  Every job is composed with Hydra's compose API and validated
before any job computes, so bad input — in any job — ends the program with
one line on stderr (the config key and the allowed values) and exit status 2,
having computed and written nothing.

A run (each job of a multirun) whose overrides change a number writes ``results/<experiment>/<k=v,...>/``,
named from them (:mod:`~labeldp_sim.harness.run_folders`), never the canonical ``results/<experiment>/``;
with ``paths.results_dir=DIR``, the canonical layout in DIR (a multirun's jobs: subfolders named from the
swept overrides).  All jobs share the results directory's trial store.

Configs come from the package's ``conf/`` (its root and shared groups, and each paper's
``conf/<paper>/``) and from the directories named by ``LABELDP_SIM_CONF_PATH`` (:mod:`labeldp_sim.harness.conf_path`): a mechanism or a
paper's experiments can live outside the repository.

Hydra's flags are understood (:data:`~labeldp_sim.harness.cli_help.FLAGS`, ``docs/cli.md``):
``--help``, ``--cfg job``, ``--info``, ``-sc install=bash`` (:mod:`labeldp_sim.harness.cli_help`),
``-cd DIR``, ``-v``/``-q``/``hydra.verbose=true`` (:mod:`labeldp_sim.harness.logs`).  Messages go
through the ``labeldp_sim`` logger, and each run appends them to ``<results_dir>/run.log``; a
multirun ends with one table across its jobs (:mod:`labeldp_sim.harness.multirun`).
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from labeldp_sim.harness.cli_help import FLAGS, completion_script, flag_names, help_text, info_text
from labeldp_sim.harness.conf_path import (CONF_DIR, CONF_PATH_VARIABLE, conf_dirs, config_groups, group_options,
                                           search_path_override)
from labeldp_sim.harness.config import job_kind, root_defaults
from labeldp_sim.harness.errors import MISSING, ConfigError, check, first_line, os_error_line
from labeldp_sim.harness.kinds import ROOT_KEYS, get_kind, registered
from labeldp_sim.harness.reads import check_overrides
from labeldp_sim.harness import interrupts, logs, multirun, run_folders
from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.store import StoreError

__all__ = ["main", "run_experiment", "validate_argv", "validate_job", "Flags", "Job", "report_arguments"]

BY_NAME = {name: flag for flag in FLAGS for name in flag.names}
# Hydra's spelling of -v (an override, taken out of the overrides before composition)
VERBOSE_OVERRIDE = re.compile(r"(\+\+|\+)?hydra\.verbose=(.*)")
log = get_logger("cli")
# the key of an override (``+``/``~``/``++`` in front, dotted, ``@package`` as Hydra allows)
OVERRIDE_KEY = re.compile(r"(\+\+|\+|~)?[A-Za-z_][\w.@/-]*")


@dataclass
class Job:
    """One run: its overrides, its output subdirectory (and ``own``: the overrides that named it, for
    a folder of its own: :mod:`~labeldp_sim.harness.run_folders`), its composed config and validated spec."""

    overrides: list
    subdir: str | None
    cfg: DictConfig | None = None
    spec: object = None
    notes: list = field(default_factory=list)
    own: list = field(default_factory=list)


def validate_job(cfg: DictConfig):
    """Validate one composed job and return its spec; raise ConfigError on bad input.

    The job's ``kind`` names a registered :class:`~labeldp_sim.harness.kinds.ExperimentKind`
    (Table I rates, K-class, digits, user-level...), whose validator builds the spec.
    Nothing is computed and no file or directory is created.
    """
    return get_kind(job_kind(cfg)).validate(cfg)


def compose_job(overrides: list) -> DictConfig:
    """The config of ``overrides``, composed from conf/, the papers' conf/<paper>/ and the directories
    of LABELDP_SIM_CONF_PATH."""
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
        return compose_job([("+" + o) if o in digit else o for o in overrides])
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


def _deletions(parsed: list) -> None:
    """``~grid``, ``~seed``: a config group or a root key deleted, refused on that key.

    Every job has the root keys (conf/config.yaml) and its paper's groups and keys;
    deleted, the validator would find a half-composed node (``~grid`` keeps the
    experiment's own ``grid.reps`` and loses ``grid.d``) and blame one of its keys,
    or a key another kind never reads would drop silently.
    """
    groups = config_groups()
    defaults = root_defaults()
    nodes = {spec.node for spec in registered().values() if spec.node}
    # a paper's root keys come with its experiments (Table I's mode), not with the root config
    kept = {*ROOT_KEYS, *(key for spec in registered().values() for key in spec.root_keys)}
    for override in parsed:
        key = override.key_or_group
        if not override.is_delete() or "." in key:
            continue
        if key in groups:
            raise ConfigError(key, "~ (delete)", f"one of {', '.join(group_options(key))} (a config group "
                              f"is chosen, not deleted: {key}=<option>)")
        if key in nodes:
            raise ConfigError(key, "~ (delete)", f"the {key} settings of an experiment that has them, "
                              f"changed key by key ({key}.<key>=...), not deleted")
        if key in defaults:
            default = defaults[key]
            what = (f"a mapping with keys {', '.join(map(str, default))}" if isinstance(default, dict)
                    else "a value (the experiment sets it)" if default == "???"
                    else f"a value (default {default!r})")
            raise ConfigError(key, "~ (delete)", f"{what}: every job has {key}; set it, do not delete it")
        if key in kept:
            raise ConfigError(key, "~ (delete)", f"a value (the experiment sets it): every job whose experiment "
                              f"has {key} keeps it; set it, do not delete it")


def _explain_composition(overrides: list, parsed: list, error: Exception) -> ConfigError:
    """Turn a Hydra composition error into a one-line ConfigError on the culprit override.

    The culprit is found by composing the group choices with each other
    override alone; its allowed values are the keys of its parent node.  A
    paper's groups and keys come with its experiments: one set without an
    experiment is blamed on ``experiment``, one of another paper's on itself
    by the validator (``mode=law_free`` on a K-class experiment).
    """
    names = config_groups()
    groups = [o.input_line for o in parsed if o.key_or_group in names]
    no_experiment = ConfigError("experiment", None, group_options("experiment"))
    chosen = any(o.key_or_group == "experiment" for o in parsed)
    try:
        base = compose_job(groups)
    except (HydraException, OmegaConfBaseException, ValueError):
        base = None
        culprit = _group_culprit([o for o in parsed if o.key_or_group in names])
        if culprit is not None:
            return culprit if chosen else no_experiment
    for override in parsed:
        if override.key_or_group in names:
            continue
        try:
            compose_job([*groups, override.input_line])
            continue
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            culprit = err
        key, value = _key_value(override)
        parent = key.rpartition(".")[0]
        if base is not None and key.partition(".")[0] not in base and not override.is_delete():
            said = _validator_says(groups, override)
            if said is not None or not chosen:
                return said or no_experiment
        node = base if not parent or base is None else OmegaConf.select(base, parent,
                                                                        throw_on_missing=False)
        if isinstance(node, DictConfig):
            keys = [str(k) for k in node.keys()]
            if override.is_delete():
                return ConfigError(key, "~ (delete)", f"existing keys: {', '.join(keys)}")
            if override.is_add():
                return ConfigError(key, value, f"a key that is not already set ({parent or 'root'} has "
                                   f"{', '.join(keys)})")
            if key.rpartition(".")[2] in keys:  # the key exists: Hydra refused the value, e.g. a mapping
                # merged key by key into one that lacks a key ({1: 4} into {3: 4})
                return _validator_says(groups, override) or ConfigError(
                    key, value, f"a value Hydra can apply ({first_line(culprit.__cause__ or culprit)}; a key a "
                    f"mapping lacks is added with +{key}.<key>=<value>)")
            return _validator_says(groups, override) or ConfigError(key, value, keys)
        return ConfigError(key, value, f"a value Hydra can apply ({first_line(culprit)})")
    return _explain_together(groups, [o for o in parsed if o.key_or_group not in names]) or ConfigError(
        "argument", " ".join(overrides), f"valid Hydra overrides ({first_line(error)})")


def _group_culprit(chosen: list) -> ConfigError | None:
    """The first group choice that does not compose after the ones before it: a group of another
    paper (``mechanism=rappor`` on a K-class experiment, whose paper has no mechanism group), blamed
    by the validator when it is added (``+mechanism=rappor``) or else on the group itself."""
    for i, override in enumerate(chosen):
        before = [o.input_line for o in chosen[:i]]
        try:
            compose_job([*before, override.input_line])
            continue
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            culprit = err
        key, value = _key_value(override)
        return _validator_says(before, override) or ConfigError(
            key, value, f"a config group of the chosen experiment ({first_line(culprit)})")
    return None


def _explain_together(groups: list, others: list) -> ConfigError | None:
    """Each override composes alone, not all together: the first that fails after the ones
    before it is the culprit (``~paths paths.results_dir=x``: the key was deleted)."""
    for i, override in enumerate(others):
        try:
            compose_job([*groups, *(o.input_line for o in others[:i + 1])])
            continue
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            culprit = err
        key, value = _key_value(override)
        deleted = next((o.key_or_group for o in others[:i] if o.is_delete()
                        and (key == o.key_or_group or key.startswith(o.key_or_group + "."))), None)
        if deleted is not None:
            return ConfigError(key, value, f"a key that exists: ~{deleted} deleted it (set {key} or delete "
                               f"{deleted}, not both)")
        before = " ".join(o.input_line for o in others[:i])
        return ConfigError(key, value, f"a value Hydra can apply after {before} ({first_line(culprit)})")
    return None


def _validator_says(groups: list, override) -> ConfigError | None:
    """The validator's own reason for a key the config lacks (``distribution.d`` comes from
    the grid, say), found by adding the key with ``+``; None if it has nothing to say."""
    try:
        validate_job(compose_job([*groups, "+" + override.input_line]))
    except ConfigError as err:
        # a group added whole is blamed on its first key (mechanism.name)
        key = override.key_or_group
        return err if err.key == key or err.key.startswith(key + ".") else None
    except (HydraException, OmegaConfBaseException, ValueError):
        return None
    return None


class Flags(set):
    """The flags of a command line (``"cfg" in flags``), with the values of those that take one
    (:attr:`values`: ``{"cfg": "job", "config_dir": [DIR, ...]}``)."""

    def __init__(self):
        super().__init__()
        self.values: dict = {}


def _parse(argv: list) -> tuple[Flags, list, list]:
    flags, overrides = Flags(), []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        name, eq, inline = arg.partition("=")
        if not arg.startswith("-") or (eq and name not in BY_NAME):
            verbose = VERBOSE_OVERRIDE.fullmatch(arg)
            if verbose is None:
                overrides.append(arg)
                continue
            check(verbose.group(2).lower() in ("true", "false"), "hydra.verbose", verbose.group(2),
                  "true or false (true: DEBUG messages, as -v)")
            if verbose.group(2).lower() == "true":
                flags.add("verbose")
            continue
        flag = BY_NAME.get(name)
        if flag is None:
            raise ConfigError("argument", arg, flag_names())
        flags.add(flag.key)
        if flag.value is None:
            check(not eq, name, inline, "no value: the flag alone")
            continue
        allowed = (", ".join(flag.value) if isinstance(flag.value, tuple)
                   else "a directory (-cd DIR or --config-dir=DIR)")
        value = inline if eq else None
        if value is None and i < len(argv) and not argv[i].startswith("-") and (
                not flag.optional or "=" not in argv[i] and argv[i][:1] not in "~+"):
            # an optional value: the next word unless it is an override (--cfg experiment=x)
            value = argv[i]
            i += 1
        if value is None and flag.optional:
            continue
        check(value is not None and value.strip() != "", name, value if value is not None else MISSING, allowed)
        check(not isinstance(flag.value, tuple) or value in flag.value, name, value, allowed)
        if flag.key == "config_dir":
            flags.values.setdefault("config_dir", []).append(value)
        else:
            flags.values[flag.key] = value
    check(not {"verbose", "quiet"} <= flags, "-q/--quiet", "with -v", "one of -v/--verbose (or "
          "hydra.verbose=true) and -q/--quiet, not both")
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as err:
        bad = next((a for a in overrides if _parse_error(a) is not None), None)
        raise _unparsable(bad, _parse_error(bad) if bad is not None else err) from None
    return flags, overrides, parsed


def _parse_error(arg: str) -> HydraException | None:
    try:
        OverridesParser.create().parse_overrides([arg])
        return None
    except HydraException as err:
        return err


def _unparsable(arg: str | None, error: Exception) -> ConfigError:
    """The one line for an override Hydra's grammar cannot read, on its key where it has one.

    An unquoted value with a character outside the grammar's (``paths.results_dir=runs/ü``,
    ``seed=(``) is the usual cause: the line shows the quoted form, Hydra's quotes inside the
    shell's, since the shell strips one pair.
    """
    if arg is None:
        return ConfigError("argument", "", f"key=value Hydra overrides ({first_line(error)})")
    key, eq, value = arg.partition("=")
    if not eq or not OVERRIDE_KEY.fullmatch(key):
        return ConfigError("argument", arg, f"key=value Hydra overrides, e.g. seed=7 ({first_line(error)})")
    quote = '"' if "'" in value and '"' not in value else "'"
    shell = "'" if quote == '"' else '"'
    example = f"{shell}{key}={quote}{value}{quote}{shell}"
    return ConfigError(key.lstrip("+~"), value,
                       f"a value in Hydra's override grammar: quote it for Hydra, inside the shell's quotes: "
                       f"{example} ({first_line(error)})")


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
    _deletions(parsed)
    jobs = _expand(parsed, "multirun" in flags)
    run_folders.name_folders(jobs, parsed)  # a run that changes a number: a folder of its own
    if {"help", "completion"} & flags:
        return flags, jobs
    for job in jobs:
        interrupts.checkpoint("validate")
        try:
            job.cfg = compose_job(job.overrides)
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            job.cfg = _compose_integer_keys(job.overrides)
            if job.cfg is None:
                raise _explain_composition(job.overrides, OverridesParser.create().parse_overrides(
                    job.overrides), err) from None
        if not {"cfg", "info"} & flags:
            try:
                job.spec = validate_job(job.cfg)
            except ConfigError as err:
                raise _deleted_reference(err, job.overrides) or err from None
            kind = get_kind(job_kind(job.cfg)).for_spec(job.cfg, job.spec)
            job.notes = check_overrides(job.cfg, kind, job.overrides, job.spec)
    return flags, jobs


def _deleted_reference(err: ConfigError, overrides: list) -> ConfigError | None:
    """``~distribution.h_scale``: the validator finds ``estimator.h_scale: ${distribution.h_scale}``
    unresolved and blames it; the deleted key is the culprit.  None when no deletion explains ``err``."""
    deleted = [line[1:].partition("=")[0] for line in overrides if line.startswith("~")]
    # ``~userlevel.family.name``: the validator finds its node incomplete and blames the node
    under = next((key for key in deleted if key.startswith(err.key + ".")), None)
    if under is not None:
        return ConfigError(under, "~ (delete)", f"a value, not a deletion ({err.key}: {err.allowed})")
    found = re.search(r"Interpolation key '([^']+)' not found", err.allowed)
    if found is None:
        return None
    missing = found.group(1)
    for key in deleted:
        if missing == key or missing.startswith(key + "."):
            return ConfigError(key, "~ (delete)", f"a value, not a deletion: {err.key} refers to ${{{missing}}}")
    return None


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one :class:`ConfigError` line (argparse prints a usage block
    and the message on two lines, then exits); ``--help`` is argparse's own."""

    def error(self, message):
        name, _, problem = message.partition(": ")
        key = name.removeprefix("argument ").rpartition("/")[2] if name.startswith("argument ") else "argument"
        got = MISSING if problem.startswith("expected one argument") else (problem or message)
        raise ConfigError(key, got, self.allowed)


def report_arguments(argv: list) -> list:
    """The arguments of ``labeldp-sim report``, checked: ``["--results", DIR]``.

    ``-h``/``--help`` prints the help and exits 0.  An unknown argument, a missing
    value, or an empty or blank ``--results`` (``Path('')`` is the working
    directory: the report would be written there) raises :class:`ConfigError`.
    Whether the directory exists is the report's own check.
    """
    parser = _OneLineParser(prog="labeldp-sim report", allow_abbrev=False,
                            description="results/index.html and one page per experiment, from the "
                                        "files already in the results directory")
    parser.allowed = "--results DIR (the results directory; default: results), -h/--help"
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="the results directory (default: results)")
    args, unknown = parser.parse_known_args([str(a) for a in argv])
    if unknown:
        raise ConfigError("argument", unknown[0], parser.allowed)
    check(args.results.strip() != "" and "\0" not in args.results, "--results", args.results,
          "a non-empty path of an existing results directory (e.g. --results results)")
    return ["--results", args.results]


def run_experiment(cfg: DictConfig, overrides=None, subdir: str | None = None, spec=None,
                   refresh_shared: bool = True) -> dict:
    """Validate (unless ``spec`` is given), then let the job's kind run it through the trial
    store, fit, plot and export; its messages are appended to ``<results_dir>/run.log``.
    ``refresh_shared=False`` leaves the results directory's tables to a later job
    (:class:`~labeldp_sim.harness.multirun.SharedTables`)."""
    spec = spec if spec is not None else validate_job(cfg)
    with logs.run_log(spec.results_dir, " ".join(["run_experiment", *(overrides or [])])):
        return get_kind(job_kind(cfg)).run(cfg, spec, overrides, subdir, run_folders.exporter(cfg, overrides),
                                           refresh_shared)


def main(argv: list | None = None, commands: dict | None = None) -> None:
    """Run the experiments of a command line; ``commands`` maps a first word (``audit``) to the
    ``main(argv) -> status`` of a subcommand the application provides (:mod:`labeldp_sim.app`).

    Exit status: 0 done; 2 bad input (one line naming the key); 1 a trial store that is
    damaged or cannot be used, a file or folder that cannot be written (a full disk, a read-only
    or forbidden folder), or a cluster that did not start (one line); 130 (143) on
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
        flags = _parse(argv)[0]
        level = (logging.DEBUG if "verbose" in flags else logging.WARNING if "quiet" in flags else logging.INFO)
        with _config_dirs(flags.values.get("config_dir", [])), logs.verbosity(level):
            _command(argv)
    except ConfigError as err:
        log.error(f"labeldp-sim: error: {err}")
        sys.exit(2)


@contextmanager
def _config_dirs(dirs: list):
    """``-cd DIR``: DIR added to ``LABELDP_SIM_CONF_PATH`` for this command (its checks are
    conf_path's; a fault of DIR is blamed on the flag)."""
    saved = os.environ.get(CONF_PATH_VARIABLE)
    for entry in dirs:
        check(Path(entry).expanduser().is_dir(), "--config-dir", entry, "an existing directory laid out like a "
              "paper's conf/<paper>/ (a folder per config group: experiment/, mechanism/...)")
    if dirs:
        os.environ[CONF_PATH_VARIABLE] = os.pathsep.join([*filter(None, [saved]), *dirs])
    try:
        try:
            conf_dirs()  # a bad LABELDP_SIM_CONF_PATH: one line, before any config is read
        except ConfigError as err:
            if err.key == CONF_PATH_VARIABLE and err.got in dirs:
                raise ConfigError("--config-dir", err.got, err.allowed) from None
            raise
        yield
    finally:
        if dirs and saved is None:
            os.environ.pop(CONF_PATH_VARIABLE, None)
        elif dirs:
            os.environ[CONF_PATH_VARIABLE] = saved


def _command(argv: list) -> None:
    flags, jobs = validate_argv(argv)
    # what was asked for is printed, not logged: -q does not hide it
    if "help" in flags:
        print(help_text())
        return
    if "completion" in flags:
        print(completion_script(flags.values["completion"]))
        return
    if "info" in flags:
        for job in jobs:
            print(info_text(flags.values.get("info", "all"), job.cfg, job.overrides))
        return
    if "cfg" in flags:
        for job in jobs:
            print(OmegaConf.to_yaml(job.cfg, resolve=True))
        return
    for note in dict.fromkeys(note for job in jobs for note in job.notes):  # once, not once per job
        log.warning(f"labeldp-sim: note: {note}")
    rows, written, shared = [], {}, multirun.SharedTables(jobs)
    try:
        for i, job in enumerate(jobs):
            if len(jobs) > 1:
                log.info(f"[job {i + 1}/{len(jobs)}] {' '.join(job.overrides)}")
            interrupts.describe(None)
            status, result = "failed", None
            try:
                with logs.run_log(job.spec.results_dir, " ".join(["labeldp-sim", *job.overrides])):
                    log.debug("config search path: " + os.pathsep.join(map(str, conf_dirs())))
                    run_folders.announce(job)
                    with shared.job(i) as refresh:
                        result = run_experiment(job.cfg, job.overrides, job.subdir, job.spec, refresh)
                    status = "finished"
                    written[Path(job.spec.results_dir)] = None
                    log.info(f"{job.spec.name}: wrote {result['out']} (trials in {result['run'].store}; "
                             f"log in {Path(job.spec.results_dir) / logs.RUN_LOG})")
            finally:
                if "multirun" in flags:
                    rows += multirun.job_rows(i + 1, job.spec.name, job.overrides, status, result)
    except StoreError as err:  # damaged or unusable: one line, before any trial is reused
        log.error(f"labeldp-sim: error: {err}")
        sys.exit(1)
    except BrokenPipeError:  # main's own case: the reader of stdout left
        raise
    except OSError as err:  # a full disk, a read-only or forbidden folder: one line naming the path
        log.error(f"labeldp-sim: error: {os_error_line(err)}")
        sys.exit(1)
    finally:
        if rows:
            multirun.finish([(job.spec.name, job.overrides, job.spec.results_dir) for job in jobs], rows)
    for directory in written:
        log.info(f"{directory / 'index.html'} was not rebuilt; to rebuild the report: "
                 f"labeldp-sim report --results {directory}")
