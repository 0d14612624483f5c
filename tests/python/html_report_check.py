"""report.html in a real headless Chromium (Debian's `chromium`, installed by scripts/setup.sh):
the page's DOM after its script ran (every figure drawn, or saying why it has no data), the
browser's console (nothing logged: the page logs only when something failed) and a screenshot
decoded with the stdlib (zlib) that must show many colours, not a blank page.

Usage as a script: html_report_check.py REPORT_HTML [SCREENSHOT_PNG]
"""
from __future__ import annotations

import html.parser
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

# The figures report_page.js draws, in order (data-plot names).
PLOTS = ("slowdown", "step_times", "causes", "ledger", "worker_heatmap", "alarms", "worst_ranks")


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "headless Chromium is not installed (scripts/setup.sh installs Debian's chromium)"
    return path


def run_chromium(args: list[str], timeout: float = 90.0) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="sp-chromium-") as profile:
        # --no-sandbox: the tests may run as root (CI containers), where Chromium's sandbox refuses;
        # --disable-dev-shm-usage: containers' /dev/shm is often too small for it.
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


class _Figures(html.parser.HTMLParser):
    """The <figure data-plot> elements' attributes, the <body>'s, the tags seen and the text."""

    def __init__(self):
        super().__init__()
        self.figures: dict[str, dict] = {}
        self.body: dict = {}
        self.texts: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "figure" and "data-plot" in a:
            self.figures[a["data-plot"]] = a
        if tag == "body":
            self.body = a

    def handle_data(self, data):
        self.texts.append(data)


def png_colours(png: bytes, sample: int = 4) -> int:
    """Distinct RGB colours on every `sample`-th row and column of an 8-bit RGB(A) PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is not a PNG"
    pos, idat = 8, b""
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6), f"unexpected PNG format: depth {depth}, colour type {ctype}"
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        _unfilter(kind, line, prev, bpp)
        if y % sample == 0:
            colours.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp * sample))
        prev = line
    return len(colours)


def _unfilter(kind: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    if kind == 1:
        for i in range(bpp, len(line)):
            line[i] = (line[i] + line[i - bpp]) & 255
    elif kind == 2:
        for i in range(len(line)):
            line[i] = (line[i] + prev[i]) & 255
    elif kind == 3:
        for i in range(len(line)):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + (left + prev[i]) // 2) & 255
    elif kind == 4:
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255


def console_lines(stderr: str) -> list[str]:
    """What the page logged (console.*, uncaught errors, refused loads), from Chromium's log."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def check(report_html: Path, screenshot: Path, must_draw: set[str] | None = None) -> dict:
    """Loads the page; every figure must exist and draw (data-items > 0), except those outside
    `must_draw` (default: all), which may instead say why they have no data. Returns the figures'
    attributes, the page's text and the screenshot's colour count."""
    must_draw = set(PLOTS) if must_draw is None else must_draw
    url = Path(report_html).resolve().as_uri()
    dom = run_chromium(["--dump-dom", url])
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not console_lines(dom.stderr), console_lines(dom.stderr)
    parsed = _Figures()
    parsed.feed(dom.stdout)
    assert parsed.body.get("data-rendered") == "yes", "the page's script did not finish"
    for name in PLOTS:
        fig = parsed.figures.get(name)
        assert fig is not None, f"figure {name} missing"
        assert "data-error" not in fig, f"figure {name}: {fig['data-error']}"
        items = int(fig.get("data-items", "0"))
        if name in must_draw:
            assert items > 0, f"figure {name} drew nothing: {fig.get('data-empty')}"
        else:
            assert items > 0 or fig.get("data-empty"), f"figure {name} neither drew nor said why"
    shot = run_chromium(["--hide-scrollbars", "--window-size=1100,2600", f"--screenshot={screenshot}", url])
    assert shot.returncode == 0 and Path(screenshot).is_file(), shot.stderr[-2000:]
    assert not console_lines(shot.stderr), console_lines(shot.stderr)
    colours = png_colours(Path(screenshot).read_bytes())
    # A blank page is one colour; text alone gives a few dozen anti-aliased greys. The plots add
    # the series' and the heatmap's colours, in hundreds.
    assert colours >= 100, f"the screenshot has only {colours} colours"
    return {"figures": parsed.figures, "body": parsed.body, "tags": parsed.tags, "text": "".join(parsed.texts),
            "colours": colours}


if __name__ == "__main__":
    out = check(Path(sys.argv[1]), Path(sys.argv[2] if len(sys.argv) > 2 else os.devnull + ".png"))
    print({k: v.get("data-items") for k, v in out["figures"].items()}, "colours", out["colours"])
