"""A runner that works in the engine's workspace (SKILL_EVALS_WORKSPACE), for tests.

with:    appends "## 1.2.0" and the case id to notes.md, reports a write tool call
without: appends "nothing to add" to notes.md
Both report meta.turns and figures for the efficiency section.

Options:
  --sleep SECONDS   first make a temporary directory (under TMPDIR) and sleep
  --started FILE    append a line to FILE once running (for interrupt tests)
  --touch PATH      also create PATH (relative to the workspace) in the with variant
  --no-workspace    ignore SKILL_EVALS_WORKSPACE (a runner written for EvalGate)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--started")
    parser.add_argument("--touch")
    parser.add_argument("--no-workspace", action="store_true")
    args = parser.parse_args()
    sys.stdin.buffer.read()
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    case_id = os.environ["EVALGATE_SKILL_CASE_ID"]
    workspace = os.environ.get("SKILL_EVALS_WORKSPACE")
    if args.started:
        with open(args.started, "a", encoding="utf-8") as fh:
            fh.write(f"{case_id} {variant} {workspace}\n")
    if args.sleep:
        tempfile.mkdtemp(prefix="editor-runner-")  # left behind: the engine must remove it
        time.sleep(args.sleep)
    calls = []
    if workspace and not args.no_workspace:
        text = f"## 1.2.0\n- {case_id}\n" if variant == "with" else "nothing to add\n"
        with open(os.path.join(workspace, "notes.md"), "a", encoding="utf-8") as fh:
            fh.write(text)
        calls.append({"name": "write", "input": {"path": "notes.md", "mode": "append"}, "ok": True})
        if args.touch and variant == "with":
            with open(os.path.join(workspace, args.touch), "w", encoding="utf-8") as fh:
                fh.write("x")
    calls.append({"name": "write", "input": {"path": "failed.md"}, "ok": False})
    meta = {
        "turns": 3 if variant == "with" else 5,
        "durationMs": 100 if variant == "with" else 300,
        "inputTokens": 1000,
        "outputTokens": 200 if variant == "with" else 500,
        "costUsd": 0.01,
    }
    line = {
        "variant": variant,
        "invokedSkills": ["notes"] if variant == "with" else [],
        "output": "done",
        "exitCode": 0,
        "meta": meta,
        "toolCalls": calls,
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
