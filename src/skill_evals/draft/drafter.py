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

from ..run.helper_cell import HelperCell
from ..run.helper_reply import ask_once, reply_object
from ..run.processes import ProcessSweeper

MAX_REPLY_BYTES = 1_000_000
SEED_VAR = "SKILL_EVALS_SEED"
_KEYS = {"cases", "meta"}


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
    reply = reply_object(stdout, "runnerError", _KEYS)
    if isinstance(reply, tuple):
        return reply
    cases = reply.get("cases")
    if not isinstance(cases, list):
        return "the reply has no array 'cases'", False
    return cases


def _once(
    spec: DrafterSpec, payload: bytes, sweeper: ProcessSweeper
) -> list[Any] | tuple[str, bool]:
    return ask_once(
        spec.cell, spec.argv, payload, timeout_ms=spec.timeout_ms, max_bytes=MAX_REPLY_BYTES,
        env={SEED_VAR: str(spec.seed)}, sweeper=sweeper, parse=parse_reply,
    )  # fmt: skip


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
