"""A full disk (ENOSPC), no permission (EACCES) or a read-only file system (EROFS) during a run,
an export or a report: one line naming the path, a non-zero exit status, nothing half-written.

The faults are injected (:func:`inject`): Python's ``open``, ``io.open`` and ``os.mkdir`` raise
for the paths under a folder, after a budget of bytes where one is given (so a file is
really half-written when the fault comes), and the store's SQLite connections get a
``max_page_count`` (SQLite's own "database or disk is full").  No root, no tmpfs.
"""

import builtins
import errno
import io
import os
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from labeldp_sim.harness.errors import FileError
from labeldp_sim.harness.store import TrialStore, atomic_write, staged

ARGS = ["experiment=cls_label_cdp", "grid.d=[1]", "grid.reps=6", "runner.n_jobs=1",
        "runner.progress=false", "runner.path=sufficient"]


class _Filling:
    """A file whose disk fills after ``budget`` bytes: the write that crosses it writes what fits,
    then raises (a real half-written file, as with ENOSPC)."""

    def __init__(self, handle, budget: int, code: int, name):
        self._handle, self._budget, self._code, self._name = handle, budget, code, name

    def write(self, data):
        if len(data) > self._budget:
            self._handle.write(data[:self._budget])
            self._handle.flush()
            self._budget = 0
            raise OSError(self._code, os.strerror(self._code))
        self._budget -= len(data)
        return self._handle.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()

    def __iter__(self):
        return iter(self._handle)

    def __getattr__(self, name):
        return getattr(self._handle, name)


def inject(monkeypatch, under: Path, code: int, *, budget: int | None = None, names=None):
    """Make writes under ``under`` fail with ``code``: opening a file for writing (or, with
    ``budget``, its writing past ``budget`` bytes) and creating a folder.  ``names``: only files
    with these names (anywhere below ``under``, a staging folder's included)."""
    real_open, real_mkdir = builtins.open, os.mkdir
    under = Path(under).resolve()

    def hit(path, is_file: bool) -> bool:
        if isinstance(path, int):
            return False
        resolved = Path(os.path.abspath(os.fspath(path)))
        if under != resolved and under not in resolved.parents:
            return False
        return not is_file or names is None or resolved.name in names

    def fake_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and hit(file, True):
            if budget is None:
                raise OSError(code, os.strerror(code), os.fspath(file))
            return _Filling(real_open(file, mode, *args, **kwargs), budget, code, file)
        return real_open(file, mode, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        if hit(path, False) and names is None and not os.path.isdir(path):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)


def _run(argv) -> int:
    """``labeldp-sim`` in this process, through its real entry point: its exit status."""
    from labeldp_sim.app import main

    try:
        main(argv)
        return 0
    except SystemExit as exit_:
        return exit_.code


def _snapshot(folder: Path) -> dict:
    """Every file under ``folder`` (dot files too) and its bytes; lock files aside."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


def _one_line(capsys, prefix: str, *words) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(prefix) and all(w in lines[0] for w in words), lines[0]
    return lines[0]


def _leftovers(folder: Path) -> list:
    return [p for p in folder.rglob("*") if ".tmp" in p.name or p.name.startswith(".staging-")
            or p.name.startswith(".export.manifest")]


# ------------------------------------------------------------------ units

@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EROFS])
def test_atomic_write_names_the_file_and_leaves_it_as_it_was(tmp_path, monkeypatch, code):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    inject(monkeypatch, tmp_path, code, budget=5 if code == errno.ENOSPC else None, names={f".out.{os.getpid()}.tmp.csv"})
    with pytest.raises(FileError) as caught:
        atomic_write(target, lambda p: p.write_text("new numbers\n" * 100))
    assert str(caught.value) == (f"cannot write {target} ({os.strerror(code)}, {errno.errorcode[code]}); "
                                 "the file is left as it was")
    assert caught.value.errno == code and isinstance(caught.value, OSError)
    assert target.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["out.csv"]


def test_a_staged_export_that_fills_the_disk_lands_nothing(tmp_path, monkeypatch):
    out = tmp_path / "exp"
    out.mkdir()
    (out / "a.csv").write_text("old a\n")
    (out / "b.csv").write_text("old b\n")
    before = _snapshot(out)
    inject(monkeypatch, out, errno.ENOSPC, budget=3, names={"b.csv"})
    with pytest.raises(FileError, match=rf"^cannot write {out / 'b.csv'} \(No space left on device, ENOSPC\); "
                                        rf"{out} is left as it was$"):
        with staged(out):
            atomic_write(out / "a.csv", lambda p: p.write_text("new a\n"))
            atomic_write(out / "b.csv", lambda p: p.write_text("new b\n"))
    assert _snapshot(out) == before and not _leftovers(out)


def test_the_commit_s_manifest_on_a_full_disk_lands_nothing(tmp_path, monkeypatch):
    out = tmp_path / "exp"
    out.mkdir()
    (out / "a.csv").write_text("old a\n")
    before = _snapshot(out)
    inject(monkeypatch, out, errno.ENOSPC, budget=2, names={f".export.manifest.{os.getpid()}.tmp"})
    with pytest.raises(FileError, match=r"\.export\.manifest \(No space left on device, ENOSPC\); .* is left as it was$"):
        with staged(out):
            atomic_write(out / "a.csv", lambda p: p.write_text("new a\n"))
    assert _snapshot(out) == before and not _leftovers(out)


# ------------------------------------------------------- the command line


@pytest.fixture
def exported(tmp_path, quick_plots, capsys):
    """A results directory with one finished run and its export."""
    results = tmp_path / "results"
    assert _run([*ARGS, f"paths.results_dir={results}"]) == 0
    capsys.readouterr()
    return results


def test_a_full_disk_during_an_export_is_one_line_and_lands_nothing(exported, monkeypatch, capsys):
    """The issue's case (a 70-line ENOSPC traceback): trials.csv fills the disk half-way."""
    out = exported / "cls_label_cdp"
    before = _snapshot(out)
    inject(monkeypatch, out, errno.ENOSPC, budget=200, names={"trials.csv"})
    assert _run([*ARGS, f"paths.results_dir={exported}"]) == 1
    _one_line(capsys, f"labeldp-sim: error: cannot write {out / 'trials.csv'} (No space left on device, "
                      f"ENOSPC); {out} is left as it was")
    assert _snapshot(out) == before and not _leftovers(exported)
    monkeypatch.undo()
    assert TrialStore(exported / "trials.sqlite").runs().status.tolist() == ["finished", "finished"]


