"""Exports: CSV files, figures and pages written whole, never half.

CSV files are exports, written by :func:`atomic_write` (temporary file, then
rename) under :func:`locked`; inside :func:`staged` every file of one export
waits in a staging folder and all of them are renamed into place at once, so
a directory's files always come from one run, whole.

Disk and permission faults (a full disk, a read-only or forbidden folder)
while exporting give one line naming the path (:class:`~labeldp_sim.harness.errors.FileError`)
and leave the files as they were.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import uuid
from pathlib import Path

from labeldp_sim.harness.errors import FileError
from labeldp_sim.harness.interrupts import checkpoint, deferred

__all__ = ["atomic_write", "locked", "staged", "MANIFEST", "STAGING_PREFIX"]


@contextlib.contextmanager
def locked(directory: Path, name: str = ".export.lock"):
    """An exclusive ``flock`` on ``directory/name``: one run exports into a directory at a time.

    Raises
    ------
    FileError
        The directory or its lock file cannot be created (EACCES, EROFS, ENOSPC...).
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle = open(directory / name, "a")
    except OSError as err:
        raise FileError(directory, err, _left(directory)) from err
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def atomic_write(path: Path, write) -> None:
    """``write(tmp_path)`` then rename onto ``path``: readers see the old file or the new one, whole.

    The temporary name keeps the suffix, so writers that pick a format from it
    (matplotlib, pandas) still do.  Inside :func:`staged` for ``path``'s
    directory, the file waits in the staging folder and lands with the others.

    Raises
    ------
    FileError
        An ``OSError`` while writing (a full disk, no permission, a read-only file system):
        one line naming ``path``; the temporary file is removed and ``path`` is as it was.
    """
    path = Path(path)
    stage = _STAGES.get(_dir_key(path.parent)) if _STAGES else None
    if stage is not None:
        stage.add(path.name, write)
        return
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(tmp)
        _fsync_file(tmp)
        os.replace(tmp, path)
    except FileError:
        raise
    except OSError as err:
        raise FileError(path, err, "the file is left as it was") from err
    finally:
        with contextlib.suppress(OSError):  # nothing half-written stays behind, whatever the fault
            tmp.unlink()


def _left(directory: Path) -> str:
    return f"{directory} is left as it was"


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _dir_key(directory: Path) -> str:
    return os.path.realpath(directory)


MANIFEST = ".export.manifest"
STAGING_PREFIX = ".staging-"
_STAGES: dict = {}  # realpath of a directory -> its open _Stage


class _Stage:
    """The files of one export of ``directory``, waiting in ``folder`` (inside it)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.folder = directory / f"{STAGING_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.names: list = []
        self.committed = False

    def add(self, name: str, write) -> None:
        target = self.folder / name
        try:
            self.folder.mkdir(exist_ok=True)
            write(target)
            _fsync_file(target)
        except FileError:
            raise
        except OSError as err:  # the staging folder goes (staged's end): nothing of it lands
            raise FileError(self.directory / name, err, _left(self.directory)) from err
        if name not in self.names:
            self.names.append(name)
        checkpoint("export.staged")

    def commit(self) -> None:
        """Rename every staged file into place, with signals held: all or none.

        A manifest written first names them, so a ``kill -9`` between two renames
        is finished by the next export of the directory (:func:`_recover`).  A fault
        before the manifest is in place (a full disk) leaves the directory as it was.
        """
        if not self.names:
            return
        _fsync_dir(self.folder)
        manifest = self.directory / MANIFEST
        with deferred():
            checkpoint("export.commit")
            tmp = manifest.with_name(f"{MANIFEST}.{os.getpid()}.tmp")
            try:
                tmp.write_text(json.dumps({"folder": self.folder.name, "names": self.names}))
                _fsync_file(tmp)
                os.replace(tmp, manifest)
            except OSError as err:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                raise FileError(manifest, err, _left(self.directory)) from err
            _fsync_dir(self.directory)
            try:
                for name in self.names:
                    os.replace(self.folder / name, self.directory / name)
                    checkpoint("export.renamed")
            except OSError as err:  # renames need no space; the manifest lets the next export finish
                raise FileError(self.directory / name, err, f"the next export to {self.directory} "
                                "completes this one's") from err
            _fsync_dir(self.directory)
            self.committed = True
            with contextlib.suppress(OSError):  # the files are in: leftovers go at the next export
                manifest.unlink()
                self.folder.rmdir()


def _recover(directory: Path) -> None:
    """Finish an export whose renames a ``kill -9`` cut short; drop staging folders left behind."""
    manifest = directory / MANIFEST
    if manifest.exists():
        try:
            plan = json.loads(manifest.read_text())
            folder = directory / plan["folder"]
            for name in plan["names"]:
                if (folder / name).exists():
                    os.replace(folder / name, directory / name)
            _fsync_dir(directory)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # the manifest is renamed into place whole; a stranger's file: drop it
        manifest.unlink(missing_ok=True)
    for folder in directory.glob(f"{STAGING_PREFIX}*"):
        shutil.rmtree(folder, ignore_errors=True)
    for tmp in directory.glob(f"{MANIFEST}.*.tmp"):
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def staged(directory):
    """Every :func:`atomic_write` into ``directory`` inside the block lands at its end, all
    at once, or (an exception, a Ctrl-C) not at all: the directory shows the old files or
    the new ones, never a mix.  Yields the stage (``.committed`` once the files are in).

    Holds the directory's ``.staging.lock`` (after any lock the caller holds). A
    nested block for the same directory joins the outer one.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FileError(directory, err, _left(directory)) from err
    key = _dir_key(directory)
    if key in _STAGES:
        yield _STAGES[key]
        return
    with locked(directory, ".staging.lock"):
        try:
            _recover(directory)
        except OSError as err:
            raise FileError(directory, err, _left(directory)) from err
        stage = _Stage(directory)
        _STAGES[key] = stage
        try:
            yield stage
            stage.commit()
        finally:
            _STAGES.pop(key, None)
            if not (directory / MANIFEST).exists():  # a cut-short commit is left to _recover
                shutil.rmtree(stage.folder, ignore_errors=True)
