"""Requests shaped to break the proxies' reading: oversized or too many header lines, bare line
feeds that one reader would split and another not (a header smuggled past the egress proxy to
the credential proxy), both body framings at once, huge or odd chunk sizes, lengths that lie,
and heads or bodies that trickle in forever. Each is sent to the egress proxy's channel (with
the real credential proxy and a loopback fake upstream behind it) or to the credential proxy
directly; every answer comes from the proxy itself, bounded in size and time."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from skill_evals.sandbox import egress, egress_wire, proxy_http, proxy_request
from skill_evals.sandbox.behaviour import BehaviourLog, recording
from skill_evals.sandbox.credential_proxy import Credential, CredentialProxy
from skill_evals.sandbox.egress import EgressProxy
from skill_evals.sandbox.network_policy import NetworkPolicy
from skill_evals.sandbox.usage import Meter
from tests._fake_upstream import FakeUpstream

SECRET = "sk-bounds-" + "5" * 24


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    """A fake model upstream, a credential proxy for it, and a second loopback server nothing
    may reach (shared by the tests: each gets its own egress channel)."""
    upstream, other = FakeUpstream().start(), FakeUpstream().start()
    meter = Meter(max_tokens=10)
    credential = Credential("ANTHROPIC_API_KEY", "x-api-key", upstream.url + "/v1", None, SECRET)
    proxy = CredentialProxy([credential], meter)
    proxy.start()
    port = int(proxy.url("ANTHROPIC_API_KEY").split(":")[2].split("/")[0])
    yield {"upstream": upstream, "other": other, "proxy": proxy, "meter": meter, "port": port,
           "prefix": next(iter(proxy.routes()))}  # fmt: skip
    proxy.close()
    upstream.stop()
    other.stop()


@pytest.fixture
def stack(servers: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The servers and a fresh egress channel (model network) routing to the proxy."""
    servers["upstream"].received.clear()
    servers["upstream"].routes.clear()
    egress_proxy = EgressProxy(NetworkPolicy("model"), servers["proxy"].routes(), servers["meter"])
    with recording(BehaviourLog()):
        channel = egress_proxy.channel("runner")
    yield {**servers, "channel": channel}
    channel.close()


