"""Open a static HTML site in headless Chromium and report what a reader would find broken.

The HTML report is meant to be opened straight from the file system (``file://``), on a
machine with no network and no web server.  A page can look right in the author's browser and
still be broken for that reader: an image that only loads from a web address, a link to a file
that was never written, a ``#fragment`` that names no heading, a table whose rows were dropped,
a script that throws.  :func:`check_site` opens the index page in headless Chromium, then,
breadth first, every ``.html`` page it reaches through relative links inside the index's folder,
and on each page checks:

* the browser console: every entry of level ``SEVERE`` (a failed resource load, an uncaught
  exception, ``console.error``) is a problem; warnings are not;
* every ``<img>`` loaded (``complete`` and ``naturalWidth > 0``, lazy images forced to load);
* every ``<a href>`` / ``<area href>``: a relative target exists on disk, and a ``#fragment``
  names an element ``id`` (or an ``<a name>``) on the target page;
* every ``<table>`` has a data row (a ``<tr>`` with a ``<td>``);
* every ``<script src>``, ``<link rel=stylesheet href>``, ``<object data>``, ``<embed src>``
  and ``<iframe src>`` is relative and its file exists;
* its size, as laid out in a 1,400 × 900 viewport (:data:`WINDOW`, device scale 1) with the page
  as it opens (folded ``<details>`` stay folded): a page wider than the viewport (it scrolls
  sideways; a table scrolling inside its own ``div.scroll`` is fine), a page taller than
  :data:`MAX_PAGE_HEIGHT` (ten screens), and an experiment page (``exp-*.html``) whose
  ``#verdicts`` section is missing or does not start on the first screen are problems.  Each
  page's height is kept in :attr:`SiteReport.heights`; the summary names the tallest.

Any reference that leaves the site (``http:``, ``https:``, ``//host``, ``mailto:``, any other
scheme, or a root-relative ``/path``, which ``file://`` resolves against the disk's root) is a
problem too: the report must work offline and wherever its folder is copied.  ``data:`` URIs
are allowed for images and embedded objects.

Screenshots: of the index (``screenshot``) and of any page it reaches (``page_screenshots``),
each from the top of the page, cut at a height.  The viewport is fixed through the DevTools
protocol (not left to the window around it) at device scale 1, so a screenshot of the same page
is the same size on every machine, and the same image wherever the same fonts are installed.

Selenium is imported only when a browser is started, so importing this module never needs it.
Run it as ``python -m labeldp_sim.report.site_check results/index.html [--screenshot PATH]
[--page-screenshot site/exp-NAME.html=PATH ...]``.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import os
import shutil
import sys
import tempfile
from collections import deque
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from labeldp_sim.harness.logs import get_logger
from labeldp_sim.harness.errors import one_line

log = get_logger("report.site_check")

__all__ = ["CHROMIUM", "CHROMEDRIVER", "MAX_PAGE_HEIGHT", "WINDOW", "SiteReport", "browser_available",
           "check_site", "main"]

# Debian's packages (CI installs them with apt); the variables let another machine point elsewhere.
CHROMIUM = os.environ.get("LABELDP_SIM_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("LABELDP_SIM_CHROMEDRIVER", "/usr/bin/chromedriver")

PAGE_LOAD_TIMEOUT_S = 30
# The reader's first screen: a laptop's browser window, in CSS pixels (width, height).
WINDOW = (1400, 900)
# A page taller than ten screens, with its tables folded as it opens, is a wall that nobody
# scrolls through: the acceptance of issue 33 is "no page taller than ~10 screens".
MAX_PAGE_HEIGHT = 10 * WINDOW[1]
# Every experiment page opens with this section (its verdicts); it must start on the first screen.
VERDICTS_ID = "verdicts"
EXPERIMENT_PAGE = "exp-*.html"
# Chrome refuses screenshots taller than its texture limit; a report page taller than this is
# itself a problem worth seeing, and the top of it is what the screenshot is for.
MAX_SCREENSHOT_HEIGHT = 16384
# No network at all (the check must not depend on it, nor reach out), nothing on first run,
# and /dev/shm is small in containers.
CHROMIUM_ARGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", f"--window-size={WINDOW[0]},{WINDOW[1]}", "--force-device-scale-factor=1",
)
HTML_SUFFIXES = (".html", ".htm")

# One round trip per page.  Lazy images below the fold would never load in a headless window
# that does not scroll, so they are switched to eager and awaited; the answer comes only once
# the document and every image have settled, so the console log read after it is complete.
_PAGE_SCRIPT = """
const done = arguments[arguments.length - 1];
const attrs = (selector, name) => Array.from(document.querySelectorAll(selector), e => e.getAttribute(name));
const images = Array.from(document.images);
for (const img of images) if (img.loading === 'lazy') img.loading = 'eager';
const settled = img => img.complete ? Promise.resolve() : new Promise(resolve => {
  img.addEventListener('load', resolve, {once: true});
  img.addEventListener('error', resolve, {once: true});
});
const loaded = document.readyState === 'complete' ? Promise.resolve()
  : new Promise(resolve => window.addEventListener('load', resolve, {once: true}));
