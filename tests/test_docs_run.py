"""Every page a newcomer follows runs as written from a fresh checkout: the shell blocks of
lint.md, improve.md, sandbox.md, judging.md, skill-listing.md and first-suite.md, in page
order in one shell per page, in a copy of the repository's examples (nothing else of this
checkout). Blocks that need a paid agent or a model key (they install or name a real agent)
or that elide arguments (…) are left out; every other block exits 0."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = ["lint.md", "improve.md", "sandbox.md", "judging.md", "skill-listing.md", "first-suite.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)
PAID = re.compile(
    r"…|npm install|runner (?:claude-code|codex|gemini|pi|opencode)|(?:judge|propose|draft) "
    r"(?:anthropic|openai)"
)


def _blocks(page: str) -> list[str]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    found = [m.group(2) for m in FENCE.finditer(text) if m.group(1) in ("bash", "sh")]
    return [block for block in found if not PAID.search(block)]


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_commands_run_as_written(page: str, tmp_path: Path) -> None:
    blocks = _blocks(page)
    if not blocks:
        pytest.skip(f"{page} has no shell block to run offline")
    clone = tmp_path / "skill-evals"
    clone.mkdir()
    shutil.copytree(REPO / "examples", clone / "examples")
    script = "".join(
        f'{{\n{block}}}\necho "::block {i} $?" >&2\n' for i, block in enumerate(blocks)
    )
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("SKILL_EVALS_SANDBOX", None)
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=600, cwd=clone, env=env
    )
    codes = re.findall(r"^::block (\d+) (\d+)$", proc.stderr, re.M)
    assert len(codes) == len(blocks), proc.stderr[-3000:]
    failed = [(int(i), int(code)) for i, code in codes if code != "0"]
    assert failed == [], (failed, proc.stderr[-3000:])
