"""A scripted runner for the arm, budget and early-stop tests: it answers from a JSON script
and counts its invocations.

    python -S arms.py SCRIPT LOG

SCRIPT: {"skill": NAME, "cases": {CASE ID: {ARM: {"trigger": BOOL | [per trial],
         "exit": INT | [per trial]}}}, "cost": NUMBER (optional), "breach": BOOL (optional)}
ARM is SKILL_EVALS_ARM (with, without, baseline); a missing entry means no trigger, exit 0.
"touch": PATH appends a line to PATH on every baseline invocation (a directory edited mid-run).
LOG: one line "case trial arm variant skill_dir" is appended per invocation (flock'd), so a test
counts exactly what ran.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys


def _pick(value: object, trial: int) -> object:
    if isinstance(value, list):
        return value[(trial - 1) % len(value)]
    return value


def main() -> None:
    script_path, log_path = sys.argv[1], sys.argv[2]
    with open(script_path, encoding="utf-8") as fh:
        script = json.load(fh)
    sys.stdin.buffer.read()
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    arm = os.environ.get("SKILL_EVALS_ARM", "?")
    case_id = os.environ["EVALGATE_SKILL_CASE_ID"]
    trial = int(os.environ["EVALGATE_SKILL_TRIAL"])
    skill_dir = os.environ["EVALGATE_SKILL_DIR"]
    with open(log_path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(f"{case_id} {trial} {arm} {variant} {skill_dir}\n")
    if script.get("touch") and arm == "baseline":
        with open(script["touch"], "a", encoding="utf-8") as fh:
            fh.write("edited during the run\n")
    entry = script.get("cases", {}).get(case_id, {}).get(arm, {})
    trigger = bool(_pick(entry.get("trigger", False), trial))
    if arm == "without" and not script.get("breach"):
        trigger = False
    line: dict[str, object] = {
        "variant": variant,
        "invokedSkills": [script["skill"]] if trigger else [],
        "output": "scripted",
        "exitCode": int(_pick(entry.get("exit", 0), trial)),  # type: ignore[call-overload]
    }
    if "cost" in script:
        line["meta"] = {"costUsd": script["cost"], "inputTokens": 100, "outputTokens": 10}
    print(json.dumps(line))


if __name__ == "__main__":
    main()
