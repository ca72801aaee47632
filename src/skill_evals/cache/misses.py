"""Why a cache gave no hit (docs/cost.md#why-the-cache-missed): the parts of a key each entry
stores, the reason one invocation ran although a cache was given, and the report's
``runner.cacheMisses`` with its one-line summary.

Owner: execution.

A key is one hash; a miss alone cannot say what differed. So each entry also stores the hashes
of the key's parts, with the case id, trial and arm it answered. For an invocation without a
usable entry, the nearest entry (of the same case id, trial and arm, whatever its age: the one
with the most parts equal, the newest among those) is compared part by part: the runner
command's words, the content of each argument, the arm's skill version, the case (prompt,
fixture, setup, task). Only hashes are stored, never the command's text.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..messages import join_clauses
from .key import canonical_json

# The reasons, in the order the report lists them (docs/cost.md).
REASONS = ("runner-argument", "runner-command", "skill", "case", "expired", "reuse-off", "new")
_DETAIL = {
    "runner-command": "the runner command differs",
    "skill": "the skill version differs (directorySha256)",
    "case": "the case's prompt, fixture, setup or task differ",
    "expired": "older than --cache-max-age",
    "reuse-off": "--cache-max-age 0: never reused",
    "new": "no entry for that case, trial and arm",
}
_ARG_NAME_CHARS = 60
_CLAUSE_START = re.compile(r"(^|; )argument (?=\d+ \()")


def _sha(value: object) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


@dataclass(frozen=True)
class KeyParts:
    """The parts of one invocation's key, as hashes, and which invocation it is."""

    case_id: str
    trial: int
    arm: str
    words: tuple[str, ...]  # per runner argument: the hash of its text
    contents: tuple[str, ...]  # per runner identity element: the hash of what entered the key
    skill: str | None
    case: str

    def to_json(self) -> dict[str, Any]:
        """The ``parts`` object of a cache entry."""
        return {
            "caseId": self.case_id,
            "trial": self.trial,
            "arm": self.arm,
            "words": list(self.words),
            "contents": list(self.contents),
            "skill": self.skill,
            "case": self.case,
        }

    @staticmethod
    def from_json(value: object) -> KeyParts | None:
        """The parts of an entry read back (None when they are missing or malformed)."""
        if not isinstance(value, Mapping):
            return None
        words, contents = value.get("words"), value.get("contents")
        if not (isinstance(words, list) and all(isinstance(w, str) for w in words)):
            return None
        if not (isinstance(contents, list) and all(isinstance(c, str) for c in contents)):
            return None
        case_id, trial, arm = value.get("caseId"), value.get("trial"), value.get("arm")
        skill, case = value.get("skill"), value.get("case")
        if not isinstance(case_id, str) or type(trial) is not int or not isinstance(arm, str):
            return None
        if not (skill is None or isinstance(skill, str)) or not isinstance(case, str):
            return None
        return KeyParts(case_id, trial, arm, tuple(words), tuple(contents), skill, case)

    @property
    def slot(self) -> tuple[str, int, str]:
        """(case id, trial, arm): what "nearest entry" matches on."""
        return (self.case_id, self.trial, self.arm)


def key_parts(
    argv: Sequence[str],
    runner: Sequence[Any],
    skill: str | None,
    case_payload: Mapping[str, Any],
    slot: tuple[str, int, str],
) -> KeyParts:
    """The parts of one key: ``runner`` is the runner identity (cache_key.runner_identity),
    ``case_payload`` the case's prompt, fixture hash, setup and task as they enter the key."""
    return KeyParts(
        slot[0],
        slot[1],
        slot[2],
        tuple(_sha(word) for word in argv),
        tuple(_sha(element) for element in runner),
        skill,
        _sha(case_payload),
    )


MAX_PARTS_PER_SLOT = 64  # distinct stored versions of one invocation compared on a miss


