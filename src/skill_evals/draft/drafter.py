"""The drafter contract: one JSON request on stdin, one JSON object back — drafted cases, or a
``runnerError`` — run like a proposer (no shell, own session, bounded, retried when it says so),
in the run's sandbox with its provider keys only through the credential proxy
(run/helper_cell.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..run.helper_cell import HelperCell, Unconfinable
from ..run.helper_process import run_helper, signal_name
from ..run.processes import ProcessSweeper

MAX_REPLY_BYTES = 1_000_000
SEED_VAR = "SKILL_EVALS_SEED"
_KEYS = {"cases", "meta"}
_ERROR_KEYS = {"runnerError", "retryable"}


class DrafterFailed(Exception):
    """The drafter broke the contract, or kept failing after the retries (exit 7)."""


@dataclass(frozen=True)
class DrafterSpec:
    """How each drafter process runs."""

    argv: tuple[str, ...]
    timeout_ms: int
    retries: int
    seed: int
    cell: HelperCell  # where it runs: sandbox, environment, keys through the proxy
    delay: Callable[[int], float]


def request(
    skill: Mapping[str, str],
    neighbours: Sequence[Mapping[str, str]],
    buckets: Mapping[str, int],
    with_tasks: bool,
) -> dict[str, Any]:
    """The request, exactly the documented keys."""
    return {
        "skill": dict(skill),
        "neighbours": [dict(n) for n in neighbours],
        "buckets": dict(buckets),
        "withTasks": with_tasks,
    }


def parse_reply(stdout: bytes) -> list[Any] | tuple[str, bool]:
    """The reply's ``cases`` (items not yet checked), or (reason, retryable) for a
    ``runnerError`` or a broken reply."""
    try:
        reply = json.loads(stdout.decode("utf-8", "replace"))
    except ValueError:
        return "the reply is not one JSON object", False
    if not isinstance(reply, dict):
        return "the reply is not a JSON object", False
    if "runnerError" in reply:
        message, retryable = reply.get("runnerError"), reply.get("retryable")
        if set(reply) - _ERROR_KEYS or not isinstance(message, str):
            return "the runnerError reply has other keys or a non-string message", False
        text = "".join(c for c in message if c.isprintable())[:300]
        return text or "runnerError", retryable is True
    unknown = sorted(set(reply) - _KEYS)
    if unknown:
        return f"the reply has an unknown key {unknown[0][:40]!r}", False
    cases = reply.get("cases")
    if not isinstance(cases, list):
        return "the reply has no array 'cases'", False
    return cases


def _once(
    spec: DrafterSpec, payload: bytes, sweeper: ProcessSweeper
) -> list[Any] | tuple[str, bool]:
    try:
        with spec.cell.confined(spec.argv) as confined:
            end = run_helper(
                confined.argv,
                payload,
                timeout_ms=spec.timeout_ms,
                max_bytes=MAX_REPLY_BYTES,
                env={**confined.env, SEED_VAR: str(spec.seed)},
                sweeper=sweeper,
            )
    except Unconfinable as exc:
        return str(exc), False
    if end.failure is not None:
        return end.failure, False
    parsed = parse_reply(end.stdout)
    if isinstance(parsed, tuple) and parsed[1]:
        return parsed  # its own retryable error
    if end.code < 0:
        return f"killed by signal {signal_name(-end.code)}", False
    if end.code > 0:
        return f"exited with code {end.code}", False
    return parsed


def draft(spec: DrafterSpec, payload: Mapping[str, Any], sweeper: ProcessSweeper) -> list[Any]:
    """Ask the drafter once for ``payload``; retried on its retryable errors. Raises
    DrafterFailed (``drafter: <reason>``, never quoting its output)."""
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    for attempt in range(spec.retries + 1):
        result = _once(spec, data, sweeper)
        if isinstance(result, list):
            return result
        reason, retryable = result
        if not retryable or attempt == spec.retries:
            raise DrafterFailed(f"drafter: {reason}")
        time.sleep(spec.delay(attempt))
    raise AssertionError("unreachable")
