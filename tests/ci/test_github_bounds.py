"""The GitHub client against misbehaving servers on 127.0.0.1: redirects never carry the token
to another origin, huge and slow responses are bounded in size and time (a warning, never a
hang), and a hostile event file is a clear message, never a hang or a crash."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from skill_evals.ci import github
from skill_evals.ci.base_commit import event_base
from skill_evals.ci.http import Limits
from skill_evals.ci.summary import MARKER

from .conftest import make_repo, run_cli

TOKEN = "ghs_REDIRECTsecret0987654321"
REPO = "octo/skills"
FAST = Limits(socket_timeout_s=2.0, request_s=1.5, operation_s=3.0, max_body_bytes=10_000)


class Server:
    """A tiny HTTP server whose every request goes to ``handle(handler)``; it records the
    (method, path, Authorization) of each request."""

    def __init__(self, handle: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.requests: list[tuple[str, str, str]] = []
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                outer.requests.append(
                    (self.command, self.path, self.headers.get("Authorization", ""))
                )
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                with contextlib.suppress(OSError):  # the client hung up, as it should
                    handle(self)

            do_GET = do_POST = do_PATCH = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers() -> Iterator[Callable[[Callable[[BaseHTTPRequestHandler], None]], Server]]:
    started: list[Server] = []

    def start(handle: Callable[[BaseHTTPRequestHandler], None]) -> Server:
        started.append(Server(handle))
        return started[-1]

    yield start
    for server in started:
        server.close()


def send_json(h: BaseHTTPRequestHandler, code: int, payload: Any) -> None:
    data = json.dumps(payload).encode()
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def env_for(url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}), encoding="utf-8")
    return {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": url,
        "GITHUB_EVENT_PATH": str(event),
        **extra,
    }


# ------------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("target", ["other-port", "other-host", "other-scheme"])
def test_redirects_never_carry_the_token_elsewhere(
    servers: Any, tmp_path: Path, code: int, target: str
) -> None:
    elsewhere = servers(lambda h: send_json(h, 200, {"login": "mallory"}))
    base = {
        "other-port": elsewhere.url,
        # same address, another host name: still another origin
        "other-host": f"http://localhost:{elsewhere.port}",
        "other-scheme": "https://127.0.0.1:{port}",
    }[target]

    def redirect(h: BaseHTTPRequestHandler) -> None:
        h.send_response(code)
        h.send_header("Location", base.format(port=api.port) + h.path)
        h.send_header("Content-Length", "0")
        h.end_headers()

    api = servers(redirect)
    started = time.monotonic()
    result = github.post_comment(MARKER + "\nx", env_for(api.url, tmp_path), limits=FAST)
    assert result.action == "failed", result
    assert "redirected to another scheme, host or port" in result.message
    assert TOKEN not in result.message
    assert elsewhere.requests == []  # never followed, so the token never left
    assert time.monotonic() - started < 5


def test_same_origin_redirects_are_followed(servers: Any, tmp_path: Path) -> None:
    comments: list[dict[str, Any]] = []

    def handle(h: BaseHTTPRequestHandler) -> None:
        path = h.path.split("?")[0]
        if path.startswith("/old/") and h.command == "GET":
            h.send_response(307)
            h.send_header("Location", h.path[len("/old") :])
            h.send_header("Content-Length", "0")
            h.end_headers()
        elif path == "/user":
            send_json(h, 200, {"login": "bot"})
        elif h.command == "GET":
            send_json(h, 200, comments)
        else:
            comments.append({"id": 1, "user": {"login": "bot"}, "body": MARKER})
            send_json(h, 201, {"id": 1})

    api = servers(handle)
    result = github.post_comment(MARKER, env_for(api.url + "/old", tmp_path), limits=FAST)
    assert result.action == "created", result
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in api.requests)


# ------------------------------------------------------------------------- size and time


def test_a_huge_response_is_refused(servers: Any, tmp_path: Path) -> None:
    def huge(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(50_000))
        h.end_headers()
        h.wfile.write(b"[" + b" " * 49_998 + b"]")

    api = servers(huge)
    result = github.post_comment(MARKER, env_for(api.url, tmp_path), limits=FAST)
    assert result.action == "failed" and "larger than 10000 bytes" in result.message


def test_a_huge_response_without_length_is_cut_while_reading(servers: Any, tmp_path: Path) -> None:
    stop = threading.Event()

    def endless(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        while not stop.is_set():
            h.wfile.write(b" " * 4096)

    api = servers(endless)
    try:
        result = github.post_comment(MARKER, env_for(api.url, tmp_path), limits=FAST)
    finally:
        stop.set()
    assert result.action == "failed" and "larger than 10000 bytes" in result.message


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_server_dripping_bytes_is_cut_at_the_deadline(
    servers: Any, tmp_path: Path, where: str
) -> None:
    """One byte every 0.2 s keeps every socket read well within its timeout; the request's
    own deadline still ends it."""
    stop = threading.Event()

    def drip(h: BaseHTTPRequestHandler) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n"
        if where == "body":
            h.wfile.write(head)
            head = b""
        for byte in head + b"[" * 5000:
            if stop.wait(0.2):
                return
            h.wfile.write(bytes([byte]))

    api = servers(drip)
    started = time.monotonic()
    try:
        result = github.post_comment(MARKER, env_for(api.url, tmp_path), limits=FAST)
    finally:
        stop.set()
    elapsed = time.monotonic() - started
    assert result.action == "failed", result
    assert "no complete answer within 1.5 s" in result.message
    assert elapsed < FAST.request_s + 1.5


def test_the_whole_comment_operation_is_bounded(servers: Any, tmp_path: Path) -> None:
    """Every request answers within its own bound, but pagination never ends: the operation
    bound stops it."""
    stop = threading.Event()
    # Each answer comes far inside its own bound even on a loaded machine; only the endless
    # pagination can reach the operation's.
    limits = Limits(socket_timeout_s=4.0, request_s=3.0, operation_s=3.0, max_body_bytes=10_000)

    def slow_pages(h: BaseHTTPRequestHandler) -> None:
        if h.path == "/user":
            return send_json(h, 200, {"login": "bot"})
        stop.wait(0.2)
        send_json(h, 200, [{"id": i, "user": {"login": "x"}, "body": "y"} for i in range(100)])

    api = servers(slow_pages)
    started = time.monotonic()
    try:
        result = github.post_comment(MARKER, env_for(api.url, tmp_path), limits=limits)
    finally:
        stop.set()
    assert result.action == "failed" and "gave up after 3 s" in result.message, result
    assert len(api.requests) > 3  # several pages were fetched before the operation bound
    assert time.monotonic() - started < limits.operation_s + limits.request_s + 1


def test_a_non_http_api_url_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("[]", encoding="utf-8")
    result = github.post_comment(MARKER, env_for(f"file://{tmp_path}", tmp_path))
    assert result.action == "skipped" and "not an http(s) URL" in result.message


# ------------------------------------------------------------------------------ event file


def _hostile_events(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "event.fifo"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text('{"pull_request": ' + "[" * 100_000 + "]" * 100_000 + "}", "utf-8")
    nested = tmp_path / "nested.json"  # parses, but deeper than any event is
    nested.write_text('{"a": ' + "[" * 500 + "]" * 500 + "}", "utf-8")
    nan = tmp_path / "nan.json"
    nan.write_text('{"pull_request": {"number": NaN}}', "utf-8")
    huge = tmp_path / "huge.json"
    with huge.open("wb") as fh:
        fh.truncate(30_000_000)  # sparse: no time spent writing it
    return {
        "/dev/zero": Path("/dev/zero"),
        "fifo": fifo,
        "deep": deep,
        "nested": nested,
        "nan": nan,
        "huge": huge,
        "directory": tmp_path,
    }


def test_hostile_event_files_are_a_message_never_a_hang(tmp_path: Path) -> None:
    for label, path in _hostile_events(tmp_path).items():
        env = {"GITHUB_EVENT_PATH": str(path), "GITHUB_EVENT_NAME": "pull_request"}
        event, problem = github.read_event(env)
        assert event is None and problem is not None and str(path) in problem, label
        assert event_base(env) == (None, problem)
        result = github.post_comment(
            MARKER, {**env, "GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": REPO}
        )
        assert result.action == "skipped" and str(path) in result.message, label


def test_ci_with_a_hostile_event_file_warns_and_goes_on(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",))
    events = _hostile_events(tmp_path)
    for label in ("fifo", "deep", "/dev/zero"):
        env = {"GITHUB_EVENT_PATH": str(events[label]), "GITHUB_EVENT_NAME": "pull_request"}
        done = run_cli(["changed"], repo, env, timeout=60)
        assert done.returncode == 0, (label, done.stderr)
        assert str(events[label]) in done.stderr and "base is unknown" in done.stderr
        assert done.stdout.splitlines() == ["skills/alpha"]  # every skill, as without an event
        assert "Traceback" not in done.stderr
