"""The site checker in headless Chromium: a clean site passes, and each kind of fault is caught.

Two tiny sites are built in a temporary folder: a clean one (pages in two folders, PNG and SVG
images, a lazy image below the fold, an ``<object>``, CSS, JS, a table, fragment links, wide
content scrolling in its own ``div.scroll``) and one whose index links to a page per fault (a
page too wide or too tall, an experiment page whose verdicts come late or not at all among
them).  Each site is checked once, in one browser session.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from labeldp_sim.report import site_check
from labeldp_sim.report.site_check import SiteReport, browser_available, check_site

pytestmark = pytest.mark.browser

_REASON = browser_available()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)


def _png(width: int = 4, height: int = 3) -> bytes:
    """A valid RGB PNG, written by hand so that the test needs no image library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80\x40\x20" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" viewBox="0 0 40 20">'
       '<rect width="40" height="20" fill="teal"/></svg>')


def _page(title: str, body: str, head: str = "") -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f"{head}</head>\n<body>\n{body}\n</body></html>\n")


TABLE = ("<table><caption>numbers</caption><thead><tr><th>N</th><th>error</th></tr></thead>"
         "<tbody><tr><td>100</td><td>0.5</td></tr><tr><td>1000</td><td>0.1</td></tr></tbody></table>")


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root / "index.html"


def _good_site(root: Path) -> Path:
    head = '<link rel="stylesheet" href="style.css"><script src="app.js" defer></script>'
    return _write(root, {
        "style.css": "body { font-family: sans-serif; } .spacer { height: 2500px; }",
        "app.js": "document.getElementById('filled').textContent = 'filled by app.js';",
        "fig.png": _png(),
        "fig.svg": SVG,
        "data.csv": "N,error\n100,0.5\n",
        "index.html": _page("index", (
            '<h1 id="intro">Results</h1><p id="filled"></p>'
            '<p><a href="pages/second.html">second</a> <a href="pages/second.html#rates">rates</a> '
            '<a href="#intro">top</a> <a href="data.csv">data</a> <a href="fig.svg">figure</a></p>'
            '<img src="fig.png" alt="png"><img src="fig.svg" alt="svg">'
            '<object data="fig.svg" type="image/svg+xml"></object>' + TABLE
            + '<div class="scroll" style="overflow-x: auto"><div style="width: 3000px">wide</div></div>'
            + '<div class="spacer"></div><img src="fig.png" alt="lazy" loading="lazy">'), head),
        "pages/second.html": _page("second", (
            '<h2 id="rates">Rates</h2><a name="legacy"></a>'
            '<a href="../index.html#intro">back</a> <a href="#legacy">legacy anchor</a>'
            '<img src="../fig.svg" alt="svg">' + TABLE), '<link rel="stylesheet" href="../style.css">'),
    })


# page -> (body, the text its problem line must contain)
FAULTS = {
    "broken_image.html": ('<img src="nothing.png" alt="missing">', "broken image: nothing.png"),
    "missing_link.html": ('<a href="gone.html">gone</a>', "broken link: gone.html"),
    "missing_fragment.html": ('<a href="index.html#nowhere">index</a>',
                              "missing fragment: index.html#nowhere"),
    "missing_local_fragment.html": ('<a href="#not-here">here</a>', "missing fragment: #not-here"),
    "empty_table.html": ("<table><thead><tr><th>N</th></tr></thead><tbody></tbody></table>",
                         "empty table: table 1"),
    "console_error.html": ("<script>console.error('deliberate console error')</script>",
                           "console error:"),
    "thrown.html": ("<script>throw new Error('deliberate exception')</script>",
                    "Uncaught Error: deliberate exception"),
    "external_link.html": ('<a href="https://example.org/report">web</a>',
                           "external link: https://example.org/report"),
    "mailto.html": ('<a href="mailto:someone@example.org">mail</a>', "external link: mailto:"),
    "missing_stylesheet.html": ('<link rel="stylesheet" href="nope.css">', "missing stylesheet: nope.css"),
    "missing_script.html": ('<script src="nope.js"></script>', "missing script: nope.js"),
    "missing_object.html": ('<object data="nope.svg" type="image/svg+xml"></object>',
                            "missing object: nope.svg"),
    "wide.html": ('<div style="width: 3000px">wide</div>', "wider than the window: 30"),
    "tall.html": ('<div style="height: 9500px">tall</div>', "taller than 10 screens: 9,5"),
    "exp-late.html": ('<div style="height: 1000px"></div><section id="verdicts">late</section>',
                      "#verdicts starts below the first screen: at 10"),
    "exp-without.html": ("<p>no verdicts</p>", "no #verdicts section"),
}


