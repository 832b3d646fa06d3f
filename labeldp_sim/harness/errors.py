"""The exception types users see: bad input (:class:`ConfigError`) and a file that cannot be
written (:class:`FileError`), each as one line."""

from __future__ import annotations

import errno as errno_names
import math
from pathlib import Path

import numpy as np

__all__ = ["ConfigError", "FileError", "check", "first_line", "one_line", "os_error_line", "MISSING",
           "is_int", "is_number"]

# A shown value longer than this is cut: the error must stay one readable line
# even when the offending value is a whole config node.
MAX_SHOWN = 80


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` on one line: its lines, stripped, joined by one space.

    Spaces inside a line are kept (a value is shown as it is); only line breaks
    and the indentation around them go.  With ``limit``, a longer result is cut
    to ``limit`` characters ending in ``...``.
    """
    text = " ".join(part.strip() for part in str(text).splitlines() if part.strip())
    if limit is not None and len(text) > limit:
        text = text[:limit - 3] + "..."
    return text


class _Missing:
    """The ``got`` of a required key that is absent (prints as ``<missing>``)."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


class ConfigError(ValueError):
    """Bad configuration value, reported as one line before any computation.

    The message is ``"{key}: got {got!r}; allowed: {allowed}"`` on a single
    line: ``repr(got)`` is flattened and cut to :data:`MAX_SHOWN` characters,
    and ``allowed`` is flattened, so a whole dict, a multi-line string or an
    object with a multi-line repr still gives one line.

    Parameters
    ----------
    key : str
        Dotted config key, e.g. ``"grid.sweeps.N.values"``.
    got : object
        The offending value; kept as it is in :attr:`got` (only the message is
        shortened).
    allowed : str or sequence of str
        The allowed values, as a description (``"> 0"``) or a list of names.
    """

    def __init__(self, key: str, got, allowed):
        if not isinstance(allowed, str):
            allowed = ", ".join(str(a) for a in allowed)
        self.key, self.got, self.allowed = one_line(key), got, one_line(allowed)
        super().__init__(f"{self.key}: got {one_line(repr(got), MAX_SHOWN)}; allowed: {self.allowed}")

    def under(self, prefix: str) -> "ConfigError":
        """The same error with ``prefix.`` in front of the key."""
        return ConfigError(f"{prefix}.{self.key}", self.got, self.allowed)


class FileError(OSError):
    """A file or folder that cannot be written: a full disk (ENOSPC, EDQUOT), no permission
    (EACCES, EPERM), a read-only file system (EROFS)...; one line naming the path.

    An ``OSError`` still (``errno``, ``strerror`` and ``filename`` are the fault's), so code that
    catches ``OSError`` keeps working; its message is the line the user reads (exit status 1).

    Parameters
    ----------
    path : path-like
        What could not be written: the target file (not the temporary file that was being
        written in its place), or the folder.
    err : OSError
        The fault.
    left : str, optional
        What is left as it was (``"the file is left as it was"``), said after the reason.
    """

    def __init__(self, path, err: OSError, left: str = ""):
        super().__init__(err.errno, err.strerror or first_line(err), str(path))
        self.path, self.left = Path(path), left
        self.line = f"cannot write {path} ({_reason(err)})" + (f"; {left}" if left else "")

    def __str__(self) -> str:
        return self.line


def _reason(err: OSError) -> str:
    """``No space left on device, ENOSPC``: the system's words and the errno's name, one line."""
    name = errno_names.errorcode.get(err.errno) if err.errno is not None else None
    text = one_line(err.strerror or "", 120) or first_line(err)
    return f"{text}, {name}" if name else text


def os_error_line(err: OSError) -> str:
    """One line for an ``OSError`` nobody turned into a :class:`FileError`: the path it names,
    if any, and the reason."""
    if isinstance(err, FileError):
        return str(err)
    return f"{err.filename}: {_reason(err)}" if err.filename is not None else _reason(err)


def first_line(err: Exception) -> str:
    """``Type: first line of the message``, short: Hydra and OmegaConf add lines of context."""
    lines = str(err).strip().splitlines()
    text = one_line(lines[0], 120) if lines else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def check(cond: bool, key: str, got, allowed) -> None:
    """Raise :class:`ConfigError` unless ``cond``."""
    if not cond:
        raise ConfigError(key, got, allowed)


def is_int(x) -> bool:
    """An integer, and not a bool (``true`` is an int to Python, never to a user)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_number(x) -> bool:
    """A finite real number: not a bool, not a string, not inf or NaN."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an int too large for a float
        return False