def nearest_parts(now: KeyParts, stored: Mapping[KeyParts, int]) -> KeyParts | None:
    """The stored version of this invocation closest to ``now``: the most equal parts, then
    the runner before the skill before the case, then the newest."""

    def closeness(item: tuple[KeyParts, int]) -> tuple[int, tuple[bool, ...], bool, int]:
        parts, stored_at = item
        # What entered the key decides; the command's spelling only breaks ties (the key
        # holds an argument's content, not its text: ./wrap.sh and /abs/wrap.sh are one).
        same = (
            parts.contents == now.contents,
            parts.skill == now.skill,
            parts.case == now.case,
        )
        return sum(same), same, parts.words == now.words, stored_at

    return max(stored.items(), key=closeness)[0] if stored else None


def _arg_name(word: str) -> str:
    name = os.path.basename(word.rstrip("/")) or word
    return name if len(name) <= _ARG_NAME_CHARS else name[: _ARG_NAME_CHARS - 1] + "…"


def miss_reason(
    now: KeyParts, nearest: KeyParts | None, argv: Sequence[str], expired: bool
) -> tuple[str, str]:
    """(reason, detail) of an invocation that found no usable entry. ``nearest``: the closest
    stored version of the same case id, trial and arm (None: there is none); ``expired``: an
    entry with this very key exists but is older than the max age."""
    if expired:
        return "expired", _DETAIL["expired"]
    if nearest is None:
        return "new", _DETAIL["new"]
    if nearest.contents != now.contents:
        if nearest.words != now.words:
            return "runner-command", _DETAIL["runner-command"]
        changed = [
            i
            for i, (old, new) in enumerate(zip(nearest.contents, now.contents, strict=False))
            if old != new and i < len(argv)
        ]
        if changed and len(nearest.contents) == len(now.contents):
            return "runner-argument", "; ".join(
                f"argument {i} ({_arg_name(argv[i])}) content changed" for i in changed
            )
        return "runner-command", "the built-in runner differs (another skill-evals version)"
    if nearest.skill != now.skill:
        return "skill", _DETAIL["skill"]
    if nearest.case != now.case:
        return "case", _DETAIL["case"]
    return "new", _DETAIL["new"]  # same parts, other key: an entry of another key format


class MissTally:
    """The reason of each invocation that found no usable entry, by (case id, trial, arm)."""

    def __init__(self) -> None:
        self.by_slot: dict[tuple[str, int, str], tuple[str, str]] = {}

    def add(self, slot: tuple[str, int, str], reason: str, detail: str) -> None:
        """Record why ``slot`` missed (the first reason found stays)."""
        self.by_slot.setdefault(slot, (reason, detail))

    def report(self, ran: Iterable[tuple[str, int, str]]) -> list[dict[str, Any]]:
        """``runner.cacheMisses`` over the invocations that ran: one item per reason."""
        counts: dict[str, int] = {}
        details: dict[str, str] = {}
        for slot in ran:
            found = self.by_slot.get(slot)
            if found is None:
                continue
            reason, detail = found
            counts[reason] = counts.get(reason, 0) + 1
            details[reason] = join_clauses(details.get(reason), detail)
        return [
            {"reason": r, "count": counts[r], "detail": details[r]} for r in REASONS if r in counts
        ]


def misses_line(reused: int, misses: Sequence[Mapping[str, Any]]) -> str:
    """``cache: 0 of 10 reused; 10 re-run: runner argument 2 (wrap.sh) content changed``."""
    rerun = sum(int(m["count"]) for m in misses)
    line = f"cache: {reused} of {reused + rerun} reused"
    if not rerun:
        return line
    if len(misses) == 1:
        why = _readable(misses[0])
    else:
        why = ", ".join(f"{m['count']} {_readable(m)}" for m in misses)
    return f"{line}; {rerun} re-run: {why}"


def _readable(miss: Mapping[str, Any]) -> str:
    """The detail as a phrase (``argument 2 (wrap.sh)`` reads as ``runner argument 2 …``)."""
    detail = str(miss["detail"])
    if miss["reason"] == "runner-argument":  # each clause's start, never inside a file name
        return _CLAUSE_START.sub(r"\1runner argument ", detail)
    return detail
