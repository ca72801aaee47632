"""`ci` checks the agent's skill listing over every skill of the gate before any runner, also
when nothing changed: lines on stderr, `listing` in report.json, a section in the summary, and
exit 5 with `strict: true`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ci.conftest import git, make_repo, run_cli

CONFIG = "runner: skill-evals runner simulated\ntrials: 1\nagent: claude-code\n"


def _entry(name: str) -> int:
    description = f"Answer questions about {name} topics and {name} things."
    return len(f"- {name}: {description}\n")


def test_the_listing_is_checked_before_any_runner(tmp_path: Path) -> None:
    names = ("alpha", "beta", "gamma")
    demand = sum(_entry(n) for n in names)
    budget = _entry("alpha") + _entry("beta") + len("- gamma\n")  # gamma loses its text
    repo = make_repo(tmp_path / "repo", names, CONFIG + f"listing:\n  listing-budget: {budget}\n")
    head = git(repo, "rev-parse", "HEAD")
    out = tmp_path / "out"
    # Nothing changed since HEAD: no skill runs, the listing is still checked.
    done = run_cli(["ci", "--base", head, "--out", str(out)], repo)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert (
        f"skills/gamma/SKILL.md: warning: claude-code listing: {demand} of {budget} characters "
        "for 3 skills: this description is dropped (name only)"
    ) in lines
    assert (
        f"claude-code listing: {demand} of {budget} characters, 3 skills, 0 cut, 1 dropped" in lines
    )
    report = json.loads((out / "report.json").read_text())
    assert report["listing"] == {
        "agent": "claude-code", "budget": budget, "unit": "characters", "chars": demand,
        "skills": 3, "cut": [], "dropped": ["gamma"],
    }  # fmt: skip
    summary = (out / "summary.md").read_text()
    assert "### Skill listing" in summary
    assert "Description dropped (name only): ` gamma `" in summary


def test_strict_stops_before_any_runner(tmp_path: Path) -> None:
    config = CONFIG + "strict: true\nlisting:\n  listing-budget: 100\n"
    repo = make_repo(tmp_path / "repo", ("alpha", "beta"), config)
    out = tmp_path / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo)
    assert done.returncode == 5, done.stderr
    assert "descriptions would be cut or dropped, and strict is on" in done.stderr
    assert (
        not list((out / "observations").glob("*.jsonl"))
        if (out / "observations").exists()
        else True
    )


def test_no_agent_no_listing(tmp_path: Path) -> None:
    config = "runner: skill-evals runner simulated\ntrials: 1\n"
    repo = make_repo(tmp_path / "repo", ("alpha",), config)
    head = git(repo, "rev-parse", "HEAD")
    out = tmp_path / "out"
    done = run_cli(["ci", "--base", head, "--out", str(out)], repo)
    assert done.returncode == 0, done.stderr
    assert "claude-code listing" not in done.stderr
    assert json.loads((out / "report.json").read_text())["listing"] is None


def test_each_skills_report_carries_its_lint_and_strict_stops_first(tmp_path: Path) -> None:
    """The pre-flight of `test` runs in `ci` too: the lint is in each skill's report, and with
    `strict: true` a lint warning is exit 5 before that skill's first runner."""
    config = "runner: skill-evals runner simulated\ntrials: 1\n"
    repo = make_repo(tmp_path / "repo", ("alpha",), config)
    out = tmp_path / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo)
    report = json.loads((out / "report.json").read_text())["skills"][0]["report"]
    # cases_for: prompts "question number i about alpha" name the skill
    rules = [p["rule"] for p in report["lint"]]
    assert "prompt-names-skill" in rules, rules
    assert "prompt-names-skill" in done.stderr
    (repo / ".skill-evals.yml").write_text(config + "strict: true\n", encoding="utf-8")
    strict = run_cli(["ci", "--all", "--out", str(out)], repo)
    assert strict.returncode == 5, strict.stderr
    skill = json.loads((out / "report.json").read_text())["skills"][0]
    assert skill["report"]["runner"] is None and "strict is on" in skill["report"]["messages"][0]
