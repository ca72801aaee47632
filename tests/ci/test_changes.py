"""Discovery, fingerprints and change detection against git objects and the lock file."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from skill_evals.ci.base_commit import event_base_sha, git_states
from skill_evals.ci.changes import BaseChoice, detect_changes
from skill_evals.ci.config import parse_config
from skill_evals.ci.discovery import WorkTree, discover
from skill_evals.ci.fingerprint import worktree_states
from skill_evals.ci.git_tree import GitTree
from skill_evals.ci.settings import CiConfig
from skill_evals.errors import InvalidInput
from skill_evals.suite.skill import directory_sha256
from skill_evals.suite.skill_dirs import glob_regex
from tests.conftest import write_skill

from .conftest import commit_all, git, make_repo, run_cli


def changed_lines(repo: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    done = run_cli(["changed", *args], repo, env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def states(repo: Path, config: CiConfig | None = None):  # type: ignore[no-untyped-def]
    config = config or parse_config((repo / ".skill-evals.yml").read_bytes(), "cfg")
    locations, _ = discover(WorkTree(repo), config, repo.name)
    return worktree_states(repo, locations)


def test_git_fingerprints_equal_worktree_fingerprints(repo: Path) -> None:
    (repo / "skills" / "alpha" / "scripts").mkdir()
    script = repo / "skills" / "alpha" / "scripts" / "run.sh"
    script.write_bytes(b"#!/bin/sh\necho \xe2\x9c\x93\n")
    (repo / "skills" / "beta" / ".hidden").write_text("h", encoding="utf-8")
    commit_all(repo)
    head = states(repo)
    tree = GitTree(repo, git(repo, "rev-parse", "HEAD"))
    config = parse_config((repo / ".skill-evals.yml").read_bytes(), "cfg")
    from_git = git_states(tree, config, repo.name)
    assert [(s.path, s.fingerprint) for s in from_git] == [(s.path, s.fingerprint) for s in head]
    by_path = {s.path: s for s in from_git}
    # the git-side dirhash is the directorySha256 of the checked-out files
    assert by_path["skills/alpha"].directory_sha256 == directory_sha256(repo / "skills" / "alpha")
    assert all(s.fingerprint for s in from_git)


def test_only_the_edited_skill_is_changed(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    assert changed_lines(repo, "--base", base) == []
    with (repo / "skills" / "beta" / "SKILL.md").open("a", encoding="utf-8") as fh:
        fh.write("More instructions.\n")
    assert changed_lines(repo, "--base", base) == ["skills/beta"]  # uncommitted edit counts
    commit_all(repo)
    assert changed_lines(repo, "--base", base) == ["skills/beta"]
    assert changed_lines(repo, "--base", "HEAD") == []


def test_new_file_under_scripts_marks_changed(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    target = repo / "skills" / "gamma" / "scripts" / "helper.py"
    target.parent.mkdir()
    target.write_text("print('hi')\n", encoding="utf-8")
    commit_all(repo)
    assert changed_lines(repo, "--base", base) == ["skills/gamma"]


def test_cases_file_and_settings_change_the_fingerprint(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    with (repo / "skills" / "alpha" / "evals" / "cases.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "new", "prompt": "another", "expectTrigger": False}) + "\n")
    commit_all(repo)
    assert changed_lines(repo, "--base", base) == ["skills/alpha"]
    base = git(repo, "rev-parse", "HEAD")
    # an override for one skill changes only that skill; a global setting changes all
    with (repo / ".skill-evals.yml").open("a", encoding="utf-8") as fh:
        fh.write("overrides: {gamma: {trials: 2}}\n")
    commit_all(repo)
    assert changed_lines(repo, "--base", base) == ["skills/gamma"]
    with (repo / ".skill-evals.yml").open("a", encoding="utf-8") as fh:
        fh.write("gates: {min-trigger-f1: 0.5}\n")
    assert changed_lines(repo, "--base", "HEAD") == ["skills/alpha", "skills/beta", "skills/gamma"]
    # jobs and timeouts do not change results, so they do not change fingerprints
    commit_all(repo)
    with (repo / ".skill-evals.yml").open("a", encoding="utf-8") as fh:
        fh.write("jobs: 8\ntimeout-ms: 5000\n")
    assert changed_lines(repo, "--base", "HEAD") == []


def test_fresh_lock_shows_nothing_changed_and_stale_lock_exits_1(repo: Path) -> None:
    done = run_cli(["lock"], repo)
    assert done.returncode == 1 and "no lock file" in done.stderr
    done = run_cli(["lock", "--update"], repo)
    assert done.returncode == 0, done.stderr
    lock = json.loads((repo / ".skill-evals.lock.json").read_text(encoding="utf-8"))
    assert sorted(lock["skills"]) == ["skills/alpha", "skills/beta", "skills/gamma"]
    assert run_cli(["lock"], repo).returncode == 0
    # the default lock file is used when present (outside a pull request)
    assert changed_lines(repo) == []
    assert changed_lines(repo, "--lock", ".skill-evals.lock.json") == []
    (repo / "skills" / "alpha" / "notes.md").write_text("n", encoding="utf-8")
    assert changed_lines(repo) == ["skills/alpha"]
    done = run_cli(["lock"], repo)
    assert done.returncode == 1
    assert "skills/alpha: changed since" in done.stdout
    assert run_cli(["lock", "--update"], repo).returncode == 0
    assert run_cli(["lock"], repo).returncode == 0
    shutil.rmtree(repo / "skills" / "gamma")
    done = run_cli(["lock"], repo)
    assert done.returncode == 1 and "skills/gamma: removed" in done.stdout


def test_lock_file_invalid_exits_5(repo: Path) -> None:
    (repo / "bad.json").write_text("{", encoding="utf-8")
    done = run_cli(["changed", "--lock", "bad.json"], repo)
    assert done.returncode == 5 and "bad.json: the lock file: invalid JSON" in done.stderr


def test_rename_and_move_matched_by_fingerprint(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "agents").mkdir()
    git(repo, "mv", "skills/alpha", "agents/alpha")
    commit_all(repo, "move")
    assert changed_lines(repo, "--base", base) == []
    done = run_cli(["changed", "--base", base, "--format", "json"], repo)
    doc = json.loads(done.stdout)
    moved = [u for u in doc["unchanged"] if u["path"] == "agents/alpha"]
    assert moved and moved[0]["reason"] == "moved from skills/alpha, fingerprint unchanged"
    assert doc["removed"] == []
    # the same through the lock file
    git(repo, "checkout", "-q", base)
    assert run_cli(["lock", "--update"], repo).returncode == 0
    lock = (repo / ".skill-evals.lock.json").read_text(encoding="utf-8")
    git(repo, "checkout", "-q", "main")
    (repo / "x.lock.json").write_text(lock, encoding="utf-8")
    assert changed_lines(repo, "--lock", "x.lock.json") == []


def test_removed_skill_is_reported(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    shutil.rmtree(repo / "skills" / "beta")
    commit_all(repo)
    done = run_cli(["changed", "--base", base, "--format", "json"], repo)
    doc = json.loads(done.stdout)
    assert doc["changed"] == [] and doc["removed"] == [{"name": "beta", "path": "skills/beta"}]
    assert doc["base"]["mode"] == "git" and doc["base"]["sha"] == base


def test_symlink_blob_in_base_never_matches(repo: Path) -> None:
    os.symlink("SKILL.md", repo / "skills" / "alpha" / "link.md")
    commit_all(repo)
    base = git(repo, "rev-parse", "HEAD")
    tree = GitTree(repo, base)
    config = parse_config((repo / ".skill-evals.yml").read_bytes(), "cfg")
    alpha = next(s for s in git_states(tree, config, repo.name) if s.name == "alpha")
    assert alpha.fingerprint is None and "symlink" in (alpha.error or "")
    (repo / "skills" / "alpha" / "link.md").unlink()
    commit_all(repo)
    assert changed_lines(repo, "--base", base) == ["skills/alpha"]
    # a symlink in the working tree makes the skill unhashable → evaluated (and exit 5 there)
    os.symlink("SKILL.md", repo / "skills" / "beta" / "link.md")
    lines = changed_lines(repo, "--base", "HEAD")
    assert lines == ["skills/beta"]
    assert run_cli(["lock", "--update"], repo).returncode == 5


def test_pull_request_event_base_is_the_default(repo: Path, tmp_path: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "skills" / "gamma" / "extra.md").write_text("e", encoding="utf-8")
    commit_all(repo)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3, "base": {"sha": base}}}), "utf-8")
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    assert event_base_sha(env) == base
    assert event_base_sha({**env, "GITHUB_EVENT_NAME": "push"}) is None
    assert changed_lines(repo, env=env) == ["skills/gamma"]
    # explicit --all wins
    assert len(changed_lines(repo, "--all", env=env)) == 3


def test_shallow_clone_fetches_the_missing_base(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin")
    base = git(origin, "rev-parse", "HEAD")
    (origin / "skills" / "beta" / "more.md").write_text("more", encoding="utf-8")
    commit_all(origin)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{origin}", str(clone))
    with pytest.raises(Exception):  # noqa: B017 — the base object is really missing
        git(clone, "cat-file", "-e", f"{base}^{{commit}}")
    done = run_cli(["changed", "--base", base, "--format", "json"], clone)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [c["path"] for c in doc["changed"]] == ["skills/beta"]
    assert "fetched base" in " ".join(doc["base"].get("messages", []))


def test_unavailable_base_evaluates_everything_with_a_message(repo: Path) -> None:
    missing = "0123456789abcdef0123456789abcdef01234567"
    done = run_cli(["changed", "--base", missing, "--format", "json"], repo)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["base"]["mode"] == "all"
    assert "not available" in doc["base"]["reason"]
    assert len(doc["changed"]) == 3
    assert "every skill is evaluated" in done.stderr


def test_default_discovery_skips_git_and_node_modules(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "one")
    write_skill(tmp_path / ".claude" / "skills", "two")
    write_skill(tmp_path / "node_modules" / "pkg", "three")
    write_skill(tmp_path / ".git" / "x", "four")
    (tmp_path / "skills" / "one" / "evals").mkdir()
    (tmp_path / "skills" / "one" / "evals" / "cases.yaml").write_text("cases: []\n", "utf-8")
    (tmp_path / "skills" / "one" / "cases.jsonl").write_text("", "utf-8")
    found, _ = discover(WorkTree(tmp_path), CiConfig(), tmp_path.name)
    assert [(s.path, s.name) for s in found] == [
        (".claude/skills/two", "two"),
        ("skills/one", "one"),
    ]
    # default lookup order: evals/cases.jsonl, evals/cases.yaml, cases.jsonl
    assert found[1].cases == "skills/one/evals/cases.yaml"
    assert found[0].cases is None


def test_globs_and_configured_cases(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "one")
    write_skill(tmp_path / "skills" / "nested" / "deep", "two")
    write_skill(tmp_path / "other", "three")
    (tmp_path / "skills" / "one" / "tests.yaml").write_text("cases: []\n", "utf-8")
    config = parse_config(b"skills: ['skills/*', 'nowhere/*']\ncases: tests.yaml\n", "cfg")
    found, messages = discover(WorkTree(tmp_path), config, tmp_path.name)
    assert [s.path for s in found] == ["skills/one"]
    assert found[0].cases == "skills/one/tests.yaml"
    assert any("'nowhere/*' matched no directory" in m for m in messages)
    config = parse_config(b"skills: ['skills/**']\n", "cfg")
    found, _ = discover(WorkTree(tmp_path), config, tmp_path.name)
    assert [s.path for s in found] == ["skills/nested/deep/two", "skills/one"]


def test_glob_regex() -> None:
    assert glob_regex("skills/*").match("skills/a")
    assert not glob_regex("skills/*").match("skills/a/b")
    assert glob_regex("./skills/*/").match("skills/a")
    assert glob_regex("**/skills/*").match("x/y/skills/a")
    assert glob_regex("**/skills/*").match("skills/a")
    assert glob_regex("s?[a-c]").match("sxb") and not glob_regex("s?[!a-c]").match("sxb")


def test_duplicate_names_exit_5(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", "same")
    write_skill(tmp_path / "b", "same")
    with pytest.raises(InvalidInput, match="two skills are named 'same': a/same and b/same"):
        discover(WorkTree(tmp_path), CiConfig(), tmp_path.name)
    assert run_cli(["changed"], tmp_path).returncode == 5


def test_detect_changes_without_git_evaluates_all(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "one")
    found = states(tmp_path, CiConfig())
    result = detect_changes(tmp_path, CiConfig(), found, BaseChoice(base="HEAD"), {})
    assert result.base["mode"] == "all" and list(result.changed) == ["skills/one"]
