"""What the command line says about itself: ``--help``, ``--info`` and ``--shell-completion``.

All three are generated from the same sources as composition: the flags of :data:`FLAGS`, the
config groups and their options of every config directory
(:func:`~labeldp_sim.harness.conf_path.config_groups`, :func:`~labeldp_sim.harness.conf_path.group_options`,
so ``--config-dir`` and ``LABELDP_SIM_CONF_PATH`` folders are included), the experiments per kind
(:func:`~labeldp_sim.harness.config.experiments_of_kind`) and the root keys of ``conf/config.yaml``.
Nothing here is typed twice.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from labeldp_sim.harness.conf_path import (CONF_DIR, CONF_PATH_VARIABLE, conf_dirs, conf_file, config_groups,
                                           group_options, paper_conf_dirs, search_path_override)
from labeldp_sim.harness.config import experiments_of_kind, root_defaults
from labeldp_sim.harness.kinds import registered
from labeldp_sim.harness.provenance import paper_packages

__all__ = ["FLAGS", "Flag", "SUBCOMMANDS", "CFG_VALUES", "INFO_VALUES", "COMPLETION_VALUES", "flag_names",
           "help_text", "info_text", "completion_script"]

PROG = "labeldp-sim"
WIDTH = 100
CFG_VALUES = ("job", "hydra", "all")
INFO_VALUES = ("all", "config", "defaults", "searchpath", "plugins")
COMPLETION_VALUES = ("install=bash", "uninstall=bash")
PLUGINS_VARIABLE = "LABELDP_SIM_PLUGINS"  # read by labeldp_sim.app (the harness does not import the app)


@dataclass(frozen=True)
class Flag:
    """One flag: its spellings, the name the parser gives it, its value (None: none; a tuple: the
    allowed values; ``"DIR"``: any) and whether the value may be left out."""

    names: tuple
    key: str
    text: str
    value: object = None
    optional: bool = False


FLAGS = (
    Flag(("-h", "--help"), "help", "this help: the commands, flags, config groups and options, examples"),
    Flag(("-m", "--multirun"), "multirun", "run every combination of comma-separated values "
         "(experiment=a,b seed=1,2), then write one table across the jobs (<results_dir>/multirun/<sweep>.csv)"),
    Flag(("-c", "--cfg"), "cfg", "print the composed config as YAML and run nothing (job: the job's "
         "config, the default; hydra and all print the same: Hydra's own settings are not used here)",
         CFG_VALUES, optional=True),
    Flag(("-i", "--info"), "info", "print the config search path, the chosen experiment's defaults "
         "and choices, and the plug-ins; run nothing", INFO_VALUES, optional=True),
    Flag(("-sc", "--shell-completion"), "completion", "print a bash completion script "
         "(eval \"$(labeldp-sim -sc install=bash)\")", COMPLETION_VALUES),
    Flag(("-cd", "--config-dir"), "config_dir", f"add DIR to the config search path, as {CONF_PATH_VARIABLE} "
         "does (a folder laid out like a paper's conf/<paper>/: experiment/, mechanism/...)", "DIR"),
    Flag(("-v", "--verbose"), "verbose", "DEBUG messages too (as hydra.verbose=true)"),
    Flag(("-q", "--quiet"), "quiet", "warnings and errors only on the console (run.log still gets INFO)"),
)
SUBCOMMANDS = {
    "report": ("[--results DIR]", "rebuild <DIR>/index.html and the experiment pages from the files there"),
    "audit": ("[--quick] [--draws N] [--seed S] [--out DIR] [--no-mutants]",
              "the privacy audit of every registered mechanism"),
}
EXAMPLES = (
    ("labeldp-sim experiment=cls_label_ldp grid.reps=200", "fewer replicates: results/cls_label_ldp/grid.reps=200/"),
    ("labeldp-sim -m experiment=cls_label_ldp,cls_label_cdp seed=1,2", "four jobs and one table"),
    ("labeldp-sim experiment=cls_label_ldp --cfg job", "the composed config, nothing run"),
    ("labeldp-sim --info experiment=cls_label_ldp", "search path, defaults, plug-ins"),
    ("labeldp-sim -cd ~/my_conf experiment=my_experiment", "an experiment from your own folder"),
    ("labeldp-sim -q experiment=cls_label_ldp runner.progress=false", "warnings and errors only"),
    ("labeldp-sim report --results results", "rebuild results/index.html"),
    ('eval "$(labeldp-sim -sc install=bash)"', "tab completion in this bash"),
)


def flag_names() -> str:
    """Every flag, for the one-line refusal of an unknown one."""
    return ", ".join("/".join(f.names) for f in FLAGS)


def _flag_line(flag: Flag) -> str:
    value = ("" if flag.value is None else f" {flag.value}" if isinstance(flag.value, str)
             else f" {{{','.join(flag.value)}}}")
    if flag.optional:
        value = f" [{value.strip()}]"
    return f"  {', '.join(flag.names)}{value}"


def _wrap(items: list, indent: str, width: int = WIDTH) -> list:
    return textwrap.wrap(", ".join(items), width, initial_indent=indent, subsequent_indent=" " * len(indent),
                         break_on_hyphens=False, break_long_words=False)


def help_text() -> str:
    """``labeldp-sim --help``."""
    out = [f"usage: {PROG} [flags] experiment=<name> [key=value ...]",
           *(f"       {PROG} {name} {args}" for name, (args, _) in SUBCOMMANDS.items()), "",
           "Runs experiments composed by Hydra from config groups and key=value overrides (Hydra's grammar).",
           "", "commands:", "  (none)    run the experiment(s) of the overrides"]
    out += [f"  {name:<9} {text}" for name, (_, text) in SUBCOMMANDS.items()]
    out += ["", "flags:"]
    for flag in FLAGS:
        head = _flag_line(flag)
        text = textwrap.wrap(flag.text, WIDTH - 41, break_on_hyphens=False)
        out += ([f"{head:<40} {text[0]}"] if len(head) < 40 else [head, f"{'':<40} {text[0]}"])
        out += [f"{'':<40} {line}" for line in text[1:]]
    out += [f"{'  hydra.verbose=true':<40} the same as -v (Hydra's spelling)", "",
            "config groups (group=option; from " + ", ".join(_short(d) for d in conf_dirs()) + "):"]
    kinds = experiments_of_kind()
    for group in config_groups():
        if group == "experiment":
            out.append("  experiment (by kind):")
            for kind, names in sorted(kinds.items()):
                out += _wrap(sorted(names), f"    {kind}: ")
            listed = {n for names in kinds.values() for n in names}
            rest = [n for n in group_options(group) if n not in listed]
            if rest:
                out += _wrap(rest, "    other: ")
        else:
            out += _wrap(group_options(group), f"  {group}: ")
    out += ["", "keys every job has (key=value; an experiment adds its own, see --cfg job):"]
    out += _wrap([f"{key}" for key in root_defaults()], "  ")
    out += ["", "examples:"]
    out += [f"  {command:<64} {what}" for command, what in EXAMPLES]
    out += ["", "Files: <paths.results_dir>/<experiment>/; a run whose overrides change a number writes "
            "<experiment>/<k=v,...>/", "(named from them, sorted; the experiment's own folder is left as it is) "
            "unless paths.results_dir is given.",
            "Messages: INFO on stdout, warnings and errors on stderr; each run appends to "
            "<paths.results_dir>/run.log.", "See docs/cli.md and docs/configuration.md."]
    return "\n".join(out)


def _short(directory) -> str:
    try:
        return str(directory.relative_to(CONF_DIR.parent))
    except ValueError:
        return str(directory)


def _source(directory) -> str:
    if directory == CONF_DIR:
        return "the package's root config and shared groups"
    if directory in paper_conf_dirs():
        return f"paper {directory.name}"
    return f"{CONF_PATH_VARIABLE} / --config-dir"


def _choices(overrides: list) -> dict:
    """The group choices of a composed job (Hydra's runtime choices: group -> option)."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[*overrides, *search_path_override()],
                      return_hydra_config=True)
    return {str(k): v for k, v in OmegaConf.to_container(cfg.hydra.runtime.choices).items()}


