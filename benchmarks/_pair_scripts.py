"""The scripts of bench_pairwise.py: a table runner and a position-biased judge (offline).

``runner TABLE``: answers the case's arm from TABLE (case id → arm → output), reporting the
skill loaded with the skill. ``judge --seed=N``: each answer's output holds its true quality as
``[[q=X]]``. A pairwise ask of two answers whose qualities differ by less than CLOSE names the
first position (``a``) with probability BIAS and otherwise the better answer with probability
SKILL; a clear pair is always judged right. An absolute ask grades the answer's quality plus
Gaussian noise of standard deviation NOISE, clipped to the scale. Every random draw comes from
the SHA-256 of the request and the seed, so a run is reproducible and an ask repeated gives the
same verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
from pathlib import Path

CLOSE = 0.2  # qualities closer than this are "close"
BIAS = 0.7  # a close pair: the first position wins this often
SKILL = 0.8  # a close pair, unbiased: the better answer wins this often
NOISE = 0.1  # the absolute grade's noise


def _quality(answer: dict[str, object]) -> float:
    text = str(answer.get("output") or "")
    return float(text.split("[[q=", 1)[1].split("]]", 1)[0])


def _judge(seed: str) -> dict[str, object]:
    raw = sys.stdin.buffer.read()
    request = json.loads(raw.decode("utf-8"))
    rng = random.Random(hashlib.sha256(raw + seed.encode()).hexdigest())
    if request["kind"] == "absolute":
        lo, hi = request["scale"]
        score = min(hi, max(lo, _quality(request["answer"]) + rng.gauss(0, NOISE)))
        return {"score": score, "pass": score >= (lo + hi) / 2, "reason": "graded"}
    qa, qb = _quality(request["a"]), _quality(request["b"])
    better, worse = ("a", "b") if qa > qb else ("b", "a")
    if abs(qa - qb) < CLOSE:
        if rng.random() < BIAS:
            return {"winner": "a", "reason": "the first reads better"}
        if rng.random() >= SKILL:
            return {"winner": worse, "reason": "misread"}
    return {"winner": better, "reason": "better"}


def _runner(table_path: str) -> dict[str, object]:
    table = json.loads(Path(table_path).read_text(encoding="utf-8"))
    sys.stdin.buffer.read()
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    case_id = os.environ["EVALGATE_SKILL_CASE_ID"]
    return {
        "variant": variant,
        "invokedSkills": [table["skill"]] if variant == "with" else [],
        "output": table["cases"][case_id][variant],
        "exitCode": 0,
    }


if __name__ == "__main__":
    role, arg = sys.argv[1], sys.argv[2]
    out = _runner(arg) if role == "runner" else _judge(arg.split("=", 1)[1])
    print(json.dumps(out))
