"""A hostile sandbox against the egress proxy: every other spelling of a private or loopback
address, names that resolve there (DNS rebinding), userinfo and Host tricks, odd CONNECT
targets, and requests shaped to be read one way by the egress proxy and another by the
credential proxy. Refusals of addresses off this machine are checked at the proxy with its
connect function replaced (nothing is ever sent beyond 127.0.0.1); the loopback spellings also
run for real, from a runner in bubblewrap against loopback servers of the test's own."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_evals.sandbox import egress, network_policy
from skill_evals.sandbox.behaviour import BehaviourLog, recording
from skill_evals.sandbox.egress import EgressProxy
from skill_evals.sandbox.network_policy import (
    NetworkPolicy,
    host_key,
    parse_allow,
    permitted_addresses,
    refused_address,
)
from tests._fake_upstream import FakeUpstream
from tests.conftest import write_jsonl, write_skill
from tests.sandbox.test_network import BWRAP, needs_bwrap
from tests.sandbox.test_proxy_bounds import _echo_key, _talk

ATTACKER = Path(__file__).resolve().parents[1] / "runners" / "egress_attacks.py"
KEY = "sk-attack-" + "9" * 30  # the model key the hostile runner must never read
PUBLIC = "93.184.216.34"  # what the fake resolver gives public.example; never connected to


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("LOCALHOST.", "localhost"),
        ("Allowed.Example.", "allowed.example"),
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("[::FFFF:127.0.0.1]", "::ffff:7f00:1"),
        ("127.1", "127.1"),  # not a strict literal: a name, matched only as spelled
        ("2130706433", "2130706433"),
        ("0x7f.1", "0x7f.1"),
        ("[fe80::1%25eth0]", None),
        ("fe80::1%eth0", None),
        ("a b", None),
        ("x..", None),
        ("evil\r\nHost", None),
        ("a" * 254, None),
    ],
)
def test_hosts_are_compared_in_one_spelling(text: str, key: str | None) -> None:
    assert host_key(text) == key


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "0.0.0.0", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1",
        "100.127.255.254", "169.254.169.254", "192.0.2.1", "198.18.0.1", "224.0.0.1",
        "239.255.255.250", "255.255.255.255", "240.0.0.1", "::1", "::", "fc00::1", "fd00::1",
        "fe80::1", "fec0::1", "ff02::1", "ff0e::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
        "::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1", "2002:a9fe:a9fe::1", "2001:db8::1",
    ],
)  # fmt: skip
def test_every_non_global_address_is_refused(address: str) -> None:
    assert refused_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", [PUBLIC, "8.8.8.8", "2606:4700::1111", "64:ff9b::808:808"])
def test_global_addresses_are_not(address: str) -> None:
    assert not refused_address(ipaddress.ip_address(address))


def _resolver(answers: dict[str, list[str]]) -> Any:
    def getaddrinfo(host: str, port: int, *args: object, **kwargs: object) -> list[Any]:
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in answers[host]
        ]

    return getaddrinfo


REBOUND = {
    "rebound.example": ["127.0.0.1"],
    "shared.example": ["100.64.3.4"],
    "metadata.example": ["169.254.169.254"],
    "ula.example": ["fc00::5"],
    "scoped.example": ["fe80::1%2"],
    "mapped.example": ["::ffff:10.0.0.1"],
    "mixed.example": ["10.0.0.7", PUBLIC],
    "public.example": [PUBLIC],
    "listed.example": ["10.1.2.3"],
}


def test_a_listed_name_is_checked_by_the_address_it_resolves_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(network_policy.socket, "getaddrinfo", _resolver(REBOUND))
    policy = NetworkPolicy("allow", (*((name, None) for name in REBOUND), ("10.1.2.3", 443)))
    for name in ("rebound", "shared", "metadata", "ula", "scoped", "mapped"):
        assert permitted_addresses(policy, f"{name}.example", 443) == [], name
    assert permitted_addresses(policy, "mixed.example", 443) == [PUBLIC]
    assert permitted_addresses(policy, "PUBLIC.example.", 443) == [PUBLIC]
    # A private address passes only when listed literally, with the port.
    assert permitted_addresses(policy, "listed.example", 443) == ["10.1.2.3"]
    assert permitted_addresses(policy, "listed.example", 80) == []
    assert permitted_addresses(policy, "unlisted.example", 443) == []


def test_allow_entries_are_kept_in_the_same_spelling() -> None:
    assert parse_allow("Registry.NPMJS.org.", "x") == ("registry.npmjs.org", None)
    assert parse_allow("[0:0::1]:8080", "x") == ("::1", 8080)
    for bad in ("[fe80::1%25eth0]:80", "user@host", "host:0", "host/path", "a b", "0.0.0.0",
                "[::]:80", "[0:0::0]:80"):  # fmt: skip
        with pytest.raises(network_policy.NetworkError):
            parse_allow(bad, "--network-allow")


class _Tried:
    """Stands in for the proxy's connect: records where it would connect, connects nowhere
    (or to one end of a socket pair, to see what would have been sent)."""

    def __init__(self, pair: bool = False) -> None:
        self.calls: list[tuple[list[str], int]] = []
        self.pair = pair
        self.far: list[socket.socket] = []

    def __call__(self, addresses: list[str], port: int) -> socket.socket | None:
        self.calls.append((list(addresses), port))
        if not self.pair:
            return None
        near, far = socket.socketpair()
        self.far.append(far)
        return near


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A channel of a proxy allowing a few names (resolved by a fake resolver) and one private
    literal; the proxy's connect replaced."""
    monkeypatch.setattr(network_policy.socket, "getaddrinfo", _resolver(REBOUND))
    tried = _Tried()
    monkeypatch.setattr(egress, "_connect_any", tried)
    allow = (("rebound.example", None), ("public.example", None), ("10.1.2.3", 5432),
             ("localhost", None))  # fmt: skip
    proxy = EgressProxy(NetworkPolicy("allow", allow))
    log = BehaviourLog()
    with recording(log):
        channel = proxy.channel("runner")
    yield {"channel": channel, "tried": tried, "log": log}
    channel.close()