def _faulty_site(root: Path) -> Path:
    links = " ".join(f'<a href="{name}">{name}</a>' for name in FAULTS)
    files = {name: _page(name, body) for name, (body, _) in FAULTS.items()}
    return _write(root, {**files, "index.html": _page("index", f"<h1>Faults</h1><p>{links}</p>")})


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    root = tmp_path_factory.mktemp("good")
    shot = root / "shots" / "index.png"
    pages = {"pages/second.html": root / "shots" / "second.png"}
    return check_site(_good_site(root / "site"), screenshot=shot, page_screenshots=pages), shot


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    return check_site(_faulty_site(tmp_path_factory.mktemp("faulty")))


def test_clean_site_passes(good):
    report, _ = good
    assert report.problems == []
    assert report.ok
    assert report.pages == ["index.html", "pages/second.html"]
    assert (report.tables, report.images) == (2, 4)
    assert report.links == 7
    # the wide content scrolls inside its div.scroll: the page itself is the window's width
    assert list(report.heights) == report.pages and report.heights["index.html"] > 2500
    assert all(width <= site_check.WINDOW[0] for width in report.widths.values())
    assert report.tallest(1) == [("index.html", report.heights["index.html"])]
    assert report.summary().startswith("site check: 2 pages, 2 tables, 4 images, 7 links: 0 problems; "
                                       "tallest page index.html: ")


def test_screenshot_is_a_png_of_the_whole_page(good):
    _, shot = good
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    # The spacer makes the page taller than the 900-pixel window: the capture goes beyond it.
    assert width >= 1000 and height > 2500
    # a page's screenshot: its first screen at most, at the window's width
    width, height = struct.unpack(">II", (shot.parent / "second.png").read_bytes()[16:24])
    assert width <= site_check.WINDOW[0] and 0 < height <= site_check.WINDOW[1]


def test_faulty_site_visits_every_page(faulty):
    assert faulty.pages == ["index.html", *FAULTS]
    assert not faulty.ok


@pytest.mark.parametrize("page", list(FAULTS))
def test_each_fault_is_caught(faulty, page):
    expected = FAULTS[page][1]
    lines = [line for line in faulty.problems if line.startswith(f"{page}: ")]
    assert any(expected in line for line in lines), (expected, faulty.problems)


def test_problems_name_only_the_faulty_pages(faulty):
    for line in faulty.problems:
        assert line.split(": ", 1)[0] in FAULTS, line


def test_max_pages_stops_and_says_so(tmp_path):
    report = check_site(_good_site(tmp_path), max_pages=1,
                        page_screenshots={"pages/second.html": tmp_path / "second.png"})
    assert report.pages == ["index.html"]
    assert report.problems == [
        "pages/second.html: not checked: stopped after max_pages=1 pages, 1 left",
        f"pages/second.html: no screenshot for {tmp_path / 'second.png'}: the page was not reached or did not load"]
    assert not (tmp_path / "second.png").exists()


def test_command_line_exit_status(tmp_path, monkeypatch, capsys):
    index = _write(tmp_path, {"index.html": _page("index", "<p>hi</p>")})
    bad = SiteReport(pages=["index.html"], problems=["index.html: broken image: x.png"], images=1)
    monkeypatch.setattr(site_check, "check_site", lambda *args, **kwargs: bad)
    assert site_check.main([str(index)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "index.html: broken image: x.png",
        "site check: 1 page, 0 tables, 1 image, 0 links: 1 problem"]
    monkeypatch.setattr(site_check, "check_site", lambda *args, **kwargs: SiteReport(pages=["index.html"]))
    assert site_check.main([str(index)]) == 0
    seen = {}
    monkeypatch.setattr(site_check, "check_site", lambda *args, **kwargs: seen.update(kwargs) or SiteReport())
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "exp-a.html").write_text(_page("a", "<p>a</p>"))
    assert site_check.main([str(index), "--page-screenshot", "site/exp-a.html=shots/a.png",
                            "--page-screenshot-height", "1200"]) == 0
    assert seen["page_screenshots"] == {"site/exp-a.html": Path("shots/a.png")}
    assert seen["page_screenshot_height"] == 1200
    for bad in ("site/exp-a.html", "=a.png", "site/nothing.html=a.png"):
        with pytest.raises(SystemExit):
            site_check.main([str(index), "--page-screenshot", bad])
    monkeypatch.setattr(site_check, "browser_available", lambda: "no Chromium here")
    assert site_check.main([str(index)]) == 2
    assert "no Chromium here" in capsys.readouterr().err
