"""A runner that leaves a deep directory chain in the engine's workspace, for tests.

with:    for the case ids given as arguments (all when none), makes ``deep/d/d/…`` (1100 levels)
         in the workspace, walking down with relative mkdir/chdir (no path gets long); reports
         the skill
without: touches nothing and reports no skill
"""

from __future__ import annotations

import json
import os
import sys


def chain(top: str, levels: int) -> None:
    """``top/d/d/…`` ``levels`` deep, made one relative step at a time."""
    here = os.open(".", os.O_RDONLY)
    try:
        os.makedirs(top, exist_ok=True)
        os.chdir(top)
        for _ in range(levels):
            os.mkdir("d")
            os.chdir("d")
        with open("bottom.txt", "w", encoding="utf-8") as fh:
            fh.write("deep\n")
    finally:
        os.fchdir(here)
        os.close(here)


def main() -> None:
    sys.stdin.buffer.read()
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    workspace = os.environ.get("SKILL_EVALS_WORKSPACE")
    wanted = sys.argv[1:]
    case_id = os.environ["EVALGATE_SKILL_CASE_ID"]
    if variant == "with" and workspace and (not wanted or case_id in wanted):
        os.chdir(workspace)
        chain("deep", 1100)
    skills = [os.path.basename(os.environ["EVALGATE_SKILL_DIR"])] if variant == "with" else []
    line = {"variant": variant, "invokedSkills": skills, "output": "done", "exitCode": 0}
    print(json.dumps(line))


if __name__ == "__main__":
    main()
