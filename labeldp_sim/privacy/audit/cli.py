"""``labeldp-sim audit [--quick] [--draws N] [--seed S] [--out DIR] [--no-mutants]``: the entry point."""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from pathlib import Path

from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.errors import MISSING, ConfigError
from labeldp_sim.privacy.audit.blackbox import ALPHA
from labeldp_sim.privacy.audit.registry import EPSILON, MissingRecipe, collect
from labeldp_sim.privacy.audit.report import NAME_WIDTH, printer, write_outputs
from labeldp_sim.privacy.audit.runner import DEFAULT_DRAWS, run_audit

log = get_logger("audit")

QUICK_DRAWS = 200_000
MIN_DRAWS, MAX_DRAWS = 1_000, 100_000_000

OPTIONS = "--draws N, --seed S, --out DIR, --quick, --no-mutants, -h/--help"
USAGE = "usage: labeldp-sim audit [--quick] [--draws N] [--seed S] [--out DIR] [--no-mutants]"
FLAG_ALONE = "the flag alone, without a value"
# what each option allows, in the one-line error of a bad use
ALLOWED = {"--quick": FLAG_ALONE, "--no-mutants": FLAG_ALONE, "--help": FLAG_ALONE,
           "--draws": "an integer N after it", "--seed": "an integer S after it", "--out": "a directory after it"}


@dataclass
class Options:
    draws: int = DEFAULT_DRAWS
    seed: int = 0
    out: Path = Path("results")
    mutants: bool = True
    help: bool = False


def _parse_int(name, value, low, high, what):
    try:
        number = int(str(value), 10)
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        raise ConfigError(name, value, f"{what}, an integer in [{low}, {high}]")
    return number


def _check_out(value):
    if value == "":
        raise ConfigError("--out", value, "a directory (created if missing)")
    path = Path(value)
    if path.exists():
        if not path.is_dir():
            raise ConfigError("--out", value, "a directory (this path is a file)")
        probe = path
    else:
        probe = path.parent if str(path.parent) else Path(".")
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir():
            raise ConfigError("--out", value, "a directory (a parent of this path is a file)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError("--out", value, f"a writable directory ({probe} is not writable)")
    return path


def _make_out(path: Path) -> None:
    """Create the output directory now, so that a path that cannot hold it fails before the audit."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError("--out", str(path), f"a directory that can be created ({err.strerror})") from None


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's one-line errors: :meth:`error` raises :class:`ConfigError`.

    argparse would print the usage and the message on two lines and exit; :func:`main`
    prints the ConfigError as one line and returns 2 instead.
    """

    def error(self, message):
        name, _, problem = message.partition(": ")
        key = name.removeprefix("argument ").rpartition("/")[2]
        explicit = "ignored explicit argument "
        if problem.startswith(explicit):  # --quick=yes: problem is "ignored explicit argument 'yes'"
            got = f"{key}={problem.removeprefix(explicit)[1:-1]}"
        elif problem.startswith("expected one argument"):
            got = MISSING
        else:
            got = problem
        raise ConfigError(key, got, ALLOWED.get(key, OPTIONS))


class _Once(argparse.Action):
    """Store the option's value (``const`` for a flag); a second use of the option is refused."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = namespace.__dict__.setdefault("_seen", set())
        if self.dest in seen:
            raise ConfigError(option_string, option_string, "each option once")
        seen.add(self.dest)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def _parser() -> _Parser:
    parser = _Parser(prog="labeldp-sim audit", add_help=False, allow_abbrev=False)
    for names, dest in ((("--quick",), "quick"), (("--no-mutants",), "no_mutants"), (("-h", "--help"), "help")):
        parser.add_argument(*names, dest=dest, action=_Once, nargs=0, const=True, default=False)
    for name in ("--draws", "--seed", "--out"):
        parser.add_argument(name, action=_Once, default=None)
    return parser


def parse_args(argv: list[str]) -> Options:
    """Parse the audit's options; raise :class:`ConfigError` (one line) on any bad one."""
    args, unknown = _parser().parse_known_args([str(arg) for arg in argv])
    if unknown:
        raise ConfigError("option", unknown[0], OPTIONS)
    opts = Options(mutants=not args.no_mutants, help=args.help)
    if args.seed is not None:
        opts.seed = _parse_int("--seed", args.seed, 0, 2**63 - 1, "the root seed")
    if args.out is not None:
        opts.out = _check_out(args.out)
    # --draws, when given, wins over --quick's reduced count
    if args.draws is not None:
        opts.draws = _parse_int("--draws", args.draws, MIN_DRAWS, MAX_DRAWS, "draws per input")
    else:
        opts.draws = QUICK_DRAWS if args.quick else DEFAULT_DRAWS
    return opts


def main(argv: list[str]) -> int:
    """``labeldp-sim audit``: run the audit, write ``<out>/audit.{csv,md}``, print a table.

    Returns 0 when every mechanism is "private", every mutant "caught" and every careless
    input "refused" (the stated limitation rows never fail), 1 otherwise — also, before
    anything is drawn, when a registered mechanism has no recipe of its own (one line
    naming it, :class:`~.registry.MissingRecipe`) — and 2 (one line on stderr, nothing
    computed or written) on a bad option.
    """
    try:
        opts = parse_args(argv)
        if not opts.help:
            _make_out(opts.out)
    except ConfigError as err:
        log.error(f"labeldp-sim: error: {err}")
        return 2
    if opts.help:
        log.info(USAGE)
        log.info(f"  --draws N     outputs drawn per input (default {DEFAULT_DRAWS:,}; "
                 f"--quick: {QUICK_DRAWS:,})")
        log.info("  --seed S      root seed (default 0)")
        log.info("  --out DIR     where audit.csv and audit.md go (default results)")
        log.info("  --no-mutants  audit the real mechanisms only")
        return 0
    try:
        collect(EPSILON)  # every registered mechanism states its own recipe, or nothing is drawn
    except MissingRecipe as err:
        log.error(f"labeldp-sim: error: {err}")
        return 1
    log.info(f"privacy audit: ε = {EPSILON:g}, {opts.draws:,} draws per input, α = {ALPHA:g}, "
             f"seed {opts.seed}")
    log.info(f"{'mechanism':<{NAME_WIDTH}} {'privacy':<24} {'exact':>8} {'ε_lower':>8} verdict  caught by")
    start = time.perf_counter()
    results = run_audit(opts.draws, opts.seed, opts.mutants, ALPHA, progress=printer())
    seconds = time.perf_counter() - start
    write_outputs(results, opts.out, opts.draws, opts.seed, ALPHA, seconds)
    bad = [r for r in results if not r.ok]
    log.info(f"{len(results)} audited in {seconds:.1f} s; "
             + ("every verdict as expected" if not bad else f"{len(bad)} unexpected: "
                + ", ".join(r.mechanism for r in bad))
             + f"; wrote {opts.out / 'audit.csv'} and {opts.out / 'audit.md'}")
    return 0 if not bad else 1