def _talk(
    address: Any,
    raw: bytes,
    pieces: list[bytes] | None = None,
    gap: float = 0,
    timeout: float = 10,
) -> bytes:
    """Send ``raw`` (then each of ``pieces`` ``gap`` seconds apart) and read the answer until
    the proxy closes; b"" when it cut the connection without one."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    with socket.socket(family) as sock:
        sock.settimeout(timeout)
        sock.connect(address)
        try:
            sock.sendall(raw)
            for piece in pieces or []:
                time.sleep(gap)
                sock.sendall(piece)
        except OSError:
            pass
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except OSError:
            pass
    return data


def _both(stack: dict[str, Any]) -> list[tuple[Any, str]]:
    """The egress channel and the credential proxy, each with the model path to use."""
    path = f"/{stack['prefix']}/messages"
    return [(stack["channel"].path, path), (("127.0.0.1", stack["port"]), path)]


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        (b"X-Big: " + b"a" * 70_000 + b"\r\n", b"431"),
        (b"".join(b"X-%d: v\r\n" % i for i in range(150)), b"431"),
        (b"Foo: x\nX-Skill-Evals-Invocation: forged\r\n", b"400"),
        (b"Foo: x\rX-Other: y\r\n", b"400"),
        (b"Foo: x\x00y\r\n", b"400"),
        (b" folded: continuation\r\n", b"400"),
        (b"Bad Name: v\r\n", b"400"),
        (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", b"400"),
        (b"Content-Length: 5\r\nContent-Length: 6\r\n", b"400"),
        (b"Content-Length: \xb2\r\n", b"400"),
        (b"Content-Length: +5\r\n", b"400"),
        (b"Transfer-Encoding: gzip, chunked\r\n", b"501"),
    ],
)
def test_malformed_heads_are_answered_by_the_proxy_and_never_forwarded(
    stack: dict[str, Any], extra: bytes, status: bytes
) -> None:
    for address, path in _both(stack):
        raw = b"POST %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path.encode(), extra)
        answer = _talk(address, raw)
        assert answer.startswith(b"HTTP/1.1 " + status), (address, answer[:60])
    assert stack["upstream"].received == []
    # The proxy still serves the next request.
    answer = _talk(stack["channel"].path, b"GET /%s/ok HTTP/1.1\r\n\r\n" % stack["prefix"].encode())
    assert answer.startswith(b"HTTP/1.1 200"), answer[:60]


def test_a_smuggled_mark_cannot_escape_the_token_budget(stack: dict[str, Any]) -> None:
    channel = stack["channel"]
    stack["meter"].add(channel.token, (20, 20))  # the invocation has spent its budget
    prefix = stack["prefix"].encode()
    plain = _talk(channel.path, b"POST /%s/m HTTP/1.1\r\nContent-Length: 0\r\n\r\n" % prefix)
    assert plain.startswith(b"HTTP/1.1 429")
    smuggled = b"POST /%s/m HTTP/1.1\r\nA: b\n\nX-Skill-Evals-Invocation: x\r\n\r\n" % prefix
    assert _talk(channel.path, smuggled).startswith(b"HTTP/1.1 400")
    assert stack["upstream"].received == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"fffffffffffffff\r\n", b"413"),
        (b"1" + b"0" * 30 + b"\r\n", b"400"),
        (b"0x10\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", b"400"),
        (b"1_0\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", b"400"),
        (b"-0\r\n\r\n", b"400"),
        (b"4\nabcd\r\n0\r\n\r\n", b"400"),
        (b"4\r\nabcdXX0\r\n\r\n", b"400"),
    ],
)
def test_chunk_sizes_are_hex_digits_within_the_bound(
    stack: dict[str, Any], body: bytes, status: bytes
) -> None:
    for address, path in _both(stack):
        head = b"POST %s HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" % path.encode()
        answer = _talk(address, head + body)
        assert answer.startswith(b"HTTP/1.1 " + status), (address, answer[:60])


def test_a_chunked_upload_stops_at_the_body_bound(
    stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proxy_request, "MAX_BODY_BYTES", 1 << 20)
    chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"
    for address, path in _both(stack):
        head = b"POST %s HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" % path.encode()
        answer = _talk(address, head, [chunk] * 17 + [b"0\r\n\r\n"])
        assert answer.startswith(b"HTTP/1.1 413"), (address, answer[:60])
    assert all(len(got.body) <= 1 << 20 for got in stack["upstream"].received)
    # Within the bound the same upload passes whole.
    head = b"POST /%s/m HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" % stack["prefix"].encode()
    answer = _talk(stack["channel"].path, head, [chunk] * 4 + [b"0\r\n\r\n"])
    assert answer.startswith(b"HTTP/1.1 200")
    assert len(stack["upstream"].received[-1].body) == 4 * 0x10000


def test_a_body_shorter_than_its_length_is_a_400(stack: dict[str, Any]) -> None:
    for address, path in _both(stack):
        raw = b"POST %s HTTP/1.1\r\nContent-Length: 100\r\n\r\n0123456789" % path.encode()
        with socket.socket(socket.AF_UNIX if isinstance(address, str) else socket.AF_INET) as s:
            s.settimeout(10)
            s.connect(address)
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)
            answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 400"), (address, answer[:60])


@pytest.mark.parametrize("where", ["egress", "credential"])
def test_a_head_that_never_ends_is_cut(
    stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.setattr(egress_wire, "HEAD_DEADLINE_S", 0.6)
    monkeypatch.setattr(proxy_http, "HEAD_DEADLINE_S", 0.6)
    address = stack["channel"].path if where == "egress" else ("127.0.0.1", stack["port"])
    started = time.monotonic()
    raw = b"POST /%s/m HTTP/1.1\r\n" % stack["prefix"].encode()
    answer = _talk(address, raw, [b"X-Slow: 1\r\n"] * 80, gap=0.1)  # 8 s unless cut
    assert time.monotonic() - started < 5  # though each line came within the idle time
    assert answer in (b"",) or answer.startswith(b"HTTP/1.1 408"), answer[:60]
    assert stack["upstream"].received == []


def test_a_body_that_trickles_in_is_cut(
    stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proxy_http, "REQUEST_DEADLINE_S", 0.6)
    head = b"POST /%s/m HTTP/1.1\r\nContent-Length: 90\r\n\r\n" % stack["prefix"].encode()
    started = time.monotonic()
    _talk(("127.0.0.1", stack["port"]), head, [b"a"] * 45, gap=0.2)  # 9 s unless cut
    assert time.monotonic() - started < 5
    assert stack["upstream"].received == [] or len(stack["upstream"].received[0].body) < 90


def test_the_key_goes_to_the_model_host_only(stack: dict[str, Any]) -> None:
    other = stack["other"]
    other_port = other.url.rsplit(":", 1)[1]
    stack["upstream"].routes["/v1/redirect"] = lambda handler, got: _redirect(handler, other.url)
    path = stack["channel"].path
    prefix = stack["prefix"]
    answers = [
        # A Host of another server on the model's route: the upstream's own Host is set.
        _talk(path, f"GET /{prefix}/x HTTP/1.1\r\nHost: 127.0.0.1:{other_port}\r\n\r\n".encode()),
        # A redirect is handed back, never followed.
        _talk(path, f"GET /{prefix}/redirect HTTP/1.1\r\n\r\n".encode()),
        # Another host in absolute form, or the model's route on it: refused.
        _talk(path, f"GET {other.url}/{prefix}/x HTTP/1.1\r\n\r\n".encode()),
        _talk(path, f"CONNECT 127.0.0.1:{other_port} HTTP/1.1\r\n\r\n".encode()),
        _talk(path, f"CONNECT 127.0.0.1:{stack['port']} HTTP/1.1\r\n\r\n".encode()),
    ]
    assert [a.split(b" ", 2)[1] for a in answers] == [b"200", b"302", b"403", b"403", b"403"]
    assert other.received == []
    received = stack["upstream"].received
    assert [r.header("Host") for r in received] == [[stack["upstream"].url[7:]]] * 2
    assert all(r.header("x-api-key") == [SECRET] for r in received)
    assert all(SECRET.encode() not in a for a in answers)


def _redirect(handler: Any, location: str) -> None:
    handler.send_response(302)
    handler.send_header("Location", location + "/steal")
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def _echo_key(handler: Any, got: Any) -> None:
    """An upstream that repeats the key it got: in a header, split across two body writes."""
    key = got.header("x-api-key")[0]
    body = f'{{"error": "bad key {key}", "again": "{key}"}}'.encode()
    handler.send_response(400)
    handler.send_header("Location", f"http://example.invalid/?key={key}")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body[:20])
    handler.wfile.flush()
    time.sleep(0.05)
    handler.wfile.write(body[20:])


def test_a_key_the_upstream_repeats_never_reaches_the_sandbox(stack: dict[str, Any]) -> None:
    stack["upstream"].routes["/v1/echo"] = _echo_key
    request = b"GET /%s/echo HTTP/1.1\r\n\r\n" % stack["prefix"].encode()
    answer = _talk(stack["channel"].path, request)
    assert SECRET.encode() not in answer
    head, _, body = answer.partition(b"\r\n\r\n")
    masked = b"*" * len(SECRET)
    assert b"Location: http://example.invalid/?key=" + masked in head
    assert body == b'{"error": "bad key %s", "again": "%s"}' % (masked, masked)
    assert b"Content-Length: %d" % len(body) in head
    assert stack["upstream"].received[0].header("x-api-key") == [SECRET]  # it was used


def test_the_run_holds_a_bounded_number_of_connections_whatever_the_sandboxes(
    servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(egress, "MAX_RUN_CONNECTIONS", 3)
    proxy = EgressProxy(NetworkPolicy("model"), servers["proxy"].routes(), servers["meter"])
    with recording(BehaviourLog()):
        first, second = proxy.channel("runner"), proxy.channel("setup")
    held = []
    try:
        for path in (first.path, first.path, second.path):  # idle: no head sent yet
            sock = socket.socket(socket.AF_UNIX)
            sock.connect(path)
            held.append(sock)
        time.sleep(0.3)
        answer = _talk(second.path, b"")
        assert answer.startswith(b"HTTP/1.1 503"), answer[:60]
        assert b"too many connections in flight" in answer
        held.pop().close()
        time.sleep(0.3)
        answer = _talk(second.path, b"GET /nothing/here HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 404"), answer[:60]
    finally:
        for sock in held:
            sock.close()
        first.close()
        second.close()


def test_one_sandbox_cannot_take_every_model_connection(
    servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(egress, "MODEL_REQUESTS", 2)
    proxy = EgressProxy(NetworkPolicy("model"), servers["proxy"].routes(), servers["meter"])
    with recording(BehaviourLog()):
        hostile, other = proxy.channel("runner"), proxy.channel("runner")
    prefix = servers["prefix"].encode()
    held = []
    try:
        for _ in range(2):  # two uploads that never finish hold the sandbox's two slots
            sock = socket.socket(socket.AF_UNIX)
            sock.connect(hostile.path)
            sock.sendall(b"POST /%s/m HTTP/1.1\r\nContent-Length: 100\r\n\r\nab" % prefix)
            held.append(sock)
        time.sleep(0.3)
        third = _talk(hostile.path, b"GET /%s/x HTTP/1.1\r\n\r\n" % prefix)
        assert third.startswith(b"HTTP/1.1 503"), third[:60]
        assert b"too many model requests at once from this sandbox" in third
        # Another sandbox still reaches the model.
        assert _talk(other.path, b"GET /%s/x HTTP/1.1\r\n\r\n" % prefix).startswith(b"HTTP/1.1 200")
    finally:
        for sock in held:
            sock.close()
        hostile.close()
        other.close()
