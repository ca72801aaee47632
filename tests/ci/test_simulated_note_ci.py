"""`skill-evals ci` with the simulated runner: the job summary, the PR comment, the HTML and the
per-skill JSON reports all say the figures are artefacts of word matching."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skill_evals.agents.simulated import ARTEFACTS


def test_ci_outputs_carry_the_word_matching_note(passing_run: dict[str, Any]) -> None:
    out: Path = passing_run["out"]
    assert passing_run["done"].returncode == 0, passing_run["done"].stderr
    assert ARTEFACTS in (out / "summary.md").read_text(encoding="utf-8")
    assert ARTEFACTS in (out / "comment.md").read_text(encoding="utf-8")
    assert ARTEFACTS in (out / "junit.xml").read_text(encoding="utf-8")
    merged = json.loads((out / "report.json").read_text(encoding="utf-8"))
    evaluated = [s for s in merged["skills"] if s["status"] == "evaluated"]
    assert evaluated
    for skill in evaluated:
        assert ARTEFACTS in json.dumps(skill["report"]["messages"])