def info_text(what: str, cfg, overrides: list) -> str:
    """``labeldp-sim --info [what] [overrides]``: ``cfg`` the composed job of ``overrides``."""
    choices = _choices(overrides) if what in ("all", "defaults") else {}
    parts = []
    if what in ("all", "searchpath"):
        parts.append("Config search path (searched in this order; an option may live in one folder only):")
        parts += [f"  {d}   ({_source(d)})" for d in conf_dirs()]
        extra = os.environ.get(CONF_PATH_VARIABLE, "")
        parts.append(f"  {CONF_PATH_VARIABLE}={extra!r}")
    if what in ("all", "defaults"):
        parts += ["", "Defaults:"] if parts else ["Defaults:"]
        parts.append(f"  config  {CONF_DIR / 'config.yaml'}")
        for group, option in sorted(choices.items()):
            if group.startswith("hydra/") or option is None:
                continue
            parts.append(f"  {group}={option}  {conf_file(group, option)}")
            included = _defaults_of(group, option)
            parts += [f"    defaults: {entry}" for entry in included]
        if "experiment" not in choices:
            parts.append("  (no experiment chosen: add experiment=<name> to see its defaults)")
    if what in ("all", "plugins"):
        parts += ["", "Plug-ins:"] if parts else ["Plug-ins:"]
        parts.append("  paper packages: " + ", ".join(f"labeldp_sim.papers.{p}" for p in paper_packages()))
        parts.append(f"  {PLUGINS_VARIABLE}={os.environ.get(PLUGINS_VARIABLE, '')!r}")
        for name, kind in sorted(registered().items()):
            parts.append(f"  kind {name}: {type(kind).__module__}.{type(kind).__qualname__}")
    if what in ("all", "config"):
        parts += ["", "Config:"] if parts else ["Config:"]
        parts.append("  " + ("(no experiment chosen)" if cfg is None
                             else OmegaConf.to_yaml(cfg, resolve=True).rstrip().replace("\n", "\n  ")))
    return "\n".join(parts)


