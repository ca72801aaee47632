"""An agent's error result is the runner's reason, never a task outcome: a fake ``claude`` (a
short script passed with ``--bin``) prints the stream-json lines the real CLI prints when it has
no credentials, when the API is overloaded, and when it quotes hostile text. ``skill-evals test``
runs as a subprocess with a private TMPDIR; the advice printed follows the reason's class."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_valid_report, write_jsonl, write_skill

# The events Claude Code prints, trimmed to the fields it always has (see the recorded
# transcripts in tests/agents/fixtures/claude-code/).
_INIT = {
    "type": "system",
    "subtype": "init",
    "cwd": "/p",
    "session_id": "s",
    "tools": ["Bash"],
    "model": "claude-x",
    "permissionMode": "acceptEdits",
    "skills": [],
}


def _synthetic(text: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "is_api_error_message": True,
        "session_id": "s",
        "message": {
            "id": "m1",
            "model": "<synthetic>",
            "role": "assistant",
            "type": "message",
            "content": [{"type": "text", "text": text}],
        },
    }


def _result(text: str, **fields: Any) -> dict[str, Any]:
    base = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "duration_ms": 12,
        "num_turns": 1,
        "result": text,
        "session_id": "s",
        "total_cost_usd": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    return {**base, **fields}


SCENARIOS: dict[str, list[dict[str, Any]]] = {
    # Claude Code 2.1.197 without a key: no api_error_status, no duration_api_ms.
    "not-logged-in": [
        _INIT,
        _synthetic("Not logged in · Please run /login"),
        _result("Not logged in · Please run /login"),
    ],
    # 2.1.328 without a key: "api_error" as terminal reason, nothing answered.
    "no-request-answered": [
        _INIT,
        _synthetic("API Error: Connection error."),
        _result(
            "API Error: Connection error.",
            terminal_reason="api_error",
            duration_api_ms=0,
            api_error_status=None,
        ),
    ],
    # Hostile, long text naming an API key: escaped and cut.
    "hostile": [
        _INIT,
        _result(
            "Invalid API key sk-ant-api03-SECRETKEY1234 \x1b[31m\u202e" + "more words " * 40,
            duration_api_ms=30,
            api_error_status=None,
        ),
    ],
    "overloaded": [
        _INIT,
        _result(
            "API Error: 529 overloaded",
            duration_api_ms=800,
            api_error_status=529,
            api_error_type="overloaded_error",
            terminal_reason="api_error",
        ),
    ],
}

PROMPTS = [
    ("t-refund", "How do I get a refund for my store purchase?", True),
    ("t-return", "Can I return a purchase without the receipt?", True),
    ("t-receipt", "I lost the receipt for a store purchase, what now?", True),
    ("t-window", "How long do refunds take after a return?", True),
    ("t-gift", "Can I return a gift and get a refund?", True),
    ("n-python", "Write a Python function that reverses a string", False),
    ("n-weather", "What is the weather like in Paris today?", False),
    ("n-sort", "Explain quicksort", False),
    ("n-poem", "Write a short poem about autumn", False),
    ("n-sql", "How do I join two tables in SQL?", False),
]


def _fake_claude(folder: Path, events: list[dict[str, Any]]) -> Path:
    """A ``claude`` that reads its stream-json stdin and prints ``events``, exit 1 like the CLI
    after an error result."""
    folder.mkdir(parents=True)
    script = folder / "claude"
    lines = "".join(json.dumps(e) + "\n" for e in events)
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n"
        f"sys.stdout.write({lines!r})\nsys.exit(1)\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def _run(tmp: Path, scenario: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    skill = write_skill(tmp / "skills")
    cases = write_jsonl(
        tmp / "cases.jsonl",
        [{"id": i, "prompt": p, "expectTrigger": t} for i, p, t in PROMPTS],
    )
    fake = _fake_claude(tmp / "bin", SCENARIOS[scenario])
    report = tmp / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    (tmp / "t").mkdir()
    env["TMPDIR"] = str(tmp / "t")
    argv = [
        "skill-evals",
        "test",
        "--skill",
        str(skill),
        "--cases",
        str(cases),
        "--runner",
        f"skill-evals runner claude-code --bin {fake}",
        "--trials",
        "1",
        "--jobs",
        "2",
        "--min-trigger-f1",
        "0.8",
        "--report",
        str(report),
        "-q",
        *extra,
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
    return proc, data


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scenario in SCENARIOS:
        extra: tuple[str, ...] = ("--retries", "1")
        if scenario == "not-logged-in":
            extra = ("--keep-going",)
        out[scenario] = _run(tmp_path_factory.mktemp(scenario), scenario, *extra)
    return out


NOT_LOGGED_IN = (
    "runner: not logged in / no credentials: Not logged in · Please run /login; "
    "set ANTHROPIC_API_KEY (or log in)"
)


def _reasons(report: Any) -> list[str]:
    return [f["reason"] for f in report["runner"]["failures"]]


def test_not_logged_in_is_a_runner_failure_not_missed_triggers(runs: dict[str, Any]) -> None:
    proc, report = runs["not-logged-in"]
    assert proc.returncode == 7, proc.stderr
    assert_valid_report(report)
    # --keep-going: every invocation failed the same way and none was scored as a task.
    assert set(_reasons(report)) == {NOT_LOGGED_IN}
    assert len(_reasons(report)) == 20
    assert report["trigger"]["tp"] + report["trigger"]["fn"] == 0
    text = proc.stdout
    assert NOT_LOGGED_IN in text
    assert "no usable credentials" in text
    # Cases that expect a trigger exist: no advice to add them, nor one about a server.
    assert "add cases with expectTrigger" not in text + json.dumps(report)
    assert "did not answer" not in text


def test_no_request_answered_is_no_credentials_whatever_the_terminal_reason(
    runs: dict[str, Any],
) -> None:
    proc, report = runs["no-request-answered"]
    assert proc.returncode == 7
    assert set(_reasons(report)) == {
        "runner: not logged in / no credentials: API Error: Connection error.; "
        "set ANTHROPIC_API_KEY (or log in)"
    }
    assert report["runner"]["retried"] == 0  # final: a rerun has no key either
    assert "no usable credentials" in proc.stdout


def test_quoted_agent_text_is_bounded_and_escaped(runs: dict[str, Any]) -> None:
    proc, report = runs["hostile"]
    assert proc.returncode == 7
    (reason,) = set(_reasons(report))
    said = reason.removeprefix("runner: not logged in / no credentials: ").split("; set ")[0]
    assert said.startswith("Invalid API key [redacted] \\u001b[31m\\u202emore words")
    assert "SECRETKEY" not in json.dumps(report) + proc.stdout + proc.stderr
    assert len(said) <= 120 and said.endswith("…")
    assert "\x1b" not in proc.stdout + proc.stderr and "\u202e" not in proc.stdout + proc.stderr


def test_an_overloaded_api_is_retryable_and_advised_as_such(runs: dict[str, Any]) -> None:
    proc, report = runs["overloaded"]
    assert proc.returncode == 7
    (reason,) = set(_reasons(report))
    assert "overloaded (HTTP 529" in reason
    assert report["runner"]["retried"] >= 1  # --retries 1: run once more
    assert "rate-limited or overloaded" in proc.stdout
    assert "credentials" not in proc.stdout.split("what to do:")[-1].splitlines()[0]
