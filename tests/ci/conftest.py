"""Helpers for the CI gate tests: temporary git repositories holding several skills."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE_SKILL, write_skill

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return stdout."""
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit_all(repo: Path, message: str = "change") -> str:
    """Stage everything and commit; return the new HEAD sha."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def cases_for(name: str, count: int = 12, triggers: int = 6) -> list[dict[str, Any]]:
    """``count`` distinct cases, the first ``triggers`` expecting the skill."""
    return [
        {
            "id": f"{name}-case-{i}",
            "prompt": f"question number {i} about {name}",
            "expectTrigger": i < triggers,
        }
        for i in range(count)
    ]


def make_repo(
    root: Path,
    skills: Sequence[str] = ("alpha", "beta", "gamma"),
    config: str | None = "runner: skill-evals runner simulated\ntrials: 1\n",
) -> Path:
    """A git repo with one committed skill per name under skills/, each with evals/cases.jsonl."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for name in skills:
        skill = write_skill(
            root / "skills",
            name=name,
            description=f"Answer questions about {name} topics and {name} things.",
            body=f"# {name}\n\nAll about {name}.\n",
        )
        cases = skill / "evals" / "cases.jsonl"
        cases.parent.mkdir(parents=True, exist_ok=True)
        cases.write_text("".join(json.dumps(c) + "\n" for c in cases_for(name)), "utf-8")
    if config is not None:
        (root / ".skill-evals.yml").write_text(config, encoding="utf-8")
    commit_all(root, "initial")
    return root


def run_cli(
    args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m skill_evals ARGS`` in ``cwd`` with a clean GitHub-free environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    base.pop("CI", None)
    full = {**base, **GIT_ENV, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# Full runs (no early stop) so the figures the tests read are the whole suite's; the ci defaults
# (--arms auto, stop when settled) are tested on their own in test_gate_scope.py.
SIMULATED = "runner: skill-evals runner simulated\ntrials: 1\njobs: 4\nstop-when-settled: false\n"


def gh_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A GitHub Actions-like environment with output/summary files in ``tmp``."""
    (tmp / "summary.md").write_text("# earlier step\n", encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(tmp / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        **extra,
    }


def build_repo(root: Path, config: str = SIMULATED) -> Path:
    """refund-policy (the example skill, tasks included) plus two small skills."""
    repo = make_repo(root, skills=("alpha", "beta"), config=config)
    shutil.copytree(EXAMPLE_SKILL, repo / "skills" / "refund-policy")
    commit_all(repo, "add refund-policy")
    return repo


@pytest.fixture(scope="session")
def passing_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Edit refund-policy after the base commit, run ci --base under a GitHub-like env."""
    tmp = tmp_path_factory.mktemp("passing")
    repo = build_repo(tmp / "repo")
    base = git(repo, "rev-parse", "HEAD")
    with (repo / "skills" / "refund-policy" / "SKILL.md").open("a", encoding="utf-8") as fh:
        fh.write("\nBe brief.\n")
    commit_all(repo)
    env = gh_env(tmp)
    out = tmp / "out"
    done = run_cli(["ci", "--base", base, "--out", str(out)], repo, env)
    return {"repo": repo, "out": out, "done": done, "tmp": tmp, "base": base}


@pytest.fixture(scope="session")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The trigger gate set above what the simulated runner reaches: exit 1."""
    tmp = tmp_path_factory.mktemp("failing")
    repo = build_repo(tmp / "repo", SIMULATED + "gates: {min-trigger-f1: 0.99}\n")
    env = gh_env(tmp)
    out = tmp / "out"
    done = run_cli(["ci", "--only", "refund-policy", "--out", str(out)], repo, env)
    return {"repo": repo, "out": out, "done": done, "tmp": tmp}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def example_skill() -> Path:
    return EXAMPLE_SKILL