def test_a_full_disk_on_a_first_export_leaves_no_file(tmp_path, quick_plots, monkeypatch, capsys):
    results = tmp_path / "results"
    inject(monkeypatch, results / "cls_label_cdp", errno.ENOSPC, budget=0, names={"summary.csv"})
    assert _run([*ARGS, f"paths.results_dir={results}"]) == 1
    _one_line(capsys, "labeldp-sim: error: cannot write ", "summary.csv (No space left on device, ENOSPC)")
    assert not [p for p in (results / "cls_label_cdp").iterdir() if not p.name.endswith(".lock")]
    assert not _leftovers(results)


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS])
def test_a_results_folder_that_cannot_be_written_is_one_line(tmp_path, quick_plots, monkeypatch, capsys, code):
    """The output folder cannot be created (no permission, a read-only file system)."""
    results = tmp_path / "results"
    results.mkdir()
    inject(monkeypatch, results / "cls_label_cdp", code)
    assert _run([*ARGS, f"paths.results_dir={results}"]) == 1
    _one_line(capsys, "labeldp-sim: error: ", str(results / "cls_label_cdp"),
              f"{os.strerror(code)}, {errno.errorcode[code]}")
    assert not (results / "cls_label_cdp").exists()


def test_a_full_disk_under_the_store_is_one_line_and_keeps_what_was_stored(tmp_path, quick_plots, monkeypatch,
                                                                           capsys):
    """SQLite's own 'database or disk is full' half-way through a run: one line naming the store,
    exit 1, the chunks stored before it kept (whole), the run recorded as failed."""
    results = tmp_path / "results"
    real = sqlite3.connect

    def small_disk(*args, **kwargs):
        con = real(*args, **kwargs)
        con.execute("PRAGMA max_page_count = 8")  # 8 pages of 4 kB: a few chunks, then full
        return con

    monkeypatch.setattr(sqlite3, "connect", small_disk)
    assert _run([*ARGS, "grid.reps=200", "runner.chunk=10", f"paths.results_dir={results}"]) == 1
    _one_line(capsys, f"labeldp-sim: error: cannot use the trial store {results / 'trials.sqlite'} "
                      "(database or disk is full)")
    monkeypatch.undo()
    with sqlite3.connect(results / "trials.sqlite") as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = con.execute("SELECT count(*) FROM rate_trials_v1").fetchone()[0]
        runs = con.execute("SELECT status, computed FROM runs").fetchall()
    assert 0 < stored < 1000 and stored % 10 == 0  # whole chunks only
    assert runs == [("failed", stored)]
    assert not (results / "cls_label_cdp" / "trials.csv").exists()


# ------------------------------------------------------------------ the report

def _report(argv) -> int:
    return _run(["report", *argv])


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EROFS])
def test_a_report_that_cannot_be_written_is_one_line_and_writes_nothing(exported, monkeypatch, capsys, code):
    """The issue's case: `report --results DIR` on a read-only folder gave an OSError traceback."""
    before = _snapshot(exported)
    inject(monkeypatch, exported, code, budget=100 if code == errno.ENOSPC else None)
    assert _report(["--results", str(exported)]) == 1
    line = _one_line(capsys, "labeldp-sim report: error: ", f"{os.strerror(code)}, {errno.errorcode[code]}")
    assert str(exported) in line
    monkeypatch.undo()
    assert _snapshot(exported) == before and not _leftovers(exported)
    assert not (exported / "index.html").exists()


def test_a_report_whose_pages_fill_the_disk_leaves_the_site_as_it_was(exported, monkeypatch, capsys):
    """An earlier report's site: a fault while writing the pages lands none of them."""
    assert _report(["--results", str(exported)]) == 0
    capsys.readouterr()
    (exported / "cls_label_cdp" / "fit.csv").write_text(
        pd.read_csv(exported / "cls_label_cdp" / "fit.csv").head(1).to_csv(index=False))  # pages change
    before = _snapshot(exported)
    page = next((exported / "site").glob("exp-*.html")).name
    inject(monkeypatch, exported / "site", errno.ENOSPC, budget=100, names={page})
    assert _report(["--results", str(exported)]) == 1
    _one_line(capsys, "labeldp-sim report: error: cannot write ", f"{page} (No space left on device, ENOSPC)",
              "site is left as it was")
    monkeypatch.undo()
    assert _snapshot(exported) == before and not _leftovers(exported)


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_results_path_is_refused_and_nothing_is_written(tmp_path, monkeypatch, capsys, value):
    """`report --results ''` wrote into the working directory, exit 0: Path('') is '.'."""
    from labeldp_sim.report.build import main as report

    monkeypatch.chdir(tmp_path)
    for call in (lambda: _report(["--results", value]), lambda: report(["--results", value])):
        assert call() == 2
        _one_line(capsys, "labeldp-sim report: error: --results: got ")
    assert list(tmp_path.iterdir()) == []
