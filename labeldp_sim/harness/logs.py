"""The package's messages: the ``labeldp_sim`` logger, its console, ``run.log`` and progress lines.

Every message goes through :func:`get_logger` (children of ``logging.getLogger("labeldp_sim")``).
The console handler prints the message alone, as the ``print`` calls it replaced did: INFO and
DEBUG on stdout, WARNING and above on stderr, looking the streams up at each record (a redirected
``sys.stdout`` or pytest's ``capsys`` sees them).  It is installed when this module is imported, so
a library caller gets the same lines as the command line; the package logger does not propagate
to the root logger (no line printed twice by an application that configures logging itself).

:func:`verbosity` sets the console's level for one command (``-q``: WARNING, ``-v``: DEBUG);
:func:`run_log` appends the records of one run to ``<results_dir>/run.log`` with timestamps and
levels; :func:`progress` shows a run's progress: tqdm on a terminal, else a line every so often
(:class:`Throttle`).
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LOGGER", "RUN_LOG", "Throttle", "get_logger", "progress", "run_log", "verbosity"]

LOGGER = "labeldp_sim"
RUN_LOG = "run.log"
FILE_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
# a progress line at most this often at first, then every tenth of the elapsed time
PROGRESS_EVERY_S = 15.0


class _Console(logging.Handler):
    """The message alone: DEBUG and INFO on stdout, WARNING and above on stderr (as ``print`` did)."""

    def emit(self, record: logging.LogRecord) -> None:
        stream = sys.stderr if record.levelno >= logging.WARNING else sys.stdout
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except BrokenPipeError:  # `labeldp-sim ... | head`: the caller's case (cli.main), as with print
            raise
        except Exception:  # noqa: BLE001 - logging's own convention: report, do not raise
            self.handleError(record)


def _package_logger() -> logging.Logger:
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(h, _Console) for h in logger.handlers):
        console = _Console(logging.INFO)
        logger.addHandler(console)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def get_logger(name: str | None = None) -> logging.Logger:
    """``labeldp_sim`` or its child ``labeldp_sim.<name>`` (the console handler installed)."""
    logger = _package_logger()
    return logger.getChild(name) if name else logger


def _console() -> _Console:
    return next(h for h in _package_logger().handlers if isinstance(h, _Console))


@contextmanager
def verbosity(level: int = logging.INFO):
    """The console's level for one command (restored after): ``logging.DEBUG`` (``-v``),
    ``logging.INFO`` (default) or ``logging.WARNING`` (``-q``).  The logger itself lets INFO
    through even under ``-q``, for ``run.log``."""
    logger, console = _package_logger(), _console()
    saved = logger.level, console.level
    console.setLevel(level)
    logger.setLevel(min(level, logging.INFO))
    try:
        yield
    finally:
        logger.setLevel(saved[0])
        console.setLevel(saved[1])


class _RunLog(logging.Handler):
    """Appends to ``directory/run.log``, opened at the first record once ``directory`` exists.

    Records that come before the run has created its directory wait in memory, so a run
    refused before it starts creates nothing; a log that cannot be opened (a read-only folder)
    is skipped without a word: the run's own write reports that folder in its one line.
    """

    def __init__(self, directory: Path, level: int):
        super().__init__(level)
        self.directory = Path(directory)
        self.setFormatter(logging.Formatter(FILE_FORMAT))
        self.waiting: list = []
        self.file = None
        self.broken = False

    def _open(self) -> bool:
        if self.file is None and not self.broken:
            if not self.directory.is_dir():
                return False
            try:
                self.file = open(self.directory / RUN_LOG, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
            except OSError:
                self.broken = True
        return self.file is not None

    def emit(self, record: logging.LogRecord) -> None:
        if self.broken:
            return
        self.waiting.append(record)
        if not self._open():
            return
        try:
            for waiting in self.waiting:
                self.file.write(self.format(waiting) + "\n")
            self.file.flush()
        except OSError:  # a full disk: the run's own writes report it
            self.broken = True
        self.waiting = []

    def close(self) -> None:
        try:
            if self.waiting and self._open():
                self.emit(self.waiting.pop())
            if self.file is not None:
                self.file.close()
        except OSError:
            pass
        finally:
            self.file = None
            super().close()


@contextmanager
def run_log(directory, command: str):
    """Append the package's records to ``<directory>/run.log`` while the block runs.

    The first line names the command; INFO and above are written (DEBUG too under ``-v``),
    each with its time and level.  Nothing is created until the run has created ``directory``.
    Inside a block of the same directory, nothing is added (the outer block writes).
    """
    logger = _package_logger()
    outer = next((h for h in logger.handlers if isinstance(h, _RunLog) and h.directory == Path(directory)), None)
    if outer is not None:  # run_experiment inside the command's own run_log: one file, one header
        yield outer
        return
    handler = _RunLog(directory, min(logger.level, logging.INFO) or logging.INFO)
    handler.handle(logger.makeRecord(LOGGER, logging.INFO, __file__, 0, f"run: {command}", None, None))
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        handler.close()


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Throttle:
    """When to show a progress line off a terminal, and its text.

    :meth:`update` returns a line when at least ``every`` seconds (and a tenth of the time
    elapsed so far) have passed since the last one, else None; a run shorter than ``every``
    shows none.  ``clock`` is injectable (tests).
    """

    def __init__(self, label: str, total: int, clock=time.monotonic, every: float = PROGRESS_EVERY_S):
        self.label, self.total, self.clock, self.every = label, total, clock, every
        self.start = self.last = clock()
        self.done = 0
        self.shown = 0

    def update(self, n: int) -> str | None:
        self.done += n
        now = self.clock()
        if self.done >= self.total or now - self.last < max(self.every, (now - self.start) / 10):
            return None
        self.last = now
        self.shown += 1
        return self.line(now)

    def finish(self) -> str | None:
        """The last line (100 %), when a line was shown before; else None."""
        return self.line(self.clock()) if self.shown else None

    def line(self, now: float) -> str:
        elapsed = now - self.start
        percent = 100 * self.done / self.total if self.total else 100
        left = (f", about {_duration(elapsed * (self.total - self.done) / self.done)} left"
                if 0 < self.done < self.total else "")
        return (f"{self.label}: {self.done:,}/{self.total:,} trials ({percent:.0f} %), "
                f"{_duration(elapsed)} elapsed{left}")


class _Logged:
    """Progress through the logger (INFO), throttled: the off-terminal counterpart of a tqdm bar."""

    def __init__(self, throttle: Throttle):
        self.throttle = throttle
        self.logger = get_logger("progress")

    def update(self, n: int) -> None:
        line = self.throttle.update(n)
        if line is not None:
            self.logger.info(line)

    def close(self) -> None:
        line = self.throttle.finish()
        if line is not None:
            self.logger.info(line)


class _Silent:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress(label: str, total: int, enabled: bool, tty: bool | None = None, clock=time.monotonic):
    """A progress display with ``update(n)`` and ``close()``: nothing when ``enabled`` is false
    (``runner.progress=false``), a tqdm bar when stderr is a terminal, else throttled lines."""
    if not enabled:
        return _Silent()
    if sys.stderr.isatty() if tty is None else tty:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=label, unit="trial", delay=2.0, leave=False)
    return _Logged(Throttle(label, total, clock))
