"""`improve: suggest` in `ci`, on a real temporary git repository: a skill whose trigger gate
fails gets a validated description in the summary, the comment and --out/suggestions/; the exit
code stays; the repository is left untouched; with --comment the suggestion goes to a loopback
fake of the GitHub REST API as a review comment when the pull request changes the description."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ci.conftest import commit_all, git, make_repo, run_cli
from tests.ci.fake_github import FakeGitHub, pr_env, serving

REPO_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ghs_SUGGESTtoken0987654321"
PR = 9
CONFIG = (
    "runner: skill-evals runner simulated\ntrials: 1\nseed: 14\ngates:\n  min-trigger-f1: 0.9\n"
    "improve: suggest\nproposer: python3 proposers/keywords.py\n"
    "improve-options:\n  rounds: 2\n"
)
BEFORE = "Audit supplier invoices - check totals and tax lines."
NEW = '"' + BEFORE + ' Also for: billing, charges, statement."'


def _repo(tmp: Path) -> tuple[Path, str]:
    repo = make_repo(tmp / "repo", ("alpha",), CONFIG)
    base = git(repo, "rev-parse", "HEAD")
    example = REPO_ROOT / "examples" / "improve"
    shutil.copytree(example / "invoice-audit", repo / "skills" / "invoice-audit")
    cases = repo / "skills" / "invoice-audit" / "evals" / "cases.jsonl"
    cases.parent.mkdir()
    shutil.copy(example / "invoice-audit-cases.jsonl", cases)
    (repo / "proposers").mkdir()
    shutil.copy(REPO_ROOT / "examples" / "proposers" / "keywords.py", repo / "proposers")
    commit_all(repo, "add invoice-audit")
    return repo, base


@pytest.fixture(scope="module")
def suggested(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("suggest")
    repo, base = _repo(tmp)
    out = tmp / "out"
    done = run_cli(["ci", "--base", base, "--out", str(out)], repo)
    return {"repo": repo, "out": out, "done": done, "tmp": tmp, "base": base}


def test_a_failed_trigger_gate_gets_a_validated_suggestion(suggested: dict[str, Any]) -> None:
    done, out, repo = suggested["done"], suggested["out"], suggested["repo"]
    assert done.returncode == 1, done.stderr  # the verdict stays
    report = json.loads((out / "report.json").read_text())
    skill = next(s for s in report["skills"] if s["name"] == "invoice-audit")
    suggestion = skill["suggestion"]
    assert suggestion["accepted"] is True and suggestion["description"] == json.loads(NEW)
    held = suggestion["heldOut"]
    assert held["after"] > held["before"] and held["lower"] > 0 and held["cases"] == 8
    assert skill["exitCode"] == 1 and skill["report"]["gates"]["minTriggerF1"]["passed"] is False
    summary = (out / "summary.md").read_text()
    line = (
        f"Suggested description — held-out F1 {held['before']:.2f} → {held['after']:.2f} "
        f"({held['difference']:+.2f} [{held['lower']:+.2f}, {held['upper']:+.2f}]) on 8 "
        "held-out cases"
    )
    assert line in summary and f"+description: {NEW}" in summary and "```diff" in summary
    assert line in (out / "comment.md").read_text()
    folder = out / "suggestions"
    improve = json.loads((folder / "invoice-audit.json").read_text())
    assert improve["status"] == "accepted"
    assert (folder / "invoice-audit.diff").read_text() == suggestion["diff"]
    assert suggestion["diff"].startswith("--- a/skills/invoice-audit/SKILL.md\n")
    review = json.loads((folder / "invoice-audit.review.json").read_text())
    assert review == {
        "path": "skills/invoice-audit/SKILL.md", "line": 3, "side": "RIGHT",
        "body": f"```suggestion\ndescription: {NEW}\n```",
    }  # fmt: skip
    # alpha passed its gate: improve never ran for it.
    alpha = next(s for s in report["skills"] if s["name"] == "alpha")
    assert alpha.get("suggestion") is None
    assert git(repo, "status", "--porcelain") == ""  # nothing edited, nothing committed


def test_without_suggest_nothing_runs(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path)
    config = (repo / ".skill-evals.yml").read_text().replace("improve: suggest", "improve: off")
    (repo / ".skill-evals.yml").write_text(config)
    commit_all(repo, "off")
    out = tmp_path / "out"
    done = run_cli(["ci", "--base", base, "--out", str(out)], repo)
    assert done.returncode == 1
    assert not (out / "suggestions").exists()
    skill = next(s for s in json.loads((out / "report.json").read_text())["skills"]
                 if s["name"] == "invoice-audit")  # fmt: skip
    assert "suggestion" not in skill


def test_suggest_needs_a_proposer(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ("alpha",), "runner: skill-evals runner simulated\n"
                     "improve: suggest\n")  # fmt: skip
    done = run_cli(["ci", "--all", "--out", str(tmp_path / "out")], repo)
    assert done.returncode == 5 and "suggest needs a proposer command" in done.stderr


@pytest.fixture
def api() -> Iterator[tuple[FakeGitHub, str]]:
    state = FakeGitHub(TOKEN, PR, max_requests=50)
    state.head_sha = "b" * 40
    with serving(state) as url:
        yield state, url


@pytest.mark.parametrize("touches", [True, False])
def test_the_review_comment_goes_where_the_pr_changed_the_description(
    suggested: dict[str, Any], api: tuple[FakeGitHub, str], tmp_path: Path, touches: bool
) -> None:
    state, url = api
    patch = (
        "@@ -1,3 +1,3 @@\n ---\n name: invoice-audit\n-description: old\n+description: new\n"
        if touches
        else "@@ -6,2 +6,3 @@\n 1. Add up\n+2. More\n 3. List\n"
    )
    state.files = [{"filename": "skills/invoice-audit/SKILL.md", "patch": patch}]
    out = tmp_path / "out"
    env = pr_env(tmp_path, TOKEN, PR, url, base=suggested["base"])  # its policy: the base's
    done = run_cli(["ci", "--base", suggested["base"], "--out", str(out), "--comment"],
                   suggested["repo"], env)  # fmt: skip
    assert done.returncode == 1, done.stderr
    if touches:
        (review,) = state.reviews
        assert review == {
            "body": f"```suggestion\ndescription: {NEW}\n```", "commit_id": "b" * 40,
            "path": "skills/invoice-audit/SKILL.md", "line": 3, "side": "RIGHT",
        }  # fmt: skip
        assert "suggested the description on PR #9" in done.stderr
    else:
        assert state.reviews == []
        assert "does not change the description: no review comment" in done.stderr
    assert TOKEN not in done.stderr and TOKEN not in done.stdout
