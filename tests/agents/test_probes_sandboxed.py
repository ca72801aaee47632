"""The engine's own one-shot programs run in bubblewrap when the run is sandboxed: the agent's
``--version`` and ``node --version`` of the tested-release check, and Copilot's unpacking of
its package. Stand-ins report what they could reach — a file of the caller's home and a
credential variable (by hash: they are never told the secrets), a loopback port of the
machine — through what the engine reads back (the version they print, the unpacked copy);
the writes they try outside their folder are looked for on the host afterwards. With
``--sandbox off`` the same stand-ins reach all of it, as before."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents.copilot_package import MARKER, complete, unpack
from skill_evals.sandbox.bwrap import Sandbox
from tests.conftest import REPO, write_jsonl, write_skill

FIXTURES = REPO / "tests" / "agents" / "fixtures" / "claude-code"
# What a stand-in reached, one bit each (the files it writes are checked on the host).
SAW_HOME_FILE, CONNECTED, SAW_KEY, WROTE_OWN_HOME = 1, 2, 4, 8
# It tries each; the report is the sum of the bits reached.
PROBE = """
bits=0
h=$(sha256sum "{secret}" 2>/dev/null | cut -c1-64)
[ "$h" = "{secret_hash}" ] && bits=$((bits + 1))
(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && bits=$((bits + 2))
k=$(printf %s "$ANTHROPIC_API_KEY" | sha256sum | cut -c1-64)
[ "$k" = "{key_hash}" ] && bits=$((bits + 4))
touch "$HOME/own-home" 2>/dev/null && bits=$((bits + 8))
touch "{outside}" "{beside}" 2>/dev/null
"""
CLAUDE = """#!/bin/bash
if [ "$1" = "--version" ]; then
{probe}
echo "2.1.$((100 + bits)) (Claude Code)"; exit 0
fi
cat >/dev/null
if [ -d .claude/skills ]; then cat '{with_skill}'; else cat '{without}'; fi
"""
NODE = """#!/bin/bash
{probe}
echo "v20.0.$bits"
"""
COPILOT = """#!/bin/bash
[ "$COPILOT_SEA_EXTRACT_ONLY" = 1 ] || exit 0
{probe}
d="$COPILOT_PKG_CACHE_HOME/pkg/linux-x64/9.9.9"
mkdir -p "$d/prebuilds/linux-x64"
for f in index.js app.js cli-main.js prebuilds/linux-x64/runtime.node; do echo x > "$d/$f"; done
echo "$bits" > "$d/reached"
touch "$d/{marker}"
"""
KEY = "sk-ant-probe-" + secrets.token_hex(8)
SANDBOXED = WROTE_OWN_HOME  # its own fresh home: nothing else
UNSANDBOXED = SAW_HOME_FILE | CONNECTED | WROTE_OWN_HOME  # never the key: it is not passed


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Setting:
    """A caller's home holding a secret file, a listening loopback port and the stand-ins."""

    def __init__(self, tmp: Path, port: int) -> None:
        self.tmp = tmp
        self.home = tmp / "caller-home"
        self.home.mkdir()
        secret = self.home / ".secret"
        secret.write_bytes(secrets.token_bytes(32))
        # Under a `bin` folder: the sandbox binds the folder above it (read-only).
        self.bin = tmp / "tools" / "bin"
        self.bin.mkdir(parents=True)
        self.outside = tmp / "written-outside"
        self.beside = self.bin / "written-beside"
        self.probe = PROBE.format(
            secret=secret, secret_hash=_sha(secret.read_bytes()), port=port,
            key_hash=_sha(KEY.encode()), outside=self.outside, beside=self.beside,
        )  # fmt: skip

    def program(self, name: str, template: str) -> Path:
        # The runs it replays, beside it: the agent's sandbox holds the folder above `bin`.
        replays = self.bin.parent / "replays"
        shutil.copytree(FIXTURES, replays, dirs_exist_ok=True)
        path = self.bin / name
        path.write_text(
            template.format(
                probe=self.probe, marker=MARKER, with_skill=replays / "with-skill-tool.jsonl",
                without=replays / "without.jsonl",
            ),
            encoding="utf-8",
        )  # fmt: skip
        path.chmod(0o755)
        return path

    def written(self) -> list[str]:
        """The stand-ins' writes outside their folder that reached the host (then removed)."""
        found = [p.name for p in (self.outside, self.beside) if p.exists()]
        for path in (self.outside, self.beside):
            path.unlink(missing_ok=True)
        return found


@pytest.fixture(scope="module")
def listening() -> Iterator[int]:
    """A loopback port of the machine (connections wait in its backlog)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield server.getsockname()[1]


def _bwrap() -> str:
    program = shutil.which("bwrap")
    if program is None or not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    return program


def _test_cli(setting: Setting, *extra: str) -> subprocess.CompletedProcess[str]:
    tmp = setting.tmp
    skill = tmp / "skills" / "refund-policy"
    if not skill.exists():
        skill = write_skill(tmp / "skills")
    rows = [{"id": f"c{i}", "prompt": f"refund question {i}", "expectTrigger": i < 5}
            for i in range(10)]  # fmt: skip
    cases = write_jsonl(tmp / "cases.jsonl", rows)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ANTHROPIC_"))}
    env.update(HOME=str(setting.home), ANTHROPIC_API_KEY=KEY)
    env["PATH"] = f"{setting.bin}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", "skill-evals runner claude-code", "--trials", "1",
         "--arms", "with", "--max-invocations", "2", "--format", "json", *extra],
        capture_output=True, text=True, timeout=300, check=False, env=env, cwd=tmp,
    )  # fmt: skip


@pytest.fixture(scope="module")
def version_runs(tmp_path_factory: pytest.TempPathFactory, listening: int) -> dict[str, Any]:
    """`test` with the stand-in `claude` and `node`, sandboxed and with --sandbox off."""
    _bwrap()
    setting = Setting(tmp_path_factory.mktemp("versions"), listening)
    setting.program("claude", CLAUDE)
    setting.program("node", NODE)
    found: dict[str, Any] = {"bin": setting.bin}
    for label, mode in (("sandboxed", "required"), ("off", "off")):
        done = _test_cli(setting, "--sandbox", mode)
        found[label] = {"done": done, "report": json.loads(done.stdout)}
        found[label]["written"] = setting.written()
    return found


def _line(bin_dir: Path, bits: int) -> str:
    return (
        f"claude-code: found claude 2.1.{100 + bits} ({bin_dir / 'claude'}); tested with 2.1.328, "
        "results may differ; install it: npm install -g @anthropic-ai/claude-code@2.1.328; "
        f"Node v20.0.{bits} is on PATH; 2.1.328 needs Node ≥ 22 to install "
        "(actions/setup-node with node-version 22)"
    )


def test_the_version_checks_run_sandboxed(version_runs: dict[str, Any]) -> None:
    run = version_runs["sandboxed"]
    assert run["report"]["sandbox"]["mode"] == "bwrap", run["done"].stderr[-2000:]
    line = _line(version_runs["bin"], SANDBOXED)  # `claude` and `node` reached nothing
    assert f"skill-evals: warning: {line}" in run["done"].stderr.splitlines()
    assert run["report"]["messages"].count(line) == 1
    assert run["written"] == []  # neither beside the program nor elsewhere
    assert run["report"]["runner"]["failures"] == []


def test_with_the_sandbox_off_they_run_as_before(version_runs: dict[str, Any]) -> None:
    run = version_runs["off"]
    assert run["report"]["sandbox"]["mode"] == "off"
    line = _line(version_runs["bin"], UNSANDBOXED)  # the message is the same one
    assert f"skill-evals: warning: {line}" in run["done"].stderr.splitlines()
    assert run["report"]["messages"].count(line) == 1
    assert run["written"] == ["written-outside", "written-beside"]
    assert run["done"].returncode == version_runs["sandboxed"]["done"].returncode


def test_copilot_unpacks_sandboxed_into_a_usable_copy(tmp_path: Path, listening: int) -> None:
    """Its temporary folder is the only place it writes; the copy it leaves is complete."""
    sandbox = Sandbox(_bwrap())
    setting = Setting(tmp_path, listening)
    program = setting.program("copilot", COPILOT)
    env = {"PATH": os.environ["PATH"], "HOME": str(setting.home), "ANTHROPIC_API_KEY": KEY}
    store = tmp_path / "run" / "store"
    copy = unpack(str(program), store, env, sandbox)
    assert copy is not None and complete(copy) and copy.is_relative_to(store)
    assert int((copy / "reached").read_text(encoding="utf-8")) == SANDBOXED
    assert setting.written() == []
    assert [p.name for p in store.parent.iterdir()] == ["store"]  # its folder went too
    unsandboxed = unpack(str(program), tmp_path / "off" / "store", env, None)
    assert unsandboxed is not None
    assert int((unsandboxed / "reached").read_text(encoding="utf-8")) == UNSANDBOXED
    assert setting.written() == ["written-outside", "written-beside"]
