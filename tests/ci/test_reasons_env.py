"""Reasons said once, and `require-env` following the runner in effect: real `ci` runs in
temporary git repositories with the simulated runner and a private TMPDIR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skill_evals.messages import join_clauses

from .conftest import SIMULATED, commit_all, make_repo, run_cli


def _skills(out: Path) -> dict[str, dict[str, Any]]:
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {s["name"]: s for s in report["skills"]}


def _clauses(reason: str) -> list[str]:
    return [c for c in reason.split("; ") if c]


def test_a_new_skill_under_compare_base_says_new_since_base_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=SIMULATED + "compare: base\n")
    base = commit_all(repo, "base")
    new = make_repo(tmp_path / "src", skills=("delta",), config=None)
    (repo / "skills" / "delta").mkdir()
    for item in (new / "skills" / "delta").rglob("*"):
        target = repo / "skills" / "delta" / item.relative_to(new / "skills" / "delta")
        if item.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.write_bytes(item.read_bytes())
    commit_all(repo, "add delta")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    done = run_cli(["ci", "--base", base, "--out", str(out)], repo, {"TMPDIR": str(tmp)})
    assert done.returncode in (0, 1), done.stderr[-3000:]
    reason = _skills(out)["delta"]["reason"]
    assert reason.count("new since base") == 1, reason
    assert f"new since base {base[:12]}: no baseline" in reason
    clauses = _clauses(reason)
    assert len(clauses) == len(set(clauses)), reason
    for name in ("summary.md", "comment.md"):
        text = (out / name).read_text(encoding="utf-8")
        assert text.count("new since base") <= 1, name


def test_join_clauses_drops_repeats_and_prefixes() -> None:
    assert join_clauses("new since base abc", "new since base abc: no baseline") == (
        "new since base abc: no baseline"
    )
    assert join_clauses("a; b", "b", None, "", "a") == "a; b"
    assert join_clauses("changed since x", "comparison gates skipped: none") == (
        "changed since x; comparison gates skipped: none"
    )


def _env_repo(tmp_path: Path, config: str) -> Path:
    return make_repo(tmp_path / "repo", skills=("alpha", "beta"), config=config)


def test_require_env_is_not_required_by_the_simulated_runner(tmp_path: Path) -> None:
    repo = _env_repo(
        tmp_path,
        "runner: skill-evals runner claude-code\ntrials: 1\n"
        "require-env: [SKILL_EVALS_TEST_KEY_THAT_IS_UNSET]\n"
        "overrides:\n  alpha:\n    runner: skill-evals runner simulated\n",
    )
    env = {"SKILL_EVALS_TEST_KEY_THAT_IS_UNSET": "", "TMPDIR": str(tmp_path)}
    out = tmp_path / "out"
    # Outside a fork's pull request a missing variable is exit 7 unless skipping is asked for.
    done = run_cli(["ci", "--all", "--out", str(out), "--skip-on-missing-secrets"], repo, env)
    assert done.returncode == 0, done.stderr[-3000:]
    skills = _skills(out)
    assert skills["alpha"]["status"] == "evaluated"  # the override: the simulation
    assert skills["beta"]["status"] == "skipped"  # a real agent still needs its key
    assert "SKILL_EVALS_TEST_KEY_THAT_IS_UNSET" in skills["beta"]["reason"]
    # --runner overrides the config for every skill: nothing is skipped
    out2 = tmp_path / "out2"
    argv = ["ci", "--all", "--out", str(out2), "--fail-on-missing-secrets"]
    done = run_cli([*argv, "--runner", "skill-evals runner simulated"], repo, env)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert {s["status"] for s in _skills(out2).values()} == {"evaluated"}


def test_a_command_that_only_mentions_the_simulation_still_needs_the_variables(
    tmp_path: Path,
) -> None:
    """A shell line or wrapper that runs the simulation and then something else is another
    runner: its require-env variables are required."""
    repo = _env_repo(
        tmp_path,
        "runner: sh -c 'skill-evals runner simulated; my-agent'\ntrials: 1\n"
        "require-env: [SKILL_EVALS_TEST_KEY_THAT_IS_UNSET]\n"
        "overrides:\n  alpha:\n    runner: python3 -m skill_evals runner simulated\n",
    )
    env = {"SKILL_EVALS_TEST_KEY_THAT_IS_UNSET": "", "TMPDIR": str(tmp_path)}
    out = tmp_path / "out"
    # Outside a fork's pull request a missing variable is exit 7 unless skipping is asked for.
    done = run_cli(["ci", "--all", "--out", str(out), "--skip-on-missing-secrets"], repo, env)
    assert done.returncode == 0, done.stderr[-3000:]
    skills = _skills(out)
    assert skills["alpha"]["status"] == "evaluated"  # exactly the simulation
    assert skills["beta"]["status"] == "skipped"  # a shell line that mentions it


def test_a_runner_reason_says_runner_once() -> None:
    from skill_evals.run.runner_output import parse_runner_error, runner_reason

    assert runner_reason("runner: quota exhausted") == "runner: quota exhausted"
    assert runner_reason("Runner:  runner: x") == "runner: x"
    line = b'{"runnerError": "runner: upstream 503", "retryable": true}\n'
    found = parse_runner_error(line)
    assert found is not None and found.reason == "runner: upstream 503" and found.retryable


def test_the_estimate_follows_require_env_and_the_runner_in_effect(tmp_path: Path) -> None:
    """A skill the run would skip for an unset require-env variable plans nothing; the one
    whose runner in effect is the simulation plans its invocations."""
    repo = _env_repo(
        tmp_path,
        "runner: skill-evals runner simulated\ntrials: 1\nstop-when-settled: false\n"
        "require-env: [SKILL_EVALS_TEST_KEY_THAT_IS_UNSET]\n"
        "overrides:\n  beta:\n    runner: skill-evals runner claude-code\n",
    )
    env = {"SKILL_EVALS_TEST_KEY_THAT_IS_UNSET": "", "TMPDIR": str(tmp_path)}
    done = run_cli(["ci", "plan", "--all", "--estimate"], repo, env)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split()[0]: line.split()[1:4] for line in done.stdout.splitlines()[1:3]}
    assert rows["alpha"][2] != "0" and rows["beta"] == ["0", "0", "0"], done.stdout
    assert "beta: skipped, required environment variable(s) empty or unset: " in done.stdout
    real = run_cli(
        ["ci", "plan", "--all", "--estimate", "--runner", "skill-evals runner claude-code"],
        repo,
        env,
    )
    assert real.stdout.count("skipped, required environment variable") == 2, real.stdout


def test_a_missing_base_commit_is_said_once(tmp_path: Path) -> None:
    """The change detection and compare: base both find the base commit missing; the report,
    the summary, the comment and the log say each message once."""
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=SIMULATED + "compare: base\n")
    out = tmp_path / "out"
    done = run_cli(["ci", "--base", "deadbeef", "--out", str(out)], repo, {"TMPDIR": str(tmp_path)})
    assert done.returncode in (0, 1), done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert len(report["messages"]) == len(set(report["messages"])) > 0, report["messages"]
    fetch = "fetching it failed"
    assert done.stderr.count(fetch) == 1, done.stderr[-3000:]
    for name in ("summary.md", "comment.md"):
        assert (out / name).read_text(encoding="utf-8").count(fetch) == 1, name
