"""The outputs a pull request's reader sees name skills, case files and baselines from the
repository's root (`ci`) or the working directory (`test`), never the runner machine's folders;
the JSON report keeps its documented fields (skill.path absolute, cases.path as given). The real
CLI with the simulated runner, `compare: base` for a baseline (one unmoved, one moved skill)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from skill_evals.ci.outputs import shown_paths
from skill_evals.report.shown_paths import relative_to
from tests.conftest import write_jsonl, write_skill

from .conftest import SIMULATED, commit_all, git, make_repo, run_cli

SHOWN = ("junit.xml", "summary.md", "comment.md", "report.html")


def _properties(junit: Path) -> dict[str, dict[str, str]]:
    """``{suite name: {property: value}}`` of a JUnit file."""
    text = junit.read_text(encoding="utf-8")
    found: dict[str, dict[str, str]] = {}
    for suite in re.finditer(r'<testsuite name="([^"]*)".*?</testsuite>', text, re.S):
        pairs = re.findall(r'<property name="([^"]*)" value="([^"]*)"', suite.group(0))
        found[suite.group(1)] = dict(pairs)
    return found


def test_ci_names_skills_cases_and_baselines_from_the_repository_root(tmp_path: Path) -> None:
    config = SIMULATED + "compare: base\n"
    repo = make_repo(tmp_path / "repo", skills=("alpha", "beta"), config=config)
    first = git(repo, "rev-parse", "HEAD")
    with (repo / "skills" / "alpha" / "SKILL.md").open("a", encoding="utf-8") as fh:
        fh.write("\nKeep answers short.\n")
    shutil.move(repo / "skills" / "beta", repo / "moved" / "beta")
    (repo / "moved" / "beta" / "notes.md").write_text("moved and edited\n", encoding="utf-8")
    routed = [
        {"id": f"r{i}", "prompt": f"alpha question {i}", "expect": ["alpha"]} for i in range(10)
    ]
    write_jsonl(repo / "routing.jsonl", routed)
    (repo / ".skill-evals.yml").write_text(config + "routing: {cases: routing.jsonl}\n")
    commit_all(repo, "head")
    tmp, out = tmp_path / "tmp", tmp_path / "out"
    tmp.mkdir()
    done = run_cli(["ci", "--base", first, "--out", str(out)], repo, {"TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr[-3000:]
    props = _properties(out / "junit.xml")
    short = first[:12]
    assert props["alpha"]["skill.path"] == "skills/alpha"
    assert props["alpha"]["cases.path"] == "skills/alpha/evals/cases.jsonl"
    assert props["alpha"]["baseline.path"] == f"skills/alpha at base {short}"
    assert props["beta"]["skill.path"] == "moved/beta"
    assert props["beta"]["cases.path"] == "moved/beta/evals/cases.jsonl"
    assert props["beta"]["baseline.path"] == f"skills/beta at base {short}"  # where it was
    assert props["routing"]["cases.path"] == "routing.jsonl"
    for name in SHOWN:  # no folder of the runner machine: the checkout, the base copies
        text = (out / name).read_text(encoding="utf-8")
        assert str(tmp_path) not in text and "skill-evals-base-" not in text, name
    # report.json: the fields as documented (the skill's directory absolute, the case file
    # as ci gave it, the baseline where its copy was)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    alpha = next(s for s in report["skills"] if s["name"] == "alpha")
    assert alpha["path"] == "skills/alpha"
    assert alpha["report"]["skill"]["path"] == str(repo / "skills" / "alpha")
    assert alpha["report"]["cases"]["path"] == str(repo / "skills/alpha/evals/cases.jsonl")
    assert "skill-evals-base-" in alpha["report"]["baseline"]["path"]
    # ci merge shows the same from the shards' report.json (run on other machines)
    merged = tmp_path / "merged"
    done = run_cli(["ci", "merge", "--out", str(merged), str(out)], repo)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _properties(merged / "junit.xml") == props


def test_a_baseline_note_that_cannot_be_read_never_shows_the_copys_folder() -> None:
    report = {"skill": {"path": "/w/r/skills/a"}, "baseline": {"path": "/tmp/skill-evals-base-x/a"}}
    entry = {"path": "skills/a", "cases": "skills/a/cases.jsonl", "report": report, "reason": None}
    assert shown_paths(entry, {"sha": "0123456789abcdef"}) == {
        "skill.path": "skills/a",
        "cases.path": "skills/a/cases.jsonl",
        "baseline.path": "the base version at 0123456789ab",
    }
    assert relative_to("/w/r/skills/a", "/w/r") == "skills/a"
    assert relative_to("/w/r", "/w/r/") == "."
    assert relative_to("/w/rx/a", "/w/r") is None and relative_to(None, "/w/r") is None


def test_test_names_them_from_the_working_directory(tmp_path: Path) -> None:
    """`test --junit/--html`: inside the working directory, relative to it; a path outside
    it (the --baseline here) as the report has it."""
    work = tmp_path / "work"
    skill = write_skill(work / "skills", "refund-policy")
    baseline = write_skill(tmp_path / "elsewhere", "refund-policy")
    rows = [{"id": f"c{i}", "prompt": f"refund question {i}", "expectTrigger": i % 2 == 0}
            for i in range(10)]  # fmt: skip
    (work / "evals").mkdir()
    write_jsonl(work / "evals" / "cases.jsonl", rows)
    routed = [{"id": f"r{i}", "prompt": f"refund question {i}", "expect": ["refund-policy"]}
              for i in range(10)]  # fmt: skip
    write_jsonl(work / "routing.jsonl", routed)
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         "evals/cases.jsonl", "--runner", "skill-evals runner simulated", "--trials", "1",
         "--baseline", str(baseline), "--junit", "junit.xml", "--html", "report.html",
         "--report", "report.json"],
        cwd=work, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    (props,) = _properties(work / "junit.xml").values()
    assert props["skill.path"] == "skills/refund-policy"
    assert props["cases.path"] == "evals/cases.jsonl"
    assert props["baseline.path"] == str(baseline.resolve())
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "route", "--catalog", "skills/*",
         "--cases", str(work / "routing.jsonl"), "--runner", "skill-evals runner simulated",
         "--trials", "1", "--format", "junit"],
        cwd=work, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    (work / "route.xml").write_text(done.stdout, encoding="utf-8")
    assert _properties(work / "route.xml")["routing"]["cases.path"] == "routing.jsonl"
    html = (work / "report.html").read_text(encoding="utf-8")
    assert "<code>skills/refund-policy</code>" in html and str(work) not in html
    report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    assert report["skill"]["path"] == str(skill.resolve())  # the JSON field as documented
