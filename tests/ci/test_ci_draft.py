"""`draft: suggest` in `ci`, on a real temporary git repository: a skill with no cases is listed
with the command that drafts some; with a drafter configured, a drafted suite (near-misses
against the repository's other skills) is written under --out/drafts/ and summarised with its
lint warnings in summary.md — the exit code stays that of a skill with no cases, and the
repository is left untouched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.ci.conftest import commit_all, git, make_repo, run_cli

REPO_ROOT = Path(__file__).resolve().parents[2]
BASE = "runner: skill-evals runner simulated\ntrials: 1\nsandbox: required\n"
HINT = "no cases — draft some: skill-evals cases draft --skill skills/refund-policy --drafter …"


def _repo(tmp: Path, config: str) -> Path:
    repo = make_repo(tmp / "repo", ("alpha",), config)
    shutil.copytree(REPO_ROOT / "examples" / "skills" / "refund-policy",
                    repo / "skills" / "refund-policy")  # fmt: skip
    shutil.rmtree(repo / "skills" / "refund-policy" / "evals")
    (repo / "drafters").mkdir()
    shutil.copy(REPO_ROOT / "examples" / "drafters" / "template.py", repo / "drafters")
    commit_all(repo, "add refund-policy without cases")
    return repo


@pytest.fixture(scope="module")
def drafted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("ci-draft")
    config = BASE + "draft: suggest\ndrafter: python3 drafters/template.py\n"
    repo = _repo(tmp, config)
    out = tmp / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo)
    return {"repo": repo, "out": out, "done": done}


def test_a_skill_with_no_cases_gets_a_drafted_suite(drafted: dict[str, Any]) -> None:
    done, out, repo = drafted["done"], drafted["out"], drafted["repo"]
    assert done.returncode == 1, done.stderr  # no cases stays a failure: the draft is no gate
    report = json.loads((out / "report.json").read_text("utf-8"))
    skill = next(s for s in report["skills"] if s["name"] == "refund-policy")
    assert skill["status"] == "no-cases" and skill["exitCode"] == 1
    assert HINT in skill["reason"]
    assert skill["draft"] == {
        "status": "drafted", "path": "drafts/refund-policy.jsonl", "cases": 20,
        "lintWarnings": 0, "rules": [], "reason": None,
    }  # fmt: skip
    alpha = next(s for s in report["skills"] if s["name"] == "alpha")
    assert "draft" not in alpha  # it has cases
    lines = (out / "drafts" / "refund-policy.jsonl").read_text("utf-8").splitlines()
    cases = [json.loads(line) for line in lines]
    assert len(cases) == 20 and {c["source"] for c in cases} == {"drafted"}
    assert any("neighbour:alpha" in c["tags"] for c in cases)  # the repository's other skill
    summary = (out / "summary.md").read_text("utf-8")
    assert "Drafted suites" in summary
    assert "refund-policy: 20 drafted case(s) in drafts/refund-policy.jsonl; lint: 0" in summary
    assert git(repo, "status", "--porcelain") == ""  # nothing written into the repository


def test_without_a_drafter_the_hint_names_the_command(tmp_path: Path) -> None:
    repo = _repo(tmp_path, BASE)
    out = tmp_path / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo)
    assert done.returncode == 1
    report = json.loads((out / "report.json").read_text("utf-8"))
    skill = next(s for s in report["skills"] if s["name"] == "refund-policy")
    assert HINT in skill["reason"] and "draft" not in skill
    assert not (out / "drafts").exists()
    (repo / ".skill-evals.yml").write_text(BASE + "draft: suggest\n", "utf-8")
    commit_all(repo, "draft without a drafter")
    bad = run_cli(["ci", "--all", "--out", str(tmp_path / "out2")], repo)
    assert bad.returncode == 5 and "draft: suggest needs a drafter command" in bad.stderr
