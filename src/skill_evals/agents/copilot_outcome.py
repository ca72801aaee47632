"""What a finished (or stopped) Copilot CLI run means: the runner contract's object, or the
reason the run says nothing about the skill, as the contract's ``{"runnerError": …}`` line.

Copilot retries a failed model request five times on its own, honouring ``retry-after`` (a
rate limit can hold it for minutes), and 1.0.102 has no setting for it. Like every built-in
runner, this one lets the agent retry once: the guard (:func:`stopper`) stops Copilot when it
announces its second retry, and the reason names the HTTP status Copilot logged for the last
failed request (``--log-level warning`` into the workspace's ``copilot-logs/``; the runner
appends those statuses to the transcript, :func:`failures_line`), so the engine's
``--retries`` retries with a visible reason.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import reasons
from .base import AgentOptions, RunnerError
from .copilot_events import SESSION_MARKER, final_text, read_transcript, usage_meta
from .evidence import Event
from .protocol import Finished, Outcome
from .scaffold import KEEP_HINT

BASE_URL, API_KEY = "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY"
LOG_DIR = "copilot-logs"  # under the workspace root: Copilot's --log-dir
FAILED_REQUESTS = "skill_evals_failed_requests"  # the transcript line of the logged statuses
MAX_RETRIES = 1  # Copilot's own retries of a failed model request before it is stopped
_FAILED = re.compile(r"Model provider request failed (\{.*\})\s*$")
_LOG_BYTES = 8 * 1024 * 1024  # read of Copilot's logs, at most


def _data(event: Event) -> Mapping[str, Any]:
    data = event.get("data")
    return data if isinstance(data, Mapping) else {}


def _is_retry(event: Event) -> bool:
    return event.get("type") == "session.info" and _data(event).get("infoType") == "model_retry"


def stopper(max_turns: int | None) -> Callable[[Event], bool]:
    """The ``stop_after`` guard: Copilot is stopped when it announces a model retry beyond
    :data:`MAX_RETRIES`, or starts a turn past ``max_turns`` (its sub-agents' turns are
    theirs)."""
    turns = retries = 0

    def stop_after(event: Event) -> bool:
        nonlocal turns, retries
        if _is_retry(event):
            retries += 1
            return retries > MAX_RETRIES
        if event.get("type") != "assistant.turn_start" or _data(event).get("parentToolCallId"):
            return False
        turns += 1
        return max_turns is not None and turns > max_turns

    return stop_after


def failed_statuses(log_dir: Path) -> list[int | None]:
    """The HTTP status of each failed model request Copilot logged, in order (None: the request
    got no answer)."""
    found: list[int | None] = []
    budget = _LOG_BYTES
    for path in sorted(log_dir.glob("*.log")):
        with path.open(encoding="utf-8", errors="replace") as log:
            for line in log:
                budget -= len(line)
                if budget < 0:
                    return found
                failed = _FAILED.search(line)
                if failed is None:
                    continue
                try:
                    fields = json.loads(failed.group(1))
                except ValueError:
                    continue
                value = fields.get("http_status") if isinstance(fields, dict) else None
                found.append(
                    value if isinstance(value, int) and not isinstance(value, bool) else None
                )
    return found


def failures_line(log_dir: Path) -> bytes:
    """The transcript line the runner appends with those statuses (nothing when none failed):
    Copilot keeps them only in its log, which goes with the workspace."""
    statuses = failed_statuses(log_dir)
    if not statuses:
        return b""
    return (json.dumps({"type": FAILED_REQUESTS, "httpStatus": statuses}) + "\n").encode()


def _last_status(events: Sequence[Event]) -> int | None:
    for event in reversed(events):
        statuses = event.get("httpStatus") if event.get("type") == FAILED_REQUESTS else None
        if isinstance(statuses, list) and statuses:
            last = statuses[-1]
            return last if isinstance(last, int) and not isinstance(last, bool) else None
    return None


def api_error(error: Mapping[str, Any]) -> RunnerError:
    """The reason of a ``session.error``: its HTTP status, never its text (except the credential
    proxy's own words about an unreachable upstream)."""
    message = error.get("message")
    text = message if isinstance(message, str) else ""
    dead = reasons.unreachable(text)
    if dead is not None:
        return dead
    status = error.get("statusCode")
    if isinstance(status, int) and not isinstance(status, bool):
        return reasons.api_failure(status, None, f"check {BASE_URL}, {API_KEY} and --model")
    if "could not connect" in text.lower():  # Copilot's words for a refused connection
        return reasons.api_failure(None, None, f"check {BASE_URL}")
    return RunnerError(f"the model request failed (copilot reported an error); {KEEP_HINT}")


def _stopped(events: Sequence[Event], options: AgentOptions) -> RunnerError:
    """Why the guard stopped Copilot: its retries, else the turn limit."""
    stream = itertools.takewhile(lambda event: event.get("type") != SESSION_MARKER, events)
    if sum(1 for event in stream if _is_retry(event)) > MAX_RETRIES:
        failure = reasons.api_failure(_last_status(events))
        return RunnerError(
            f"{failure}, twice: Copilot was stopped at its second retry, the engine's --retries "
            f"runs the invocation again (check {BASE_URL} if it persists)",
            failure.retryable,
        )
    return reasons.turn_limit(options.max_turns)


def outcome(events: Sequence[Event], run: Finished, options: AgentOptions) -> Outcome:
    """What a finished run says besides the loads, or RunnerError when it says nothing about
    the skill: no result line, the model API failed, the turn limit was hit."""
    if run.stopped:
        raise _stopped(events, options)
    t = read_transcript(events)
    if t.error is not None and (t.result is None or t.result.get("exitCode") != 0):
        raise api_error(t.error)
    if t.result is None:
        raise RunnerError(
            f"copilot exited with status {run.status} (no result line); {KEEP_HINT}", False
        )
    code = t.result.get("exitCode")
    failed = code != 0 or run.status != 0
    meta = usage_meta(t)
    meta["durationMs"] = round(run.duration_ms, 3)
    return Outcome(
        output=final_text(t),
        exit_code=(run.status or (code if isinstance(code, int) else 1) or 1) if failed else 0,
        meta=meta,
    )
