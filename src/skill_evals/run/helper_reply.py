"""The reply of a trusted helper program that answers one JSON request with one JSON object
(a proposer, a drafter): started confined (helper_cell.py), its reply read strictly, its own
errors told apart from a broken reply. Reasons never quote what it printed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..suite.jsonl import loads_strict
from .helper_cell import HelperCell
from .helper_process import HelperSpec, run_confined, signal_name
from .processes import ProcessSweeper

_T = TypeVar("_T")
Failure = tuple[str, bool]  # (reason, retryable)


def reply_object(
    stdout: bytes, error_key: str, keys: set[str], *, one_line: bool = False
) -> dict[str, Any] | Failure:
    """The reply's object when it is one, with only ``keys`` (or ``error_key`` and
    ``retryable``: then its error, sanitised, and whether it may be retried)."""
    text = stdout.decode("utf-8", "replace")
    if one_line:
        lines = text.strip().splitlines()
        if len(lines) != 1:
            return "the reply is not exactly one line", False
        text = lines[0]
    try:
        # Strict: no NaN, duplicate keys or lone surrogates (which can never be written out).
        reply = loads_strict(text)
    except ValueError as exc:  # its reason names a column, never the text
        what = "the reply is not JSON" if one_line else "the reply is not one JSON object"
        return f"{what} ({str(exc).removeprefix('invalid JSON: ')})", False
    if not isinstance(reply, dict):
        return "the reply is not a JSON object", False
    if error_key in reply:
        message, retryable = reply.get(error_key), reply.get("retryable")
        if set(reply) - {error_key, "retryable"} or not isinstance(message, str):
            return f"the {error_key} reply has other keys or a non-string message", False
        shown = "".join(c for c in message if c.isprintable())[:300]
        return shown or error_key, retryable is True
    unknown = sorted(set(reply) - keys)
    if unknown:
        return f"the reply has an unknown key {unknown[0][:40]!r}", False
    return reply


def ask_once(
    cell: HelperCell,
    argv: Sequence[str],
    payload: bytes,
    *,
    timeout_ms: int,
    max_bytes: int,
    env: Mapping[str, str],
    sweeper: ProcessSweeper,
    parse: Callable[[bytes], _T | Failure],
) -> _T | Failure:
    """Run the helper once, confined, with ``payload`` on stdin and ``env`` added; its parsed
    reply, or (reason, retryable)."""
    end = run_confined(HelperSpec(timeout_ms, max_bytes, cell), argv, payload, sweeper, env)
    if end.failure is not None:
        return end.failure, False
    parsed = parse(end.stdout)
    if isinstance(parsed, tuple) and parsed[1]:
        return parsed  # its own retryable error
    if end.code < 0:
        return f"killed by signal {signal_name(-end.code)}", False
    if end.code > 0:
        return f"exited with code {end.code}", False
    return parsed
