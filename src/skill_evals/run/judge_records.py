"""The judge's part of a recorded observation (records, --observations, the cache): ``judge``,
one entry per judged check, and ``judgeFiles``, the workspace files its checks were shown.
Malformed parts are ContractErrors naming the key, never its value."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from .observations import ContractError

MAX_ENTRIES = 100  # one per check at most
MAX_FILES = 2000  # 20 per check
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ABSOLUTE = ("check", "key", "score", "pass", "reason", "meta")
_PAIRWISE = ("check", "against", "asks", "preference")
_PAIRWISE_OPTIONAL = ("grades",)  # the absolute fallback of a disagreeing pair
_ASK = {"key", "withAs", "winner", "reason"}


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_judge_entries(raw: object) -> tuple[dict[str, Any], ...]:
    """``judge``: an array of verdict entries."""
    if not isinstance(raw, list) or len(raw) > MAX_ENTRIES:
        raise ContractError(f"wrong-typed key 'judge': must be an array of at most {MAX_ENTRIES}")
    entries: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        where = f"judge[{index}]"
        if isinstance(item, dict) and "against" in item:
            entries.append(_pairwise(item, where))
            continue
        if not isinstance(item, dict) or any(key not in _ABSOLUTE for key in item):
            raise ContractError(f"wrong-typed key '{where}': an object of {', '.join(_ABSOLUTE)}")
        check, key = item.get("check"), item.get("key")
        if type(check) is not int or not 0 <= check < MAX_ENTRIES:
            raise ContractError(f"wrong-typed key '{where}.check': must be a check index")
        if not isinstance(key, str) or not _HEX64.fullmatch(key):
            raise ContractError(f"wrong-typed key '{where}.key': must be a SHA-256 in hex")
        if not _number(item.get("score")) or not isinstance(item.get("pass"), bool):
            raise ContractError(f"wrong-typed key '{where}': needs a number score and a bool pass")
        if not isinstance(item.get("reason"), str) or len(item["reason"]) > 300:
            raise ContractError(f"wrong-typed key '{where}.reason': a string of ≤ 300 characters")
        meta = item.get("meta")
        if meta is not None and not isinstance(meta, dict):
            raise ContractError(f"wrong-typed key '{where}.meta': must be an object")
        entries.append(dict(item))
    return tuple(entries)


def _pairwise(item: dict[str, Any], where: str) -> dict[str, Any]:
    """A pairwise verdict entry."""
    if not set(_PAIRWISE) <= set(item) <= {*_PAIRWISE, *_PAIRWISE_OPTIONAL}:
        raise ContractError(
            f"wrong-typed key '{where}': an object of {', '.join(_PAIRWISE)}, grades?"
        )
    if "grades" in item:
        _grades(item["grades"], item["against"], where, whole=item["preference"] is not None)
    check, asks = item["check"], item["asks"]
    if type(check) is not int or not 0 <= check < MAX_ENTRIES:
        raise ContractError(f"wrong-typed key '{where}.check': must be a check index")
    if item["against"] not in ("without", "baseline"):
        raise ContractError(f"wrong-typed key '{where}.against': must be without or baseline")
    # preference null: a pair whose judging failed part-way keeps what was answered.
    finished = item["preference"] is not None
    if finished and (item["preference"] not in (-1, 0, 1) or isinstance(item["preference"], bool)):
        raise ContractError(f"wrong-typed key '{where}.preference': must be -1, 0, 1 or null")
    if not isinstance(asks, list) or not (len(asks) == 2 if finished else 1 <= len(asks) <= 2):
        raise ContractError(f"wrong-typed key '{where}.asks': must hold the two asks")
    for ask in asks:
        ok = (
            isinstance(ask, dict)
            and set(ask) == _ASK
            and isinstance(ask["key"], str)
            and _HEX64.fullmatch(ask["key"]) is not None
            and ask["withAs"] in ("a", "b")
            and ask["winner"] in ("a", "b", "tie")
            and isinstance(ask["reason"], str)
            and len(ask["reason"]) <= 300
        )
        if not ok:
            raise ContractError(f"wrong-typed key '{where}.asks': {{key, withAs, winner, reason}}")
    return dict(item)


def _grades(grades: object, against: object, where: str, *, whole: bool) -> None:
    """The two absolute grades of a disagreeing pair: the with answer's, then the other's
    (not ``whole``: those answered before its judging failed, perhaps none)."""
    if not isinstance(grades, list) or not (len(grades) == 2 if whole else len(grades) <= 2):
        raise ContractError(f"wrong-typed key '{where}.grades': two {{key, arm, score}}")
    ok = True
    for grade, arm in zip(grades, ("with", against), strict=False):
        ok = ok and (
            isinstance(grade, dict)
            and set(grade) == {"key", "arm", "score"}
            and isinstance(grade["key"], str)
            and _HEX64.fullmatch(grade["key"]) is not None
            and grade["arm"] == arm
            and _number(grade["score"])
        )
    if not ok:
        raise ContractError(f"wrong-typed key '{where}.grades': two {{key, arm, score}}")


def parse_judge_files(raw: object) -> tuple[dict[str, Any], ...]:
    """``judgeFiles``: an array of ``{"path", "text", "truncated"}``."""
    if not isinstance(raw, list) or len(raw) > MAX_FILES:
        raise ContractError(
            f"wrong-typed key 'judgeFiles': must be an array of at most {MAX_FILES}"
        )
    files: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        ok = (
            isinstance(item, dict)
            and set(item) == {"path", "text", "truncated"}
            and isinstance(item["path"], str)
            and isinstance(item["text"], str)
            and isinstance(item["truncated"], bool)
        )
        if not ok:
            raise ContractError(
                f"wrong-typed key 'judgeFiles[{index}]': must be {{path, text, truncated}}"
            )
        files.append(dict(item))
    return tuple(files)


def split_judge(
    value: Mapping[str, Any],
) -> tuple[dict[str, Any], tuple[dict[str, Any], ...], tuple[dict[str, Any], ...] | None]:
    """A line's object without its judge keys, and those keys parsed."""
    body = {k: v for k, v in value.items() if k not in ("judge", "judgeFiles")}
    entries = parse_judge_entries(value["judge"]) if "judge" in value else ()
    files = parse_judge_files(value["judgeFiles"]) if "judgeFiles" in value else None
    return body, entries, files
