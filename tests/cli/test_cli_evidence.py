"""`skill-evals evidence --agent X FILE`: the loading evidence of a saved transcript as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skill_evals.cli.main import main
from tests.conftest import write_jsonl, write_skill


def run_evidence(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The real console entry point, in process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["evidence", *args])
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 1), out, err


BODY = "# Steps\n\n" + "".join(
    f"{i}. Check the receipt date, the item condition and the payment method before step {i + 1}.\n"
    for i in range(1, 6)
)


def catalog(root: Path) -> dict[str, Path]:
    """Three skills whose SKILL.md texts are long enough for content proof."""
    return {
        "refund-policy": write_skill(root, "refund-policy", body=BODY),
        "brand-deck": write_skill(
            root, "brand-deck", "Make decks in the brand style.", BODY.replace("receipt", "logo")
        ),
        "pdf": write_skill(root, "pdf", "Work with PDF files.", BODY.replace("receipt", "page")),
    }


def skill_args(skills: dict[str, Path]) -> list[str]:
    return [arg for path in skills.values() for arg in ("--skill", str(path))]


def text_of(skills: dict[str, Path], name: str) -> str:
    return (skills[name] / "SKILL.md").read_text(encoding="utf-8")


def claude_events(skills: dict[str, Path]) -> list[dict[str, Any]]:
    """Skill tool (a load), a Read whose result shows brand-deck's text (a load by content), a
    Read that only names pdf's path and fails, an MCP load that errors."""
    numbered = "".join(
        f"{n:>6}→{line}\n" for n, line in enumerate(text_of(skills, "brand-deck").splitlines(), 1)
    )
    return [
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
                    {
                        "type": "tool_use",
                        "id": "c",
                        "name": "Read",
                        "input": {"file_path": "/tmp/p/.claude/skills/pdf/SKILL.md"},
                    },
                    {
                        "type": "tool_use",
                        "id": "d",
                        "name": "mcp__skills__load_csv_skill",
                        "input": {},
                    },
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "Launching skill"},
                    {"type": "tool_result", "tool_use_id": "b", "content": numbered},
                    {
                        "type": "tool_result",
                        "tool_use_id": "c",
                        "content": "File does not exist.",
                        "is_error": True,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "d",
                        "content": "boom",
                        "is_error": True,
                    },
                ]
            },
        },
        {"type": "result", "subtype": "success", "is_error": False, "result": "done"},
    ]


def loaded(out: str) -> list[tuple[str, str, int]]:
    """(skill, delivery, index) of the loaded entries, in output order."""
    return [
        (x["skill"], x["delivery"], x["index"])
        for x in json.loads(out)
        if x.get("state", "loaded") == "loaded"
    ]


def test_claude_code_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skills = catalog(tmp_path / "skills")
    transcript = write_jsonl(tmp_path / "claude.jsonl", claude_events(skills))
    code, out, err = run_evidence(
        capsys, "--agent", "claude-code", *skill_args(skills), str(transcript)
    )
    assert (code, err) == (0, "")
    # The native tool and the content shown by Read count (line-number prefixes removed); the
    # failed Read that only named pdf's path and the failed MCP call do not.
    assert loaded(out) == [("refund-policy", "native", 2), ("brand-deck", "read", 2)]
    assert all(x["agent"] == "claude-code" and x["source"] for x in json.loads(out))


def test_claude_code_read_without_the_skill_text_is_not_a_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skills = catalog(tmp_path / "skills")
    events = claude_events(skills)
    # Without --skill nothing can prove brand-deck's content: only the native tool counts.
    transcript = write_jsonl(tmp_path / "claude.jsonl", events)
    code, out, _ = run_evidence(capsys, "--agent", "claude-code", str(transcript))
    assert code == 0
    assert loaded(out) == [("refund-policy", "native", 2)]


def test_codex_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skills = catalog(tmp_path / "skills")
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
                "result": {"content": [{"type": "text", "text": text_of(skills, "refund-policy")}]},
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "2",
                "type": "command_execution",
                "command": "bash -lc 'cat .agents/skills/*/SKILL.md'",
                "aggregated_output": text_of(skills, "brand-deck"),
                "status": "completed",
                "exit_code": 0,
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "3",
                "type": "command_execution",
                "command": "bash -lc 'cat .agents/skills/pdf/SKILL.md 2>/dev/null || echo none'",
                "aggregated_output": "none\n",
                "status": "completed",
                "exit_code": 0,
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "4",
                "type": "mcp_tool_call",
                "server": "skills",
                "tool": "load_pdf_skill",
                "status": "failed",
                "error": {"message": "x"},
            },
        },
    ]
    transcript = write_jsonl(tmp_path / "codex.jsonl", events)
    code, out, _ = run_evidence(capsys, "--agent", "codex", *skill_args(skills), str(transcript))
    assert code == 0
    # A glob that shows brand-deck's text counts; `cat … || echo` that printed nothing of pdf
    # and the failed MCP call do not.
    assert loaded(out) == [("refund-policy", "mcp", 1), ("brand-deck", "read", 2)]
    assert {"skill", "delivery", "agent", "source", "index"} <= set(json.loads(out)[0])


def test_pi_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skills = catalog(tmp_path / "skills")
    events = [
        {
            "type": "tool_execution_start",
            "toolCallId": "r1",
            "toolName": "read",
            "args": {"path": "/tmp/w/skills/refund-policy/SKILL.md"},
        },
        {
            "type": "tool_execution_end",
            "toolCallId": "r1",
            "toolName": "read",
            "result": {"content": [{"type": "text", "text": text_of(skills, "refund-policy")}]},
            "isError": False,
        },
        {
            "type": "tool_execution_start",
            "toolCallId": "r2",
            "toolName": "bash",
            "args": {"command": "ls -l /tmp/w/skills/pdf/SKILL.md"},
        },
        {
            "type": "tool_execution_end",
            "toolCallId": "r2",
            "toolName": "bash",
            "result": {"content": [{"type": "text", "text": "-rw-r--r-- 1 u u 544 SKILL.md"}]},
            "isError": False,
        },
    ]
    transcript = write_jsonl(tmp_path / "pi.jsonl", events)
    code, out, _ = run_evidence(capsys, "--agent", "pi", *skill_args(skills), str(transcript))
    assert code == 0
    # The read that showed the text counts; `ls` naming pdf's path does not.
    assert [(s, i) for s, _d, i in loaded(out)] == [("refund-policy", 1)]


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