def _defaults_of(group: str, option: str) -> list:
    """The defaults list of one option's YAML (what it includes), as written."""
    path = conf_file(group, option)
    if not path.is_file():
        return []
    node = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    entries = node.get("defaults", []) if isinstance(node, dict) else []
    return [e if isinstance(e, str) else ", ".join(f"{k}: {v}" for k, v in e.items()) for e in entries]


def completion_script(value: str) -> str:
    """``-sc install=bash``: a bash completion function and its ``complete`` line;
    ``-sc uninstall=bash``: the line that removes it."""
    if value == "uninstall=bash":
        return f"complete -r {PROG} 2>/dev/null || true"
    cases = "\n".join(f"        {group}) opts=\"{' '.join(group_options(group))}\" ;;" for group in config_groups())
    first = " ".join([*SUBCOMMANDS, *(n for f in FLAGS for n in f.names), "hydra.verbose=true",
                      *(f"{g}=" for g in config_groups()), *(f"{k}=" for k in root_defaults())])
    return f"""# bash completion for {PROG}: groups, options, subcommands and flags (generated by {PROG} -sc install=bash)
_labeldp_sim_complete() {{
    local line="${{COMP_LINE:0:COMP_POINT}}"
    local word="${{line##*[[:space:]]}}"
    local cur="${{COMP_WORDS[COMP_CWORD]}}"
    local opts
    if [[ "$word" == *=* ]]; then
        local raw="${{word%%=*}}"
        local key="${{raw#+}}"; key="${{key#+}}"
        local value="${{word#*=}}"
        local last="${{value##*,}}"
        local head="${{value%"$last"}}"
        case "$key" in
{cases}
        *) return 0 ;;
        esac
        local prefix="$head"
        [[ "$COMP_WORDBREAKS" != *=* ]] && prefix="$raw=$head"
        COMPREPLY=( $(compgen -W "$opts" -P "$prefix" -- "$last") )
        return 0
    fi
    COMPREPLY=( $(compgen -W "{first}" -- "$cur") )
    [[ ${{#COMPREPLY[@]}} -eq 1 && "${{COMPREPLY[0]}}" == *= ]] && compopt -o nospace 2>/dev/null
    return 0
}}
complete -F _labeldp_sim_complete {PROG}
"""
