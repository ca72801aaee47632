"""A runner's own reasons: by HTTP status, from each agent's own error records, and printed as
the runnerError line of the runner contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import claude_code, codex, pi, reasons
from skill_evals.agents.base import RunnerSetupError
from tests.conftest import write_skill


@pytest.mark.parametrize(
    ("status", "words", "retryable"),
    [
        (401, "auth refused by the model API (HTTP 401", False),
        (403, "auth refused by the model API (HTTP 403", False),
        (429, "rate limited by the model API (HTTP 429", True),
        (529, "the model API is overloaded (HTTP 529", True),
        (500, "server error from the model API (HTTP 500", True),
        (503, "server error from the model API (HTTP 503", True),
        (408, "the model API timed out (HTTP 408", True),
        (400, "the model API refused the request (HTTP 400", False),
        (None, "no answer from the model API", True),
    ],
)
def test_reasons_by_status(status: int | None, words: str, retryable: bool) -> None:
    error = reasons.api_failure(status, "rate_limit_error", "check KEY")
    assert str(error).startswith(words) and error.retryable is retryable
    assert "rate_limit_error" in str(error)
    # An error type that is not a plain identifier (it comes from the agent) is left out.
    assert "<" not in str(reasons.api_failure(status, "<b>x</b>"))


def test_statuses_are_found_in_agent_messages() -> None:
    assert reasons.status_in("unexpected status 401 Unauthorized: x, url: http://h:8080/v1") == 401
    assert reasons.status_in("exceeded retry limit, last status: 429 Too Many Requests") == 429
    assert reasons.status_in("429 scripted failure", anchored=True) == 429
    assert reasons.status_in("took 1.500 s, 12345 tokens") is None
    assert reasons.status_in("error 429", anchored=True) is None
    assert reasons.status_in("x" * 600 + " status 500") is None  # only the start is scanned
    limit = reasons.turn_limit(3)
    assert "--max-turns 3" in str(limit) and limit.retryable is False


def test_claude_code_reasons_come_from_the_result_event() -> None:
    def result(**fields: Any) -> list[dict[str, Any]]:
        return [{"type": "result", "subtype": "success", "is_error": True, **fields}]

    rate = claude_code.api_failure(result(api_error_status=429, api_error_type="rate_limit_error"))
    assert rate is not None and rate.retryable and "HTTP 429 rate_limit_error" in str(rate)
    down = claude_code.api_failure(result(terminal_reason="api_error", duration_api_ms=40))
    assert down is not None and not down.retryable and "no answer" in str(down)
    assert claude_code.api_failure(result(is_error=False, api_error_status=500)) is None
    limit = claude_code.outcome([{"type": "result", "subtype": "error_max_turns"}])
    assert limit is not None and limit.max_turns


@pytest.mark.parametrize(
    ("message", "words", "retryable"),
    [
        ("unexpected status 401 Unauthorized: scripted failure, url: http://127.0.0.1:1/v1",
         "auth refused by the model API (HTTP 401)", False),
        ("exceeded retry limit, last status: 429 Too Many Requests",
         "rate limited by the model API (HTTP 429)", True),
        ("unexpected status 529 <unknown status code>: x",
         "the model API is overloaded (HTTP 529)", True),
        ('{"error": {"message": "scripted failure", "type": "invalid_request_error"}}',
         "the model API refused the request (invalid_request_error)", False),
        ("We’re currently experiencing high demand, which may cause temporary errors.",
         "server error from the model API (HTTP 500)", True),
        ("stream disconnected before completion", "no answer from the model API", True),
    ],
)  # fmt: skip
def test_codex_reasons_come_from_turn_failed(message: str, words: str, retryable: bool) -> None:
    error = codex.turn_failure(message)
    assert str(error).startswith(words) and error.retryable is retryable
    assert "scripted failure" not in str(error) and "127.0.0.1" not in str(error)


def test_pi_reasons_come_from_the_error_message() -> None:
    transcript = pi.Transcript()
    message = {"role": "assistant", "content": [], "stopReason": "error",
               "errorMessage": "529 scripted failure"}  # fmt: skip
    for event in ({"type": "message_end", "message": message}, {"type": "agent_end"}):
        transcript.add(event)
    with pytest.raises(RunnerSetupError, match=r"overloaded \(HTTP 529\)") as info:
        pi.outcome(transcript, 0, 5, None)
    assert info.value.retryable and "scripted failure" not in str(info.value)
    transcript.stopped_at_max_turns = True
    with pytest.raises(RunnerSetupError, match="turn limit reached") as limit:
        pi.outcome(transcript, 0, 5, None, 2)
    assert limit.value.retryable is False


@pytest.mark.parametrize("agent", ["claude-code", "codex", "pi"])
def test_a_missing_binary_is_a_runner_error_line(agent: str, tmp_path: Path) -> None:
    skill = write_skill(tmp_path)
    env = {"PATH": str(tmp_path / "empty"), "EVALGATE_SKILL_VARIANT": "with",
           "EVALGATE_SKILL_DIR": str(skill), "OPENAI_API_KEY": "k",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", agent],
        input=b"SECRET-PROMPT",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    line = json.loads(proc.stdout)
    assert line["retryable"] is False and "not found on PATH" in line["runnerError"]
    assert b"SECRET-PROMPT" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "fields",
    [
        {"result": "OAuth access token has expired", "duration_api_ms": 50},
        {"result": "You are not signed in; sign in again", "duration_api_ms": 50},
        # newer error subtypes carry the words in `errors`, not in `result`
        {"subtype": "error_during_execution", "errors": ["Invalid API key"], "duration_api_ms": 9},
    ],
)
def test_claude_code_auth_variants_are_no_credentials(fields: dict[str, Any]) -> None:
    error = claude_code.api_failure([{"type": "result", "is_error": True, **fields}])
    assert error is not None and not error.retryable
    assert str(error).startswith("not logged in / no credentials: ")
    assert str(error).endswith("; set ANTHROPIC_API_KEY (or log in)")
    assert "no text" not in str(error)


def test_other_agents_map_oauth_wording_to_no_credentials() -> None:
    error = codex.turn_failure("OAuth access token expired; run codex again after logging in")
    assert str(error).startswith("not logged in / no credentials: OAuth access token expired")
