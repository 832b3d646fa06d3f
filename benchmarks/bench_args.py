"""The benchmarks' command lines: argparse, ``--help``, and one line with exit status 2 on a bad argument.

Each script of this folder runs a long measurement; an unknown option (``--bogus``,
``--draws 0``) must not start it.  argparse alone prints its usage block and the
message on two or more lines; :class:`Parser` prints one.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["Parser", "parse"]


class Parser(argparse.ArgumentParser):
    """argparse whose errors are ONE stderr line, ``<prog>: error: <message> (see --help)``, exit 2."""

    def error(self, message):
        text = " ".join(message.split())  # argparse's messages may wrap
        sys.stderr.write(f"{self.prog}: error: {text}; allowed: {self.allowed()} (see --help)\n")
        sys.exit(2)

    def allowed(self) -> str:
        """The options and positionals this parser takes, as one short list."""
        names = []
        for action in self._actions:
            if action.help == argparse.SUPPRESS:
                continue
            names.append("/".join(action.option_strings) if action.option_strings else action.metavar
                         or action.dest.upper())
        return ", ".join(names) or "no arguments"


def parse(doc: str, prog: str, argv=None, configure=None) -> argparse.Namespace:
    """Parse ``argv`` (default ``sys.argv[1:]``) for a benchmark script described by ``doc``.

    ``configure(parser)`` adds the script's own arguments; without it the script takes
    none but ``-h``/``--help``.  Unknown arguments are refused (one line, exit 2).
    """
    parser = Parser(prog=prog, description=doc.strip().split("\n\n")[0], allow_abbrev=False,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    if configure is not None:
        configure(parser)
    return parser.parse_args(argv)
