"""The example keyword proposer says why it proposes nothing, and `improve` prints the train
figures it reached before the proposer stopped it (exit 7): the real CLI, the shipped
examples/proposers/keywords.py, a runner whose loads follow the description's words. The
train errors are false triggers and missed prompts that share no word."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema

from skill_evals.schemas import load_schema
from tests.cli.test_improve import RUNNER

PROPOSER = Path(__file__).resolve().parents[2] / "examples" / "proposers" / "keywords.py"
MISSED = ["Reconcile the quarterly ledger", "Approve vendor bills", "Flag duplicate payments"]
MISSED += ["Summarise expense claims", "Match purchase orders", "Review receipts batch"]
FALSE = ["Translate the invoice into French", "Print the invoice twice", "Email invoice copies"]
FALSE += ["Store invoice scans", "Rename invoice files", "Archive invoice folders"]


def test_a_proposer_with_nothing_to_propose_says_why_and_improve_shows_train(tmp_path: Path):
    skill = tmp_path / "skills" / "invoice-audit"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: invoice-audit\ndescription: Audit invoice totals and tax lines.\n---\n"
        "# Invoice audit\n\nCheck each line.\n",
        encoding="utf-8",
    )
    cases = [{"id": f"m{i}", "prompt": p, "expectTrigger": True} for i, p in enumerate(MISSED)]
    cases += [{"id": f"f{i}", "prompt": p, "expectTrigger": False} for i, p in enumerate(FALSE)]
    case_file = tmp_path / "cases.jsonl"
    case_file.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    report_path = tmp_path / "report.json"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "improve", "--skill", str(skill)),
            *("--cases", str(case_file), "--runner", f"{sys.executable} {tmp_path / 'runner.py'}"),
            *("--proposer", f"{sys.executable} {PROPOSER}", "--trials", "1"),
            *("--report", str(report_path), "--sandbox-path", str(PROPOSER)),
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 7, proc.stderr
    first, second = proc.stdout.splitlines()[:2]
    assert first.startswith(
        "UNAVAILABLE invoice-audit: proposer: the missed prompts share no word: the keyword "
        "proposer only widens a description; train errors here are false triggers"
    )
    report = json.loads(report_path.read_text())
    jsonschema.validate(report, load_schema("improve-report.schema.json"))
    train = report["original"]["train"]
    assert train["tp"] == 0 and train["fp"] > 0 and train["fn"] > 0
    assert second == (
        "train before stopping: F1 0.00 for the original; original: 0 hit, "
        f"{train['fn']} missed, {train['fp']} false trigger(s), {train['tn']} correctly ignored"
    )
    assert report["runner"]["invocations"] == len(report["split"]["train"])
    assert report["proposer"]["calls"] == 1


# Fails on every case but the first two (each after a mark on stderr naming its case), slowly
# for the earliest ones: with two at a time, the first to fail is seldom the first in plan order.
FAILING = """import json, os, sys, time
sys.stdin.read()
case = os.environ["EVALGATE_SKILL_CASE_ID"]
n = int(case[1:])
if n >= 2:
    time.sleep(0.4 if n < 4 else 0.0)
    sys.stderr.write(f"FAILMARK {case}\\n")
    sys.exit(3)
print(json.dumps({"variant": os.environ["EVALGATE_SKILL_VARIANT"], "invokedSkills": [],
                  "output": "x", "exitCode": 0}))
"""


def test_a_runner_failure_says_what_to_do_and_names_the_invocation_shown(tmp_path: Path):
    """The error names the invocation whose stderr --show-runner-stderr showed, and gives the
    same advice as `test` and `route` (the exit code's, then the sandbox's when sandboxed)."""
    skill = tmp_path / "skills" / "invoice-audit"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: invoice-audit\ndescription: Audit invoice totals.\n---\n# Audit\n",
        encoding="utf-8",
    )
    prompts = MISSED + FALSE
    cases = [{"id": f"c{i}", "prompt": p, "expectTrigger": i < 6} for i, p in enumerate(prompts)]
    case_file = tmp_path / "cases.jsonl"
    case_file.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (tmp_path / "runner.py").write_text(FAILING, encoding="utf-8")
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "improve", "--skill", str(skill)),
            *("--cases", str(case_file), "--runner", f"{sys.executable} {tmp_path / 'runner.py'}"),
            *("--proposer", f"{sys.executable} {PROPOSER}", "--trials", "1", "--jobs", "2"),
            *("--sandbox-path", str(PROPOSER), "--show-runner-stderr", "--format", "json"),
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 7, proc.stderr
    report = json.loads(proc.stdout)
    reason = report["decision"]["reason"]
    shown = proc.stderr.split("first failing runner invocation (", 1)[1].split(" trial ", 1)[0]
    assert f"FAILMARK {shown}" in proc.stderr
    assert reason.startswith(f"runner failed on case '{shown}' trial 1: ")
    assert "exited with code 3" in reason and "; what to do: " in reason
    assert "--show-runner-stderr" in reason.split("; what to do: ", 1)[1]
    if report.get("sandbox", {}).get("mode", "bwrap") == "bwrap":
        assert "the runner ran in the sandbox (docs/sandbox.md)" in reason
