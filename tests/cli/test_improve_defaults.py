"""`improve`'s defaults follow `test`'s for the same runner: a built-in agent gets 300,000 ms
per invocation (a real agent needs minutes), anything else 30,000 ms; a given --timeout-ms
wins. The options reach the run unchanged (the run itself is replaced: a real agent run
lasting past 30 s would be the only other way to tell)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import skill_evals.improve.run as improve_run
from skill_evals.cli.main import cli
from tests.conftest import write_jsonl, write_skill


@pytest.mark.parametrize(
    ("runner", "extra", "expected"),
    [
        ("skill-evals runner claude-code", [], 300_000),
        ("skill-evals runner codex --model m", [], 300_000),
        ("python3 my_runner.py", [], 30_000),
        ("skill-evals runner simulated", [], 30_000),
        ("skill-evals runner claude-code", ["--timeout-ms", "1234"], 1234),
    ],
)
def test_the_timeout_default_is_tests_for_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: str, extra: list[str], expected: int
) -> None:
    seen: list[Any] = []

    def fake_run(options: Any) -> dict[str, Any]:
        seen.append(options)
        return {"exitCode": 0, "messages": []}

    monkeypatch.setattr(improve_run, "run_improve", fake_run)
    monkeypatch.setattr("skill_evals.improve.report.render_text", lambda *a, **k: "")
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "prompt": "p", "expectTrigger": True}])
    args = ["improve", "--skill", str(skill), "--cases", str(cases), "--runner", runner]
    CliRunner().invoke(cli, [*args, "--proposer", "true", "--format", "json", *extra])
    assert [o.timeout_ms for o in seen] == [expected]
