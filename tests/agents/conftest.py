"""Locating the real agent CLIs that .ci/run installs from npm into .cache/agents."""

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
