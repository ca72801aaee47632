"""The sandbox with real bubblewrap, started the way the product starts it: what a runner, a
setup command and a command check can reach (hashes only: the probe is told no secret), the
processes they see, escaped setup processes, concurrency, and the modes in every output."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from skill_evals.run.observations import META_KEYS
from tests._route_helpers import assert_valid_route_report
from tests.conftest import assert_valid_report, write_jsonl, write_skill

PROBE = Path(__file__).resolve().parents[1] / "runners" / "sandbox_probe.py"
PROXIED = Path(__file__).resolve().parents[1] / "runners" / "proxied.py"
BWRAP = shutil.which("bwrap")
WARNING = "runner, setup and command checks can read this machine's files and processes"

# The setup commands and checks name the test's Python and the probe: a case's argv binds
# nothing, so the caller names them, as a user would.
HELPER_PATHS = ("--sandbox-path", sys.prefix, "--sandbox-path", str(PROBE))

needs_bwrap = pytest.mark.skipif(
    BWRAP is None or not sys.platform.startswith("linux"),
    reason="bubblewrap is not installed here (apt-get install -y bubblewrap)",
)


def _project(root: Path, cases: int = 10) -> tuple[Path, Path]:
    skill = write_skill(root / "skills")
    probe = [sys.executable, str(PROBE)]
    records = [
        {
            "id": f"c{i}",
            "prompt": f"question {i}",
            "expectTrigger": False,
            "setup": [[*probe, "setup"]],
            "task": {"check": "command", "run": [*probe, "command"]},
        }
        for i in range(cases)
    ]
    return skill, write_jsonl(root / "cases.jsonl", records)


def _run(
    root: Path, skill: Path, cases: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    runner = f"{sys.executable} {PROBE} runner"
    return subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", runner, "--trials", "1", "-q"),
            *("--format", "json", *HELPER_PATHS, *extra),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root,
    )


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One sandboxed run over 10 cases, both arms, 4 at a time, with secrets planted in the
    caller's home, the repository, the job's files and the environment."""
    if BWRAP is None:
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    root = tmp_path_factory.mktemp("sandboxed")
    skill, cases = _project(root)
    secret = secrets.token_hex(24)
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(secret)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[http]\n\textraheader = {secret}\n")
    github_env = root / "github_env"
    github_env.write_text("")
    targets = [
        str(home / ".ssh" / "id_rsa"),
        str(home),
        str(root / ".git" / "config"),
        str(github_env),
        str(root / "kept"),
    ]
    env = dict(
        os.environ,
        HOME=str(home),
        GITHUB_TOKEN=secret,  # a custom runner gets the caller's environment, never this
        GITHUB_ENV=str(github_env),
        PROBE_TARGETS=json.dumps(targets),
        PROBE_SLEEP="0.5",
    )
    env.pop("SKILL_EVALS_SANDBOX", None)
    kept = root / "kept"  # where the workspaces go afterwards: not reachable meanwhile
    proc = _run(root, skill, cases, "--jobs", "4", "--keep-workspaces", str(kept), env=env)
    findings: dict[str, list[dict[str, Any]]] = {"setup": [], "runner": [], "command": []}
    for path in sorted(kept.rglob("probe-*.json")):
        data = json.loads(path.read_text())
        findings[data["role"]].append(data)
    return {
        "proc": proc,
        "report": json.loads(proc.stdout),
        "findings": findings,
        "secret_hash": hashlib.sha256(secret.encode()).hexdigest(),
        "targets": targets,
        "home": str(home),
        "github_env": github_env,
    }


@needs_bwrap
def test_the_run_is_sandboxed_and_says_so(sandboxed: dict[str, Any]) -> None:
    report = sandboxed["report"]
    assert report["exitCode"] == 0, sandboxed["proc"].stderr
    assert_valid_report(report)
    sandbox = report["sandbox"]
    assert sandbox["requested"] == "auto" and sandbox["mode"] == "bwrap"
    assert sandbox["reason"] is None and sandbox["version"].startswith("bubblewrap")
    assert WARNING not in sandboxed["proc"].stderr
    assert not any(WARNING in m for m in report["messages"])
    for role in ("setup", "runner", "command"):
        assert len(sandboxed["findings"][role]) == 20, role


