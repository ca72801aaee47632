"""Helpers for the arm, baseline, budget and early-stop tests: a suite, a scripted runner that
logs every invocation, and the CLI run (docs/comparison.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import assert_valid_report, write_jsonl, write_skill

RUNNER = Path(__file__).resolve().parent / "runners" / "arms.py"
SKILL = "refund-policy"


@dataclass
class Run:
    """One `skill-evals test` run: the process, its JSON report and the runner's log."""

    proc: subprocess.CompletedProcess[str]
    report: dict[str, Any]
    log: list[tuple[str, int, str, str, str]]  # case, trial, arm, variant, skill dir

    @property
    def code(self) -> int:
        return self.proc.returncode

    def count(self, arm: str | None = None) -> int:
        """Invocations the runner saw (of ``arm``)."""
        return sum(1 for entry in self.log if arm is None or entry[2] == arm)


def make_skill(root: Path, body: str = "Refunds within 30 days with a receipt.\n") -> Path:
    """A skill named refund-policy under ``root``."""
    return write_skill(root, SKILL, body=f"# Refund policy\n\n{body}")


def make_baseline(root: Path, skill: Path, body: str = "Refunds within 14 days.\n") -> Path:
    """Another version of ``skill`` (same name, other body) under ``root``."""
    target = root / "baseline" / SKILL
    shutil.copytree(skill, target)
    (target / "SKILL.md").write_text(
        f"---\nname: {SKILL}\ndescription: Refunds.\n---\n# Refund policy\n\n{body}",
        encoding="utf-8",
    )
    return target


def make_cases(
    path: Path, trigger_only: int = 0, task: int = 0, negatives: int = 0
) -> dict[str, bool]:
    """``trigger_only`` cases that should load the skill, ``negatives`` that should not, and
    ``task`` cases (should load, task exit_code 0). Returns case id → expectTrigger."""
    records: list[dict[str, Any]] = []
    labels: dict[str, bool] = {}
    for i in range(trigger_only):
        records.append({"id": f"t{i}", "prompt": f"refund question {i}", "expectTrigger": True})
    for i in range(negatives):
        records.append({"id": f"n{i}", "prompt": f"weather question {i}", "expectTrigger": False})
    for i in range(task):
        records.append(
            {
                "id": f"k{i}",
                "prompt": f"refund task {i}",
                "expectTrigger": True,
                "task": {"check": "exit_code", "expected": 0},
            }
        )
    for record in records:
        labels[record["id"]] = record["expectTrigger"]
    write_jsonl(path, records)
    return labels


def script_for(
    labels: dict[str, bool],
    with_: dict[str, Any] | None = None,
    baseline: dict[str, Any] | None = None,
    without_exit: int = 1,
    **extra: Any,
) -> dict[str, Any]:
    """A runner script: by default every arm that offers a skill triggers exactly where it
    should and passes its task; without fails its task (``without_exit``). ``with_`` /
    ``baseline`` override the entry of an arm for every case."""
    cases: dict[str, Any] = {}
    for case_id, expect in labels.items():
        good = {"trigger": expect, "exit": 0}
        cases[case_id] = {
            "with": {**good, **(with_ or {})},
            "baseline": {**good, **(baseline or {})},
            "without": {"trigger": False, "exit": without_exit},
        }
    return {"skill": SKILL, "cases": cases, **extra}


def run_test(
    tmp: Path,
    skill: Path,
    cases: Path,
    script: dict[str, Any],
    *args: str,
    name: str = "run",
    formats: bool = False,
) -> Run:
    """Run `skill-evals test` with the scripted runner; the report is validated."""
    work = tmp / name
    work.mkdir(parents=True, exist_ok=True)
    script_path = work / "script.json"
    script_path.write_text(json.dumps(script), encoding="utf-8")
    log = work / "runner.log"
    report_path = work / "report.json"
    runner = f"{sys.executable} -S {RUNNER} {script_path} {log}"
    extra = []
    if formats:
        extra = ["--junit", str(work / "junit.xml"), "--markdown", str(work / "report.md")]
        extra += ["--html", str(work / "report.html")]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "skill_evals",
            "test",
            "--skill",
            str(skill),
            "--cases",
            str(cases),
            "--runner",
            runner,
            "--report",
            str(report_path),
            "--quiet",
            "--sandbox-path",  # the runner logs into work, outside its workspace
            f"{work}:rw",
            *extra,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert report_path.exists(), proc.stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert_valid_report(report)
    assert report["exitCode"] == proc.returncode, proc.stderr
    entries = []
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            case_id, trial, arm, variant, skill_dir = line.split(" ", 4)
            entries.append((case_id, int(trial), arm, variant, skill_dir))
    return Run(proc, report, entries)
