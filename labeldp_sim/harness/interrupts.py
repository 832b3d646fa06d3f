"""SIGINT and SIGTERM at any instant: one line on stderr, exit 130 (143), a consistent store.

Three parts:

* **The driver's handlers.**  :func:`guard` (around the whole command line, in
  :func:`labeldp_sim.harness.cli.main`) makes SIGINT and SIGTERM raise
  :class:`Interrupted` (a ``KeyboardInterrupt`` that knows its signal), lets the
  run unwind (each chunk of trials is one transaction; an export lands whole or
  not at all), then prints ONE line — what is kept, and that the same command
  resumes — and exits with 128 + the signal's number.  In a ``labeldp-sim``
  process the handlers are set while the package is still being imported
  (:func:`install_for_cli`, from :mod:`labeldp_sim.app`, which the package
  imports before it loads the papers; the earlier the better): a signal before
  :func:`guard` begins, when nothing has been computed or written, ends the
  process there and then with the same kind of line.  Further signals while
  the run unwinds are absorbed, so a second Ctrl-C cannot cut the unwinding
  short and print a traceback.
* **Deferral.**  ``with deferred():`` holds a signal until the block ends:
  the store wraps each commit and the count of what it inserted in one, and an
  export renames its files into place in one, so "N trials of this run are
  kept" is exact and a directory never holds two runs' files.
* **Workers.**  :func:`spawning` blocks SIGINT in the thread that starts loky
  workers (the driver itself still answers it at once, mid-spawn too): a
  process starts with the signal mask of the thread that forks it,
  so the workers never see a terminal's Ctrl-C (which reaches the whole
  foreground process group) — not even while their interpreter starts, before
  any code of theirs could set a handler.  The driver alone answers it and
  stops them.  :func:`worker_setup` (their initializer) also makes each worker
  leave within half a second once its driver is gone (``kill -9``), instead of
  living on for loky's idle time-out (300 s).

:func:`checkpoint` marks named instants (inside a store transaction, between
the renames of an export, ...) where a test can deliver a signal
deterministically: :func:`set_hook`, or in a subprocess the environment
variable ``LABELDP_SIM_TEST_SIGNAL=<checkpoint>:<n>[:<SIGNAL>[:group]]`` (the
n-th time the checkpoint is reached, send the signal, e.g. ``SIGTERM`` or
``SIGKILL``, to this process, or to its process group).  Checkpoints:
``startup``, ``validate``, ``store.load``, ``store.start_run``, ``store.write``,
``store.begun``, ``store.in_transaction``, ``store.committed``, ``store.finish_run``,
``workers.starting``, ``workers.spawn`` (each worker process forked), ``workers.started``,
``export.staged``, ``export.commit``,
``export.renamed``.

This module imports only the standard library: it is loaded before anything
heavy, in the driver and in every worker (psutil, which lists the workers a
spawning started, is imported by the driver when it spawns).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

__all__ = ["Interrupted", "guard", "deferred", "spawning", "worker_setup", "install_for_cli",
           "is_cli", "leave", "describe", "checkpoint", "set_hook", "received", "stop_workers",
           "exit_status"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)
ENV_HOOK = "LABELDP_SIM_TEST_SIGNAL"
PARENT_POLL_S = 0.5


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: ``signum`` says which (exit status 128 + signum)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)


def exit_status(signum: int) -> int:
    return 128 + int(signum)


class _State:
    def __init__(self):
        self.reset()
        self.phase = "library"  # library | startup | running | leaving
        self.hard = False  # this process is the command line: leave with os._exit

    def reset(self):
        self.depth = 0  # deferred() blocks entered
        self.pending = None  # a signal held by deferred()
        self.raised = None  # the signal being acted on
        self.absorbed = 0  # signals after it
        self.handling = False  # guard() has caught it and is leaving
        self.note = None  # () -> (who, what is kept) for the interrupt line


_state = _State()
_hook = None  # test hook: callable(name)


# ------------------------------------------------------------------ handlers

def _signal_name(signum) -> str:
    return signal.Signals(signum).name


def _line(signum: int) -> str:
    how = "interrupted" if signum == signal.SIGINT else f"interrupted ({_signal_name(signum)})"
    note = None
    if _state.note is not None:
        try:
            note = _state.note()
        except Exception:  # noqa: BLE001 - the line must come out whatever the note does
            note = None
    if note:
        who, what = note
        return f"{who}: {how}: {what}"
    return (f"labeldp-sim: {how}: every trial stored so far is kept; "
            "run the same command again to resume")


def _write_err(text: str) -> None:
    try:
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    try:
        os.write(2, (text + "\n").encode())
    except OSError:
        pass


def _leave_now(signum: int, what: str) -> None:
    """Nothing is under way yet (start-up): the line, and out at once."""
    how = "interrupted" if signum == signal.SIGINT else f"interrupted ({_signal_name(signum)})"
    _write_err(f"labeldp-sim: {how} {what}")
    os._exit(exit_status(signum))


def _handler(signum, frame):
    state = _state
    if state.phase == "startup":
        _leave_now(signum, "while starting, before computing anything; run the same command again")
    if state.phase == "leaving":  # the work is done; loky's and joblib's exit handlers run
        state.absorbed += 1
        if state.raised is None:  # the run had finished: say so once, exit 128 + signum
            state.raised = signum
            how = "interrupted" if signum == signal.SIGINT else f"interrupted ({_signal_name(signum)})"
            _write_err(f"labeldp-sim: {how} while exiting: the run had finished and its files are written")
        if state.absorbed >= 3:  # the clean-up hangs: leave at once
            os._exit(exit_status(state.raised))
        return
    if state.raised is not None:  # already unwinding: let it finish
        state.absorbed += 1
        if state.handling or state.absorbed < 3:
            return
        # three more signals and nobody caught the first one (a library swallowed it?): again
        state.absorbed = 0
        raise Interrupted(signum)
    if state.depth:
        if state.pending is None:
            state.pending = signum
        return
    state.raised = signum
    raise Interrupted(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _install() -> dict:
    previous = {}
    for signum in SIGNALS:
        previous[signum] = signal.signal(signum, _handler)
    return previous


def _launched_as_cli() -> bool:
    """Is this process ``python [options] -m labeldp_sim`` or the ``labeldp-sim`` console script?"""
    argv = list(sys.orig_argv)
    names = ("labeldp_sim", "labeldp_sim.__main__")
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return i + 1 < len(argv) and argv[i + 1] in names
        if arg.startswith("-m"):
            return arg[2:] in names
        if arg == "-c" or arg.startswith("-c"):
            return False
        if arg in ("-X", "-W", "--check-hash-based-pycs"):  # options with a separate value
            i += 2
            continue
        if not arg.startswith("-") or arg == "-":
            return os.path.basename(arg) == "labeldp-sim"
        i += 1
    return False


def is_cli() -> bool:
    """Is this process the command line (handlers set at import, :func:`leave` exits)?"""
    return _state.hard


def leave(code=0) -> None:
    """The end of a ``labeldp-sim`` process, exit status ``code`` (``SystemExit``'s).

    The interpreter's own exit restores the default signal handlers before it
    tears the modules down, and a Ctrl-C then kills it silently (status -2, no
    line).  So the exit is done here: non-daemon threads joined and the
    ``atexit`` handlers run (loky stops its workers and frees its semaphores)
    with this module's handlers still set, the streams flushed, then
    ``os._exit``.  A signal meanwhile makes the status 128 + signum.
    Elsewhere (in-process) it only raises ``SystemExit(code)`` for a non-zero code.
    """
    if code is None:
        code = 0
    elif not isinstance(code, int):
        _write_err(str(code))
        code = 1
    if not _state.hard:
        if code:
            raise SystemExit(code)
        return
    if _state.phase != "leaving":
        _state.phase = "leaving"
    for step in (_flush, _join_threads, _run_atexit, _flush):
        try:
            step()
        except BaseException:  # noqa: BLE001 - nothing may stop the exit now
            pass
    if _state.raised is not None:
        code = exit_status(_state.raised)
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass


def _join_threads() -> None:
    # interpreter introspection: threading._shutdown is private and may be absent
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()


def _run_atexit() -> None:
    import atexit

    atexit._run_exitfuncs()


def install_for_cli() -> None:
    """In a ``labeldp-sim`` process, as early as the package's import reaches this module:
    SIGINT and SIGTERM end the start-up at once, with one line and 130 (143)."""
    if _state.phase != "library" or not _main_thread() or not _launched_as_cli():
        return
    _state.hard = True
    _state.phase = "startup"
    _install()
    _arm_env_hook()
    checkpoint("startup")


@contextlib.contextmanager
def guard():
    """Run the command line; an interrupt anywhere inside ends it with one line and 128 + signum.

    It raises ``SystemExit`` once the line is out and loky's workers are
    stopped.  In the ``labeldp-sim`` process the handlers stay for the exit
    (:func:`leave`), absorbing further signals (a third one leaves at once,
    with ``os._exit``); called in-process (tests), the previous handlers are
    put back.
    """
    if not _main_thread():
        yield
        return
    state = _state
    state.reset()
    outer = state.phase
    previous = _install()
    previous["hooks"] = _quiet_hooks()
    state.phase = "running"
    _arm_env_hook()
    try:
        yield
    except BaseException as err:  # noqa: BLE001 - sorted below
        signum = state.raised if state.raised is not None else state.pending
        if isinstance(err, Interrupted) and signum is None:
            signum = err.signum
        elif isinstance(err, KeyboardInterrupt) and signum is None:
            signum = signal.SIGINT  # Python's own handler (a handler we did not set)
        if signum is None:
            _restore(outer, previous)
            raise
        # an interrupt, whatever a library made of it (joblib, a worker that died of the
        # same SIGTERM): one line, and out
        state.handling = True
        state.raised = signum
        _finish(signum)
        _restore(outer, previous)
        raise SystemExit(exit_status(signum)) from None
    else:
        signum = state.pending
        if signum is not None:  # held by a deferred() that a library left open
            state.handling = True
            state.raised = signum
            _finish(signum)
            _restore(outer, previous)
            raise SystemExit(exit_status(signum))
        _restore(outer, previous)


def _restore(outer: str, previous: dict) -> None:
    state = _state
    if state.hard:
        state.phase = "leaving"  # keep our handlers: a late signal still ends cleanly
        return
    state.phase = outer
    threading.excepthook, sys.unraisablehook = previous.pop("hooks")
    for signum, handler in previous.items():
        try:
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        except (TypeError, ValueError):
            pass
    state.reset()


def _quiet_hooks() -> tuple:
    """Once a signal is being acted on, the errors of threads and finalizers that the unwinding
    cuts short (loky's executor manager thread, a half-closed queue) are its echo: not shown.
    Before that, they are shown as usual.  Returns the hooks it replaces."""
    thread_hook, unraisable_hook = threading.excepthook, sys.unraisablehook

    def on_thread_error(args):
        if _state.raised is None and _state.pending is None:
            thread_hook(args)

    def on_unraisable(args):
        if _state.raised is None and _state.pending is None:
            unraisable_hook(args)

    threading.excepthook, sys.unraisablehook = on_thread_error, on_unraisable
    return thread_hook, unraisable_hook


def _finish(signum: int) -> None:
    line = _line(signum)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe must not stop the line
            pass
    stop_workers()
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:  # noqa: BLE001 - a closed stderr: the file descriptor itself
        _write_err(line)


def received() -> int | None:
    """The signal this run is acting on (or holding), if any."""
    return _state.raised if _state.raised is not None else _state.pending


def describe(note) -> None:
    """``note() -> (who, what)``: what the interrupt line says is kept (None: the generic line)."""
    _state.note = note


# ------------------------------------------------------------------ deferral

@contextlib.contextmanager
def deferred():
    """Hold SIGINT and SIGTERM until the block ends; then act on them.

    Only where :func:`guard` set the handlers (elsewhere Python's own SIGINT
    handler raises wherever it lands, and the block is a no-op).
    """
    state = _state
    state.depth += 1
    try:
        yield
    finally:
        state.depth -= 1
        if (state.depth == 0 and state.pending is not None and state.raised is None
                and state.phase == "running"):
            signum, state.pending = state.pending, None
            state.raised = signum
            raise Interrupted(signum)


@contextlib.contextmanager
def spawning(processes: bool = True):
    """Start worker processes (and the threads that may start more) with SIGINT blocked.

    They inherit the mask, so a terminal's Ctrl-C never reaches them.  The
    driver still answers SIGINT and SIGTERM at once, in the middle of the
    spawning too: holding them until every worker had started made a SIGTERM
    wait as long as the spawning did (a minute for hundreds of workers).  A
    thread started before the mask is set, with SIGINT unblocked, receives a
    terminal's Ctrl-C for the process; Python runs the handler in the main
    thread, which raises :class:`Interrupted` wherever the spawning is.  The
    worker processes started in the block are then killed here, before the
    exception goes on: one forked a moment before the interrupt may not yet be
    known to loky, which could not stop it.

    The resource trackers of multiprocessing and loky are started first
    (``processes``): starting the former unblocks SIGINT, which would undo
    the block for the workers started after it.  With a test hook set
    (:func:`set_hook`), each process started in the block announces itself at
    the checkpoint ``workers.spawn``: the instant a worker has been forked.
    """
    if processes:
        _start_resource_trackers()
    before = _children()
    # platform introspection: pthread_sigmask exists on POSIX only
    blocked = _main_thread() and hasattr(signal, "pthread_sigmask")
    catcher = _SignalCatcher() if blocked else None
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocked else None
    try:
        with _announced_spawns():
            checkpoint("workers.starting")
            yield
    except BaseException:
        if received() is not None:
            _kill_new_children(before)
        raise
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            catcher.stop()
    checkpoint("workers.started")


class _SignalCatcher:
    """A thread that only waits, with the signal mask it was started with (SIGINT unblocked).

    The kernel gives a process-wide signal to a thread that does not block it; while
    the main thread blocks SIGINT (:func:`spawning`), this one takes it, and Python
    runs the handler in the main thread at its next instruction.
    """

    def __init__(self):
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._done.wait, daemon=True, name="labeldp-sim signals")
        self._thread.start()

    def stop(self) -> None:
        self._done.set()


def _children() -> set:
    """The pids of this process's living child processes (empty if they cannot be listed)."""
    try:
        import psutil

        return {child.pid for child in psutil.Process().children(recursive=True)}
    except Exception:  # noqa: BLE001 - psutil missing or /proc unreadable: nothing to compare
        return set()


def _kill_new_children(before: set) -> None:
    """SIGKILL the child processes started since ``before`` was taken (best effort, never raises).

    They are workers that have computed nothing: nothing of theirs is lost.
    """
    for pid in sorted(_children() - before):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@contextlib.contextmanager
def _announced_spawns():
    """With a test hook set, ``multiprocessing``'s ``Process.start`` (loky's too) reaches the
    checkpoint ``workers.spawn`` once the process is forked; without one, nothing is changed."""
    if _hook is None:
        yield
        return
    from multiprocessing.process import BaseProcess

    original = BaseProcess.start

    def start(self, *args, **kwargs):
        original(self, *args, **kwargs)
        checkpoint("workers.spawn")

    BaseProcess.start = start
    try:
        yield
    finally:
        BaseProcess.start = original


# The trackers outlive an interrupted driver and unlink the semaphores its executor still held,
# warning about each on the shared stderr: after an interrupt's one line, that is noise (the
# clean-up itself is what we want).  They inherit this filter through their environment.
_TRACKER_WARNINGS = ",".join(f"ignore::UserWarning:{module}" for module in (
    "multiprocessing.resource_tracker", "joblib.externals.loky.backend.resource_tracker"))


@contextlib.contextmanager
def _quiet_trackers():
    before = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (before, _TRACKER_WARNINGS)))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = before


