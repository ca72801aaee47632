"""Every agent maps its own "no credentials" failure to the same reason, with its own key
variable: ``not logged in / no credentials: <agent's text>; set <VAR> (or log in)``, final."""

from __future__ import annotations

from pathlib import Path

import pytest

from skill_evals.agents import reasons
from skill_evals.agents.base import RunnerSetupError
from skill_evals.agents.codex_events import turn_failure
from skill_evals.agents.gemini_outcome import api_error
from skill_evals.agents.opencode_events import failure
from skill_evals.agents.pi_events import Transcript, outcome


def _check(message: str, said: str, variable: str, retryable: bool) -> None:
    assert message == f"not logged in / no credentials: {said}; set {variable} (or log in)"
    assert retryable is False


def test_codex_missing_key() -> None:
    error = turn_failure("Missing environment variable: `OPENAI_API_KEY`.")
    _check(str(error), "Missing environment variable: `OPENAI_API_KEY`.",
           "OPENAI_API_KEY (or CODEX_API_KEY)", error.retryable)  # fmt: skip
    # A 401 naming no key keeps its status reason, and the server's words stay out.
    plain = turn_failure("unexpected status 401 Unauthorized: scripted failure")
    assert "auth refused" in str(plain) and "scripted" not in str(plain)


def test_gemini_missing_key() -> None:
    error = api_error("Please set an Auth method or an API key in your settings", 1)
    _check(str(error), "Please set an Auth method or an API key in your settings",
           "GEMINI_API_KEY (or GOOGLE_API_KEY)", error.retryable)  # fmt: skip


def test_opencode_provider_auth_error() -> None:
    reason, retryable = failure(
        {"name": "ProviderAuthError", "data": {"message": "No credentials for provider openai"}}
    )
    _check(reason, "No credentials for provider openai", "the provider's key variable", retryable)


def test_pi_no_api_key() -> None:
    transcript = Transcript(agent_ended=True)
    transcript.last_assistant = {
        "stopReason": "error",
        "errorMessage": "No API key found for provider anthropic",
    }
    with pytest.raises(RunnerSetupError) as info:
        outcome(transcript, 1, 10, Path("/nonexistent"))
    _check(str(info.value), "No API key found for provider anthropic",
           "the provider's API key variable", info.value.retryable)  # fmt: skip


def test_quoted_text_is_bounded_escaped_and_redacted() -> None:
    text = reasons.quoted("Invalid API key sk-live-0123456789abcdef\n\x1b[2J" + " word" * 60)
    assert len(text) <= reasons.AGENT_TEXT and text.endswith("…")
    assert "0123456789" not in text and "\x1b" not in text and "\\u001b" in text
