#!/usr/bin/env python3
"""A template for your own runner (the runner contract, docs/runner-contract.md).

skill-evals runs this once per (case, trial, variant):

    skill-evals test --skill examples/skills/refund-policy \
        --cases examples/skills/refund-policy/evals/cases.jsonl \
        --runner 'python3 examples/runners/custom_runner.py'

It gets the prompt on stdin and four environment variables, and must print exactly one JSON
line and exit 0. Replace `run_agent` with a call to your own agent or harness. The placeholder
below is NOT a model: it "loads" the skill when the prompt mentions the skill's name words, so
the template runs end to end offline.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def run_agent(prompt: str, skill_dir: Path | None) -> tuple[list[str], str, int]:
    """Your agent goes here. Return (skills it really loaded, final answer, task exit code).

    `skill_dir` is None in the `without` variant: the agent must not see the skill then.
    Report a skill as loaded only from evidence the run recorded (a tool call, a file read),
    never from what the answer says."""
    if skill_dir is None:
        return [], "I don't know the policy.", 0
    name = skill_dir.name
    words = [w for w in name.split("-") if len(w) > 2]
    if any(w in prompt.lower() for w in words):
        body = (skill_dir / "SKILL.md").read_text(encoding="utf-8")
        return [name], body, 0
    return [], "I don't know the policy.", 0


def main() -> int:
    variant = os.environ["EVALGATE_SKILL_VARIANT"]  # "with" or "without"
    skill_dir = Path(os.environ["EVALGATE_SKILL_DIR"])
    prompt = sys.stdin.buffer.read().decode("utf-8")
    started = time.monotonic()
    invoked, output, exit_code = run_agent(prompt, skill_dir if variant == "with" else None)
    line = {
        "variant": variant,  # must echo the variant it was given
        "invokedSkills": invoked,
        "output": output,
        "exitCode": exit_code,  # the task's outcome; this process itself exits 0
        "meta": {"durationMs": round((time.monotonic() - started) * 1000, 3)},
    }
    sys.stdout.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
