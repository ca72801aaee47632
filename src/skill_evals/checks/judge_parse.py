"""Validating a ``judge`` check when the cases file loads: rubric, scale, threshold, include and
the name of the check's judge, each error naming the field (never the rubric's text).

A case file is data: it may pick a judge only by a name the trusted side defines (--judges, the
config's ``judges:``; ``default`` is --judge), never name a program (docs/judging.md)."""

from __future__ import annotations

import math
import re
from typing import Any

from .judge_files import glob_problem
from .judge_model import MAX_RUBRIC_CHARS, Judge, JudgePairwise
from .reporting import Reporter, Where

JUDGE_FIELDS = (("rubric",), ("scale", "threshold", "include", "judge"))
PAIRWISE_FIELDS = (("rubric",), ("include", "judge"))


def parse_judge(raw: dict[str, Any], where: Where, report: Reporter) -> Judge:
    """One ``judge`` check object (its keys already checked against JUDGE_FIELDS)."""
    rubric = _rubric(raw, where, report)
    scale = _scale(raw.get("scale"), (*where, "scale"), report)
    threshold = _threshold(raw.get("threshold"), scale, (*where, "threshold"), report)
    include = parse_include(raw.get("include"), (*where, "include"), report)
    name = parse_judge_name(raw.get("judge"), (*where, "judge"), report)
    return Judge(rubric, scale, threshold, include, name)


def parse_pairwise(raw: dict[str, Any], where: Where, report: Reporter) -> JudgePairwise:
    """One ``judge_pairwise`` check object (its keys already checked against PAIRWISE_FIELDS)."""
    rubric = _rubric(raw, where, report)
    include = parse_include(raw.get("include"), (*where, "include"), report)
    name = parse_judge_name(raw.get("judge"), (*where, "judge"), report)
    return JudgePairwise(rubric, include, name)


def _rubric(raw: dict[str, Any], where: Where, report: Reporter) -> str:
    value = raw["rubric"]
    at = (*where, "rubric")
    if not isinstance(value, str):
        raise report.wrong_type(at, "a string", value)
    if not value.strip():
        raise report.fail(at, "must not be empty: say what a good answer does")
    if len(value) > MAX_RUBRIC_CHARS:
        raise report.fail(at, f"at most {MAX_RUBRIC_CHARS} characters (has {len(value)})")
    return value


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _scale(value: object, at: Where, report: Reporter) -> tuple[float, float]:
    if value is None:
        return (0.0, 1.0)
    if not isinstance(value, list) or len(value) != 2 or not all(_number(v) for v in value):
        raise report.wrong_type(at, "[lo, hi], two finite numbers", value)
    low, high = float(value[0]), float(value[1])
    if not low < high:
        raise report.fail(at, "the first number must be smaller than the second")
    return (low, high)


def _threshold(
    value: object, scale: tuple[float, float], at: Where, report: Reporter
) -> float | None:
    if value is None:
        return None
    if not _number(value):
        raise report.wrong_type(at, "a finite number", value)
    assert isinstance(value, (int, float))
    if not scale[0] <= value <= scale[1]:
        raise report.fail(at, f"must lie within the scale [{scale[0]:g}, {scale[1]:g}]")
    return float(value)


def parse_include(value: object, at: Where, report: Reporter) -> tuple[str, ...]:
    """``include``: a non-empty list of distinct ``output`` / ``files:<glob>`` entries."""
    if value is None:
        return ("output",)
    if not isinstance(value, list):
        raise report.wrong_type(at, 'an array of "output" and "files:<glob>" entries', value)
    if not value:
        raise report.fail(at, "must list at least one entry")
    seen: set[str] = set()
    for index, item in enumerate(value):
        here = (*at, index)
        if not isinstance(item, str):
            raise report.wrong_type(here, 'a string ("output" or "files:<glob>")', item)
        if item in seen:
            raise report.fail(here, "is listed twice")
        seen.add(item)
        if item == "output":
            continue
        if not item.startswith("files:"):
            raise report.fail(here, 'must be "output" or "files:<glob>"')
        problem = glob_problem(item[len("files:") :])
        if problem is not None:
            raise report.fail(here, problem)
    return tuple(value)


JUDGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_NAME_HINT = (
    "must name a judge the trusted side defines (--judges NAME=CMD, the config's judges:, or "
    "default for --judge): letters, digits, '_', '.', '-', at most 64 characters; a case "
    "file never gives a command or a path"
)


def parse_judge_name(value: object, at: Where, report: Reporter) -> str | None:
    """A check's own ``judge``: the name of a judge the trusted side defines (None when
    absent). Whether the name is defined is checked when the run is planned."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise report.wrong_type(at, 'a judge name (a string, e.g. "default")', value)
    if not JUDGE_NAME.fullmatch(value):
        raise report.fail(at, _NAME_HINT)
    return value
