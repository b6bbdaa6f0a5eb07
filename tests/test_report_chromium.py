"""The release report rendered by headless Chromium (Debian's `chromium`): the page loads with no console
message (no error, and no blocked attempt to fetch anything: the page's Content-Security-Policy forbids
every fetch, so one would be logged), the expected elements are in the rendered DOM, and the screenshot
shows the pictures. Without chromium these tests skip; with CI=true (as `.ci/run` runs, which installs
it) they fail instead."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

import sqlanon
from sqlanon.cli import main
from sqlanon.report import COLORS

from test_report import GROUPS, hospital_policy

IN_CI = os.environ.get("CI", "").strip().lower() == "true"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        message = "chromium is not installed (apt-get install chromium)"
        if IN_CI:
            pytest.fail(message + " (CI=true: the report rendering tests must run, not skip)", pytrace=False)
        pytest.skip(message)
    return exe


def browse(chromium: str, page: Path, tmp_path: Path, screenshot: Path | None = None,
           size: str = "1100,2400") -> tuple[str, list[str]]:
    """Load a page in headless Chromium: the rendered DOM (or '' with a screenshot) and the console lines."""
    action = [f"--screenshot={screenshot}", f"--window-size={size}"] if screenshot else ["--dump-dom"]
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    done = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *action, page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


class Elements(HTMLParser):
    """Tags of a DOM with their attributes, and its visible text."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if "id" in a}

    def count(self, tag: str, *classes: str) -> int:
        """Elements `tag` with every one of `classes`."""
        return sum(1 for t, a in self.tags if t == tag and set(classes) <= set((a.get("class") or "").split()))


SECTIONS = {"summary", "chosen", "why", "minimal", "lattice", "lattice-picture", "minimal-levels", "classes",
            "histogram", "privacy", "achieved", "attacks", "attack-table", "utility", "utility-table", "policy"}


def test_the_harness_sees_a_page_that_tries_to_fetch(chromium, tmp_path):
    # the report's own Content-Security-Policy, on a page that references a file: the browser blocks it
    # and logs it, which is what the tests below rely on to prove the report fetches nothing
    page = tmp_path / "fetching.html"
    page.write_text('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src '
                    "'none'; style-src 'unsafe-inline'; img-src data:\"></head><body><p id=\"x\">x</p>"
                    '<img src="file:///nonexistent/picture.png"></body></html>')
    dom, console = browse(chromium, page, tmp_path)
    assert 'id="x"' in dom
    assert console and "Content Security Policy" in " ".join(console)


def test_hospital_report_renders_with_no_console_message(chromium, tmp_path):
    with sqlanon.search_and_choose(hospital_policy(k=2)) as run:
        page = run.report(tmp_path / "hospital.html", groups=GROUPS)
    dom, console = browse(chromium, page, tmp_path)
    assert console == []
    el = Elements(dom)
    assert el.ids() >= SECTIONS
    assert el.count("circle", "node") == 18                      # Hasse diagram: every node of the lattice
    assert el.count("circle", "node", "chosen") == 1 and el.count("circle", "node", "minimal") == 1
    assert el.count("circle", "chosen") == 1 + 4                 # and a dot on each of the four metric strips
    # the Hasse diagram's edges: 3 * 3 * 2 nodes, each with an edge up per attribute not at its top
    assert el.count("line", "edge") == 2 * 3 * 2 + 3 * 2 * 2 + 3 * 3 * 1
    assert el.count("tr", "chosen") == 1 and el.count("tr", "attack") == 3
    assert el.count("table", "examples") == 3
    assert el.count("rect", "bar") == 1                          # one histogram bin: six classes of two


def test_external_report_renders_without_the_exposed_classes(chromium, tmp_path):
    with sqlanon.search_and_choose(hospital_policy(k=2)) as run:
        page = run.report(tmp_path / "external.html", external=True, groups=GROUPS)
    dom, console = browse(chromium, page, tmp_path)
    assert console == []
    el = Elements(dom)
    assert el.ids() >= SECTIONS and "external-note" in el.ids()
    assert el.count("table", "examples") == 0
    assert el.count("span", "masked") >= 8
    text = " ".join(el.text)
    assert "14850" not in text and "13053" not in text


def test_adult_demo_report_renders_and_shows_the_lattice(chromium, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["demo", "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "report: sqlanon_demo.html" in r.output
    page = tmp_path / "sqlanon_demo.html"
    dom, console = browse(chromium, page, tmp_path)
    assert console == []
    el = Elements(dom)
    assert el.ids() >= SECTIONS
    # 4,320 nodes: drawn by level; the 20 minimal nodes circled, one of them chosen
    assert el.count("circle", "node") == 20 and el.count("circle", "node", "chosen") == 1
    assert el.count("polyline", "minimal") == 19 and el.count("polyline", "chosen") == 1
    assert el.count("tr", "attack") == 3                          # homogeneity 100 %, 95 %, similarity
    assert re.search(r"4,320 nodes", " ".join(el.text))
    shot = tmp_path / "demo.png"
    _, console = browse(chromium, page, tmp_path, screenshot=shot)
    assert console == []
    from PIL import Image
    image = Image.open(shot).convert("RGB")
    assert image.size == (1100, 2400)
    colors = image.getcolors(maxcolors=1 << 20)
    chosen = tuple(int(COLORS["chosen"][i:i + 2], 16) for i in (1, 3, 5))
    minimal = tuple(int(COLORS["minimal"][i:i + 2], 16) for i in (1, 3, 5))
    present = {c for _, c in colors}
    assert chosen in present and minimal in present               # the pictures were drawn
    assert len(colors) > 50                                       # text, tables and pictures, not a blank page
