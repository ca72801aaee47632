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