def _start_resource_trackers() -> None:
    from multiprocessing import resource_tracker

    with _quiet_trackers():
        resource_tracker.ensure_running()
        try:
            from joblib.externals.loky.backend import resource_tracker as loky_tracker
        except ImportError:
            return
        loky_tracker.ensure_running()


def worker_setup(parent: int) -> None:
    """Initializer of every loky worker: Ctrl-C is the driver's; leave when the driver is gone."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="labeldp-sim driver watch").start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def stop_workers() -> None:
    """Shut loky's reusable executor down, its workers killed, if one was started (best
    effort, never raises): the interpreter's exit then has nothing of loky's left to wait on."""
    module = sys.modules.get("joblib.externals.loky.reusable_executor")
    # third-party introspection: loky's private executor, set only once one started
    executor = getattr(module, "_executor", None) if module is not None else None
    if executor is None:
        return
    try:
        executor.shutdown(wait=True, kill_workers=True)
    except Exception:  # noqa: BLE001
        pass


# ------------------------------------------------------------------ test hook

def checkpoint(name: str) -> None:
    """A named instant where a test may deliver a signal (a no-op unless a hook is set)."""
    if _hook is not None:
        _hook(name)


def set_hook(hook) -> None:
    """``hook(name)`` is called at every :func:`checkpoint` (None: none)."""
    global _hook
    _hook = hook


def _arm_env_hook() -> None:
    spec = os.environ.get(ENV_HOOK)
    if not spec or _hook is not None:
        return
    parts = spec.split(":")
    try:
        name, nth = parts[0], int(parts[1]) if len(parts) > 1 else 1
        signum = signal.Signals[parts[2]] if len(parts) > 2 else signal.SIGINT
    except (ValueError, KeyError):
        return  # a test's variable, misspelt: no hook
    group = len(parts) > 3 and parts[3] == "group"
    seen = [0]

    def hook(reached: str) -> None:
        if reached != name:
            return
        seen[0] += 1
        if seen[0] == nth:
            if group:
                os.killpg(os.getpgid(0), signum)
            else:
                os.kill(os.getpid(), signum)

    set_hook(hook)
