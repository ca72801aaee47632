"""What a new user meets first, through the real CLI: the simulation is named on every run, an
input error is printed once and names the skill given, a note is never an error, answers reach
the HTML only when asked, a relative --bin works, `changed` always says how it decided, and
the lock file is named relative to the repository."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from tests.ci.conftest import commit_all, make_repo, run_cli
from tests.conftest import EXAMPLE_SKILL, assert_valid_report, write_jsonl, write_skill

SIMULATED = f"{sys.executable} -m skill_evals runner simulated"
EXAMPLE_CASES = EXAMPLE_SKILL / "evals" / "cases.jsonl"


def small_suite(tmp_path: Path, n: int = 10) -> tuple[Path, Path]:
    skill = write_skill(tmp_path)
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "id": f"c{i}",
                "prompt": f"Can I get a refund with my receipt for item {i}?",
                "expectTrigger": True,
                "task": {"check": "includes_all", "expected": ["30 days"]},
            }
            for i in range(n)
        ],
    )
    return skill, cases


def test_the_simulation_is_named_on_every_run_even_quiet(tmp_path: Path) -> None:
    skill, cases = small_suite(tmp_path)
    report_path = tmp_path / "report.json"
    done = run_cli(
        ["test", "--skill", str(skill), "--cases", str(cases), "--runner", SIMULATED,
         "--trials", "1", "-q", "--report", str(report_path)],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("skill-evals: note: the runner is `skill-evals runner simulated`")
    assert "SIMULATION" in done.stderr
    report = json.loads(report_path.read_text())
    assert_valid_report(report)
    pairs = zip(report["messages"], report["messageSeverities"], strict=True)
    notes = [m for m, s in pairs if s == "note"]
    assert any("SIMULATION" in m for m in notes)
    assert "Notes\n  - the runner is `skill-evals runner simulated`" in done.stdout
    assert "What failed" not in done.stdout


def test_an_input_error_is_printed_once_and_names_the_skill_given(tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"id": "a", "prompt": "x"}])
    done = run_cli(
        ["test", "--skill", str(tmp_path / "my-skill"), "--cases", str(cases), "--runner",
         SIMULATED],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 5
    # stdout is not a terminal here: the one stderr line, and the text report says it once.
    assert done.stderr.count("skill directory does not exist") == 1, done.stderr
    assert done.stdout.count("skill directory does not exist") == 1, done.stdout
    assert done.stdout.startswith("INVALID  my-skill — stopped before scoring (exit 5)")


def test_few_task_units_are_a_note_not_an_error(tmp_path: Path) -> None:
    # 10 units, 4 with a task check, and an F1 gate the suite fails: the F1 gate is the error.
    skill = write_skill(tmp_path)
    records = [
        {"id": f"c{i}", "prompt": f"refund receipt question {i}", "expectTrigger": i < 8}
        | ({"task": {"check": "exit_code", "expected": 0}} if i < 4 else {})
        for i in range(10)
    ]
    cases = write_jsonl(tmp_path / "cases.jsonl", records)
    done = run_cli(
        ["test", "--skill", str(skill), "--cases", str(cases), "--runner", SIMULATED,
         "--trials", "1", "--min-trigger-f1", "1.0", "--format", "json"],
        tmp_path,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert_valid_report(report)
    levels = dict(zip(report["messages"], report["messageSeverities"], strict=True))
    insufficient = [m for m in levels if m.startswith("uplift rests on 4")]
    assert insufficient and levels[insufficient[0]] == "note"
    assert "error: uplift rests on" not in done.stderr


def test_answers_reach_the_html_only_when_asked(tmp_path: Path) -> None:
    skill, cases = small_suite(tmp_path)
    out = tmp_path / "out"
    base = ["test", "--skill", str(skill), "--cases", str(cases), "--runner", SIMULATED,
            "--trials", "1", "-q"]  # fmt: skip
    refused = run_cli([*base, "--include-outputs"], tmp_path)
    assert refused.returncode == 5 and "--include-outputs" in refused.stderr
    assert "0/" not in refused.stderr  # refused before anything ran
    record = tmp_path / "obs.jsonl"
    done = run_cli(
        [*base, "--include-outputs", "--html", str(out / "r.html"), "--report",
         str(out / "r.json"), "--markdown", str(out / "r.md"), "--junit", str(out / "r.xml"),
         "--record", str(record)],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    html = (out / "r.html").read_text()
    assert "answers (--include-outputs)" in html and "<pre>[simulated]" in html
    for other in ("r.json", "r.md", "r.xml"):
        assert "[simulated]" not in (out / other).read_text(), other
    # the same answers (scored again from the record), not asked for: not in the HTML
    plain = run_cli(
        ["test", "--skill", str(skill), "--cases", str(cases), "--observations", str(record),
         "--trials", "1", "-q", "--html", str(out / "plain.html")],
        tmp_path,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert "[simulated]" in record.read_text()  # the answers were there to leak
    assert "[simulated]" not in (out / "plain.html").read_text()


def test_a_relative_bin_is_found_from_the_callers_directory(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    tools = tmp_path / "tools"
    tools.mkdir()
    marker = tmp_path / "ran"
    fake = tools / "fake-claude"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n", encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {
        "EVALGATE_SKILL_VARIANT": "with",
        "EVALGATE_SKILL_DIR": str(skill),
        "EVALGATE_SKILL_CASE_ID": "c1",
        "EVALGATE_SKILL_TRIAL": "1",
    }
    run_cli(["runner", "claude-code", "--bin", "tools/fake-claude"], tmp_path, env)
    assert marker.exists(), "the agent program given as a relative --bin never ran"


def test_changed_says_how_changes_were_found_also_when_none_did(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",))
    base = commit_all(repo, "base")
    done = run_cli(["changed", "--base", base], repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert f"changes found against --base {base}" in done.stderr
    assert "no skill changed (0 changed, 1 unchanged)" in done.stderr
    (repo / "skills" / "alpha" / "SKILL.md").write_text(
        "---\nname: alpha\ndescription: Changed alpha skill.\n---\nNew.\n", encoding="utf-8"
    )
    done = run_cli(["changed", "--base", base], repo)
    assert done.stdout.splitlines() == ["skills/alpha"]
    assert "1 changed, 0 unchanged" in done.stderr


def test_the_lock_file_is_named_relative_to_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",))
    assert run_cli(["lock", "--update"], repo).returncode == 0
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_EVENT_PATH"}
    done = run_cli(["ci", "--out", str(out)], repo, env)
    assert done.returncode == 0, done.stderr
    summary = (out / "summary.md").read_text()
    assert "against the lock file .skill-evals.lock.json." in summary
    assert str(repo) not in summary
    report = json.loads((out / "report.json").read_text())
    assert report["base"]["lockFile"] == ".skill-evals.lock.json"
    changed = run_cli(["changed"], repo)
    assert "changes found against the lock file .skill-evals.lock.json" in changed.stderr


def test_include_outputs_in_the_config_reaches_report_html_only(tmp_path: Path) -> None:
    config = "runner: skill-evals runner simulated\ntrials: 1\ninclude-outputs: true\n"
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=config)
    out = tmp_path / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo)
    assert done.returncode in (0, 1), done.stderr
    assert "answers (--include-outputs)" in (out / "report.html").read_text()
    for name in ("report.json", "summary.md", "comment.md", "junit.xml"):
        assert "[simulated]" not in (out / name).read_text(), name
