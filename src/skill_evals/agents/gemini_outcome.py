"""What a finished Gemini CLI run means: the runner contract's object, or the reason the run
says nothing about the skill (the CLI never finished, the model API failed, the turn limit was
hit), as the contract's ``{"runnerError": …, "retryable": …}`` line."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from . import reasons
from .base import AgentOptions, RunnerSetupError
from .gemini_events import final_text, read_transcript, usage_meta
from .protocol import Outcome

# Gemini CLI's own exit statuses for runs that never reached a result.
_EXIT_REASONS = {41: "authentication is not set up", 42: "the prompt or an option was refused",
                 44: "the sandbox could not start", 52: "its configuration could not be used",
                 130: "it was cancelled"}  # fmt: skip


class RunnerError(RunnerSetupError):
    """A run that failed for a reason the runner knows, printed as the contract's
    ``{"runnerError": …, "retryable": …}`` line (retryable: the engine may run it again)."""

    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable

    def to_line(self) -> str:
        """The runner-error line for stdout."""
        return json.dumps({"runnerError": str(self), "retryable": self.retryable}) + "\n"


_CODE = re.compile(r'"code"\s*:\s*(\d{3})\b')
_STATUS_WORDS = {"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "RESOURCE_EXHAUSTED": 429,
                 "INTERNAL": 500, "UNAVAILABLE": 503}  # fmt: skip


def api_status(message: str, exit_status: int) -> int | None:
    """The HTTP status of a failed model request: from the error text, else from the exit
    status (Gemini CLI exits with the HTTP status, modulo 256)."""
    match = _CODE.search(message)
    if match:
        return int(match[1])
    for word, status in _STATUS_WORDS.items():
        if word in message:
            return status
    if 144 <= exit_status <= 255:  # 400–511
        return exit_status + 256
    if exit_status == 17:  # 529 (overloaded)
        return 529
    return None


def outcome(
    events: Sequence[Mapping[str, Any]],
    status: int,
    duration_ms: float,
    options: AgentOptions,
    hint: str,
) -> Outcome:
    """What a finished run says besides the loads (answer, task exit code, meta), or RunnerError
    when it says nothing about the skill: it never finished, the model API failed, the turn
    limit was hit. ``hint`` says where to look (never the prompt, the answer or the agent's
    stderr)."""
    transcript = read_transcript(events)
    result = transcript.result
    if result is None:
        why = _EXIT_REASONS.get(status, "no result event")
        raise RunnerError(f"gemini exited with status {status} ({why}); {hint}", retryable=False)
    raw_error = result.get("error")
    error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
    kind, message = str(error.get("type", "")), str(error.get("message", ""))
    if result.get("status") != "success":
        if kind == "FatalTurnLimitedError":
            raise RunnerError(f"turn limit reached (--max-turns {options.max_turns})", False)
        if error:
            raise api_error(message, status)
    # A result without an error object follows the CLI's own "invalid stream" error (an empty,
    # cut or blocked answer): the model answered badly, the task failed.
    failed = result.get("status") != "success" or status != 0
    meta = usage_meta(transcript)
    meta["durationMs"] = round(duration_ms, 3)
    return Outcome(
        output=final_text(transcript),
        exit_code=(status or 1) if failed else 0,
        meta=meta,
    )


def api_error(message: str, status: int) -> RunnerError:
    """The reason of a failed model request, without the server's own text."""
    dead = reasons.unreachable(message)
    if dead is not None:
        return RunnerError(str(dead), retryable=dead.retryable)
    if reasons.names_credentials(message):
        failure = reasons.no_credentials(message, "GEMINI_API_KEY (or GOOGLE_API_KEY)")
        return RunnerError(str(failure), retryable=False)
    http = api_status(message, status)
    if http in (401, 403):
        return RunnerError(f"model API refused the key (HTTP {http})", retryable=False)
    if http == 429:
        return RunnerError("model API rate limit (HTTP 429)", retryable=True)
    if http == 529:
        return RunnerError("model API overloaded (HTTP 529)", retryable=True)
    if http is not None and http >= 500:
        return RunnerError(f"model API server error (HTTP {http})", retryable=True)
    if http is not None:
        return RunnerError(f"model API rejected the request (HTTP {http})", retryable=False)
    if "fetch failed" in message or "ECONN" in message or "ETIMEDOUT" in message:
        return RunnerError("cannot reach the model API (connection failed)", retryable=True)
    return RunnerError(f"the model request failed (gemini exited with status {status})", False)