def _ask(path: str, raw: bytes, timeout: float = 10) -> bytes:
    return _talk(path, raw, timeout=timeout)


LOOPBACK_SPELLINGS = [
    "127.0.0.1", "2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "127.1", "127.0.1",
    "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:0:0:1]", "[::1%25lo]",
    "localhost", "localhost.", "LOCALHOST", "0.0.0.0", "0",
]  # fmt: skip
OFF_MACHINE = [
    "169.254.169.254:80", "100.64.0.1", "100.100.100.200:80", "[fc00::1]", "[fd12::1]",
    "[fe80::1]", "[fe80::1%25eth0]", "224.0.0.1", "255.255.255.255", "[ff02::1]", "10.0.0.1",
    "192.168.0.1", "172.16.0.1", "[::ffff:10.1.2.3]:5432", "10.1.2.3:443", "10.1.2.3",
    "rebound.example", "Rebound.Example.", "public.example:8080",
]  # fmt: skip


@pytest.mark.parametrize("target", LOOPBACK_SPELLINGS + OFF_MACHINE)
@pytest.mark.parametrize("form", ["connect", "absolute"])
def test_no_spelling_of_a_private_address_gets_a_connection(
    hostile: dict[str, Any], target: str, form: str
) -> None:
    if form == "connect":
        raw = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
    else:
        raw = f"GET http://{target}/latest/meta-data HTTP/1.1\r\nHost: public.example\r\n\r\n"
    answer = _ask(hostile["channel"].path, raw.encode())
    assert answer.split(b"\r\n", 1)[0] in (b"HTTP/1.1 403 Forbidden", b"HTTP/1.1 400 Bad Request")
    assert hostile["tried"].calls == []


@pytest.mark.parametrize(
    "raw",
    [
        "CONNECT public.example@127.0.0.1:443 HTTP/1.1\r\n\r\n",
        "CONNECT 127.0.0.1@public.example:443 HTTP/1.1\r\n\r\n",
        "GET http://public.example@127.0.0.1/ HTTP/1.1\r\nHost: public.example\r\n\r\n",
        "GET http://public.example:443@127.0.0.1:80/ HTTP/1.1\r\n\r\n",
        "CONNECT public.example:0 HTTP/1.1\r\n\r\n",
        "CONNECT public.example:65536 HTTP/1.1\r\n\r\n",
        "CONNECT public.example:+443 HTTP/1.1\r\n\r\n",
        "CONNECT public.example: HTTP/1.1\r\n\r\n",
        "CONNECT public.example:443:80 HTTP/1.1\r\n\r\n",
        "CONNECT  public.example:443 HTTP/1.1\r\n\r\n",
        "CONNECT public.example:443 HTTP/2.0\r\n\r\n",
        "CONNECT public.example\t:443 HTTP/1.1\r\n\r\n",
        "GET https://public.example/ HTTP/1.1\r\n\r\n",
        "GET HTTP://127.0.0.1/ HTTP/1.1\r\n\r\n",
        "GET public.example:443 HTTP/1.1\r\n\r\n",
        "CONNECT [::1 HTTP/1.1\r\n\r\n",
        "CONNECT ::1]:443 HTTP/1.1\r\n\r\n",
        "CONNECT []:443 HTTP/1.1\r\n\r\n",
        "CONNECT [127.0.0.1]:443 HTTP/1.1\r\n\r\n",
        "CONNECT [public.example]:443 HTTP/1.1\r\n\r\n",
        "GET http://[::1/ HTTP/1.1\r\n\r\n",
        "GET http://[forged-log-line]/ HTTP/1.1\r\n\r\n",
    ],
)
def test_userinfo_and_odd_targets_are_refused_before_connecting(
    hostile: dict[str, Any], raw: str, capfd: pytest.CaptureFixture[str]
) -> None:
    answer = _ask(hostile["channel"].path, raw.encode())
    assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 403")), answer[:80]
    assert hostile["tried"].calls == []
    assert capfd.readouterr().err == ""  # nothing of the request reached the engine's stderr


