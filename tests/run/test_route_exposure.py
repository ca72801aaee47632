"""`skill-evals route`: a catalog skill whose whole text another catalog skill holds can be
proven loaded only by a skill tool or an explicit invocation — a warning on stderr and in the
report's messages; `--require-verified-isolation` is accepted and noted (no without arm)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import skill_md, write_jsonl, write_skill


def test_a_catalog_skill_held_whole_by_another_is_a_warning(tmp_path: Path) -> None:
    small = write_skill(
        tmp_path / "skills", "pdf-forms", "Fill PDF forms.", "Fill each field. " * 20
    )
    big = tmp_path / "skills" / "pdf-tools"
    big.mkdir()
    (big / "SKILL.md").write_text(
        skill_md(
            "pdf-tools", "Merge PDF files.", "Included:\n\n" + (small / "SKILL.md").read_text()
        ),
        encoding="utf-8",
    )
    cases = write_jsonl(
        tmp_path / "route.jsonl",
        [{"id": f"c{i}", "prompt": f"fill the PDF form fields {i}", "expect": ["pdf-forms"]}
         for i in range(10)],
    )  # fmt: skip
    (tmp_path / "t").mkdir()
    report = tmp_path / "r.json"
    argv = ["skill-evals", "route", "--skill", str(small), "--skill", str(big), "--cases",
            str(cases), "--runner", "skill-evals runner simulated", "--trials", "1",
            "--report", str(report), "--require-verified-isolation", "-q"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TMPDIR=str(tmp_path / "t")))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warning = (
        "pdf-forms: no 200 characters are unique to it (shared with pdf-tools); only a skill "
        "tool or an explicit invocation can prove its load"
    )
    assert proc.stderr.splitlines().count(f"skill-evals: warning: {warning}") == 1
    data = json.loads(report.read_text(encoding="utf-8"))
    pairs = list(zip(data["messageSeverities"], data["messages"], strict=True))
    assert ("warning", warning) in pairs
    assert any("a routing run has no without arm" in m for s, m in pairs if s == "note")
