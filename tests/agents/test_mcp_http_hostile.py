"""`skill-evals mcp-serve --http` against hostile clients, over raw sockets: malformed or
conflicting headers, slow and idle connections, more connections than the server serves at once,
clients that never read, and a small open-file limit. Timeouts are shortened through
`HttpLimits`, so each test takes well under a few seconds."""

from __future__ import annotations

import http.client
import json
import re
import resource
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents.mcp_server import HttpLimits, SkillHTTPServer, SkillServer
from skill_evals.agents.mcp_server import make_http_server as _make_http_server
from skill_evals.agents.mcp_server.connections import ConnectionSlots
from tests.conftest import write_skill

INIT = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
).encode()
SERVE = [sys.executable, "-m", "skill_evals", "mcp-serve"]
FAST = {"idle_timeout": 2.0, "request_timeout": 0.5, "write_timeout": 0.5, "queue_timeout": 0.2}

Start = Callable[..., SkillHTTPServer]


@pytest.fixture
def skill_server(tmp_path: Path) -> SkillServer:
    return SkillServer.from_dirs([write_skill(tmp_path, "refund-policy")])


@pytest.fixture
def start(skill_server: SkillServer) -> Iterator[Start]:
    """Start an in-process server with the given limits (FAST unless overridden)."""
    running: list[tuple[SkillHTTPServer, threading.Thread]] = []

    def run(server: SkillServer | None = None, **limits: Any) -> SkillHTTPServer:
        httpd = _make_http_server(
            server or skill_server, "127.0.0.1", 0, HttpLimits(**{**FAST, **limits})
        )
        thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        running.append((httpd, thread))
        return httpd

    yield run
    for httpd, thread in running:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _address(httpd: SkillHTTPServer) -> tuple[str, int]:
    return "127.0.0.1", httpd.server_address[1]


def _head(length: str | None = None, extra: str = "", target: str = "/mcp") -> bytes:
    lines = [
        f"POST {target} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Accept: application/json",
    ]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode("utf-8")


