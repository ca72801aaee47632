"""The contained network, with real bubblewrap and loopback servers of the test's own: a
"service" on the host's loopback (a CI service container, a Docker daemon on TCP) and a fake
model upstream behind the credential proxy. A probe run as runner, setup command and verifier
reports what it could reach; the record shows every attempt. Nothing leaves the machine: the
only outside address tried is TEST-NET-1, which fails at once inside the namespace."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_evals.sandbox.behaviour import BehaviourLog, recording
from skill_evals.sandbox.egress import EgressProxy
from skill_evals.sandbox.network_policy import NetworkPolicy, permitted_addresses
from tests.conftest import write_jsonl, write_skill

PROBE = Path(__file__).resolve().parents[1] / "runners" / "net_probe.py"
BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(
    BWRAP is None or not sys.platform.startswith("linux"),
    reason="bubblewrap is not installed here (apt-get install -y bubblewrap)",
)
KEY = "probe-key-" + "7" * 24


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization", "")
        type(self).seen.append(
            {"path": self.path, "auth": hashlib.sha256(auth.encode()).hexdigest()}
        )
        body = b"hello from the host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    """Two loopback servers: the host's service and the model upstream."""
    started = []
    ports = {}
    for name in ("service", "model"):
        handler = type(f"{name}Handler", (_Handler,), {"seen": []})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        ports[name] = (server.server_address[1], handler)
    yield ports
    for server in started:
        server.shutdown()


def _run(
    root: Path, servers: dict[str, Any], *extra: str, fetch: str | None = None
) -> dict[str, Any]:
    skill = write_skill(root / "skills")
    out = root / "out"
    out.mkdir()
    config = root / "config" / "probe.json"
    config.parent.mkdir()
    service = servers["service"][0]
    config.write_text(json.dumps({"service": service, **({"fetch": fetch} if fetch else {})}))
    probe = [sys.executable, str(PROBE)]
    args = [str(config), str(out)]
    cases = write_jsonl(
        root / "cases.jsonl",
        [
            {
                "id": f"c{i}",
                "prompt": f"question {i}",
                "expectTrigger": False,
                "setup": [[*probe, "setup", *args]],
                "task": {"check": "command", "run": [*probe, "command", *args]},
            }
            for i in range(10)
        ],
    )
    model = servers["model"][0]
    env = {**os.environ, "PROBE_KEY": KEY}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", f"{sys.executable} {PROBE} runner {config} {out}"),
            *("--trials", "1", "--jobs", "2", "-q", "--format", "json", "--sandbox", "required"),
            *("--sandbox-path", str(PROBE.parent), "--sandbox-path", str(config.parent)),
            # The setup and command probes (a case's commands) see only what is named.
            *("--sandbox-path", str(Path(sys.executable).parent.parent)),
            *("--sandbox-path", f"{out}:rw", "--record", str(root / "record.jsonl")),
            *("--credential", f"PROBE_KEY,bearer,http://127.0.0.1:{model}"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root,
    )
    report = json.loads(done.stdout)
    found = {role: json.loads((out / f"net-{role}.json").read_text()) for role in
             ("runner", "setup", "command")}  # fmt: skip
    records = [json.loads(line) for line in (root / "record.jsonl").read_text().splitlines()]
    return {"report": report, "found": found, "records": records, "stderr": done.stderr}


