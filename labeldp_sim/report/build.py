"""``labeldp-sim report``: the site of a results folder, written whole (:func:`write_site`).

Every page is built (:mod:`.pages`) before any is written; the pages land together, then the
index.  :mod:`.site` says what a folder holds and what each paper contributes.
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

from labeldp_sim.harness.errors import FileError
from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.store import atomic_write, staged
from labeldp_sim.report.pages import experiment_page, index_page
from labeldp_sim.report.site import ASSETS, INDEX, SITE_DIR, Site, registered_sections

log = get_logger("report")

__all__ = ["write_site", "main"]


def write_site(results: Path) -> dict:
    """Write ``results/index.html`` and ``results/site/`` from the files in ``results``; returns counts.

    Every page is built before any is written; then the pages (``site/``, staged) land at
    once, then the index: a reader never sees half a page, nor (a fault on the way) pages
    of two reports in ``site/``.  Pages of experiments no longer in ``results`` are removed.

    Raises
    ------
    FileError
        A page, a folder or an asset cannot be written (a full disk, a read-only or forbidden
        folder): one line naming it; nothing half-written is left, and ``site/`` is as it was.
    """
    importlib.import_module(f"{__package__}.sections")  # registers the shared sections

    results = Path(results)
    site = Site(results)
    out = results / SITE_DIR
    pages = {exp.page: experiment_page(site, exp) for exp in site.experiments.values()}
    index = index_page(site, registered_sections())
    assets = [asset for asset in ASSETS.iterdir() if asset.is_file()]
    try:
        (out / "assets").mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FileError(out / "assets", err, f"{results} is left as it was") from err
    # the assets are the package's, the same for every report: each lands whole on its own
    for asset in assets:
        atomic_write(out / "assets" / asset.name, lambda p, asset=asset: shutil.copyfile(asset, p))
    with staged(out):
        for page, text in pages.items():
            atomic_write(out / page, lambda p, text=text: p.write_text(text, encoding="utf-8"))
    for old in out.glob("exp-*.html"):
        if old.name not in pages:
            old.unlink()
    atomic_write(results / INDEX, lambda p: p.write_text(index, encoding="utf-8"))
    statuses = [e.status for e in site.experiments.values()]
    return {"experiments": len(statuses), "stale": statuses.count("stale"), "missing": sorted(site.missing),
            "errors": list(site.errors)}


def main(argv: list) -> int:
    """``labeldp-sim report [--results DIR]``: write the site, print one line.

    Returns 0 done, 2 bad input (an empty ``--results`` too: ``Path('')`` is the working
    directory), 1 a file or folder that cannot be written (one line naming it) or a section of
    the index that could not be built (the site is written, the section shows its error; one
    line per section here).
    """
    import time

    from labeldp_sim.harness.cli import report_arguments
    from labeldp_sim.harness.errors import ConfigError, os_error_line

    try:
        typed = report_arguments(argv)[1]
        results = Path(typed)
        if not results.is_dir():
            raise ConfigError("--results", typed, "an existing results directory")
    except ConfigError as err:
        log.error(f"labeldp-sim report: error: {err}")
        return 2
    start = time.perf_counter()
    try:
        counts = write_site(results)
    except OSError as err:  # a full disk, a read-only or forbidden folder: one line, not a traceback
        log.error(f"labeldp-sim report: error: {os_error_line(err)}")
        return 1
    missing = counts["missing"]
    log.info(f"report: {results / INDEX} ({counts['experiments']} experiment pages, {counts['stale']} stale; "
             f"{len(missing)} summary files missing{': ' + ', '.join(missing) if missing else ''}) "
             f"in {time.perf_counter() - start:.1f} s")
    for error in counts["errors"]:
        log.error(f"labeldp-sim report: error: {error}")
    return 1 if counts["errors"] else 0
