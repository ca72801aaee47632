"""The proposer contract: one JSON request on stdin, one line back — a description, or a
``proposerError`` — run like a runner (no shell, own session, bounded, retried when it says so).

The request carries only train cases: no held-out id, prompt or figure ever reaches it. The
proposer runs like a judge (run/helper_cell.py): sandboxed when the run is, with the runners'
allowlist of the caller's environment and its provider keys only through the credential proxy."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..run.helper_cell import HelperCell
from ..run.helper_reply import ask_once, reply_object
from ..run.processes import ProcessSweeper
from ..sandbox.probe import SandboxChoice

MAX_REPLY_BYTES = 1_000_000
ROUND_VAR = "SKILL_EVALS_ROUND"
_KEYS = {"description", "rationale", "meta"}


class ProposerFailed(Exception):
    """The proposer broke the contract, or kept failing after the retries (exit 7)."""


@dataclass(frozen=True)
class Proposal:
    """A proposed description, with the cost the proposer reported (if any)."""

    description: str
    cost_usd: float | None


@dataclass(frozen=True)
class ProposerSpec:
    """How each proposer process runs."""

    argv: tuple[str, ...]
    timeout_ms: int
    retries: int
    cell: HelperCell  # where it runs: sandbox, environment, keys through the proxy
    delay: Callable[[int], float]


def _cost(meta: object) -> float | None:
    if not isinstance(meta, dict):
        return None
    cost = meta.get("costUsd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost):
        return float(cost) if cost >= 0 else None
    return None


def propose(spec: ProposerSpec, request: Mapping[str, Any], sweeper: ProcessSweeper) -> Proposal:
    """Ask the proposer for round ``request["round"]``; retried on its retryable errors. Raises
    ProposerFailed (``proposer: <reason>``, never quoting its output)."""
    payload = json.dumps(request, ensure_ascii=False).encode("utf-8")
    round_no = int(request["round"])
    for attempt in range(spec.retries + 1):
        result = _once(spec, payload, round_no, sweeper)
        if isinstance(result, Proposal):
            return result
        reason, retryable = result
        if not retryable or attempt == spec.retries:
            raise ProposerFailed(f"proposer: {reason}")
        time.sleep(spec.delay(attempt))
    raise AssertionError("unreachable")


def parse_reply(stdout: bytes) -> Proposal | tuple[str, bool]:
    """A Proposal, or (reason, retryable) for a ``proposerError`` or a broken reply."""
    reply = reply_object(stdout, "proposerError", _KEYS, one_line=True)
    if isinstance(reply, tuple):
        return reply
    description = reply.get("description")
    if not isinstance(description, str):
        return "the reply has no string 'description'", False
    return Proposal(description, _cost(reply.get("meta")))


def _once(spec: ProposerSpec, payload: bytes, round_no: int, sweeper: ProcessSweeper) -> Any:
    return ask_once(
        spec.cell, spec.argv, payload, timeout_ms=spec.timeout_ms, max_bytes=MAX_REPLY_BYTES,
        env={ROUND_VAR: str(round_no)}, sweeper=sweeper, parse=parse_reply,
    )  # fmt: skip


def proposer_cell(
    base: Mapping[str, str] | None = None, sandbox: SandboxChoice | None = None
) -> HelperCell:
    """Where the proposer runs, from the caller's environment (``base``, default os.environ):
    in the run's sandbox ``sandbox`` (None: SKILL_EVALS_SANDBOX, else auto)."""
    return HelperCell(os.environ if base is None else base, sandbox)


def request(
    round_no: int,
    rounds: int,
    skill: Mapping[str, str],
    limits: Mapping[str, int | None],
    train: Mapping[str, Any],
    failures: Sequence[Mapping[str, Any]],
    history: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The request of one round, exactly the documented keys."""
    return {
        "schemaVersion": 1,
        "round": round_no,
        "rounds": rounds,
        "skill": dict(skill),
        "limits": dict(limits),
        "train": dict(train),
        "failures": list(failures),
        "history": list(history),
    }
