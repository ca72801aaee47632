"""report.html: self-contained, escaped, and rendered by a real browser (headless Chromium)."""

from __future__ import annotations

import functools
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from skill_evals.report.html import render_html

from .test_gate import HOSTILE_IDS, hostile_report

CHROMIUM = next(
    (
        found
        for name in ("chromium", "chromium-browser", "google-chrome")
        if (found := shutil.which(name))
    ),
    "/usr/bin/chromium",
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def test_self_contained_and_escaped(passing_run: dict[str, Any]) -> None:
    page = render_html(hostile_report(passing_run))
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "<script" not in page.lower()  # no script at all, ours or injected
    assert "<img" not in page.lower() and "<link" not in page.lower()
    # inside tags (user text is escaped, so every tag is ours) only in-page anchors link
    assert not re.search(r"""<[^>]*\b(?:src|href)\s*=\s*(?!["']#)""", page)
    assert "url(" not in page and "@import" not in page
    for hostile in HOSTILE_IDS:
        assert html.escape(hostile, quote=True) in page
    assert "&lt;img src=x onerror=alert(2)&gt;|`x`" in page
    assert "&lt;/details&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in page


def test_report_html_has_per_case_detail(passing_run: dict[str, Any]) -> None:
    page = (passing_run["out"] / "report.html").read_text(encoding="utf-8")
    report = json.loads((passing_run["out"] / "report.json").read_text(encoding="utf-8"))
    evaluated = next(s for s in report["skills"] if s["status"] == "evaluated")
    for case in evaluated["report"]["caseResults"]:
        assert f"<code>{html.escape(case['id'])}</code>" in page
    assert "Per-case detail (14 cases)" in page
    assert "Simulated runner" in page
    assert 'class="fill-with" style="width:100.0%"' in page


def _chromium(args: list[str], profile: Path, timeout: float = 120) -> str:
    # Chromium binds its singleton socket under TMPDIR, and a socket path holds at most 107
    # bytes: under a long TMPDIR it gets a short private one of its own (removed after).
    short = tempfile.mkdtemp(prefix="se-chromium-", dir="/tmp")
    try:
        done = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, "TMPDIR": short},
        )
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def served(tmp_path: Path, passing_run: dict[str, Any]) -> Iterator[tuple[str, list[str]]]:
    """report.html (hostile variant) served from 127.0.0.1, every request path logged."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "report.html").write_text(render_html(hostile_report(passing_run)), "utf-8")
    requests: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            requests.append(self.path)
            super().do_GET()

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=site))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/report.html", requests
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
def test_renders_in_chromium_without_external_requests(
    served: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, requests = served
    dom = _chromium(["--dump-dom", url], tmp_path / "profile")
    # the browser parsed it into the document we meant: hostile strings stayed text
    assert "<h1>skill-evals" in dom and "Per-case detail" in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "<script" not in dom.lower() and "<img" not in dom.lower()
    # only the page itself (and the browser's own favicon probe) was requested
    assert requests and set(requests) <= {"/report.html", "/favicon.ico"}


@pytest.mark.browser
def test_screenshot_from_file(passing_run: dict[str, Any], tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    _chromium(
        [
            f"--screenshot={shot}",
            "--window-size=1200,1600",
            (passing_run["out"] / "report.html").as_uri(),
        ],
        tmp_path / "profile",
    )
    assert shot.is_file() and shot.stat().st_size > 10_000
