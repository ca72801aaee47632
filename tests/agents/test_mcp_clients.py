"""`mcp-serve` against the real MCP clients the ecosystem ships: MCP Inspector 2.12's CLI
(`--verify` of the Skills extension, every `--protocol-era`) and the TypeScript SDK v2 client
in each version negotiation mode, over stdio (the client starts the server) and HTTP on
127.0.0.1:0 (the URL read from the startup line, the server stopped by its PID). The 2026-07-28
HTTP rules are driven with raw requests. Installed by .ci/setup into .cache/mcp-clients."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

CLIENTS = Path(os.environ.get("SKILL_EVALS_MCP_CLIENTS_DIR", REPO / ".cache" / "mcp-clients"))
INSPECTOR = CLIENTS / "node_modules" / ".bin" / "mcp-inspector"
SDK_SCRIPT = Path(__file__).parent / "mcp_clients" / "sdk_client.cjs"
pytestmark = pytest.mark.skipif(
    not INSPECTOR.exists() or shutil.which("node") is None,
    reason="the MCP clients are not installed (run .ci/setup)",
)
MODERN = "2026-07-28"
FRONTMATTER = """\ufeff---
name: refund-policy
description: "Answer refund questions: windows, receipts and exchanges."
license: MIT
metadata:
  version: 2
  ratio: 0.5
  enabled: true
  legacy: yes
  switch: on
  released: 2026-11-01
  nothing: ~
  empty:
  quoted: "true"
  octal: 0o17
---
# Refund policy

