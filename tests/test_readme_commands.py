"""The README's command table lists every command `skill-evals --help` lists, and
`runner opencode --help` and `runner copilot --help` say --model is required."""

from __future__ import annotations

import re

from click.testing import CliRunner

from skill_evals.cli.main import cli
from tests.conftest import REPO


def test_the_readme_table_lists_every_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in readme.splitlines() if line.startswith("| `skill-evals"))
    listed = set(re.findall(r"`skill-evals ([a-z-]+)", table))
    listed |= set(re.findall(r"`(lock|changed)`", table))  # the ci row names its siblings
    assert set(cli.commands) - listed == set()


def test_opencode_help_says_model_is_required() -> None:
    result = CliRunner().invoke(cli, ["runner", "opencode", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "--model TEXT Required (no default): the model as provider/model" in text


def test_copilot_help_says_model_is_required() -> None:
    result = CliRunner().invoke(cli, ["runner", "copilot", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "--model TEXT Required unless COPILOT_MODEL is set (no default)" in text
    assert "the agent's own default" not in text
