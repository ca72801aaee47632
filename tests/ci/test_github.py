"""The sticky PR comment against a fake GitHub REST API on 127.0.0.1 (stdlib http.server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_evals.ci import github
from skill_evals.ci.summary import MARKER
from tests.conftest import write_skill

from . import fake_github
from .conftest import run_cli
from .fake_github import FakeGitHub, serving

TOKEN = "ghs_SECRETtoken1234567890"
PR = 7


@pytest.fixture
def api() -> Iterator[tuple[FakeGitHub, str]]:
    state = FakeGitHub(TOKEN, PR)
    with serving(state) as url:
        yield state, url


def pr_env(tmp_path: Path, url: str, **extra: str) -> dict[str, str]:
    return fake_github.pr_env(tmp_path, TOKEN, PR, url, **extra)


def test_create_then_update_in_place_never_touching_others(
    api: tuple[FakeGitHub, str], tmp_path: Path
) -> None:
    state, url = api
    planted = state.add("mallory", MARKER + "\nplanted by someone else")
    env = pr_env(tmp_path, url)
    first = github.post_comment(MARKER + "\nfirst", env)
    assert first.action == "created"
    second = github.post_comment(MARKER + "\nsecond", env)
    assert second.action == "updated" and second.comment_id == first.comment_id
    ours = [c for c in state.comments if c["user"]["login"] == "skill-bot"]
    assert len(ours) == 1 and ours[0]["body"] == MARKER + "\nsecond"
    theirs = next(c for c in state.comments if c["id"] == planted)
    assert theirs["body"] == MARKER + "\nplanted by someone else"
    assert not any(m == "PATCH" and p.endswith(f"/{planted}") for m, p, _ in state.requests)
    # our own comment without the marker is not ours to edit either
    state.add("skill-bot", "a human-ish note from the same account")
    assert github.post_comment(MARKER + "\nthird", env).action == "updated"
    assert any(c["body"] == "a human-ish note from the same account" for c in state.comments)


def test_actions_token_identity_is_github_actions_bot(
    api: tuple[FakeGitHub, str], tmp_path: Path
) -> None:
    state, url = api
    state.user = None  # /user → 403, as for the Actions GITHUB_TOKEN
    other = state.add("skill-bot", MARKER + "\nfrom a PAT identity")
    env = pr_env(tmp_path, url, GITHUB_ACTIONS="true")
    assert github.post_comment(MARKER + "\none", env).action == "created"
    result = github.post_comment(MARKER + "\ntwo", env)
    assert result.action == "updated"
    bot = [c for c in state.comments if c["user"]["login"] == "github-actions[bot]"]
    assert len(bot) == 1 and bot[0]["body"].endswith("two")
    assert next(c for c in state.comments if c["id"] == other)["body"].endswith("PAT identity")
    # outside Actions, an unknown identity means: do not touch anything
    assert github.post_comment(MARKER + "\nx", pr_env(tmp_path, url)).action == "failed"


def test_pagination_finds_our_comment_on_a_later_page(
    api: tuple[FakeGitHub, str], tmp_path: Path
) -> None:
    state, url = api
    for i in range(150):
        state.add("someone", f"comment {i}")
    ours = state.add("skill-bot", MARKER + "\nold")
    result = github.post_comment(MARKER + "\nnew", pr_env(tmp_path, url))
    assert result.action == "updated" and result.comment_id == ours


@pytest.mark.parametrize("code", [403, 404, 500])
def test_http_errors_are_warnings(api: tuple[FakeGitHub, str], tmp_path: Path, code: int) -> None:
    state, url = api
    state.fail_with = code
    result = github.post_comment(MARKER + "\nx", pr_env(tmp_path, url))
    assert result.action == "failed" and f"HTTP {code}" in result.message
    assert TOKEN not in result.message


def test_network_failure_is_a_warning(tmp_path: Path) -> None:
    result = github.post_comment(MARKER, pr_env(tmp_path, "http://127.0.0.1:9"))
    assert result.action == "failed" and TOKEN not in result.message


def test_skips_without_token_repo_or_pr(tmp_path: Path) -> None:
    env = pr_env(tmp_path, "http://127.0.0.1:9")
    assert github.post_comment(MARKER, {**env, "GITHUB_TOKEN": ""}).action == "skipped"
    assert github.post_comment(MARKER, {**env, "GITHUB_REPOSITORY": ""}).action == "skipped"
    push = tmp_path / "push.json"
    push.write_text(json.dumps({"ref": "refs/heads/main"}))
    assert github.post_comment(MARKER, {**env, "GITHUB_EVENT_PATH": str(push)}).action == "skipped"


def test_head_sha_guard(api: tuple[FakeGitHub, str], tmp_path: Path) -> None:
    state, url = api
    env = pr_env(tmp_path, url)
    result = github.post_comment(MARKER, env, number=PR, head_sha="b" * 40)
    assert result.action == "skipped" and state.comments == []
    assert github.post_comment(MARKER, env, number=PR, head_sha="a" * 40).action == "created"


def test_ci_comment_end_to_end_token_never_in_output(
    api: tuple[FakeGitHub, str], tmp_path: Path
) -> None:
    state, url = api
    repo = tmp_path / "repo"
    write_skill(repo / "skills", "lonely")  # no cases: exit 1 without running anything
    (repo / ".skill-evals.yml").write_text("runner: skill-evals runner simulated\n", "utf-8")
    out = tmp_path / "out"
    env = pr_env(
        tmp_path,
        url,
        GITHUB_OUTPUT=str(tmp_path / "o.txt"),
        GITHUB_STEP_SUMMARY=str(tmp_path / "s.md"),
    )
    # not a git repo → every skill; no cases → exit 1; the comment is still posted
    done = run_cli(["ci", "--comment", "--out", str(out)], repo, env)
    assert done.returncode == 1
    assert "created a comment on PR #7" in done.stderr
    assert len(state.comments) == 1 and state.comments[0]["body"].startswith(MARKER)
    done2 = run_cli(["ci", "--comment", "--out", str(out)], repo, env)
    assert done2.returncode == 1 and "updated PR #7 comment" in done2.stderr
    assert len(state.comments) == 1
    state.fail_with = 403
    done3 = run_cli(["ci", "--comment", "--out", str(out)], repo, env)
    assert done3.returncode == 1  # unchanged by the failed comment
    assert "warning: PR comment not posted" in done3.stderr
    for run in (done, done2, done3):
        assert TOKEN not in run.stdout and TOKEN not in run.stderr
    for path in [*out.rglob("*"), tmp_path / "o.txt", tmp_path / "s.md"]:
        if path.is_file():
            assert TOKEN not in path.read_text(encoding="utf-8", errors="replace")
    # every request carried the token in the header only, never in the URL
    assert all(TOKEN not in p and a == f"Bearer {TOKEN}" for _, p, a in state.requests)


def _ci_report_dir(tmp_path: Path) -> Path:
    """A real `ci` output directory (a skill without cases: exit 1, nothing runs)."""
    repo = tmp_path / "repo"
    write_skill(repo / "skills", "lonely")
    (repo / ".skill-evals.yml").write_text("runner: skill-evals runner simulated\n", "utf-8")
    out = tmp_path / "report"
    assert run_cli(["ci", "--out", str(out)], repo).returncode == 1
    return out


def test_ci_comment_renders_the_comment_from_the_report(
    api: tuple[FakeGitHub, str], tmp_path: Path
) -> None:
    """The fork-safe poster renders the comment itself from the validated report.json: a
    comment.md in the artifact is never posted, whatever it says."""
    state, url = api
    out = _ci_report_dir(tmp_path)
    (out / "comment.md").write_text(MARKER + "\n@everyone ![x](http://evil.example/t.png)\n")
    env = pr_env(tmp_path, url, GITHUB_SERVER_URL="https://github.com", GITHUB_RUN_ID="1")
    args = ["ci", "comment", str(out), "--pr", str(PR), "--head-sha", "a" * 40]
    done = run_cli([*args, "--run-id", "4242"], tmp_path, env)
    assert done.returncode == 0 and "created" in done.stderr, done.stderr
    (comment,) = state.comments
    assert comment["body"].startswith(MARKER) and "lonely" in comment["body"]
    assert "@everyone" not in comment["body"] and "evil.example" not in comment["body"]
    assert "/octo/skills/actions/runs/4242)" in comment["body"]  # the evaluating run
    # report.json itself works as the argument too, and updates the same comment
    again = run_cli(["ci", "comment", str(out / "report.json"), "--pr", str(PR)], tmp_path, env)
    assert again.returncode == 0 and "updated" in again.stderr and len(state.comments) == 1
    # a comment.md (the old interface) or a tampered report is refused: exit 5, nothing posted
    assert (
        run_cli(["ci", "comment", str(out / "comment.md"), "--pr", "7"], tmp_path, env).returncode
        == 5
    )
    report = json.loads((out / "report.json").read_text("utf-8"))
    report["skills"][0]["exitCode"] = "1; @everyone"
    (out / "report.json").write_text(json.dumps(report), "utf-8")
    bad = run_cli(["ci", "comment", str(out), "--pr", "7"], tmp_path, env)
    assert bad.returncode == 5 and "not a valid skill-evals ci report" in bad.stderr
    assert "@everyone" not in bad.stderr  # the offending value is never echoed
    assert len(state.comments) == 1