Refunds within 30 days with a receipt; see references/policy details.md.
"""
BINARY = bytes(range(256)) * 4


def _skills(root: Path) -> list[Path]:
    refund = root / "refund-policy"
    (refund / "references").mkdir(parents=True)
    (refund / "assets").mkdir()
    (refund / "evals").mkdir()
    (refund / "SKILL.md").write_text(FRONTMATTER, "utf-8")
    (refund / "references" / "policy details.md").write_text("# Details\n\nKeep receipts.\n")
    (refund / "assets" / "logo.bin").write_bytes(BINARY)
    (refund / ".notes.txt").write_text("hidden but served\n")
    (refund / "data.json").write_text('{"days": 30}\n')
    (refund / "evals" / "cases.jsonl").write_text('{"id": "a", "prompt": "p"}\n')
    (refund / "cases.jsonl").write_text('{"id": "b", "prompt": "q"}\n')
    bad = root / "bad-name"
    bad.mkdir()
    (bad / "SKILL.md").write_text(
        "---\nname: Bad-Name\ndescription: Not an Agent Skills name.\n---\nx\n"
    )
    inf = root / "infinite"
    inf.mkdir()
    (inf / "SKILL.md").write_text(
        "---\nname: infinite\ndescription: A ratio without JSON.\n"
        "metadata:\n  ratio: .inf\n---\nx\n"
    )
    return [refund, bad, inf]


def _server(skills: list[Path]) -> list[str]:
    args = [sys.executable, "-m", "skill_evals", "mcp-serve"]
    for skill in skills:
        args += ["--skill", str(skill)]
    return args


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The skills and one HTTP server for the module, stopped by its PID at the end."""
    tmp = tmp_path_factory.mktemp("mcp-clients")
    skills = _skills(tmp / "skills")
    log_path = tmp / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [*_server(skills), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline, match = time.monotonic() + 30, None
        while match is None and time.monotonic() < deadline and proc.poll() is None:
            match = re.search(r"http://127\.0\.0\.1:\d+/mcp", log_path.read_text())
            time.sleep(0.05)
        assert match, log_path.read_text()
        yield {"skills": skills, "url": match.group(0), "log": log_path, "tmp": tmp}
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def _inspector(served: dict[str, Any], transport: str, era: str, *method: str) -> Any:
    target = (
        ["--transport", "http", "--server-url", served["url"]]
        if transport == "http"
        else _server(served["skills"])
    )
    done = subprocess.run(
        [
            str(INSPECTOR),
            "--cli",
            "--format",
            "json",
            "--protocol-era",
            era,
            "--method",
            *method,
            *target,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=served["tmp"],
    )
    return done


def _reports(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(
    ("transport", "era"),
    [
        ("stdio", "modern"),
        ("stdio", "legacy"),
        ("stdio", "auto"),
        ("http", "modern"),
        ("http", "legacy"),
    ],
)
def test_inspector_verifies_the_listed_skills(
    served: dict[str, Any], transport: str, era: str
) -> None:
    done = _inspector(served, transport, era, "skills/list", "--verify")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (report,) = _reports(done)  # the unlisted skills are not listed
    assert report["ok"] is True and report["outcome"] == "verified", report
    assert report["conformance"] == [] and report["frontmatter"] == []
    uris = [f["uri"] for f in report["files"]]
    assert "skill://refund-policy/references/policy%20details.md" in uris
    assert "skill://refund-policy/assets/logo.bin" in uris
    assert "skill://refund-policy/.notes.txt" in uris
    assert not any("cases.jsonl" in uri or "/evals/" in uri for uri in uris)
    assert all(f["status"] == "verified" for f in report["files"])


def test_inspector_skills_get_and_the_other_methods(served: dict[str, Any]) -> None:
    uri = "skill://refund-policy/SKILL.md"
    got = _inspector(served, "http", "modern", "skills/get", "--uri", uri, "--verify")
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    assert _reports(got)[0]["outcome"] == "verified"
    init = _reports(_inspector(served, "http", "auto", "initialize"))[0]["result"]
    assert init["protocolVersion"] == MODERN
    assert init["capabilities"]["extensions"] == {"io.modelcontextprotocol/skills": {}}
    tools = _reports(_inspector(served, "stdio", "modern", "tools/list"))[0]["result"]["tools"]
    assert {t["name"] for t in tools} == {
        "load_refund_policy_skill",
        "load_Bad_Name_skill",
        "load_infinite_skill",
    }
    blob_uri = "skill://refund-policy/assets/logo.bin"
    read = _inspector(served, "http", "legacy", "resources/read", "--uri", blob_uri)
    (content,) = _reports(read)[0]["result"]["contents"]
    assert content["mimeType"] == "application/octet-stream"
    assert base64.b64decode(content["blob"]) == BINARY


def test_the_unlisted_skills_are_said_on_stderr(served: dict[str, Any]) -> None:
    log = served["log"].read_text()
    assert (
        "mcp-serve: Bad-Name is not listed in skills/list: its name is not an Agent Skills" in log
    )
    assert "mcp-serve: infinite is not listed in skills/list: its frontmatter holds .inf" in log


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_sdk_client_connects_in_every_negotiation_mode(
    served: dict[str, Any], transport: str
) -> None:
    target = served["url"] if transport == "http" else json.dumps(_server(served["skills"]))
    done = subprocess.run(
        ["node", str(SDK_SCRIPT), str(CLIENTS), transport, target],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=served["tmp"],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = {r["mode"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert set(runs) == {"legacy", "auto", "pin"}
    text = FRONTMATTER.removeprefix("\ufeff")
    for mode, run in runs.items():
        assert "error" not in run, run.get("error")
        assert run["version"] == ("2025-11-25" if mode == "legacy" else MODERN), mode
        assert run["server"]["name"] == "skill-evals"
        assert run["capabilities"]["extensions"] == {"io.modelcontextprotocol/skills": {}}
        assert run["callText"] == text and run["readText"] == text
        assert run["missing"] is not None and run["unknownTool"] is not None


# ------------------------------------------------------------------ raw 2026-07-28 over HTTP


def _meta(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        **extra,
    }


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _modern(url: str, method: str, params: dict[str, Any], **headers: str) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": _meta()}}
    sent = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, **headers}
    return _post(url, body, {k: v for k, v in sent.items() if v})


def test_modern_http_headers_statuses_and_errors(served: dict[str, Any]) -> None:
    url, skill = served["url"], "skill://refund-policy/SKILL.md"
    status, ok = _modern(url, "resources/read", {"uri": skill}, **{"Mcp-Name": skill})
    assert status == 200 and ok["result"]["resultType"] == "complete"
    assert (ok["result"]["ttlMs"], ok["result"]["cacheScope"]) == (300000, "private")
    encoded = "=?base64?" + base64.b64encode(skill.encode()).decode() + "?="
    assert _modern(url, "resources/read", {"uri": skill}, **{"Mcp-Name": encoded})[0] == 200
    for headers in (
        {"Mcp-Name": ""},
        {"Mcp-Name": "skill://other/SKILL.md"},
        {"Mcp-Name": skill, "Mcp-Method": "tools/list"},
        {"Mcp-Name": skill, "MCP-Protocol-Version": ""},
    ):
        status, body = _modern(url, "resources/read", {"uri": skill}, **headers)
        assert (status, body["error"]["code"]) == (400, -32020), headers
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/list",
        "params": {"_meta": _meta(**{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})},
    }
    status, answer = _post(
        url, body, {"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}
    )
    assert (status, answer["error"]["code"]) == (400, -32022)
    assert answer["error"]["data"]["requested"] == "2099-01-01"
    assert answer["error"]["data"]["supported"][0] == MODERN
    no_caps = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}},
    }
    status, answer = _post(
        url, no_caps, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}
    )
    assert (status, answer["error"]["code"]) == (400, -32602)
    for method in ("ping", "logging/setLevel", "no/such"):
        status, answer = _modern(url, method, {})
        assert (status, answer["error"]["code"]) == (404, -32601), method
    for uri in (
        "skill://refund-policy/evals/cases.jsonl",
        "skill://refund-policy/cases.jsonl",
        "skill://refund-policy/../bad-name/SKILL.md",
        "file:///etc/passwd",
    ):
        status, answer = _modern(url, "resources/read", {"uri": uri}, **{"Mcp-Name": uri})
        assert (status, answer["error"]["code"]) == (200, -32602), uri
        assert answer["error"]["data"]["uri"] == uri
    status, answer = _modern(url, "skills/get", {"uri": "skill://Bad-Name/SKILL.md"})
    assert (status, answer["error"]["code"]) == (200, -32602)
    assert answer["error"]["message"] == "No skill is served at skill://Bad-Name/SKILL.md"
    status, answer = _modern(url, "skills/list", {"cursor": "x"})
    assert (status, answer["error"]["code"]) == (200, -32602)


def test_modern_skill_entry_frontmatter_and_digests(served: dict[str, Any]) -> None:
    status, answer = _modern(served["url"], "skills/list", {})
    assert status == 200
    (entry,) = answer["result"]["skills"]
    front = entry["frontmatter"]
    assert front["metadata"] == {
        "version": 2,
        "ratio": 0.5,
        "enabled": True,
        "legacy": "yes",
        "switch": "on",
        "released": "2026-11-01",
        "nothing": None,
        "empty": None,
        "quoted": "true",
        "octal": 15,
    }
    paths = [r["uri"].removeprefix("skill://refund-policy/") for r in entry["resources"]]
    assert paths == sorted(paths, key=lambda p: p.encode()) and "SKILL.md" in paths
    logo = next(r for r in entry["resources"] if r["uri"].endswith("logo.bin"))
    assert logo == {
        "uri": "skill://refund-policy/assets/logo.bin",
        "digest": "sha256:" + hashlib.sha256(BINARY).hexdigest(),
        "size": len(BINARY),
    }
    md = next(r for r in entry["resources"] if r["uri"].endswith("/SKILL.md"))
    assert md["size"] == len(FRONTMATTER.removeprefix("\ufeff").encode())


def test_legacy_sessions_are_unchanged(served: dict[str, Any]) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t"},
        },
    }
    request = urllib.request.Request(
        served["url"],
        data=json.dumps(init).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        session = response.headers["Mcp-Session-Id"]
        assert json.loads(response.read())["result"]["protocolVersion"] == "2025-06-18"
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "resources/read",
        "params": {"uri": "skill://x/SKILL.md"},
    }
    status, answer = _post(
        served["url"], body, {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
    )
    assert (status, answer["error"]["code"]) == (200, -32002)
