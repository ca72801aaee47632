"""What a runner's stdout says (docs/runner-contract.md): one strict-JSON observation line, or
its own reason for failing (a ``runnerError`` line, retryable or not). Every reason is free of
the output's text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..suite.jsonl import loads_strict
from .observations import ContractError, Echo, parse_runner_object

# A runner's own reason: {"runnerError": "<text>", "retryable": true|false} instead of an answer.
RUNNER_ERROR_KEYS = ("runnerError", "retryable")
RUNNER_REASON_CHARS = 300
_RUNNER_ERROR_SHAPE = (
    'stdout: a runnerError line must be {"runnerError": "<text>", "retryable": true|false}'
)


@dataclass(frozen=True)
class RunnerError:
    """What a runner said about its own failure: the reason (``runner: <text>``) and whether
    the same invocation may be tried again."""

    reason: str
    retryable: bool


def runner_reason(text: str) -> str:
    """``runner: <text>`` on one line, cut at RUNNER_REASON_CHARS: blanks (line breaks and tabs
    included) collapse to one space, and every control, format or separator character is
    written ``\\uXXXX`` (the one rule of every output), so the reason is safe for terminals and
    annotations and hides nothing."""
    from ..escaping.terminal import terminal_safe

    cleaned = terminal_safe(_BLANKS.sub(" ", text).strip(" "))
    while cleaned.lower().startswith("runner:"):  # a reason says "runner:" once
        cleaned = cleaned[len("runner:") :].lstrip()
    if len(cleaned) > RUNNER_REASON_CHARS:
        cleaned = cleaned[: RUNNER_REASON_CHARS - 1] + "…"
    return f"runner: {cleaned or '(no reason given)'}"


# Runs of blanks, U+2028/U+2029 excepted (str.split() counts them as blanks; they are shown).
_BLANKS = re.compile(r"[^\S\u2028\u2029]+")


def parse_runner_error(data: bytes) -> RunnerError | None:
    """The runner's own reason when stdout is one runnerError line, else None (then stdout
    is checked as an observation). A runnerError line of the wrong shape is a failure too."""
    if b'"runnerError"' not in data:
        return None  # the cheap test: every ordinary answer ends here
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removesuffix("\n")
    if "\n" in text:
        return None
    try:
        value = loads_strict(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or "runnerError" not in value:
        return None
    message, retryable = value["runnerError"], value.get("retryable", False)
    if not isinstance(message, str) or not isinstance(retryable, bool):
        return RunnerError(_RUNNER_ERROR_SHAPE, False)
    if any(key not in RUNNER_ERROR_KEYS for key in value):
        return RunnerError(_RUNNER_ERROR_SHAPE, False)
    return RunnerError(runner_reason(message), retryable)


def parse_stdout(data: bytes, variant: Echo) -> dict[str, Any]:
    """Check a runner's stdout: one strict-JSON object line (one final ``\\n`` allowed).

    Returns parse_runner_object's fields; raises ContractError with a reason free of the output."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContractError(f"stdout is not valid UTF-8 (byte {exc.start})") from None
    if text.endswith("\n"):
        text = text[:-1]
    if not text.strip():
        raise ContractError("stdout is empty; expected one JSON object line")
    if "\n" in text:
        raise ContractError(
            f"stdout has more than one line ({text.count(chr(10)) + 1}); expected one JSON "
            "object line (write logs to stderr)"
        )
    try:
        value = loads_strict(text)
    except ValueError as exc:
        # loads_strict says "invalid JSON: <why>" for syntax errors; say "JSON" only once.
        reason = str(exc).removeprefix("invalid JSON: ")
        raise ContractError(f"stdout is not strict JSON: {reason}") from None
    try:
        return parse_runner_object(value, variant)
    except ContractError as exc:
        raise ContractError(f"stdout: {exc}") from None
