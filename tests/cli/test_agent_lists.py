"""Every place that lists the built-in agents lists all of them (the config's `agent:` once
refused `qwen`), and every agent runner's `--help` example gets past the checks taken before
anything starts (the OpenCode and Copilot examples once had no `--model`: exit 5 as written)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from skill_evals.agents.registry import ENTRIES as AGENT_ENTRIES
from skill_evals.agents.registry import agent
from skill_evals.plan.ready import check_runner
from skill_evals.suite.agent_profiles import PROFILES
from tests.conftest import REPO

NAMES = [e.name for e in AGENT_ENTRIES]


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip


def test_the_config_schema_profiles_and_registry_name_the_same_agents() -> None:
    schema = json.loads((REPO / "src/skill_evals/schemas/config.schema.json").read_text())
    assert schema["$defs"]["agent"]["enum"] == list(PROFILES)
    assert set(PROFILES) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_agent_is_accepted_as_the_configs_agent(tmp_path: Path, name: str) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".skill-evals.yml").write_text(f"agent: {name}\n", encoding="utf-8")
    done = _cli(tmp_path, "ci", "plan")
    assert done.returncode == 0, done.stderr


def _example(name: str) -> tuple[dict[str, str], str]:
    """The environment assignments and the --runner value of the runner's help example."""
    done = _cli(REPO, "runner", name, "--help")
    assert done.returncode == 0, done.stderr
    example = done.stdout.split("Example:", 1)[1].split("Read:", 1)[0]
    words = shlex.split(example.replace("\\\n", " "))
    env = dict(w.split("=", 1) for w in words if re.match(r"^[A-Z_]+=", w))
    return env, words[words.index("--runner") + 1]


@pytest.mark.parametrize("name", NAMES)
def test_every_runner_help_example_passes_the_checks_before_start(
    tmp_path: Path, name: str
) -> None:
    env, runner = _example(name)
    assert runner.startswith(f"skill-evals runner {name}")
    binary = tmp_path / agent(name).binary  # the agent's CLI, present on PATH
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    kept = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    keys = {k: "k" for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")}
    path = f"{tmp_path}{os.pathsep}{Path(sys.executable).parent}"  # skill-evals is there
    check_runner(runner, {**kept, **keys, **env, "PATH": path}, str(tmp_path))
