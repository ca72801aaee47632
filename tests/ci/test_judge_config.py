"""`.skill-evals.yml` names the judge: `judge`, `judge-timeout-ms`, `budget.judge-calls`, per
skill in `overrides`, and `budget-total.judge-calls` shared by the skills in order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from skill_evals.ci.budget import TotalBudget
from skill_evals.ci.config import parse_config
from skill_evals.errors import InvalidInput
from skill_evals.schemas import load_schema
from tests._judge_helpers import TABLE_RUNNER, judge_cmd, judge_log, make_suite, run_cli

CONFIG = b"""
judge: python3 judges/strict.py
judge-timeout-ms: 5000
budget: {judge-calls: 40}
budget-total: {judge-calls: 50}
overrides:
  release-notes: {judge: python3 judges/notes.py, budget: {judge-calls: 30}}
"""


def test_the_judge_settings_apply_per_skill() -> None:
    config = parse_config(CONFIG, "cfg")
    plain, notes = config.for_skill("refund-policy"), config.for_skill("release-notes")
    assert plain.judge == "python3 judges/strict.py" and plain.judge_timeout_ms == 5000
    assert plain.budget.judge_calls == 40
    assert notes.judge == "python3 judges/notes.py" and notes.budget.judge_calls == 30
    assert "judge" in notes.result_settings()  # a new judge is a new fingerprint
    assert "judge" not in parse_config(b"trials: 3\n", "cfg").for_skill("x").result_settings()


def test_named_judges_apply_per_skill_and_enter_the_fingerprint() -> None:
    config = parse_config(
        b"judges: {strict: python3 s.py}\noverrides:\n  notes: {judges: {loose: python3 l.py}}\n",
        "cfg",
    )
    assert config.for_skill("x").judges == (("strict", "python3 s.py"),)
    assert config.for_skill("notes").judges == (("loose", "python3 l.py"),)
    assert config.for_skill("x").result_settings()["judges"] == {"strict": "python3 s.py"}


def test_the_total_judge_budget_is_shared_in_order() -> None:
    config = parse_config(CONFIG, "cfg")
    total = TotalBudget.of(config.budget_total)
    assert total.for_skill(config.for_skill("release-notes").budget).judge_calls == 30
    total.spend({"runner": {"ledger": {"invocations": 2, "judge": {"calls": 30}}}})
    assert total.for_skill(config.for_skill("refund-policy").budget).judge_calls == 20


@pytest.mark.parametrize(
    "bad",
    [
        b"judge: ''\n",
        b"judge: ' '\n",
        b"judge-timeout-ms: 0\n",
        b"budget: {judge-calls: 0}\n",
        b"judges: {default: python3 j.py}\n",
        b"judges: {'a b': python3 j.py}\n",
        b"judges: {x: ''}\n",
        b"judges: [python3 j.py]\n",
    ],
)
def test_bad_judge_settings_are_refused(bad: bytes) -> None:
    with pytest.raises(InvalidInput):
        parse_config(bad, "cfg")


def test_ci_judges_with_the_configured_named_judge_and_shows_its_cost(tmp_path: Path) -> None:
    rows = {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "no"}} for i in range(10)}
    check = {"check": "judge", "rubric": "Good notes?", "judge": "notes"}
    make_suite(tmp_path / "skills", rows, [check])
    evals = tmp_path / "skills" / "release-notes" / "evals"
    evals.mkdir()
    (tmp_path / "skills" / "cases.jsonl").rename(evals / "cases.jsonl")
    table = tmp_path / "skills" / "table.json"
    (tmp_path / ".skill-evals.yml").write_text(
        f"runner: {sys.executable} {TABLE_RUNNER} {table}\ntrials: 1\n"
        f"judges: {{notes: {judge_cmd(tmp_path)}}}\ngates: {{min-uplift: 0.5}}\n"
        f"sandbox-paths: ['{tmp_path}:rw']\n",  # the judge logs there
        "utf-8",
    )
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    done = run_cli(tmp_path, "ci", "--out", "out", "-q")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    jsonschema.Draft202012Validator(load_schema("ci-report.schema.json")).validate(report)
    (skill,) = report["skills"]
    assert skill["report"]["judge"]["calls"] == 20 and len(judge_log(tmp_path)) == 20
    summary = (tmp_path / "out" / "summary.md").read_text("utf-8")
    assert "| release-notes | 20 | 0 | 0 | 200 / 40 | $0.0200 |" in summary