@pytest.fixture(scope="module")
def contained(servers: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if BWRAP is None:
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    return _run(tmp_path_factory.mktemp("contained"), servers)


@needs_bwrap
@pytest.mark.parametrize("role", ["runner", "setup", "command"])
def test_the_hosts_loopback_is_out_of_reach(
    contained: dict[str, Any], servers: dict[str, Any], role: str
) -> None:
    found = contained["found"][role]
    service = servers["service"][0]
    assert found["direct"]["result"] == "ConnectionRefusedError", found
    # Its own loopback only: the relay's port, never the host's service or the proxies.
    assert service not in found["listening"]
    assert found["listening"] == [3128], found["listening"]
    assert found["outside"]["result"] != "connected" and found["outside"]["seconds"] < 1
    assert found["proxied"]["status"] == 403
    assert found["proxied"]["body"] == (
        "skill-evals sandbox: 127.0.0.1 is not allowed (network: model)"
    )
    assert found["connect"].startswith("HTTP/1.1 403")
    assert "example.test is not allowed (network: model)" in found["connect"]
    assert found["proxyEnv"]["HTTP_PROXY"] == "http://127.0.0.1:3128"
    assert found["proxyEnv"]["NO_PROXY"] == "localhost,127.0.0.1,::1"


@needs_bwrap
def test_the_model_is_reached_through_the_proxy_with_the_real_key(
    contained: dict[str, Any], servers: dict[str, Any]
) -> None:
    assert contained["found"]["runner"]["model"]["status"] == 200
    seen = servers["model"][1].seen
    assert seen and all(entry["path"] == "/v1/ping" for entry in seen)
    want = hashlib.sha256(f"Bearer {KEY}".encode()).hexdigest()
    assert {entry["auth"] for entry in seen} == {want}
    assert not servers["service"][1].seen  # nothing reached the host's service
    report = contained["report"]
    assert report["sandbox"]["network"] == "model"
    assert report["sandbox"]["proxied"] == ["PROBE_KEY"]


@needs_bwrap
def test_every_attempt_lands_in_the_record(contained: dict[str, Any]) -> None:
    model_port = None
    kinds: dict[tuple[str, str], set[bool]] = {}
    for record in contained["records"]:
        for item in record.get("network", []):
            assert set(item) == {"host", "port", "kind", "by", "allowed", "bytesUp", "bytesDown"}
            kinds.setdefault((item["by"], item["kind"]), set()).add(item["allowed"])
            if item["kind"] == "model":
                model_port = item["port"]
                assert item["host"] == "127.0.0.1" and item["bytesDown"] > 0
    assert kinds[("runner", "model")] == {True}
    for by in ("runner", "setup", "command"):
        assert kinds[(by, "http")] == {False}
        assert kinds[(by, "connect")] == {False}
    assert model_port is not None


@needs_bwrap
def test_allowed_hosts_pass_and_a_listed_name_on_loopback_does_not(
    servers: dict[str, Any], tmp_path: Path
) -> None:
    service = servers["service"][0]
    allowed = _run(
        tmp_path / "literal", servers, "--network", "allow",
        "--network-allow", f"127.0.0.1:{service}",
    )  # fmt: skip
    assert allowed["report"]["sandbox"]["network"] == "allow"
    for role in ("runner", "setup", "command"):
        assert allowed["found"][role]["proxied"] == {"status": 200, "body": "hello from the host"}
        assert allowed["found"][role]["direct"]["result"] == "ConnectionRefusedError"
    by_name = _run(
        tmp_path / "name", servers, "--network", "allow",
        "--network-allow", f"localhost:{service}", fetch=f"localhost:{service}",
    )  # fmt: skip
    assert by_name["found"]["runner"]["proxied"]["status"] == 403


@needs_bwrap
def test_the_host_network_is_shared_only_when_asked(
    servers: dict[str, Any], tmp_path: Path
) -> None:
    shared = _run(tmp_path, servers, "--network", "host")
    assert shared["report"]["sandbox"]["network"] == "host"
    assert shared["found"]["runner"]["direct"]["result"] == "connected"
    assert "sandbox network is the host's (--network host)" in shared["stderr"]


def test_a_refusal_is_answered_before_any_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    from skill_evals.sandbox import egress

    tried: list[object] = []
    monkeypatch.setattr(egress, "_connect_any", lambda *a: tried.append(a))
    proxy = EgressProxy(NetworkPolicy("allow", (("10.1.2.3", None), ("db.test", 5432))))
    log = BehaviourLog()
    with recording(log):
        channel = proxy.channel("runner")
    try:
        for target in ("169.254.169.254:80", "10.1.2.4:443", "[::1]:443", "db.test:5433"):
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(channel.path)
                sock.sendall(f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
                answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 403"), target
    finally:
        channel.close()
    assert tried == []
    assert [r["allowed"] for r in log.records] == [False] * 4


def test_private_addresses_pass_only_when_listed_literally() -> None:
    policy = NetworkPolicy("allow", (("10.1.2.3", None), ("localhost", 80)))
    assert permitted_addresses(policy, "10.1.2.3", 443) == ["10.1.2.3"]
    assert permitted_addresses(policy, "10.1.2.3", 22) == []
    assert permitted_addresses(policy, "localhost", 80) == []  # a name that resolves there
    assert permitted_addresses(policy, "::ffff:127.0.0.1", 80) == []


FETCHER = Path(__file__).resolve().parents[1] / "runners" / "fetch_in_with.py"


def _behaviour_run(root: Path, urls: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
    skill = write_skill(root / "skills")
    cases = write_jsonl(
        root / "cases.jsonl",
        [{"id": f"c{i}", "prompt": f"refund {i}?", "expectTrigger": True} for i in range(10)],
    )
    return subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", shlex.join([sys.executable, str(FETCHER), *urls])),
            *("--trials", "1", "--jobs", "2", "-q", "--format", "json", "--sandbox", "required"),
            *("--sandbox-path", str(FETCHER.parent), "--markdown", str(root / "summary.md")),
            *("--junit", str(root / "junit.xml"), "--html", str(root / "report.html")),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )


@needs_bwrap
def test_what_only_the_with_runs_reach_is_a_finding_in_every_output(
    servers: dict[str, Any], tmp_path: Path
) -> None:
    service = servers["service"][0]
    urls = [f"http://127.0.0.1:{service}/docs", "http://registry.example.test/pkg"]
    allow = ("--network", "allow", "--network-allow", f"127.0.0.1:{service}")
    done = _behaviour_run(tmp_path / "warn", urls, *allow)
    report = json.loads(done.stdout)
    assert report["exitCode"] == 0, report["messages"]
    behaviour = report["behaviour"]
    assert behaviour["arms"]["with"]["contacted"] == [
        {"host": "127.0.0.1", "port": service, "count": 10}
    ]
    assert behaviour["arms"]["with"]["refused"] == [
        {"host": "registry.example.test", "port": 80, "count": 10}
    ]
    assert "without" not in behaviour["arms"]  # its runs reached nothing
    kinds = [(f["kind"], f["host"], f["arms"]) for f in behaviour["findings"]]
    assert kinds == [
        ("new-destination", "127.0.0.1", ["with"]),
        ("new-destination", "registry.example.test", ["with"]),
        ("refused-destination", "registry.example.test", ["with"]),
    ]
    assert behaviour["findings"][0]["cases"] == [f"c{i}" for i in range(10)]
    line = f"behaviour: new destination 127.0.0.1:{service}"
    assert any(m.startswith(line) for m in report["messages"])
    assert line in (tmp_path / "warn" / "summary.md").read_text()
    assert "behaviour: refused destination" in (tmp_path / "warn" / "junit.xml").read_text()
    assert (
        f"behaviour: new destination 127.0.0.1:{service}"
        in (tmp_path / "warn" / "report.html").read_text()
    )
    failing = _behaviour_run(tmp_path / "fail", urls, *allow, "--fail-on-finding")
    assert failing.returncode == 1
    assert json.loads(failing.stdout)["status"] == "fail"
    junit = (tmp_path / "fail" / "junit.xml").read_text()
    assert '<testcase name="behaviour"' in junit and "(--fail-on-finding)" in junit
