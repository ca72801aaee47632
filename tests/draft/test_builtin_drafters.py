"""The built-in drafters against loopback fakes of the Anthropic Messages and OpenAI Chat
Completions APIs: `skill-evals draft …` alone (success, 401, 429, 529, 5xx, a dropped
connection, no key), and behind `cases draft` in the sandbox, its key through the credential
proxy — and, with no key, exit 7 before any call."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_judge_api import (
    FakeJudgeApi,
    Reply,
    anthropic_text,
    openai_text,
    run_model_command,
)
from tests.draft.test_cases_draft import GOOD, _env, _skill

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-dummy-0123456789-DRAFTERKEY"
REQUEST = {
    "skill": {"name": "invoice-audit", "description": "Audit invoices.", "body": "Check totals."},
    "neighbours": [{"name": "gift-cards", "description": "Gift cards."}],
    "buckets": {"explicit": 4, "implicit": 4, "contextual": 2, "near-miss": 6, "unrelated": 4},
    "withTasks": False,
}
ANSWER = "Here they are: " + json.dumps({"cases": GOOD})


def _draft(provider: str, url: str, *more: str, key: bool = True) -> dict[str, Any]:
    done = run_model_command("draft", provider, url, KEY if key else None, REQUEST, *more)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and KEY not in done.stdout + done.stderr
    answer: dict[str, Any] = json.loads(lines[0])
    return answer


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_builtin_drafter_sends_the_documented_request(provider: str) -> None:
    text = anthropic_text if provider == "anthropic" else openai_text
    server = FakeJudgeApi([text(ANSWER)])
    try:
        answer = _draft(provider, server.url, "--model", "m-x")
    finally:
        server.stop()
    assert answer["cases"] == GOOD and answer["meta"]["inputTokens"] > 0
    (seen,) = server.log
    body = seen["body"]
    assert body["temperature"] == 0 and body["model"] == "m-x" and body["max_tokens"] == 8192
    if provider == "anthropic":
        assert seen["headers"]["x-api-key"] == KEY
        system, user = body["system"], body["messages"][0]["content"]
    else:
        assert seen["headers"]["authorization"] == f"Bearer {KEY}"
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert system in (REPO / "docs" / "drafting.md").read_text("utf-8")  # printed verbatim
    assert json.loads(user) == REQUEST  # one JSON document, exactly the request


@pytest.mark.parametrize(
    ("reply", "reason", "retryable"),
    [
        (Reply(401, b"{}"), "openai API answered HTTP 401: check the API key", False),
        (Reply(429, b"{}"), "openai API answered HTTP 429", True),
        (Reply(529, b"{}"), "openai API answered HTTP 529", True),
        (Reply(502, b'{"error": "leak DRAFTERKEY"}'), "openai API answered HTTP 502", True),
        (Reply(drop=True), "openai API connection failed", True),
        (openai_text("sorry, no cases"), "the drafter model's reply holds no cases", False),
    ],
)
def test_failures_are_runner_errors(reply: Reply, reason: str, retryable: bool) -> None:
    server = FakeJudgeApi([reply])
    try:
        answer = _draft("openai", server.url, "--model", "gpt-x")
    finally:
        server.stop()
    assert set(answer) == {"runnerError", "retryable"}
    assert answer["runnerError"].startswith(reason) and answer["retryable"] is retryable
    assert "leak" not in json.dumps(answer)


def _cases_draft(tmp: Path, url: str, key: str | None, *more: str) -> Any:
    import subprocess

    env = _env(tmp) | {"ANTHROPIC_BASE_URL": url, "NO_PROXY": "127.0.0.1"}
    if key is not None:
        env["ANTHROPIC_API_KEY"] = key
    args = [sys.executable, "-m", "skill_evals", "cases", "draft", "--skill",
            "skills/invoice-audit", "--drafter", "skill-evals draft anthropic --model claude-x",
            "--sandbox", "required", "--format", "json", *more]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp, env=env,
                          check=False)  # fmt: skip


def test_cases_draft_with_the_builtin_drafter(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    _skill(tmp_path, "invoice-audit", "Audit supplier invoices.", "# Audit\n\nCheck.\n", "M")
    server = FakeJudgeApi([Reply(529, b"{}"), anthropic_text(ANSWER)])
    try:
        no_key = _cases_draft(tmp_path, server.url, None, "--out", "a.jsonl")
        assert no_key.returncode == 7 and server.log == []
        assert (
            "--drafter: skill-evals draft anthropic needs ANTHROPIC_API_KEY, which is not set"
            in no_key.stderr
        )
        done = _cases_draft(tmp_path, server.url, KEY, "--out", "b.jsonl", "--retries", "1")
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    assert json.loads(done.stdout)["drafter"] == {"calls": 1}
    assert len(server.log) == 2  # the 529 was retried
    assert all(seen["headers"]["x-api-key"] == KEY for seen in server.log)  # set by the proxy
    assert (tmp_path / "b.jsonl").exists() and not (tmp_path / "a.jsonl").exists()
