"""The credential proxy against a loopback fake upstream: what the upstream receives (the real key
in the provider's style, nothing of the caller's credentials, no hop-by-hop headers), what the
client gets back (statuses, bodies, streams), and the bounds."""

from __future__ import annotations

import hashlib
import http.client
import http.server
import json
import re
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from skill_evals.sandbox import proxy_http
from skill_evals.sandbox.credential_proxy import (
    PLACEHOLDER,
    Credential,
    CredentialProxy,
)
from skill_evals.sandbox.proxy_http import MAX_CONNECTIONS
from tests._fake_upstream import FakeUpstream, Received, send_json

SECRET = "sk-real-" + hashlib.sha256(b"proxy-test").hexdigest()[:24]


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream().start()
    yield fake
    fake.stop()


def _proxy(upstream: FakeUpstream, style: str = "x-api-key", base: str = "/v1") -> CredentialProxy:
    credential = Credential("ANTHROPIC_API_KEY", style, upstream.url + base, None, SECRET)
    return CredentialProxy([credential])


def _split(url: str) -> tuple[int, str]:
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/([0-9a-f]{32})", url)
    assert match, url
    return int(match.group(1)), "/" + match.group(2)


def _request(
    url: str,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    port, prefix = _split(url)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, prefix + path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_the_upstream_gets_the_real_key_and_never_the_callers_credentials(upstream):
    with _proxy(upstream) as proxy:
        url = proxy.url("ANTHROPIC_API_KEY")
        status, _, body = _request(
            url,
            "POST",
            "/messages?beta=true",
            {
                "x-api-key": PLACEHOLDER,
                "Authorization": "Bearer " + PLACEHOLDER,
                "x-goog-api-key": PLACEHOLDER,
                "Proxy-Authorization": "Basic abc",
                "Connection": "keep-alive, X-Private",
                "X-Private": "hop",
                "Keep-Alive": "timeout=5",
                "TE": "trailers",
                "anthropic-version": "2023-06-01",
                "Content-Type": "application/json",
            },
            b'{"model": "m"}',
        )
    assert status == 200 and json.loads(body) == {"path": "/v1/messages?beta=true"}
    (got,) = upstream.received
    assert got.method == "POST" and got.path == "/v1/messages?beta=true"
    assert got.header("x-api-key") == [SECRET]
    assert got.header("authorization") == [] and got.header("x-goog-api-key") == []
    for name in ("proxy-authorization", "x-private", "keep-alive", "te"):
        assert got.header(name) == [], name
    assert got.header("host") == [upstream.url.removeprefix("http://")]
    assert got.header("anthropic-version") == ["2023-06-01"]
    assert got.body == b'{"model": "m"}'
    assert PLACEHOLDER not in json.dumps(got.headers)


@pytest.mark.parametrize(
    ("style", "query", "header", "want_query"),
    [
        ("bearer", "", ("authorization", "Bearer " + SECRET), ""),
        ("x-goog-api-key", "?alt=sse", ("x-goog-api-key", SECRET), "?alt=sse"),
        ("x-goog-api-key", "?key=" + PLACEHOLDER + "&alt=sse", None, "?alt=sse&key=" + SECRET),
        ("key-query", "?alt=sse&key=x", None, "?alt=sse&key=" + SECRET),
        ("key-query", "", None, "?key=" + SECRET),
    ],
)
def test_each_style_sets_the_credential_its_way(upstream, style, query, header, want_query):
    with _proxy(upstream, style, base="") as proxy:
        status, _, _ = _request(proxy.url("ANTHROPIC_API_KEY"), "GET", "/models" + query)
    assert status == 200
    (got,) = upstream.received
    assert got.path == "/models" + want_query
    for name in ("authorization", "x-goog-api-key", "x-api-key"):
        expected = [header[1]] if header and header[0] == name else []
        assert got.header(name) == expected, name


def test_other_paths_and_methods_never_reach_the_upstream(upstream):
    with _proxy(upstream) as proxy:
        url = proxy.url("ANTHROPIC_API_KEY")
        port, prefix = _split(url)
        assert _request(url, "PUT", "/messages")[0] == 405
        assert _request(url, "DELETE", "/messages")[0] == 405
        for path in ("/", "/v1/messages", prefix, "/" + "0" * 32 + "/messages"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", path)
            assert conn.getresponse().status == 404, path
            conn.close()
    assert upstream.received == []


def test_upstream_errors_and_redirects_pass_unchanged(upstream):
    def overloaded(handler: http.server.BaseHTTPRequestHandler, got: Received) -> None:
        send_json(handler, 529, {"type": "error", "error": {"type": "overloaded_error"}})

    def moved(handler: http.server.BaseHTTPRequestHandler, got: Received) -> None:
        handler.send_response(302)
        handler.send_header("Location", "http://127.0.0.1:9/elsewhere")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    upstream.routes["/v1/overloaded"] = overloaded
    upstream.routes["/v1/moved"] = moved
    with _proxy(upstream) as proxy:
        url = proxy.url("ANTHROPIC_API_KEY")
        status, _, body = _request(url, "POST", "/overloaded", body=b"{}")
        assert status == 529 and json.loads(body)["error"]["type"] == "overloaded_error"
        status, headers, _ = _request(url, "GET", "/moved")
        assert status == 302 and headers["Location"] == "http://127.0.0.1:9/elsewhere"
    assert [r.path for r in upstream.received] == ["/v1/overloaded", "/v1/moved"]


def test_an_unreachable_upstream_is_a_502():
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    credential = Credential("OPENAI_API_KEY", "bearer", f"http://127.0.0.1:{port}", None, SECRET)
    with CredentialProxy([credential]) as proxy:
        status, _, body = _request(proxy.url("OPENAI_API_KEY"), "POST", "/chat", body=b"{}")
    assert status == 502
    error = json.loads(body)["error"]
    assert error["type"] == "upstream_unreachable"
    assert error["message"] == (
        f"skill-evals proxy: the model API at http://127.0.0.1:{port} is unreachable "
        "(connection refused)"
    )


def test_server_sent_events_stream_through_before_the_upstream_finishes(upstream):
    release = threading.Event()

    def events(handler: http.server.BaseHTTPRequestHandler, got: Received) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()  # no length: the body ends when the connection does
        handler.close_connection = True
        handler.wfile.write(b"event: message_start\ndata: {}\n\n")
        handler.wfile.flush()
        release.wait(10)  # the rest only once the client has seen the first event
        handler.wfile.write(b"event: message_stop\ndata: {}\n\n")
        handler.wfile.flush()

    upstream.routes["/v1/messages"] = events
    with _proxy(upstream) as proxy:
        port, prefix = _split(proxy.url("ANTHROPIC_API_KEY"))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        started = time.monotonic()
        conn.request("POST", prefix + "/messages", body=b"{}")
        response = conn.getresponse()
        assert response.getheader("Content-Type") == "text/event-stream"
        assert response.getheader("Transfer-Encoding") == "chunked"
        first = response.read1(4096)
        first_event_s = time.monotonic() - started
        release.set()
        rest = response.read()
        conn.close()
    assert first == b"event: message_start\ndata: {}\n\n"
    assert rest == b"event: message_stop\ndata: {}\n\n"
    assert first_event_s < 5  # it came while the upstream was still holding the rest back


def test_one_connection_carries_several_requests(upstream):
    with _proxy(upstream) as proxy:
        port, prefix = _split(proxy.url("ANTHROPIC_API_KEY"))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for n in range(3):
            conn.request("POST", f"{prefix}/messages/{n}", body=b"{}")
            response = conn.getresponse()
            assert response.status == 200
            assert json.loads(response.read()) == {"path": f"/v1/messages/{n}"}
        conn.close()
    assert len(upstream.received) == 3


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_oversized_requests_are_refused_before_anything_is_forwarded(upstream):
    with _proxy(upstream) as proxy:
        port, prefix = _split(proxy.url("ANTHROPIC_API_KEY"))
        too_long = 32 * 1024 * 1024 + 1
        big_body = f"POST {prefix}/messages HTTP/1.1\r\nContent-Length: {too_long}\r\n\r\n"
        assert _raw(port, big_body.encode()).startswith(b"HTTP/1.1 413 ")
        big_head = f"GET {prefix}/models HTTP/1.1\r\nX-Pad: {'a' * 70000}\r\n\r\n"
        assert _raw(port, big_head.encode()).startswith(b"HTTP/1.1 431 ")
        chunked = (
            f"POST {prefix}/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )
        answer = _raw(port, chunked.encode() + b"GET / HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 ") and b"HTTP/1.1 404 " in answer
    assert [r.body for r in upstream.received] == [b"hello world"]


def test_at_most_64_connections_are_served_at_once(upstream):
    with _proxy(upstream) as proxy:
        port, prefix = _split(proxy.url("ANTHROPIC_API_KEY"))
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(MAX_CONNECTIONS)]
        try:
            # Each idle one holds a slot; the next is refused whatever it asks.
            deadline = time.monotonic() + 10
            while True:
                answer = _raw(port, f"GET {prefix}/models HTTP/1.1\r\n\r\n".encode())
                if answer.startswith(b"HTTP/1.1 503 ") or time.monotonic() > deadline:
                    break
            assert answer.startswith(b"HTTP/1.1 503 ")
        finally:
            for sock in idle:
                sock.close()
        # Freed slots serve again.
        deadline = time.monotonic() + 10
        while _request(proxy.url("ANTHROPIC_API_KEY"), "GET", "/models")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_the_child_sees_only_the_placeholder_and_the_proxy_url(upstream, capfd):
    credentials = [
        Credential("ANTHROPIC_API_KEY", "x-api-key", upstream.url, "ANTHROPIC_BASE_URL", SECRET),
        Credential("ANTHROPIC_AUTH_TOKEN", "bearer", upstream.url, "ANTHROPIC_BASE_URL", SECRET),
        Credential("MY_TOKEN", "bearer", upstream.url, None, SECRET),
    ]
    first = CredentialProxy(credentials)
    with first:
        env = first.child_environment()
        _request(env["SKILL_EVALS_PROXY_MY_TOKEN"], "GET", "/models")
    assert first.names == ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "MY_TOKEN"]
    assert env["ANTHROPIC_API_KEY"] == env["ANTHROPIC_AUTH_TOKEN"] == env["MY_TOKEN"] == PLACEHOLDER
    assert env["ANTHROPIC_BASE_URL"] == env["SKILL_EVALS_PROXY_ANTHROPIC_API_KEY"]
    assert set(env) == {
        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "MY_TOKEN", "ANTHROPIC_BASE_URL",
        "SKILL_EVALS_PROXY_ANTHROPIC_API_KEY", "SKILL_EVALS_PROXY_ANTHROPIC_AUTH_TOKEN",
        "SKILL_EVALS_PROXY_MY_TOKEN",
    }  # fmt: skip
    assert SECRET not in json.dumps(env) and SECRET not in repr(credentials)
    prefixes = {_split(v)[1] for k, v in env.items() if k.startswith("SKILL_EVALS_PROXY_")}
    # One prefix per credential (a contained sandbox reaches them all at one address) …
    assert len(prefixes) == 3
    with CredentialProxy(credentials[:1]) as second:
        again = _split(second.child_environment()["ANTHROPIC_BASE_URL"])[1]
    assert again not in prefixes  # … new for the next
    out, err = capfd.readouterr()
    assert out == err == ""  # nothing logged, the key least of all


def test_a_silent_or_endless_upstream_is_cut_off(upstream, monkeypatch):
    monkeypatch.setattr(proxy_http, "IDLE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(proxy_http, "REQUEST_DEADLINE_S", 1.5)
    stop = threading.Event()

    def silent(handler: http.server.BaseHTTPRequestHandler, got: Received) -> None:
        stop.wait(10)

    def endless(handler: http.server.BaseHTTPRequestHandler, got: Received) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        handler.close_connection = True
        while not stop.is_set():
            try:
                handler.wfile.write(b"data: {}\n\n")
                handler.wfile.flush()
            except OSError:
                return
            stop.wait(0.1)

    upstream.routes["/v1/silent"] = silent
    upstream.routes["/v1/endless"] = endless
    try:
        with _proxy(upstream) as proxy:
            port, prefix = _split(proxy.url("ANTHROPIC_API_KEY"))
            started = time.monotonic()
            answer = _raw(port, f"GET {prefix}/silent HTTP/1.1\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 502 ")  # no answer within the idle bound
            started = time.monotonic()
            answer = _raw(port, f"GET {prefix}/endless HTTP/1.1\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 200 ") and answer.count(b"data: {}") >= 3
            assert not answer.endswith(b"0\r\n\r\n")  # cut, not finished
            assert time.monotonic() - started < 8
    finally:
        stop.set()