Promise.all([loaded, ...images.map(settled)]).then(() => done({
  images: images.map(img => [img.getAttribute('src'), img.complete && img.naturalWidth > 0]),
  links: attrs('a[href], area[href]', 'href'),
  scripts: attrs('script[src]', 'src'),
  stylesheets: attrs('link[rel~="stylesheet" i][href]', 'href'),
  objects: attrs('object[data]', 'data'),
  embeds: attrs('embed[src]', 'src'),
  iframes: attrs('iframe[src]', 'src'),
  tables: Array.from(document.querySelectorAll('table'), t => [
    t.id || (t.caption ? t.caption.textContent.trim().replace(/\\s+/g, ' ') : ''),
    Array.from(t.rows).some(row => Array.from(row.cells).some(cell => cell.tagName === 'TD')),
  ]),
  anchors: [...Array.from(document.querySelectorAll('[id]'), e => e.id),
            ...attrs('a[name]', 'name')],
  size: [document.documentElement.scrollWidth, document.documentElement.clientWidth,
         Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)],
  verdicts: (e => e ? e.getBoundingClientRect().top + window.scrollY : null)(
    document.getElementById(arguments[0])),
}));
"""


@dataclass
class SiteReport:
    """What :func:`check_site` saw.

    Attributes
    ----------
    pages : list of str
        Site-relative paths of the pages visited, the index first, in visiting order.
    problems : list of str
        One line each, ``"<page>: <what>"``.
    tables, images, links : int
        How many ``<table>``, ``<img>`` and ``<a href>`` elements were checked, over all pages.
    heights : dict of str to int
        Each page's height in CSS pixels (its scroll height in the :data:`WINDOW` viewport, as
        it opens), by site-relative path.
    widths : dict of str to int
        Each page's scroll width in CSS pixels (at most the viewport's when nothing overflows).
    """

    pages: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    tables: int = 0
    images: int = 0
    links: int = 0
    heights: dict[str, int] = field(default_factory=dict)
    widths: dict[str, int] = field(default_factory=dict)

    def tallest(self, n: int = 3) -> list[tuple[str, int]]:
        """The ``n`` tallest pages, ``(page, height)``, tallest first (ties by name)."""
        return sorted(self.heights.items(), key=lambda item: (-item[1], item[0]))[:n]

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def summary(self) -> str:
        """One line: ``site check: 31 pages, 120 tables, 95 images, 800 links: 0 problems``.

        When heights were measured, the tallest page follows in screens of :data:`WINDOW`:
        ``...: 0 problems; tallest page site/exp-a.html: 4,100 px (4.6 screens)``.
        """
        counts = ", ".join(_plural(n, word) for n, word in
                           ((len(self.pages), "page"), (self.tables, "table"),
                            (self.images, "image"), (self.links, "link")))
        line = f"site check: {counts}: {_plural(len(self.problems), 'problem')}"
        if self.heights:
            page, height = self.tallest(1)[0]
            line += f"; tallest page {page}: {height:,} px ({height / WINDOW[1]:.1f} screens)"
        return line


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def browser_available() -> str | None:
    """Whether :func:`check_site` can start a browser here.

    Returns
    -------
    str or None
        None when Chromium, chromedriver and selenium are all usable, else a one-line reason
        (tests skip with it, the command line prints it).
    """
    for name, path, variable in (("Chromium", CHROMIUM, "LABELDP_SIM_CHROMIUM"),
                                 ("chromedriver", CHROMEDRIVER, "LABELDP_SIM_CHROMEDRIVER")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{name} not found at {path} (install it, or set {variable})"
    try:
        importlib.import_module("selenium.webdriver")
    except ImportError as error:
        return f"selenium is not importable: {error}"
    return None


def _start_browser(profile: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    # Explicit paths keep Selenium Manager, which would try to download a driver, out of it.
    options.binary_location = CHROMIUM
    for argument in CHROMIUM_ARGS:
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
    driver.set_script_timeout(PAGE_LOAD_TIMEOUT_S)
    # The viewport itself, not the window around it (whose frame differs between Chromium
    # versions and modes): pages are measured, and screenshots taken, at exactly WINDOW.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": WINDOW[0], "height": WINDOW[1], "deviceScaleFactor": 1, "mobile": False})
    return driver


class _Anchors(HTMLParser):
    """The ids and ``<a name>`` of an HTML file, for fragments into pages the crawl never opens."""

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if value and (key == "id" or (key == "name" and tag == "a")):
                self.names.add(value)


def _file_anchors(path: Path) -> set[str]:
    parser = _Anchors()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser.names


def _fragment_found(fragment: str, anchors: set[str]) -> bool:
    # HTML tries the fragment as written, then percent-decoded; "top" needs no element.
    return fragment in anchors or unquote(fragment) in anchors or fragment.lower() == "top"


def _external(ref: str) -> str | None:
    """How ``ref`` leaves the site, or None when it is a relative reference."""
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc:
        return "external"
    if parts.path.startswith("/"):
        # file:// resolves it against the disk's root, a server against its own: neither is the site.
        return "root-relative"
    return None


def check_site(index: Path, screenshot: Path | None = None, max_pages: int = 500,
               screenshot_height: int = MAX_SCREENSHOT_HEIGHT,
               page_screenshots: dict[str, Path] | None = None,
               page_screenshot_height: int = WINDOW[1]) -> SiteReport:
    """Open ``index`` and every page it reaches in headless Chromium; report what is broken.

    Parameters
    ----------
    index : Path
        The site's ``index.html``.  Pages linked from it (relative ``.html`` links inside its
        folder tree, followed breadth first) are visited too; nothing outside it is opened.
    screenshot : Path, optional
        Where to save a full-page PNG of the index page (parent folders are created).
    max_pages : int
        Stop after this many pages; stopping is itself reported as a problem, since the rest of
        the site went unchecked.
    screenshot_height : int
        Crop the screenshot to this many CSS pixels from the top (the README shows the top).
    page_screenshots : dict of str to Path, optional
        Pages to photograph, by path relative to the index's folder (``site/exp-a.html``), and
        where to save each PNG.  A page that the crawl does not reach is a problem.
    page_screenshot_height : int
        Crop those screenshots to this many CSS pixels from the top (default: the first screen).

    Returns
    -------
    SiteReport
        Pages visited, problems (one line each), and how much was checked.

    Raises
    ------
    FileNotFoundError
        When ``index`` is not a file.
    """
    index = Path(index).resolve()
    if not index.is_file():
        raise FileNotFoundError(f"no site index at {index}")
    root = index.parent
    # by the page's resolved path, so that "site/../site/a.html" names the same page
    shots = {(root / name).resolve(): (name, Path(path)) for name, path in (page_screenshots or {}).items()}
    root_uri = root.as_uri() + "/"
    report = SiteReport()
    anchors: dict[Path, set[str]] = {}
    # (page name, href, target file, fragment): checked once every page has been read.
    fragments: list[tuple[str, str, Path, str]] = []
    queue: deque[Path] = deque([index])
    queued = {index}

    def name_of(path: Path) -> str:
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)

    profile = tempfile.mkdtemp(prefix="labeldp-sim-chromium-")
    driver = None
    try:
        driver = _start_browser(profile)
        while queue:
            if len(report.pages) >= max_pages:
                report.problems.append(f"{name_of(queue[0])}: not checked: stopped after "
                                       f"max_pages={max_pages} pages, {len(queue)} left")
                break
            page = queue.popleft()
            name = name_of(page)
            report.pages.append(name)
            problems: list[str] = []
            found = _check_page(driver, page, root, root_uri, problems, report, fragments, name)
            if found is not None and page == index and screenshot is not None:
                _save_screenshot(driver, Path(screenshot), screenshot_height)  # the index is still loaded
            if found is not None and page in shots:
                _save_screenshot(driver, shots.pop(page)[1], page_screenshot_height)
            if found is not None:
                anchors[page], links = found
                for target in links:
                    if target not in queued:
                        queued.add(target)
                        queue.append(target)
            # A nav bar repeats its links; one line per distinct problem on a page is enough.
            report.problems.extend(f"{name}: {p}" for p in dict.fromkeys(problems))
        for name, path in shots.values():
            report.problems.append(f"{name}: no screenshot for {path}: "
                                   "the page was not reached or did not load")
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)

    for name, href, target, fragment in fragments:
        known = anchors.get(target)
        if known is None:
            known = _file_anchors(target)
            anchors[target] = known
        if not _fragment_found(fragment, known):
            report.problems.append(f"{name}: missing fragment: {href} "
                                   f"(no id {unquote(fragment)!r} in {name_of(target)})")
    return report


def _check_page(driver, page: Path, root: Path, root_uri: str, problems: list[str],
                report: SiteReport, fragments: list, name: str) -> tuple[set[str], list[Path]] | None:
    """Load ``page``, note its problems and count what was checked.

    Returns the page's ids and anchor names with the site pages it links to, or None when the
    page could not be read.
    """
    from selenium.common.exceptions import TimeoutException, WebDriverException

    def attempt(call, late: str, failed: str):
        try:
            return call(), True
        except TimeoutException:
            problems.append(f"{late} {PAGE_LOAD_TIMEOUT_S} s")
            _read_console(driver, root_uri, problems)
        except WebDriverException as error:
            problems.append(f"{failed}: {one_line(error.msg or error)}")
        return None, False

    _, opened = attempt(lambda: driver.get(page.as_uri()), "did not load within", "could not be opened")
    if not opened:
        return None
    seen, read = attempt(lambda: driver.execute_async_script(_PAGE_SCRIPT, VERDICTS_ID),
                         "images still loading after", "could not be checked")
    if not read:
        return None
    _check_size(seen, page, name, problems, report)

    def local(ref: str | None, kind: str) -> Path | None:
        """The file ``ref`` names, or None once why it is not one of the site's is noted."""
        if ref is None or not ref.strip():
            problems.append(f"empty {kind} reference")
            return None
        why = _external(ref)
        if why:
            problems.append(f"{why} {kind}: {ref}")
            return None
        path = urlsplit(ref).path
        return (page.parent / unquote(path)).resolve() if path else page

    for kind, refs in (("script", seen["scripts"]), ("stylesheet", seen["stylesheets"]),
                       ("object", seen["objects"]), ("embed", seen["embeds"]),
                       ("iframe", seen["iframes"])):
        for ref in refs:
            if kind in ("object", "embed", "iframe") and _is_data(ref):
                continue
            target = local(ref, kind)
            if target is not None and not target.is_file():
                problems.append(f"missing {kind}: {ref}")

    report.images += len(seen["images"])
    for src, loaded in seen["images"]:
        if not src:
            problems.append("image without src")
        elif (_is_data(src) or local(src, "image") is not None) and not loaded:
            problems.append(f"broken image: {src}")

    report.tables += len(seen["tables"])
    for number, (label, has_data_row) in enumerate(seen["tables"], start=1):
        if not has_data_row:
            label = f" ({label[:60]})" if label else ""
            problems.append(f"empty table: table {number}{label} has no <tr> with <td>")

    report.links += len(seen["links"])
    anchors = set(seen["anchors"])
    links: list[Path] = []
    for href in seen["links"]:
        target = local(href, "link")
        if target is None:
            continue
        if not target.exists():
            problems.append(f"broken link: {href} (no such file)")
            continue
        if target.is_dir():
            # A server would answer with the folder's index.html; file:// shows a bare listing.
            problems.append(f"link to a folder: {href} (file:// shows a listing, not its index.html)")
            continue
        fragment = urlsplit(href).fragment
        is_page = target.suffix.lower() in HTML_SUFFIXES
        if fragment and target == page:
            if not _fragment_found(fragment, anchors):
                problems.append(f"missing fragment: {href} (no id {unquote(fragment)!r} on this page)")
        elif fragment and is_page:
            fragments.append((name, href, target, fragment))
        if is_page and target != page and target.is_relative_to(root):
            links.append(target)

    _read_console(driver, root_uri, problems)
    return anchors, links


