"""`ci` with `compare: base` on a suite of `judge_pairwise` checks: the changed skill's answers
are judged against its base version's (and against no skill), the pass gates read the preference
over the baseline, and the summary, the comment and the HTML report show it."""

from __future__ import annotations

import json
import sys
from typing import Any

import jsonschema
import pytest

from skill_evals.schemas import load_schema
from tests._judge_helpers import SKILL, TABLE_RUNNER, judge_cmd, judge_log, make_suite

from .conftest import commit_all, git, run_cli

CASES = 10


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("pairwise-ci")
    repo = root / "repo"
    # The new version's answers hold BETTER; the base version's and the answers without the
    # skill do not.
    rows = {
        f"c{i}": {
            "with": {"output": f"new {i} BETTER"},
            "baseline": {"output": f"old {i} plain"},
            "without": {"output": f"none {i} plain"},
        }
        for i in range(CASES)
    }
    task = [{"check": "judge_pairwise", "rubric": "Which notes are clearer?"}]
    make_suite(repo / "skills", rows, task)
    evals = repo / "skills" / SKILL / "evals"
    evals.mkdir()
    (repo / "skills" / "cases.jsonl").rename(evals / "cases.jsonl")
    table = repo / "skills" / "table.json"
    (repo / ".skill-evals.yml").write_text(
        f"runner: {sys.executable} {TABLE_RUNNER} {table}\ntrials: 1\njobs: 2\n"
        f"judge: {judge_cmd(root)}\ncompare: base\nsandbox-paths: ['{root}:rw']\n"
        "gates: {min-uplift: 0.5, min-pass-gain: 0.5}\n",
        "utf-8",
    )
    git(repo, "init", "-q", "-b", "main")
    base = commit_all(repo, "base")
    with (repo / "skills" / SKILL / "SKILL.md").open("a", encoding="utf-8") as handle:
        handle.write("\nName every breaking change first.\n")
    commit_all(repo, "head")
    # Only the judge logs (it is never sandboxed; the runner, which may be, writes nothing).
    logs = {"JUDGE_LOG": str(root / "judge.log")}
    done = run_cli(["ci", "--base", base, "--out", str(root / "out"), "-q"], repo, logs)
    report = json.loads((root / "out" / "report.json").read_text("utf-8"))
    return {"root": root, "done": done, "report": report}


def test_the_pass_gates_read_the_preference_over_the_base_version(
    compared: dict[str, Any],
) -> None:
    done, report = compared["done"], compared["report"]
    assert done.returncode == 0, done.stderr[-3000:]
    jsonschema.Draft202012Validator(load_schema("ci-report.schema.json")).validate(report)
    (skill,) = report["skills"]
    result = skill["report"]
    task = result["comparison"]["task"]
    assert task["mode"] == "pairwise" and task["difference"] == 1.0
    assert (task["interval"]["lower"], task["interval"]["upper"]) == (1.0, 1.0)
    assert task["pairwise"]["withPreferred"] == CASES and task["pairwise"]["pairs"] == CASES
    assert result["task"]["pairwise"]["withPreferred"] == CASES  # the uplift over no skill
    assert result["gates"]["minPassGain"] == {"threshold": 0.5, "value": 1.0, "passed": True}
    # two asks per pair, one pair per case and compared arm
    assert result["judge"]["calls"] == 2 * 2 * CASES == len(judge_log(compared["root"]))
    assert {r["rubric"] for r in judge_log(compared["root"])} == {"Which notes are clearer?"}


def test_the_summary_comment_and_html_show_the_preference(compared: dict[str, Any]) -> None:
    out = compared["root"] / "out"
    line = "preference over the baseline +1.00 [+1.00, +1.00] ▲ better"
    for name in ("summary.md", "comment.md", "report.html"):
        text = (out / name).read_text("utf-8").replace("\\[", "[").replace("\\]", "]")
        assert line in text, name
        assert f"{CASES} pairs: with preferred {CASES}, baseline preferred 0" in text, name
