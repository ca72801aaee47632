"""Tested agent CLI versions: the registry agrees with the pins in .ci/agents/package.json, the
help, the agents' pages and every install line say the same, and a run on another version (or
an agent whose version cannot be read, or an old Node) says so once — with a stand-in `claude`
and a stand-in `node` on PATH, never changing an exit code."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from skill_evals.agents.registry import ENTRIES
from skill_evals.agents.versions import in_tested_range, parse_version
from skill_evals.cli.main import cli
from tests.ci.conftest import commit_all, git, run_cli
from tests.conftest import REPO, assert_valid_report, write_jsonl, write_skill

FIXTURES = REPO / "tests" / "agents" / "fixtures" / "claude-code"
PINS = json.loads((REPO / ".ci" / "agents" / "package.json").read_text("utf-8"))["dependencies"]
INSTALLED = REPO / ".cache" / "agents" / "node_modules"
CLAUDE = next(e for e in ENTRIES if e.name == "claude-code")
LINE = (
    "claude-code: found claude 2.1.197 ({bin}); tested with 2.1.328, results may differ; "
    "install it: npm install -g @anthropic-ai/claude-code@2.1.328"
)
NODE = "; Node v20.11.0 is on PATH; 2.1.328 needs Node ≥ 22 to install (actions/setup-node with node-version 22)"  # noqa: E501


def test_registry_pins_equal_the_tested_agents() -> None:
    assert {e.package: e.tested for e in ENTRIES} == PINS
    for entry in ENTRIES:
        manifest = INSTALLED / entry.package / "package.json"
        if manifest.is_file():  # installed by .ci/setup: its engines.node is the registry's
            data = json.loads(manifest.read_text("utf-8"))
            assert data["version"] == entry.tested
            assert (data.get("engines") or {}).get("node") == entry.node, entry.name


def test_the_tested_range_is_the_pin_and_later_releases_of_its_minor() -> None:
    for version, inside in [("2.1.328", True), ("2.1.400", True), ("2.1.327", False),
                            ("2.2.0", False), ("3.1.328", False), ("2.1.197", False)]:  # fmt: skip
        found = parse_version(version)
        assert found is not None and in_tested_range(CLAUDE, found) is inside, version


def test_runner_help_lists_each_agent_with_its_tested_version() -> None:
    text = CliRunner().invoke(cli, ["runner", "--help"], terminal_width=200).output
    for entry in ENTRIES:
        row = next(line for line in text.splitlines() if f"{entry.package}@{entry.tested}" in line)
        assert entry.name in row and f"Node ≥ {entry.node_label}" in row if entry.node else True


def test_agent_pages_say_the_tested_version_and_node() -> None:
    for entry in ENTRIES:
        page = (REPO / "docs" / "agents" / entry.doc).read_text("utf-8")
        assert f"npm install -g {entry.package}@{entry.tested}" in page, entry.doc
        if entry.node:
            assert f"Node ≥ {entry.node_label}" in page, entry.doc


def _documents() -> list[Path]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return docs + sorted(p for p in (REPO / "examples").rglob("*") if p.is_file())


_INSTALL = re.compile(r"npm (?:install|i)\b[^\n`]*")


def _package_of(word: str) -> str:
    """``@scope/name@1.2.3`` → ``@scope/name``; ``name`` stays."""
    at = word.rfind("@")
    return word[:at] if at > 0 else word


def test_every_install_line_pins_the_tested_version() -> None:
    packages = {e.package: e for e in ENTRIES}
    seen = 0
    for path in _documents():
        text = path.read_text("utf-8", errors="replace")
        for match in _INSTALL.finditer(text):
            for word in re.split(r"[\s,;()]+", match.group(0)):
                name = _package_of(word)
                if name in packages:
                    seen += 1
                    assert word == f"{name}@{packages[name].tested}", f"{path}: {match.group(0)}"
    assert seen >= 4


def _snippets(path: Path) -> list[str]:
    text = path.read_text("utf-8", errors="replace")
    if path.suffix in (".yml", ".yaml"):
        return [text]
    return re.findall(r"```ya?ml\n(.*?)```", text, flags=re.S)


def test_workflow_snippets_set_up_node_22_before_installing_claude_code() -> None:
    checked = 0
    for path in _documents():
        for snippet in _snippets(path):
            at = snippet.find(f"npm install -g {CLAUDE.package}")
            if at < 0:
                continue
            checked += 1
            before = snippet[:at]
            assert "actions/setup-node@" in before, f"{path}: no actions/setup-node first"
            setup = before[before.rindex("actions/setup-node@") :]
            assert re.search(r"node-version:\s*\"?22\"?", setup), f"{path}: node-version 22"
    assert checked >= 4


# ------------------------------------------------------------------------------ real runs


def _stand_ins(bin_dir: Path, version: str | None, node: str = "v22.12.0") -> Path:
    """A `claude` answering --version with ``version`` (None: --version fails) and replaying
    a captured stream-json run otherwise, and a `node` answering ``node``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    answer = f'echo "{version} (Claude Code)"; exit 0' if version else "echo oops >&2; exit 1"
    claude = bin_dir / "claude"
    claude.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then {answer}; fi\n'
        "cat >/dev/null\n"
        f"if [ -d .claude/skills ]; then cat '{FIXTURES / 'with-skill-tool.jsonl'}'; "
        f"else cat '{FIXTURES / 'without.jsonl'}'; fi\n",
        encoding="utf-8",
    )
    (bin_dir / "node").write_text(f"#!/bin/sh\necho {node}\n", encoding="utf-8")
    for program in ("claude", "node"):
        (bin_dir / program).chmod(0o755)
    return bin_dir