def _check_size(seen: dict, page: Path, name: str, problems: list[str], report: SiteReport) -> None:
    """Record the page's size; note a sideways scroll, a page over ten screens, late verdicts."""
    scroll_width, client_width, height = (int(round(v)) for v in seen["size"])
    report.heights[name] = height
    report.widths[name] = scroll_width
    if scroll_width > client_width:
        problems.append(f"wider than the window: {scroll_width} px for {client_width} px "
                        "(the page scrolls sideways; put wide content in a div.scroll)")
    if height > MAX_PAGE_HEIGHT:
        problems.append(f"taller than {MAX_PAGE_HEIGHT // WINDOW[1]} screens: {height:,} px "
                        f"({height / WINDOW[1]:.1f} screens of {WINDOW[1]} px, tables folded)")
    if page.match(EXPERIMENT_PAGE):
        top = seen["verdicts"]
        if top is None:
            problems.append(f"no #{VERDICTS_ID} section: an experiment page opens with its verdicts")
        elif top > WINDOW[1]:
            problems.append(f"#{VERDICTS_ID} starts below the first screen: at {int(top)} px "
                            f"(the window is {WINDOW[1]} px tall)")


def _is_data(ref: str | None) -> bool:
    return bool(ref) and urlsplit(ref).scheme == "data"


