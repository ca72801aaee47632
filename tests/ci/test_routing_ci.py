"""The `routing:` entry of `skill-evals ci`: its fingerprint (a description edit anywhere
re-runs it, nothing else does), the lock file, `ci plan`, `ci --only routing`, `ci merge`, and
its place in report.json, junit.xml, summary.md, comment.md and report.html."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from skill_evals.ci.schema import validate_ci_report
from tests.conftest import write_jsonl

from .conftest import SIMULATED, commit_all, git, make_repo, run_cli

ROUTING = "routing:\n  cases: evals/routing.jsonl\n  skills: ['skills/*']\n"


def _routing_cases(repo: Path) -> None:
    records: list[dict[str, Any]] = []
    for name in ("alpha", "beta", "gamma"):
        records += [
            {
                "id": f"{name}-{i}",
                "prompt": f"question about {name} topics number {i}",
                "expect": [name],
            }
            for i in range(3)
        ]
    records += [
        {"id": f"none-{i}", "prompt": f"unrelated request {i}", "expect": []} for i in range(2)
    ]
    (repo / "evals").mkdir(exist_ok=True)
    write_jsonl(repo / "evals" / "routing.jsonl", records)


def _repo(tmp_path: Path, gates: str = "") -> Path:
    repo = make_repo(tmp_path / "repo", config=SIMULATED + ROUTING + gates)
    _routing_cases(repo)
    commit_all(repo, "routing cases")
    return repo


def _plan(repo: Path, *args: str) -> list[str]:
    done = run_cli(["ci", "plan", *args], repo)
    assert done.returncode == 0, done.stderr
    return sorted(item["skill"] for item in json.loads(done.stdout)["include"])


def test_fingerprint_reruns_routing_on_a_description_edit_and_not_otherwise(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    assert _plan(repo, "--base", base) == []
    # a file beside SKILL.md: that skill changes, routing (which reads only SKILL.md) does not
    (repo / "skills" / "alpha" / "notes.md").write_text("more detail\n")
    commit_all(repo)
    assert _plan(repo, "--base", base) == ["alpha"]
    # the skill's own trigger cases: the skill, not routing
    with (repo / "skills" / "beta" / "evals" / "cases.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "extra", "prompt": "one more", "expectTrigger": False}) + "\n")
    commit_all(repo)
    assert _plan(repo, "--base", base) == ["alpha", "beta"]
    # a moved skill directory keeps its name and SKILL.md: routing unchanged
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "skills/gamma", "skills/gamma-moved")
    commit_all(repo)
    assert _plan(repo, "--base", base) == []
    # a description edit in one catalog skill: that skill and routing
    md = repo / "skills" / "beta" / "SKILL.md"
    md.write_text(md.read_text().replace("beta topics", "beta subjects"))
    commit_all(repo)
    assert _plan(repo, "--base", base) == ["beta", "routing"]
    # the routing cases alone, then a result setting (trials): routing re-runs
    base = git(repo, "rev-parse", "HEAD")
    with (repo / "evals" / "routing.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "x", "prompt": "another", "expect": []}) + "\n")
    commit_all(repo)
    assert _plan(repo, "--base", base) == ["routing"]
    base = git(repo, "rev-parse", "HEAD")
    config = repo / ".skill-evals.yml"
    config.write_text(config.read_text() + "  gates: {min-accuracy: 0.5}\n")
    commit_all(repo)
    assert _plan(repo, "--base", base) == ["routing"]
    # jobs and timeouts do not change what a healthy run measures
    base = git(repo, "rev-parse", "HEAD")
    config.write_text(config.read_text().replace("jobs: 4", "jobs: 2"))
    commit_all(repo)
    assert _plan(repo, "--base", base) == []


def test_lock_file_records_the_routing_fingerprint(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert run_cli(["lock", "--update"], repo).returncode == 0
    lock = json.loads((repo / ".skill-evals.lock.json").read_text())
    assert len(lock["routing"]["fingerprint"]) == 64
    assert set(lock["routing"]["catalog"]) == {"alpha", "beta", "gamma"}
    assert run_cli(["lock"], repo).returncode == 0
    assert _plan(repo, "--lock", ".skill-evals.lock.json") == []
    md = repo / "skills" / "gamma" / "SKILL.md"
    md.write_text(md.read_text().replace("gamma things", "gamma matters"))
    check = run_cli(["lock"], repo)
    assert check.returncode == 1 and "routing: changed since the lock was written" in check.stdout
    assert _plan(repo, "--lock", ".skill-evals.lock.json") == ["gamma", "routing"]


def test_only_splits_a_list_unless_it_names_one_skill(tmp_path: Path) -> None:
    """`--only` as the action passes it: one value, a list unless it is exactly a skill's name
    or path, so a name with a space and a comma is one shard."""
    repo = _repo(tmp_path)
    odd = repo / "skills" / "odd"
    shutil.copytree(repo / "skills" / "gamma", odd)
    md = odd / "SKILL.md"
    md.write_text(md.read_text().replace("name: gamma", "name: gamma, two words"))
    commit_all(repo)
    assert _plan(repo, "--only", "alpha, beta\nrouting") == ["alpha", "beta", "routing"]
    assert _plan(repo, "--only", "gamma, two words") == ["gamma, two words"]
    assert _plan(repo, "--only", "skills/alpha gamma") == ["alpha", "gamma"]
    unknown = run_cli(["ci", "plan", "--only", "alpha, nope"], repo)
    assert unknown.returncode == 5 and "--only nope: no such skill" in unknown.stderr


def test_changed_lists_routing_on_the_same_rule_as_ci(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    quiet = run_cli(["changed", "--base", base], repo)
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stderr
    assert "routing: unchanged (fingerprint unchanged since base" in quiet.stderr
    doc = json.loads(run_cli(["changed", "--base", base, "--format", "json"], repo).stdout)
    assert doc["routing"]["changed"] is False and len(doc["routing"]["fingerprint"]) == 64
    md = repo / "skills" / "alpha" / "SKILL.md"
    md.write_text(md.read_text().replace("alpha topics", "alpha subjects"))
    commit_all(repo)
    lines = run_cli(["changed", "--base", base], repo)
    assert lines.stdout.splitlines() == ["skills/alpha", "routing"], lines.stderr
    assert "routing: re-runs (SKILL.md changed: alpha since base" in lines.stderr
    doc = json.loads(run_cli(["changed", "--base", base, "--format", "json"], repo).stdout)
    assert doc["routing"]["changed"] is True and "alpha" in doc["routing"]["reason"]
    assert [c["path"] for c in doc["changed"]] == ["skills/alpha"]
    # without a routing entry the key is null and nothing extra is printed
    config = repo / ".skill-evals.yml"
    config.write_text(config.read_text().replace(ROUTING, ""))
    doc = json.loads(run_cli(["changed", "--all", "--format", "json"], repo).stdout)
    assert doc["routing"] is None


@pytest.fixture(scope="module")
def routing_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("routing-ci")
    repo = _repo(tmp, "  gates: {min-accuracy: 0.99}\n")
    out = tmp / "out"
    done = run_cli(["ci", "--only", "routing", "--out", str(out), "-q"], repo)
    return {"repo": repo, "out": out, "done": done, "tmp": tmp}


def test_only_routing_runs_it_and_its_gate_sets_the_exit(routing_run: dict[str, Any]) -> None:
    done, out = routing_run["done"], routing_run["out"]
    report = json.loads((out / "report.json").read_text())
    validate_ci_report(report)
    entry = report["routing"]
    assert entry["status"] == "evaluated" and entry["reason"] == "chosen with --only"
    assert entry["catalog"] == ["alpha", "beta", "gamma"] and entry["simulated"] is True
    assert report["skills"] == []  # --only routing: no skill was evaluated
    route = entry["report"]
    assert route["runner"]["invocations"] == 11
    assert route["gates"]["minAccuracy"]["threshold"] == 0.99
    expected = 1 if route["accuracy"] < 0.99 else 0
    assert done.returncode == report["exitCode"] == entry["exitCode"] == expected
    assert (out / "observations" / "@routing.jsonl").read_text().count("\n") == 11


def test_routing_in_summary_comment_html_and_junit(routing_run: dict[str, Any]) -> None:
    out = routing_run["out"]
    summary = (out / "summary.md").read_text()
    assert "### Routing:" in summary and "| alpha |" in summary
    assert "#### Confusion" in summary
    comment = (out / "comment.md").read_text()
    assert comment.startswith("<!-- skill-evals -->") and "### Routing:" in comment
    assert "#### Confusion" not in comment  # compact in the PR comment
    page = (out / "report.html").read_text()
    assert 'id="confusion"' in page and "table.heat td" in page and "<script" not in page
    if shutil.which("xmllint"):
        from .test_junit_schema import assert_schema_valid

        xml = assert_schema_valid(out / "junit.xml")
        suites = {suite.name: suite for suite in xml}
        assert "routing" in suites
        names = [case.name for case in suites["routing"]]
        assert "route[alpha-0]" in names and "accuracy" in names


def test_merge_keeps_the_shard_that_ran_routing(routing_run: dict[str, Any]) -> None:
    repo, tmp = routing_run["repo"], routing_run["tmp"]
    idle = tmp / "idle"
    # a shard where nothing changed: routing is there, unchanged
    done = run_cli(["ci", "--base", "HEAD", "--out", str(idle), "-q"], repo)
    assert done.returncode == 0, done.stderr
    idle_report = json.loads((idle / "report.json").read_text())
    assert idle_report["routing"]["status"] == "unchanged"
    merged = tmp / "merged"
    done = run_cli(["ci", "merge", str(idle), str(routing_run["out"]), "--out", str(merged)], repo)
    report = json.loads((merged / "report.json").read_text())
    validate_ci_report(report)
    assert report["routing"]["status"] == "evaluated"
    assert done.returncode == report["exitCode"] == routing_run["done"].returncode
    assert (merged / "observations" / "@routing.jsonl").is_file()
    assert "### Routing:" in (merged / "summary.md").read_text()


def test_plan_shards_routing(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    done = run_cli(["ci", "plan", "--all"], repo)
    include = json.loads(done.stdout)["include"]
    assert {"skill": "routing", "path": "evals/routing.jsonl"} in include
    assert len(include) == 4
    # a shard for one skill leaves routing to its own shard
    only = run_cli(["ci", "plan", "--only", "alpha"], repo)
    assert [i["skill"] for i in json.loads(only.stdout)["include"]] == ["alpha"]


def test_routing_config_errors(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", config=SIMULATED + "routing:\n  cases: /etc/passwd\n")
    done = run_cli(["ci", "plan", "--all"], repo)
    assert done.returncode == 5 and "$.routing.cases" in done.stderr
    (repo / ".skill-evals.yml").write_text(SIMULATED + "routing:\n  cases: x.jsonl\n  bogus: 1\n")
    done = run_cli(["ci", "plan", "--all"], repo)
    assert done.returncode == 5 and "$.routing" in done.stderr
    (repo / ".skill-evals.yml").write_text(SIMULATED + "routing:\n  cases: missing.jsonl\n")
    done = run_cli(["ci", "--all", "--out", str(tmp_path / "out")], repo)
    assert done.returncode == 5 and "no case file missing.jsonl" in done.stderr
