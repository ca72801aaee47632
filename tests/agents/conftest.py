"""Shared helpers of the agent tests: locating the real agent CLIs that .ci/run installs from npm
into .cache/agents, and searching what a run left on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AGENT_BIN_DIR = Path(
    os.environ.get("SKILL_EVALS_AGENT_BIN_DIR", REPO / ".cache/agents/node_modules/.bin")
)


def agent_binary(name: str) -> str:
    """Path of an installed agent CLI (claude, codex, pi).

    Missing binaries skip the test on a developer machine but fail it under CI (CI=true), where
    .ci/run must have installed them."""
    path = AGENT_BIN_DIR / name
    if not (path.exists() and os.access(path, os.X_OK)):
        message = f"{path} not installed; run .ci/run or npm install --prefix .cache/agents ..."
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return str(path)


def files_holding(roots: list[Path], secret: str) -> list[Path]:
    """Regular files under ``roots`` whose bytes contain ``secret`` or its last 12 characters
    (some tools keep only a key's tail, e.g. to remember that it was approved)."""
    needles = (secret.encode(), secret[-12:].encode())
    found: list[Path] = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            if any(needle in data for needle in needles):
                found.append(path)
    return found


def workspaces_in(tmpdir: Path) -> list[Path]:
    """The agent workspaces left under ``tmpdir`` (their private parent is never listable by
    the agents, so look through the runner's own helper)."""
    from skill_evals.agents.workspace import PARENT_PREFIX, workspaces

    return [w for parent in tmpdir.glob(f"{PARENT_PREFIX}*") for w in workspaces(parent)]


CAPTURE = os.environ.get("SKILL_EVALS_CAPTURE_FIXTURES") == "1"


def keep_fixture(saved: Path, agent: str, name: str) -> None:
    """With SKILL_EVALS_CAPTURE_FIXTURES=1, keep a transcript a real run saved as
    ``fixtures/<agent>/<name>.jsonl`` for the fast parser tests."""
    if CAPTURE:
        target = Path(__file__).resolve().parent / "fixtures" / agent / f"{name}.jsonl"
        target.write_bytes(saved.read_bytes())
