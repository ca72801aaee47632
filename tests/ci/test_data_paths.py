"""The data a pull request's configuration may set — where each skill's cases are, the routing
case file — names files of the repository only: a path that leaves it (``..``, or through a
symlinked directory the pull request committed) is no file at all, so nothing outside the
checkout (a runner's home, another job's files) is ever read as cases or sent to an agent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.ci.conftest import SIMULATED, cases_for, commit_all, git, make_repo, run_cli

SECRET_PROMPT = "question about the contents of a file outside the checkout"


@pytest.mark.parametrize("how", ["dots", "symlink"])
def test_cases_outside_the_repository_are_no_cases(tmp_path: Path, how: str) -> None:
    outside = tmp_path / "home" / ".config" / "evil.jsonl"
    outside.parent.mkdir(parents=True)
    rows = [{**c, "prompt": f"{SECRET_PROMPT} {i}"} for i, c in enumerate(cases_for("alpha"))]
    outside.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=SIMULATED)
    if how == "dots":
        where = "../../../home/.config/evil.jsonl"
    else:
        os.symlink(outside.parent, repo / "skills" / "alpha" / "evals-link")
        where = "evals-link/evil.jsonl"
    config = SIMULATED + f"overrides: {{alpha: {{cases: {where}}}}}\n"
    (repo / ".skill-evals.yml").write_text(config, "utf-8")
    commit_all(repo, "point the cases outside")
    out = tmp_path / "out"
    done = run_cli(["ci", "--out", str(out)], repo)
    assert SECRET_PROMPT not in done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    (entry,) = report["skills"]
    assert entry["status"] != "evaluated", entry["status"]
    assert SECRET_PROMPT not in json.dumps(report)
    # Inside the repository the same path form works.
    inside = repo / "skills" / "alpha" / "more" / "c.jsonl"
    inside.parent.mkdir()
    inside.write_text(outside.read_text("utf-8"), "utf-8")
    (repo / ".skill-evals.yml").write_text(
        SIMULATED + "overrides: {alpha: {cases: more/../more/c.jsonl}}\n", "utf-8"
    )
    commit_all(repo, "inside")
    done = run_cli(["ci", "--out", str(tmp_path / "out2")], repo)
    report = json.loads((tmp_path / "out2" / "report.json").read_text("utf-8"))
    assert report["skills"][0]["status"] == "evaluated", done.stderr


def test_renaming_the_config_file_does_not_leave_the_base_policy_unread(tmp_path: Path) -> None:
    from tests.ci.test_policy import BASE, _said, ci_run, pr_event

    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=BASE)
    base = git(repo, "rev-parse", "HEAD")
    (repo / ".skill-evals.yml").unlink()
    lowered = BASE.replace("min-trigger-f1: 0.99", "min-trigger-f1: 0").replace(
        "sandbox: required", 'sandbox: "off"'
    )
    (repo / ".skill-evals.yaml").write_text(lowered, "utf-8")
    commit_all(repo, "rename the config and lower the gate")
    run = ci_run(repo, pr_event(tmp_path, base))
    report = run["report"]
    assert report["policyFrom"] == "base"
    alpha = report["skills"][0]["report"]
    assert alpha["gates"]["minTriggerF1"]["threshold"] == 0.99
    assert alpha["sandbox"]["mode"] == "bwrap"
    for key in ("sandbox", "gates.min-trigger-f1"):
        assert _said(key).replace(".skill-evals.yml", ".skill-evals.yaml") in report["messages"]


@pytest.mark.parametrize("event", ["pull_request", "pull_request_target", "merge_group"])
def test_the_pull_requests_lock_file_never_skips_a_skill(tmp_path: Path, event: str) -> None:
    # The pull request edits alpha and rewrites the lock file to match; its event names no
    # base. Compared with its own lock, alpha would look unchanged and go unevaluated.
    repo = make_repo(tmp_path / "repo", skills=("alpha", "beta"), config=SIMULATED)
    with (repo / "skills" / "alpha" / "SKILL.md").open("a", encoding="utf-8") as handle:
        handle.write("\nA change nobody evaluated.\n")
    assert run_cli(["lock", "--update"], repo).returncode == 0
    commit_all(repo, "edit alpha, rewrite the lock")
    assert run_cli(["changed"], repo).stdout.split() == []  # the lock alone: nothing changed
    payload = tmp_path / "event.json"
    payload.write_text(json.dumps({"pull_request": {"number": 7}, "merge_group": {}}), "utf-8")
    env = {"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(payload)}
    done = run_cli(["changed"], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["skills/alpha", "skills/beta"]
    assert "base is unknown: every skill is evaluated" in done.stderr


def test_removing_the_routing_entry_does_not_take_routing_out_of_scope(tmp_path: Path) -> None:
    from tests.ci.test_policy import _said, pr_event
    from tests.ci.test_routing_ci import ROUTING, _routing_cases

    repo = make_repo(tmp_path / "repo", config=SIMULATED + ROUTING)
    _routing_cases(repo)
    base = commit_all(repo, "routing cases")
    (repo / ".skill-evals.yml").write_text(SIMULATED, "utf-8")
    md = repo / "skills" / "alpha" / "SKILL.md"
    md.write_text(md.read_text().replace("alpha topics", "alpha subjects"))
    commit_all(repo, "drop the routing entry and change a description")
    doc = json.loads(
        run_cli(["changed", "--format", "json"], repo, pr_event(tmp_path, base)).stdout
    )
    assert doc["routing"] is not None and doc["routing"]["changed"] is True
    done = run_cli(["changed"], repo, pr_event(tmp_path, base))
    assert done.stdout.splitlines() == ["skills/alpha", "routing"], done.stderr
    assert _said("routing") in done.stderr