def _env(bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ANTHROPIC_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    return env


CASES = [
    {"id": f"c{i}", "prompt": f"refund question {i}", "expectTrigger": i < 5} for i in range(10)
]


def _test(tmp: Path, bin_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    skill = (
        write_skill(tmp / "skills")
        if not (tmp / "skills").exists()
        else tmp / "skills" / "refund-policy"
    )
    cases = write_jsonl(tmp / "cases.jsonl", CASES)
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", "skill-evals runner claude-code", "--trials", "1",
         "--jobs", "4", "--format", "json", *extra],
        capture_output=True, text=True, timeout=300, check=False, env=_env(bin_dir), cwd=tmp,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`test` with the tested release, an older one with an old Node, and a failing --version."""
    tmp = tmp_path_factory.mktemp("versions")
    found = {}
    setups = [("tested", "2.1.328", "v20.11.0"), ("later", "2.1.400", "v22.1.0"),
              ("old", "2.1.197", "v20.11.0"), ("unreadable", None, "v22.1.0")]  # fmt: skip
    for label, version, node in setups:
        bin_dir = _stand_ins(tmp / label / "bin", version, node)
        done = _test(tmp / label, bin_dir)
        found[label] = {"done": done, "report": json.loads(done.stdout), "bin": bin_dir}
    return found


def _warnings(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if "results may differ" in line]


def test_a_tested_release_says_nothing(runs: dict[str, Any]) -> None:
    for label in ("tested", "later"):
        assert _warnings(runs[label]["done"]) == [], label
        assert not any("results may differ" in m for m in runs[label]["report"]["messages"])


def test_another_release_is_said_once_on_stderr_and_in_the_report(runs: dict[str, Any]) -> None:
    old = runs["old"]
    line = LINE.format(bin=old["bin"] / "claude") + NODE
    assert _warnings(old["done"]) == [f"skill-evals: warning: {line}"]
    assert old["report"]["messages"].count(line) == 1
    assert_valid_report(old["report"])
    # the version changes no exit code
    assert old["done"].returncode == runs["tested"]["done"].returncode
    assert old["report"]["exitCode"] == runs["tested"]["report"]["exitCode"]


def test_an_unreadable_version_is_said_too(runs: dict[str, Any]) -> None:
    done = runs["unreadable"]["done"]
    binary = runs["unreadable"]["bin"] / "claude"
    (warning,) = _warnings(done)
    assert warning == (
        f"skill-evals: warning: claude-code: could not read the version of {binary}; tested "
        "with 2.1.328, results may differ; install it: npm install -g "
        "@anthropic-ai/claude-code@2.1.328"
    )  # Node 22 is on PATH: no Node clause
    assert done.returncode == runs["tested"]["done"].returncode


def test_the_runner_itself_checks_when_run_by_hand(tmp_path: Path) -> None:
    bin_dir = _stand_ins(tmp_path / "bin", "2.1.197", "v20.11.0")
    skill = write_skill(tmp_path / "skills")
    env = {**_env(bin_dir), "EVALGATE_SKILL_VARIANT": "with", "EVALGATE_SKILL_DIR": str(skill),
           "EVALGATE_SKILL_CASE_ID": "c1", "EVALGATE_SKILL_TRIAL": "1"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", "claude-code"], input="a refund?",
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _warnings(done) == [f"skill-evals: warning: {LINE.format(bin=bin_dir / 'claude')}{NODE}"]
    assert json.loads(done.stdout)["variant"] == "with"


def test_a_missing_binary_names_the_pinned_install_line(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    env = {"PATH": str(tmp_path / "empty"), "EVALGATE_SKILL_VARIANT": "with",
           "EVALGATE_SKILL_DIR": str(skill),
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", "claude-code"], input=b"x",
        capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    reason = json.loads(done.stdout)["runnerError"]
    assert reason == (
        "'claude' not found on PATH; install it or pass --bin PATH; the tested release: "
        "npm install -g @anthropic-ai/claude-code@2.1.328 (needs Node ≥ 22)"
    )


def test_ci_and_route_check_the_version_too(tmp_path: Path) -> None:
    bin_dir = _stand_ins(tmp_path / "bin", "2.1.197", "v22.1.0")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    skill = write_skill(repo / "skills")
    (skill / "evals").mkdir()
    write_jsonl(skill / "evals" / "cases.jsonl", CASES)
    (repo / ".skill-evals.yml").write_text(
        "runner: skill-evals runner claude-code\ntrials: 1\n", "utf-8"
    )
    commit_all(repo)
    out = tmp_path / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo, env={"PATH": _env(bin_dir)["PATH"]})
    line = LINE.format(bin=bin_dir / "claude")
    # ci names the skill the warning is about
    assert f"skill-evals: warning: refund-policy: {line}\n" in done.stderr, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["skills"][0]["report"]["messages"].count(line) == 1
    routes = write_jsonl(
        tmp_path / "routing.jsonl",
        [{"id": c["id"], "prompt": c["prompt"], "expect": ["refund-policy"]} for c in CASES],
    )
    route = subprocess.run(
        [sys.executable, "-m", "skill_evals", "route", "--skill", str(skill), "--cases",
         str(routes), "--runner", "skill-evals runner claude-code",
         "--trials", "1", "--format", "json"],
        capture_output=True, text=True, timeout=300, check=False, env=_env(bin_dir), cwd=repo,
    )  # fmt: skip
    assert _warnings(route) == [f"skill-evals: warning: {line}"], route.stderr[-3000:]
    assert json.loads(route.stdout)["messages"].count(line) == 1


def test_a_hanging_version_answer_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--version` that never answers is killed at the time bound: no version, one line."""
    from skill_evals.agents import versions

    hang = tmp_path / "claude"
    hang.write_text("#!/bin/sh\nsleep 30\n", encoding="utf-8")
    hang.chmod(0o755)
    monkeypatch.setattr(versions, "TIMEOUT_S", 0.5)
    started = time.monotonic()
    line = versions.version_warning(CLAUDE, str(hang), {"PATH": os.environ["PATH"]})
    assert time.monotonic() - started < 5
    assert line is not None and line.startswith(
        f"claude-code: could not read the version of {hang};"
    )
