"""Shared parts of the end-to-end tests of the built-in runners (codex, gemini, opencode, pi):
the two skills they are run with, the caller's environment for a runner and the runner's run as
a `python -m skill_evals runner …` subprocess."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skill_evals.agents.content import SkillText
from skill_evals.agents.versions import VERSION_CHECKED_VAR
from tests.conftest import skill_md, write_jsonl, write_skill

REFUND_DESCRIPTION = "Answer questions about refunds, returns and receipts for store purchases."
SHIPPING_DESCRIPTION = "Explain delivery and shipping times for parcels."
SHIPPING_BODY = "# Shipping\n\nParcels arrive in 3 to 5 working days.\n"
REFUND_PROMPT = "Can I get refunds on store purchases without receipts?"
# Long enough (> 200 characters) that a read showing it is content-proven.
LONG_REFUND_BODY = (
    "# Refund policy\n\nRefunds within 30 days with a receipt. Items bought on sale can be "
    "exchanged but not refunded,\nand gift cards are never refundable. Refunds go back to the "
    "original payment method.\n"
)
LONG_REFUND_SKILL = skill_md("refund-policy", REFUND_DESCRIPTION, LONG_REFUND_BODY)


def two_skills(tmp_path: Path, refund_body: str) -> dict[str, Path]:
    """``refund-policy`` (with ``refund_body``) and ``shipping-times`` under tmp_path/skills."""
    root = tmp_path / "skills"
    return {
        "refund-policy": write_skill(root, "refund-policy", REFUND_DESCRIPTION, refund_body),
        "shipping-times": write_skill(root, "shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY),
    }


def two_texts(refund_body: str) -> list[SkillText]:
    """The SKILL.md texts :func:`two_skills` writes, as the evidence rules compare reads with."""
    return [
        SkillText.of("refund-policy", skill_md("refund-policy", REFUND_DESCRIPTION, refund_body)),
        SkillText.of(
            "shipping-times", skill_md("shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)
        ),
    ]


def caller_env(
    tmp_path: Path,
    drop: tuple[str, ...],
    settings: Mapping[str, str],
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The caller's environment for a runner: this process's without the variables starting
    with ``drop`` (the developer's own agent settings), then ``settings``, a private TMPDIR
    (tmp_path/tmpdir, so leftover workspaces are visible) and ``extra``."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(settings)
    env["TMPDIR"] = str(tmpdir)
    env.update(extra or {})
    return env


def run_runner_cli(
    argv: Sequence[str],
    variant: str,
    skill: Path,
    env: Mapping[str, str],
    prompt: str,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """``skill-evals runner ARGV…`` for one ``variant`` of ``skill``, ``prompt`` on stdin.

    As under the engine, the runner skips its own ``<bin> --version`` check (Gemini CLI's takes
    ~3 s): the agents here are the tested releases, and test_versions.py proves the check of a
    runner run by hand."""
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", *argv],
        input=prompt, capture_output=True, text=True, timeout=timeout,
        env={VERSION_CHECKED_VAR: "1", **env, "EVALGATE_SKILL_VARIANT": variant,
             "EVALGATE_SKILL_DIR": str(skill)},
    )  # fmt: skip


def claude_code_runner() -> str:
    """The ``--runner`` of the real, pinned Claude Code."""
    from tests.agents.conftest import agent_binary

    python = shlex.quote(sys.executable)
    return f"{python} -m skill_evals runner claude-code --bin {agent_binary('claude')}"


def without_claude_settings() -> dict[str, str]:
    """This process's environment without the developer's own Claude Code settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}


def gated_repo(root: Path, skill_text: str, rows: Sequence[Mapping[str, Any]], runner: str) -> Path:
    """A git repository at root/repo holding the refund-policy skill (``skill_text``), its
    cases and a config that runs ``runner`` sandboxed, one trial, gated on trigger F1 ≥ 0.9."""
    from tests.ci.conftest import commit_all, git

    repo = root / "repo"
    folder = repo / "skills" / "refund-policy"
    (folder / "evals").mkdir(parents=True)
    (folder / "SKILL.md").write_text(skill_text, encoding="utf-8")
    write_jsonl(folder / "evals" / "cases.jsonl", rows)
    (repo / ".skill-evals.yml").write_text(
        f"runner: {runner}\ntrials: 1\njobs: 2\nsandbox: required\n"
        "gates: {min-trigger-f1: 0.9}\n",
        encoding="utf-8",
    )
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo)
    return repo


def passed_gate(done: subprocess.CompletedProcess[str], out: Path, proxied: str) -> dict[str, Any]:
    """The skill's report of a ``ci --all`` run into ``out``, asserted to have passed its gate
    sandboxed, with ``proxied`` the one key through the proxy and no runner failure."""
    assert done.returncode == 0, done.stderr[-3000:]
    (skill,) = json.loads((out / "report.json").read_text("utf-8"))["skills"]
    report: dict[str, Any] = skill["report"]
    assert report["status"] == "pass" and report["trigger"]["f1"] == 1.0
    assert report["sandbox"]["mode"] == "bwrap"
    assert report["sandbox"]["proxied"] == [proxied]
    assert report["runner"]["failures"] == []
    return report


def result_line(proc: subprocess.CompletedProcess[str]) -> Any:
    """The runner's result: the last line of its stdout, as JSON."""
    return json.loads(proc.stdout.splitlines()[-1])


def run_test_cli(
    skill: Path,
    cases: Path,
    runner: str,
    *options: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``skill-evals test --skill SKILL --cases CASES --runner RUNNER OPTIONS…``, its output
    captured (``env``: the caller's environment, this process's when None)."""
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", runner, *options],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
    )  # fmt: skip
