"""A table runner for tests: answers each (case, variant[, trial]) from a JSON table.

argv: TABLE. TABLE maps case id → variant → {"output", "exitCode", "invoke", "files", "meta"}
(or a list of those, one per trial). ``invoke`` (default true for with): report the skill
named in the table's "skill" key. ``files``: {relative path: text} written into the
workspace. ``meta``: reported as the runner's meta. $TABLE_RUNNER_LOG, when set, gets one
line "case trial variant" per invocation (an environment variable, not an argument: an
argument naming a file enters the cache key by its content).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> None:
    table = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    sys.stdin.buffer.read()
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    case_id = os.environ["EVALGATE_SKILL_CASE_ID"]
    trial = int(os.environ["EVALGATE_SKILL_TRIAL"])
    arm = os.environ.get("SKILL_EVALS_ARM", variant)
    row = table["cases"][case_id]
    cell = row.get(arm, row.get(variant))
    if isinstance(cell, list):
        cell = cell[(trial - 1) % len(cell)]
    if os.environ.get("TABLE_RUNNER_LOG"):
        with open(os.environ["TABLE_RUNNER_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{case_id} {trial} {arm}\n")
    workspace = os.environ.get("SKILL_EVALS_WORKSPACE")
    for rel, text in cell.get("files", {}).items():
        assert workspace is not None
        target = Path(workspace) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    invoked = cell.get("invoke", variant == "with")
    answer = {
        "variant": variant,
        "invokedSkills": [table["skill"]] if invoked else [],
        "output": cell.get("output", ""),
        "exitCode": cell.get("exitCode", 0),
    }
    if "meta" in cell:
        answer["meta"] = cell["meta"]
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
