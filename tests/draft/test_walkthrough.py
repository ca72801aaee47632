"""docs/drafting.md's offline walkthrough runs as written, in order, from a fresh copy of the
repository's examples: draft with the template drafter, then lint and test the drafted suite
with the simulated runner."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```bash\n(.*?)^```\n", re.M | re.S)


def test_the_walkthrough_runs_as_written(tmp_path: Path) -> None:
    text = (REPO / "docs" / "drafting.md").read_text("utf-8")
    walkthrough = text[: text.index("## With a model")]
    commands = [
        line
        for block in FENCE.findall(walkthrough)
        for line in block.replace("\\\n", " ").splitlines()
    ]
    assert [c.split()[:3] for c in commands] == [
        ["cp", "-r", "examples/skills"], ["skill-evals", "cases", "draft"],
        ["skill-evals", "lint", "--skill"], ["skill-evals", "test", "--skill"],
    ]  # fmt: skip
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    bin_dir = Path(sys.executable).parent
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    for command in commands:
        done = subprocess.run(shlex.split(command), cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip
        assert done.returncode == 0, (command, done.stderr)
    lines = (tmp_path / "drafted-cases.jsonl").read_text("utf-8").splitlines()
    cases = [json.loads(line) for line in lines]
    assert len(cases) == 20 and {c["source"] for c in cases} == {"drafted"}
    assert not any("refund-policy" in c["prompt"].lower() for c in cases)