def _exchange(address: tuple[str, int], data: bytes, timeout: float = 5.0) -> tuple[int, bytes]:
    """Send raw bytes, half-close, read to EOF: (status, body). The server must close the
    connection in time (the socket timeout fails the test otherwise)."""
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        received = _read_to_eof(sock)
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def _read_to_eof(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _ok(address: tuple[str, int]) -> None:
    """A legitimate request still gets its answer."""
    conn = http.client.HTTPConnection(*address, timeout=15)
    try:
        conn.request("POST", "/mcp", INIT, {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["result"]["protocolVersion"] == "2025-06-18"
    finally:
        conn.close()


# ------------------------------------------------------------------------ strict headers


@pytest.mark.parametrize(
    "length",
    ["²", "٣", "+5", "-1", "5_0", "0x5", "1e1", "5, 5", "", " 5 5", "５"],
)
def test_content_length_must_be_ascii_digits(start: Start, length: str) -> None:
    httpd = start()
    status, body = _exchange(_address(httpd), _head(length) + INIT)
    assert status == 400
    assert json.loads(body)["error"]["message"].startswith("Bad Request: Content-Length")
    _ok(_address(httpd))


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ("Content-Length: 5\r\nContent-Length: 6\r\n", 400),
        ("Content-Length: 99999999999999999999999999\r\n", 413),
        ("Content-Length: 1001\r\n", 413),  # max_body_bytes below
        ("Transfer-Encoding: chunked\r\n", 411),
        ("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400),
        ("Host: other.example\r\nContent-Length: 0\r\n", 400),  # a second Host
        ("Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\nContent-Length: 0\r\n", 400),
        ("Origin: http://localhost\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n", 400),
    ],
)
def test_conflicting_or_oversized_headers_are_refused(
    start: Start, extra: str, status: int
) -> None:
    httpd = start(max_body_bytes=1000)
    got, body = _exchange(_address(httpd), _head(extra=extra))  # no body: it is never read
    assert got == status
    assert json.loads(body)["error"]["code"] in (-32600, -32000)
    _ok(_address(httpd))


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_content_length_is_strict_for_every_method(start: Start, method: str) -> None:
    httpd = start()
    request = f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ²\r\n\r\n"
    status, _ = _exchange(_address(httpd), request.encode("utf-8"))
    assert status == 400
    _ok(_address(httpd))


def test_repeated_identical_content_length_is_accepted(start: Start) -> None:
    httpd = start()
    extra = f"Content-Length: {len(INIT)}\r\n"
    status, body = _exchange(_address(httpd), _head(str(len(INIT)), extra) + INIT)
    assert status == 200 and json.loads(body)["id"] == 1


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"POST /mcp HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n", 505),
        (b"POST //[ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", 404),
        (b"POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400),  # no Host
        (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", 431),
        (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X: a\r\n" * 150 + b"\r\n", 431),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
        (b"BREW /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501),
        (b"GET /mcp\r\n", 400),  # HTTP/0.9
        (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n folded: header\r\n\r\n", 400),
    ],
)
def test_malformed_requests_get_a_json_error_and_the_server_goes_on(
    start: Start, request_bytes: bytes, status: int
) -> None:
    httpd = start()
    got, body = _exchange(_address(httpd), request_bytes)
    assert got == status
    assert "error" in json.loads(body)
    _ok(_address(httpd))


@pytest.mark.parametrize("body", [b"[" * 200_000, b"\xff\xfe", b'{"id": NaN}', b"7"])
def test_malformed_body_is_a_jsonrpc_error_and_keep_alive_goes_on(
    start: Start, body: bytes
) -> None:
    httpd = start()
    conn = http.client.HTTPConnection(*_address(httpd), timeout=5)
    try:
        conn.request("POST", "/mcp", body, {"Content-Type": "application/json"})
        first = conn.getresponse()
        assert first.status == 400
        assert json.loads(first.read())["error"]["code"] in (-32700, -32600)
        conn.request("POST", "/mcp", INIT, {"Content-Type": "application/json"})
        second = conn.getresponse()
        assert second.status == 200 and json.loads(second.read())["id"] == 1
        assert second.getheader("Keep-Alive") == "timeout=2"  # FAST idle_timeout
    finally:
        conn.close()


def test_control_characters_in_the_request_never_reach_the_log_raw(
    start: Start, capsys: pytest.CaptureFixture[str]
) -> None:
    httpd = start()
    status, _ = _exchange(
        _address(httpd), b"GET /\x1b[31mred\x07 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    assert status == 404
    err = capsys.readouterr().err
    assert "\\u001b[31mred\\u0007" in err
    assert "\x1b" not in err and "\x07" not in err


# ------------------------------------------------------------------------------ timeouts


def _trickle(sock: socket.socket, data: bytes, every: float, limit: float) -> tuple[bytes, float]:
    """Send ``data`` one byte every ``every`` seconds until the server answers or closes;
    returns what it sent back and how long that took."""
    started = time.monotonic()
    for byte in data:
        readable, _, _ = select.select([sock], [], [], every)
        if readable or time.monotonic() - started > limit:
            break
        try:
            sock.send(bytes([byte]))
        except OSError:
            break
    sock.settimeout(limit)
    try:
        received = _read_to_eof(sock)
    except ConnectionResetError:
        received = b""
    return received, time.monotonic() - started


@pytest.mark.parametrize("slow_part", ["head", "body"])
def test_a_trickled_request_is_cut_off_at_the_request_deadline(
    start: Start, slow_part: str
) -> None:
    httpd = start(request_timeout=0.5)
    request = _head(str(len(INIT))) + INIT
    split = len(_head(str(len(INIT)))) if slow_part == "body" else 5
    with socket.create_connection(_address(httpd), timeout=5) as sock:
        sock.sendall(request[:split])
        received, took = _trickle(sock, request[split:], every=0.1, limit=5)
    assert received.startswith(b"HTTP/1.1 408 ")
    assert took < 4  # not per byte (that would take 9 s or more): the whole request had 0.5 s
    _ok(_address(httpd))


def test_an_idle_connection_is_closed(start: Start) -> None:
    httpd = start(idle_timeout=0.3)
    started = time.monotonic()
    with socket.create_connection(_address(httpd), timeout=5) as sock:
        assert sock.recv(1) == b""  # closed by the server, with nothing sent
    assert time.monotonic() - started < 3


def test_an_idle_keep_alive_connection_is_closed_after_a_response(start: Start) -> None:
    httpd = start(idle_timeout=0.3)
    with socket.create_connection(_address(httpd), timeout=5) as sock:
        sock.sendall(_head(str(len(INIT))) + INIT)
        received = _read_to_eof(sock)  # the response, then the close
    assert received.startswith(b"HTTP/1.1 200 ")


# --------------------------------------------------------------------------- connections


@pytest.mark.parametrize("held_with", [b"", b"POST /mcp HTTP/1.1\r\nHost: 127"])
def test_held_connections_cannot_lock_out_a_legitimate_client(
    start: Start, held_with: bytes
) -> None:
    httpd = start(max_connections=3, idle_timeout=30, request_timeout=30)
    threads_before = threading.active_count()
    held = [socket.create_connection(_address(httpd), timeout=5) for _ in range(20)]
    try:
        for sock in held:
            sock.sendall(held_with)
        started = time.monotonic()
        _ok(_address(httpd))
        assert time.monotonic() - started < 10  # not after the 30 s timeouts
        assert len(httpd.slots) <= 3
        assert threading.active_count() <= threads_before + 3
    finally:
        for sock in held:
            sock.close()


def test_a_client_that_never_reads_is_dropped_at_the_write_deadline(
    start: Start, tmp_path: Path
) -> None:
    big = SkillServer.from_dirs([write_skill(tmp_path / "big", "big", body="x" * 12_000_000)])
    # The write deadline leaves the busy slot time enough for the second client to be refused
    # on a loaded machine (at 0.5 s the slot was sometimes freed first, and the client served).
    httpd = start(big, max_connections=1, write_timeout=2, queue_timeout=0.1)
    call = json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "load_big_skill"}}
    ).encode()
    sid = _session_id(_address(httpd))
    # The session's own connection keeps the only slot until its thread sees the close; a
    # client arriving before then is refused, and the slot later taken by the next one.
    _wait_until(lambda: len(httpd.slots) == 0)
    with socket.socket() as stuck:
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.connect(_address(httpd))
        stuck.sendall(_head(str(len(call)), f"Mcp-Session-Id: {sid}\r\n") + call)
        _wait_until(lambda: _busy(httpd))  # the only slot is answering, and blocked
        status, body = _exchange(_address(httpd), _head("0"))
        assert status == 503 and b"too many connections" in body
        _wait_until(lambda: len(httpd.slots) == 0, timeout=10)  # the write deadline freed it
    _ok(_address(httpd))


def _session_id(address: tuple[str, int]) -> str:
    conn = http.client.HTTPConnection(*address, timeout=5)
    try:
        conn.request("POST", "/mcp", INIT, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.headers["Mcp-Session-Id"]
    finally:
        conn.close()


def _busy(httpd: SkillHTTPServer) -> bool:
    return len(httpd.slots) == 1 and not httpd.slots.any_waiting()


def _wait_until(condition: Callable[[], bool], timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_slots_evict_the_longest_waiting_connection_and_refuse_when_all_answer() -> None:
    slots = ConnectionSlots(cap=2)
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        (a, a_peer), (b, b_peer), (c, _) = pairs
        assert slots.admit(a, wait=0) and slots.admit(b, wait=0)
        slots.set_waiting(b, False)  # b is being answered; a waits for its client
        admitted: list[bool] = []
        newcomer = threading.Thread(target=lambda: admitted.append(slots.admit(c, wait=5)))
        newcomer.start()
        a_peer.settimeout(5)
        assert a_peer.recv(1) == b""  # a was shut down for the newcomer
        slots.release(a)  # what a's thread does once its read returns
        newcomer.join(timeout=5)
        assert admitted == [True] and len(slots) == 2
        slots.set_waiting(c, False)
        started = time.monotonic()
        assert not slots.admit(socket.socket(), wait=0.1)  # everyone is being answered
        assert time.monotonic() - started < 2
        b_peer.settimeout(0)
        with pytest.raises(BlockingIOError):
            b_peer.recv(1)  # b, busy, was never touched
    finally:
        for pair in pairs:
            for sock in pair:
                sock.close()


def test_connection_cap_stays_below_the_open_file_limit() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert HttpLimits(max_connections=10**6).connection_cap() <= soft - 16


def test_legitimate_request_is_served_under_ulimit_128(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "refund-policy")
    log_path = tmp_path / "server.log"

    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [*SERVE, "--skill", str(skill), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            preexec_fn=limit_files,
        )
    held: list[socket.socket] = []
    try:
        _wait_until(lambda: "http://" in log_path.read_text() or proc.poll() is not None, 30)
        found = re.search(r"127\.0\.0\.1:(\d+)/mcp", log_path.read_text())
        assert found, log_path.read_text()
        address = ("127.0.0.1", int(found.group(1)))
        for _ in range(200):  # more idle connections than the server has descriptors
            held.append(socket.create_connection(address, timeout=5))
        started = time.monotonic()
        _ok(address)
        assert time.monotonic() - started < 10  # not after the 30 s idle timeout
        threads = _threads_of(proc.pid)
        assert threads is None or threads <= 32 + 4
        assert proc.poll() is None
    finally:
        for sock in held:
            sock.close()
        proc.terminate()
        proc.wait(timeout=10)
    assert "Traceback" not in log_path.read_text()


def _threads_of(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^Threads:\s+(\d+)", status, re.MULTILINE)
    return int(found.group(1)) if found else None


def test_server_close_ends_live_connections(start: Start) -> None:
    httpd = start(idle_timeout=30)
    with socket.create_connection(_address(httpd), timeout=5) as sock:
        _wait_until(lambda: len(httpd.slots) == 1)
        httpd.shutdown()
        httpd.server_close()
        assert sock.recv(1) == b""