def test_allowed_spellings_reach_only_the_checked_address_with_its_own_host(
    hostile: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tried = _Tried(pair=True)
    monkeypatch.setattr(egress, "_connect_any", tried)
    path = hostile["channel"].path
    for target in ("public.example", "PUBLIC.EXAMPLE.", "public.example:443"):
        _ask(path, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode(), timeout=0.5)
    raw = (
        "GET http://Public.Example./x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
        "Proxy-Authorization: Basic eA==\r\nX-Skill-Evals-Invocation: forged\r\n\r\n"
    )
    _ask(path, raw.encode(), timeout=0.5)
    assert tried.calls == [([PUBLIC], 443)] * 3 + [([PUBLIC], 80)]
    tried.far[-1].settimeout(2)
    sent = tried.far[-1].recv(65536).decode("latin-1")
    lines = sent.split("\r\n")
    assert lines[0] == "GET /x?y=1 HTTP/1.1"
    # The target decides where the request goes and what its Host says; the sandbox's own Host,
    # proxy credentials and invocation mark are not passed on.
    assert [line for line in lines if line.lower().startswith("host:")] == ["Host: Public.Example."]
    assert "Proxy-Authorization" not in sent and "forged" not in sent
    for far in tried.far:
        far.close()


def test_a_private_literal_passes_only_as_listed(
    hostile: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _ask(hostile["channel"].path, b"CONNECT 10.1.2.3:5432 HTTP/1.1\r\n\r\n")
    assert hostile["tried"].calls == [(["10.1.2.3"], 5432)]
    records = hostile["log"].records
    assert [(r["host"], r["port"], r["allowed"]) for r in records] == [("10.1.2.3", 5432, True)]


def _attack_requests(service: int, open_port: int) -> tuple[list[str], list[str]]:
    """(requests that must all be refused, requests that must pass)."""
    refused = []
    for spelling in LOOPBACK_SPELLINGS:
        refused.append(f"CONNECT {spelling}:{service} HTTP/1.1\r\n\r\n")
        refused.append(
            f"GET http://{spelling}:{service}/ HTTP/1.1\r\nHost: localhost:{service}\r\n\r\n"
        )
    for spelling in ("[::ffff:127.0.0.1]", "2130706433", "127.1", "localhost", "[::1]"):
        refused.append(f"GET http://{spelling}:{open_port}/ HTTP/1.1\r\n\r\n")
    refused += [
        f"GET http://localhost:{service}@127.0.0.1:{service}/ HTTP/1.1\r\n\r\n",
        f"GET http://127.0.0.1:{open_port}@127.0.0.1:{service}/ HTTP/1.1\r\n\r\n",
        f"GET http://127.0.0.1:{service}/ HTTP/1.1\r\nHost: 127.0.0.1:{open_port}\r\n\r\n",
        "CONNECT localhost HTTP/1.1\r\n\r\n",
        f"CONNECT 127.0.0.1:{open_port}0 HTTP/1.1\r\n\r\n",
    ]
    passed = [
        f"GET http://127.0.0.1:{open_port}/ HTTP/1.1\r\nHost: 127.0.0.1:{service}\r\n\r\n",
        f"CONNECT 127.0.0.1:{open_port} HTTP/1.1\r\n\r\n",
    ]
    return refused, passed


def _model_requests(service: int, model: int) -> list[tuple[str, str]]:
    """(request, the status it must get) against the model's route of the credential proxy."""
    return [
        # Another Host on the model's route: the upstream's own Host is set, the key is used
        # there and masked where the upstream repeats it.
        (f"GET @MODEL@/echo HTTP/1.1\r\nHost: 127.0.0.1:{service}\r\n\r\n", "400"),
        ("POST @MODEL@/m HTTP/1.1\r\nA: b\nX-Skill-Evals-Invocation: x\r\n\r\n", "400"),
        ("POST @MODEL@/m HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffff\r\n", "413"),
        ("POST @MODEL@/m HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
         "400"),
        ("POST @MODEL@/m HTTP/1.1\r\nX-Big: " + "a" * 70_000 + "\r\n\r\n", "431"),
        (f"GET http://127.0.0.1:{model}@MODEL@/x HTTP/1.1\r\n\r\n", "403"),
        (f"CONNECT 127.0.0.1:{model} HTTP/1.1\r\n\r\n", "403"),
    ]  # fmt: skip


def _hostile_run(tmp_path: Path, requests: list[str], ports: dict[str, int]) -> list[str]:
    """The attacker as the runner of a sandboxed ``test`` run; the answers it got."""
    config = tmp_path / "config" / "requests.json"
    config.parent.mkdir()
    config.write_text(json.dumps(requests))
    out = tmp_path / "out"
    out.mkdir()
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [{"id": f"c{i}", "prompt": f"question {i}", "expectTrigger": False} for i in range(10)],
    )
    runner = f"{sys.executable} {ATTACKER} {config} {out}"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", runner, "--trials", "1", "--jobs", "1", "-q"),
            *("--format", "json", "--sandbox", "required", "--network", "allow"),
            *("--network-allow", f"localhost:{ports['service']}"),
            *("--network-allow", f"127.0.0.1:{ports['open']}"),
            *("--credential", f"PROBE_KEY,x-api-key,http://127.0.0.1:{ports['model']}/v1"),
            *("--sandbox-path", str(ATTACKER.parent), "--sandbox-path", str(config.parent)),
            *("--sandbox-path", f"{out}:rw", "--record", str(tmp_path / "record.jsonl")),
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PROBE_KEY": KEY},
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert KEY not in done.stdout + done.stderr
    answers: list[str] = json.loads((out / "attacks.json").read_text())
    return answers


@needs_bwrap
def test_a_hostile_runner_in_bubblewrap_reaches_only_the_listed_literal(tmp_path: Path) -> None:
    servers = {name: FakeUpstream().start() for name in ("service", "open", "model")}
    servers["model"].routes["/v1/echo"] = _echo_key
    ports = {name: int(server.url.rsplit(":", 1)[1]) for name, server in servers.items()}
    refused, passed = _attack_requests(ports["service"], ports["open"])
    model = _model_requests(ports["service"], ports["model"])
    try:
        answers = _hostile_run(tmp_path, refused + passed + [r for r, _ in model], ports)
    finally:
        for server in servers.values():
            server.stop()
    assert BWRAP is not None
    status = [answer.split("\r\n", 1)[0] for answer in answers]
    for raw, line in zip(refused, status, strict=False):
        assert line in ("HTTP/1.1 403 Forbidden", "HTTP/1.1 400 Bad Request"), (raw[:60], line)
    assert status[len(refused)] == "HTTP/1.1 200 OK"
    assert status[len(refused) + 1] == "HTTP/1.1 200 Connection Established"
    for (raw, want), line in zip(model, status[len(refused) + 2 :], strict=True):
        assert line.split(" ")[1] == want, (raw[:60], line)
    assert servers["service"].received == []  # nothing of any spelling reached it
    # The one absolute-form request that passed carried its target's Host, not the sandbox's.
    assert servers["open"].received
    assert all(r.header("Host") == [f"127.0.0.1:{ports['open']}"] for r in servers["open"].received)
    # The model got one request (the echo), with its own Host and the real key, which never
    # came back to the sandbox.
    (echo,) = servers["model"].received
    assert echo.header("Host") == [f"127.0.0.1:{ports['model']}"]
    assert echo.header("x-api-key") == [KEY]
    assert all(KEY not in answer for answer in answers)
    assert "*" * len(KEY) in answers[len(refused) + 2]
    records = [json.loads(line) for line in (tmp_path / "record.jsonl").read_text().splitlines()]
    items = [item for record in records for item in record.get("network", [])]
    assert any(not item["allowed"] for item in items)
    assert all(len(str(item["host"])) <= 253 for item in items)
