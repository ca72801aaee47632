"""One line of the observation cache (docs/cost.md): the canonical line an observation is
stored as (the runner's fields, the engine's check verdicts and their short reasons), and the
checks a line read back must pass to count as an entry of this format.

Owner: execution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..run.observations import ContractError, Observation
from .key import canonical_json

FORMAT = 1  # the "skillEvalsCache" value of every entry
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ENTRY_KEYS = frozenset(
    {"skillEvalsCache", "key", "storedAt", "observation", "checks", "reasons", "parts"}
)


@dataclass(frozen=True)
class Entry:
    """One usable line of the cache: when it was stored, and the line's object."""

    stored_at_ms: int
    value: dict[str, Any]


def entry_problem(value: dict[str, Any]) -> str | None:
    """Why a line is not a cache entry of this format, or None."""
    if value.get("skillEvalsCache") != FORMAT:
        return "not a skill-evals cache entry (of this format)"
    if not set(value) <= _ENTRY_KEYS:
        return "an entry with an unknown key"
    key, stored = value.get("key"), value.get("storedAt")
    if not isinstance(key, str) or not _HEX64.fullmatch(key):
        return "key 'key' must be a SHA-256 in hex"
    if type(stored) is not int or stored < 0:
        return "key 'storedAt' must be a non-negative integer (milliseconds)"
    if not isinstance(value.get("observation"), dict):
        return "key 'observation' must be an object"
    return None


def stored_checks(
    raw: object, raw_reasons: object
) -> tuple[tuple[bool | None, ...], tuple[str | None, ...] | None] | None:
    """An entry's stored check verdicts and reasons (None when it has none); ContractError
    when they are not an array of booleans (``null`` for a judge check not judged)."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(item is None or isinstance(item, bool) for item in raw):
        raise ContractError("wrong-typed key 'checks': must be an array of booleans")
    reasons: tuple[str | None, ...] | None = None
    if isinstance(raw_reasons, list) and len(raw_reasons) == len(raw):
        reasons = tuple(r[:300] if isinstance(r, str) else None for r in raw_reasons)
    return tuple(raw), reasons


def canonical_line(
    key: str,
    stored_at_ms: int,
    observation: Observation,
    echo: str,
    parts: dict[str, Any] | None = None,
) -> bytes:
    """The cache line of one observation (the runner's fields, the engine's check verdicts
    and their short reasons, the hashes of the key's parts), newline-terminated."""
    record = observation.to_record()
    body = {k: v for k, v in record.items() if k not in ("caseId", "trial", "checks", "cached")}
    body["variant"] = echo
    entry: dict[str, Any] = {
        "skillEvalsCache": FORMAT,
        "key": key,
        "storedAt": stored_at_ms,
        "observation": body,
    }
    if parts is not None:
        entry["parts"] = parts
    if observation.checks is not None:
        entry["checks"] = list(observation.checks)
        if observation.reasons is not None:
            entry["reasons"] = list(observation.reasons)
    return canonical_json(entry) + b"\n"
