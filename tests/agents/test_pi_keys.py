"""pi without a key says what to set, as clearly as the other agents: a built-in provider's
``--model provider/id`` whose key variable is unset is refused before pi starts (naming the
variable), and pi's own "No API key found" (a model with no provider prefix) reads the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.conftest import agent_binary
from tests.agents.e2e import caller_env, run_runner_cli
from tests.conftest import write_skill

_KEYS = ("PI_", "SKILL_EVALS_PI_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "GROQ_")


def _reason(tmp_path: Path, *argv: str) -> tuple[int, str]:
    skill = write_skill(tmp_path / "skills")
    (tmp_path / "home").mkdir()
    env = caller_env(tmp_path, _KEYS, {"HOME": str(tmp_path / "home")})
    proc = run_runner_cli(["pi", *argv], "with", skill, env, "a question", 120)
    line = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, str(line.get("runnerError") or proc.stderr)


def test_a_built_in_provider_without_its_key_is_refused_before_pi_starts(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    fake_pi = tmp_path / "pi"
    fake_pi.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake_pi.chmod(0o755)
    code, reason = _reason(tmp_path, "--bin", str(fake_pi), "--model", "anthropic/claude-x")
    assert code != 0
    assert reason == (
        "no API key: set SKILL_EVALS_PI_API_KEY or the provider's variable (ANTHROPIC_API_KEY) "
        "for --model anthropic/claude-x"
    )
    assert not marker.exists()


@pytest.mark.agents
def test_pis_own_no_key_reads_the_same(tmp_path: Path) -> None:
    code, reason = _reason(tmp_path, "--bin", agent_binary("pi"))
    assert code != 0
    assert reason == (
        "no API key: set SKILL_EVALS_PI_API_KEY or the provider's variable for --model "
        "<provider/model>"
    )
