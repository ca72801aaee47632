"""Human-labelled examples for `skill-evals judge-check` (docs/judging.md#calibrate-before-
gating): one JSON object per line, all of one kind — absolute ``{"id", "prompt", "answer",
"rubric", "label": bool, "scale"?, "threshold"?}`` or pairwise ``{"id", "prompt", "a", "b",
"rubric", "label": "a"|"b"|"tie"}``. Errors name the file, line and field, never the text."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .jsonl import read_jsonl_values

MAX_EXAMPLES = 100_000
MAX_ID_CHARS = 200
_ABSOLUTE = ("id", "prompt", "answer", "rubric", "label", "scale", "threshold")
_PAIRWISE = ("id", "prompt", "a", "b", "rubric", "label")


@dataclass(frozen=True)
class Example:
    """One labelled example: its request's parts and the person's label."""

    id: str
    line: int
    prompt: str
    rubric: str
    label: bool | str
    answer: str | None = None  # absolute
    a: str | None = None  # pairwise
    b: str | None = None
    scale: tuple[float, float] = (0.0, 1.0)
    threshold: float | None = None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: dict[str, Any], key: str, where: str, limit: int | None = None) -> str:
    item = value.get(key)
    if not isinstance(item, str) or not item.strip():
        raise InvalidInput(f"{where}: field {key}: must be a non-empty string")
    if limit is not None and len(item) > limit:
        raise InvalidInput(f"{where}: field {key}: at most {limit} characters")
    return item


def _example(value: dict[str, Any], where: str, line: int, kind: str) -> Example:
    allowed = _ABSOLUTE if kind == "absolute" else _PAIRWISE
    for key in value:
        if key not in allowed:
            shown = key[:40] if isinstance(key, str) else "?"
            raise InvalidInput(
                f"{where}: unknown field {shown!r} for a {kind} example; allowed: "
                + ", ".join(allowed)
            )
    base: dict[str, Any] = {
        "id": _text(value, "id", where, MAX_ID_CHARS),
        "line": line,
        "prompt": _text(value, "prompt", where),
        "rubric": _text(value, "rubric", where, 20_000),
    }
    if kind == "pairwise":
        label = value.get("label")
        if label not in ("a", "b", "tie"):
            raise InvalidInput(f'{where}: field label: must be "a", "b" or "tie"')
        return Example(**base, label=label, a=_text(value, "a", where), b=_text(value, "b", where))
    label = value.get("label")
    if not isinstance(label, bool):
        raise InvalidInput(f"{where}: field label: must be true or false")
    scale = value.get("scale", [0, 1])
    if not isinstance(scale, list) or len(scale) != 2 or not all(_number(s) for s in scale):
        raise InvalidInput(f"{where}: field scale: must be [lo, hi], two finite numbers")
    if not scale[0] < scale[1]:
        raise InvalidInput(f"{where}: field scale: the first number must be smaller")
    threshold = value.get("threshold")
    if threshold is not None and (not _number(threshold) or not scale[0] <= threshold <= scale[1]):
        raise InvalidInput(f"{where}: field threshold: must be a number within the scale")
    return Example(
        **base,
        label=label,
        answer=_text(value, "answer", where),
        scale=(float(scale[0]), float(scale[1])),
        threshold=None if threshold is None else float(threshold),
    )


def load_examples(path: Path) -> tuple[str, list[Example]]:
    """The kind (``absolute`` or ``pairwise``) and the examples of ``path``, in file order;
    exit 5 for a bad line, mixed kinds or a duplicate id."""
    if path.suffix.lower() != ".jsonl":
        raise InvalidInput(f"{path}: --cases must be a .jsonl file of labelled examples")
    kind: str | None = None
    examples: list[Example] = []
    seen: dict[str, int] = {}
    for line, value in read_jsonl_values(path, max_records=MAX_EXAMPLES):
        where = f"{path}:{line}"
        this = "pairwise" if "a" in value or "b" in value else "absolute"
        if kind is None:
            kind = this
        elif this != kind:
            raise InvalidInput(
                f"{where}: a {this} example in a file of {kind} examples; one kind per file"
            )
        example = _example(value, where, line, this)
        if example.id in seen:
            raise InvalidInput(
                f"{where}: field id: duplicate id (first on line {seen[example.id]})"
            )
        seen[example.id] = line
        examples.append(example)
    return kind or "absolute", examples
