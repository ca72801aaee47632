"""The agent runners side by side (fast, no real agent): each runner is driven with a
stand-in binary that replays a transcript captured from the real CLI, so the same checks run
against every runner's plumbing — what it reports, what it refuses, and how it fails."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from skill_evals.agents import claude_code, codex, copilot, gemini, opencode, pi, qwen
from skill_evals.agents.base import AgentInvocation, AgentOptions, RunnerSetupError
from skill_evals.agents.registry import names as agent_names
from skill_evals.agents.scaffold import TRANSCRIPT_DIR_VAR
from tests.agents.conftest import workspaces_in
from tests.conftest import write_skill

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The engine's meta keys, plus "turns" (OpenCode's model steps, Gemini's model turns; the
# engine ignores it).
META_KEYS = {"durationMs", "costUsd", "inputTokens", "outputTokens", "turns"}

# agent -> (module, captured `with` transcript, captured failed-load transcript, environment)
AGENTS: dict[str, tuple[ModuleType, str, str, dict[str, str]]] = {
    "claude-code": (claude_code, "claude-code/with-skill-tool.jsonl",
                    "claude-code/failed-load.jsonl", {}),
    "codex": (codex, "codex/native_with.jsonl", "codex/failed_read.jsonl", {"OPENAI_API_KEY": "k"}),
    "pi": (pi, "pi/with.jsonl", "pi/failed-read.jsonl", {}),
    "opencode": (opencode, "opencode/with.jsonl", "opencode/probes.jsonl", {}),
    "gemini": (gemini, "gemini/with.jsonl", "gemini/failed-activate.jsonl",
               {"GEMINI_API_KEY": "k"}),
    "copilot": (copilot, "copilot/with.jsonl", "copilot/failed-load.jsonl",
                {"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9"}),
    "qwen": (qwen, "qwen/server-error-once.jsonl", "qwen/failed-skill.jsonl",
             {"OPENAI_API_KEY": "k"}),
}  # fmt: skip
# Options an agent cannot run without (OpenCode needs --model provider/model).
DEFAULTS: dict[str, dict[str, Any]] = {"opencode": {"model": "fake/m1"}, "copilot": {"model": "m1"}}


def stand_in(tmp_path: Path, transcript: Path, status: int = 0) -> str:
    """An executable that reads its stdin to EOF, prints ``transcript`` and exits ``status``."""
    script = tmp_path / "agent"
    script.write_text(
        f"#!/bin/sh\ncat >/dev/null\ncat '{transcript}'\nexit {status}\n", encoding="utf-8"
    )
    script.chmod(0o755)
    return str(script)


def run(
    agent: str,
    tmp_path: Path,
    variant: str,
    transcript: Path,
    monkeypatch: pytest.MonkeyPatch,
    **options: Any,
) -> Any:
    module, _, _, extra = AGENTS[agent]
    private_tmp = tmp_path / "tmp"
    if agent == "qwen" and not private_tmp.exists():
        # Qwen Code cannot name its chat log folder after a workspace path past 255 characters,
        # which pytest's folders under a long TMPDIR (as .ci/run sets) pass: a short one.
        short = tempfile.mkdtemp(prefix="sq-", dir="/tmp")
        atexit.register(shutil.rmtree, short, True)
        private_tmp.symlink_to(short, target_is_directory=True)
    private_tmp.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    skill = write_skill(tmp_path / "skills")
    invocation = AgentInvocation(
        "with" if variant == "with" else "without", skill, "case/1", 2, "PROMPT-TEXT"
    )
    env = {"PATH": os.environ["PATH"], **extra, TRANSCRIPT_DIR_VAR: str(tmp_path / "saved")}
    options = {**DEFAULTS.get(agent, {}), **options}
    opts = AgentOptions(bin=stand_in(tmp_path, transcript), **options)
    return module.run(invocation, opts, env)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_completed_load_is_reported_with_the_contract_fields(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(agent, tmp_path, "with", FIXTURES / AGENTS[agent][1], monkeypatch)
    line = json.loads(result.to_line())
    assert set(line) == {"variant", "invokedSkills", "output", "exitCode", "meta", "evidence",
                         "toolCalls"}  # fmt: skip
    assert all(set(call) == {"name", "input", "ok"} for call in line["toolCalls"])
    assert {"skill": "refund-policy", "state": "offered", "delivery": "native",
            "source": "runner"} in line["evidence"]  # fmt: skip
    assert next(e for e in line["evidence"] if e["state"] == "loaded")["skill"] == "refund-policy"
    assert line["variant"] == "with" and line["invokedSkills"] == ["refund-policy"]
    assert line["exitCode"] == 0 and "30 days" in line["output"]
    assert {"inputTokens", "outputTokens"} <= set(line["meta"]) <= META_KEYS
    assert workspaces_in(tmp_path / "tmp") == []  # workspace removed
    # The transcript is saved under the same name by every runner, the agent's own event
    # stream first (Gemini's runner appends the chat session records after it).
    saved = tmp_path / "saved" / "case_1.2.with.jsonl"
    assert saved.read_bytes().startswith((FIXTURES / AGENTS[agent][1]).read_bytes())


@pytest.mark.parametrize("agent", AGENTS)
def test_the_tested_skill_loaded_in_without_is_reported(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leak must reach the engine as an isolation breach, never be filtered out: the tested
    skill is a known name in both variants."""
    result = run(agent, tmp_path, "without", FIXTURES / AGENTS[agent][1], monkeypatch)
    assert result.variant == "without" and result.invoked_skills == ["refund-policy"]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_failed_load_is_not_reported(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(agent, tmp_path, "with", FIXTURES / AGENTS[agent][2], monkeypatch)
    assert result.invoked_skills == [] and result.exit_code == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_an_agent_without_a_result_is_a_setup_error_without_the_prompt(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n", encoding="utf-8")
    with pytest.raises(RunnerSetupError) as info:
        run(agent, tmp_path, "with", empty, monkeypatch)
    assert "PROMPT-TEXT" not in str(info.value) and "--keep-workspace" in str(info.value)
    assert workspaces_in(tmp_path / "tmp") == []


@pytest.mark.parametrize("agent", AGENTS)
def test_missing_binaries_and_name_clashes_are_setup_errors(agent: str, tmp_path: Path) -> None:
    module, _, _, extra = AGENTS[agent]
    skill = write_skill(tmp_path / "a")
    invocation = AgentInvocation("with", skill, "c", 1, "p")
    env = {"PATH": str(tmp_path / "empty-path"), **extra}
    with pytest.raises(RunnerSetupError, match="not found on PATH; install it or pass --bin"):
        module.run(invocation, AgentOptions(), env)
    with pytest.raises(RunnerSetupError, match="not an executable file"):
        module.run(invocation, AgentOptions(bin=str(tmp_path / "nope" / "agent")), env)
    twin = write_skill(tmp_path / "b")  # same name as the skill under test
    with pytest.raises(RunnerSetupError, match=r"--with-skill .*refund-policy"):
        opts = AgentOptions(bin=sys.executable, with_skills=(twin,), **DEFAULTS.get(agent, {}))
        module.run(invocation, opts, env)


@pytest.mark.parametrize(
    ("agent", "folder"),
    [("claude-code", ".claude/skills"), ("codex", ".agents/skills"), ("pi", ".agents/skills"),
     ("pi", ".pi/skills"), ("opencode", ".opencode/skills"), ("opencode", ".claude/skills"),
     ("gemini", ".gemini/skills"), ("gemini", ".agents/skills"),
     ("copilot", ".github/skills"), ("copilot", ".claude/skills")],
)  # fmt: skip
def test_a_fixture_holding_the_tested_skill_is_refused_in_both_variants(
    agent: str, folder: str, tmp_path: Path
) -> None:
    module, _, _, extra = AGENTS[agent]
    skill = write_skill(tmp_path / "a")
    fixture = tmp_path / "fixture"
    write_skill(fixture / folder)
    env = {"PATH": os.environ["PATH"], **extra}
    for variant in ("with", "without"):
        invocation = AgentInvocation(variant, skill, "c", 1, "p")
        with pytest.raises(RunnerSetupError, match=f"{folder}/refund-policy"):
            opts = AgentOptions(bin=sys.executable, fixture=fixture, **DEFAULTS.get(agent, {}))
            module.run(invocation, opts, env)


def test_every_registered_agent_is_tested_here_documented_and_a_runner() -> None:
    """The registry is the one list: each agent has captured transcripts above, a docs page
    linked from the index, a `skill-evals runner` subcommand and an `evidence --agent` choice."""
    from click.testing import CliRunner

    from skill_evals.agents.registry import ENTRIES
    from skill_evals.cli.main import cli

    assert list(AGENTS) == agent_names()
    docs = Path(__file__).resolve().parents[2] / "docs" / "agents"
    index = (docs / "README.md").read_text(encoding="utf-8")
    runner_help = CliRunner().invoke(cli, ["runner", "--help"]).output
    evidence_help = CliRunner().invoke(cli, ["evidence", "--help"]).output
    for entry in ENTRIES:
        plugin = entry.load()
        assert plugin.name == entry.name and plugin is AGENTS[entry.name][0].PLUGIN
        assert (docs / entry.doc).is_file() and f"]({entry.doc})" in index
        assert entry.name in runner_help and entry.name in evidence_help