@needs_bwrap
@pytest.mark.parametrize("role", ["setup", "runner", "command"])
def test_no_secret_file_or_process_of_the_host_is_reachable(
    sandboxed: dict[str, Any], role: str
) -> None:
    for found in sandboxed["findings"][role]:
        assert sandboxed["secret_hash"] not in found["hashes"]
        for path in sandboxed["targets"]:
            assert found["targets"][path]["exists"] is False, (role, path)
        # Its /proc holds the sandbox's own processes only: no engine, no other invocation.
        assert not {"skill-evals", "pytest"} & set(found["programs"]), found["programs"]
        # bwrap (pid 1), the relay that starts every sandbox, the probe and its child.
        assert len(found["programs"]) <= 4, found["programs"]
        assert found["home"] != sandboxed["home"] and found["home"].endswith("/home")
    assert sandboxed["github_env"].read_text() == ""


@needs_bwrap
def test_escaped_setup_processes_are_gone_before_the_runner(sandboxed: dict[str, Any]) -> None:
    assert all(found["escapeeAlive"] is False for found in sandboxed["findings"]["runner"])


@needs_bwrap
def test_invocations_really_overlapped(sandboxed: dict[str, Any]) -> None:
    spans = sorted(found["span"] for found in sandboxed["findings"]["runner"])
    overlapping = max(
        sum(1 for start, end in spans if start <= moment < end) for moment, _ in spans
    )
    assert overlapping >= 2


@needs_bwrap
def test_figures_are_the_same_sandboxed_and_off(sandboxed: dict[str, Any], tmp_path: Path) -> None:
    skill, cases = _project(tmp_path)
    off = _run(tmp_path, skill, cases, "--jobs", "4", "--sandbox", "off")
    report = json.loads(off.stdout)
    assert_valid_report(report)
    for key in ("status", "exitCode", "trigger", "task", "caseResults", "loading"):
        assert report[key] == sandboxed["report"][key], key
    assert report["sandbox"] == {
        "requested": "off", "requestedBy": "--sandbox", "mode": "off", "reason": "--sandbox off",
        "version": None, "proxied": [], "masked": 0, "network": "host",
    }  # fmt: skip
    assert off.stderr.count(f"warning: not sandboxed (--sandbox off): {WARNING}") == 1
    assert f"not sandboxed (--sandbox off): {WARNING}" in report["messages"]


def test_required_without_a_usable_bwrap_starts_nothing(tmp_path: Path) -> None:
    skill, cases = _project(tmp_path)
    env = dict(os.environ, SKILL_EVALS_BWRAP="/bin/false")
    proc = _run(tmp_path, skill, cases, "--sandbox", "required", env=env)
    assert proc.returncode == 7
    said = "sandbox required but unusable: bwrap failed its probe (exit 1"
    assert proc.stderr.count(said) == 1 and f"skill-evals: error: {said}" in proc.stderr
    report = json.loads(proc.stdout)
    assert_valid_report(report)
    assert report["status"] == "unavailable"
    assert report["runner"] == {
        "invocations": 0, "failures": [], "wallMs": 0, "meta": dict.fromkeys(META_KEYS),
    }  # fmt: skip
    routes = [{"id": f"r{i}", "prompt": f"question {i}", "expect": []} for i in range(10)]
    route = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "route", "--catalog", "skills/*"),
            *("--cases", str(write_jsonl(tmp_path / "routes.jsonl", routes))),
            *("--runner", f"{sys.executable} {PROBE} runner", "--sandbox", "required"),
            *("--format", "json"),
        ],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert route.returncode == 7 and route.stderr.count("sandbox required but unusable") == 1
    routed = json.loads(route.stdout)
    assert_valid_route_report(routed)
    assert routed["status"] == "unavailable"
    assert routed["runner"]["invocations"] == routed["runner"]["ledger"]["invocations"] == 0
    assert not list(tmp_path.rglob("probe-*.json"))  # no setup, runner or check ran


