"""What a judge answers (docs/judging.md): one strict-JSON verdict line — absolute
``{"score", "pass", "reason"}``, pairwise ``{"winner", "reason"}``, optional ``meta`` — or its
own ``{"runnerError", "retryable"}``. Every problem is said without quoting the answer."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..escaping.terminal import terminal_safe
from ..suite.jsonl import loads_strict

REASON_CHARS = 300
META_KEYS = ("inputTokens", "outputTokens", "costUsd", "durationMs")
_BREAKS = re.compile(r"[\t\n\r\x0b\x0c]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class VerdictError(ValueError):
    """The judge broke its contract; ``str()`` names the problem, never the judge's text.
    ``retryable``: the judge's own runnerError said another try may help."""

    def __init__(self, reason: str, retryable: bool = False) -> None:
        super().__init__(reason)
        self.retryable = retryable


@dataclass(frozen=True)
class Verdict:
    """A judge's answer to one request: ``score``/``passed`` (absolute) or ``winner``
    (pairwise), its reason (cleaned and cut) and the recognised ``meta`` figures."""

    reason: str
    score: float | None = None
    passed: bool | None = None
    winner: str | None = None
    meta: dict[str, float] = field(default_factory=dict)


def clean_reason(text: str) -> str:
    """A judge's reason for the report: control characters removed, invisible ones escaped,
    one line, at most REASON_CHARS characters."""
    cleaned = terminal_safe(_CONTROL.sub("", _BREAKS.sub(" ", text))).strip()
    cleaned = re.sub(r" {2,}", " ", cleaned)
    if len(cleaned) > REASON_CHARS:
        cleaned = cleaned[: REASON_CHARS - 1] + "…"
    return cleaned


def _one_line(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise VerdictError("stdout is not valid UTF-8") from None
    text = text.removesuffix("\n")
    if not text.strip():
        raise VerdictError("stdout is empty; expected one JSON object line")
    if "\n" in text:
        raise VerdictError("stdout has more than one line; expected one JSON object line")
    try:
        value = loads_strict(text)
    except ValueError:
        raise VerdictError("stdout is not one strict JSON object") from None
    if not isinstance(value, dict):
        raise VerdictError("stdout is not a JSON object")
    return value


def own_error(data: bytes) -> VerdictError | None:
    """The judge's own ``runnerError`` line as a failure (whatever its exit status), or None."""
    if b'"runnerError"' not in data:
        return None
    try:
        value = _one_line(data)
    except VerdictError:
        return None
    if "runnerError" not in value:
        return None
    message, retryable = value["runnerError"], value.get("retryable", False)
    shape_ok = isinstance(message, str) and isinstance(retryable, bool)
    if not shape_ok or any(k not in ("runnerError", "retryable") for k in value):
        return VerdictError('a runnerError line must be {"runnerError": text, "retryable": bool}')
    return VerdictError(clean_reason(message) or "(no reason given)", retryable)


def parse_verdict(data: bytes, kind: str, scale: tuple[float, float] | None) -> Verdict:
    """The verdict of one judge answer of ``kind`` (``absolute``: ``score`` within ``scale``);
    VerdictError naming what is wrong."""
    value = _one_line(data)
    wanted = ("score", "pass", "reason") if kind == "absolute" else ("winner", "reason")
    for key in value:
        if key not in (*wanted, "meta"):
            raise VerdictError(f"an unknown key; a {kind} verdict has {', '.join(wanted)}, meta")
    for key in wanted:
        if key not in value:
            raise VerdictError(f"missing key '{key}'")
    if not isinstance(value["reason"], str):
        raise VerdictError("wrong-typed key 'reason': must be a string")
    meta = _meta(value.get("meta"))
    reason = clean_reason(value["reason"])
    if kind == "pairwise":
        if value["winner"] not in ("a", "b", "tie"):
            raise VerdictError('key \'winner\' must be "a", "b" or "tie"')
        return Verdict(reason, winner=value["winner"], meta=meta)
    score, passed = value["score"], value["pass"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise VerdictError("wrong-typed key 'score': must be a finite number")
    if not isinstance(passed, bool):
        raise VerdictError("wrong-typed key 'pass': must be a boolean")
    assert scale is not None
    if not scale[0] <= score <= scale[1]:
        raise VerdictError(f"key 'score' lies outside the scale [{scale[0]:g}, {scale[1]:g}]")
    return Verdict(reason, score=float(score), passed=passed, meta=meta)


def _meta(raw: object) -> dict[str, float]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise VerdictError("wrong-typed key 'meta': must be an object")
    meta: dict[str, float] = {}
    for key in META_KEYS:
        item = raw.get(key)
        if item is None:
            continue
        if isinstance(item, bool) or not isinstance(item, (int, float)) or not item >= 0:
            raise VerdictError(f"wrong-typed key 'meta.{key}': must be a number >= 0")
        if not math.isfinite(item):
            raise VerdictError(f"wrong-typed key 'meta.{key}': must be finite")
        meta[key] = item
    return meta
