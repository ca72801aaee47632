"""The built-in proposers against loopback fakes of the Anthropic Messages and OpenAI Chat
Completions APIs: `skill-evals propose …` as a subprocess pointed at them with dummy keys."""

from __future__ import annotations

import json
import subprocess
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

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-dummy-0123456789-PROPOSERKEY"
REQUEST = {
    "schemaVersion": 1, "round": 1, "rounds": 3,
    "skill": {"name": "invoice-audit", "description": "Audit invoices.", "whenToUse": "",
              "body": "Check totals."},
    "limits": {"descriptionMaxChars": 1024, "entryMaxChars": None},
    "train": {"tp": 1, "fp": 0, "fn": 2, "tn": 3, "precision": 1.0, "recall": 0.33, "f1": 0.5},
    "failures": [{"id": "doc1", "prompt": "Check the billing statement", "expectTrigger": True,
                  "trials": 1, "triggered": 0, "loaded": [[]]}],
    "history": [],
}  # fmt: skip
ANSWER = 'Here you go: {"description": "Audit invoices, receipts and billing.", "rationale": "r"}'


def _propose(provider: str, url: str, *more: str, key: bool = True) -> dict[str, Any]:
    done = run_model_command("propose", provider, url, KEY if key else None, REQUEST, *more)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and KEY not in done.stdout and KEY not in done.stderr
    answer: dict[str, Any] = json.loads(lines[0])
    return answer


def test_anthropic_proposer_sends_the_documented_request() -> None:
    server = FakeJudgeApi([anthropic_text(ANSWER)])
    try:
        answer = _propose("anthropic", server.url, "--model", "claude-x")
    finally:
        server.stop()
    assert answer["description"] == "Audit invoices, receipts and billing."
    assert answer["rationale"] == "r" and answer["meta"]["inputTokens"] == 120
    (seen,) = server.log
    assert seen["path"] == "/v1/messages" and seen["headers"]["x-api-key"] == KEY
    body = seen["body"]
    assert body["temperature"] == 0 and body["model"] == "claude-x"
    docs = (REPO / "docs" / "improve.md").read_text("utf-8")
    assert body["system"] in docs  # printed verbatim
    content = body["messages"][0]["content"]
    assert "Check the billing statement" in content and KEY not in json.dumps(body)


def test_openai_proposer_sends_the_documented_request() -> None:
    server = FakeJudgeApi([openai_text(ANSWER)])
    try:
        answer = _propose("openai", server.url, "--model", "gpt-x", "--max-tokens", "50")
    finally:
        server.stop()
    assert answer["description"] == "Audit invoices, receipts and billing."
    (seen,) = server.log
    assert seen["path"] == "/chat/completions"
    assert seen["headers"]["authorization"] == f"Bearer {KEY}"
    assert seen["body"]["max_tokens"] == 50 and seen["body"]["messages"][0]["role"] == "system"


@pytest.mark.parametrize(
    ("reply", "reason", "retryable"),
    [
        (Reply(401, b"{}"), "anthropic API answered HTTP 401: check the API key", False),
        (Reply(403, b"{}"), "anthropic API answered HTTP 403: check the API key", False),
        (Reply(429, b"{}"), "anthropic API answered HTTP 429", True),
        (Reply(529, b"{}"), "anthropic API answered HTTP 529", True),
        (Reply(503, b'{"error": "leak PROPOSERKEY"}'), "anthropic API answered HTTP 503", True),
        (Reply(drop=True), "anthropic API connection failed", True),
        (anthropic_text("no json here at all"), "the proposer model's reply holds no description",
         False),
    ],
)  # fmt: skip
def test_failures_are_proposer_errors(reply: Reply, reason: str, retryable: bool) -> None:
    server = FakeJudgeApi([reply])
    try:
        answer = _propose("anthropic", server.url, "--model", "claude-x")
    finally:
        server.stop()
    assert answer["proposerError"].startswith(reason)
    assert answer["retryable"] is retryable
    assert "leak" not in json.dumps(answer)


def test_no_key_and_no_model() -> None:
    server = FakeJudgeApi([])
    try:
        answer = _propose("openai", server.url, "--model", "gpt-x", key=False)
        assert answer == {
            "proposerError": "OPENAI_API_KEY is not set; export it to use this proposer",
            "retryable": False,
        }
        assert server.log == []
    finally:
        server.stop()
    done = subprocess.run(["skill-evals", "propose", "anthropic"], input="{}", capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 5 and "--model is required" in done.stderr
