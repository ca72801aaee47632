"""Shared parts of the fixtures/*/capture.py scripts, which regenerate the captured transcripts
from the real agent CLIs and the scripted models: where the skills are written, the runner's
command line, and how the transcript of a kept workspace is copied next to the script."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path


def write_two(root: Path, refund: str, shipping: str) -> None:
    """``root/refund-policy/SKILL.md`` and ``root/shipping-times/SKILL.md`` with these texts."""
    for name, text in (("refund-policy", refund), ("shipping-times", shipping)):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(text, encoding="utf-8")


def runner_argv(agent: str, binary: str, *args: str) -> list[str]:
    """``python -m skill_evals runner AGENT --bin BINARY ARGS…``."""
    return [sys.executable, "-m", "skill_evals", "runner", agent, "--bin", binary, *args]


def keep_transcript(name: str, stderr: bytes, here: Path) -> None:
    """Copy the transcript of the workspace the runner kept (its stderr says where) to
    ``here/<name>.jsonl``, then remove that workspace."""
    kept = re.search(rb"workspace kept at (\S+)", stderr)
    if kept is None:
        raise SystemExit(f"{name}: the runner kept no workspace: {stderr!r}")
    workspace = Path(kept.group(1).decode())
    shutil.copyfile(workspace / "transcript.jsonl", here / f"{name}.jsonl")
    shutil.rmtree(workspace)
