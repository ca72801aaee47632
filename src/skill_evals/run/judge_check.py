"""Asking a judge about labelled examples (`skill-evals judge-check`, docs/judging.md): one ask
per absolute example, two per pairwise one (the file's ``a`` as ``a`` first, then swapped),
``--jobs`` at a time, each verdict reused from ``--cache DIR`` when its request key is there."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..suite.jsonl import read_jsonl_values
from ..suite.judge_labels import Example
from .judging import Judging, in_parallel

CACHE_FILE = "judge-verdicts.jsonl"
MAX_CACHED = 1_000_000


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def requests_of(example: Example) -> list[dict[str, Any]]:
    """The request(s) of one example: its answer becomes ``output``."""
    if example.answer is not None:
        return [
            {
                "kind": "absolute",
                "prompt": example.prompt,
                "rubric": example.rubric,
                "scale": [_number(example.scale[0]), _number(example.scale[1])],
                "threshold": None if example.threshold is None else _number(example.threshold),
                "answer": {"output": example.answer, "files": []},
            }
        ]
    a: dict[str, Any] = {"output": example.a, "files": []}
    b: dict[str, Any] = {"output": example.b, "files": []}
    base = {"kind": "pairwise", "prompt": example.prompt, "rubric": example.rubric}
    return [{**base, "a": a, "b": b}, {**base, "a": b, "b": a}]


@dataclass(frozen=True)
class Checked:
    """One example's verdicts (one per ask, in ask order), or why the judge failed."""

    verdicts: tuple[Mapping[str, Any], ...] = ()
    failure: str | None = None


class VerdictCache:
    """``--cache DIR``: verdicts by request key, one JSON line each, append-only; a corrupt
    file is ignored with a warning (a cache is disposable)."""

    def __init__(self, directory: Path | None) -> None:
        self.path = directory / CACHE_FILE if directory is not None else None
        self.known: dict[str, dict[str, Any]] = {}
        self.warnings: list[str] = []
        self.lock = threading.Lock()
        if self.path is None:
            return
        directory.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        if self.path.exists():
            try:
                for _, value in read_jsonl_values(self.path, max_records=MAX_CACHED):
                    if isinstance(value.get("key"), str) and isinstance(value.get("verdict"), dict):
                        self.known[value["key"]] = value["verdict"]
            except InvalidInput:
                self.known = {}
                self.warnings.append(f"cache {self.path}: not a verdict cache; ignored")

    def store(self, key: str, verdict: Mapping[str, Any]) -> None:
        """Append one verdict."""
        if self.path is None:
            return
        line = json.dumps({"key": key, "verdict": dict(verdict)}, ensure_ascii=False) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def _verdict_of(answer: Any) -> dict[str, Any]:
    verdict = answer.verdict
    found: dict[str, Any] = {"reason": verdict.reason}
    if verdict.winner is not None:
        found["winner"] = verdict.winner
    else:
        found["score"], found["pass"] = verdict.score, verdict.passed
    return found


def check_examples(
    examples: Sequence[Example], judging: Judging, cache: VerdictCache, jobs: int
) -> list[Checked]:
    """Every example asked (or answered from the cache), in file order."""
    argv = judging.settings.command
    assert argv is not None

    def one(example: Example) -> Checked:
        verdicts = []
        for request in requests_of(example):
            key = judging.request_key(argv, request)
            cached = cache.known.get(key)
            if cached is not None:
                judging.ledger.reused(cached=True)
                verdicts.append(cached)
                continue
            answer = judging.call(argv, request)
            if answer.verdict is None:
                return Checked(failure=answer.failure)
            found = _verdict_of(answer)
            cache.store(key, found)
            verdicts.append(found)
        return Checked(tuple(verdicts))

    with judging.sweeper.running():
        return in_parallel(list(examples), one, jobs)
