"""Shared by the judge tests: a skill, a case file with judge checks, a table runner and the
scripted judge (tests/runners/judge.py), and the real CLI run as a subprocess."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.conftest import write_jsonl, write_skill

RUNNERS = Path(__file__).resolve().parent / "runners"
TABLE_RUNNER = RUNNERS / "table.py"
JUDGE = RUNNERS / "judge.py"
SKILL = "release-notes"
DESCRIPTION = "Write release notes for a version from its changelog. Use when asked for notes."


def make_suite(
    root: Path,
    rows: Mapping[str, Mapping[str, Any]],
    task: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, Path]:
    """Write the skill, the cases (one per row, ``task`` for every case or per case id) and the
    runner's table; return their paths."""
    root.mkdir(parents=True, exist_ok=True)
    skill = write_skill(root, SKILL, DESCRIPTION, "# Release notes\n\nTitle, summary, changes.\n")
    cases = []
    for case_id in rows:
        case_task = task[case_id] if isinstance(task, Mapping) else task
        prompt = f"Write the release notes of version 2.{len(cases)} for the widget library"
        cases.append({"id": case_id, "prompt": prompt, "expectTrigger": True, "task": case_task})
    write_jsonl(root / "cases.jsonl", cases)
    (root / "table.json").write_text(json.dumps({"skill": SKILL, "cases": rows}), "utf-8")
    return {"skill": skill, "cases": root / "cases.jsonl", "table": root / "table.json"}


def runner_cmd(root: Path) -> str:
    """The table runner over ``root``'s table (it logs to runner.log: :func:`run_cli`)."""
    return f"{sys.executable} {TABLE_RUNNER} {root / 'table.json'}"


def judge_cmd(root: Path, *more: str) -> str:
    """The scripted judge, logging each request to ``root``/judge.log. A judge gets only an
    allowlist of the caller's environment, so the log is named in its trusted command line
    (``--log=PATH``: one word naming no file, so not by content in the request key); ``root``
    must be writable in its sandbox (--sandbox-path ROOT:rw, :func:`cli_args`)."""
    return " ".join([sys.executable, str(JUDGE), f"--log={root / 'judge.log'}", *more])


def run_cli(
    root: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``skill-evals ARGS`` in ``root``; the table runner and the judge log into ``root``."""
    logs = {"TABLE_RUNNER_LOG": str(root / "runner.log"), "JUDGE_LOG": str(root / "judge.log")}
    full = {**os.environ, **logs, **(env or {})}
    return subprocess.run(
        ["skill-evals", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=full,
        timeout=timeout,
        check=False,
    )


def cli_args(root: Path, *more: str, runner: bool = True) -> list[str]:
    """``test`` over ``root``'s suite with one trial, quiet; the table runner and the judge
    log into ``root``, outside their workspaces, so that folder is writable in their sandbox."""
    args = ["test", "--skill", SKILL, "--cases", "cases.jsonl", "--trials", "1", "-q"]
    if runner:
        args += ["--runner", runner_cmd(root)]
    return [*args, "--sandbox-path", f"{root}:rw", *more]


def judge_log(root: Path) -> list[dict[str, Any]]:
    """The requests the scripted judge received (empty when none)."""
    path = root / "judge.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def judge_sleepers(root: Path) -> list[int]:
    """The host pids of the children the scripted judge left (found by the tokens it wrote to
    judge.log.pids in their command lines: inside a sandbox it sees other pids)."""
    path = root / "judge.log.pids"
    tokens = path.read_text("utf-8").split() if path.exists() else []
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
            state = (entry / "stat").read_text().rsplit(") ", 1)[1][:1]
        except OSError:
            continue
        if state != "Z" and any(token in words for token in tokens):
            found.append(int(entry.name))
    return found


def runner_log(root: Path) -> list[str]:
    """The invocations the table runner answered."""
    path = root / "runner.log"
    return path.read_text("utf-8").splitlines() if path.exists() else []


def report_of(path: Path) -> dict[str, Any]:
    """A JSON report file."""
    return json.loads(path.read_text("utf-8"))


# The statistics of a pairwise suite, written out here from their documented definitions (never
# the engine's functions), to compare the report's figures with.


def mulberry32_draws(seed: int, n: int) -> list[float]:
    """The first ``n`` draws of mulberry32 seeded with ``seed``."""
    state, out = seed, []
    for _ in range(n):
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = ((state ^ (state >> 15)) * (state | 1)) & 0xFFFFFFFF
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        out.append(((t ^ (t >> 14)) & 0xFFFFFFFF) / 2**32)
    return out


def bootstrap(values: Sequence[Fraction], samples: int, seed: int) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the mean of ``values`` (units in order)."""
    stream, n = iter(mulberry32_draws(seed, samples * len(values))), len(values)
    means = sorted(
        sum((values[math.floor(next(stream) * n)] for _ in range(n)), Fraction(0)) / n
        for _ in range(samples)
    )
    return (
        float(means[math.floor(0.025 * (samples - 1))]),
        float(means[math.ceil(0.975 * (samples - 1))]),
    )


def sign_test(values: Sequence[Fraction]) -> dict[str, object]:
    """The report's exact two-sided sign test over the nonzero ``values``."""
    positive = sum(1 for v in values if v > 0)
    negative = sum(1 for v in values if v < 0)
    n, k = positive + negative, min(positive, negative)
    p = min(Fraction(1), 2 * Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n))
    return {
        "positive": positive,
        "negative": negative,
        "ties": len(values) - n,
        "pValue": float(p) if n else None,
    }