def _read_console(driver, root_uri: str, problems: list[str]) -> None:
    # Reading the log empties it, so each page's entries are its own.  The site's own address
    # is cut from messages so that they read the same wherever the site lies.
    for entry in driver.get_log("browser"):
        if entry.get("level") == "SEVERE":
            problems.append(f"console error: {one_line(entry.get('message', '')).replace(root_uri, '')}")


def _save_screenshot(driver, path: Path, max_height: int = MAX_SCREENSHOT_HEIGHT) -> None:
    # The whole page, not just the window: CDP can capture beyond the viewport given a clip.
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    clip = {"x": 0, "y": 0, "scale": 1,
            "width": max(1, min(int(size["width"]), 4 * WINDOW[0])),
            "height": max(1, min(int(size["height"]), max_height, MAX_SCREENSHOT_HEIGHT))}
    shot = driver.execute_cdp_cmd("Page.captureScreenshot",
                                  {"format": "png", "captureBeyondViewport": True, "clip": clip})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def main(argv: list[str] | None = None) -> int:
    """Command line: print one line per problem, then the summary.

    Returns
    -------
    int
        0 when the site is clean, 1 when there are problems, 2 when no browser can be started.
    """
    parser = argparse.ArgumentParser(prog="python -m labeldp_sim.report.site_check",
                                     description="Check a static HTML site in headless Chromium.")
    parser.add_argument("index", type=Path, help="the site's index.html")
    parser.add_argument("--screenshot", type=Path, help="save a full-page PNG of the index here")
    parser.add_argument("--screenshot-height", type=int, default=MAX_SCREENSHOT_HEIGHT,
                        help="crop the screenshot to this many CSS pixels from the top (the README's: 1400)")
    parser.add_argument("--page-screenshot", action="append", default=[], metavar="PAGE=PNG",
                        help="save a PNG of the top of PAGE (relative to the index's folder, e.g. "
                             "site/exp-reg_label_cdp.html) at PNG; repeatable")
    parser.add_argument("--page-screenshot-height", type=int, default=WINDOW[1],
                        help=f"crop page screenshots to this many CSS pixels (default {WINDOW[1]}: the first screen)")
    parser.add_argument("--max-pages", type=int, default=500, help="stop after this many pages")
    args = parser.parse_args(argv)
    if not args.index.is_file():
        parser.error(f"no such file: {args.index}")
    pages: dict[str, Path] = {}
    for spec in args.page_screenshot:
        page, sep, png = spec.partition("=")
        if not (sep and page.strip() and png.strip()):
            parser.error(f"--page-screenshot wants PAGE=PNG, got {spec!r}")
        if not (args.index.parent / page).is_file():
            parser.error(f"--page-screenshot: no such page: {args.index.parent / page}")
        pages[page.strip()] = Path(png.strip())
    reason = browser_available()
    if reason:
        log.error(f"site check: browser unavailable: {reason}")
        return 2
    report = check_site(args.index, screenshot=args.screenshot, max_pages=args.max_pages,
                        screenshot_height=args.screenshot_height, page_screenshots=pages,
                        page_screenshot_height=args.page_screenshot_height)
    for problem in report.problems:
        log.info(problem)
    log.info(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