def test_auto_without_a_usable_bwrap_warns_in_every_output(tmp_path: Path) -> None:
    skill, cases = _project(tmp_path, cases=10)
    env = dict(os.environ, SKILL_EVALS_BWRAP=str(tmp_path / "missing"))
    outputs = {name: tmp_path / name for name in ("r.json", "r.md", "r.html", "r.xml")}
    proc = _run(
        tmp_path, skill, cases,
        *("--report", str(outputs["r.json"]), "--markdown", str(outputs["r.md"])),
        *("--html", str(outputs["r.html"]), "--junit", str(outputs["r.xml"])),
        env=env,
    )  # fmt: skip
    text = f"not sandboxed (bwrap not found): {WARNING}"
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count(f"skill-evals: warning: {text}") == 1
    report = json.loads(proc.stdout)
    assert report["sandbox"]["mode"] == "off" and report["sandbox"]["reason"] == "bwrap not found"
    assert text in report["messages"]
    assert "not sandboxed" in outputs["r.md"].read_text()
    assert "not sandboxed (bwrap not found)" in outputs["r.html"].read_text()
    assert '<property name="sandbox" value="warning: not sandboxed' in outputs["r.xml"].read_text()
    human = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--observations", str(tmp_path / "none.jsonl")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "not sandboxed" not in human.stderr  # nothing runs: no probe, no warning


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (("--sandbox", "maybe"), {}, "--sandbox"),
        ((), {"SKILL_EVALS_SANDBOX": "on"}, "SKILL_EVALS_SANDBOX"),
        (("--sandbox-path", "/no/such/place"), {}, "--sandbox-path"),
    ],
)
def test_bad_sandbox_input_is_exit_5_naming_it(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], named: str
) -> None:
    skill, cases = _project(tmp_path)
    proc = _run(tmp_path, skill, cases, *args, env={**os.environ, **env})
    assert proc.returncode == 5
    assert named in proc.stderr
    assert not list(tmp_path.rglob("probe-*.json"))


class _Upstream(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, str | None]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        type(self).seen.append((self.command, self.path, self.headers.get("x-api-key")))
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_custom_runner_gets_a_placeholder_and_the_upstream_the_key(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        skill = write_skill(tmp_path / "skills")
        cases = write_jsonl(
            tmp_path / "cases.jsonl",
            [{"id": f"c{i}", "prompt": f"q {i}", "expectTrigger": False} for i in range(10)],
        )
        secret = secrets.token_hex(20)
        upstream = f"http://127.0.0.1:{server.server_address[1]}/base"
        runner = f"{sys.executable} {PROXIED} MY_API_KEY"
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
                *("--cases", str(cases), "--runner", runner, "--trials", "1", "-q"),
                *("--format", "html", "--include-outputs", "--report", str(tmp_path / "r.json")),
                *("--credential", f"MY_API_KEY,x-api-key,{upstream}"),
            ],
            capture_output=True, text=True, timeout=300,
            env=dict(os.environ, MY_API_KEY=secret),
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["sandbox"]["proxied"] == ["MY_API_KEY"]
    placeholder = hashlib.sha256(b"skill-evals-proxy-placeholder").hexdigest()
    assert placeholder in proc.stdout and hashlib.sha256(secret.encode()).hexdigest() not in (
        proc.stdout
    )
    assert len(_Upstream.seen) == 20
    assert {s for s in _Upstream.seen} == {("POST", "/base/v1/messages?x=1", secret)}
    assert secret not in proc.stderr and secret not in (tmp_path / "r.json").read_text()


@pytest.mark.parametrize(
    "given",
    ["MY_API_KEY,cookie,http://127.0.0.1:9", "UNSET_KEY,bearer,http://127.0.0.1:9",
     "MY_API_KEY,bearer,ftp://127.0.0.1"],
)  # fmt: skip
def test_a_bad_credential_is_exit_5(tmp_path: Path, given: str) -> None:
    skill, cases = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "UNSET_KEY"}
    proc = _run(tmp_path, skill, cases, "--credential", given, env={**env, "MY_API_KEY": "k"})
    assert proc.returncode == 5
    assert "--credential" in proc.stderr
    assert not list(tmp_path.rglob("probe-*.json"))
