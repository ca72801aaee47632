"""`skill-evals evidence --agent X FILE`: the loading evidence of a saved transcript as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skill_evals.cli import main
from tests.conftest import write_jsonl


def run_evidence(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The real console entry point, in process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["evidence", *args])
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 1), out, err


CLAUDE_EVENTS: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "skills": ["refund-policy", "brand-deck"]},
    {
        "type": "assistant",
        "message": {
            "content": [
                {
                    "type": "tool_use",
                    "id": "a",
                    "name": "Skill",
                    "input": {"skill": "refund-policy"},
                },
                {
                    "type": "tool_use",
                    "id": "b",
                    "name": "Read",
                    "input": {"file_path": "/tmp/p/.claude/skills/brand-deck/SKILL.md"},
                },
                {"type": "tool_use", "id": "c", "name": "mcp__skills__load_pdf_skill", "input": {}},
                {"type": "tool_use", "id": "d", "name": "mcp__skills__load_csv_skill", "input": {}},
            ]
        },
    },
    {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "Launching skill"},
                {"type": "tool_result", "tool_use_id": "b", "content": "---\nname: brand-deck"},
            ]
        },
    },
    {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "tool_use_id": "c", "content": "---\nname: pdf"},
                {"type": "tool_result", "tool_use_id": "d", "content": "boom", "is_error": True},
            ]
        },
    },
    {"type": "result", "subtype": "success", "is_error": False, "result": "done"},
]


def test_claude_code_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transcript = write_jsonl(tmp_path / "claude.jsonl", CLAUDE_EVENTS)
    code, out, err = run_evidence(capsys, "--agent", "claude-code", str(transcript))
    assert (code, err) == (0, "")
    assert json.loads(out) == [
        {
            "skill": "refund-policy",
            "delivery": "native",
            "agent": "claude-code",
            "source": "Skill tool_use",
            "index": 2,
        },
        {
            "skill": "brand-deck",
            "delivery": "native",
            "agent": "claude-code",
            "source": "Read SKILL.md",
            "index": 2,
        },
        {
            "skill": "pdf",
            "delivery": "mcp",
            "agent": "claude-code",
            "source": "mcp tool mcp__skills__load_pdf_skill",
            "index": 3,
        },
    ]


def test_codex_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [
        {"type": "thread.started", "thread_id": "t"},
        {
            "type": "item.completed",
            "item": {
                "id": "1",
                "type": "mcp_tool_call",
                "server": "skills",
                "tool": "load_refund_policy_skill",
                "status": "completed",
                "result": {"content": [{"type": "text", "text": "---"}]},
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "2",
                "type": "command_execution",
                "command": "bash -lc 'cat .agents/skills/brand-deck/SKILL.md'",
                "status": "completed",
                "exit_code": 0,
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "3",
                "type": "mcp_tool_call",
                "server": "skills",
                "tool": "load_pdf_skill",
                "status": "failed",
                "error": {"message": "x"},
            },
        },
    ]
    transcript = write_jsonl(tmp_path / "codex.jsonl", events)
    code, out, _ = run_evidence(capsys, "--agent", "codex", str(transcript))
    assert code == 0
    loads = json.loads(out)
    assert [(x["skill"], x["delivery"], x["agent"], x["index"]) for x in loads] == [
        ("refund-policy", "mcp", "codex", 1),
        ("brand-deck", "native", "codex", 2),
    ]
    assert set(loads[0]) == {"skill", "delivery", "agent", "source", "index"}


def test_pi_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [
        {
            "type": "tool_execution_start",
            "toolCallId": "r1",
            "toolName": "read",
            "args": {"path": "/tmp/w/skills/refund-policy/SKILL.md"},
        },
        {"type": "tool_execution_end", "toolCallId": "r1", "toolName": "read", "isError": False},
        {
            "type": "tool_execution_start",
            "toolCallId": "r2",
            "toolName": "read",
            "args": {"path": "/tmp/w/skills/missing/SKILL.md"},
        },
        {"type": "tool_execution_end", "toolCallId": "r2", "toolName": "read", "isError": True},
    ]
    transcript = write_jsonl(tmp_path / "pi.jsonl", events)
    code, out, _ = run_evidence(capsys, "--agent", "pi", str(transcript))
    assert code == 0
    assert [(x["skill"], x["delivery"], x["agent"], x["index"]) for x in json.loads(out)] == [
        ("refund-policy", "native", "pi", 1)
    ]


def test_no_evidence_is_an_empty_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transcript = tmp_path / "empty.jsonl"
    transcript.write_text("not json at all\n\n", encoding="utf-8")
    code, out, _ = run_evidence(capsys, "--agent", "claude-code", str(transcript))
    assert (code, json.loads(out)) == (0, [])


def test_unreadable_file_exits_5_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.jsonl"
    code, out, err = run_evidence(capsys, "--agent", "codex", str(missing))
    assert code == 5
    assert out == ""
    assert str(missing) in err and "cannot read" in err
    assert len(err.strip().splitlines()) == 1


def test_directory_instead_of_file_exits_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_evidence(capsys, "--agent", "pi", str(tmp_path))
    assert code == 5
    assert out == ""
    assert str(tmp_path) in err


def test_unknown_agent_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transcript = write_jsonl(tmp_path / "t.jsonl", [{}])
    code, _, err = run_evidence(capsys, "--agent", "no-such-agent", str(transcript))
    assert code == 5
    assert "no-such-agent" in err


def test_custom_patterns_from_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / ".skill-evals.yml"
    config.write_text(
        "evidence:\n  toolPatterns: ['get_skill_(?P<name>[a-z_]+)']\n", encoding="utf-8"
    )
    events = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "a",
                        "name": "mcp__docs__get_skill_refund_policy",
                        "input": {},
                    }
                ]
            },
        },
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "a"}]}},
    ]
    transcript = write_jsonl(tmp_path / "t.jsonl", events)
    code, out, _ = run_evidence(capsys, "--agent", "claude-code", str(transcript))
    assert (code, json.loads(out)) == (0, [])  # not a load without the pattern
    code, out, _ = run_evidence(
        capsys, "--agent", "claude-code", "--config", str(config), str(transcript)
    )
    assert code == 0
    assert [x["skill"] for x in json.loads(out)] == ["refund-policy"]


def test_invalid_pattern_in_config_exits_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / ".skill-evals.yml"
    config.write_text("evidence:\n  uriPatterns: ['skill://(unclosed']\n", encoding="utf-8")
    transcript = write_jsonl(tmp_path / "t.jsonl", [{}])
    code, out, err = run_evidence(capsys, "--agent", "pi", "--config", str(config), str(transcript))
    assert code == 5
    assert "uriPatterns[0]" in err and str(config) in err
    assert out == ""
